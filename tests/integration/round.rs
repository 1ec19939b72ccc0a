//! The round-number suite: `scenarios/validation/round/` (sleeps, waits,
//! busy loops and arrivals of whole seconds and half seconds, as real code
//! and every seed write them), recorded 10 times on Mono, .NET Core 3.1 and
//! .NET 8 with the runtimes' defaults (tiered compilation on) in
//! `tests/fixtures/validation/round/` (`scripts/record-fixtures.sh`, see its
//! header). Round durations put completions on the gate's ticks, so the
//! real pools give several outcomes; each model is checked as a
//! distribution over 100 seeds (`validate --runs 100`): every recorded run
//! inside the simulated range (widened by 2 %), the median within 5 %, the
//! start offsets quantile by quantile. A miss must be listed in
//! `tests/fixtures/validation/round/KNOWN_MISSES` with what was measured,
//! and a listed miss that passes fails the test.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use poolsim::engine::SimOptions;
use poolsim::measure::{self, Runtime};
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::load::load_scenario;
use poolsim::spread::spread_with_offsets;
use poolsim::validate::distribution::{DistTolerances, DistributionReport, compare_distributions};

use crate::common::repo_path;

const SIM_RUNS: usize = 100;
const RUNTIMES: [Runtime; 3] = [Runtime::Mono, Runtime::Coreclr3, Runtime::Net8];

fn scenarios() -> Vec<(String, PathBuf)> {
    let mut v: Vec<(String, PathBuf)> = std::fs::read_dir(repo_path("scenarios/validation/round"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| (p.file_stem().unwrap().to_string_lossy().to_string(), p))
        .collect();
    v.sort();
    v
}

fn replay(stem: &str, file: &Path, rt: Runtime) -> DistributionReport {
    let scenario = load_scenario(file).unwrap();
    let dir = repo_path(&format!("tests/fixtures/validation/round/{stem}"));
    let runs = measure::read_recorded(&dir, rt, &scenario)
        .unwrap_or_else(|e| panic!("{stem} {}: {e}", rt.name()));
    assert!(
        runs.len() >= 10,
        "{stem} {}: {} runs",
        rt.name(),
        runs.len()
    );
    assert!(
        runs.iter().all(|m| m.tiered_compilation() != Some(false)),
        "{stem}: recorded with the runtime's defaults"
    );
    let scenario = measure::as_recorded(&scenario, &runs);
    let policy = resolve_policy(rt.policy().unwrap()).unwrap();
    let sim = spread_with_offsets(&scenario, &policy, SIM_RUNS, &SimOptions::default());
    let measured: Vec<_> = runs.into_iter().map(|m| m.trace).collect();
    compare_distributions(
        &sim,
        (&scenario.name, &policy.name),
        &measured,
        rt.name(),
        &DistTolerances::default(),
    )
}

fn known_misses() -> BTreeSet<(String, String, String)> {
    crate::common::check_list("tests/fixtures/validation/round/KNOWN_MISSES")
}

#[test]
fn the_round_number_suite_has_eight_scenarios_recorded_ten_times_on_each_runtime() {
    let all = scenarios();
    assert!(all.len() >= 8, "{} round-number scenarios", all.len());
    for (stem, file) in &all {
        let s = load_scenario(file).unwrap();
        // Round: every step's duration a multiple of 100 ms.
        for g in &s.groups {
            for step in &g.body {
                let ms = step.duration().map_or(0.0, |d| d.as_ms_f64());
                assert!(ms % 100.0 == 0.0, "{stem}: a step of {ms} ms");
            }
        }
        for rt in RUNTIMES {
            let dir = repo_path(&format!("tests/fixtures/validation/round/{stem}"));
            let runs = measure::read_recorded(&dir, rt, &s).unwrap();
            assert!(
                runs.len() >= 10,
                "{stem} {}: {} runs",
                rt.name(),
                runs.len()
            );
        }
    }
}

#[test]
fn the_models_predict_the_round_number_runs_as_distributions_but_for_the_listed_misses() {
    let mut misses = BTreeSet::new();
    let mut lines = Vec::new();
    let (mut covered, mut runs) = (0, 0);
    for (stem, file) in scenarios() {
        for rt in RUNTIMES {
            let r = replay(&stem, &file, rt);
            covered += r.covered;
            runs += r.measured_makespans_ms.len();
            crate::common::distribution_misses(&stem, rt.name(), &r, &mut misses, &mut lines);
        }
    }
    lines.push(format!(
        "{covered} of {runs} recorded runs inside the models' ranges"
    ));
    crate::common::assert_distribution_misses_are_listed(&misses, &known_misses(), &lines);
}

/// Mono's monitor injects at its first round even when every thread
/// computes (no completion yet, so its last dequeue is at boot, the
/// machine's uptime ago): 8 busy loops of 500 ms on 2 cores get a third
/// thread at the first tick and end in 1.5 s, as the recorded Mono runs did
/// (1.51 s x 10); the CoreCLR pools, whose last dequeue counts from the
/// pool's start, inject nothing and end in 2.0 s. (.NET Core 3.1's hill climbing adds a third thread that
/// finds nothing left to run: the recorded runs at 1.51 s, 10 of 10, the
/// model one sample later, at 2.0 s, for want of the runtime's own
/// completions during the run.)
#[test]
fn monos_first_round_injects_under_full_cpu() {
    let s = load_scenario(&repo_path("scenarios/validation/round/busy.toml")).unwrap();
    let run = |p: &str| {
        let policy = resolve_policy(p).unwrap();
        let r = poolsim::engine::simulate(
            &s,
            &policy,
            &mut poolsim::trace::NullSink,
            &SimOptions::default(),
        );
        poolsim::metrics::summarize(&r.trace)
    };
    let mono = run("mono");
    assert_eq!(mono.threads_peak, 3);
    assert_eq!(mono.threads_created_by_reason["starvation"], 1);
    assert!(
        (mono.makespan_ms - 1500.0).abs() < 20.0,
        "{}",
        mono.makespan_ms
    );
    for clr in ["net8", "coreclr3-linux"] {
        let r = run(clr);
        assert!(
            !r.threads_created_by_reason.contains_key("starvation"),
            "{clr}"
        );
        let late = u32::from(clr == "coreclr3-linux");
        assert_eq!(r.threads_peak, 2 + late, "{clr}");
        assert!(
            (r.makespan_ms - 2000.0).abs() < 20.0,
            "{clr}: {}",
            r.makespan_ms
        );
    }
}
