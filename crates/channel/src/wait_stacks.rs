//! Native stacks of a subtask's waits, for the profiler's off-CPU flame graph: a thread that is
//! off CPU cannot be unwound from outside (that needs ptrace, which stops it) and `pprof`'s
//! SIGPROF handler only runs on threads that are on CPU, so the waiting thread unwinds itself
//! where it starts an engine wait (input, output credit), and only while a profiler run asks
//! for it ([`WaitStacks::want`]), at most once per [`CAPTURE_GAP_NS`] per subtask.
//!
//! Off: one relaxed load per wait started (never per record). On: an unwind (tens of µs) at
//! most 20 times a second per subtask; an input or credit wait starts under the gate's lock, so
//! that lock is held that much longer then.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// Where an engine wait starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitPoint {
    /// Waiting for input (idle).
    Input = 0,
    /// Waiting for output credit (backpressured).
    Credit = 1,
}

/// At most one stack per subtask this often (Flink's 50 ms between samples).
pub const CAPTURE_GAP_NS: u64 = 50_000_000;

/// Frames kept per stack (leaf first).
const MAX_FRAMES: usize = 128;

/// Instruction addresses of a stack, leaf first (return addresses, as unwinders report them).
pub type WaitStack = Arc<[usize]>;

/// The latest native stack of each wait point of one subtask, while a profiler run wants them.
#[derive(Debug, Default)]
pub struct WaitStacks {
    /// Profiler runs that want stacks (0: none, nothing is captured).
    wanted: AtomicU32,
    /// No capture before this time (on [`crate::counters::mono_ns`]).
    next_ns: AtomicU64,
    latest: Mutex<[Option<WaitStack>; 2]>,
}

impl WaitStacks {
    /// A profiler run starts (`true`) or ends (`false`) wanting stacks; when the last run ends
    /// the stacks are dropped, so no later reader sees a stale one.
    pub fn want(&self, on: bool) {
        if on {
            self.wanted.fetch_add(1, Relaxed);
        } else if self.wanted.fetch_sub(1, Relaxed) == 1 {
            *self.latest.lock().unwrap_or_else(|p| p.into_inner()) = [None, None];
        }
    }

    /// The latest stack captured at `point` during the current runs.
    pub fn latest(&self, point: WaitPoint) -> Option<WaitStack> {
        self.latest.lock().unwrap_or_else(|p| p.into_inner())[point as usize].clone()
    }

    /// A wait starts at `point` at `now`: captures the stack when a run wants one.
    #[inline]
    pub(crate) fn at_wait(&self, point: WaitPoint, now: u64) {
        if self.wanted.load(Relaxed) != 0 {
            self.capture(point, now);
        }
    }

    #[cold]
    #[inline(never)]
    fn capture(&self, point: WaitPoint, now: u64) {
        if now < self.next_ns.load(Relaxed) {
            return;
        }
        self.next_ns.store(now + CAPTURE_GAP_NS, Relaxed);
        let mut ips = Vec::with_capacity(64);
        backtrace::trace(|f| {
            ips.push(f.ip() as usize);
            ips.len() < MAX_FRAMES
        });
        self.latest.lock().unwrap_or_else(|p| p.into_inner())[point as usize] = Some(ips.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_are_taken_only_while_wanted_and_at_most_once_per_gap() {
        let s = WaitStacks::default();
        s.at_wait(WaitPoint::Input, 1);
        assert!(s.latest(WaitPoint::Input).is_none());
        s.want(true);
        s.at_wait(WaitPoint::Input, 10);
        let first = s.latest(WaitPoint::Input).expect("captured");
        assert!(first.len() > 2, "{first:?}");
        s.at_wait(WaitPoint::Credit, 20);
        assert!(s.latest(WaitPoint::Credit).is_none(), "within the gap");
        s.at_wait(WaitPoint::Credit, 20 + CAPTURE_GAP_NS);
        assert!(s.latest(WaitPoint::Credit).is_some());
        s.want(false);
        assert!(s.latest(WaitPoint::Input).is_none() && s.latest(WaitPoint::Credit).is_none());
    }
}
