//! Checkpoints (see `sluice-checkpoint`, re-exported here) and the coordinator thread that
//! drives a job's hub ([`driver`]): it needs the job's control, so it lives with the runtime.

pub use sluice_checkpoint::*;

pub mod driver;
