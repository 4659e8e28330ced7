package sluice.harness;

import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

/**
 * The jobs of the standalone session cluster (scripts/flink/cluster.sh submits this class through
 * Flink's REST API, {@code POST /jars/:jarid/run}). Unlike {@link ScenarioRunner} it starts no
 * cluster: {@code getExecutionEnvironment()} is the session cluster the jar was uploaded to.
 *
 * <p>Scenarios:
 * <ul>
 *   <li>{@code gc}: generator (p=1) -FORWARD-> retain-map (p=1) -FORWARD-> sink, each a vertex
 *       of its own (so the doctor names retain-map, not a chain).
 *       retain-map allocates a {@code --chunk-bytes} array per record and keeps the last
 *       {@code --retain-mb} of them in a ring: every array lives long enough to be promoted out of
 *       the young generation and then dies, so on a TaskManager with a small heap the JVM spends a
 *       large share of each second collecting garbage. The operator's busy time follows the GC
 *       time (the task thread is stopped mid-record), not its record rate: a GC stall.
 *   <li>{@code burn} and {@code sleep}: generator (p=1) -REBALANCE-> work (p=1) -> sink, with
 *       work and its sink in a slot sharing group of their own ({@code work}), so the job takes two
 *       slots and, on TaskManagers of one slot each, each vertex lives alone on its TaskManager.
 *       {@code burn}'s work computes ({@code --rounds} LCG steps per record), {@code sleep}'s waits
 *       ({@code --sleep-ms} per record, as a synchronous call would): both busy, one on the CPU.
 * </ul>
 *
 * <p>Flags: {@code --scenario} (gc, burn, sleep), {@code --retain-mb} (40), {@code --chunk-bytes}
 * (4096), {@code --rounds} (20000), {@code --sleep-ms} (2), {@code --records} (practically
 * unbounded).
 */
public final class ClusterJobs {
    private ClusterJobs() {}

    public static void main(String[] argv) throws Exception {
        Flags flags = Flags.parse(argv);
        String scenario = flags.text("scenario", "gc");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setRuntimeMode(RuntimeExecutionMode.STREAMING);
        env.setParallelism(1);
        switch (scenario) {
            case "gc":
                gc(env, flags);
                break;
            case "burn":
                alone(env, flags, new Burn(flags.number("rounds", 20_000)));
                break;
            case "sleep":
                alone(env, flags, new Sleep(flags.number("sleep-ms", 2)));
                break;
            default:
                throw new IllegalArgumentException("unknown scenario '" + scenario + "' (gc, burn, sleep)");
        }
        env.execute("sluice-cluster " + scenario);
    }

    private static void gc(StreamExecutionEnvironment env, Flags flags) {
        DataGeneratorSource<Long> source = new DataGeneratorSource<>(
                i -> i, flags.number("records", 1_000_000_000_000L), RateLimiterStrategy.noOp(), Types.LONG);
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "generator")
                .forward()
                .map(new Retain(flags.number("retain-mb", 40), (int) flags.number("chunk-bytes", 4096)))
                .name("retain-map")
                .startNewChain()
                .sinkTo(new DiscardingSink<>())
                .name("sink")
                .disableChaining();
    }

    private static void alone(StreamExecutionEnvironment env, Flags flags, MapFunction<Long, Long> work) {
        DataGeneratorSource<Long> source = new DataGeneratorSource<>(
                i -> i, flags.number("records", 1_000_000_000_000L), RateLimiterStrategy.noOp(), Types.LONG);
        env.fromSource(source, WatermarkStrategy.noWatermarks(), "generator")
                .rebalance()
                .map(work)
                .name("work")
                .slotSharingGroup("work")
                .sinkTo(new DiscardingSink<>())
                .name("sink");
    }

    /** CPU work per record: LCG steps (see {@link SkewWorkload#burn}). */
    static final class Burn implements MapFunction<Long, Long> {
        private final long rounds;

        Burn(long rounds) {
            this.rounds = rounds;
        }

        @Override
        public Long map(Long value) {
            return SkewWorkload.burn(value, rounds);
        }
    }

    /** Waits per record, off the CPU, as a synchronous call to a slow service would. */
    static final class Sleep implements MapFunction<Long, Long> {
        private final long millis;

        Sleep(long millis) {
            this.millis = millis;
        }

        @Override
        public Long map(Long value) throws InterruptedException {
            Thread.sleep(millis);
            return value;
        }
    }

    /** Allocates a chunk per record and keeps the last {@code retainMb} MB of them alive. */
    static final class Retain extends RichMapFunction<Long, Long> {
        private final long retainMb;
        private final int chunkBytes;
        private transient byte[][] ring;
        private transient int next;

        Retain(long retainMb, int chunkBytes) {
            this.retainMb = retainMb;
            this.chunkBytes = Math.max(16, chunkBytes);
        }

        @Override
        public void open(OpenContext context) {
            ring = new byte[(int) Math.max(1, retainMb * 1024 * 1024 / chunkBytes)][];
        }

        @Override
        public Long map(Long value) {
            byte[] chunk = new byte[chunkBytes];
            chunk[0] = (byte) (long) value;
            ring[next] = chunk;
            next = next + 1 == ring.length ? 0 : next + 1;
            return value + chunk.length;
        }
    }
}
