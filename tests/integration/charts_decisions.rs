//! The pool's decisions on the charts: the gate's ticks drawn under the
//! counts chart (an injecting tick apart from one that added nothing), SVG
//! tooltips in `poolsim explain`'s words (items, thread lanes, ticks), and
//! the Chrome trace's decision and goal events, without "starting" slices
//! for idle workers that wake and find nothing.

use poolsim::engine::{self, SimOptions};
use poolsim::explain::explain;
use poolsim::policy_file::resolve_policy;
use poolsim::render::chrome::chrome_trace_json;
use poolsim::render::{ChartOptions, Timeline, render_png, render_svg};
use poolsim::time::SimTime;
use poolsim::trace::{EventLog, Trace, TraceEvent};
use serde_json::Value;

use crate::common::{poolsim, scenario};

/// A fresh directory of this file's own (the rule: `common::temp_dir`).
fn temp_dir(name: &str) -> std::path::PathBuf {
    crate::common::temp_dir(&format!("charts-decisions-{name}"))
}

/// Seed 001 (ten 4 s sleeps on 4 cores) under the classic pool, with its
/// detail events.
fn seed_001() -> (Trace, Vec<(SimTime, TraceEvent)>) {
    let s = scenario("seed-001-burst.toml");
    let policy = resolve_policy("net-classic").unwrap();
    let mut log = EventLog::default();
    let run = engine::simulate(&s, &policy, &mut log, &SimOptions::default());
    (run.trace, log.events)
}

/// explain's lines of a run: (kind, text).
fn explained(trace: &Trace, events: &[(SimTime, TraceEvent)]) -> Vec<(&'static str, String)> {
    explain(trace, events, None)
        .lines
        .into_iter()
        .map(|l| (l.kind, l.text))
        .collect()
}

/// The text of every `<title>` of an SVG, unescaped.
fn svg_titles(svg: &str) -> Vec<String> {
    svg.split("<title>")
        .skip(1)
        .filter_map(|t| t.find("</title>").map(|end| &t[..end]))
        .map(|t| {
            t.replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&apos;", "'")
                .replace("&amp;", "&")
        })
        .collect()
}

/// Decoded RGB pixels and the width of a PNG.
fn pixels(png: &[u8]) -> (Vec<u8>, usize) {
    let decoder = png::Decoder::new(png);
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    (buf, info.width as usize)
}

/// The marks of colour `rgb` exactly `height` pixels tall standing on the
/// decisions strip's baseline (a line of the grid grey across the time
/// axis), counted as groups of adjacent columns.
fn tick_marks(png: &[u8], rgb: [u8; 3], height: usize) -> usize {
    const BASELINE: [u8; 3] = [214, 214, 214];
    let (buf, w) = pixels(png);
    let h = buf.len() / 3 / w;
    let at = |x: usize, y: usize| -> [u8; 3] {
        let i = (y * w + x) * 3;
        [buf[i], buf[i + 1], buf[i + 2]]
    };
    let mut columns = Vec::new();
    for x in 0..w {
        for y in height + 1..h {
            let run = (y - height..y).all(|yy| at(x, yy) == rgb);
            let above = at(x, y - height - 1) != rgb;
            // The strip's baseline runs under the whole time axis (a
            // legend swatch's is a few pixels).
            let baseline = (x.saturating_sub(8)..(x + 8).min(w)).all(|xx| at(xx, y) == BASELINE);
            if run && above && baseline {
                columns.push(x);
                break;
            }
        }
    }
    columns.windows(2).filter(|c| c[1] > c[0] + 1).count() + usize::from(!columns.is_empty())
}

#[test]
fn the_gate_ticks_are_drawn_and_an_injecting_tick_stands_apart() {
    // Seed 001: 8 gate ticks with requests pending, every other one
    // starved and added a thread (630, 1630, 2630, 3630 ms); one
    // hill-climbing sample (4000.2 ms).
    let (trace, events) = seed_001();
    let panels = vec![(
        "net-classic".to_string(),
        Timeline::build(&trace, Some(&events)),
    )];
    let png = render_png(&panels, &ChartOptions::default()).unwrap();
    let starvation_red = [214, 39, 40];
    let no_change_grey = [140, 140, 140];
    assert_eq!(tick_marks(&png, starvation_red, 12), 4, "injecting ticks");
    assert_eq!(
        tick_marks(&png, no_change_grey, 5),
        4 + 1,
        "ticks adding nothing"
    );
    // The legend names them.
    let svg = render_svg(&panels, &ChartOptions::default()).unwrap();
    assert!(svg.contains("Pool decisions:"));
    assert!(svg.contains("starved: a thread added"));
    assert!(svg.contains("gate (monitor) tick with requests pending: no thread added"));
}

#[test]
fn svg_tooltips_tell_items_threads_and_ticks_in_explains_words() {
    let (trace, events) = seed_001();
    let lines = explained(&trace, &events);
    let panels = vec![(
        "net-classic".to_string(),
        Timeline::build(&trace, Some(&events)),
    )];
    let titles = svg_titles(&render_svg(&panels, &ChartOptions::default()).unwrap());
    // Every gate tick and the hill-climbing sample, in explain's words.
    let decisions: Vec<&String> = lines
        .iter()
        .filter(|(kind, _)| matches!(*kind, "GateTick" | "Starvation" | "Warmup"))
        .map(|(_, text)| text)
        .collect();
    assert_eq!(decisions.len(), 9);
    for text in decisions {
        assert!(
            titles.iter().any(|t| t.contains(text.as_str())),
            "no tooltip says: {text}"
        );
    }
    // A thread's lane: its id, reason and the decision that created it.
    let created_4 = lines
        .iter()
        .find(|(_, text)| text.ends_with("thread 4 created"))
        .map(|(_, text)| text.clone())
        .unwrap();
    assert!(created_4.starts_with("gate tick: last dequeue 629.8 ms ago > 500 ms"));
    assert!(
        titles.iter().any(
            |t| t.starts_with("thread 4 (starvation): created at 630 ms") && t.contains(&created_4)
        ),
        "{titles:#?}"
    );
    let created_0 = lines
        .iter()
        .find(|(_, text)| text.ends_with("thread 0 created"))
        .map(|(_, text)| text.clone())
        .unwrap();
    assert!(
        titles
            .iter()
            .any(|t| t.starts_with("thread 0 (demand)") && t.contains(&created_0))
    );
    // An item's bar: id, group, thread, queued / started / finished.
    assert!(
        titles
            .iter()
            .any(|t| t.starts_with("item #4, group sleepers, thread 4")
                && t.contains("queued 0 ms, started 630.2 ms, finished 4630.2 ms")),
        "{titles:#?}"
    );
    // The PNG has no tooltips, and an SVG without decisions is plotters' own.
    assert!(
        !render_svg(
            &[("items only".to_string(), Timeline::build(&trace, None))],
            &ChartOptions::default()
        )
        .unwrap()
        .contains("<title>thread 0 (demand)\n  why")
    );
}

/// Whether `e` is a "starting" slice.
fn starting(e: &Value) -> bool {
    e["ph"] == "X" && e["name"] == "starting"
}

#[test]
fn chrome_marks_ticks_and_goal_changes_and_no_idle_wake_as_starting() {
    let (trace, events) = seed_001();
    let lines = explained(&trace, &events);
    let json: Value = serde_json::from_str(&chrome_trace_json(&trace, Some(&events))).unwrap();
    let all = json["traceEvents"].as_array().unwrap();
    // Worker 2 (tid 3) ends its item at 4000.2 ms and is woken idle at
    // 4630.2, 5630.2, ... ms: it finds nothing, so no "starting" slice; the
    // only ones are the eight threads' start-ups, when each was created.
    let starts: Vec<(u64, f64)> = all
        .iter()
        .filter(|e| starting(e))
        .map(|e| (e["tid"].as_u64().unwrap(), e["ts"].as_f64().unwrap()))
        .collect();
    assert_eq!(starts.len(), trace.threads.len(), "{starts:?}");
    for t in &trace.threads {
        assert!(
            starts.contains(&(u64::from(t.thread) + 1, t.created.as_ms_f64() * 1000.0)),
            "{starts:?}"
        );
    }
    // The gate ticks, each with explain's sentence.
    let named = |name: &str| -> Vec<&Value> { all.iter().filter(|e| e["name"] == name).collect() };
    let added = named("gate tick: thread added");
    let nothing = named("gate tick: no change");
    assert_eq!((added.len(), nothing.len()), (4, 4));
    let texts = |kind: &str| -> Vec<String> {
        lines
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, t)| t.clone())
            .collect()
    };
    let decision = |e: &&Value| e["args"]["decision"].as_str().unwrap().to_string();
    assert_eq!(
        added.iter().map(decision).collect::<Vec<_>>(),
        texts("Starvation")
    );
    assert_eq!(
        nothing.iter().map(decision).collect::<Vec<_>>(),
        texts("GateTick")
    );
    assert!(
        added
            .iter()
            .all(|e| e["ph"] == "i" && e["cat"] == "decision")
    );
    // Every goal change with its reason and why.
    let goal = named("goal 4 -> 5 (starvation)");
    assert_eq!(goal.len(), 1);
    assert_eq!(goal[0]["ts"], 630_000.0);
    assert_eq!(
        goal[0]["args"]["why"].as_str().unwrap(),
        texts("Starvation")[0]
    );
    assert_eq!(named("goal 4 (min-threads)").len(), 1);
    assert_eq!(all.iter().filter(|e| e["cat"] == "goal").count(), 5);
    // Thread creations say why, in explain's words.
    let created: Vec<&Value> = all
        .iter()
        .filter(|e| e["cat"] == "thread" && e["args"]["thread"] == 4)
        .collect();
    assert_eq!(created.len(), 1);
    assert_eq!(
        created[0]["args"]["why"].as_str().unwrap(),
        texts("Starvation")[0]
    );
}

#[test]
fn run_chrome_has_no_starting_slice_on_an_idle_worker() {
    // What `poolsim run` writes (the trace streamed as the run goes).
    let dir = temp_dir("charts-decisions");
    let path = dir.join("seed-001.json");
    let o = poolsim(&[
        "run",
        "scenarios/seed-001-burst.toml",
        "--policy",
        "net-classic",
        "--chrome",
        path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let worker_2_starts: Vec<f64> = json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| starting(e) && e["tid"] == 3)
        .map(|e| e["ts"].as_f64().unwrap())
        .collect();
    assert_eq!(worker_2_starts, vec![0.0]);
    let ticks = json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "decision")
        .count();
    assert_eq!(ticks, 9, "8 gate ticks and a hill-climbing sample");
}
