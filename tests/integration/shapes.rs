//! Submission shapes, throttles and phases behave as the TPL does.

use poolsim::engine::{self, RunResult, SimOptions};
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::load::parse_scenario;
use poolsim::time::SimTime;
use poolsim::trace::{NullSink, ThreadReason};

fn run(text: &str, policy: &str) -> RunResult {
    let scenario = parse_scenario(text, "shape.toml").unwrap_or_else(|e| panic!("{e}"));
    let policy = resolve_policy(policy).unwrap();
    let result = engine::simulate(&scenario, &policy, &mut NullSink, &SimOptions::default());
    assert!(result.outcome.is_completed(), "{:?}", result.outcome);
    result
}

/// The most items running at one instant.
fn max_concurrency(r: &RunResult) -> usize {
    let mut edges: Vec<(SimTime, i32)> = Vec::new();
    for i in &r.trace.items {
        edges.push((i.started, 1));
        edges.push((i.finished, -1));
    }
    edges.sort();
    let (mut now, mut max) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        max = max.max(now);
    }
    max as usize
}

fn scenario(cores: u32, group: &str) -> String {
    format!(
        "[machine]\ncores = {cores}\n[pool]\npolicy = \"net5\"\n[[group]]\nname = \"g\"\n{group}\n"
    )
}

#[test]
fn plinq_runs_exactly_its_degree_of_parallelism() {
    let r = run(
        &scenario(
            4,
            "count = 40\nsubmit = \"plinq\"\nbody = [ { sleep_ms = 100 } ]",
        ),
        "net5",
    );
    assert_eq!(max_concurrency(&r), 4);
    let r = run(
        &scenario(
            4,
            "count = 40\nsubmit = \"plinq\"\nmax_degree = 2\nbody = [ { sleep_ms = 100 } ]",
        ),
        "net5",
    );
    assert_eq!(max_concurrency(&r), 2);
}

#[test]
fn parallel_for_from_main_runs_its_root_replica_on_the_main_thread() {
    let r = run(
        &scenario(
            2,
            "count = 20\nsubmit = \"parallel-for\"\nbody = [ { cpu_ms = 10 } ]",
        ),
        "net5",
    );
    let main = r
        .trace
        .threads
        .iter()
        .find(|t| t.reason == ThreadReason::Main)
        .expect("the main thread ran work");
    assert!(r.trace.items.iter().any(|i| i.thread == main.thread));
    assert!(
        r.trace.items.iter().any(|i| i.thread != main.thread),
        "replicas spread"
    );
}

#[test]
fn parallel_for_respects_max_degree() {
    let r = run(
        &scenario(
            8,
            "count = 64\nsubmit = \"parallel-for\"\nfrom = \"pool\"\nmax_degree = 3\nbody = [ { sleep_ms = 10 } ]",
        ),
        "net5",
    );
    assert!(max_concurrency(&r) <= 3, "{}", max_concurrency(&r));
}

#[test]
fn throttles_cap_concurrency() {
    for kind in ["concurrent-exclusive", "semaphore"] {
        let r = run(
            &scenario(
                8,
                &format!(
                    "count = 50\nbody = [ {{ sleep_ms = 20 }} ]\nthrottle = {{ kind = \"{kind}\", limit = 3 }}"
                ),
            ),
            "net5",
        );
        assert_eq!(max_concurrency(&r), 3, "{kind}");
    }
}

#[test]
fn a_throttled_policy_wraps_every_group() {
    // With threads to spare (min 32), the throttle is what limits: 2 x cores.
    let text = "[machine]\ncores = 8\n[pool]\npolicy = \"net5\"\nmin_threads = 32\n\
        [[group]]\ncount = 50\nbody = [ { sleep_ms = 20 } ]\n";
    let r = run(text, "net-classic-throttled");
    assert_eq!(max_concurrency(&r), 16, "2 x cores");
    let r = run(text, "net-classic");
    assert_eq!(max_concurrency(&r), 32, "unthrottled");
}

#[test]
fn new_thread_gives_every_item_its_own_thread() {
    let r = run(
        &scenario(
            2,
            "count = 12\nsubmit = \"new-thread\"\nbody = [ { sleep_ms = 50 } ]",
        ),
        "net5",
    );
    let dedicated = r
        .trace
        .threads
        .iter()
        .filter(|t| t.reason == ThreadReason::Dedicated)
        .count();
    assert_eq!(dedicated, 12);
    assert_eq!(max_concurrency(&r), 12);
}

#[test]
fn a_group_after_another_starts_when_it_ends() {
    let text = "[machine]\ncores = 2\n[pool]\npolicy = \"net5\"\n\
        [[group]]\nname = \"first\"\ncount = 5\nbody = [ { sleep_ms = 100 } ]\n\
        [[group]]\nname = \"second\"\ncount = 5\narrival = { after = \"first\", delay_ms = 50 }\nbody = [ { sleep_ms = 10 } ]\n";
    let r = run(text, "net5");
    let last_first = r
        .trace
        .items
        .iter()
        .filter(|i| i.group == 0)
        .map(|i| i.finished)
        .max()
        .unwrap();
    let first_second = r
        .trace
        .items
        .iter()
        .filter(|i| i.group == 1)
        .map(|i| i.queued)
        .min()
        .unwrap();
    assert_eq!(first_second.as_nanos(), last_first.as_nanos() + 50_000_000);
}

/// `after` with a stream: the traffic starts `delay` after the earlier
/// group ends, one item per period from then (or Poisson gaps, the same
/// ones `offsets` gives the real runners' plans).
#[test]
fn a_stream_after_another_group_starts_when_it_ends() {
    let text = |arrival: &str| {
        format!(
            "[machine]\ncores = 2\n[pool]\npolicy = \"net8\"\n\
             [[group]]\nname = \"first\"\ncount = 5\nbody = [ {{ sleep_ms = 100 }} ]\n\
             [[group]]\nname = \"second\"\ncount = 6\narrival = {{ after = \"first\", delay_ms = 50, {arrival} }}\nbody = [ {{ cpu_ms = 1 }} ]\n"
        )
    };
    for arrival in ["every_ms = 20", "poisson_per_s = 40"] {
        let text = text(arrival);
        let r = run(&text, "net8");
        let last_first = r
            .trace
            .items
            .iter()
            .filter(|i| i.group == 0)
            .map(|i| i.finished)
            .max()
            .unwrap();
        let mut queued: Vec<u64> = r
            .trace
            .items
            .iter()
            .filter(|i| i.group == 1)
            .map(|i| i.queued.as_nanos() - last_first.as_nanos() - 50_000_000)
            .collect();
        queued.sort();
        let scenario = poolsim::scenario::load::parse_scenario(&text, "t.toml").unwrap();
        let offsets: Vec<u64> = poolsim::scenario::arrivals::offsets(&scenario, 1)
            .iter()
            .map(|o| o.as_nanos())
            .collect();
        assert_eq!(queued, offsets, "{arrival}");
        if arrival.starts_with("every") {
            assert_eq!(offsets[5], 100_000_000);
        } else {
            assert!(offsets.windows(2).any(|w| w[1] - w[0] != offsets[1]));
        }
    }
}

#[test]
fn cooperative_blocking_counts_task_waits_but_not_sleeps() {
    let waits = scenario(4, "count = 40\nbody = [ { wait_ms = 1000 } ]");
    let sleeps = scenario(4, "count = 40\nbody = [ { sleep_ms = 1000 } ]");
    let threads_at = |r: &RunResult, ms: u64| {
        r.trace
            .threads
            .iter()
            .filter(|t| t.created <= SimTime::from_ms(ms))
            .count()
    };
    let net6_waits = run(&waits, "net6");
    let net6_sleeps = run(&sleeps, "net6");
    let net5_waits = run(&waits, "net5");
    // .NET 6 adds threads for Task.Wait within the first 400 ms, not for Sleep.
    assert!(
        threads_at(&net6_waits, 400) >= 12,
        "{}",
        threads_at(&net6_waits, 400)
    );
    assert!(
        threads_at(&net6_sleeps, 400) <= 5,
        "{}",
        threads_at(&net6_sleeps, 400)
    );
    assert!(
        threads_at(&net5_waits, 400) <= 5,
        "{}",
        threads_at(&net5_waits, 400)
    );
}

#[test]
fn mono_ignores_set_min_threads() {
    let text = "[machine]\ncores = 2\n[pool]\npolicy = \"mono\"\nmin_threads = 20\n[[group]]\ncount = 10\nbody = [ { sleep_ms = 4000 } ]\n";
    let r = run(text, "mono");
    let starts: Vec<f64> = r
        .trace
        .items
        .iter()
        .map(|i| i.started.as_ms_f64())
        .collect();
    assert!(
        starts[2] >= 499.0,
        "the third item waits for the monitor: {starts:?}"
    );
    // One thread per monitor tick (500 ms), as measured on Mono 6.8.
    for w in starts[2..8].windows(2) {
        assert!((w[1] - w[0] - 500.0).abs() < 5.0, "{starts:?}");
    }
}

#[test]
fn a_spin_on_a_tick_clock_lasts_whole_ticks() {
    // SpinUntil(() => false, 40) and (.., 20) on Windows' 15.625 ms
    // TickCount, one thread, items back to back: each spin starts just
    // after the tick the previous one ended on (the first one after the
    // thread's start latency), so each ends on a tick.
    for (ms, lasts) in [(40, 46.875), (20, 31.25)] {
        let text = format!(
            "[machine]\ncores = 1\ntick_ms = 15.625\n[pool]\npolicy = \"net5\"\nmin_threads = 1\nmax_threads = 1\n[[group]]\ncount = 5\nbody = [ {{ spin_ms = {ms} }} ]\n"
        );
        let r = run(&text, "net5");
        for i in &r.trace.items {
            let took = (i.finished - i.started).as_ms_f64();
            assert!(
                took <= lasts && took > lasts - 1.0,
                "spin {ms} ms took {took} ms, expected just under {lasts}"
            );
        }
        let end = r.trace.items.iter().map(|i| i.finished).max().unwrap();
        assert_eq!(end.as_ms_f64(), 5.0 * lasts, "spin {ms} ms");
    }
}

#[test]
fn mono_at_its_thread_limit_still_fills_the_goal() {
    // One core, SetMaxThreads(2). A pool thread submits an item that blocks
    // in Task.Delay(1).Wait(); hill climbing has raised the goal to 2 (the
    // maximum) but no request created the second thread. Mono's monitor
    // then cannot raise the goal, and goes on because fewer threads work
    // than the goal: the timer callback gets the second thread.
    let text = "[machine]\ncores = 1\n[pool]\npolicy = \"mono\"\nmax_threads = 2\n\
        [[group]]\nname = \"first\"\ncount = 1\narrival = { at_ms = 15 }\nbody = [ { cpu_ms = 6 } ]\n\
        [[group]]\nname = \"blocker\"\ncount = 1\nfrom = \"pool\"\narrival = { at_ms = 173 }\nbody = [ { wait_ms = 1 } ]\n";
    for seed in 1..=8 {
        let scenario = parse_scenario(&format!("seed = {seed}\n{text}"), "m.toml").unwrap();
        let policy = resolve_policy("mono").unwrap();
        let r = engine::simulate(&scenario, &policy, &mut NullSink, &SimOptions::default());
        assert!(r.outcome.is_completed(), "seed {seed}: {:?}", r.outcome);
        assert!(
            r.trace.threads.len() <= 2,
            "seed {seed}: {} threads",
            r.trace.threads.len()
        );
    }
}

/// A Stopwatch busy loop (`busy_ms`) holds a whole core and ends on time; a
/// `SpinWait.SpinUntil` spinner (`spin_ms`) ends on time too but leaves most
/// of its core to others. On one core, next to 100 ms of CPU work started
/// at the same moment, the busy loop halves the work's speed for its
/// 100 ms; the spinner slows it only by its share.
#[test]
fn a_busy_loop_holds_its_core_and_ends_on_wall_clock_time() {
    let text = |step: &str| {
        format!(
            "[machine]\ncores = 1\n[pool]\npolicy = \"net5\"\nmin_threads = 2\n\
             [[group]]\nname = \"loop\"\ncount = 1\nbody = [ {{ {step} = 100 }} ]\n\
             [[group]]\nname = \"work\"\ncount = 1\nbody = [ {{ cpu_ms = 100 }} ]\n"
        )
    };
    let end_ms = |r: &RunResult, group: u32| {
        let i = r.trace.items.iter().find(|i| i.group == group).unwrap();
        i.finished.since(i.started).as_ms_f64()
    };
    let item = |r: &RunResult, group: u32| {
        let i = r.trace.items.iter().find(|i| i.group == group).unwrap();
        (i.started.as_ms_f64(), i.finished.as_ms_f64())
    };
    let busy = run(&text("busy_ms"), "net5");
    assert!(
        (end_ms(&busy, 0) - 100.0).abs() < 1e-6,
        "{}",
        end_ms(&busy, 0)
    );
    // The work runs at half speed while the loop holds the core, then at
    // full speed: done at loop end + (100 - overlap / 2).
    let ((_, loop_end), (work_start, work_end)) = (item(&busy, 0), item(&busy, 1));
    let overlap = loop_end - work_start;
    assert!(overlap > 90.0, "{overlap}");
    let expected = loop_end + (100.0 - overlap / 2.0);
    assert!(
        (work_end - expected).abs() < 1e-3,
        "{work_end} vs {expected}"
    );
    let spin = run(&text("spin_ms"), "net5");
    assert!(
        (end_ms(&spin, 0) - 100.0).abs() < 1e-6,
        "{}",
        end_ms(&spin, 0)
    );
    assert!(
        end_ms(&spin, 1) < end_ms(&busy, 1) - 10.0,
        "{}",
        end_ms(&spin, 1)
    );
}
