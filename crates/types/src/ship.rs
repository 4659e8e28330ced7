//! Ship strategies: how records cross an edge.

use std::fmt;

/// The partitioner of an edge. `Display` prints Flink's `toString()` (`FORWARD`, `HASH`, ...), the
/// string that appears as `ship_strategy` in plans.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShipStrategy {
    /// One-to-one to the subtask of the same index (chains when parallelisms match).
    Forward,
    /// Round-robin over all downstream subtasks.
    Rebalance,
    /// Round-robin over a local subset of downstream subtasks (pointwise).
    Rescale,
    /// By the key's hash, through key groups.
    Hash,
    /// Every record to every downstream subtask.
    Broadcast,
    /// Everything to the first downstream subtask.
    Global,
    /// Uniformly at random.
    Shuffle,
    /// By a user-defined partitioner.
    Custom,
}

impl ShipStrategy {
    /// FORWARD and RESCALE connect pointwise; all others connect every upstream subtask to every
    /// downstream subtask.
    pub fn is_pointwise(self) -> bool {
        matches!(self, ShipStrategy::Forward | ShipStrategy::Rescale)
    }

    /// Flink's spelling (`FORWARD`, `HASH`, ...), as plans print it.
    pub fn as_str(self) -> &'static str {
        match self {
            ShipStrategy::Forward => "FORWARD",
            ShipStrategy::Rebalance => "REBALANCE",
            ShipStrategy::Rescale => "RESCALE",
            ShipStrategy::Hash => "HASH",
            ShipStrategy::Broadcast => "BROADCAST",
            ShipStrategy::Global => "GLOBAL",
            ShipStrategy::Shuffle => "SHUFFLE",
            ShipStrategy::Custom => "CUSTOM",
        }
    }

    /// Parses Flink's spelling, case-insensitively (for CLI flags and plan files).
    pub fn parse(s: &str) -> Option<ShipStrategy> {
        Some(match s.to_ascii_uppercase().as_str() {
            "FORWARD" => ShipStrategy::Forward,
            "REBALANCE" => ShipStrategy::Rebalance,
            "RESCALE" => ShipStrategy::Rescale,
            "HASH" => ShipStrategy::Hash,
            "BROADCAST" => ShipStrategy::Broadcast,
            "GLOBAL" => ShipStrategy::Global,
            "SHUFFLE" => ShipStrategy::Shuffle,
            "CUSTOM" => ShipStrategy::Custom,
            _ => return None,
        })
    }
}

impl fmt::Display for ShipStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_round_trip_and_only_forward_and_rescale_are_pointwise() {
        use ShipStrategy::*;
        for s in [
            Forward, Rebalance, Rescale, Hash, Broadcast, Global, Shuffle, Custom,
        ] {
            assert_eq!(ShipStrategy::parse(&s.to_string()), Some(s));
            assert_eq!(s.is_pointwise(), matches!(s, Forward | Rescale));
        }
        assert_eq!(ShipStrategy::parse("hash"), Some(Hash));
        assert_eq!(ShipStrategy::parse("keyby"), None);
    }
}
