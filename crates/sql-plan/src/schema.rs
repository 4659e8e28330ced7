//! A plan node's output columns: names, types (with their time attributes) and, for the
//! columns a window produced, which window property they are.

use crate::types::{DataType, LogicalType, TimestampKind};

use super::window::WindowSpec;

/// Which window property a column holds (`window_start`, `window_end`, `window_time`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WindowPropertyKind {
    /// The window's start (inclusive).
    Start,
    /// The window's end (exclusive).
    End,
    /// The window's time attribute: with event time its rowtime (`window_end - 1 ms`); with
    /// processing time a proctime attribute, the time the window fired.
    Time,
    /// A legacy group window's `w$proctime` (`TUMBLE_PROCTIME(…)`): the processing time when the
    /// window fired, as Flink's planner materializes it.
    Proctime,
}

/// A column that carries a window property of an upstream window (a window table function or
/// a window aggregate): how Flink recognises `GROUP BY window_start, window_end` and window
/// joins downstream, through projections and renames.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowProperty {
    /// Start, end or time.
    pub kind: WindowPropertyKind,
    /// The window it belongs to.
    pub window: WindowSpec,
}

/// One output column of a plan node.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// Its name (Flink's derived name when the query gave none: `EXPR$0`, `$f0`).
    pub name: String,
    /// Its type; a time attribute keeps its `TimestampKind`.
    pub ty: DataType,
    /// The window property it holds, if a window produced it.
    pub window: Option<WindowProperty>,
}

impl Field {
    /// A plain column.
    pub fn new(name: impl Into<String>, ty: DataType) -> Field {
        Field {
            name: name.into(),
            ty,
            window: None,
        }
    }

    /// Whether the column is an event-time attribute.
    pub fn is_rowtime(&self) -> bool {
        self.ty.time_attribute() == TimestampKind::Rowtime
    }

    /// Whether the column is a processing-time attribute.
    pub fn is_proctime(&self) -> bool {
        self.ty.time_attribute() == TimestampKind::Proctime
    }
}

/// The type a window's start and end have: `TIMESTAMP(3) NOT NULL`, whatever the time
/// attribute's type (Flink's `window_start`/`window_end`; only `window_time` keeps the time
/// attribute's type).
pub fn window_bound_type(_time: &DataType) -> DataType {
    DataType::new(LogicalType::Timestamp {
        precision: 3,
        kind: TimestampKind::Regular,
    })
    .not_null()
}

/// Makes names unique as Calcite does when two inputs are concatenated (a join): a repeated
/// name gets the first free suffix `0`, `1`, … (`id`, `id0`).
pub fn uniquify(names: &mut [String]) {
    let mut seen: Vec<String> = Vec::new();
    for name in names.iter_mut() {
        if seen.contains(name) {
            let mut i = 0;
            while seen.contains(&format!("{name}{i}")) {
                i += 1;
            }
            *name = format!("{name}{i}");
        }
        seen.push(name.clone());
    }
}
