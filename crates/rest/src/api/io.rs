//! Flink's `IOMetricsInfo` (bytes and records in and out, accumulated busy/idle/backpressured
//! time) of a subtask, or summed over a vertex.

use crate::metrics::{JobData, Subtask};

/// Flink's `IOMetricsInfo` of one subtask or a sum of them.
#[derive(Clone, Copy, Default)]
pub(super) struct Io {
    pub read_bytes: i64,
    pub write_bytes: i64,
    pub read_records: i64,
    pub write_records: i64,
    pub backpressured: i64,
    pub idle: i64,
    pub busy: f64,
}

impl Io {
    pub fn of(s: &Subtask) -> Io {
        use std::sync::atomic::Ordering::Relaxed;
        let c = |v: u64| v.min(i64::MAX as u64) as i64;
        Io {
            read_bytes: c(s.live.bytes_in.load(Relaxed)),
            write_bytes: c(s.live.bytes_out.load(Relaxed)),
            read_records: c(s.live.records_in.load(Relaxed)),
            write_records: c(s.live.records_out.load(Relaxed)),
            backpressured: s.snap.accumulated_backpressured_ms.max(0.0) as i64,
            idle: s.snap.accumulated_idle_ms.max(0.0) as i64,
            busy: if s.snap.accumulated_busy_ms.is_finite() {
                s.snap.accumulated_busy_ms.floor()
            } else {
                0.0
            },
        }
    }
    pub fn add(&mut self, o: &Io) {
        self.read_bytes = self.read_bytes.saturating_add(o.read_bytes);
        self.write_bytes = self.write_bytes.saturating_add(o.write_bytes);
        self.read_records = self.read_records.saturating_add(o.read_records);
        self.write_records = self.write_records.saturating_add(o.write_records);
        self.backpressured = self.backpressured.saturating_add(o.backpressured);
        self.idle = self.idle.saturating_add(o.idle);
        self.busy += o.busy;
    }
    /// Flink's `IOMetricsInfo` as the shapes hold it.
    pub fn shape(&self) -> sluice_rest_api::IoMetrics {
        sluice_rest_api::IoMetrics {
            read_bytes: Some(self.read_bytes),
            read_bytes_complete: Some(true),
            write_bytes: Some(self.write_bytes),
            write_bytes_complete: Some(true),
            read_records: Some(self.read_records),
            read_records_complete: Some(true),
            write_records: Some(self.write_records),
            write_records_complete: Some(true),
            accumulated_backpressured_time: Some(self.backpressured),
            accumulated_idle_time: Some(self.idle),
            accumulated_busy_time: Some(self.busy),
        }
    }
}

pub(super) fn vertex_io(d: &JobData, vertex: usize) -> Io {
    subtasks_io(d, vertex, &(0..d.parallelism(vertex)).collect::<Vec<_>>())
}

/// The I/O of some subtasks of a vertex (those of one TaskManager).
pub(super) fn subtasks_io(d: &JobData, vertex: usize, subtasks: &[usize]) -> Io {
    let mut io = Io::default();
    for &i in subtasks {
        if let Some(s) = d.subtask(vertex, i) {
            io.add(&Io::of(&s));
        }
    }
    io
}
