//! The operator trait: one required method, defaulted lifecycle hooks.

use crate::{Collector, CollectorExt, OperatorError, OutputBatch, ServicesHandle, Watermark};

/// Where an operator instance runs: which subtask of how many, under which names.
#[derive(Clone, Debug)]
pub struct OperatorContext {
    /// The operator's own name (e.g. `Map`).
    pub operator_name: String,
    /// The chained vertex's name (e.g. `Source: gen -> Map`).
    pub task_name: String,
    /// Which subtask this instance is, from 0.
    pub subtask_index: usize,
    /// How many subtasks the operator runs as.
    pub parallelism: usize,
    /// The number of key groups: the upper bound for rescaling keyed state.
    pub max_parallelism: u32,
    /// The operator's stable identity for state: its uid when set, else its stream-graph node
    /// id. Checkpoints store each operator's state under it.
    pub operator_id: String,
    /// The services of the task running the operator (checkpoints, metrics); empty outside a
    /// task. Set by the runtime when the task builds its chain.
    pub services: ServicesHandle,
    /// The node's connector options (`key`, `value`), as the plan holds them: a connector reads
    /// its settings here at deployment, so a plan change (the doctor's "batch the writes") takes
    /// effect in any job that uses it.
    pub options: Vec<(String, String)>,
}

impl OperatorContext {
    /// The value of connector option `key`, when the plan sets it.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.options
            .iter()
            .rfind(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Flink's task display name: `Map -> Filter (2/4)` (1-based index).
    pub fn task_display_name(&self) -> String {
        format!(
            "{} ({}/{})",
            self.task_name,
            self.subtask_index + 1,
            self.parallelism
        )
    }
}

/// A one-input transformation. `process` is called once per record, in order.
///
/// `open` runs on the subtask's thread before the first record; `finish` runs at end of input
/// (bounded jobs) and may emit final results before the collector is finished.
pub trait Operator<In, Out>: Send {
    /// Handles one record, emitting any output into `out`.
    fn process(&mut self, record: In, out: &mut dyn Collector<Out>) -> Result<(), OperatorError>;

    /// [`process`](Self::process) inside a chain, whose output batch is a concrete type: an
    /// operator that overrides it (same behaviour) pushes each output with a static, inlined
    /// [`OutputBatch::push`] instead of a dynamic `collect`. Operators that emit a record per
    /// input on the hot path (map, filter, flat map, rolling reduce) do.
    #[inline]
    fn process_into(
        &mut self,
        record: In,
        out: &mut OutputBatch<'_, Out>,
    ) -> Result<(), OperatorError>
    where
        Out: Send,
    {
        self.process(record, out)
    }

    /// Prepares the operator (state, connections) before its first record; by default nothing.
    fn open(&mut self, _ctx: &OperatorContext) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Emits any final output at end of input; by default nothing.
    fn finish(&mut self, _out: &mut dyn Collector<Out>) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Called on the task's thread whenever the buffer timeout elapses: after a buffer when the
    /// flush clock has ticked, and while the task waits idle for input. Time-driven operators
    /// (processing-time timers) emit here; the chain then flushes partial buffers. Not called
    /// with a buffer timeout of zero (the task then never wakes without input).
    fn tick(&mut self, _out: &mut dyn Collector<Out>) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Event-time progress reached this operator (the minimum over its inputs). The default
    /// forwards it; event-time operators fire their timers first (so what they emit precedes
    /// the watermark), and watermark assigners swallow upstream watermarks.
    fn on_watermark(
        &mut self,
        watermark: Watermark,
        out: &mut dyn Collector<Out>,
    ) -> Result<(), OperatorError> {
        out.emit_watermark(watermark)
    }

    /// The input became idle or active again; the default forwards it.
    fn on_idleness(
        &mut self,
        idle: bool,
        out: &mut dyn Collector<Out>,
    ) -> Result<(), OperatorError> {
        out.emit_idleness(idle)
    }

    /// A checkpoint barrier reached this operator: emit what must precede it (Flink's
    /// `prepareSnapshotPreBarrier`, e.g. buffered partial aggregates). Called before
    /// [`snapshot_state`](Self::snapshot_state).
    fn prepare_snapshot_pre_barrier(
        &mut self,
        _out: &mut dyn Collector<Out>,
    ) -> Result<(), OperatorError> {
        Ok(())
    }

    /// A checkpoint barrier reached this operator: return its state as bytes (`None`: no
    /// state). Called on the task thread between two records, so the state is consistent.
    fn snapshot_state(&mut self, _checkpoint_id: u64) -> Result<Option<Vec<u8>>, OperatorError> {
        Ok(None)
    }

    /// Checkpoint `checkpoint_id` (and every one before it) completed and may be committed:
    /// publish side effects pre-committed at its barrier or before (Flink's
    /// `notifyCheckpointComplete`). Called on the task thread between two records; never for a
    /// savepoint that does not stop the job. Ids only grow, but one call may stand for several
    /// checkpoints (only the newest is told).
    fn notify_checkpoint_complete(
        &mut self,
        _checkpoint_id: u64,
        _out: &mut dyn Collector<Out>,
    ) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Called after `open` and before the first record when the job restores from a
    /// checkpoint: `parts` are this operator's snapshots of every subtask of the run that took
    /// them, `(old subtask, bytes)` in subtask order (the parallelism may have changed; keyed
    /// operators keep the key groups of their own range).
    fn restore_state(&mut self, _parts: &[(usize, Vec<u8>)]) -> Result<(), OperatorError> {
        Ok(())
    }
}
