//! # Nexmark on Sluice
//!
//! The Nexmark queries (docs/src/reference/nexmark-generator.md#queries) written with the public
//! DataStream API, over the
//! deterministic generator of `sluice-nexmark` (reference mode: the same events for the same
//! count, whatever the parallelism).
//!
//! - [`NexmarkJob`] builds one query: source (`Source: Nexmark`, one generator split per subtask)
//!   → `Timestamps/Watermarks` (`dateTime − 4 s`, chained to the source, so each split's
//!   watermark follows its own events and nothing is late) → the query → a sink.
//! - Each query's rows implement [`Row`]: one canonical CSV line, the same text the DuckDB
//!   oracle (`tests/oracle/nexmark_oracle.py`) prints, so outputs compare as sorted lines.
//! - Updating queries (q4) emit a changelog of upserts; [`final_rows`] replays it into the final
//!   table, as the bounded check prescribes (docs/src/reference/nexmark-generator.md#correctness).
//!
//! ```
//! use sluice_jobs::nexmark::{NexmarkJob, Query, OutputKind};
//! let env = sluice_datastream::StreamEnv::new();
//! let job = NexmarkJob { query: Query::Q2, events: 20_000, parallelism: 2, ..NexmarkJob::default() };
//! let out = job.build(&env, OutputKind::Collect).unwrap();
//! env.execute().unwrap();
//! let rows = out.rows();
//! assert!(rows.iter().all(|r| r.split(',').next().unwrap().parse::<i64>().unwrap() % 123 == 0));
//! ```

mod joins;
mod queries;
mod rows;
mod source;

use std::path::PathBuf;

use sluice_datastream::{CollectHandle, DataStream, Sink, StreamEnv, WatermarkStrategy};
use sluice_nexmark::{Event, GeneratorConfig};

pub use rows::{final_rows, Row};
pub use source::NexmarkSource;

/// The implemented queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Query {
    /// Passthrough: every bid, unchanged.
    Q0,
    /// Currency conversion: bid prices in euros.
    Q1,
    /// Selection: bids on a few auctions.
    Q2,
    /// Local item suggestion: sellers in some states joined with their auctions in a category.
    Q3,
    /// Average closing price per category.
    Q4,
    /// Hot items: the most-bid auctions per sliding window.
    Q5,
    /// Highest bid per tumbling window.
    Q7,
    /// Monitor new users: people who opened auctions in the window they joined.
    Q8,
    /// Winning bids: each auction's highest valid bid.
    Q9,
    /// User sessions: bids per bidder per session window.
    Q11,
    /// Calculation: converted prices in a range, each with its time of day and a count from `extra`.
    Q14,
    /// Add channel id: each bid's channel mapped to an id (bids without one dropped).
    Q21,
    /// Get URL directories: each bid's URL split into its directories.
    Q22,
}

impl Query {
    /// Every implemented query, in number order.
    pub const ALL: [Query; 13] = [
        Query::Q0,
        Query::Q1,
        Query::Q2,
        Query::Q3,
        Query::Q4,
        Query::Q5,
        Query::Q7,
        Query::Q8,
        Query::Q9,
        Query::Q11,
        Query::Q14,
        Query::Q21,
        Query::Q22,
    ];

    /// The query's lower-case name (`q5`), as the CLI takes it.
    pub fn name(&self) -> &'static str {
        match self {
            Query::Q0 => "q0",
            Query::Q1 => "q1",
            Query::Q2 => "q2",
            Query::Q3 => "q3",
            Query::Q4 => "q4",
            Query::Q5 => "q5",
            Query::Q7 => "q7",
            Query::Q8 => "q8",
            Query::Q9 => "q9",
            Query::Q11 => "q11",
            Query::Q14 => "q14",
            Query::Q21 => "q21",
            Query::Q22 => "q22",
        }
    }

    /// `q5`, `Q5` or `5`.
    pub fn parse(s: &str) -> Result<Query, String> {
        let t = s.trim().to_ascii_lowercase();
        let t = t.strip_prefix('q').unwrap_or(&t);
        Query::ALL
            .into_iter()
            .find(|q| &q.name()[1..] == t)
            .ok_or_else(|| {
                format!(
                    "unknown Nexmark query '{s}' (implemented: {})",
                    Query::ALL.map(|q| q.name()).join(", ")
                )
            })
    }

    /// Whether the output is a changelog of upserts keyed by the first CSV column(s) (compare
    /// [`final_rows`], not the raw lines).
    pub fn is_updating(&self) -> bool {
        matches!(self, Query::Q4)
    }
}

/// One Nexmark run.
#[derive(Debug, Clone)]
pub struct NexmarkJob {
    /// Which query to run.
    pub query: Query,
    /// Events in total (over all source subtasks); must be > 0 (bounded runs only).
    pub events: u64,
    /// Event-time rate (events per second of event time), which sets how many windows the run
    /// spans. Correctness runs use 10 000 (docs/src/reference/nexmark-generator.md#correctness);
    /// the benchmark 10 000 000.
    pub rate: u64,
    /// Parallelism of every operator.
    pub parallelism: usize,
}

impl Default for NexmarkJob {
    fn default() -> Self {
        NexmarkJob {
            query: Query::Q0,
            events: 1_000_000,
            rate: 10_000_000,
            parallelism: 1,
        }
    }
}

/// Where the query's rows go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputKind {
    /// Dropped (Flink's blackhole sink; what the benchmark uses).
    Discard,
    /// Collected in memory as CSV lines (tests).
    Collect,
    /// Written as CSV lines, one file per sink subtask (`FILE`, `FILE.1`, ...).
    File(PathBuf),
    /// Written exactly once into a directory (files published per completed checkpoint; read
    /// them with `sluice_runtime::sinks::committed_lines`).
    ExactlyOnce(PathBuf),
}

/// The built job's output handle.
pub enum QueryOutput {
    /// The rows were dropped.
    Discarded,
    /// The rows, collected in memory.
    Collected(Sink<CollectHandle<String>>),
    /// The rows were written to files.
    Written,
}

impl QueryOutput {
    /// The collected lines (empty unless built with [`OutputKind::Collect`]); for updating
    /// queries, the raw changelog.
    pub fn rows(&self) -> Vec<String> {
        match self {
            QueryOutput::Collected(s) => s.handle.take(),
            _ => Vec::new(),
        }
    }
}

/// The `dateTime − 4 s` watermark of the Nexmark DDL. (Flink SQL's watermark is `maxTs − 4000`;
/// the DataStream strategy's is one ms lower, which changes nothing on a bounded run: the final
/// watermark fires everything and no element is late.)
pub const OUT_OF_ORDERNESS_MS: u64 = 4_000;

impl NexmarkJob {
    /// Checks the settings and derives the generator's configuration; the error says what is wrong.
    pub fn validate(&self) -> Result<GeneratorConfig, String> {
        if self.events == 0 {
            return Err("--events must be > 0 (Nexmark runs are bounded)".into());
        }
        if self.parallelism == 0 {
            return Err("parallelism must be >= 1".into());
        }
        let config = GeneratorConfig {
            events: self.events,
            rate: self.rate,
            ..GeneratorConfig::default()
        };
        config.validate().map_err(|e| e.to_string())?;
        Ok(config)
    }

    /// Adds the query to `env`.
    pub fn build(&self, env: &StreamEnv, output: OutputKind) -> Result<QueryOutput, String> {
        let config = self.validate()?;
        env.set_parallelism(self.parallelism);
        let events = source::events(env, config).assign_timestamps_and_watermarks(
            WatermarkStrategy::for_bounded_out_of_orderness(OUT_OF_ORDERNESS_MS, |e: &Event| {
                e.timestamp()
            }),
        );
        Ok(match self.query {
            Query::Q0 => sink(queries::q0(&events), output),
            Query::Q1 => sink(queries::q1(&events), output),
            Query::Q2 => sink(queries::q2(&events), output),
            Query::Q3 => sink(joins::q3(&events), output),
            Query::Q4 => sink(joins::q4(&events), output),
            Query::Q5 => sink(queries::q5(&events), output),
            Query::Q7 => sink(queries::q7(&events), output),
            Query::Q8 => sink(queries::q8(&events), output),
            Query::Q9 => sink(joins::q9(&events), output),
            Query::Q11 => sink(queries::q11(&events), output),
            Query::Q14 => sink(queries::q14(&events), output),
            Query::Q21 => sink(queries::q21(&events), output),
            Query::Q22 => sink(queries::q22(&events), output),
        })
    }
}

fn sink<R: Row>(rows: DataStream<R>, output: OutputKind) -> QueryOutput {
    match output {
        OutputKind::Discard => {
            rows.discard().name("Blackhole");
            QueryOutput::Discarded
        }
        OutputKind::Collect => {
            QueryOutput::Collected(rows.map(|r: R| r.csv()).name("To CSV").collect())
        }
        OutputKind::File(path) => {
            rows.write_text(path, |r: &R, line: &mut String| r.write_csv(line));
            QueryOutput::Written
        }
        OutputKind::ExactlyOnce(dir) => {
            rows.write_text_exactly_once(dir, |r: &R, line: &mut String| r.write_csv(line));
            QueryOutput::Written
        }
    }
}
