#![warn(missing_docs)]

//! # sluice: stream processing on Flink's model, for your own programs
//!
//! The DataStream API of [`sluice_datastream`] re-exported (build a job on a [`StreamEnv`]), and
//! [`run`]: one call that gives your job what `sluice run` gives the built-in ones — the
//! Flink-compatible REST API and dashboard, the doctor endpoint, checkpoints, the restart
//! strategy, savepoints and restore — all configured from the command line by [`RunOptions`]
//! (`-p`, `--checkpoint-interval`, `--checkpoint-dir`, `--from-checkpoint`, `--restart`,
//! `--rest-address`, `--rest-port`, `--savepoint-dir`, …; `--help` lists them).
//!
//! ```no_run
//! let options = sluice::RunOptions::from_args();
//! let env = options.stream_env()?;
//! env.from_vec(vec![(1i64, 2i64), (1, 3)])
//!     .key_by(|r: &(i64, i64)| r.0)
//!     .sum(|r: &mut (i64, i64)| &mut r.1)
//!     .print();
//! sluice::run(env, &options)?;
//! # Ok::<(), sluice::SluiceError>(())
//! ```
//!
//! [`launch`] is the same for a job given as a build function, and adds what needs the job
//! built more than once: `--processes N` (this program re-run as N processes, see
//! [`processes`]), a process of a split job (`--process-index`, `--peers`), and `--autopilot`
//! (the autopilot's driver of `sluice_autopilot`, [`autopilot::start_default`]; [`launch_with`]
//! takes another [`StartAutopilot`]).
//!
//! Main types: [`RunOptions`] ([`EnvArgs`] + [`RestArgs`] + [`ProcessArgs`], clap arguments
//! `sluice run` flattens too), [`run`] / [`launch`] / [`Session`] / [`Running`] / [`Finished`],
//! [`SluiceError`]; [`live::LiveJob`]: a job that changes its plan while it runs (REST `PUT
//! resource-requirements`, `doctor/apply`); [`processes::launch`]: the multi-process launcher;
//! [`served::ServedJob`]: a job with its own REST API on a free port, for a tool that samples it.
//!
//! SQL: [`table::TableEnv`] is Flink's `StreamTableEnvironment` — SQL statements and queries on
//! the same [`StreamEnv`], tables from typed streams ([`table::Schema`], [`row!`]) and streams
//! from tables, Rust scalar functions ([`table::ScalarUdf`]); refusals are
//! [`table::SqlError`]s with line and column.
//!
//! Invariant: this crate starts and supervises jobs; it knows no built-in job (no
//! `sluice_jobs`), renders no tables and never diagnoses (that is `sluice_doctor`'s).

pub mod autopilot;
pub mod bounds;
mod checkpoint_log;
mod launch;
pub mod live;
mod options;
pub mod processes;
mod rest;
mod run;
pub mod run_report;
pub mod served;
mod session;
mod sluice_error;
pub mod sql_client;
pub mod sql_gateway;
pub mod table;

pub use checkpoint_log::CheckpointLog;
pub use launch::{launch, launch_with};
pub use options::{parse_fault, EnvArgs, RestArgs, RunOptions, MAX_CREDITS, MAX_PARALLELISM};
pub use processes::ProcessArgs;
pub use rest::{start_rest, RestApi};
pub use run::{run, Finished, RunSummary, Running, Say};
pub use session::{AutopilotStop, Session, StartAutopilot};
pub use sluice_error::SluiceError;

/// The DataStream API (`sluice_datastream`), under the paths users know.
pub use sluice_datastream::*;
