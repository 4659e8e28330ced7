//! Checkpoint advice: aligned checkpoints under backpressure (the restart loop below).
//!
//! Under backpressure an aligned barrier waits behind every full buffer on its way, so
//! checkpoints take ever longer, time out, and a job that restarts on checkpoint failure never
//! recovers. Unaligned checkpoints let the barrier overtake the buffers (persisting them with
//! the snapshot); Flink's aligned-checkpoint timeout switches a slow aligned checkpoint to
//! unaligned. Buffer debloating attacks the cause instead: it shrinks the buffers so the data in
//! flight takes about its target (1 s) to consume, so an aligned barrier waits no longer than
//! that, with nothing extra to persist.

use crate::JobView;

/// What a Flink-compatible `/jobs/:id/checkpoints` and `/checkpoints/config` report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckpointStats {
    /// Whether unaligned checkpoints are on.
    pub unaligned: bool,
    /// `aligned_checkpoint_timeout` in ms (0 = off).
    pub aligned_timeout_ms: u64,
    /// Checkpoint interval in ms (0 = checkpointing off).
    pub interval_ms: u64,
    /// Time after which a checkpoint is aborted, ms.
    pub timeout_ms: u64,
    /// Checkpoints completed so far.
    pub completed: u64,
    /// Checkpoints failed so far.
    pub failed: u64,
    /// End-to-end duration of completed checkpoints, 90th percentile and maximum (ms).
    pub duration_p90_ms: f64,
    /// See `duration_p90_ms`: the maximum.
    pub duration_max_ms: f64,
    /// Whether the job's input gates debloat their buffers (Flink serves
    /// `Shuffle.Netty.Input.<n>.debloatedBufferSize` only then; Sluice reports a nonzero
    /// `estimatedTimeToConsumeBuffersMs`). False when unknown.
    pub buffer_debloat: bool,
}

/// Backpressure above this (ms per second, on some subtask) counts as "backpressured".
const BACKPRESSURED_MS: f64 = 100.0;

/// Advice to switch to unaligned checkpoints (or an aligned-checkpoint timeout), and to enable
/// buffer debloating unless it is on, when aligned checkpoints are slow or failing while the job
/// is backpressured; `None` otherwise.
pub fn checkpoint_advice(stats: &CheckpointStats, job: &JobView) -> Option<String> {
    if stats.unaligned || stats.aligned_timeout_ms > 0 || stats.interval_ms == 0 {
        return None;
    }
    let (vertex, bp) = job
        .vertices
        .iter()
        .flat_map(|v| v.subtasks.iter().map(move |s| (v, s.backpressured_ms())))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    if bp < BACKPRESSURED_MS {
        return None;
    }
    let slow = stats.duration_max_ms >= stats.interval_ms as f64 / 2.0
        || (stats.timeout_ms > 0 && stats.duration_p90_ms >= stats.timeout_ms as f64 / 4.0);
    if stats.failed == 0 && !slow {
        return None;
    }
    let mut why = Vec::new();
    if stats.failed > 0 {
        why.push(format!(
            "{} of {} checkpoints failed",
            stats.failed,
            stats.failed + stats.completed
        ));
    }
    if slow {
        why.push(format!(
            "completed ones took up to {:.0} ms (p90 {:.0} ms) against a {} ms interval",
            stats.duration_max_ms, stats.duration_p90_ms, stats.interval_ms
        ));
    }
    let debloat = if stats.buffer_debloat {
        ""
    } else {
        "; or enable buffer debloating (taskmanager.network.memory.buffer-debloat.enabled: true, \
         `sluice run --buffer-debloat`), which shrinks buffers until the data in flight takes \
         about 1 s to consume, so aligned barriers stop waiting behind it"
    };
    Some(format!(
        "checkpoints: {} while `{}` is backpressured ({:.0}% of its time): aligned barriers wait \
         behind full buffers. Enable unaligned checkpoints \
         (execution.checkpointing.unaligned.enabled: true), or set \
         execution.checkpointing.aligned-checkpoint-timeout so slow alignments switch to unaligned{}",
        why.join(", "),
        vertex.name,
        bp / 10.0,
        debloat
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SubtaskSample, VertexView};

    fn job(bp: f64) -> JobView {
        JobView {
            vertices: vec![VertexView {
                name: "Source: gen".into(),
                subtasks: vec![SubtaskSample {
                    busy: Some(1000.0 - bp),
                    backpressured: Some(bp),
                    idle: Some(0.0),
                    ..SubtaskSample::default()
                }],
                ..VertexView::default()
            }],
            available_cores: None,
        }
    }

    fn stats() -> CheckpointStats {
        CheckpointStats {
            interval_ms: 2_000,
            timeout_ms: 600_000,
            completed: 18,
            failed: 0,
            duration_p90_ms: 150.0,
            duration_max_ms: 260.0,
            ..CheckpointStats::default()
        }
    }

    #[test]
    fn slow_or_failing_aligned_checkpoints_under_backpressure_get_advice() {
        assert_eq!(
            checkpoint_advice(&stats(), &job(600.0)),
            None,
            "fast and healthy"
        );
        let slow = CheckpointStats {
            duration_max_ms: 1_500.0,
            ..stats()
        };
        let a = checkpoint_advice(&slow, &job(600.0)).unwrap();
        assert!(
            a.contains("up to 1500 ms") && a.contains("unaligned.enabled"),
            "{a}"
        );
        assert!(a.contains("buffer-debloat.enabled: true"), "{a}");
        let debloating = CheckpointStats {
            buffer_debloat: true,
            ..slow.clone()
        };
        let a = checkpoint_advice(&debloating, &job(600.0)).unwrap();
        assert!(
            a.contains("unaligned.enabled") && !a.contains("buffer-debloat"),
            "debloating already on: only the unaligned advice: {a}"
        );
        let failing = CheckpointStats {
            failed: 1,
            ..stats()
        };
        let a = checkpoint_advice(&failing, &job(600.0)).unwrap();
        assert!(a.contains("1 of 19 checkpoints failed"), "{a}");
        assert!(a.contains("`Source: gen` is backpressured (60%"), "{a}");
    }

    #[test]
    fn no_advice_without_backpressure_or_when_already_unaligned() {
        let failing = CheckpointStats {
            failed: 3,
            ..stats()
        };
        assert_eq!(checkpoint_advice(&failing, &job(20.0)), None);
        let unaligned = CheckpointStats {
            unaligned: true,
            ..failing.clone()
        };
        assert_eq!(checkpoint_advice(&unaligned, &job(600.0)), None);
        let with_timeout = CheckpointStats {
            aligned_timeout_ms: 30_000,
            ..failing
        };
        assert_eq!(checkpoint_advice(&with_timeout, &job(600.0)), None);
    }
}
