//! User scalar functions written in Rust, and the ready-made ones a `CREATE FUNCTION name AS
//! 'class'` statement can name by their Java class ([`udf_by_identifier`]).

use std::sync::Arc;

use super::{is_string, ScalarFunction};
use crate::error::{Result, SqlError};
use crate::types::DataType;
use crate::typing::common_type;
use crate::value::Value;

/// A user function from its name, parameter types, result type and body. Arguments must have the
/// parameter types' families (an `INT` argument for a `BIGINT` parameter is fine); NULL arguments
/// reach the body unless `strict` is set.
pub fn user_function(
    name: &str,
    params: Vec<DataType>,
    result: DataType,
    strict: bool,
    body: impl Fn(&[Value]) -> Result<Value> + Send + Sync + 'static,
) -> ScalarFunction {
    let types: Vec<String> = params.iter().map(|p| format!("<{}>", p.logical)).collect();
    let signature = format!("{name}({})", types.join(", "));
    let f = ScalarFunction::new(
        name,
        &signature,
        move |t, _| {
            let fits = t.len() == params.len()
                && t.iter()
                    .zip(&params)
                    .all(|(a, p)| common_type(a, p).is_some());
            fits.then(|| result.clone())
        },
        move |a, _| body(a),
    );
    if strict {
        f
    } else {
        f.non_strict()
    }
}

/// Nexmark's `CountChar` (q14): how many bytes of `s` equal the first byte of `c`; 0 for a NULL
/// `s`; an error for a NULL or empty `c` (the Java UDF fails there too).
pub fn count_char() -> ScalarFunction {
    let f = ScalarFunction::new(
        "count_char",
        "count_char(<STRING>, <STRING>)",
        |t, _| (t.len() == 2 && t.iter().all(is_string)).then(|| DataType::bigint().not_null()),
        |a, _| {
            let c = match &a[1] {
                Value::Str(c) if !c.is_empty() => c.as_bytes()[0],
                _ => {
                    return Err(SqlError::eval(
                        "count_char: the character argument is NULL or empty",
                    ))
                }
            };
            let n = match &a[0] {
                Value::Str(s) => s.bytes().filter(|b| *b == c).count(),
                _ => 0,
            };
            Ok(Value::Int(n as i64))
        },
    );
    f.non_strict()
}

/// The Java class names of the user functions Sluice ships, for `CREATE FUNCTION … AS 'class'`.
pub const KNOWN_UDFS: &[&str] = &["com.github.nexmark.flink.udf.CountChar"];

/// The ready-made function a `CREATE FUNCTION … AS 'identifier'` names, if Sluice has it.
pub fn udf_by_identifier(identifier: &str) -> Option<Arc<ScalarFunction>> {
    match identifier {
        "com.github.nexmark.flink.udf.CountChar" => Some(Arc::new(count_char())),
        _ => None,
    }
}
