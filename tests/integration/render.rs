//! Charts and Chrome traces: PNGs decode to the requested size, SVGs carry
//! their titles, the same run gives the same bytes, a million items render,
//! and the Chrome JSON has the phases, metadata and counters it promises.

use poolsim::engine::{self, SimOptions};
use poolsim::policy_file::resolve_policy;
use poolsim::render::chrome::chrome_trace_json;
use poolsim::render::{ChartOptions, RenderError, SegmentSource, Timeline, render_png, render_svg};
use poolsim::scenario::load::parse_scenario;
use poolsim::time::{SimDuration, SimTime};
use poolsim::trace::{
    CountSample, EventLog, ItemRecord, Phase, ProbeRecord, ThreadReason, ThreadRecord, Trace,
    TraceEvent,
};
use serde_json::Value;

const BURST: &str = r#"
name = "render test: 10 sleepers on 4 cores"
seed = 1
[machine]
cores = 4
[pool]
policy = "net-classic"
gate_phase_ms = 130
[[group]]
name = "sleepers"
count = 10
body = [ { sleep_ms = 4000 } ]
"#;

const WAITS: &str = r#"
name = "render test: 40 x Task.Delay(3000).Wait() on 8 cores"
seed = 7
[machine]
cores = 8
[pool]
policy = "net-classic"
[[group]]
name = "delay-wait"
count = 40
body = [ { cpu_ms = 20 }, { wait_ms = 3000 }, { spin_ms = 100 } ]
[[probe]]
every_ms = 500
"#;

/// Simulates `text` under the classic pool with detail events.
fn simulate(text: &str) -> (Trace, Vec<(SimTime, TraceEvent)>) {
    let scenario = parse_scenario(text, "x.toml").unwrap_or_else(|e| panic!("{e}"));
    let policy = resolve_policy("net-classic").unwrap_or_else(|e| panic!("{e}"));
    let mut log = EventLog::default();
    let run = engine::simulate(&scenario, &policy, &mut log, &SimOptions::default());
    assert!(run.outcome.is_completed(), "{:?}", run.outcome);
    (run.trace, log.events)
}

fn panel(title: &str, text: &str) -> (String, Timeline) {
    let (trace, events) = simulate(text);
    (title.to_string(), Timeline::build(&trace, Some(&events)))
}

/// (width, height) of a PNG, decoding every pixel.
fn decode_png(bytes: &[u8]) -> (u32, u32) {
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "no PNG signature");
    let decoder = png::Decoder::new(bytes);
    let mut reader = decoder.read_info().expect("PNG header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("PNG image data");
    (info.width, info.height)
}

/// `items` items round-robin over `threads` threads, back to back, each
/// 0.2–1.8 ms long (a fixed pseudo-random sequence).
fn synthetic(items: u32, threads: u32) -> Trace {
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        rng = rng
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        rng >> 33
    };
    let mut clock = vec![0u64; threads as usize];
    let recs = (0..items)
        .map(|item| {
            let thread = item % threads;
            let start = clock[thread as usize] + next() % 50_000;
            let dur = 200_000 + next() % 1_600_000;
            clock[thread as usize] = start + dur;
            ItemRecord {
                item,
                group: item % 3,
                thread,
                queued: SimTime(0),
                started: SimTime(start),
                finished: SimTime(start + dur),
            }
        })
        .collect();
    let end = SimTime(clock.iter().copied().max().unwrap_or(0));
    Trace {
        scenario: "synthetic".into(),
        policy: "measured".into(),
        seed: 0,
        cores: 8,
        groups: vec!["a".into(), "b".into(), "c".into()],
        call_groups: Vec::new(),
        items: recs,
        threads: (0..threads)
            .map(|t| ThreadRecord {
                thread: t,
                created: SimTime(0),
                reason: ThreadReason::Observed,
                exited: None,
            })
            .collect(),
        probes: vec![ProbeRecord {
            queued: SimTime(1_000_000),
            started: SimTime(4_000_000),
        }],
        counts: vec![CountSample {
            at: SimTime(0),
            threads,
            goal: None,
        }],
        cpu_busy_ns: None,
        end,
    }
}

#[test]
fn png_decodes_to_the_requested_size() {
    let panels = vec![panel("net-classic", BURST)];
    let opts = ChartOptions {
        width: 1100,
        height: Some(640),
        time_range: None,
    };
    assert_eq!(
        decode_png(&render_png(&panels, &opts).unwrap()),
        (1100, 640)
    );
    // Without a height the chart is as tall as its content.
    let (w, h) = decode_png(&render_png(&panels, &ChartOptions::default()).unwrap());
    assert_eq!(w, ChartOptions::default().width);
    assert!((250..1200).contains(&h), "height {h}");
}

#[test]
fn svg_is_an_svg_document_with_the_titles() {
    let panels = vec![panel("classic pool", BURST), panel("waits", WAITS)];
    let svg = render_svg(&panels, &ChartOptions::default()).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..60.min(svg.len())]);
    assert!(svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("classic pool"));
    assert!(svg.contains("render test: 10 sleepers on 4 cores"));
    assert!(svg.contains("policy: net-classic"));
    assert!(svg.contains("seed 7"));
    assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
}

#[test]
fn the_same_run_renders_to_the_same_bytes() {
    let opts = ChartOptions::default();
    let a = vec![panel("a", BURST), panel("b", WAITS)];
    let b = vec![panel("a", BURST), panel("b", WAITS)];
    assert_eq!(a, b);
    assert_eq!(
        render_png(&a, &opts).unwrap(),
        render_png(&b, &opts).unwrap()
    );
    assert_eq!(
        render_svg(&a, &opts).unwrap(),
        render_svg(&b, &opts).unwrap()
    );
    let (trace, events) = simulate(WAITS);
    assert_eq!(
        chrome_trace_json(&trace, Some(&events)),
        chrome_trace_json(&trace, Some(&events))
    );
}

#[test]
fn timelines_carry_phases_creations_counts_queue_and_probes() {
    let (_, t) = panel("waits", WAITS);
    assert_eq!(t.source, SegmentSource::Phases);
    assert_eq!(t.groups, ["delay-wait"]);
    let phases: Vec<Phase> = t
        .lanes
        .iter()
        .flat_map(|l| l.segments.iter().map(|s| s.phase))
        .collect();
    for p in [Phase::Cpu, Phase::Wait, Phase::Spin] {
        assert!(phases.contains(&p), "no {p:?} segment");
    }
    for lane in &t.lanes {
        for w in lane.segments.windows(2) {
            assert!(w[0].end <= w[1].start, "overlap in lane {}", lane.thread);
        }
        for s in &lane.segments {
            assert!(s.start < s.end && s.end <= t.end);
            if let Some(item) = s.item {
                assert!((item as usize) < t.items);
                assert_eq!(s.group, Some(0));
            }
        }
    }
    // The pool starves: threads beyond the 8 cores come from the gate thread.
    assert!(
        t.creations
            .iter()
            .any(|c| c.reason == ThreadReason::Starvation)
    );
    assert!(t.creations.windows(2).all(|w| w[0].at <= w[1].at));
    assert!(t.max_threads() as usize >= t.lanes.len().min(9));
    assert!(t.max_queue() > 0);
    assert!(!t.probes.is_empty());
    assert!(t.max_probe_latency().is_some());
}

#[test]
fn a_trace_without_detail_events_renders_one_bar_per_item() {
    let (trace, _) = simulate(BURST);
    let t = Timeline::build(&trace, None);
    assert_eq!(t.source, SegmentSource::Items);
    assert_eq!(t.segment_count(), trace.items.len());
    assert!(t.queue.is_empty());
    let png = render_png(&[("items only".into(), t)], &ChartOptions::default()).unwrap();
    decode_png(&png);
}

#[test]
fn a_million_items_and_many_threads_render() {
    let trace = synthetic(1_000_000, 64);
    let t = Timeline::build(&trace, None);
    assert_eq!(t.segment_count(), 1_000_000);
    let opts = ChartOptions {
        width: 1200,
        height: Some(800),
        time_range: None,
    };
    assert_eq!(
        decode_png(&render_png(&[("1M".into(), t)], &opts).unwrap()),
        (1200, 800)
    );
    // 700 threads in a 400-pixel lanes area: banded rows.
    let wide = Timeline::build(&synthetic(20_000, 700), None);
    let svg = render_svg(&[("700 threads".into(), wide)], &ChartOptions::default()).unwrap();
    assert!(svg.contains("threads") && svg.contains("per row"));
}

#[test]
fn stacked_panels_share_the_time_axis_and_can_be_zoomed() {
    let one = vec![panel("a", BURST)];
    let two = vec![panel("a", BURST), panel("b", WAITS)];
    let (_, h1) = decode_png(&render_png(&one, &ChartOptions::default()).unwrap());
    let (_, h2) = decode_png(&render_png(&two, &ChartOptions::default()).unwrap());
    assert!(h2 > h1);
    let zoom = ChartOptions {
        time_range: Some((SimTime::from_ms(500), SimTime::from_ms(1500))),
        ..ChartOptions::default()
    };
    decode_png(&render_png(&two, &zoom).unwrap());
}

/// The text of every `<text>` element of an SVG, trimmed.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}

fn window(from_ms: u64, to: SimTime) -> ChartOptions {
    ChartOptions {
        time_range: Some((SimTime::from_ms(from_ms), to)),
        ..ChartOptions::default()
    }
}

#[test]
fn a_window_clips_the_chart_and_says_it_is_a_window() {
    // Items #0-#3 sleep 0-4 s on the first four threads, #8 and #9 start
    // on two of them at 4 s.
    let panels = vec![panel("a", BURST)];
    let full = render_png(&panels, &ChartOptions::default()).unwrap();
    let part = render_png(&panels, &window(5000, SimTime::MAX)).unwrap();
    assert_ne!(full, part);
    decode_png(&part);

    let texts = svg_texts(&render_svg(&panels, &window(5000, SimTime::MAX)).unwrap());
    let header = texts
        .iter()
        .find(|t| t.contains("policy: net-classic"))
        .unwrap();
    // An open end stops at the run's end; the header names the window and
    // does not claim the run ends at its end.
    assert!(
        header.starts_with("window 5–8 s of a run whose last item ends at 8.00 s"),
        "{header}"
    );
    // Bars crossing the left edge are drawn (and labelled) from it; bars
    // before the window are not.
    assert!(texts.iter().any(|t| t == "#8"), "{texts:?}");
    assert!(!texts.iter().any(|t| t == "#0"), "{texts:?}");
    // The time axis spans the window only.
    assert!(texts.iter().any(|t| t == "5.0"), "{texts:?}");
    assert!(texts.iter().any(|t| t == "8.0"), "{texts:?}");
    assert!(!texts.iter().any(|t| t == "4.0"), "{texts:?}");
    // No thread is created in the window: no creation reasons listed.
    assert!(
        !texts.iter().any(|t| t == "Thread created by:"),
        "{texts:?}"
    );

    let whole = svg_texts(&render_svg(&panels, &ChartOptions::default()).unwrap());
    assert!(
        whole
            .iter()
            .any(|t| t.ends_with("last item ends at 8.00 s"))
    );
    assert!(!whole.iter().any(|t| t.contains("window")));
    assert!(whole.iter().any(|t| t == "#0"));

    // A short window is in ms, on the ms axis.
    let texts = svg_texts(&render_svg(&panels, &window(500, SimTime::from_ms(1500))).unwrap());
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("window 500–1500 ms of a run")),
        "{texts:?}"
    );
    assert!(texts.iter().any(|t| t == "time (ms)"), "{texts:?}");
}

#[test]
fn an_empty_or_inverted_window_is_an_error() {
    let panels = vec![panel("a", BURST)];
    for (from, to) in [(1000, 1000), (2000, 1000)] {
        let err = render_png(&panels, &window(from, SimTime::from_ms(to))).unwrap_err();
        assert!(matches!(err, RenderError::Window(_)), "{err:?}");
        assert!(err.to_string().contains("must be before its end"), "{err}");
    }
    // Starting where the run has ended leaves nothing to draw.
    let err = render_svg(&panels, &window(9000, SimTime::MAX)).unwrap_err();
    assert!(matches!(err, RenderError::Window(_)), "{err:?}");
    assert!(
        err.to_string().contains("after the end of the run"),
        "{err}"
    );
}

#[test]
fn the_legend_explains_idle_lanes_and_probe_marks() {
    let texts = svg_texts(&render_svg(&[panel("waits", WAITS)], &ChartOptions::default()).unwrap());
    for entry in [
        "idle (thread exists, no work)",
        "a responsiveness probe: the main thread queues a tiny work item here",
    ] {
        assert!(
            texts.iter().any(|t| t == entry),
            "no {entry:?} in {texts:?}"
        );
    }
    assert!(texts.iter().any(|t| t.contains("queued → started")));
    // Without probes, no probe entries.
    let texts = svg_texts(&render_svg(&[panel("a", BURST)], &ChartOptions::default()).unwrap());
    assert!(texts.iter().any(|t| t == "idle (thread exists, no work)"));
    assert!(!texts.iter().any(|t| t.contains("probe")), "{texts:?}");
}

#[test]
fn the_counts_chart_has_four_or_more_thread_ticks() {
    // The burst peaks at 8 threads: 0, 2, 4, 6, 8 on the left scale, named
    // above it; the axis name "time (s)" is its own text, under the ticks.
    let texts = svg_texts(&render_svg(&[panel("a", BURST)], &ChartOptions::default()).unwrap());
    let at = texts.iter().position(|t| t == "threads").unwrap();
    assert_eq!(texts[at - 5..at], ["0", "2", "4", "6", "8"], "{texts:?}");
    assert!(texts.iter().any(|t| t == "time (s)"));
}

#[test]
fn impossible_charts_are_errors_not_panics() {
    let opts = ChartOptions::default();
    assert!(matches!(render_png(&[], &opts), Err(RenderError::Empty)));
    let panels = vec![panel("a", BURST)];
    let narrow = ChartOptions {
        width: 10,
        ..ChartOptions::default()
    };
    assert!(matches!(
        render_png(&panels, &narrow),
        Err(RenderError::Size(_))
    ));
    let short = ChartOptions {
        height: Some(200),
        ..ChartOptions::default()
    };
    let stacked = vec![panel("a", BURST), panel("b", BURST), panel("c", BURST)];
    let err = render_svg(&stacked, &short).unwrap_err();
    assert!(err.to_string().contains("height"), "{err}");
    // An empty trace still renders.
    let mut empty = synthetic(0, 0);
    empty.counts.clear();
    empty.probes.clear();
    render_png(&[(String::new(), Timeline::build(&empty, None))], &opts).unwrap();
}

#[test]
fn chrome_json_has_phases_metadata_counters_and_instants() {
    let (trace, events) = simulate(WAITS);
    let json: Value = serde_json::from_str(&chrome_trace_json(&trace, Some(&events))).unwrap();
    assert_eq!(json["displayTimeUnit"], "ms");
    assert_eq!(json["otherData"]["seed"], 7);
    let evs = json["traceEvents"].as_array().unwrap();
    let of = |ph: &'static str| evs.iter().filter(move |e| e["ph"] == ph);
    // Metadata: the process and one named track per thread.
    assert_eq!(of("M").filter(|e| e["name"] == "process_name").count(), 1);
    for thread in &trace.threads {
        let tid = u64::from(thread.thread) + 1;
        assert!(
            of("M").any(|e| e["name"] == "thread_name"
                && e["tid"] == tid
                && e["args"]["name"]
                    .as_str()
                    .unwrap()
                    .contains(thread.reason.name())),
            "no thread_name for thread {}",
            thread.thread
        );
    }
    // Complete events: numbers in microseconds, every phase of the body.
    for e in of("X") {
        assert!(e["ts"].as_f64().unwrap() >= 0.0);
        assert!(e["dur"].as_f64().unwrap() > 0.0);
        assert_eq!(e["pid"], 1);
    }
    for cat in ["cpu", "wait", "spin"] {
        assert!(of("X").any(|e| e["cat"] == cat), "no {cat} events");
    }
    let wait = of("X").find(|e| e["cat"] == "wait").unwrap();
    assert!(wait["dur"].as_f64().unwrap() >= 3_000_000.0, "{wait}");
    assert_eq!(wait["name"], "delay-wait: wait");
    // Counters and instants.
    assert!(of("C").any(|e| e["name"] == "threads" && e["args"]["existing"].is_u64()));
    assert!(of("C").any(|e| e["name"] == "queue length" && e["args"]["queued"].is_u64()));
    assert_eq!(
        of("i").filter(|e| e["cat"] == "thread").count(),
        trace.threads.len()
    );
    assert!(of("i").any(|e| e["args"]["reason"] == "starvation"));
    assert_eq!(
        of("i").filter(|e| e["cat"] == "probe").count(),
        trace.probes.len()
    );
}

#[test]
fn chrome_json_without_events_has_one_event_per_item() {
    let (trace, _) = simulate(BURST);
    let json: Value = serde_json::from_str(&chrome_trace_json(&trace, None)).unwrap();
    let evs = json["traceEvents"].as_array().unwrap();
    let items = evs
        .iter()
        .filter(|e| e["ph"] == "X" && e["args"]["item"].is_u64())
        .count();
    assert_eq!(items, trace.items.len());
    assert!(!evs.iter().any(|e| e["name"] == "queue length"));
}

#[test]
fn odd_and_partial_traces_render_without_panicking() {
    let mut trace = synthetic(50, 4);
    // An item on a thread the thread list does not know, one never
    // finished, one never started; a thread that exited; no counts.
    trace.items[3].thread = 9;
    trace.items[5].finished = SimTime::MAX;
    trace.items[7].started = SimTime::MAX;
    trace.items[7].finished = SimTime::MAX;
    trace.threads[1].exited = Some(SimTime(1_000));
    trace.counts.clear();
    trace.probes.push(ProbeRecord {
        queued: SimTime(2_000_000),
        started: SimTime::MAX,
    });
    let t = Timeline::build(&trace, None);
    assert_eq!(t.lanes.len(), 10);
    let half = SimTime(t.end.as_nanos() / 2);
    let after = t.end + SimDuration::from_ms(1);
    for (range, ok) in [
        (None, true),
        (Some((SimTime(0), SimTime(1))), true),
        (Some((half, after)), true),
        (Some((SimTime::from_ms(5), SimTime::from_ms(1))), false),
        (Some((after, after + SimDuration::from_ms(400))), false),
    ] {
        let opts = ChartOptions {
            time_range: range,
            ..ChartOptions::default()
        };
        match render_png(&[("odd".into(), t.clone())], &opts) {
            Ok(png) if ok => _ = decode_png(&png),
            Err(RenderError::Window(_)) if !ok => {}
            other => panic!("{range:?}: {:?}", other.map(|p| p.len())),
        }
    }
    serde_json::from_str::<Value>(&chrome_trace_json(&trace, None)).unwrap();
}
