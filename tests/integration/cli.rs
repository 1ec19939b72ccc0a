//! The `poolsim` binary end to end: exit codes, error messages, JSON and
//! CSV outputs, byte-identical reruns, refused output paths.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::repo_path;

fn poolsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_poolsim"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("poolsim runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("poolsim-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn run_prints_the_item_table_and_summary() {
    let o = poolsim(&["run", "scenarios/seed-001-burst.toml"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.contains("sleepers"), "{out}");
    assert!(out.contains("makespan"), "{out}");
    assert!(out.contains("threads       peak 8   created 8"), "{out}");
}

#[test]
fn json_summary_has_the_documented_fields() {
    let o = poolsim(&["run", "scenarios/seed-001-burst.toml", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for key in [
        "scenario",
        "policy",
        "seed",
        "makespan_ms",
        "threads_peak",
        "threads_created",
        "start_delay_ms",
        "probe_latency_ms_max",
    ] {
        assert!(v.get(key).is_some(), "missing {key} in {v}");
    }
    for key in ["p50", "p95", "max"] {
        assert!(v["start_delay_ms"][key].is_number(), "{v}");
    }
    assert_eq!(v["policy"], "net-classic");
    assert_eq!(v["threads_created"], 8);
    assert_eq!(v["outcome"]["kind"], "completed");
}

#[test]
fn policy_and_seed_flags_override_the_scenario() {
    let o = poolsim(&[
        "run",
        "scenarios/seed-001-burst.toml",
        "--json",
        "--policy",
        "net5",
        "--seed",
        "9",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["seed"], 9);
    assert_eq!(v["policy"], "net-classic");
}

#[test]
fn trace_csv_is_written_and_identical_on_rerun() {
    let dir = temp_dir("trace");
    let a = dir.join("a.csv");
    let b = dir.join("b.csv");
    for path in [&a, &b] {
        let o = poolsim(&[
            "run",
            "scenarios/example-mixed.toml",
            "--trace",
            path.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let text = std::fs::read_to_string(&a).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("item,group,thread,queued_ns,started_ns,finished_ns")
    );
    assert_eq!(lines.count(), 216);
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    // Nothing but the two outputs: no temporary file left behind.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
}

#[test]
fn three_kinds_of_bad_input_give_located_errors() {
    let dir = temp_dir("bad");
    let cases = [
        (
            "typo.toml",
            "[machine]\ncors = 4\n[pool]\npolicy = \"net5\"\n[[group]]\ncount = 1\nbody = [{ sleep_ms = 1 }]\n",
            ":2:1:",
            "machine.cors",
        ),
        (
            "string.toml",
            "[machine]\ncores = \"four\"\n[pool]\npolicy = \"net5\"\n[[group]]\ncount = 1\nbody = [{ sleep_ms = 1 }]\n",
            ":2:9:",
            "machine.cores",
        ),
        (
            "zero.toml",
            "[machine]\ncores = 0\n[pool]\npolicy = \"net5\"\n[[group]]\ncount = 1\nbody = [{ sleep_ms = 1 }]\n",
            ":2:9:",
            "machine.cores",
        ),
    ];
    for (name, text, location, path) in cases {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        let o = poolsim(&["run", file.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{name}");
        let err = stderr(&o);
        assert!(err.contains(&format!("{name}{location}")), "{name}: {err}");
        assert!(err.contains(path), "{name}: {err}");
        assert!(o.stdout.is_empty(), "{name}: nothing on stdout");
    }
    let typo = stderr(&poolsim(&["run", dir.join("typo.toml").to_str().unwrap()]));
    assert!(typo.contains("cores"), "the allowed key is named: {typo}");
}

#[test]
fn unknown_policy_and_missing_file_are_input_errors() {
    let o = poolsim(&[
        "run",
        "scenarios/seed-001-burst.toml",
        "--policy",
        "net-clasic",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("net-classic"), "{}", stderr(&o));
    let o = poolsim(&["run", "scenarios/no-such-file.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no-such-file.toml"), "{}", stderr(&o));
}

#[test]
fn output_paths_that_are_inputs_or_unwritable_are_refused() {
    let dir = temp_dir("refuse");
    let scenario = dir.join("s.toml");
    std::fs::copy(repo_path("scenarios/seed-001-burst.toml"), &scenario).unwrap();
    let before = std::fs::read(&scenario).unwrap();
    let o = poolsim(&[
        "run",
        scenario.to_str().unwrap(),
        "--trace",
        scenario.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("input"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&scenario).unwrap(), before);

    let missing = dir.join("no-such-dir").join("t.csv");
    let o = poolsim(&[
        "run",
        scenario.to_str().unwrap(),
        "--trace",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
    assert!(!Path::new(&missing).exists());
}

#[test]
fn policies_lists_the_classic_pool() {
    let o = poolsim(&["policies"]);
    assert!(o.status.success());
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.contains("net-classic") && out.contains("net5"), "{out}");
}

#[test]
fn a_run_past_its_time_limit_says_so_and_exits_3() {
    let o = poolsim(&["run", "scenarios/seed-001-burst.toml", "--until-ms", "1000"]);
    assert_eq!(o.status.code(), Some(3));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.contains("INCOMPLETE"), "{out}");
}

#[test]
fn a_policy_file_beside_the_scenario_is_found_and_used() {
    let dir = temp_dir("policy-beside");
    let policy = std::fs::read_to_string(repo_path("policies/net-classic.toml"))
        .unwrap()
        .replace("name = \"net-classic\"", "name = \"my-classic\"")
        .replace(
            "aliases = [\"net5\", \"netcore3\", \"coreclr3\", \"netfx4\"]",
            "aliases = []",
        )
        .replace("period_ms = 500 ", "period_ms = 250 ");
    assert!(policy.contains("period_ms = 250"), "the edit applies");
    std::fs::write(dir.join("my.toml"), policy).unwrap();
    let scenario = std::fs::read_to_string(repo_path("scenarios/seed-001-burst.toml"))
        .unwrap()
        .replace("policy = \"net-classic\"", "policy = \"my.toml\"");
    std::fs::write(dir.join("s.toml"), scenario).unwrap();
    let o = poolsim(&["run", dir.join("s.toml").to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["policy"], "my-classic");
    // A gate thread ticking twice as often injects more threads.
    assert!(v["threads_created"].as_u64().unwrap() > 8, "{v}");
}

#[test]
fn compare_writes_identical_charts_twice_and_refuses_bad_formats() {
    let dir = temp_dir("compare");
    let a = dir.join("a.png");
    let b = dir.join("b.png");
    for path in [&a, &b] {
        let o = poolsim(&[
            "compare",
            "scenarios/seed-001-burst.toml",
            "--policy",
            "net5",
            "--policy",
            "net6",
            "--png",
            path.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("net-classic") && out.contains("net6"), "{out}");
    }
    let png = std::fs::read(&a).unwrap();
    assert!(png.starts_with(b"\x89PNG"));
    assert_eq!(png, std::fs::read(&b).unwrap());

    let bad = dir.join("chart.jpg");
    let o = poolsim(&[
        "compare",
        "scenarios/seed-001-burst.toml",
        "--policy",
        "net5",
        "--png",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains(".png"), "{}", stderr(&o));
    assert!(!bad.exists());
}

#[test]
fn run_writes_png_svg_and_chrome_together() {
    let dir = temp_dir("charts");
    let (png, svg, chrome) = (dir.join("r.png"), dir.join("r.svg"), dir.join("r.json"));
    let o = poolsim(&[
        "run",
        "scenarios/seed-001-burst.toml",
        "--png",
        png.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
        "--chrome",
        chrome.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&chrome).unwrap()).unwrap();
    assert!(v["traceEvents"].as_array().is_some_and(|a| !a.is_empty()));
}

#[test]
fn reproduce_prints_every_seed_and_refuses_an_unknown_one() {
    let o = poolsim(&["reproduce", "001"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("seed 001") && out.contains("2 passed, 0 failed"),
        "{out}"
    );
    let o = poolsim(&["reproduce", "009"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("000, 001, 002, 003, 004"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_run_past_its_event_budget_says_so_and_exits_3() {
    let o = poolsim(&["run", "scenarios/seed-001-burst.toml", "--max-events", "5"]);
    assert_eq!(o.status.code(), Some(3));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(
        out.contains("event budget") && out.contains("--max-events"),
        "{out}"
    );
}
