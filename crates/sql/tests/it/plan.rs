//! The query planner on the official Nexmark queries: each plans (or is refused with its
//! reason), Sluice's EXPLAIN is compared with committed goldens, and the differences from
//! Flink 2.3's own EXPLAIN (`tests/golden/flink-explain/`) are reported, not failed.
//!
//! `UPDATE_GOLDEN=1 cargo test -p sluice-sql --test it plan::` rewrites Sluice's goldens.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sluice_sql::plan::{explain_plan, operator_name, operator_uids, plan_insert, PhysicalNode};
use sluice_sql::{PlannedStatement, Session, SqlError};

fn queries_dir() -> Option<PathBuf> {
    sluice_testkit::nexmark_queries(env!("CARGO_MANIFEST_DIR"))
}

/// The variables of the Flink goldens (`tests/golden/flink-explain/README.md`).
fn vars() -> BTreeMap<String, String> {
    [
        ("TPS", "10000000"),
        ("EVENTS_NUM", "100000"),
        ("PERSON_PROPORTION", "1"),
        ("AUCTION_PROPORTION", "3"),
        ("BID_PROPORTION", "46"),
        ("NEXMARK_TABLE", "datagen"),
        ("FLINK_HOME", "/opt/flink"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

fn golden_dir(which: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(which)
}

/// Runs DDL + views + the query file; returns the session and its INSERT's plan result.
fn plan_query_file(
    dir: &Path,
    q: &str,
) -> (Session, Result<String, SqlError>, Option<Vec<PhysicalNode>>) {
    let mut s = Session::new();
    let mut script = String::new();
    for f in ["ddl_gen.sql", "ddl_views.sql", &format!("{q}.sql")] {
        script
            .push_str(&std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}")));
        script.push_str(";\n");
    }
    let stmts = s
        .execute_script(&script, &vars())
        .unwrap_or_else(|e| panic!("{q}: {e}"));
    let insert = stmts
        .into_iter()
        .find_map(|p| match p {
            PlannedStatement::Insert(i) => Some(i),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{q} has no INSERT"));
    match plan_insert(&s, &insert) {
        Ok(plan) => {
            for r in &plan.roots {
                r.check().unwrap_or_else(|e| panic!("{q}: {e}"));
            }
            let text = explain_plan(&plan);
            (s, Ok(text), Some(plan.roots))
        }
        Err(e) => (s, Err(e), None),
    }
}

const PLANNED: &[&str] = &[
    "q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8", "q9", "q11", "q12", "q13", "q14", "q15", "q16",
    "q17", "q18", "q19", "q20", "q21", "q22",
];

fn section<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    let start = format!("== {name} ==");
    let mut on = false;
    let mut out = Vec::new();
    for l in text.lines() {
        if l.starts_with("== ") {
            on = l == start;
            continue;
        }
        if on && !l.is_empty() {
            out.push(l);
        }
    }
    out
}

#[test]
fn the_official_queries_plan_and_explain_as_the_goldens_say() {
    let Some(dir) = queries_dir() else { return };
    let update = std::env::var("UPDATE_GOLDEN").is_ok();
    let mut failures = Vec::new();
    for q in PLANNED {
        let (_, text, _) = plan_query_file(&dir, q);
        let text = match text {
            Ok(t) => t,
            Err(e) => {
                failures.push(format!("{q}: {e}"));
                continue;
            }
        };
        let path = golden_dir("sluice-explain").join(format!("{q}.txt"));
        if update {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_default();
        if want != text {
            failures.push(format!(
                "{q}: EXPLAIN differs from {}:\n{text}",
                path.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Reports (does not fail on) the lines of the physical and execution plans that differ from
/// Flink 2.3's EXPLAIN of the same query.
#[test]
fn differences_from_flinks_explain_are_reported() {
    let Some(dir) = queries_dir() else { return };
    let mut report = String::new();
    let mut same = 0;
    let mut total = 0;
    for q in PLANNED {
        let (_, text, _) = plan_query_file(&dir, q);
        let Ok(text) = text else { continue };
        let flink = std::fs::read_to_string(golden_dir("flink-explain").join(format!("{q}.txt")))
            .unwrap_or_default();
        for sec in ["Optimized Physical Plan", "Optimized Execution Plan"] {
            let ours = section(&text, sec);
            let theirs = section(&flink, sec);
            for (i, line) in theirs.iter().enumerate() {
                total += 1;
                match ours.get(i) {
                    Some(o) if o == line => same += 1,
                    Some(o) => report.push_str(&format!(
                        "{q} [{sec}] line {i}:\n  flink:  {line}\n  sluice: {o}\n"
                    )),
                    None => report.push_str(&format!(
                        "{q} [{sec}] line {i}:\n  flink:  {line}\n  sluice: (none)\n"
                    )),
                }
            }
            for o in ours.iter().skip(theirs.len()) {
                report.push_str(&format!("{q} [{sec}] extra:\n  sluice: {o}\n"));
            }
        }
    }
    eprintln!("{report}\n{same} of {total} Flink plan lines identical");
}

const EXTRAS: &[&str] = &["x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8"];

/// Plans the last statement (a SELECT) of `tests/golden/flink-explain/extra/<x>.sql`.
fn plan_extra(x: &str) -> Result<String, SqlError> {
    let path = golden_dir("flink-explain")
        .join("extra")
        .join(format!("{x}.sql"));
    let script =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut s = Session::new();
    let stmts = s.execute_script(&script, &BTreeMap::new())?;
    let Some(PlannedStatement::Query(q)) = stmts.into_iter().last() else {
        panic!("{x}: the script ends with a SELECT")
    };
    sluice_sql::plan::plan_query(&s, &q).map(|p| {
        for r in &p.roots {
            r.check().unwrap_or_else(|e| panic!("{x}: {e}"));
        }
        explain_plan(&p)
    })
}

/// Compares the physical and execution sections line by line; returns the report and the
/// counts of identical and all Flink lines.
fn diff_sections(name: &str, ours: &str, flink: &str) -> (String, usize, usize) {
    let mut report = String::new();
    let (mut same, mut total) = (0, 0);
    for sec in ["Optimized Physical Plan", "Optimized Execution Plan"] {
        let o = section(ours, sec);
        let t = section(flink, sec);
        for (i, line) in t.iter().enumerate() {
            total += 1;
            match o.get(i) {
                Some(l) if l == line => same += 1,
                Some(l) => report.push_str(&format!(
                    "{name} [{sec}] line {i}:\n  flink:  {line}\n  sluice: {l}\n"
                )),
                None => report.push_str(&format!(
                    "{name} [{sec}] line {i}:\n  flink:  {line}\n  sluice: (none)\n"
                )),
            }
        }
        for l in o.iter().skip(t.len()) {
            report.push_str(&format!("{name} [{sec}] extra:\n  sluice: {l}\n"));
        }
    }
    (report, same, total)
}

#[test]
fn the_extra_shapes_plan_as_their_goldens_say_and_differences_from_flink_are_reported() {
    let update = std::env::var("UPDATE_GOLDEN").is_ok();
    let mut report = String::new();
    let (mut same, mut total) = (0, 0);
    let mut failures = Vec::new();
    for x in EXTRAS {
        let text = match plan_extra(x) {
            Ok(t) => t,
            Err(e) => {
                failures.push(format!("{x}: {e}"));
                continue;
            }
        };
        let path = golden_dir("sluice-explain")
            .join("extra")
            .join(format!("{x}.txt"));
        if update {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &text).unwrap();
        } else if std::fs::read_to_string(&path).unwrap_or_default() != text {
            failures.push(format!(
                "{x}: EXPLAIN differs from {}:\n{text}",
                path.display()
            ));
        }
        let flink = std::fs::read_to_string(
            golden_dir("flink-explain")
                .join("extra")
                .join(format!("{x}.txt")),
        )
        .unwrap_or_default();
        let (r, s, t) = diff_sections(x, &text, &flink);
        report.push_str(&r);
        same += s;
        total += t;
    }
    eprintln!("{report}\n{same} of {total} Flink plan lines identical");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn operators_have_flink_names_and_stable_ids() {
    let Some(dir) = queries_dir() else { return };
    let (_, _, roots) = plan_query_file(&dir, "q2");
    let roots = roots.expect("q2 plans");
    let ids = operator_uids(&roots);
    let (_, _, again) = plan_query_file(&dir, "q2");
    assert_eq!(
        ids,
        operator_uids(&again.expect("q2 plans")),
        "the same SQL gives the same ids"
    );
    assert_eq!(ids[0], "5_sink");
    assert_eq!(ids.last().map(String::as_str), Some("1_source"));
    let calc = &roots[0].inputs[0];
    assert_eq!(
        operator_name(calc),
        "Calc(select=[bid.auction AS auction, bid.price AS price], where=[((event_type = 2) AND (MOD(bid.auction, 123) = 0))])"
    );
}

/// q23 (added upstream in December 2025) does not parse on Flink 2.3 (`A.dateTime` without
/// backticks); Sluice must refuse it too, never plan it.
#[test]
fn q23_is_refused_as_flink_refuses_it() {
    let Some(dir) = queries_dir() else { return };
    if !dir.join("q23.sql").is_file() {
        return;
    }
    let mut s = Session::new();
    let mut script = String::new();
    for f in ["ddl_gen.sql", "ddl_views.sql", "q23.sql"] {
        script.push_str(&std::fs::read_to_string(dir.join(f)).unwrap());
        script.push_str(";\n");
    }
    let out = s.execute_script(&script, &vars());
    let refused = match out {
        Err(e) => Some(e),
        Ok(stmts) => stmts.into_iter().find_map(|p| match p {
            PlannedStatement::Insert(i) => plan_insert(&s, &i).err(),
            _ => None,
        }),
    };
    let e = refused.expect("q23 must be refused");
    // Refused where Flink refuses it: the unquoted `dateTime` (a reserved word) after `A.`.
    let q23 = std::fs::read_to_string(dir.join("q23.sql")).unwrap();
    let line = q23
        .lines()
        .position(|l| l.contains("A.dateTime"))
        .expect("q23 reads A.dateTime");
    let offset = script.len() - q23.len() - 2;
    let line = script[..offset].lines().count() + line + 1;
    match &e {
        SqlError::Syntax { pos, message } => {
            assert_eq!(pos.line, line as u64, "q23: {e}");
            assert!(message.contains("dateTime"), "q23: {e}");
        }
        other => panic!("q23: a syntax error at line {line} expected, got {other}"),
    }
}

/// q6 does not validate on Flink 2.3 (`Column 'rownum' not found in any table`, line 13 of
/// q6.sql): its WHERE filters `rownum` in the SELECT whose own select list defines it, where no
/// table has it. Sluice refuses it for that reason, at that place, saying where `rownum` is
/// defined.
#[test]
fn q6_is_refused_as_flink_refuses_it() {
    let Some(dir) = queries_dir() else { return };
    let mut s = Session::new();
    let mut script = String::new();
    for f in ["ddl_gen.sql", "ddl_views.sql"] {
        script.push_str(&std::fs::read_to_string(dir.join(f)).unwrap());
        script.push_str(";\n");
    }
    let q6 = std::fs::read_to_string(dir.join("q6.sql")).unwrap();
    // Where `rownum` is filtered in q6.sql (Flink: line 13, column 11), in the whole script.
    let (line, col) = q6
        .lines()
        .enumerate()
        .find_map(|(i, l)| l.find("WHERE rownum").map(|c| (i, c + "WHERE ".len())))
        .expect("q6 filters rownum");
    let line = script.lines().count() + line + 1;
    script.push_str(&q6);
    let refused = match s.execute_script(&script, &vars()) {
        Err(e) => Some(e),
        Ok(stmts) => stmts.into_iter().find_map(|p| match p {
            PlannedStatement::Insert(i) => plan_insert(&s, &i).err(),
            _ => None,
        }),
    };
    let e = refused.expect("q6 must be refused").to_string();
    assert!(
        e.contains("Column 'rownum' not found in any table"),
        "q6: {e}"
    );
    assert!(
        e.contains(&format!("line {line}, column {}", col + 1)),
        "q6 refused at line {line}, column {}: {e}",
        col + 1
    );
}

/// `(node name, changelogMode)` of each line of an `EXPLAIN CHANGELOG_MODE` physical plan.
fn modes(text: &str) -> Vec<(String, String)> {
    section(text, "Optimized Physical Plan")
        .iter()
        .filter_map(|l| {
            let l = l.trim_start_matches(|c: char| " +-:|".contains(c));
            let name = l.split('(').next()?.to_string();
            let mode = l
                .rsplit("changelogMode=[")
                .next()?
                .split(']')
                .next()?
                .to_string();
            Some((name, mode))
        })
        .collect()
}

/// Flink's `EXPLAIN CHANGELOG_MODE` of the updating extras that write into a sink: every
/// node's row kinds as Flink 2.3 infers them (`extra/x28`, `x33`, `x35`).
#[test]
fn explain_changelog_mode_gives_flinks_row_kinds() {
    for x in ["x28", "x33", "x35"] {
        let dir = golden_dir("flink-explain").join("extra");
        let script = std::fs::read_to_string(dir.join(format!("{x}.sql"))).unwrap();
        let flink = std::fs::read_to_string(dir.join(format!("{x}.txt"))).unwrap();
        let mut s = Session::new();
        let stmts = s.execute_script(&script, &BTreeMap::new()).unwrap();
        let Some(PlannedStatement::Explain(e)) = stmts.into_iter().last() else {
            panic!("{x}: the script ends with an EXPLAIN")
        };
        let ours = sluice_sql::plan::explain(&s, &e).unwrap();
        assert_eq!(modes(&ours), modes(&flink), "{x}:\n{ours}");
    }
    // The other details are refused, not ignored.
    let mut s = Session::new();
    let stmts = s
        .execute_script(
            "CREATE TABLE t (a INT) WITH ('connector' = 'datagen');\nEXPLAIN ESTIMATED_COST SELECT a FROM t;",
            &BTreeMap::new(),
        )
        .unwrap();
    let Some(PlannedStatement::Explain(e)) = stmts.into_iter().last() else {
        panic!()
    };
    let err = sluice_sql::plan::explain(&s, &e).unwrap_err().to_string();
    assert!(
        err.contains("ESTIMATED_COST") && err.contains("line 2"),
        "{err}"
    );
}
