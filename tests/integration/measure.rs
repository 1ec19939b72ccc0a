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
