//! Sluice's default directories (checkpoints, savepoints, LSM state when none is configured):
//! under one per-user root in the shared temporary directory, `<temp dir>/sluice-<uid>`,
//! private to its user.
//!
//! A fixed name such as `/tmp/sluice-checkpoints` in a directory every user can write lets
//! another user create it first — as a symbolic link to a directory of the victim's choosing
//! (the job writes its state there) or as a directory of theirs (they read and replace the
//! job's checkpoints, which a restore trusts). So the root is created with mode 0700 and, found
//! already there, must be a real directory (not a link), owned by this user and closed to
//! everyone else, or the job is refused with the path and the reason. Its name is per user
//! (`sluice-<uid>`, as tmux's `/tmp/tmux-<uid>`): predictable on purpose, since a restart, a
//! `--processes` launcher and `--from-checkpoint` find the checkpoints by it, and safe because
//! the checks hold and the sticky temporary directory lets no other user rename or remove it
//! once it is ours. A pre-created root can deny service (the job is refused, saying why), never
//! redirect or expose the job's files. Directories a user configures are the user's business.

use std::path::{Path, PathBuf};

/// The default root: `<temp dir>/sluice-<uid>`.
pub fn default_root() -> PathBuf {
    let name = match current_uid() {
        Some(uid) => format!("sluice-{uid}"),
        // No /proc (not Linux): still a private root, by the checks, under a shared name.
        None => "sluice".to_string(),
    };
    std::env::temp_dir().join(name)
}

/// `<default root>/<name>`: `checkpoints`, `savepoints`, `state`.
pub fn default_dir(name: &str) -> PathBuf {
    default_root().join(name)
}

/// If `dir` lies under the default root, makes sure the root is private (creating it, mode
/// 0700, when missing); any other directory is left alone. Call before creating anything
/// under `dir`. The error names the root and why it is refused.
pub fn check_default(dir: &Path) -> Result<(), String> {
    let root = default_root();
    if dir.starts_with(&root) {
        ensure_private(&root)?;
    }
    Ok(())
}

/// Creates `root` with mode 0700 unless it exists, then checks it: a directory (not a
/// symbolic link), owned by this process's user, with no access for group or others.
pub fn ensure_private(root: &Path) -> Result<(), String> {
    let refuse = |why: String| {
        format!(
            "refusing Sluice's default directory {}: {why} (it must be a directory of this \
             user's, mode 0700; remove it, or configure a directory of your own)",
            root.display()
        )
    };
    create_private(root).map_err(|e| refuse(format!("cannot create it: {e}")))?;
    // lstat: a link is judged as the link, never followed.
    let meta = std::fs::symlink_metadata(root)
        .map_err(|e| refuse(format!("cannot read its metadata: {e}")))?;
    if meta.file_type().is_symlink() {
        let to = std::fs::read_link(root)
            .map(|t| format!(" (to {})", t.display()))
            .unwrap_or_default();
        return Err(refuse(format!("it is a symbolic link{to}")));
    }
    if !meta.is_dir() {
        return Err(refuse("it is not a directory".into()));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let Some(me) = current_uid() {
            if meta.uid() != me {
                return Err(refuse(format!(
                    "it is owned by uid {}, not by this user (uid {me})",
                    meta.uid()
                )));
            }
        }
        let mode = meta.mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(refuse(format!(
                "other users have access to it (mode {mode:03o})"
            )));
        }
    }
    Ok(())
}

#[cfg(unix)]
fn create_private(root: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if let Some(parent) = root.parent() {
        std::fs::create_dir_all(parent)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(root) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        r => r,
    }
}

#[cfg(not(unix))]
fn create_private(root: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(root)
}

/// This process's effective user id: the owner of `/proc/self` (no `unsafe` system call).
fn current_uid() -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self").ok().map(|m| m.uid())
    }
    #[cfg(not(unix))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("sluice-private-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_missing_root_is_created_private_and_accepted_again() {
        let d = scratch("new");
        let root = d.join("sluice-x");
        ensure_private(&root).unwrap();
        let mode = std::fs::metadata(&root).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        ensure_private(&root).unwrap();
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_link_an_open_directory_or_a_file_is_refused_naming_it() {
        let d = scratch("bad");
        let victim = d.join("victim");
        std::fs::create_dir(&victim).unwrap();
        let link = d.join("link");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = ensure_private(&link).unwrap_err();
        assert!(
            e.contains(&link.display().to_string()) && e.contains("symbolic link"),
            "{e}"
        );
        let open = d.join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = ensure_private(&open).unwrap_err();
        assert!(e.contains("mode 777"), "{e}");
        let file = d.join("file");
        std::fs::write(&file, b"x").unwrap();
        let e = ensure_private(&file).unwrap_err();
        assert!(e.contains("not a directory"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn the_default_root_is_per_user_and_other_dirs_are_not_checked() {
        let root = default_root();
        let uid = std::fs::metadata("/proc/self").map(|m| {
            use std::os::unix::fs::MetadataExt;
            m.uid()
        });
        assert_eq!(
            root.file_name().unwrap().to_string_lossy(),
            format!("sluice-{}", uid.unwrap())
        );
        assert_eq!(default_dir("checkpoints"), root.join("checkpoints"));
        // Not under the root: nothing checked, nothing created.
        check_default(Path::new("/nonexistent/sluice-elsewhere")).unwrap();
    }
}
