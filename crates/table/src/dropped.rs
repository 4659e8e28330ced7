//! [`DroppedRows`]: what a SQL job dropped instead of emitting, and the lines its end-of-run
//! summary says about it, so that no row goes missing without a word: rows whose evaluation
//! failed (dead letters, [`RowErrors`]), rows behind the watermark ([`LateRecords`], Flink's
//! `numLateRecordsDropped`) and rows in processing-time windows still open at the end of input. The `sluice` binary prints the lines after each SQL job.

use crate::row_errors::RowErrors;
use crate::stateful::LateRecords;

/// The drop counters of one built SQL job (cheap to clone: the handles are shared).
#[derive(Clone, Debug, Default)]
pub struct DroppedRows {
    /// Rows that failed evaluation, the first errors kept.
    pub errors: RowErrors,
    /// Rows event-time operators dropped as late.
    pub late: LateRecords,
}

impl DroppedRows {
    /// The summary of `builds` (a job's builds, e.g. one per plan of a live job, each counting
    /// its own run), their counts summed: one line per kind of drop that happened, none when
    /// no row was dropped.
    pub fn summary<'a>(builds: impl IntoIterator<Item = &'a DroppedRows>) -> Vec<String> {
        let (mut errors, mut late, mut open, mut first) = (0, 0, 0, None);
        for b in builds {
            errors += b.errors.count();
            late += b.late.count();
            open += b.late.open_at_end();
            first = first.or_else(|| b.errors.first());
        }
        let mut lines = Vec::new();
        if errors > 0 {
            lines.push(format!(
                "SQL rows dropped as dead letters (evaluation failed): {errors}; the first: {}",
                first.as_deref().unwrap_or("?")
            ));
        }
        if late > 0 {
            lines.push(format!(
                "SQL rows dropped as late (behind the watermark, numLateRecordsDropped): {late}"
            ));
        }
        if open > 0 {
            lines.push(format!(
                "SQL rows not emitted: in processing-time windows still open at the end of input \
                 (as in Flink): {open}"
            ));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_sums_the_builds_and_keeps_the_first_error() {
        let (a, b) = (DroppedRows::default(), DroppedRows::default());
        assert!(DroppedRows::summary([&a, &b]).is_empty(), "nothing dropped");
        a.late.add(2);
        b.late.add(3);
        b.errors.record(|| "Calc: division by zero".into());
        b.errors.record(|| "Calc: overflow".into());
        assert_eq!(
            DroppedRows::summary([&a, &b]),
            [
                "SQL rows dropped as dead letters (evaluation failed): 2; the first: Calc: division by zero",
                "SQL rows dropped as late (behind the watermark, numLateRecordsDropped): 5"
            ]
        );
    }
}
