//! # The official Nexmark SQL, run and verified
//!
//! `sluice nexmark --query qN --sql --queries DIR [--verify]` in a library: [`OfficialQuery`]
//! prepares the official files as the benchmark's runner runs them
//! (`sluice_table::official`), builds the job, and with `--verify` checks the rows it wrote
//! against two oracles, each a [`Verdict`]:
//!
//! * **the hand-written twin** ([`crate::nexmark`]), where one exists: the same query written
//!   with the DataStream API, run on the same generated events; the sorted lines compared in the
//!   twin's CSV form ([`compare::handwritten_line`]).
//! * **DuckDB** ([`duckdb`]), where a translation exists: the generator's events
//!   are written as a flat csv table (`sluice_table::official::dump_events_script`, the same
//!   DDL, options and parallelism, so the same events), our own DuckDB SQL of the query runs
//!   over them in Python, and the rows are compared by value ([`compare::sluice_row`],
//!   [`compare::duckdb_row`]). Rows Sluice dropped as late would make DuckDB's answer differ:
//!   their count is reported, and any makes the comparison fail rather than pass inexactly (the
//!   generator's events are in event-time order per split, so there are none).
//!
//! An updating query (q4, q9, q15–q19) is compared by its final table: the capture records each
//! row's kind (`sluice_table::official::capture_changelog_sinks`), and the changelog applied
//! (`final_table`: `+I`/`+U` add a row, `-U`/`-D` remove one) is what both oracles check. Where
//! ROW_NUMBER's order leaves ties (q19's top 10 by price alone), the rows are compared on the
//! columns ties cannot change ([`compare::tie_free_columns`]).
//!
//! The capture (the query's `blackhole` sink as a csv file sink), the events and DuckDB's
//! answer live in a scratch directory, removed when every verdict passed and kept (and named)
//! otherwise.

pub mod compare;
pub mod duckdb;
pub mod partitioned;
pub mod proctime;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sluice_datastream::StreamEnv;
use sluice_runtime::sinks::committed_lines;
use sluice_sql::plan::PhysicalOp;
use sluice_sql::{DataType, SqlError};
use sluice_table::official::{
    capture_changelog_sinks, dump_events_script, final_table, runner_script, runner_vars,
};
use sluice_table::{PlannedJob, QueryOutput, SqlJob, SqlScript};

use crate::nexmark::{NexmarkJob, OutputKind, Query};

/// A query's name as the CLI takes it (`q5`, `Q5` or `5`) in its canonical form (`q5`): any
/// official query for `--sql`; the hand-written ones are [`Query`].
pub fn query_name(s: &str) -> Result<String, String> {
    let t = s.trim().to_ascii_lowercase();
    let n = t.strip_prefix('q').unwrap_or(&t);
    match n.parse::<u32>() {
        Ok(n) => Ok(format!("q{n}")),
        Err(_) => Err(format!("'{s}' is not a Nexmark query (q0, q1, …)")),
    }
}

/// Why the official query could not run or be checked.
#[derive(Debug, thiserror::Error)]
pub enum OfficialError {
    /// The SQL was refused (syntax, unknown name, unsupported feature, bad option).
    #[error("{0}")]
    Sql(#[from] SqlError),
    /// Anything else: files, the runs, the oracle.
    #[error("{0}")]
    Failed(String),
}

fn failed(e: impl std::fmt::Display) -> OfficialError {
    OfficialError::Failed(e.to_string())
}

/// One oracle's verdict.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// `hand-written` or `DuckDB`.
    pub oracle: &'static str,
    /// Whether the rows equal the oracle's.
    pub passed: bool,
    /// One line when it passed (`verified: …`), else what differs.
    pub text: String,
}

/// An official query, prepared.
pub struct OfficialQuery {
    /// Its name (`q5`).
    pub name: String,
    job: PlannedJob,
    dir: PathBuf,
    vars: BTreeMap<String, String>,
    events: u64,
    rate: u64,
    /// With `--verify`: the scratch directory (the capture is `out/` in it) and DuckDB's Python.
    verify: Option<(PathBuf, Option<PathBuf>)>,
}

impl OfficialQuery {
    /// Reads `ddl_gen.sql`, `ddl_views.sql` and `{name}.sql` from `dir` with the runner's
    /// variables for `events` at `rate`, and plans the one job. With `verify`, the query's
    /// blackhole sink is captured, and DuckDB must be importable (checked now, before any run).
    pub fn prepare(
        dir: &Path,
        name: &str,
        events: u64,
        rate: u64,
        verify: bool,
    ) -> Result<OfficialQuery, OfficialError> {
        let mut text = runner_script(dir, name)?;
        let verify = if verify {
            let work = std::env::temp_dir().join(format!(
                "sluice-nexmark-{name}-{}-{}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos())
            ));
            std::fs::create_dir_all(&work)
                .map_err(|e| failed(format!("creating {}: {e}", work.display())))?;
            // A query writing its own files (q10's partitioned filesystem table) writes them
            // under the scratch directory; a blackhole sink is captured as a csv file sink.
            if text.contains("'connector' = 'blackhole'") {
                text = capture_changelog_sinks(&text, &work.join("out"))?;
            }
            let py = match duckdb::translation(name) {
                Some(_) => Some(duckdb::require_duckdb().map_err(failed)?),
                None => None,
            };
            Some((work, py))
        } else {
            None
        };
        let mut vars = runner_vars(events, rate);
        if let Some((work, _)) = &verify {
            vars.insert("NEXMARK_DIR".into(), work.display().to_string());
        }
        let script = SqlScript::prepare(&text, &vars)?;
        let jobs = script.jobs();
        let [job] = jobs.as_slice() else {
            return Err(failed(format!(
                "{name}.sql holds {} jobs; one was expected",
                jobs.len()
            )));
        };
        Ok(OfficialQuery {
            name: name.to_string(),
            job: (*job).clone(),
            dir: dir.to_path_buf(),
            vars,
            events,
            rate,
            verify,
        })
    }

    /// Adds the query's job to `env`.
    pub fn build(&self, env: &StreamEnv) -> Result<SqlJob, OfficialError> {
        Ok(self.job.build(env, QueryOutput::Stdout)?)
    }

    /// What the finished run dropped (dead letters, late rows), one line each.
    pub fn drops(job: &SqlJob) -> Vec<String> {
        sluice_table::DroppedRows::summary([&job.dropped()])
    }

    /// The types of the query's sink columns (how its captured csv is read).
    pub fn sink_types(&self) -> Vec<DataType> {
        self.job
            .plan
            .roots
            .iter()
            .find_map(|r| match &r.op {
                PhysicalOp::Sink(s) => Some(s.columns.iter().map(|c| c.1.clone()).collect()),
                _ => None,
            })
            .unwrap_or_default()
    }

    /// Checks the finished run's rows (`job`, run at `parallelism`) against the hand-written
    /// twin and DuckDB, whichever exist; refused when neither does.
    pub fn verify(&self, job: &SqlJob, parallelism: usize) -> Result<Vec<Verdict>, OfficialError> {
        let Some((work, py)) = &self.verify else {
            return Err(failed("the query was prepared without --verify"));
        };
        let out = work.join("out");
        let mut verdicts = Vec::new();
        let captured = if out.exists() {
            // The capture holds each row's kind: the table its changelog leaves.
            let changelog = committed_lines(&out)
                .map_err(|e| failed(format!("reading {}: {e}", out.display())))?;
            final_table(&changelog).map_err(|e| {
                failed(format!(
                    "{}: the captured changelog in {}: {e}",
                    self.name,
                    out.display()
                ))
            })?
        } else {
            let (lines, verdict) = self.partitioned_output()?;
            verdicts.push(verdict);
            lines
        };
        let types = self.sink_types();
        let twin = Query::parse(&self.name).ok();
        if let Some(q) = twin {
            verdicts.push(self.against_twin(q, parallelism, &captured, &types, work)?);
        }
        if let Some(py) = py {
            let mut v = self.against_duckdb(job, py, parallelism, &captured, &types, work)?;
            if twin.is_none() && v.passed {
                v.text
                    .push_str(&format!(" ({} has no hand-written twin)", self.name));
            }
            verdicts.push(v);
        }
        if verdicts.is_empty() {
            return Err(failed(format!(
                "{} has neither a hand-written twin nor a DuckDB translation to verify against",
                self.name
            )));
        }
        if verdicts.iter().all(|v| v.passed) {
            let _ = std::fs::remove_dir_all(work);
        } else {
            verdicts.push(Verdict {
                oracle: "files",
                passed: false,
                text: format!(
                    "the capture, events and answers are kept in {}",
                    work.display()
                ),
            });
        }
        Ok(verdicts)
    }

    fn against_twin(
        &self,
        q: Query,
        parallelism: usize,
        captured: &[String],
        types: &[DataType],
        work: &Path,
    ) -> Result<Verdict, OfficialError> {
        let name = &self.name;
        let mut sql: Vec<String> = captured
            .iter()
            .map(|l| compare::handwritten_line(l, types))
            .collect();
        sql.sort();
        let twin = work.join("handwritten.csv");
        let env = StreamEnv::new();
        let job = NexmarkJob {
            query: q,
            events: self.events,
            rate: self.rate,
            parallelism,
        };
        job.build(&env, OutputKind::File(twin.clone()))
            .map_err(failed)?;
        env.execute().map_err(failed)?;
        // One file at parallelism 1, a directory of part files above.
        let mut hand = if twin.is_dir() {
            committed_lines(&twin).map_err(failed)?
        } else {
            std::fs::read_to_string(&twin)
                .map_err(|e| failed(format!("reading {}: {e}", twin.display())))?
                .lines()
                .map(str::to_string)
                .collect()
        };
        hand = hand
            .iter()
            .map(|l| compare::empty_field_as_null(l))
            .collect();
        if q.is_updating() {
            // The twin's upserts by its first column: the last one per key is the final table.
            hand = crate::nexmark::final_rows(&hand, 1);
        }
        hand.sort();
        if sql == hand {
            return Ok(Verdict {
                oracle: "hand-written",
                passed: true,
                text: format!(
                    "verified: {name} (official SQL) equals the hand-written {name}: {} rows",
                    sql.len()
                ),
            });
        }
        let first = sql
            .iter()
            .zip(&hand)
            .find(|(s, h)| s != h)
            .map(|(s, h)| format!("SQL: {s}\n  hand-written: {h}"))
            .unwrap_or_default();
        Ok(Verdict {
            oracle: "hand-written",
            passed: false,
            text: format!(
                "{name}: the official SQL's {} rows differ from the hand-written query's {}; first difference:\n  {first}",
                sql.len(),
                hand.len()
            ),
        })
    }

    fn against_duckdb(
        &self,
        job: &SqlJob,
        py: &Path,
        parallelism: usize,
        captured: &[String],
        types: &[DataType],
        work: &Path,
    ) -> Result<Verdict, OfficialError> {
        let name = &self.name;
        let late = job.late.count();
        if late > 0 {
            return Ok(Verdict {
                oracle: "DuckDB",
                passed: false,
                text: format!(
                    "{name}: {late} rows were dropped as late; DuckDB's answer counts every row, \
                     so the two cannot be compared exactly"
                ),
            });
        }
        let events = self.dump_events(parallelism, work)?;
        let side_input = self.side_input();
        let answer = duckdb::answer(
            py,
            name,
            &work.join("events.csv"),
            side_input.as_deref(),
            work,
        )
        .map_err(failed)?;
        let mut ours = captured
            .iter()
            .map(|l| compare::sluice_row(l, types))
            .collect::<Result<Vec<_>, _>>()
            .map_err(failed)?;
        if name == "q12" {
            let open = job.late.open_at_end();
            return Ok(proctime::verdict_q12(&ours, &answer, types, open, events));
        }
        let mut theirs = answer
            .iter()
            .map(|l| compare::duckdb_row(l, types))
            .collect::<Result<Vec<_>, _>>()
            .map_err(failed)?;
        if let Some(columns) = compare::tie_free_columns(name) {
            ours = compare::project(ours, columns);
            theirs = compare::project(theirs, columns);
        }
        ours.sort();
        theirs.sort();
        Ok(match compare::first_difference(&ours, &theirs) {
            None => Verdict {
                oracle: "DuckDB",
                passed: true,
                text: format!(
                    "verified: {name} (official SQL) equals DuckDB's answer over the same {events} \
                     events: {} rows; rows dropped as late: 0",
                    ours.len()
                ),
            },
            Some(diff) => Verdict {
                oracle: "DuckDB",
                passed: false,
                text: format!("{name}: the official SQL's answer differs from DuckDB's: {diff}"),
            },
        })
    }

    /// Writes the generator's events (the same table and parallelism as the run) to
    /// `work/events.csv`; how many.
    fn dump_events(&self, parallelism: usize, work: &Path) -> Result<usize, OfficialError> {
        let dir = work.join("events");
        let text = dump_events_script(&self.dir, &dir)?;
        let script = SqlScript::prepare(&text, &self.vars)?;
        let env = StreamEnv::new();
        env.set_parallelism(parallelism);
        for job in script.jobs() {
            job.build(&env, QueryOutput::Stdout)?;
        }
        env.execute().map_err(failed)?;
        let lines = committed_lines(&dir).map_err(failed)?;
        let path = work.join("events.csv");
        let mut text = lines.join("\n");
        text.push('\n');
        std::fs::write(&path, text)
            .map_err(|e| failed(format!("writing {}: {e}", path.display())))?;
        Ok(lines.len())
    }

    /// The rows of the query's partitioned filesystem sink (q10) and the verdict on its
    /// partitions: at the end of a bounded job every partition is committed (Flink's
    /// committer commits all at end of input) and no in-progress file is left.
    fn partitioned_output(&self) -> Result<(Vec<String>, Verdict), OfficialError> {
        let name = &self.name;
        let sink = self
            .job
            .plan
            .roots
            .iter()
            .find_map(|r| match &r.op {
                PhysicalOp::Sink(s) => s.path.last().cloned(),
                _ => None,
            })
            .ok_or_else(|| failed(format!("{name} has no sink")))?;
        let Some(sluice_sql::CatalogTable::Table(t)) = self.job.session.catalog.get(&sink) else {
            return Err(failed(format!("{name}'s sink '{sink}' is not a table")));
        };
        let path = t
            .option("path")
            .ok_or_else(|| failed(format!("{name}'s sink '{sink}' has no path")))?;
        let root = PathBuf::from(path.strip_prefix("file://").unwrap_or(path));
        let keys = t.partition_keys.clone();
        let names: Vec<String> = t.columns.iter().map(|c| c.name.to_string()).collect();
        if keys.is_empty() || !names.ends_with(&keys) {
            return Err(failed(format!(
                "{name}'s sink '{sink}' is neither a blackhole nor a table partitioned by its last columns"
            )));
        }
        let success = t
            .option("sink.partition-commit.success-file.name")
            .unwrap_or("_SUCCESS");
        let out = partitioned::read(&root, &keys, success).map_err(failed)?;
        let passed = out.partitions > 0 && out.committed == out.partitions && out.in_progress == 0;
        let text = format!(
            "{name}: {} rows in {} partitions ({}), {} with {success}, {} in-progress files left",
            out.lines.len(),
            out.partitions,
            keys.iter()
                .map(|k| format!("{k}=…"))
                .collect::<Vec<_>>()
                .join("/"),
            out.committed,
            out.in_progress
        );
        let text = if passed {
            format!("verified: {text}")
        } else {
            text
        };
        Ok((
            out.lines,
            Verdict {
                oracle: "partitions",
                passed,
                text,
            },
        ))
    }

    /// q13's side input: the file of its `side_input` table, if the script has one.
    fn side_input(&self) -> Option<PathBuf> {
        let sluice_sql::CatalogTable::Table(t) = self.job.session.catalog.get("side_input")? else {
            return None;
        };
        let path = t.option("path").or_else(|| t.option("connector.path"))?;
        Some(PathBuf::from(path.strip_prefix("file://").unwrap_or(path)))
    }
}
