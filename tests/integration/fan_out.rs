//! A `fan_out` step: `Task.Run` of a group's calls from the item's
//! thread (its local queue), then `Task.WhenAll(calls).Wait()`. The shape
//! of `examples/apps/fanout.cs`, a gateway blocking on its backends.

use poolsim::engine::{self, SimOptions};
use poolsim::metrics;
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::load::parse_scenario;
use poolsim::trace::{ItemRecord, NullSink};

/// 200 requests every 20 ms on 2 cores, each fanning out to 4 ×
/// `Task.Delay(100).Wait()`, under `policy` with `min_threads`.
fn gateway(policy: &str, min_threads: Option<u32>, seed: u64) -> engine::RunResult {
    let min = min_threads.map_or(String::new(), |m| format!("min_threads = {m}\n"));
    let text = format!(
        "name = \"gateway\"\nseed = {seed}\n[machine]\ncores = 2\n[pool]\npolicy = \"{policy}\"\n{min}\
         [[group]]\nname = \"requests\"\ncount = 200\narrival = {{ every_ms = 20 }}\n\
         body = [ {{ fan_out = \"calls\" }} ]\n\
         [[group]]\nname = \"calls\"\ncount = 800\nfrom = \"fan-out\"\nbody = [ {{ wait_ms = 100 }} ]\n"
    );
    let s = parse_scenario(&text, "gateway.toml").unwrap();
    let p = resolve_policy(policy).unwrap();
    engine::simulate(&s, &p, &mut NullSink, &SimOptions::default())
}

fn requests(r: &engine::RunResult) -> Vec<&ItemRecord> {
    r.trace.items.iter().filter(|i| i.group == 0).collect()
}

#[test]
fn a_request_ends_after_its_calls_and_its_thread_waits_for_them() {
    // Threads enough from the start: each request takes one call's time.
    let r = gateway("net8", Some(64), 1);
    assert_eq!(r.trace.items.len(), 1000);
    let mut calls_of: Vec<Vec<&ItemRecord>> = vec![Vec::new(); 1000];
    // Calls are submitted right after their request starts, 4 a request,
    // in order: the k-th request's calls are the 4 queued at its start.
    let reqs = requests(&r);
    assert_eq!(reqs.len(), 200);
    for c in r.trace.items.iter().filter(|i| i.group == 1) {
        let parent = reqs
            .iter()
            .rfind(|q| q.started <= c.queued)
            .expect("a call is queued by a running request");
        assert_eq!(c.queued, parent.started, "queued when its request ran");
        calls_of[parent.item as usize].push(c);
    }
    for q in &reqs {
        let calls = &calls_of[q.item as usize];
        assert_eq!(calls.len(), 4, "request {}", q.item);
        let last = calls.iter().map(|c| c.finished).max().unwrap();
        assert!(
            q.finished >= last,
            "request {} ended before its calls",
            q.item
        );
        // None of its calls ran on its thread: it was blocked in the wait.
        assert!(calls.iter().all(|c| c.thread != q.thread));
        // One call's time: its timer may fire a step of the timer clock
        // early (`timers.tick_count`), or late behind the queue.
        let ms = (q.finished - q.queued).as_ms_f64();
        assert!((95.0..115.0).contains(&ms), "request {}: {ms} ms", q.item);
    }
    let s = metrics::summarize(&r.trace);
    // The latency is the requests': a call's is its caller's.
    assert!(s.latency_ms.p50 >= 95.0, "{:?}", s.latency_ms);
    assert_eq!(s.calls_left_out, 800);
    // And `run` says so beside the figures.
    let lines = poolsim::output::summary_lines(&s, &r.outcome, &[]);
    let latency = lines.iter().find(|l| l.starts_with("latency")).unwrap();
    assert!(
        latency.contains("the 800 fan-out calls are left out"),
        "{latency}"
    );
    let mut all = r.trace.clone();
    all.call_groups.clear();
    assert!(metrics::summarize(&all).latency_ms.p50 < s.latency_ms.p50);
}

#[test]
fn a_starved_pool_runs_a_fan_out_gateway_into_the_ground() {
    // The default minimum (2): every request a thread takes blocks on
    // calls in its local queue, which other threads steal only when the
    // global queue is empty, and the requests keep it full; cooperative
    // blocking adds a thread at a time. The real program (recorded on
    // .NET 8, tests/fixtures/apps/fanout): 54.3 s, 229 threads.
    let r = gateway("net8", None, 1);
    let s = metrics::summarize(&r.trace);
    assert!(s.makespan_ms > 40_000.0, "{}", s.makespan_ms);
    assert!(s.threads_peak > 150, "{}", s.threads_peak);
    let fed = gateway("net8", Some(64), 1);
    assert!(metrics::summarize(&fed.trace).makespan_ms < 4_200.0);
}

#[test]
fn a_fan_out_run_is_the_same_run_twice() {
    let a = gateway("net8", None, 7);
    let b = gateway("net8", None, 7);
    assert_eq!(a.trace, b.trace);
    let c = gateway("coreclr3", None, 7);
    let d = gateway("coreclr3", None, 7);
    assert_eq!(c.trace, d.trace);
}
