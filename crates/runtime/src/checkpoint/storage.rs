//! Completed checkpoints on disk: `DIR/chk-<id>/` holds one file per operator subtask
//! (`<operator>.<subtask>.state`, the bytes the operator's snapshot returned) and a
//! `_metadata` manifest (JSON: id, kind, timestamp, and per operator its subtask files and
//! sizes). A checkpoint is written under a temporary name and renamed when complete, so a
//! directory named `chk-<id>` is always whole.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sluice_types::{CheckpointKind, OperatorError};

/// One operator's snapshot: the bytes of each subtask that had state, by subtask index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OperatorState {
    /// The operator's parallelism when the snapshot was taken.
    pub parallelism: usize,
    pub subtasks: BTreeMap<usize, Vec<u8>>,
}

/// A whole, consistent snapshot of a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompletedCheckpoint {
    pub id: u64,
    pub kind: CheckpointKind,
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

fn kind_name(k: CheckpointKind) -> &'static str {
    match k {
        CheckpointKind::Aligned => "CHECKPOINT",
        CheckpointKind::Unaligned => "UNALIGNED_CHECKPOINT",
        CheckpointKind::Savepoint => "SAVEPOINT",
    }
}

fn kind_of(s: &str) -> Option<CheckpointKind> {
    Some(match s {
        "CHECKPOINT" => CheckpointKind::Aligned,
        "UNALIGNED_CHECKPOINT" => CheckpointKind::Unaligned,
        "SAVEPOINT" => CheckpointKind::Savepoint,
        _ => return None,
    })
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

/// Writes `cp` as `dir/chk-<id>` (or into `dir` itself when `exact`, for savepoints) and
/// returns the directory.
pub fn write(dir: &Path, cp: &CompletedCheckpoint, exact: bool) -> Result<PathBuf, OperatorError> {
    let target = if exact {
        dir.to_path_buf()
    } else {
        dir.join(format!("chk-{}", cp.id))
    };
    let tmp = target.with_extension("inprogress");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| io(format!("creating {}", tmp.display()), e))?;
    let mut ops = Vec::new();
    for (op, state) in &cp.operators {
        let mut files = Vec::new();
        for (sub, bytes) in &state.subtasks {
            let name = format!("{}.{sub}.state", file_stem(op));
            let path = tmp.join(&name);
            std::fs::write(&path, bytes)
                .map_err(|e| io(format!("writing {}", path.display()), e))?;
            files.push(format!(
                "{{\"subtask\":{sub},\"file\":\"{name}\",\"bytes\":{}}}",
                bytes.len()
            ));
        }
        ops.push(format!(
            "{{\"id\":{},\"parallelism\":{},\"subtasks\":[{}]}}",
            json_string(op),
            state.parallelism,
            files.join(",")
        ));
    }
    let meta = format!(
        "{{\"id\":{},\"kind\":\"{}\",\"timestamp\":{},\"operators\":[{}]}}\n",
        cp.id,
        kind_name(cp.kind),
        cp.timestamp_ms,
        ops.join(",")
    );
    let meta_path = tmp.join("_metadata");
    std::fs::write(&meta_path, meta)
        .map_err(|e| io(format!("writing {}", meta_path.display()), e))?;
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
    Ok(target)
}

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Reads a checkpoint directory written by [`write`] (a `chk-<id>` directory or a savepoint).
pub fn read(dir: &Path) -> Result<CompletedCheckpoint, OperatorError> {
    let meta_path = dir.join("_metadata");
    let text = std::fs::read_to_string(&meta_path)
        .map_err(|e| io(format!("reading {}", meta_path.display()), e))?;
    let bad = |what: &str| {
        OperatorError::failed(format!(
            "{}: not a Sluice checkpoint manifest ({what})",
            meta_path.display()
        ))
    };
    let meta = crate::checkpoint::storage::json::parse(&text).map_err(|e| bad(&e))?;
    let id = meta
        .get("id")
        .and_then(|v| v.as_u64())
        .ok_or_else(|| bad("no id"))?;
    let kind = meta
        .get("kind")
        .and_then(|v| v.as_str())
        .and_then(kind_of)
        .ok_or_else(|| bad("no kind"))?;
    let timestamp_ms = meta
        .get("timestamp")
        .and_then(|v| v.as_i64())
        .ok_or_else(|| bad("no timestamp"))?;
    let mut operators = BTreeMap::new();
    for op in meta
        .get("operators")
        .and_then(|v| v.as_array())
        .ok_or_else(|| bad("no operators"))?
    {
        let name = op
            .get("id")
            .and_then(|v| v.as_str())
            .ok_or_else(|| bad("operator without id"))?;
        let parallelism = op
            .get("parallelism")
            .and_then(|v| v.as_u64())
            .ok_or_else(|| bad("operator without parallelism"))? as usize;
        let mut subtasks = BTreeMap::new();
        for s in op
            .get("subtasks")
            .and_then(|v| v.as_array())
            .ok_or_else(|| bad("operator without subtasks"))?
        {
            let sub = s
                .get("subtask")
                .and_then(|v| v.as_u64())
                .ok_or_else(|| bad("subtask without index"))? as usize;
            let file = s
                .get("file")
                .and_then(|v| v.as_str())
                .ok_or_else(|| bad("subtask without file"))?;
            if file.contains('/') || file.contains("..") {
                return Err(bad("file name with a path"));
            }
            let path = dir.join(file);
            let bytes =
                std::fs::read(&path).map_err(|e| io(format!("reading {}", path.display()), e))?;
            subtasks.insert(sub, bytes);
        }
        operators.insert(
            name.to_string(),
            OperatorState {
                parallelism,
                subtasks,
            },
        );
    }
    Ok(CompletedCheckpoint {
        id,
        kind,
        timestamp_ms,
        operators,
    })
}

/// Deletes `chk-*` directories of `dir` older than the newest `retained`.
pub fn prune(dir: &Path, retained: usize) -> Result<(), OperatorError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let mut ids: Vec<u64> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_prefix("chk-"))
                .and_then(|n| n.parse().ok())
        })
        .collect();
    ids.sort_unstable();
    let drop = ids.len().saturating_sub(retained);
    for id in &ids[..drop] {
        let p = dir.join(format!("chk-{id}"));
        std::fs::remove_dir_all(&p).map_err(|e| io(format!("removing {}", p.display()), e))?;
    }
    Ok(())
}

/// The newest completed checkpoint directory in `dir`, if any.
pub fn latest(dir: &Path) -> Option<PathBuf> {
    let entries = std::fs::read_dir(dir).ok()?;
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let id: u64 = e.file_name().to_str()?.strip_prefix("chk-")?.parse().ok()?;
            e.path()
                .join("_metadata")
                .exists()
                .then_some((id, e.path()))
        })
        .max_by_key(|(id, _)| *id)
        .map(|(_, p)| p)
}

/// A minimal JSON reader for the manifest (the runtime has no JSON dependency).
mod json {
    use std::collections::BTreeMap;

    #[derive(Debug, Clone)]
    pub enum Value {
        Num(String),
        Str(String),
        Arr(Vec<Value>),
        Obj(BTreeMap<String, Value>),
        Other,
    }

    impl Value {
        pub fn get(&self, k: &str) -> Option<&Value> {
            match self {
                Value::Obj(m) => m.get(k),
                _ => None,
            }
        }
        pub fn as_u64(&self) -> Option<u64> {
            match self {
                Value::Num(s) => s.parse().ok(),
                _ => None,
            }
        }
        pub fn as_i64(&self) -> Option<i64> {
            match self {
                Value::Num(s) => s.parse().ok(),
                _ => None,
            }
        }
        pub fn as_str(&self) -> Option<&str> {
            match self {
                Value::Str(s) => Some(s),
                _ => None,
            }
        }
        pub fn as_array(&self) -> Option<&Vec<Value>> {
            match self {
                Value::Arr(a) => Some(a),
                _ => None,
            }
        }
    }

    pub fn parse(s: &str) -> Result<Value, String> {
        let b = s.as_bytes();
        let mut i = 0;
        let v = value(b, &mut i, 0)?;
        ws(b, &mut i);
        if i != b.len() {
            return Err(format!("trailing bytes at {i}"));
        }
        Ok(v)
    }

    fn ws(b: &[u8], i: &mut usize) {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
    }

    fn value(b: &[u8], i: &mut usize, depth: usize) -> Result<Value, String> {
        if depth > 32 {
            return Err("nested too deeply".into());
        }
        ws(b, i);
        match b.get(*i) {
            Some(b'{') => {
                *i += 1;
                let mut m = BTreeMap::new();
                ws(b, i);
                if b.get(*i) == Some(&b'}') {
                    *i += 1;
                    return Ok(Value::Obj(m));
                }
                loop {
                    ws(b, i);
                    let Value::Str(k) = string(b, i)? else {
                        unreachable!()
                    };
                    ws(b, i);
                    if b.get(*i) != Some(&b':') {
                        return Err(format!("expected ':' at {i}"));
                    }
                    *i += 1;
                    let v = value(b, i, depth + 1)?;
                    m.insert(k, v);
                    ws(b, i);
                    match b.get(*i) {
                        Some(b',') => *i += 1,
                        Some(b'}') => {
                            *i += 1;
                            return Ok(Value::Obj(m));
                        }
                        _ => return Err(format!("expected ',' or '}}' at {i}")),
                    }
                }
            }
            Some(b'[') => {
                *i += 1;
                let mut a = Vec::new();
                ws(b, i);
                if b.get(*i) == Some(&b']') {
                    *i += 1;
                    return Ok(Value::Arr(a));
                }
                loop {
                    a.push(value(b, i, depth + 1)?);
                    ws(b, i);
                    match b.get(*i) {
                        Some(b',') => *i += 1,
                        Some(b']') => {
                            *i += 1;
                            return Ok(Value::Arr(a));
                        }
                        _ => return Err(format!("expected ',' or ']' at {i}")),
                    }
                }
            }
            Some(b'"') => string(b, i),
            Some(c) if c.is_ascii_digit() || *c == b'-' => {
                let start = *i;
                while *i < b.len() && (b[*i].is_ascii_digit() || b"-+.eE".contains(&b[*i])) {
                    *i += 1;
                }
                let t = std::str::from_utf8(&b[start..*i]).map_err(|e| e.to_string())?;
                t.parse::<f64>().map_err(|_| format!("bad number {t}"))?;
                Ok(Value::Num(t.into()))
            }
            Some(_) => {
                for lit in ["true", "false", "null"] {
                    if b[*i..].starts_with(lit.as_bytes()) {
                        *i += lit.len();
                        return Ok(Value::Other);
                    }
                }
                Err(format!("unexpected byte at {i}"))
            }
            None => Err("unexpected end".into()),
        }
    }

    fn string(b: &[u8], i: &mut usize) -> Result<Value, String> {
        if b.get(*i) != Some(&b'"') {
            return Err(format!("expected a string at {i}"));
        }
        *i += 1;
        let mut out = String::new();
        loop {
            match b.get(*i) {
                None => return Err("unterminated string".into()),
                Some(b'"') => {
                    *i += 1;
                    return Ok(Value::Str(out));
                }
                Some(b'\\') => {
                    let c = *b.get(*i + 1).ok_or("bad escape")?;
                    *i += 2;
                    match c {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'n' => out.push('\n'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let h = std::str::from_utf8(b.get(*i..*i + 4).ok_or("bad \\u")?)
                                .map_err(|e| e.to_string())?;
                            let n = u32::from_str_radix(h, 16).map_err(|e| e.to_string())?;
                            out.push(char::from_u32(n).unwrap_or('\u{fffd}'));
                            *i += 4;
                        }
                        _ => return Err("bad escape".into()),
                    }
                }
                Some(_) => {
                    let start = *i;
                    while *i < b.len() && b[*i] != b'"' && b[*i] != b'\\' {
                        *i += 1;
                    }
                    out.push_str(std::str::from_utf8(&b[start..*i]).map_err(|e| e.to_string())?);
                }
            }
        }
    }
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
        let _ = std::fs::remove_dir_all(&dir);
    }
}
