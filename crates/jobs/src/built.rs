//! [`BuiltJob`]: a built-in job added to an environment, with the handles its run summary and
//! `doctor fix`'s comparison read (final sums, counters, the real sink); [`Merged`]: what the
//! run summary reports of a live job's builds.

use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;

use crate::connectors::{read_table, Result, SinkHandle};
use crate::proof::JobOutput;
use crate::real_scenarios::RealScenario;
use crate::{passthrough, scenarios, skew};

/// One of the built-in jobs, built.
pub enum BuiltJob {
    /// Generator → map → discard.
    Passthrough(passthrough::PassthroughJob),
    /// The skew job, its `--output` and its `--to` sink.
    Skew(skew::SkewJob, Option<PathBuf>, Option<SinkHandle>),
    /// One of the doctor's scenarios on generated input.
    Scenario(scenarios::ScenarioJob),
    /// A scenario on real systems (`--from` / `--to`).
    RealScenario(RealScenario),
    /// A SQL job (`sluice sql`): the rows its operators could not evaluate or dropped as late.
    Sql(sluice_table::DroppedRows),
}

impl BuiltJob {
    /// What the finished job produced, in a form two runs compare by (`None`: nothing to
    /// compare); a PostgreSQL sink's table is read back.
    pub fn output(&self) -> Result<Option<JobOutput>> {
        Ok(match self {
            BuiltJob::RealScenario(s) => match &s.sink {
                Some(SinkHandle::Postgres { conn, table, .. }) => {
                    Some(JobOutput::Table(read_table(conn, table)?))
                }
                _ => Some(JobOutput::Count(s.sunk.load(Relaxed))),
            },
            BuiltJob::Skew(j, _, _) => Some(JobOutput::Sums(j.final_sums())),
            BuiltJob::Passthrough(p) => Some(JobOutput::Count(p.discarded.count())),
            // Its tables are its output; nothing is kept in memory to compare.
            BuiltJob::Sql(_) => None,
            BuiltJob::Scenario(s) => match (s.skew_job(), s.table(), s.lookup_output()) {
                (Some(j), _, _) => Some(JobOutput::Sums(j.final_sums())),
                (None, Some(t), _) => Some(JobOutput::Table(t.contents())),
                (None, None, Some(d)) => Some(JobOutput::Lookup(d)),
                // A counting sink: the count compares (no record lost or repeated).
                (None, None, None) => Some(JobOutput::Count(s.records_sunk())),
            },
        })
    }
}

/// What the summary reports of a run's builds (one per plan of a live job, plus the builds a
/// plan change checked and never ran, which hold nothing): counters summed, final sums merged
/// with the later plan's figure winning.
pub struct Merged {
    /// The skew job's `--output`.
    pub output: Option<std::path::PathBuf>,
    /// The final sums, merged.
    pub finals: Option<std::collections::BTreeMap<i64, i64>>,
    /// Records the passthrough job discarded.
    pub discarded: Option<u64>,
    /// A scenario's name and what reached its sink.
    pub scenario_sunk: Option<(String, u64)>,
    /// The newest build's real sink.
    pub sinks: Vec<SinkHandle>,
    /// What a SQL job dropped (failed evaluation, late), summed over builds: the summary's
    /// lines, none when nothing was dropped.
    pub sql_dropped: Vec<String>,
}

impl Merged {
    /// Merges `builds`, oldest first.
    pub fn of(builds: Vec<BuiltJob>) -> Merged {
        let mut m = Merged {
            output: None,
            finals: None,
            discarded: None,
            scenario_sunk: None,
            sinks: Vec::new(),
            sql_dropped: Vec::new(),
        };
        let mut counted = 0;
        let mut name = None;
        let mut sinks = Vec::new();
        let mut sql = Vec::new();
        for b in builds {
            match b {
                BuiltJob::Skew(j, output, sink) => {
                    m.finals.get_or_insert_default().extend(j.final_sums());
                    m.output = output;
                    sinks.extend(sink);
                }
                BuiltJob::Passthrough(p) => {
                    *m.discarded.get_or_insert(0) += p.discarded.count();
                }
                BuiltJob::Scenario(s) => {
                    match s.skew_job() {
                        Some(j) => m.finals.get_or_insert_default().extend(j.final_sums()),
                        None => counted += s.records_sunk(),
                    }
                    name = Some(s.name.clone());
                }
                BuiltJob::Sql(dropped) => sql.push(dropped),
                BuiltJob::RealScenario(s) => {
                    counted += s.sunk.load(Relaxed);
                    name = Some(s.name.clone());
                    sinks.extend(s.sink);
                }
            }
        }
        if let Some(name) = name {
            // For skew and under-provisioned the sink's figure is the keys in the final sums.
            let n = counted + m.finals.as_ref().map_or(0, |f| f.len() as u64);
            m.scenario_sunk = Some((name, n));
        }
        m.sql_dropped = sluice_table::DroppedRows::summary(&sql);
        // The newest build's sink (with no plan change, the only one).
        m.sinks = sinks.pop().into_iter().collect();
        m
    }
}
