package sluice.harness;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.connector.datagen.source.GeneratorFunction;

/**
 * The skew workload of docs/src/reference/skew-workload.md on Flink's types: record i is a pure
 * function of i (so every parallelism sees the same records), the map burns a fixed number of
 * multiply/xor-shift rounds, and the keyed step keeps a running sum per key.
 */
final class SkewWorkload {
    private SkewWorkload() {}

    /** Records are (key, value) pairs of longs. */
    static final TypeInformation<Tuple2<Long, Long>> RECORD = Types.TUPLE(Types.LONG, Types.LONG);

    /** SplitMix64's output function: a well-spread 64-bit hash of the record index. */
    static long mix(long z) {
        long x = z + 0x9E3779B97F4A7C15L;
        x = (x ^ (x >>> 30)) * 0xBF58476D1CE4E5B9L;
        x = (x ^ (x >>> 27)) * 0x94D049BB133111EBL;
        return x ^ (x >>> 31);
    }

    /** {@code rounds} steps of an LCG followed by an xor-shift: CPU work with a checkable result. */
    static long burn(long v, long rounds) {
        long x = v;
        for (long r = 0; r < rounds; r++) {
            x = x * 0x5851F42D4C957F2DL + 0x14057B7EF767814FL;
            x ^= x >>> 29;
        }
        return x;
    }

    /** Record i: the hot key 0 for a share of the hashes (top 20 bits below the limit), else 1..keys. */
    static final class Records implements GeneratorFunction<Long, Tuple2<Long, Long>> {
        private static final long serialVersionUID = 1L;
        private final long hotLimit;
        private final long keys;

        Records(double hotShare, long keys) {
            this.hotLimit = Math.round(hotShare * (double) (1L << 20));
            this.keys = keys;
        }

        @Override
        public Tuple2<Long, Long> map(Long index) {
            long h = mix(index);
            long key = (h >>> 44) < hotLimit ? 0L : 1L + Long.remainderUnsigned(h, keys);
            return Tuple2.of(key, (h >>> 8) & 0xFFFFL);
        }
    }

    /** The map step: the value becomes 20 bits of {@code burn(value, rounds)}; the key stays. */
    static final class Work implements MapFunction<Tuple2<Long, Long>, Tuple2<Long, Long>> {
        private static final long serialVersionUID = 1L;
        private final long rounds;

        Work(long rounds) {
            this.rounds = rounds;
        }

        @Override
        public Tuple2<Long, Long> map(Tuple2<Long, Long> record) {
            return Tuple2.of(record.f0, burn(record.f1, rounds) & 0xFFFFFL);
        }
    }

    /** Keys records by their first field. */
    static final class ByKey implements KeySelector<Tuple2<Long, Long>, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long getKey(Tuple2<Long, Long> record) {
            return record.f0;
        }
    }

    /**
     * The running sum per key. {@code extraRounds} adds CPU work per record that leaves the sum
     * alone (its result goes to a field nobody reads), to make the keyed step the heavy one.
     */
    static final class Sum implements ReduceFunction<Tuple2<Long, Long>> {
        private static final long serialVersionUID = 1L;
        private final long extraRounds;
        private long sink;

        Sum(long extraRounds) {
            this.extraRounds = extraRounds;
        }

        @Override
        public Tuple2<Long, Long> reduce(Tuple2<Long, Long> sum, Tuple2<Long, Long> next) {
            if (extraRounds > 0) {
                sink ^= burn(next.f1, extraRounds);
            }
            return Tuple2.of(sum.f0, sum.f1 + next.f1);
        }
    }
}
