//! Parameter sweeps: "what should I set?"
//!
//! A sweep runs one scenario over a grid of values of numeric scenario or
//! policy keys (`--set pool.min_threads=1..64`, `--set
//! policy.hill_climbing.max_change_per_second=1,2,4`), under one or more
//! policies, each point with one or more seeds, in parallel across cores,
//! and gives a table of runs (CSV), a chart of a metric against a key, and
//! the best point under an objective with constraints.
//!
//! - [`grid`]: `KEY=VALUES` (lists, ranges, geometric ranges), points, shards;
//! - [`apply`]: keys as TOML paths, edits re-validated by the loaders;
//! - [`run`]: the [`Plan`] (every run checked before any starts) and its
//!   parallel execution;
//! - [`table`]: rows, metrics and the CSV;
//! - [`best`]: `minimize METRIC subject to …`;
//! - [`smallest`]: `minimize KEY subject to …`, the smallest value of a
//!   swept key that meets the constraints, per policy;
//! - [`merge`]: shard CSVs back into the whole sweep's;
//! - [`plot`]: the chart.
//!
//! The scenario as written (its own policy, no `--set`) is always part of a
//! sweep, as the first `--seeds` runs: the reference line of the chart and
//! the baseline of `--best`.
//!
//! ```
//! // What this shows: a 2-point sweep of `pool.min_threads` on seed 001's
//! // burst, run on one thread, then the best point.
//! use std::sync::atomic::AtomicBool;
//! use poolsim_analysis::sweep::{self, Objective, Plan, SweepInput};
//!
//! let input = SweepInput {
//!     scenario_text: r#"
//!         [machine]
//!         cores = 4
//!         [pool]
//!         policy = "net-classic"
//!         gate_phase_ms = 130
//!         [[group]]
//!         count = 10
//!         body = [ { sleep_ms = 4000 } ]
//!     "#.to_string(),
//!     scenario_file: "burst.toml".to_string(),
//!     axes: vec![sweep::grid::parse_set("pool.min_threads=4,10").unwrap()],
//!     policies: vec![],
//!     seeds: 1,
//!     arrivals: Default::default(),
//! };
//! let plan = Plan::build(&input).unwrap();
//! assert_eq!(plan.total_runs(), 3); // as written + 2 points
//! let done = sweep::run::execute(&plan, &plan.runs(None), Some(1), &AtomicBool::new(false), &|| {})
//!     .unwrap();
//! let table = plan.table(done.rows);
//! let best = sweep::best::find_best(&table, &Objective::parse("minimize makespan_ms").unwrap());
//! // Ten threads at once: every sleeper starts at once.
//! assert_eq!(best.best.unwrap().values[0], Some(sweep::grid::Value::Int(10)));
//! ```

pub mod apply;
pub mod best;
pub mod grid;
pub mod merge;
pub mod plot;
pub mod run;
pub mod smallest;
pub mod table;

pub use best::{BestReport, Objective};
pub use run::{Plan, SweepInput};
pub use table::{METRICS, SweepTable};

/// Why a sweep cannot be planned, run or merged: a message naming the
/// key, value, file or flag and what is allowed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SweepError(pub String);

impl SweepError {
    pub fn new(message: impl Into<String>) -> SweepError {
        SweepError(message.into())
    }
}

/// The fingerprint of a sweep: FNV-1a (64 bit) over its parts, as 16 hex
/// digits. The same on every machine, so shards can be checked to belong
/// to one sweep.
pub fn fingerprint(parts: &[&[u8]]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in (part.len() as u64).to_le_bytes().iter().chain(part.iter()) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_separate_their_parts() {
        assert_eq!(fingerprint(&[b"ab", b"c"]), fingerprint(&[b"ab", b"c"]));
        assert_ne!(fingerprint(&[b"ab", b"c"]), fingerprint(&[b"a", b"bc"]));
        assert_eq!(fingerprint(&[]).len(), 16);
    }
}
