//! The autopilot from the command line: `sluice doctor --url URL --apply [--watch]` and
//! `sluice run … --autopilot` (started by `sluice::autopilot::start_default`). The driver
//! (actuators for Sluice and Flink, the loop) is [`sluice_autopilot::driver`]; this module
//! prints its lines.

pub use sluice_autopilot::driver::{connect, run_loop, LoopOptions};
