//! [`Cursor`]: the statement layer's own small parser toolkit over sqlparser's tokens (with
//! [`FlinkDialect`]), for the statements sqlparser does not read the way Flink writes them
//! (`CREATE TABLE`, `SET`, `CREATE FUNCTION`, `EXPLAIN` details…), and the bridge back to
//! sqlparser for the queries and expressions inside them. Every error it makes, and every
//! sqlparser error it passes on, names its place in the whole script (through [`Source`]).

use sqlparser::ast::{Expr, Query};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer, Whitespace};

use crate::catalog::ObjectPath;
use crate::dialect::FlinkDialect;
use crate::error::{Position, Result, SqlError};
use crate::script::Source;

/// Why Flink refuses an unquoted `dateTime`, said once for both places it is refused.
const DATETIME_REASON: &str = "DATETIME is a reserved keyword of Flink's SQL parser since its \
     Calcite upgrade (Calcite 1.33 added BigQuery's DATETIME type and literal to its core grammar, \
     and Flink's parser does not list DATETIME among its non-reserved keywords), so an unquoted \
     `dateTime` is not read as a name; Flink 2.3 refuses this text the same way. Quote it: `dateTime`";

/// A position in a statement's tokens (whitespace and comments left out).
pub struct Cursor<'a> {
    src: &'a Source,
    toks: Vec<TokenWithSpan>,
    /// The tokens with the hint comments (`/*+ … */`) kept, which sqlparser reads as a
    /// select's query hints, and where each of `toks` is among them.
    with_hints: Vec<TokenWithSpan>,
    at_with_hints: Vec<usize>,
    i: usize,
    /// The second half of a `>>` token read as two `>` (nested `ARRAY<ARRAY<INT>>`).
    pending_gt: bool,
}

impl<'a> Cursor<'a> {
    /// Tokenizes a statement; refuses an unquoted `dateTime` as Flink's parser does.
    pub fn new(src: &'a Source) -> Result<Cursor<'a>> {
        let mut tokenizer = Tokenizer::new(&FlinkDialect, &src.text);
        let all = tokenizer
            .tokenize_with_location()
            .map_err(|e| SqlError::Syntax {
                pos: src.position_of(e.location),
                message: e.message,
            })?;
        let is_hint = |t: &Token| matches!(t, Token::Whitespace(Whitespace::MultiLineComment(c)) if c.starts_with('+'));
        let mut toks = Vec::new();
        let mut with_hints = Vec::new();
        let mut at_with_hints = Vec::new();
        for t in all {
            if is_hint(&t.token) {
                // Flink's query hints follow SELECT; a table hint (`t /*+ OPTIONS(…) */`)
                // would change a table's options, which this version does not do: refused.
                let after_select = matches!(
                    toks.last().map(|t: &TokenWithSpan| &t.token),
                    Some(Token::Word(w)) if w.keyword == Keyword::SELECT
                );
                if !after_select {
                    return Err(SqlError::Unsupported {
                        pos: Some(src.position_of(t.span.start)),
                        what: "a hint after a table name (Flink's dynamic table options /*+ OPTIONS(…) */): set the options in the table's WITH clause".into(),
                    });
                }
                with_hints.push(t);
            } else if !matches!(t.token, Token::Whitespace(_)) {
                at_with_hints.push(with_hints.len());
                with_hints.push(t.clone());
                toks.push(t);
            }
        }
        let cursor = Cursor {
            src,
            toks,
            with_hints,
            at_with_hints,
            i: 0,
            pending_gt: false,
        };
        cursor.refuse_unquoted_datetime()?;
        Ok(cursor)
    }

    /// Flink (2.x) refuses `A.dateTime` with `Encountered ". dateTime"` at the period, and a
    /// bare `dateTime` with `Encountered "dateTime"`: see [`DATETIME_REASON`].
    fn refuse_unquoted_datetime(&self) -> Result<()> {
        for (i, t) in self.toks.iter().enumerate() {
            let Token::Word(w) = &t.token else { continue };
            if w.quote_style.is_some() || !w.value.eq_ignore_ascii_case("datetime") {
                continue;
            }
            let after_period = i > 0 && self.toks[i - 1].token == Token::Period;
            let (at, encountered) = if after_period {
                (i - 1, format!(". {}", w.value))
            } else {
                (i, w.value.clone())
            };
            return Err(SqlError::Syntax {
                pos: self.pos_at(at),
                message: format!("Encountered \"{encountered}\": {DATETIME_REASON}."),
            });
        }
        Ok(())
    }

    /// The statement's source.
    pub fn source(&self) -> &'a Source {
        self.src
    }

    /// The index of the current token.
    pub fn index(&self) -> usize {
        self.i
    }

    /// The current token (`EOF` at the end).
    pub fn peek(&self) -> &Token {
        self.peek_nth(0)
    }

    /// The token `n` places ahead (`EOF` past the end).
    pub fn peek_nth(&self, n: usize) -> &Token {
        self.toks
            .get(self.i + n)
            .map(|t| &t.token)
            .unwrap_or(&Token::EOF)
    }

    /// The script position of the token at `index` (the statement's end past the last one).
    pub fn pos_at(&self, index: usize) -> Position {
        match self.toks.get(index) {
            Some(t) => self.src.position_of(t.span.start),
            None => self.src.position(self.src.text.len()),
        }
    }

    /// The script position of the current token.
    pub fn pos(&self) -> Position {
        self.pos_at(self.i)
    }

    /// The byte offset in the statement's text of the current token (its length at the end).
    pub fn offset(&self) -> usize {
        match self.toks.get(self.i) {
            Some(t) => self.src.offset_of(t.span.start),
            None => self.src.text.len(),
        }
    }

    /// Moves past the current token.
    pub fn advance(&mut self) {
        if self.i < self.toks.len() {
            self.i += 1;
        }
    }

    /// Whether nothing but the end is left.
    pub fn at_end(&self) -> bool {
        self.i >= self.toks.len()
    }

    /// Whether the token `n` ahead is the unquoted word `word` (any case).
    pub fn is_word_at(&self, n: usize, word: &str) -> bool {
        matches!(self.peek_nth(n), Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
    }

    /// Whether the current token is the unquoted word `word`.
    pub fn is_word(&self, word: &str) -> bool {
        self.is_word_at(0, word)
    }

    /// Moves past `word` if it is the current token.
    pub fn eat_word(&mut self, word: &str) -> bool {
        let yes = self.is_word(word);
        if yes {
            self.advance();
        }
        yes
    }

    /// Moves past `words` if they are the next tokens, all of them; else moves not at all.
    pub fn eat_words(&mut self, words: &[&str]) -> bool {
        let yes = words.iter().enumerate().all(|(n, w)| self.is_word_at(n, w));
        if yes {
            self.i += words.len();
        }
        yes
    }

    /// Moves past `word` or says what was found instead.
    pub fn expect_word(&mut self, word: &str) -> Result<()> {
        if self.eat_word(word) {
            Ok(())
        } else {
            Err(self.expected(word))
        }
    }

    /// Moves past `tok` if it is the current token.
    pub fn eat(&mut self, tok: &Token) -> bool {
        let yes = self.peek() == tok;
        if yes {
            self.advance();
        }
        yes
    }

    /// Moves past `tok` or says what was found instead.
    pub fn expect(&mut self, tok: &Token) -> Result<()> {
        if self.eat(tok) {
            Ok(())
        } else {
            Err(self.expected(&tok.to_string()))
        }
    }

    /// Moves past a `>`, reading a `>>` as two of them (`ARRAY<ARRAY<INT>>`).
    pub fn expect_gt(&mut self) -> Result<()> {
        if self.pending_gt {
            self.pending_gt = false;
            self.advance();
            return Ok(());
        }
        match self.peek() {
            Token::Gt => {
                self.advance();
                Ok(())
            }
            Token::ShiftRight => {
                self.pending_gt = true;
                Ok(())
            }
            _ => Err(self.expected(">")),
        }
    }

    /// Whether the current token is a `>` (or the pending half of a `>>`).
    pub fn is_gt(&self) -> bool {
        self.pending_gt || matches!(self.peek(), Token::Gt | Token::ShiftRight)
    }

    /// A syntax error at the current token: `Expected: {what}, found: {token}`.
    pub fn expected(&self, what: &str) -> SqlError {
        let found = if self.pending_gt {
            ">".to_string()
        } else {
            match self.peek() {
                Token::EOF => "end of statement".to_string(),
                t => t.to_string(),
            }
        };
        SqlError::Syntax {
            pos: self.pos(),
            message: format!("Expected: {what}, found: {found}"),
        }
    }

    /// Reads an identifier (a word, quoted with backticks or not), keeping its case.
    pub fn ident(&mut self, what: &str) -> Result<(String, Position)> {
        match self.peek() {
            Token::Word(w) if !self.pending_gt => {
                let name = w.value.clone();
                let pos = self.pos();
                self.advance();
                Ok((name, pos))
            }
            _ => Err(self.expected(what)),
        }
    }

    /// Reads a possibly qualified name: `a`, `db.a`, `cat.db.a`.
    pub fn path(&mut self, what: &str) -> Result<ObjectPath> {
        let (first, pos) = self.ident(what)?;
        let mut parts = vec![first];
        while self.eat(&Token::Period) {
            parts.push(self.ident(what)?.0);
        }
        Ok(ObjectPath { parts, pos })
    }

    /// Reads a string literal's value.
    pub fn string(&mut self, what: &str) -> Result<String> {
        match self.peek() {
            Token::SingleQuotedString(s) => {
                let s = s.clone();
                self.advance();
                Ok(s)
            }
            _ => Err(self.expected(what)),
        }
    }

    /// Reads an unsigned integer literal.
    pub fn integer(&mut self, what: &str) -> Result<u64> {
        match self.peek() {
            Token::Number(n, _) => match n.parse::<u64>() {
                Ok(v) => {
                    self.advance();
                    Ok(v)
                }
                Err(_) => Err(self.expected(what)),
            },
            _ => Err(self.expected(what)),
        }
    }

    /// Reads `(a, b, …)`: a parenthesized, comma-separated list of names.
    pub fn name_list(&mut self, what: &str) -> Result<Vec<(String, Position)>> {
        self.expect(&Token::LParen)?;
        let mut names = vec![self.ident(what)?];
        while self.eat(&Token::Comma) {
            names.push(self.ident(what)?);
        }
        self.expect(&Token::RParen)?;
        Ok(names)
    }

    /// Requires the end of the statement.
    pub fn expect_end(&self) -> Result<()> {
        if self.at_end() && !self.pending_gt {
            Ok(())
        } else {
            Err(self.expected("end of statement"))
        }
    }

    /// The index just past an expression that starts at the current token and ends before the
    /// first `,`, `)` or `COMMENT` outside parentheses (or the end); moves there.
    pub fn skip_expression(&mut self) -> usize {
        let mut depth = 0usize;
        while let Some(t) = self.toks.get(self.i) {
            match t.token {
                Token::LParen | Token::LBracket => depth += 1,
                Token::RParen | Token::RBracket if depth == 0 => break,
                Token::RParen | Token::RBracket => depth -= 1,
                Token::Comma if depth == 0 => break,
                // A column's `COMMENT '…'` follows its expression; no expression holds the word.
                Token::Word(ref w)
                    if depth == 0
                        && w.quote_style.is_none()
                        && w.value.eq_ignore_ascii_case("COMMENT") =>
                {
                    break
                }
                _ => {}
            }
            self.i += 1;
        }
        self.i
    }

    /// Parses tokens `start..end` as one expression with sqlparser.
    pub fn parse_expr(&self, start: usize, end: usize, what: &str) -> Result<Expr> {
        if start >= end {
            return Err(SqlError::Syntax {
                pos: self.pos_at(start),
                message: format!("Expected: {what}, found: {}", self.found_at(start)),
            });
        }
        let mut parser =
            Parser::new(&FlinkDialect).with_tokens_with_locations(self.toks[start..end].to_vec());
        let expr = parser
            .parse_expr()
            .map_err(|e| map_parser_error(self.src, e, self.pos_at(end), &self.found_at(end)))?;
        self.require_consumed(&parser)?;
        Ok(expr)
    }

    /// Parses the rest of the statement as a query with sqlparser.
    pub fn parse_rest_as_query(&mut self) -> Result<Box<Query>> {
        if self.at_end() {
            return Err(self.expected("a query (SELECT, WITH, VALUES)"));
        }
        let mut parser =
            Parser::new(&FlinkDialect).with_tokens_with_locations(self.rest_with_hints());
        let end = self.toks.len();
        let query = parser
            .parse_query()
            .map_err(|e| map_parser_error(self.src, e, self.pos_at(end), "end of statement"))?;
        self.require_consumed(&parser)?;
        self.i = self.toks.len();
        Ok(query)
    }

    /// The tokens from the cursor on, hint comments included.
    fn rest_with_hints(&self) -> Vec<TokenWithSpan> {
        let from = self
            .at_with_hints
            .get(self.i)
            .copied()
            .unwrap_or(self.with_hints.len());
        self.with_hints[from..].to_vec()
    }

    fn require_consumed(&self, parser: &Parser) -> Result<()> {
        let next = parser.peek_token();
        if next.token == Token::EOF {
            return Ok(());
        }
        Err(SqlError::Syntax {
            pos: self.src.position_of(next.span.start),
            message: format!("Expected: end of statement, found: {}", next.token),
        })
    }

    fn found_at(&self, index: usize) -> String {
        match self.toks.get(index) {
            Some(t) => t.token.to_string(),
            None => "end of statement".into(),
        }
    }
}

/// A sqlparser error as a [`SqlError::Syntax`] at its place in the script (sqlparser's places
/// are relative to the text it was given; [`Source`] adds the statement's own place). sqlparser
/// gives no place for running out of tokens: that is `end`, the token after the slice it read,
/// which its message calls `EOF` and this one `end_name`.
pub fn map_parser_error(src: &Source, e: ParserError, end: Position, end_name: &str) -> SqlError {
    let text = match e {
        ParserError::TokenizerError(m) | ParserError::ParserError(m) => m,
        ParserError::RecursionLimitExceeded => "the statement nests too deeply".to_string(),
    };
    let (message, loc) = split_location(&text);
    let pos = match loc {
        Some(l) if l.line > 0 => src.position_of(l),
        _ => end,
    };
    SqlError::Syntax {
        pos,
        message: message.replace("found: EOF", &format!("found: {end_name}")),
    }
}

/// Splits sqlparser's ` at Line: L, Column: C` suffix off a message.
fn split_location(text: &str) -> (&str, Option<Location>) {
    let Some(at) = text.rfind(" at Line: ") else {
        return (text, None);
    };
    let rest = &text[at + " at Line: ".len()..];
    let mut nums = rest.split(", Column: ");
    let line = nums.next().and_then(|l| l.trim().parse::<u64>().ok());
    let column = nums.next().and_then(|c| {
        let digits: String = c.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u64>().ok()
    });
    match (line, column) {
        (Some(line), Some(column)) => (&text[..at], Some(Location { line, column })),
        _ => (text, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlparser_locations_are_read_off_its_messages() {
        let (m, l) = split_location("Expected: an expression, found: EOF at Line: 2, Column: 7");
        assert_eq!(m, "Expected: an expression, found: EOF");
        assert_eq!(l, Some(Location { line: 2, column: 7 }));
    }

    #[test]
    fn nested_angle_brackets_close_one_at_a_time() {
        let src = Source::plain("a<b<c>>", Position { line: 1, column: 1 });
        let mut c = Cursor::new(&src).unwrap();
        c.ident("a").unwrap();
        c.expect(&Token::Lt).unwrap();
        c.ident("b").unwrap();
        c.expect(&Token::Lt).unwrap();
        c.ident("c").unwrap();
        c.expect_gt().unwrap();
        c.expect_gt().unwrap();
        c.expect_end().unwrap();
    }
}
