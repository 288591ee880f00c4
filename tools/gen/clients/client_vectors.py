#!/usr/bin/env python3
"""Regenerates fixtures/vectors/clients/<client>.tsv from the real clients.

Usage: client_vectors.py DRIVERDIR OUTDIR [client ...]
DRIVERDIR holds the built drivers (see tools/gen/gen_client_vectors.sh).

Every configuration's servers are 127.0.X.Y hosts (server j: X.Y = j+1),
port 11211 ("default") or 21000+j ("ports"), or an explicit list; weights
are all 1, or listed. The keys are the same for every configuration: KEYS
keys made by key(i) below (tests/test_compat.c makes them the same way),
and the SPECIAL keys. One line per configuration:

config ID SERVERS WEIGHTS POINTS CONTINUUM NKEYS ANSWERS SAMPLE SPECIAL

SERVERS  default:N | ports:N | list:host:port,host:port,... |
         lines:L0|L1|... (the lines of a node file, read under the preset:
         unix sockets, names JavaScript reorders, twemproxy aliases; what
         the client gets is in extra_configs)
WEIGHTS  1 | w0,w1,... | - (in the lines)
POINTS   points per server in the client's effective continuum (after its
         collision rule), or - where the client's continuum is not visible
CONTINUUM md5 of "value owner\n" over the effective continuum, or -
ANSWERS  md5 of "owner\n" over the NKEYS keys
SAMPLE   owners of the first 256 keys
SPECIAL  owners of the special keys (- where the client cannot send one)
"""
import hashlib, os, selectors, socket, subprocess, sys, tempfile, time

KEYS = 100000
SAMPLE = 256
SPECIAL = ["", "a", "\u00e9", "\u65e5\u672c\u8a9e", "\U0001F600\U0001F389", "x" * 250, "foo:bar:1", "0"]
ALPHA = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:.-"
M64 = (1 << 64) - 1


class Rng:
    """splitmix64."""
    def __init__(self, seed):
        self.s = seed & M64

    def next(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & M64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)


def make_keys(n):
    """Key i by kind i % 4: ASCII (1-40), UTF-8 (1-12 code points of 1-4
    bytes, no surrogates, no controls or spaces), long ASCII (200-250
    bytes), "user:N". All from one splitmix64 stream, seed 16."""
    g = Rng(16)
    keys = []
    for i in range(n):
        r = g.next()
        kind = i % 4
        if kind == 0:
            keys.append(bytes(ALPHA[g.next() % 66] for _ in range(1 + r % 40)))
        elif kind == 1:
            s = []
            for _ in range(1 + r % 12):
                c = g.next()
                cls, v = c % 4, c >> 2
                if cls == 0:
                    cp = 0x21 + v % 94
                elif cls == 1:
                    cp = 0x80 + v % 0x780
                elif cls == 2:
                    cp = 0x800 + v % 0xF000
                    if cp >= 0xD800:
                        cp += 0x800
                else:
                    cp = 0x10000 + v % 0x100000
                s.append(chr(cp))
            keys.append("".join(s).encode())
        elif kind == 2:
            keys.append(bytes(ALPHA[g.next() % 66] for _ in range(200 + r % 51)))
        else:
            keys.append(b"user:%d" % (r % 1000000000))
    return keys


def servers_of(spec):
    kind, _, arg = spec.partition(":")
    if kind == "list":
        return [(h, int(p)) for h, p in (s.rsplit(":", 1) for s in arg.split(","))]
    n = int(arg)
    return [("127.0.%d.%d" % ((j + 1) >> 8, (j + 1) & 255), 11211 if kind == "default" else 21000 + j)
            for j in range(n)]


def md5(text):
    return hashlib.md5(text.encode()).hexdigest()


def collision_pair(label, base):
    """Two ports P1 < P2 of 127.0.0.1 whose labels label(host, port, i)
    (i < 40) share a 32-bit point: a birthday search, for configurations
    that exercise the clients' collision rules."""
    seen = {}
    for port in range(base, base + 3000):
        for i in range(40):
            d = hashlib.md5(label("127.0.0.1", port, i).encode()).digest()
            for h in range(4):
                v = int.from_bytes(d[4 * h:4 * h + 4], "little")
                if v in seen and seen[v] != port:
                    return seen[v], port
                seen[v] = port
    raise SystemExit("no collision found")


def configs(client, label):
    out = [("u%d" % n, "default:%d" % n, None) for n in range(1, 201)]
    for n in (3, 25, 47, 100, 200):
        out.append(("p%d" % n, "ports:%d" % n, None))
    out += [
        ("w10", "default:10", [j % 5 + 1 for j in range(10)]),
        ("w25x10", "default:25", [10] * 25),
        ("w7x3", "ports:7", [3] * 7),
        ("w50", "ports:50", [(1, 2, 3, 5, 8)[j % 5] for j in range(50)]),
        ("w100", "default:100", [j % 7 + 1 for j in range(100)]),
    ]
    g = Rng(200)
    out.append(("w200", "default:200", [1 + g.next() % 100 for _ in range(200)]))
    p1, p2 = collision_pair(label, 22000)
    others = ",".join("127.0.0.2:%d" % (23000 + j) for j in range(20))
    a, b = "127.0.0.1:%d" % p1, "127.0.0.1:%d" % p2
    out += [("c2ab", "list:%s,%s" % (a, b), None), ("c2ba", "list:%s,%s" % (b, a), None),
            ("c22", "list:%s,%s,%s" % (a, others, b), None)]
    if client == "libketama":
        # MC_SHMSIZE (512 KiB) holds 117 servers' 160 points of 28 bytes;
        # libketama overflows its shared memory segment beyond that.
        out = [c for c in out if len(servers_of(c[1])) <= 117]
    if client.startswith("libmemcached"):
        # update_continuum asserts server count * 100 <= MEMCACHED_CONTINUUM_SIZE
        # (10,000): libmemcached 1.1.4 aborts beyond 100 servers.
        out = [c for c in out if len(servers_of(c[1])) <= 100]
    return out


def extra_configs(client):
    """The node-file forms beyond host:port: (ID, node-file lines, the
    client's servers as (host, port), weights, twemproxy aliases or None).
    A unix socket's port is 0 for libmemcached; hashring's servers with
    port "-" are the name alone."""
    out = []
    if client.startswith("libmemcached"):
        out.append(("sock3", ["/tmp/rs-a.sock 1", "/tmp/rs-b.sock 1", "127.0.0.1:11211 1"],
                    [("/tmp/rs-a.sock", 0), ("/tmp/rs-b.sock", 0), ("127.0.0.1", 11211)], [1, 1, 1], None))
        out.append(("sockmix", ["/run/mc/a.sock:0 2", "/run/mc:1 3", "10.0.0.1:21000 1",
                                '"/var/run/memcached/b.sock" 1', "10.0.0.2 5"],
                    [("/run/mc/a.sock", 0), ("/run/mc:1", 0), ("10.0.0.1", 21000),
                     ("/var/run/memcached/b.sock", 0), ("10.0.0.2", 11211)], [2, 3, 1, 1, 5], None))
        out.append(("ipv6", ["2001:db8::1:11211 1", "::1:21000 2", "2001:db8:::11211 1", "fe80::a 1"],
                    [("2001:db8::1", 11211), ("::1", 21000), ("2001:db8::", 11211), ("fe80::a", 11211)],
                    [1, 2, 1, 1], None))
    if client == "hashring":
        names = ["2", "1", "0"]
        out.append(("jskeys3", ["2 0.1", "1 0.2", "0 0.3"], [(n, "-") for n in names], [0.1, 0.2, 0.3], None))
        names = ["b", "10", "x", "01", "4294967294", "4294967295", "3", "-1", "1.5", "7"]
        w = [0.7, 0.3, 0.1, 0.2, 0.4, 0.5, 0.6, 0.9, 0.15, 0.35]
        out.append(("jskeys10", ["%s %r" % (n, x) for n, x in zip(names, w)], [(n, "-") for n in names], w, None))
        names = [str(j) for j in range(39, -1, -1)]
        w = [0.1 * (j % 7 + 1) for j in range(40)]
        out.append(("jskeys40", ["%s %r" % (n, x) for n, x in zip(names, w)], [(n, "-") for n in names], w, None))
    if client == "twemproxy":
        def tw(cid, rows):
            # rows: (port, weight, alias or None, written with nutcracker's "- ")
            lines = [("- " if dash else "") + "127.0.0.1:%d:%d" % (p, w) + (" " + a if a else "")
                     for p, w, a, dash in rows]
            out.append((cid, lines, [("127.0.0.1", p) for p, _, _, _ in rows], [w for _, w, _, _ in rows],
                        [a for _, _, a, _ in rows]))
        tw("alias", [(23001, 1, "cache-a:11211", False), (23002, 1, "cache-b:11211", True),
                     (23003, 1, "cache-c", False), (23004, 2, "node:01", True), (23005, 1, None, True)])
        tw("alias280", [(23001, 1, "a" * 280, False), (23002, 1, "cache2", False), (23003, 1, "cache3", False)])
        tw("alias266", [(23001, 1, "b" * 266, False), (23002, 1, "cache2", False), (23003, 1, "cache3", False)])
        tw("alias271", [(23001, 1, "c" * 268 + ":01", True), (23002, 3, "c" * 271, True), (23003, 1, "d", True)])
    return out


def run_driver(cmd, servers, weights, keyfile, tmp):
    sf = os.path.join(tmp, "servers.txt")
    with open(sf, "w") as f:
        for (h, p), w in zip(servers, weights):
            f.write("%s\t%s\t%s\n" % (h, p, w))
    res = subprocess.run(cmd(sf, keyfile, tmp), stdout=subprocess.PIPE, check=True)
    points, answers = [], []
    for line in res.stdout.decode().splitlines():
        t, *v = line.split()
        if t == "P":
            points.append((int(v[0]), int(v[1])))
        else:
            answers.append(int(v[0]))
    return points, answers


def effective(points, rule):
    """The continuum as a lookup sees it: the clients' binary searches
    return the first of equal values in their sorted order."""
    out = []
    for v, o in points:
        if out and out[-1][0] == v:
            continue
        out.append((v, o))
    return out


def twemproxy_answers(servers, weights, keys, tmp, aliases=None):
    """Runs nutcracker (ketama, md5) over fake memcached backends on
    loopback; a multiget's fragments tell which backend each key went to."""
    sel = selectors.DefaultSelector()
    owner = {}
    listeners = []
    for j, (h, p) in enumerate(servers):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((h, p))
        s.listen(8)
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, ("listen", j))
        listeners.append(s)
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    proxy_port = ls.getsockname()[1]
    ls.close()
    conf = os.path.join(tmp, "nutcracker.yml")
    with open(conf, "w") as f:
        f.write("pool:\n  listen: 127.0.0.1:%d\n  hash: md5\n  distribution: ketama\n"
                "  auto_eject_hosts: false\n  timeout: 30000\n  servers:\n" % proxy_port)
        for j, ((h, p), w) in enumerate(zip(servers, weights)):
            alias = aliases[j] if aliases else None
            f.write("   - %s:%d:%d%s\n" % (h, p, w, " " + alias if alias else ""))
    proc = subprocess.Popen(["nutcracker", "-c", conf, "-o", os.path.join(tmp, "nc.log")])
    try:
        deadline = time.time() + 60
        while True:
            try:
                cli = socket.create_connection(("127.0.0.1", proxy_port))
                break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    raise SystemExit("nutcracker did not start")
                time.sleep(0.05)
        bufs = {}

        def serve_until(done):
            while not done():
                for k, _ in sel.select(timeout=60):
                    kind, j = k.data
                    if kind == "listen":
                        c, _ = k.fileobj.accept()
                        c.setblocking(False)
                        sel.register(c, selectors.EVENT_READ, ("conn", j))
                        bufs[c] = b""
                        continue
                    if kind == "client":
                        data = k.fileobj.recv(1 << 16)
                        if not data:
                            raise SystemExit("proxy closed the client")
                        client_buf[0] += data
                        continue
                    c = k.fileobj
                    data = c.recv(1 << 16)
                    if not data:
                        sel.unregister(c)
                        c.close()
                        continue
                    bufs[c] += data
                    while b"\r\n" in bufs[c]:
                        line, bufs[c] = bufs[c].split(b"\r\n", 1)
                        parts = line.split(b" ")
                        if parts[0] != b"get":
                            raise SystemExit("backend got %r" % line[:40])
                        for key in parts[1:]:
                            owner[key] = j
                        c.sendall(b"END\r\n")

        client_buf = [b""]
        cli.setblocking(False)
        sel.register(cli, selectors.EVENT_READ, ("client", -1))
        step = 400
        for at in range(0, len(keys), step):
            cli.setblocking(True)
            cli.sendall(b"get " + b" ".join(keys[at:at + step]) + b"\r\n")
            cli.setblocking(False)
            serve_until(lambda: client_buf[0].endswith(b"END\r\n"))
            client_buf[0] = b""
    finally:
        proc.terminate()
        proc.wait()
        for s in listeners:
            s.close()
        sel.close()
    return [owner[k] for k in keys]


def label_full(h, p, i):
    return "%s:%d-%d" % (h, p, i)


def label_nodefault(h, p, i):
    return "%s-%d" % (h, i) if p == 11211 else "%s:%d-%d" % (h, p, i)


def label_spy(h, p, i):
    return "/%s:%d-%d" % (h, p, i)


VERSIONS = {
    "libketama": "libketama (RJ/ketama master 18cf9a7, built from source with glibc 2.36 qsort)",
    "libmemcached": "libmemcached 1.1.4 (Debian 1.1.4-1), MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED",
    "libmemcached-spy": "libmemcached 1.1.4 (Debian 1.1.4-1), KETAMA_WEIGHTED then DISTRIBUTION_CONSISTENT_KETAMA_SPY",
    "twemproxy": "twemproxy/nutcracker 0.5.0 (Debian 0.5.0+dfsg-2), distribution ketama, hash md5",
    "spymemcached": "spymemcached 2.12.3 (Debian libspymemcached-java 2.12.3+dfsg-3), KetamaNodeLocator KETAMA_HASH, format SPYMEMCACHED, OpenJDK 17",
    "hashring": "npm hashring 3.2.0 (connection-parse 0.0.7), Node.js 20",
}
LABELS = {"libketama": label_full, "libmemcached": label_nodefault, "libmemcached-spy": label_spy,
          "twemproxy": label_nodefault, "spymemcached": label_full, "hashring": label_full}


def main():
    drv, outdir = sys.argv[1], sys.argv[2]
    clients = sys.argv[3:] or list(VERSIONS)
    keys = make_keys(KEYS)
    special = [k.encode() for k in SPECIAL]
    tmp = tempfile.mkdtemp(prefix="ringshard-clients-")
    keyfile = os.path.join(tmp, "keys.txt")
    with open(keyfile, "wb") as f:
        f.write(b"".join(k + b"\n" for k in keys + special))
    java = ["java", "-cp", "/usr/share/java/spymemcached.jar:" + drv, "DrvSpymemcached"]
    env_node = dict(os.environ, NODE_PATH=os.path.join(drv, "node_modules"))
    cmds = {
        "libketama": lambda s, k, t: [os.path.join(drv, "drv_libketama"), os.path.join(t, "ketama.servers"), s, k],
        "libmemcached": lambda s, k, t: [os.path.join(drv, "drv_libmemcached"), "weighted", s, k],
        "libmemcached-spy": lambda s, k, t: [os.path.join(drv, "drv_libmemcached"), "spy", s, k],
        "spymemcached": lambda s, k, t: java + [s, k],
        "hashring": lambda s, k, t: ["env", "NODE_PATH=" + env_node["NODE_PATH"], "node",
                                     os.path.join(os.path.dirname(__file__), "drv_hashring.js"), s, k],
    }
    os.makedirs(outdir, exist_ok=True)
    for client in clients:
        lines = ["# %s" % VERSIONS[client],
                 "# regenerate: tools/gen/gen_client_vectors.sh; format: tools/gen/clients/client_vectors.py",
                 "keys\t%d\tsplitmix64 seed 16, kinds i%%4: ascii utf8 long user" % KEYS,
                 "special\t" + "\t".join(k.encode("unicode_escape").decode() for k in SPECIAL)]
        todo = [(cid, spec, weights, servers_of(spec), None) for cid, spec, weights in configs(client, LABELS[client])]
        todo += [(cid, "lines:" + "|".join(lines), "-", servers, weights, aliases)
                 for cid, lines, servers, weights, aliases in extra_configs(client)]
        for cid, spec, weights, servers, *rest in todo:
            if len(rest) == 2:   # an extra configuration: its weights are in its lines
                w, aliases = rest
            else:
                w, aliases = weights or [1] * len(servers), None
            if client == "twemproxy":
                ans = twemproxy_answers(servers, w, keys + special[1:], tmp, aliases)
                ans.insert(KEYS, None)  # twemproxy's memcache protocol has no empty key
                pts = "-"
                cont = "-"
            else:
                points, ans = run_driver(cmds[client], servers, w, keyfile, tmp)
                eff = effective(points, client)
                counts = [0] * len(servers)
                for _, o in eff:
                    counts[o] += 1
                pts = ",".join(map(str, counts))
                cont = md5("".join("%d %d\n" % e for e in eff))
            main_ans, spec_ans = ans[:KEYS], ans[KEYS:]
            lines.append("\t".join([
                "config", cid, spec, weights if weights == "-" else ",".join(map(str, weights)) if weights else "1",
                pts, cont, str(KEYS),
                md5("".join("%d\n" % a for a in main_ans)), ",".join(map(str, main_ans[:SAMPLE])),
                ",".join("-" if a is None else str(a) for a in spec_ans)]))
            print(client, cid, file=sys.stderr, flush=True)
        with open(os.path.join(outdir, client + ".tsv"), "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
