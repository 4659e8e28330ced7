//! A subtask's hot keys as plain data: what the keyed operators' sketches (in
//! `sluice-operators`' `hotkeys`) publish into [`TaskMetrics::hot_keys`](crate::TaskMetrics::hot_keys),
//! and what crosses between processes in a report.

/// One key of a subtask's snapshot.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HotKeyShare {
    /// The key as rendered by the operator's key-to-string function.
    pub key: String,
    /// Estimated records of this key: `share_of_subtask × subtask_records`, rounded.
    pub count: u64,
    /// The sketch's overestimation bound, in the same (estimated records) unit.
    pub error: u64,
    /// Sampled count / sample size, in [0, 1].
    pub share_of_subtask: f64,
}

/// A subtask's hot keys at one moment.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HotKeysSnapshot {
    /// Records the keyed operator processed (exact).
    pub subtask_records: u64,
    /// The sketch's total: records offered to it (the sample size `S`), a record sampled after
    /// the hook thinned its sampling counting a thinning factor (`THIN_FACTOR` of the operators' hot-key hook).
    pub sampled_records: u64,
    /// Highest count first.
    pub keys: Vec<HotKeyShare>,
}
