//! `poolsim import --html`: the trace as one self-contained page, as `run
//! --html` draws a run. Its data block holds each lane's busy stretches
//! with their phase, the adjustments with their reasons and lines, and why
//! each thread exists; its path is checked like every other output's.

use std::fs;

use poolsim::nettrace::replay::imported_run;

use super::super::common::poolsim;
use super::{fixture_path, temp, timeline};

/// The JSON of the page's data block.
fn data(html: &str) -> serde_json::Value {
    let open = "<script type=\"application/json\" id=\"poolsim-data\">";
    let start = html.find(open).expect("a data block") + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).unwrap()
}

fn import_html(stem: &str) -> serde_json::Value {
    let path = temp(&format!("{stem}.html"));
    let out = poolsim(&[
        "import",
        &fixture_path(stem),
        "--html",
        path.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = fs::read_to_string(&path).unwrap();
    let _ = fs::remove_file(&path);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(!html.contains("http://") && !html.contains("https://"));
    data(&html)
}

/// Each lane's segments: (start ns, end ns, item + 1, phase name).
fn lane_segments(
    page: &serde_json::Value,
    lane: &serde_json::Value,
) -> Vec<(i64, i64, i64, String)> {
    let phases = page["phases"].as_array().unwrap();
    let segs = lane["segs"].as_array().unwrap();
    let mut out = Vec::new();
    let mut end = 0i64;
    for c in segs.chunks(5) {
        let start = end + c[0].as_i64().unwrap();
        end = start + c[1].as_i64().unwrap();
        let phase = phases[c[4].as_u64().unwrap() as usize]["name"]
            .as_str()
            .unwrap()
            .to_string();
        out.push((start, end, c[2].as_i64().unwrap(), phase));
    }
    out
}

#[test]
fn the_page_of_a_starvation_trace_holds_its_adjustments_and_busy_lanes() {
    let page = import_html("net8-starvation");
    let p = &page["panels"][0];
    let t = timeline("net8-starvation");
    let tl = imported_run(&t, "net8-starvation.nettrace").timeline();
    // The adjustments: the gate row, raised, in the starvation colour, at
    // the runtime's times, with their lines.
    let decisions = p["decisions"].as_array().unwrap();
    assert_eq!(decisions.len(), t.starvation_injections.len());
    let starvation = page["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .position(|r| r["name"] == "starvation")
        .unwrap();
    for ((d, i), mark) in decisions
        .iter()
        .zip(&t.starvation_injections)
        .zip(&tl.decisions)
    {
        assert_eq!(d["at"].as_i64().unwrap(), i.time_ns);
        assert_eq!((d["row"].as_u64(), d["level"].as_u64()), (Some(0), Some(2)));
        assert_eq!(d["reason"].as_u64(), Some(starvation as u64));
        assert_eq!(d["rule"], "Starvation");
        assert_eq!(d["text"], mark.text.as_str());
        assert_eq!(
            d["goal"],
            serde_json::json!([i.previous_count.unwrap(), i.new_count])
        );
    }
    let goals = p["goals"].as_array().unwrap();
    assert_eq!(goals.len(), 5);
    assert!(goals.iter().all(|g| {
        g["why"]
            .as_str()
            .is_some_and(|w| w.contains("-> Starvation"))
    }));
    // The lanes: each busy from its start, as pool-internal work (no CPU
    // claimed), the threads started for a raise saying so.
    let lanes = p["lanes"].as_array().unwrap();
    assert_eq!(lanes.len(), 7);
    for (lane, drawn) in lanes.iter().zip(&tl.lanes) {
        let segs = lane_segments(&page, lane);
        assert_eq!(segs.len(), drawn.segments.len());
        assert!(!segs.is_empty());
        for (s, d) in segs.iter().zip(&drawn.segments) {
            assert_eq!(
                (s.0, s.1, s.2, s.3.as_str()),
                (
                    d.start.as_nanos() as i64,
                    d.end.as_nanos() as i64,
                    0,
                    "internal"
                )
            );
        }
        assert_eq!(lane["why"].as_str(), drawn.why.as_deref());
    }
    let starved_whys = lanes
        .iter()
        .filter(|l| l["reason"] == starvation)
        .filter(|l| l["why"].as_str().unwrap().contains("-> Starvation: goal"))
        .count();
    assert_eq!(starved_whys, 5);
    assert_eq!(p["source"], "phases");
}

#[test]
fn the_page_of_an_items_trace_holds_every_item_and_the_hill_climbing_marks() {
    let page = import_html("net8-items");
    let p = &page["panels"][0];
    assert_eq!(p["items"], 20);
    assert_eq!(p["source"], "items");
    let items: Vec<i64> = p["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|l| lane_segments(&page, l))
        .map(|s| s.2 - 1)
        .collect();
    let mut sorted = items.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..20).collect::<Vec<i64>>());
    let rules: Vec<(&str, u64, u64)> = p["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["rule"].as_str().unwrap(),
                d["row"].as_u64().unwrap(),
                d["level"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(rules, vec![("Initializing", 2, 0), ("Warmup", 2, 2)]);
}

#[test]
fn the_page_path_is_checked_as_the_other_outputs_are() {
    let wrong = temp("page.htm");
    let out = poolsim(&[
        "import",
        &fixture_path("net8-starvation"),
        "--html",
        wrong.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--html writes HTML"));
    assert!(!wrong.exists());
    // Another output refused: no page written either.
    let page = temp("not-written.html");
    let bad = temp("chart.jpg");
    let out = poolsim(&[
        "import",
        &fixture_path("net8-starvation"),
        "--html",
        page.to_str().unwrap(),
        "--png",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!page.exists() && !bad.exists());
}
