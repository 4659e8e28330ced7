//! Flink's `CREATE TABLE` ([`TableDef`]), read by a parser of our own over sqlparser's tokens:
//! Flink writes computed columns without a type, `WATERMARK FOR … AS …`, metadata columns,
//! `PRIMARY KEY … NOT ENFORCED`, `ROW<…>` and `WITH ('k' = 'v')`, none of which sqlparser reads
//! as Flink means them. Expressions inside (computed columns, watermarks) are handed to
//! sqlparser and kept as its [`Expr`].
//!
//! Types follow Flink's SQL defaults (its `FlinkTypeSystem`): a bare `VARCHAR` is `STRING`
//! (`VARCHAR(2147483647)`) and a bare `VARBINARY` is `BYTES`, as the Nexmark DDL relies on;
//! `CHAR` and `BINARY` are of length 1; `DECIMAL` is `DECIMAL(10, 0)`; `TIMESTAMP` and
//! `TIMESTAMP_LTZ` have precision 6 and `TIME` precision 0.

use sqlparser::ast::Expr;
use sqlparser::tokenizer::Token;

use crate::catalog::{nearest, ObjectPath};
use crate::error::{Position, Result, SqlError};
use crate::tokens::Cursor;
use crate::types::{
    DataType, LogicalType, RowField, TimestampKind, MAX_DECIMAL_PRECISION, MAX_LENGTH,
};

/// What a column is.
// A script holds a handful of these, each read once: boxing would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum ColumnKind {
    /// `name TYPE`: stored in (read from, written to) the connector.
    Physical(DataType),
    /// `name AS expr`: computed from the other columns when read; its type is the expression's.
    Computed(Expr),
    /// `name TYPE METADATA [FROM 'key'] [VIRTUAL]`: a connector's metadata (Kafka's timestamp…).
    Metadata {
        /// The column's type.
        ty: DataType,
        /// The metadata key, when it differs from the column's name.
        key: Option<String>,
        /// `VIRTUAL`: read only, not written by a sink.
        virtual_: bool,
    },
}

/// One column of a `CREATE TABLE`.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnDef {
    /// The column's name, case kept.
    pub name: String,
    /// Physical, computed or metadata.
    pub kind: ColumnKind,
    /// `COMMENT '…'`, if given.
    pub comment: Option<String>,
    /// Where the name is written.
    pub pos: Position,
}

/// `WATERMARK FOR column AS expr`.
#[derive(Clone, Debug, PartialEq)]
pub struct WatermarkDef {
    /// The event-time column.
    pub column: String,
    /// The watermark's expression (commonly `column - INTERVAL '5' SECOND`).
    pub expr: Expr,
    /// Where `WATERMARK` is written.
    pub pos: Position,
}

/// A `CREATE TABLE` statement.
#[derive(Clone, Debug, PartialEq)]
pub struct TableDef {
    /// The table's name as written.
    pub name: ObjectPath,
    /// The columns in order.
    pub columns: Vec<ColumnDef>,
    /// The watermark, if declared.
    pub watermark: Option<WatermarkDef>,
    /// `PRIMARY KEY (…) NOT ENFORCED` (as a table or a column constraint): the key's columns.
    pub primary_key: Vec<String>,
    /// `PARTITIONED BY (…)`.
    pub partition_keys: Vec<String>,
    /// `WITH (…)`: the options in the order written.
    pub options: Vec<(String, String)>,
    /// `COMMENT '…'` of the table.
    pub comment: Option<String>,
    /// `TEMPORARY`.
    pub temporary: bool,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// Where the statement starts.
    pub pos: Position,
}

impl TableDef {
    /// The column of a name, if there is one.
    pub fn column(&self, name: &str) -> Option<&ColumnDef> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// The value of an option, if given.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Flink's reason for refusing `PRIMARY KEY` without `NOT ENFORCED` (its own words).
const NOT_ENFORCED_REASON: &str = "Flink doesn't support ENFORCED mode for PRIMARY KEY constraint. \
     ENFORCED/NOT ENFORCED controls if the constraint checks are performed on the incoming/outgoing \
     data. Flink does not own the data therefore the only supported mode is the NOT ENFORCED mode";

/// The type names [`parse_type`] reads (for the nearest names of an unknown one).
const TYPE_NAMES: &[&str] = &[
    "BOOLEAN",
    "TINYINT",
    "SMALLINT",
    "INT",
    "INTEGER",
    "BIGINT",
    "FLOAT",
    "REAL",
    "DOUBLE",
    "DECIMAL",
    "DEC",
    "NUMERIC",
    "CHAR",
    "CHARACTER",
    "VARCHAR",
    "STRING",
    "BINARY",
    "VARBINARY",
    "BYTES",
    "DATE",
    "TIME",
    "TIMESTAMP",
    "TIMESTAMP_LTZ",
    "INTERVAL",
    "ROW",
    "ARRAY",
    "MAP",
];

/// Reads the rest of a `CREATE [TEMPORARY] TABLE` whose keywords the cursor has passed:
/// `[IF NOT EXISTS] name (…) [COMMENT '…'] [PARTITIONED BY (…)] [WITH (…)]`.
pub fn parse_create_table(c: &mut Cursor, temporary: bool, pos: Position) -> Result<TableDef> {
    let if_not_exists = c.eat_words(&["IF", "NOT", "EXISTS"]);
    let name = c.path("a table name")?;
    let mut def = TableDef {
        name,
        columns: Vec::new(),
        watermark: None,
        primary_key: Vec::new(),
        partition_keys: Vec::new(),
        options: Vec::new(),
        comment: None,
        temporary,
        if_not_exists,
        pos,
    };
    if c.is_word("LIKE") || c.is_word("AS") {
        return Err(SqlError::unsupported(
            Some(c.pos()),
            "CREATE TABLE … LIKE / AS SELECT: declare the table's columns",
        ));
    }
    let mut primary_at: Option<Position> = None;
    c.expect(&Token::LParen)?;
    loop {
        if c.is_word("WATERMARK") {
            let at = c.pos();
            if def.watermark.is_some() {
                return Err(SqlError::validation(
                    Some(at),
                    "Multiple WATERMARK statements is not supported yet.",
                ));
            }
            c.advance();
            c.expect_word("FOR")?;
            let (column, _) = c.ident("the event-time column")?;
            if *c.peek() == Token::Period {
                return Err(SqlError::unsupported(
                    Some(c.pos()),
                    "a watermark on a nested field: declare a computed column for it",
                ));
            }
            c.expect_word("AS")?;
            let start = c.index();
            let end = c.skip_expression();
            let expr = c.parse_expr(start, end, "the watermark's expression")?;
            def.watermark = Some(WatermarkDef {
                column,
                expr,
                pos: at,
            });
        } else if c.is_word("PRIMARY") || c.is_word("CONSTRAINT") {
            let at = c.pos();
            skip_constraint_name(c)?;
            c.expect_word("PRIMARY")?;
            c.expect_word("KEY")?;
            let cols = c.name_list("a key column")?;
            expect_not_enforced(c, at)?;
            set_primary_key(
                &mut def,
                &mut primary_at,
                cols.into_iter().map(|(n, _)| n).collect(),
                at,
            )?;
        } else {
            parse_column(c, &mut def, &mut primary_at)?;
        }
        if c.eat(&Token::Comma) {
            continue;
        }
        if c.eat(&Token::RParen) {
            break;
        }
        return Err(c.expected(", or )"));
    }
    loop {
        if c.eat_word("COMMENT") {
            def.comment = Some(c.string("the table's comment in quotes")?);
        } else if c.eat_word("PARTITIONED") {
            c.expect_word("BY")?;
            def.partition_keys = c
                .name_list("a partition column")?
                .into_iter()
                .map(|(n, _)| n)
                .collect();
        } else if c.is_word("WITH") {
            c.advance();
            def.options = parse_options(c)?;
        } else if c.is_word("LIKE") || c.is_word("DISTRIBUTED") {
            return Err(SqlError::unsupported(
                Some(c.pos()),
                format!("CREATE TABLE … {}", c.peek()),
            ));
        } else {
            break;
        }
    }
    c.expect_end()?;
    validate(&mut def)?;
    Ok(def)
}

/// Skips `CONSTRAINT name` if present.
fn skip_constraint_name(c: &mut Cursor) -> Result<()> {
    if c.eat_word("CONSTRAINT") {
        c.ident("a constraint name")?;
    }
    Ok(())
}

/// Requires `NOT ENFORCED` after a primary key, as Flink does.
fn expect_not_enforced(c: &mut Cursor, at: Position) -> Result<()> {
    if c.eat_words(&["NOT", "ENFORCED"]) {
        Ok(())
    } else {
        Err(SqlError::validation(Some(at), NOT_ENFORCED_REASON))
    }
}

fn set_primary_key(
    def: &mut TableDef,
    primary_at: &mut Option<Position>,
    cols: Vec<String>,
    at: Position,
) -> Result<()> {
    if primary_at.is_some() {
        return Err(SqlError::validation(
            Some(at),
            "Duplicate primary key definition",
        ));
    }
    *primary_at = Some(at);
    def.primary_key = cols;
    Ok(())
}

/// One column: physical, computed or metadata, with its constraint and comment.
fn parse_column(
    c: &mut Cursor,
    def: &mut TableDef,
    primary_at: &mut Option<Position>,
) -> Result<()> {
    let (name, pos) = c.ident("a column name, WATERMARK or PRIMARY KEY")?;
    let kind = if c.eat_word("AS") {
        let start = c.index();
        let end = c.skip_expression();
        ColumnKind::Computed(c.parse_expr(start, end, "the computed column's expression")?)
    } else {
        if matches!(c.peek(), Token::Comma | Token::RParen | Token::EOF) {
            return Err(c.expected(&format!(
                "a data type for column '{name}' (or AS expression for a computed column)"
            )));
        }
        let ty = parse_type(c)?;
        if c.eat_word("METADATA") {
            let key = if c.eat_word("FROM") {
                Some(c.string("the metadata key in quotes")?)
            } else {
                None
            };
            let virtual_ = c.eat_word("VIRTUAL");
            ColumnKind::Metadata { ty, key, virtual_ }
        } else {
            ColumnKind::Physical(ty)
        }
    };
    let mut comment = None;
    loop {
        if c.is_word("PRIMARY") || c.is_word("CONSTRAINT") {
            let at = c.pos();
            skip_constraint_name(c)?;
            c.expect_word("PRIMARY")?;
            c.expect_word("KEY")?;
            expect_not_enforced(c, at)?;
            set_primary_key(def, primary_at, vec![name.clone()], at)?;
        } else if c.eat_word("COMMENT") {
            comment = Some(c.string("the column's comment in quotes")?);
        } else {
            break;
        }
    }
    def.columns.push(ColumnDef {
        name,
        kind,
        comment,
        pos,
    });
    Ok(())
}

/// `('k' = 'v', …)`: keys and values are string literals, as in Flink.
fn parse_options(c: &mut Cursor) -> Result<Vec<(String, String)>> {
    c.expect(&Token::LParen)?;
    let mut options: Vec<(String, String)> = Vec::new();
    if c.eat(&Token::RParen) {
        return Ok(options);
    }
    loop {
        let at = c.pos();
        let key = c.string("an option key in quotes ('key' = 'value')")?;
        c.expect(&Token::Eq)?;
        let value = c.string(&format!("the value of option '{key}' in quotes"))?;
        if options.iter().any(|(k, _)| *k == key) {
            return Err(SqlError::validation(
                Some(at),
                format!("Option '{key}' is given twice in WITH"),
            ));
        }
        options.push((key, value));
        if c.eat(&Token::Comma) {
            continue;
        }
        c.expect(&Token::RParen)?;
        return Ok(options);
    }
}

/// Flink's checks of a table's schema: unique column names, the watermark's column and the key's
/// columns exist (the key's among the physical ones, made NOT NULL), the partition columns exist.
fn validate(def: &mut TableDef) -> Result<()> {
    for (i, col) in def.columns.iter().enumerate() {
        if def.columns[..i].iter().any(|c| c.name == col.name) {
            return Err(SqlError::validation(
                Some(col.pos),
                format!("A column named '{}' already exists in the table.", col.name),
            ));
        }
    }
    let names: Vec<String> = def.columns.iter().map(|c| c.name.clone()).collect();
    let unknown = |name: &str, pos: Position| SqlError::UnknownName {
        pos: Some(pos),
        kind: "Column",
        name: name.to_string(),
        nearest_names: nearest(name, names.iter().map(String::as_str)),
    };
    if let Some(w) = &def.watermark {
        if def.column(&w.column).is_none() {
            return Err(unknown(&w.column, w.pos));
        }
    }
    for key in def.primary_key.clone() {
        let Some(col) = def.columns.iter_mut().find(|c| c.name == key) else {
            return Err(unknown(&key, def.pos));
        };
        let ColumnKind::Physical(ty) = &mut col.kind else {
            return Err(SqlError::validation(
                Some(col.pos),
                format!("Could not create a PRIMARY KEY with column '{key}': a PRIMARY KEY constraint must be declared on physical columns."),
            ));
        };
        ty.nullable = false;
    }
    for key in &def.partition_keys {
        if def.column(key).is_none() {
            return Err(unknown(key, def.pos));
        }
    }
    Ok(())
}

/// Reads `(n)` if present.
fn opt_length(c: &mut Cursor, what: &str) -> Result<Option<u64>> {
    if !c.eat(&Token::LParen) {
        return Ok(None);
    }
    let n = c.integer(what)?;
    c.expect(&Token::RParen)?;
    Ok(Some(n))
}

/// A length of a string or binary type: 1..=2147483647.
fn length(n: Option<u64>, default: u32, type_name: &str, at: Position) -> Result<u32> {
    match n {
        None => Ok(default),
        Some(n) if (1..=u64::from(MAX_LENGTH)).contains(&n) => Ok(n as u32),
        Some(_) => Err(SqlError::validation(
            Some(at),
            format!("{type_name} length must be between 1 and {MAX_LENGTH} (both inclusive)."),
        )),
    }
}

/// A precision of a time type: 0..=9.
fn time_precision(n: Option<u64>, default: u8, type_name: &str, at: Position) -> Result<u8> {
    match n {
        None => Ok(default),
        Some(n) if n <= 9 => Ok(n as u8),
        Some(_) => Err(SqlError::validation(
            Some(at),
            format!("{type_name} precision must be between 0 and 9 (both inclusive)."),
        )),
    }
}

/// Reads a Flink data type with its nullability and `ARRAY` suffixes.
pub fn parse_type(c: &mut Cursor) -> Result<DataType> {
    let mut ty = parse_base_type(c)?;
    loop {
        if c.eat_words(&["NOT", "NULL"]) {
            ty.nullable = false;
        } else if c.eat_word("NULL") {
            ty.nullable = true;
        } else if c.eat_word("ARRAY") {
            ty = DataType::new(LogicalType::Array(Box::new(ty)));
        } else if c.is_word("MULTISET") {
            return Err(SqlError::unsupported(Some(c.pos()), "the MULTISET type"));
        } else {
            return Ok(ty);
        }
    }
}

fn parse_base_type(c: &mut Cursor) -> Result<DataType> {
    let at = c.pos();
    let word = match c.peek() {
        Token::Word(w) if w.quote_style.is_none() => w.value.to_uppercase(),
        _ => return Err(c.expected("a data type")),
    };
    c.advance();
    let logical = match word.as_str() {
        "BOOLEAN" => LogicalType::Boolean,
        "TINYINT" => LogicalType::TinyInt,
        "SMALLINT" => LogicalType::SmallInt,
        "INT" | "INTEGER" => LogicalType::Int,
        "BIGINT" => LogicalType::BigInt,
        "FLOAT" | "REAL" => LogicalType::Float,
        "DOUBLE" => {
            c.eat_word("PRECISION");
            LogicalType::Double
        }
        "DECIMAL" | "DEC" | "NUMERIC" => {
            let (mut precision, mut scale) = (10u64, 0u64);
            if c.eat(&Token::LParen) {
                precision = c.integer("the decimal's precision")?;
                scale = if c.eat(&Token::Comma) {
                    c.integer("the decimal's scale")?
                } else {
                    0
                };
                c.expect(&Token::RParen)?;
            }
            if !(1..=u64::from(MAX_DECIMAL_PRECISION)).contains(&precision) {
                return Err(SqlError::validation(
                    Some(at),
                    format!("Decimal precision must be between 1 and {MAX_DECIMAL_PRECISION} (both inclusive)."),
                ));
            }
            if scale > precision {
                return Err(SqlError::validation(
                    Some(at),
                    format!("Decimal scale must be between 0 and the precision {precision} (both inclusive)."),
                ));
            }
            LogicalType::Decimal {
                precision: precision as u8,
                scale: scale as u8,
            }
        }
        "CHAR" | "CHARACTER" => {
            if c.eat_word("VARYING") {
                let n = opt_length(c, "the length")?;
                LogicalType::Varchar {
                    length: length(n, MAX_LENGTH, "VARCHAR", at)?,
                }
            } else {
                let n = opt_length(c, "the length")?;
                LogicalType::Char {
                    length: length(n, 1, "CHAR", at)?,
                }
            }
        }
        "VARCHAR" => {
            let n = opt_length(c, "the length")?;
            LogicalType::Varchar {
                length: length(n, MAX_LENGTH, "VARCHAR", at)?,
            }
        }
        "STRING" => LogicalType::Varchar { length: MAX_LENGTH },
        "BINARY" => {
            let n = opt_length(c, "the length")?;
            LogicalType::Binary {
                length: length(n, 1, "BINARY", at)?,
            }
        }
        "VARBINARY" => {
            let n = opt_length(c, "the length")?;
            LogicalType::Varbinary {
                length: length(n, MAX_LENGTH, "VARBINARY", at)?,
            }
        }
        "BYTES" => LogicalType::Varbinary { length: MAX_LENGTH },
        "DATE" => LogicalType::Date,
        "TIME" => {
            let n = opt_length(c, "the precision")?;
            let precision = time_precision(n, 0, "Time", at)?;
            if c.is_word("WITH") {
                return Err(SqlError::unsupported(Some(c.pos()), "TIME WITH TIME ZONE"));
            }
            c.eat_words(&["WITHOUT", "TIME", "ZONE"]);
            LogicalType::Time { precision }
        }
        "TIMESTAMP" => {
            let n = opt_length(c, "the precision")?;
            let precision = time_precision(n, 6, "Timestamp", at)?;
            if c.eat_words(&["WITH", "LOCAL", "TIME", "ZONE"]) {
                LogicalType::TimestampLtz {
                    precision,
                    kind: TimestampKind::Regular,
                }
            } else if c.is_word("WITH") {
                return Err(SqlError::unsupported(
                    Some(c.pos()),
                    "TIMESTAMP WITH TIME ZONE (Flink does not support it either; use TIMESTAMP_LTZ)",
                ));
            } else {
                c.eat_words(&["WITHOUT", "TIME", "ZONE"]);
                LogicalType::Timestamp {
                    precision,
                    kind: TimestampKind::Regular,
                }
            }
        }
        "TIMESTAMP_LTZ" => {
            let n = opt_length(c, "the precision")?;
            LogicalType::TimestampLtz {
                precision: time_precision(n, 6, "Timestamp", at)?,
                kind: TimestampKind::Regular,
            }
        }
        "INTERVAL" => parse_interval(c)?,
        "ROW" => LogicalType::Row(parse_row_fields(c)?),
        "ARRAY" => {
            c.expect(&Token::Lt)?;
            let element = parse_type(c)?;
            c.expect_gt()?;
            LogicalType::Array(Box::new(element))
        }
        "MAP" => {
            c.expect(&Token::Lt)?;
            let key = parse_type(c)?;
            c.expect(&Token::Comma)?;
            let value = parse_type(c)?;
            c.expect_gt()?;
            LogicalType::Map(Box::new(key), Box::new(value))
        }
        "MULTISET" | "RAW" | "STRUCTURED" | "VARIANT" => {
            return Err(SqlError::unsupported(Some(at), format!("the {word} type")));
        }
        other => {
            return Err(SqlError::UnknownName {
                pos: Some(at),
                kind: "Type",
                name: other.to_string(),
                nearest_names: nearest(other, TYPE_NAMES.iter().copied()),
            })
        }
    };
    Ok(DataType::new(logical))
}

/// `INTERVAL unit [(p)] [TO unit [(p)]]`: year–month or day–time.
fn parse_interval(c: &mut Cursor) -> Result<LogicalType> {
    const UNITS: &[&str] = &["YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND"];
    let unit = |c: &mut Cursor| -> Result<usize> {
        let i = UNITS.iter().position(|u| c.is_word(u)).ok_or_else(|| {
            c.expected("an interval unit (YEAR, MONTH, DAY, HOUR, MINUTE, SECOND)")
        })?;
        c.advance();
        opt_length(c, "the precision")?;
        Ok(i)
    };
    let from = unit(c)?;
    let to = if c.eat_word("TO") { unit(c)? } else { from };
    let year_month = from <= 1;
    if to < from || (year_month != (to <= 1)) {
        return Err(SqlError::Syntax {
            pos: c.pos(),
            message: format!(
                "INTERVAL {} TO {} is not an interval type",
                UNITS[from], UNITS[to]
            ),
        });
    }
    Ok(if year_month {
        LogicalType::IntervalYearMonth
    } else {
        LogicalType::IntervalDayTime
    })
}

/// `<name type [COMMENT '…'], …>` or `(name type, …)`.
fn parse_row_fields(c: &mut Cursor) -> Result<Vec<RowField>> {
    let angle = if c.eat(&Token::Lt) {
        true
    } else if c.eat(&Token::LParen) {
        false
    } else {
        return Err(c.expected("< or ( after ROW"));
    };
    let mut fields: Vec<RowField> = Vec::new();
    let closes = |c: &Cursor| {
        if angle {
            c.is_gt()
        } else {
            *c.peek() == Token::RParen
        }
    };
    if !closes(c) {
        loop {
            let (name, pos) = c.ident("a field name")?;
            if fields.iter().any(|f| f.name == name) {
                return Err(SqlError::validation(
                    Some(pos),
                    format!("Field names must be unique. Found duplicates: [{name}]"),
                ));
            }
            let ty = parse_type(c)?;
            if c.eat_word("COMMENT") {
                c.string("the field's comment in quotes")?;
            }
            fields.push(RowField { name, ty });
            if !c.eat(&Token::Comma) {
                break;
            }
        }
    }
    if angle {
        c.expect_gt()?;
    } else {
        c.expect(&Token::RParen)?;
    }
    Ok(fields)
}
