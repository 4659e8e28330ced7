//! A partition as a split: where it is (the next offset to read), where it ends (bounded), and
//! its checkpoint position. A subtask's position is the list of its splits' next offsets (JSON
//! `[{"topic","partition","next"}]`); a restore at any parallelism pools the lists of every old
//! subtask and re-assigns each partition by the owner formula over the new parallelism.

use serde::{Deserialize, Serialize};
use sluice_types::OperatorError;

use super::assign::split_owner;
use super::offsets::PartitionPlan;

/// One partition's place in a checkpoint: the offset of the next record to read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SplitPosition {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The offset of the next record to read.
    pub next: i64,
}

pub(crate) fn encode(positions: &[SplitPosition]) -> Result<Vec<u8>, OperatorError> {
    serde_json::to_vec(positions)
        .map_err(|e| OperatorError::failed(format!("encoding Kafka offsets: {e}")))
}

pub(crate) fn decode(bytes: &[u8]) -> Result<Vec<SplitPosition>, OperatorError> {
    serde_json::from_slice(bytes).map_err(|e| {
        OperatorError::failed(format!("the checkpoint's Kafka offsets do not parse: {e}"))
    })
}

/// The splits subtask `subtask` of `parallelism` reads: every planned partition it owns,
/// starting from the restored position when the checkpoint has one (a partition planned now
/// but absent from the checkpoint starts from its planned start; one in the checkpoint but no
/// longer planned is read too, so no acknowledged input is dropped).
pub(crate) fn my_splits(
    plan: &[PartitionPlan],
    restored: Option<&[SplitPosition]>,
    subtask: usize,
    parallelism: usize,
) -> Vec<PartitionPlan> {
    let mut out: Vec<PartitionPlan> = Vec::new();
    for p in plan {
        if split_owner(&p.topic, p.partition, parallelism) != subtask {
            continue;
        }
        let mut p = p.clone();
        if let Some(r) = restored.and_then(|r| {
            r.iter()
                .find(|r| r.topic == p.topic && r.partition == p.partition)
        }) {
            p.start = r.next;
        }
        out.push(p);
    }
    for r in restored.unwrap_or_default() {
        let planned = plan
            .iter()
            .any(|p| p.topic == r.topic && p.partition == r.partition);
        if !planned && split_owner(&r.topic, r.partition, parallelism) == subtask {
            out.push(PartitionPlan {
                topic: r.topic.clone(),
                partition: r.partition,
                start: r.next,
                end: None,
            });
        }
    }
    out
}

/// A split being read.
pub(crate) struct LiveSplit {
    pub plan: PartitionPlan,
    /// The offset of the next record to read.
    pub next: i64,
    pub finished: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(n: i32) -> Vec<PartitionPlan> {
        (0..n)
            .map(|p| PartitionPlan {
                topic: "t".into(),
                partition: p,
                start: 0,
                end: Some(100),
            })
            .collect()
    }

    #[test]
    fn restore_at_another_parallelism_keeps_every_partition_once_at_its_offset() {
        let plan = plan(5);
        // Taken at parallelism 2: positions pooled from both old subtasks.
        let restored: Vec<SplitPosition> = (0..5)
            .map(|p| SplitPosition {
                topic: "t".into(),
                partition: p,
                next: 10 + p as i64,
            })
            .collect();
        for q in 1..7 {
            let mut seen: Vec<(i32, i64)> = (0..q)
                .flat_map(|s| my_splits(&plan, Some(&restored), s, q))
                .map(|p| (p.partition, p.start))
                .collect();
            seen.sort();
            assert_eq!(seen, (0..5).map(|p| (p, 10 + p as i64)).collect::<Vec<_>>());
        }
        let bytes = encode(&restored).unwrap();
        assert_eq!(decode(&bytes).unwrap(), restored);
        assert!(decode(b"nope")
            .unwrap_err()
            .to_string()
            .contains("do not parse"));
    }
}
