//! poolsim: a deterministic discrete-event simulator of thread-pool scheduling policies.
//!
//! poolsim replays a workload scenario (TOML) against a model of a real
//! thread pool on a virtual clock and tells when each work item started and
//! ended, how many threads the pool made and why, and how responsive it
//! stayed. Same scenario and seed, same bytes out.
//!
//! ```
//! // What this shows: parse a scenario, run it under the classic .NET pool,
//! // and read the summary.
//! use poolsim::{engine, metrics, policy_file, scenario, trace};
//!
//! let text = r#"
//!     name = "10 sleepers on 4 cores"
//!     [machine]
//!     cores = 4
//!     [pool]
//!     policy = "net-classic"
//!     gate_phase_ms = 130
//!     [[group]]
//!     count = 10
//!     body = [ { sleep_ms = 4000 } ]
//! "#;
//! let scenario = scenario::load::parse_scenario(text, "doc.toml").unwrap();
//! let policy = policy_file::resolve_policy(&scenario.pool.policy).unwrap();
//! let run = engine::simulate(&scenario, &policy, &mut trace::NullSink, &Default::default());
//! let summary = metrics::summarize(&run.trace);
//! // 4 threads at once, then the gate thread adds one about every second.
//! assert_eq!(summary.threads_created, 8);
//! assert!(summary.makespan_ms > 7000.0 && summary.makespan_ms < 8200.0);
//! ```

pub mod account;
pub mod coordination;
pub mod counters;
pub mod diagnostics;
pub mod engine;
pub mod explain;
pub mod generate;
pub mod measure;
pub mod metrics;
pub mod nettrace;
pub mod output;
pub mod policy;
pub mod policy_file;
pub mod pool;
pub mod render;
pub mod reproduce;
pub mod rng;
pub mod scenario;
pub mod spread;
pub mod sweep;
pub mod time;
pub mod trace;
pub mod validate;
pub mod verdict;
