//! Where the official Nexmark SQL files are: the yardstick the SQL tests read, not ours to copy.

use std::path::{Path, PathBuf};

/// The official Nexmark query folder (`ddl_gen.sql`, `ddl_views.sql`, `q0.sql` …): the
/// environment variable `SLUICE_NEXMARK_QUERIES`, else the byte-identical copy in
/// `shared/nexmark-flink/queries` beside the checkout (searched upwards from `manifest_dir`, so a
/// worktree one level deeper finds it too). Missing, it is a [`crate::require`]d server: the test
/// fails under CI and skips loudly outside it (`None`).
pub fn nexmark_queries(manifest_dir: &str) -> Option<PathBuf> {
    let found = std::env::var_os("SLUICE_NEXMARK_QUERIES")
        .map(PathBuf::from)
        .or_else(|| {
            Path::new(manifest_dir)
                .ancestors()
                .map(|a| a.join("shared/nexmark-flink/queries"))
                .find(|d| d.join("ddl_gen.sql").is_file())
        });
    let result = match found {
        Some(dir) if dir.join("ddl_gen.sql").is_file() => Ok(dir),
        Some(dir) => Err(format!("no ddl_gen.sql in {}", dir.display())),
        None => Err(format!(
            "no shared/nexmark-flink/queries above {manifest_dir} (set SLUICE_NEXMARK_QUERIES)"
        )),
    };
    crate::require("the official Nexmark queries", result)
}
