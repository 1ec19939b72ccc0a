//! `poolsim explain --html`: the page `run --html` writes for the same
//! scenario, policy, `--set` and window (the same bytes), whose decisions
//! strip and thread tooltips say what explain's lines say.

use std::path::PathBuf;

use crate::common::poolsim;

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!(
        "poolsim-explain-html-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&p);
    p
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The page `command` (`run` or `explain`) writes for `args`, and its stdout.
fn page(command: &str, args: &[&str], name: &str) -> (Vec<u8>, String) {
    let path = temp(name);
    let mut all = vec![command];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--html", path.to_str().unwrap()]);
    let o = poolsim(&all);
    assert!(o.status.success(), "{command} {args:?}: {}", stderr(&o));
    let bytes = std::fs::read(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    (bytes, String::from_utf8(o.stdout).unwrap())
}

/// The JSON of the page's data block.
fn data(html: &[u8]) -> serde_json::Value {
    let html = std::str::from_utf8(html).unwrap();
    let open = "<script type=\"application/json\" id=\"poolsim-data\">";
    let start = html.find(open).expect("a data block") + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).unwrap()
}

#[test]
fn explain_html_is_run_html() {
    for args in [
        &["scenarios/seed-001-burst.toml"][..],
        &[
            "scenarios/seed-000-task-run.toml",
            "--policy",
            "net6",
            "--set",
            "pool.min_threads=4",
        ],
        &[
            "scenarios/seed-001-burst.toml",
            "--policy",
            "net-classic",
            "--from-ms",
            "500",
            "--to-ms",
            "2500",
        ],
        &[
            "scenarios/seed-004-test1-tight-loop.toml",
            "--policy",
            "net20-sp1",
        ],
    ] {
        let (explained, text) = page("explain", args, "explain.html");
        let (run, _) = page("run", args, "run.html");
        assert!(explained == run, "{args:?}: the pages differ");
        // explain still prints its lines.
        assert!(text.contains(" ms  "), "{text}");
        assert!(explained.starts_with(b"<!DOCTYPE html>"));
    }
}

#[test]
fn the_pages_decisions_and_whys_are_explains_lines() {
    let args = ["scenarios/seed-001-burst.toml", "--policy", "net-classic"];
    let (html, _) = page("explain", &args, "lines.html");
    let o = poolsim(&["explain", args[0], "--policy", args[2], "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let lines: Vec<&str> = json["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["text"].as_str().unwrap())
        .collect();
    let v = data(&html);
    let p = &v["panels"][0];
    let decisions = p["decisions"].as_array().unwrap();
    assert!(!decisions.is_empty());
    for d in decisions {
        let text = d["text"].as_str().unwrap();
        assert!(lines.contains(&text), "not one of explain's lines: {text}");
    }
    let injections = decisions
        .iter()
        .filter(|d| d["rule"] == "Starvation")
        .count();
    assert_eq!(
        injections, 4,
        "seed 001's four injections (docs/reference.md)"
    );
    for lane in p["lanes"].as_array().unwrap() {
        if let Some(why) = lane["why"].as_str() {
            assert!(lines.contains(&why), "not one of explain's lines: {why}");
        }
    }
}

#[test]
fn the_page_path_is_checked_as_runs_is() {
    let wrong = temp("page.htm");
    let o = poolsim(&[
        "explain",
        "scenarios/seed-001-burst.toml",
        "--html",
        wrong.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--html writes HTML"), "{}", stderr(&o));
    assert!(o.stdout.is_empty(), "nothing explained before the refusal");
    assert!(!wrong.exists());
    let input = "scenarios/seed-001-burst.toml";
    let o = poolsim(&["explain", input, "--html", input]);
    assert_eq!(o.status.code(), Some(2));
}
