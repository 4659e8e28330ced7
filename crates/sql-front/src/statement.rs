//! [`Statement`]: what one statement of a script says, read from its [`Source`]. Queries and
//! expressions are sqlparser's AST ([`Query`]); the statements around them, which Flink writes
//! its own way, are read here with [`Cursor`] (`CREATE TABLE` in [`crate::ddl`]).
//!
//! The statements Flink's SQL client runs and Sluice reads: `SET`, `RESET`, `CREATE [TEMPORARY]
//! TABLE | VIEW | FUNCTION`, `DROP TABLE | VIEW | FUNCTION`, `SHOW TABLES`, `DESCRIBE`, `INSERT
//! INTO`, a query, `EXPLAIN …` and statement sets (`BEGIN STATEMENT SET; …; END;` and `EXECUTE
//! STATEMENT SET BEGIN …; END;`). Anything else is refused as unsupported, naming the statement
//! and its place.

use sqlparser::ast::Query;
use sqlparser::tokenizer::Token;

use crate::catalog::{
    DropDef, DropKind, FunctionDef, FunctionLanguage, FunctionScope, ObjectPath, ViewDef,
};
use crate::ddl::{parse_create_table, TableDef};
use crate::error::{Position, Result, SqlError};
use crate::script::Source;
use crate::tokens::Cursor;

/// `INSERT INTO target [(columns)] query`.
#[derive(Clone, Debug, PartialEq)]
pub struct InsertStatement {
    /// The table written to.
    pub target: ObjectPath,
    /// The target's columns the query fills, if listed (all, in order, otherwise).
    pub columns: Vec<String>,
    /// The query, as sqlparser reads it.
    pub query: Box<Query>,
    /// The statement's text (variables substituted).
    pub text: String,
    /// Where the statement starts.
    pub pos: Position,
}

/// A query run on its own (`SELECT …`): Flink's SQL client shows its rows.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryStatement {
    /// The query, as sqlparser reads it.
    pub query: Box<Query>,
    /// The statement's text (variables substituted).
    pub text: String,
    /// Where the statement starts.
    pub pos: Position,
}

/// INSERTs planned and run together as one job (Flink's statement set).
#[derive(Clone, Debug, PartialEq)]
pub struct StatementSet {
    /// The INSERTs, in order.
    pub inserts: Vec<InsertStatement>,
    /// Where the set's opening statement starts.
    pub pos: Position,
}

/// The extra facts `EXPLAIN` can print (Flink's `ExplainDetail`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExplainDetail {
    /// `ESTIMATED_COST`.
    EstimatedCost,
    /// `CHANGELOG_MODE`.
    ChangelogMode,
    /// `JSON_EXECUTION_PLAN`.
    JsonExecutionPlan,
    /// `PLAN_ADVICE`.
    PlanAdvice,
}

/// What an `EXPLAIN` explains.
#[derive(Clone, Debug, PartialEq)]
pub enum Explained {
    /// An INSERT.
    Insert(InsertStatement),
    /// A query.
    Query(QueryStatement),
    /// A statement set.
    StatementSet(StatementSet),
}

/// `EXPLAIN [PLAN FOR | detail, …] statement`.
#[derive(Clone, Debug, PartialEq)]
pub struct ExplainStatement {
    /// The details asked for, in order (none for `EXPLAIN` and `EXPLAIN PLAN FOR`).
    pub details: Vec<ExplainDetail>,
    /// The statement explained.
    pub target: Box<Explained>,
    /// Where `EXPLAIN` is written.
    pub pos: Position,
}

/// One statement of a script.
// A script holds a handful of these, each read once: boxing would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Statement {
    /// `SET 'key' = 'value'`.
    Set {
        /// The key.
        key: String,
        /// The value.
        value: String,
        /// Where the statement starts.
        pos: Position,
    },
    /// `SET` alone: show the configuration.
    ShowConfig {
        /// Where the statement starts.
        pos: Position,
    },
    /// `RESET ['key']`.
    Reset {
        /// The key, or every key.
        key: Option<String>,
        /// Where the statement starts.
        pos: Position,
    },
    /// `CREATE TABLE`.
    CreateTable(TableDef),
    /// `CREATE VIEW`.
    CreateView(ViewDef),
    /// `CREATE FUNCTION`.
    CreateFunction(FunctionDef),
    /// `DROP TABLE | VIEW | FUNCTION`.
    Drop(DropDef),
    /// `SHOW TABLES`.
    ShowTables {
        /// Where the statement starts.
        pos: Position,
    },
    /// `DESCRIBE name` / `DESC name`.
    Describe {
        /// The table or view described.
        name: ObjectPath,
    },
    /// `INSERT INTO … query`.
    Insert(InsertStatement),
    /// A query on its own.
    Query(QueryStatement),
    /// `EXPLAIN …`.
    Explain(ExplainStatement),
    /// A statement set.
    StatementSet(StatementSet),
}

impl Statement {
    /// Where the statement starts.
    pub fn pos(&self) -> Position {
        match self {
            Statement::Set { pos, .. }
            | Statement::ShowConfig { pos }
            | Statement::Reset { pos, .. }
            | Statement::ShowTables { pos } => *pos,
            Statement::CreateTable(t) => t.pos,
            Statement::CreateView(v) => v.pos,
            Statement::CreateFunction(f) => f.pos,
            Statement::Drop(d) => d.name.pos,
            Statement::Describe { name } => name.pos,
            Statement::Insert(i) => i.pos,
            Statement::Query(q) => q.pos,
            Statement::Explain(e) => e.pos,
            Statement::StatementSet(s) => s.pos,
        }
    }
}

/// How a statement set is opened.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum SetOpener {
    /// `BEGIN STATEMENT SET`.
    Begin,
    /// `EXECUTE STATEMENT SET BEGIN`.
    Execute,
    /// `EXPLAIN [details] STATEMENT SET BEGIN`.
    Explain(Vec<ExplainDetail>),
}

/// One `;`-separated piece of a script: a whole statement, or a part of a statement set (whose
/// INSERTs are pieces of their own; the script reader groups them).
// A script holds a handful of these, each read once: boxing would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Piece {
    /// A statement on its own.
    Whole(Statement),
    /// The opening of a statement set, with the first INSERT when it shares the piece
    /// (`EXECUTE STATEMENT SET BEGIN INSERT …;`).
    OpenSet {
        opener: SetOpener,
        first: Option<InsertStatement>,
        pos: Position,
    },
    /// `END`.
    End { pos: Position },
}

/// Reads one statement.
pub(crate) fn parse_piece(src: &Source) -> Result<Piece> {
    let mut c = Cursor::new(src)?;
    let pos = c.pos();
    if c.eat_words(&["BEGIN", "STATEMENT", "SET"]) {
        c.expect_end()?;
        return Ok(Piece::OpenSet {
            opener: SetOpener::Begin,
            first: None,
            pos,
        });
    }
    if c.eat_word("END") {
        c.expect_end()?;
        return Ok(Piece::End { pos });
    }
    if c.eat_words(&["EXECUTE", "STATEMENT", "SET"]) {
        return open_set(&mut c, SetOpener::Execute, pos);
    }
    if c.is_word("EXECUTE") && (c.is_word_at(1, "INSERT") || c.is_word_at(1, "SELECT")) {
        c.advance();
    }
    if c.eat_word("EXPLAIN") {
        let details = parse_explain_details(&mut c)?;
        if c.eat_words(&["STATEMENT", "SET"]) {
            return open_set(&mut c, SetOpener::Explain(details), pos);
        }
        let target = if c.is_word("INSERT") {
            Explained::Insert(parse_insert(&mut c)?)
        } else {
            Explained::Query(parse_query(&mut c, "INSERT or a query after EXPLAIN")?)
        };
        return Ok(Piece::Whole(Statement::Explain(ExplainStatement {
            details,
            target: Box::new(target),
            pos,
        })));
    }
    parse_statement(&mut c).map(Piece::Whole)
}

/// `BEGIN [INSERT …]` after `EXECUTE STATEMENT SET` / `EXPLAIN STATEMENT SET`.
fn open_set(c: &mut Cursor, opener: SetOpener, pos: Position) -> Result<Piece> {
    c.expect_word("BEGIN")?;
    let first = if c.at_end() {
        None
    } else if c.is_word("INSERT") {
        Some(parse_insert(c)?)
    } else {
        return Err(c.expected("INSERT (only INSERTs make a statement set)"));
    };
    Ok(Piece::OpenSet { opener, first, pos })
}

/// `PLAN FOR`, or Flink's detail list (`ESTIMATED_COST, CHANGELOG_MODE, …`), or nothing.
fn parse_explain_details(c: &mut Cursor) -> Result<Vec<ExplainDetail>> {
    if c.eat_words(&["PLAN", "FOR"]) {
        return Ok(Vec::new());
    }
    let detail = |c: &Cursor| {
        [
            ("ESTIMATED_COST", ExplainDetail::EstimatedCost),
            ("CHANGELOG_MODE", ExplainDetail::ChangelogMode),
            ("JSON_EXECUTION_PLAN", ExplainDetail::JsonExecutionPlan),
            ("PLAN_ADVICE", ExplainDetail::PlanAdvice),
        ]
        .into_iter()
        .find(|(w, _)| c.is_word(w))
        .map(|(_, d)| d)
    };
    let mut details = Vec::new();
    while let Some(d) = detail(c) {
        if details.contains(&d) {
            return Err(SqlError::Syntax {
                pos: c.pos(),
                message: format!("Duplicate EXPLAIN DETAIL is not allowed: {}", c.peek()),
            });
        }
        details.push(d);
        c.advance();
        if !c.eat(&Token::Comma) {
            break;
        }
    }
    Ok(details)
}

/// A statement other than EXPLAIN and the statement-set markers.
fn parse_statement(c: &mut Cursor) -> Result<Statement> {
    let pos = c.pos();
    if c.is_word("INSERT") {
        return parse_insert(c).map(Statement::Insert);
    }
    if c.is_word("SELECT") || c.is_word("WITH") || c.is_word("VALUES") || *c.peek() == Token::LParen
    {
        return parse_query(c, "a query").map(Statement::Query);
    }
    if c.eat_word("SET") {
        if c.at_end() {
            return Ok(Statement::ShowConfig { pos });
        }
        let key = c.string("a key in quotes: SET 'key' = 'value'")?;
        c.expect(&Token::Eq)?;
        let value = c.string("a value in quotes: SET 'key' = 'value'")?;
        c.expect_end()?;
        return Ok(Statement::Set { key, value, pos });
    }
    if c.eat_word("RESET") {
        let key = if c.at_end() {
            None
        } else {
            Some(c.string("a key in quotes: RESET 'key'")?)
        };
        c.expect_end()?;
        return Ok(Statement::Reset { key, pos });
    }
    if c.eat_word("CREATE") {
        return parse_create(c, pos);
    }
    if c.eat_word("DROP") {
        return parse_drop(c, pos).map(Statement::Drop);
    }
    if c.eat_words(&["SHOW", "TABLES"]) {
        c.expect_end()?;
        return Ok(Statement::ShowTables { pos });
    }
    if c.eat_word("DESCRIBE") || c.eat_word("DESC") {
        let name = c.path("a table name")?;
        c.expect_end()?;
        return Ok(Statement::Describe { name });
    }
    Err(unsupported_statement(c, pos))
}

/// `Unsupported: statement 'ALTER TABLE …'` at the statement's start.
fn unsupported_statement(c: &Cursor, pos: Position) -> SqlError {
    let words: Vec<String> = (0..2)
        .map(|n| c.peek_nth(n))
        .take_while(|t| matches!(t, Token::Word(_)))
        .map(|t| t.to_string().to_uppercase())
        .collect();
    let what = if words.is_empty() {
        format!("a statement starting with {}", c.peek())
    } else {
        format!("the statement {} …", words.join(" "))
    };
    SqlError::unsupported(Some(pos), what)
}

/// `CREATE …` after `CREATE`.
fn parse_create(c: &mut Cursor, pos: Position) -> Result<Statement> {
    if c.is_word("OR") {
        return Err(SqlError::unsupported(Some(c.pos()), "CREATE OR REPLACE"));
    }
    let temporary = c.eat_word("TEMPORARY");
    let system = temporary && c.eat_word("SYSTEM");
    if system && !c.is_word("FUNCTION") {
        return Err(c.expected("FUNCTION after TEMPORARY SYSTEM"));
    }
    if c.eat_word("TABLE") {
        return parse_create_table(c, temporary, pos).map(Statement::CreateTable);
    }
    if c.eat_word("VIEW") {
        return parse_create_view(c, temporary, pos).map(Statement::CreateView);
    }
    if c.eat_word("FUNCTION") {
        let scope = match (temporary, system) {
            (false, _) => FunctionScope::Catalog,
            (true, false) => FunctionScope::Temporary,
            (true, true) => FunctionScope::TemporarySystem,
        };
        return parse_create_function(c, scope, pos).map(Statement::CreateFunction);
    }
    Err(unsupported_statement_from(c, pos, "CREATE"))
}

/// An unsupported statement whose first word was already read.
fn unsupported_statement_from(c: &Cursor, pos: Position, first: &str) -> SqlError {
    let next = match c.peek() {
        Token::Word(w) => format!(" {}", w.value.to_uppercase()),
        _ => String::new(),
    };
    SqlError::unsupported(Some(pos), format!("the statement {first}{next} …"))
}

/// `[IF NOT EXISTS] name [(cols)] [COMMENT '…'] AS query`.
fn parse_create_view(c: &mut Cursor, temporary: bool, pos: Position) -> Result<ViewDef> {
    let if_not_exists = c.eat_words(&["IF", "NOT", "EXISTS"]);
    let name = c.path("a view name")?;
    let columns = if *c.peek() == Token::LParen {
        c.name_list("a column name")?
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    } else {
        Vec::new()
    };
    let comment = if c.eat_word("COMMENT") {
        Some(c.string("the view's comment in quotes")?)
    } else {
        None
    };
    c.expect_word("AS")?;
    let start = c.offset();
    let query = c.parse_rest_as_query()?;
    Ok(ViewDef {
        name,
        columns,
        text: c.source().text[start..].trim().to_string(),
        query,
        comment,
        temporary,
        if_not_exists,
        pos,
    })
}

/// `[IF NOT EXISTS] name AS 'identifier' [LANGUAGE JAVA|SCALA|PYTHON]`.
fn parse_create_function(
    c: &mut Cursor,
    scope: FunctionScope,
    pos: Position,
) -> Result<FunctionDef> {
    let if_not_exists = c.eat_words(&["IF", "NOT", "EXISTS"]);
    let name = c.path("a function name")?;
    c.expect_word("AS")?;
    let identifier = c.string("the function's identifier in quotes")?;
    let language = if c.eat_word("LANGUAGE") {
        let lang = [
            ("JAVA", FunctionLanguage::Java),
            ("SCALA", FunctionLanguage::Scala),
            ("PYTHON", FunctionLanguage::Python),
        ]
        .into_iter()
        .find(|(w, _)| c.is_word(w))
        .map(|(_, l)| l)
        .ok_or_else(|| c.expected("JAVA, SCALA or PYTHON"))?;
        c.advance();
        lang
    } else {
        FunctionLanguage::Java
    };
    if c.is_word("USING") {
        return Err(SqlError::unsupported(
            Some(c.pos()),
            "CREATE FUNCTION … USING JAR",
        ));
    }
    c.expect_end()?;
    Ok(FunctionDef {
        name,
        identifier,
        language,
        scope,
        if_not_exists,
        pos,
    })
}

/// `[TEMPORARY [SYSTEM]] TABLE|VIEW|FUNCTION [IF EXISTS] name` after `DROP`.
fn parse_drop(c: &mut Cursor, pos: Position) -> Result<DropDef> {
    let temporary = c.eat_word("TEMPORARY");
    let system = temporary && c.eat_word("SYSTEM");
    let kind = if c.eat_word("TABLE") {
        DropKind::Table
    } else if c.eat_word("VIEW") {
        DropKind::View
    } else if c.eat_word("FUNCTION") {
        DropKind::Function
    } else {
        return Err(unsupported_statement_from(c, pos, "DROP"));
    };
    if system && kind != DropKind::Function {
        return Err(c.expected("FUNCTION after TEMPORARY SYSTEM"));
    }
    let if_exists = c.eat_words(&["IF", "EXISTS"]);
    let name = c.path("a name")?;
    c.expect_end()?;
    Ok(DropDef {
        kind,
        name,
        temporary,
        if_exists,
    })
}

/// `INSERT INTO name [(cols)] query`.
fn parse_insert(c: &mut Cursor) -> Result<InsertStatement> {
    let pos = c.pos();
    let start = c.offset();
    c.expect_word("INSERT")?;
    if c.is_word("OVERWRITE") {
        return Err(SqlError::unsupported(
            Some(c.pos()),
            "INSERT OVERWRITE (a streaming job appends; Flink allows it for batch jobs only)",
        ));
    }
    c.expect_word("INTO")?;
    let target = c.path("the table to insert into")?;
    if c.is_word("PARTITION") {
        return Err(SqlError::unsupported(
            Some(c.pos()),
            "INSERT INTO … PARTITION (…)",
        ));
    }
    let columns =
        if *c.peek() == Token::LParen && !c.is_word_at(1, "SELECT") && !c.is_word_at(1, "WITH") {
            c.name_list("a column name")?
                .into_iter()
                .map(|(n, _)| n)
                .collect()
        } else {
            Vec::new()
        };
    let query = c.parse_rest_as_query()?;
    Ok(InsertStatement {
        target,
        columns,
        query,
        text: c.source().text[start..].trim().to_string(),
        pos,
    })
}

/// A query: the rest of the statement.
fn parse_query(c: &mut Cursor, what: &str) -> Result<QueryStatement> {
    let pos = c.pos();
    let start = c.offset();
    if !(c.is_word("SELECT")
        || c.is_word("WITH")
        || c.is_word("VALUES")
        || *c.peek() == Token::LParen)
    {
        return Err(c.expected(what));
    }
    let query = c.parse_rest_as_query()?;
    Ok(QueryStatement {
        query,
        text: c.source().text[start..].trim().to_string(),
        pos,
    })
}
