//! The client of Flink-compatible REST APIs (Sluice's and Apache Flink's), for the `sluice`
//! commands that talk to a running job (`top`, `doctor`, `profile`, `savepoint`) and for the
//! autopilot's driver.
//!
//! Main types: [`Endpoint`] (a base URL with its TLS trust and bearer token: `GET`/`POST`/`PUT`
//! of JSON on ureq with rustls, one request per connection, bodies at most 64 MiB, JSON at most
//! [`MAX_JSON_DEPTH`] levels deep), [`ClientArgs`] (the flags that say how to reach a server;
//! clap flags with the `clap` feature), [`ClientError`] (every failure, naming the URL and
//! keeping the server's own message), and the doctor's [`sluice_doctor::RestSource`]s:
//! [`LiveSource`], [`DirSource`] (saved answers, in the [`layout`] of the fixtures) and
//! [`SavingSource`]. [`detect_engine`] tells Sluice from Flink; [`savepoint::take_savepoint`]
//! triggers a savepoint and waits for it; [`explain::explain_analyze`] reads a SQL job's plan
//! with its live figures (and [`explain::render`] its text).
//!
//! Invariant: this crate only fetches and reads answers; it makes no decision (what the
//! figures mean is `sluice-doctor`'s, what to change is `sluice-autopilot`'s) and prints
//! nothing.
#![warn(missing_docs)]

mod endpoint;
mod engine;
mod error;
pub mod explain;
mod json;
pub mod layout;
pub mod savepoint;
mod source;
pub mod top_model;

pub use endpoint::{ClientArgs, Endpoint, Response};
pub use engine::{detect_engine, Engine};
pub use error::ClientError;
pub use json::{error_message, parse_json, MAX_JSON_DEPTH};
pub use source::{read_json_file, DirSource, LiveSource, SavingSource, REQUEST_TIMEOUT};
