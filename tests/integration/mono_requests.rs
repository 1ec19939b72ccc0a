//! Mono 6.8's two-level thread requests: a managed request
//! reaches the worker pool only while threadpool.c's `starting` counter is
//! under 16, and a worker inside `worker_callback` keeps dispatching while
//! any request is outstanding without taking the token its request left.
//! Under long items the tokens pile up to the cap, and from then on a
//! request neither wakes nor creates a thread: a hill-climbing raise waits
//! for the monitor, which adds threads only on starvation
//! (mono/mono `mono/metadata/threadpool.c`, `threadpool-worker-default.c`).

use poolsim::engine::{self, RunResult, SimOptions};
use poolsim::policy::PolicyConfig;
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::load::parse_scenario;
use poolsim::trace::{NullSink, ThreadReason};

/// 40 × Sleep(1200) at once on 2 cores: the run, whether hill climbing
/// raised the goal (a Warmup sample whose wave is high) and when `explain`
/// says requests are held at the cap.
fn sleepers(policy: &PolicyConfig) -> (RunResult, bool, Option<(f64, String)>) {
    let text = "seed = 1\n[machine]\ncores = 2\n[pool]\npolicy = \"mono\"\n\
                [[group]]\nname = \"g\"\ncount = 40\nsubmit = \"task-run\"\n\
                body = [ { sleep_ms = 1200 } ]\n";
    let s = parse_scenario(text, "t.toml").unwrap();
    let e = poolsim::explain::explain_scenario(&s, policy, None);
    let raised = e
        .lines
        .iter()
        .any(|l| l.text.starts_with("hill climbing") && l.text.contains("Warmup: goal 4 -> 5"));
    let held = e
        .lines
        .iter()
        .find(|l| l.kind == "RequestsHeld")
        .map(|l| (l.at_ms, l.text.clone()));
    let r = engine::simulate(&s, policy, &mut NullSink, &SimOptions::default());
    (r, raised, held)
}

fn mono(max_starting: u32) -> PolicyConfig {
    let mut p = resolve_policy("mono").unwrap();
    p.mono.as_mut().unwrap().max_starting = max_starting;
    p
}

#[test]
fn monos_policy_caps_the_requests_passed_on_at_16() {
    assert_eq!(
        resolve_policy("mono").unwrap().mono.unwrap().max_starting,
        16
    );
}

/// Hill climbing raises the goal at its second sample (Warmup, wave high)
/// in both runs; only without the cap does a request then create the
/// thread, and the run ends a round (1.2 s) sooner.
#[test]
fn once_the_tokens_reach_the_cap_a_raised_goal_creates_no_thread() {
    let (capped, capped_raised, held) = sleepers(&mono(16));
    let (uncapped, uncapped_raised, never) = sleepers(&mono(0));
    assert!(capped_raised && uncapped_raised);
    // `explain` says when the cap is reached, before the raise it stops.
    let (at, text) = held.expect("a RequestsHeld line");
    assert!(text.contains("16 requests"), "{text}");
    assert!((1000.0..7000.0).contains(&at), "{at}");
    assert!(never.is_none());
    let on_demand_after_start = |r: &RunResult| {
        r.trace
            .threads
            .iter()
            .filter(|t| t.reason == ThreadReason::Demand && t.created.as_ms_f64() > 100.0)
            .count()
    };
    assert_eq!(
        on_demand_after_start(&capped),
        0,
        "{:?}",
        capped.trace.threads
    );
    assert!(
        on_demand_after_start(&uncapped) >= 1,
        "{:?}",
        uncapped.trace.threads
    );
    let makespan = |r: &RunResult| poolsim::metrics::summarize(&r.trace).makespan_ms;
    assert!(
        makespan(&capped) > makespan(&uncapped) + 900.0,
        "{} {}",
        makespan(&capped),
        makespan(&uncapped)
    );
}
