//! poolsim's real side: scenarios run for real ([`measure`]: Mono, .NET
//! Core 3.1, .NET 8, and the native pool on OS threads), the runtime's own
//! account of its pool ([`nettrace`]: EventPipe traces; [`account`]), and
//! how far the models are from them ([`validate`], [`reproduce`]).
//!
//! The analysis crate's modules (and through them the core's) are
//! re-exported here, so a path is the same in every crate.

pub use poolsim_analysis::{
    advise, coordination, counters, diagnostics, engine, explain, files, generate, generate_apps,
    metrics, output, policy, policy_file, pool, remedy, render, rng, scenario, spread, stream,
    sweep, time, trace, verdict,
};

pub mod account;
pub mod measure;
pub mod nettrace;
pub mod replay_check;
pub mod reproduce;
pub mod validate;
