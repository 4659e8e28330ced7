//! Aggregate calls as the planner needs them: which function, over which input columns, and
//! the result type. A stand-in until `sluice_sql_expr::aggregates` brings the full set of Flink's
//! aggregate functions; only the kind and its result type are read from here.

use crate::types::{DataType, LogicalType};
use crate::typing;

/// The aggregate functions the planner knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AggKind {
    /// `COUNT(x)`: rows where `x` is not NULL.
    Count,
    /// `COUNT(*)`.
    CountStar,
    /// `SUM(x)`.
    Sum,
    /// `MIN(x)`.
    Min,
    /// `MAX(x)`.
    Max,
    /// `AVG(x)`.
    Avg,
}

impl AggKind {
    /// The kind a call names (`count`, `SUM`…), if it is one of these.
    pub fn from_name(name: &str, star: bool) -> Option<AggKind> {
        Some(match name.to_uppercase().as_str() {
            "COUNT" if star => AggKind::CountStar,
            "COUNT" => AggKind::Count,
            "SUM" => AggKind::Sum,
            "MIN" => AggKind::Min,
            "MAX" => AggKind::Max,
            "AVG" => AggKind::Avg,
            _ => return None,
        })
    }

    /// The name Flink prints (`COUNT`, `MAX`…).
    pub fn name(self) -> &'static str {
        match self {
            AggKind::Count | AggKind::CountStar => "COUNT",
            AggKind::Sum => "SUM",
            AggKind::Min => "MIN",
            AggKind::Max => "MAX",
            AggKind::Avg => "AVG",
        }
    }

    /// The accumulator names of the local phase (`count1$`, `max$`, …; AVG has two).
    pub fn accumulators(self) -> &'static [&'static str] {
        match self {
            AggKind::CountStar => &["count1$"],
            AggKind::Count => &["count$"],
            AggKind::Sum => &["sum$"],
            AggKind::Min => &["min$"],
            AggKind::Max => &["max$"],
            AggKind::Avg => &["sum$", "count$"],
        }
    }

    /// The result type over an argument of type `arg` (Flink's rules: COUNT is `BIGINT NOT
    /// NULL`; SUM widens DECIMAL to precision 38; AVG of an integer stays integral).
    pub fn result_type(self, arg: Option<&DataType>) -> DataType {
        match (self, arg) {
            (AggKind::Count | AggKind::CountStar, _) | (_, None) => DataType::bigint().not_null(),
            (AggKind::Sum, Some(t)) => {
                let logical = match typing::decimal_of(&t.logical) {
                    Some((_, s)) if matches!(t.logical, LogicalType::Decimal { .. }) => {
                        LogicalType::Decimal {
                            precision: 38,
                            scale: s as u8,
                        }
                    }
                    _ => t.without_time_attribute().logical,
                };
                DataType::new(logical)
            }
            (AggKind::Avg, Some(t)) => match typing::decimal_of(&t.logical) {
                Some((_, s)) if matches!(t.logical, LogicalType::Decimal { .. }) => {
                    DataType::new(LogicalType::Decimal {
                        precision: 38,
                        scale: (s.max(6)) as u8,
                    })
                }
                _ => DataType::new(t.without_time_attribute().logical),
            },
            (AggKind::Min | AggKind::Max, Some(t)) => {
                t.without_time_attribute().with_nullable(true)
            }
        }
    }
}

/// One aggregate call of an aggregate node.
#[derive(Clone, Debug, PartialEq)]
pub struct AggCall {
    /// The function.
    pub kind: AggKind,
    /// Its argument columns (indexes into the aggregate's input); empty for `COUNT(*)`.
    pub args: Vec<usize>,
    /// The argument names (for printing).
    pub arg_names: Vec<String>,
    /// `DISTINCT`.
    pub distinct: bool,
    /// `FILTER (WHERE …)`: the input column holding the condition, and its name.
    pub filter: Option<(usize, String)>,
    /// The output column's name.
    pub name: String,
    /// The result type.
    pub ty: DataType,
}

impl AggCall {
    /// `COUNT(*)`, `MAX(price)`, `COUNT(DISTINCT bidder) FILTER $f3` as Flink prints the call.
    pub fn call_text(&self) -> String {
        let call = if self.args.is_empty() {
            format!("{}(*)", self.kind.name())
        } else {
            let d = if self.distinct { "DISTINCT " } else { "" };
            format!("{}({d}{})", self.kind.name(), self.arg_names.join(", "))
        };
        match &self.filter {
            Some((_, name)) => format!("{call} FILTER {name}"),
            None => call,
        }
    }
}
