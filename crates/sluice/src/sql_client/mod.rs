//! # `sluice sql` without a script: Flink's SQL client, interactive
//!
//! [`run`] reads statements from a reader (a terminal or a pipe): lines accumulate until a `;`
//! outside quotes and comments ends a statement (`sluice_sql::split_statements` decides), then
//! each statement runs in one session of a [`SqlGateway`] — an in-process
//! [`SqlGatewayService`](crate::sql_gateway::SqlGatewayService), the same engine Sluice's SQL
//! gateway serves — and its result prints as Flink's SQL client prints it in tableau mode
//! (`tableau`): `[INFO]` lines for `SET`/`CREATE`/`INSERT`, boxed tables for `SHOW` results, a
//! query's rows with the `op` column as they arrive, `[ERROR]` with the reason (its line and
//! column) for a refused statement, after which the client goes on.
//!
//! `SET 'sql-client.execution.result-mode'`: `tableau` is what this client prints; `table` and
//! `changelog` (full-screen views of a terminal) are refused with the reason. `QUIT;` / `EXIT;`
//! end the session, as does the input's end.

pub mod tableau;

use std::io::{BufRead, Write};
use std::time::Duration;

use sluice_rest::sql_gateway::{GatewayError, SqlGateway};
use sluice_rest_api::{ExecuteStatementRequest, OpenSessionRequest};
use sluice_sql::split_statements;

/// The client's own setting (Flink's name).
const RESULT_MODE: &str = "sql-client.execution.result-mode";

/// Whether `buffer` ends outside a statement: every statement in it ended with `;` (a piece
/// of text after it would start a new one).
pub fn complete(buffer: &str) -> bool {
    if split_statements(buffer).is_empty() {
        return false;
    }
    let probe = format!("{buffer}\n\u{1}");
    split_statements(&probe)
        .last()
        .is_some_and(|s| s.text == "\u{1}")
}

/// What a client-side statement does, if the statement is one.
fn client_statement(text: &str) -> Option<Result<&'static str, String>> {
    let words: Vec<String> = text
        .split_whitespace()
        .map(|w| w.to_ascii_uppercase())
        .collect();
    if words.len() == 1 && (words[0] == "QUIT" || words[0] == "EXIT") {
        return Some(Ok("quit"));
    }
    if words.first().map(String::as_str) != Some("SET") || !text.contains(RESULT_MODE) {
        return None;
    }
    let value = text
        .rsplit('=')
        .next()
        .map(|v| v.trim().trim_matches('\'').to_ascii_lowercase())
        .unwrap_or_default();
    Some(match value.as_str() {
        "tableau" => Ok("[INFO] Session property has been set."),
        "table" | "changelog" => Err(format!(
            "[ERROR] '{RESULT_MODE}' = '{value}' is not supported: the table and changelog modes are full-screen views of a terminal, which Sluice's client does not draw; it prints every result in tableau mode (the changelog's row kinds are its 'op' column)."
        )),
        other => Err(format!(
            "[ERROR] '{RESULT_MODE}' = '{other}': the result mode is one of tableau, table, changelog (Sluice's client supports tableau)."
        )),
    })
}

fn error_lines(e: &GatewayError) -> String {
    format!(
        "[ERROR] Could not execute SQL statement. Reason:\n{}",
        e.errors.join("\n")
    )
}

/// Runs one statement and prints its result.
fn statement(
    gateway: &dyn SqlGateway,
    session: &str,
    text: &str,
    out: &mut dyn Write,
) -> Result<(), GatewayError> {
    let io = |e: std::io::Error| GatewayError::new(500, format!("writing the result: {e}"));
    let op = gateway.execute(
        session,
        ExecuteStatementRequest {
            statement: text.to_string(),
            ..Default::default()
        },
    )?;
    let upper = text.trim_start().to_ascii_uppercase();
    let mut token = 0;
    let mut header: Option<(tableau::Table, usize)> = None;
    let mut content = Vec::new();
    let mut columns = Vec::new();
    loop {
        let page = gateway.fetch(session, &op, token)?;
        token += 1;
        let results = page.results.unwrap_or_default();
        if page.is_query_result == Some(true) {
            if header.is_none() {
                let (t, names) = tableau::query_table(&results.columns);
                writeln!(out, "{}\n{}\n{}", t.border(), t.line(&names), t.border()).map_err(io)?;
                header = Some((t, 0));
            }
            if let Some((t, n)) = &mut header {
                for r in &results.data {
                    writeln!(out, "{}", t.line(&tableau::query_row(r))).map_err(io)?;
                    *n += 1;
                }
            }
        } else {
            columns = results.columns.clone();
            content.extend(results.data);
        }
        if page.result_type == "EOS" {
            break;
        }
        if page.is_query_result == Some(true) {
            // A running query with no new rows yet: look again shortly.
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    if let Some((t, n)) = header {
        writeln!(out, "{}", t.border()).map_err(io)?;
        writeln!(
            out,
            "Received a total of {n} row{}",
            if n == 1 { "" } else { "s" }
        )
        .map_err(io)?;
        return Ok(());
    }
    let lines: Vec<String> = if columns.first().is_some_and(|c| c.name == "job id") {
        let id = content
            .first()
            .and_then(|r| r.fields.first())
            .map(tableau::show)
            .unwrap_or_default();
        vec![
            "[INFO] Submitting SQL update statement to the cluster...".into(),
            "[INFO] SQL update statement has been successfully submitted to the cluster:".into(),
            format!("Job ID: {id}"),
        ]
    } else if columns.len() == 1 && columns[0].name == "result" {
        let text = content
            .first()
            .and_then(|r| r.fields.first())
            .map(tableau::show)
            .unwrap_or_default();
        match text.as_str() {
            "OK" if upper.starts_with("SET") => {
                vec!["[INFO] Session property has been set.".into()]
            }
            "OK" if upper.starts_with("RESET") => {
                vec!["[INFO] Session property has been reset.".into()]
            }
            "OK" => vec!["[INFO] Execute statement succeeded.".into()],
            _ => vec![text],
        }
    } else {
        tableau::content_table(&columns, &content)
    };
    for l in lines {
        writeln!(out, "{l}").map_err(io)?;
    }
    Ok(())
}

/// Reads statements from `input` until its end (or `QUIT;`) and prints their results on `out`;
/// with `prompt`, prompts as Flink's client does (`Flink SQL>`). A refused statement prints its
/// error and the client goes on; the count of refused statements is returned.
pub fn run(
    gateway: &dyn SqlGateway,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    prompt: bool,
) -> std::io::Result<usize> {
    let session = gateway
        .open_session(OpenSessionRequest::default())
        .map_err(|e| std::io::Error::other(e.errors.join("; ")))?;
    let mut buffer = String::new();
    let mut failed = 0;
    loop {
        if prompt {
            write!(
                out,
                "{}",
                if buffer.trim().is_empty() {
                    "Flink SQL> "
                } else {
                    "> "
                }
            )?;
            out.flush()?;
        }
        let mut line = String::new();
        let eof = input.read_line(&mut line)? == 0;
        buffer.push_str(&line);
        if !(eof || complete(&buffer)) {
            continue;
        }
        for s in split_statements(&buffer) {
            match client_statement(&s.text) {
                Some(Ok("quit")) => {
                    let _ = gateway.close_session(&session);
                    return Ok(failed);
                }
                Some(Ok(message)) => writeln!(out, "{message}")?,
                Some(Err(message)) => {
                    failed += 1;
                    writeln!(out, "{message}")?;
                }
                None => {
                    if let Err(e) = statement(gateway, &session, &s.text, out) {
                        failed += 1;
                        writeln!(out, "{}", error_lines(&e))?;
                    }
                }
            }
            writeln!(out)?;
        }
        buffer.clear();
        if eof {
            let _ = gateway.close_session(&session);
            return Ok(failed);
        }
    }
}

/// `sluice sql` without a script: [`run`] over stdin and stdout on an in-process gateway whose
/// jobs take `env`'s settings; prompts only on a terminal. The count of refused statements.
pub fn run_stdin(env: crate::EnvArgs) -> std::io::Result<usize> {
    let registry = std::sync::Arc::new(sluice_rest::JobRegistry::new());
    let gateway = crate::sql_gateway::SqlGatewayService::new(env, &registry);
    let stdin = std::io::stdin();
    let prompt = std::io::IsTerminal::is_terminal(&stdin);
    run(
        &gateway,
        &mut stdin.lock(),
        &mut std::io::stdout().lock(),
        prompt,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_end_at_a_semicolon_outside_quotes_and_comments() {
        assert!(complete("SELECT 1;"));
        assert!(complete("SELECT 1; -- done\n"));
        assert!(!complete("SELECT 1"));
        assert!(!complete("SELECT ';"));
        assert!(!complete("SELECT 1 /* ; */"));
        assert!(!complete("SELECT 1; SELECT 2"));
        assert!(!complete("   \n"));
        assert!(complete("SELECT\n  1\n;"));
    }

    #[test]
    fn the_result_mode_is_tableau() {
        assert!(
            client_statement("SET 'sql-client.execution.result-mode' = 'tableau'")
                .unwrap()
                .is_ok()
        );
        let e = client_statement("SET 'sql-client.execution.result-mode' = 'table'")
            .unwrap()
            .unwrap_err();
        assert!(e.contains("not supported"), "{e}");
        assert!(client_statement("SET 'parallelism.default' = '2'").is_none());
        assert_eq!(client_statement("quit").unwrap(), Ok("quit"));
    }
}
