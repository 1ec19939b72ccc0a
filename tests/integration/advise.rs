//! `poolsim advise`: a setting to paste with its odds, the same as the
//! verdict's search finds, and a distinct exit code for each kind of
//! evidence it cannot advise on.

use std::fs;

use super::common::{poolsim, temp_dir};

const SERVICE: &str = "name = \"service\"\n[machine]\ncores = 4\n[pool]\npolicy = \"net8\"\n\
    [[group]]\nname = \"requests\"\ncount = 1500\narrival = { poisson_per_s = 200 }\n\
    body = [ { cpu_ms = 1 }, { wait_ms = 50 }, { cpu_ms = 1 } ]\n";

fn service(dir: &std::path::Path) -> String {
    let path = dir.join("service.toml");
    fs::write(&path, SERVICE).unwrap();
    path.display().to_string()
}

#[test]
fn a_starving_service_gets_a_min_threads_to_paste_with_its_odds() {
    let dir = temp_dir("advise-service");
    let file = service(&dir);
    let out = poolsim(&["advise", &file, "--runs", "6", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let advice = &v["advice"];
    assert_eq!(advice["as_is_meets"], false);
    let i = advice["recommended"].as_u64().expect("a recommendation") as usize;
    let r = &advice["remedies"][i];
    assert_eq!(r["kind"], "min-threads");
    let n = r["trial"]["value"].as_u64().unwrap();
    assert_eq!(r["trial"]["met"], 6, "every run of 6 meets it");
    assert!(r["below"]["met"].as_u64().unwrap() < 6, "one less does not");
    assert_eq!(r["below"]["value"].as_u64().unwrap() + 1, n);
    // The paste names the value in each form, the variable in hexadecimal.
    let paste = r["paste"].to_string();
    assert!(
        paste.contains(&format!(
            "\\\"System.Threading.ThreadPool.MinThreads\\\": {n}"
        )),
        "{paste}"
    );
    assert!(
        paste.contains(&format!("DOTNET_ThreadPool_ForceMinWorkerThreads=0x{n:X}")),
        "{paste}"
    );
    // The same question, the same answer, the same bytes.
    let again = poolsim(&["advise", &file, "--runs", "6", "--json"]);
    assert_eq!(out.stdout, again.stdout);
    // Applying the advice: the run is no longer starved.
    let applied = poolsim(&[
        "run",
        &file,
        "--set",
        &format!("pool.min_threads={n}"),
        "--items",
        "0",
    ]);
    let text = String::from_utf8_lossy(&applied.stdout);
    assert!(!text.contains("STARVATION"), "{text}");
}

#[test]
fn a_goal_no_remedy_meets_exits_4_without_a_recommendation() {
    let dir = temp_dir("advise-goal");
    let file = service(&dir);
    let out = poolsim(&[
        "advise",
        &file,
        "--runs",
        "2",
        "--goal",
        "latency_p99_ms < 1",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{text}");
    assert!(text.contains("no recommendation"), "{text}");
    assert!(!text.contains("paste one of"), "{text}");
}

#[test]
fn a_workload_that_deadlocks_exits_3() {
    let dir = temp_dir("advise-deadlock");
    let file = service(&dir);
    // Mono's pool tops out at its maximum with every thread waiting on a
    // timer callback queued behind the requests.
    let out = poolsim(&["advise", &file, "--runtime", "mono", "--runs", "2"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("deadlocks") && err.contains("--policy mono"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn traces_it_cannot_advise_on_get_their_own_exit_codes() {
    let dir = temp_dir("advise-traces");
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nettrace");
    // A trace with no pool work at all: nothing to advise on.
    let empty = dir.join("empty.nettrace");
    let mut w =
        poolsim::nettrace::synth::TraceWriter::new(Vec::new(), 0, 1_000_000_000, 8).unwrap();
    w.metadata(&poolsim::nettrace::synth::standard_metadata())
        .unwrap();
    fs::write(&empty, w.finish().unwrap()).unwrap();
    let out = poolsim(&["advise", empty.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(err.contains("no thread-pool work"), "{err}");
    // The runtime's events alone (no items): the draft is inferred from the
    // workers' busy stretches and checked against the recording; the replay
    // matches, but advice on inferred items stays unconfirmed.
    let out = poolsim(&[
        "advise",
        fixtures.join("net8-burst.nettrace").to_str().unwrap(),
        "--runs",
        "4",
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["replay_check"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["ok"] == true),
        "{}",
        v["replay_check"]
    );
    assert_eq!(v["draft"], "inferred");
    assert_eq!(v["confirmed"], false);
    // A truncated trace is bad input.
    let bytes = fs::read(fixtures.join("net8-items.nettrace")).unwrap();
    let cut = dir.join("cut.nettrace");
    fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let out = poolsim(&["advise", cut.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("truncated") && !err.contains("panicked"),
        "{err}"
    );
    // A bad goal is bad input, named as --goal.
    let out = poolsim(&[
        "advise",
        fixtures.join("net8-items.nettrace").to_str().unwrap(),
        "--goal",
        "p99 < 3",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--goal"), "{err}");
}

#[test]
fn a_trace_with_items_is_replayed_and_checked_before_the_advice() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nettrace");
    let out = poolsim(&[
        "advise",
        fixtures.join("net8-items.nettrace").to_str().unwrap(),
        "--runs",
        "4",
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let checks = v["replay_check"].as_array().unwrap();
    let peak = checks.iter().find(|c| c["what"] == "peak threads").unwrap();
    // The recording's peak (3, its .txt's peak_thread_count) and the replay's.
    assert_eq!(peak["recorded"], 3.0);
    assert_eq!(peak["ok"], true);
    assert_eq!(v["confirmed"], true);
    // 20 sleepers of 500 ms: every item at once needs 20 threads.
    let advice = &v["advice"];
    let i = advice["recommended"].as_u64().unwrap() as usize;
    assert_eq!(advice["remedies"][i]["trial"]["value"], 20);
}

/// A file given to the wrong kind of command says which commands read it:
/// a trace to `run` (not "save it as UTF-8"), a scenario to `import`.
#[test]
fn a_trace_and_a_scenario_handed_to_the_other_command_say_where_they_go() {
    let trace = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/nettrace/net8-items.nettrace");
    let out = poolsim(&["run", trace.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("this is a .nettrace trace"), "{err}");
    assert!(err.contains("poolsim advise FILE"), "{err}");
    assert!(!err.contains("UTF-8"), "{err}");
    let scenario =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/example-mixed.toml");
    let out = poolsim(&["import", scenario.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("it starts with text"), "{err}");
    assert!(err.contains("poolsim run FILE"), "{err}");
}
