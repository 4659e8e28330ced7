//! The keyed step of an event-time window aggregation over aligned windows (TUMBLE, HOP,
//! CUMULATE, or a windowed input), laid out by window rather than by key, as Flink's slicing
//! operator is: one table of keys per open window, ordered by window end. A record (or a
//! partial slice) updates its key's entry in each window containing it — one hash lookup, no
//! keyed-state context, no timer — and a watermark drains every window it passed whole, in one
//! pass over its keys, instead of firing one timer per key and window. The windows of a key
//! come out as [`super::global`]'s would: by window, then by the key's first record in it.
//!
//! A checkpoint holds the same bytes as the per-key operator's (keyed map state
//! `window-accumulators` of window → accumulators and an event-time timer per key and window,
//! by key group), so savepoints move between the two layouts and restore at another
//! parallelism through the keyed-state machinery ([`sluice_runtime::state::snapshot`]).
//! Only for the memory state backend: with the LSM backend the per-key operator keeps state on
//! disk.

use std::collections::{BTreeMap, HashSet};
use std::ops::RangeInclusive;
use std::sync::Arc;

use sluice_datastream::partition::{assign_to_key_group, key_group_range_for_subtask, JavaHash};
use sluice_datastream::FastHashMap;
use sluice_runtime::hotkeys::{HotKeysConfig, HotKeysHook};
use sluice_runtime::operators::system_time_ms;
use sluice_runtime::state::snapshot::{restore_keyed, snapshot_keyed};
use sluice_runtime::state::{KeyedStateStore, StateBackendKind, TimerService};
use sluice_sql::{Accumulator, Row, Value};
use sluice_types::{Collector, CollectorExt, Operator, OperatorContext, OperatorError, Watermark};

use super::global::{Shared, WINDOWS};
use super::kinds::Window;
use super::local::WindowPartial;
use super::{timestamp, WindowProperty};
use crate::key::{KeyRow, SqlKey};
use crate::stateful::LateRecords;

type Key = SqlKey<KeyRow>;

/// A keyed store and the processing- and event-time timers, to write or read a checkpoint in
/// the keyed operator's format.
type Scratch = (KeyedStateStore<Key>, TimerService<Key>, TimerService<Key>);

/// One open window's keys and their accumulators, in the order the keys first reached it.
#[derive(Default)]
struct Groups {
    index: FastHashMap<Key, usize>,
    entries: Vec<(Key, Vec<Accumulator>)>,
}

/// The operator (one per subtask).
pub(super) struct AlignedWindowAgg {
    shared: Arc<Shared>,
    late: LateRecords,
    /// Scratch: the current row's argument values, per call.
    args: Vec<Vec<Value>>,
    watermark: i64,
    /// Open windows by `(end, start)`: the next to fire first.
    open: BTreeMap<(i64, i64), Groups>,
    max_parallelism: u32,
    key_groups: RangeInclusive<u32>,
    /// The subtask's hot keys (rows, or the local step's partials), for the REST API's hot
    /// keys and `EXPLAIN ANALYZE`: a decrement per record, 1 in 8 sketched.
    hot_keys: HotKeysHook<Key>,
}

/// A group key as the hot-key records show it: its values, comma-separated.
fn render_key(key: &Key) -> String {
    let parts: Vec<String> = key
        .0
        .values()
        .iter()
        .map(|v| match v {
            Value::Null => "NULL".to_string(),
            Value::Int(i) => i.to_string(),
            Value::Str(s) => s.as_ref().to_string(),
            other => format!("{other:?}"),
        })
        .collect();
    parts.join(", ")
}

impl AlignedWindowAgg {
    pub(super) fn new(shared: Arc<Shared>, late: &LateRecords) -> AlignedWindowAgg {
        let args = vec![Vec::new(); shared.spec.aggs.len()];
        AlignedWindowAgg {
            shared,
            late: late.clone(),
            args,
            watermark: i64::MIN,
            open: BTreeMap::new(),
            max_parallelism: 1,
            key_groups: 0..=0,
            hot_keys: HotKeysHook::new(HotKeysConfig::default(), render_key),
        }
    }

    /// The accumulators of `key` in window `w`, created fresh if the key had none there.
    fn slot<'a>(
        open: &'a mut BTreeMap<(i64, i64), Groups>,
        shared: &Shared,
        w: Window,
        key: &Key,
    ) -> &'a mut Vec<Accumulator> {
        let groups = open.entry((w.end, w.start)).or_default();
        let i = match groups.index.get(key) {
            Some(&i) => i,
            None => {
                let fresh = shared
                    .spec
                    .aggs
                    .iter()
                    .map(|a| a.call.create_accumulator())
                    .collect();
                groups.entries.push((key.clone(), fresh));
                groups.index.insert(key.clone(), groups.entries.len() - 1);
                groups.entries.len() - 1
            }
        };
        &mut groups.entries[i].1
    }

    fn key_group(&self, key: &Key) -> u32 {
        assign_to_key_group(key.java_hash_code(), self.max_parallelism)
    }

    /// Emits and drops every window whose last millisecond is at or before `time`, by
    /// growing `(end, start)`.
    fn fire(&mut self, time: i64, out: &mut dyn Collector<Row>) -> Result<(), OperatorError> {
        let properties = &self.shared.spec.properties;
        let fired_at = properties
            .contains(&WindowProperty::ProcTime)
            .then(system_time_ms)
            .unwrap_or(0);
        while let Some(entry) = self.open.first_entry() {
            let (end, start) = *entry.key();
            if end - 1 > time {
                break;
            }
            let groups = entry.remove();
            for (key, accs) in groups.entries {
                let key = key.0.values();
                let mut row = Vec::with_capacity(key.len() + accs.len() + properties.len());
                row.extend(key.iter().cloned());
                row.extend(accs.iter().map(Accumulator::result));
                row.extend(properties.iter().map(|p| match p {
                    WindowProperty::Start => timestamp(start),
                    WindowProperty::End => timestamp(end),
                    WindowProperty::Time => timestamp(end - 1),
                    WindowProperty::ProcTime => timestamp(fired_at),
                }));
                out.collect(Row(row))?;
            }
        }
        Ok(())
    }

    /// A memory store and timer services of the subtask's key groups.
    fn scratch_store(&self) -> Result<Scratch, OperatorError> {
        let first = *self.key_groups.start();
        let store = KeyedStateStore::open(&StateBackendKind::Memory, "", self.key_groups.clone())?;
        Ok((store, TimerService::new(first), TimerService::new(first)))
    }
}

fn record_errors(shared: &Shared, accs: &mut [Accumulator], args: &[Vec<Value>]) {
    for (acc, args) in accs.iter_mut().zip(args) {
        if let Err(e) = acc.add(args) {
            shared
                .errors
                .record(|| format!("window aggregate over {:?}: {e}", shared.spec.kind));
        }
    }
}

fn merge_into(shared: &Shared, accs: &mut [Accumulator], other: &[Accumulator]) {
    for (acc, o) in accs.iter_mut().zip(other) {
        if let Err(e) = acc.merge(o) {
            shared
                .errors
                .record(|| format!("window aggregate merge: {e}"));
        }
    }
}

/// What both inputs (rows, the local step's partials) share.
macro_rules! common {
    () => {
        fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
            self.late.open(ctx);
            self.max_parallelism = ctx.max_parallelism;
            let range = key_group_range_for_subtask(
                ctx.max_parallelism,
                ctx.parallelism as u32,
                ctx.subtask_index as u32,
            );
            self.key_groups = range.start..=range.end;
            self.hot_keys.open(ctx, ctx.subtask_index as u64);
            Ok(())
        }

        fn finish(&mut self, _out: &mut dyn Collector<Row>) -> Result<(), OperatorError> {
            self.hot_keys.publish();
            Ok(())
        }

        fn tick(&mut self, _out: &mut dyn Collector<Row>) -> Result<(), OperatorError> {
            self.hot_keys.tick();
            Ok(())
        }

        fn on_watermark(
            &mut self,
            watermark: Watermark,
            out: &mut dyn Collector<Row>,
        ) -> Result<(), OperatorError> {
            if watermark.0 > self.watermark {
                self.watermark = watermark.0;
                self.fire(watermark.0, out)?;
            }
            out.emit_watermark(watermark)
        }

        fn snapshot_state(&mut self, _id: u64) -> Result<Option<Vec<u8>>, OperatorError> {
            let (mut store, processing, mut event) = self.scratch_store()?;
            for (&(end, start), groups) in &self.open {
                let w = Window { start, end };
                for (key, accs) in &groups.entries {
                    let kg = self.key_group(key);
                    store.set_current_key(key.clone(), kg)?;
                    store
                        .map_state::<Window, Vec<Accumulator>>(WINDOWS)
                        .put(w, accs.clone())?;
                    event.register(key, kg, w.max_timestamp());
                }
            }
            snapshot_keyed(&store, &[&processing, &event]).map(Some)
        }

        fn restore_state(&mut self, parts: &[(usize, Vec<u8>)]) -> Result<(), OperatorError> {
            let (mut store, mut processing, mut event) = self.scratch_store()?;
            restore_keyed(&mut store, &mut [&mut processing, &mut event], parts)?;
            if !processing.is_empty() {
                return Err(OperatorError::failed(
                    "the snapshot of an event-time window aggregation has processing-time timers",
                ));
            }
            // Every open window of a key has its timer: the timers name the keys.
            let mut seen = HashSet::new();
            for kg in event.key_groups() {
                for (key, _) in event.timers_of_key_group(kg) {
                    if !seen.insert(key.clone()) {
                        continue;
                    }
                    store.set_current_key(key.clone(), kg)?;
                    let mut windows = store
                        .map_state::<Window, Vec<Accumulator>>(WINDOWS)
                        .take_where(|_| true)?;
                    windows.sort_unstable_by_key(|(w, _)| (w.end, w.start));
                    for (w, accs) in windows {
                        let slot = Self::slot(&mut self.open, &self.shared, w, &key);
                        *slot = accs;
                    }
                }
            }
            Ok(())
        }
    };
}

impl Operator<Row, Row> for AlignedWindowAgg {
    fn process(&mut self, row: Row, _out: &mut dyn Collector<Row>) -> Result<(), OperatorError> {
        let spec = &self.shared.spec;
        let slice = match spec.event_slice(&row) {
            Ok(Some(slice)) => slice,
            Ok(None) => return Ok(()),
            Err(e) => {
                self.shared
                    .errors
                    .record(|| format!("window aggregate: {e}"));
                return Ok(());
            }
        };
        let mut windows = spec.windows_of_slice(slice);
        if spec.legacy {
            let watermark = self.watermark;
            windows.retain(|w| w.max_timestamp() > watermark);
            if windows.is_empty() {
                self.late.add(1);
                return Ok(());
            }
        } else if slice.end - 1 <= self.watermark {
            self.late.add(1);
            return Ok(());
        }
        for (slot, a) in self.args.iter_mut().zip(&spec.aggs) {
            slot.clear();
            slot.extend(a.args.iter().map(|&i| row.get(i).clone()));
        }
        let key = spec.key_of(&row);
        self.hot_keys.observe(&key);
        for w in windows {
            let accs = Self::slot(&mut self.open, &self.shared, w, &key);
            record_errors(&self.shared, accs, &self.args);
        }
        Ok(())
    }

    common!();
}

impl Operator<WindowPartial, Row> for AlignedWindowAgg {
    fn process(
        &mut self,
        partial: WindowPartial,
        _out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        self.hot_keys.observe(&partial.key);
        if partial.slice.end - 1 <= self.watermark {
            self.late.add(partial.records);
            return Ok(());
        }
        for w in self.shared.spec.windows_of_slice(partial.slice) {
            let accs = Self::slot(&mut self.open, &self.shared, w, &partial.key);
            merge_into(&self.shared, accs, &partial.accumulators);
        }
        Ok(())
    }

    common!();
}

#[cfg(test)]
mod tests {
    use sluice_runtime::operators::KeyedProcessOp;
    use sluice_runtime::state::KeyedStateConfig;
    use sluice_sql::{resolve_aggregate, DataType, Timestamp};
    use sluice_types::{ServicesHandle, VecCollector};

    use super::*;
    use crate::row_errors::RowErrors;
    use crate::window_agg::global::GlobalWindowAgg;
    use crate::window_agg::{WindowAggCall, WindowAggSpec, WindowKind, WindowTime};

    const MAX_PARALLELISM: u32 = 8;

    fn ts(ms: i64) -> Value {
        Value::Timestamp(Timestamp::from_millis(ms))
    }

    /// HOP(500 ms, 1 s) over column 1, key column 0, COUNT(*) and SUM(column 2).
    fn shared(legacy: bool) -> Arc<Shared> {
        let agg = |name: &str, args: &[DataType]| {
            resolve_aggregate(name, args, false, true, None).unwrap()
        };
        Arc::new(Shared {
            spec: WindowAggSpec {
                keys: vec![0],
                kind: WindowKind::Hop {
                    slide: 500,
                    size: 1_000,
                },
                time: WindowTime::RowTime(1),
                aggs: vec![
                    WindowAggCall {
                        call: agg("COUNT", &[]),
                        args: vec![],
                    },
                    WindowAggCall {
                        call: agg("SUM", &[DataType::bigint()]),
                        args: vec![2],
                    },
                ],
                properties: WindowAggSpec::TVF_PROPERTIES.to_vec(),
                local: None,
                legacy,
            },
            errors: RowErrors::new(),
        })
    }

    fn ctx(subtask: usize, parallelism: usize) -> OperatorContext {
        OperatorContext {
            operator_name: "WindowAggregate".into(),
            task_name: "WindowAggregate".into(),
            subtask_index: subtask,
            parallelism,
            max_parallelism: MAX_PARALLELISM,
            operator_id: "op".into(),
            services: ServicesHandle::none(),
            options: Vec::new(),
        }
    }

    fn aligned(
        shared: &Arc<Shared>,
        late: &LateRecords,
        subtask: usize,
        p: usize,
    ) -> AlignedWindowAgg {
        let mut op = AlignedWindowAgg::new(shared.clone(), late);
        Operator::<Row, Row>::open(&mut op, &ctx(subtask, p)).unwrap();
        op
    }

    /// The per-key operator, one subtask of all key groups.
    fn per_key(shared: &Arc<Shared>, late: &LateRecords) -> impl Operator<Row, Row> {
        let config = KeyedStateConfig {
            backend: StateBackendKind::Memory,
            key_group_of: Arc::new(|k: &Key| {
                assign_to_key_group(k.java_hash_code(), MAX_PARALLELISM)
            }),
            key_groups: 0..=MAX_PARALLELISM - 1,
        };
        let spec = shared.spec.clone();
        let mut op = KeyedProcessOp::new(
            move |r: &Row| spec.key_of(r),
            config,
            GlobalWindowAgg::new(shared.clone(), late),
        );
        op.open(&ctx(0, 1)).unwrap();
        op
    }

    /// 12 keys, times running forward with some out of order, a watermark every 50 rows
    /// trailing the largest time by 300 ms (so some rows are late).
    fn feed(
        op: &mut dyn Operator<Row, Row>,
        rows: std::ops::Range<i64>,
        out: &mut VecCollector<Row>,
    ) {
        let mut max = i64::MIN;
        for i in rows {
            let t = i * 7 - (i % 5) * 150;
            max = max.max(t);
            op.process(Row(vec![Value::Int(i % 12), ts(t), Value::Int(i)]), out)
                .unwrap();
            if i % 50 == 49 {
                op.on_watermark(Watermark(max - 300), out).unwrap();
            }
        }
    }

    #[test]
    fn windows_late_rows_and_order_are_the_per_key_operators() {
        for legacy in [false, true] {
            let shared = shared(legacy);
            let (late_a, late_b) = (LateRecords::new(), LateRecords::new());
            let (mut a, mut b) = (VecCollector::default(), VecCollector::default());
            let mut new = aligned(&shared, &late_a, 0, 1);
            let mut old = per_key(&shared, &late_b);
            for (op, out) in [
                (&mut new as &mut dyn Operator<Row, Row>, &mut a),
                (&mut old, &mut b),
            ] {
                feed(op, 0..2_000, out);
                op.on_watermark(Watermark(i64::MAX), out).unwrap();
            }
            // A legacy window takes a row until the window fires: none is late here.
            assert!(legacy || late_a.count() > 0, "some rows are late");
            assert_eq!(late_a.count(), late_b.count(), "legacy={legacy}");
            assert!(a.records.len() > 100);
            assert_eq!(a.records, b.records, "legacy={legacy}");
        }
    }

    fn sorted(mut rows: Vec<Row>) -> Vec<Row> {
        rows.sort_by_key(|r| format!("{r:?}"));
        rows
    }

    #[test]
    fn a_checkpoint_restores_across_layouts_and_parallelisms() {
        let shared = shared(false);
        let late = LateRecords::new();
        // What a run without a checkpoint emits.
        let mut expected = VecCollector::default();
        let mut whole = aligned(&shared, &late, 0, 1);
        feed(&mut whole, 0..2_000, &mut expected);
        Operator::<Row, Row>::on_watermark(&mut whole, Watermark(i64::MAX), &mut expected).unwrap();

        // The first 1 000 rows, checkpointed by either layout at parallelism 1.
        let mut before_new = VecCollector::default();
        let mut new = aligned(&shared, &late, 0, 1);
        feed(&mut new, 0..1_000, &mut before_new);
        let snap_new = Operator::<Row, Row>::snapshot_state(&mut new, 1)
            .unwrap()
            .unwrap();
        let mut before_old = VecCollector::default();
        let mut old = per_key(&shared, &late);
        feed(&mut old, 0..1_000, &mut before_old);
        let snap_old = old.snapshot_state(1).unwrap().unwrap();
        assert_eq!(
            sorted(before_new.records.clone()),
            sorted(before_old.records)
        );

        // Restored at parallelism 2 from either, and into the per-key layout from the new one;
        // an operator's watermark is not in its checkpoint: the last one arrives again.
        let resume = Watermark((0..1_000).map(|i| i * 7 - (i % 5) * 150).max().unwrap() - 300);
        for snap in [&snap_new, &snap_old] {
            let mut out = before_new.records.clone();
            for subtask in 0..2 {
                let mut op = aligned(&shared, &late, subtask, 2);
                Operator::<Row, Row>::restore_state(&mut op, &[(0, snap.clone())]).unwrap();
                let mut rest = VecCollector::default();
                Operator::<Row, Row>::on_watermark(&mut op, resume, &mut rest).unwrap();
                // Each subtask gets the rows of its own key groups.
                let groups = op.key_groups.clone();
                let mut max = i64::MIN;
                for i in 1_000..2_000 {
                    let t = i * 7 - (i % 5) * 150;
                    max = max.max(t);
                    let row = Row(vec![Value::Int(i % 12), ts(t), Value::Int(i)]);
                    let kg = op.key_group(&shared.spec.key_of(&row));
                    if groups.contains(&kg) {
                        Operator::<Row, Row>::process(&mut op, row, &mut rest).unwrap();
                    }
                    if i % 50 == 49 {
                        Operator::<Row, Row>::on_watermark(
                            &mut op,
                            Watermark(max - 300),
                            &mut rest,
                        )
                        .unwrap();
                    }
                }
                Operator::<Row, Row>::on_watermark(&mut op, Watermark(i64::MAX), &mut rest)
                    .unwrap();
                out.extend(rest.records);
            }
            assert_eq!(sorted(out), sorted(expected.records.clone()));
        }
        let mut old = per_key(&shared, &late);
        old.restore_state(&[(0, snap_new)]).unwrap();
        let mut out = before_new;
        old.on_watermark(resume, &mut out).unwrap();
        feed(&mut old, 1_000..2_000, &mut out);
        old.on_watermark(Watermark(i64::MAX), &mut out).unwrap();
        assert_eq!(sorted(out.records), sorted(expected.records));
    }
}
