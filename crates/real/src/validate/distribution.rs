//! Validation as distributions: the model's outcomes over many seeds
//! against the real pool's over several runs.
//!
//! A real pool gives different outcomes for one program, and so does a
//! model that draws its run-to-run variation from seeded streams. Comparing
//! one simulated run with the median of the measured ones hides both. Here
//! (`poolsim validate --runs N`) the checks are:
//! - **coverage**: every measured makespan lies inside the simulated
//!   `[min, max]` widened by 2 %;
//! - **median**: the measured median makespan is within 5 % of the
//!   simulated one;
//! - **start offsets**: the pooled start offsets (every item of every run,
//!   from its run's first submission) agree quantile by quantile within
//!   max(100 ms, 5 % of the measured median makespan);
//! - reported, not checked: what a service owner reads, the latency
//!   (queued → finished) p50, p95 and p99 and the peak of threads, each as
//!   the simulated median against the measured median (the relative error
//!   of each quantile, and whether p99 is within [`LATENCY_P99_TOLERANCE`]),
//!   and the thread-count curve: each measured run's against the model's
//!   median curve over the seeds ([`median_curve_distance`]), within
//!   max(1.5 threads, 20 % of the measured median peak) on average, the
//!   one-run comparison's tolerance;
//!   the two-sample Kolmogorov–Smirnov statistic of
//!   the makespans with its asymptotic p-value, and the simulated p5–p95
//!   width against the measured min–max width (a range that covers only
//!   because it is wide is not a prediction).
//!
//! The KS statistic and its p-value are computed here: statrs has
//! distributions but no two-sample test. The p-value uses the asymptotic
//! Kolmogorov distribution with Stephens' small-sample correction
//! (`λ = (√nₑ + 0.12 + 0.11/√nₑ)·D`, `nₑ = nm/(n+m)`).

use serde::Serialize;

use super::{Check, median, start_offsets_ms};
use crate::metrics::{self, ThreadCurve};
use crate::spread::{OutcomeShare, Quantiles, Spread};
use crate::trace::Trace;

/// How close the simulated median p99 latency must come to the measured
/// one for a scenario to count as "p99 within 15 %" in a set's summary
/// (the target of issue 33: in at least 80 % of a set's scenarios).
pub const LATENCY_P99_TOLERANCE: f64 = 0.15;

/// The simulated median against the measured median of one figure.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MedianPair {
    pub simulated: f64,
    pub measured: f64,
}

impl MedianPair {
    /// (simulated − measured) / measured; 0 when both are 0, and the sign
    /// of the difference (as ±1) when only the measured one is.
    pub fn error(&self) -> f64 {
        if self.measured > 0.0 {
            (self.simulated - self.measured) / self.measured
        } else if self.simulated == self.measured {
            0.0
        } else {
            (self.simulated - self.measured).signum()
        }
    }
}

/// The tolerances of the distribution checks.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DistTolerances {
    /// Margin on the simulated `[min, max]` (a fraction).
    pub range_margin: f64,
    /// |measured median − simulated median| / measured median.
    pub median_rel: f64,
    /// Floor of the start-offset tolerance, ms.
    pub offset_ms: f64,
    /// Start-offset tolerance as a share of the measured median makespan.
    pub offset_share: f64,
    /// Floor of the thread-curve tolerance, threads (as the one-run
    /// comparison's [`Tolerances`](super::Tolerances)).
    pub curve_threads: f64,
    /// Thread-curve tolerance as a share of the measured median peak, when
    /// larger.
    pub curve_share: f64,
}

impl Default for DistTolerances {
    fn default() -> Self {
        DistTolerances {
            range_margin: 0.02,
            median_rel: 0.05,
            offset_ms: 100.0,
            offset_share: 0.05,
            curve_threads: 1.5,
            curve_share: 0.20,
        }
    }
}

/// A two-sample Kolmogorov–Smirnov test.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct KsTest {
    /// The largest distance between the two empirical CDFs (0..1).
    pub d: f64,
    /// Asymptotic p-value of `d` under "same distribution".
    pub p_value: f64,
}

/// Two-sample KS statistic of `a` and `b` and its p-value.
pub fn ks_two_sample(a: &[f64], b: &[f64]) -> KsTest {
    if a.is_empty() || b.is_empty() {
        return KsTest {
            d: 0.0,
            p_value: 1.0,
        };
    }
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (n, m) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j) = (0usize, 0usize);
    let mut d: f64 = 0.0;
    while i < a.len() && j < b.len() {
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / n - j as f64 / m).abs());
    }
    let ne = n * m / (n + m);
    let lambda = (ne.sqrt() + 0.12 + 0.11 / ne.sqrt()) * d;
    KsTest {
        d,
        p_value: kolmogorov_q(lambda),
    }
}

/// `Q(λ) = 2 Σ_{k≥1} (−1)^{k−1} e^{−2k²λ²}`, the Kolmogorov tail.
fn kolmogorov_q(lambda: f64) -> f64 {
    if lambda < 1e-3 {
        return 1.0;
    }
    let mut sum = 0.0;
    let mut sign = 1.0;
    for k in 1..=100 {
        let k = f64::from(k);
        let term = (-2.0 * k * k * lambda * lambda).exp();
        sum += sign * term;
        if term < 1e-12 {
            break;
        }
        sign = -sign;
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

/// The median of `values` (the mean of the middle two for an even count).
pub fn median_of(values: &[f64]) -> f64 {
    median(values.to_vec())
}

/// The value at quantile `q` (0..1) of sorted `v` (nearest rank).
fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let rank = (q * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// Instants over a run at which its thread count is compared with the
/// simulated runs'.
pub const CURVE_POINTS: usize = 200;

/// The mean |measured − median of `sim`| over [`CURVE_POINTS`] instants
/// spread evenly over `[0, span_ms]`, threads (`measured` itself when there
/// is no simulated run).
pub fn median_curve_distance(sim: &[&ThreadCurve], measured: &ThreadCurve, span_ms: f64) -> f64 {
    (0..CURVE_POINTS)
        .map(|k| {
            let at = span_ms * (k as f64 + 0.5) / CURVE_POINTS as f64;
            let model = median(sim.iter().map(|c| f64::from(c.at(at))).collect());
            (f64::from(measured.at(at)) - model).abs()
        })
        .sum::<f64>()
        / CURVE_POINTS as f64
}

/// Everything the distribution checks found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DistributionReport {
    pub scenario: String,
    pub policy: String,
    pub runtime: String,
    /// Simulated seeds `first_seed .. first_seed + sim_runs`.
    pub sim_runs: usize,
    pub first_seed: u64,
    pub sim_makespan_ms: Quantiles,
    pub sim_outcomes: Vec<OutcomeShare>,
    pub measured_makespans_ms: Vec<f64>,
    pub measured_peaks: Vec<u32>,
    /// Measured runs inside the widened simulated range.
    pub covered: usize,
    /// (measured median − simulated median) / measured median.
    pub median_error: f64,
    /// The largest start-offset difference over the quantiles, ms, and the
    /// quantile where it is.
    pub offset_error_ms: f64,
    pub offset_error_at: f64,
    pub offset_tolerance_ms: f64,
    pub ks: KsTest,
    /// Simulated p5–p95 width / measured min–max width (`None` when every
    /// measured run gave the same makespan).
    pub width_ratio: Option<f64>,
    /// The measured runs agree within 1 % (max / min − 1 ≤ 1 %).
    pub measured_agree: bool,
    /// Simulated p95 / p5 − 1.
    pub sim_p5_p95_rel: f64,
    /// Latency p50, p95, p99 (ms) and the peak of threads: simulated median
    /// (over the completed seeds) against measured median (reported, not
    /// checked).
    pub latency_p50_ms: MedianPair,
    pub latency_p95_ms: MedianPair,
    pub latency_p99_ms: MedianPair,
    pub threads_peak: MedianPair,
    /// The thread-count curve: over the measured runs, the median of the
    /// mean |measured − simulated median| threads, the simulated median
    /// taken over the completed seeds at each of [`CURVE_POINTS`] instants
    /// of the run (reported, not checked).
    pub threads_curve_distance: f64,
    /// max(curve floor, curve share × the measured median peak).
    pub threads_curve_tolerance: f64,
    /// `threads_curve_distance` ≤ `threads_curve_tolerance`.
    pub threads_curve_within: bool,
    /// |p99 error| ≤ [`LATENCY_P99_TOLERANCE`].
    pub latency_p99_within: bool,
    pub checks: Vec<Check>,
    pub pass: bool,
}

/// Compares the simulated spread (with start offsets kept, see
/// [`spread_with_offsets`](crate::spread::spread_with_offsets)) with the
/// measured traces.
pub fn compare_distributions(
    sim: &Spread,
    sim_name: (&str, &str),
    measured: &[Trace],
    runtime: &str,
    tol: &DistTolerances,
) -> DistributionReport {
    let summaries: Vec<metrics::Summary> = measured.iter().map(metrics::summarize).collect();
    let makespans: Vec<f64> = summaries.iter().map(|s| s.makespan_ms).collect();
    let peaks: Vec<u32> = summaries.iter().map(|s| s.threads_peak).collect();
    let q = sim.makespan_ms;
    let covered = makespans
        .iter()
        .filter(|&&m| q.covers(m, tol.range_margin))
        .count();
    let measured_median = median(makespans.clone());
    let median_error = if measured_median > 0.0 {
        (q.p50 - measured_median) / measured_median
    } else {
        0.0
    };
    // Pooled start offsets, compared at as many quantiles as one run has items.
    let mut sim_offsets: Vec<f64> = sim
        .per_run
        .iter()
        .filter(|r| r.completed)
        .flat_map(|r| r.start_offsets_ms.iter().copied())
        .collect();
    sim_offsets.sort_by(f64::total_cmp);
    let mut real_offsets: Vec<f64> = measured.iter().flat_map(start_offsets_ms).collect();
    real_offsets.sort_by(f64::total_cmp);
    let points = measured
        .iter()
        .map(|t| t.items.len())
        .max()
        .unwrap_or(0)
        .clamp(1, 200);
    let (mut offset_error_ms, mut offset_error_at) = (0.0f64, 0.0f64);
    if !sim_offsets.is_empty() && !real_offsets.is_empty() {
        for k in 0..points {
            let at = (k as f64 + 0.5) / points as f64;
            let e = (quantile(&sim_offsets, at) - quantile(&real_offsets, at)).abs();
            if e > offset_error_ms {
                offset_error_ms = e;
                offset_error_at = at;
            }
        }
    }
    let offset_tolerance_ms = tol.offset_ms.max(tol.offset_share * measured_median);
    let (mmin, mmax) = makespans
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(a, b), &m| (a.min(m), b.max(m)));
    let measured_width = if makespans.is_empty() {
        0.0
    } else {
        mmax - mmin
    };
    let width_ratio = (measured_width > 0.0).then(|| (q.p95 - q.p5) / measured_width);
    let measured_agree = !makespans.is_empty() && mmin > 0.0 && mmax / mmin - 1.0 <= 0.01;
    let sim_p5_p95_rel = if q.p5 > 0.0 { q.p95 / q.p5 - 1.0 } else { 0.0 };
    let done: Vec<&crate::spread::RunFigures> =
        sim.per_run.iter().filter(|r| r.completed).collect();
    let pair = |sim_value: &dyn Fn(&crate::spread::RunFigures) -> f64,
                real_value: &dyn Fn(&metrics::Summary) -> f64| MedianPair {
        simulated: median(done.iter().map(|r| sim_value(r)).collect()),
        measured: median(summaries.iter().map(real_value).collect()),
    };
    let latency_p50_ms = pair(&|r| r.latency_ms[0], &|s| s.latency_ms.p50);
    let latency_p95_ms = pair(&|r| r.latency_ms[1], &|s| s.latency_ms.p95);
    let latency_p99_ms = pair(&|r| r.latency_ms[2], &|s| s.latency_ms.p99);
    let threads_peak = pair(&|r| f64::from(r.threads_peak), &|s| {
        f64::from(s.threads_peak)
    });
    // The thread-count curves: each measured run's against the model's
    // median curve, over the longer of the run and the median makespan.
    let sim_curves: Vec<&ThreadCurve> = done.iter().map(|r| &r.thread_curve).collect();
    let threads_curve_distance = median(
        measured
            .iter()
            .zip(&makespans)
            .map(|(t, &mk)| {
                median_curve_distance(&sim_curves, &ThreadCurve::of(t), mk.max(q.p50).max(1.0))
            })
            .collect(),
    );
    let threads_curve_tolerance = tol
        .curve_threads
        .max(tol.curve_share * median(peaks.iter().map(|&p| f64::from(p)).collect()));
    let outside = (makespans.len() - covered) as f64;
    let checks = vec![
        Check {
            metric: "runs outside range",
            value: outside,
            tolerance: 0.0,
            unit: "runs",
            pass: outside == 0.0,
        },
        Check {
            metric: "median makespan error",
            value: median_error * 100.0,
            tolerance: tol.median_rel * 100.0,
            unit: "%",
            pass: median_error.abs() <= tol.median_rel,
        },
        Check {
            metric: "start offset quantiles",
            value: offset_error_ms,
            tolerance: offset_tolerance_ms,
            unit: "ms",
            pass: offset_error_ms <= offset_tolerance_ms,
        },
    ];
    DistributionReport {
        scenario: sim_name.0.to_string(),
        policy: sim_name.1.to_string(),
        runtime: runtime.to_string(),
        sim_runs: sim.runs,
        first_seed: sim.first_seed,
        sim_makespan_ms: q,
        sim_outcomes: sim.outcomes.clone(),
        ks: ks_two_sample(
            &sim.per_run
                .iter()
                .filter(|r| r.completed)
                .map(|r| r.makespan_ms)
                .collect::<Vec<_>>(),
            &makespans,
        ),
        measured_makespans_ms: makespans,
        measured_peaks: peaks,
        covered,
        median_error,
        offset_error_ms,
        offset_error_at,
        offset_tolerance_ms,
        width_ratio,
        measured_agree,
        sim_p5_p95_rel,
        latency_p50_ms,
        latency_p95_ms,
        latency_p99_within: latency_p99_ms.error().abs() <= LATENCY_P99_TOLERANCE,
        latency_p99_ms,
        threads_peak,
        threads_curve_distance,
        threads_curve_tolerance,
        threads_curve_within: threads_curve_distance <= threads_curve_tolerance,
        pass: !measured.is_empty() && sim.incomplete == 0 && checks.iter().all(|c| c.pass),
        checks,
    }
}

/// Figures over a set of scenarios (`validate --generate`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SetSummary {
    pub scenarios: usize,
    pub measured_runs: usize,
    pub covered_runs: usize,
    /// covered / measured.
    pub coverage: f64,
    /// Median over the scenarios of |median makespan error|.
    pub median_abs_median_error: f64,
    /// Scenarios whose median misses by more than 10 %: (name, error).
    pub misses_over_10_percent: Vec<(String, f64)>,
    /// Scenarios whose measured runs agree within 1 %, and how many of
    /// those have a simulated p5–p95 within 2 %.
    pub agreeing: usize,
    pub agreeing_sim_tight: usize,
    /// Median over the scenarios of the simulated p5–p95 width / measured
    /// min–max width (scenarios with a measured width).
    pub median_width_ratio: Option<f64>,
    /// Median KS statistic and the share of scenarios with p < 0.05.
    pub median_ks_d: f64,
    pub ks_rejected_share: f64,
    /// Scenarios whose median p99 latency is within
    /// [`LATENCY_P99_TOLERANCE`] of the measured one.
    pub latency_p99_within: usize,
    /// Median over the scenarios of |median p99 latency error|.
    pub median_abs_latency_p99_error: f64,
    /// Median over the scenarios of |simulated − measured median peak of
    /// threads|.
    pub median_abs_peak_error: f64,
    /// Scenarios whose thread-count curve is within its tolerance
    /// ([`DistributionReport::threads_curve_within`]).
    pub threads_curve_within: usize,
}

/// Sums up the reports of a set.
pub fn summarize_set(reports: &[DistributionReport]) -> SetSummary {
    let measured_runs: usize = reports.iter().map(|r| r.measured_makespans_ms.len()).sum();
    let covered_runs: usize = reports.iter().map(|r| r.covered).sum();
    let ratios: Vec<f64> = reports.iter().filter_map(|r| r.width_ratio).collect();
    let agreeing: Vec<&DistributionReport> = reports.iter().filter(|r| r.measured_agree).collect();
    SetSummary {
        scenarios: reports.len(),
        measured_runs,
        covered_runs,
        coverage: if measured_runs > 0 {
            covered_runs as f64 / measured_runs as f64
        } else {
            0.0
        },
        median_abs_median_error: median(reports.iter().map(|r| r.median_error.abs()).collect()),
        misses_over_10_percent: reports
            .iter()
            .filter(|r| r.median_error.abs() > 0.10)
            .map(|r| (r.scenario.clone(), r.median_error))
            .collect(),
        agreeing: agreeing.len(),
        agreeing_sim_tight: agreeing.iter().filter(|r| r.sim_p5_p95_rel <= 0.02).count(),
        median_width_ratio: (!ratios.is_empty()).then(|| median(ratios)),
        median_ks_d: median(reports.iter().map(|r| r.ks.d).collect()),
        ks_rejected_share: if reports.is_empty() {
            0.0
        } else {
            reports.iter().filter(|r| r.ks.p_value < 0.05).count() as f64 / reports.len() as f64
        },
        latency_p99_within: reports.iter().filter(|r| r.latency_p99_within).count(),
        median_abs_latency_p99_error: median(
            reports
                .iter()
                .map(|r| r.latency_p99_ms.error().abs())
                .collect(),
        ),
        median_abs_peak_error: median(
            reports
                .iter()
                .map(|r| (r.threads_peak.simulated - r.threads_peak.measured).abs())
                .collect(),
        ),
        threads_curve_within: reports.iter().filter(|r| r.threads_curve_within).count(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ks_of_identical_samples_is_zero_and_of_disjoint_ones_is_one() {
        let a = [1.0, 2.0, 3.0, 4.0];
        let t = ks_two_sample(&a, &a);
        assert_eq!(t.d, 0.0);
        assert_eq!(t.p_value, 1.0);
        let b = [10.0, 11.0, 12.0, 13.0];
        let t = ks_two_sample(&a, &b);
        assert_eq!(t.d, 1.0);
        assert!(t.p_value < 0.05, "{}", t.p_value);
        // Half the mass shifted: D = 0.5.
        let c = [1.0, 2.0, 13.0, 14.0];
        assert!((ks_two_sample(&a, &c).d - 0.5).abs() < 1e-12);
    }

    #[test]
    fn kolmogorov_tail_matches_its_table() {
        // Q(1.36) ≈ 0.049 and Q(1.63) ≈ 0.010 (the 5 % and 1 % points).
        assert!((kolmogorov_q(1.358) - 0.05).abs() < 0.002);
        assert!((kolmogorov_q(1.628) - 0.01).abs() < 0.001);
    }

    #[test]
    fn a_median_pair_s_error_is_relative_to_the_measured_one() {
        let p = MedianPair {
            simulated: 115.0,
            measured: 100.0,
        };
        assert!((p.error() - 0.15).abs() < 1e-12);
        let none = MedianPair {
            simulated: 0.0,
            measured: 0.0,
        };
        assert_eq!(none.error(), 0.0);
        let from_zero = MedianPair {
            simulated: 3.0,
            measured: 0.0,
        };
        assert_eq!(from_zero.error(), 1.0);
    }

    #[test]
    fn a_measured_curve_is_compared_with_the_model_s_median_curve() {
        // Three model runs: 4 threads from 0 ms, then 8 from 50, 60 or
        // 500 ms; the median run rises at 60 ms.
        let model: Vec<ThreadCurve> = [50.0, 60.0, 500.0]
            .iter()
            .map(|&up| ThreadCurve::from_changes(vec![(0.0, 4), (up, 8)]))
            .collect();
        let sim: Vec<&ThreadCurve> = model.iter().collect();
        let same = ThreadCurve::from_changes(vec![(0.0, 4), (60.0, 8)]);
        assert!(median_curve_distance(&sim, &same, 100.0) < 1e-9);
        // Rising 20 ms later is 4 threads apart over a fifth of the span.
        let late = ThreadCurve::from_changes(vec![(0.0, 4), (80.0, 8)]);
        let d = median_curve_distance(&sim, &late, 100.0);
        assert!((d - 0.8).abs() < 0.05, "{d}");
        // Two threads more throughout.
        let more = ThreadCurve::from_changes(vec![(0.0, 6), (60.0, 10)]);
        assert!((median_curve_distance(&sim, &more, 100.0) - 2.0).abs() < 1e-9);
        // Before the first change a curve has no thread.
        assert_eq!(ThreadCurve::from_changes(vec![(10.0, 3)]).at(5.0), 0);
    }

    #[test]
    fn nearest_rank_quantiles() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.125), 1.0);
        assert_eq!(quantile(&v, 0.875), 4.0);
        assert_eq!(quantile(&v, 0.5), 2.0);
    }
}
