//! # sluice-examples: programs that teach Sluice
//!
//! Each program is a cargo example you run in seconds, with no server to install:
//!
//! | example | what it shows | run it |
//! |---|---|---|
//! | `word_count.rs` | the `sluice` crate: a job from `RunOptions`, run with `sluice::run` (REST API and dashboard while it runs) | `cargo run -p sluice-examples --example word_count` |
//! | `windows.rs` | event time: timestamps and watermarks, tumbling windows counted per key | `cargo run -p sluice-examples --example windows` |
//! | `timers.rs` | keyed state and an event-time timer in a `KeyedProcessFunction` | `cargo run -p sluice-examples --example timers` |
//! | `backpressure.rs` | a job with a hot key: its sources backpressured, and the doctor's verdict on it | `cargo run --release -p sluice-examples --example backpressure` |
//! | `sql.rs` | SQL in a program (`sluice::table::TableEnv`): a stream made a table, a window aggregation with a Rust function, the rows back as a stream | `cargo run -p sluice-examples --example sql` |
//!
//! `tests/examples.rs` compiles every example into the test and checks what its job returns
//! against a model computed without Sluice, so the examples stay true. This library holds no
//! code: it exists because a package needs a library or a binary beside its examples.
//!
//! Invariant: the examples use only public API (`sluice`, and `sluice-rest` for the doctor's
//! answer), as a user's program would; none needs a server, a file or the network.
#![warn(missing_docs)]
