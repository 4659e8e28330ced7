//! A source subtask's dead-letter count, checkpointed beside its position so a replay after a
//! restore does not count a malformed record twice.
//!
//! At a barrier the source's position bytes are framed as `MAGIC ‖ count (u64 LE) ‖ position`,
//! where `count` is the dead letters this subtask has sent up to that barrier (the records
//! before the barrier are exactly those the restored position will not re-read). On restore
//! the frames are split again: the source sees only its own bytes, and the operator's counts
//! are summed into the job's dead-letter count once (by the new subtask 0, whatever the new
//! parallelism), so the job's figure after a restore is the checkpoint's figure plus the dead
//! letters of the records read since. A position without the frame (a checkpoint written
//! before this framing) restores with a count of 0.

use sluice_types::OperatorError;

/// Marks a framed position (not a valid prefix of any source's own encoding is assumed: the
/// count is only read when the full header is present).
const MAGIC: &[u8; 4] = b"SDL1";
const HEADER: usize = MAGIC.len() + 8;

/// `position` framed with the subtask's dead-letter count.
pub fn frame(dead_letters: u64, position: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + position.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&dead_letters.to_le_bytes());
    out.extend_from_slice(&position);
    out
}

/// `(old subtask, position bytes)` of every subtask of the run that took a checkpoint.
pub type Positions = Vec<(usize, Vec<u8>)>;

/// The positions without their frames, and the sum of the dead-letter counts they carried.
pub fn unframe(parts: &[(usize, Vec<u8>)]) -> Result<(Positions, u64), OperatorError> {
    let mut total = 0u64;
    let mut positions = Vec::with_capacity(parts.len());
    for (subtask, bytes) in parts {
        match bytes.strip_prefix(MAGIC.as_slice()) {
            Some(rest) => {
                let (count, position) = rest.split_at_checked(8).ok_or_else(|| {
                    OperatorError::failed(format!(
                        "source position of old subtask {subtask}: the dead-letter count is \
                         truncated ({} bytes)",
                        bytes.len()
                    ))
                })?;
                let mut n = [0u8; 8];
                n.copy_from_slice(count);
                total = total.saturating_add(u64::from_le_bytes(n));
                positions.push((*subtask, position.to_vec()));
            }
            None => positions.push((*subtask, bytes.clone())),
        }
    }
    Ok((positions, total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_counts_sum() {
        let parts = vec![(0, frame(3, b"abc".to_vec())), (1, frame(4, Vec::new()))];
        let (positions, total) = unframe(&parts).unwrap();
        assert_eq!(positions, vec![(0, b"abc".to_vec()), (1, Vec::new())]);
        assert_eq!(total, 7);
    }

    #[test]
    fn unframed_positions_restore_with_no_count_and_truncated_ones_are_errors() {
        let (positions, total) = unframe(&[(0, b"legacy".to_vec())]).unwrap();
        assert_eq!((positions, total), (vec![(0, b"legacy".to_vec())], 0));
        assert!(unframe(&[(2, b"SDL1\x01".to_vec())])
            .unwrap_err()
            .to_string()
            .contains("old subtask 2"));
    }
}
