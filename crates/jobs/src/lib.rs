//! # sluice-jobs: the built-in reference jobs
//!
//! - [`skew`]: the skew workload of `docs/src/reference/skew-workload.md`, defined to the bit so
//!   Sluice and Flink
//!   produce the same per-key sums: generator → map (a little CPU work) → key_by → running sum.
//! - [`scenarios`]: one job per cause the doctor names (`sluice run scenario <name>`); [`blocking`]:
//!   its sync lookup join against the HTTP lookup service.
//! - [`passthrough`]: generator → map → discard, chained or through REBALANCE: the exchange's
//!   raw speed.
//! - [`connectors`]: the skew records read from Kafka or a socket and the results written to
//!   PostgreSQL or Kafka (`sluice run … --from/--to`); [`sums_csv`]: the skew job's `--output`
//!   and the merge of a split job's per-process parts.
//! - [`real_scenarios`]: the doctor's scenarios on real systems (`--from kafka://…`,
//!   `--to postgres://…`); [`connectors`] also parses those URLs.
//! - [`nexmark_sql`]: the official Nexmark SQL files run as the benchmark's runner runs them,
//!   and `--verify`: their rows checked against the hand-written twin and a DuckDB oracle.
//! - [`built::BuiltJob`]: any of them built, with the handles its summary reads; [`proof`]:
//!   `sluice doctor fix`'s runs of the original and the fixed job on the same bounded input,
//!   their outputs compared ([`proof::FixProof`]).
//!
//! Each job is a config struct with validation and a `build(&StreamEnv)` that adds the job to an
//! environment, so `sluice run`, `sluice plan`, tests and benchmarks all build exactly the same job.
//!
//! ```
//! use sluice_jobs::skew::{SkewConfig, build};
//! let env = sluice_datastream::StreamEnv::new();
//! let cfg = SkewConfig { records: 1000, parallelism: 2, ..SkewConfig::default() };
//! let job = build(&env, &cfg).unwrap();
//! env.execute().unwrap();
//! assert_eq!(job.final_sums().values().count() > 1, true);
//! ```
//!
//! Invariant: jobs use only the public DataStream API, as a user would.

#![warn(missing_docs)]

pub mod blocking;
pub mod built;
pub mod connectors;
pub mod nexmark;
pub mod nexmark_sql;
pub mod passthrough;
pub mod proof;
pub mod real_scenarios;
pub mod remote_table;
pub mod scenarios;
pub mod skew;
pub mod sums_csv;
