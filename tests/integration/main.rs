//! poolsim's integration tests: one binary, a file per behaviour.

mod cli;
mod common;
mod corpus;
mod deadlock;
mod determinism;
mod fuzz;
mod invariants;
mod measure;
mod metamorphic;
mod render;
mod reproduce;
mod scenario_errors;
mod seed_001;
mod shapes;
mod sweep;
mod validation;
