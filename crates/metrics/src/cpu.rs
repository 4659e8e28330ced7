//! Per-thread CPU time from /proc (Linux). Elsewhere these return `None` and CPU metrics are
//! reported as NaN rather than guessed.

/// The calling thread's kernel thread id.
pub fn current_thread_id() -> Option<u64> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

/// Nanoseconds thread `tid` of this process has run on a CPU (`/proc/self/task/<tid>/schedstat`,
/// first field: exact, not tick-based).
pub fn thread_cpu_ns(tid: u64) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// Nanoseconds thread `tid` has spent runnable but waiting for a CPU (schedstat's second field):
/// time the thread was ready to work but the machine had no core free for it.
pub fn thread_run_queue_ns(tid: u64) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    s.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spinning_thread_accumulates_cpu_time() {
        let Some(tid) = current_thread_id() else {
            return;
        };
        let a = thread_cpu_ns(tid).expect("schedstat readable");
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < std::time::Duration::from_millis(20) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        let b = thread_cpu_ns(tid).unwrap();
        assert!(b > a, "cpu time must grow while spinning ({a} -> {b})");
    }
}
