//! A SQL script as text: split into statements ([`split_statements`]), `${VAR}` variables
//! substituted ([`substitute`]), and every place in a statement mapped back to its line and
//! column in the whole script ([`Source`]).
//!
//! The splitter knows just enough of the lexical grammar to find the semicolons that end
//! statements: `'strings'` (with `''` inside), `` `identifiers` `` (with ``` `` ``` inside),
//! `"double-quoted"` text, `-- line comments` and `/* block comments */`. Splitting happens on the
//! original text, before substitution, so that a variable's value can never end a statement and
//! every error can be pointed at the text the user wrote.

use std::collections::BTreeMap;

use sqlparser::tokenizer::Location;

use crate::error::{Position, Result, SqlError};

/// One statement's text as written, without its terminating `;` and without the comments and
/// whitespace before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawStatement {
    /// The text, from its first token to just before its `;` (or the end of the script).
    pub text: String,
    /// Where that first token is in the script.
    pub pos: Position,
}

/// The lexical state of the splitter and of the substitution scan.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lex {
    Code,
    Quoted(char),
    LineComment,
    BlockComment,
}

/// Advances a position over `text` (lines and columns counted in characters, as sqlparser's
/// tokenizer counts them).
fn advance(mut pos: Position, text: &str) -> Position {
    for c in text.chars() {
        if c == '\n' {
            pos.line += 1;
            pos.column = 1;
        } else {
            pos.column += 1;
        }
    }
    pos
}

/// Splits a script into statements at the semicolons outside quotes and comments. Pieces that
/// hold only whitespace and comments are dropped.
pub fn split_statements(script: &str) -> Vec<RawStatement> {
    let mut out = Vec::new();
    let mut state = Lex::Code;
    // Byte offset of the current statement's first significant character, if one was seen.
    let mut start: Option<usize> = None;
    let mut chars = script.char_indices().peekable();
    let push = |start: &mut Option<usize>, end: usize, out: &mut Vec<RawStatement>| {
        if let Some(s) = start.take() {
            let text = script[s..end].trim_end().to_string();
            let pos = advance(Position { line: 1, column: 1 }, &script[..s]);
            out.push(RawStatement { text, pos });
        }
    };
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        match state {
            Lex::Code => match c {
                ';' => push(&mut start, i, &mut out),
                '-' if next == Some('-') => state = Lex::LineComment,
                '/' if next == Some('*') => {
                    chars.next();
                    state = Lex::BlockComment;
                }
                c if c.is_whitespace() => {}
                c => {
                    start.get_or_insert(i);
                    if matches!(c, '\'' | '`' | '"') {
                        state = Lex::Quoted(c);
                    }
                }
            },
            Lex::Quoted(q) => {
                if c == q {
                    if next == Some(q) {
                        chars.next();
                    } else {
                        state = Lex::Code;
                    }
                }
            }
            Lex::LineComment => {
                if c == '\n' {
                    state = Lex::Code;
                }
            }
            Lex::BlockComment => {
                if c == '*' && next == Some('/') {
                    chars.next();
                    state = Lex::Code;
                }
            }
        }
    }
    push(&mut start, script.len(), &mut out);
    out
}

/// One substituted variable: where its value is in the substituted text and where `${NAME}` was
/// in the original (byte ranges).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Substitution {
    new_start: usize,
    new_end: usize,
    old_start: usize,
    old_end: usize,
}

/// A statement's text after substitution, with what it takes to map a place in it back to the
/// script: every error of the statement layer goes through [`Source::position`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// The statement text with its variables substituted (what the parsers read).
    pub text: String,
    /// The text as written.
    original: String,
    /// Where the statement starts in the script.
    origin: Position,
    substitutions: Vec<Substitution>,
}

impl Source {
    /// A statement without variables (or already substituted) that starts at `origin`.
    pub fn plain(text: &str, origin: Position) -> Source {
        Source {
            text: text.to_string(),
            original: text.to_string(),
            origin,
            substitutions: Vec::new(),
        }
    }

    /// Where the statement starts in the script.
    pub fn origin(&self) -> Position {
        self.origin
    }

    /// The script position of a byte offset into [`Source::text`]. A place inside a substituted
    /// value maps to the `${` of its variable.
    pub fn position(&self, offset: usize) -> Position {
        let mut old = offset;
        for s in &self.substitutions {
            if offset < s.new_start {
                break;
            }
            old = if offset < s.new_end {
                s.old_start
            } else {
                offset - s.new_end + s.old_end
            };
        }
        let old = floor_char_boundary(&self.original, old.min(self.original.len()));
        advance(self.origin, &self.original[..old])
    }

    /// The byte offset into [`Source::text`] of a sqlparser location (1-based line and column
    /// in characters) in it; the end of the text for a location past it.
    pub fn offset_of(&self, loc: Location) -> usize {
        let (mut line, mut column) = (1u64, 1u64);
        for (i, c) in self.text.char_indices() {
            if line == loc.line && column == loc.column {
                return i;
            }
            if c == '\n' {
                line += 1;
                column = 1;
            } else {
                column += 1;
            }
        }
        self.text.len()
    }

    /// The script position of a sqlparser location in [`Source::text`]; the statement's start
    /// for an unknown location (line 0).
    pub fn position_of(&self, loc: Location) -> Position {
        if loc.line == 0 {
            return self.origin;
        }
        self.position(self.offset_of(loc))
    }
}

/// The largest char boundary at or below `i`.
fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Replaces every `${NAME}` outside comments with its value from `vars` (inside strings too:
/// that is where Nexmark's `WITH` options hold them). A `$` not followed by `{` is kept
/// (`'$dt $hm:00'` is a pattern, not a variable). An unknown or unterminated variable is an
/// error naming it and its place.
pub fn substitute(raw: &RawStatement, vars: &BTreeMap<String, String>) -> Result<Source> {
    let original = raw.text.as_str();
    let mut text = String::with_capacity(original.len());
    let mut substitutions = Vec::new();
    let mut state = Lex::Code;
    let mut i = 0;
    while i < original.len() {
        let rest = &original[i..];
        let c = rest.chars().next().unwrap_or(' ');
        let next = rest[c.len_utf8()..].chars().next();
        match state {
            Lex::LineComment if c == '\n' => state = Lex::Code,
            Lex::BlockComment if c == '*' && next == Some('/') => {
                text.push_str("*/");
                i += 2;
                state = Lex::Code;
                continue;
            }
            Lex::Code | Lex::Quoted(_) if c == '$' && next == Some('{') => {
                let pos = advance(raw.pos, &original[..i]);
                let Some(close) = rest.find('}') else {
                    return Err(SqlError::Syntax {
                        pos,
                        message: "unterminated variable: '${' without a closing '}'".into(),
                    });
                };
                let name = &rest[2..close];
                let Some(value) = vars.get(name) else {
                    return Err(SqlError::UnknownName {
                        pos: Some(pos),
                        kind: "Variable",
                        name: format!("${{{name}}}"),
                        nearest_names: crate::catalog::nearest(
                            name,
                            vars.keys().map(String::as_str),
                        )
                        .into_iter()
                        .map(|n| format!("${{{n}}}"))
                        .collect(),
                    });
                };
                substitutions.push(Substitution {
                    new_start: text.len(),
                    new_end: text.len() + value.len(),
                    old_start: i,
                    old_end: i + close + 1,
                });
                text.push_str(value);
                i += close + 1;
                continue;
            }
            Lex::Code if c == '-' && next == Some('-') => state = Lex::LineComment,
            Lex::Code if c == '/' && next == Some('*') => {
                text.push_str("/*");
                i += 2;
                state = Lex::BlockComment;
                continue;
            }
            Lex::Code if matches!(c, '\'' | '`' | '"') => state = Lex::Quoted(c),
            Lex::Quoted(q) if c == q => {
                if next == Some(q) {
                    text.push(c);
                    text.push(c);
                    i += 2;
                    continue;
                }
                state = Lex::Code;
            }
            _ => {}
        }
        text.push(c);
        i += c.len_utf8();
    }
    Ok(Source {
        text,
        original: original.to_string(),
        origin: raw.pos,
        substitutions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semicolons_in_strings_identifiers_and_comments_do_not_split() {
        let script = "-- a; comment\nSET 'a' = 'x;y';\n/* ; */ SELECT `a;b` FROM t -- ;\n;\n  \n";
        let parts = split_statements(script);
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].text, "SET 'a' = 'x;y'");
        assert_eq!(parts[0].pos, Position { line: 2, column: 1 });
        assert_eq!(parts[1].text, "SELECT `a;b` FROM t -- ;");
        assert_eq!(parts[1].pos, Position { line: 3, column: 9 });
    }

    #[test]
    fn doubled_quotes_stay_inside_the_string() {
        let parts = split_statements("SELECT 'it''s;' ; SELECT 2");
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].text, "SELECT 'it''s;'");
    }

    #[test]
    fn variables_are_substituted_and_positions_map_back() {
        let vars = BTreeMap::from([("T".to_string(), "a_much_longer_name".to_string())]);
        let raw = RawStatement {
            text: "SELECT x FROM ${T} WHERE '$dt' = y -- ${NOT_A_VAR}".into(),
            pos: Position { line: 3, column: 5 },
        };
        let src = substitute(&raw, &vars).unwrap();
        assert_eq!(
            src.text,
            "SELECT x FROM a_much_longer_name WHERE '$dt' = y -- ${NOT_A_VAR}"
        );
        let where_at = src.text.find("WHERE").unwrap();
        // `WHERE` is at column 20 of the original statement line, which starts at column 5.
        assert_eq!(
            src.position(where_at),
            Position {
                line: 3,
                column: 24
            }
        );
        let inside = src.text.find("longer").unwrap();
        assert_eq!(
            src.position(inside),
            Position {
                line: 3,
                column: 19
            }
        );
    }

    #[test]
    fn an_unknown_variable_is_named_with_its_place() {
        let vars = BTreeMap::from([("TPS".to_string(), "1".to_string())]);
        let raw = RawStatement {
            text: "SELECT\n  '${TPX}'".into(),
            pos: Position { line: 1, column: 1 },
        };
        let err = substitute(&raw, &vars).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Variable '${TPX}' not found at line 2, column 4. Did you mean '${TPS}'?"
        );
    }
}
