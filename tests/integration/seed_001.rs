//! Seed 001 (docs/reference.md#seed-001): 10 × Thread.Sleep(4000) on 4 cores under the
//! classic pool, default min threads and SetMinThreads(20).
//!
//! Tolerance from docs/reference.md: each start within ±150 ms after one constant
//! startup offset (the published run's ~30 ms before the first item ran);
//! makespan within ±5 %.

use crate::common::{run, scenario, starts_ms};

const PUBLISHED_BURST: [f64; 10] = [
    32.0, 32.0, 33.0, 32.0, 661.0, 1661.0, 2660.0, 3661.0, 4035.0, 4035.0,
];
const PUBLISHED_MIN20: [f64; 10] = [27.0, 30.0, 30.0, 30.0, 27.0, 33.0, 32.0, 39.0, 27.0, 41.0];

/// Compares starts after removing the constant offset between the first
/// published and the first simulated start; returns the worst difference.
fn worst_start_error(simulated: &[f64], published: &[f64]) -> f64 {
    assert_eq!(simulated.len(), published.len());
    let offset = published[0] - simulated[0];
    simulated
        .iter()
        .zip(published)
        .map(|(s, p)| (s + offset - p).abs())
        .fold(0.0, f64::max)
}

#[test]
fn burst_starts_match_the_published_run() {
    let result = run(&scenario("seed-001-burst.toml"));
    assert!(result.outcome.is_completed());
    let starts = starts_ms(&result);
    let worst = worst_start_error(&starts, &PUBLISHED_BURST);
    assert!(
        worst <= 150.0,
        "starts {starts:?}: worst error {worst:.1} ms"
    );
    // Makespan: published last start 4035 + 4000 ms of sleep, less the offset.
    let offset = PUBLISHED_BURST[0] - starts[0];
    let published_makespan = 4035.0 + 4000.0 - offset;
    let makespan = poolsim::metrics::summarize(&result.trace).makespan_ms;
    assert!(
        (makespan - published_makespan).abs() <= 0.05 * published_makespan,
        "makespan {makespan:.1} vs {published_makespan:.1}"
    );
    // Four threads at once, then one per gate injection: 4 + 4.
    assert_eq!(result.trace.threads.len(), 8);
}

#[test]
fn burst_without_the_fixed_phase_still_injects_about_once_a_second() {
    let mut s = scenario("seed-001-burst.toml");
    for seed in 1..=20 {
        s.pool.gate_phase = None;
        s.seed = seed;
        let starts = starts_ms(&run(&s));
        // Items 5..8 are the gate thread's: one tick in two, 1000 ms apart.
        for w in starts[4..8].windows(2) {
            let gap = w[1] - w[0];
            assert!((gap - 1000.0).abs() < 5.0, "seed {seed}: starts {starts:?}");
        }
        assert!(
            starts[4] > 500.0 && starts[4] <= 1000.5,
            "seed {seed}: {starts:?}"
        );
    }
}

#[test]
fn set_min_threads_20_starts_every_item_at_once() {
    let result = run(&scenario("seed-001-min20.toml"));
    let starts = starts_ms(&result);
    let worst = worst_start_error(&starts, &PUBLISHED_MIN20);
    assert!(
        worst <= 150.0,
        "starts {starts:?}: worst error {worst:.1} ms"
    );
    let makespan = poolsim::metrics::summarize(&result.trace).makespan_ms;
    assert!(
        (makespan - 4000.0).abs() < 0.05 * 4041.0,
        "makespan {makespan}"
    );
}
