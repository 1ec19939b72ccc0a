//! The runtime's start-up as the program meets it: with tiered
//! compilation on, .NET Core 3.1's gate thread is already ticking at the
//! program's first request on two cores or more, and is started by that
//! request on one processor (`TC_DelaySingleProcMultiplier`); the run's
//! first pool thread starts slower than later ones; and .NET 6+'s
//! cooperative blocking makes the first thread past the no-delay cap wait
//! one delay (`DelayHelper`).

use poolsim::engine::{self, SimOptions};
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::load::parse_scenario;
use poolsim::trace::{NullSink, ThreadReason};

use crate::common::number_after;

/// The first starvation injection's time (ms) of `count` × Sleep(3000) at
/// t = 0 on `cores` under `policy`, seed `seed`.
fn first_injection_ms(policy: &str, cores: u32, tiered: bool, seed: u64) -> f64 {
    let text = format!(
        "seed = {seed}\n[machine]\ncores = {cores}\n[pool]\npolicy = \"{policy}\"\n\
         tiered_compilation = {tiered}\n[[group]]\nname = \"g\"\ncount = 8\n\
         body = [ {{ sleep_ms = 3000 }} ]\n"
    );
    let s = parse_scenario(&text, "t.toml").unwrap();
    let p = resolve_policy(policy).unwrap();
    let r = engine::simulate(&s, &p, &mut NullSink, &SimOptions::default());
    r.trace
        .threads
        .iter()
        .find(|t| t.reason == ThreadReason::Starvation)
        .expect("a starvation injection")
        .created
        .as_ms_f64()
}

#[test]
fn coreclr3s_gate_phase_with_tiered_compilation_is_the_measured_one() {
    for seed in 1..=20 {
        // Two cores: the gate started before the program (782-881 ms).
        let two = first_injection_ms("coreclr3-linux", 2, true, seed);
        assert!((782.0..=881.0).contains(&two), "seed {seed}: {two}");
        // One processor: the program's request starts it (1003.6-1005.4 ms).
        let one = first_injection_ms("coreclr3-linux", 1, true, seed);
        assert!((1003.6..=1005.4).contains(&one), "seed {seed}: {one}");
        // Tiered compilation off: one period for the CPU reading and one more.
        let off = first_injection_ms("coreclr3-linux", 2, false, seed);
        assert!((1000.0..1000.5).contains(&off), "seed {seed}: {off}");
    }
    // The phase varies run to run on two cores, not on one.
    let twos: Vec<f64> = (1..=20)
        .map(|s| first_injection_ms("coreclr3-linux", 2, true, s))
        .collect();
    let spread = twos.iter().cloned().fold(f64::MIN, f64::max)
        - twos.iter().cloned().fold(f64::MAX, f64::min);
    assert!(spread > 20.0, "{twos:?}");
}

#[test]
fn the_pools_first_threads_wait_for_its_start_up_as_measured() {
    let starts = |seed: u64| -> (f64, f64) {
        let text = format!(
            "seed = {seed}\n[machine]\ncores = 2\n[pool]\npolicy = \"coreclr3-linux\"\n\
             [[group]]\nname = \"g\"\ncount = 2\nbody = [ {{ sleep_ms = 100 }} ]\n"
        );
        let s = parse_scenario(&text, "t.toml").unwrap();
        let p = resolve_policy("coreclr3-linux").unwrap();
        let r = engine::simulate(&s, &p, &mut NullSink, &SimOptions::default());
        let i = &r.trace.items;
        (
            i[0].started.as_ms_f64() - i[0].queued.as_ms_f64(),
            i[1].started.as_ms_f64() - i[1].queued.as_ms_f64(),
        )
    };
    let firsts: Vec<f64> = (1..=30).map(|s| starts(s).0).collect();
    // The measured quantiles run from 1.05 to 5.21 ms.
    assert!(
        firsts.iter().all(|&f| (1.05..=5.21).contains(&f)),
        "{firsts:?}"
    );
    assert!(firsts.iter().any(|&f| f < 2.0) && firsts.iter().any(|&f| f > 2.5));
    // The second thread, created at once, is not ready before the first:
    // both items start when the pool's start-up ends.
    for s in 1..=5 {
        let (a, b) = starts(s);
        assert!((a - b).abs() < 1e-6, "{a} {b}");
    }
}

/// The times (ms) at which cooperative blocking created threads.
fn blocking_threads(text: &str) -> Vec<f64> {
    let s = parse_scenario(text, "t.toml").unwrap();
    let p = resolve_policy("net8").unwrap();
    let r = engine::simulate(&s, &p, &mut NullSink, &SimOptions::default());
    r.trace
        .threads
        .iter()
        .filter(|t| t.reason == ThreadReason::CooperativeBlocking)
        .map(|t| t.created.as_ms_f64())
        .collect()
}

#[test]
fn cooperative_blocking_past_the_cap_waits_one_delay_even_after_a_quiet_spell() {
    // .NET 8 on 2 cores: min 2, no-delay cap 4. Two waiters block at t = 0
    // (the goal jumps to 4 at once); 300 ms later, with no delay running,
    // three more arrive: the third blocked one takes the goal past the cap,
    // and PerformBlockingAdjustment(previousDelayElapsed = false) waits one
    // delay step (25 ms) before adding a thread, then 25 ms per step.
    let text = "seed = 1\n[machine]\ncores = 2\n[pool]\npolicy = \"net8\"\n\
                [[group]]\nname = \"a\"\ncount = 2\nbody = [ { wait_ms = 2000 } ]\n\
                [[group]]\nname = \"b\"\ncount = 3\narrival = { at_ms = 300 }\n\
                body = [ { wait_ms = 2000 } ]\n";
    let late: Vec<f64> = blocking_threads(text)
        .into_iter()
        .filter(|&t| t >= 300.0)
        .collect();
    assert_eq!(late.len(), 2, "{late:?}");
    assert!((late[0] - 325.0).abs() < 1.0, "not at once: {late:?}");
    assert!((late[1] - 350.0).abs() < 1.0, "{late:?}");
}

/// 25 × QUWI Sleep(521) every 55 ms with min threads 4 under .NET Core 3.1:
/// the explanation and the run.
fn staggered_sleeps(cores: u32, tiered: bool) -> (poolsim::explain::Explanation, f64, Vec<f64>) {
    let text = format!(
        "seed = 3\n[machine]\ncores = {cores}\n[pool]\npolicy = \"coreclr3-linux\"\n\
         min_threads = 4\ntiered_compilation = {tiered}\n[[group]]\nname = \"g\"\n\
         count = 25\nsubmit = \"queue-user-work-item\"\narrival = {{ every_ms = 55 }}\n\
         body = [ {{ sleep_ms = 521 }} ]\n"
    );
    let s = parse_scenario(&text, "t.toml").unwrap();
    let p = resolve_policy("coreclr3-linux").unwrap();
    let e = poolsim::explain::explain_scenario(&s, &p, None);
    let r = engine::simulate(&s, &p, &mut NullSink, &SimOptions::default());
    let climbs = r
        .trace
        .threads
        .iter()
        .filter(|t| t.reason == ThreadReason::HillClimbing)
        .map(|t| t.created.as_ms_f64())
        .collect();
    (e, poolsim::metrics::summarize(&r.trace).makespan_ms, climbs)
}

/// With tiered compilation on, on two cores, .NET Core 3.1's start-up
/// completes two pool work items before the program's first request
/// (measured: the completed-work-item count is 2 before the first item in
/// 133 of 135 two-core runs, 0 in 70 of 70 one-core ones); the first takes
/// hill climbing's first sample, when the same work started the gate
/// thread, so the workload's completions feed the second sample and hill
/// climbing adds its thread sooner (held-out gen-2-07: the real fifth
/// thread at 2135 ms, the model's at 3153 ms without it).
#[test]
fn coreclr3s_start_up_takes_hill_climbings_first_sample() {
    let (on, on_makespan, on_climbs) = staggered_sleeps(2, true);
    let startup: Vec<_> = on
        .lines
        .iter()
        .filter(|l| l.kind == "StartupSample")
        .collect();
    assert_eq!(startup.len(), 1, "{:?}", on.lines);
    assert_eq!(startup[0].at_ms, 0.0);
    assert!(
        startup[0].text.contains("2 work items"),
        "{}",
        startup[0].text
    );
    // It came when the gate thread started: one period for the CPU reading
    // and one more before the gate's first tick.
    let before = number_after(&startup[0].text, "on the pool ");
    let first_tick = on
        .lines
        .iter()
        .find(|l| l.kind == "GateTick")
        .unwrap()
        .at_ms;
    assert!(
        (before + first_tick - 1000.0).abs() < 0.1,
        "{before} {first_tick}"
    );
    // The next sample spans the head start too.
    let sample = on
        .lines
        .iter()
        .find(|l| l.text.starts_with("hill climbing"))
        .unwrap();
    let span = number_after(&sample.text, " over ");
    assert!(
        (span - (sample.at_ms + before)).abs() < 0.5,
        "{span} {}",
        sample.text
    );

    let (off, off_makespan, off_climbs) = staggered_sleeps(2, false);
    assert!(off.lines.iter().all(|l| l.kind != "StartupSample"));
    assert!(
        on_climbs[0] + 300.0 < off_climbs[0],
        "{on_climbs:?} {off_climbs:?}"
    );
    assert!(on_makespan < off_makespan, "{on_makespan} {off_makespan}");
    // On one processor tiering waits 1000 ms: nothing before the workload.
    let (one, _, _) = staggered_sleeps(1, true);
    assert!(one.lines.iter().all(|l| l.kind != "StartupSample"));
}

/// The staggered arrivals of `scenarios/validation/staggered-arrivals.toml`
/// (30 × Sleep(650), one every 100 ms, 2 cores) on .NET Core 3.1 with
/// tiered compilation on, recorded 6 times with the completed-work-item
/// counts (`tests/fixtures/validation/staggered-arrivals/tiered-on/`):
/// every run ends at 6.51 s, inside the model's outcomes over 200 seeds,
/// and the model's median is 1.5 % off (5 % allowed). The start offsets
/// miss (614-642 ms against 325 ms allowed): the real
/// pool's third thread comes at 1.40 s, at the fourth item's completion,
/// the model's at 2.05 s, at the sixth, because the runtime's own pool
/// work during the run (tiering's, not modelled) brings hill climbing's
/// second sample forward (`docs/research/coreclr3-tiering-mid-run.md`).
/// When that is modelled, this test fails, to say so.
#[test]
fn coreclr3s_tiered_staggered_runs_are_among_the_models_outcomes_but_their_starts_miss() {
    use poolsim::measure::{self, Runtime};
    use poolsim::spread::spread_with_offsets;
    use poolsim::validate::distribution::{DistTolerances, compare_distributions};

    let file = crate::common::repo_path("scenarios/validation/staggered-arrivals.toml");
    let scenario = poolsim::scenario::load::load_scenario(&file).unwrap();
    let dir = crate::common::repo_path("tests/fixtures/validation/staggered-arrivals/tiered-on");
    let runs = measure::read_recorded(&dir, Runtime::Coreclr3, &scenario).unwrap();
    assert_eq!(runs.len(), 6);
    assert!(runs.iter().all(|m| m.tiered_compilation() == Some(true)));
    let scenario = measure::as_recorded(&scenario, &runs);
    let policy = resolve_policy(Runtime::Coreclr3.policy().unwrap()).unwrap();
    let sim = spread_with_offsets(&scenario, &policy, 200, &SimOptions::default());
    let measured: Vec<_> = runs.into_iter().map(|m| m.trace).collect();
    let r = compare_distributions(
        &sim,
        (&scenario.name, &policy.name),
        &measured,
        "coreclr3",
        &DistTolerances::default(),
    );
    let failed: Vec<&str> = r
        .checks
        .iter()
        .filter(|c| !c.pass)
        .map(|c| c.metric)
        .collect();
    assert_eq!(failed, ["start offset quantiles"], "{r:?}");
    assert_eq!(r.covered, 6);
    assert!(r.median_error.abs() < 0.02, "{}", r.median_error);
    // When each run's third thread starts its first item.
    fn third_thread_ms(items: &[poolsim::trace::ItemRecord]) -> f64 {
        let mut items: Vec<_> = items.iter().collect();
        items.sort_by_key(|i| i.started);
        let mut seen = Vec::new();
        for i in items {
            if !seen.contains(&i.thread) {
                seen.push(i.thread);
                if seen.len() == 3 {
                    return i.started.as_ms_f64();
                }
            }
        }
        f64::INFINITY
    }
    for m in &measured {
        let t = third_thread_ms(&m.items);
        assert!((1395.0..1410.0).contains(&t), "real third thread at {t} ms");
    }
    // The model never adds it at the fourth completion: at most seeds hill
    // climbing adds it at the sixth (2.05 s), at a few the gate's
    // starvation rule sooner (1.30 s).
    for seed in 5..45 {
        let mut s = scenario.clone();
        s.seed = seed;
        let run = engine::simulate(&s, &policy, &mut NullSink, &SimOptions::default());
        let t = third_thread_ms(&run.trace.items);
        assert!(
            !(1380.0..1420.0).contains(&t),
            "seed {seed}: the model's third thread at {t} ms, as the real one's"
        );
    }
}
