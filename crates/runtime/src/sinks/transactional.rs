//! An exactly-once text file sink (two-phase commit over checkpoints, Flink's `FileSink`
//! contract): each subtask writes `DIR/part-<subtask>-<writer>-<seq>.pending`; at a barrier
//! it closes the file (pre-commit) and lists it in its snapshot; when that checkpoint completes
//! the file is renamed to `part-<subtask>-<writer>-<seq>` (commit). After a failure the
//! restored snapshot's files are committed (their checkpoint completed) and every other
//! pending file of the failed attempt is deleted, so the committed files hold each record
//! exactly once. At the end of a bounded job the last files are committed once every task has
//! finished.
//!
//! `<writer>` is `<started>-<attempt>-<nonce>`: the sink's creation time in µs (unique in the
//! process, so each subtask's files sort in the order written), the job's attempt, and a random
//! number (unique across processes), so no two sink instances, whichever attempt, run or
//! process they belong to, share a file name. A commit never replaces a file: a name that is
//! taken already fails the commit instead of overwriting published output.
//!
//! Durability: a pending file is fsynced when it is closed (before its checkpoint can be
//! acknowledged), and `DIR` is fsynced after each batch of renames, so a published file stays
//! published after a power cut. Files are published only after their checkpoint is complete,
//! which the coordinator declares only once the checkpoint is durably stored.
//!
//! Readers take every file of `DIR` without the `.pending` suffix.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use sluice_types::{Collector, ControlEvent, OperatorContext, OperatorError};

use crate::checkpoint::{storage::sync_dir, CheckpointHub};
use crate::state::layout;

const PENDING: &str = ".pending";

/// The exactly-once file sink of one subtask (module docs: how files are named, closed and
/// published).
pub struct TransactionalFileSink<T, F> {
    dir: PathBuf,
    subtask: usize,
    /// `<started>-<attempt>-<nonce>`: this instance's part of its file names (module docs).
    writer: String,
    operator_id: String,
    /// The task's services (where the pending files are recorded at a barrier).
    services: sluice_types::ServicesHandle,
    seq: u64,
    current: Option<(String, BufWriter<std::fs::File>)>,
    /// Files closed at barrier `id`, waiting for checkpoint `id` to complete.
    pending: Vec<(u64, String)>,
    format: F,
    line: String,
    hub: Option<Arc<CheckpointHub>>,
    /// The newest completed checkpoint the task told this sink of
    /// (`ControlEvent::CheckpointComplete`): what it may publish up to.
    completed: u64,
    _t: std::marker::PhantomData<fn(&T)>,
}

fn io(what: String, e: std::io::Error) -> OperatorError {
    OperatorError::io(what, e)
}

/// This sink instance's part of its file names (see the module docs): never the same twice in
/// a process (the start time is bumped past the last one handed out), and a random number
/// apart across processes that start in the same µs.
pub(crate) fn writer_tag(attempt: u64) -> String {
    use std::hash::{BuildHasher, Hasher};
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64);
    let bump = |last: u64| Some(now.max(last + 1));
    let started = match LAST.fetch_update(Ordering::Relaxed, Ordering::Relaxed, bump) {
        Ok(last) | Err(last) => now.max(last + 1),
    };
    // `RandomState` is seeded from the operating system's randomness once per process.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(started);
    h.write_u32(std::process::id());
    format!("{started}-{attempt}-{}", h.finish())
}

/// Whether part file `name` was written in attempt `attempt` of the job whose hub was created at
/// `created_ms` (µs start times of a sink instance are at least the hub's creation).
fn written_by(name: &str, (created_ms, attempt): (u64, u64)) -> bool {
    let mut f = name
        .strip_prefix("part-")
        .unwrap_or("")
        .split('-')
        .skip(1)
        .map(|x| x.trim_end_matches(PENDING).parse::<u64>().ok());
    let (Some(Some(started)), Some(Some(att))) = (f.next(), f.next()) else {
        return false;
    };
    att == attempt && started / 1000 >= created_ms
}

/// The subtask index of part file `name` (pending or not), `None` if it is no part file.
fn part_subtask(name: &str) -> Option<usize> {
    name.strip_prefix("part-")?.split('-').next()?.parse().ok()
}

/// Publishes pending file `name` under its final name. Never replaces a file: the pending
/// file is linked to the final name (which fails if that name exists), then its pending name
/// is removed; a final name taken by another file fails the commit.
fn commit(dir: &Path, name: &str) -> Result<(), OperatorError> {
    publish(
        &dir.join(name),
        &dir.join(name.strip_suffix(PENDING).unwrap_or(name)),
    )
}

/// Publishes the closed file `from` under the name `to`, never replacing a file (see
/// [`commit`]); a missing `from` was published already.
pub(crate) fn publish(from: &Path, to: &Path) -> Result<(), OperatorError> {
    let (from, to) = (from.to_path_buf(), to.to_path_buf());
    match std::fs::hard_link(&from, &to) {
        Ok(()) => {}
        // Committed before the failure already (or by the stop of the job that took the
        // savepoint; or never written: an empty file is not kept).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        // Linked by an earlier commit that stopped before removing the pending name (a
        // crash, or another committer of the same file: a restore racing the failed
        // attempt's last commits): the same file, only its pending name is left to remove.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            if !same_file(&from, &to)? {
                return Err(OperatorError::failed(format!(
                    "refusing to commit {}: {} exists already and is another file (two writers \
                     gave their files the same name); nothing was overwritten",
                    from.display(),
                    to.display()
                )));
            }
        }
        // A file system without hard links: a plain rename, after making sure it replaces
        // nothing (names are unique, so only a foreign file could be there).
        Err(_) => {
            if to.exists() {
                return Err(OperatorError::failed(format!(
                    "refusing to commit {}: {} exists already; nothing was overwritten",
                    from.display(),
                    to.display()
                )));
            }
            return match std::fs::rename(&from, &to) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(io(format!("committing {}", from.display()), e))
                }
                _ => Ok(()),
            };
        }
    }
    match std::fs::remove_file(&from) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(io(format!("committing {}", from.display()), e))
        }
        _ => Ok(()),
    }
}

/// Whether `a` and `b` are one file (two names of it). A missing `a` counts as the same: its
/// pending name was removed by whoever committed it.
fn same_file(a: &Path, b: &Path) -> Result<bool, OperatorError> {
    let meta =
        |p: &Path| std::fs::metadata(p).map_err(|e| io(format!("inspecting {}", p.display()), e));
    let ma = match std::fs::metadata(a) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(true),
        Err(e) => return Err(io(format!("inspecting {}", a.display()), e)),
    };
    let mb = meta(b)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Ok(ma.dev() == mb.dev() && ma.ino() == mb.ino())
    }
    #[cfg(not(unix))]
    {
        // No inode numbers: the same bytes (a copy of the same file) is what matters.
        let read =
            |p: &Path| std::fs::read(p).map_err(|e| io(format!("reading {}", p.display()), e));
        Ok(ma.len() == mb.len() && read(a)? == read(b)?)
    }
}

impl<T, F: Fn(&T, &mut String)> TransactionalFileSink<T, F> {
    /// The sink of subtask `ctx.subtask_index`, restoring (commit + clean up) when the job
    /// restores from a checkpoint.
    pub fn new(dir: PathBuf, format: F, ctx: &OperatorContext) -> Result<Self, OperatorError> {
        std::fs::create_dir_all(&dir)
            .map_err(|e| io(format!("creating output directory {}", dir.display()), e))?;
        let hub = crate::TaskServices::of(ctx).and_then(|s| s.hub().cloned());
        let attempt = hub.as_ref().map_or(0, |h| h.attempt());
        let writer = writer_tag(attempt);
        // Sinks of this very attempt (another sink writing the same directory, built on its
        // own task thread while this one's task may already write) are alive: their files
        // are theirs. Any other attempt's, of this job or another run, are dead.
        let live = hub.as_ref().map(|h| (h.created_ms(), attempt));
        let (me, p) = (ctx.subtask_index, ctx.parallelism.max(1));
        // Old subtasks whose files this subtask takes care of.
        let mut owned = vec![me];
        let mut changed = false;
        if let Some(restored) = crate::services::restored_parts(ctx) {
            let old_p = restored.parallelism.max(1);
            owned = (0..old_p.max(p)).filter(|i| i % p == me).collect();
            for (old, bytes) in &restored.parts {
                if old % p != me {
                    continue;
                }
                let files: Vec<(u64, String)> = layout::decode(bytes)?;
                for (id, name) in files {
                    if id <= restored.checkpoint_id {
                        commit(&dir, &name)?;
                        changed = true;
                    }
                }
            }
        }
        // Whatever is still pending from earlier attempts belongs to no completed checkpoint.
        for entry in std::fs::read_dir(&dir)
            .map_err(|e| io(format!("listing {}", dir.display()), e))?
            .flatten()
        {
            let name = entry.file_name().to_string_lossy().to_string();
            // This instance has written nothing yet: every pending file of a subtask it
            // takes care of was left by another attempt or run (any name format).
            let Some(sub) = name.strip_suffix(PENDING).and_then(part_subtask) else {
                continue;
            };
            if owned.contains(&sub) && !live.is_some_and(|l| written_by(&name, l)) {
                std::fs::remove_file(entry.path())
                    .map_err(|e| io(format!("removing {}", entry.path().display()), e))?;
                changed = true;
            }
        }
        if changed {
            sync_dir(&dir)?;
        }
        Ok(TransactionalFileSink {
            dir,
            subtask: me,
            writer,
            operator_id: ctx.operator_id.clone(),
            services: ctx.services.clone(),
            seq: 0,
            current: None,
            pending: Vec::new(),
            format,
            line: String::new(),
            hub,
            completed: 0,
            _t: std::marker::PhantomData,
        })
    }

    fn writer(&mut self) -> Result<&mut BufWriter<std::fs::File>, OperatorError> {
        if let Some(open) = self.current.take() {
            return Ok(&mut self.current.insert(open).1);
        }
        let name = format!(
            "part-{}-{}-{}{PENDING}",
            self.subtask, self.writer, self.seq
        );
        self.seq += 1;
        let path = self.dir.join(&name);
        // `create_new`: a name that exists already is never truncated (another writer's).
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| io(format!("creating {}", path.display()), e))?;
        let open = (name, BufWriter::with_capacity(64 * 1024, f));
        Ok(&mut self.current.insert(open).1)
    }

    /// Closes the current file (pre-commit), naming the checkpoint that will publish it.
    fn close_current(&mut self, checkpoint_id: u64) -> Result<(), OperatorError> {
        if let Some((name, mut w)) = self.current.take() {
            w.flush()
                .map_err(|e| io(format!("writing {}", self.dir.join(&name).display()), e))?;
            w.get_ref()
                .sync_data()
                .map_err(|e| io(format!("syncing {}", self.dir.join(&name).display()), e))?;
            self.pending.push((checkpoint_id, name));
        }
        Ok(())
    }
}

impl<T, F> TransactionalFileSink<T, F> {
    /// Publishes the files of completed checkpoints.
    fn commit_due(&mut self) -> Result<(), OperatorError> {
        let done = self.completed;
        let mut i = 0;
        let mut committed = false;
        let mut result = Ok(());
        while i < self.pending.len() {
            if self.pending[i].0 <= done {
                // Listed until committed: a file that failed to commit is tried again later
                // (at the latest when the sink is dropped), not forgotten.
                if let Err(e) = commit(&self.dir, &self.pending[i].1) {
                    result = Err(e);
                    break;
                }
                self.pending.remove(i);
                committed = true;
            } else {
                i += 1;
            }
        }
        // The files committed before a failing one stay published durably too.
        if committed {
            sync_dir(&self.dir)?;
        }
        result
    }
}

impl<T, F> Drop for TransactionalFileSink<T, F> {
    /// A subtask that ends without end of input (stop-with-savepoint, cancel, failure) has
    /// published the files of every completion its task told it of: the task tells it once
    /// more before it ends cancelled, so after a stop-with-savepoint the savepoint's own files
    /// are published (Flink publishes them on stop: a user who never resumes would lose them
    /// otherwise; a resume finds them published, which its restore accepts). Here only a
    /// commit that failed then is tried once more. A completion never covers a checkpoint that
    /// did not complete, nor a savepoint that does not stop the job, so a cancel or a failure
    /// publishes only what a restore from the latest checkpoint would publish anyway. The open
    /// file and files of checkpoints not completed stay pending: the next run deletes them.
    fn drop(&mut self) {
        if let Err(e) = self.commit_due() {
            tracing::warn!(
                dir = %self.dir.display(),
                "could not publish the files of completed checkpoints at the end: {e}"
            );
        }
    }
}

impl<T: Send, F: Fn(&T, &mut String) + Send> Collector<T> for TransactionalFileSink<T, F> {
    fn collect(&mut self, record: T) -> Result<(), OperatorError> {
        self.line.clear();
        (self.format)(&record, &mut self.line);
        self.line.push('\n');
        let line = std::mem::take(&mut self.line);
        let r = self
            .writer()?
            .write_all(line.as_bytes())
            .map_err(|e| io(format!("writing to {}", self.dir.display()), e));
        self.line = line;
        r?;
        Ok(())
    }

    fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
        match event {
            // Lines stay buffered until the barrier closes their file.
            ControlEvent::Flush => Ok(()),
            // Closes the current file as part of the checkpoint and snapshots the pending ones.
            ControlEvent::Barrier(barrier) => {
                self.close_current(barrier.checkpoint_id)?;
                let bytes = layout::encode(&self.pending)?;
                if let Some(s) = self.services.get::<crate::TaskServices>() {
                    s.record(&self.operator_id, bytes);
                }
                Ok(())
            }
            ControlEvent::EndOfInput => self.end_of_input(),
            // Publishes the files of checkpoints up to `id`.
            ControlEvent::CheckpointComplete(id) => {
                self.completed = self.completed.max(id);
                self.commit_due()
            }
            // Files follow checkpoints, not event time.
            ControlEvent::Watermark(_) | ControlEvent::Idleness(_) => Ok(()),
        }
    }
}

impl<T: Send, F: Fn(&T, &mut String) + Send> TransactionalFileSink<T, F> {
    /// End of input: the last file is published when the whole job has finished (a failure
    /// before that restarts from the last checkpoint, which does not contain it).
    fn end_of_input(&mut self) -> Result<(), OperatorError> {
        self.close_current(u64::MAX)?;
        self.commit_due()?;
        let dir = self.dir.clone();
        let files: Vec<String> = self.pending.drain(..).map(|(_, n)| n).collect();
        let publish = move || {
            for name in &files {
                commit(&dir, name)?;
            }
            sync_dir(&dir)
        };
        match &self.hub {
            Some(h) => h.register_final_commit(Box::new(publish)),
            None => publish()?,
        }
        Ok(())
    }
}

/// The committed lines of a transactional sink's directory (every file without `.pending`):
/// subtask by subtask, each in the order it wrote them.
pub fn committed_lines(dir: &Path) -> Result<Vec<String>, OperatorError> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| io(format!("listing {}", dir.display()), e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("part-") && !n.ends_with(PENDING))
        })
        .collect();
    // By the numbers of the name, (subtask, started, attempt, nonce, sequence): each subtask's
    // files in the order written (names of older versions, `part-<subtask>-<tag>-<sequence>`
    // with a tag from the start time in ms × 1000, sort among them by time too).
    let order = |p: &PathBuf| -> Vec<u64> {
        p.file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("part-"))
            .map(|n| n.split('-').filter_map(|x| x.parse().ok()).collect())
            .unwrap_or_default()
    };
    files.sort_by_key(|p| order(p));
    let mut out = Vec::new();
    for f in files {
        let text =
            std::fs::read_to_string(&f).map_err(|e| io(format!("reading {}", f.display()), e))?;
        out.extend(text.lines().map(str::to_string));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::CheckpointConfig;
    use sluice_types::{Barrier, CheckpointKind};

    fn tempdir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("sluice-txfile-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn ctx(services: sluice_types::ServicesHandle) -> OperatorContext {
        OperatorContext {
            operator_name: "Sink".into(),
            task_name: "Sink".into(),
            subtask_index: 0,
            parallelism: 1,
            max_parallelism: 128,
            operator_id: "sink".into(),
            services,
            options: Vec::new(),
        }
    }

    type Sink = TransactionalFileSink<String, fn(&String, &mut String)>;

    fn sink(dir: &Path, hub: Option<&Arc<CheckpointHub>>) -> Sink {
        let services = crate::TaskServices::new(
            Arc::new(crate::TaskMetrics::default()),
            hub.cloned(),
            0,
            0,
            None,
        );
        let format: fn(&String, &mut String) = |s, line| line.push_str(s);
        TransactionalFileSink::new(dir.to_path_buf(), format, &ctx(services.handle())).unwrap()
    }

    fn barrier(id: u64) -> ControlEvent {
        ControlEvent::Barrier(Barrier {
            checkpoint_id: id,
            timestamp_ms: 0,
            kind: CheckpointKind::Aligned,
        })
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .collect();
        v.sort();
        v
    }

    /// Writes `line` in a sink of the hub's current attempt, pre-commits it at barrier `id`
    /// and publishes it once checkpoint `id` completed; returns the published file's name.
    fn write_and_commit(dir: &Path, hub: &Arc<CheckpointHub>, id: u64, line: &str) -> String {
        let before = names(dir);
        let mut s = sink(dir, Some(hub));
        s.collect(line.to_string()).unwrap();
        s.emit_event(barrier(id)).unwrap();
        hub.complete(
            id,
            sluice_types::CheckpointKind::Aligned,
            Vec::new(),
            0,
            None,
        );
        s.emit_event(ControlEvent::CheckpointComplete(id)).unwrap();
        let after = names(dir);
        let new: Vec<&String> = after.iter().filter(|n| !before.contains(n)).collect();
        assert!(
            new.len() <= 1 && after.iter().all(|n| !n.ends_with(PENDING)),
            "{after:?}"
        );
        new.first().map(|n| n.to_string()).unwrap_or_default()
    }

    #[test]
    fn a_sink_starting_beside_a_live_one_of_the_same_attempt_keeps_its_pending_files() {
        // Two sinks of one job writing one directory: each task builds its chain on its own
        // thread, so one may write while the other starts. The starting one used to delete
        // every pending file of its subtask index, the live one's too, whose commit then
        // found nothing (taken for "committed before") and lost its lines.
        let dir = tempdir("live");
        let hub = CheckpointHub::new(CheckpointConfig::default(), dir.join("chk"));
        let out = dir.join("out");
        let mut a = sink(&out, Some(&hub));
        a.collect("from a".to_string()).unwrap();
        let _b = sink(&out, Some(&hub));
        a.emit_event(barrier(1)).unwrap();
        hub.complete(1, CheckpointKind::Aligned, Vec::new(), 0, None);
        a.emit_event(ControlEvent::CheckpointComplete(1)).unwrap();
        assert_eq!(committed_lines(&out).unwrap(), ["from a"]);
        // Another attempt's pending files are still cleaned up.
        let mut c = sink(&out, Some(&hub));
        c.collect("lost with its attempt".to_string()).unwrap();
        c.emit_event(barrier(2)).unwrap();
        hub.reset_for_attempt();
        let _d = sink(&out, Some(&hub));
        assert!(
            names(&out).iter().all(|n| !n.ends_with(PENDING)),
            "{:?}",
            names(&out)
        );
    }

    #[test]
    fn attempt_1000_of_a_job_does_not_overwrite_what_attempt_0_committed() {
        let dir = tempdir("wrap");
        let hub = CheckpointHub::new(CheckpointConfig::default(), dir.join("chk"));
        let out = dir.join("out");
        let first = write_and_commit(&out, &hub, 1, "attempt 0");
        for _ in 0..1000 {
            hub.reset_for_attempt();
        }
        assert_eq!(hub.attempt(), 1000);
        let second = write_and_commit(&out, &hub, 2, "attempt 1000");
        assert_eq!(
            committed_lines(&out).unwrap(),
            ["attempt 0", "attempt 1000"],
            "attempt 1000 overwrote attempt 0's committed file ({first}, {second})"
        );
        assert_ne!(first, second);
    }

    #[test]
    fn a_commit_never_replaces_a_file_and_repeats_harmlessly() {
        let dir = tempdir("noreplace");
        let w = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
        // Another file holds the final name: the commit fails and overwrites nothing.
        w("part-0-1-0", "published\n");
        w("part-0-1-0.pending", "other\n");
        let e = commit(&dir, "part-0-1-0.pending").unwrap_err().to_string();
        assert!(e.contains("refusing to commit"), "{e}");
        assert_eq!(committed_lines(&dir).unwrap(), ["published"]);
        assert!(dir.join("part-0-1-0.pending").exists());
        // Committed before (the pending name is gone, the final one is there): nothing to do.
        w("part-0-2-0", "done\n");
        commit(&dir, "part-0-2-0.pending").unwrap();
        // A commit interrupted between the link and the removal of the pending name.
        w("part-0-3-0.pending", "half\n");
        std::fs::hard_link(dir.join("part-0-3-0.pending"), dir.join("part-0-3-0")).unwrap();
        commit(&dir, "part-0-3-0.pending").unwrap();
        assert!(!dir.join("part-0-3-0.pending").exists());
        // An ordinary commit.
        w("part-0-4-0.pending", "new\n");
        commit(&dir, "part-0-4-0.pending").unwrap();
        assert_eq!(
            committed_lines(&dir).unwrap(),
            ["published", "done", "half", "new"]
        );
    }

    #[test]
    fn sinks_created_together_name_their_files_apart_and_clean_up_others_pending_files() {
        let dir = tempdir("apart");
        // Left by earlier runs: old-format and new-format pending files of subtask 0, and a
        // pending file of subtask 1 (not this sink's to clean).
        for n in [
            "part-0-1796426092149000-3.pending",
            "part-0-1796426092149001-0-42-0.pending",
            "part-1-1796426092149001-0-42-0.pending",
        ] {
            std::fs::write(dir.join(n), "old\n").unwrap();
        }
        // Without a hub (no checkpoints) the attempt is 0 for both: only the writer tag
        // keeps their names apart.
        let mut a = sink(&dir, None);
        let mut b = sink(&dir, None);
        assert_eq!(
            names(&dir),
            ["part-1-1796426092149001-0-42-0.pending"],
            "subtask 0's pending files of other runs are deleted"
        );
        a.collect("a".into()).unwrap();
        b.collect("b".into()).unwrap();
        a.close_current(1).unwrap();
        b.close_current(1).unwrap();
        let (na, nb) = (a.pending[0].1.clone(), b.pending[0].1.clone());
        assert_ne!(na, nb);
        commit(&dir, &na).unwrap();
        commit(&dir, &nb).unwrap();
        assert_eq!(committed_lines(&dir).unwrap(), ["a", "b"], "written order");
    }

    #[test]
    fn sinks_started_back_to_back_never_share_a_file_name() {
        // Without a hub (no checkpoints) every sink is at attempt 0, and 20 start well within
        // a millisecond: only the writer tag keeps their names apart.
        let dir = tempdir("back-to-back");
        let mut sinks: Vec<Sink> = (0..20).map(|_| sink(&dir, None)).collect();
        let mut written = Vec::new();
        for (i, s) in sinks.iter_mut().enumerate() {
            s.collect(format!("{i}")).unwrap();
            s.close_current(1).unwrap();
            written.push(s.pending[0].1.clone());
        }
        for name in &written {
            commit(&dir, name).unwrap();
        }
        let distinct: std::collections::BTreeSet<&String> = written.iter().collect();
        assert_eq!(distinct.len(), 20, "names shared: {distinct:?}");
        let expected: Vec<String> = (0..20).map(|i| format!("{i}")).collect();
        assert_eq!(committed_lines(&dir).unwrap(), expected, "written order");
    }
}
