//! Mono 6.8's pool as a fresh process meets it: its hill
//! climbing's clock counts from boot, so the process's first completion
//! takes the first sample, and until then the monitor's last dequeue is at
//! boot, so every round injects; its first worker starts as slowly as
//! measured; and a worker that creates a thread waits for it to start
//! (`mono/metadata/threadpool-worker-default.c`, `threads.c`).

use poolsim::engine::{self, RunResult, SimOptions};
use poolsim::explain::Explanation;
use poolsim::policy::PolicyConfig;
use poolsim::policy::config::HeuristicStart;
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::Scenario;
use poolsim::scenario::load::parse_scenario;
use poolsim::time::SimDuration;
use poolsim::trace::NullSink;

/// On one core: 10 × `await Task.Yield()` at t = 0, then, 600 ms after they
/// end, 8 × Sleep(400) queued at once.
fn yields_then_sleepers(seed: u64) -> Scenario {
    let text = format!(
        "seed = {seed}\n[machine]\ncores = 1\n[pool]\npolicy = \"mono\"\n\
         [[group]]\nname = \"yields\"\ncount = 10\nsubmit = \"task-run\"\nbody = [ \"yield\" ]\n\
         [[group]]\nname = \"sleepers\"\ncount = 8\nsubmit = \"queue-user-work-item\"\n\
         arrival = {{ after = \"yields\", delay_ms = 600 }}\nbody = [ {{ sleep_ms = 400 }} ]\n"
    );
    parse_scenario(&text, "t.toml").unwrap()
}

fn mono(start: HeuristicStart, creation_wait_ms: u64) -> PolicyConfig {
    let mut p = resolve_policy("mono").unwrap();
    let m = p.mono.as_mut().unwrap();
    m.heuristic_start = start;
    m.creation_wait = SimDuration::from_ms(creation_wait_ms);
    p
}

fn run(s: &Scenario, p: &PolicyConfig) -> (Explanation, RunResult) {
    let e = poolsim::explain::explain_scenario(s, p, None);
    let r = engine::simulate(s, p, &mut NullSink, &SimOptions::default());
    (e, r)
}

fn hill_climbing_lines(e: &Explanation) -> Vec<(f64, String)> {
    e.lines
        .iter()
        .filter(|l| l.text.starts_with("hill climbing"))
        .map(|l| (l.at_ms, l.text.clone()))
        .collect()
}

/// The policy as shipped says the clock counts from boot.
#[test]
fn monos_policy_has_the_heuristic_count_from_boot_and_creators_wait() {
    let p = resolve_policy("mono").unwrap();
    let m = p.mono.unwrap();
    assert_eq!(m.heuristic_start, HeuristicStart::SinceBoot);
    assert_eq!(m.creation_wait, SimDuration::from_ms(1));
}

/// `heuristic_last_adjustment` starts at 0 on a clock since boot: the first
/// completion samples (Warmup, goal kept, a throughput of ~0 over the
/// uptime); the sleepers' first completion takes the second sample, whose
/// square wave is high, and hill climbing adds a third thread there. With
/// the clock from the pool's start the same completion takes the first
/// sample (wave low) and the third thread waits for the next one.
#[test]
fn monos_first_completion_takes_hill_climbings_first_sample() {
    let s = yields_then_sleepers(1);
    let (boot, boot_run) = run(&s, &mono(HeuristicStart::SinceBoot, 1));
    let samples = hill_climbing_lines(&boot);
    assert!(samples.len() >= 2, "{samples:?}");
    let (at, first) = &samples[0];
    assert!(*at < 10.0, "{samples:?}");
    assert!(first.contains("uptime"), "{first}");
    assert!(first.contains("goal stays 1"), "{first}");
    // The second sample: the first sleeper's completion, 400 ms after the
    // sleepers began, raises the goal past the starvation thread's.
    let (at2, second) = &samples[1];
    assert!((1000.0..1020.0).contains(at2), "{samples:?}");
    assert!(second.contains("goal 2 -> 3"), "{second}");
    let third = boot_run.trace.threads[2].created.as_ms_f64();
    assert!((1000.0..1020.0).contains(&third), "{third}");

    let (start, start_run) = run(&s, &mono(HeuristicStart::SincePoolStart, 1));
    let samples = hill_climbing_lines(&start);
    assert!(samples[0].0 > 900.0, "{samples:?}");
    assert!(!samples[0].1.contains("uptime"), "{}", samples[0].1);
    let third = start_run
        .trace
        .threads
        .get(2)
        .map(|t| t.created.as_ms_f64());
    assert!(third.is_none_or(|t| t > 1400.0), "{third:?}");
    let makespan = |r: &RunResult| poolsim::metrics::summarize(&r.trace).makespan_ms;
    assert!(
        makespan(&boot_run) + 300.0 < makespan(&start_run),
        "{} {}",
        makespan(&boot_run),
        makespan(&start_run)
    );
}

/// The worker whose completion made hill climbing create a thread goes on
/// `creation_wait_ms` later: its next item starts then, not at once.
#[test]
fn a_mono_worker_that_creates_a_thread_waits_for_it() {
    let s = yields_then_sleepers(1);
    let next_start_after_first_sleeper = |wait_ms: u64| -> f64 {
        let (_, r) = run(&s, &mono(HeuristicStart::SinceBoot, wait_ms));
        let sleepers: Vec<_> = r.trace.items.iter().filter(|i| i.group == 1).collect();
        let first_end = sleepers.iter().map(|i| i.finished).min().unwrap();
        // The items that started when the first sleeper ended or after, on
        // the thread that ran it, the earliest of them.
        let ran_first = sleepers.iter().find(|i| i.finished == first_end).unwrap();
        let next = sleepers
            .iter()
            .filter(|i| i.thread == ran_first.thread && i.started >= first_end)
            .map(|i| i.started)
            .min()
            .unwrap();
        next.as_ms_f64() - first_end.as_ms_f64()
    };
    let waited = next_start_after_first_sleeper(1);
    let at_once = next_start_after_first_sleeper(0);
    assert!(at_once < 0.01, "{at_once}");
    assert!((waited - 1.0).abs() < 0.01, "{waited}");
}

/// The first worker's start-up is drawn from the round suite's measured
/// quantiles (1.0-4.52 ms, median 2.12), once a run.
#[test]
fn monos_first_worker_starts_as_slowly_as_measured() {
    let firsts: Vec<f64> = (1..=40)
        .map(|seed| {
            let s = yields_then_sleepers(seed);
            let (_, r) = run(&s, &resolve_policy("mono").unwrap());
            let i = &r.trace.items[0];
            i.started.as_ms_f64() - i.queued.as_ms_f64()
        })
        .collect();
    assert!(
        firsts.iter().all(|&f| (1.0..=4.52).contains(&f)),
        "{firsts:?}"
    );
    assert!(firsts.iter().any(|&f| f < 1.7) && firsts.iter().any(|&f| f > 2.5));
}

/// Until the first completion the monitor's last dequeue is at boot, so it
/// injects on every round with work even when every thread computes: six
/// busy loops of 2.5 s on 2 cores get a thread per round (0.5, 1.0, 1.5,
/// 2.0 s) and end at 4.5 s, as all 10 recorded runs did
/// (`scenarios/calibration/monitor-before-first-completion.toml`,
/// `tests/fixtures/calibration/monitor-before-first-completion/`). With the
/// last dequeue at the pool's start the busy threshold (3 x 1000 ms) holds
/// the pool at 3 threads and the run takes 5.5 s.
#[test]
fn monos_monitor_injects_every_round_before_the_first_completion() {
    let stem = "monitor-before-first-completion";
    let s = poolsim::scenario::load::load_scenario(&crate::common::repo_path(&format!(
        "scenarios/calibration/{stem}.toml"
    )))
    .unwrap();
    let groups: Vec<String> = s.groups.iter().map(|g| g.name.clone()).collect();
    let dir = crate::common::repo_path(&format!("tests/fixtures/calibration/{stem}"));
    let mut recorded = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("the calibration recordings") {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let m = poolsim::measure::measured::parse(&text, &groups, stem, "mono", 1, 1).unwrap();
        let starts = crate::common::sorted_starts(&m.trace);
        recorded.push((starts, poolsim::metrics::summarize(&m.trace).makespan_ms));
    }
    assert_eq!(recorded.len(), 10);
    let starts_on_rounds = |starts: &[f64]| {
        starts[..2].iter().all(|&t| t < 10.0)
            && starts[2..]
                .iter()
                .zip([500.0, 1000.0, 1500.0, 2000.0])
                .all(|(&t, round)| (round..round + 30.0).contains(&t))
    };
    for (starts, makespan) in &recorded {
        assert!(starts_on_rounds(starts), "recorded {starts:?}");
        assert!((4500.0..4540.0).contains(makespan), "recorded {makespan}");
    }
    for seed in 1..=20 {
        let mut s = s.clone();
        s.seed = seed;
        let (e, r) = run(&s, &resolve_policy("mono").unwrap());
        let starts = crate::common::sorted_starts(&r.trace);
        assert!(starts_on_rounds(&starts), "seed {seed}: {starts:?}");
        let makespan = poolsim::metrics::summarize(&r.trace).makespan_ms;
        assert!(
            (4500.0..4540.0).contains(&makespan),
            "seed {seed}: {makespan}"
        );
        let ticks: Vec<&str> = e
            .lines
            .iter()
            .filter(|l| l.text.starts_with("gate tick"))
            .map(|l| l.text.as_str())
            .collect();
        assert!(ticks[1].contains("no completion yet"), "{ticks:?}");
        assert!(ticks[1].contains("CPU 100 %"), "{ticks:?}");
    }
    // The last dequeue at the pool's start instead: the CPU decides.
    let (_, r) = run(&s, &mono(HeuristicStart::SincePoolStart, 1));
    assert_eq!(poolsim::metrics::summarize(&r.trace).threads_peak, 3);
    assert!(poolsim::metrics::summarize(&r.trace).makespan_ms > 5400.0);
}
