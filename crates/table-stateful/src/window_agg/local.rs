//! The local step of a two-phase window aggregation (Flink's `LocalWindowAggregate`): before
//! the keyed exchange, each subtask pre-aggregates its rows per (key, slice) and sends the
//! partial accumulators on, so the exchange carries one record per key and slice instead of
//! one per row. It keeps nothing across a checkpoint: it sends everything it holds before the
//! barrier (Flink's `prepareSnapshotPreBarrier`), at each watermark (so the keyed step has a
//! slice before the watermark that fires its windows), at end of input, and whenever it holds
//! [`BUNDLE`] groups.

use serde::{Deserialize, Serialize};
use sluice_datastream::{DataStream, FastHashMap};
use sluice_sql::{Accumulator, Row, Value};
use sluice_types::{Collector, CollectorExt, Operator, OperatorError, Watermark};

use super::{Window, WindowAggSpec};
use crate::key::{KeyRow, SqlKey};
use crate::row_errors::RowErrors;
use crate::stateful::OperatorIds;

/// How many (key, slice) groups the local step holds before it sends them all.
pub const BUNDLE: usize = 10_000;

/// One key's partial accumulators over one slice, from the local step to the keyed one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WindowPartial {
    /// The group's key columns.
    pub key: SqlKey<KeyRow>,
    /// The slice the rows fell in (with a windowed input: their window).
    pub slice: Window,
    /// One accumulator per aggregate call.
    pub accumulators: Vec<Accumulator>,
    /// How many rows the accumulators hold (counted as late if the slice is).
    pub records: u64,
}

struct LocalWindowAggOp {
    spec: WindowAggSpec,
    groups: FastHashMap<(SqlKey<KeyRow>, Window), (Vec<Accumulator>, u64)>,
    args: Vec<Value>,
    errors: RowErrors,
}

impl LocalWindowAggOp {
    fn flush(&mut self, out: &mut dyn Collector<WindowPartial>) -> Result<(), OperatorError> {
        for ((key, slice), (accumulators, records)) in self.groups.drain() {
            out.collect(WindowPartial {
                key,
                slice,
                accumulators,
                records,
            })?;
        }
        Ok(())
    }
}

impl Operator<Row, WindowPartial> for LocalWindowAggOp {
    fn process(
        &mut self,
        row: Row,
        out: &mut dyn Collector<WindowPartial>,
    ) -> Result<(), OperatorError> {
        let slice = match self.spec.event_slice(&row) {
            Ok(Some(slice)) => slice,
            Ok(None) => return Ok(()),
            Err(e) => {
                self.errors
                    .record(|| format!("local window aggregate: {e}"));
                return Ok(());
            }
        };
        let key = self.spec.key_of(&row);
        let spec = &self.spec;
        let (accs, records) = self.groups.entry((key, slice)).or_insert_with(|| {
            let accs = spec
                .aggs
                .iter()
                .map(|a| a.call.create_accumulator())
                .collect();
            (accs, 0)
        });
        *records += 1;
        for (acc, a) in accs.iter_mut().zip(&spec.aggs) {
            self.args.clear();
            self.args.extend(a.args.iter().map(|&i| row.get(i).clone()));
            if let Err(e) = acc.add(&self.args) {
                self.errors
                    .record(|| format!("local window aggregate: {e}"));
            }
        }
        if self.groups.len() >= BUNDLE {
            self.flush(out)?;
        }
        Ok(())
    }

    fn on_watermark(
        &mut self,
        watermark: Watermark,
        out: &mut dyn Collector<WindowPartial>,
    ) -> Result<(), OperatorError> {
        self.flush(out)?;
        out.emit_watermark(watermark)
    }

    fn prepare_snapshot_pre_barrier(
        &mut self,
        out: &mut dyn Collector<WindowPartial>,
    ) -> Result<(), OperatorError> {
        self.flush(out)
    }

    fn finish(&mut self, out: &mut dyn Collector<WindowPartial>) -> Result<(), OperatorError> {
        self.flush(out)
    }
}

/// Adds the local step of `spec` (event time) after `input`, chained to it.
pub(super) fn local_window_aggregate(
    input: &DataStream<Row>,
    spec: &WindowAggSpec,
    ids: &OperatorIds,
    errors: &RowErrors,
) -> DataStream<WindowPartial> {
    let (spec, errors) = (spec.clone(), errors.clone());
    input
        .transform(&ids.name, move |_| LocalWindowAggOp {
            spec: spec.clone(),
            groups: FastHashMap::default(),
            args: Vec::new(),
            errors: errors.clone(),
        })
        .uid(&ids.uid)
}
