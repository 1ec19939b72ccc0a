//! Invariants over many generated scenarios: every item is queued, started
//! and finished exactly once and in that order; no more threads than the
//! maximum; no step takes less than its duration (so CPU work never runs
//! faster than one core per thread; a spin timed by a coarse `TickCount`
//! may end up to one tick early); the clock never goes back.
//!
//! The generated cases come from a fixed seed, so `cargo test` is
//! reproducible; set `PROPTEST_RNG_SEED=<n>` to explore other cases.

use proptest::prelude::*;

use poolsim::engine::{self, SimOptions};
use poolsim::policy::config::ThrottleKind;
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::{
    Arrival, Group, Machine, Origin, PoolSettings, Probe, Scenario, Spacing, Step, Submit, Throttle,
};

/// Every built-in policy the generated scenarios run under.
const POLICIES: &[&str] = &[
    "net-classic",
    "coreclr3-linux",
    "net6",
    "net8",
    "mono",
    "net20-sp1",
    "net20",
    "dedicated-threads",
    "net-classic-throttled",
    "net6-throttled",
];

const SHAPES: &[Submit] = &[
    Submit::TaskRun,
    Submit::QueueUserWorkItem,
    Submit::WhenAll,
    Submit::NewThread,
    Submit::ParallelInvoke,
    Submit::ParallelFor,
    Submit::ParallelForEach,
    Submit::Plinq,
    Submit::ParallelForEachAsync,
];
use poolsim::time::{SimDuration, SimTime};
use poolsim::trace::{EventLog, TraceEvent};

fn step() -> impl Strategy<Value = Step> {
    let ms = 0u64..300;
    prop_oneof![
        ms.clone().prop_map(|d| Step::Cpu(SimDuration::from_ms(d))),
        ms.clone().prop_map(|d| Step::Spin(SimDuration::from_ms(d))),
        ms.clone().prop_map(|d| Step::Busy(SimDuration::from_ms(d))),
        ms.clone()
            .prop_map(|d| Step::Sleep(SimDuration::from_ms(d))),
        ms.clone().prop_map(|d| Step::Wait(SimDuration::from_ms(d))),
        ms.prop_map(|d| Step::Await(SimDuration::from_ms(d))),
        Just(Step::Yield),
    ]
}

fn arrival() -> impl Strategy<Value = Arrival> {
    prop_oneof![
        (0u64..500).prop_map(|t| Arrival::At(SimDuration::from_ms(t))),
        (0u64..200, 1u64..100).prop_map(|(s, e)| Arrival::Every {
            start: SimDuration::from_ms(s),
            every: SimDuration::from_ms(e),
        }),
        (0u64..200, 1.0f64..500.0).prop_map(|(s, r)| Arrival::Poisson {
            start: SimDuration::from_ms(s),
            per_second: r,
        }),
    ]
}

fn group(index: usize) -> impl Strategy<Value = Group> {
    (
        1u64..40,
        0..SHAPES.len(),
        prop_oneof![Just(Origin::Main), Just(Origin::Pool)],
        arrival(),
        prop::collection::vec(step(), 1..5),
        prop::option::of(1u32..6),
        prop::option::of((any::<bool>(), 1u32..6)),
        any::<bool>(),
    )
        .prop_map(
            move |(count, shape, from, arrival, body, degree, throttle, follow)| {
                let submit = SHAPES[shape];
                // What the loader enforces: synchronous bodies for the
                // parallel shapes, one call at one instant, max_degree and
                // throttles only where the API has them.
                let body = if submit.synchronous_body() {
                    body.into_iter()
                        .map(|st| match st {
                            Step::Await(d) => Step::Sleep(d),
                            Step::Yield => Step::Cpu(SimDuration::from_ms(1)),
                            other => other,
                        })
                        .collect()
                } else {
                    body
                };
                let arrival = if index > 0 && follow {
                    // A phase after the earlier one: at once, or a stream.
                    Arrival::After {
                        group: index - 1,
                        delay: SimDuration::from_ms(5),
                        spacing: if submit.one_call() {
                            Spacing::AtOnce
                        } else {
                            arrival.spacing()
                        },
                    }
                } else if submit.one_call() {
                    Arrival::At(SimDuration::from_ms(10))
                } else {
                    arrival
                };
                let max_degree = if submit.one_call() { degree } else { None };
                let throttleable = matches!(
                    submit,
                    Submit::TaskRun
                        | Submit::QueueUserWorkItem
                        | Submit::WhenAll
                        | Submit::ParallelForEachAsync
                );
                let throttle = throttle
                    .filter(|_| throttleable)
                    .map(|(pair, limit)| Throttle {
                        kind: if pair {
                            ThrottleKind::ConcurrentExclusive
                        } else {
                            ThrottleKind::Semaphore
                        },
                        limit,
                    });
                Group {
                    name: format!("g{index}"),
                    count,
                    submit,
                    from,
                    arrival,
                    late: SimDuration::ZERO,
                    body,
                    max_degree,
                    throttle,
                }
            },
        )
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        1u32..9,
        prop::option::of(1u32..12),
        prop::option::of(1u32..40),
        any::<u64>(),
        prop::collection::vec(0usize..1, 1..4),
        prop::option::of(50u64..400),
        prop::option::of(1u64..20_000),
    )
        .prop_flat_map(|(cores, min, max, seed, shape, probe, tick_us)| {
            let groups: Vec<_> = (0..shape.len()).map(group).collect();
            (Just((cores, min, max, seed, probe, tick_us)), groups)
        })
        .prop_map(|((cores, min, max, seed, probe, tick_us), groups)| {
            let max = match (min, max) {
                (Some(lo), Some(hi)) => Some(hi.max(lo)),
                (_, m) => m,
            };
            Scenario {
                name: "generated".into(),
                seed,
                workload_seed: None,
                machine: Machine {
                    cores,
                    processors: None,
                    tick: tick_us.map(|us| SimDuration::from_nanos(us * 1000)),
                },
                pool: PoolSettings {
                    policy: "net-classic".into(),
                    min_threads: min,
                    max_threads: max,
                    gate_phase: None,
                    tiered_compilation: true,
                },
                groups,
                probes: probe
                    .map(|ms| Probe {
                        every: SimDuration::from_ms(ms),
                    })
                    .into_iter()
                    .collect(),
                until: Some(SimDuration::from_ms(3_600_000)),
            }
        })
}

/// The least time a body can take: a spin timed by a `TickCount` of step
/// `tick` can end up to a tick early (it started late in its tick).
/// The shortest time `body` can take: a spin may end a `TickCount` tick
/// early, and a timer (`wait_ms`, `await_ms`) one step of the policy's
/// timer clock early (`timers.tick_count`: CoreCLR on Linux).
fn min_duration(
    body: &[Step],
    tick: Option<SimDuration>,
    timer_step: Option<SimDuration>,
    cpu_second: SimDuration,
) -> SimDuration {
    let tick = tick.unwrap_or(SimDuration::ZERO).as_nanos();
    let timer_step = timer_step.unwrap_or(SimDuration::ZERO).as_nanos();
    body.iter()
        .map(|s| match *s {
            Step::Spin(d) => SimDuration::from_nanos(d.as_nanos().saturating_sub(tick)),
            Step::Wait(d) | Step::Await(d) => {
                SimDuration::from_nanos(d.as_nanos().saturating_sub(timer_step))
            }
            // A CPU step takes its length at the run's CPU rate, which a
            // measured policy draws (`cpu_second_ms`, at least its smallest).
            Step::Cpu(d) => SimDuration::from_nanos(
                (u128::from(d.as_nanos()) * u128::from(cpu_second.as_nanos()) / 1_000_000_000)
                    as u64,
            ),
            Step::Busy(d) | Step::Sleep(d) => d,
            // (Its calls' own time is not counted: still a lower bound.)
            Step::Yield | Step::FanOut { .. } => SimDuration::ZERO,
        })
        .fold(SimDuration::ZERO, |a, b| a + b)
}

proptest! {
    #![proptest_config(crate::common::proptest_config(800))]

    #[test]
    fn every_run_keeps_the_invariants(s in scenario(), which in 0..POLICIES.len()) {
        let policy = resolve_policy(POLICIES[which]).unwrap();
        let mut log = EventLog::default();
        let result = engine::simulate(&s, &policy, &mut log, &SimOptions::default());
        let trace = &result.trace;
        let seed = s.seed;

        // With a max_threads below what blocking items need, a run may
        // legitimately not finish (every thread blocked in a Wait whose timer
        // callback needs a pool thread); everything else must complete.
        // The same holds for a parallel call made on a pool thread, which
        // blocks its thread until parts that need other threads are done.
        let blocks_on_pool = |g: &Group| {
            g.body.iter().any(|st| matches!(st, Step::Wait(d) if *d > SimDuration::ZERO))
                || (g.from == Origin::Pool
                    && g.submit.one_call()
                    && g.submit != Submit::ParallelForEachAsync)
        };
        // (The limit may be the policy's own: .NET 2.0's 25 x cores.)
        let (_, max_threads) = poolsim::policy::thread_limits(&policy, &s);
        let can_deadlock = u64::from(max_threads) <= s.item_count() + 1
            && s.groups.iter().any(blocks_on_pool);
        prop_assert!(
            result.outcome.is_completed() || can_deadlock,
            "seed {} under {}: {:?}", seed, POLICIES[which], result.outcome
        );
        // And a run that cannot finish is recognised as such, not left to
        // spin until the time limit.
        prop_assert!(
            matches!(
                result.outcome,
                engine::Outcome::Completed | engine::Outcome::Deadlock { .. } | engine::Outcome::Stalled { .. }
            ),
            "seed {} under {}: {:?}", seed, POLICIES[which], result.outcome
        );
        if result.outcome.is_completed() {
            prop_assert_eq!(trace.items.len() as u64, s.item_count(), "seed {}", seed);
        }

        // Determinism: a second run gives the same trace bytes.
        let again = engine::simulate(&s, &policy, &mut poolsim::trace::NullSink, &SimOptions::default());
        prop_assert_eq!(
            poolsim::output::items_csv(trace).unwrap(),
            poolsim::output::items_csv(&again.trace).unwrap(),
            "seed {} under {}: two runs differ", seed, POLICIES[which]
        );
        prop_assert_eq!(&result.outcome, &again.outcome);

        // The clock never goes back.
        let mut last = SimTime::ZERO;
        for (at, _) in &log.events {
            prop_assert!(*at >= last, "seed {}: time went back", seed);
            last = *at;
        }

        // Each item queued, started, finished once, in that order.
        let n = trace.items.len();
        let (mut queued, mut started, mut finished) = (vec![0u32; n], vec![0u32; n], vec![0u32; n]);
        for (_, e) in &log.events {
            match e {
                TraceEvent::ItemQueued { item, .. } => queued[*item as usize] += 1,
                TraceEvent::ItemStarted { item, .. } => {
                    prop_assert_eq!(queued[*item as usize], 1);
                    started[*item as usize] += 1
                }
                TraceEvent::ItemFinished { item, .. } => {
                    prop_assert_eq!(started[*item as usize], 1);
                    finished[*item as usize] += 1
                }
                _ => {}
            }
        }
        for i in 0..n {
            prop_assert_eq!(queued[i], 1, "seed {}: item {} queued", seed, i);
            prop_assert!(started[i] <= 1 && finished[i] <= 1, "seed {}: item {}", seed, i);
            if result.outcome.is_completed() {
                prop_assert_eq!(finished[i], 1, "seed {}: item {} unfinished", seed, i);
            }
        }

        // No step faster than its duration; started >= queued.
        let cpu_second = policy.threads.cpu_second.min();
        for rec in &trace.items {
            if rec.started == SimTime::MAX { continue; }
            prop_assert!(rec.started >= rec.queued);
            if rec.finished == SimTime::MAX { continue; }
            let body = &s.groups[rec.group as usize].body;
            prop_assert!(
                rec.finished.since(rec.started) >= min_duration(body, s.machine.tick, policy.timers.tick_count, cpu_second),
                "seed {}: item {} ran {:?}, body needs {:?}",
                seed, rec.item, rec.finished.since(rec.started), min_duration(body, s.machine.tick, policy.timers.tick_count, cpu_second)
            );
        }

        // Never more pool threads than the maximum (dedicated threads are
        // outside the pool and counted with it, so runs with them are skipped).
        let dedicated = policy.model == poolsim::policy::ModelKind::Dedicated
            || s.groups.iter().any(|g| g.submit == Submit::NewThread);
        let (_, max) = poolsim::policy::thread_limits(&policy, &s);
        for c in trace.counts.iter().filter(|_| !dedicated) {
            prop_assert!(c.threads <= max, "seed {}: {} threads > max {}", seed, c.threads, max);
        }
    }

    #[test]
    fn cpu_only_items_never_run_faster_than_one_core_each(
        cores in 1u32..8, count in 1u64..60, work in 1u64..50, seed in any::<u64>()
    ) {
        let s = Scenario {
            name: "cpu".into(),
            seed,
            workload_seed: None,
            machine: Machine {
                cores,
                processors: None,
                tick: None,
            },
            pool: PoolSettings { policy: "net-classic".into(), min_threads: None, max_threads: None, gate_phase: None, tiered_compilation: true },
            groups: vec![Group {
                name: "cpu".into(), count, submit: Submit::TaskRun, from: Origin::Main,
                arrival: Arrival::At(SimDuration::ZERO), late: SimDuration::ZERO, body: vec![Step::Cpu(SimDuration::from_ms(work))],
                max_degree: None, throttle: None,
            }],
            probes: vec![],
            until: None,
        };
        let policy = resolve_policy("net-classic").unwrap();
        let result = engine::simulate(&s, &policy, &mut poolsim::trace::NullSink, &SimOptions::default());
        prop_assert!(result.outcome.is_completed());
        // The whole batch cannot beat total work spread over all cores.
        let total = count * work;
        let makespan = poolsim::metrics::summarize(&result.trace).makespan_ms;
        prop_assert!(makespan + 1e-6 >= total as f64 / f64::from(cores), "makespan {} < {}", makespan, total as f64 / f64::from(cores));
        // Core time used equals the work done, up to the rounding of each
        // completion instant up to a whole nanosecond (one per item).
        let busy = result.trace.cpu_busy_ns.unwrap();
        let work_ns = u128::from(total) * 1_000_000;
        prop_assert!(busy >= work_ns && busy <= work_ns + u128::from(count) * u128::from(cores), "busy {} vs work {}", busy, work_ns);
    }
}
