//! Real servers for tests, started as child processes on free loopback ports and stopped by PID
//! when their guard is dropped:
//!
//! - [`KafkaBroker`]: tansu, a Kafka-compatible broker with memory storage (installed into
//!   `target/tansu/` by `scripts/install-tansu.sh`, which `scripts/test.sh` runs; `SLUICE_TANSU`
//!   overrides the binary). Ready in milliseconds; memory-only, so recovery tests restart the job,
//!   never the broker.
//! - [`PostgresCluster`]: a fresh `initdb` cluster under `target/tmp/` from Debian's `postgresql`
//!   binaries (`SLUICE_PG_BIN` overrides the directory), `max_prepared_transactions` set for
//!   two-phase commit, trust authentication for user `sluice`, database `sluice`.
//!
//! - [`LookupService`]: `sluice-lookup-service`, an HTTP JSON service of rows by key with
//!   configurable latency and failures (HTTP 500s, dropped connections, stalls), for lookup joins.
//!
//! - [`S3Server`]: moto's standalone server, an S3-compatible object store in memory (installed
//!   into `target/venv-moto/` by `scripts/install-moto.sh`, pinned; `SLUICE_MOTO` overrides the
//!   executable), for checkpoints on object storage.
//!
//! - [`FlinkCluster`]: a standalone Apache Flink 2.3 session cluster (a JobManager and
//!   TaskManager processes from the Flink jars of the PyPI package `apache-flink-libraries`, via
//!   `scripts/flink/cluster.sh`), REST on a free loopback port, jobs submitted through Flink's
//!   REST API; each TaskManager reports its own JVM's GC, heap and CPU.
//!
//! - [`Netns`]: a services namespace with a bridge and host namespaces joined to it by veth
//!   pairs, for tests that partition processes from each other (`KafkaBroker::start_in`,
//!   `PostgresCluster::start_in` run the servers inside the services namespace).
//!
//! - [`kafka_read::read_committed`]: reads a whole topic as a `read_committed` consumer would,
//!   applying the transaction markers itself (tansu 0.6 sends no aborted-transaction list, so
//!   librdkafka's own `read_committed` shows aborted records), without trusting the high
//!   watermark.
//!
//! A missing server binary is an error that says how to install it. A test that cannot start
//! its server goes through [`require`]: under CI (`CI=true`) it fails naming what is missing;
//! only outside CI may it skip, and then it prints a `SKIPPED:` line on stderr.

#![warn(missing_docs)]

mod flink_cluster;
mod kafka;
pub mod kafka_read;
mod lookup;
mod netns;
mod nexmark_queries;
mod postgres;
mod process;
mod require;
mod s3;

pub use flink_cluster::{FlinkCluster, TaskManagerSpec};
pub use kafka::KafkaBroker;
pub use lookup::{Latency, LookupService, ServiceOptions};
pub use netns::{Netns, SERVICES_ADDR};
pub use nexmark_queries::nexmark_queries;
pub use postgres::PostgresCluster;
pub use process::free_port;
pub use require::{in_ci, require, require_in};
pub use s3::S3Server;

use std::path::PathBuf;

/// Why a test server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum TestkitError {
    /// A server's binary is not installed.
    #[error("{what} not found at {path}: {hint}")]
    Missing {
        /// Which server.
        what: &'static str,
        /// Where it was looked for.
        path: PathBuf,
        /// How to install it.
        hint: &'static str,
    },
    /// Starting or talking to a server failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The server started but did not answer in time.
    #[error("{what} did not become ready within {secs} s; its log: {log}")]
    NotReady {
        /// Which server.
        what: String,
        /// How long it was given.
        secs: u64,
        /// The end of its log.
        log: String,
    },
    /// A command or request to a running server failed.
    #[error("{what} failed: {detail}")]
    Failed {
        /// What was being done.
        what: String,
        /// What went wrong.
        detail: String,
    },
}

/// The workspace's `target/` directory (this crate lives in `crates/testkit`).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"))
}
