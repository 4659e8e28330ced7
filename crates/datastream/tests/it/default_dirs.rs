//! Sluice's default checkpoint directory (a job that checkpoints without a directory of its
//! own) lives under a per-user root in the temporary directory that must be private: a
//! symbolic link planted at its predictable name, a directory open to other users, or one
//! owned by another user is refused before the job starts, naming the path and why; a missing
//! root is created with mode 0700.
//!
//! One test in a process of its own (`in_own_process!`): it points `TMPDIR` (what
//! `std::env::temp_dir` reads) at a scratch directory of its own, so it never touches the
//! machine's shared temporary directory.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sluice_datastream::{JobHandle, StreamEnv};

use crate::own_process::in_own_process;

fn uid() -> u32 {
    std::fs::metadata("/proc/self").unwrap().uid()
}

/// Starts a checkpointing job with no checkpoint directory set (the default one is used),
/// long enough to be seen checkpointing: ~1 ms per record.
fn start() -> Result<JobHandle, String> {
    let env = StreamEnv::new();
    env.enable_checkpointing(Duration::from_millis(20));
    env.generate(1_000_000, |i| i)
        .map(|i: u64| {
            std::thread::sleep(Duration::from_millis(1));
            i
        })
        .discard();
    env.launch().map_err(|e| e.to_string())
}

/// Waits until a `chk-<n>` exists two levels under `dir` (`<job id>/chk-<n>`), then cancels
/// the job (a finished job would discard its default checkpoints). Whether one appeared.
fn saw_checkpoint(h: JobHandle, dir: &Path) -> bool {
    let deadline = Instant::now() + Duration::from_secs(60);
    let found = loop {
        let chk = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .any(|job| {
                std::fs::read_dir(job.path())
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|e| e.file_name().to_string_lossy().starts_with("chk-"))
            });
        if chk || Instant::now() > deadline || h.is_finished() {
            break chk;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    h.cancel();
    let _ = h.wait();
    found
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    v.sort();
    v
}

#[test]
fn the_default_checkpoint_root_is_private_or_the_job_is_refused() {
    in_own_process!(the_default_checkpoint_root_is_private_or_the_job_is_refused);
    let tmp = std::env::temp_dir().join(format!("sluice-default-dirs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let victim = tmp.join("victim");
    std::fs::create_dir(&victim).unwrap();
    // Only this test runs in this process: nothing else reads TMPDIR concurrently.
    std::env::set_var("TMPDIR", &tmp);
    assert_eq!(std::env::temp_dir(), tmp);

    // Another user plants links at the predictable names (the old shared one and the
    // per-user root), pointing at a directory of their choosing.
    let root = tmp.join(format!("sluice-{}", uid()));
    std::os::unix::fs::symlink(&victim, tmp.join("sluice-checkpoints")).unwrap();
    std::os::unix::fs::symlink(&victim, &root).unwrap();
    match start() {
        Ok(h) => {
            let followed = saw_checkpoint(h, &victim);
            panic!("the job started; checkpoints written through the planted link: {followed}")
        }
        Err(e) => assert!(
            e.contains(&root.display().to_string()) && e.contains("symbolic link"),
            "{e}"
        ),
    }
    assert!(entries(&victim).is_empty(), "{:?}", entries(&victim));
    std::fs::remove_file(&root).unwrap();

    // A root other users can enter.
    std::fs::create_dir(&root).unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = start().err().expect("refused");
    assert!(
        e.contains(&root.display().to_string()) && e.contains("mode 777"),
        "{e}"
    );

    // A root owned by someone else (only root can give a directory away).
    if uid() == 0 {
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&root, Some(65534), Some(65534)).unwrap();
        let e = start().err().expect("refused");
        assert!(e.contains("owned by uid 65534"), "{e}");
    }
    std::fs::remove_dir(&root).unwrap();

    // No root yet: created private, and the job checkpoints under it.
    assert!(saw_checkpoint(start().unwrap(), &root.join("checkpoints")));
    let meta = std::fs::symlink_metadata(&root).unwrap();
    assert!(meta.is_dir());
    assert_eq!(meta.mode() & 0o777, 0o700);
    assert!(entries(&victim).is_empty());
    let _ = std::fs::remove_dir_all(&tmp);
}
