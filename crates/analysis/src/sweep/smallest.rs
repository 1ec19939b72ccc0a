//! `--best 'minimize KEY subject to …'`: the smallest value of a swept key
//! that meets the constraints, per policy ("MinThreads 8 or 16?").
//!
//! The key is one of the sweep's `--set` keys, and its range (lowest to
//! highest value given) is the range searched, in whole numbers, by
//! [`crate::remedy::Search`]: the search of the run verdict's fix and of
//! `advise`, so the three give the same answer to the same question. Each
//! value tried is run with the sweep's seeds (run k: the pool's seed
//! `seed + k` and, unless `--fixed-arrivals`, its own draw of Poisson
//! arrivals, as the sweep's own runs and `advise`'s are), each run judged
//! on its own; a value meets the constraints when all of its runs
//! do, or at least 95 % of them from 20 runs on
//! ([`crate::remedy::DEFAULT_SHARE`]). The answer is not limited to the
//! grid's points: `--set pool.min_threads=1..256:*2` finds 25 where the
//! grid holds 16 and 32.

use std::fmt::Write as _;

use rayon::prelude::*;

use crate::engine::{self, SimOptions};
use crate::metrics;
use crate::remedy::{Criterion, DEFAULT_SHARE, Found, Search, Span, Trial};
use crate::sweep::SweepError;
use crate::sweep::best::{Constraint, Goal, human, split_objective};
use crate::sweep::grid::Value;
use crate::sweep::run::{SweepInput, with_settings};
use crate::trace::NullSink;

/// Runs per value from which 95 % of them (not all) must meet the goal.
pub const MANY_RUNS: usize = 20;

/// `minimize KEY subject to …` for a swept key.
#[derive(Clone, Debug, PartialEq)]
pub struct SmallestQuestion {
    /// The key as the sweep's `--set` names it.
    pub key: String,
    pub constraints: Vec<Constraint>,
}

impl SmallestQuestion {
    /// The question of `text` if it minimizes one of `keys` (the sweep's
    /// `--set` keys); `Ok(None)` if it names a metric instead.
    pub fn parse(text: &str, keys: &[&str]) -> Result<Option<SmallestQuestion>, String> {
        let (goal, name, conditions) = split_objective(text)?;
        let Some(key) = keys.iter().find(|k| k.trim().eq_ignore_ascii_case(&name)) else {
            return Ok(None);
        };
        if goal == Goal::Maximize {
            return Err(format!(
                "--best '{}': a setting can only be minimized (the smallest value that meets the constraints)",
                text.trim()
            ));
        }
        let constraints = conditions?;
        if constraints.is_empty() {
            return Err(format!(
                "--best '{}': say what the smallest {key} must achieve, like 'minimize {key} subject to latency_p99_ms < 100'",
                text.trim()
            ));
        }
        Ok(Some(SmallestQuestion {
            key: key.trim().to_string(),
            constraints,
        }))
    }

    fn criterion(&self) -> Criterion {
        Criterion::Constraints(self.constraints.clone())
    }
}

/// The answer under one policy.
#[derive(Clone, Debug, PartialEq)]
pub struct SmallestAnswer {
    /// The policy's label (`None` in the sweep: the scenario's own).
    pub policy: String,
    pub low: u32,
    pub high: u32,
    pub found: Found,
}

/// The share of a value's runs that must meet the constraints.
pub fn share_for(runs: usize) -> f64 {
    if runs >= MANY_RUNS {
        DEFAULT_SHARE
    } else {
        1.0
    }
}

/// Answers `q` for the sweep `input`, per policy.
pub fn answer(input: &SweepInput, q: &SmallestQuestion) -> Result<Vec<SmallestAnswer>, SweepError> {
    let axis = input
        .axes
        .iter()
        .find(|a| a.key.trim() == q.key)
        .ok_or_else(|| SweepError::new(format!("--best: {} is not a swept key", q.key)))?;
    let mut low = u32::MAX;
    let mut high = 0u32;
    for v in &axis.values {
        let Value::Int(n) = *v else {
            return Err(SweepError::new(format!(
                "--best 'minimize {}': the key must take whole numbers ({v} given)",
                q.key
            )));
        };
        let n = u32::try_from(n).map_err(|_| {
            SweepError::new(format!("--best 'minimize {}': {n} is out of range", q.key))
        })?;
        low = low.min(n);
        high = high.max(n);
    }
    let mut others = Vec::new();
    for a in &input.axes {
        if a.key.trim() == q.key {
            continue;
        }
        match a.values.as_slice() {
            [one] => others.push(format!("{}={one}", a.key)),
            _ => {
                return Err(SweepError::new(format!(
                    "--best 'minimize {}': the other swept keys must have one value each ({} has {})",
                    q.key,
                    a.key,
                    a.values.len()
                )));
            }
        }
    }
    let policies: Vec<Option<&str>> = if input.policies.is_empty() {
        vec![None]
    } else {
        input.policies.iter().map(|p| Some(p.as_str())).collect()
    };
    let runs = input.seeds as usize;
    let criterion = q.criterion();
    let search = Search::new(low, high, share_for(runs));
    let mut answers = Vec::new();
    for policy in policies {
        let mut error = None;
        let mut label = policy.unwrap_or_default().to_string();
        let found = search.smallest(|v| {
            let mut sets = others.clone();
            sets.push(format!("{}={v}", q.key));
            match with_settings(&input.scenario_text, &input.scenario_file, policy, &sets) {
                Ok((scenario, policy)) => {
                    if label.is_empty() {
                        label = scenario.pool.policy.clone();
                    }
                    let results: Vec<_> = (0..input.seeds)
                        .into_par_iter()
                        .map(|r| {
                            let s = scenario.for_run(u64::from(r), input.arrivals);
                            let run = engine::simulate(
                                &s,
                                &policy,
                                &mut NullSink,
                                &SimOptions::default(),
                            );
                            (metrics::summarize(&run.trace), run.outcome)
                        })
                        .collect();
                    Trial::judge(v, &results, &criterion)
                }
                Err(e) => {
                    error.get_or_insert(e);
                    Trial::judge(v, &[], &criterion)
                }
            }
        });
        if let Some(e) = error {
            return Err(e);
        }
        answers.push(SmallestAnswer {
            policy: label,
            low,
            high,
            found,
        });
    }
    Ok(answers)
}

/// One quantile summary of a trial's runs: "mean (lo to hi)".
fn spread(values: &[Option<f64>]) -> String {
    match Span::of(values) {
        None => "-".into(),
        Some(s) if s.n == 1 => human(s.mean),
        Some(s) => format!("{} ({} to {})", human(s.mean), human(s.lo), human(s.hi)),
    }
}

/// The answers as `sweep --best` prints them.
pub fn text(q: &SmallestQuestion, answers: &[SmallestAnswer]) -> String {
    let conditions: Vec<String> = q.constraints.iter().map(Constraint::text).collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "best (minimize {} subject to {}), per policy:",
        q.key,
        conditions.join(" and ")
    );
    for a in answers {
        let runs = a
            .found
            .smallest
            .as_ref()
            .or(a.found.below.as_ref())
            .map_or(0, |t| t.runs);
        match &a.found.smallest {
            None => {
                let _ = writeln!(
                    out,
                    "  {}: no value of {} from {} to {} meets it{}",
                    a.policy,
                    q.key,
                    a.low,
                    a.high,
                    a.found.below.as_ref().map_or(String::new(), |b| format!(
                        " ({} = {}: {} of {} runs)",
                        q.key, b.value, b.met, b.runs
                    ))
                );
            }
            Some(t) => {
                let mut line = format!(
                    "  {}: {} = {}   meets it in {} of {} run{}",
                    a.policy,
                    q.key,
                    t.value,
                    t.met,
                    t.runs,
                    if runs == 1 { "" } else { "s" }
                );
                match &a.found.below {
                    Some(b) => line.push_str(&format!(
                        "; {} = {}: {} of {}",
                        q.key, b.value, b.met, b.runs
                    )),
                    None => line.push_str(&format!(
                        "; {} is the range's start: try lower values",
                        a.low
                    )),
                }
                let _ = writeln!(out, "{line}");
                let _ = writeln!(
                    out,
                    "      makespan_ms {}   latency_p99_ms {}   threads_peak {}",
                    spread(&t.makespan_ms),
                    spread(&t.latency_p99_ms),
                    spread(&t.threads_peak)
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_swept_key_after_minimize_is_a_smallest_question() {
        let keys = ["pool.min_threads", "machine.cores"];
        let q = SmallestQuestion::parse(
            "minimize pool.min_threads subject to latency_p99_ms < 100 and threads_peak <= 64",
            &keys,
        )
        .unwrap()
        .unwrap();
        assert_eq!(q.key, "pool.min_threads");
        assert_eq!(q.constraints.len(), 2);
        // A metric is the other form's.
        assert_eq!(
            SmallestQuestion::parse("minimize makespan_ms", &keys).unwrap(),
            None
        );
        for (text, wanted) in [
            (
                "maximize pool.min_threads subject to makespan_ms < 5",
                "only be minimized",
            ),
            ("minimize pool.min_threads", "must achieve"),
            (
                "minimize pool.min_threads subject to latency_p99 < 5",
                "did you mean",
            ),
        ] {
            let e = SmallestQuestion::parse(text, &keys).unwrap_err();
            assert!(e.contains(wanted), "{text}: {e}");
        }
    }

    #[test]
    fn many_runs_need_95_percent_and_few_need_all() {
        assert_eq!(share_for(1), 1.0);
        assert_eq!(share_for(MANY_RUNS - 1), 1.0);
        assert_eq!(share_for(MANY_RUNS), DEFAULT_SHARE);
    }
}
