//! Restore points: mapping a checkpoint's state onto the job's operators by stable id.

use std::collections::BTreeMap;
use std::path::Path;

use super::EnvConfig;
use crate::checkpoint::{mapping, CompletedCheckpoint};
use crate::JobError;

/// Maps the checkpoint's state onto the job's operators (`operators`: stable id → name),
/// refusing unmapped state unless the user allowed dropping it, and returns the checkpoint with
/// only the state the job takes. `attempt` 0 is the restore the user asked for: what is dropped
/// or starts empty is said then (restarts restore the job's own state).
pub(super) fn assign_state(
    cp: &CompletedCheckpoint,
    path: &Path,
    operators: &BTreeMap<String, String>,
    cfg: &EnvConfig,
    attempt: usize,
) -> Result<CompletedCheckpoint, JobError> {
    let a = mapping::assign(cp, operators, cfg.allow_non_restored_state)
        .map_err(|e| JobError::job(format!("cannot restore from {}: {e}", path.display())))?;
    if attempt == 0 {
        for d in &a.dropped {
            eprintln!(
                "restore from {}: dropping the state of operator {d}, which this job does not have (--allow-non-restored-state)",
                path.display()
            );
        }
        if !a.started_empty.is_empty() && !a.restored.is_empty() {
            let names: Vec<String> = a
                .started_empty
                .iter()
                .map(|(id, name)| format!("{name} [{id}]"))
                .collect();
            eprintln!(
                "restore from {}: {} operator(s) have no state there and start empty: {}",
                path.display(),
                names.len(),
                names.join(", ")
            );
        }
    }
    Ok(mapping::without_dropped(cp, &a))
}
