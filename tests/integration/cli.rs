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

/// A fresh directory of this file's own (the rule: `common::temp_dir`).
fn temp_dir(name: &str) -> std::path::PathBuf {
    crate::common::temp_dir(&format!("cli-{name}"))
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
    // The name the user gave, not the file's canonical one.
    assert_eq!(v["policy"], "net5");
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
        assert!(out.contains("net5") && out.contains("net6"), "{out}");
        assert!(
            !out.contains("net-classic"),
            "the name given is shown: {out}"
        );
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

#[test]
fn compare_exits_3_and_says_why_when_a_policy_does_not_complete() {
    let dir = temp_dir("compare-deadlock");
    let file = dir.join("dl.toml");
    // Four pool threads in Task.Delay(100).Wait(), max_threads 4: the
    // timers' callbacks need a fifth thread (deadlock under both names of
    // the classic pool).
    std::fs::write(
        &file,
        "[machine]\ncores = 2\n[pool]\npolicy = \"net5\"\nmax_threads = 4\n\
         [[group]]\ncount = 10\nbody = [ { wait_ms = 100 } ]\n",
    )
    .unwrap();
    let o = poolsim(&[
        "compare",
        file.to_str().unwrap(),
        "-p",
        "net5",
        "-p",
        "net-classic",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("net5: the run did not complete"), "{out}");
    assert!(out.contains("DEADLOCK"), "{out}");
    assert!(stderr(&o).contains("did not complete"), "{}", stderr(&o));
    // A completing comparison still exits 0.
    let ok = poolsim(&["compare", "scenarios/seed-001-burst.toml", "-p", "net5"]);
    assert!(ok.status.success(), "{}", stderr(&ok));
}

#[test]
fn a_closed_stdout_ends_the_run_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_poolsim"))
        .args(["run", "scenarios/seed-001-burst.toml", "--items", "100000"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is dropped: the pipe is closed, as by `| head -1`.
    let o = child.wait_with_output().unwrap();
    assert!(first.contains("item"), "{first}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_ne!(o.status.code(), Some(101), "{err}");
}

#[test]
fn long_durations_read_in_minutes_and_an_incomplete_run_claims_no_makespan() {
    let dir = temp_dir("long");
    let file = dir.join("long.toml");
    std::fs::write(
        &file,
        "[machine]\ncores = 2\n[pool]\npolicy = \"net6\"\n[[group]]\ncount = 2\nbody = [ { sleep_ms = 125300 } ]\n",
    )
    .unwrap();
    let o = poolsim(&["run", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("makespan      2 min 05."), "{out}");
    let o = poolsim(&["run", file.to_str().unwrap(), "--until-ms", "1000"]);
    assert_eq!(o.status.code(), Some(3));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("makespan      - (the run did not complete"),
        "{out}"
    );
    let o = poolsim(&[
        "run",
        file.to_str().unwrap(),
        "--until-ms",
        "1000",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["makespan_ms"].is_null(), "{v}");
    assert_eq!(v["outcome"]["kind"], "time-limit");
}

#[test]
fn items_shows_the_first_n_and_says_how_many_are_hidden() {
    let o = poolsim(&["run", "scenarios/seed-001-burst.toml", "--items", "3"]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    let rows = out.lines().filter(|l| l.contains("  sleepers  ")).count();
    assert_eq!(rows, 3, "{out}");
    assert!(out.contains("7 more items not shown (--items 10"), "{out}");
    let o = poolsim(&["run", "scenarios/seed-001-burst.toml", "--items", "0"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains("  sleepers  "), "{out}");
}

#[test]
fn run_json_has_latency_reasons_time_starved_and_the_verdict() {
    let o = poolsim(&["run", "scenarios/seed-001-burst.toml", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for key in ["p50", "p95", "p99", "max"] {
        assert!(v["latency_ms"][key].is_number(), "{v}");
    }
    assert!(v["start_delay_ms"]["p99"].is_number(), "{v}");
    assert_eq!(v["threads_created_by_reason"]["starvation"], 4);
    assert_eq!(v["threads_created_by_reason"]["demand"], 4);
    assert!(v["time_starved_ms"].as_f64().unwrap() > 3900.0, "{v}");
    assert_eq!(v["starvation"]["starved"], true);
}

#[test]
fn run_states_the_starvation_verdict_with_cause_and_fix() {
    let o = poolsim(&["run", "scenarios/seed-001-burst.toml"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("STARVATION: the starvation rule added 4 threads"),
        "{out}"
    );
    assert!(
        out.contains("likely cause: pool threads blocked in Thread.Sleep(4000)"),
        "{out}"
    );
    assert!(out.contains("fix: ThreadPool.SetMinThreads(10"), "{out}");
    assert!(out.contains("time starved"), "{out}");
}

#[test]
fn run_writes_dotnet_counters_csv() {
    let dir = temp_dir("counters");
    let path = dir.join("c.csv");
    let o = poolsim(&[
        "run",
        "scenarios/seed-001-burst.toml",
        "--counters",
        path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let csv = std::fs::read_to_string(&path).unwrap();
    assert!(csv.starts_with("Timestamp,Provider,Counter Name,Counter Type,Mean/Increment\n"));
    assert!(
        csv.contains(",System.Runtime,threadpool-queue-length,Metric,"),
        "{csv}"
    );
    let bad = poolsim(&[
        "run",
        "scenarios/seed-001-burst.toml",
        "--counters",
        "x.png",
    ]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn help_teaches_with_examples_and_exit_codes() {
    for cmd in ["run", "compare", "sweep", "explain", "new", "reproduce"] {
        let o = poolsim(&[cmd, "--help"]);
        assert!(o.status.success(), "{cmd}");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("Exit codes:"), "{cmd}: {out}");
        if cmd != "reproduce" {
            assert!(out.contains("Examples:"), "{cmd}: {out}");
        }
    }
    let o = poolsim(&["--help"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("poolsim new my.toml"), "{out}");
    let o = poolsim(&["compare", "--help"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains("two or more"), "{out}");
}

#[test]
fn new_writes_a_starter_that_runs_and_never_overwrites_unasked() {
    let dir = temp_dir("new");
    let path = dir.join("my.toml");
    let o = poolsim(&["new", path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("[[group]]") && text.contains("sleep_ms"),
        "{text}"
    );
    let run = poolsim(&["run", path.to_str().unwrap()]);
    assert!(run.status.success(), "{}", stderr(&run));
    std::fs::write(&path, "mine").unwrap();
    let again = poolsim(&["new", path.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("--force"), "{}", stderr(&again));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "mine");
    let forced = poolsim(&["new", path.to_str().unwrap(), "--force"]);
    assert!(forced.status.success());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn reproduce_says_why_a_known_miss_fails() {
    let o = poolsim(&["reproduce", "003"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("  miss "), "{out}");
    assert!(out.contains("known miss: first probe"), "{out}");
}

#[test]
fn sweep_writes_no_file_unasked_and_tabulates_the_metrics_it_was_given() {
    let dir = temp_dir("sweep-unasked");
    let scenario = repo_path("scenarios/seed-001-burst.toml");
    let o = Command::new(env!("CARGO_BIN_EXE_poolsim"))
        .args([
            "sweep",
            scenario.to_str().unwrap(),
            "--set",
            "pool.min_threads=4,10",
            "--metric",
            "threads_created_starvation",
            "--best",
            "minimize makespan_ms subject to time_starved_ms < 100",
            "-q",
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        std::fs::read_dir(&dir).unwrap().next().is_none(),
        "wrote a file: {out}"
    );
    assert!(out.contains("wrote no file"), "{out}");
    let header = out.lines().find(|l| l.starts_with("policy")).unwrap();
    for m in [
        "threads_created_starvation",
        "makespan_ms",
        "time_starved_ms",
    ] {
        assert!(header.contains(m), "{header}");
    }
    // The chart's default title is the scenario's name.
    let svg = dir.join("s.svg");
    let o = Command::new(env!("CARGO_BIN_EXE_poolsim"))
        .args([
            "sweep",
            scenario.to_str().unwrap(),
            "--set",
            "pool.min_threads=4,10",
            "-q",
            "--svg",
            svg.to_str().unwrap(),
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.contains("by pool.min_threads"), "title");
    assert!(!svg.contains("poolsim sweep of"), "title");
}

#[test]
fn a_chart_of_a_cut_run_says_where_it_stopped_and_a_window_needs_no_cut() {
    let dir = temp_dir("cut-chart");
    let cut = dir.join("cut.svg");
    let o = poolsim(&[
        "run",
        "scenarios/seed-001-burst.toml",
        "--until-ms",
        "3000",
        "--svg",
        cut.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3));
    let svg = std::fs::read_to_string(&cut).unwrap();
    assert!(
        svg.contains("run stopped at 3.00 s with 10 items unfinished"),
        "cut header"
    );
    assert!(!svg.contains("last item ends at 3.00 s"));
    // --from-ms/--to-ms chart a window of a whole run, which completes.
    let win = dir.join("win.svg");
    let o = poolsim(&[
        "run",
        "scenarios/seed-001-burst.toml",
        "--from-ms",
        "500",
        "--to-ms",
        "3000",
        "--svg",
        win.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let svg = std::fs::read_to_string(&win).unwrap();
    assert!(
        svg.contains("of a run whose last item ends at 8.00 s"),
        "window header"
    );
    let bad = poolsim(&[
        "run",
        "scenarios/seed-001-burst.toml",
        "--from-ms",
        "3000",
        "--to-ms",
        "500",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("must be below"), "{}", stderr(&bad));
}
