//! The .NET 2.0 SP1 pool (`net20-sp1`) on the seed-004 tests: items queued
//! in a tight loop start in batches of 3, 3 and 4 although `SetMinThreads`
//! asked for more (the SP1 start-delay bug), and what changes the batches.

use poolsim::engine::{self, RunResult, SimOptions};
use poolsim::policy::config::{FirstTick, PolicyConfig};
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::{Arrival, Scenario, Step};
use poolsim::time::SimDuration;
use poolsim::trace::{NullSink, ThreadReason};

use crate::common::scenario;

/// The built-in `net20-sp1` policy.
fn net20_sp1() -> PolicyConfig {
    resolve_policy("net20-sp1").unwrap_or_else(|e| panic!("{e}"))
}

fn run(s: &Scenario, p: &PolicyConfig) -> RunResult {
    let r = engine::simulate(s, p, &mut NullSink, &SimOptions::default());
    assert!(r.outcome.is_completed(), "{:?}", r.outcome);
    r
}

/// Start delay (start − submission) of each item, ms, in queue order.
fn delays_ms(r: &RunResult) -> Vec<f64> {
    r.trace
        .items
        .iter()
        .map(|i| i.started.since(i.queued).as_ms_f64())
        .collect()
}

const TEST1_PUBLISHED: [f64; 10] = [
    6.0, 5.0, 9.0, 508.0, 508.0, 509.0, 1005.0, 1008.0, 1008.0, 1009.0,
];

fn assert_batches(delays: &[f64], context: &str) {
    // 3 near 0, 3 near 500, 4 near 1000, each within ±60 ms of the
    // published start.
    for (d, p) in delays.iter().zip(TEST1_PUBLISHED) {
        assert!((d - p).abs() <= 60.0, "{context}: delays {delays:?}");
    }
}

#[test]
fn test1_tight_loop_starts_in_batches_of_3_3_4() {
    let s0 = scenario("seed-004-test1-tight-loop.toml");
    let p = net20_sp1();
    for seed in 1..=20 {
        let mut s = s0.clone();
        s.seed = seed;
        let r = run(&s, &p);
        let delays = delays_ms(&r);
        assert_batches(&delays, &format!("seed {seed}"));
        // Three immediate threads, one from the gate thread.
        assert_eq!(r.trace.threads.len(), 4, "seed {seed}");
        let reasons: Vec<_> = r.trace.threads.iter().map(|t| t.reason).collect();
        assert_eq!(
            reasons,
            [
                ThreadReason::Demand,
                ThreadReason::Demand,
                ThreadReason::Demand,
                ThreadReason::Starvation
            ]
        );
    }
}

#[test]
fn test1_structure_needs_the_first_gate_check_near_1000_ms() {
    let s0 = scenario("seed-004-test1-tight-loop.toml");
    let p = net20_sp1();
    for phase in (940..=1060).step_by(20) {
        let mut s = s0.clone();
        s.pool.gate_phase = Some(SimDuration::from_ms(phase));
        assert_batches(&delays_ms(&run(&s, &p)), &format!("phase {phase}"));
    }
    // A gate check before the first batch wakes (here 300 ms) adds the
    // fourth thread early: batches 3 / 4 / 3.
    let mut s = s0.clone();
    s.pool.gate_phase = Some(SimDuration::from_ms(300));
    let delays = delays_ms(&run(&s, &p));
    assert!(delays[3] < 400.0 && delays[6] < 600.0, "{delays:?}");
}

#[test]
fn test1_a_policy_first_tick_sets_the_first_check() {
    let s = scenario("seed-004-test1-tight-loop.toml");
    let mut p = net20_sp1();
    p.gate.first_tick = FirstTick::After(SimDuration::from_ms(1000));
    assert_batches(&delays_ms(&run(&s, &p)), "first tick 1000");
}

#[test]
fn test1_without_the_bug_starts_everything_at_once() {
    let s = scenario("seed-004-test1-tight-loop.toml");
    let mut p = net20_sp1();
    if let Some(n) = p.net20.as_mut() {
        n.sp1_start_delay_bug = false;
    }
    let delays = delays_ms(&run(&s, &p));
    assert!(delays.iter().all(|&d| d <= 10.0), "{delays:?}");
    // No [net20] table: 2.0 without the bug.
    p.net20 = None;
    let delays = delays_ms(&run(&s, &p));
    assert!(delays.iter().all(|&d| d <= 10.0), "{delays:?}");
}

#[test]
fn test1_without_set_min_threads_the_gate_adds_one_thread_per_tick() {
    // Default min = cores = 2: two immediate threads (workers < min), then
    // the gate thread's rule, one thread per check while none is idle.
    let mut s = scenario("seed-004-test1-tight-loop.toml");
    s.pool.min_threads = None;
    let r = run(&s, &net20_sp1());
    let created: Vec<f64> = r
        .trace
        .threads
        .iter()
        .map(|t| t.created.as_ms_f64())
        .collect();
    assert_eq!(created[..2], [0.0, 0.0], "{created:?}");
    for (k, c) in created[2..].iter().enumerate() {
        assert!((c - (1000.0 + 500.0 * k as f64)).abs() < 1.0, "{created:?}");
    }
}

#[test]
fn test2_short_sleeps_wait_briefly_on_reused_threads() {
    let s0 = scenario("seed-004-test2-short-sleeps.toml");
    let p = net20_sp1();
    for seed in 1..=20 {
        let mut s = s0.clone();
        s.seed = seed;
        let r = run(&s, &p);
        let delays = delays_ms(&r);
        // Published 1 ... 49 ms: every item within tens of ms, non-decreasing
        // in batches, on the three immediate threads.
        assert!(delays.iter().all(|&d| d < 60.0), "seed {seed}: {delays:?}");
        assert!(
            delays.windows(2).all(|w| w[1] >= w[0] - 1e-6),
            "seed {seed}: {delays:?}"
        );
        assert_eq!(r.trace.threads.len(), 3, "seed {seed}");
    }
}

#[test]
fn test3_spaced_items_start_within_20_ms() {
    let s0 = scenario("seed-004-test3-spaced.toml");
    let p = net20_sp1();
    for seed in 1..=20 {
        let mut s = s0.clone();
        s.seed = seed;
        let r = run(&s, &p);
        let delays = delays_ms(&r);
        assert!(delays.iter().all(|&d| d <= 20.0), "seed {seed}: {delays:?}");
        // Two new threads, then idle ones reused.
        assert_eq!(r.trace.threads.len(), 2, "seed {seed}");
    }
}

#[test]
fn workaround_paced_items_start_within_20_ms() {
    let s0 = scenario("seed-004-workaround-sleep1.toml");
    let p = net20_sp1();
    for seed in 1..=20 {
        let mut s = s0.clone();
        s.seed = seed;
        let r = run(&s, &p);
        let delays = delays_ms(&r);
        assert!(delays.iter().all(|&d| d <= 20.0), "seed {seed}: {delays:?}");
        assert_eq!(r.trace.threads.len(), 10, "seed {seed}");
    }
}

#[test]
fn workaround_holds_for_default_timer_resolution_sleeps() {
    // Thread.Sleep(1) with Windows' default 15.625 ms timer.
    let mut s = scenario("seed-004-workaround-sleep1.toml");
    if let Arrival::Every { every, .. } = &mut s.groups[0].arrival {
        *every = SimDuration::from_nanos(15_625_000);
    }
    let delays = delays_ms(&run(&s, &net20_sp1()));
    assert!(delays.iter().all(|&d| d <= 20.0), "{delays:?}");
}

#[test]
fn busy_cpu_rule_throttles_creation() {
    // Twelve CPU-bound items on 2 cores with the default min (2): the CPU
    // is busy, so the gate thread also needs the last dequeue older than
    // workers × 1000 ms. The two running items take 3 s each, so the first
    // dequeue gap of 3 s exceeds 2 × 1000 ms and a third thread arrives
    // only then, never on the first check at 1000 ms.
    let mut s = scenario("seed-004-test1-tight-loop.toml");
    s.pool.min_threads = None;
    s.groups[0].count = 12;
    s.groups[0].body = vec![Step::Cpu(SimDuration::from_ms(3000))];
    let r = run(&s, &net20_sp1());
    let third = r.trace.threads.get(2).map(|t| t.created.as_ms_f64());
    assert!(third.is_some_and(|t| t > 2000.0), "{third:?}");
}
