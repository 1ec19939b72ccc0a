//! When each item of a group is submitted, relative to the group's start:
//! the same instants the engine uses, for the real runners (a plan for the
//! CLR harness, the native pool) that must submit at those instants too.

#[cfg(doc)]
use super::model::Spacing;
use super::model::{Arrival, Scenario};
use crate::rng;
use crate::time::SimDuration;

/// Offsets from the group's first submission of every item of group `g`,
/// in submission order, by the group's [`Spacing`]: `at_ms` (and `after`
/// without a stream) submit in a tight loop (all zero); `every_ms` adds the
/// period; Poisson gaps come from the run's `arrivals/<group>` stream
/// exactly as the engine draws them ([`Spacing::gap`]). A timer's items
/// (`from = "timer"`) are due at their firing: `per_tick` of them share
/// each multiple of the period (the callbacks may run later).
pub fn offsets(scenario: &Scenario, g: usize) -> Vec<SimDuration> {
    let group = &scenario.groups[g];
    let n = group.count as usize;
    if let Some(timer) = group.timer() {
        let per_tick = timer.per_tick as usize;
        return (0..n)
            .map(|i| timer.period.saturating_mul((i / per_tick) as u64))
            .collect();
    }
    let spacing = group.arrival.spacing();
    let mut stream = spacing.is_random().then(|| {
        rng::stream(
            scenario.workload_seed(),
            &format!("arrivals/{}", group.name),
        )
    });
    let mut out = Vec::with_capacity(n);
    let mut next = 0u64;
    for _ in 0..n {
        out.push(SimDuration(next));
        next = next.saturating_add(spacing.gap(stream.as_mut()).0);
    }
    out
}

/// The group's first submission, from the run's start; `None` for a group
/// that starts after an earlier one finishes. A group written `late_ms`
/// ([`crate::scenario::Group::late`]) adds its draw from [0, late) on the
/// workload's `late/<group>` stream: the engine and the real runners'
/// plans start it at the same instant.
pub fn start(scenario: &Scenario, g: usize) -> Option<SimDuration> {
    use rand::RngExt;
    let group = &scenario.groups[g];
    let at = match &group.arrival {
        Arrival::At(at) => *at,
        Arrival::Every { start, .. } | Arrival::Poisson { start, .. } => *start,
        Arrival::After { .. } => return None,
    };
    if group.late == SimDuration::ZERO {
        return Some(at);
    }
    let mut rng = rng::stream(scenario.workload_seed(), &format!("late/{}", group.name));
    Some(SimDuration(
        at.0.saturating_add(rng.random_range(0..group.late.0)),
    ))
}
