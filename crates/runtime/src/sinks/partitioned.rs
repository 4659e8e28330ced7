//! The partitioned exactly-once file sink (Flink's filesystem table sink, streaming): each row
//! goes to the directory of its partition under the root (`dt=2015-07-15/hm=12%3A00/`, the
//! directory given by the sink's format closure), into the subtask's open file of that
//! partition, hidden while in progress as Flink hides it:
//! `.part-<writer>-<subtask>-<seq>.inprogress`.
//!
//! Rolling (Flink's `sink.rolling-policy.*`): a file is closed when it reaches the file size,
//! and, checked every check interval, when it is older than the rollover interval or was not
//! written for the inactivity interval. A checkpoint barrier closes every open file too
//! (Sluice has no resumable writers; Flink's bulk formats roll on checkpoint the same way).
//! Closed files are published (renamed to `part-<writer>-<subtask>-<seq>`, never replacing a
//! file) when the checkpoint after them completes, or when a bounded job has finished; after
//! a failure the restored checkpoint's files are published and every other in-progress file
//! of the subtask is deleted, as the unpartitioned transactional sink does
//! ([`super::TransactionalFileSink`]), so each row is in the published files exactly once.
//!
//! Partition commit ([`super::partition_commit`]): the subtask remembers the partitions it
//! wrote into and its watermark at each barrier, and reports them once the checkpoint's files
//! are published.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sluice_types::{Collector, ControlEvent, OperatorContext, OperatorError};

use super::partition_commit::{now_ms, PartitionCommitter, PartitionInfo};
use super::transactional::{publish, writer_tag};
use crate::checkpoint::{storage::sync_dir, CheckpointHub};
use crate::state::layout;

const IN_PROGRESS: &str = ".inprogress";

/// Flink's rolling policy (`sink.rolling-policy.*`), sizes in bytes and times in ms.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RollingPolicy {
    /// `file-size`: a file is closed when it reaches this size (default 128 MB).
    pub file_size: u64,
    /// `rollover-interval`: the longest a file stays open (default 30 min).
    pub rollover_ms: u64,
    /// `inactivity-interval`: a file not written this long is closed (default 30 min).
    pub inactivity_ms: u64,
    /// `check-interval`: how often the two intervals are checked (default 1 min).
    pub check_ms: u64,
}

impl Default for RollingPolicy {
    fn default() -> Self {
        RollingPolicy {
            file_size: 128 << 20,
            rollover_ms: 30 * 60_000,
            inactivity_ms: 30 * 60_000,
            check_ms: 60_000,
        }
    }
}

/// Formats a record: its line (without the line end) into the first string, its partition's
/// relative directory (empty: the root) into the second.
pub trait PartitionFormat<T>: Fn(&T, &mut String, &mut String) {}
impl<T, F: Fn(&T, &mut String, &mut String)> PartitionFormat<T> for F {}

struct OpenFile {
    /// Relative to the root, in-progress name.
    name: String,
    out: BufWriter<std::fs::File>,
    bytes: u64,
    created_ms: u64,
    last_write_ms: u64,
    written_since_check: bool,
}

/// What a subtask snapshots: files closed for a checkpoint (id, relative in-progress name) and
/// the partitions it wrote into that are not committed yet.
type Snapshot = (Vec<(u64, String)>, Vec<(String, PartitionInfo)>);

/// At one barrier: the checkpoint, the watermark, the partitions written into before it.
type BarrierPartitions = (u64, i64, Vec<(String, PartitionInfo)>);

/// The partitioned file sink of one subtask (module docs).
pub struct PartitionedFileSink<T, F> {
    root: PathBuf,
    subtask: usize,
    parallelism: usize,
    attempt: u64,
    writer: String,
    operator_id: String,
    services: sluice_types::ServicesHandle,
    hub: Option<Arc<CheckpointHub>>,
    rolling: RollingPolicy,
    seq: u64,
    open: HashMap<String, OpenFile>,
    /// Closed since the last barrier (relative in-progress names).
    closed: Vec<String>,
    /// Closed at barrier `id`, waiting for checkpoint `id` to complete.
    pending: Vec<(u64, String)>,
    completed: u64,
    committer: Option<Arc<PartitionCommitter>>,
    /// Partitions written into and not known committed.
    partitions: BTreeMap<String, PartitionInfo>,
    /// Per barrier: (checkpoint, watermark, the partitions written into before it).
    at_barrier: Vec<BarrierPartitions>,
    watermark: i64,
    last_check_ms: u64,
    since_check: u32,
    format: F,
    line: String,
    part: String,
    _t: std::marker::PhantomData<fn(&T)>,
}

fn io(what: String, e: std::io::Error) -> OperatorError {
    OperatorError::io(what, e)
}

/// The published name of in-progress file `name` (relative): the leading `.` and the
/// `.inprogress` suffix dropped.
fn published(name: &str) -> String {
    let (dir, file) = match name.rfind('/') {
        Some(i) => (&name[..=i], &name[i + 1..]),
        None => ("", name),
    };
    let file = file.strip_prefix('.').unwrap_or(file);
    format!("{dir}{}", file.strip_suffix(IN_PROGRESS).unwrap_or(file))
}

/// (started µs, attempt, subtask) of in-progress file name `file` (no directory).
fn in_progress_of(file: &str) -> Option<(u64, u64, usize)> {
    let f: Vec<&str> = file
        .strip_prefix(".part-")?
        .strip_suffix(IN_PROGRESS)?
        .split('-')
        .collect();
    let [started, attempt, _nonce, subtask, _seq] = f.as_slice() else {
        return None;
    };
    Some((
        started.parse().ok()?,
        attempt.parse().ok()?,
        subtask.parse().ok()?,
    ))
}

/// Every in-progress file under `dir`, recursively.
fn in_progress_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), OperatorError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(format!("listing {}", dir.display()), e)),
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            in_progress_files(&path, out)?;
        } else if entry.file_name().to_string_lossy().ends_with(IN_PROGRESS) {
            out.push(path);
        }
    }
    Ok(())
}

impl<T, F: PartitionFormat<T>> PartitionedFileSink<T, F> {
    /// The sink of subtask `ctx.subtask_index` writing under `root`, restoring (publish and
    /// clean up) when the job restores from a checkpoint; partitions are committed through
    /// `committer` if given.
    pub fn new(
        root: PathBuf,
        rolling: RollingPolicy,
        committer: Option<Arc<PartitionCommitter>>,
        format: F,
        ctx: &OperatorContext,
    ) -> Result<Self, OperatorError> {
        std::fs::create_dir_all(&root)
            .map_err(|e| io(format!("creating output directory {}", root.display()), e))?;
        let hub = crate::TaskServices::of(ctx).and_then(|s| s.hub().cloned());
        let attempt = hub.as_ref().map_or(0, |h| h.attempt());
        let live = hub.as_ref().map(|h| (h.created_ms(), attempt));
        let (me, p) = (ctx.subtask_index, ctx.parallelism.max(1));
        let mut owned = vec![me];
        let mut partitions = BTreeMap::new();
        if let Some(restored) = crate::services::restored_parts(ctx) {
            let old_p = restored.parallelism.max(1);
            owned = (0..old_p.max(p)).filter(|i| i % p == me).collect();
            for (old, bytes) in &restored.parts {
                if old % p != me {
                    continue;
                }
                let (files, parts): Snapshot = layout::decode(bytes)?;
                for (id, name) in files {
                    if id <= restored.checkpoint_id {
                        publish(&root.join(&name), &root.join(published(&name)))?;
                    }
                }
                partitions.extend(parts);
            }
        }
        // In-progress files of the subtasks this one takes care of, left by other attempts
        // or runs, belong to no completed checkpoint.
        let mut stale = Vec::new();
        in_progress_files(&root, &mut stale)?;
        for path in stale {
            let name = path.file_name().map(|n| n.to_string_lossy().to_string());
            let Some((started, att, sub)) = name.as_deref().and_then(in_progress_of) else {
                continue;
            };
            let alive = live.is_some_and(|(created, a)| a == att && started / 1000 >= created);
            if owned.contains(&sub) && !alive {
                std::fs::remove_file(&path)
                    .map_err(|e| io(format!("removing {}", path.display()), e))?;
            }
        }
        Ok(PartitionedFileSink {
            root,
            subtask: me,
            parallelism: p,
            attempt,
            writer: writer_tag(attempt),
            operator_id: ctx.operator_id.clone(),
            services: ctx.services.clone(),
            hub,
            rolling,
            seq: 0,
            open: HashMap::new(),
            closed: Vec::new(),
            pending: Vec::new(),
            completed: 0,
            committer,
            partitions,
            at_barrier: Vec::new(),
            watermark: i64::MIN,
            last_check_ms: now_ms(),
            since_check: 0,
            format,
            line: String::new(),
            part: String::new(),
            _t: std::marker::PhantomData,
        })
    }

    /// The open file of partition `part`, created (and its directory) if there is none.
    fn file_of(&mut self, part: &str) -> Result<&mut OpenFile, OperatorError> {
        if !self.open.contains_key(part) {
            let dir = self.root.join(part);
            std::fs::create_dir_all(&dir)
                .map_err(|e| io(format!("creating {}", dir.display()), e))?;
            let file = format!(
                ".part-{}-{}-{}{IN_PROGRESS}",
                self.writer, self.subtask, self.seq
            );
            self.seq += 1;
            let name = if part.is_empty() {
                file
            } else {
                format!("{}/{file}", part.trim_end_matches('/'))
            };
            let path = self.root.join(&name);
            let f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(|e| io(format!("creating {}", path.display()), e))?;
            let now = now_ms();
            if self.committer.is_some() && !self.partitions.contains_key(part) {
                self.partitions
                    .insert(part.to_string(), PartitionInfo { created_ms: now });
            }
            let open = OpenFile {
                name,
                out: BufWriter::with_capacity(64 * 1024, f),
                bytes: 0,
                created_ms: now,
                last_write_ms: now,
                written_since_check: false,
            };
            self.open.insert(part.to_string(), open);
        }
        self.open
            .get_mut(part)
            .ok_or_else(|| OperatorError::failed("the open file vanished"))
    }

    /// Closes the open file of `part` (fsynced), to be published with the next checkpoint.
    fn close(&mut self, part: &str) -> Result<(), OperatorError> {
        if let Some(mut f) = self.open.remove(part) {
            let shown = || self.root.join(&f.name).display().to_string();
            f.out
                .flush()
                .map_err(|e| io(format!("writing {}", shown()), e))?;
            f.out
                .get_ref()
                .sync_data()
                .map_err(|e| io(format!("syncing {}", shown()), e))?;
            self.closed.push(f.name);
        }
        Ok(())
    }

    fn close_all(&mut self) -> Result<(), OperatorError> {
        let parts: Vec<String> = self.open.keys().cloned().collect();
        for p in parts {
            self.close(&p)?;
        }
        Ok(())
    }

    /// The rollover and inactivity intervals, checked every check interval.
    fn check_intervals(&mut self) -> Result<(), OperatorError> {
        let now = now_ms();
        if now.saturating_sub(self.last_check_ms) < self.rolling.check_ms {
            return Ok(());
        }
        self.last_check_ms = now;
        let r = self.rolling;
        let mut due = Vec::new();
        for (part, f) in self.open.iter_mut() {
            if f.written_since_check {
                f.last_write_ms = now;
                f.written_since_check = false;
            }
            if now.saturating_sub(f.created_ms) >= r.rollover_ms
                || now.saturating_sub(f.last_write_ms) >= r.inactivity_ms
            {
                due.push(part.clone());
            }
        }
        for p in due {
            self.close(&p)?;
        }
        Ok(())
    }
}

impl<T, F> PartitionedFileSink<T, F> {
    /// Publishes the files of completed checkpoints and reports them to the committer.
    fn commit_due(&mut self) -> Result<(), OperatorError> {
        let done = self.completed;
        let mut dirs = std::collections::BTreeSet::new();
        let mut result = Ok(());
        let mut i = 0;
        while i < self.pending.len() {
            if self.pending[i].0 <= done {
                let name = &self.pending[i].1;
                if let Err(e) = publish(&self.root.join(name), &self.root.join(published(name))) {
                    result = Err(e);
                    break;
                }
                if let Some(d) = self.root.join(name).parent() {
                    dirs.insert(d.to_path_buf());
                }
                self.pending.remove(i);
            } else {
                i += 1;
            }
        }
        for d in dirs {
            sync_dir(&d)?;
        }
        result?;
        // The latest barrier this completion covers: its watermark and partitions.
        let Some(at) = self.at_barrier.iter().rposition(|b| b.0 <= done) else {
            return Ok(());
        };
        let (id, watermark, parts) = self.at_barrier.swap_remove(at);
        self.at_barrier.retain(|b| b.0 > done);
        if let Some(c) = &self.committer {
            let me = (self.attempt, self.subtask, self.parallelism);
            c.report(me, id, watermark, &parts)?;
            self.partitions.retain(|p, _| !c.is_committed(p));
        }
        Ok(())
    }
}

impl<T, F> Drop for PartitionedFileSink<T, F> {
    /// As the transactional sink's: a commit that failed is tried once more; open files and
    /// files of checkpoints not completed stay in progress for the next run to delete.
    fn drop(&mut self) {
        if let Err(e) = self.commit_due() {
            tracing::warn!(
                dir = %self.root.display(),
                "could not publish the files of completed checkpoints at the end: {e}"
            );
        }
    }
}

impl<T: Send, F: PartitionFormat<T> + Send> Collector<T> for PartitionedFileSink<T, F> {
    fn collect(&mut self, record: T) -> Result<(), OperatorError> {
        let (mut line, mut part) = (
            std::mem::take(&mut self.line),
            std::mem::take(&mut self.part),
        );
        line.clear();
        part.clear();
        (self.format)(&record, &mut line, &mut part);
        line.push('\n');
        let size = self.rolling.file_size;
        let f = self.file_of(&part)?;
        let r = f.out.write_all(line.as_bytes());
        f.bytes += line.len() as u64;
        f.written_since_check = true;
        let full = f.bytes >= size;
        if let Err(e) = r {
            let name = f.name.clone();
            return Err(io(format!("writing {}", self.root.join(name).display()), e));
        }
        if full {
            self.close(&part)?;
        }
        self.line = line;
        self.part = part;
        // The clock is read every 1024 rows, not for each.
        self.since_check += 1;
        if self.since_check >= 1024 {
            self.since_check = 0;
            self.check_intervals()?;
        }
        Ok(())
    }

    fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
        match event {
            ControlEvent::Flush => self.check_intervals(),
            ControlEvent::Barrier(barrier) => {
                let id = barrier.checkpoint_id;
                self.close_all()?;
                let closed: Vec<(u64, String)> = self.closed.drain(..).map(|n| (id, n)).collect();
                self.pending.extend(closed);
                let parts: Vec<(String, PartitionInfo)> = self
                    .partitions
                    .iter()
                    .map(|(p, i)| (p.clone(), *i))
                    .collect();
                let bytes = layout::encode(&(&self.pending, &parts))?;
                self.at_barrier.push((id, self.watermark, parts));
                if let Some(s) = self.services.get::<crate::TaskServices>() {
                    s.record(&self.operator_id, bytes);
                }
                Ok(())
            }
            ControlEvent::EndOfInput => self.end_of_input(),
            ControlEvent::CheckpointComplete(id) => {
                self.completed = self.completed.max(id);
                self.commit_due()
            }
            ControlEvent::Watermark(w) => {
                self.watermark = self.watermark.max(w.0);
                Ok(())
            }
            ControlEvent::Idleness(_) => Ok(()),
        }
    }
}

impl<T: Send, F: PartitionFormat<T> + Send> PartitionedFileSink<T, F> {
    /// End of input: the last files are published when the whole job has finished, then the
    /// committer commits every partition.
    fn end_of_input(&mut self) -> Result<(), OperatorError> {
        self.close_all()?;
        let closed: Vec<(u64, String)> = self.closed.drain(..).map(|n| (u64::MAX, n)).collect();
        self.pending.extend(closed);
        self.commit_due()?;
        let root = self.root.clone();
        let files: Vec<String> = self.pending.drain(..).map(|(_, n)| n).collect();
        let publish_all = move || -> Result<(), OperatorError> {
            let mut dirs = std::collections::BTreeSet::new();
            for name in &files {
                publish(&root.join(name), &root.join(published(name)))?;
                if let Some(d) = root.join(name).parent() {
                    dirs.insert(d.to_path_buf());
                }
            }
            for d in dirs {
                sync_dir(&d)?;
            }
            Ok(())
        };
        match &self.hub {
            Some(h) => h.register_final_commit(Box::new(publish_all)),
            None => publish_all()?,
        }
        if let Some(c) = &self.committer {
            let parts: Vec<(String, PartitionInfo)> = self
                .partitions
                .iter()
                .map(|(p, i)| (p.clone(), *i))
                .collect();
            let hub = self.hub.clone();
            let me = (self.attempt, self.subtask, self.parallelism);
            let mut now = Ok(());
            c.end_of_input(me, &parts, |commit| match hub {
                Some(h) => h.register_final_commit(commit),
                None => now = commit(),
            })?;
            now?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::CheckpointConfig;
    use crate::sinks::partition_commit::{CommitPolicy, CommitTrigger};
    use sluice_types::{Barrier, CheckpointKind, Watermark};

    type Rec = (String, i64);
    type Sink = PartitionedFileSink<Rec, fn(&Rec, &mut String, &mut String)>;

    fn sink(
        root: &Path,
        hub: &Arc<CheckpointHub>,
        committer: &Arc<PartitionCommitter>,
        (k, p): (usize, usize),
        rolling: RollingPolicy,
    ) -> Sink {
        let services = crate::TaskServices::new(
            Arc::new(crate::TaskMetrics::default()),
            Some(hub.clone()),
            0,
            0,
            None,
        );
        let ctx = OperatorContext {
            operator_name: "Sink".into(),
            task_name: "Sink".into(),
            subtask_index: k,
            parallelism: p,
            max_parallelism: 128,
            operator_id: "sink".into(),
            services: services.handle(),
            options: Vec::new(),
        };
        // A record (partition minute, value): `m=<minute>/`, the line the value.
        let format: fn(&Rec, &mut String, &mut String) = |r, line, dir| {
            dir.push_str(&format!("m={}", r.0));
            line.push_str(&r.1.to_string());
        };
        PartitionedFileSink::new(
            root.to_path_buf(),
            rolling,
            Some(committer.clone()),
            format,
            &ctx,
        )
        .unwrap()
    }

    fn barrier(id: u64) -> ControlEvent {
        ControlEvent::Barrier(Barrier {
            checkpoint_id: id,
            timestamp_ms: 0,
            kind: CheckpointKind::Aligned,
        })
    }

    /// Every file under `root` (relative paths), sorted.
    fn tree(root: &Path) -> Vec<String> {
        fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                if e.path().is_dir() {
                    walk(root, &e.path(), out);
                } else {
                    out.push(e.path().strip_prefix(root).unwrap().display().to_string());
                }
            }
        }
        let mut out = Vec::new();
        walk(root, root, &mut out);
        out.sort();
        out
    }

    fn visible_lines(root: &Path, partition: &str) -> Vec<String> {
        let mut lines: Vec<String> = tree(root)
            .into_iter()
            .filter(|f| f.starts_with(&format!("{partition}/part-")))
            .flat_map(|f| {
                std::fs::read_to_string(root.join(f))
                    .unwrap()
                    .lines()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect();
        lines.sort();
        lines
    }

    #[test]
    fn success_files_follow_the_slowest_writers_watermark_past_partition_time_and_delay() {
        let dir = std::env::temp_dir().join(format!("sluice-partitioned-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let hub = CheckpointHub::new(CheckpointConfig::default(), dir.join("chk"));
        let root = dir.join("out");
        // Partition `m=N` is minute N; delay 1 minute.
        let time: crate::sinks::partition_commit::PartitionTime = Arc::new(|rel: &str| {
            rel.strip_prefix("m=")
                .and_then(|m| m.parse::<i64>().ok())
                .map(|m| m * 60_000)
                .ok_or_else(|| rel.to_string())
        });
        let committer = PartitionCommitter::new(
            root.clone(),
            CommitPolicy {
                trigger: CommitTrigger::PartitionTime(time),
                delay_ms: 60_000,
                success_file: "_DONE".into(),
            },
        );
        let rolling = RollingPolicy {
            file_size: 8,
            ..RollingPolicy::default()
        };
        let mut a = sink(&root, &hub, &committer, (0, 2), rolling);
        let mut b = sink(&root, &hub, &committer, (1, 2), rolling);
        for v in 0..5 {
            a.collect(("0".into(), v)).unwrap();
            b.collect(("1".into(), 100 + v)).unwrap();
        }
        b.collect(("0".into(), 200)).unwrap();
        // In progress: hidden; the 8-byte file size rolled some already.
        assert!(
            tree(&root)
                .iter()
                .all(|f| f.contains("/.part-") && f.ends_with(".inprogress")),
            "{:?}",
            tree(&root)
        );
        assert!(tree(&root).iter().filter(|f| f.starts_with("m=0/")).count() > 1);
        // Writer a's watermark passes minute 0 + 1 min; b's does not yet.
        a.emit_event(ControlEvent::Watermark(Watermark(120_001)))
            .unwrap();
        b.emit_event(ControlEvent::Watermark(Watermark(50_000)))
            .unwrap();
        for s in [&mut a, &mut b] {
            s.emit_event(barrier(1)).unwrap();
        }
        hub.complete(1, CheckpointKind::Aligned, Vec::new(), 0, None);
        for s in [&mut a, &mut b] {
            s.emit_event(ControlEvent::CheckpointComplete(1)).unwrap();
        }
        // Published, visible; no partition committed: b's watermark is behind.
        assert_eq!(
            visible_lines(&root, "m=0"),
            ["0", "1", "2", "200", "3", "4"]
        );
        assert!(
            tree(&root)
                .iter()
                .all(|f| !f.contains(".inprogress") && !f.ends_with("_DONE")),
            "{:?}",
            tree(&root)
        );
        // Now both pass minute 0 + 1 min, not minute 1 + 1 min (120 000 is not past it).
        b.emit_event(ControlEvent::Watermark(Watermark(120_000)))
            .unwrap();
        a.collect(("2".into(), 7)).unwrap();
        for s in [&mut a, &mut b] {
            s.emit_event(barrier(2)).unwrap();
        }
        hub.complete(2, CheckpointKind::Aligned, Vec::new(), 0, None);
        for s in [&mut a, &mut b] {
            s.emit_event(ControlEvent::CheckpointComplete(2)).unwrap();
        }
        let done: Vec<String> = tree(&root)
            .into_iter()
            .filter(|f| f.ends_with("_DONE"))
            .collect();
        assert_eq!(done, ["m=0/_DONE"]);
        // The end of input commits every partition once the last files are published.
        for s in [&mut a, &mut b] {
            s.emit_event(ControlEvent::EndOfInput).unwrap();
        }
        hub.run_final_commits().unwrap();
        let done: Vec<String> = tree(&root)
            .into_iter()
            .filter(|f| f.ends_with("_DONE"))
            .collect();
        assert_eq!(done, ["m=0/_DONE", "m=1/_DONE", "m=2/_DONE"]);
        assert_eq!(visible_lines(&root, "m=2"), ["7"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn in_progress_names_are_hidden_and_published_without_the_dot_and_suffix() {
        let n = ".part-1700000000000000-0-42-1-3.inprogress";
        assert_eq!(in_progress_of(n), Some((1_700_000_000_000_000, 0, 1)));
        assert_eq!(
            published(&format!("dt=2015-07-15/hm=12%3A00/{n}")),
            "dt=2015-07-15/hm=12%3A00/part-1700000000000000-0-42-1-3"
        );
        assert_eq!(published(n), "part-1700000000000000-0-42-1-3");
        assert_eq!(in_progress_of("part-1-2"), None);
    }
}
