//! Which engine answers at a URL: Sluice or Apache Flink.

use serde_json::Value;

/// Which engine answers at a URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// Sluice's own REST server.
    Sluice,
    /// An Apache Flink JobManager.
    Flink,
}

/// Sluice names itself in `/config`'s `flink-revision` (`sluice-<version>`); anything else with
/// a `flink-version` is Flink.
pub fn detect_engine(config: &Value) -> Engine {
    match config["flink-revision"].as_str() {
        Some(r) if r.starts_with("sluice") => Engine::Sluice,
        _ => Engine::Flink,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sluice_is_told_from_flink_by_its_revision() {
        let sluice = json!({"flink-version": "2.3.0", "flink-revision": "sluice-0.1.0"});
        let flink = json!({"flink-version": "2.3.0", "flink-revision": "c0f8d1a @ 2026-06-14"});
        assert_eq!(detect_engine(&sluice), Engine::Sluice);
        assert_eq!(detect_engine(&flink), Engine::Flink);
    }
}
