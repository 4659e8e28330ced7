//! One source subtask: reads its partitions with a `BaseConsumer` assigned by hand (no group
//! rebalancing: Sluice assigns the splits), deserialises, stamps event time, emits watermarks,
//! injects checkpoint barriers with the partitions' next offsets, commits those offsets to the
//! group once their checkpoint completed (monitoring only), and publishes its metrics.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::error::KafkaError as RdError;
use rdkafka::{Message, Offset, TopicPartitionList};
use sluice_runtime::sources::{SourceContext, SourceFunction, SOURCE_BATCH};
use sluice_types::{Collector, OperatorContext, OperatorError};

use super::commit::commit_completed;
use super::deser::KafkaRecord;
use super::idle::idle_without_splits;
use super::metrics::{now_ms, publish, SourceGauges, StatsContext};
use super::offsets::PartitionPlan;
use super::split::{self, LiveSplit, SplitPosition};
use super::watermarks::{EventTime, KafkaWatermarks, SplitWatermarks};
use super::Shared;

/// How long one poll may wait for data: bounds how late a barrier or a cancel is seen while
/// the partitions are quiet.
const POLL_WAIT: Duration = Duration::from_millis(20);
/// Records between two clock reads (watermark interval, metrics) while records flow.
const CLOCK_EVERY: u32 = 64;
/// The group id given to librdkafka when the user set none (never committed to).
const UNUSED_GROUP: &str = "sluice-kafka-source";
/// How often lag, idle time and offsets are published (and completed checkpoints committed).
const METRICS_EVERY: Duration = Duration::from_millis(200);

/// The [`SourceFunction`] of one subtask of a [`super::KafkaSource`].
pub struct KafkaSourceReader<T> {
    shared: Arc<Shared<T>>,
    watermarks: Option<KafkaWatermarks<T>>,
    subtask: usize,
    parallelism: usize,
    restored: Option<Vec<SplitPosition>>,
}

impl<T> KafkaSourceReader<T> {
    pub(crate) fn new(
        shared: Arc<Shared<T>>,
        watermarks: Option<KafkaWatermarks<T>>,
        subtask: usize,
        parallelism: usize,
    ) -> Self {
        KafkaSourceReader {
            shared,
            watermarks,
            subtask,
            parallelism,
            restored: None,
        }
    }
}

impl<T: Send + 'static> SourceFunction<T> for KafkaSourceReader<T> {
    fn run(
        &mut self,
        ctx: &SourceContext,
        out: &mut dyn Collector<T>,
    ) -> Result<(), OperatorError> {
        let sh = self.shared.clone();
        let plans = split::my_splits(
            &sh.plan,
            self.restored.as_deref(),
            self.subtask,
            self.parallelism,
        );
        let operator = ctx.op.operator_name.clone();
        let names: Vec<(String, i32)> = plans
            .iter()
            .map(|p| (p.topic.clone(), p.partition))
            .collect();
        let gauges = SourceGauges::register(&ctx.metrics, &operator, &names);
        if plans.is_empty() {
            return idle_without_splits(ctx, out, &gauges, sh.bounded);
        }
        let mut splits: Vec<LiveSplit> = plans
            .into_iter()
            .map(|plan| LiveSplit {
                next: plan.start,
                finished: plan.end.is_some_and(|e| plan.start >= e),
                plan,
            })
            .collect();
        let bs = sh.settings.bootstrap.clone();
        let mut defaults = vec![
            ("enable.auto.commit", "false"),
            ("enable.auto.offset.store", "false"),
            ("enable.partition.eof", "true"),
            ("auto.offset.reset", "earliest"),
            ("statistics.interval.ms", "1000"),
        ];
        let group = sh.group_id.clone();
        // librdkafka refuses `assign` without a group id; without the user's group nothing is
        // ever committed, so this placeholder stays unused on the broker.
        defaults.push(("group.id", group.as_deref().unwrap_or(UNUSED_GROUP)));
        let consumer: BaseConsumer<StatsContext> = sh
            .settings
            .client_config(&defaults)
            .create_with_context(StatsContext::default())
            .map_err(|e| client_error("creating the consumer", &bs, e))?;
        let mut tpl = TopicPartitionList::new();
        for s in splits.iter().filter(|s| !s.finished) {
            tpl.add_partition_offset(&s.plan.topic, s.plan.partition, Offset::Offset(s.next))
                .map_err(|e| client_error("building the assignment", &bs, e))?;
        }
        consumer
            .assign(&tpl)
            .map_err(|e| client_error("assigning partitions", &bs, e))?;

        let strategy = self.watermarks.clone();
        let mut wms = strategy
            .as_ref()
            .map(|w| SplitWatermarks::new(w, splits.len()));
        let wm_interval = strategy.as_ref().map_or(Duration::from_secs(3600), |w| {
            w.interval.max(Duration::from_millis(1))
        });
        for (i, s) in splits.iter().enumerate() {
            if s.finished {
                if let Some(w) = &mut wms {
                    w.finish_split(i, out)?;
                }
            }
        }
        let mut pending_commits: VecDeque<(u64, Vec<SplitPosition>)> = VecDeque::new();
        let mut last_wm = Instant::now();
        let mut last_metrics = Instant::now() - METRICS_EVERY;
        let mut last_record = Instant::now();
        let mut last_ts: Option<i64> = None;
        let mut n = 0u64;
        let mut bytes = 0u64;
        let mut unfinished = splits.iter().filter(|s| !s.finished).count();
        let waits = ctx.metrics.waits.clone();
        // The last split a record came from: consecutive records mostly share it.
        let mut hint = 0usize;
        let mut since_clock = 0u32;
        while unfinished > 0 || !sh.bounded {
            if ctx.barrier_pending() {
                let before = ctx.last_barrier.get();
                let positions = positions_of(&splits);
                ctx.checkpoint_if_due(out, || split::encode(&positions))?;
                let id = ctx.last_barrier.get();
                if id != before && group.is_some() {
                    pending_commits.push_back((id, positions));
                }
            }
            // A record already fetched is taken without waiting (and without reading the clock);
            // only a wait for the broker is timed, as idle time.
            let polled = match consumer.poll(Duration::ZERO) {
                Some(r) => Some(r),
                None => {
                    let started = waits.begin_idle();
                    let r = consumer.poll(POLL_WAIT);
                    waits.end_idle(started);
                    r
                }
            };
            let was_record = matches!(&polled, Some(Ok(_)));
            match polled {
                Some(Ok(m)) => {
                    let (topic, partition, offset) = (m.topic(), m.partition(), m.offset());
                    let i = if splits[hint].plan.partition == partition
                        && splits[hint].plan.topic == topic
                    {
                        hint
                    } else {
                        match splits
                            .iter()
                            .position(|s| s.plan.partition == partition && s.plan.topic == topic)
                        {
                            Some(i) => i,
                            None => continue,
                        }
                    };
                    hint = i;
                    let s = &mut splits[i];
                    if s.finished || s.plan.end.is_some_and(|e| offset >= e) {
                        continue;
                    }
                    s.next = offset + 1;
                    let kafka_ts = m.timestamp().to_millis();
                    let record = KafkaRecord {
                        topic,
                        partition,
                        offset,
                        key: m.key(),
                        payload: m.payload(),
                        timestamp_ms: kafka_ts,
                    };
                    bytes += (record.key.map_or(0, <[u8]>::len)
                        + record.payload.map_or(0, <[u8]>::len))
                        as u64;
                    match sh.deserializer.deserialize(&record) {
                        Ok(value) => {
                            if let Some(w) = &mut wms {
                                let ts = match strategy.as_ref().map(|w| &w.event_time) {
                                    Some(EventTime::Record(f)) => Some(f(&value)),
                                    _ => kafka_ts,
                                };
                                if let Some(ts) = ts {
                                    w.on_event(i, ts, out)?;
                                }
                            }
                            out.collect(value)?;
                        }
                        Err(reason) => ctx
                            .dead_letter(format!("{topic}/{partition} at offset {offset}"), reason),
                    }
                    last_ts = kafka_ts.or(last_ts);
                    n += 1;
                    let s = &mut splits[i];
                    if s.plan.end.is_some_and(|e| s.next >= e) {
                        s.finished = true;
                        unfinished -= 1;
                        pause(&consumer, &s.plan);
                        if let Some(w) = &mut wms {
                            w.finish_split(i, out)?;
                        }
                    }
                    if n == SOURCE_BATCH {
                        ctx.add_emitted(n);
                        gauges.records_in.add(n as i64);
                        gauges.bytes_in.add(bytes as i64);
                        n = 0;
                        bytes = 0;
                        last_record = Instant::now();
                        if ctx.should_stop() {
                            return Err(OperatorError::Cancelled);
                        }
                    }
                }
                Some(Err(RdError::PartitionEOF(p))) => {
                    if sh.bounded {
                        // EOF: the consumer holds everything the partition had when it was
                        // polled, which includes everything before the end taken at start. A
                        // split that cannot reach its end by records (the last offsets are
                        // transaction markers) is finished here. EOF names only the
                        // partition number; a topic of ours with that number that has not
                        // read to its end is checked against the consumer's position.
                        let positions = consumer.position().ok();
                        for i in 0..splits.len() {
                            let s = &splits[i];
                            if s.finished || s.plan.partition != p {
                                continue;
                            }
                            let pos = positions.as_ref().and_then(|tpl| {
                                tpl.find_partition(&s.plan.topic, p).and_then(|e| {
                                    match e.offset() {
                                        Offset::Offset(o) => Some(o),
                                        _ => None,
                                    }
                                })
                            });
                            let same_number = splits
                                .iter()
                                .filter(|o| o.plan.partition == p && !o.finished)
                                .count();
                            if same_number == 1
                                || pos.is_some_and(|o| s.plan.end.is_some_and(|e| o >= e))
                            {
                                splits[i].finished = true;
                                unfinished -= 1;
                                pause(&consumer, &splits[i].plan);
                                if let Some(w) = &mut wms {
                                    w.finish_split(i, out)?;
                                }
                            }
                        }
                    }
                }
                Some(Err(e)) => {
                    tracing::warn!("{} (Kafka {bs}): {e}", ctx.op.task_display_name());
                }
                None => {
                    if ctx.should_stop() {
                        return Err(OperatorError::Cancelled);
                    }
                }
            }
            // While records flow, read the clock once per CLOCK_EVERY records only.
            since_clock += 1;
            if was_record && since_clock < CLOCK_EVERY {
                continue;
            }
            since_clock = 0;
            let now = Instant::now();
            if let Some(w) = &mut wms {
                if now.duration_since(last_wm) >= wm_interval {
                    last_wm = now;
                    w.periodic(now_ms(), out)?;
                }
            }
            if now.duration_since(last_metrics) >= METRICS_EVERY {
                last_metrics = now;
                if n > 0 {
                    ctx.add_emitted(n);
                    gauges.records_in.add(n as i64);
                    gauges.bytes_in.add(bytes as i64);
                    n = 0;
                    bytes = 0;
                    last_record = now;
                }
                publish(
                    &consumer,
                    &splits,
                    &gauges,
                    last_ts,
                    last_record,
                    sh.bounded,
                );
                commit_completed(ctx, &consumer, &mut pending_commits, &gauges, &splits);
            }
        }
        ctx.add_emitted(n);
        gauges.records_in.add(n as i64);
        gauges.bytes_in.add(bytes as i64);
        // The final checkpoint holds every partition at its end: the sink's last transaction
        // is committed under it (a restore from it reads nothing again).
        let at_end = positions_of(&splits);
        ctx.await_final_checkpoint(out, || split::encode(&at_end))?;
        publish(
            &consumer,
            &splits,
            &gauges,
            last_ts,
            last_record,
            sh.bounded,
        );
        commit_completed(ctx, &consumer, &mut pending_commits, &gauges, &splits);
        Ok(())
    }

    fn restore_position(
        &mut self,
        parts: &[(usize, Vec<u8>)],
        _op: &OperatorContext,
    ) -> Result<(), OperatorError> {
        let mut all = Vec::new();
        for (_, bytes) in parts {
            all.extend(split::decode(bytes)?);
        }
        self.restored = Some(all);
        Ok(())
    }
}

/// Where each split stands: the checkpoint position of this subtask.
fn positions_of(splits: &[LiveSplit]) -> Vec<SplitPosition> {
    splits
        .iter()
        .map(|s| SplitPosition {
            topic: s.plan.topic.clone(),
            partition: s.plan.partition,
            next: s.next,
        })
        .collect()
}

fn client_error(what: &str, bs: &str, e: RdError) -> OperatorError {
    crate::KafkaError::client(what, bs, e).into()
}

fn pause<C: ConsumerContext>(consumer: &BaseConsumer<C>, plan: &PartitionPlan) {
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition(&plan.topic, plan.partition);
    let _ = consumer.pause(&tpl);
}
