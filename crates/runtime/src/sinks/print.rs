use std::fmt::Debug;
use std::io::Write;

use sluice_types::{Collector, ControlEvent, OperatorError};

/// Prints each record on its own line to stdout, prefixed with `<subtask+1>> ` when the sink runs
/// at parallelism > 1, as Flink's print sink does.
pub struct PrintSink {
    prefix: String,
}

impl PrintSink {
    /// The sink of subtask `subtask` (from 0) of `parallelism`.
    pub fn new(subtask: usize, parallelism: usize) -> Self {
        let prefix = if parallelism > 1 {
            format!("{}> ", subtask + 1)
        } else {
            String::new()
        };
        PrintSink { prefix }
    }
}

impl<T: Debug + Send> Collector<T> for PrintSink {
    fn collect(&mut self, record: T) -> Result<(), OperatorError> {
        let mut out = std::io::stdout().lock();
        match writeln!(out, "{}{:?}", self.prefix, record) {
            Ok(()) => Ok(()),
            // A closed pipe (`sluice run ... | head`) ends output, not the job with a panic.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            Err(e) => Err(OperatorError::io("writing to stdout", e)),
        }
    }

    /// Each line is written as it comes (stdout's own buffering applies); no state, no time.
    fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
        match event {
            ControlEvent::Watermark(_)
            | ControlEvent::Idleness(_)
            | ControlEvent::Barrier(_)
            | ControlEvent::Flush
            | ControlEvent::EndOfInput
            | ControlEvent::CheckpointComplete(_) => Ok(()),
        }
    }
}
