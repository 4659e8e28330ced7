//! Fault injection for the crash-window tests, compiled only with the `fault-injection`
//! feature (test builds: the crate's own dev-dependency on itself and `sluice-cli`'s
//! dev-dependency enable it; a default or release build has neither the hook nor the name
//! of its variable, so nothing in the environment of a production process can kill it).
//!
//! `SLUICE_KAFKA_SINK_KILL_BEFORE_COMMIT=N` makes the process SIGKILL itself just before the
//! N-th transaction commit it attempts (counted over all sink subtasks of the process, from
//! 1): its checkpoint is complete and durable on disk, its transaction pre-committed, and the
//! commit not sent. The line printed to stderr first names the transaction and its record
//! count, so a test can tell what was lost.

#[cfg(feature = "fault-injection")]
mod enabled {
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

    /// Set to `n`: the process kills itself just before its `n`-th transaction commit (crash tests).
    pub const KILL_BEFORE_COMMIT_ENV: &str = "SLUICE_KAFKA_SINK_KILL_BEFORE_COMMIT";

    /// The line's prefix (followed by `<transactional id> checkpoint=<id> records=<n>`).
    pub const KILL_LINE: &str = "sluice-kafka: fault injection: SIGKILL before committing";

    static COMMITS: AtomicU64 = AtomicU64::new(0);

    pub(crate) fn before_commit(id: &str, checkpoint_id: u64, records: u64) {
        let Some(n) = std::env::var(KILL_BEFORE_COMMIT_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
        else {
            return;
        };
        if COMMITS.fetch_add(1, Relaxed) + 1 != n {
            return;
        }
        eprintln!("{KILL_LINE} {id} checkpoint={checkpoint_id} records={records}");
        let pid = std::process::id().to_string();
        // SIGKILL (no handler, no unwinding, no flush by librdkafka): as a power cut for Kafka.
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid])
            .status();
        loop {
            std::thread::park();
        }
    }
}

#[cfg(feature = "fault-injection")]
pub use enabled::*;

/// Without the feature the hook is nothing: no environment read, no string in the binary.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub(crate) fn before_commit(_id: &str, _checkpoint_id: u64, _records: u64) {}
