//! A live job whose bounded input ended on one task while the rest runs on: a plan change is
//! refused with 409 naming why (a savepoint needs every task running), not attempted and failed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice::live::{BuildFn, LiveJob};
use sluice::StreamEnv;
use sluice_rest::live::ApplyRequest;

#[test]
fn a_change_after_a_bounded_source_ended_answers_409_with_the_reason() {
    let build: BuildFn = Arc::new(|env: &StreamEnv| {
        env.set_parallelism(1);
        let short = env.generate(10, |i| i as i64).name("short");
        let long = env.generate(u64::MAX / 2, |i| i as i64).name("long");
        short.union(&[&long]).sink_fn("discard", |_: i64| Ok(()));
        Ok(())
    });
    let dir = std::env::temp_dir().join(format!("sluice-live-bounded-{}", std::process::id()));
    let job = LiveJob::start(build, Default::default(), dir, None).unwrap();
    let m = job.monitor();
    let deadline = Instant::now() + Duration::from_secs(60);
    while m.control.checkpoints().map_or(0, |h| h.finished_tasks()) == 0 {
        assert!(Instant::now() < deadline, "the short source never ended");
        std::thread::sleep(Duration::from_millis(10));
    }
    let e = job.apply(ApplyRequest::Rollback).unwrap_err();
    assert_eq!(e.status, 409, "{}", e.message);
    assert!(e.message.contains("task(s) have ended"), "{}", e.message);
    assert!(!job.is_finished());
    job.cancel();
    let _ = job.wait();
}
