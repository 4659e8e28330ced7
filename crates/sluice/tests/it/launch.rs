//! `sluice::launch` as a user's program calls it: the job given as a build function, run in
//! this process when `--processes` is not given; `--autopilot` with the default driver, and
//! refused without one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use sluice::{RunOptions, SluiceError};

#[test]
fn launch_runs_the_built_job_in_this_process() {
    let options = RunOptions::try_from_args(["my-job", "-p", "2", "--no-rest", "--quiet"]).unwrap();
    let seen = Arc::new(AtomicU64::new(0));
    let counted = seen.clone();
    let summary = sluice::launch(&options, move |env| {
        let counted = counted.clone();
        env.generate(10_000, |i| ((i % 7) as i64, 1i64))
            .key_by(|r: &(i64, i64)| r.0)
            .sum(|r: &mut (i64, i64)| &mut r.1)
            .name("sum")
            .sink_fn("count", move |_: (i64, i64)| {
                counted.fetch_add(1, Ordering::Relaxed);
                Ok(())
            });
        Ok(())
    })
    .unwrap()
    .expect("a run in this process has a summary");
    assert!(summary.execution.is_some());
    assert_eq!(summary.records, 10_000);
    assert_eq!(seen.load(Ordering::Relaxed), 10_000);
}

#[test]
fn autopilot_without_a_driver_is_refused_before_the_job_starts() {
    let options =
        RunOptions::try_from_args(["my-job", "--autopilot", "--rest-port", "0", "--quiet"])
            .unwrap();
    let e = sluice::launch_with(&options, |_| Ok(()), None).unwrap_err();
    assert!(matches!(e, SluiceError::Config(_)), "{e}");
    assert!(e.to_string().contains("no autopilot"), "{e}");
}

#[test]
fn launch_has_the_autopilot_by_default() {
    // `launch_with(…, None)` refuses this command line; `launch` runs the job with the
    // autopilot's driver on it.
    let options =
        RunOptions::try_from_args(["my-job", "--autopilot", "--rest-port", "0", "--quiet"])
            .unwrap();
    let summary = sluice::launch(&options, |env| {
        env.generate(1_000, |i| (i as i64, 1i64)).discard();
        Ok(())
    })
    .unwrap()
    .expect("a run in this process has a summary");
    assert_eq!(summary.records, 1_000);
}

#[test]
fn process_flags_that_do_not_fit_are_refused_naming_them() {
    let e = RunOptions::try_from_args(["my-job", "--processes", "2", "--autopilot"]).unwrap_err();
    assert!(e.to_string().contains("--autopilot"), "{e}");
    let e = RunOptions::try_from_args(["my-job", "--process-index", "1"]).unwrap_err();
    assert!(e.to_string().contains("--peers"), "{e}");
}
