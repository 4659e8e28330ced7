//! Checks made before a job starts, so a mistake in a flag fails in a second, not after the
//! job ran for minutes.

use std::path::Path;

use anyhow::Context;

/// `path` can be written: its directory exists and the file can be opened for writing (an
/// existing file is left as it is; one created by the check is removed again).
pub fn output_file(path: &Path, flag: &str) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        anyhow::bail!(
            "{flag} {}: the directory {} does not exist",
            path.display(),
            dir.display()
        );
    }
    if path.is_dir() {
        anyhow::bail!("{flag} {}: is a directory, not a file", path.display());
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .with_context(|| format!("{flag} {}: cannot be written", path.display()))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}
