//! Linux's wake-up preemption: a pool thread that runs a timer's
//! callback releasing a thread blocked in `Task.Delay().Wait()`, whose next
//! step is CPU work, goes on only after the scheduler gives it its core back
//! when the released thread leaves none free (`threads.wake_preempt_us`,
//! measured on `scenarios/calibration/wake-preempt*.toml`).
//! Watched on that calibration workload: the thread working through the
//! sleeps starts its next sleep late right after a release.

use poolsim::engine::{self, SimOptions};
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::load::parse_scenario;
use poolsim::trace::NullSink;

use crate::common::{number_after, repo_path};

/// The largest gap (ms) on the sleeps' threads between an item's end and
/// the thread's next item (queued before that end), over the run of the
/// calibration workload on `cores` under `policy`, seed `seed`.
fn largest_sleeper_gap_ms(policy: &str, cores: u32, wakee_cpu: bool, seed: u64) -> f64 {
    let path = repo_path("scenarios/calibration/wake-preempt.toml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text = text
        .replace("cores = 1", &format!("cores = {cores}"))
        .replace("seed = 1", &format!("seed = {seed}"));
    if !wakee_cpu {
        text = text.replace("{ cpu_ms = 30 }", "{ sleep_ms = 30 }");
    }
    let s = parse_scenario(&text, "wake-preempt.toml").unwrap();
    let p = resolve_policy(policy).unwrap();
    let r = engine::simulate(&s, &p, &mut NullSink, &SimOptions::default());
    let sleeps = s.groups.iter().position(|g| g.name == "sleeps").unwrap() as u32;
    let mut items: Vec<_> = r.trace.items.iter().filter(|i| i.group == sleeps).collect();
    items.sort_by_key(|i| (i.thread, i.started));
    items
        .windows(2)
        .filter(|w| w[0].thread == w[1].thread && w[1].queued < w[0].finished)
        .map(|w| w[1].started.as_ms_f64() - w[0].finished.as_ms_f64())
        .fold(0.0, f64::max)
}

#[test]
fn a_thread_that_releases_a_cpu_bound_waiter_on_one_core_waits_for_its_core() {
    let gaps: Vec<f64> = (1..=20)
        .map(|seed| largest_sleeper_gap_ms("coreclr3-linux", 1, true, seed))
        .collect();
    // The measured waits run up to 5.671 ms; nearly half of them are ~0.
    assert!(gaps.iter().all(|&g| g <= 5.671 + 1e-6), "{gaps:?}");
    assert!(gaps.iter().any(|&g| g > 1.8), "{gaps:?}");
    // Seeds vary it.
    let lo = gaps.iter().cloned().fold(f64::MAX, f64::min);
    let hi = gaps.iter().cloned().fold(f64::MIN, f64::max);
    assert!(hi - lo > 1.0, "{gaps:?}");
}

#[test]
fn no_wait_with_a_free_core_a_waiter_that_does_not_compute_or_no_measured_preemption() {
    for seed in 1..=10 {
        // Two cores: the released thread takes the free one.
        let two = largest_sleeper_gap_ms("coreclr3-linux", 2, true, seed);
        // The released thread goes on sleeping: it needs no core.
        let no_cpu = largest_sleeper_gap_ms("coreclr3-linux", 1, false, seed);
        // net-classic (Windows-derived) has no measured wait.
        let classic = largest_sleeper_gap_ms("net-classic", 1, true, seed);
        for (what, g) in [
            ("2 cores", two),
            ("no cpu", no_cpu),
            ("net-classic", classic),
        ] {
            assert!(g < 0.5, "seed {seed}, {what}: {g} ms");
        }
    }
}

#[test]
fn explain_names_each_wait_for_the_core_and_the_trace_shows_it() {
    let path = repo_path("scenarios/calibration/wake-preempt.toml");
    let s = poolsim::scenario::load::load_scenario(&path).unwrap();
    let p = resolve_policy("coreclr3-linux").unwrap();
    let e = poolsim::explain::explain_scenario(&s, &p, None);
    let lines: Vec<_> = e
        .lines
        .iter()
        .filter(|l| l.kind == "WakePreempted")
        .collect();
    // Three waiters, three releases on the only core.
    assert_eq!(lines.len(), 3, "{:?}", e.lines);
    let r = engine::simulate(&s, &p, &mut NullSink, &SimOptions::default());
    let sleeps = s.groups.iter().position(|g| g.name == "sleeps").unwrap() as u32;
    for line in lines {
        // "thread 3 waits 3.682 ms for its core": the sleeper's next item
        // starts that long after the release.
        let waits = number_after(&line.text, " waits ");
        let at = line.at_ms;
        let next = r
            .trace
            .items
            .iter()
            .filter(|i| i.group == sleeps && i.started.as_ms_f64() >= at)
            .map(|i| i.started.as_ms_f64())
            .fold(f64::MAX, f64::min);
        assert!(
            (next - at - waits).abs() < 1e-3,
            "{}: next start {next}",
            line.text
        );
    }
}
