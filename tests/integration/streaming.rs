//! A run whose items are streamed (`TraceSink::KEEP_ITEMS` false, what
//! `poolsim run` does without a chart) gives the same summary, verdict,
//! per-item CSV and first items as the same run kept whole, and keeps no
//! item record.

use poolsim::engine::{self, SimOptions};
use poolsim::metrics::summarize;
use poolsim::output::items_csv;
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::Scenario;
use poolsim::stream::RunStream;
use poolsim::time::SimDuration;
use poolsim::trace::NullSink;
use poolsim::verdict::{starvation_verdict, starvation_verdict_of};

use crate::common::scenario;

fn kept_and_streamed(s: &Scenario, policy: &str, options: &SimOptions) {
    let policy = resolve_policy(policy).unwrap();
    let kept = engine::simulate(s, &policy, &mut NullSink, options);
    let groups: Vec<String> = s.groups.iter().map(|g| g.name.clone()).collect();
    let mut csv = Vec::new();
    let mut stream = RunStream::new(NullSink, 7, Some(&mut csv), groups).unwrap();
    let run = engine::simulate(s, &policy, &mut stream, options);
    assert!(run.trace.items.is_empty(), "{}: items kept", s.name);
    assert_eq!(run.outcome, kept.outcome, "{}", s.name);
    assert_eq!(run.events, kept.events, "{}", s.name);
    assert_eq!(run.trace.end, kept.trace.end, "{}", s.name);
    let streamed = stream.finish(&run.trace);
    streamed.csv.unwrap();
    let whole = summarize(&kept.trace);
    assert!(whole.items > 0, "{}: no items", s.name);
    assert_eq!(
        serde_json::to_string(&streamed.summary).unwrap(),
        serde_json::to_string(&whole).unwrap(),
        "{}",
        s.name
    );
    assert_eq!(csv, items_csv(&kept.trace).unwrap(), "{}: CSV", s.name);
    assert_eq!(
        streamed.first,
        kept.trace.items.iter().take(7).cloned().collect::<Vec<_>>()
    );
    let verdict_streamed =
        starvation_verdict_of(s, &policy, &run.trace, &streamed.summary, &streamed.running);
    assert_eq!(
        verdict_streamed,
        starvation_verdict(s, &policy, &kept.trace),
        "{}",
        s.name
    );
}

#[test]
fn streamed_items_give_the_kept_runs_figures() {
    // A starvation verdict with causes, Poisson arrivals, awaits and
    // throttles, parallel loops.
    for (name, policy) in [
        ("seed-001-burst.toml", "net-classic"),
        ("seed-001-burst.toml", "net6"),
        ("example-mixed.toml", "net-classic"),
        ("example-mixed.toml", "mono"),
    ] {
        kept_and_streamed(&scenario(name), policy, &SimOptions::default());
    }
    for name in [
        "seed-000-parallel-for.toml",
        "seed-000-plinq.toml",
        "seed-003-async-throttled.toml",
        "seed-003-sync-unthrottled.toml",
        "seed-004-test2-short-sleeps.toml",
    ] {
        let s = scenario(name);
        let policy = s.pool.policy.clone();
        kept_and_streamed(&s, &policy, &SimOptions::default());
    }
}

#[test]
fn an_incomplete_run_streams_its_unfinished_items_last() {
    // Stopped at 2.5 s: items queued and never started, others running.
    let s = scenario("seed-001-burst.toml");
    let options = SimOptions {
        until: Some(SimDuration::from_ms(2500)),
        ..SimOptions::default()
    };
    kept_and_streamed(&s, "net-classic", &options);
}

/// The chart's timeline, the Chrome trace and the counters made as the run
/// goes are those made from the whole trace and event log; the Chrome trace
/// also when its events went through the spill file.
fn detail_streamed(s: &Scenario, policy: &str, hold: usize, options: &SimOptions) {
    use poolsim::counters::{counters_csv, counters_csv_of};
    use poolsim::render::Timeline;
    use poolsim::render::chrome::chrome_trace_json;
    use poolsim::render::streamed::DetailSink;
    use poolsim::trace::EventLog;

    let policy = resolve_policy(policy).unwrap();
    let mut log = EventLog::default();
    let kept = engine::simulate(s, &policy, &mut log, options);
    let groups: Vec<String> = s.groups.iter().map(|g| g.name.clone()).collect();
    let detail =
        DetailSink::new(NullSink, true, None, true, groups.clone()).with_limits(1 << 20, hold);
    let mut stream = RunStream::new(detail, 0, None::<Vec<u8>>, groups)
        .unwrap()
        .with_counters(s.machine.cores);
    let run = engine::simulate(s, &policy, &mut stream, options);
    let streamed = stream.finish(&run.trace);
    assert_eq!(
        counters_csv_of(streamed.counters.as_deref().unwrap()),
        counters_csv(&kept.trace, Some(&log.events)),
        "{}: counters",
        s.name
    );
    let unfinished = streamed.summary.items - streamed.summary.finished;
    let mut chrome = Vec::new();
    let (timeline, _) = streamed
        .events
        .finish(
            &run.trace,
            streamed.summary.items,
            unfinished,
            Some(&mut chrome),
        )
        .unwrap();
    let whole = Timeline::build(&kept.trace, Some(&log.events));
    assert!(whole.segment_count() > 0);
    assert_eq!(timeline.as_ref(), Some(&whole), "{}: timeline", s.name);
    assert!(
        chrome == chrome_trace_json(&kept.trace, Some(&log.events)).into_bytes(),
        "{}: Chrome trace (hold {hold})",
        s.name
    );
}

#[test]
fn streamed_charts_and_chrome_traces_are_the_whole_runs() {
    for (name, policy) in [
        ("seed-001-burst.toml", "net-classic"),
        ("example-mixed.toml", "net6"),
        ("seed-000-parallel-for.toml", "net-classic"),
        ("seed-003-async-throttled.toml", "mono"),
    ] {
        detail_streamed(&scenario(name), policy, usize::MAX, &SimOptions::default());
    }
    // Spilled every few kB: the file is put back together in order.
    let s = scenario("example-mixed.toml");
    detail_streamed(&s, "net-classic", 4096, &SimOptions::default());
    // Stopped with items queued and running.
    let until = SimOptions {
        until: Some(SimDuration::from_ms(2500)),
        ..SimOptions::default()
    };
    detail_streamed(
        &scenario("seed-001-burst.toml"),
        "net-classic",
        4096,
        &until,
    );
}
