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
//! - [`Netns`]: a services namespace with a bridge and host namespaces joined to it by veth
//!   pairs, for tests that partition processes from each other (`KafkaBroker::start_in`,
//!   `PostgresCluster::start_in` run the servers inside the services namespace).
//!
//! - [`kafka_read::read_committed`]: reads a whole topic as a `read_committed` consumer would,
//!   applying the transaction markers itself (tansu 0.6 sends no aborted-transaction list, so
//!   librdkafka's own `read_committed` shows aborted records), without trusting the high
//!   watermark.
//!
//! A missing server binary is an error that says how to install it: tests fail, they never skip.

mod kafka;
pub mod kafka_read;
mod lookup;
mod netns;
mod postgres;
mod process;
mod s3;

pub use kafka::KafkaBroker;
pub use lookup::{Latency, LookupService, ServiceOptions};
pub use netns::{Netns, SERVICES_ADDR};
pub use postgres::PostgresCluster;
pub use process::free_port;
pub use s3::S3Server;

use std::path::PathBuf;

/// Why a test server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum TestkitError {
    #[error("{what} not found at {path}: {hint}")]
    Missing {
        what: &'static str,
        path: PathBuf,
        hint: &'static str,
    },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{what} did not become ready within {secs} s; its log: {log}")]
    NotReady {
        what: String,
        secs: u64,
        log: String,
    },
    #[error("{what} failed: {detail}")]
    Failed { what: String, detail: String },
}

/// The workspace's `target/` directory (this crate lives in `crates/testkit`).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"))
}
