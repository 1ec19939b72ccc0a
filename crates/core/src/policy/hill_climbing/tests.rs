//! The controller's unit tests: closed loops through [`HillClimbing::update`]
//! and [`HillClimbing::force_change`], and the wave filter on a known signal.

use super::update::ACCUMULATING_SAMPLE_INTERVAL_MS;
use super::*;

fn default_config() -> HillClimbingConfig {
    coreclr_constants()
}

/// A closed loop: the goal returned is the thread count of the next
/// sample, which lasts the interval returned; `rate(threads)` gives
/// completions per second. Returns the (goal, interval) of every call.
fn run(
    hc: &mut HillClimbing,
    start: u32,
    steps: usize,
    cpu: u32,
    min: u32,
    max: u32,
    rate: impl Fn(u32) -> f64,
) -> Vec<(u32, u32)> {
    let mut goal = start;
    let mut interval = 100;
    let mut out = Vec::with_capacity(steps);
    for _ in 0..steps {
        let secs = f64::from(interval.max(1)) / 1000.0;
        let completions = (rate(goal) * secs).round() as u32;
        let (g, i) = hc.update(goal, secs, completions, cpu, min, max);
        out.push((g, i));
        goal = g;
        interval = i;
    }
    out
}

#[test]
fn same_seed_same_outputs_and_seed_matters() {
    let rate = |t: u32| 50.0 * f64::from(t.min(12)) + 7.0 * f64::from(t % 3);
    let mut a = HillClimbing::new(&default_config(), 42);
    let mut b = HillClimbing::new(&default_config(), 42);
    let ra = run(&mut a, 2, 500, 50, 2, 1000, rate);
    let rb = run(&mut b, 2, 500, 50, 2, 1000, rate);
    assert_eq!(ra, rb);
    assert_eq!(a.current_control_setting(), b.current_control_setting());
    let mut c = HillClimbing::new(&default_config(), 43);
    let rc = run(&mut c, 2, 500, 50, 2, 1000, rate);
    assert_ne!(ra, rc, "the seed drives the sample intervals");
}

#[test]
fn constant_throughput_does_not_run_away() {
    let mut hc = HillClimbing::new(&default_config(), 7);
    let out = run(&mut hc, 2, 3000, 50, 2, 32767, |_| 1000.0);
    let highest = out.iter().map(|&(g, _)| g).max().unwrap();
    assert!(highest <= 2 + 20, "goal ran away to {highest}");
    // It settles at the minimum, where only the wave lifts it.
    let (last_goal, _) = *out.last().unwrap();
    assert!(last_goal <= 3, "final goal {last_goal}");
    assert!(hc.current_control_setting() < 3.0);
}

#[test]
fn throughput_rising_with_threads_makes_it_climb() {
    let mut hc = HillClimbing::new(&default_config(), 11);
    // Each thread adds 100 items/s up to 40 threads.
    let out = run(&mut hc, 2, 1500, 50, 2, 32767, |t| {
        100.0 * f64::from(t.min(40))
    });
    let late: Vec<u32> = out[1000..].iter().map(|&(g, _)| g).collect();
    let avg = late.iter().map(|&g| f64::from(g)).sum::<f64>() / late.len() as f64;
    assert!(avg > 15.0, "average late goal {avg}");
    assert!(hc.current_control_setting() > 10.0);
    // It stops near the knee (40) instead of running on.
    assert!(late.iter().all(|&g| g <= 40 + 20), "overshoot: {late:?}");
    assert!(hc.last_stats().unwrap().confidence > 0.0);
}

#[test]
fn monos_port_lets_the_noise_average_grow() {
    // The same noisy, flat workload through both ports: CoreCLR's
    // average settles near the noise; Mono's (1 + f) keeps growing.
    let rate = |t: u32| 1000.0 + 300.0 * f64::from((t * 7919) % 5);
    let mut coreclr = HillClimbing::new(&default_config(), 3);
    let mut mono = HillClimbing::new(&default_config(), 3).mono_port();
    run(&mut coreclr, 4, 600, 50, 4, 200, rate);
    run(&mut mono, 4, 600, 50, 4, 200, rate);
    let c = coreclr.last_stats().unwrap().average_throughput_noise;
    let m = mono.last_stats().unwrap().average_throughput_noise;
    assert!(c > 0.0 && c < 1.0, "coreclr noise average {c}");
    // 1.01^590 is about 350: the average has run away.
    assert!(m > 100.0 * c, "mono {m} vs coreclr {c}");
}

#[test]
fn at_the_minimum_monos_port_stretches_at_least_tenfold_and_coreclrs_at_most() {
    // Flat throughput: at the minimum the ratio is about -bias (-0.15),
    // so CoreCLR stretches the interval by 10 x min(-ratio, 1), about
    // 1.5x, and Mono by 10 x max(-ratio, 1) = 10x.
    for mono in [false, true] {
        let mut stretched = 0;
        for seed in 0..4 {
            let mut hc = HillClimbing::new(&default_config(), seed);
            if mono {
                hc = hc.mono_port();
            }
            let mut goal = 2;
            for _ in 0..800 {
                let secs = 0.05;
                let completions = (2000.0 * secs) as u32;
                let before = hc.total_samples();
                let (g, interval) = hc.update(goal, secs, completions, 50, 2, 500);
                let stats = hc.last_stats().unwrap();
                if hc.total_samples() > before && g == 2 && stats.ratio < 0.0 {
                    let tenfold = 10 * hc.current_sample_interval;
                    if mono {
                        assert!(interval >= tenfold, "{interval} < {tenfold}");
                    } else {
                        assert!(interval <= tenfold + 1, "{interval} > {tenfold}");
                    }
                    stretched += 1;
                }
                goal = g;
            }
        }
        assert!(
            stretched > 0,
            "mono {mono}: never at the minimum with a falling ratio"
        );
    }
}

#[test]
fn busy_cpu_refuses_upward_moves() {
    let mut hc = HillClimbing::new(&default_config(), 11);
    run(&mut hc, 2, 1500, 96, 2, 32767, |t| {
        100.0 * f64::from(t.min(40))
    });
    assert!(hc.current_control_setting() <= 2.0);
}

#[test]
fn sample_interval_stays_in_range_or_stretched_range() {
    let mut config = default_config();
    config.sample_interval_low_ms = 50;
    config.sample_interval_high_ms = 80;
    for seed in 0..4 {
        let mut hc = HillClimbing::new(&config, seed);
        let mut goal = 2;
        let mut in_range = 0;
        let mut stretched = 0;
        for step in 0..2000 {
            // Alternate a flat and a rising workload, with some short samples.
            let rate = if (step / 500) % 2 == 0 {
                800.0
            } else {
                60.0 * f64::from(goal.min(30))
            };
            let secs = if step % 7 == 0 { 0.002 } else { 0.065 };
            let completions = (rate * secs) as u32;
            let before = hc.total_samples();
            let (g, interval) = hc.update(goal, secs, completions, 50, 2, 500);
            if hc.total_samples() == before {
                assert_eq!(interval, ACCUMULATING_SAMPLE_INTERVAL_MS);
                assert_eq!(g, goal, "an accumulated sample does not move the goal");
            } else if (50..=80).contains(&interval) {
                in_range += 1;
            } else {
                assert_eq!(g, 2, "out of [low, high] only at the minimum");
                assert!(hc.last_stats().unwrap().ratio < 0.0);
                assert!(interval <= 800, "stretch is at most 10x: {interval}");
                stretched += 1;
            }
            goal = g;
        }
        assert!(in_range > 100);
        assert!(stretched > 0, "seed {seed}: the stretch never happened");
    }
}

#[test]
fn force_change_sets_goal_and_transition() {
    let mut hc = HillClimbing::new(&default_config(), 3);
    let out = run(&mut hc, 4, 50, 50, 4, 100, |_| 500.0);
    let (goal, _) = *out.last().unwrap();
    let control = hc.current_control_setting();

    hc.force_change(goal + 3, Transition::Starvation);
    assert_eq!(hc.last_transition(), Transition::Starvation);
    assert_eq!(hc.current_control_setting(), control + 3.0);

    // Forcing the same count again is a no-op.
    hc.force_change(goal + 3, Transition::ThreadTimedOut);
    assert_eq!(hc.last_transition(), Transition::Starvation);

    // The next update with the forced count is not an "Initializing" change.
    let control = hc.current_control_setting();
    hc.update(goal + 3, 0.001, 0, 50, 4, 100); // accumulated: too few completions
    assert_eq!(hc.last_transition(), Transition::Starvation);
    assert_eq!(hc.current_control_setting(), control);

    hc.force_change(4, Transition::ThreadTimedOut);
    assert_eq!(hc.last_transition(), Transition::ThreadTimedOut);
    assert_eq!(
        hc.current_control_setting(),
        control - f64::from(goal + 3 - 4)
    );
}

#[test]
fn unannounced_goal_change_is_initializing() {
    let mut hc = HillClimbing::new(&default_config(), 5);
    // First call: the record says 0 threads, so the count is adopted.
    let (g, _) = hc.update(4, 0.1, 100, 50, 4, 100);
    assert_eq!(g, 4);
    assert_eq!(hc.last_transition(), Transition::Initializing);
    assert_eq!(hc.current_control_setting(), 4.0);
    // The pool moved to 9 on its own: control shifts by 5, still warming
    // up (no move); the second sample is in the wave's high half, so the
    // goal becomes 9 + 1, logged as a Warmup change.
    let (g, _) = hc.update(9, 0.1, 1000, 50, 4, 100);
    assert_eq!(hc.current_control_setting(), 9.0);
    assert_eq!(g, 10);
    assert_eq!(hc.last_transition(), Transition::Warmup);
}

#[test]
fn short_samples_accumulate_with_the_exact_rule() {
    // min = max = 4 pins the goal so every call sees 4 threads.
    let mut hc = HillClimbing::new(&default_config(), 9);
    // The first sample is never accumulated, even with no completions.
    assert_eq!(
        hc.update(4, 0.010, 0, 50, 4, 4),
        (4, hc.current_sample_interval)
    );
    assert_eq!(hc.total_samples(), 1);

    // (4 - 1) / 20 = 0.15 >= 0.15: put aside, come back in 10 ms.
    assert_eq!(hc.update(4, 0.010, 20, 50, 4, 4), (4, 10));
    assert_eq!(hc.total_samples(), 1);
    assert_eq!(hc.accumulated_completion_count, 20);
    assert!((hc.accumulated_sample_duration - 0.010).abs() < 1e-12);

    // 20 + 1 = 21 completions, 3/21 < 0.15: accepted, spanning both.
    hc.update(4, 0.030, 1, 50, 4, 4);
    assert_eq!(hc.total_samples(), 2);
    assert_eq!(hc.accumulated_completion_count, 0);
    let stats = hc.last_stats().unwrap();
    assert!((stats.sample_duration_secs - 0.040).abs() < 1e-12);
    assert!((stats.throughput - 21.0 / 0.040).abs() < 1e-9);
}

#[test]
fn accumulation_boundary_and_single_thread_nan() {
    let fresh = || {
        let mut hc = HillClimbing::new(&default_config(), 1);
        // min = max pins the goal at 4.
        hc.update(4, 0.1, 100, 50, 4, 4);
        hc
    };
    let mut hc = fresh();
    hc.update(4, 0.01, 20, 50, 4, 4);
    assert_eq!(hc.total_samples(), 1, "3/20 = 0.15 accumulates");
    let mut hc = fresh();
    hc.update(4, 0.01, 21, 50, 4, 4);
    assert_eq!(hc.total_samples(), 2, "3/21 < 0.15 is accepted");
    let mut hc = fresh();
    hc.update(4, 0.01, 0, 50, 4, 4);
    assert_eq!(hc.total_samples(), 1, "3/0 = inf accumulates");

    // One thread, no completions: 0/0 is NaN, the test is false, accepted.
    let mut hc = HillClimbing::new(&default_config(), 1);
    hc.update(1, 0.1, 10, 50, 1, 1);
    hc.update(1, 0.1, 0, 50, 1, 1);
    assert_eq!(hc.total_samples(), 2);
    assert_eq!(hc.last_stats().unwrap().throughput, 0.0);
}

#[test]
fn goertzel_finds_the_wave() {
    let mut hc = HillClimbing::new(&default_config(), 0);
    // Fill the history with 1 + 0.5*cos(2*pi*k/4) directly.
    for k in 0..32u64 {
        let slot = (k % 32) as usize;
        hc.samples[slot] = 1.0 + 0.5 * (2.0 * std::f64::consts::PI * k as f64 / 4.0).cos();
    }
    hc.total_samples = 32;
    let at_wave = hc.wave_component(&hc.samples, 32, 4.0).abs();
    let beside = hc.wave_component(&hc.samples, 32, 32.0 / 9.0).abs();
    assert!((at_wave - 0.25).abs() < 1e-9, "magnitude {at_wave}");
    assert!(beside < 1e-9, "leak {beside}");
}

#[test]
fn goal_respects_limits() {
    let mut hc = HillClimbing::new(&default_config(), 21);
    let out = run(&mut hc, 3, 800, 50, 3, 12, |t| 100.0 * f64::from(t));
    assert!(out.iter().all(|&(g, _)| (3..=12).contains(&g)));
    assert!(hc.current_control_setting() <= 12.0);
    assert!(out.iter().any(|&(g, _)| g >= 10), "should reach the top");
}

#[test]
fn transition_names() {
    assert_eq!(Transition::Starvation.name(), "Starvation");
    assert_eq!(
        Transition::CooperativeBlocking.name(),
        "CooperativeBlocking"
    );
}
