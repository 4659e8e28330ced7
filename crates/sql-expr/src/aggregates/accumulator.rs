//! [`Accumulator`]: one group's running state of one aggregate call, as data.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::numeric::{add_decimal38, divide_half_up, IntWidth};
use super::{AggregateCall, AggregateFunction};
use crate::error::{Result, SqlError};
use crate::types::LogicalType;
use crate::value::{Decimal, SqlStr, Value};

/// Which of the four variance-family functions a [`Accumulator::Variance`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum VarianceKind {
    /// `VAR_POP`.
    VarPop,
    /// `VAR_SAMP`.
    VarSamp,
    /// `STDDEV_POP`.
    StddevPop,
    /// `STDDEV_SAMP`.
    StddevSamp,
}

/// The type a variance is cast to at the end. Flink 2.3 computes the variance family in
/// `DOUBLE` with Welford's online algorithm (its answers on `1, 2, 4` are Welford's to the last
/// bit, not the textbook `SUM(x²) - SUM(x)²/n` rewrite's) and casts the result to the
/// argument's type (`DECIMAL(38, max(s, 6))` for decimals).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum VarianceLane {
    /// An integer type: truncated toward zero, as Java's cast, then narrowed.
    Int(IntWidth),
    /// `FLOAT`.
    Float,
    /// `DOUBLE`.
    Double,
    /// `DECIMAL(38, scale)`, rounded half up.
    Decimal {
        /// The result's scale.
        result_scale: u8,
    },
}

/// One group's running state of one aggregate call. Plain data: keyed state and checkpoints
/// store it as it is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Accumulator {
    /// `COUNT(*)`: rows seen.
    CountRows(i64),
    /// `COUNT(x, …)`: rows whose arguments are all non-NULL.
    CountValues(i64),
    /// `SUM`/`$SUM0` of an integer type, wrapping at its width.
    SumInt {
        /// The sum, NULL before the first non-NULL value.
        sum: Option<i64>,
        /// The argument's (and result's) width.
        width: IntWidth,
        /// `$SUM0`: 0 for an empty group.
        zero_if_empty: bool,
    },
    /// `SUM`/`$SUM0` of `FLOAT`, in single precision.
    SumFloat {
        /// The sum.
        sum: Option<f32>,
        /// `$SUM0`.
        zero_if_empty: bool,
    },
    /// `SUM`/`$SUM0` of `DOUBLE`.
    SumDouble {
        /// The sum.
        sum: Option<f64>,
        /// `$SUM0`.
        zero_if_empty: bool,
    },
    /// `SUM`/`$SUM0` of `DECIMAL(p, s)`, exact in `DECIMAL(38, s)`. An overflow makes the sum
    /// NULL and the next value starts it again, as Flink's `IF(sum IS NULL, x, sum + x)` does.
    SumDecimal {
        /// The unscaled sum.
        sum: Option<i128>,
        /// Its scale `s`.
        scale: u8,
        /// `$SUM0`.
        zero_if_empty: bool,
    },
    /// `AVG` of an integer type: a `BIGINT` sum (wrapping), integer division, narrowed to the
    /// argument's width.
    AvgInt {
        /// The sum, in `BIGINT`.
        sum: i64,
        /// Non-NULL values seen.
        count: i64,
        /// The result's width.
        width: IntWidth,
    },
    /// `AVG` of `FLOAT` or `DOUBLE`: a `DOUBLE` sum.
    AvgFloat {
        /// The sum.
        sum: f64,
        /// Non-NULL values seen.
        count: i64,
        /// The result is `FLOAT`.
        single: bool,
    },
    /// `AVG` of `DECIMAL(p, s)`: a `DECIMAL(38, s)` sum (an overflow makes it NULL for good),
    /// divided half up to `DECIMAL(38, max(s, 6))`.
    AvgDecimal {
        /// The unscaled sum; `None` after an overflow.
        sum: Option<i128>,
        /// Non-NULL values seen.
        count: i64,
        /// The sum's scale.
        scale: u8,
        /// The result's scale.
        result_scale: u8,
    },
    /// `MIN` or `MAX`.
    Extreme {
        /// The extreme so far.
        value: Option<Value>,
        /// `MAX` (else `MIN`).
        max: bool,
    },
    /// `FIRST_VALUE`: the first non-NULL value.
    FirstValue(Option<Value>),
    /// `LAST_VALUE`: the last non-NULL value.
    LastValue(Option<Value>),
    /// `LISTAGG`.
    ListAgg {
        /// The separator of the last row added (Flink keeps it in the accumulator).
        delimiter: String,
        /// The joined text, NULL before the first non-NULL value.
        joined: Option<String>,
    },
    /// `VAR_POP`, `VAR_SAMP`, `STDDEV_POP`, `STDDEV_SAMP`: Welford's running mean and sum of
    /// squared deviations, in `DOUBLE`.
    Variance {
        /// Which one.
        kind: VarianceKind,
        /// The result's type.
        lane: VarianceLane,
        /// Non-NULL values seen.
        count: i64,
        /// Their mean.
        mean: f64,
        /// The sum of their squared deviations from the mean (Welford's `M2`).
        m2: f64,
    },
    /// A `DISTINCT` call: the distinct non-NULL argument tuples, and a fresh accumulator of the
    /// call without `DISTINCT` that the result folds them into.
    Distinct {
        /// The tuples seen.
        seen: BTreeSet<Vec<Value>>,
        /// The accumulator the result starts from (never added to).
        template: Box<Accumulator>,
    },
}

fn mismatch(what: &str, v: &Value) -> SqlError {
    SqlError::eval(format!("aggregate {what} got an unexpected value {v:?}"))
}

fn int_of(v: &Value, what: &str) -> Result<i64> {
    v.as_i64().ok_or_else(|| mismatch(what, v))
}

fn f64_of(v: &Value, what: &str) -> Result<f64> {
    match v {
        Value::Double(x) => Ok(*x),
        Value::Float(x) => Ok(f64::from(*x)),
        Value::Int(i) => Ok(*i as f64),
        Value::Decimal(d) => Ok(d.to_f64()),
        _ => Err(mismatch(what, v)),
    }
}

fn f32_of(v: &Value, what: &str) -> Result<f32> {
    match v {
        Value::Float(x) => Ok(*x),
        other => Ok(f64_of(other, what)? as f32),
    }
}

/// The unscaled value of a decimal at `scale` (values arrive at their column's scale already).
fn unscaled_at(v: &Value, scale: u8, what: &str) -> Result<i128> {
    match v {
        Value::Decimal(d) if d.scale == scale => Ok(d.unscaled),
        Value::Decimal(d) => d
            .rescale(scale)
            .map(|d| d.unscaled)
            .ok_or_else(|| mismatch(what, v)),
        Value::Int(i) => Decimal {
            unscaled: i128::from(*i),
            scale: 0,
        }
        .rescale(scale)
        .map(|d| d.unscaled)
        .ok_or_else(|| mismatch(what, v)),
        _ => Err(mismatch(what, v)),
    }
}

/// SQL's `>` for MIN/MAX: Flink compares with the type's comparison, under which NaN is neither
/// greater nor smaller than anything (so the first of NaN and a number stays).
fn greater(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Double(x), Value::Double(y)) => x > y,
        (Value::Float(x), Value::Float(y)) => x > y,
        _ => a > b,
    }
}

impl Accumulator {
    /// A fresh accumulator for one group of `call`.
    pub fn new(call: &AggregateCall) -> Accumulator {
        let plain = Accumulator::plain(call);
        if call.distinct {
            Accumulator::Distinct {
                seen: BTreeSet::new(),
                template: Box::new(plain),
            }
        } else {
            plain
        }
    }

    fn plain(call: &AggregateCall) -> Accumulator {
        use AggregateFunction as F;
        let arg = call.arg_types.first().map(|t| &t.logical);
        let width = arg.and_then(IntWidth::of);
        let variance = |kind| Accumulator::Variance {
            kind,
            lane: match (width, &call.result_type.logical) {
                (Some(w), _) => VarianceLane::Int(w),
                (None, LogicalType::Float) => VarianceLane::Float,
                (None, LogicalType::Decimal { scale, .. }) => VarianceLane::Decimal {
                    result_scale: *scale,
                },
                _ => VarianceLane::Double,
            },
            count: 0,
            mean: 0.0,
            m2: 0.0,
        };
        match call.function {
            F::CountStar => Accumulator::CountRows(0),
            F::Count => Accumulator::CountValues(0),
            F::Sum | F::Sum0 => {
                let zero_if_empty = call.function == F::Sum0;
                match (width, arg) {
                    (Some(width), _) => Accumulator::SumInt {
                        sum: None,
                        width,
                        zero_if_empty,
                    },
                    (None, Some(LogicalType::Float)) => Accumulator::SumFloat {
                        sum: None,
                        zero_if_empty,
                    },
                    (None, Some(LogicalType::Decimal { scale, .. })) => Accumulator::SumDecimal {
                        sum: None,
                        scale: *scale,
                        zero_if_empty,
                    },
                    _ => Accumulator::SumDouble {
                        sum: None,
                        zero_if_empty,
                    },
                }
            }
            F::Avg => match (width, arg, &call.result_type.logical) {
                (Some(width), _, _) => Accumulator::AvgInt {
                    sum: 0,
                    count: 0,
                    width,
                },
                (
                    None,
                    Some(LogicalType::Decimal { scale, .. }),
                    LogicalType::Decimal {
                        scale: result_scale,
                        ..
                    },
                ) => Accumulator::AvgDecimal {
                    sum: Some(0),
                    count: 0,
                    scale: *scale,
                    result_scale: *result_scale,
                },
                (None, arg, _) => Accumulator::AvgFloat {
                    sum: 0.0,
                    count: 0,
                    single: matches!(arg, Some(LogicalType::Float)),
                },
            },
            F::Min | F::Max => Accumulator::Extreme {
                value: None,
                max: call.function == F::Max,
            },
            F::FirstValue => Accumulator::FirstValue(None),
            F::LastValue => Accumulator::LastValue(None),
            F::ListAgg => Accumulator::ListAgg {
                delimiter: ",".to_string(),
                joined: None,
            },
            F::VarPop => variance(VarianceKind::VarPop),
            F::VarSamp => variance(VarianceKind::VarSamp),
            F::StddevPop => variance(VarianceKind::StddevPop),
            F::StddevSamp => variance(VarianceKind::StddevSamp),
        }
    }

    /// Adds one row: its argument values in the call's order (none for `COUNT(*)`; the value
    /// and the separator for `LISTAGG(x, sep)`). NULL values are skipped, as in Flink. An error
    /// means the values do not have the call's types (a planning bug, never data).
    pub fn add(&mut self, args: &[Value]) -> Result<()> {
        if let Accumulator::CountRows(n) = self {
            *n += 1;
            return Ok(());
        }
        let first = args.first().unwrap_or(&Value::Null);
        match self {
            Accumulator::CountRows(_) => {}
            Accumulator::CountValues(n) => {
                if !args.iter().any(Value::is_null) {
                    *n += 1;
                }
            }
            Accumulator::Distinct { seen, .. } => {
                if !args.iter().any(Value::is_null) {
                    seen.insert(args.to_vec());
                }
            }
            _ if first.is_null() => {}
            Accumulator::SumInt { sum, width, .. } => {
                let x = int_of(first, "SUM")?;
                *sum = Some(sum.map_or(width.wrap(x), |s| width.add(s, x)));
            }
            Accumulator::SumFloat { sum, .. } => {
                let x = f32_of(first, "SUM")?;
                *sum = Some(sum.map_or(x, |s| s + x));
            }
            Accumulator::SumDouble { sum, .. } => {
                let x = f64_of(first, "SUM")?;
                *sum = Some(sum.map_or(x, |s| s + x));
            }
            Accumulator::SumDecimal { sum, scale, .. } => {
                let x = unscaled_at(first, *scale, "SUM")?;
                *sum = match *sum {
                    None => Some(x),
                    Some(s) => add_decimal38(s, x),
                };
            }
            Accumulator::AvgInt { sum, count, .. } => {
                *sum = sum.wrapping_add(int_of(first, "AVG")?);
                *count += 1;
            }
            Accumulator::AvgFloat { sum, count, single } => {
                *sum += if *single {
                    f64::from(f32_of(first, "AVG")?)
                } else {
                    f64_of(first, "AVG")?
                };
                *count += 1;
            }
            Accumulator::AvgDecimal {
                sum, count, scale, ..
            } => {
                let x = unscaled_at(first, *scale, "AVG")?;
                *sum = sum.and_then(|s| add_decimal38(s, x));
                *count += 1;
            }
            Accumulator::Extreme { value, max } => {
                let replace = match value {
                    None => true,
                    Some(v) if *max => greater(first, v),
                    Some(v) => greater(v, first),
                };
                if replace {
                    *value = Some(first.clone());
                }
            }
            Accumulator::FirstValue(value) => {
                if value.is_none() {
                    *value = Some(first.clone());
                }
            }
            Accumulator::LastValue(value) => *value = Some(first.clone()),
            Accumulator::ListAgg { delimiter, joined } => {
                let text = first.as_str().ok_or_else(|| mismatch("LISTAGG", first))?;
                if let Some(sep) = args.get(1) {
                    if let Some(sep) = sep.as_str() {
                        delimiter.clear();
                        delimiter.push_str(sep);
                    }
                }
                match joined {
                    None => *joined = Some(text.to_string()),
                    Some(j) => {
                        j.push_str(delimiter);
                        j.push_str(text);
                    }
                }
            }
            Accumulator::Variance {
                count, mean, m2, ..
            } => {
                let x = f64_of(first, "variance")?;
                *count += 1;
                let delta = x - *mean;
                *mean += delta / *count as f64;
                *m2 += delta * (x - *mean);
            }
        }
        Ok(())
    }

    /// Takes one row out again (a retraction of an updating input: `-U` or `-D`), for `COUNT`,
    /// `SUM`, `$SUM0` and `AVG` (Flink's `…WithRetract` functions). A `SUM` that drops to no
    /// values keeps its running total; the caller counts the group's non-NULL values and gives
    /// NULL at zero, as Flink's retracting `SUM` does. `MIN`/`MAX` retract through a multiset
    /// the caller keeps; any other function cannot retract (an error: the planner refuses it).
    pub fn retract(&mut self, args: &[Value]) -> Result<()> {
        let first = args.first().unwrap_or(&Value::Null);
        match self {
            Accumulator::CountRows(n) => *n -= 1,
            Accumulator::CountValues(n) => {
                if !args.iter().any(Value::is_null) {
                    *n -= 1;
                }
            }
            _ if first.is_null() => {}
            Accumulator::SumInt { sum, width, .. } => {
                let x = int_of(first, "SUM")?;
                *sum = Some(width.add(sum.unwrap_or(0), width.wrap(x.wrapping_neg())));
            }
            Accumulator::SumFloat { sum, .. } => {
                *sum = Some(sum.unwrap_or(0.0) - f32_of(first, "SUM")?);
            }
            Accumulator::SumDouble { sum, .. } => {
                *sum = Some(sum.unwrap_or(0.0) - f64_of(first, "SUM")?);
            }
            Accumulator::SumDecimal { sum, scale, .. } => {
                let x = unscaled_at(first, *scale, "SUM")?;
                *sum = add_decimal38(sum.unwrap_or(0), -x);
            }
            Accumulator::AvgInt { sum, count, .. } => {
                *sum = sum.wrapping_sub(int_of(first, "AVG")?);
                *count -= 1;
            }
            Accumulator::AvgFloat { sum, count, single } => {
                *sum -= if *single {
                    f64::from(f32_of(first, "AVG")?)
                } else {
                    f64_of(first, "AVG")?
                };
                *count -= 1;
            }
            Accumulator::AvgDecimal {
                sum, count, scale, ..
            } => {
                let x = unscaled_at(first, *scale, "AVG")?;
                *sum = sum.and_then(|s| add_decimal38(s, -x));
                *count -= 1;
            }
            _ => {
                return Err(SqlError::eval(
                    "internal error: this aggregate function cannot retract a row",
                ))
            }
        }
        Ok(())
    }

    /// Merges another accumulator of the same call into this one (the global phase of a
    /// two-phase aggregation: `other` holds rows that arrived after this one's). An error means
    /// the two are of different calls, or of a call that is not mergeable.
    pub fn merge(&mut self, other: &Accumulator) -> Result<()> {
        use Accumulator as A;
        match (self, other) {
            (A::CountRows(a), A::CountRows(b)) | (A::CountValues(a), A::CountValues(b)) => {
                *a += b;
            }
            (A::SumInt { sum, width, .. }, A::SumInt { sum: o, .. }) => {
                *sum = match (*sum, *o) {
                    (Some(a), Some(b)) => Some(width.add(a, b)),
                    (a, b) => a.or(b),
                };
            }
            (A::SumFloat { sum, .. }, A::SumFloat { sum: o, .. }) => {
                *sum = match (*sum, *o) {
                    (Some(a), Some(b)) => Some(a + b),
                    (a, b) => a.or(b),
                };
            }
            (A::SumDouble { sum, .. }, A::SumDouble { sum: o, .. }) => {
                *sum = match (*sum, *o) {
                    (Some(a), Some(b)) => Some(a + b),
                    (a, b) => a.or(b),
                };
            }
            (A::SumDecimal { sum, .. }, A::SumDecimal { sum: o, .. }) => {
                *sum = match (*sum, *o) {
                    (Some(a), Some(b)) => add_decimal38(a, b),
                    (a, b) => a.or(b),
                };
            }
            (
                A::AvgInt { sum, count, .. },
                A::AvgInt {
                    sum: s, count: c, ..
                },
            ) => {
                *sum = sum.wrapping_add(*s);
                *count += c;
            }
            (
                A::AvgFloat { sum, count, .. },
                A::AvgFloat {
                    sum: s, count: c, ..
                },
            ) => {
                *sum += s;
                *count += c;
            }
            (
                A::AvgDecimal { sum, count, .. },
                A::AvgDecimal {
                    sum: s, count: c, ..
                },
            ) => {
                *sum = match (*sum, *s) {
                    (Some(a), Some(b)) => add_decimal38(a, b),
                    _ => None,
                };
                *count += c;
            }
            (A::Extreme { value, max }, A::Extreme { value: Some(o), .. }) => {
                let replace = match value {
                    None => true,
                    Some(v) if *max => greater(o, v),
                    Some(v) => greater(v, o),
                };
                if replace {
                    *value = Some(o.clone());
                }
            }
            (A::Extreme { .. }, A::Extreme { value: None, .. }) => {}
            (
                A::ListAgg { delimiter, joined },
                A::ListAgg {
                    delimiter: d,
                    joined: j,
                },
            ) => {
                // Flink's merge joins with the other side's separator and keeps it.
                if let Some(j) = j {
                    match joined {
                        None => *joined = Some(j.clone()),
                        Some(mine) => {
                            mine.push_str(d);
                            mine.push_str(j);
                        }
                    }
                }
                delimiter.clone_from(d);
            }
            (
                A::Variance {
                    count, mean, m2, ..
                },
                A::Variance {
                    count: c,
                    mean: m,
                    m2: q,
                    ..
                },
            ) => {
                // Chan et al.'s combination of two Welford states.
                if *c > 0 {
                    let n = *count + c;
                    let delta = m - *mean;
                    *mean += delta * *c as f64 / n as f64;
                    *m2 += q + delta * delta * (*count as f64) * (*c as f64) / n as f64;
                    *count = n;
                }
            }
            (A::Distinct { seen, .. }, A::Distinct { seen: o, .. }) => {
                seen.extend(o.iter().cloned());
            }
            (me, other) => {
                return Err(SqlError::eval(format!(
                    "cannot merge aggregate accumulators {me:?} and {other:?}"
                )))
            }
        }
        Ok(())
    }

    /// The aggregate's value for the rows added so far.
    pub fn result(&self) -> Value {
        match self {
            Accumulator::CountRows(n) | Accumulator::CountValues(n) => Value::Int(*n),
            Accumulator::SumInt {
                sum, zero_if_empty, ..
            } => match sum {
                Some(s) => Value::Int(*s),
                None if *zero_if_empty => Value::Int(0),
                None => Value::Null,
            },
            Accumulator::SumFloat { sum, zero_if_empty } => match sum {
                Some(s) => Value::Float(*s),
                None if *zero_if_empty => Value::Float(0.0),
                None => Value::Null,
            },
            Accumulator::SumDouble { sum, zero_if_empty } => match sum {
                Some(s) => Value::Double(*s),
                None if *zero_if_empty => Value::Double(0.0),
                None => Value::Null,
            },
            Accumulator::SumDecimal {
                sum,
                scale,
                zero_if_empty,
            } => match sum {
                Some(s) => Value::Decimal(Decimal {
                    unscaled: *s,
                    scale: *scale,
                }),
                None if *zero_if_empty => Value::Decimal(Decimal {
                    unscaled: 0,
                    scale: *scale,
                }),
                None => Value::Null,
            },
            Accumulator::AvgInt { sum, count, width } => {
                if *count == 0 {
                    Value::Null
                } else {
                    Value::Int(width.wrap(sum.wrapping_div(*count)))
                }
            }
            Accumulator::AvgFloat { sum, count, single } => match (*count, *single) {
                (0, _) => Value::Null,
                (n, true) => Value::Float((sum / n as f64) as f32),
                (n, false) => Value::Double(sum / n as f64),
            },
            Accumulator::AvgDecimal {
                sum,
                count,
                scale,
                result_scale,
            } => match sum {
                Some(s) if *count > 0 => divide_half_up(*s, *scale, *count, *result_scale)
                    .map(|unscaled| {
                        Value::Decimal(Decimal {
                            unscaled,
                            scale: *result_scale,
                        })
                    })
                    .unwrap_or(Value::Null),
                _ => Value::Null,
            },
            Accumulator::Extreme { value, .. }
            | Accumulator::FirstValue(value)
            | Accumulator::LastValue(value) => value.clone().unwrap_or(Value::Null),
            Accumulator::ListAgg { joined, .. } => joined
                .as_deref()
                .map(|j| Value::Str(SqlStr::from(j)))
                .unwrap_or(Value::Null),
            Accumulator::Variance {
                kind,
                lane,
                count,
                m2,
                ..
            } => variance_result(*kind, *lane, *count, *m2),
            Accumulator::Distinct { seen, template } => {
                if let Accumulator::CountValues(_) = **template {
                    return Value::Int(i64::try_from(seen.len()).unwrap_or(i64::MAX));
                }
                let mut acc = (**template).clone();
                for args in seen {
                    // The tuples were checked by the non-DISTINCT path's types at planning;
                    // a value of the wrong type cannot have been inserted by a typed plan.
                    if acc.add(args).is_err() {
                        return Value::Null;
                    }
                }
                acc.result()
            }
        }
    }
}

/// `M2 / n` (population) or `M2 / (n - 1)` (sample; NULL for one value), under a square root
/// for the deviations, cast to the result's type.
fn variance_result(kind: VarianceKind, lane: VarianceLane, count: i64, m2: f64) -> Value {
    let sample = matches!(kind, VarianceKind::VarSamp | VarianceKind::StddevSamp);
    let root = matches!(kind, VarianceKind::StddevPop | VarianceKind::StddevSamp);
    let denominator = if sample { count - 1 } else { count };
    if count == 0 || denominator == 0 {
        return Value::Null;
    }
    let var = m2 / denominator as f64;
    let x = if root { var.sqrt() } else { var };
    match lane {
        // Java's casts from double: `(long)` for BIGINT; `(int)` then narrowing for the others.
        // Both truncate toward zero, saturate and send NaN to 0, as Rust's `as` does; the
        // narrowing to TINYINT/SMALLINT wraps (Flink: VAR_POP of TINYINT 10, 100 is -23).
        VarianceLane::Int(IntWidth::I64) => Value::Int(x as i64),
        VarianceLane::Int(w) => Value::Int(w.wrap(i64::from(x as i32))),
        VarianceLane::Float => Value::Float(x as f32),
        VarianceLane::Double => Value::Double(x),
        VarianceLane::Decimal { result_scale } => {
            // Through the shortest text form, as Java's BigDecimal.valueOf(double) does.
            if !x.is_finite() {
                return Value::Null;
            }
            crate::cast::parse_decimal(&format!("{x:e}"))
                .and_then(|d| d.rescale(result_scale))
                .filter(|d| super::numeric::fits_decimal38(d.unscaled))
                .map(Value::Decimal)
                .unwrap_or(Value::Null)
        }
    }
}
