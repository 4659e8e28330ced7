//! Math built-ins: `ABS`, `CEIL`/`CEILING`, `FLOOR`, `ROUND`, `TRUNCATE`, `POWER`, `SQRT`, `LN`,
//! `LOG10`, `LOG2`, `LOG`, `EXP`, `SIGN`, `PI`, `RAND`. (`MOD` is bound as the `MOD` operator.)

use super::{any_nullable, int_arg, is_integer, is_numeric, FunctionRegistry, ScalarFunction};
use crate::cast::{pow10, to_f64};
use crate::error::{Result, SqlError};
use crate::types::{DataType, LogicalType};
use crate::typing::round_decimal_type;
use crate::value::{Decimal, Value};

fn double_of(v: &Value) -> Result<f64> {
    to_f64(v).ok_or_else(|| SqlError::eval("a numeric argument was expected"))
}

fn unary_double(r: &mut FunctionRegistry, name: &str, f: fn(f64) -> f64) {
    r.register(
        name,
        ScalarFunction::new(
            name,
            &format!("{name}(<NUMERIC>)"),
            |t, _| {
                (t.len() == 1 && is_numeric(&t[0]))
                    .then(|| DataType::double().with_nullable(t[0].nullable))
            },
            move |a, _| Ok(Value::Double(f(double_of(&a[0])?))),
        ),
    );
}

/// Rounds a decimal to `r` digits after the point: `mode` 0 = half up, 1 = ceil, -1 = floor,
/// 2 = truncate.
fn round_decimal(d: Decimal, r: i32, mode: i8) -> Decimal {
    let s = i32::from(d.scale);
    if r >= s {
        return d;
    }
    let drop = (s - r) as u32;
    let factor = pow10(drop);
    let q = d.unscaled / factor;
    let rem = d.unscaled % factor;
    let adj = match mode {
        0 if rem.abs() * 2 >= factor => d.unscaled.signum(),
        1 if rem > 0 => 1,
        -1 if rem < 0 => -1,
        _ => 0,
    };
    let unscaled = q + adj;
    if r >= 0 {
        Decimal {
            unscaled,
            scale: r as u8,
        }
    } else {
        Decimal {
            unscaled: unscaled * pow10(r.unsigned_abs()),
            scale: 0,
        }
    }
}

fn round_value(v: &Value, r: i32, mode: i8, ty: &LogicalType) -> Value {
    match v {
        Value::Int(i) if r < 0 => {
            let d = round_decimal(
                Decimal {
                    unscaled: i128::from(*i),
                    scale: 0,
                },
                r,
                mode,
            );
            Value::Int(d.unscaled as i64)
        }
        Value::Int(_) => v.clone(),
        Value::Decimal(d) => {
            let out = round_decimal(*d, r, mode);
            match ty {
                LogicalType::Decimal { scale, .. } => {
                    Value::Decimal(out.rescale(*scale).unwrap_or(out))
                }
                _ => Value::Decimal(out),
            }
        }
        Value::Double(x) => Value::Double(round_f64(*x, r, mode)),
        Value::Float(x) => Value::Float(round_f64(f64::from(*x), r, mode) as f32),
        other => other.clone(),
    }
}

fn round_f64(x: f64, r: i32, mode: i8) -> f64 {
    if !x.is_finite() {
        return x;
    }
    // Through a decimal, as Flink rounds doubles via BigDecimal.
    match crate::cast::parse_decimal(&format!("{x:e}")) {
        Some(d) => round_decimal(d, r, mode).to_f64(),
        None => x,
    }
}

fn round_type(t: &[DataType], lits: &[Option<&Value>], with_digits: bool) -> Option<DataType> {
    let ok = match t.len() {
        1 => is_numeric(&t[0]),
        2 if with_digits => is_numeric(&t[0]) && is_integer(&t[1]),
        _ => false,
    };
    if !ok {
        return None;
    }
    let r = match lits.get(1) {
        Some(Some(Value::Int(i))) => *i as i32,
        Some(_) => 0,
        None => 0,
    };
    let logical = match &t[0].logical {
        LogicalType::Decimal { precision, scale } => {
            round_decimal_type(i32::from(*precision), i32::from(*scale), r)
        }
        other => other.clone(),
    };
    Some(DataType::new(logical).with_nullable(any_nullable(t)))
}

pub(super) fn register(r: &mut FunctionRegistry) {
    r.register(
        "ABS",
        ScalarFunction::new(
            "ABS",
            "ABS(<NUMERIC>)",
            |t, _| (t.len() == 1 && is_numeric(&t[0])).then(|| t[0].clone()),
            |a, _| {
                Ok(match &a[0] {
                    Value::Int(i) => Value::Int(i.wrapping_abs()),
                    Value::Decimal(d) => Value::Decimal(Decimal {
                        unscaled: d.unscaled.abs(),
                        scale: d.scale,
                    }),
                    Value::Double(x) => Value::Double(x.abs()),
                    Value::Float(x) => Value::Float(x.abs()),
                    other => other.clone(),
                })
            },
        ),
    );
    for (name, mode) in [("CEIL", 1i8), ("CEILING", 1), ("FLOOR", -1)] {
        r.register(
            name,
            ScalarFunction::new(
                name,
                &format!("{name}(<NUMERIC>)"),
                |t, l| round_type(t, l, false),
                move |a, _| {
                    Ok(match &a[0] {
                        Value::Double(x) => {
                            Value::Double(if mode > 0 { x.ceil() } else { x.floor() })
                        }
                        Value::Float(x) => {
                            Value::Float(if mode > 0 { x.ceil() } else { x.floor() })
                        }
                        v => round_value(
                            v,
                            0,
                            mode,
                            &LogicalType::Decimal {
                                precision: 38,
                                scale: 0,
                            },
                        ),
                    })
                },
            ),
        );
    }
    for (name, mode) in [("ROUND", 0i8), ("TRUNCATE", 2)] {
        r.register(
            name,
            ScalarFunction::new(
                name,
                &format!("{name}(<NUMERIC>), {name}(<NUMERIC>, <INTEGER>)"),
                |t, l| round_type(t, l, true),
                move |a, _| {
                    let digits = a.get(1).map(int_arg).unwrap_or(0) as i32;
                    let scale_ty = match &a[0] {
                        Value::Decimal(_) => LogicalType::Decimal {
                            precision: 38,
                            scale: digits.clamp(0, 38) as u8,
                        },
                        _ => LogicalType::Double,
                    };
                    Ok(round_value(&a[0], digits, mode, &scale_ty))
                },
            ),
        );
    }
    r.register(
        "POWER",
        ScalarFunction::new(
            "POWER",
            "POWER(<NUMERIC>, <NUMERIC>)",
            |t, _| {
                (t.len() == 2 && is_numeric(&t[0]) && is_numeric(&t[1]))
                    .then(|| DataType::double().with_nullable(any_nullable(t)))
            },
            |a, _| Ok(Value::Double(double_of(&a[0])?.powf(double_of(&a[1])?))),
        ),
    );
    unary_double(r, "SQRT", f64::sqrt);
    unary_double(r, "LN", f64::ln);
    unary_double(r, "LOG10", f64::log10);
    unary_double(r, "LOG2", f64::log2);
    unary_double(r, "EXP", f64::exp);
    r.register(
        "LOG",
        ScalarFunction::new(
            "LOG",
            "LOG(<NUMERIC>), LOG(<NUMERIC>, <NUMERIC>)",
            |t, _| {
                (matches!(t.len(), 1 | 2) && t.iter().all(is_numeric))
                    .then(|| DataType::double().with_nullable(any_nullable(t)))
            },
            |a, _| {
                Ok(Value::Double(match a {
                    [x] => double_of(x)?.ln(),
                    [b, x] => double_of(x)?.ln() / double_of(b)?.ln(),
                    _ => f64::NAN,
                }))
            },
        ),
    );
    r.register(
        "SIGN",
        ScalarFunction::new(
            "SIGN",
            "SIGN(<NUMERIC>)",
            |t, _| (t.len() == 1 && is_numeric(&t[0])).then(|| t[0].clone()),
            |a, _| {
                Ok(match &a[0] {
                    Value::Int(i) => Value::Int(i.signum()),
                    Value::Decimal(d) => Value::Decimal(Decimal {
                        unscaled: d.unscaled.signum() * pow10(u32::from(d.scale)),
                        scale: d.scale,
                    }),
                    Value::Double(x) => Value::Double(if *x == 0.0 { 0.0 } else { x.signum() }),
                    Value::Float(x) => Value::Float(if *x == 0.0 { 0.0 } else { x.signum() }),
                    other => other.clone(),
                })
            },
        ),
    );
    r.register(
        "PI",
        ScalarFunction::new(
            "PI",
            "PI()",
            |t, _| t.is_empty().then(|| DataType::double().not_null()),
            |_, _| Ok(Value::Double(std::f64::consts::PI)),
        ),
    );
}
