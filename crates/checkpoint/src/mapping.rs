//! Which operator of a job takes which state of a checkpoint: decided once, before an attempt
//! that restores starts, so state is never silently dropped.
//!
//! A checkpoint files each operator's state under the operator's stable id (its uid's hash, or
//! the hash of its position in the stream graph). Restoring into a job — the same one, or one
//! the doctor changed — every operator state of the checkpoint must find an operator of the new
//! job with that id. State that finds none is *unmapped*: the job refuses to start and names it,
//! unless the user allowed dropping it (`--allow-non-restored-state`, Flink's flag), in which
//! case the drop is reported. Operators of the new job without state in the checkpoint start
//! empty (new sources from their beginning), as in Flink, and are reported too.
//!
//! Pure: no I/O, so the decision is testable without a job.

use std::collections::BTreeMap;

use super::CompletedCheckpoint;

/// An operator state of the checkpoint that no operator of the job takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnmappedState {
    /// The id the checkpoint files the state under.
    pub operator_id: String,
    /// Subtask state files and their total bytes.
    pub files: usize,
    /// Total bytes of those files.
    pub bytes: u64,
}

impl std::fmt::Display for UnmappedState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({} subtask state(s), {} bytes)",
            self.operator_id, self.files, self.bytes
        )
    }
}

/// How a checkpoint's state maps onto a job.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StateAssignment {
    /// Operators of the job that restore state: `(id, name)`.
    pub restored: Vec<(String, String)>,
    /// Operators of the job without state in the checkpoint (they start empty): `(id, name)`.
    pub started_empty: Vec<(String, String)>,
    /// State dropped because the user allowed it.
    pub dropped: Vec<UnmappedState>,
}

/// Why a checkpoint's state cannot be restored into a job.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StateMappingError {
    /// State of the checkpoint that the job has no operator for.
    #[error(transparent)]
    Unmapped(#[from] UnmappedStateError),
    /// Every job checkpoints at least its sources' positions: a checkpoint without any state
    /// was not written whole (or was edited), and restoring it would silently start afresh.
    #[error("the checkpoint holds no operator state at all (not even source positions): it is not a checkpoint of a job, or its manifest was edited")]
    Empty,
}

/// The refusal: state of the checkpoint that the job has no operator for.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the checkpoint holds state of {} operator(s) that this job does not have: {}; \
     restore into a job that has them (an operator keeps its id while its uid, or its position \
     in the graph, stays the same), or allow dropping that state with --allow-non-restored-state",
    .unmapped.len(),
    .unmapped.iter().map(|u| u.to_string()).collect::<Vec<_>>().join(", ")
)]
pub struct UnmappedStateError {
    /// Every state of the checkpoint that no operator takes.
    pub unmapped: Vec<UnmappedState>,
}

/// Maps `cp`'s operator states onto `job` (operator id → name). With `allow_non_restored`,
/// unmapped state is dropped and listed; without it, it is refused.
pub fn assign(
    cp: &CompletedCheckpoint,
    job: &BTreeMap<String, String>,
    allow_non_restored: bool,
) -> Result<StateAssignment, StateMappingError> {
    if cp.operators.is_empty() {
        return Err(StateMappingError::Empty);
    }
    let mut out = StateAssignment::default();
    let mut unmapped = Vec::new();
    for (id, state) in &cp.operators {
        // An unaligned checkpoint's in-flight records of a vertex go with its head operator.
        let owner = super::task::is_channel_state_id(id).unwrap_or(id);
        if job.contains_key(owner) {
            continue;
        }
        unmapped.push(UnmappedState {
            operator_id: id.clone(),
            files: state.subtasks.len(),
            bytes: state.subtasks.values().map(|b| b.len() as u64).sum(),
        });
    }
    if !unmapped.is_empty() && !allow_non_restored {
        return Err(UnmappedStateError { unmapped }.into());
    }
    out.dropped = unmapped;
    for (id, name) in job {
        let entry = (id.clone(), name.clone());
        if cp.operators.contains_key(id) {
            out.restored.push(entry);
        } else {
            out.started_empty.push(entry);
        }
    }
    Ok(out)
}

/// `cp` without the operator states `assignment` dropped, so no task can read them.
pub fn without_dropped(
    cp: &CompletedCheckpoint,
    assignment: &StateAssignment,
) -> CompletedCheckpoint {
    let mut kept = cp.clone();
    for d in &assignment.dropped {
        kept.operators.remove(&d.operator_id);
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OperatorState;
    use sluice_types::CheckpointKind;

    fn cp(ops: &[&str]) -> CompletedCheckpoint {
        CompletedCheckpoint {
            id: 7,
            kind: CheckpointKind::Savepoint,
            timestamp_ms: 0,
            operators: ops
                .iter()
                .map(|o| {
                    (
                        o.to_string(),
                        OperatorState {
                            parallelism: 2,
                            subtasks: [(0, vec![1, 2]), (1, vec![3])].into_iter().collect(),
                        },
                    )
                })
                .collect(),
        }
    }

    fn job(ops: &[&str]) -> BTreeMap<String, String> {
        ops.iter()
            .map(|o| (o.to_string(), format!("op {o}")))
            .collect()
    }

    #[test]
    fn every_state_mapped_restores_and_new_operators_start_empty() {
        let a = assign(&cp(&["src", "sum"]), &job(&["src", "sum", "new"]), false).unwrap();
        assert_eq!(a.restored.len(), 2);
        assert_eq!(a.started_empty, vec![("new".into(), "op new".into())]);
        assert!(a.dropped.is_empty());
    }

    #[test]
    fn unmapped_state_is_refused_with_its_id_or_dropped_when_allowed() {
        let e = assign(&cp(&["src", "old"]), &job(&["src", "sum"]), false).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("old (2 subtask state(s), 3 bytes)"), "{text}");
        assert!(text.contains("--allow-non-restored-state"), "{text}");
        let a = assign(&cp(&["src", "old"]), &job(&["src", "sum"]), true).unwrap();
        assert_eq!(a.dropped.len(), 1);
        assert_eq!(a.dropped[0].operator_id, "old");
        let kept = without_dropped(&cp(&["src", "old"]), &a);
        assert_eq!(kept.operators.keys().collect::<Vec<_>>(), vec!["src"]);
        let e = assign(&cp(&[]), &job(&["src"]), true).unwrap_err();
        assert_eq!(e, StateMappingError::Empty);
    }

    #[test]
    fn in_flight_records_go_with_their_vertex_head_operator() {
        let mut c = cp(&["a"]);
        c.operators.insert(
            crate::task::channel_state_id("a"),
            OperatorState {
                parallelism: 2,
                subtasks: [(0, vec![1])].into(),
            },
        );
        let job: BTreeMap<String, String> = [("a".to_string(), "A".to_string())].into();
        let a = assign(&c, &job, false).unwrap();
        assert!(a.dropped.is_empty());
        assert_eq!(a.restored, vec![("a".to_string(), "A".to_string())]);
        // Without its operator it is unmapped like any state.
        let other: BTreeMap<String, String> = [("b".to_string(), "B".to_string())].into();
        let e = assign(&c, &other, false).unwrap_err().to_string();
        assert!(e.contains("a#channel-state"), "{e}");
    }
}
