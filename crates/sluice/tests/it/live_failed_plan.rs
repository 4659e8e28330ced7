//! A live plan change whose new plan fails as it starts, after it committed a checkpoint: the
//! previous plan must not run again from the savepoint (what the new plan published after the
//! savepoint would be published twice); the job fails, naming where to restore it from.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sluice::live::{BuildFn, LiveJob};
use sluice::StreamEnv;
use sluice_rest::live::ApplyRequest;
use sluice_runtime::checkpoint::{CheckpointConfig, RestartStrategy};
use sluice_runtime::EnvConfig;
use sluice_types::{Collector, Operator, OperatorContext, OperatorError};

/// Whether the one injected failure fired (it fires once per test process).
static FAILED: AtomicBool = AtomicBool::new(false);

/// Passes records on. Restored from a savepoint, it fails once, on the first record after its
/// task told it a checkpoint newer than the savepoint completed (its sink committed).
#[derive(Default)]
struct FailAfterCommit {
    restored_from: Option<u64>,
    completed: u64,
}

impl Operator<u64, u64> for FailAfterCommit {
    fn open(&mut self, ctx: &OperatorContext) -> Result<(), OperatorError> {
        self.restored_from = sluice_runtime::services::restored_parts(ctx).map(|r| r.checkpoint_id);
        Ok(())
    }
    fn process(&mut self, r: u64, out: &mut dyn Collector<u64>) -> Result<(), OperatorError> {
        if self.restored_from.is_some_and(|s| self.completed > s)
            && !FAILED.swap(true, Ordering::SeqCst)
        {
            return Err(OperatorError::failed(
                "injected: the new plan fails after it committed a checkpoint",
            ));
        }
        out.collect(r)
    }
    fn snapshot_state(&mut self, _: u64) -> Result<Option<Vec<u8>>, OperatorError> {
        // Some state, so a restore hands it its checkpoint's id.
        Ok(Some(Vec::new()))
    }
    fn notify_checkpoint_complete(
        &mut self,
        id: u64,
        _: &mut dyn Collector<u64>,
    ) -> Result<(), OperatorError> {
        self.completed = id;
        Ok(())
    }
}

#[test]
fn a_new_plan_that_failed_after_committing_is_not_rolled_back_to_the_savepoint() {
    let dir = std::env::temp_dir().join(format!("sluice-live-failed-plan-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = dir.join("out");
    let o2 = out.clone();
    let build: BuildFn = Arc::new(move |env: &StreamEnv| {
        env.set_parallelism(1);
        env.generate(u64::MAX / 2, |i| i)
            .name("numbers")
            .transform("fail-after-commit", |_| FailAfterCommit::default())
            .write_text_exactly_once(o2.clone(), |r: &u64, s: &mut String| {
                s.push_str(&r.to_string())
            });
        Ok(())
    });
    let cfg = EnvConfig {
        checkpoints: CheckpointConfig {
            interval: Some(Duration::from_millis(20)),
            ..CheckpointConfig::default()
        },
        checkpoint_dir: Some(dir.join("checkpoints")),
        restart: Some(RestartStrategy::NoRestart),
        ..EnvConfig::default()
    };
    let job = LiveJob::start(build, cfg, dir.join("savepoints"), None).unwrap();
    let m = job.monitor();
    // A checkpoint of the first plan completed: its output is committed up to there.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while m
        .control
        .checkpoints()
        .map_or(0, |h| h.completed_checkpoint())
        == 0
    {
        assert!(
            std::time::Instant::now() < deadline,
            "no checkpoint completed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let vertex = m.graph.vertices[0].id;
    let e = job
        .apply(ApplyRequest::Parallelism(vec![(vertex, 2)]))
        .unwrap_err();
    assert!(
        FAILED.load(Ordering::SeqCst),
        "the failure did not fire: {}",
        e.message
    );
    assert!(
        e.message.contains("after it committed checkpoint")
            && e.message.contains("not rolled back"),
        "{}",
        e.message
    );
    assert!(
        e.message
            .contains(&dir.join("checkpoints").display().to_string()),
        "names where to restore from: {}",
        e.message
    );
    let _ = job.wait();
    // Every number committed once.
    let lines = sluice_runtime::sinks::committed_lines(&out).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    let dups = lines.iter().filter(|l| !seen.insert(l.as_str())).count();
    assert_eq!(dups, 0, "{} committed lines, {dups} twice", lines.len());
    assert!(!lines.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}
