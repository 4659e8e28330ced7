//! [`RowErrors`]: where the rows an operator cannot evaluate go.
//!
//! Sluice's rule is that a malformed record goes to the dead-letter output with a count and the
//! job goes on. Sources reach the job's dead-letter output through their `SourceContext`;
//! operators have no such path in the engine yet, so SQL operators (computed columns, Calc,
//! sink casts) count their failed rows here instead: one handle per job (the plan translator
//! makes it and shares it), holding the count and the first few errors' text. Flink fails the
//! job on a run-time cast error; Sluice drops the row and counts it, as for any malformed input.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// How many failures are kept verbatim; all are counted.
pub const KEPT: usize = 16;

#[derive(Debug, Default)]
struct Inner {
    count: AtomicU64,
    kept: Mutex<Vec<String>>,
}

/// The rows SQL operators could not evaluate: a count and the first [`KEPT`] errors, shared by
/// every subtask of a job (cheap to clone).
#[derive(Clone, Debug, Default)]
pub struct RowErrors {
    inner: Arc<Inner>,
}

impl RowErrors {
    /// An empty record of failures.
    pub fn new() -> RowErrors {
        RowErrors::default()
    }

    /// Counts one failed row; `what` (the operator and the error) is kept if fewer than
    /// [`KEPT`] were. The first one is also logged.
    pub fn record(&self, what: impl FnOnce() -> String) {
        let n = self.inner.count.fetch_add(1, Ordering::Relaxed);
        if n < KEPT as u64 {
            let text = what();
            if n == 0 {
                eprintln!("SQL row dropped as a dead letter (further ones are counted): {text}");
            }
            let mut kept = self.inner.kept.lock().unwrap_or_else(|p| p.into_inner());
            if kept.len() < KEPT {
                kept.push(text);
            }
        }
    }

    /// How many rows failed.
    pub fn count(&self) -> u64 {
        self.inner.count.load(Ordering::Relaxed)
    }

    /// The first failures' text, in the order they happened (at most [`KEPT`]).
    pub fn kept(&self) -> Vec<String> {
        self.inner
            .kept
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The first failure's text, if any.
    pub fn first(&self) -> Option<String> {
        self.kept().into_iter().next()
    }
}
