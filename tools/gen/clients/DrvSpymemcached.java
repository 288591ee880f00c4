// Golden-vector driver for spymemcached's KetamaNodeLocator (the real jar).
// Usage: java -cp spymemcached.jar:. DrvSpymemcached SERVERS KEYS
// SERVERS: "host<TAB>port<TAB>weight" lines. With every weight 1 the locator
// gets no weight map (unweighted ketama), else the weight map.
// Nodes are MemcachedNode proxies whose socket address is
// new InetSocketAddress(host, port), as AddrUtil.getAddresses makes it.
// Prints "P value index" for the TreeMap in order, then "A index" per key.
import java.io.*;
import java.lang.reflect.*;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;
import net.spy.memcached.*;

public class DrvSpymemcached {
    public static void main(String[] args) throws Exception {
        List<MemcachedNode> nodes = new ArrayList<>();
        Map<InetSocketAddress, Integer> weights = new HashMap<>();
        Map<MemcachedNode, Integer> index = new IdentityHashMap<>();
        boolean weighted = false;
        for (String line : Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8)) {
            if (line.isEmpty()) continue;
            String[] f = line.split("\t");
            InetSocketAddress a = new InetSocketAddress(f[0], Integer.parseInt(f[1]));
            int w = Integer.parseInt(f[2]);
            weighted |= w != 1;
            weights.put(a, w);
            MemcachedNode n = (MemcachedNode) Proxy.newProxyInstance(
                MemcachedNode.class.getClassLoader(), new Class<?>[] {MemcachedNode.class},
                (proxy, m, margs) -> {
                    switch (m.getName()) {
                    case "getSocketAddress": return a;
                    case "hashCode": return System.identityHashCode(proxy);
                    case "equals": return proxy == margs[0];
                    case "toString": return "node" + a;
                    default: throw new UnsupportedOperationException(m.getName());
                    }
                });
            index.put(n, nodes.size());
            nodes.add(n);
        }
        KetamaNodeLocator loc = new KetamaNodeLocator(nodes, DefaultHashAlgorithm.KETAMA_HASH,
            KetamaNodeKeyFormatter.Format.SPYMEMCACHED,
            weighted ? weights : new HashMap<InetSocketAddress, Integer>());
        Method gk = KetamaNodeLocator.class.getDeclaredMethod("getKetamaNodes");
        gk.setAccessible(true);
        @SuppressWarnings("unchecked")
        TreeMap<Long, MemcachedNode> map = (TreeMap<Long, MemcachedNode>) gk.invoke(loc);
        StringBuilder out = new StringBuilder();
        for (Map.Entry<Long, MemcachedNode> e : map.entrySet())
            out.append("P ").append(e.getKey()).append(' ').append(index.get(e.getValue())).append('\n');
        try (BufferedReader r = Files.newBufferedReader(Paths.get(args[1]), StandardCharsets.UTF_8)) {
            for (String k; (k = r.readLine()) != null;)
                out.append("A ").append(index.get(loc.getPrimary(k))).append('\n');
        }
        System.out.print(out);
    }
}
