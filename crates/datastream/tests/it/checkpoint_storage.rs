//! Checkpoints on disk from real jobs: a damaged state file is refused on restore (naming the
//! file), a job's checkpoint directory restores from its newest complete checkpoint, an
//! unusable checkpoint directory refuses the job before it starts, and failed checkpoints are
//! logged, counted, and fail the job past the tolerable number (Flink's default: 0).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sluice_datastream::{RestartStrategy, StreamEnv};
use sluice_runtime::checkpoint::storage;

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-cps-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// An unbounded keyed running sum (state in every key group) into a discarding sink.
fn keyed_job(env: &StreamEnv) {
    env.set_parallelism(2);
    env.generate(u64::MAX, |i| (i % 50, i))
        .map(|r: (u64, u64)| {
            if r.1.is_multiple_of(1_000) {
                std::thread::sleep(Duration::from_millis(1));
            }
            r
        })
        .key_by(|r: &(u64, u64)| r.0)
        .reduce(|a: (u64, u64), b: (u64, u64)| (a.0, a.1.wrapping_add(b.1)))
        .discard();
}

/// Runs `keyed_job` with checkpoints into `dir` until `n` completed, then cancels it; returns
/// the job's checkpoint directory (`dir/<job id>`).
fn run_until_checkpoints(dir: &Path, n: u64) -> PathBuf {
    let env = StreamEnv::new();
    keyed_job(&env);
    env.enable_checkpointing(Duration::from_millis(20))
        .set_checkpoint_dir(dir);
    let handle = env.launch().unwrap();
    let hub = handle.monitor().control.checkpoints().unwrap().clone();
    let deadline = Instant::now() + Duration::from_secs(120);
    while hub.stats().completed < n {
        assert!(
            Instant::now() < deadline,
            "no checkpoints: {:?}",
            hub.stats()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    handle.cancel();
    let _ = handle.wait();
    assert!(hub.dir.starts_with(dir), "{}", hub.dir.display());
    hub.dir.clone()
}

#[test]
fn a_truncated_state_file_of_a_completed_checkpoint_is_refused_naming_the_file() {
    let dir = tempdir("truncated");
    let job_dir = run_until_checkpoints(&dir, 2);
    // The job's directory names its newest complete checkpoint.
    let chk = storage::resolve_restore_dir(&job_dir).unwrap();
    assert_eq!(Some(chk.clone()), storage::latest(&job_dir));
    assert!(chk
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("chk-"));
    assert!(storage::read(&chk).is_ok(), "intact before the damage");

    // Truncate the largest state file (the keyed state of one subtask).
    let victim = std::fs::read_dir(&chk)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "state"))
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let bytes = std::fs::read(&victim).unwrap();
    assert!(bytes.len() > 8, "keyed state was written");
    std::fs::write(&victim, &bytes[..bytes.len() / 2]).unwrap();

    let env = StreamEnv::new();
    keyed_job(&env);
    env.restore_from(&job_dir)
        .set_restart_strategy(RestartStrategy::NoRestart);
    let e = env.execute().unwrap_err().to_string();
    assert!(e.contains(&victim.display().to_string()), "{e}");
    assert!(e.contains("corrupt or truncated"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_checkpoint_directory_that_cannot_be_written_refuses_the_job_before_it_starts() {
    let dir = tempdir("unwritable");
    // Below a plain file nothing can be created, whoever runs the test.
    std::fs::write(dir.join("file"), b"x").unwrap();
    let bad = dir.join("file").join("checkpoints");
    let env = StreamEnv::new();
    keyed_job(&env);
    env.enable_checkpointing(Duration::from_millis(20))
        .set_checkpoint_dir(&bad);
    let Err(e) = env.launch() else {
        panic!("the job should be refused")
    };
    let e = e.to_string();
    assert!(e.contains(&bad.display().to_string()), "{e}");
    assert!(e.contains("not usable"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A source as fast as it can go into a sink far slower, through small buffers: an aligned
/// barrier waits behind more records than the checkpoint timeout allows.
fn backpressured(env: &StreamEnv) {
    env.set_parallelism(1);
    env.set_buffer_size(8 * 32);
    env.generate(u64::MAX, |i| i)
        .map(|i: u64| i)
        .disable_chaining()
        .sink_fn("slow-sink", |_: u64| {
            std::thread::sleep(Duration::from_millis(5));
            Ok(())
        });
}

#[test]
fn by_default_the_first_expired_checkpoint_fails_the_job_with_the_reason_and_is_logged() {
    let env = StreamEnv::new();
    backpressured(&env);
    env.enable_checkpointing(Duration::from_millis(100))
        .configure_checkpoints(|c| c.timeout = Duration::from_millis(300))
        .set_restart_strategy(RestartStrategy::NoRestart);
    assert_eq!(env.config().checkpoints.tolerable_failures, 0);
    let handle = env.launch().unwrap();
    let hub = handle.monitor().control.checkpoints().unwrap().clone();
    let Err(e) = handle.wait() else {
        panic!("the job should fail")
    };
    let e = e.to_string();
    assert!(e.contains("expired"), "{e}");
    assert!(e.contains("tolerable-failed-checkpoints"), "{e}");
    // One failure ends the job. Checkpoints before the backpressure built up may complete (on
    // a loaded machine the queue fills later); the first one that expires is the last.
    let stats = hub.stats();
    assert_eq!(stats.failed, 1, "{stats:?}");
    let failed = stats.latest_failed.as_ref().map(|r| r.id).unwrap_or(0);
    assert_eq!(failed, stats.completed + 1, "{stats:?}");
    let log = hub.log_since(0);
    assert_eq!(log.len(), 1, "{log:?}");
    assert!(
        log[0].starts_with(&format!(
            "checkpoint {failed} failed (1 in a row, 0 tolerated)"
        )),
        "{log:?}"
    );
}

#[test]
fn tolerated_failures_are_each_logged_and_counted_and_the_next_one_fails_the_job() {
    let env = StreamEnv::new();
    backpressured(&env);
    env.enable_checkpointing(Duration::from_millis(50))
        .configure_checkpoints(|c| {
            c.timeout = Duration::from_millis(200);
            c.tolerable_failures = 2;
        })
        .set_restart_strategy(RestartStrategy::NoRestart);
    let handle = env.launch().unwrap();
    let hub = handle.monitor().control.checkpoints().unwrap().clone();
    let Err(e) = handle.wait() else {
        panic!("the job should fail")
    };
    let e = e.to_string();
    assert!(e.contains("tolerates 2"), "{e}");
    let stats = hub.stats();
    assert_eq!(stats.failed, 3, "{stats:?}");
    let log = hub.log_since(0);
    assert_eq!(log.len(), 3, "{log:?}");
    for (i, line) in log.iter().enumerate() {
        assert!(
            line.contains(&format!("({} in a row, 2 tolerated)", i + 1))
                && line.contains("expired"),
            "{log:?}"
        );
    }
}
