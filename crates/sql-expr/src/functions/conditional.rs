//! Conditional built-ins: `COALESCE`, `IF`, `NULLIF`, `IFNULL`, `GREATEST`, `LEAST`. Their
//! arguments meet in a common type (Flink's `leastRestrictive`); evaluation converts the value
//! returned to that type. Also the value constructor `ROW(a, b, …)`: a row whose fields are named
//! `EXPR$0`, `EXPR$1`… as Flink names them (`CAST(ROW(…) AS ROW<name type, …>)` names them).

use super::{FunctionRegistry, ScalarFunction};
use crate::types::{DataType, LogicalType, RowField};
use crate::typing::{common_type, common_type_of};
use crate::value::Value;

pub(super) fn register(r: &mut FunctionRegistry) {
    r.register(
        "ROW",
        ScalarFunction::new(
            "ROW",
            "ROW(<ANY>, …)",
            |t, _| {
                let fields = t
                    .iter()
                    .enumerate()
                    .map(|(i, ty)| RowField {
                        name: format!("EXPR${i}"),
                        ty: ty.clone(),
                    })
                    .collect();
                Some(DataType::new(LogicalType::Row(fields)).with_nullable(false))
            },
            |a, _| Ok(Value::Row(a.to_vec().into())),
        )
        .non_strict(),
    );
    r.register(
        "COALESCE",
        ScalarFunction::new(
            "COALESCE",
            "COALESCE(<ANY>, …)",
            |t, _| {
                let c = common_type_of(t)?;
                Some(c.with_nullable(t.iter().all(|x| x.nullable)))
            },
            |a, _| {
                Ok(a.iter()
                    .find(|v| !v.is_null())
                    .cloned()
                    .unwrap_or(Value::Null))
            },
        )
        .non_strict(),
    );
    r.register(
        "IFNULL",
        ScalarFunction::new(
            "IFNULL",
            "IFNULL(<ANY>, <ANY>)",
            |t, _| {
                if t.len() != 2 {
                    return None;
                }
                Some(common_type(&t[0], &t[1])?.with_nullable(t[1].nullable))
            },
            |a, _| {
                Ok(if a[0].is_null() {
                    a[1].clone()
                } else {
                    a[0].clone()
                })
            },
        )
        .non_strict(),
    );
    r.register(
        "IF",
        ScalarFunction::new(
            "IF",
            "IF(<BOOLEAN>, <ANY>, <ANY>)",
            |t, _| {
                if t.len() != 3 || !matches!(t[0].logical, LogicalType::Boolean | LogicalType::Null)
                {
                    return None;
                }
                common_type(&t[1], &t[2])
            },
            |a, _| {
                Ok(if a[0] == Value::Bool(true) {
                    a[1].clone()
                } else {
                    a[2].clone()
                })
            },
        )
        .non_strict(),
    );
    r.register(
        "NULLIF",
        ScalarFunction::new(
            "NULLIF",
            "NULLIF(<ANY>, <ANY>)",
            |t, _| {
                (t.len() == 2 && common_type(&t[0], &t[1]).is_some())
                    .then(|| t[0].clone().with_nullable(true))
            },
            |a, _| {
                let equal = !a[1].is_null()
                    && crate::eval::compare(&a[0], &a[1]) == Some(std::cmp::Ordering::Equal);
                Ok(if equal { Value::Null } else { a[0].clone() })
            },
        )
        .non_strict(),
    );
    for (name, greatest) in [("GREATEST", true), ("LEAST", false)] {
        r.register(
            name,
            ScalarFunction::new(
                name,
                &format!("{name}(<COMPARABLE>, …)"),
                |t, _| {
                    let c = common_type_of(t)?;
                    Some(c.with_nullable(t.iter().any(|x| x.nullable)))
                },
                move |a, _| {
                    let mut best = &a[0];
                    for v in &a[1..] {
                        let ord = crate::eval::compare(v, best);
                        let better = match ord {
                            Some(o) if greatest => o.is_gt(),
                            Some(o) => o.is_lt(),
                            None => false,
                        };
                        if better {
                            best = v;
                        }
                    }
                    Ok(best.clone())
                },
            ),
        );
    }
}
