//! An exactly-once text file sink (two-phase commit over checkpoints, Flink's `FileSink`
//! contract): each subtask writes `DIR/part-<subtask>-<attempt>-<seq>.pending`; at a barrier
//! it closes the file (pre-commit) and lists it in its snapshot; when that checkpoint completes
//! the file is renamed to `part-<subtask>-<attempt>-<seq>` (commit). After a failure the
//! restored snapshot's files are committed (their checkpoint completed) and every other
//! pending file of the failed attempt is deleted, so the committed files hold each record
//! exactly once. At the end of a bounded job the last files are committed once every task has
//! finished.
//!
//! Durability: a pending file is fsynced when it is closed (before its checkpoint can be
//! acknowledged), and `DIR` is fsynced after each batch of renames, so a published file stays
//! published after a power cut. Files are published only after their checkpoint is complete,
//! which the coordinator declares only once the checkpoint is durably stored.
//!
//! Readers take every file of `DIR` without the `.pending` suffix.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sluice_types::{Collector, ControlEvent, OperatorContext, OperatorError};

use crate::checkpoint::{storage::sync_dir, CheckpointHub};
use crate::state::layout;

const PENDING: &str = ".pending";
/// Records between two looks for newly completed checkpoints.
const COMMIT_CHECK_EVERY: u32 = 256;

pub struct TransactionalFileSink<T, F> {
    dir: PathBuf,
    subtask: usize,
    attempt: u64,
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
    countdown: u32,
    _t: std::marker::PhantomData<fn(&T)>,
}

fn io(what: String, e: std::io::Error) -> OperatorError {
    OperatorError::io(what, e)
}

fn commit(dir: &Path, name: &str) -> Result<(), OperatorError> {
    let from = dir.join(name);
    let to = dir.join(name.strip_suffix(PENDING).unwrap_or(name));
    match std::fs::rename(&from, &to) {
        Ok(()) => Ok(()),
        // Committed before the failure already (or never written: an empty file is not kept).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(format!("committing {}", from.display()), e)),
    }
}

impl<T, F: Fn(&T, &mut String)> TransactionalFileSink<T, F> {
    /// The sink of subtask `ctx.subtask_index`, restoring (commit + clean up) when the job
    /// restores from a checkpoint.
    pub fn new(dir: PathBuf, format: F, ctx: &OperatorContext) -> Result<Self, OperatorError> {
        std::fs::create_dir_all(&dir)
            .map_err(|e| io(format!("creating output directory {}", dir.display()), e))?;
        let hub = crate::TaskServices::of(ctx).and_then(|s| s.hub().cloned());
        let attempt = hub
            .as_ref()
            .map_or_else(crate::executor::epoch_ms, |h| h.attempt_tag());
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
            let Some(stem) = name.strip_suffix(PENDING) else {
                continue;
            };
            let mut parts = stem.strip_prefix("part-").unwrap_or("").split('-');
            let (Some(sub), Some(att)) = (
                parts.next().and_then(|s| s.parse::<usize>().ok()),
                parts.next().and_then(|s| s.parse::<u64>().ok()),
            ) else {
                continue;
            };
            if owned.contains(&sub) && att != attempt {
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
            attempt,
            operator_id: ctx.operator_id.clone(),
            services: ctx.services.clone(),
            seq: 0,
            current: None,
            pending: Vec::new(),
            format,
            line: String::new(),
            hub,
            countdown: COMMIT_CHECK_EVERY,
            _t: std::marker::PhantomData,
        })
    }

    fn writer(&mut self) -> Result<&mut BufWriter<std::fs::File>, OperatorError> {
        if self.current.is_none() {
            let name = format!(
                "part-{}-{}-{}{PENDING}",
                self.subtask, self.attempt, self.seq
            );
            self.seq += 1;
            let path = self.dir.join(&name);
            let f = std::fs::File::create(&path)
                .map_err(|e| io(format!("creating {}", path.display()), e))?;
            self.current = Some((name, BufWriter::with_capacity(64 * 1024, f)));
        }
        Ok(&mut self.current.as_mut().expect("opened above").1)
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

    /// Publishes the files of completed checkpoints.
    fn commit_due(&mut self) -> Result<(), OperatorError> {
        let Some(hub) = &self.hub else {
            return Ok(());
        };
        let done = hub.completed_checkpoint();
        let mut i = 0;
        let mut committed = false;
        while i < self.pending.len() {
            if self.pending[i].0 <= done {
                let (_, name) = self.pending.remove(i);
                commit(&self.dir, &name)?;
                committed = true;
            } else {
                i += 1;
            }
        }
        if committed {
            sync_dir(&self.dir)?;
        }
        Ok(())
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
        self.countdown -= 1;
        if self.countdown == 0 {
            self.countdown = COMMIT_CHECK_EVERY;
            self.commit_due()?;
        }
        Ok(())
    }

    fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
        match event {
            // Publishes the files of checkpoints that completed meanwhile.
            ControlEvent::Flush => self.commit_due(),
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
            ControlEvent::CheckpointComplete(_) => self.commit_due(),
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
    // By (subtask, attempt, sequence) numerically: each subtask's files in the order written.
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
