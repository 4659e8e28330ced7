//! Flink's query hints (`SELECT /*+ NAME(…) */ …`): read from the select's `/*+ … */` comment
//! into [`QueryHint`]s. `STATE_TTL('t' = '1d')` on an aggregation sets its state's time to
//! live; any other hint is refused by name (never skipped as a comment: a hint changes how a
//! query runs).

use sqlparser::ast;

use crate::error::{Position, Result, SqlError};

/// One hint: its name and its `'key' = 'value'` options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryHint {
    /// The name, upper case (`STATE_TTL`).
    pub name: String,
    /// The options, in order.
    pub options: Vec<(String, String)>,
}

/// The hints of a select (`/*+ … */` right after `SELECT`; a `--+` line is a comment).
pub fn select_hints(s: &ast::Select, pos: Option<Position>) -> Result<Vec<QueryHint>> {
    let mut out = Vec::new();
    for h in &s.optimizer_hints {
        if !h.prefix.is_empty() || !matches!(h.style, ast::OptimizerHintStyle::MultiLine) {
            continue;
        }
        out.extend(parse(&h.text, pos)?);
    }
    Ok(out)
}

/// `A('k' = 'v', …), B(…)`.
fn parse(text: &str, pos: Option<Position>) -> Result<Vec<QueryHint>> {
    let bad = |why: &str| SqlError::validation(pos, format!("the query hint /*+{text}*/: {why}"));
    let mut hints = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let open = rest.find('(').ok_or_else(|| bad("expected NAME(…)"))?;
        let name = rest[..open].trim().to_uppercase();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(bad("expected a hint name"));
        }
        let close = rest[open..]
            .find(')')
            .map(|i| open + i)
            .ok_or_else(|| bad("a hint's options end with ')'"))?;
        let mut options = Vec::new();
        for kv in rest[open + 1..close]
            .split(',')
            .filter(|s| !s.trim().is_empty())
        {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| bad("this version reads hints of 'key' = 'value' options only"))?;
            let unquote = |s: &str| {
                let s = s.trim();
                s.strip_prefix('\'')
                    .and_then(|s| s.strip_suffix('\''))
                    .map(str::to_string)
                    .ok_or_else(|| bad("a hint option is a quoted string"))
            };
            options.push((unquote(k)?, unquote(v)?));
        }
        hints.push(QueryHint { name, options });
        rest = rest[close + 1..].trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
    }
    Ok(hints)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_read_as_flink_writes_them() {
        let h = parse(" STATE_TTL('o' = '1d', 'c'='12h'), X('a'='b') ", None).unwrap();
        assert_eq!(h[0].name, "STATE_TTL");
        assert_eq!(
            h[0].options,
            [("o".into(), "1d".into()), ("c".into(), "12h".into())]
        );
        assert_eq!(h[1].name, "X");
        assert!(parse("BROADCAST(t)", None).is_err());
    }
}
