//! A chart's title says what happened: under the panel's name (policy,
//! seed), a headline read from the run's facts, in `run`, `compare` and
//! `import` charts alike; the same run under another name gets the same
//! headline.

use poolsim::engine::{self, SimOptions};
use poolsim::policy_file::resolve_policy;
use poolsim::render::{Timeline, headline};
use poolsim::scenario::load::parse_scenario;
use poolsim::trace::EventLog;

use crate::common::poolsim;

/// A fresh directory of this file's own (the rule: `common::temp_dir`).
fn temp_dir(name: &str) -> std::path::PathBuf {
    crate::common::temp_dir(&format!("charts-headline-{name}"))
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

fn headline_of(text: &str, policy: &str) -> Option<String> {
    let scenario = parse_scenario(text, "x.toml").unwrap_or_else(|e| panic!("{e}"));
    let policy = resolve_policy(policy).unwrap_or_else(|e| panic!("{e}"));
    let mut log = EventLog::default();
    let run = engine::simulate(&scenario, &policy, &mut log, &SimOptions::default());
    headline(&Timeline::build(&run.trace, Some(&log.events)))
}

#[test]
fn a_run_chart_says_what_happened_under_its_name() {
    let dir = temp_dir("headline-run");
    let svg = dir.join("seed-001.svg");
    let o = poolsim(&[
        "run",
        "scenarios/seed-001-burst.toml",
        "--policy",
        "net-classic",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let texts = svg_texts(&std::fs::read_to_string(&svg).unwrap());
    assert_eq!(texts[0], "net-classic");
    assert_eq!(
        texts[1],
        "4 threads start at once, then 4 more one a second: starvation injection"
    );
    assert!(texts[2].contains("scenario: seed 001") && texts[2].contains("seed 1"));
}

#[test]
fn each_compare_panel_has_its_headline() {
    let dir = temp_dir("headline-compare");
    let svg = dir.join("seed-000.svg");
    let o = poolsim(&[
        "compare",
        "scenarios/seed-000-task-run.toml",
        "--policy",
        "net5",
        "--policy",
        "net6",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let texts = svg_texts(&std::fs::read_to_string(&svg).unwrap());
    let after = |name: &str| -> &str {
        let i = texts.iter().position(|t| t == name).unwrap();
        texts[i + 1].as_str()
    };
    assert_eq!(
        after("net5"),
        "8 threads start at once, then 25 more one a second: starvation injection"
    );
    let net6 = after("net6");
    assert!(
        net6.starts_with("8 threads start at once, then ")
            && net6.ends_with(": cooperative blocking raised the goal"),
        "{net6}"
    );
}

#[test]
fn an_imported_trace_chart_has_its_headline() {
    let dir = temp_dir("headline-import");
    let svg = dir.join("net8.svg");
    let o = poolsim(&[
        "import",
        "tests/fixtures/nettrace/net8-items.nettrace",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let texts = svg_texts(&std::fs::read_to_string(&svg).unwrap());
    assert_eq!(texts[0], "recorded");
    assert_eq!(
        texts[1],
        "2 threads start at once, then 1 more at 2.55 s: hill climbing raised the goal"
    );
}

/// Ten blocking items on four cores; `NAME`, `GROUP` and `MIN` filled in.
const SLEEPERS: &str = r#"
name = "NAME"
seed = 1
[machine]
cores = 4
[pool]
policy = "net-classic"
gate_phase_ms = 130
MIN
[[group]]
name = "GROUP"
count = 10
body = [ { sleep_ms = 4000 } ]
"#;

fn sleepers(name: &str, group: &str, min: &str) -> String {
    SLEEPERS
        .replace("NAME", name)
        .replace("GROUP", group)
        .replace("MIN", min)
}

#[test]
fn the_headline_comes_from_the_run_not_the_scenario() {
    let starved = headline_of(&sleepers("a burst", "sleepers", ""), "net-classic").unwrap();
    assert_eq!(
        starved,
        "4 threads start at once, then 4 more one a second: starvation injection"
    );
    // Another name and group, the same run: the same words.
    assert_eq!(
        headline_of(&sleepers("x", "y", ""), "net-classic").unwrap(),
        starved
    );
    // A name that promises starvation does not make it: with min threads
    // at 10 and 100 ms sleeps every thread comes within the goal.
    let short = sleepers(
        "starvation: one thread a second",
        "starved",
        "min_threads = 10",
    )
    .replace("sleep_ms = 4000", "sleep_ms = 100");
    assert_eq!(
        headline_of(&short, "net-classic").unwrap(),
        "10 threads start at once: all within the goal, on demand"
    );
    // Mono's monitor adds one every 500 ms.
    assert_eq!(
        headline_of(&sleepers("a burst", "sleepers", ""), "mono").unwrap(),
        "4 threads start at once, then 7 more one every 500 ms: starvation injection"
    );
}
