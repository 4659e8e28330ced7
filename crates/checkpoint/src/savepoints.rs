//! Savepoint requests of one job: a bounded FIFO queue of requests waiting to be triggered and
//! the status of every request by trigger id. A request is queued or refused, never dropped:
//! the coordinator takes one at a time, and whatever it cannot take is failed with a reason.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Most savepoint requests waiting at once; one more is refused (HTTP 409).
pub const MAX_QUEUED_SAVEPOINTS: usize = 16;

/// A user's request for a savepoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavepointRequest {
    /// The id the REST API returns for the request and is polled with.
    pub trigger_id: String,
    /// The savepoint is written into this directory (its `_metadata` and state files).
    pub dir: PathBuf,
    /// Stop the job once the savepoint completed (stop-with-savepoint).
    pub stop: bool,
}

/// Where a savepoint request stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SavepointStatus {
    /// Queued or being taken.
    InProgress,
    /// Written; the path the savepoint was written to.
    Completed(PathBuf),
    /// Failed, with why.
    Failed(String),
}

/// Why a savepoint request was refused (nothing was queued).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SavepointRefused {
    /// [`MAX_QUEUED_SAVEPOINTS`] requests are already waiting.
    #[error("{MAX_QUEUED_SAVEPOINTS} savepoint requests are already waiting; try again once one completed")]
    QueueFull,
    /// A stop-with-savepoint is pending; the job ends after it.
    #[error("a stop-with-savepoint is already requested: the job stops after it, so no further savepoint can be taken")]
    Stopping,
}

#[derive(Default)]
struct Inner {
    queue: VecDeque<SavepointRequest>,
    statuses: BTreeMap<String, SavepointStatus>,
    requested: u64,
    /// The queued or running request that stops the job (a failed one no longer does).
    stopping: Option<String>,
    /// Requests whose checkpoint is fully acknowledged and being completed: past the point
    /// where a waiter may withdraw them.
    claimed: std::collections::BTreeSet<String>,
}

/// The queue and the statuses; shared through the job's checkpoint hub.
pub struct Savepoints {
    inner: Mutex<Inner>,
    done: Condvar,
    /// Prefix of trigger ids (the hub's creation time), unique per job.
    id_prefix: u64,
}

impl Savepoints {
    /// An empty queue; trigger ids start with `id_prefix` in hex (unique per job).
    pub fn new(id_prefix: u64) -> Savepoints {
        Savepoints {
            inner: Mutex::new(Inner::default()),
            done: Condvar::new(),
            id_prefix,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues a request; returns its trigger id.
    pub fn request(&self, dir: PathBuf, stop: bool) -> Result<String, SavepointRefused> {
        let mut s = self.lock();
        if s.stopping.is_some() {
            return Err(SavepointRefused::Stopping);
        }
        if s.queue.len() >= MAX_QUEUED_SAVEPOINTS {
            return Err(SavepointRefused::QueueFull);
        }
        s.requested += 1;
        let trigger_id = format!("{:016x}{:016x}", self.id_prefix, s.requested);
        s.statuses
            .insert(trigger_id.clone(), SavepointStatus::InProgress);
        if stop {
            s.stopping = Some(trigger_id.clone());
        }
        s.queue.push_back(SavepointRequest {
            trigger_id: trigger_id.clone(),
            dir,
            stop,
        });
        Ok(trigger_id)
    }

    /// The oldest waiting request, for the coordinator to trigger.
    pub fn take(&self) -> Option<SavepointRequest> {
        self.lock().queue.pop_front()
    }

    /// Puts a request the coordinator took but could not finish back at the front (a job
    /// attempt ended; the next attempt takes it).
    pub fn requeue(&self, req: SavepointRequest) {
        self.lock().queue.push_front(req);
    }

    /// Fails every waiting request with `reason` (the job ends: none can be taken).
    pub fn fail_queued(&self, reason: &str) {
        let mut s = self.lock();
        let queued: Vec<SavepointRequest> = s.queue.drain(..).collect();
        for r in queued {
            s.statuses
                .insert(r.trigger_id, SavepointStatus::Failed(reason.to_string()));
        }
        drop(s);
        self.done.notify_all();
    }

    /// Where savepoint `trigger_id` stands; `None` if the id is unknown.
    pub fn status(&self, trigger_id: &str) -> Option<SavepointStatus> {
        self.lock().statuses.get(trigger_id).cloned()
    }

    /// Records where savepoint `trigger_id` stands (a failed stop-with-savepoint no longer blocks new requests).
    pub fn set_status(&self, trigger_id: &str, status: SavepointStatus) {
        let mut s = self.lock();
        if matches!(status, SavepointStatus::Failed(_)) && s.stopping.as_deref() == Some(trigger_id)
        {
            s.stopping = None;
        }
        s.statuses.insert(trigger_id.to_string(), status);
        drop(s);
        self.done.notify_all();
    }

    /// Withdraws request `trigger_id` (its waiter gave up): it fails with `reason`, leaves the
    /// queue if it is still there, and no longer stops the job; the coordinator aborts its
    /// checkpoint if it was triggered. `false` when it can no longer be withdrawn: it already
    /// completed or failed, or its completion is under way ([`claim`](Self::claim)).
    pub fn withdraw(&self, trigger_id: &str, reason: &str) -> bool {
        let mut s = self.lock();
        if s.claimed.contains(trigger_id)
            || s.statuses.get(trigger_id) != Some(&SavepointStatus::InProgress)
        {
            return false;
        }
        s.queue.retain(|r| r.trigger_id != trigger_id);
        if s.stopping.as_deref() == Some(trigger_id) {
            s.stopping = None;
        }
        s.statuses.insert(
            trigger_id.to_string(),
            SavepointStatus::Failed(reason.to_string()),
        );
        drop(s);
        self.done.notify_all();
        true
    }

    /// The coordinator is about to complete request `trigger_id`'s checkpoint: from now on it
    /// cannot be withdrawn. `false` when it was withdrawn already (the coordinator aborts it
    /// instead: a stop-with-savepoint its waiter gave up on must not stop the job later).
    pub fn claim(&self, trigger_id: &str) -> bool {
        let mut s = self.lock();
        if s.statuses.get(trigger_id) != Some(&SavepointStatus::InProgress) {
            return false;
        }
        s.claimed.insert(trigger_id.to_string());
        true
    }

    /// Waits until request `trigger_id` completed or failed. After `timeout` the request is
    /// withdrawn and fails, unless its completion is already under way: then the wait goes on
    /// until it is done (a savepoint is never completed, nor a job stopped, behind the back
    /// of a caller that was told it failed).
    pub fn wait(&self, trigger_id: &str, timeout: Duration) -> SavepointStatus {
        let deadline = Instant::now() + timeout;
        let mut s = self.lock();
        loop {
            let st = s
                .statuses
                .get(trigger_id)
                .cloned()
                .unwrap_or(SavepointStatus::Failed(format!(
                    "no savepoint request {trigger_id}"
                )));
            if st != SavepointStatus::InProgress {
                return st;
            }
            let mut left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                const TIMED_OUT: &str = "timed out waiting for the savepoint; it was withdrawn";
                drop(s);
                if self.withdraw(trigger_id, TIMED_OUT) {
                    return SavepointStatus::Failed(TIMED_OUT.into());
                }
                s = self.lock();
                // Completing (or just done): wait for its final status.
                left = Duration::from_millis(50);
            }
            s = self
                .done
                .wait_timeout(s, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_queue_in_order_until_full_and_none_is_lost() {
        let q = Savepoints::new(7);
        let ids: Vec<String> = (0..MAX_QUEUED_SAVEPOINTS)
            .map(|i| q.request(PathBuf::from(format!("/sp/{i}")), false).unwrap())
            .collect();
        let unique: std::collections::BTreeSet<_> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len(), "trigger ids are unique");
        assert_eq!(
            q.request("/sp/x".into(), false),
            Err(SavepointRefused::QueueFull)
        );
        let first = q.take().unwrap();
        assert_eq!(first.trigger_id, ids[0]);
        q.requeue(first.clone());
        assert_eq!(q.take().unwrap(), first);
        q.fail_queued("the job ended");
        for id in &ids[1..] {
            assert_eq!(
                q.status(id),
                Some(SavepointStatus::Failed("the job ended".into()))
            );
        }
        assert_eq!(q.status(&ids[0]), Some(SavepointStatus::InProgress));
    }

    #[test]
    fn nothing_is_accepted_after_a_stop() {
        let q = Savepoints::new(1);
        q.request("/a".into(), true).unwrap();
        let stop = q.take().unwrap();
        assert_eq!(
            q.request("/b".into(), false),
            Err(SavepointRefused::Stopping)
        );
        // A stop that failed does not stop the job: savepoints are accepted again.
        q.set_status(&stop.trigger_id, SavepointStatus::Failed("expired".into()));
        assert!(q.request("/b".into(), false).is_ok());
    }
}
