//! An async lookup against the real HTTP service is exactly once under 10 failures injected
//! into its subtasks while requests are in flight: the async wait operator's checkpoints hold
//! the inputs in flight and a restore re-issues them; the committed output is the expected join.

use std::time::Duration;

use sluice_datastream::{FaultSpec, RestartStrategy, StreamEnv};
use sluice_lookup::{LookupExt, LookupOptions, LookupSource, Row};
use sluice_testkit::{Latency, LookupService, ServiceOptions};

const RECORDS: u64 = 3000;

fn name(row: Option<&Row>) -> String {
    row.and_then(|r| r.get("name"))
        .and_then(|n| n.as_str())
        .unwrap_or("-")
        .to_string()
}

/// The join every run must commit, sorted: keys below 1000 have a row (`item-<key>`).
fn expected() -> Vec<String> {
    let mut want: Vec<String> = (0..RECORDS)
        .map(|i| {
            let k = i % 1200;
            let n = if k < 1000 {
                format!("item-{k}")
            } else {
                "-".into()
            };
            format!("{i},{n}")
        })
        .collect();
    want.sort();
    want
}

fn tempdir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-lookup-eo-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn exactly_once(options: LookupOptions, tag: &str) {
    let svc = LookupService::start(&ServiceOptions {
        keys: 1000,
        latency: Latency::Uniform(Duration::from_micros(100), Duration::from_millis(1)),
        ..ServiceOptions::default()
    })
    .unwrap();
    let source = LookupSource::http(&svc.template()).unwrap();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let faults: Vec<FaultSpec> = (0..10)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            FaultSpec {
                vertex: "Lookup Join".into(),
                subtask: (x % 2) as usize,
                after_records: 100 + (x >> 8) % 400,
            }
        })
        .collect();
    let out = tempdir(&format!("{tag}-out"));
    let chk = tempdir(&format!("{tag}-chk"));
    let env = StreamEnv::new();
    env.set_parallelism(2).set_buffer_size(8 * 64);
    env.enable_checkpointing(Duration::from_millis(10))
        .set_checkpoint_dir(&chk)
        .set_restart_strategy(RestartStrategy::FixedDelay {
            attempts: 20,
            delay: Duration::ZERO,
        })
        .inject_faults(faults);
    env.generate(RECORDS, |i| i)
        .rebalance()
        .lookup_with(
            &source,
            |i: &u64| (*i % 1200) as i64,
            |i: &u64, row: Option<&Row>| Some(format!("{i},{}", name(row))),
            &options,
        )
        .write_text_exactly_once(&out, |l: &String, line: &mut String| line.push_str(l));
    let handle = env.launch().unwrap();
    let monitor = handle.monitor();
    handle.wait().unwrap();
    let hub = monitor.control.checkpoints().unwrap();
    assert_eq!(hub.attempt(), 10, "one restart per injected failure");
    let restored: i64 = monitor
        .subtasks
        .iter()
        .flatten()
        .flat_map(|m| m.gauges())
        .filter(|g| g.name == "asyncRestored")
        .map(|g| g.get())
        .sum();
    eprintln!(
        "{tag}: {} restarts, {} restored from a checkpoint, {restored} in-flight lookups re-issued",
        hub.attempt(),
        hub.stats().restored
    );
    let mut got = sluice_runtime::sinks::committed_lines(&out).unwrap();
    got.sort();
    let want = expected();
    assert_eq!(got.len(), want.len(), "lines");
    assert!(got == want, "not exactly once");
    for d in [out, chk] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn ordered_async_lookup_is_exactly_once_under_10_failures() {
    exactly_once(LookupOptions::ordered(8), "ordered");
}

#[test]
fn unordered_async_lookup_is_exactly_once_under_10_failures() {
    exactly_once(LookupOptions::unordered(8), "unordered");
}

/// The way back from the doctor's async fix: an async lookup stopped with a savepoint while
/// requests are in flight, restored in sync mode (as a live rollback does), commits the expected
/// join exactly once — sync mode processes the inputs async mode held, before any new input.
#[test]
fn async_lookup_savepoint_restores_in_sync_mode_exactly_once() {
    let svc = LookupService::start(&ServiceOptions {
        keys: 1000,
        latency: Latency::Uniform(Duration::from_millis(1), Duration::from_millis(2)),
        ..ServiceOptions::default()
    })
    .unwrap();
    let source = LookupSource::http(&svc.template()).unwrap();
    let out = tempdir("a2s-out");
    let chk = tempdir("a2s-chk");
    let savepoints = tempdir("a2s-sp");
    let job = |options: &LookupOptions, restore: Option<&std::path::Path>| {
        let env = StreamEnv::new();
        env.set_parallelism(2).set_buffer_size(8 * 64);
        // A restore refused fails the test rather than restarting for ever.
        env.enable_checkpointing(Duration::from_millis(50))
            .set_checkpoint_dir(&chk)
            .set_restart_strategy(RestartStrategy::NoRestart);
        if let Some(p) = restore {
            env.restore_from(p);
        }
        env.generate(RECORDS, |i| i)
            .rebalance()
            .lookup_with(
                &source,
                |i: &u64| (*i % 1200) as i64,
                |i: &u64, row: Option<&Row>| Some(format!("{i},{}", name(row))),
                options,
            )
            .write_text_exactly_once(&out, |l: &String, line: &mut String| line.push_str(l));
        env.launch().unwrap()
    };
    let first = job(&LookupOptions::ordered(8), None);
    let monitor = first.monitor();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while monitor.records_emitted_by_sources() < RECORDS / 4 {
        assert!(
            std::time::Instant::now() < deadline,
            "the job did not start"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let savepoint = monitor.savepoint(savepoints.clone(), true).unwrap();
    let _ = first.wait();
    let held: u64 = std::fs::read_dir(&savepoint).map_or(0, |d| d.count() as u64);
    assert!(held > 0, "a savepoint was written");
    job(&LookupOptions::sync(), Some(&savepoint))
        .wait()
        .unwrap();
    let mut got = sluice_runtime::sinks::committed_lines(&out).unwrap();
    got.sort();
    let want = expected();
    assert_eq!(got.len(), want.len(), "lines");
    assert!(got == want, "not exactly once");
    for d in [out, chk, savepoints] {
        let _ = std::fs::remove_dir_all(d);
    }
}
