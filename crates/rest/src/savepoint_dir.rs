//! Where REST clients may have savepoints written: under one configured directory
//! (`state.savepoints.dir`, Flink's key), never anywhere the process can write.

use std::path::{Component, Path, PathBuf};

/// The default savepoint directory when none is configured: `savepoints` beside Sluice's
/// default checkpoint directory, in its private per-user root (`sluice_runtime::private_dir`).
pub fn default_savepoint_dir() -> PathBuf {
    sluice_runtime::private_dir::default_dir("savepoints")
}

/// The directory a savepoint request may write into: `requested` (absolute, no `..`, inside
/// `root` even after resolving symbolic links), or `root` itself when nothing is requested.
/// The error names the root.
pub fn resolve_target(root: &Path, requested: Option<&str>) -> Result<PathBuf, String> {
    let outside = |what: &str| {
        format!(
            "Savepoint target '{}' {what}: savepoints may only be written under {} \
             (state.savepoints.dir; sluice run --savepoint-dir to change it).",
            crate::http::shorten(requested.unwrap_or("")),
            root.display()
        )
    };
    let Some(requested) = requested else {
        return Ok(root.to_path_buf());
    };
    let target = Path::new(requested.strip_prefix("file:").unwrap_or(requested));
    if !target.is_absolute() {
        return Err(outside("is not an absolute path"));
    }
    if target.components().any(|c| c == Component::ParentDir) {
        return Err(outside("contains '..'"));
    }
    if !target.starts_with(root) {
        return Err(outside("is outside the savepoint directory"));
    }
    // A symbolic link inside the root could lead out of it: compare real paths of the deepest
    // part that exists. The default root itself must be private before it is created into.
    sluice_runtime::private_dir::check_default(root)?;
    std::fs::create_dir_all(root).map_err(|e| {
        format!(
            "Cannot create the savepoint directory {}: {e}",
            root.display()
        )
    })?;
    let real_root = root.canonicalize().map_err(|e| {
        format!(
            "Cannot resolve the savepoint directory {}: {e}",
            root.display()
        )
    })?;
    let existing = target
        .ancestors()
        .find(|a| a.exists())
        .unwrap_or(root)
        .canonicalize()
        .map_err(|e| outside(&format!("cannot be resolved ({e})")))?;
    if !existing.starts_with(&real_root) {
        return Err(outside(
            "leads outside the savepoint directory through a link",
        ));
    }
    Ok(target.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_targets_under_the_root_are_accepted() {
        let root = std::env::temp_dir().join(format!("sluice-spdir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        assert_eq!(resolve_target(&root, None).unwrap(), root);
        let inside = root.join("a/b");
        let s = inside.display().to_string();
        assert_eq!(resolve_target(&root, Some(&s)).unwrap(), inside);
        assert_eq!(
            resolve_target(&root, Some(&format!("file:{s}"))).unwrap(),
            inside
        );
        for (bad, why) in [
            ("/etc/cron.d".to_string(), "outside"),
            ("relative/dir".to_string(), "absolute"),
            (format!("{}/../x", root.display()), ".."),
            (format!("{}-evil", root.display()), "outside"),
        ] {
            let e = resolve_target(&root, Some(&bad)).unwrap_err();
            assert!(
                e.contains(why) && e.contains(&root.display().to_string()),
                "{bad}: {e}"
            );
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/", root.join("link")).unwrap();
            let e =
                resolve_target(&root, Some(&format!("{}/link/tmp", root.display()))).unwrap_err();
            assert!(e.contains("link"), "{e}");
        }
        let _ = std::fs::remove_dir_all(&root);
    }
}
