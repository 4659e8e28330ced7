//! Source lag as evidence. A source that reports FLIP-33 `pendingRecords` (records in its splits
//! not read yet, e.g. a Kafka consumer's lag per partition summed per subtask) tells two
//! situations apart that busy/backpressure time alone cannot:
//! - lag growing while the source is backpressured: there is input the job does not read fast
//!   enough; the source is throttled by the bottleneck downstream, not short of input;
//! - lag about 0 while nothing is busy: the sources read everything there is; the input is the
//!   limit.

use crate::{JobView, Snapshot};

/// Lag grows when it rose by at least this share of its first value over the window …
pub const GROWTH_SHARE: f64 = 0.10;
/// … and by at least this many records (a few batches of noise are not growth).
pub const GROWTH_RECORDS: f64 = 1000.0;
/// Lag at most this many records, or at most this many seconds of the sources' output, is "about 0".
pub const NEAR_ZERO_RECORDS: f64 = 100.0;
/// See [`NEAR_ZERO_RECORDS`]: the seconds of output.
pub const NEAR_ZERO_SECONDS: f64 = 1.0;

/// The sources' total lag at the start and the end of the window.
#[derive(Clone, Debug, PartialEq)]
pub struct LagTrend {
    /// Total `pendingRecords` over every reporting source subtask, first and last sample.
    pub first: f64,
    /// See `first`: the last sample's total.
    pub last: f64,
    /// Samples the trend was read from (1: a single sample, no trend).
    pub samples: usize,
    /// The sources' output, records/s (averaged), to judge "about 0" against.
    pub source_rate: f64,
}

impl LagTrend {
    /// Whether the lag rose over the window by more than noise ([`GROWTH_SHARE`],
    /// [`GROWTH_RECORDS`]): the job falls behind its input.
    pub fn growing(&self) -> bool {
        self.samples >= 2 && self.last - self.first >= GROWTH_RECORDS.max(GROWTH_SHARE * self.first)
    }

    /// Whether the last lag is about 0 ([`NEAR_ZERO_RECORDS`], [`NEAR_ZERO_SECONDS`]): the job
    /// keeps up.
    pub fn near_zero(&self) -> bool {
        self.last <= NEAR_ZERO_RECORDS.max(NEAR_ZERO_SECONDS * self.source_rate)
    }

    fn describe(&self) -> String {
        if self.samples >= 2 {
            format!(
                "{:.0} → {:.0} records pending over {} samples",
                self.first, self.last, self.samples
            )
        } else {
            format!("{:.0} records pending", self.last)
        }
    }

    /// The line for a job with no busy vertex.
    pub fn idle_evidence(&self) -> String {
        if self.near_zero() {
            format!(
                "the sources' lag is about 0 ({}): they read everything there is, so the input \
                 is the limit",
                self.describe()
            )
        } else if self.growing() {
            format!(
                "the sources' lag grows ({}) though nothing is busy: the metrics may be stale, \
                 or the source waits on its system (fetch settings, broker)",
                self.describe()
            )
        } else {
            format!("the sources' lag holds ({})", self.describe())
        }
    }

    /// The lines for a job with a bottleneck; `throttled`: some vertex upstream of it (the
    /// sources) is backpressured.
    pub fn bottleneck_evidence(&self, throttled: bool) -> Vec<String> {
        if throttled && self.growing() {
            vec![format!(
                "the sources' lag grows ({}) while they are backpressured: the source is \
                 throttled by the bottleneck, not short of input",
                self.describe()
            )]
        } else if throttled && !self.near_zero() {
            vec![format!(
                "the sources lag ({}) while they are backpressured: input is waiting",
                self.describe()
            )]
        } else {
            Vec::new()
        }
    }
}

/// Total lag of the source vertices in one set of per-vertex samples, with their output rate;
/// `None` when no source subtask reports `pendingRecords`.
fn total(job: &JobView, subtasks: &[Vec<crate::SubtaskSample>]) -> Option<(f64, f64)> {
    let mut lag = None;
    let mut rate = 0.0;
    for (v, subs) in job.vertices.iter().zip(subtasks) {
        if !v.is_source {
            continue;
        }
        for s in subs {
            if let Some(p) = s.pending_records {
                *lag.get_or_insert(0.0) += p.max(0.0);
            }
            rate += s.records_out.unwrap_or(0.0);
        }
    }
    lag.map(|l| (l, rate))
}

/// The sources' lag trend over the window (`samples`), else from the averaged view alone.
pub fn trend(job: &JobView, samples: &[Snapshot]) -> Option<LagTrend> {
    let series: Vec<(f64, f64)> = samples.iter().filter_map(|s| total(job, s)).collect();
    if let (Some(first), Some(last)) = (series.first(), series.last()) {
        let rate = series.iter().map(|(_, r)| r).sum::<f64>() / series.len() as f64;
        return Some(LagTrend {
            first: first.0,
            last: last.0,
            samples: series.len(),
            source_rate: rate,
        });
    }
    let averaged: Vec<Vec<crate::SubtaskSample>> =
        job.vertices.iter().map(|v| v.subtasks.clone()).collect();
    let (lag, rate) = total(job, &averaged)?;
    Some(LagTrend {
        first: lag,
        last: lag,
        samples: 1,
        source_rate: rate,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(first: f64, last: f64, samples: usize, rate: f64) -> LagTrend {
        LagTrend {
            first,
            last,
            samples,
            source_rate: rate,
        }
    }

    #[test]
    fn growth_needs_two_samples_and_a_real_rise() {
        assert!(t(1000.0, 50_000.0, 5, 1000.0).growing());
        assert!(!t(1000.0, 50_000.0, 1, 1000.0).growing());
        // +500 records: noise, not growth.
        assert!(!t(1000.0, 1500.0, 5, 1000.0).growing());
        // +5% of a large lag: not growth.
        assert!(!t(1_000_000.0, 1_050_000.0, 5, 1000.0).growing());
    }

    #[test]
    fn near_zero_is_relative_to_the_input_rate() {
        assert!(t(0.0, 50.0, 3, 0.0).near_zero());
        assert!(t(0.0, 5_000.0, 3, 10_000.0).near_zero());
        assert!(!t(0.0, 50_000.0, 3, 10_000.0).near_zero());
    }

    #[test]
    fn a_throttled_source_with_growing_lag_is_said_so() {
        let e = t(1000.0, 90_000.0, 4, 5000.0).bottleneck_evidence(true);
        assert_eq!(e.len(), 1);
        assert!(e[0].contains("throttled by the bottleneck"), "{e:?}");
        assert!(e[0].contains("1000 → 90000"), "{e:?}");
        assert!(t(1000.0, 90_000.0, 4, 5000.0)
            .bottleneck_evidence(false)
            .is_empty());
    }
}
