//! `sluice sql` without a script is Flink's SQL client: a script piped to its stdin (statements
//! over several lines, a `;` inside a string, comments) prints `[INFO]` lines, a query's rows in
//! tableau mode with the `op` column (checked against the input file), Flink's `[ERROR]` with
//! the line and column of a refused statement, the refusal of an unsupported result mode, and
//! goes on after each error.

use std::io::Write;
use std::process::{Command, Stdio};

#[test]
fn a_piped_script_prints_as_flinks_sql_client_in_tableau_mode() {
    let dir = std::env::temp_dir().join(format!("sluice-sql-client-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("fruit.csv");
    let rows = [(1, "apple", 3), (2, "pear;ripe", 8), (3, "plum", 12)];
    let text: String = rows
        .iter()
        .map(|(i, n, q)| format!("{i},{n},{q}\n"))
        .collect();
    std::fs::write(&input, text).unwrap();
    let script = format!(
        "SET 'sql-client.execution.result-mode' = 'tableau';\n\
         SET 'sql-client.execution.result-mode' = 'changelog';\n\
         CREATE TABLE fruit (\n  id BIGINT, -- the key; not a statement end\n  name STRING,\n  qty INT\n)\n\
         WITH ('connector' = 'filesystem', 'path' = '{}', 'format' = 'csv');\n\
         /* a comment; with a semicolon */\n\
         SELECT id, name FROM fruit WHERE qty > 5 OR name = 'x;y';\n\
         SELECT nope FROM fruit;\n\
         SHOW TABLES;\n",
        input.display()
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("sql")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    // One refused result mode and one refused statement: exit status 1.
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(
        out.contains("[INFO] Session property has been set."),
        "{out}"
    );
    assert!(
        out.contains("'changelog' is not supported") && out.contains("tableau"),
        "{out}"
    );
    assert!(out.contains("[INFO] Execute statement succeeded."), "{out}");
    // The query's rows, from the file: qty > 5.
    let table: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("| op |"))
        .take_while(|l| !l.starts_with("Received"))
        .collect();
    assert!(!table.is_empty(), "{out}");
    let mut got: Vec<(String, String, String)> = table
        .iter()
        .filter(|l| l.starts_with("| +I"))
        .map(|l| {
            let c: Vec<String> = l.split('|').map(|s| s.trim().to_string()).collect();
            (c[1].clone(), c[2].clone(), c[3].clone())
        })
        .collect();
    got.sort();
    let expected: Vec<(String, String, String)> = rows
        .iter()
        .filter(|(_, _, q)| *q > 5)
        .map(|(i, n, _)| ("+I".to_string(), i.to_string(), n.to_string()))
        .collect();
    assert_eq!(got, expected, "{out}");
    assert!(out.contains("Received a total of 2 rows"), "{out}");
    assert!(
        out.contains("[ERROR] Could not execute SQL statement. Reason:"),
        "{out}"
    );
    assert!(out.contains("line 1, column 8"), "{out}");
    // After the error the client went on.
    assert!(
        out.contains("| table name |") && out.contains("fruit"),
        "{out}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
