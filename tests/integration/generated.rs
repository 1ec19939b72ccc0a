//! Validation on workloads nobody chose: the generated sets recorded in
//! `tests/fixtures/generated/RUNTIME/` (`poolsim validate --generate 40
//! --seed 1 --runtime RUNTIME --repeat 5 --record ...`, tiered compilation
//! on, as users run .NET), replayed against the models as distributions;
//! and two held-out sets, drawn and recorded once the models stood: grammar
//! seed 2 in `tests/fixtures/generated-2/` (.NET Core 3.1; one mechanism it
//! showed, the start-up's hill-climbing sample, was modelled after), and
//! grammar seed 3 in `tests/fixtures/generated-3/` (.NET Core 3.1, .NET 8
//! and Mono), recorded after that, without a change to any model after but
//! three Mono mechanisms found on its misses; then grammar seed 4 in
//! `tests/fixtures/generated-4/` (Mono, recorded after those three; the
//! token cap was found on its misses), grammar seed 5 in
//! `tests/fixtures/generated-5/` (Mono, recorded after all four; the
//! monitor's last dequeue at boot was found on its misses), and grammar
//! seed 6 in `tests/fixtures/generated-6/` (Mono, recorded after that).
//!
//! The test fails when a recorded set is no longer what the grammar draws,
//! on a scenario that misses a distribution check and is not listed in its
//! set's `KNOWN_MISSES`, and on a listed one that now passes (so the list
//! stays the truth).

use std::collections::BTreeSet;

use poolsim::engine::SimOptions;
use poolsim::generate::generate;
use poolsim::measure::{self, Runtime};
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::load::parse_scenario;
use poolsim::spread::spread_with_offsets;
use poolsim::validate::distribution::{
    DistTolerances, DistributionReport, compare_distributions, summarize_set,
};

use crate::common::repo_path;

const SET: usize = 40;
const SIM_RUNS: usize = 100;

/// A grammar: `generate` (small bursts) or `generate_apps` (real apps).
type Grammar = fn(usize, u64, &str) -> Vec<poolsim::generate::Generated>;

/// The recorded sets of the bursts grammar: grammar seed, folder, runtimes.
const SETS: [(u64, &str, &[Runtime]); 6] = [
    (
        1,
        "tests/fixtures/generated",
        &[Runtime::Mono, Runtime::Coreclr3, Runtime::Net8],
    ),
    (2, "tests/fixtures/generated-2", &[Runtime::Coreclr3]),
    (
        3,
        "tests/fixtures/generated-3",
        &[Runtime::Mono, Runtime::Coreclr3, Runtime::Net8],
    ),
    (4, "tests/fixtures/generated-4", &[Runtime::Mono]),
    (5, "tests/fixtures/generated-5", &[Runtime::Mono]),
    (6, "tests/fixtures/generated-6", &[Runtime::Mono]),
];

/// A runtime recorded, with its runs per scenario.
type Recorded = (Runtime, usize);

/// The recorded sets of the apps grammar (issue 33): grammar seed, folder,
/// and each runtime recorded with its runs per scenario. Seed 1 is the
/// first look, recorded before any model was changed for this grammar
/// (.NET 8, 3 runs each; .NET Core 3.1, 2 runs each); seed 2 on .NET 8 was
/// recorded after the hill-climbing floor that seed 1 showed, with no model
/// changed since, and is held out (5 runs each), as are Mono's runs of it
/// (5 each; the Mono model never changed for this grammar). .NET Core
/// 3.1's runs of it (5 each) were held out until the retire fix they
/// showed (`retire.rs`); seed 3 on .NET Core 3.1 (5 each) was recorded
/// after that fix, with no model changed since: held out. Seed 4 on .NET 8
/// (5 each) was recorded after the first call of a parallel API was
/// modelled (the last model change), with no model changed since: held
/// out.
const APPS_SETS: [(u64, &str, &[Recorded]); 4] = [
    (
        1,
        "tests/fixtures/generated-apps-1",
        &[(Runtime::Net8, 3), (Runtime::Coreclr3, 2)],
    ),
    (
        2,
        "tests/fixtures/generated-apps-2",
        &[
            (Runtime::Net8, 5),
            (Runtime::Mono, 5),
            (Runtime::Coreclr3, 5),
        ],
    ),
    (
        3,
        "tests/fixtures/generated-apps-3",
        &[(Runtime::Coreclr3, 5)],
    ),
    (4, "tests/fixtures/generated-apps-4", &[(Runtime::Net8, 5)]),
];

fn replay(grammar_seed: u64, folder: &str, rt: Runtime) -> Vec<(String, DistributionReport)> {
    replay_grammar(generate, 5, grammar_seed, folder, rt).reports
}

/// A recorded set replayed against a runtime's model.
struct Replayed {
    /// The scenarios whose real runs finished, with the distribution checks.
    reports: Vec<(String, DistributionReport)>,
    /// The scenarios whose real run hung past its wall-clock limit
    /// (`measure::hung_record`), each with whether the model predicts it:
    /// none of its runs completes.
    hung: Vec<(String, bool)>,
}

/// Replays a recorded set of `grammar` (each scenario recorded at least
/// `min_runs` times) against the runtime's model.
fn replay_grammar(
    grammar: Grammar,
    min_runs: usize,
    grammar_seed: u64,
    folder: &str,
    rt: Runtime,
) -> Replayed {
    let dir = repo_path(&format!("{folder}/{}", rt.name()));
    let policy_name = rt.policy().unwrap();
    let policy = resolve_policy(policy_name).unwrap();
    let mut out = Replayed {
        reports: Vec::new(),
        hung: Vec::new(),
    };
    for g in grammar(SET, grammar_seed, policy_name) {
        let recorded = std::fs::read_to_string(dir.join(&g.file))
            .unwrap_or_else(|e| panic!("{}: {e}", g.file));
        assert_eq!(
            recorded,
            g.toml,
            "{}/{}: the grammar no longer draws the recorded set",
            rt.name(),
            g.file
        );
        let scenario = parse_scenario(&g.toml, &g.file).unwrap();
        let stem = g.file.trim_end_matches(".toml").to_string();
        if measure::read_hung(&dir.join(&stem), rt).is_some() {
            let sim = spread_with_offsets(&scenario, &policy, SIM_RUNS, &SimOptions::default());
            out.hung.push((stem, sim.incomplete == sim.runs));
            continue;
        }
        let runs = measure::read_recorded(&dir.join(&stem), rt, &scenario).unwrap();
        assert!(runs.len() >= min_runs, "{stem}: {} runs", runs.len());
        assert!(
            runs.iter().all(|m| m.tiered_compilation() != Some(false)),
            "{stem}: recorded with the runtime's defaults"
        );
        let scenario = measure::as_recorded(&scenario, &runs);
        let sim = spread_with_offsets(&scenario, &policy, SIM_RUNS, &SimOptions::default());
        let measured: Vec<_> = runs.into_iter().map(|m| m.trace).collect();
        let report = compare_distributions(
            &sim,
            (&scenario.name, &policy.name),
            &measured,
            rt.name(),
            &DistTolerances::default(),
        );
        out.reports.push((stem, report));
    }
    out
}

#[test]
fn the_generated_sets_meet_the_distribution_checks_but_for_the_listed_misses() {
    for (grammar_seed, folder, runtimes) in SETS {
        check_set(grammar_seed, folder, runtimes);
    }
}

/// The apps grammar's recorded sets: the grammar still draws them, and
/// every distribution check a model misses there is listed in the set's
/// `KNOWN_MISSES` (and every listed one still misses). Its p99 target is
/// not held: that set is where the models are measured against it.
#[test]
fn the_apps_sets_miss_only_their_listed_checks() {
    for (grammar_seed, folder, runtimes) in APPS_SETS {
        let mut misses = BTreeSet::new();
        let mut lines = Vec::new();
        for &(rt, runs) in runtimes {
            let set = replay_grammar(
                poolsim::generate_apps::generate_apps,
                runs,
                grammar_seed,
                folder,
                rt,
            );
            for (stem, r) in &set.reports {
                crate::common::distribution_misses(stem, rt.name(), r, &mut misses, &mut lines);
            }
            // A real run that hung is a miss unless the model never
            // finishes either.
            for (stem, predicted) in set.hung {
                lines.push(format!(
                    "# {stem} {}: a real run hung past its limit; the model {}",
                    rt.name(),
                    if predicted {
                        "never finishes either"
                    } else {
                        "finishes"
                    }
                ));
                if !predicted {
                    misses.insert((stem, rt.name().to_string(), "hung".to_string()));
                }
            }
        }
        let listed = crate::common::check_list(&format!("{folder}/KNOWN_MISSES"));
        crate::common::assert_distribution_misses_are_listed(&misses, &listed, &lines);
    }
}

fn check_set(grammar_seed: u64, folder: &str, runtimes: &[Runtime]) {
    let mut misses = BTreeSet::new();
    let mut lines = Vec::new();
    for &rt in runtimes {
        let reports = replay(grammar_seed, folder, rt);
        for (stem, r) in &reports {
            crate::common::distribution_misses(stem, rt.name(), r, &mut misses, &mut lines);
        }
        let only: Vec<DistributionReport> = reports.into_iter().map(|x| x.1).collect();
        let s = summarize_set(&only);
        lines.push(format!(
            "{}: {} of {} runs in range ({:.1} %), median |median error| {:.1} %",
            rt.name(),
            s.covered_runs,
            s.measured_runs,
            s.coverage * 100.0,
            s.median_abs_median_error * 100.0
        ));
        // What a service owner reads: the p99 latency within 15 % in at
        // least 80 % of the scenarios (issue 33's target; every recorded
        // set meets it, 35 to 39 of 40).
        assert!(
            s.latency_p99_within * 5 >= s.scenarios * 4,
            "{folder} {}: p99 latency within 15 % in {} of {} scenarios (median |error| {:.1} %)",
            rt.name(),
            s.latency_p99_within,
            s.scenarios,
            s.median_abs_latency_p99_error * 100.0
        );
    }
    let listed = crate::common::check_list(&format!("{folder}/KNOWN_MISSES"));
    crate::common::assert_distribution_misses_are_listed(&misses, &listed, &lines);
}

/// .NET 6+'s hill climbing never takes the goal below `MinThreadsGoal`,
/// min(goal, min + threads blocked in Task.Wait). On apps-1-20 (a
/// sync-over-async request stream on one core) the real pool made no
/// starvation adjustment in any of its three recorded runs; a model whose
/// hill climbing dropped the goal under a blocked thread stopped the running
/// one and waited for the gate's starvation tick (5 of them, p99 +90 %).
#[test]
fn hill_climbing_keeps_the_goal_for_blocked_waits_as_the_real_pool_does() {
    let dir = repo_path("tests/fixtures/generated-apps-1/net8");
    for run in 1..=3 {
        let out = crate::common::poolsim(&[
            "import",
            dir.join(format!("apps-1-20/net8-{run}.nettrace"))
                .to_str()
                .unwrap(),
            "--json",
        ]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            v["adjustments_by_reason"].get("Starvation").is_none(),
            "real run {run}: {}",
            v["adjustments_by_reason"]
        );
    }
    let out = crate::common::poolsim(&[
        "run",
        dir.join("apps-1-20.toml").to_str().unwrap(),
        "--json",
        "--items",
        "0",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let reasons: Vec<&str> = v["adjustments_by_reason"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[0].as_str().unwrap())
        .collect();
    assert!(!reasons.contains(&"Starvation"), "{reasons:?}");
    assert!(reasons.contains(&"ClimbingMove"), "{reasons:?}");
    assert!(reasons.contains(&"CooperativeBlocking"), "{reasons:?}");
}
