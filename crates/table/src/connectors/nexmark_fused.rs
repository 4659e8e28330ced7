//! The `nexmark` source running a fused scan chain ([`crate::fused`]): each event's row goes
//! through the computed columns, the periodic watermark and the following Calc in the source,
//! and with a kind filter ([`FusedPlan::kind_filter`]) an event of another kind is built as a
//! row of only the columns the watermark needs, which moves the watermark and is then dropped
//! (for a reused chain, [`FusedPlan::readers_kinds`]: an event of none of its readers' kinds).

use std::sync::Arc;

use sluice_datastream::{DataStream, OperatorError, StreamEnv};
use sluice_nexmark::{GeneratorConfig, Split};
use sluice_runtime::sources::{SourceContext, SourceFunction};
use sluice_sql::Row;
use sluice_types::Collector;

use super::{event_row, open_split, restore_split, run_split, NexmarkSpec, Pick};
use crate::fused::{FusedEmitter, FusedPlan};
use crate::row_errors::RowErrors;

impl NexmarkSpec {
    /// The table's rows through `plan` (its rows in this spec's layout, [`NexmarkSpec::width`]
    /// wide): the fused chain's output rows and watermarks; failed rows counted in `errors`.
    pub fn fused_stream(
        &self,
        env: &StreamEnv,
        plan: &FusedPlan,
        errors: &RowErrors,
    ) -> DataStream<Row> {
        let is_kind = |c| self.is_event_type(c);
        let kinds = match plan.readers_kinds(is_kind) {
            Some(kinds) => Some(kinds),
            None => plan.kind_filter(is_kind).map(|k| vec![k]),
        };
        let reads = plan.watermark_reads();
        let rows = Rows {
            kept: self.picks.clone().into(),
            dropped: self
                .picks
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    if reads.contains(&i) {
                        p.clone()
                    } else {
                        Pick::Unread
                    }
                })
                .collect(),
            // Room for the computed columns appended in place.
            capacity: self.capacity.max(plan.width + plan.extras.len()),
            kinds: kinds.and_then(|ks| kind_mask(&ks)),
        };
        let (config, plan, errors) = (self.config.clone(), plan.clone(), errors.clone());
        env.add_source("nexmark", move |k, n| {
            FusedSource::new(&config, k, n, rows.clone(), plan.clone(), errors.clone())
        })
    }
}

/// What rows a fused source builds.
#[derive(Clone)]
struct Rows {
    /// An event the chain may keep: every column read.
    kept: Arc<[Pick]>,
    /// An event the kind filter drops: only the columns the watermark needs.
    dropped: Arc<[Pick]>,
    capacity: usize,
    /// The `event_type`s the chain keeps (bit `K` for `K`), if it says so.
    kinds: Option<u64>,
}

/// The bits of `kinds` (`None` when one is not a bit of a `u64`: no filter, never a wrong one).
fn kind_mask(kinds: &[i64]) -> Option<u64> {
    kinds.iter().try_fold(0u64, |mask, &k| {
        let bit = u32::try_from(k).ok().filter(|&b| b < 64)?;
        Some(mask | 1 << bit)
    })
}

/// One generator split through the fused chain; its checkpoint position is the number of
/// events generated, as [`super::NexmarkSplitSource`]'s.
struct FusedSource {
    split: Split,
    emitted: u64,
    rows: Rows,
    plan: FusedPlan,
    errors: RowErrors,
}

impl FusedSource {
    fn new(
        config: &GeneratorConfig,
        k: usize,
        n: usize,
        rows: Rows,
        plan: FusedPlan,
        errors: RowErrors,
    ) -> Result<FusedSource, OperatorError> {
        Ok(FusedSource {
            split: open_split(config, k, n)?,
            emitted: 0,
            rows,
            plan,
            errors,
        })
    }
}

impl SourceFunction<Row> for FusedSource {
    fn run(
        &mut self,
        ctx: &SourceContext,
        out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        // Made here, on the subtask's thread as it starts: the watermark's clock starts now.
        let mut chain = FusedEmitter::new(&self.plan, self.errors.clone());
        let rows = &self.rows;
        run_split(&mut self.split, &mut self.emitted, ctx, out, |e, out| {
            let kept = rows
                .kinds
                .is_none_or(|m| (m >> (u32::from(e.event_type()) & 63)) & 1 == 1);
            let picks = if kept { &rows.kept } else { &rows.dropped };
            chain.push(event_row(picks, rows.capacity, &e), kept, out)
        })
    }

    fn restore_position(
        &mut self,
        parts: &[(usize, Vec<u8>)],
        op: &sluice_types::OperatorContext,
    ) -> Result<(), OperatorError> {
        restore_split(&mut self.split, &mut self.emitted, parts, op)
    }
}
