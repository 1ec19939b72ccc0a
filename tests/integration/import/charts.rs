//! `poolsim import --png/--svg/--chrome`: a trace drawn as `run` draws a
//! simulation, from the Trace that `nettrace::replay` builds.

use std::fs;

use poolsim::nettrace::replay::imported_run;
use poolsim::render::{SegmentSource, Timeline};
use poolsim::time::SimTime;
use poolsim::trace::{GoalReason, ThreadReason, TraceEvent};

use super::super::common::poolsim;
use super::{fixture_path, temp, timeline};

#[test]
fn import_run_has_lanes_reasons_goal_and_items() {
    let t = timeline("net8-items");
    let run = imported_run(&t, "net8-items.nettrace");
    let trace = &run.trace;
    assert_eq!(trace.cores, 2);
    // Two start-up threads, then one owed to hill climbing's Warmup raise.
    let reasons: Vec<ThreadReason> = trace.threads.iter().map(|r| r.reason).collect();
    assert_eq!(
        reasons,
        vec![
            ThreadReason::Demand,
            ThreadReason::Demand,
            ThreadReason::HillClimbing
        ]
    );
    assert_eq!(run.os_threads.len(), 3);
    // The goal: the minimum (2), then 3 from the Warmup adjustment.
    let last = trace.counts.last().unwrap();
    assert_eq!((last.threads, last.goal), (3, Some(3)));
    assert_eq!(trace.counts[0].goal, Some(2));
    assert!(run.events.iter().any(|(_, e)| matches!(
        e,
        TraceEvent::GoalChanged {
            goal: 3,
            reason: GoalReason::Warmup
        }
    )));
    // Twenty items, each on one of the three lanes, about 500 ms each.
    assert_eq!(trace.items.len(), 20);
    for i in &trace.items {
        assert!(i.thread < 3, "{i:?}");
        assert!(i.queued <= i.started && i.started < i.finished, "{i:?}");
        let ms = i.finished.since(i.started).as_ms_f64();
        assert!((499.0..=560.0).contains(&ms), "{i:?}");
    }
    assert!(trace.items.windows(2).all(|w| w[0].queued <= w[1].queued));
    assert!(run.events.windows(2).all(|w| w[0].0 <= w[1].0));
    // The charts' timeline: one segment per item, the queue from the events.
    let tl = Timeline::build(trace, Some(&run.events));
    assert_eq!(tl.source, SegmentSource::Items);
    assert_eq!(tl.segment_count(), 20);
    assert!((15..=20).contains(&tl.max_queue()), "{}", tl.max_queue());
    assert_eq!(tl.queue.last().unwrap().queued, 0);
    assert_eq!(tl.max_threads(), 3);
    assert!(tl.end >= SimTime::from_ms(4_000));
}

#[test]
fn import_run_of_a_trace_without_items_shows_the_starvation_threads() {
    let t = timeline("net8-starvation");
    let run = imported_run(&t, "net8-starvation.nettrace");
    assert!(run.trace.items.is_empty());
    let starved = run
        .trace
        .threads
        .iter()
        .filter(|r| r.reason == ThreadReason::Starvation)
        .count();
    assert_eq!(starved, t.starvation_injections.len());
    assert_eq!(run.trace.threads.len() as u32, t.peak_threads);
    let goal_changes = run
        .events
        .iter()
        .filter(|(_, e)| {
            matches!(
                e,
                TraceEvent::GoalChanged {
                    reason: GoalReason::Starvation,
                    ..
                }
            )
        })
        .count();
    assert_eq!(goal_changes, t.starvation_injections.len());
}

#[test]
fn import_writes_png_svg_and_chrome() {
    let png = temp("items.png");
    let svg = temp("items.svg");
    let chrome = temp("items.json");
    let out = poolsim(&[
        "import",
        &fixture_path("net8-items"),
        "--png",
        png.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
        "--chrome",
        chrome.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("20 enqueued, 20 dequeued"), "{stdout}");
    let png_bytes = fs::read(&png).unwrap();
    assert!(png_bytes.starts_with(b"\x89PNG"));
    let svg_text = fs::read_to_string(&svg).unwrap();
    assert!(svg_text.contains("<svg"));
    assert!(
        svg_text.contains("hill-climbing"),
        "the creation reasons' legend"
    );
    let json: serde_json::Value = serde_json::from_slice(&fs::read(&chrome).unwrap()).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let count = |f: &dyn Fn(&serde_json::Value) -> bool| events.iter().filter(|e| f(e)).count();
    assert_eq!(count(&|e| e["ph"] == "X"), 20, "one slice per item");
    assert_eq!(
        count(&|e| e["name"] == "thread_name"
            && e["args"]["name"]
                .as_str()
                .unwrap_or("")
                .starts_with("worker")),
        3
    );
    assert_eq!(count(&|e| e["name"] == "goal 3 (Warmup)"), 1);
    assert_eq!(count(&|e| e["name"] == "goal 2 (Initializing)"), 1);
    let queue_max = events
        .iter()
        .filter(|e| e["name"] == "queue length")
        .filter_map(|e| e["args"]["queued"].as_u64())
        .max()
        .unwrap();
    assert!((15..=20).contains(&queue_max));
    for p in [png, svg, chrome] {
        let _ = fs::remove_file(p);
    }
}

#[test]
fn import_draws_a_trace_without_items_and_checks_extensions() {
    let png = temp("starvation.png");
    let out = poolsim(&[
        "import",
        &fixture_path("net8-starvation"),
        "--png",
        png.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(fs::read(&png).unwrap().starts_with(b"\x89PNG"));
    let _ = fs::remove_file(&png);
    let wrong = temp("chart.svg");
    let out = poolsim(&[
        "import",
        &fixture_path("net8-starvation"),
        "--png",
        wrong.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!wrong.exists());
}
