//! The trace helpers both pools use: a run's trace before anything
//! happened, what is left once it is taken out, and the thread-count
//! samples (one per instant, none when nothing changed).

use crate::policy::PolicyConfig;
use crate::scenario::Scenario;
use crate::time::SimTime;
use crate::trace::{CountSample, Trace};

/// The trace of a run of `scenario` under `config`, before anything
/// happened, with room for `reserve` items.
pub fn new_trace(scenario: &Scenario, config: &PolicyConfig, reserve: usize) -> Trace {
    Trace {
        scenario: scenario.name.clone(),
        policy: config.name.clone(),
        seed: scenario.seed,
        cores: scenario.machine.cores,
        groups: scenario.groups.iter().map(|g| g.name.clone()).collect(),
        call_groups: scenario.call_groups(),
        items: Vec::with_capacity(reserve),
        threads: Vec::new(),
        probes: Vec::new(),
        counts: vec![CountSample {
            at: SimTime::ZERO,
            threads: 0,
            goal: None,
        }],
        cpu_busy_ns: None,
        end: SimTime::ZERO,
    }
}

/// What is left of a trace taken out of a finished run.
pub fn empty_trace() -> Trace {
    Trace {
        scenario: String::new(),
        policy: String::new(),
        seed: 0,
        cores: 0,
        groups: Vec::new(),
        call_groups: Vec::new(),
        items: Vec::new(),
        threads: Vec::new(),
        probes: Vec::new(),
        counts: Vec::new(),
        cpu_busy_ns: None,
        end: SimTime::ZERO,
    }
}

/// Records a thread-count sample taken after a change: nothing when the
/// counts did not change, and one sample per instant (the last).
pub fn sample_counts(counts: &mut Vec<CountSample>, sample: CountSample) {
    match counts.last_mut() {
        Some(last) if last.threads == sample.threads && last.goal == sample.goal => {}
        Some(last) if last.at == sample.at => *last = sample,
        _ => counts.push(sample),
    }
}
