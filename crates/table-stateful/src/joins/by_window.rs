//! The window join laid out by window (on the memory backend): one table of keys per open
//! window, each key's rows of both sides in arrival order, so a row is one hash lookup and a
//! push (no map entry per row, no timer per key and window), and a watermark joins and drops
//! every window it passed in one pass. Pairs come out as [`super::window`]'s keyed operator
//! emits them: by window, then by the key's first row in it, lefts × rights in arrival order.
//!
//! A checkpoint holds the keyed operator's bytes (map states of rows by `(window, number)` and
//! row counts by window, an event-time timer per key and window, by key group), so savepoints
//! move between the layouts and restore at another parallelism.

use std::collections::{BTreeMap, HashSet};
use std::ops::RangeInclusive;

use sluice_datastream::partition::{assign_to_key_group, key_group_range_for_subtask, JavaHash};
use sluice_datastream::{Either, FastHashMap};
use sluice_runtime::state::snapshot::{restore_keyed, snapshot_keyed};
use sluice_runtime::state::{KeyedStateStore, StateBackendKind, TimerService};
use sluice_sql::Row;
use sluice_types::{Collector, CollectorExt, Operator, OperatorContext, OperatorError, Watermark};

use super::joined;
use super::window::{window_of, WindowJoinSpec, LEFT, LEFT_COUNT, RIGHT, RIGHT_COUNT};
use crate::key::{KeyRow, SqlKey};
use crate::row_errors::RowErrors;
use crate::stateful::LateRecords;
use crate::window_agg::Window;

type Key = SqlKey<KeyRow>;

/// A keyed store and the processing- and event-time timers, to write or read a checkpoint in
/// the keyed operator's format.
type Scratch = (KeyedStateStore<Key>, TimerService<Key>, TimerService<Key>);

/// One open window's keys and their rows (left, right), in the order the keys first came.
#[derive(Default)]
struct Keys {
    index: FastHashMap<Key, usize>,
    entries: Vec<(Key, Vec<Row>, Vec<Row>)>,
}

/// The operator (one per subtask).
pub(super) struct WindowJoinOp {
    spec: WindowJoinSpec,
    name: String,
    errors: RowErrors,
    late: LateRecords,
    watermark: i64,
    /// Open windows by `(end, start)`: the next to fire first.
    open: BTreeMap<(i64, i64), Keys>,
    max_parallelism: u32,
    key_groups: RangeInclusive<u32>,
}

impl WindowJoinOp {
    pub(super) fn new(
        spec: WindowJoinSpec,
        name: String,
        errors: RowErrors,
        late: &LateRecords,
    ) -> WindowJoinOp {
        WindowJoinOp {
            spec,
            name,
            errors,
            late: late.clone(),
            watermark: i64::MIN,
            open: BTreeMap::new(),
            max_parallelism: 1,
            key_groups: 0..=0,
        }
    }

    /// The rows of `key` in window `w` (left, right), empty if the key had none there.
    fn slot<'a>(
        open: &'a mut BTreeMap<(i64, i64), Keys>,
        w: Window,
        key: &Key,
    ) -> &'a mut (Key, Vec<Row>, Vec<Row>) {
        let keys = open.entry((w.end, w.start)).or_default();
        let i = match keys.index.get(key) {
            Some(&i) => i,
            None => {
                keys.entries.push((key.clone(), Vec::new(), Vec::new()));
                keys.index.insert(key.clone(), keys.entries.len() - 1);
                keys.entries.len() - 1
            }
        };
        &mut keys.entries[i]
    }

    fn scratch_store(&self) -> Result<Scratch, OperatorError> {
        let first = *self.key_groups.start();
        let store = KeyedStateStore::open(&StateBackendKind::Memory, "", self.key_groups.clone())?;
        Ok((store, TimerService::new(first), TimerService::new(first)))
    }
}

impl Operator<Either<Row, Row>, Row> for WindowJoinOp {
    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
        self.late.open(ctx);
        self.max_parallelism = ctx.max_parallelism;
        let range = key_group_range_for_subtask(
            ctx.max_parallelism,
            ctx.parallelism as u32,
            ctx.subtask_index as u32,
        );
        self.key_groups = range.start..=range.end;
        Ok(())
    }

    fn process(
        &mut self,
        row: Either<Row, Row>,
        _out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        let (row, columns, left, keys) = match row {
            Either::Left(r) => (r, self.spec.left_window, true, &self.spec.left_keys),
            Either::Right(r) => (r, self.spec.right_window, false, &self.spec.right_keys),
        };
        let Some(w) = window_of(&row, columns) else {
            self.errors
                .record(|| format!("{}: a window bound is not a timestamp", self.name));
            return Ok(());
        };
        if w.max_timestamp() <= self.watermark {
            self.late.add(1);
            return Ok(());
        }
        let key = super::key_of(keys, &row);
        let (_, lefts, rights) = Self::slot(&mut self.open, w, &key);
        if left {
            lefts.push(row);
        } else {
            rights.push(row);
        }
        Ok(())
    }

    /// Joins and drops every window whose last millisecond the watermark passed.
    fn on_watermark(
        &mut self,
        watermark: Watermark,
        out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        if watermark.0 > self.watermark {
            self.watermark = watermark.0;
            while let Some(entry) = self.open.first_entry() {
                if entry.key().0 - 1 > watermark.0 {
                    break;
                }
                for (_, lefts, rights) in entry.remove().entries {
                    for l in &lefts {
                        for r in &rights {
                            let condition = self.spec.condition.as_ref();
                            if let Some(row) = joined(l, r, condition, &self.errors, &self.name) {
                                out.collect(row)?;
                            }
                        }
                    }
                }
            }
        }
        out.emit_watermark(watermark)
    }

    fn snapshot_state(&mut self, _id: u64) -> Result<Option<Vec<u8>>, OperatorError> {
        let (mut store, processing, mut event) = self.scratch_store()?;
        for (&(end, start), keys) in &self.open {
            let w = Window { start, end };
            for (key, lefts, rights) in &keys.entries {
                let kg = assign_to_key_group(key.java_hash_code(), self.max_parallelism);
                store.set_current_key(key.clone(), kg)?;
                for (rows, (rows_state, counts_state)) in
                    [(lefts, (LEFT, LEFT_COUNT)), (rights, (RIGHT, RIGHT_COUNT))]
                {
                    if rows.is_empty() {
                        continue;
                    }
                    store
                        .map_state::<Window, u64>(counts_state)
                        .put(w, rows.len() as u64)?;
                    let mut state = store.map_state::<(Window, u64), Row>(rows_state);
                    for (n, row) in rows.iter().enumerate() {
                        state.put((w, n as u64), row.clone())?;
                    }
                }
                event.register(key, kg, w.max_timestamp());
            }
        }
        snapshot_keyed(&store, &[&processing, &event]).map(Some)
    }

    fn restore_state(&mut self, parts: &[(usize, Vec<u8>)]) -> Result<(), OperatorError> {
        let (mut store, mut processing, mut event) = self.scratch_store()?;
        restore_keyed(&mut store, &mut [&mut processing, &mut event], parts)?;
        // Every open window of a key has its timer: the timers name the keys.
        let mut seen = HashSet::new();
        for kg in event.key_groups() {
            for (key, _) in event.timers_of_key_group(kg) {
                if !seen.insert(key.clone()) {
                    continue;
                }
                store.set_current_key(key.clone(), kg)?;
                for (rows_state, left) in [(LEFT, true), (RIGHT, false)] {
                    let mut rows = store
                        .map_state::<(Window, u64), Row>(rows_state)
                        .take_where(|_| true)?;
                    rows.sort_unstable_by_key(|((w, n), _)| (w.end, w.start, *n));
                    for ((w, _), row) in rows {
                        let (_, lefts, rights) = Self::slot(&mut self.open, w, &key);
                        if left { lefts } else { rights }.push(row);
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use sluice_sql::{Timestamp, Value};
    use sluice_types::{ServicesHandle, VecCollector};

    use super::*;
    use crate::joins::JoinType;

    fn ts(ms: i64) -> Value {
        Value::Timestamp(Timestamp::from_millis(ms))
    }

    /// Joins `(key, window_start, window_end, value)` rows on the key, TUMBLE of 100 ms.
    fn op(subtask: usize, parallelism: usize, late: &LateRecords) -> WindowJoinOp {
        let spec = WindowJoinSpec {
            join_type: JoinType::Inner,
            left_keys: vec![0],
            right_keys: vec![0],
            left_window: (1, 2),
            right_window: (1, 2),
            condition: None,
        };
        let mut op = WindowJoinOp::new(spec, "WindowJoin".into(), RowErrors::new(), late);
        let ctx = OperatorContext {
            operator_name: "WindowJoin".into(),
            task_name: "WindowJoin".into(),
            subtask_index: subtask,
            parallelism,
            max_parallelism: 8,
            operator_id: "op".into(),
            services: ServicesHandle::none(),
            options: Vec::new(),
        };
        op.open(&ctx).unwrap();
        op
    }

    /// Row `i` of 1 000: key `i % 5`, window of time `i`, left when `i % 3 != 0`; a
    /// watermark every 40 rows trailing by 150 ms (late rows are dropped).
    fn feed(op: &mut WindowJoinOp, rows: std::ops::Range<i64>, out: &mut VecCollector<Row>) {
        for i in rows {
            let t = i - (i % 7) * 60;
            let start = t.div_euclid(100) * 100;
            let row = Row(vec![
                Value::Int(i % 5),
                ts(start),
                ts(start + 100),
                Value::Int(i),
            ]);
            let kg = assign_to_key_group(crate::joins::key_of(&[0], &row).java_hash_code(), 8);
            if op.key_groups.contains(&kg) {
                let e = if i % 3 == 0 {
                    Either::Right(row)
                } else {
                    Either::Left(row)
                };
                op.process(e, out).unwrap();
            }
            if i % 40 == 39 {
                op.on_watermark(Watermark(i - 150), out).unwrap();
            }
        }
    }

    fn sorted(mut rows: Vec<Row>) -> Vec<Row> {
        rows.sort_by_key(|r| format!("{r:?}"));
        rows
    }

    #[test]
    fn a_checkpoint_restores_at_another_parallelism() {
        let late = LateRecords::new();
        let mut expected = VecCollector::default();
        let mut whole = op(0, 1, &late);
        feed(&mut whole, 0..1_000, &mut expected);
        whole
            .on_watermark(Watermark(i64::MAX), &mut expected)
            .unwrap();
        assert!(late.count() > 0 && expected.records.len() > 500);

        let mut out = VecCollector::default();
        let mut first = op(0, 1, &late);
        feed(&mut first, 0..500, &mut out);
        let snap = first.snapshot_state(1).unwrap().unwrap();
        for subtask in 0..2 {
            let mut rest = op(subtask, 2, &late);
            rest.restore_state(&[(0, snap.clone())]).unwrap();
            // An operator's watermark is not in its checkpoint: the last one arrives again.
            rest.on_watermark(Watermark(499 - 150), &mut out).unwrap();
            feed(&mut rest, 500..1_000, &mut out);
            rest.on_watermark(Watermark(i64::MAX), &mut out).unwrap();
        }
        assert_eq!(sorted(out.records), sorted(expected.records));
    }
}
