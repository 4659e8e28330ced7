//! A source subtask that owns no partition (more subtasks than partitions).

use std::time::{Duration, Instant};

use sluice_runtime::sources::SourceContext;
use sluice_types::{Collector, CollectorExt, OperatorError};

use super::metrics::SourceGauges;
use super::split;

/// A subtask that owns no partition: idle for watermarks at once (so it never holds back the
/// watermark downstream); bounded, it ends after the final checkpoint; unbounded, it parks until cancelled, waking only
/// to pass checkpoint barriers on (its position: no partitions).
pub(crate) fn idle_without_splits<T>(
    ctx: &SourceContext,
    out: &mut dyn Collector<T>,
    gauges: &SourceGauges,
    bounded: bool,
) -> Result<(), OperatorError> {
    out.emit_idleness(true)?;
    if bounded {
        // It takes part in the final checkpoint like its siblings (ending at once would end
        // the job's checkpoints).
        return ctx.await_final_checkpoint(out, || split::encode(&[]));
    }
    let since = Instant::now();
    let waits = ctx.metrics.waits.clone();
    loop {
        if ctx.should_stop() {
            return Err(OperatorError::Cancelled);
        }
        ctx.checkpoint_if_due(out, || split::encode(&[]))?;
        gauges.idle_time.set(since.elapsed().as_millis() as i64);
        let started = waits.begin_idle();
        std::thread::park_timeout(Duration::from_millis(50));
        waits.end_idle(started);
    }
}
