//! poolsim's integration tests: one binary, a file per behaviour.

mod adjustments;
mod answers;
mod cli;
mod common;
mod corpus;
mod deadlock;
mod determinism;
mod explain;
mod fuzz;
mod generated;
mod import;
mod invariants;
mod layers;
mod measure;
mod metamorphic;
mod net20;
mod nettrace;
mod render;
mod reproduce;
mod scenario_errors;
mod seed_001;
mod shapes;
mod spread;
mod standalone;
mod sweep;
mod validation;
