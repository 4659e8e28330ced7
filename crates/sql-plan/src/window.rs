//! Windows: the window table functions (`TUMBLE`, `HOP`, `CUMULATE`, `SESSION`) and the legacy
//! group windows, with sizes in milliseconds, printed as Flink prints them.

use std::fmt;

/// The shape of a window.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum WindowKind {
    /// `TUMBLE(…, size)`.
    Tumble {
        /// The window's length.
        size_ms: i64,
    },
    /// `HOP(…, slide, size)`.
    Hop {
        /// How far apart window starts are.
        slide_ms: i64,
        /// The window's length.
        size_ms: i64,
    },
    /// `CUMULATE(…, step, size)`.
    Cumulate {
        /// How much each window grows by.
        step_ms: i64,
        /// The largest window's length.
        size_ms: i64,
    },
    /// `SESSION(… [PARTITION BY keys], gap)`.
    Session {
        /// The inactivity gap closing a session.
        gap_ms: i64,
        /// `PARTITION BY` columns (indexes into the window function's input), for the TVF form.
        partition_keys: Vec<usize>,
    },
}

/// Where a window's time comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum WindowTime {
    /// A time attribute column of the input: the window is assigned per row.
    TimeColumn {
        /// The column's index in the input.
        index: usize,
        /// Its name (for printing).
        name: String,
        /// Whether it is processing time (else event time).
        proctime: bool,
    },
    /// The input already carries the window (`window_start`/`window_end` of an upstream window):
    /// Flink's "windowed input" (`win_start=[…], win_end=[…]`).
    Bounds {
        /// The input column holding the start.
        start: (usize, String),
        /// The input column holding the end.
        end: (usize, String),
    },
}

/// A window: its shape and its time.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WindowSpec {
    /// Tumble, hop, cumulate or session.
    pub kind: WindowKind,
    /// The time attribute or the upstream window bounds.
    pub time: WindowTime,
}

impl WindowSpec {
    /// The function's name: `TUMBLE`, `HOP`, `CUMULATE`, `SESSION`.
    pub fn function_name(&self) -> &'static str {
        match self.kind {
            WindowKind::Tumble { .. } => "TUMBLE",
            WindowKind::Hop { .. } => "HOP",
            WindowKind::Cumulate { .. } => "CUMULATE",
            WindowKind::Session { .. } => "SESSION",
        }
    }

    /// Whether the window is over processing time.
    pub fn is_proctime(&self) -> bool {
        matches!(self.time, WindowTime::TimeColumn { proctime: true, .. })
    }

    /// Flink's `WindowSpec` text with the given time part (`time_col=[dateTime]`,
    /// `slice_end=[$slice_end]`, `win_start=[…], win_end=[…]`).
    pub fn describe(&self, time: &str) -> String {
        let sizes = match &self.kind {
            WindowKind::Tumble { size_ms } => format!("size=[{}]", duration(*size_ms)),
            WindowKind::Hop { slide_ms, size_ms } => {
                format!(
                    "size=[{}], slide=[{}]",
                    duration(*size_ms),
                    duration(*slide_ms)
                )
            }
            WindowKind::Cumulate { step_ms, size_ms } => {
                format!(
                    "max_size=[{}], step=[{}]",
                    duration(*size_ms),
                    duration(*step_ms)
                )
            }
            WindowKind::Session { gap_ms, .. } => format!("gap=[{}]", duration(*gap_ms)),
        };
        format!("{}({time}, {sizes})", self.function_name())
    }

    /// The time part as written for a one-phase or local aggregate.
    pub fn time_text(&self) -> String {
        match &self.time {
            WindowTime::TimeColumn { name, .. } => format!("time_col=[{name}]"),
            WindowTime::Bounds { start, end } => {
                format!("win_start=[{}], win_end=[{}]", start.1, end.1)
            }
        }
    }
}

impl fmt::Display for WindowSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe(&self.time_text()))
    }
}

/// A duration as Flink's `TimeUtils.formatWithHighestUnit` writes it: `10 s`, `2 min`, `500 ms`.
pub fn duration(ms: i64) -> String {
    const UNITS: [(i64, &str); 5] = [
        (86_400_000, "d"),
        (3_600_000, "h"),
        (60_000, "min"),
        (1_000, "s"),
        (1, "ms"),
    ];
    for (unit, name) in UNITS {
        if ms != 0 && ms % unit == 0 {
            return format!("{} {name}", ms / unit);
        }
    }
    format!("{ms} ms")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_use_the_highest_unit() {
        assert_eq!(duration(10_000), "10 s");
        assert_eq!(duration(120_000), "2 min");
        assert_eq!(duration(1_500), "1500 ms");
    }
}
