//! Native stacks of the task threads, symbolised: `pprof`'s signal-based sampler (SIGPROF on
//! process CPU time, unwinding in the handler), started only for the duration of a sampling run
//! and stopped with it, so a job pays nothing while nobody profiles. One run at a time in the
//! process (the signal handler is process-wide): a second run waits for the first.
//!
//! The crate's `unsafe` (the signal handler, the unwinder) stays inside it; this module only
//! starts and stops it and turns its samples into frame names.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

/// Frames per sample, root first (the thread's entry first, the running function last).
pub type Stack = Vec<String>;

/// Process-wide: the sampler's signal handler serves one session at a time.
static SESSION: Mutex<()> = Mutex::new(());

/// Loads the binary's debug info for the symboliser, once per process (~180 ms of CPU and
/// ~150-250 MB for a release binary with line tables), so it does not fall inside the first
/// sampling window: `pprof` resolves a backtrace when a session starts, and the first
/// resolution in a process parses the DWARF. Returns the CPU time this call spent (0 after the
/// first), for the run's counted costs.
pub fn prepare_symbols() -> u64 {
    static DONE: std::sync::Once = std::sync::Once::new();
    let mut spent = 0;
    DONE.call_once(|| {
        let t0 = super::own_cpu_ns();
        #[cfg(feature = "native")]
        std::hint::black_box(backtrace::Backtrace::new());
        spent = super::own_cpu_ns().saturating_sub(t0);
    });
    spent
}

/// Native stacks of threads, by pthread id, with their sample counts.
#[derive(Debug, Default)]
pub struct NativeSamples {
    /// Root-first native stacks and their counts, keyed by the sampled thread's pthread id.
    pub by_thread: HashMap<u64, Vec<(Stack, u64)>>,
    /// Samples of those threads in all.
    pub samples: u64,
}

/// Runs `during` while sampling native stacks at `hz` samples per second of process CPU time;
/// returns its result and the samples of the threads in `pthreads` (or why there are none).
pub fn sample_during<R>(
    hz: i32,
    pthreads: &[u64],
    during: impl FnOnce() -> R,
) -> (R, Result<NativeSamples, String>) {
    let one_at_a_time = SESSION.lock().unwrap_or_else(|p| p.into_inner());
    sample_in_session(one_at_a_time, hz, pthreads, during)
}

/// Like [`sample_during`], but without waiting: when another session runs, `during` runs
/// without native samples (for answers that must not wait seconds, like a thread dump).
pub fn sample_during_if_free<R>(
    hz: i32,
    pthreads: &[u64],
    during: impl FnOnce() -> R,
) -> (R, Result<NativeSamples, String>) {
    match SESSION.try_lock() {
        Ok(session) => sample_in_session(session, hz, pthreads, during),
        Err(std::sync::TryLockError::Poisoned(p)) => {
            sample_in_session(p.into_inner(), hz, pthreads, during)
        }
        Err(std::sync::TryLockError::WouldBlock) => (
            during(),
            Err("native sampler busy with a flame graph".to_string()),
        ),
    }
}

fn sample_in_session<R>(
    _session: std::sync::MutexGuard<'_, ()>,
    hz: i32,
    pthreads: &[u64],
    during: impl FnOnce() -> R,
) -> (R, Result<NativeSamples, String>) {
    #[cfg(not(feature = "native"))]
    {
        let _ = (hz, pthreads);
        (
            during(),
            Err("native stacks not built in (sluice-profiler's `native` feature)".to_string()),
        )
    }
    #[cfg(feature = "native")]
    sample_with_pprof(hz, pthreads, during)
}

/// The sampling session proper: `pprof`'s profiler for the duration of `during`.
#[cfg(feature = "native")]
fn sample_with_pprof<R>(
    hz: i32,
    pthreads: &[u64],
    during: impl FnOnce() -> R,
) -> (R, Result<NativeSamples, String>) {
    let guard = pprof::ProfilerGuardBuilder::default()
        .frequency(hz)
        // Unwinding from inside these would risk a deadlock (the loader's locks) or garbage.
        .blocklist(&["libc", "libgcc", "pthread", "vdso"])
        .build();
    let guard = match guard {
        Ok(g) => g,
        Err(e) => return (during(), Err(format!("native sampler unavailable: {e}"))),
    };
    let result = during();
    let report = guard.report().build_unresolved();
    drop(guard);
    let report = match report {
        Ok(r) => r,
        Err(e) => return (result, Err(format!("native samples unreadable: {e}"))),
    };
    let mut by_thread: HashMap<u64, Vec<(Stack, u64)>> = HashMap::new();
    let mut samples = 0;
    for (frames, count) in report.data {
        if count <= 0 || !pthreads.contains(&frames.thread_id) {
            continue;
        }
        samples += count as u64;
        let stack = symbolise(frames.frames.iter().map(|f| f.ip() as usize));
        by_thread
            .entry(frames.thread_id)
            .or_default()
            .push((stack, count as u64));
    }
    (result, Ok(NativeSamples { by_thread, samples }))
}

/// Names already resolved, by instruction address, for the life of the process. Stacks of one
/// run share most of their frames, and a run's with the runs before it: resolving an address
/// (DWARF line and inline tables) was most of a run's cost after its sampling window, when each
/// run resolved its addresses afresh.
static NAMES: LazyLock<Mutex<HashMap<usize, Arc<[String]>>>> = LazyLock::new(Default::default);

/// Addresses remembered at most (a few MiB); beyond, the cache starts over.
const NAMES_MAX: usize = 1 << 17;

/// Root-first frame names of a stack given leaf first as instruction addresses (return
/// addresses, as an unwinder reports them), the sampler's own frames left out. Inlined
/// functions come out under the function they were inlined into.
pub fn symbolise(leaf_first: impl IntoIterator<Item = usize>) -> Stack {
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if names.len() > NAMES_MAX {
        names.clear();
    }
    let mut stack: Stack = Vec::new();
    for ip in leaf_first {
        let at = names.entry(ip).or_insert_with(|| resolve(ip).into());
        stack.extend(at.iter().filter(|n| !is_sampler_frame(n)).cloned());
    }
    stack.reverse();
    stack
}

/// The names at a return address, innermost inlined function first, as `path::function:line`
/// (Flink names frames `class.method:line`), without the hash suffix.
#[cfg(not(feature = "native"))]
fn resolve(ip: usize) -> Vec<String> {
    // No symboliser built in: the address is all there is to show.
    vec![format!("{ip:#x}")]
}

/// See the `native` variant above: the names at a return address.
#[cfg(feature = "native")]
fn resolve(ip: usize) -> Vec<String> {
    let mut names = Vec::new();
    // `resolve` looks up `ip - 1`, inside the call instruction, as `resolve_frame` does.
    backtrace::resolve(ip as *mut std::ffi::c_void, |sym| {
        let name = sym
            .name()
            .map(|n| strip_hash(&format!("{n:#}")))
            .unwrap_or_else(|| "[unknown]".to_string());
        names.push(match sym.lineno() {
            Some(line) if line > 0 => format!("{name}:{line}"),
            _ => name,
        });
    });
    if names.is_empty() {
        names.push("[unknown]".to_string());
    }
    names
}

/// The sampler's own frames (the unwinder, the signal handler, the kernel's signal trampoline,
/// a wait's own capture) show up on the leaf side; they are not the thread's.
fn is_sampler_frame(name: &str) -> bool {
    name.contains("pprof::")
        || name.starts_with("backtrace::")
        || name.contains("perf_signal_handler")
        || name.starts_with("__restore_rt")
        || name.contains("wait_stacks::WaitStacks::")
}

/// Drops a legacy-mangling hash (`::h0123456789abcdef`).
pub fn strip_hash(name: &str) -> String {
    if let Some(i) = name.rfind("::h") {
        let hash = &name[i + 3..];
        if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return name[..i].to_string();
        }
    }
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::thread::JoinHandleExt;
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    use std::sync::Arc;

    #[inline(never)]
    fn burn_cpu_in_a_named_function(stop: &AtomicBool) -> u64 {
        let mut x = 1u64;
        while !stop.load(Relaxed) {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).rotate_left(7));
            }
        }
        x
    }

    #[test]
    fn hashes_are_stripped() {
        assert_eq!(strip_hash("a::b::h0123456789abcdef"), "a::b");
        assert_eq!(strip_hash("a::hello"), "a::hello");
    }

    #[test]
    fn a_busy_thread_is_seen_in_its_function() {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let h = std::thread::spawn(move || burn_cpu_in_a_named_function(&s));
        let pthread = h.as_pthread_t();
        let (_, samples) = sample_during(199, &[pthread], || {
            std::thread::sleep(std::time::Duration::from_millis(600))
        });
        stop.store(true, Relaxed);
        h.join().unwrap();
        let samples = samples.unwrap();
        let stacks = &samples.by_thread[&pthread];
        let hits: u64 = stacks
            .iter()
            .filter(|(s, _)| s.iter().any(|f| f.contains("burn_cpu_in_a_named_function")))
            .map(|(_, n)| n)
            .sum();
        let all: u64 = stacks.iter().map(|(_, n)| n).sum();
        assert!(all > 10 && hits * 2 > all, "{hits}/{all}: {stacks:?}");
    }
}
