//! The scalar functions SQL can call: Flink's built-ins (`builtins`: math, strings, conditionals,
//! date and time) and user functions written in Rust (`udf`), in one [`FunctionRegistry`].
//!
//! A [`ScalarFunction`] is data: its name, the form it accepts (for error messages), a type rule
//! that checks the argument types and gives the result type, and an evaluation function. Names are
//! looked up case-insensitively, as Flink does (`lower` and `LOWER` are one function).

mod conditional;
mod math;
mod string;
mod time;
pub mod udf;

pub use time::{SOURCE_WATERMARK, SOURCE_WATERMARK_MISUSED};

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::datetime::FormatItem;
use crate::error::Result;
use crate::types::{DataType, LogicalType};
use crate::value::Value;

/// What a function prepares once from its literal arguments (e.g. a compiled regex).
#[derive(Debug)]
pub enum Prepared {
    /// A compiled regular expression.
    Regex(regex::Regex),
    /// A compiled regular expression, as the engine under `regex` (for capture slots on the stack).
    Extract(regex_automata::meta::Regex),
    /// `REGEXP_EXTRACT`'s pattern `(&|^)KEY=([^&]*)` (a query-string parameter, q21's): the
    /// compiled expression, and `KEY=` for group 2, which is found without the engine.
    ExtractParameter(regex_automata::meta::Regex, String),
    /// A compiled date format.
    Format(Vec<FormatItem>),
}

/// Evaluates a call: the argument values (NULL-free if the function is strict) and what was
/// prepared at bind time, if anything.
pub type EvalFn = Arc<dyn Fn(&[Value], Option<&Prepared>) -> Result<Value> + Send + Sync>;

/// The result type for these argument types (and the literal values of literal arguments), or
/// `None` if the function does not accept them.
pub type TypeFn = Arc<dyn Fn(&[DataType], &[Option<&Value>]) -> Option<DataType> + Send + Sync>;

/// Prepares from the literal arguments (`None` where an argument is not a literal); `Err` is a
/// message for a bind-time error (e.g. a bad date format).
pub type PrepareFn = fn(&[Option<&Value>]) -> std::result::Result<Option<Prepared>, String>;

/// A scalar function.
pub struct ScalarFunction {
    /// The name it is printed with in plans (`MOD`, `REGEXP_EXTRACT`, `count_char`).
    pub display_name: String,
    /// The accepted forms, for error messages (`'SPLIT_INDEX(<STRING>, <STRING>, <INTEGER>)'`).
    pub signature: String,
    /// The type rule.
    pub return_type: TypeFn,
    /// The evaluation.
    pub eval: EvalFn,
    /// Optional bind-time preparation from literal arguments.
    pub prepare: Option<PrepareFn>,
    /// NULL in any argument gives NULL without calling `eval`.
    pub strict: bool,
    /// The same arguments always give the same result (false for `CURRENT_TIMESTAMP`, `RAND`…).
    pub deterministic: bool,
}

impl fmt::Debug for ScalarFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScalarFunction")
            .field("name", &self.display_name)
            .field("signature", &self.signature)
            .finish()
    }
}

impl ScalarFunction {
    /// A strict, deterministic function.
    pub fn new(
        display_name: &str,
        signature: &str,
        return_type: impl Fn(&[DataType], &[Option<&Value>]) -> Option<DataType> + Send + Sync + 'static,
        eval: impl Fn(&[Value], Option<&Prepared>) -> Result<Value> + Send + Sync + 'static,
    ) -> ScalarFunction {
        ScalarFunction {
            display_name: display_name.to_string(),
            signature: signature.to_string(),
            return_type: Arc::new(return_type),
            eval: Arc::new(eval),
            prepare: None,
            strict: true,
            deterministic: true,
        }
    }

    /// The same function, called with NULL arguments too.
    pub fn non_strict(mut self) -> ScalarFunction {
        self.strict = false;
        self
    }

    /// The same function, marked non-deterministic.
    pub fn non_deterministic(mut self) -> ScalarFunction {
        self.deterministic = false;
        self
    }

    /// The same function with a bind-time preparation.
    pub fn with_prepare(mut self, prepare: PrepareFn) -> ScalarFunction {
        self.prepare = Some(prepare);
        self
    }

    /// Calls the function on argument values (applying strictness).
    pub fn call(&self, args: &[Value], prepared: Option<&Prepared>) -> Result<Value> {
        if self.strict && args.iter().any(Value::is_null) {
            return Ok(Value::Null);
        }
        (self.eval)(args, prepared)
    }
}

/// The functions a statement can call, by upper-cased name.
#[derive(Clone, Debug, Default)]
pub struct FunctionRegistry {
    functions: BTreeMap<String, Arc<ScalarFunction>>,
}

impl FunctionRegistry {
    /// An empty registry.
    pub fn empty() -> FunctionRegistry {
        FunctionRegistry::default()
    }

    /// Flink's built-in scalar functions.
    pub fn builtins() -> FunctionRegistry {
        let mut r = FunctionRegistry::empty();
        math::register(&mut r);
        string::register(&mut r);
        conditional::register(&mut r);
        time::register(&mut r);
        r
    }

    /// Registers (or replaces) a function under `name` (case-insensitive).
    pub fn register(&mut self, name: &str, f: ScalarFunction) {
        self.functions.insert(name.to_uppercase(), Arc::new(f));
    }

    /// Registers a shared function under `name` (`CREATE FUNCTION name AS '…'`).
    pub fn register_shared(&mut self, name: &str, f: Arc<ScalarFunction>) {
        self.functions.insert(name.to_uppercase(), f);
    }

    /// The function called `name` (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&Arc<ScalarFunction>> {
        self.functions.get(&name.to_uppercase())
    }

    /// All names (upper-cased), for suggestions.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.functions.keys().map(String::as_str)
    }
}

// ---- type-rule helpers shared by the built-ins ----

pub(crate) fn is_string(t: &DataType) -> bool {
    t.is_string() || matches!(t.logical, LogicalType::Null)
}

pub(crate) fn is_integer(t: &DataType) -> bool {
    t.is_integer() || matches!(t.logical, LogicalType::Null)
}

pub(crate) fn is_numeric(t: &DataType) -> bool {
    t.is_numeric() || matches!(t.logical, LogicalType::Null)
}

pub(crate) fn is_timestamp(t: &DataType) -> bool {
    matches!(
        t.logical,
        LogicalType::Timestamp { .. }
            | LogicalType::TimestampLtz { .. }
            | LogicalType::Date
            | LogicalType::Null
    )
}

pub(crate) fn any_nullable(ts: &[DataType]) -> bool {
    ts.iter().any(|t| t.nullable)
}

/// The string length of a string type (`STRING`'s for others).
pub(crate) fn string_len(t: &DataType) -> u32 {
    match t.logical {
        LogicalType::Char { length } | LogicalType::Varchar { length } => length,
        _ => crate::types::MAX_LENGTH,
    }
}

pub(crate) fn str_arg(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

pub(crate) fn int_arg(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        other => crate::cast::to_f64(other).map(|x| x as i64).unwrap_or(0),
    }
}

#[cfg(test)]
pub(crate) mod tests;
