//! sluice-sql's integration tests: one binary, one module per subject.

mod nexmark;
mod plan;
mod plan_errors;
mod plan_shapes;
mod statements;
