//! When each item of a group is submitted, relative to the group's start:
//! the same instants the engine uses, for the real runners (a plan for the
//! CLR harness, the native pool) that must submit at those instants too.

use rand::RngExt;

use super::model::{Arrival, Scenario};
use crate::rng;
use crate::time::SimDuration;

/// Offsets from the group's first submission of every item of group `g`,
/// in submission order. `at_ms` and `after` groups submit in a tight loop
/// (all zero); `every_ms` adds the period; Poisson gaps come from the run's
/// `arrivals/<group>` stream exactly as the engine draws them.
pub fn offsets(scenario: &Scenario, g: usize) -> Vec<SimDuration> {
    let group = &scenario.groups[g];
    let n = group.count as usize;
    let mut out = Vec::with_capacity(n);
    let mut next = 0u64;
    match &group.arrival {
        Arrival::At(_) | Arrival::After { .. } => out.resize(n, SimDuration(0)),
        Arrival::Every { every, .. } => {
            for _ in 0..n {
                out.push(SimDuration(next));
                next = next.saturating_add(every.0);
            }
        }
        Arrival::Poisson { per_second, .. } => {
            let mut stream = rng::stream(
                scenario.workload_seed(),
                &format!("arrivals/{}", group.name),
            );
            for _ in 0..n {
                out.push(SimDuration(next));
                let u: f64 = stream.random_range(f64::MIN_POSITIVE..1.0);
                let gap_ns = (-u.ln() / per_second * 1e9).round();
                next = next.saturating_add(gap_ns.min(1e18) as u64);
            }
        }
    }
    out
}

/// The group's first submission, from the run's start; `None` for a group
/// that starts after an earlier one finishes.
pub fn start(scenario: &Scenario, g: usize) -> Option<SimDuration> {
    match &scenario.groups[g].arrival {
        Arrival::At(at) => Some(*at),
        Arrival::Every { start, .. } | Arrival::Poisson { start, .. } => Some(*start),
        Arrival::After { .. } => None,
    }
}
