/*
 * Writes fixtures/vectors/guava_jump_edges.tsv: keys whose --scheme jump
 * walk meets the two edges of Guava's Hashing.consistentHash, with the
 * bucket the real Guava library gives them.
 *
 *   java -cp /usr/share/java/guava.jar tools/gen/GuavaJumpVectors.java > fixtures/vectors/guava_jump_edges.tsv
 *
 * (Debian: default-jdk-headless and libguava-java; run once, the output is
 * committed, no test needs Java.)
 *
 * The edges, at LCG step k of the walk:
 *   overflow: state >>> 33 == 2^31 - 1, so Guava's int addition
 *             (int) (state >>> 33) + 1 wraps to Integer.MIN_VALUE, nextDouble
 *             is -1.0, next is negative and the walk returns its candidate;
 *   saturate: state >>> 33 == 0, so nextDouble is 2^-31 and (int) of the
 *             quotient saturates at Integer.MAX_VALUE, which ends the walk.
 * A key is made by choosing the LCG state at step k, stepping the LCG back
 * to the input (the multiplier is odd, so invertible mod 2^64), and then
 * inverting MurmurHash3_x64_128 for one 16-byte block with that input as
 * h1 and a random h2 (every step is a bijection). Guava itself hashes the
 * key afterwards, and the program stops if it does not give that input.
 * Keys avoid bytes 0x00, 0x0A and 0x0D so that they can be given to
 * `ringshard locate` one a line or as arguments.
 *
 * Columns: key_hex (the 16 key bytes), aslong (Guava's padToLong of the
 * hash, signed decimal), buckets, edge, step, guava (consistentHash).
 */
import com.google.common.hash.Hashing;
import java.util.SplittableRandom;

public class GuavaJumpVectors {
    static final long C1 = 0x87c37b91114253d5L, C2 = 0x4cf5ad432745937fL;
    static final long LCG = 2862933555777941757L;

    /* Multiplicative inverse of an odd a mod 2^64 (Newton: each step doubles the correct bits). */
    static long inverse(long a) {
        long x = a;
        for (int i = 0; i < 6; i++)
            x *= 2 - a * x;
        return x;
    }

    /* Inverse of fmix64: x ^= x >>> 33 is its own inverse (33 >= 64 / 2). */
    static long unfmix(long k) {
        k ^= k >>> 33;
        k *= inverse(0xc4ceb9fe1a85ec53L);
        k ^= k >>> 33;
        k *= inverse(0xff51afd7ed558ccdL);
        k ^= k >>> 33;
        return k;
    }

    /* The 16-byte key whose MurmurHash3_x64_128 (seed 0) digest is (h1, h2). */
    static byte[] keyFor(long h1, long h2) {
        long b = h2 - h1, a = h1 - b;             /* undo h1 += h2; h2 += h1 after fmix */
        long f1 = unfmix(a), f2 = unfmix(b);
        long x2 = f2 - f1, x1 = f1 - x2;           /* undo h1 += h2; h2 += h1 before fmix */
        long b1 = x1 ^ 16, b2 = x2 ^ 16;           /* undo h ^= length */
        long k1m = Long.rotateRight((b1 - 0x52dce729L) * inverse(5), 27);
        long k2m = Long.rotateRight((b2 - 0x38495ab5L) * inverse(5) - b1, 31);
        long k1 = Long.rotateRight(k1m * inverse(C2), 31) * inverse(C1);
        long k2 = Long.rotateRight(k2m * inverse(C1), 33) * inverse(C2);
        byte[] key = new byte[16];
        for (int i = 0; i < 8; i++) {
            key[i] = (byte) (k1 >>> (8 * i));
            key[8 + i] = (byte) (k2 >>> (8 * i));
        }
        return key;
    }

    /* The step at which the walk of input over buckets ends, or -step if it ends by an edge
     * of kind `top` (state >>> 33 == top) at that step. */
    static int endStep(long input, int buckets, long top) {
        long state = input;
        int candidate = 0;
        for (int step = 1;; step++) {
            state = LCG * state + 1;
            if ((state >>> 33) == top)
                return -step;
            double d = ((double) ((int) (state >>> 33) + 1)) / 0x1.0p31;
            int next = (int) ((candidate + 1) / d);
            if (next >= 0 && next < buckets)
                candidate = next;
            else
                return step;
        }
    }

    static boolean printable(byte[] key) {
        for (byte c : key)
            if (c == 0 || c == '\n' || c == '\r')
                return false;
        return true;
    }

    public static void main(String[] args) {
        SplittableRandom rnd = new SplittableRandom(15);
        long back = inverse(LCG);
        int[] bucketCounts = {1, 2, 10, 1000, 100000, Integer.MAX_VALUE};
        System.out.println("key_hex\taslong\tbuckets\tedge\tstep\tguava");
        for (int buckets : bucketCounts) {
            for (int edge = 0; edge < 2; edge++) {
                long top = edge == 0 ? 0x7fffffffL : 0;
                for (int step = 1; step <= 4; step++) {
                    for (int tries = 0, found = 0; found < 2 && tries < 200000; tries++) {
                        long state = (top << 33) | (rnd.nextLong() >>> 31);
                        for (int i = 0; i < step; i++)
                            state = (state - 1) * back;
                        if (endStep(state, buckets, top) != -step)
                            continue;
                        byte[] key = keyFor(state, rnd.nextLong());
                        if (!printable(key))
                            continue;
                        long asLong = Hashing.murmur3_128().hashBytes(key).padToLong();
                        if (asLong != state)
                            throw new AssertionError("inversion failed");
                        StringBuilder hex = new StringBuilder();
                        for (byte c : key)
                            hex.append(String.format("%02x", c & 0xff));
                        System.out.println(hex + "\t" + asLong + "\t" + buckets + "\t"
                                + (edge == 0 ? "overflow" : "saturate") + "\t" + step + "\t"
                                + Hashing.consistentHash(Hashing.murmur3_128().hashBytes(key), buckets));
                        found++;
                    }
                }
            }
        }
    }
}
