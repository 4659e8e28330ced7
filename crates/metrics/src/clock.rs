//! Wall-clock time as the metrics, checkpoints and profiles record it.

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
