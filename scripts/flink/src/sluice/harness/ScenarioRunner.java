package sluice.harness;

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.JobManagerOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.datastream.DataStreamSource;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Runs one scenario job on a Flink MiniCluster in this JVM, with Flink's REST API (and web UI) on
 * 127.0.0.1, until a stop file appears or a time limit passes; then cancels the job and exits.
 * Sluice's tests use it to talk to a real Flink: the doctor, {@code top} and the autopilot read
 * its REST answers and rescale it through {@code PUT /jobs/:jid/resource-requirements}.
 *
 * <p>Scenarios (records are the skew workload's, see docs/src/reference/skew-workload.md):
 * <ul>
 *   <li>{@code underprov}: generator (p=1) -FORWARD-> heavy-map (p=1, a chain of its own, many
 *       rounds of work per record) -HASH-> sum-per-key (p) -> sink. Keys are uniform, so the load
 *       is even, but the single heavy-map subtask cannot keep up: the generator is back-pressured,
 *       heavy-map is busy and sum-per-key mostly idle. The fix is a higher heavy-map parallelism.
 *   <li>{@code skew}: generator (p) -> map -HASH-> sum-per-key (p, extra work per record) -> sink,
 *       with 80% of the records on key 0: one sum-per-key subtask does most of the work.
 *   <li>{@code chained}: generator -> heavy-map in one chain (p=1) -HASH-> sum-per-key (p) -> sink:
 *       the source chain is busy and not backpressured, and the time is heavy-map's.
 *   <li>{@code blocking-sink}: generator -> map -> db-sink in one chain (p=1); the sink sleeps
 *       {@code --sink-wait-us} (1000) per request, one request per {@code --sink-batch} (1) records.
 *   <li>{@code kryo}: generator -> to-event -HASH-> latest-per-key -> sink (p) over a record type
 *       that is no POJO, so Flink falls back to Kryo ({@code --tags}: list entries per record, 8).
 * </ul>
 *
 * <p>Flags: {@code --scenario}, {@code --rest-port} (0 = any), {@code --stop-file},
 * {@code --max-seconds} (300), {@code --scheduler default|adaptive}, {@code --parallelism} (2),
 * {@code --checkpoint-ms} (2000; 0 = none), {@code --map-work}, {@code --keyed-work},
 * {@code --hot} (share of key 0), {@code --keys}, {@code --records}. It prints
 * {@code JOB_ID <id>} once the job is submitted.
 */
public final class ScenarioRunner {
    private ScenarioRunner() {}

    public static void main(String[] argv) throws Exception {
        Flags flags = Flags.parse(argv);
        String scenario = flags.text("scenario", "underprov");
        int parallelism = (int) flags.number("parallelism", 2);
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.createLocalEnvironmentWithWebUI(configuration(flags));
        env.setRuntimeMode(RuntimeExecutionMode.STREAMING);
        env.setParallelism(parallelism);
        long checkpointMs = flags.number("checkpoint-ms", 2000);
        if (checkpointMs > 0) {
            env.enableCheckpointing(checkpointMs);
        }
        switch (scenario) {
            case "underprov":
                underProvisioned(env, flags);
                break;
            case "skew":
                skew(env, flags);
                break;
            case "chained":
                chained(env, flags);
                break;
            case "blocking-sink":
                blockingSink(env, flags);
                break;
            case "kryo":
                kryo(env, flags);
                break;
            default:
                throw new IllegalArgumentException(
                        "unknown scenario '" + scenario + "' (underprov, skew, chained, blocking-sink, kryo)");
        }
        JobClient job = env.executeAsync("sluice-harness " + scenario);
        System.out.println("JOB_ID " + job.getJobID());
        System.out.flush();
        waitForStop(job, Path.of(flags.text("stop-file", "scenario.stop")), flags.number("max-seconds", 300));
        finish(job);
        System.exit(0);
    }

    /** Every listener on loopback; the adaptive scheduler on request; flame graphs on. */
    private static Configuration configuration(Flags flags) {
        Configuration conf = new Configuration();
        String loopback = "127.0.0.1";
        conf.set(RestOptions.ADDRESS, loopback);
        conf.set(RestOptions.BIND_ADDRESS, loopback);
        conf.set(RestOptions.PORT, (int) flags.number("rest-port", 0));
        conf.set(RestOptions.ENABLE_FLAMEGRAPH, true);
        conf.set(JobManagerOptions.ADDRESS, loopback);
        conf.set(JobManagerOptions.BIND_HOST, loopback);
        conf.set(TaskManagerOptions.HOST, loopback);
        conf.set(TaskManagerOptions.BIND_HOST, loopback);
        String scheduler = flags.text("scheduler", "default");
        if (scheduler.equals("adaptive")) {
            conf.set(JobManagerOptions.SCHEDULER, JobManagerOptions.SchedulerType.Adaptive);
        } else if (!scheduler.equals("default")) {
            throw new IllegalArgumentException("--scheduler is default or adaptive, not '" + scheduler + "'");
        }
        return conf;
    }

    /** The skew workload's records, practically unbounded unless --records says otherwise. */
    private static DataStreamSource<Tuple2<Long, Long>> generator(StreamExecutionEnvironment env, Flags flags, double hot) {
        DataGeneratorSource<Tuple2<Long, Long>> source = new DataGeneratorSource<>(
                new SkewWorkload.Records(hot, flags.number("keys", 10_000)),
                flags.number("records", 1_000_000_000_000L),
                RateLimiterStrategy.noOp(),
                SkewWorkload.RECORD);
        return env.fromSource(source, WatermarkStrategy.noWatermarks(), "generator");
    }

    private static void underProvisioned(StreamExecutionEnvironment env, Flags flags) {
        generator(env, flags, flags.fraction("hot", 0.0))
                .setParallelism(1)
                .forward()
                .map(new SkewWorkload.Work(flags.number("map-work", 1500)))
                .returns(SkewWorkload.RECORD)
                .name("heavy-map")
                .setParallelism(1)
                .startNewChain()
                .keyBy(new SkewWorkload.ByKey())
                .reduce(new SkewWorkload.Sum(flags.number("keyed-work", 0)))
                .name("sum-per-key")
                .sinkTo(new DiscardingSink<>())
                .name("sink");
    }

    private static void skew(StreamExecutionEnvironment env, Flags flags) {
        generator(env, flags, flags.fraction("hot", 0.8))
                .map(new SkewWorkload.Work(flags.number("map-work", 4)))
                .returns(SkewWorkload.RECORD)
                .name("map")
                .keyBy(new SkewWorkload.ByKey())
                .reduce(new SkewWorkload.Sum(flags.number("keyed-work", 400)))
                .name("sum-per-key")
                .sinkTo(new DiscardingSink<>())
                .name("sink");
    }

    /**
     * Source and heavy map in one chain (p=1): the chain is busy and nothing backpressures it,
     * but the time is the map's, not the source's.
     */
    private static void chained(StreamExecutionEnvironment env, Flags flags) {
        generator(env, flags, flags.fraction("hot", 0.0))
                .setParallelism(1)
                .map(new SkewWorkload.Work(flags.number("map-work", 1500)))
                .returns(SkewWorkload.RECORD)
                .name("heavy-map")
                .setParallelism(1)
                .keyBy(new SkewWorkload.ByKey())
                .reduce(new SkewWorkload.Sum(flags.number("keyed-work", 0)))
                .name("sum-per-key")
                .sinkTo(new DiscardingSink<>())
                .name("sink");
    }

    /**
     * Source, map and a sink that waits on its "database" (a sleep of --sink-wait-us per
     * request, one request per --sink-batch records), all in one chain at p=1.
     */
    private static void blockingSink(StreamExecutionEnvironment env, Flags flags) {
        generator(env, flags, flags.fraction("hot", 0.0))
                .setParallelism(1)
                .map(new SkewWorkload.Work(flags.number("map-work", 4)))
                .returns(SkewWorkload.RECORD)
                .name("map")
                .setParallelism(1)
                .sinkTo(new ChainWorkloads.SlowSink(
                        flags.number("sink-wait-us", 1000), flags.number("sink-batch", 1)))
                .name("db-sink")
                .setParallelism(1);
    }

    /**
     * A keyed job over a record type that is no POJO, so Flink serializes it with Kryo on the
     * HASH edge: source -> to-event -HASH-> latest-per-key -> sink.
     */
    private static void kryo(StreamExecutionEnvironment env, Flags flags) {
        generator(env, flags, flags.fraction("hot", 0.0))
                .map(new ChainWorkloads.ToEvent((int) flags.number("tags", 8)))
                .name("to-event")
                .keyBy(new ChainWorkloads.EventKey())
                .reduce(new ChainWorkloads.EventSum())
                .name("latest-per-key")
                .sinkTo(new DiscardingSink<>())
                .name("sink");
    }

    /** Polls for the stop file (4 times a second) until the deadline or the job ends by itself. */
    private static void waitForStop(JobClient job, Path stopFile, long maxSeconds) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(maxSeconds);
        while (System.nanoTime() < deadline && !Files.exists(stopFile)) {
            JobStatus status = job.getJobStatus().get(30, TimeUnit.SECONDS);
            if (status.isGloballyTerminalState()) {
                System.out.println("job ended by itself: " + status);
                return;
            }
            Thread.sleep(250);
        }
    }

    /** Cancels the job and waits (bounded) for it to be gone; failures are reported, not thrown. */
    private static void finish(JobClient job) {
        try {
            job.cancel().get(60, TimeUnit.SECONDS);
            System.out.println("CANCELLED");
        } catch (Exception e) {
            System.out.println("cancel: " + e);
        }
        try {
            job.getJobExecutionResult().get(60, TimeUnit.SECONDS);
        } catch (Exception e) {
            System.out.println("final state: " + e.getClass().getSimpleName());
        }
        System.out.flush();
    }
}
