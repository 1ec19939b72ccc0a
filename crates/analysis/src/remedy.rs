//! The smallest setting that meets a goal: the one search behind `run`'s
//! verdict fix, `sweep --best 'minimize KEY subject to …'` and `advise`.
//!
//! The question a .NET engineer asks is "MinThreads 8 or 16?": the smallest
//! value of one setting (the pool's minimum, a throttle's width) under which
//! the runs meet a goal. Each candidate value is replayed over the same runs
//! (seeds, and arrival draws where the caller varies them), each run judged
//! on its own against the goal ([`Criterion`]); a value *meets* the goal
//! when at least [`Search::share`] of its runs do (all of them by default
//! for one run, 95 % for many). The search gallops up the range from its
//! low end (low, low + 1, low + 3, low + 7, …) until a value meets the
//! goal, then bisects between that value and the last one that missed, so
//! the answer is the smallest value of the range that meets it (given that
//! more of the setting does not hurt, which holds for a pool's minimum),
//! in about twice log2 of the answer's distance from the low end trials:
//! never a grid point that merely happened to be tried, and never the
//! range's end unless nothing smaller works.
//!
//! How a value is applied and run is the caller's (a closure): the search
//! and the judgement of a run are here, once.

use serde::Serialize;

use crate::engine::Outcome;
use crate::metrics::Summary;
use crate::sweep::best::Constraint;
use crate::sweep::table;

use crate::verdict::{CPU_WELL_BELOW, MIN_DELAY_P95_MS, MIN_STARVED_SHARE};

/// What one run must show to meet the goal.
#[derive(Clone, Debug, PartialEq)]
pub enum Criterion {
    /// The run is not starved: work waited for a thread less than
    /// [`MIN_STARVED_SHARE`] of the makespan, or the cores were busy
    /// ([`CPU_WELL_BELOW`] or more), so that the pool was not the limit.
    NoStarvation,
    /// Every constraint holds on the run's metrics ([`table::METRICS`]).
    Constraints(Vec<Constraint>),
}

impl Criterion {
    /// Whether one completed run meets the criterion (a run that did not
    /// complete never does).
    pub fn met_by(&self, summary: &Summary, outcome: &Outcome) -> bool {
        if !outcome.is_completed() {
            return false;
        }
        match self {
            Criterion::NoStarvation => !starved(summary),
            Criterion::Constraints(cs) => {
                let m = table::measure(summary, outcome);
                cs.iter()
                    .all(|c| m[c.metric].is_some_and(|x| c.op.holds(x, c.bound)))
            }
        }
    }

    /// The criterion in words.
    pub fn text(&self) -> String {
        match self {
            Criterion::NoStarvation => format!(
                "no starvation: work waits for a thread less than {:.0} % of the run or 95 % of the items start within {} ms (or the cores are the limit)",
                MIN_STARVED_SHARE * 100.0,
                MIN_DELAY_P95_MS
            ),
            Criterion::Constraints(cs) => cs
                .iter()
                .map(Constraint::text)
                .collect::<Vec<_>>()
                .join(" and "),
        }
    }
}

/// Whether a run's pool was the limit: work waited for a thread
/// ([`work_waited`]) while the cores were not busy.
pub fn starved(summary: &Summary) -> bool {
    let cpu_low = summary.cpu_utilization.is_none_or(|u| u < CPU_WELL_BELOW);
    cpu_low && work_waited(summary)
}

/// Whether work waited for a thread: some item was queued and not taken
/// for at least [`MIN_STARVED_SHARE`] of the makespan, and the items'
/// start delays reach [`MIN_DELAY_P95_MS`] at the 95th percentile.
pub fn work_waited(summary: &Summary) -> bool {
    summary.makespan_ms > 0.0
        && summary.time_starved_ms >= MIN_STARVED_SHARE * summary.makespan_ms
        && summary.start_delay_ms.p95 >= MIN_DELAY_P95_MS
}

/// The completed runs' values of one figure of a trial (`None`s, runs
/// that did not complete, left out): what advise, `sweep --best` and the
/// closed loop's checks print or compare.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Span {
    pub lo: f64,
    /// The middle value (the upper one of an even count).
    pub median: f64,
    pub mean: f64,
    pub hi: f64,
    /// How many values.
    pub n: usize,
}

impl Span {
    /// The span of `values`' completed entries; `None` when none completed.
    pub fn of(values: &[Option<f64>]) -> Option<Span> {
        let mut v: Vec<f64> = values.iter().flatten().copied().collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(Span {
            lo: v[0],
            median: v[v.len() / 2],
            mean: v.iter().sum::<f64>() / v.len() as f64,
            hi: v[v.len() - 1],
            n: v.len(),
        })
    }
}

/// One candidate value, replayed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Trial {
    pub value: u32,
    /// Runs replayed.
    pub runs: usize,
    /// Runs that met the criterion.
    pub met: usize,
    /// Per run, in order: the makespan, the p99 latency (queued → finished)
    /// and the peak of threads (`None` for a run that did not complete).
    pub makespan_ms: Vec<Option<f64>>,
    pub latency_p99_ms: Vec<Option<f64>>,
    pub threads_peak: Vec<Option<f64>>,
}

impl Trial {
    /// Judges the runs of `value`: each (summary, outcome) against `criterion`.
    pub fn judge(value: u32, runs: &[(Summary, Outcome)], criterion: &Criterion) -> Trial {
        let done =
            |(s, o): &(Summary, Outcome), f: fn(&Summary) -> f64| o.is_completed().then(|| f(s));
        Trial {
            value,
            runs: runs.len(),
            met: runs.iter().filter(|(s, o)| criterion.met_by(s, o)).count(),
            makespan_ms: runs.iter().map(|r| done(r, |s| s.makespan_ms)).collect(),
            latency_p99_ms: runs.iter().map(|r| done(r, |s| s.latency_ms.p99)).collect(),
            threads_peak: runs
                .iter()
                .map(|r| done(r, |s| s.threads_peak as f64))
                .collect(),
        }
    }

    /// The share of runs that met the criterion.
    pub fn share(&self) -> f64 {
        if self.runs == 0 {
            0.0
        } else {
            self.met as f64 / self.runs as f64
        }
    }
}

/// The search over one setting's integer range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Search {
    /// The smallest value tried.
    pub low: u32,
    /// The largest value tried.
    pub high: u32,
    /// The least share of a value's runs that must meet the goal.
    pub share: f64,
}

/// The least share of runs that must meet the goal when there are many.
pub const DEFAULT_SHARE: f64 = 0.95;

/// What the search found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Found {
    /// The smallest value that meets the goal, with its runs; `None` when
    /// no value of the range does.
    pub smallest: Option<Trial>,
    /// The largest value below it that was tried and missed (the evidence
    /// that one less is not enough), when one was tried.
    pub below: Option<Trial>,
    /// Every value tried, in the order tried.
    pub tried: Vec<u32>,
}

impl Search {
    /// Searches `[low, high]` with `share` (clamped to `(0, 1]`).
    pub fn new(low: u32, high: u32, share: f64) -> Search {
        Search {
            low: low.min(high),
            high: high.max(low),
            share: share.clamp(f64::MIN_POSITIVE, 1.0),
        }
    }

    fn meets(&self, t: &Trial) -> bool {
        t.runs > 0 && t.share() + 1e-12 >= self.share
    }

    /// The smallest value whose runs (`replay(value)`) meet the goal.
    /// `replay` is called for the values the search tries, in order.
    pub fn smallest(&self, mut replay: impl FnMut(u32) -> Trial) -> Found {
        let mut tried = Vec::new();
        let mut run = |v: u32, tried: &mut Vec<u32>| {
            tried.push(v);
            replay(v)
        };
        let mut below: Option<Trial> = None;
        let mut enough: Option<Trial> = None;
        let mut v = self.low;
        let mut stride = 1u32;
        loop {
            let t = run(v, &mut tried);
            if self.meets(&t) {
                enough = Some(t);
                break;
            }
            below = Some(t);
            if v == self.high {
                break;
            }
            v = v.saturating_add(stride).min(self.high);
            stride = stride.saturating_mul(2);
        }
        let Some(mut high) = enough else {
            return Found {
                smallest: None,
                below,
                tried,
            };
        };
        // Bisection between the last value that missed and the first that met.
        while let Some(lo) = below.as_ref().map(|b| b.value)
            && high.value - lo > 1
        {
            let mid = lo + (high.value - lo) / 2;
            let t = run(mid, &mut tried);
            if self.meets(&t) {
                high = t;
            } else {
                below = Some(t);
            }
        }
        Found {
            smallest: Some(high),
            below,
            tried,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(value: u32, met: usize, runs: usize) -> Trial {
        Trial {
            value,
            runs,
            met,
            makespan_ms: vec![None; runs],
            latency_p99_ms: vec![None; runs],
            threads_peak: vec![None; runs],
        }
    }

    #[test]
    fn the_smallest_value_that_meets_is_found_inside_a_coarse_step() {
        for need in [1u32, 2, 17, 25, 63, 64, 100, 255, 256] {
            let found = Search::new(1, 256, 1.0).smallest(|v| trial(v, usize::from(v >= need), 1));
            assert_eq!(
                found.smallest.as_ref().map(|t| t.value),
                Some(need),
                "{need}"
            );
            if need > 1 {
                assert_eq!(found.below.as_ref().map(|t| t.value), Some(need - 1));
            }
            // Galloping then bisecting: about twice log2 of the distance.
            let bound = 2 * (32 - need.leading_zeros()) as usize + 2;
            assert!(found.tried.len() <= bound, "{need}: {:?}", found.tried);
        }
    }

    #[test]
    fn nothing_in_the_range_is_said_so() {
        let found = Search::new(4, 40, 1.0).smallest(|v| trial(v, 0, 1));
        assert!(found.smallest.is_none());
        assert_eq!(found.below.map(|t| t.value), Some(40));
        assert_eq!(found.tried.first(), Some(&4));
        assert_eq!(found.tried.last(), Some(&40));
    }

    #[test]
    fn a_value_meets_only_with_its_share_of_runs() {
        // 19 of 20 runs meet from 10 on, 20 of 20 from 30 on.
        let runs = |v: u32| {
            trial(
                v,
                if v >= 30 {
                    20
                } else if v >= 10 {
                    19
                } else {
                    0
                },
                20,
            )
        };
        let at95 = Search::new(1, 64, 0.95).smallest(runs);
        assert_eq!(at95.smallest.map(|t| t.value), Some(10));
        let at100 = Search::new(1, 64, 1.0).smallest(runs);
        assert_eq!(at100.smallest.map(|t| t.value), Some(30));
    }

    #[test]
    fn a_low_end_that_meets_is_the_answer() {
        let found = Search::new(5, 50, 1.0).smallest(|v| trial(v, 1, 1));
        assert_eq!(found.smallest.map(|t| t.value), Some(5));
        assert!(found.below.is_none());
        assert_eq!(found.tried, vec![5]);
    }
}
