//! The spread of a scenario's outcomes over many seeds: what a real pool
//! gives run to run.
//!
//! A real pool gives different outcomes for the same program: whether a
//! gate tick lands just before or just after a completion decides whole
//! threads, and its phase is set by start-up work the program does not
//! control. The models draw each such source from its own seeded stream
//! (the gate phase, hill climbing's sample interval, timer-queue choices,
//! Poisson arrivals), so simulating `N` seeds gives the distribution of
//! outcomes a model predicts. [`spread`] runs them (in parallel; the result
//! does not depend on the thread count) and reports makespan, start-delay
//! p95 and peak threads as min / p5 / p50 / p95 / max, and the distinct
//! outcomes with their share ("62 % of runs: 5.25 s, 6 threads").
//!
//! A service's traffic differs from run to run as well: `run --runs` and
//! `compare --runs` draw each run's random (Poisson) arrivals anew
//! ([`ArrivalDraws::PerRun`], as `advise` does); `--fixed-arrivals` and
//! validation, whose real runs replay one plan of arrival instants, hold
//! them ([`ArrivalDraws::Fixed`]). [`Scenario::for_run`] is the one rule.
//!
//! ```
//! use poolsim_analysis::engine::SimOptions;
//! use poolsim_analysis::policy_file::resolve_policy;
//! use poolsim_analysis::scenario::load::parse_scenario;
//! use poolsim_analysis::scenario::ArrivalDraws;
//! use poolsim_analysis::spread::spread;
//!
//! let scenario = parse_scenario(r#"
//!     [machine]
//!     cores = 1
//!     [pool]
//!     policy = "net8"
//!     [[group]]
//!     name = "sleepers"
//!     count = 10
//!     body = [ { sleep_ms = 1000 } ]
//! "#, "one-core.toml").unwrap();
//! let policy = resolve_policy("net8").unwrap();
//! let s = spread(&scenario, &policy, 20, ArrivalDraws::PerRun, &SimOptions::default());
//! assert_eq!(s.runs, 20);
//! assert!(s.makespan_ms.min <= s.makespan_ms.p50 && s.makespan_ms.p50 <= s.makespan_ms.max);
//! let shares: f64 = s.outcomes.iter().map(|o| o.share).sum();
//! assert!((shares - 1.0).abs() < 1e-9);
//! ```

use rayon::prelude::*;
use serde::Serialize;

use crate::engine::{self, SimOptions};
use crate::metrics;
use crate::policy::PolicyConfig;
use crate::scenario::{ArrivalDraws, Scenario};
use crate::trace::NullSink;

/// Two runs with the same peak thread count whose makespans are within this
/// fraction of each other count as one outcome.
pub const SAME_OUTCOME: f64 = 0.02;

/// min / p5 / p50 / p95 / max of one figure over the runs (nearest rank).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Quantiles {
    pub min: f64,
    pub p5: f64,
    pub p50: f64,
    pub p95: f64,
    pub max: f64,
}

impl Quantiles {
    /// Quantiles of `values` (nearest rank: the smallest value with at
    /// least `q` of the values at or below it). Empty ⇒ all zero.
    pub fn of(mut values: Vec<f64>) -> Quantiles {
        values.sort_by(f64::total_cmp);
        let at = |q: f64| -> f64 {
            if values.is_empty() {
                return 0.0;
            }
            let rank = (q * values.len() as f64).ceil() as usize;
            values[rank.clamp(1, values.len()) - 1]
        };
        Quantiles {
            min: at(0.0),
            p5: at(0.05),
            p50: at(0.5),
            p95: at(0.95),
            max: at(1.0),
        }
    }

    /// Whether `x` lies in `[min, max]` widened by `margin` (a fraction).
    pub fn covers(&self, x: f64, margin: f64) -> bool {
        x >= self.min * (1.0 - margin) && x <= self.max * (1.0 + margin)
    }
}

/// One distinct outcome: runs with the same peak thread count and
/// makespans within [`SAME_OUTCOME`] of each other.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OutcomeShare {
    /// Fraction of the runs (0..1).
    pub share: f64,
    pub count: usize,
    /// The median makespan of these runs.
    pub makespan_ms: f64,
    pub threads_peak: u32,
    /// The first seed that gave it (`poolsim run --seed S` shows it).
    pub seed: u64,
}

/// One run's figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunFigures {
    pub seed: u64,
    pub completed: bool,
    pub makespan_ms: f64,
    pub start_delay_p95_ms: f64,
    pub threads_peak: u32,
    /// Latency (queued → finished) p50, p95 and p99, ms: what a service
    /// owner reads (validation compares them with the measured runs').
    #[serde(skip)]
    pub latency_ms: [f64; 3],
    /// Every finished item's start, from the run's first submission, sorted
    /// (kept only by [`spread_with_offsets`]).
    #[serde(skip)]
    pub start_offsets_ms: Vec<f64>,
    /// The run's worker-thread count over time (kept only by
    /// [`spread_with_offsets`]).
    #[serde(skip)]
    pub thread_curve: crate::metrics::ThreadCurve,
}

/// The outcomes of `runs` seeds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Spread {
    pub runs: usize,
    /// Seeds `first_seed .. first_seed + runs`.
    pub first_seed: u64,
    /// Runs that did not complete (deadlock, limits); their figures are
    /// left out of the quantiles.
    pub incomplete: usize,
    pub makespan_ms: Quantiles,
    pub start_delay_p95_ms: Quantiles,
    pub threads_peak: Quantiles,
    /// The distinct outcomes, most common first (ties: shorter makespan).
    pub outcomes: Vec<OutcomeShare>,
    /// How the runs drew the scenario's random arrivals; `None` when it
    /// has none (every run then replays the same workload either way).
    #[serde(skip)]
    pub arrivals: Option<ArrivalDraws>,
    #[serde(skip)]
    pub per_run: Vec<RunFigures>,
}

impl Spread {
    /// The outcome a run's figures belong to (its index in `outcomes`).
    pub fn outcome_of(&self, makespan_ms: f64, threads_peak: u32) -> Option<usize> {
        self.outcomes.iter().position(|o| {
            o.threads_peak == threads_peak
                && (makespan_ms - o.makespan_ms).abs() <= SAME_OUTCOME * o.makespan_ms.max(1e-9)
        })
    }

    /// "62 % of runs: 5.25 s, 6 threads" lines, at most `limit`.
    pub fn outcome_lines(&self, limit: usize) -> Vec<String> {
        let mut lines: Vec<String> = self
            .outcomes
            .iter()
            .take(limit)
            .map(|o| {
                format!(
                    "{:>5.1} % of runs: {}, peak {} threads (seed {} is one)",
                    o.share * 100.0,
                    crate::output::human_ms(o.makespan_ms),
                    o.threads_peak,
                    o.seed
                )
            })
            .collect();
        if self.outcomes.len() > limit {
            let rest: usize = self.outcomes[limit..].iter().map(|o| o.count).sum();
            let more = self.outcomes.len() - limit;
            lines.push(format!(
                "        and {more} other outcome{} ({rest} run{})",
                if more == 1 { "" } else { "s" },
                if rest == 1 { "" } else { "s" }
            ));
        }
        lines
    }
}

/// Simulates `scenario` under `policy` with seeds `scenario.seed ..
/// scenario.seed + runs` ([`Scenario::for_run`]: random arrivals drawn
/// per run or held, as `arrivals` says) and reports the spread of the
/// outcomes.
pub fn spread(
    scenario: &Scenario,
    policy: &PolicyConfig,
    runs: usize,
    arrivals: ArrivalDraws,
    options: &SimOptions,
) -> Spread {
    spread_runs(scenario, policy, runs, arrivals, options, false)
}

/// [`spread`] with the arrivals held (validation: the real runs replay one
/// plan), keeping every run's sorted start offsets and thread-count curve
/// (for comparing distributions with measured runs).
pub fn spread_with_offsets(
    scenario: &Scenario,
    policy: &PolicyConfig,
    runs: usize,
    options: &SimOptions,
) -> Spread {
    spread_runs(scenario, policy, runs, ArrivalDraws::Fixed, options, true)
}

fn spread_runs(
    scenario: &Scenario,
    policy: &PolicyConfig,
    runs: usize,
    arrivals: ArrivalDraws,
    options: &SimOptions,
    keep_offsets: bool,
) -> Spread {
    let first_seed = scenario.seed;
    let per_run: Vec<RunFigures> = (0..runs as u64)
        .into_par_iter()
        .map(|k| {
            let s = scenario.for_run(k, arrivals);
            let r = engine::simulate(&s, policy, &mut NullSink, options);
            let m = metrics::summarize(&r.trace);
            RunFigures {
                seed: s.seed,
                completed: r.outcome.is_completed(),
                makespan_ms: m.makespan_ms,
                start_delay_p95_ms: m.start_delay_ms.p95,
                threads_peak: m.threads_peak,
                latency_ms: [m.latency_ms.p50, m.latency_ms.p95, m.latency_ms.p99],
                start_offsets_ms: if keep_offsets {
                    crate::metrics::start_offsets_ms(&r.trace)
                } else {
                    Vec::new()
                },
                thread_curve: if keep_offsets {
                    crate::metrics::ThreadCurve::of(&r.trace)
                } else {
                    crate::metrics::ThreadCurve::default()
                },
            }
        })
        .collect();
    let mut spread = from_runs(first_seed, per_run);
    spread.arrivals = scenario.has_random_arrivals().then_some(arrivals);
    spread
}

/// The spread of already computed runs (in seed order).
pub fn from_runs(first_seed: u64, per_run: Vec<RunFigures>) -> Spread {
    let done: Vec<&RunFigures> = per_run.iter().filter(|r| r.completed).collect();
    let q = |f: &dyn Fn(&RunFigures) -> f64| Quantiles::of(done.iter().map(|r| f(r)).collect());
    let makespan_ms = q(&|r| r.makespan_ms);
    let start_delay_p95_ms = q(&|r| r.start_delay_p95_ms);
    let threads_peak = q(&|r| f64::from(r.threads_peak));
    // Outcomes: sort by (peak, makespan), then cut where the peak changes
    // or the makespan moves more than SAME_OUTCOME from the cluster's first.
    let mut sorted: Vec<&RunFigures> = done.clone();
    sorted.sort_by(|a, b| {
        a.threads_peak
            .cmp(&b.threads_peak)
            .then(a.makespan_ms.total_cmp(&b.makespan_ms))
            .then(a.seed.cmp(&b.seed))
    });
    let mut clusters: Vec<Vec<&RunFigures>> = Vec::new();
    for r in sorted {
        match clusters.last_mut() {
            Some(c)
                if c[0].threads_peak == r.threads_peak
                    && r.makespan_ms - c[0].makespan_ms
                        <= SAME_OUTCOME * c[0].makespan_ms.max(1e-9) =>
            {
                c.push(r)
            }
            _ => clusters.push(vec![r]),
        }
    }
    let total = done.len().max(1) as f64;
    let mut outcomes: Vec<OutcomeShare> = clusters
        .iter()
        .map(|c| OutcomeShare {
            share: c.len() as f64 / total,
            count: c.len(),
            makespan_ms: c[(c.len() - 1) / 2].makespan_ms,
            threads_peak: c[0].threads_peak,
            seed: c.iter().map(|r| r.seed).min().unwrap_or(first_seed),
        })
        .collect();
    outcomes.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(a.makespan_ms.total_cmp(&b.makespan_ms))
    });
    Spread {
        runs: per_run.len(),
        first_seed,
        incomplete: per_run.len() - done.len(),
        makespan_ms,
        start_delay_p95_ms,
        threads_peak,
        outcomes,
        arrivals: None,
        per_run,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(seed: u64, makespan_ms: f64, threads_peak: u32) -> RunFigures {
        RunFigures {
            seed,
            completed: true,
            makespan_ms,
            start_delay_p95_ms: 0.0,
            threads_peak,
            latency_ms: [0.0; 3],
            start_offsets_ms: Vec::new(),
            thread_curve: Default::default(),
        }
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let q = Quantiles::of((1..=20).map(f64::from).collect());
        assert_eq!(
            (q.min, q.p5, q.p50, q.p95, q.max),
            (1.0, 1.0, 10.0, 19.0, 20.0)
        );
        let one = Quantiles::of(vec![7.0]);
        assert_eq!((one.min, one.p5, one.max), (7.0, 7.0, 7.0));
        assert!(one.covers(7.1, 0.02) && !one.covers(7.2, 0.02));
    }

    #[test]
    fn outcomes_group_by_threads_and_nearby_makespans() {
        let runs = vec![
            run(1, 5250.0, 6),
            run(2, 6250.0, 4),
            run(3, 5260.0, 6),
            run(4, 5249.0, 6),
            run(5, 6250.0, 4),
            run(6, 6250.0, 5),
        ];
        let s = from_runs(1, runs);
        assert_eq!(s.outcomes.len(), 3);
        assert_eq!(s.outcomes[0].count, 3);
        assert_eq!(s.outcomes[0].threads_peak, 6);
        assert_eq!(s.outcomes[0].makespan_ms, 5250.0);
        assert_eq!(s.outcomes[0].seed, 1);
        assert_eq!(s.outcomes[1].threads_peak, 4);
        assert!((s.outcomes[1].share - 2.0 / 6.0).abs() < 1e-12);
        assert_eq!(s.outcome_of(5255.0, 6), Some(0));
        assert_eq!(s.outcome_of(5255.0, 7), None);
        assert_eq!(s.makespan_ms.min, 5249.0);
        assert_eq!(s.makespan_ms.max, 6250.0);
    }

    #[test]
    fn incomplete_runs_are_counted_not_measured() {
        let mut bad = run(2, 1.0, 1);
        bad.completed = false;
        let s = from_runs(1, vec![run(1, 100.0, 2), bad]);
        assert_eq!((s.runs, s.incomplete), (2, 1));
        assert_eq!(s.makespan_ms.min, 100.0);
        assert_eq!(s.outcomes.len(), 1);
        assert_eq!(s.outcomes[0].share, 1.0);
    }
}
