//! poolsim's analyses and printers, over the core's runs: what a run means
//! ([`metrics`], [`spread`], [`verdict`], [`explain`], [`counters`],
//! [`coordination`]), what to set ([`sweep`]), how it is shown ([`render`],
//! [`output`], [`stream`]), the generated workloads of validation
//! ([`generate`]), and the scenario and policy files on a disk ([`files`]).
//!
//! The core's modules are re-exported here, so a path is the same in every
//! crate above the core; [`scenario`], [`policy_file`] and [`diagnostics`]
//! add the functions that read files.

pub use poolsim_core::{engine, policy, pool, rng, time, trace};

/// The core's scenarios, and `load::load_scenario` to read one from a file.
pub mod scenario {
    pub use poolsim_core::scenario::*;
    /// The core's loader, and reading a scenario file.
    pub mod load {
        pub use crate::files::load_scenario;
        pub use poolsim_core::scenario::load::*;
    }
}

/// The core's policy files, and resolving names and paths on the disk.
pub mod policy_file {
    pub use crate::files::{
        StdFiles, load_policy, parse_policy, resolve_policy, resolve_policy_for_scenario,
        resolve_policy_for_scenario_file,
    };
    pub use poolsim_core::policy_file::*;
}

/// The core's diagnostics, and reading a text file.
pub mod diagnostics {
    pub use crate::files::read_text;
    pub use poolsim_core::diagnostics::*;
}

pub mod advise;
pub mod coordination;
pub mod counters;
pub mod explain;
pub mod files;
pub mod generate;
pub mod generate_apps;
pub mod metrics;
pub mod output;
pub mod remedy;
pub mod render;
pub mod spread;
pub mod stream;
pub mod sweep;
pub mod verdict;
