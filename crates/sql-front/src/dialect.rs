//! [`FlinkDialect`]: `sqlparser`'s generic rules plus what Flink's SQL (Calcite's parser) writes
//! differently.
//!
//! * Identifiers are quoted with backticks (`` `dateTime` ``); double quotes are not identifiers.
//! * Tables may be read `FOR SYSTEM_TIME AS OF t` (lookup and temporal joins).
//! * Aggregates take `FILTER (WHERE …)`.
//! * A table-valued function takes a table as `TABLE name`, as in
//!   `TABLE(TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL '10' SECOND))`. The parser reads such an
//!   argument as a call of the pseudo-function `TABLE` with the table's name as its one argument
//!   ([`table_argument`] reads it back); no expression of Flink's is written that way.
//! * A row type is written `ROW<name type, …>` or `ROW(name type, …)` (in `CAST(x AS ROW<…>)`);
//!   it is read as sqlparser's `STRUCT` type with named fields. A nested row type closes with
//!   `> >` (the tokenizer reads `>>` as one operator).

use sqlparser::ast::{
    DataType, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList,
    FunctionArguments, Ident, ObjectName, StructBracketKind, StructField,
};
use sqlparser::dialect::Dialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

/// The pseudo-function a `TABLE name` argument is read as.
pub const TABLE_ARGUMENT: &str = "TABLE";

/// Flink's SQL dialect for `sqlparser`.
#[derive(Debug, Default, Clone, Copy)]
pub struct FlinkDialect;

impl Dialect for FlinkDialect {
    fn is_identifier_start(&self, ch: char) -> bool {
        ch.is_alphabetic() || ch == '_'
    }

    fn is_identifier_part(&self, ch: char) -> bool {
        ch.is_alphanumeric() || ch == '_' || ch == '$'
    }

    fn is_delimited_identifier_start(&self, ch: char) -> bool {
        ch == '`'
    }

    fn supports_table_versioning(&self) -> bool {
        true
    }

    /// `SELECT /*+ STATE_TTL('t' = '1d') */ …`: Flink's query hints, read (not skipped as
    /// comments) so that the planner applies or refuses each.
    fn supports_comment_optimizer_hint(&self) -> bool {
        true
    }

    /// `count(*) FILTER (WHERE …)`, as Nexmark's q15 and q16 write it.
    fn supports_filter_during_aggregation(&self) -> bool {
        true
    }

    /// `ROW<name type, …>` / `ROW(name type, …)`, Flink's row type.
    fn parse_data_type(&self, parser: &mut Parser) -> Option<Result<DataType, ParserError>> {
        let is_row = matches!(
            &parser.peek_token().token,
            Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("ROW")
        );
        let (open, close, kind) = match parser.peek_nth_token(1).token {
            Token::Lt => (Token::Lt, Token::Gt, StructBracketKind::AngleBrackets),
            Token::LParen => (Token::LParen, Token::RParen, StructBracketKind::Parentheses),
            _ => return None,
        };
        if !is_row {
            return None;
        }
        parser.next_token();
        Some(parse_row_fields(parser, &open, &close).map(|fields| DataType::Struct(fields, kind)))
    }

    fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
        // `TABLE name` (not `TABLE(`): a table argument of a table-valued function.
        let is_table = matches!(
            &parser.peek_token().token,
            Token::Word(w) if w.keyword == Keyword::TABLE
        );
        let then_name = matches!(&parser.peek_nth_token(1).token, Token::Word(_));
        if !(is_table && then_name) {
            return None;
        }
        parser.next_token();
        Some(parser.parse_object_name(false).map(|name| {
            let parts: Vec<Ident> = name
                .0
                .iter()
                .filter_map(|p| p.as_ident().cloned())
                .collect();
            Expr::Function(Function {
                name: ObjectName::from(vec![Ident::new(TABLE_ARGUMENT)]),
                uses_odbc_syntax: false,
                parameters: FunctionArguments::None,
                args: FunctionArguments::List(FunctionArgumentList {
                    duplicate_treatment: None,
                    args: vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(
                        Expr::CompoundIdentifier(parts),
                    ))],
                    clauses: vec![],
                }),
                filter: None,
                null_treatment: None,
                over: None,
                within_group: vec![],
            })
        }))
    }
}

/// The `name type, …` of a row type, between `open` and `close`.
fn parse_row_fields(
    parser: &mut Parser,
    open: &Token,
    close: &Token,
) -> Result<Vec<StructField>, ParserError> {
    parser.expect_token(open)?;
    let mut fields = Vec::new();
    loop {
        let field_name = parser.parse_identifier()?;
        let field_type = parser.parse_data_type()?;
        fields.push(StructField {
            field_name: Some(field_name),
            field_type,
            options: None,
        });
        if !parser.consume_token(&Token::Comma) {
            break;
        }
    }
    parser.expect_token(close)?;
    Ok(fields)
}

/// The table a `TABLE name` argument names (its parts), if `expr` is one.
pub fn table_argument(expr: &Expr) -> Option<&[Ident]> {
    let Expr::Function(f) = expr else {
        return None;
    };
    if f.name.to_string() != TABLE_ARGUMENT {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    match list.args.as_slice() {
        [FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::CompoundIdentifier(parts)))] => {
            Some(parts)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(sql: &str) -> Vec<sqlparser::ast::Statement> {
        Parser::parse_sql(&FlinkDialect, sql).unwrap()
    }

    #[test]
    fn window_table_functions_take_table_arguments() {
        let sql = "SELECT auction, count(*) FROM TABLE(HOP(TABLE bid, DESCRIPTOR(`dateTime`), \
                   INTERVAL '2' SECOND, INTERVAL '10' SECOND)) GROUP BY auction, window_start, window_end";
        let text = parse(sql)[0].to_string();
        assert!(text.contains("HOP(TABLE(bid)"), "{text}");
    }

    #[test]
    fn lookup_joins_read_for_system_time_as_of() {
        let sql = "SELECT * FROM b JOIN side FOR SYSTEM_TIME AS OF b.p_time AS S ON b.k = S.key";
        assert!(parse(sql)[0]
            .to_string()
            .contains("FOR SYSTEM_TIME AS OF b.p_time"));
    }

    #[test]
    fn casts_read_flinks_row_types() {
        for sql in [
            "SELECT CAST(ROW(a, b) AS ROW<id BIGINT, `dateTime` TIMESTAMP(3)>) FROM t",
            "SELECT CAST(ROW(a, b) AS ROW(id BIGINT, `dateTime` TIMESTAMP(3))) FROM t",
        ] {
            let text = parse(sql)[0].to_string();
            assert!(text.contains("`dateTime` TIMESTAMP(3)"), "{text}");
        }
    }

    #[test]
    fn backticks_quote_identifiers() {
        let text = parse("SELECT `dateTime` FROM bid")[0].to_string();
        assert_eq!(text, "SELECT `dateTime` FROM bid");
    }
}
