// Golden-vector driver for npm hashring (the real package, from NODE_PATH).
// Usage: node drv_hashring.js SERVERS KEYS
// SERVERS: "host<TAB>port<TAB>weight" lines; the ring gets {"host:port": weight},
// or {"host": weight} when the port is "-" (a name that is no host:port,
// such as "0": the object's key order is then JavaScript's, not the file's).
// Prints "P value index" for ring.ring in its sorted order, then "A index" per key.
'use strict';
const fs = require('fs');
const HashRing = require('hashring');
const lines = fs.readFileSync(process.argv[2], 'utf8').split('\n').filter(Boolean);
const servers = {}, index = {};
lines.forEach((l, i) => {
  const [host, port, weight] = l.split('\t');
  const name = port === '-' ? host : host + ':' + port;
  servers[name] = +weight;
  index[name] = i;
});
const ring = new HashRing(servers);
const out = [];
for (const p of ring.ring) out.push('P ' + p.value + ' ' + index[p.server]);
const keys = fs.readFileSync(process.argv[3], 'utf8').split('\n');
keys.pop();
for (const k of keys) out.push('A ' + index[ring.get(k)]);
process.stdout.write(out.join('\n') + '\n');
