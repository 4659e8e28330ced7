//! Built-in sources. A source subtask runs one [`SourceFunction`] to completion (bounded input) or
//! until the job is cancelled. Each subtask's share of the input is a pure function of
//! `(subtask, parallelism)`, so reruns produce the same records in the same subtask.

mod collection;
mod generator;
mod text_file;

pub use collection::{IterSource, VecSource};
pub use generator::{split_range, GeneratorSource};
pub use text_file::{byte_split, TextFileSource};

use std::sync::Arc;

use sluice_types::{Collector, OperatorContext, OperatorError};

use crate::{DeadLetter, JobControl, TaskMetrics};

/// What a source sees of the running job.
pub struct SourceContext {
    pub op: OperatorContext,
    pub control: Arc<JobControl>,
    pub metrics: Arc<TaskMetrics>,
    /// Records this source subtask has emitted (published every [`SOURCE_BATCH`] records), read by
    /// progress displays.
    pub emitted: Arc<std::sync::atomic::AtomicU64>,
}

/// Sources check for cancellation and publish progress once per this many records.
pub const SOURCE_BATCH: u64 = 1024;

impl SourceContext {
    #[inline]
    pub fn should_stop(&self) -> bool {
        self.control.is_cancelled()
    }

    pub fn add_emitted(&self, n: u64) {
        self.emitted
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// Sends a malformed record to the job's dead-letter output, with where it was found.
    pub fn dead_letter(&self, location: String, reason: String) {
        self.control.dead_letter(DeadLetter {
            origin: self.op.task_display_name(),
            location,
            reason,
        });
    }
}

/// A source of records.
pub trait SourceFunction<T>: Send {
    /// Emits this subtask's share into `out`; returns at end of input. Must check
    /// [`SourceContext::should_stop`] at least every [`SOURCE_BATCH`] records.
    fn run(&mut self, ctx: &SourceContext, out: &mut dyn Collector<T>)
        -> Result<(), OperatorError>;
}
