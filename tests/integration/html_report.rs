//! `run --html` and `compare --html`: one self-contained page to zoom, pan
//! and hover in a browser, offline. It holds the run's items and why each
//! thread exists in `poolsim explain`'s words, is the same bytes on a
//! rerun, and its path is checked like every other output's. (The page's
//! drawing is tested in a real browser by `scripts/browser-test.sh`.)

use std::path::{Path, PathBuf};

use crate::common::{poolsim, repo_path};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("poolsim-html-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
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
