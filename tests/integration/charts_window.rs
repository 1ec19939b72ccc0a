//! A chart window draws only the lanes of the threads that exist in it,
//! labelled with their thread ids, in PNG and SVG, one panel or several.

use poolsim::engine::{self, SimOptions};
use poolsim::policy_file::resolve_policy;
use poolsim::render::{ChartOptions, Timeline, render_png, render_svg};
use poolsim::scenario::load::parse_scenario;
use poolsim::time::SimTime;
use poolsim::trace::{EventLog, ThreadReason, ThreadRecord, Trace};

/// A request stream that starves the classic pool: each request blocks in
/// `Task.Delay(50).Wait()`, the gate adds a thread a second, and the run
/// ends with hundreds of threads.
const STARVING: &str = r#"
name = "charts window: a starving request stream"
seed = 1
[machine]
cores = 4
[pool]
policy = "net-classic"
[[group]]
name = "requests"
count = 1500
arrival = { poisson_per_s = 200 }
body = [ { cpu_ms = 1 }, { wait_ms = 50 }, { cpu_ms = 1 } ]
"#;

fn timeline(text: &str, policy: &str) -> Timeline {
    let scenario = parse_scenario(text, "x.toml").unwrap_or_else(|e| panic!("{e}"));
    let policy = resolve_policy(policy).unwrap_or_else(|e| panic!("{e}"));
    let mut log = EventLog::default();
    let run = engine::simulate(&scenario, &policy, &mut log, &SimOptions::default());
    Timeline::build(&run.trace, Some(&log.events))
}

fn window(from_ms: u64, to_ms: u64) -> ChartOptions {
    ChartOptions {
        time_range: Some((SimTime::from_ms(from_ms), SimTime::from_ms(to_ms))),
        ..ChartOptions::default()
    }
}

/// The lane labels of an SVG chart, in drawing order: the integer texts in
/// the muted grey the labels use (axis and scale labels have other colours).
fn lane_labels(svg: &str) -> Vec<u32> {
    svg.split("<text")
        .skip(1)
        .filter(|t| t[..t.find('>').unwrap_or(0)].contains("fill=\"#646464\""))
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            body[..body.find("</text>")?].trim().parse().ok()
        })
        .collect()
}

/// The threads of `t` that exist during some part of `[from, to]` ms.
fn existing(t: &Timeline, from_ms: u64, to_ms: u64) -> Vec<u32> {
    t.lanes
        .iter()
        .filter(|l| l.created <= SimTime::from_ms(to_ms))
        .filter(|l| l.exited.is_none_or(|e| e > SimTime::from_ms(from_ms)))
        .map(|l| l.thread)
        .collect()
}

fn png_height(png: &[u8]) -> u32 {
    let decoder = png::Decoder::new(png);
    decoder.read_info().unwrap().info().height
}

#[test]
fn a_window_draws_only_the_lanes_of_the_threads_that_exist_in_it() {
    let t = timeline(STARVING, "net-classic");
    assert!(t.lanes.len() > 200, "{} threads", t.lanes.len());
    let expected = existing(&t, 0, 3000);
    assert!((4..=10).contains(&expected.len()), "{expected:?}");
    let panels = vec![("net-classic".to_string(), t.clone())];

    // Every lane drawn is labelled with its thread id: one label a lane,
    // the threads of the window and no other.
    let svg = render_svg(&panels, &window(0, 3000)).unwrap();
    assert_eq!(lane_labels(&svg), expected);
    assert!(
        svg.contains(&format!(
            "{} of {} threads exist in the window",
            expected.len(),
            t.lanes.len()
        )),
        "the title counts the lanes shown"
    );

    // The PNG sizes its lanes area to those lanes (24-pixel lanes), not to
    // every thread of the run squeezed into hairlines.
    let whole = png_height(&render_png(&panels, &ChartOptions::default()).unwrap());
    let part = png_height(&render_png(&panels, &window(0, 3000)).unwrap());
    assert!(
        part + 400 < whole,
        "window {part} px tall, whole run {whole} px"
    );

    // A later window: the threads existing by then.
    let later = existing(&t, 60_000, 61_000);
    assert!(later.len() > expected.len() && later.len() < t.lanes.len());
    let svg = render_svg(&panels, &window(60_000, 61_000)).unwrap();
    assert!(svg.contains(&format!(
        "{} of {} threads exist in the window",
        later.len(),
        t.lanes.len()
    )));
}

#[test]
fn each_compare_panel_shows_its_own_threads_in_the_window() {
    let a = timeline(STARVING, "net-classic");
    let b = timeline(STARVING, "net8");
    let expected: Vec<u32> = existing(&a, 0, 3000)
        .into_iter()
        .chain(existing(&b, 0, 3000))
        .collect();
    let panels = vec![("net-classic".to_string(), a), ("net8".to_string(), b)];
    let svg = render_svg(&panels, &window(0, 3000)).unwrap();
    assert_eq!(lane_labels(&svg), expected);
}

#[test]
fn a_thread_exists_in_a_window_it_overlaps_at_all() {
    // Thread 0 lives throughout, thread 1 exits at 1 s, thread 2 is
    // created at 5 s, thread 3 lives from 2.5 s to 2.6 s.
    let record = |thread, created, exited: Option<u64>| ThreadRecord {
        thread,
        created: SimTime::from_ms(created),
        reason: ThreadReason::Demand,
        exited: exited.map(SimTime::from_ms),
    };
    let trace = Trace {
        scenario: "lifetimes".into(),
        policy: "p".into(),
        seed: 1,
        cores: 1,
        groups: vec![],
        call_groups: Vec::new(),
        items: vec![],
        threads: vec![
            record(0, 0, None),
            record(1, 0, Some(1000)),
            record(2, 5000, None),
            record(3, 2500, Some(2600)),
        ],
        probes: vec![],
        counts: vec![],
        cpu_busy_ns: None,
        end: SimTime::from_ms(8000),
    };
    let panels = vec![("t".to_string(), Timeline::build(&trace, None))];
    let labels = |from, to| lane_labels(&render_svg(&panels, &window(from, to)).unwrap());
    assert_eq!(labels(2000, 4000), vec![0, 3]);
    assert_eq!(labels(900, 5000), vec![0, 1, 2, 3]);
    assert_eq!(labels(1000, 2400), vec![0]);
    assert_eq!(labels(2550, 2560), vec![0, 3]);
    assert_eq!(labels(6000, 7000), vec![0, 2]);
    // The whole run keeps every lane.
    let all = render_svg(&panels, &ChartOptions::default()).unwrap();
    assert_eq!(lane_labels(&all), vec![0, 1, 2, 3]);
}
