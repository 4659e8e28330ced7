//! Failing jobs: an error or panic in any subtask (operator, source, sink, `open()`) ends the
//! whole job promptly with `GraphError::Failed(JobError)` naming the vertex and subtask — even
//! when the other subtasks are blocked on backpressure or waiting for input — and leaves no
//! thread behind.
//!
//! Thread accounting reads `/proc/self/task`: each test runs in a process of its own (the
//! crate's other tests share this binary; `in_own_process!`). The test harness runs tests on
//! threads of its own, so the tests in this file run one at a time (a lock) and count only the
//! threads a job creates: the job coordinator (`job <name>`), the output flusher, one per
//! subtask (named like `Map (1/2)`, `Source: ...`), and the hang guard. Harness threads are
//! named after the tests (`failure::<function>`), whose functions never contain a space or a
//! colon.

use crate::common;
use crate::own_process::in_own_process;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use common::{eventually, guarded, spin_for, thread_count, thread_names, HANG_GUARD};
use sluice_datastream::{
    Collector, GraphError, JobExecution, Operator, OperatorContext, OperatorError, StreamEnv,
};
use sluice_runtime::sources::{SourceContext, SourceFunction};
use sluice_runtime::JobError;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Threads created by jobs (and the guard) in this process right now.
fn job_threads() -> Vec<String> {
    thread_names()
        .into_iter()
        .filter(|n| !n.starts_with("failure::"))
        .filter(|n| {
            n.contains(' ') || n.contains(':') || n == "output-flusher" || n == "test-guard"
        })
        .collect()
}

/// Holds the serial lock for one test and checks at the end that the job threads are gone.
struct ThreadAudit {
    _serial: MutexGuard<'static, ()>,
    before: usize,
    total_before: usize,
}

impl ThreadAudit {
    fn start() -> ThreadAudit {
        let serial = serial();
        // A previous test's threads may still be exiting.
        assert!(
            eventually(Duration::from_secs(2), || job_threads().is_empty()),
            "threads of an earlier job still alive: {:?}",
            job_threads()
        );
        ThreadAudit {
            _serial: serial,
            before: job_threads().len(),
            total_before: thread_count(),
        }
    }

    /// Exiting threads may linger a few milliseconds after being joined: poll briefly.
    fn assert_none_left(&self) {
        self.assert_none_left_within(Duration::from_secs(2))
    }

    fn assert_none_left_within(&self, patience: Duration) {
        let ok = eventually(patience, || job_threads().len() <= self.before);
        assert!(
            ok,
            "threads left behind: {:?} (all threads: {} before, {} now)",
            job_threads(),
            self.total_before,
            thread_count()
        );
    }
}

fn expect_failure(r: Result<JobExecution, GraphError>) -> JobError {
    match r {
        Err(GraphError::Failed(e)) => e,
        Err(other) => panic!("expected a job failure, got {other:?}"),
        Ok(exec) => panic!(
            "expected a job failure, the job succeeded: {:?}",
            exec.result
        ),
    }
}

/// Fails on the record equal to `bad`.
struct FailOn {
    bad: u64,
}

impl Operator<u64, u64> for FailOn {
    fn process(&mut self, r: u64, out: &mut dyn Collector<u64>) -> Result<(), OperatorError> {
        if r == self.bad {
            return Err(OperatorError::failed(format!("record {r} is poison")));
        }
        out.collect(r)
    }
}

#[test]
fn an_operator_error_fails_the_job_naming_vertex_and_subtask() {
    in_own_process!(an_operator_error_fails_the_job_naming_vertex_and_subtask);
    let audit = ThreadAudit::start();
    let err = guarded("failing job", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(2).set_buffer_size(256);
        // Record 7_000 of 0..10_000 is generated, and processed, by subtask 1 (the chain).
        env.generate(10_000, |i| i)
            .transform("Map", |_| FailOn { bad: 7_000 })
            .discard();
        expect_failure(env.execute())
    });
    assert_eq!(
        err.vertex,
        "Source: Generator Source -> Map -> Sink: Discard"
    );
    assert_eq!(err.subtask, 1);
    assert_eq!(
        err.task,
        "Source: Generator Source -> Map -> Sink: Discard (2/2)"
    );
    assert_eq!(err.message, "record 7000 is poison");
    let msg = GraphError::Failed(err).to_string();
    assert!(
        msg.contains("Map") && msg.contains("(2/2)") && msg.contains("poison"),
        "{msg}"
    );
    audit.assert_none_left();
}

#[test]
fn a_panicking_map_in_its_own_vertex_fails_the_job() {
    in_own_process!(a_panicking_map_in_its_own_vertex_fails_the_job);
    let audit = ThreadAudit::start();
    let err = guarded("panicking job", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(2)
            .set_buffer_size(512)
            .set_credits(1, 1);
        env.generate(50_000, |i| i)
            .rebalance()
            .map(|x: u64| {
                if x == 31_337 {
                    panic!("boom on {x}");
                }
                x
            })
            .discard()
            .set_parallelism(1);
        expect_failure(env.execute())
    });
    assert_eq!(err.vertex, "Map");
    assert!(
        err.task == "Map (1/2)" || err.task == "Map (2/2)",
        "{err:?}"
    );
    assert!(
        err.message.contains("panicked") && err.message.contains("boom on 31337"),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("Map") && (msg.contains("(1/2)") || msg.contains("(2/2)")),
        "{msg}"
    );
    audit.assert_none_left();
}

#[test]
fn a_failing_sink_fails_the_job() {
    in_own_process!(a_failing_sink_fails_the_job);
    let audit = ThreadAudit::start();
    let err = guarded("failing sink", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(3);
        let seen = Arc::new(AtomicU64::new(0));
        env.generate(30_000, |i| i)
            .rebalance()
            .sink_fn("picky", move |_v: u64| {
                if seen.fetch_add(1, Ordering::Relaxed) == 20_000 {
                    return Err(OperatorError::failed("disk full"));
                }
                Ok(())
            })
            .set_parallelism(1);
        expect_failure(env.execute())
    });
    assert_eq!(err.task, "Sink: picky (1/1)");
    assert_eq!(err.message, "disk full");
    audit.assert_none_left();
}

/// Fails in `open()` on one subtask.
struct FailsToOpen {
    on_subtask: usize,
}

impl Operator<u64, u64> for FailsToOpen {
    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
        if ctx.subtask_index == self.on_subtask {
            return Err(OperatorError::failed(
                "cannot connect to the lookup service",
            ));
        }
        Ok(())
    }
    fn process(&mut self, r: u64, out: &mut dyn Collector<u64>) -> Result<(), OperatorError> {
        out.collect(r)
    }
}

#[test]
fn an_operator_failing_in_open_fails_the_job() {
    in_own_process!(an_operator_failing_in_open_fails_the_job);
    let audit = ThreadAudit::start();
    let (err, delivered) = guarded("open failure", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(2);
        let sink = env
            .generate(100_000, |i| i)
            .rebalance()
            .transform("Lookup", |_| FailsToOpen { on_subtask: 0 })
            .collect();
        let err = expect_failure(env.execute());
        (err, sink.handle.take().len())
    });
    assert_eq!(err.vertex, "Lookup -> Sink: Collect");
    assert_eq!(err.task, "Lookup -> Sink: Collect (1/2)");
    assert!(err.message.contains("cannot connect"), "{err:?}");
    // The collect sink hands over records only at a successful end.
    assert!(delivered < 100_000);
    audit.assert_none_left();
}

/// Subtask 0 emits forever (until cancelled); subtask 1 emits nothing and fails once `fail` is
/// set.
struct ControlledSource {
    subtask: usize,
    fail: Arc<AtomicBool>,
}

impl SourceFunction<u64> for ControlledSource {
    fn run(
        &mut self,
        ctx: &SourceContext,
        out: &mut dyn Collector<u64>,
    ) -> Result<(), OperatorError> {
        let mut i = 0u64;
        loop {
            if ctx.should_stop() {
                return Err(OperatorError::Cancelled);
            }
            if self.subtask == 1 {
                if self.fail.load(Ordering::SeqCst) {
                    return Err(OperatorError::failed("source partition lost"));
                }
                std::thread::sleep(Duration::from_millis(1));
            } else {
                out.collect(i)?;
                i += 1;
                ctx.add_emitted(1);
            }
        }
    }
}

#[test]
fn a_failure_while_other_subtasks_are_backpressured_or_waiting_for_input_ends_the_job() {
    in_own_process!(
        a_failure_while_other_subtasks_are_backpressured_or_waiting_for_input_ends_the_job
    );
    let audit = ThreadAudit::start();
    let err = guarded("failure under backpressure", HANG_GUARD, || {
        let env = StreamEnv::new();
        // Buffer timeout zero: a subtask waiting for input blocks with no periodic wake-up, so
        // only the failure's cancellation can wake it.
        env.set_parallelism(2)
            .set_buffer_timeout(Duration::ZERO)
            .set_buffer_size(8 * 8)
            .set_credits(1, 1);
        let fail = Arc::new(AtomicBool::new(false));
        let f2 = fail.clone();
        // RESCALE 2 -> 2: source i feeds only sink i. Sink 0 is slow, so source 0 is
        // backpressured; sink 1 never gets input and waits.
        env.add_source("ctl", move |i, _p| {
            Ok(ControlledSource {
                subtask: i,
                fail: f2.clone(),
            })
        })
        .rescale()
        .sink_fn("slow", |_v: u64| {
            spin_for(Duration::from_micros(500));
            Ok(())
        });
        let handle = env.launch().unwrap();
        let monitor = handle.monitor();
        let src = monitor
            .graph
            .vertices
            .iter()
            .position(|v| v.name == "Source: ctl")
            .unwrap();
        // Wait (bounded) until source 0 has been blocked on credit at least once and every
        // subtask thread is up; then make source 1 fail.
        let blocked = eventually(HANG_GUARD / 2, || {
            monitor.subtasks[src][0].backpressured_ns() > 0
                && job_threads()
                    .iter()
                    .filter(|n| n.starts_with("Source: ctl (") || n.starts_with("Sink: slow ("))
                    .count()
                    == 4
        });
        assert!(
            blocked,
            "source 0 never got backpressured; threads {:?}",
            job_threads()
        );
        assert!(!handle.is_finished());
        fail.store(true, Ordering::SeqCst);
        expect_failure(handle.wait().map_err(GraphError::from))
    });
    assert_eq!(err.vertex, "Source: ctl");
    assert_eq!(err.subtask, 1);
    assert_eq!(err.task, "Source: ctl (2/2)");
    assert_eq!(err.message, "source partition lost");
    audit.assert_none_left();
}

#[test]
fn job_threads_are_visible_while_running_and_gone_after_cancel() {
    in_own_process!(job_threads_are_visible_while_running_and_gone_after_cancel);
    let audit = ThreadAudit::start();
    let err = guarded("cancelled job", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(2).set_job_name("cancel me");
        let never = Arc::new(AtomicBool::new(false));
        env.add_source("ctl", move |i, _p| {
            Ok(ControlledSource {
                subtask: i,
                fail: never.clone(),
            })
        })
        .rebalance()
        .map(|x| x + 1)
        .discard();
        let handle = env.launch().unwrap();
        // Coordinator, flusher, 2 source and 2 map subtasks: the audit's filter sees them all.
        let up = eventually(HANG_GUARD / 2, || {
            let t = job_threads();
            t.iter().any(|n| n == "job cancel me")
                && t.iter().any(|n| n == "output-flusher")
                && t.iter().filter(|n| n.starts_with("Source: ctl (")).count() == 2
                && t.iter()
                    .filter(|n| n.starts_with("Map -> Sink: Di"))
                    .count()
                    == 2
        });
        assert!(up, "job threads not all visible: {:?}", job_threads());
        handle.cancel();
        expect_failure(handle.wait().map_err(GraphError::from))
    });
    assert!(err.message.contains("cancelled"), "{err:?}");
    audit.assert_none_left();
}

#[test]
fn dropping_a_running_job_handle_cancels_and_joins_it() {
    in_own_process!(dropping_a_running_job_handle_cancels_and_joins_it);
    let audit = ThreadAudit::start();
    guarded("dropped job", HANG_GUARD, || {
        let env = StreamEnv::new();
        env.set_parallelism(2);
        let never = Arc::new(AtomicBool::new(false));
        env.add_source("ctl", move |i, _p| {
            Ok(ControlledSource {
                subtask: i,
                fail: never.clone(),
            })
        })
        .discard();
        let handle = env.launch().unwrap();
        let monitor = handle.monitor();
        assert!(eventually(HANG_GUARD / 2, || monitor
            .records_emitted_by_sources()
            > 0));
        drop(handle);
    });
    audit.assert_none_left();
}

#[test]
fn the_thread_audit_notices_a_thread_left_behind() {
    in_own_process!(the_thread_audit_notices_a_thread_left_behind);
    // The audit must be able to fail: a lingering thread named like a task is reported.
    let audit = ThreadAudit::start();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let leaked = std::thread::Builder::new()
        .name("Map (1/1)".into())
        .spawn(move || {
            let _ = rx.recv();
        })
        .unwrap();
    assert!(eventually(Duration::from_secs(2), || job_threads()
        .iter()
        .any(|n| n == "Map (1/1)")));
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // The thread never ends by itself, so a short patience suffices.
        audit.assert_none_left_within(Duration::from_millis(100))
    }));
    assert!(caught.is_err(), "the audit missed a live task thread");
    drop(tx);
    leaked.join().unwrap();
    audit.assert_none_left();
}
