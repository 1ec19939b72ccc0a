//! The pool's own account of its thread goal, in the runtime's words, for a
//! simulated run and a real one alike.
//!
//! A real .NET pool logs every change of its thread-count goal as
//! `ThreadPoolWorkerThreadAdjustmentAdjustment` (event 55 of the provider
//! Microsoft-Windows-DotNETRuntime, keyword 0x10000) with a `Reason` code,
//! and `poolsim` reads those events from an EventPipe trace
//! ([`crate::nettrace`]). The models make the same decisions at the same
//! decision points: the gate thread's starvation rule, hill climbing's
//! transitions, cooperative blocking, an idle thread's time-out. This module
//! writes the model's goal changes as the same events with the same reason
//! codes ([`Account::from_model`]), puts a real trace on the measured run's
//! time axis ([`Account::from_timeline`]), and compares the two
//! ([`compare`]): how many adjustments of each reason, when the starvation
//! and cooperative-blocking injections came, and the goal over time.
//!
//! Where the codes come from (checked against the runtime's sources):
//! - dotnet/runtime `PortableThreadPool.HillClimbing.cs`
//!   (`StateOrTransition`): 0 Warmup, 1 Initializing, 2 RandomMove,
//!   3 ClimbingMove, 4 ChangePoint, 5 Stabilizing, 6 Starvation,
//!   7 ThreadTimedOut, 8 CooperativeBlocking (.NET 7+; the gate's blocking
//!   adjustment calls `ForceChange` with it);
//! - dotnet/coreclr v3.1 `src/vm/hillclimbing.h` (`HillClimbingStateTransition`):
//!   the same 0 to 7, then `Undefined`: the native pool has no cooperative
//!   blocking, so its models never raise the goal for it.
//!
//! Both runtimes log an adjustment only when the goal moves
//! (`ChangeThreadCount`, from `Update` and `ForceChange`), and none for the
//! goal the pool starts with (its minimum): a model's `min-threads` goal is
//! the account's [`Account::initial_goal`], not an adjustment.

use serde::Serialize;

use crate::metrics::median;
use crate::nettrace::{AdjustmentReason, PoolTimeline};
use crate::time::SimTime;
use crate::trace::{Decision, GoalReason, ThreadReason, TraceEvent};

/// Where a measured run's t0 lies on the clock its runtime's events are
/// stamped with: the harness's `clock` record (Stopwatch ticks at t0, ticks
/// per second). On Linux, .NET's Stopwatch and EventPipe's timestamps both
/// read `QueryPerformanceCounter` (CLOCK_MONOTONIC in ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RunClock {
    pub t0_ticks: i64,
    pub frequency: i64,
}

/// One goal change: `ThreadPoolWorkerThreadAdjustmentAdjustment`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct GoalAdjustment {
    /// Milliseconds since the run's t0 (its first submission); negative for
    /// a change during the runtime's start-up.
    pub at_ms: f64,
    /// The goal before (the last adjustment's, else the initial goal).
    pub previous: Option<u32>,
    /// `NewWorkerThreadCount`.
    pub goal: u32,
    pub reason: AdjustmentReason,
}

/// A run's goal changes with their reasons.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Account {
    /// The goal before the first adjustment (the pool's minimum), when known.
    pub initial_goal: Option<u32>,
    /// In time order.
    pub adjustments: Vec<GoalAdjustment>,
}

/// An adjustment reason by its name as people write it (validation's
/// check labels such as `Starvation count`, in any case, with or without
/// dashes). `None` for `min-threads`, the starting goal, which no runtime
/// logs.
pub fn model_reason(name: &str) -> Option<AdjustmentReason> {
    let key: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    Some(match key.as_str() {
        "warmup" => AdjustmentReason::Warmup,
        "initializing" => AdjustmentReason::Initializing,
        "randommove" => AdjustmentReason::RandomMove,
        "climbingmove" => AdjustmentReason::ClimbingMove,
        "changepoint" => AdjustmentReason::ChangePoint,
        "stabilizing" => AdjustmentReason::Stabilizing,
        "starvation" => AdjustmentReason::Starvation,
        "threadtimedout" => AdjustmentReason::ThreadTimedOut,
        "cooperativeblocking" => AdjustmentReason::CooperativeBlocking,
        _ => return None,
    })
}

/// The runtime's reason for a model's goal change: the same reasons, less
/// the model's start at the minimum (which the runtime does not log as an
/// adjustment).
pub fn adjustment_reason(reason: GoalReason) -> Option<AdjustmentReason> {
    Some(match reason {
        GoalReason::MinThreads | GoalReason::Other => return None,
        GoalReason::Warmup => AdjustmentReason::Warmup,
        GoalReason::Initializing => AdjustmentReason::Initializing,
        GoalReason::RandomMove => AdjustmentReason::RandomMove,
        GoalReason::ClimbingMove => AdjustmentReason::ClimbingMove,
        GoalReason::ChangePoint => AdjustmentReason::ChangePoint,
        GoalReason::Stabilizing => AdjustmentReason::Stabilizing,
        GoalReason::Starvation => AdjustmentReason::Starvation,
        GoalReason::ThreadTimedOut => AdjustmentReason::ThreadTimedOut,
        GoalReason::CooperativeBlocking => AdjustmentReason::CooperativeBlocking,
    })
}

/// A trace sink that keeps only what an [`Account`] is made of (goal
/// changes and hill climbing's adoptions): O(adjustments) memory where an
/// [`crate::trace::EventLog`] keeps every event.
#[derive(Clone, Debug, Default)]
pub struct AccountSink {
    pub events: Vec<(SimTime, TraceEvent)>,
}

impl crate::trace::TraceSink for AccountSink {
    fn record(&mut self, at: SimTime, event: TraceEvent) {
        if matches!(
            event,
            TraceEvent::GoalChanged { .. }
                | TraceEvent::Decision(Decision::HillClimbing { adopted: true, .. })
        ) {
            self.events.push((at, event));
        }
    }
}

impl Account {
    /// The model's goal changes, from the events a run recorded (an
    /// [`crate::trace::EventLog`]), as the runtime would log them.
    ///
    /// Besides every goal change, one event moves no goal: hill climbing's
    /// first sample finds its own last count (0 at start) apart from the
    /// pool's goal and adopts the goal (`ForceChange(count, Initializing)`,
    /// which logs an adjustment to the same goal). The model records that
    /// as a hill-climbing decision with `adopted` set.
    pub fn from_model(events: &[(SimTime, TraceEvent)]) -> Account {
        let mut account = Account::default();
        let mut goal = None;
        for (at, e) in events {
            let (new, reason) = match e {
                TraceEvent::GoalChanged { goal, reason } => (goal, *reason),
                TraceEvent::Decision(Decision::HillClimbing {
                    adopted: true,
                    goal,
                    ..
                }) => (goal, GoalReason::Initializing),
                _ => continue,
            };
            match adjustment_reason(reason) {
                Some(reason) => account.adjustments.push(GoalAdjustment {
                    at_ms: at.as_ms_f64(),
                    previous: goal,
                    goal: *new,
                    reason,
                }),
                None if account.adjustments.is_empty() => account.initial_goal = Some(*new),
                None => {}
            }
            goal = Some(*new);
        }
        account
    }

    /// A real run's adjustments, read from its EventPipe trace, on the
    /// measured run's time axis.
    pub fn from_timeline(timeline: &PoolTimeline, clock: RunClock) -> Account {
        // Event times count from the trace's sync time; the run's from t0.
        let shift_ms = timeline.trace.as_ref().map_or(0.0, |info| {
            let freq = info.qpc_frequency.max(1) as f64;
            (info.sync_time_qpc as f64 - clock.t0_ticks as f64) * 1000.0 / freq
        });
        let adjustments = timeline
            .adjustments
            .iter()
            .map(|a| GoalAdjustment {
                at_ms: a.time_ns as f64 / 1e6 + shift_ms,
                previous: a.previous_count,
                goal: a.new_count,
                reason: a.reason,
            })
            .collect::<Vec<_>>();
        let initial_goal = adjustments
            .first()
            .and_then(|a| a.previous)
            .or_else(|| timeline.min_max.map(|m| u32::from(m.min_workers)));
        Account {
            initial_goal,
            adjustments,
        }
    }

    /// Adjustments with `reason` at or after `from_ms`.
    pub fn count(&self, reason: AdjustmentReason, from_ms: f64) -> usize {
        self.adjustments
            .iter()
            .filter(|a| a.reason == reason && a.at_ms >= from_ms)
            .count()
    }

    /// When the goal was raised for `reason` (injections), at or after `from_ms`.
    pub fn raises(&self, reason: AdjustmentReason, from_ms: f64) -> Vec<f64> {
        self.adjustments
            .iter()
            .filter(|a| a.reason == reason && a.at_ms >= from_ms)
            .filter(|a| a.previous.is_none_or(|p| a.goal > p))
            .map(|a| a.at_ms)
            .collect()
    }

    /// The goal at `at_ms` (the last adjustment at or before it, else the
    /// initial goal).
    pub fn goal_at(&self, at_ms: f64) -> Option<u32> {
        self.adjustments
            .iter()
            .take_while(|a| a.at_ms <= at_ms)
            .last()
            .map(|a| a.goal)
            .or(self.initial_goal)
    }

    /// How many adjustments each reason made, in code order, by the
    /// runtime's name for it (as `poolsim import` counts a real trace's).
    pub fn count_by_reason(&self) -> Vec<(String, usize)> {
        self.reasons()
            .into_iter()
            .map(|r| (r.name(), self.count(r, f64::NEG_INFINITY)))
            .collect()
    }

    /// Why the pool had a `k`-th thread (0-based) at `at_ms`: within the
    /// initial goal, on demand; beyond it, owed to the adjustment that last
    /// raised the goal past `k` at or before `at_ms` (the gate's
    /// starvation rule, cooperative blocking, or hill climbing's moves).
    /// `None` when the account does not say.
    pub fn thread_reason(&self, k: u32, at_ms: f64) -> Option<ThreadReason> {
        if self.initial_goal.is_some_and(|g| k < g) {
            return Some(ThreadReason::Demand);
        }
        let raise = self
            .adjustments
            .iter()
            .take_while(|a| a.at_ms <= at_ms)
            .filter(|a| a.goal > k && a.previous.is_some_and(|p| p <= k))
            .last()?;
        Some(match raise.reason {
            AdjustmentReason::Starvation => ThreadReason::Starvation,
            AdjustmentReason::CooperativeBlocking => ThreadReason::CooperativeBlocking,
            AdjustmentReason::Other(_) => return None,
            _ => ThreadReason::HillClimbing,
        })
    }

    /// The reasons present, in code order.
    pub fn reasons(&self) -> Vec<AdjustmentReason> {
        let mut r: Vec<AdjustmentReason> = self.adjustments.iter().map(|a| a.reason).collect();
        r.sort();
        r.dedup();
        r
    }
}

/// Mean |difference| of the k-th times of two sorted lists, over the pairs
/// both have; `None` when either is empty.
fn paired_time_error(a: &[f64], b: &[f64]) -> Option<f64> {
    let n = a.len().min(b.len());
    (n > 0).then(|| a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum::<f64>() / n as f64)
}

/// Time-average |goal difference| over `[0, end_ms]`, sampled every ms
/// step of `end_ms / 2000`; `None` when either account has no goal there.
fn goal_curve_distance(sim: &Account, real: &Account, end_ms: f64) -> Option<f64> {
    if end_ms <= 0.0 {
        return None;
    }
    let steps = 2000;
    let mut sum = 0.0;
    for k in 0..steps {
        let t = end_ms * (k as f64 + 0.5) / steps as f64;
        let (Some(s), Some(r)) = (sim.goal_at(t), real.goal_at(t)) else {
            return None;
        };
        sum += (f64::from(s) - f64::from(r)).abs();
    }
    Some(sum / steps as f64)
}

/// How one reason's adjustments compare: the model's count and each
/// measured run's, from t0 on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReasonCount {
    pub reason: AdjustmentReason,
    pub code: u32,
    pub model: usize,
    pub measured: Vec<usize>,
}

/// One adjustment check (the shape of [`crate::validate::Check`], with the
/// metric's name owned).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AdjustmentCheck {
    pub metric: String,
    /// The median over the measured runs, in `unit`.
    pub value: f64,
    pub tolerance: f64,
    pub unit: &'static str,
    pub pass: bool,
}

/// When one reason raised the goal (ms from t0): the model's and each
/// measured run's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InjectionTimes {
    pub reason: AdjustmentReason,
    pub model_ms: Vec<f64>,
    pub measured_ms: Vec<Vec<f64>>,
}

/// The model's account against the measured runs'.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AdjustmentReport {
    /// Measured runs that carried an account.
    pub runs: usize,
    pub reasons: Vec<ReasonCount>,
    /// The Starvation and CooperativeBlocking injections, where any.
    pub injections: Vec<InjectionTimes>,
    pub checks: Vec<AdjustmentCheck>,
    pub pass: bool,
}

/// The tolerances, taken from the timing checks': counts within 1 or 20 %
/// of the measured count; injection times within the offset tolerance
/// (`offset_tol_ms`: 100 ms or 5 % of the makespan); the goal curve within
/// the threads-curve tolerance (`curve_tol`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdjustmentTolerances {
    pub count_floor: f64,
    pub count_share: f64,
    pub offset_tol_ms: f64,
    pub curve_tol: f64,
}

/// Compares the model's account with the measured runs' accounts (each
/// with its makespan in ms). Only adjustments from t0 on count: what a
/// runtime did during its own start-up is not the workload's. `None` when
/// no measured run has an account.
pub fn compare(
    model: &Account,
    measured: &[(Account, f64)],
    tol: AdjustmentTolerances,
) -> Option<AdjustmentReport> {
    if measured.is_empty() {
        return None;
    }
    let mut reasons: Vec<AdjustmentReason> = model.reasons();
    for (a, _) in measured {
        reasons.extend(a.reasons());
    }
    reasons.sort();
    reasons.dedup();
    let counts: Vec<ReasonCount> = reasons
        .iter()
        .map(|&r| ReasonCount {
            reason: r,
            code: r.code(),
            model: model.count(r, 0.0),
            measured: measured.iter().map(|(a, _)| a.count(r, 0.0)).collect(),
        })
        .filter(|c| c.model > 0 || c.measured.iter().any(|&n| n > 0))
        .collect();
    let mut checks = Vec::new();
    let mut injections = Vec::new();
    for c in &counts {
        let real = median(c.measured.iter().map(|&n| n as f64).collect());
        checks.push(AdjustmentCheck {
            metric: format!("{} count", c.reason.name()),
            value: c.model as f64 - real,
            tolerance: tol.count_floor.max(tol.count_share * real),
            unit: "adj",
            pass: (c.model as f64 - real).abs() <= tol.count_floor.max(tol.count_share * real),
        });
    }
    for (reason, name) in [
        (AdjustmentReason::Starvation, "Starvation times"),
        (
            AdjustmentReason::CooperativeBlocking,
            "CooperativeBlocking times",
        ),
    ] {
        let sim = model.raises(reason, 0.0);
        let real: Vec<Vec<f64>> = measured
            .iter()
            .map(|(a, _)| a.raises(reason, 0.0))
            .collect();
        let errors: Vec<f64> = real
            .iter()
            .filter_map(|r| paired_time_error(&sim, r))
            .collect();
        if !sim.is_empty() || real.iter().any(|r| !r.is_empty()) {
            injections.push(InjectionTimes {
                reason,
                model_ms: sim.clone(),
                measured_ms: real.clone(),
            });
        }
        if !errors.is_empty() {
            let value = median(errors);
            checks.push(AdjustmentCheck {
                metric: name.to_string(),
                value,
                tolerance: tol.offset_tol_ms,
                unit: "ms",
                pass: value <= tol.offset_tol_ms,
            });
        }
    }
    let distances: Vec<f64> = measured
        .iter()
        .filter_map(|(a, end)| goal_curve_distance(model, a, *end))
        .collect();
    if !distances.is_empty() {
        let value = median(distances);
        checks.push(AdjustmentCheck {
            metric: "goal curve distance".to_string(),
            value,
            tolerance: tol.curve_tol,
            unit: "th",
            pass: value <= tol.curve_tol,
        });
    }
    Some(AdjustmentReport {
        runs: measured.len(),
        pass: checks.iter().all(|c| c.pass),
        reasons: counts,
        injections,
        checks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SimDuration;

    fn at(ms: u64) -> SimTime {
        SimTime::ZERO + SimDuration::from_ms(ms)
    }

    fn model_events() -> Vec<(SimTime, TraceEvent)> {
        vec![
            (
                at(0),
                TraceEvent::GoalChanged {
                    goal: 2,
                    reason: GoalReason::MinThreads,
                },
            ),
            (
                at(1000),
                TraceEvent::GoalChanged {
                    goal: 3,
                    reason: GoalReason::Starvation,
                },
            ),
            (
                at(1500),
                TraceEvent::GoalChanged {
                    goal: 4,
                    reason: GoalReason::CooperativeBlocking,
                },
            ),
            (
                at(2000),
                TraceEvent::GoalChanged {
                    goal: 3,
                    reason: GoalReason::ClimbingMove,
                },
            ),
        ]
    }

    #[test]
    fn every_runtime_reason_is_a_goal_reason_and_back() {
        use crate::trace::GoalReason;
        let runtime = [
            AdjustmentReason::Warmup,
            AdjustmentReason::Initializing,
            AdjustmentReason::RandomMove,
            AdjustmentReason::ClimbingMove,
            AdjustmentReason::ChangePoint,
            AdjustmentReason::Stabilizing,
            AdjustmentReason::Starvation,
            AdjustmentReason::ThreadTimedOut,
            AdjustmentReason::CooperativeBlocking,
        ];
        for r in runtime {
            assert_eq!(adjustment_reason(r.goal_reason()), Some(r), "{r:?}");
        }
        // The model's start at the minimum is no runtime adjustment.
        assert_eq!(adjustment_reason(GoalReason::MinThreads), None);
        assert_eq!(
            adjustment_reason(AdjustmentReason::Other(42).goal_reason()),
            None
        );
    }

    #[test]
    fn a_models_goal_changes_become_the_runtimes_adjustments() {
        let a = Account::from_model(&model_events());
        assert_eq!(a.initial_goal, Some(2));
        let codes: Vec<u32> = a.adjustments.iter().map(|x| x.reason.code()).collect();
        assert_eq!(codes, [6, 8, 3]);
        assert_eq!(a.adjustments[0].previous, Some(2));
        assert_eq!(a.adjustments[2].previous, Some(4));
        assert_eq!(a.goal_at(500.0), Some(2));
        assert_eq!(a.goal_at(1700.0), Some(4));
        assert_eq!(a.goal_at(2500.0), Some(3));
        // A lowering move is an adjustment but not an injection.
        assert_eq!(
            a.raises(AdjustmentReason::ClimbingMove, 0.0),
            Vec::<f64>::new()
        );
        assert_eq!(a.raises(AdjustmentReason::Starvation, 0.0), [1000.0]);
        assert_eq!(model_reason("min-threads"), None);
        assert_eq!(
            model_reason("thread-timed-out"),
            Some(AdjustmentReason::ThreadTimedOut)
        );
    }

    #[test]
    fn hill_climbings_first_adoption_is_an_initializing_adjustment_to_the_same_goal() {
        let sample = |adopted, goal, new_goal| {
            TraceEvent::Decision(Decision::HillClimbing {
                transition: "Warmup",
                adopted,
                throughput: 1.0,
                sample: SimDuration::from_ms(500),
                thread_wave: 0.0,
                throughput_wave: 0.0,
                ratio: 0.0,
                confidence: 0.0,
                step: 0.0,
                control_setting: f64::from(goal),
                wave_magnitude: 1,
                wave_high: false,
                cpu_percent: 0,
                goal,
                new_goal,
            })
        };
        let events = vec![
            (
                at(0),
                TraceEvent::GoalChanged {
                    goal: 2,
                    reason: GoalReason::MinThreads,
                },
            ),
            (at(650), sample(true, 2, 2)),
            (at(2700), sample(false, 2, 3)),
            (
                at(2700),
                TraceEvent::GoalChanged {
                    goal: 3,
                    reason: GoalReason::Warmup,
                },
            ),
        ];
        let a = Account::from_model(&events);
        let got: Vec<(f64, Option<u32>, u32, AdjustmentReason)> = a
            .adjustments
            .iter()
            .map(|x| (x.at_ms, x.previous, x.goal, x.reason))
            .collect();
        assert_eq!(
            got,
            [
                (650.0, Some(2), 2, AdjustmentReason::Initializing),
                (2700.0, Some(2), 3, AdjustmentReason::Warmup),
            ]
        );
    }

    #[test]
    fn each_thread_is_owed_to_the_raise_that_made_room_for_it() {
        let a = Account::from_model(&model_events());
        // Goal 2, then 3 (starvation, 1.0 s), 4 (blocking, 1.5 s), 3 (2.0 s).
        assert_eq!(a.thread_reason(0, 0.0), Some(ThreadReason::Demand));
        assert_eq!(a.thread_reason(1, 0.0), Some(ThreadReason::Demand));
        assert_eq!(a.thread_reason(2, 500.0), None, "not yet raised");
        assert_eq!(a.thread_reason(2, 1000.0), Some(ThreadReason::Starvation));
        assert_eq!(
            a.thread_reason(3, 1600.0),
            Some(ThreadReason::CooperativeBlocking)
        );
        // Lowered to 3 at 2 s: a fourth thread after that has no raise of its own.
        assert_eq!(
            a.thread_reason(3, 2500.0),
            Some(ThreadReason::CooperativeBlocking)
        );
        assert_eq!(a.thread_reason(4, 2500.0), None);
    }

    fn tol() -> AdjustmentTolerances {
        AdjustmentTolerances {
            count_floor: 1.0,
            count_share: 0.2,
            offset_tol_ms: 100.0,
            curve_tol: 1.5,
        }
    }

    #[test]
    fn the_same_account_passes_and_a_late_one_fails() {
        let a = Account::from_model(&model_events());
        let same = compare(&a, &[(a.clone(), 3000.0)], tol()).unwrap();
        assert!(same.pass, "{same:?}");
        assert!(same.checks.iter().all(|c| c.value.abs() < 1e-9));
        let mut late = a.clone();
        for x in &mut late.adjustments {
            x.at_ms += 400.0;
        }
        let r = compare(&a, &[(late, 3000.0)], tol()).unwrap();
        let times = r
            .checks
            .iter()
            .find(|c| c.metric == "Starvation times")
            .unwrap();
        assert_eq!(times.value, 400.0);
        assert!(!times.pass && !r.pass);
    }

    #[test]
    fn missing_injections_fail_the_count() {
        let a = Account::from_model(&model_events());
        let none = Account {
            initial_goal: Some(2),
            adjustments: Vec::new(),
        };
        let r = compare(&a, &[(none.clone(), 3000.0), (none, 3000.0)], tol()).unwrap();
        let starvation = r
            .reasons
            .iter()
            .find(|c| c.reason == AdjustmentReason::Starvation)
            .unwrap();
        assert_eq!(
            (starvation.model, starvation.measured.clone()),
            (1, vec![0, 0])
        );
        // One too many of each of three reasons: each within 1, passes;
        // the goal curve is up to 2 threads off (0.83 on average).
        assert!(
            r.checks
                .iter()
                .filter(|c| c.metric.ends_with("count"))
                .all(|c| c.pass)
        );
        let curve = r
            .checks
            .iter()
            .find(|c| c.metric == "goal curve distance")
            .unwrap();
        assert!(curve.value > 0.5, "{curve:?}");
        assert!(compare(&a, &[], tol()).is_none());
    }
}
