//! `poolsim explain`: the pool's decisions narrated with their rule and
//! inputs ([`poolsim::explain`]).

use poolsim::engine::{self, SimOptions};
use poolsim::explain::{ExplainLine, Explanation, explain_scenario};
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::Scenario;
use poolsim::scenario::load::parse_scenario;
use poolsim::time::SimTime;
use poolsim::trace::{Decision, EventLog, GateOutcome, NullSink, TraceEvent};

use crate::common::{number_after, scenario};

fn explain(s: &Scenario, policy: &str, window: Option<(f64, f64)>) -> Explanation {
    let p = resolve_policy(policy).unwrap_or_else(|e| panic!("{e}"));
    let window = window.map(|(a, b)| (ms(a), ms(b)));
    explain_scenario(s, &p, window)
}

fn ms(v: f64) -> SimTime {
    SimTime((v * 1e6).round() as u64)
}

fn of_kind<'a>(e: &'a Explanation, kind: &str) -> Vec<&'a ExplainLine> {
    e.lines.iter().filter(|l| l.kind == kind).collect()
}

#[test]
fn seed_001_names_each_starvation_injection_with_its_inputs() {
    let e = explain(&scenario("seed-001-burst.toml"), "net-classic", None);
    let injections = of_kind(&e, "Starvation");
    let at: Vec<f64> = injections.iter().map(|l| l.at_ms).collect();
    assert_eq!(at.len(), 4, "{}", e.to_text());
    for (got, want) in at.iter().zip([630.0, 1630.0, 2630.0, 3630.0]) {
        assert!((got - want).abs() < 1.0, "{at:?}");
    }
    for (k, line) in injections.iter().enumerate() {
        let t = &line.text;
        assert!(t.starts_with("gate tick: last dequeue "), "{t}");
        let since = number_after(t, "last dequeue ");
        assert!(since > 500.0 && since < 1000.0, "{t}");
        assert!(t.contains(" ms ago > 500 ms"), "{t}");
        assert!(t.contains("(CPU 0 % < 80 %)"), "{t}");
        let goal = 4 + k as u32;
        assert!(
            t.contains(&format!(
                "-> Starvation: goal {goal} -> {}, thread {goal} created",
                goal + 1
            )),
            "{t}"
        );
    }
    // The ticks in between fail the strict test: the new thread's dequeue
    // reset the clock 500 ms earlier.
    let held: Vec<&ExplainLine> = of_kind(&e, "GateTick")
        .into_iter()
        .filter(|l| l.at_ms > 1000.0)
        .collect();
    assert_eq!(held.len(), 3, "{}", e.to_text());
    for l in held {
        assert!(l.text.contains("ms ago, not > 500 ms"), "{}", l.text);
    }
    // The first four threads come on demand, at once.
    let demand = of_kind(&e, "Demand");
    assert_eq!(demand.len(), 4);
    assert!(
        demand
            .iter()
            .all(|l| l.at_ms == 0.0 && l.text.contains("< goal 4"))
    );
    let story = e.story.as_deref().unwrap_or_default();
    assert!(
        story.starts_with("4 threads at once on demand (min threads), then 4 threads from the starvation rule, one a second"),
        "{story}"
    );
    assert!(story.contains("items 8 and 9 reuse threads"), "{story}");
}

#[test]
fn net6_task_wait_shows_cooperative_blocking_with_its_delay() {
    let e = explain(&scenario("seed-000-task-run.toml"), "net6", None);
    let blocking = of_kind(&e, "CooperativeBlocking");
    assert!(blocking.len() > 10, "{}", e.to_text());
    // At once up to the no-delay cap, then one thread per delay.
    assert!(
        blocking[0].text.contains("up to the no-delay cap") && blocking[0].text.contains("at once"),
        "{}",
        blocking[0].text
    );
    let delayed: Vec<&&ExplainLine> = blocking
        .iter()
        .filter(|l| l.text.contains(">= delay") && l.text.contains("created"))
        .collect();
    assert!(delayed.len() > 10, "{}", e.to_text());
    for l in &delayed {
        let delay = number_after(&l.text, ">= delay ");
        assert!(delay >= 25.0, "{}", l.text);
        assert!(l.text.contains("blocked in Task.Wait"), "{}", l.text);
    }
    // The delay grows with the goal.
    let first = number_after(&delayed[0].text, ">= delay ");
    let last = number_after(&delayed[delayed.len() - 1].text, ">= delay ");
    assert!(last > first, "{first} .. {last}");
    // While an adjustment is pending the gate thread skips starvation.
    assert!(of_kind(&e, "GateTick").iter().any(|l| {
        l.text
            .contains("cooperative-blocking adjustment is pending")
    }));
}

#[test]
fn hill_climbing_moves_show_throughput_wave_and_step() {
    let e = explain(
        &scenario("seed-003-sync-unthrottled.toml"),
        "net-classic",
        None,
    );
    let warmup = of_kind(&e, "Warmup");
    let climbing = of_kind(&e, "ClimbingMove");
    assert!(
        !warmup.is_empty() && !climbing.is_empty(),
        "{}",
        e.to_text()
    );
    for l in warmup.iter().chain(&climbing) {
        assert!(l.text.starts_with("hill climbing: "), "{}", l.text);
        let throughput: f64 = l.text[..l.text.find(" items/s").unwrap_or(0)]
            .rsplit(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(-1.0);
        assert!(throughput > 0.0, "{}", l.text);
        assert!(l.text.contains(" items/s over "), "{}", l.text);
        assert!(l.text.contains(", step "), "{}", l.text);
        assert!(l.text.contains(", wave "), "{}", l.text);
    }
    for l in &climbing {
        assert!(
            l.text.contains("thread wave") && l.text.contains("ratio"),
            "{}",
            l.text
        );
    }
    // A move up adds the thread it allows.
    assert!(
        climbing
            .iter()
            .chain(&warmup)
            .any(|l| l.text.contains("created")),
        "{}",
        e.to_text()
    );
    // Mono's port: the same lines, its throughput per second.
    let mono = explain(&scenario("seed-003-sync-unthrottled.toml"), "mono", None);
    assert!(
        mono.lines
            .iter()
            .any(|l| l.text.starts_with("hill climbing: ")),
        "{}",
        mono.to_text()
    );
}

#[test]
fn a_window_keeps_only_its_lines_and_no_story() {
    let s = scenario("seed-001-burst.toml");
    let all = explain(&s, "net-classic", None);
    let window = explain(&s, "net-classic", Some((1000.0, 3000.0)));
    assert!(window.story.is_none());
    assert!(!window.lines.is_empty());
    assert!(
        window
            .lines
            .iter()
            .all(|l| l.at_ms >= 1000.0 && l.at_ms < 3000.0)
    );
    let inside: Vec<&ExplainLine> = all
        .lines
        .iter()
        .filter(|l| l.at_ms >= 1000.0 && l.at_ms < 3000.0)
        .collect();
    assert_eq!(window.lines.iter().collect::<Vec<_>>(), inside);
    assert_eq!(of_kind(&window, "Starvation").len(), 2);
}

#[test]
fn explaining_twice_gives_the_same_text_and_json() {
    for (file, policy) in [
        ("seed-001-burst.toml", "net-classic"),
        ("seed-000-task-run.toml", "net6"),
        ("seed-003-async-throttled.toml", "net-classic"),
        ("seed-004-test1-tight-loop.toml", "net20-sp1"),
    ] {
        let s = scenario(file);
        let a = explain(&s, policy, None);
        let b = explain(&s, policy, None);
        assert_eq!(a.to_text(), b.to_text(), "{file} {policy}");
        let ja = serde_json::to_string(&a).unwrap_or_default();
        let jb = serde_json::to_string(&b).unwrap_or_default();
        assert_eq!(ja, jb);
        let v: serde_json::Value = serde_json::from_str(&ja).unwrap_or_default();
        assert_eq!(v["lines"].as_array().map(Vec::len), Some(a.lines.len()));
        assert!(v["lines"][0]["at_ms"].is_number() && v["lines"][0]["kind"].is_string());
        assert!(v["story"].is_string());
    }
}

#[test]
fn throttle_hand_offs_and_timer_backlogs_are_lines() {
    let e = explain(
        &scenario("seed-003-async-throttled.toml"),
        "net-classic",
        None,
    );
    let hand_offs = of_kind(&e, "ThrottleHandOff");
    assert!(!hand_offs.is_empty());
    assert!(
        hand_offs[0]
            .text
            .contains("released the semaphore (limit 8)"),
        "{}",
        hand_offs[0].text
    );
    let pair = explain(
        &scenario("seed-003-sync-unthrottled.toml"),
        "net-classic-throttled",
        None,
    );
    let hand_offs = of_kind(&pair, "ThrottleHandOff");
    assert!(!hand_offs.is_empty(), "{}", pair.to_text());
    assert!(
        hand_offs[0]
            .text
            .contains("the scheduler pair (limit 8) runs item")
    );

    let mono = explain(&scenario("validation/delay-wait-burst.toml"), "mono", None);
    let timers = of_kind(&mono, "TimerBacklog");
    assert!(!timers.is_empty(), "{}", mono.to_text());
    assert!(
        timers[0]
            .text
            .contains("its callback waits in the global queue behind")
            && timers[0].text.contains("from Task.Delay().Wait()"),
        "{}",
        timers[0].text
    );
}

#[test]
fn idle_threads_time_out_and_surplus_workers_stop() {
    let s = parse_scenario(
        "name = \"idle then late\"\nseed = 1\n[machine]\ncores = 4\n[pool]\npolicy = \"net-classic\"\n\
         gate_phase_ms = 130\n\
         [[group]]\nname = \"burst\"\ncount = 8\nsubmit = \"task-run\"\narrival = { at_ms = 0 }\n\
         body = [ { sleep_ms = 2000 } ]\n\
         [[group]]\nname = \"late\"\ncount = 1\nsubmit = \"task-run\"\narrival = { at_ms = 40000 }\n\
         body = [ { cpu_ms = 1 } ]\n",
        "idle.toml",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let e = explain(&s, "net-classic", None);
    let timed_out = of_kind(&e, "ThreadTimedOut");
    assert!(!timed_out.is_empty(), "{}", e.to_text());
    for l in &timed_out {
        assert!(l.at_ms >= 20_000.0, "{}", l.text);
        assert!(l.text.contains("20000 ms"), "{}", l.text);
    }
    assert!(
        timed_out
            .iter()
            .any(|l| l.text.contains("ThreadTimedOut: it exits, goal")),
        "{}",
        e.to_text()
    );
    let story = e.story.unwrap_or_default();
    assert!(story.contains("exited after the idle timeout"), "{story}");
}

#[test]
fn decisions_do_not_change_the_run() {
    for (file, policy) in [
        ("seed-001-burst.toml", "net-classic"),
        ("seed-001-burst.toml", "mono"),
        ("seed-000-task-run.toml", "net6"),
        ("seed-000-task-run.toml", "net8"),
        ("seed-003-async-throttled.toml", "net6-throttled"),
        ("seed-004-test1-tight-loop.toml", "net20-sp1"),
    ] {
        let s = scenario(file);
        let p = resolve_policy(policy).unwrap_or_else(|e| panic!("{e}"));
        let quiet = engine::simulate(&s, &p, &mut NullSink, &SimOptions::default());
        let mut log = EventLog::default();
        let traced = engine::simulate(&s, &p, &mut log, &SimOptions::default());
        assert_eq!(quiet.trace, traced.trace, "{file} {policy}");
        assert_eq!(quiet.events, traced.events, "{file} {policy}");
        let decisions = log
            .events
            .iter()
            .filter(|(_, e)| matches!(e, TraceEvent::Decision(_)))
            .count();
        assert!(decisions > 0, "{file} {policy}");
        // Every gate tick that injects is followed by its goal change.
        for (k, (at, e)) in log.events.iter().enumerate() {
            if let TraceEvent::Decision(Decision::GateTick {
                outcome: GateOutcome::Inject,
                new_goal,
                goal,
                ..
            }) = e
                && new_goal != goal
            {
                assert!(
                    matches!(log.events.get(k + 1), Some((t, TraceEvent::GoalChanged { goal: g, .. })) if t == at && g == new_goal),
                    "{file} {policy} at {at}"
                );
            }
        }
    }
}
