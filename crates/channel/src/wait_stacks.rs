//! Native stacks of a subtask's waits, for the profiler's off-CPU flame graph: a thread that is
//! off CPU cannot be unwound from outside (that needs ptrace, which stops it) and `pprof`'s
//! SIGPROF handler only runs on threads that are on CPU, so the waiting thread unwinds itself
//! where it starts an engine wait (input, output credit), and only while a profiler run asks
//! for it ([`WaitStacks::want`]), at most once per [`CAPTURE_GAP_NS`] per subtask.
//!
//! A wait that started before the run would have no stack: a source parked for seconds on one
//! credit wait never starts another. So while a run wants stacks, engine waits are timed
//! ([`WaitStacks::park`]: they wake every [`CAPTURE_GAP_NS`] and capture again, a wait's stack
//! stays fresh), and a run's start wakes the waits already parked untimed: each gate, writer
//! and task debt registers what its waiter parks on (`WaitStacks::wake_on_run_start`, once
//! when it is built), and [`WaitStacks::want`] notifies those under their locks, so no waiter
//! can miss it between its check and its park. A waiter woken so finds no input or credit and
//! parks again (a spurious wake-up, which its loop handles anyway), timed now.
//!
//! Off: one relaxed load per wait started and per park (never per record). On: an unwind (tens
//! of µs) at most 20 times a second per subtask, and a waiting thread wakes 20 times a second;
//! an input or credit wait starts under the gate's lock, so that lock is held that much longer
//! then.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

// What an engine wait parks on: the gate's (and a task debt's) lock and condvar, loom's under
// `--cfg loom` (see `crate::sync`); this module's own locks are std.
use crate::sync::{Condvar, MutexGuard};

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

/// Wakes the threads parked on one condition variable (a gate's, a task debt's), taking its
/// lock first: a waiter checks [`WaitStacks::park`]'s "wanted" under that lock, so it either
/// sees the run or is parked when the notification comes.
pub(crate) trait WakeForStacks: Send + Sync {
    fn wake_for_stacks(&self);
}

/// The latest native stack of each wait point of one subtask, while a profiler run wants them.
#[derive(Default)]
pub struct WaitStacks {
    /// Profiler runs that want stacks (0: none, nothing is captured).
    wanted: AtomicU32,
    /// No capture before this time (on [`crate::counters::mono_ns`]).
    next_ns: AtomicU64,
    latest: Mutex<[Option<WaitStack>; 2]>,
    /// What this subtask's waits park on, woken when a run starts.
    parked_on: Mutex<Vec<Weak<dyn WakeForStacks>>>,
}

impl std::fmt::Debug for WaitStacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitStacks")
            .field("wanted", &self.wanted)
            .finish_non_exhaustive()
    }
}

/// How often a wait wakes to capture its stack again while a run wants stacks.
const CAPTURE_GAP: Duration = Duration::from_nanos(CAPTURE_GAP_NS);

impl WaitStacks {
    /// A profiler run starts (`true`) or ends (`false`) wanting stacks. The first run wakes
    /// the subtask's parked waits so they capture their stack now; when the last run ends the
    /// stacks are dropped, so no later reader sees a stale one.
    pub fn want(&self, on: bool) {
        if on {
            if self.wanted.fetch_add(1, Relaxed) == 0 {
                self.next_ns.store(0, Relaxed);
                let parked: Vec<_> = {
                    let mut p = self.parked_on.lock().unwrap_or_else(|p| p.into_inner());
                    p.retain(|w| w.strong_count() > 0);
                    p.iter().filter_map(Weak::upgrade).collect()
                };
                for w in parked {
                    w.wake_for_stacks();
                }
            }
        } else if self.wanted.fetch_sub(1, Relaxed) == 1 {
            *self.latest.lock().unwrap_or_else(|p| p.into_inner()) = [None, None];
        }
    }

    /// Whether a profiler run wants stacks now.
    #[inline]
    pub fn wanted(&self) -> bool {
        self.wanted.load(Relaxed) != 0
    }

    /// Registers what this subtask's waits park on (once, when a gate, writer or task debt is
    /// built; dropped ones are forgotten).
    pub(crate) fn wake_on_run_start(&self, parked_on: Weak<dyn WakeForStacks>) {
        let mut p = self.parked_on.lock().unwrap_or_else(|p| p.into_inner());
        p.retain(|w| w.strong_count() > 0);
        if !p.iter().any(|w| Weak::ptr_eq(w, &parked_on)) {
            p.push(parked_on);
        }
    }

    /// Parks on `cv` as an engine wait, for at most `limit` (`None`: until notified), and
    /// while a run wants stacks for at most [`CAPTURE_GAP_NS`] (the caller captures again
    /// when its wait goes on: [`rewait`](Self::rewait), or a new wait's start). Returns the
    /// guard and whether the park timed out. Call with the lock that the waker given to
    /// `wake_on_run_start` takes.
    #[inline]
    pub fn park<'a, G>(
        &self,
        cv: &Condvar,
        guard: MutexGuard<'a, G>,
        limit: Option<Duration>,
    ) -> (MutexGuard<'a, G>, bool) {
        let limit = match (limit, self.wanted()) {
            (Some(l), true) => Some(l.min(CAPTURE_GAP)),
            (None, true) => Some(CAPTURE_GAP),
            (l, false) => l,
        };
        match limit {
            None => (cv.wait(guard).unwrap_or_else(|p| p.into_inner()), false),
            Some(l) => {
                let (g, r) = cv.wait_timeout(guard, l).unwrap_or_else(|p| p.into_inner());
                (g, r.timed_out())
            }
        }
    }

    /// A wait at `point` goes on after a wake-up: captures the stack again when a run wants
    /// one (at most once per gap).
    #[inline]
    pub fn rewait(&self, point: WaitPoint) {
        if self.wanted() {
            self.capture(point, crate::counters::mono_ns());
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

// Real threads and std locks: not under loom, whose primitives work only inside a model.
#[cfg(all(test, not(loom)))]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests: a failed unwrap fails the test"
)]
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

    /// A waiter parked untimed on a condition variable, as a gate's.
    #[derive(Default)]
    struct Parked {
        done: Mutex<bool>,
        cv: Condvar,
    }

    impl WakeForStacks for Parked {
        fn wake_for_stacks(&self) {
            let _g = self.done.lock().unwrap();
            self.cv.notify_all();
        }
    }

    #[test]
    fn a_wait_parked_before_the_run_captures_its_stack_when_the_run_starts() {
        let stacks = Arc::new(WaitStacks::default());
        let parked = Arc::new(Parked::default());
        let as_dyn: Arc<dyn WakeForStacks> = parked.clone();
        stacks.wake_on_run_start(Arc::downgrade(&as_dyn));
        let parks = Arc::new(AtomicU32::new(0));
        let waiter = {
            let (stacks, parked, parks) = (stacks.clone(), parked.clone(), parks.clone());
            std::thread::spawn(move || {
                let mut done = parked.done.lock().unwrap();
                stacks.at_wait(WaitPoint::Credit, crate::counters::mono_ns());
                while !*done {
                    parks.fetch_add(1, Relaxed);
                    done = stacks.park(&parked.cv, done, None).0;
                    stacks.rewait(WaitPoint::Credit);
                }
            })
        };
        // Parked (untimed: nobody wants stacks) before the run starts.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while parks.load(Relaxed) == 0 {
            assert!(std::time::Instant::now() < deadline, "never parked");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(stacks.latest(WaitPoint::Credit).is_none());
        stacks.want(true);
        while stacks.latest(WaitPoint::Credit).is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "no stack after the run started"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        // While the run lasts the wait wakes on its own (timed parks) and captures again.
        let parks_then = parks.load(Relaxed);
        while parks.load(Relaxed) < parks_then + 2 {
            assert!(
                std::time::Instant::now() < deadline,
                "timed parks did not wake"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        stacks.want(false);
        *parked.done.lock().unwrap() = true;
        parked.cv.notify_all();
        waiter.join().unwrap();
        assert!(stacks.latest(WaitPoint::Credit).is_none());
        drop(as_dyn);
        drop(parked);
        let other: Arc<dyn WakeForStacks> = Arc::new(Parked::default());
        stacks.wake_on_run_start(Arc::downgrade(&other));
        stacks.wake_on_run_start(Arc::downgrade(&other));
        // The dropped one forgotten, the live one registered once.
        assert_eq!(stacks.parked_on.lock().unwrap().len(), 1);
    }
}
