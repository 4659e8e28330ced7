package sluice.harness;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple2;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The pieces of the scenarios that show what Flink reports per chain rather than per operator:
 * a sink whose every write waits like a database round trip ({@link SlowSink}), and a record
 * type Flink cannot treat as a POJO, so it falls back to Kryo ({@link Event}).
 */
final class ChainWorkloads {
    private ChainWorkloads() {}

    /**
     * A sink standing for a database written one row per request: each write waits
     * {@code waitMicros} (a round trip), every {@code batch} records (1 = no batching).
     */
    static final class SlowSink implements Sink<Tuple2<Long, Long>> {
        private static final long serialVersionUID = 1L;
        private final long waitMicros;
        private final long batch;

        SlowSink(long waitMicros, long batch) {
            this.waitMicros = waitMicros;
            this.batch = Math.max(1, batch);
        }

        @Override
        public SinkWriter<Tuple2<Long, Long>> createWriter(WriterInitContext context) {
            return new SinkWriter<Tuple2<Long, Long>>() {
                private long pending;
                private long checksum;

                @Override
                public void write(Tuple2<Long, Long> record, Context context) throws InterruptedException {
                    checksum += record.f1;
                    if (++pending >= batch) {
                        pending = 0;
                        roundTrip();
                    }
                }

                @Override
                public void flush(boolean endOfInput) throws InterruptedException {
                    if (pending > 0) {
                        pending = 0;
                        roundTrip();
                    }
                }

                /** The wait of one request to the database (the thread sleeps, off CPU). */
                private void roundTrip() throws InterruptedException {
                    TimeUnit.MICROSECONDS.sleep(waitMicros);
                }

                @Override
                public void close() {}
            };
        }
    }

    /**
     * A record Flink cannot analyse as a POJO (final fields, no public no-arg constructor, no
     * setters), so its TypeInformation is a GenericType and Kryo serializes it on every edge.
     */
    static final class Event {
        private final long key;
        private final long value;
        private final String name;
        private final List<String> tags;

        Event(long key, long value, String name, List<String> tags) {
            this.key = key;
            this.value = value;
            this.name = name;
            this.tags = tags;
        }

        long key() {
            return key;
        }

        long value() {
            return value;
        }
    }

    /** An event per skew-workload record, with a name and a few tags (what makes Kryo work). */
    static final class ToEvent implements MapFunction<Tuple2<Long, Long>, Event> {
        private static final long serialVersionUID = 1L;
        private final int tags;

        ToEvent(int tags) {
            this.tags = tags;
        }

        @Override
        public Event map(Tuple2<Long, Long> r) {
            List<String> list = new ArrayList<>(tags);
            for (int i = 0; i < tags; i++) {
                list.add("tag-" + ((r.f1 + i) & 0xFF));
            }
            return new Event(r.f0, r.f1, "user-" + r.f0, list);
        }
    }

    /** Keys events by their key. */
    static final class EventKey implements KeySelector<Event, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long getKey(Event e) {
            return e.key();
        }
    }

    /** Keeps the latest event per key with the running sum of values. */
    static final class EventSum implements ReduceFunction<Event> {
        private static final long serialVersionUID = 1L;

        @Override
        public Event reduce(Event a, Event b) {
            return new Event(b.key, a.value + b.value, b.name, b.tags);
        }
    }
}
