//! [`resolve_aggregate`]: an aggregate call by name and argument types → an [`AggregateCall`]
//! with the result type Flink 2.3 infers, or Flink's refusal.

use super::{AggregateCall, AggregateFunction};
use crate::bind_expr::nearest_names;
use crate::error::{Position, Result, SqlError};
use crate::types::{DataType, LogicalType, MAX_DECIMAL_PRECISION};

/// The smallest scale `AVG` and the variance family give a decimal (Flink's
/// `MINIMUM_ADJUSTED_SCALE`).
const MIN_AVG_SCALE: u8 = 6;

/// Resolves the aggregate `name(args)` (`name` case-insensitive; `COUNT` with no argument is
/// `COUNT(*)`). `grouped`: the aggregation has a `GROUP BY` (window aggregations do: they group
/// by `window_start, window_end`); without one an empty input still gives a row, so most
/// results are nullable whatever the argument.
///
/// The result types are Flink 2.3's: `COUNT` → `BIGINT NOT NULL`; `SUM`, `AVG`, `MIN`, `MAX`,
/// `FIRST_VALUE`, `LAST_VALUE` keep the argument's type, except `SUM(DECIMAL(p, s))` →
/// `DECIMAL(38, s)` and `AVG`/`STDDEV_*`/`VAR_*` of `DECIMAL(p, s)` → `DECIMAL(38, max(s, 6))`;
/// these are nullable if the argument is or if there is no `GROUP BY`. `LISTAGG` keeps its
/// argument's type and nullability (so `LISTAGG` of a `NOT NULL` string is `NOT NULL` even
/// without `GROUP BY`: Flink's batch answer for an empty input is then `''`; a streaming
/// aggregation emits no row for an empty input, and [`Accumulator::result`](super::Accumulator)
/// of an empty `LISTAGG` is NULL).
///
/// Errors: an unknown name is [`SqlError::UnknownName`] with the nearest aggregate names; a
/// wrong number or type of arguments is [`SqlError::Validation`] worded as Flink words it.
pub fn resolve_aggregate(
    name: &str,
    args: &[DataType],
    distinct: bool,
    grouped: bool,
    pos: Option<Position>,
) -> Result<AggregateCall> {
    let upper = name.to_uppercase();
    let Some(&(_, function)) = AggregateFunction::NAMED.iter().find(|(n, _)| *n == upper) else {
        return Err(SqlError::UnknownName {
            pos,
            kind: "Aggregate function",
            name: name.to_string(),
            nearest_names: nearest_names(&upper, AggregateFunction::NAMED.iter().map(|(n, _)| *n)),
        });
    };
    let function = if function == AggregateFunction::Count && args.is_empty() {
        AggregateFunction::CountStar
    } else {
        function
    };
    let result_type = result_type(function, &upper, args, grouped, pos)?;
    Ok(AggregateCall {
        function,
        distinct,
        arg_types: args.to_vec(),
        result_type,
    })
}

/// Flink's `Invalid number of arguments to function 'MAX'. Was expecting 1 arguments`.
fn arity(name: &str, expected: &str, pos: Option<Position>) -> SqlError {
    SqlError::validation(
        pos,
        format!(
            "Invalid number of arguments to function '{name}'. Was expecting {expected} arguments"
        ),
    )
}

/// Flink's `Cannot apply 'SUM' to arguments of type 'SUM(<CHAR(1)>)'. Supported form(s): …`.
fn cannot_apply(name: &str, args: &[DataType], forms: &str, pos: Option<Position>) -> SqlError {
    let types: Vec<String> = args.iter().map(|t| format!("<{}>", t.logical)).collect();
    SqlError::validation(
        pos,
        format!(
            "Cannot apply '{name}' to arguments of type '{name}({})'. Supported form(s): {forms}",
            types.join(", ")
        ),
    )
}

fn is_numeric(t: &DataType) -> bool {
    t.is_numeric()
}

/// Types MIN and MAX can order (Calcite's `COMPARABLE_ORDERED`).
fn is_ordered(t: &DataType) -> bool {
    !matches!(
        t.logical,
        LogicalType::Row(_) | LogicalType::Array(_) | LogicalType::Map(..) | LogicalType::Null
    )
}

fn decimal(precision: u8, scale: u8) -> LogicalType {
    LogicalType::Decimal { precision, scale }
}

fn result_type(
    function: AggregateFunction,
    name: &str,
    args: &[DataType],
    grouped: bool,
    pos: Option<Position>,
) -> Result<DataType> {
    use AggregateFunction as F;
    let one_arg = |check: fn(&DataType) -> bool, form: &str| -> Result<&DataType> {
        match args {
            [arg] if check(arg) => Ok(arg),
            [_] => Err(cannot_apply(
                name,
                args,
                &format!("'{name}(<{form}>)'"),
                pos,
            )),
            _ => Err(arity(name, "1", pos)),
        }
    };
    // Nullable if the argument is, or if an empty input still gives a row.
    let nullable = |arg: &DataType| arg.nullable || !grouped;
    let keep = |arg: &DataType, logical: LogicalType| DataType {
        logical,
        nullable: nullable(arg),
    };
    Ok(match function {
        F::CountStar | F::Count => DataType::bigint().not_null(),
        F::Sum | F::Sum0 => {
            let arg = one_arg(is_numeric, "NUMERIC")?;
            let logical = match arg.logical {
                LogicalType::Decimal { scale, .. } => decimal(MAX_DECIMAL_PRECISION, scale),
                ref other => other.clone(),
            };
            if function == F::Sum0 {
                DataType::new(logical).not_null()
            } else {
                keep(arg, logical)
            }
        }
        F::Avg | F::StddevPop | F::StddevSamp | F::VarPop | F::VarSamp => {
            let arg = one_arg(is_numeric, "NUMERIC")?;
            let logical = match arg.logical {
                LogicalType::Decimal { scale, .. } => {
                    decimal(MAX_DECIMAL_PRECISION, scale.max(MIN_AVG_SCALE))
                }
                ref other => other.clone(),
            };
            keep(arg, logical)
        }
        F::Min | F::Max => {
            let arg = one_arg(is_ordered, "COMPARABLE_TYPE")?;
            keep(arg, arg.without_time_attribute().logical)
        }
        F::FirstValue | F::LastValue => {
            let arg = one_arg(|_| true, "ANY")?;
            keep(arg, arg.without_time_attribute().logical)
        }
        F::ListAgg => {
            let forms = "'LISTAGG(<CHARACTER>)' 'LISTAGG(<CHARACTER>, <CHARACTER_LITERAL>)'";
            match args {
                [arg] | [arg, _] if args.iter().all(DataType::is_string) => arg.clone(),
                [_] | [_, _] => return Err(cannot_apply(name, args, forms, pos)),
                _ => return Err(arity(name, "1 or 2", pos)),
            }
        }
    })
}
