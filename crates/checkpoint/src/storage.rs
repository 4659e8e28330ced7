//! Completed checkpoints on disk: `DIR/chk-<id>/` holds one file per operator subtask
//! (`<operator>.<subtask>.state`, the bytes the operator's snapshot returned) and a
//! `_metadata` manifest (JSON, [`Manifest`]: format version, id, kind, timestamp, and per
//! operator its subtask files with their sizes and CRC32s).
//!
//! Durability: a checkpoint is written under a temporary name (`chk-<id>.inprogress`), every
//! state file and then `_metadata` is fsynced, the temporary directory is fsynced (its entries),
//! renamed to `chk-<id>`, and the parent directory is fsynced (the rename). Only then does
//! [`write()`] return, and only then does the coordinator mark the checkpoint complete, so a
//! directory named `chk-<id>` is always whole, also after a power cut.
//!
//! Integrity: [`read`] refuses a manifest of an unknown format version, and a state file whose
//! size or CRC32 differs from the manifest's (truncated or corrupt), naming the file. CRC32
//! (`crc32fast`, hardware-accelerated) rather than SHA-256: the threat is accidental damage
//! (torn writes, truncation, bit rot), which CRC32 detects at GB/s; anyone able to rewrite a
//! state file could rewrite the manifest's hash just as well, so a cryptographic hash would
//! buy nothing.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use sluice_types::{CheckpointKind, OperatorError};

use super::object::ObjectDir;

/// One operator's snapshot: the bytes of each subtask that had state, by subtask index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OperatorState {
    /// The operator's parallelism when the snapshot was taken.
    pub parallelism: usize,
    /// Each subtask's state bytes by subtask index (subtasks without state are absent).
    pub subtasks: BTreeMap<usize, Vec<u8>>,
}

/// A whole, consistent snapshot of a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompletedCheckpoint {
    /// The checkpoint's id.
    pub id: u64,
    /// Aligned, unaligned or a savepoint.
    pub kind: CheckpointKind,
    /// Trigger time, ms since the epoch.
    pub timestamp_ms: i64,
    /// By operator id (its uid, else its stream-graph node id).
    pub operators: BTreeMap<String, OperatorState>,
}

impl CompletedCheckpoint {
    /// Total bytes of state.
    pub fn size(&self) -> u64 {
        self.operators
            .values()
            .flat_map(|o| o.subtasks.values())
            .map(|b| b.len() as u64)
            .sum()
    }
}

fn io(what: String, e: std::io::Error) -> OperatorError {
    OperatorError::io(what, e)
}

/// The `_metadata` format this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// The file name of a checkpoint's manifest.
pub const METADATA: &str = "_metadata";

/// The `_metadata` manifest of a checkpoint or savepoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`FORMAT_VERSION`] of the writer.
    pub version: u32,
    /// The checkpoint's id.
    pub id: u64,
    /// The checkpoint's type, in Flink's names.
    pub kind: ManifestKind,
    /// Trigger time, ms since the epoch.
    pub timestamp: i64,
    /// Every operator with state.
    pub operators: Vec<ManifestOperator>,
}

/// Flink's names of the checkpoint types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ManifestKind {
    /// An aligned checkpoint.
    #[serde(rename = "CHECKPOINT")]
    Checkpoint,
    /// An unaligned checkpoint (with channel state).
    #[serde(rename = "UNALIGNED_CHECKPOINT")]
    UnalignedCheckpoint,
    /// A savepoint.
    #[serde(rename = "SAVEPOINT")]
    Savepoint,
}

impl From<CheckpointKind> for ManifestKind {
    fn from(k: CheckpointKind) -> Self {
        match k {
            CheckpointKind::Aligned => ManifestKind::Checkpoint,
            CheckpointKind::Unaligned => ManifestKind::UnalignedCheckpoint,
            CheckpointKind::Savepoint => ManifestKind::Savepoint,
        }
    }
}

impl From<ManifestKind> for CheckpointKind {
    fn from(k: ManifestKind) -> Self {
        match k {
            ManifestKind::Checkpoint => CheckpointKind::Aligned,
            ManifestKind::UnalignedCheckpoint => CheckpointKind::Unaligned,
            ManifestKind::Savepoint => CheckpointKind::Savepoint,
        }
    }
}

/// One operator of a manifest: its parallelism and the state file of each subtask with state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestOperator {
    /// The operator id (its uid, else its stream-graph node id).
    pub id: String,
    /// The operator's parallelism when the snapshot was taken.
    pub parallelism: usize,
    /// The state file of each subtask with state.
    pub subtasks: Vec<ManifestFile>,
}

/// One state file, with what [`read`] verifies.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestFile {
    /// The subtask's index.
    pub subtask: usize,
    /// A plain file name inside the checkpoint directory.
    pub file: String,
    /// The file's length, checked when it is read.
    pub bytes: u64,
    /// CRC32 (IEEE) of the file's bytes.
    pub crc32: u32,
}

/// Operator ids become file names: keep `[A-Za-z0-9_-]`, escape the rest.
fn file_stem(op: &str) -> String {
    op.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Writes `bytes` to a new file at `path` and fsyncs it.
fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), OperatorError> {
    let mut f =
        std::fs::File::create(path).map_err(|e| io(format!("creating {}", path.display()), e))?;
    f.write_all(bytes)
        .map_err(|e| io(format!("writing {}", path.display()), e))?;
    f.sync_all()
        .map_err(|e| io(format!("syncing {}", path.display()), e))
}

/// Fsyncs a directory, so the entries created, renamed or removed in it are durable.
pub fn sync_dir(dir: &Path) -> Result<(), OperatorError> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io(format!("syncing directory {}", dir.display()), e))
}

/// Makes sure checkpoints can be written to `dir` before a job starts: creates it if missing
/// and writes (and removes) a probe file. The error names the directory.
pub fn prepare_dir(dir: &Path) -> Result<(), OperatorError> {
    if let Some(o) = object_dir(dir)? {
        let probe = format!(".sluice-write-probe-{}", std::process::id());
        let unusable = |e: OperatorError| {
            OperatorError::failed(format!(
                "checkpoint directory {} is not usable: {e}",
                o.url()
            ))
        };
        o.put(&[&probe], b"probe".to_vec()).map_err(unusable)?;
        return o.delete(&[&probe]).map_err(unusable);
    }
    let unusable = |what: &str, e: std::io::Error| {
        OperatorError::failed(format!(
            "checkpoint directory {} is not usable: {what}: {e}",
            dir.display()
        ))
    };
    std::fs::create_dir_all(dir).map_err(|e| unusable("cannot create it", e))?;
    let probe = dir.join(format!(".sluice-write-probe-{}", std::process::id()));
    std::fs::write(&probe, b"probe").map_err(|e| unusable("cannot write to it", e))?;
    std::fs::remove_file(&probe).map_err(|e| unusable("cannot remove a file from it", e))
}

/// Writes `cp` as `dir/chk-<id>` (or into `dir` itself when `exact`, for savepoints), durably
/// (see the module docs), and returns the directory.
pub fn write(dir: &Path, cp: &CompletedCheckpoint, exact: bool) -> Result<PathBuf, OperatorError> {
    let (files, meta) = layout(cp)?;
    if let Some(o) = object_dir(dir)? {
        return write_objects(&o, cp.id, exact, files, meta);
    }
    let target = if exact {
        dir.to_path_buf()
    } else {
        dir.join(format!("chk-{}", cp.id))
    };
    let tmp = target.with_extension("inprogress");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| io(format!("creating {}", tmp.display()), e))?;
    for (name, bytes) in &files {
        write_synced(&tmp.join(name), bytes)?;
    }
    write_synced(&tmp.join(METADATA), &meta)?;
    sync_dir(&tmp)?;
    if target.exists() {
        if exact {
            // Never replace a directory we did not name ourselves.
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(OperatorError::failed(format!(
                "{} already exists",
                target.display()
            )));
        }
        // A stale `chk-<id>` of an earlier run in the job's own checkpoint directory.
        std::fs::remove_dir_all(&target)
            .map_err(|e| io(format!("replacing {}", target.display()), e))?;
    }
    std::fs::rename(&tmp, &target).map_err(|e| {
        io(
            format!("renaming {} to {}", tmp.display(), target.display()),
            e,
        )
    })?;
    if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        sync_dir(parent)?;
    }
    Ok(target)
}

/// An operator with state has it from every one of its subtasks: a checkpoint missing one
/// would restore that subtask's share empty (keyed state lost, a source from its start, a sink's
/// pending transactions forgotten). Refused, naming the missing subtasks.
fn check_complete(id: u64, op: &str, state: &OperatorState) -> Result<(), OperatorError> {
    let missing: Vec<usize> = (0..state.parallelism)
        .filter(|i| !state.subtasks.contains_key(i))
        .collect();
    let extra: Vec<usize> = state
        .subtasks
        .keys()
        .copied()
        .filter(|i| *i >= state.parallelism)
        .collect();
    if missing.is_empty() && extra.is_empty() {
        return Ok(());
    }
    let list = |v: &[usize]| {
        v.iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(OperatorError::failed(if extra.is_empty() {
        format!(
            "checkpoint {id} lacks the state of operator {op} subtask(s) {} of {}",
            list(&missing),
            state.parallelism
        )
    } else {
        format!(
            "checkpoint {id} holds state of operator {op} for subtask(s) {} beyond its parallelism {}",
            list(&extra),
            state.parallelism
        )
    }))
}

/// A checkpoint's state files (name, bytes), as [`layout`] names them.
type StateFiles<'a> = Vec<(String, &'a [u8])>;

/// The state files of `cp` and its `_metadata` manifest, encoded.
fn layout(cp: &CompletedCheckpoint) -> Result<(StateFiles<'_>, Vec<u8>), OperatorError> {
    let mut files = Vec::new();
    let mut operators = Vec::new();
    for (op, state) in &cp.operators {
        check_complete(cp.id, op, state)?;
        let mut subtasks = Vec::new();
        for (sub, bytes) in &state.subtasks {
            let name = format!("{}.{sub}.state", file_stem(op));
            subtasks.push(ManifestFile {
                subtask: *sub,
                file: name.clone(),
                bytes: bytes.len() as u64,
                crc32: crc32fast::hash(bytes),
            });
            files.push((name, bytes.as_slice()));
        }
        operators.push(ManifestOperator {
            id: op.clone(),
            parallelism: state.parallelism,
            subtasks,
        });
    }
    let manifest = Manifest {
        version: FORMAT_VERSION,
        id: cp.id,
        kind: cp.kind.into(),
        timestamp: cp.timestamp_ms,
        operators,
    };
    let mut meta = serde_json::to_vec(&manifest)
        .map_err(|e| OperatorError::failed(format!("encoding the checkpoint manifest: {e}")))?;
    meta.push(b'\n');
    Ok((files, meta))
}

/// [`write`] on an object store: the state files, then `_metadata` (which makes the checkpoint
/// count, see [`super::object`]).
fn write_objects(
    o: &ObjectDir,
    id: u64,
    exact: bool,
    files: StateFiles<'_>,
    meta: Vec<u8>,
) -> Result<PathBuf, OperatorError> {
    let chk = format!("chk-{id}");
    let at: Vec<&str> = if exact { vec![] } else { vec![chk.as_str()] };
    let target = if exact {
        PathBuf::from(o.url())
    } else {
        o.child_path(&chk)
    };
    if exact {
        if o.get(&[METADATA])?.is_some() {
            return Err(OperatorError::failed(format!(
                "{} already exists",
                target.display()
            )));
        }
    } else {
        // A stale or partial `chk-<id>` of an earlier run.
        o.delete_all(&at)?;
    }
    for (name, bytes) in files {
        o.put(&[at.as_slice(), &[name.as_str()]].concat(), bytes.to_vec())?;
    }
    o.put(&[at.as_slice(), &[METADATA]].concat(), meta)?;
    Ok(target)
}

/// The object-store location `dir` names (`s3://…`), or `None` for a local directory.
fn object_dir(dir: &Path) -> Result<Option<ObjectDir>, OperatorError> {
    super::object::parse(dir).transpose()
}

/// Reads and checks the manifest of checkpoint directory `dir` (format version, file names),
/// without reading the state files.
pub fn read_manifest(dir: &Path) -> Result<Manifest, OperatorError> {
    let meta_path = dir.join(METADATA);
    let text = match object_dir(dir)? {
        Some(o) => o.get(&[METADATA])?.ok_or_else(|| {
            OperatorError::failed(format!("reading {}: no such object", meta_path.display()))
        })?,
        None => std::fs::read(&meta_path)
            .map_err(|e| io(format!("reading {}", meta_path.display()), e))?,
    };
    let bad = |what: String| {
        OperatorError::failed(format!(
            "{}: not a Sluice checkpoint manifest ({what})",
            meta_path.display()
        ))
    };
    // The version first, so a manifest of another format is named as such.
    #[derive(Deserialize)]
    struct Version {
        version: Option<serde_json::Value>,
    }
    let v: Version = serde_json::from_slice(&text).map_err(|e| bad(e.to_string()))?;
    match v.version {
        Some(serde_json::Value::Number(n)) if n.as_u64() == Some(FORMAT_VERSION as u64) => {}
        Some(other) => {
            return Err(OperatorError::failed(format!(
                "{}: unsupported checkpoint format version {other} (this Sluice reads version \
                 {FORMAT_VERSION})",
                meta_path.display()
            )))
        }
        None => return Err(bad("no format version".into())),
    }
    let m: Manifest = serde_json::from_slice(&text).map_err(|e| bad(e.to_string()))?;
    for f in m.operators.iter().flat_map(|o| &o.subtasks) {
        if f.file.contains('/') || f.file.contains('\\') || f.file.contains("..") {
            return Err(bad(format!("file name with a path: {}", f.file)));
        }
    }
    Ok(m)
}

/// Reads a checkpoint directory written by [`write()`] (a `chk-<id>` directory or a savepoint),
/// verifying every state file's size and CRC32.
pub fn read(dir: &Path) -> Result<CompletedCheckpoint, OperatorError> {
    let m = read_manifest(dir)?;
    let object = object_dir(dir)?;
    let mut operators = BTreeMap::new();
    for op in m.operators {
        let mut subtasks = BTreeMap::new();
        for f in op.subtasks {
            let path = dir.join(&f.file);
            let bytes = match &object {
                Some(o) => o.get(&[&f.file])?.ok_or_else(|| {
                    OperatorError::failed(format!(
                        "state file {} is missing (listed in the manifest)",
                        path.display()
                    ))
                })?,
                None => std::fs::read(&path)
                    .map_err(|e| io(format!("reading {}", path.display()), e))?,
            };
            let crc = crc32fast::hash(&bytes);
            if bytes.len() as u64 != f.bytes || crc != f.crc32 {
                return Err(OperatorError::failed(format!(
                    "state file {} is corrupt or truncated: the manifest lists {} bytes with \
                     CRC32 {:08x}, the file has {} bytes with CRC32 {crc:08x}",
                    path.display(),
                    f.bytes,
                    f.crc32,
                    bytes.len()
                )));
            }
            subtasks.insert(f.subtask, bytes);
        }
        operators.insert(
            op.id,
            OperatorState {
                parallelism: op.parallelism,
                subtasks,
            },
        );
    }
    Ok(CompletedCheckpoint {
        id: m.id,
        kind: m.kind.into(),
        timestamp_ms: m.timestamp,
        operators,
    })
}

/// What a restore path names, as a checkpoint directory: `dir` itself when it holds a
/// `_metadata` (a `chk-<id>` directory or a savepoint), else the newest complete `chk-<id>` in
/// it (a job's checkpoint directory). The error says what was looked for.
pub fn resolve_restore_dir(dir: &Path) -> Result<PathBuf, OperatorError> {
    if let Some(o) = object_dir(dir)? {
        if o.get(&[METADATA])?.is_some() {
            return Ok(PathBuf::from(o.url()));
        }
        return latest(dir).ok_or_else(|| {
            OperatorError::failed(format!(
                "cannot restore from {}: not a checkpoint (no _metadata), and no complete \
                 chk-<n> in it",
                o.url()
            ))
        });
    }
    if dir.join(METADATA).is_file() {
        return Ok(dir.to_path_buf());
    }
    if !dir.is_dir() {
        return Err(OperatorError::failed(format!(
            "cannot restore from {}: no such directory",
            dir.display()
        )));
    }
    if let Some(p) = latest(dir) {
        return Ok(p);
    }
    // `--checkpoint-dir` itself holds one directory per job: say so.
    let jobs: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| latest(&e.path()).is_some())
        .map(|e| e.path().display().to_string())
        .collect();
    let hint = match jobs.first() {
        Some(first) => format!(
            "; it holds {} job checkpoint director{} (e.g. {first}): pass one of them",
            jobs.len(),
            if jobs.len() == 1 { "y" } else { "ies" }
        ),
        None => String::new(),
    };
    Err(OperatorError::failed(format!(
        "cannot restore from {}: not a checkpoint or savepoint directory (no _metadata), \
         and no complete chk-<n> directory in it{hint}",
        dir.display()
    )))
}

/// Where attempt `attempt` of a job starts from: after a failure (attempt > 0) the newest
/// complete checkpoint in the job's directory `job_dir`, else (or if there is none yet) the
/// configured restore path, resolved by [`resolve_restore_dir`].
pub fn restore_source(
    job_dir: &Path,
    attempt: usize,
    configured: Option<&Path>,
) -> Result<Option<PathBuf>, OperatorError> {
    if attempt > 0 {
        if let Some(p) = latest(job_dir) {
            return Ok(Some(p));
        }
    }
    configured.map(resolve_restore_dir).transpose()
}

/// Deletes `chk-*` directories of `dir` older than the newest `retained`.
pub fn prune(dir: &Path, retained: usize) -> Result<(), OperatorError> {
    let object = object_dir(dir)?;
    let names: Vec<String> = match &object {
        Some(o) => o.children()?,
        None => {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return Ok(());
            };
            entries
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .collect()
        }
    };
    let mut ids: Vec<u64> = names
        .iter()
        .filter_map(|n| n.strip_prefix("chk-").and_then(|n| n.parse().ok()))
        .collect();
    ids.sort_unstable();
    let drop = ids.len().saturating_sub(retained);
    for id in &ids[..drop] {
        if let Some(o) = &object {
            o.delete_all(&[&format!("chk-{id}")])?;
            continue;
        }
        let p = dir.join(format!("chk-{id}"));
        std::fs::remove_dir_all(&p).map_err(|e| io(format!("removing {}", p.display()), e))?;
    }
    Ok(())
}

/// The newest complete checkpoint directory in `dir` (a `chk-<id>` whose `_metadata` reads as
/// a manifest of this format), if any.
pub fn latest(dir: &Path) -> Option<PathBuf> {
    if let Some(o) = object_dir(dir).ok()? {
        let mut ids: Vec<u64> = o
            .children()
            .ok()?
            .iter()
            .filter_map(|n| n.strip_prefix("chk-")?.parse().ok())
            .collect();
        ids.sort_unstable_by_key(|id| std::cmp::Reverse(*id));
        return ids
            .into_iter()
            .map(|id| o.child_path(&format!("chk-{id}")))
            .find(|p| read_manifest(p).is_ok());
    }
    let entries = std::fs::read_dir(dir).ok()?;
    let mut found: Vec<(u64, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let id: u64 = e.file_name().to_str()?.strip_prefix("chk-")?.parse().ok()?;
            Some((id, e.path()))
        })
        .collect();
    found.sort_unstable_by_key(|(id, _)| std::cmp::Reverse(*id));
    found
        .into_iter()
        .map(|(_, p)| p)
        .find(|p| read_manifest(p).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_round_trips_through_its_directory_and_old_ones_are_pruned() {
        let dir = std::env::temp_dir().join(format!("sluice-cp-storage-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut operators = BTreeMap::new();
        operators.insert(
            "sum \"per\"/key".to_string(),
            OperatorState {
                parallelism: 2,
                subtasks: [(0, vec![1, 2, 3]), (1, vec![])].into_iter().collect(),
            },
        );
        for id in 1..=3 {
            let cp = CompletedCheckpoint {
                id,
                kind: CheckpointKind::Aligned,
                timestamp_ms: 1000 + id as i64,
                operators: operators.clone(),
            };
            let written = write(&dir, &cp, false).unwrap();
            assert_eq!(read(&written).unwrap(), cp);
            prune(&dir, 2).unwrap();
        }
        assert!(!dir.join("chk-1").exists());
        assert!(dir.join("chk-2").exists());
        assert_eq!(latest(&dir), Some(dir.join("chk-3")));
        std::fs::write(dir.join("chk-3/_metadata"), "{\"id\": 3}").unwrap();
        let e = read(&dir.join("chk-3")).unwrap_err().to_string();
        assert!(e.contains("not a Sluice checkpoint manifest"), "{e}");
        assert!(e.contains("no format version"), "{e}");
        // A broken newest manifest is not complete: the one before it is the latest.
        assert_eq!(latest(&dir), Some(dir.join("chk-2")));
        assert_eq!(resolve_restore_dir(&dir).unwrap(), dir.join("chk-2"));
        assert_eq!(
            resolve_restore_dir(&dir.join("chk-2")).unwrap(),
            dir.join("chk-2")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_checkpoint_lacking_a_subtasks_state_is_refused_naming_it() {
        let dir = std::env::temp_dir().join(format!("sluice-cp-partial-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cp = CompletedCheckpoint {
            id: 4,
            kind: CheckpointKind::Unaligned,
            timestamp_ms: 0,
            operators: [(
                "sum-per-key".to_string(),
                OperatorState {
                    parallelism: 3,
                    subtasks: [(1, vec![1])].into_iter().collect(),
                },
            )]
            .into_iter()
            .collect(),
        };
        let e = write(&dir, &cp, false).unwrap_err().to_string();
        assert!(
            e.contains("checkpoint 4 lacks the state of operator sum-per-key subtask(s) 0, 2 of 3"),
            "{e}"
        );
        assert!(!dir.join("chk-4").exists(), "nothing written");
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn one_operator_checkpoint(dir: &Path) -> PathBuf {
        let _ = std::fs::remove_dir_all(dir);
        let cp = CompletedCheckpoint {
            id: 7,
            kind: CheckpointKind::Savepoint,
            timestamp_ms: 5,
            operators: [(
                "op".to_string(),
                OperatorState {
                    parallelism: 1,
                    subtasks: [(0, vec![9; 100])].into_iter().collect(),
                },
            )]
            .into_iter()
            .collect(),
        };
        write(dir, &cp, false).unwrap()
    }

    #[test]
    fn a_truncated_or_corrupt_state_file_is_refused_naming_the_file() {
        let dir = std::env::temp_dir().join(format!("sluice-cp-crc-{}", std::process::id()));
        let chk = one_operator_checkpoint(&dir);
        let meta = std::fs::read_to_string(chk.join(METADATA)).unwrap();
        assert!(meta.contains("\"version\":1"), "{meta}");
        assert!(meta.contains("\"crc32\":"), "{meta}");
        let file = chk.join("op.0.state");
        std::fs::write(&file, vec![9; 60]).unwrap();
        let e = read(&chk).unwrap_err().to_string();
        assert!(e.contains(&file.display().to_string()), "{e}");
        assert!(e.contains("corrupt or truncated"), "{e}");
        let mut flipped = vec![9; 100];
        flipped[50] = 8;
        std::fs::write(&file, flipped).unwrap();
        let e = read(&chk).unwrap_err().to_string();
        assert!(e.contains("op.0.state") && e.contains("CRC32"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_unknown_format_version_is_refused_clearly() {
        let dir = std::env::temp_dir().join(format!("sluice-cp-ver-{}", std::process::id()));
        let chk = one_operator_checkpoint(&dir);
        let meta = std::fs::read_to_string(chk.join(METADATA)).unwrap();
        std::fs::write(
            chk.join(METADATA),
            meta.replace("\"version\":1", "\"version\":99"),
        )
        .unwrap();
        let e = read(&chk).unwrap_err().to_string();
        assert!(
            e.contains("unsupported checkpoint format version 99"),
            "{e}"
        );
        assert!(e.contains(METADATA), "{e}");
        assert_eq!(latest(&dir), None, "not complete for this version");
        let e = resolve_restore_dir(&dir).unwrap_err().to_string();
        assert!(e.contains("no complete chk-<n>"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_checkpoint_directory_that_cannot_be_created_is_named() {
        let base = std::env::temp_dir().join(format!("sluice-cp-prep-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        prepare_dir(&base.join("a/b")).unwrap();
        assert!(base.join("a/b").is_dir());
        assert_eq!(std::fs::read_dir(base.join("a/b")).unwrap().count(), 0);
        // Below a plain file nothing can be created (also as root).
        std::fs::write(base.join("file"), b"x").unwrap();
        let bad = base.join("file/chk");
        let e = prepare_dir(&bad).unwrap_err().to_string();
        assert!(
            e.contains(&bad.display().to_string()) && e.contains("not usable"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&base);
    }
}
