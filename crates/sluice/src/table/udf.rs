//! [`ScalarUdf`]: a scalar function written in Rust, with the typed signature SQL checks calls
//! against (Flink's `ScalarFunction` with its type hints).
//!
//! A call is checked when its statement is planned: the number of arguments, and each
//! argument's type against its parameter's (an argument may be implicitly widened to the
//! parameter's type, as Flink casts `INT` to `BIGINT`, never narrowed); a mismatch is refused
//! with its line and column and the signature. At run time the body receives the arguments as
//! values of the parameter types (an `INT` argument of a `DOUBLE` parameter arrives as a
//! `Value::Double`); an error it returns, or a result that is not a value of the declared
//! result type, drops the row as a dead letter counted in the `TableEnv`'s row errors, as
//! any evaluation error of a SQL job.

use std::fmt;
use std::sync::Arc;

use sluice_sql::typing::common_type;
use sluice_sql::{DataType, LogicalType, ScalarFunction, SqlError, Value};

use super::values::fits;

/// The body of a scalar function: argument values to a result, or an error message.
pub type UdfBody = Arc<dyn Fn(&[Value]) -> Result<Value, String> + Send + Sync>;

/// A scalar function written in Rust, to register under a name
/// ([`TableEnv::create_temporary_function`](super::TableEnv::create_temporary_function)) or an
/// identifier that `CREATE FUNCTION … AS 'identifier'` names
/// ([`TableEnv::register_function`](super::TableEnv::register_function)).
///
/// ```
/// use sluice::table::{DataType, ScalarUdf, Value};
/// // count_char(s, c): how many times the first character of `c` occurs in `s`.
/// let count_char = ScalarUdf::new(
///     "count_char",
///     vec![DataType::string(), DataType::string()],
///     DataType::bigint().not_null(),
///     |args: &[Value]| {
///         let (s, c) = (args[0].as_str().unwrap_or(""), args[1].as_str().unwrap_or(""));
///         let c = c.chars().next().ok_or("count_char: an empty character")?;
///         Ok(Value::Int(s.chars().filter(|x| *x == c).count() as i64))
///     },
/// )
/// .called_on_null_input();
/// ```
#[derive(Clone)]
pub struct ScalarUdf {
    name: String,
    params: Vec<DataType>,
    result: DataType,
    body: UdfBody,
    strict: bool,
    deterministic: bool,
}

impl fmt::Debug for ScalarUdf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.signature())
    }
}

impl ScalarUdf {
    /// A function `name` (as plans print its calls) of parameters `params` returning `result`.
    /// By default it is deterministic and returns NULL when an argument is NULL without
    /// calling `body`.
    pub fn new(
        name: &str,
        params: Vec<DataType>,
        result: DataType,
        body: impl Fn(&[Value]) -> Result<Value, String> + Send + Sync + 'static,
    ) -> ScalarUdf {
        ScalarUdf {
            name: name.to_string(),
            params,
            result,
            body: Arc::new(body),
            strict: true,
            deterministic: true,
        }
    }

    /// `body` sees NULL arguments too (SQL's `CALLED ON NULL INPUT`).
    pub fn called_on_null_input(mut self) -> ScalarUdf {
        self.strict = false;
        self
    }

    /// Whether the same arguments always give the same result (Flink's `isDeterministic`;
    /// true by default). The planner never folds or reorders a non-deterministic call.
    pub fn deterministic(mut self, deterministic: bool) -> ScalarUdf {
        self.deterministic = deterministic;
        self
    }

    /// `name(<T1>, <T2>)`, as error messages show it.
    pub fn signature(&self) -> String {
        let types: Vec<String> = self.params.iter().map(|p| format!("<{p}>")).collect();
        format!("{}({})", self.name, types.join(", "))
    }

    /// The function as the expression layer calls it.
    pub(crate) fn to_function(&self) -> ScalarFunction {
        let params = self.params.clone();
        let result = self.result.clone();
        let strict = self.strict;
        let type_rule = move |args: &[DataType], _: &[Option<&Value>]| {
            let fits = args.len() == params.len()
                && args.iter().zip(&params).all(|(a, p)| widens_to(a, p));
            let nullable = result.nullable || (strict && args.iter().any(|a| a.nullable));
            fits.then(|| result.clone().with_nullable(nullable))
        };
        let (name, params, result, body) = (
            self.name.clone(),
            self.params.clone(),
            self.result.clone(),
            self.body.clone(),
        );
        let eval = move |args: &[Value], _: Option<&sluice_sql::functions::Prepared>| {
            let args: Vec<Value> = args
                .iter()
                .zip(&params)
                .map(|(v, p)| widen(v.clone(), p))
                .collect();
            let out = body(&args).map_err(|m| SqlError::eval(format!("{name}: {m}")))?;
            if fits(&out, &result) {
                Ok(out)
            } else {
                Err(SqlError::eval(format!(
                    "{name} returned {out:?}, which is not a value of its result type {result}"
                )))
            }
        };
        let mut f = ScalarFunction::new(&self.name, &self.signature(), type_rule, eval);
        f.strict = self.strict;
        f.deterministic = self.deterministic;
        f
    }
}

/// Whether an argument of type `arg` may be passed for a parameter of type `param`: the same
/// type, NULL, or one `param` widens it to (their common type is `param`'s).
fn widens_to(arg: &DataType, param: &DataType) -> bool {
    if matches!(arg.logical, LogicalType::Null) {
        return true;
    }
    let arg = arg.without_time_attribute();
    let param = param.without_time_attribute();
    arg.logical == param.logical
        || common_type(&arg, &param).is_some_and(|c| c.logical == param.logical)
}

/// A value of a narrower numeric type as one of `to`'s (the others pass unchanged).
fn widen(v: Value, to: &DataType) -> Value {
    match (&v, &to.logical) {
        (Value::Int(i), LogicalType::Double) => Value::Double(*i as f64),
        (Value::Int(i), LogicalType::Float) => Value::Float(*i as f32),
        (Value::Float(x), LogicalType::Double) => Value::Double(f64::from(*x)),
        (Value::Decimal(d), LogicalType::Double) => Value::Double(d.to_f64()),
        (Value::Decimal(d), LogicalType::Float) => Value::Float(d.to_f64() as f32),
        (Value::Int(i), LogicalType::Decimal { scale, .. }) => {
            let d = sluice_sql::Decimal {
                unscaled: i128::from(*i),
                scale: 0,
            };
            d.rescale(*scale).map_or(v, Value::Decimal)
        }
        (Value::Decimal(d), LogicalType::Decimal { scale, .. }) if d.scale != *scale => {
            d.rescale(*scale).map_or(v, Value::Decimal)
        }
        _ => v,
    }
}
