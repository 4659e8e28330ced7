//! How task threads are scheduled by the operating system ([`TaskScheduling`]).
//!
//! A job usually runs more task threads than the machine has cores (every subtask of every
//! vertex is a thread), and the slowest subtask sets the pace. Under Linux's default policy a
//! thread woken from a wait preempts the one running on its core: every buffer a bottleneck
//! subtask releases wakes a backpressured producer, which then takes the core from the very
//! subtask that has to keep running. `SCHED_BATCH` (still fair shares, the same nice values)
//! tells the scheduler the thread is CPU-bound and is not to preempt on wake-up, so a woken
//! producer waits for the next tick or a free core instead. On the skew job over 2 cores
//! (`sluice bench`) this raised throughput by about a fifth; the cost is latency of up to a
//! scheduler tick for a woken task when every core is busy. It is opt-in (`--task-scheduling
//! batch`): on an oversubscribed machine it also moves where the time goes. A producer woken by
//! a credit waits for a core instead of preempting, and that wait is busy time (backpressure
//! ends when the credit is freed), so the skew job's source shows busy ~90 % and backpressured
//! ~20 % where Flink's reading, and the dashboard's, is "backpressured". The doctor reads it
//! (it passes over a vertex starved of CPU for a busier one downstream), the dashboard's
//! colours would not.

use std::str::FromStr;

/// The scheduling policy of a job's task threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TaskScheduling {
    /// `SCHED_BATCH`: no wake-up preemption among task threads.
    Batch,
    /// The process's own policy, untouched (normally `SCHED_OTHER`; the default).
    #[default]
    Normal,
}

impl TaskScheduling {
    /// The flag value (`batch`, `normal`).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskScheduling::Batch => "batch",
            TaskScheduling::Normal => "normal",
        }
    }

    /// Applies the policy to the calling thread. An error says why the system refused it (a
    /// seccomp profile, say); the thread then runs under the process's policy.
    pub fn apply_to_current_thread(self) -> Result<(), String> {
        match self {
            TaskScheduling::Normal => Ok(()),
            TaskScheduling::Batch => set_batch(),
        }
    }
}

/// The one `unsafe` of the crate: a system call with a plain-value argument, no pointer kept
/// (the `thread-priority` crate would also reset the thread's nice value, which a process
/// started under `nice` cannot get back).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn set_batch() -> Result<(), String> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `sched_setscheduler` reads `param` only; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(format!(
            "SCHED_BATCH refused: {}",
            std::io::Error::last_os_error()
        ))
    }
}

#[cfg(not(target_os = "linux"))]
fn set_batch() -> Result<(), String> {
    Err("SCHED_BATCH exists on Linux only".into())
}

impl FromStr for TaskScheduling {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "batch" => Ok(TaskScheduling::Batch),
            "normal" => Ok(TaskScheduling::Normal),
            other => Err(format!(
                "unknown task scheduling {other:?}: expected `batch` or `normal`"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_are_refused() {
        for s in [TaskScheduling::Batch, TaskScheduling::Normal] {
            assert_eq!(s.as_str().parse::<TaskScheduling>(), Ok(s));
        }
        assert!("fifo"
            .parse::<TaskScheduling>()
            .unwrap_err()
            .contains("`batch` or `normal`"));
    }

    /// The policy the kernel reports for the calling thread after applying it.
    #[cfg(target_os = "linux")]
    #[allow(unsafe_code)]
    #[test]
    fn batch_is_what_the_kernel_then_reports_for_the_thread_only() {
        let policy = std::thread::spawn(|| {
            TaskScheduling::Batch.apply_to_current_thread().unwrap();
            // SAFETY: pid 0 = the calling thread.
            unsafe { libc::sched_getscheduler(0) }
        })
        .join()
        .unwrap();
        assert_eq!(policy, libc::SCHED_BATCH);
        // Other threads keep theirs.
        assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_OTHER);
        TaskScheduling::Normal.apply_to_current_thread().unwrap();
        assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_OTHER);
    }
}
