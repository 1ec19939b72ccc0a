//! `poolsim import --png/--svg/--chrome`: a trace drawn as `run` draws a
//! simulation, from the Trace that `nettrace::replay` builds: each lane what
//! its thread did as far as the trace tells, each adjustment marked with its
//! reason.

use std::fs;

use poolsim::nettrace::replay::imported_run;
use poolsim::render::{DecisionKind, SegmentSource, Timeline};
use poolsim::time::SimTime;
use poolsim::trace::{GoalReason, Phase, ThreadReason, TraceEvent};

use super::super::common::poolsim;
use super::{fixture_path, program_items, temp, timeline};

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

/// When a trace's event at `ns` is drawn.
fn at(ns: i64) -> SimTime {
    SimTime(u64::try_from(ns).unwrap())
}

#[test]
fn the_starvation_adjustments_are_marked_at_their_times_with_their_reason() {
    let t = timeline("net8-starvation");
    let run = imported_run(&t, "net8-starvation.nettrace");
    let tl = run.timeline();
    // One gate mark per Starvation injection, where the runtime logged it,
    // raised, in the starvation colour; nothing else is marked.
    assert_eq!(tl.decisions.len(), t.adjustments.len());
    let gate: Vec<_> = tl
        .decisions
        .iter()
        .filter(|d| d.kind == DecisionKind::Gate)
        .collect();
    assert_eq!(gate.len(), 5);
    assert_eq!(gate.len(), t.starvation_injections.len());
    for (d, i) in gate.iter().zip(&t.starvation_injections) {
        assert_eq!(d.at, at(i.time_ns));
        assert!(d.raised && d.starved, "{d:?}");
        assert_eq!(d.reason, Some(ThreadReason::Starvation));
        assert_eq!(d.rule, "Starvation");
        let previous = i.previous_count.unwrap();
        assert_eq!(d.goal, Some((previous, i.new_count)));
        assert!(
            d.text.contains(&format!(
                "-> Starvation: goal {previous} -> {}, thread ",
                i.new_count
            )),
            "{}",
            d.text
        );
    }
    // The goal changes carry the same line.
    assert_eq!(tl.goals.len(), 5);
    for (g, d) in tl.goals.iter().zip(&gate) {
        assert_eq!((g.at, g.reason), (d.at, "starvation"));
        assert_eq!(g.why.as_deref(), Some(d.text.as_str()));
    }
    // Each thread started for a raise says so: its lane's reason why is the
    // line of the adjustment just before its start, which names it.
    let starved: Vec<_> = tl
        .lanes
        .iter()
        .filter(|l| l.reason == ThreadReason::Starvation)
        .collect();
    assert_eq!(starved.len(), 5);
    for (lane, d) in starved.iter().zip(&gate) {
        assert!(d.at < lane.created, "{:?} {:?}", d.at, lane.created);
        assert!(
            lane.created.since(d.at) < poolsim::time::SimDuration::from_ms(10),
            "started right after"
        );
        assert_eq!(lane.why.as_deref(), Some(d.text.as_str()));
        assert!(
            d.text.contains(&format!("thread {} created", lane.thread)),
            "{}",
            d.text
        );
    }
}

#[test]
fn the_charts_draw_the_marks_and_their_lines() {
    let svg = temp("starvation-marks.svg");
    let png = temp("starvation-marks.png");
    let out = poolsim(&[
        "import",
        &fixture_path("net8-starvation"),
        "--svg",
        svg.to_str().unwrap(),
        "--png",
        png.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = fs::read_to_string(&svg).unwrap();
    // The gate row of the decisions strip, each mark's tooltip its line.
    let labels: Vec<&str> = text
        .split("<text")
        .skip(1)
        .filter_map(|t| Some(t[t.find('>')? + 1..t.find("</text>")?].trim()))
        .collect();
    assert!(labels.contains(&"gate"), "the gate row's label: {labels:?}");
    assert!(
        labels.contains(&"starved: a thread added"),
        "its legend entry"
    );
    let t = timeline("net8-starvation");
    for i in &t.starvation_injections {
        let line = format!(
            "-&gt; Starvation: goal {} -&gt; {}, thread ",
            i.previous_count.unwrap(),
            i.new_count
        );
        assert_eq!(text.matches(&line).count(), 2, "a mark and a lane: {line}");
    }
    assert!(fs::read(&png).unwrap().starts_with(b"\x89PNG"));
    for p in [svg, png] {
        let _ = fs::remove_file(p);
    }
}

/// Busy time per lane, in ms, sorted.
fn busy_ms(tl: &Timeline) -> Vec<f64> {
    let mut v: Vec<f64> = tl
        .lanes
        .iter()
        .map(|l| {
            l.segments
                .iter()
                .map(|s| s.end.since(s.start).as_ms_f64())
                .sum()
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The program's item time per thread (its own clock), in ms, sorted.
fn program_busy_ms(stem: &str) -> Vec<f64> {
    let mut by_thread: std::collections::BTreeMap<i64, f64> = Default::default();
    for i in program_items(stem) {
        *by_thread.entry(i.thread).or_default() += (i.end_ms - i.start_ms) as f64;
    }
    let mut v: Vec<f64> = by_thread.into_values().collect();
    v.sort_by(f64::total_cmp);
    v
}

#[test]
fn without_item_events_the_lanes_show_the_threads_working_from_their_waits() {
    for stem in ["net8-starvation", "net8-burst"] {
        let t = timeline(stem);
        assert!(t.items.is_empty(), "{stem}: no item events");
        let run = imported_run(&t, stem);
        let tl = run.timeline();
        assert_eq!(tl.source, SegmentSource::Phases);
        // Every lane works; none is drawn idle all along, none claims CPU.
        for lane in &tl.lanes {
            assert!(!lane.segments.is_empty(), "{stem}: lane {}", lane.thread);
            assert_eq!(lane.segments[0].start, lane.created, "busy from its start");
            for s in &lane.segments {
                assert_eq!(s.phase, Phase::Internal, "{stem}: {s:?}");
            }
        }
        // Each lane ends its busy stretch at its thread's first wait, or
        // works to the trace's end.
        for (lane, os) in tl.lanes.iter().zip(&run.os_threads) {
            let wait = t
                .activity
                .iter()
                .find(|p| p.thread_id == *os && p.waiting)
                .map(|p| at(p.time_ns));
            let end = lane.segments[0].end;
            assert_eq!(end, wait.unwrap_or(tl.end), "{stem}: thread {os}");
        }
        // The threads were busy as long as the program's items ran on them
        // (its own clock, whole ms): each a little longer (the start-up
        // before the first item, the spinning before the wait), never less.
        let lanes = busy_ms(&tl);
        let program = program_busy_ms(stem);
        assert_eq!(lanes.len(), program.len(), "{stem}");
        for (got, ran) in lanes.iter().zip(&program) {
            assert!(
                *got >= ran - 1.0 && *got <= ran + 20.0,
                "{stem}: busy {lanes:?}, items {program:?}"
            );
        }
    }
}

#[test]
fn with_item_events_the_lanes_are_the_items_and_the_adjustments_are_marked() {
    let t = timeline("net8-items");
    let run = imported_run(&t, "net8-items.nettrace");
    let tl = run.timeline();
    assert_eq!(tl.source, SegmentSource::Items);
    assert_eq!(tl.segment_count(), 20);
    assert!(
        tl.lanes
            .iter()
            .flat_map(|l| &l.segments)
            .all(|s| s.item.is_some())
    );
    // Initializing (the goal stays 2), then Warmup's raise to 3: both on
    // the climbing row, the raise in hill climbing's colour.
    let marks: Vec<_> = tl
        .decisions
        .iter()
        .map(|d| (d.kind, d.rule, d.raised, d.reason))
        .collect();
    assert_eq!(
        marks,
        vec![
            (DecisionKind::HillClimbing, "Initializing", false, None),
            (
                DecisionKind::HillClimbing,
                "Warmup",
                true,
                Some(ThreadReason::HillClimbing)
            ),
        ]
    );
    assert!(
        tl.decisions[0]
            .text
            .ends_with("-> Initializing: goal stays 2")
    );
    assert_eq!(
        tl.lanes[2].why.as_deref(),
        Some(tl.decisions[1].text.as_str())
    );
    assert!(
        tl.decisions[1]
            .text
            .contains("-> Warmup: goal 2 -> 3, thread 2 created"),
        "{}",
        tl.decisions[1].text
    );
}

#[test]
fn the_chrome_trace_gives_each_adjustment_and_started_thread_its_line() {
    let chrome = temp("starvation-lines.json");
    let out = poolsim(&[
        "import",
        &fixture_path("net8-starvation"),
        "--chrome",
        chrome.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&fs::read(&chrome).unwrap()).unwrap();
    let _ = fs::remove_file(&chrome);
    let events = json["traceEvents"].as_array().unwrap();
    let t = timeline("net8-starvation");
    let tl = imported_run(&t, "net8-starvation.nettrace").timeline();
    let goals: Vec<&serde_json::Value> = events.iter().filter(|e| e["cat"] == "goal").collect();
    assert_eq!(goals.len(), 5);
    for (e, d) in goals.iter().zip(&tl.decisions) {
        assert_eq!(e["tid"], poolsim::render::chrome::DECISIONS_TID);
        assert_eq!(e["args"]["reason"], "Starvation");
        assert_eq!(e["args"]["why"], d.text.as_str());
        assert_eq!(e["ts"].as_f64().unwrap(), d.at.as_nanos() as f64 / 1000.0);
    }
    // Each thread's creation says why, as its lane's tooltip does.
    let created: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["cat"] == "thread" && e["ph"] == "i")
        .collect();
    assert_eq!(created.len(), tl.lanes.len());
    for e in created {
        let lane = &tl.lanes[e["args"]["thread"].as_u64().unwrap() as usize];
        assert_eq!(e["args"]["why"].as_str(), lane.why.as_deref());
    }
    // What the threads did: one busy slice per lane, none called CPU.
    let slices: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(slices.len(), 7);
    assert!(slices.iter().all(|e| e["cat"] == "internal"));
}

#[test]
fn every_import_output_is_the_same_bytes_twice() {
    for stem in ["net8-starvation", "net8-items"] {
        let outputs = |tag: &str| -> Vec<Vec<u8>> {
            let paths: Vec<_> = ["png", "svg", "html", "json"]
                .iter()
                .map(|ext| temp(&format!("same-{stem}-{tag}.{ext}")))
                .collect();
            let out = poolsim(&[
                "import",
                &fixture_path(stem),
                "--png",
                paths[0].to_str().unwrap(),
                "--svg",
                paths[1].to_str().unwrap(),
                "--html",
                paths[2].to_str().unwrap(),
                "--chrome",
                paths[3].to_str().unwrap(),
            ]);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let mut bytes: Vec<Vec<u8>> = paths.iter().map(|p| fs::read(p).unwrap()).collect();
            bytes.push(out.stdout);
            for p in paths {
                let _ = fs::remove_file(p);
            }
            bytes
        };
        assert!(outputs("a") == outputs("b"), "{stem}: the outputs differ");
    }
}
