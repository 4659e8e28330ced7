#![warn(missing_docs)]

//! # sluice-rest: Flink's REST monitoring API, served from inside the process
//!
//! [`serve`] (or [`serve_with`] and a [`RestConfig`]) starts an HTTP/1.1 server that answers Flink 2.3's REST paths with Flink's JSON
//! shapes (keys, key order and value types as captured from a real Flink 2.3 in
//! `tests/fixtures/flink/flink-rest/`) for every job in a [`JobRegistry`], plus Prometheus text
//! metrics on `/metrics` and an OpenAPI 3.0 description on `/openapi.json`.
//!
//! With a job built by the DataStream API (`sluice-datastream`, not a dependency of this crate):
//!
//! ```ignore
//! use std::sync::Arc;
//! use sluice_datastream::StreamEnv;
//! use sluice_rest::{serve, JobRegistry};
//!
//! let env = StreamEnv::new();
//! env.generate(1_000_000, |i| i).map(|i: u64| i * 2).discard();
//! let handle = env.launch().unwrap();
//! let registry = Arc::new(JobRegistry::new());
//! registry.register(handle.monitor());
//! let server = serve("127.0.0.1:8081".parse().unwrap(), registry).unwrap();
//! println!("REST API on http://{}/jobs/overview", server.local_addr());
//! let _ = handle.wait();
//! server.shutdown();
//! ```
//!
//! ## Endpoints
//!
//! `GET /`, `/config`, `/overview`, `/jobs`, `/jobs/overview`, `/jobs/:jobid` (and `PATCH` to
//! cancel), `/jobs/:jobid/config`, `/jobs/:jobid/plan`, `/jobs/:jobid/vertices/:vertexid` and its
//! `backpressure`, `subtasktimes`, `taskmanagers`, `metrics`, `subtasks/metrics`,
//! `subtasks/:subtaskindex`, `subtasks/:subtaskindex/metrics`, `watermarks`, `accumulators`;
//! `/jobs/:jobid/doctor` (Sluice extension: the doctor's diagnosis of the job's latest metrics);
//! `/jobs/:jobid/explain-analyze` (Sluice extension: a SQL job's plan, handed over as plain
//! data on its job graph, each node with its operator's live figures; 404 for other jobs);
//! Flink 2.3's `/applications/overview`, `/applications/:applicationid`, its `exceptions` and
//! `POST …/cancel` (each job is one `SingleJobApplication(<job name>)` with the job's id);
//! `/taskmanagers`, `/metrics` (Prometheus), `/openapi.json`. The route table is in
//! [`routes::ROUTES`] (matched by a `matchit` router); the OpenAPI document is generated from
//! it, so it lists every path. Every JSON answer is written from a shape of `sluice-rest-api`
//! (Flink's answers, the error body, and Sluice's extensions: the doctor's diagnosis, the
//! rescale history and record, the autopilot's log), into which the handlers convert their
//! domain types; the answers' OpenAPI schemas are `utoipa`'s, derived from the same types.
//!
//! Metrics follow Flink's names and Java value types: `?get=` values are strings printed as
//! Java would (`"800"` for the long timer gauges, `"200.0"` for `busyTimeMsPerSecond`), the
//! `subtasks/metrics` aggregates are numbers, and `skew` is
//! [`sluice_runtime::telemetry::data_skew_percent`]. Operator metrics use Flink's scope filter
//! (`Source: generator` → `Source__generator`). Sluice-only metrics are additions, never
//! replacements: `cpuTimeMsPerSecond`, `accumulateCpuTimeMs`, `stateAccessTimeMsPerSecond`,
//! `serializationTimeMsPerSecond`, `deserializationTimeMsPerSecond` and per operator
//! `busyTimeMsPerSecond` / `accumulateBusyTimeMs`.
//!
//! Errors are Flink's `{"errors":["..."]}`: unknown path/job/vertex/subtask/metric → 404,
//! malformed ids, aggregations or subtask ranges → 400, wrong method → 405 (with `Allow`),
//! cancelling an ended job → 409; refused by [`policy`]: missing/wrong token → 401, foreign
//! `Host`/`Origin` → 403, mutating request not JSON → 415; a savepoint target outside the
//! savepoint directory → 400, a full savepoint queue → 409; a body too slow → 408.
//!
//! ## Where the answers differ from Flink (by choice)
//!
//! - One in-process "task manager": `taskmanager-id` is a UUID-shaped id stable for the process,
//!   `endpoint` is `localhost:-1` (no data port, as Flink's local MiniCluster also reports),
//!   JVM memory fields of `/taskmanagers` are 0, its hardware fields are real (`/proc/meminfo`).
//! - `flink-version` is the API version reproduced (`2.3.0`); `flink-commit`/`flink-revision`
//!   name this engine (`sluice-<version>`). Timezone is reported as UTC.
//! - Subtasks go CREATED → RUNNING → FINISHED/CANCELED/FAILED; the states Sluice does not pass
//!   through (SCHEDULED, DEPLOYING, INITIALIZING) have timestamp 0 and duration 0.
//! - IO metrics of running subtasks are always complete (`*-complete: true`), read live.
//! - `?get=` with only unknown names answers 404 naming them (Flink answers `[]`); known names
//!   among unknown ones are answered as Flink does. A `subtasks` filter naming a subtask the
//!   vertex does not have is a 404, a malformed or reversed range a 400 (Flink skips both).
//! - `watermarks` is `[]` (no event time yet); `accumulators` has no user accumulators;
//!   `/jobs/:id/config` lists Sluice's settings as `user-config` strings.
//! - Backpressure `end-timestamp` is the time of the latest metrics sample; soft backpressure
//!   (and `maxSoftBackPressureTimeMs`) is always 0: a blocked Sluice task waits for credit,
//!   which is Flink's hard backpressure.
//! - The timer gauges (`idle`/`backPressured`/`soft`/`hardBackPressuredTimeMsPerSecond`) are
//!   Flink longs, so they are the floor of the sampled ms/s, and `busyTimeMsPerSecond` is
//!   derived from them as Flink does (`1000 − min(idle + backPressured, 1000)`); the ratios of
//!   the backpressure endpoint use the same values.
//! - `/jobs/overview` lists the newest job first; finished jobs stay listed.
//! - Applications: an unknown id is 404 (Flink answers 500, `FlinkApplicationNotFoundException`);
//!   the exception history holds at most the failure that ended the job (Sluice keeps no
//!   failures it restarted from); CANCELING and FAILING have timestamp 0 (not recorded).
//!
//! ## Serving and security
//!
//! hyper (HTTP/1.1) on a current-thread tokio runtime of its own thread; answers are computed
//! on up to [`WORKERS`] handler threads. Limits: target 8 KiB → 414, head 16 KiB → 431, body
//! 64 KiB → 413, [`MAX_CONNECTIONS`] connections, [`REQUEST_DEADLINE`] for a request head
//! (and for its body, → 408), [`CONNECTION_DEADLINE`] and [`KEEP_ALIVE_REQUESTS`] per
//! connection — so slow or idle clients cannot hold the server (see `server`). Safe by default
//! ([`policy`]): the `Host` must name this server (DNS rebinding), mutating routes need
//! `Content-Type: application/json`, no foreign `Origin` and the token when one is set, and get
//! no CORS headers; a non-loopback bind needs a token; savepoints go only under
//! [`RestConfig::savepoint_dir`] and are queued, or refused with 409 — never dropped.

mod api;
mod autopilot_api;
mod checkpoints_api;
mod doctor_api;
mod explain_api;
mod format;
mod http;
pub mod live;
mod metrics;
mod openapi;
pub mod policy;
mod prometheus;
mod registry;
mod rescale_api;
pub mod routes;
mod savepoint_dir;
mod server;
#[cfg(test)]
mod shape_tests;
pub mod sql_gateway;

pub use http::Response;
pub use registry::JobRegistry;
pub use routes::dispatch;
pub use savepoint_dir::{default_savepoint_dir, resolve_target as resolve_savepoint_target};
pub use server::{
    serve, serve_with, RestConfig, RestError, RestServer, CLOSE_GRACE, CONNECTION_DEADLINE,
    KEEP_ALIVE_REQUESTS, MAX_CONNECTIONS, REQUEST_DEADLINE, WORKERS,
};

pub use api::backpressure_level;
/// Flink's metric-scope filter for operator names (one function, shared with the doctor's
/// REST adapter, which reads the metrics this server names with it).
pub use sluice_doctor::flink_rest::sanitize_operator_name;
