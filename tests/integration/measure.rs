//! The measurement side that needs no runtime: plans, arrival instants,
//! and the clear errors of `measure` / `validate`.

use std::process::Command;

use poolsim::scenario::arrivals;

use crate::common::{repo_path, run, scenario};

fn poolsim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_poolsim"))
}

#[test]
fn real_runs_submit_at_the_instants_the_engine_uses() {
    // Poisson and spaced arrivals: the plan's offsets are the engine's queue times.
    for name in [
        "validation/poisson-arrivals.toml",
        "validation/staggered-arrivals.toml",
    ] {
        let s = scenario(name);
        let sim = run(&s);
        let start = arrivals::start(&s, 0).unwrap();
        let offsets = arrivals::offsets(&s, 0);
        let queued: Vec<u64> = sim.trace.items.iter().map(|i| i.queued.0).collect();
        let planned: Vec<u64> = offsets.iter().map(|o| start.0 + o.0).collect();
        assert_eq!(queued, planned, "{name}");
    }
}

#[test]
fn a_missing_runtime_names_the_command_that_installs_it() {
    let out = poolsim()
        .args([
            "measure",
            "scenarios/validation/sleep-burst.toml",
            "--runtime",
            "coreclr3",
        ])
        .current_dir(repo_path(""))
        .env("POOLSIM_RUNTIMES", "/nonexistent/poolsim-runtimes")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("coreclr3 is not installed")
            && err.contains("scripts/install-runtimes.sh coreclr3"),
        "{err}"
    );
}

#[test]
fn a_scenario_a_runtime_cannot_express_is_refused_before_running() {
    let out = poolsim()
        .args([
            "measure",
            "scenarios/seed-002-overhead.toml",
            "--runtime",
            "net8",
        ])
        .current_dir(repo_path(""))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Parallel.ForEachAsync"), "{err}");
    // Eight cores on a host with fewer: only .NET 8 can pretend.
    if poolsim::measure::clr::host_cpus() < 8 {
        let out = poolsim()
            .args([
                "measure",
                "scenarios/seed-000-task-run.toml",
                "--runtime",
                "coreclr3",
            ])
            .current_dir(repo_path(""))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("8 cores") && err.contains("DOTNET_PROCESSOR_COUNT"),
            "{err}"
        );
    }
}

#[test]
fn an_unknown_runtime_lists_the_runtimes() {
    let out = poolsim()
        .args([
            "validate",
            "scenarios/validation/sleep-burst.toml",
            "--runtime",
            "java",
        ])
        .current_dir(repo_path(""))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown runtime `java`") && err.contains("coreclr3"),
        "{err}"
    );
}

#[test]
fn validate_against_recordings_prints_the_error_table_and_exit_status() {
    // net8 on the sleep burst passes every check (tests/fixtures/...).
    let out = poolsim()
        .args([
            "validate",
            "scenarios/validation/sleep-burst.toml",
            "--runtime",
            "net8",
            "--fixtures",
            "tests/fixtures/validation/sleep-burst",
        ])
        .current_dir(repo_path(""))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    for needle in [
        "makespan error",
        "start error mean",
        "end error mean",
        "peak threads error",
        "threads curve distance",
        "PASS",
    ] {
        assert!(text.contains(needle), "missing {needle}: {text}");
    }
    assert_eq!(
        text.lines().filter(|l| l.starts_with("   ")).count(),
        3,
        "{text}"
    );
    // A listed miss exits 1 and says which check failed.
    let out = poolsim()
        .args([
            "validate",
            "scenarios/validation/cpu-probe.toml",
            "--runtime",
            "coreclr3",
            "--fixtures",
            "tests/fixtures/validation/cpu-probe",
            "--json",
        ])
        .current_dir(repo_path(""))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["pass"], false);
    assert_eq!(v["repetitions"].as_array().unwrap().len(), 3);
    let failed: Vec<&str> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["pass"] == false)
        .map(|c| c["metric"].as_str().unwrap())
        .collect();
    assert!(failed.contains(&"makespan error"), "{failed:?}");
}

#[test]
fn measure_on_the_native_pool_writes_the_trace_and_fixture() {
    // Real threads, a fraction of a second: 4 x sleep 150 ms on 1 core under
    // the dedicated-threads policy (all start at once).
    let dir = std::env::temp_dir().join(format!("poolsim-measure-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = dir.join("s.toml");
    std::fs::write(
        &scenario,
        "[machine]\ncores = 1\n[pool]\npolicy = \"dedicated-threads\"\n[[group]]\nname = \"g\"\ncount = 4\nbody = [ { sleep_ms = 150 } ]\n",
    )
    .unwrap();
    let csv = dir.join("t.csv");
    let out = poolsim()
        .arg("measure")
        .arg(&scenario)
        .args(["--runtime", "native", "--repeat", "2", "--trace"])
        .arg(&csv)
        .arg("--out-dir")
        .arg(dir.join("runs"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("runtime native"), "{text}");
    for k in [1, 2] {
        let rows = std::fs::read_to_string(dir.join(format!("t-{k}.csv"))).unwrap();
        assert_eq!(rows.lines().count(), 5, "{rows}");
        let fixture = std::fs::read_to_string(dir.join(format!("runs/native-{k}.txt"))).unwrap();
        assert!(
            fixture.contains("# machine:") && fixture.contains("\nend "),
            "{fixture}"
        );
        let m = poolsim::measure::measured::parse(&fixture, &["g".into()], "s", "native", 1, 1)
            .unwrap();
        assert_eq!(m.trace.items.len(), 4);
        // Every item slept its 150 ms.
        for i in &m.trace.items {
            assert!(i.finished.since(i.started).as_ms_f64() >= 149.0, "{i:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_late_start_is_drawn_once_a_workload_and_the_plan_keeps_it() {
    // `late_ms`: each workload seed draws the group's start in [at, at + late).
    let text = "[machine]\ncores = 2\n[pool]\npolicy = \"net8\"\nmin_threads = 4\n\
                [[group]]\nname = \"a\"\ncount = 3\narrival = { at_ms = 10, late_ms = 20 }\n\
                body = [ { sleep_ms = 1 } ]\n";
    let base = poolsim::scenario::load::parse_scenario(text, "late.toml").unwrap();
    let mut starts = Vec::new();
    for k in 0..40 {
        let s = base.for_run(k, poolsim::scenario::ArrivalDraws::PerRun);
        let start = arrivals::start(&s, 0).unwrap();
        assert!((10_000_000..30_000_000).contains(&start.0), "{start:?}");
        // The engine queues the items at the start the plan submits at.
        let sim = run(&s);
        assert!(sim.trace.items.iter().all(|i| i.queued.0 == start.0));
        // The same workload seed draws the same start.
        assert_eq!(arrivals::start(&s, 0), Some(start));
        starts.push(start.0);
    }
    starts.sort_unstable();
    starts.dedup();
    assert!(starts.len() > 30, "{} distinct starts", starts.len());
    // Fixed arrivals: every run on the first run's draw.
    let fixed: Vec<_> = (0..5)
        .map(|k| arrivals::start(&base.for_run(k, poolsim::scenario::ArrivalDraws::Fixed), 0))
        .collect();
    assert!(fixed.iter().all(|s| *s == fixed[0]), "{fixed:?}");
}
