//! `run --html` and `compare --html`: one self-contained page to zoom, pan
//! and hover in a browser, offline. It holds the run's items and why each
//! thread exists in `poolsim explain`'s words, is the same bytes on a
//! rerun, and its path is checked like every other output's. (The page's
//! drawing is tested in a real browser by `scripts/browser-test.sh`.)

use std::path::{Path, PathBuf};

use crate::common::{poolsim, repo_path};

/// A fresh directory of this file's own (the rule: `common::temp_dir`).
fn temp_dir(name: &str) -> PathBuf {
    crate::common::temp_dir(&format!("html-{name}"))
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn run_html(path: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "run",
        "scenarios/seed-000-task-run.toml",
        "--items",
        "0",
        "--html",
        path.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = poolsim(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::read_to_string(path).unwrap()
}

/// The JSON of the page's `<script type="application/json">` block.
fn data(html: &str) -> serde_json::Value {
    let open = "<script type=\"application/json\" id=\"poolsim-data\">";
    let start = html.find(open).expect("a data block") + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).unwrap()
}

/// The values of every `attr="..."` in `html`.
fn attribute_values<'a>(html: &'a str, attr: &str) -> Vec<&'a str> {
    let needle = format!("{attr}=\"");
    html.match_indices(&needle)
        .map(|(i, _)| {
            let rest = &html[i + needle.len()..];
            &rest[..rest.find('"').unwrap_or(rest.len())]
        })
        .collect()
}

/// explain's sentence for the creation of `thread` (the line's text after
/// its time).
fn explain_line_creating(thread: u32, policy: &str) -> String {
    let o = poolsim(&[
        "explain",
        "scenarios/seed-000-task-run.toml",
        "--policy",
        policy,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    let needle = format!("thread {thread} created");
    let line = out
        .lines()
        .find(|l| l.ends_with(&needle))
        .unwrap_or_else(|| panic!("no line creates thread {thread}: {out}"));
    let text = line.trim_start();
    // "500.5 ms  gate tick: ..." -> "gate tick: ...".
    text[text.find("ms").unwrap() + 2..]
        .trim_start()
        .to_string()
}

#[test]
fn run_writes_one_self_contained_page() {
    let dir = temp_dir("self-contained");
    let html = run_html(&dir.join("report.html"), &[]);
    assert!(html.starts_with("<!DOCTYPE html>"), "{}", &html[..80]);
    assert!(html.trim_end().ends_with("</html>"));
    // Nothing from the network: no link, no script or image by address.
    for attr in ["src", "href"] {
        for v in attribute_values(&html, attr) {
            assert!(
                !v.starts_with("http:") && !v.starts_with("https:") && !v.starts_with("//"),
                "{attr}={v}"
            );
        }
    }
    assert!(!html.contains("http://") && !html.contains("https://"));
    assert!(!html.contains("<link") && !html.contains("<script src"));
    assert!(!html.contains("@import") && !html.contains("url("));
    // Its script and style are inlined, with the controls.
    assert!(html.contains("<style>") && html.contains("id=\"zoom-in\""));
    assert!(html.contains("window.poolsimError"), "the error marker");
}

#[test]
fn the_page_holds_every_item_and_why_each_thread_exists() {
    let dir = temp_dir("items");
    let v = data(&run_html(&dir.join("report.html"), &[]));
    let p = &v["panels"][0];
    assert_eq!(p["name"], "net5");
    assert_eq!(p["items"], 100);
    assert_eq!(p["resolution"], 0, "a small run is kept exactly");
    // Five numbers an item: id, queued, started, finished, thread.
    let times = p["item_times"].as_array().unwrap();
    assert_eq!(times.len(), 100 * 5);
    let bars: Vec<i64> = p["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|l| l["segs"].as_array().unwrap().chunks(5))
        .map(|c| c[2].as_i64().unwrap())
        .filter(|&i| i > 0)
        .collect();
    for item in 0..100 {
        assert!(bars.contains(&(item + 1)), "item {item} has a bar");
    }
    // Why each thread exists, in explain's words.
    let lanes = p["lanes"].as_array().unwrap();
    assert_eq!(lanes.len(), 33);
    let reasons = v["reasons"].as_array().unwrap();
    let reason = |lane: &serde_json::Value| {
        reasons[lane["reason"].as_u64().unwrap() as usize]["name"].clone()
    };
    assert_eq!(reason(&lanes[4]), "demand");
    assert_eq!(reason(&lanes[8]), "starvation");
    for thread in [4u32, 8] {
        assert_eq!(
            lanes[thread as usize]["why"].as_str().unwrap(),
            explain_line_creating(thread, "net5"),
            "thread {thread}"
        );
    }
    assert!(lanes[8]["why"].as_str().unwrap().contains("Starvation"));
    // The gate's ticks are there, in explain's words.
    let decisions = p["decisions"].as_array().unwrap();
    assert!(decisions.iter().any(|d| d["kind"] == "gate tick"
        && d["level"] == 2
        && d["text"].as_str().unwrap().contains("thread 8 created")));
    assert_eq!(
        p["headline"],
        "8 threads start at once, then 25 more one a second: starvation injection"
    );
}

#[test]
fn the_same_run_gives_the_same_bytes() {
    let dir = temp_dir("rerun");
    let a = run_html(&dir.join("a.html"), &[]);
    let b = run_html(&dir.join("b.html"), &[]);
    assert!(a == b, "two runs differ");
    let compare = |path: &Path| {
        let o = poolsim(&[
            "compare",
            "scenarios/seed-000-task-run.toml",
            "-p",
            "net5",
            "-p",
            "net6",
            "--html",
            path.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        std::fs::read(path).unwrap()
    };
    assert!(compare(&dir.join("c.html")) == compare(&dir.join("d.html")));
}

#[test]
fn compare_stacks_the_policies_on_one_time_axis() {
    let dir = temp_dir("compare");
    let path = dir.join("c.html");
    let o = poolsim(&[
        "compare",
        "scenarios/seed-000-task-run.toml",
        "-p",
        "net5",
        "-p",
        "net6",
        "--html",
        path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = data(&std::fs::read_to_string(&path).unwrap());
    let panels = v["panels"].as_array().unwrap();
    let names: Vec<&str> = panels.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["net5", "net6"]);
    // One axis: the longer run's end.
    let ends: Vec<u64> = panels.iter().map(|p| p["end"].as_u64().unwrap()).collect();
    assert_eq!(v["end"].as_u64().unwrap(), *ends.iter().max().unwrap());
    assert!(ends[0] > ends[1], "net5 takes longer: {ends:?}");
    // net6's threads come from cooperative blocking, said in explain's words.
    let lanes = panels[1]["lanes"].as_array().unwrap();
    assert!(
        lanes.iter().any(|l| l["why"].as_str().is_some_and(
            |w| w.contains("cooperative blocking") || w.contains("CooperativeBlocking")
        )),
        "{lanes:?}"
    );
}

#[test]
fn a_window_is_where_the_page_opens() {
    let dir = temp_dir("window");
    let v = data(&run_html(
        &dir.join("w.html"),
        &["--from-ms", "1000", "--to-ms", "5000"],
    ));
    assert_eq!(
        v["window"],
        serde_json::json!([1_000_000_000u64, 5_000_000_000u64])
    );
    let path = dir.join("late.html");
    let o = poolsim(&[
        "run",
        "scenarios/seed-000-task-run.toml",
        "--html",
        path.to_str().unwrap(),
        "--from-ms",
        "900000",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("after the end of the run"),
        "{}",
        stderr(&o)
    );
    assert!(!path.exists());
}

#[test]
fn bad_html_paths_are_refused_like_every_output() {
    let dir = temp_dir("refuse");
    let scenario = dir.join("s.toml");
    std::fs::copy(repo_path("scenarios/seed-000-task-run.toml"), &scenario).unwrap();
    let before = std::fs::read(&scenario).unwrap();
    // The scenario itself (named .html to pass the extension check).
    let as_html = dir.join("s.html");
    std::fs::copy(&scenario, &as_html).unwrap();
    let o = poolsim(&[
        "run",
        as_html.to_str().unwrap(),
        "--html",
        as_html.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("input"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&as_html).unwrap(), before);
    // Not an .html name.
    let o = poolsim(&[
        "run",
        scenario.to_str().unwrap(),
        "--html",
        scenario.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains(".html"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&scenario).unwrap(), before);
    // A directory that does not exist.
    let missing = dir.join("no-such-dir").join("r.html");
    for cmd in [
        vec!["run", scenario.to_str().unwrap()],
        vec!["compare", scenario.to_str().unwrap(), "-p", "net5"],
    ] {
        let mut args = cmd.clone();
        args.extend(["--html", missing.to_str().unwrap()]);
        let o = poolsim(&args);
        assert_eq!(o.status.code(), Some(2), "{cmd:?}");
        assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
        assert!(!missing.exists());
    }
    // The same file as another output of the run.
    let both = dir.join("r.html");
    let o = poolsim(&[
        "run",
        scenario.to_str().unwrap(),
        "--html",
        both.to_str().unwrap(),
        "--trace",
        both.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("same file"), "{}", stderr(&o));
    assert!(!both.exists());
}

/// `run --runs 50 --html` of a scenario with three outcomes (one core:
/// the gate's phase decides when the second and third threads come).
const OUTCOMES_SCENARIO: &str = "scenarios/validation/one-core.toml";

/// The page and the `--json` summary of `args` (a `run` or `compare`
/// with `--runs`), written to `path`.
fn runs_page(args: &[&str], path: &Path) -> (String, serde_json::Value) {
    let mut all = args.to_vec();
    all.extend(["--json", "--html", path.to_str().unwrap()]);
    let o = poolsim(&all);
    assert!(o.status.success(), "{}", stderr(&o));
    let json = serde_json::from_slice(&o.stdout).unwrap();
    (std::fs::read_to_string(path).unwrap(), json)
}

/// The run a choice of a picker draws: its own, or the page's panel.
fn choice_panel<'a>(
    v: &'a serde_json::Value,
    panel: usize,
    choice: &'a serde_json::Value,
) -> &'a serde_json::Value {
    if choice["panel"].is_null() {
        &v["panels"][panel]
    } else {
        &choice["panel"]
    }
}

/// `run SCENARIO --seed K --workload-seed S --json`: the run `--runs`
/// made of seed K (and that `poolsim explain --seed K --workload-seed S`
/// narrates): its makespan and peak.
fn seed_run(scenario: &str, policy: &str, seed: u64, workload: u64) -> (f64, u64) {
    let o = poolsim(&[
        "run",
        scenario,
        "--policy",
        policy,
        "--seed",
        &seed.to_string(),
        "--workload-seed",
        &workload.to_string(),
        "--items",
        "0",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    (
        v["makespan_ms"].as_f64().unwrap(),
        v["threads_peak"].as_u64().unwrap(),
    )
}

#[test]
fn runs_page_holds_a_run_of_each_outcome_and_the_picker() {
    let dir = temp_dir("runs");
    let path = dir.join("runs.html");
    let args = ["run", OUTCOMES_SCENARIO, "--runs", "50", "--items", "0"];
    let (html, summary) = runs_page(&args, &path);
    let v = data(&html);
    // The spread as the command line reports it.
    let outcomes = summary["outcomes"].as_array().unwrap();
    assert!(outcomes.len() > 1, "the scenario has several outcomes");
    let first_seed = summary["first_seed"].as_u64().unwrap();
    let first_outcome = summary["first_seed_outcome"].as_u64().unwrap() as usize;

    let pickers = v["outcomes"].as_array().unwrap();
    assert_eq!(pickers.len(), 1, "one panel, one picker");
    let picker = &pickers[0];
    assert_eq!(picker["runs"], 50);
    assert_eq!(picker["first_seed"], first_seed);
    assert_eq!(picker["outcomes"], outcomes.len());
    assert_eq!(picker["left_out"]["outcomes"], 0);
    let choices = picker["choices"].as_array().unwrap();
    // One run per outcome, in the command line's order, with its figures.
    assert_eq!(choices.len(), outcomes.len());
    for (k, (c, o)) in choices.iter().zip(outcomes).enumerate() {
        assert_eq!(c["outcome"], k + 1);
        for key in ["share", "count", "makespan_ms", "threads_peak", "seed"] {
            assert_eq!(c[key], o[key], "outcome {}: {key}", k + 1);
        }
    }
    let shares: f64 = choices.iter().map(|c| c["share"].as_f64().unwrap()).sum();
    assert!((shares - 1.0).abs() < 1e-9, "the shares sum to {shares}");
    // The first seed's outcome is the one drawn when the page opens: the
    // page's panel, which no choice repeats.
    let selected = picker["selected"].as_u64().unwrap() as usize;
    assert_eq!(selected, first_outcome, "the first seed's outcome");
    assert_eq!(choices[selected]["seed"], first_seed);
    assert_eq!(choices[selected]["first"], true);
    assert_eq!(v["panels"].as_array().unwrap().len(), 1);
    assert_eq!(v["panels"][0]["seed"], first_seed);
    for (i, c) in choices.iter().enumerate() {
        assert_eq!(c["panel"].is_null(), i == selected, "choice {i}");
    }
    // Each run is its seed's, on the first seed's workload: `run --seed K
    // --workload-seed S` gives it again, within its outcome.
    let policy = v["panels"][0]["policy"].as_str().unwrap().to_string();
    let mut seeds = Vec::new();
    for c in choices {
        let p = choice_panel(&v, 0, c);
        let seed = c["seed"].as_u64().unwrap();
        seeds.push(seed);
        assert_eq!(p["seed"], seed);
        assert_eq!(p["max_threads"], c["threads_peak"]);
        assert!(
            p["name"]
                .as_str()
                .unwrap()
                .contains(&format!("seed {seed}: outcome {} of", c["outcome"])),
            "{}",
            p["name"]
        );
        let (makespan, peak) = seed_run(OUTCOMES_SCENARIO, &policy, seed, first_seed);
        let outcome_ms = c["makespan_ms"].as_f64().unwrap();
        assert_eq!(peak, c["threads_peak"].as_u64().unwrap(), "seed {seed}");
        assert!(
            (makespan - outcome_ms).abs() <= poolsim::spread::SAME_OUTCOME * outcome_ms,
            "seed {seed}: {makespan} ms, its outcome {outcome_ms} ms"
        );
        assert_eq!(c["run_makespan_ms"].as_f64(), Some(makespan), "seed {seed}");
    }
    seeds.sort_unstable();
    seeds.dedup();
    assert_eq!(seeds.len(), choices.len(), "a seed per outcome");
    // One time axis: the latest run's end.
    let ends: Vec<u64> = choices
        .iter()
        .map(|c| choice_panel(&v, 0, c)["end"].as_u64().unwrap())
        .collect();
    assert_eq!(v["end"].as_u64(), ends.iter().max().copied());
    // The picker: a radio button per outcome, the first seed's checked,
    // each saying its share and figures; the hint names the workload.
    let radios = html
        .matches("<input type=\"radio\" name=\"outcome-0\"")
        .count();
    assert_eq!(radios, choices.len());
    assert_eq!(html.matches(" checked>").count(), 1);
    assert!(html.contains(&format!(
        "value=\"{selected}\" data-outcome=\"{}\" autocomplete=\"off\" checked>",
        first_outcome + 1
    )));
    for c in choices {
        let label = c["label"].as_str().unwrap();
        assert!(html.contains(label), "{label}");
        assert!(label.starts_with(&format!(
            "outcome {} of {} · ",
            c["outcome"],
            outcomes.len()
        )));
        assert!(label.contains(" of 50 runs · "), "{label}");
    }
    assert!(html.contains(&format!("--workload-seed {first_seed}")));
    assert!(html.contains("PoolsimReport") && html.contains("fieldset.outcomes"));
    // The same command gives the same bytes.
    let again = runs_page(&args, &dir.join("again.html")).0;
    assert!(html == again, "two --runs pages differ");
}

#[test]
fn runs_page_draws_at_most_eight_outcomes_and_says_what_it_left_out() {
    let dir = temp_dir("runs-many");
    // From seed 11, delay-wait-burst has 11 outcomes; seed 11's own is
    // the tenth.
    let args = [
        "run",
        "scenarios/validation/delay-wait-burst.toml",
        "--seed",
        "11",
        "--runs",
        "50",
        "--items",
        "0",
    ];
    let (html, summary) = runs_page(&args, &dir.join("many.html"));
    let v = data(&html);
    let outcomes = summary["outcomes"].as_array().unwrap();
    assert!(outcomes.len() > 8, "{} outcomes", outcomes.len());
    let picker = &v["outcomes"][0];
    let choices = picker["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 8);
    // The first seed's outcome is among them, drawn at load.
    let selected = &choices[picker["selected"].as_u64().unwrap() as usize];
    assert_eq!(selected["seed"], 11);
    let drawn: Vec<u64> = choices
        .iter()
        .map(|c| c["outcome"].as_u64().unwrap())
        .collect();
    let first = selected["outcome"].as_u64().unwrap();
    assert!(first > 8, "seed 11 is outcome {first}");
    assert_eq!(drawn[..7], [1, 2, 3, 4, 5, 6, 7]);
    // The rest are counted, and the page says so.
    let left: Vec<&serde_json::Value> = outcomes
        .iter()
        .enumerate()
        .filter(|(k, _)| !drawn.contains(&(*k as u64 + 1)))
        .map(|(_, o)| o)
        .collect();
    let left_runs: u64 = left.iter().map(|o| o["count"].as_u64().unwrap()).sum();
    assert_eq!(picker["left_out"]["outcomes"], left.len());
    assert_eq!(picker["left_out"]["runs"], left_runs);
    assert!(
        html.contains(&format!(
            "{} less common outcomes ({left_runs} runs) are left out of this page.",
            left.len()
        )),
        "the page says what it left out"
    );
}

#[test]
fn compare_runs_page_has_a_picker_per_policy() {
    let dir = temp_dir("compare-runs");
    let args = [
        "compare",
        OUTCOMES_SCENARIO,
        "-p",
        "net-classic",
        "-p",
        "net8",
        "--runs",
        "20",
    ];
    let (html, summary) = runs_page(&args, &dir.join("c.html"));
    let v = data(&html);
    let pickers = v["outcomes"].as_array().unwrap();
    assert_eq!(pickers.len(), 2);
    assert_eq!(v["panels"].as_array().unwrap().len(), 2);
    for (i, (picker, s)) in pickers.iter().zip(summary.as_array().unwrap()).enumerate() {
        assert_eq!(picker["name"], s["policy"]);
        let outcomes = s["outcomes"].as_array().unwrap();
        let choices = picker["choices"].as_array().unwrap();
        assert_eq!(choices.len(), outcomes.len(), "{}", picker["name"]);
        for (c, o) in choices.iter().zip(outcomes) {
            assert_eq!(c["seed"], o["seed"]);
            assert_eq!(c["share"], o["share"]);
            let p = choice_panel(&v, i, c);
            assert_eq!(p["policy"], s["policy"]);
            assert_eq!(p["seed"], o["seed"]);
            assert_eq!(p["max_threads"], o["threads_peak"]);
        }
        let selected = &choices[picker["selected"].as_u64().unwrap() as usize];
        assert_eq!(selected["seed"], v["panels"][i]["seed"]);
        assert_eq!(selected["first"], true);
        assert_eq!(
            html.matches(&format!("name=\"outcome-{i}\"")).count(),
            choices.len()
        );
    }
    assert!(pickers[0]["choices"].as_array().unwrap().len() > 1);
}

#[test]
fn a_page_without_runs_has_no_picker() {
    let dir = temp_dir("no-runs");
    let html = run_html(&dir.join("one.html"), &[]);
    assert!(data(&html).get("outcomes").is_none());
    assert!(!html.contains("id=\"outcomes\"") && !html.contains("fieldset.outcomes"));
}
