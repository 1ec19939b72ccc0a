//! How far a model is from a real run: a simulated [`Trace`] against
//! measured ones, metric by metric, each against a stated tolerance.
//!
//! Metrics (every time is taken from each run's own first submission, so a
//! runtime's start-up does not count):
//! - makespan relative error, (simulated − measured) / measured;
//! - per-item start and end absolute error, mean and p95, items matched by
//!   group and position in the group's submission order;
//! - peak-threads error, simulated − measured;
//! - threads-over-time distance: the mean absolute difference of the two
//!   thread-count step functions over the longer run.
//!
//! With several measured repetitions each metric is the median over them.
//! The same [`crate::metrics`] code summarises both sides.

use serde::Serialize;

pub mod distribution;

use crate::metrics::{self, Percentiles, ThreadCurve};
use crate::time::SimTime;
use crate::trace::Trace;

/// Instants at which one simulated and one measured thread-count curve
/// are compared.
const CURVE_POINTS: usize = 2000;

/// The tolerances a model must meet (makespan within 10 %, start
/// offsets within 100 ms or 5 % of the makespan, whichever is larger).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Tolerances {
    /// |makespan error| / measured makespan.
    pub makespan_rel: f64,
    /// Floor of the start/end offset tolerance, ms.
    pub offset_ms: f64,
    /// Offset tolerance as a share of the measured makespan, when larger.
    pub offset_share: f64,
    /// Floor of the peak-threads tolerance.
    pub peak_threads: f64,
    /// Peak-threads tolerance as a share of the measured peak, when larger.
    pub peak_share: f64,
    /// Floor of the curve-distance tolerance, threads.
    pub curve_threads: f64,
    /// Curve-distance tolerance as a share of the measured peak, when larger.
    pub curve_share: f64,
}

impl Default for Tolerances {
    fn default() -> Self {
        Tolerances {
            makespan_rel: 0.10,
            offset_ms: 100.0,
            offset_share: 0.05,
            peak_threads: 2.0,
            peak_share: 0.25,
            curve_threads: 1.5,
            curve_share: 0.20,
        }
    }
}

/// One simulated-vs-measured comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub makespan_sim_ms: f64,
    pub makespan_measured_ms: f64,
    pub makespan_rel_error: f64,
    /// |start offset error| over the matched items, ms.
    pub start_error_ms: Percentiles,
    /// |end offset error| over the matched items, ms.
    pub end_error_ms: Percentiles,
    pub peak_threads_sim: u32,
    pub peak_threads_measured: u32,
    /// Mean |threads_sim(t) − threads_measured(t)|.
    pub threads_curve_distance: f64,
    /// Items present in both traces.
    pub matched_items: usize,
}

use crate::metrics::first_queued;
pub use crate::metrics::start_offsets_ms;

/// Items per group, in submission order: `(start, end)` offsets from the
/// run's first submission, ms.
fn offsets_by_group(t: &Trace) -> Vec<Vec<(f64, f64)>> {
    let origin = first_queued(t).as_ms_f64();
    let mut by_group = vec![Vec::new(); t.groups.len()];
    let mut items: Vec<_> = t.items.iter().collect();
    items.sort_by_key(|i| i.item);
    for i in items {
        if i.finished == SimTime::MAX {
            continue;
        }
        if let Some(v) = by_group.get_mut(i.group as usize) {
            v.push((
                i.started.as_ms_f64() - origin,
                i.finished.as_ms_f64() - origin,
            ));
        }
    }
    by_group
}

/// Compares a simulated trace with one measured trace of the same scenario.
pub fn compare(sim: &Trace, measured: &Trace) -> Comparison {
    let s = metrics::summarize(sim);
    let m = metrics::summarize(measured);
    let (a, b) = (offsets_by_group(sim), offsets_by_group(measured));
    let mut start_err = Vec::new();
    let mut end_err = Vec::new();
    for (ga, gb) in a.iter().zip(&b) {
        for (x, y) in ga.iter().zip(gb) {
            start_err.push((x.0 - y.0).abs());
            end_err.push((x.1 - y.1).abs());
        }
    }
    let span = s.makespan_ms.max(m.makespan_ms).max(1.0);
    let distance = ThreadCurve::of(sim).distance(&ThreadCurve::of(measured), span, CURVE_POINTS);
    Comparison {
        makespan_sim_ms: s.makespan_ms,
        makespan_measured_ms: m.makespan_ms,
        makespan_rel_error: if m.makespan_ms > 0.0 {
            (s.makespan_ms - m.makespan_ms) / m.makespan_ms
        } else {
            0.0
        },
        matched_items: start_err.len(),
        start_error_ms: Percentiles::of(start_err),
        end_error_ms: Percentiles::of(end_err),
        peak_threads_sim: s.threads_peak,
        peak_threads_measured: m.threads_peak,
        threads_curve_distance: distance,
    }
}

/// One metric against its tolerance.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Check {
    pub metric: &'static str,
    /// The value (median over repetitions), in `unit`.
    pub value: f64,
    pub tolerance: f64,
    pub unit: &'static str,
    pub pass: bool,
}

/// Everything `poolsim validate` reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub scenario: String,
    pub policy: String,
    pub runtime: String,
    pub repetitions: Vec<Comparison>,
    pub checks: Vec<Check>,
    pub pass: bool,
}

pub(crate) use crate::metrics::median;

/// Compares `sim` with every measured repetition and checks the medians.
pub fn validate(sim: &Trace, measured: &[Trace], runtime: &str, tol: &Tolerances) -> Report {
    let reps: Vec<Comparison> = measured.iter().map(|m| compare(sim, m)).collect();
    let med = |f: &dyn Fn(&Comparison) -> f64| median(reps.iter().map(f).collect());
    let makespan = med(&|c| c.makespan_measured_ms);
    let peak = med(&|c| f64::from(c.peak_threads_measured));
    let offset_tol = tol.offset_ms.max(tol.offset_share * makespan);
    let peak_tol = tol.peak_threads.max(tol.peak_share * peak);
    let curve_tol = tol.curve_threads.max(tol.curve_share * peak);
    let check = |metric, value: f64, tolerance: f64, unit| Check {
        metric,
        value,
        tolerance,
        unit,
        pass: value.abs() <= tolerance,
    };
    let checks = vec![
        check(
            "makespan error",
            med(&|c| c.makespan_rel_error) * 100.0,
            tol.makespan_rel * 100.0,
            "%",
        ),
        check(
            "start error mean",
            med(&|c| c.start_error_ms.mean),
            offset_tol,
            "ms",
        ),
        check(
            "end error mean",
            med(&|c| c.end_error_ms.mean),
            offset_tol,
            "ms",
        ),
        check(
            "peak threads error",
            med(&|c| f64::from(c.peak_threads_sim) - f64::from(c.peak_threads_measured)),
            peak_tol,
            "threads",
        ),
        check(
            "threads curve distance",
            med(&|c| c.threads_curve_distance),
            curve_tol,
            "threads",
        ),
    ];
    Report {
        scenario: sim.scenario.clone(),
        policy: sim.policy.clone(),
        runtime: runtime.to_string(),
        pass: !reps.is_empty() && checks.iter().all(|c| c.pass),
        repetitions: reps,
        checks,
    }
}

/// The tolerances of the adjustment checks ([`crate::account::compare`]),
/// taken from the timing checks of `report`: injection times within the
/// start-offset tolerance, the goal curve within the threads-curve one,
/// counts within 1 or 20 % of the measured count.
pub fn adjustment_tolerances(report: &Report) -> crate::account::AdjustmentTolerances {
    let tol = |metric: &str| {
        report
            .checks
            .iter()
            .find(|c| c.metric == metric)
            .map_or(0.0, |c| c.tolerance)
    };
    crate::account::AdjustmentTolerances {
        count_floor: 1.0,
        count_share: 0.20,
        offset_tol_ms: tol("start error mean"),
        curve_tol: tol("threads curve distance"),
    }
}

/// The p95 of the start errors, median over repetitions (reported, not checked).
pub fn start_p95(report: &Report) -> f64 {
    median(
        report
            .repetitions
            .iter()
            .map(|c| c.start_error_ms.p95)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{CountSample, ItemRecord};

    fn trace(starts: &[(u64, u64)], counts: &[(u64, u32)]) -> Trace {
        Trace {
            scenario: "s".into(),
            policy: "p".into(),
            seed: 1,
            cores: 2,
            groups: vec!["g".into()],
            call_groups: Vec::new(),
            items: starts
                .iter()
                .enumerate()
                .map(|(k, &(s, f))| ItemRecord {
                    item: k as u32,
                    group: 0,
                    thread: 0,
                    queued: SimTime::from_ms(0),
                    started: SimTime::from_ms(s),
                    finished: SimTime::from_ms(f),
                })
                .collect(),
            threads: vec![],
            probes: vec![],
            counts: counts
                .iter()
                .map(|&(t, n)| CountSample {
                    at: SimTime::from_ms(t),
                    threads: n,
                    goal: None,
                })
                .collect(),
            cpu_busy_ns: None,
            end: SimTime::from_ms(starts.iter().map(|s| s.1).max().unwrap()),
        }
    }

    #[test]
    fn identical_traces_have_no_error() {
        let t = trace(&[(0, 100), (50, 150)], &[(0, 2)]);
        let c = compare(&t, &t);
        assert_eq!(c.makespan_rel_error, 0.0);
        assert_eq!(c.start_error_ms.max, 0.0);
        assert_eq!(c.threads_curve_distance, 0.0);
        let r = validate(&t, &[t.clone(), t.clone()], "x", &Tolerances::default());
        assert!(r.pass);
    }

    #[test]
    fn errors_are_measured_per_item_and_over_the_curve() {
        let sim = trace(&[(0, 1000), (500, 1500)], &[(0, 1), (500, 2)]);
        let real = trace(&[(0, 1000), (1000, 2000)], &[(0, 1), (1000, 2)]);
        let c = compare(&sim, &real);
        assert!((c.makespan_rel_error - (-0.25)).abs() < 1e-9, "{c:?}");
        assert_eq!(c.start_error_ms.max, 500.0);
        assert_eq!(c.start_error_ms.mean, 250.0);
        // One thread apart over [500, 1000) of a 2000 ms span: 0.25.
        assert!((c.threads_curve_distance - 0.25).abs() < 0.01, "{c:?}");
        let r = validate(&sim, &[real], "x", &Tolerances::default());
        assert!(!r.pass);
        let failed: Vec<_> = r
            .checks
            .iter()
            .filter(|c| !c.pass)
            .map(|c| c.metric)
            .collect();
        assert_eq!(
            failed,
            vec!["makespan error", "start error mean", "end error mean"]
        );
    }

    #[test]
    fn the_offset_tolerance_grows_with_the_makespan() {
        let sim = trace(&[(0, 10_000), (150, 10_150)], &[(0, 2)]);
        let real = trace(&[(0, 10_000), (0, 10_000)], &[(0, 2)]);
        // 75 ms mean start error is within max(100, 5 % of 10 s = 500).
        let r = validate(&sim, &[real], "x", &Tolerances::default());
        let start = r
            .checks
            .iter()
            .find(|c| c.metric == "start error mean")
            .unwrap();
        assert_eq!(start.tolerance, 500.0);
        assert!(start.pass);
    }
}
