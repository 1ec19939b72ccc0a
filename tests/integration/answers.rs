//! Answers without the picture: latency and starvation metrics, the
//! starvation verdict, dotnet-counters samples.

use poolsim::counters::{counters_csv, samples};
use poolsim::engine::{self, SimOptions};
use poolsim::metrics::{self, time_starved};
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::load::parse_scenario;
use poolsim::trace::{EventLog, NullSink};
use poolsim::verdict::starvation_verdict;

use crate::common::{run, scenario};

#[test]
fn latency_is_queued_to_finished_and_created_threads_are_split_by_reason() {
    // Seed 001: 10 x Sleep(4000) on 4 cores; 4 threads at once (min
    // threads), 4 more from the starvation rule; items 8 and 9 reuse threads.
    let r = run(&scenario("seed-001-burst.toml"));
    let s = metrics::summarize(&r.trace);
    assert_eq!(s.threads_created_by_reason.get("demand"), Some(&4));
    assert_eq!(s.threads_created_by_reason.get("starvation"), Some(&4));
    assert_eq!(
        s.threads_created_by_reason.values().sum::<usize>(),
        s.threads_created
    );
    // Every item sleeps 4 s: latency = start delay + 4000 ms.
    assert!(
        (s.latency_ms.max - (s.start_delay_ms.max + 4000.0)).abs() < 1.0,
        "{s:?}"
    );
    assert!(s.latency_ms.p50 >= 4000.0 && s.latency_ms.p99 <= s.latency_ms.max);
    assert!(
        s.start_delay_ms.p99 <= s.start_delay_ms.max
            && s.start_delay_ms.p99 >= s.start_delay_ms.p95
    );
    // Work waited from 0 until items 8 and 9 started at ~4000 ms.
    assert!(
        (s.time_starved_ms - 4000.0).abs() < 5.0,
        "time starved {}",
        s.time_starved_ms
    );
}

#[test]
fn time_starved_is_the_union_of_waits_not_their_sum() {
    // 100 items queued at once on 100 threads: nobody waits long, whatever
    // the count.
    let text = r#"
        [machine]
        cores = 2
        [pool]
        policy = "net-classic"
        min_threads = 100
        [[group]]
        count = 100
        body = [ { sleep_ms = 1000 } ]
    "#;
    let s = parse_scenario(text, "t.toml").unwrap();
    let p = resolve_policy("net-classic").unwrap();
    let r = engine::simulate(&s, &p, &mut NullSink, &SimOptions::default());
    let starved = time_starved(&r.trace).as_ms_f64();
    let summed: f64 = r
        .trace
        .items
        .iter()
        .map(|i| i.started.as_ms_f64() - i.queued.as_ms_f64())
        .sum();
    assert!(starved < 50.0, "{starved}");
    assert!(starved <= summed + 1e-9);
}

#[test]
fn the_verdict_names_starvation_its_cause_and_a_setting_that_removes_it() {
    let s = scenario("seed-001-burst.toml");
    let p = resolve_policy(&s.pool.policy).unwrap();
    let r = engine::simulate(&s, &p, &mut NullSink, &SimOptions::default());
    let v = starvation_verdict(&s, &p, &r.trace);
    assert!(v.starved, "{v:?}");
    assert_eq!(v.starvation_injections, 4);
    let rate = v.rate_per_s.unwrap();
    assert!((0.9..1.1).contains(&rate), "one a second: {rate}");
    assert_eq!(v.causes[0].call, "Thread.Sleep(4000)");
    // 4 threads sleep at the first injection, 7 at the last.
    assert_eq!(v.causes[0].running_at_injections, (4, 7));
    // SetMinThreads(10) runs all ten at once in 4 s; the classic gate still
    // adds one thread at its first tick (a thread request stays pending
    // while every thread sleeps), which is no longer the signature.
    let fix = &v.fixes[0];
    assert!(fix.setting.contains("SetMinThreads(10"), "{fix:?}");
    assert!(fix.starvation_injections <= 1, "{fix:?}");
    assert!(fix.makespan_ms < 4100.0, "{fix:?}");
    assert!(v.text[0].starts_with("STARVATION"), "{:?}", v.text);
}

#[test]
fn the_verdict_offers_cooperative_blocking_for_task_wait() {
    let s = scenario("seed-000-task-run.toml");
    let p = resolve_policy("net5").unwrap();
    let r = engine::simulate(&s, &p, &mut NullSink, &SimOptions::default());
    let v = starvation_verdict(&s, &p, &r.trace);
    assert!(v.starved, "{:?}", v.text);
    assert!(
        v.causes
            .iter()
            .any(|c| c.call.starts_with("Task.Delay(3000).Wait()")),
        "{:?}",
        v.causes
    );
    let net6 = v
        .fixes
        .iter()
        .find(|f| f.setting.contains("net6"))
        .unwrap_or_else(|| panic!("{:?}", v.fixes));
    assert!(net6.makespan_ms < 0.5 * v.makespan_ms, "{net6:?}");
}

#[test]
fn cpu_bound_work_gets_no_starvation_verdict() {
    // Busy cores are not starvation: CPU work that saturates the machine.
    let text = r#"
        [machine]
        cores = 2
        [pool]
        policy = "net-classic"
        [[group]]
        count = 200
        body = [ { cpu_ms = 50 } ]
    "#;
    let s = parse_scenario(text, "t.toml").unwrap();
    let p = resolve_policy("net-classic").unwrap();
    let r = engine::simulate(&s, &p, &mut NullSink, &SimOptions::default());
    let v = starvation_verdict(&s, &p, &r.trace);
    assert!(!v.starved, "{:?}", v.text);
    assert!(v.text[0].starts_with("no starvation"), "{:?}", v.text);
}

#[test]
fn counters_sample_each_second_with_dotnet_counters_names() {
    let s = scenario("seed-001-burst.toml");
    let p = resolve_policy(&s.pool.policy).unwrap();
    let mut log = EventLog::default();
    let r = engine::simulate(&s, &p, &mut log, &SimOptions::default());
    let samples = samples(&r.trace, Some(&log.events));
    // The run ends at ~8.0 s: 9 one-second samples.
    assert_eq!(samples.len(), 9);
    // At 1 s: 5 threads (4 + the injection at ~630 ms), 5 items queued.
    assert_eq!(samples[0].thread_count, 5);
    assert_eq!(samples[0].queue_length, 5);
    assert_eq!(samples[0].completed_items, 0);
    // Sleeping threads use no CPU.
    assert!(
        samples.iter().all(|x| x.cpu_usage.unwrap() < 1.0),
        "{samples:?}"
    );
    let total: u64 = samples.iter().map(|x| x.completed_items).sum();
    assert_eq!(total, 10);
    let csv = String::from_utf8(counters_csv(&r.trace, Some(&log.events))).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("Timestamp,Provider,Counter Name,Counter Type,Mean/Increment")
    );
    for name in [
        "threadpool-thread-count",
        "threadpool-queue-length",
        "threadpool-completed-items-count",
        "cpu-usage",
    ] {
        assert_eq!(
            csv.matches(&format!(",System.Runtime,{name},")).count(),
            9,
            "{name}"
        );
    }
    assert!(
        csv.contains("\n1,System.Runtime,threadpool-thread-count,Metric,5\n"),
        "{csv}"
    );
}

#[test]
fn counters_show_cpu_use_of_cpu_bound_work() {
    let text = r#"
        [machine]
        cores = 2
        [pool]
        policy = "net-classic"
        [[group]]
        count = 40
        body = [ { cpu_ms = 100 } ]
    "#;
    let s = parse_scenario(text, "t.toml").unwrap();
    let p = resolve_policy("net-classic").unwrap();
    let mut log = EventLog::default();
    let r = engine::simulate(&s, &p, &mut log, &SimOptions::default());
    let samples = samples(&r.trace, Some(&log.events));
    // 40 x 100 ms on 2 cores: 2 s of full use (the last item ends just
    // past 2 s, in a third interval).
    assert_eq!(samples.len(), 3, "{samples:?}");
    for x in &samples[..2] {
        assert!(x.cpu_usage.unwrap() > 95.0, "{samples:?}");
    }
    assert!(samples[2].cpu_usage.unwrap() < 1.0, "{samples:?}");
    assert_eq!(samples.iter().map(|x| x.completed_items).sum::<u64>(), 40);
    // A measured run has no phases: no cpu-usage rows.
    let csv = String::from_utf8(counters_csv(&r.trace, None)).unwrap();
    assert!(!csv.contains("cpu-usage"));
}
