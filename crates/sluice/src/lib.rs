//! # sluice: stream processing on Flink's model, for your own programs
//!
//! The DataStream API of [`sluice_graph`] re-exported (build a job on a [`StreamEnv`]), and
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
//! Main types: [`RunOptions`] ([`EnvArgs`] + [`RestArgs`], clap arguments `sluice run`
//! flattens too), [`run`] / [`Running`] / [`Finished`], [`SluiceError`]; [`live::LiveJob`]: a
//! job that changes its plan while it runs (REST `PUT resource-requirements`, `doctor/apply`).

pub mod bounds;
mod checkpoint_log;
pub mod live;
mod options;
mod rest;
mod run;
pub mod run_report;
mod sluice_error;

pub use checkpoint_log::CheckpointLog;
pub use options::{parse_fault, EnvArgs, RestArgs, RunOptions, MAX_CREDITS, MAX_PARALLELISM};
pub use rest::{start_rest, RestApi};
pub use run::{run, Finished, RunSummary, Running, Say};
pub use sluice_error::SluiceError;

/// The DataStream API (`sluice_graph`), under the paths users know.
pub use sluice_graph::*;
