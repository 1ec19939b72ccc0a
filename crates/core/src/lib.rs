//! poolsim's portable simulation core: a scenario's text in, a run's trace
//! out, on a virtual clock.
//!
//! - [`scenario`]: the workload, parsed and validated from TOML text
//!   ([`diagnostics`]: its errors, with line, column and help).
//! - [`policy`]: the models of the real pools, each a [`policy::Policy`]
//!   answering the pool's decision points (the gate thread's starvation
//!   rule, hill climbing, cooperative blocking); [`policy_file`]: the
//!   policy files that give them their constants, the built-in ones
//!   compiled in.
//! - [`pool`]: the pool state the simulator and the native pool share.
//! - [`engine`]: the discrete-event simulator; [`time`]: virtual time;
//!   [`rng`]: the seeded random streams.
//! - [`trace`]: what a run records, and the sink its events go to.
//!
//! Nothing here starts a thread, reads a clock or a file, or runs a
//! process: text and a seed in, the same bytes out, on any target
//! (`wasm32-unknown-unknown` included). Files are read by the caller (the
//! analysis crate's `files`), policy files through [`policy_file::Files`].

pub mod diagnostics;
pub mod engine;
pub mod policy;
pub mod policy_file;
pub mod pool;
pub mod rng;
pub mod scenario;
pub mod time;
pub mod trace;
