//! The crate's error type, [`SqlError`]: every way a SQL text can be refused, each naming where.

use std::fmt;

/// A place in the SQL text, 1-based, as editors count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Position {
    /// The line, from 1.
    pub line: u64,
    /// The column, from 1.
    pub column: u64,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// ` (at line L, column C)` for a known position, nothing otherwise.
fn at(pos: &Option<Position>) -> String {
    pos.map(|p| format!(" at {p}")).unwrap_or_default()
}

/// ` Did you mean 'a', 'b'?` for the nearest known names, nothing when there are none.
fn nearest(names: &[String]) -> String {
    if names.is_empty() {
        return String::new();
    }
    let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    format!(" Did you mean {}?", quoted.join(", "))
}

/// Why a SQL text, or a row at run time, was refused.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum SqlError {
    /// The text does not parse.
    #[error("SQL syntax error at {pos}: {message}")]
    Syntax {
        /// Where.
        pos: Position,
        /// What was expected and what was found.
        message: String,
    },
    /// A table, view, column or function name that is not known.
    #[error("{kind} '{name}' not found{}.{}", at(pos), nearest(nearest_names))]
    UnknownName {
        /// Where the name is written.
        pos: Option<Position>,
        /// `Table`, `Column`, `Function`…
        kind: &'static str,
        /// The name as written.
        name: String,
        /// The closest known names, best first.
        nearest_names: Vec<String>,
    },
    /// Valid Flink SQL that Sluice does not run (yet): refused rather than answered differently.
    #[error("Unsupported{}: {what}", at(pos))]
    Unsupported {
        /// Where.
        pos: Option<Position>,
        /// What is not supported, and why when it helps.
        what: String,
    },
    /// A statement that parses but does not make sense (types, arity, ambiguity…).
    #[error("SQL validation failed{}: {message}", at(pos))]
    Validation {
        /// Where.
        pos: Option<Position>,
        /// What is wrong.
        message: String,
    },
    /// A connector option that is unknown, missing or malformed.
    #[error("Invalid option '{key}' of table '{table}': {message}")]
    BadOption {
        /// The table whose `WITH` clause holds it.
        table: String,
        /// The option's key.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// A row whose evaluation failed at run time (a cast that cannot hold, a division by zero…).
    #[error("SQL evaluation failed: {message}")]
    Eval {
        /// What failed.
        message: String,
    },
}

impl SqlError {
    /// A validation error at a place.
    pub fn validation(pos: Option<Position>, message: impl Into<String>) -> SqlError {
        SqlError::Validation {
            pos,
            message: message.into(),
        }
    }

    /// An unsupported-feature error at a place.
    pub fn unsupported(pos: Option<Position>, what: impl Into<String>) -> SqlError {
        SqlError::Unsupported {
            pos,
            what: what.into(),
        }
    }

    /// The same error placed at `pos` if it names no place of its own (a refusal found while
    /// planning a statement as a whole is placed at the statement).
    pub fn at_if_unplaced(self, pos: Position) -> SqlError {
        match self {
            SqlError::Unsupported { pos: None, what } => SqlError::Unsupported {
                pos: Some(pos),
                what,
            },
            SqlError::Validation { pos: None, message } => SqlError::Validation {
                pos: Some(pos),
                message,
            },
            SqlError::UnknownName {
                pos: None,
                kind,
                name,
                nearest_names,
            } => SqlError::UnknownName {
                pos: Some(pos),
                kind,
                name,
                nearest_names,
            },
            other => other,
        }
    }

    /// A run-time evaluation error.
    pub fn eval(message: impl Into<String>) -> SqlError {
        SqlError::Eval {
            message: message.into(),
        }
    }
}

/// The crate's result.
pub type Result<T, E = SqlError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_place_and_the_nearest_names() {
        let e = SqlError::UnknownName {
            pos: Some(Position { line: 3, column: 8 }),
            kind: "Column",
            name: "pirce".into(),
            nearest_names: vec!["price".into()],
        };
        assert_eq!(
            e.to_string(),
            "Column 'pirce' not found at line 3, column 8. Did you mean 'price'?"
        );
    }
}
