//! Every model against the real runs recorded in `tests/fixtures/validation/`
//! (no runtime needed): the same metrics and tolerances as `poolsim validate`.

use std::collections::BTreeSet;
use std::path::Path;

use poolsim::engine::{self, SimOptions};
use poolsim::measure::{self, Runtime};
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::load::load_scenario;
use poolsim::trace::NullSink;
use poolsim::validate::{self, Tolerances};

use crate::common::repo_path;

/// The (scenario stem, runtime, check) triples the models miss on the
/// recordings, from `tests/fixtures/validation/KNOWN_MISSES` (one per line:
/// `stem runtime check # why`), which the live CI run reads too. A miss
/// that is fixed must leave the list: an unexpected pass fails the test.
fn known_misses() -> BTreeSet<(String, String, String)> {
    check_list("KNOWN_MISSES")
}

/// `tests/fixtures/validation/NAME`: `stem runtime check  # why` lines.
fn check_list(name: &str) -> BTreeSet<(String, String, String)> {
    crate::common::check_list(&format!("tests/fixtures/validation/{name}"))
}

fn scenarios() -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(repo_path("scenarios/validation"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v
}

fn fixture_dir(scenario: &Path) -> std::path::PathBuf {
    let stem = scenario.file_stem().unwrap().to_string_lossy().to_string();
    repo_path(&format!("tests/fixtures/validation/{stem}"))
}

#[test]
fn the_suite_covers_the_behaviours_and_every_runtime_that_can_run_it() {
    let files = scenarios();
    assert!(files.len() >= 10, "{} validation scenarios", files.len());
    for f in &files {
        let s = load_scenario(f).unwrap();
        let plan_ok = measure::plan::plan_text(&s, None, 1000, 10_000).is_ok();
        let native_ok = s.groups.iter().all(|g| !g.submit.one_call());
        for rt in Runtime::ALL {
            let expected = match rt {
                Runtime::Native => native_ok,
                _ => plan_ok,
            };
            let recorded = measure::read_recorded(&fixture_dir(f), rt, &s);
            if expected {
                let runs = recorded.unwrap_or_else(|e| panic!("{}: {e}", f.display()));
                assert_eq!(runs.len(), 3, "{} on {}", f.display(), rt.name());
                for m in &runs {
                    assert!(
                        m.complete,
                        "{} on {}: incomplete run",
                        f.display(),
                        rt.name()
                    );
                    assert_eq!(m.trace.items.len() as u64, s.item_count());
                    assert!(
                        m.header.iter().any(|h| h.starts_with("machine:"))
                            && m.header.iter().any(|h| h.starts_with("runtime:")),
                        "{}: header {:?}",
                        f.display(),
                        m.header
                    );
                }
            }
        }
    }
}

#[test]
fn every_model_is_within_tolerance_of_the_recorded_runs() {
    let mut misses = BTreeSet::new();
    let mut lines = Vec::new();
    for f in scenarios() {
        let s = load_scenario(&f).unwrap();
        let stem = f.file_stem().unwrap().to_string_lossy().to_string();
        for rt in Runtime::ALL {
            let Ok(runs) = measure::read_recorded(&fixture_dir(&f), rt, &s) else {
                continue;
            };
            let policy = resolve_policy(rt.policy().unwrap_or(&s.pool.policy)).unwrap();
            // The recordings say which settings they ran with (tiered
            // compilation off); the model is run as recorded.
            let as_run = measure::as_recorded(&s, &runs);
            let sim = engine::simulate(&as_run, &policy, &mut NullSink, &SimOptions::default());
            let measured: Vec<_> = runs.into_iter().map(|m| m.trace).collect();
            let report =
                validate::validate(&sim.trace, &measured, rt.name(), &Tolerances::default());
            for c in &report.checks {
                lines.push(format!(
                    "{stem:<24} {:<9} {:<24} {:>8.1} {:<7} (tol {:.1}) {}",
                    rt.name(),
                    c.metric,
                    c.value,
                    c.unit,
                    c.tolerance,
                    if c.pass { "pass" } else { "FAIL" }
                ));
                if !c.pass {
                    misses.insert((stem.clone(), rt.name().to_string(), c.metric.to_string()));
                }
            }
        }
    }
    let known = known_misses();
    assert_eq!(misses, known, "\n{}", lines.join("\n"));
}

#[test]
fn mono_set_min_threads_takes_effect_at_the_first_hill_climbing_adjustment() {
    // Measured on Mono 6.8 (tests/fixtures/validation/min-threads/mono-*.txt):
    // SetMinThreads(16) creates nothing at once; the monitor adds one thread
    // at 0.5 s; at the first completions hill climbing clamps its goal to the
    // new floor and ten threads start together (the 10-per-second cap).
    let s = load_scenario(&repo_path("scenarios/validation/min-threads.toml")).unwrap();
    let policy = resolve_policy("mono").unwrap();
    let r = engine::simulate(&s, &policy, &mut NullSink, &SimOptions::default());
    let starts = crate::common::sorted_starts(&r.trace);
    assert!(starts[1] < 10.0 && starts[2] > 400.0, "{starts:?}");
    // The first completions (1.3 s after the first starts) bring the burst.
    let burst = starts[1] + 1300.0;
    let together = starts.iter().filter(|&&t| (t - burst).abs() < 50.0).count();
    assert!(together >= 10, "{starts:?}");
    // Without SetMinThreads the same burst takes twice as long.
    let mut plain = s.clone();
    plain.pool.min_threads = None;
    let p = engine::simulate(&plain, &policy, &mut NullSink, &SimOptions::default());
    let end = |r: &engine::RunResult| r.trace.items.iter().map(|i| i.finished).max().unwrap();
    assert!(end(&p).as_ms_f64() > 1.8 * end(&r).as_ms_f64());
}

#[test]
fn parallel_foreach_over_a_range_partitions_as_for_where_range_is_a_list() {
    // .NET 8 (measured): Enumerable.Range is an IList<int>, so ForEach = For;
    // the classic policy (.NET Framework's iterator) keeps chunk partitioning.
    let each = load_scenario(&repo_path("scenarios/seed-000-parallel-foreach.toml")).unwrap();
    let for_ = load_scenario(&repo_path("scenarios/seed-000-parallel-for.toml")).unwrap();
    let starts = |s: &poolsim::scenario::Scenario, p: &str| {
        let mut policy = resolve_policy(p).unwrap();
        // The partitioning alone: each API's first call costs its own
        // compilation ([library.first_call_ms]), drawn apart.
        policy.library.first_call = Default::default();
        let r = engine::simulate(s, &policy, &mut NullSink, &SimOptions::default());
        r.trace.items.iter().map(|i| i.started).collect::<Vec<_>>()
    };
    for p in ["net6", "net8"] {
        assert!(resolve_policy(p).unwrap().library.range_is_list);
        assert_eq!(starts(&each, p), starts(&for_, p), "{p}");
    }
    assert!(!resolve_policy("net-classic").unwrap().library.range_is_list);
    assert_ne!(starts(&each, "net-classic"), starts(&for_, "net-classic"));
}

#[test]
fn every_live_variation_names_a_recorded_check() {
    // scripts/live-validation.sh reports these checks instead of failing
    // on them: each must name a recorded scenario and runtime and a check
    // validate prints, or the list silently excuses nothing.
    let checks = [
        "makespan error",
        "start error mean",
        "end error mean",
        "peak threads error",
        "threads curve distance",
    ];
    let varies = check_list("LIVE_VARIES");
    assert!(!varies.is_empty());
    for (stem, rt, check) in &varies {
        let fixture = repo_path(&format!("tests/fixtures/validation/{stem}/{rt}-1.txt"));
        assert!(
            fixture.exists(),
            "{stem} {rt}: no recording {}",
            fixture.display()
        );
        // The adjustment checks of runs that carry the runtime's account
        // (`poolsim::account`): `<Reason> count`, `<Reason> times`, the goal curve.
        let adjustment = rt == "net8"
            && (check == "goal curve distance"
                || check
                    .strip_suffix(" count")
                    .or_else(|| check.strip_suffix(" times"))
                    .and_then(poolsim::account::model_reason)
                    .is_some());
        assert!(
            checks.contains(&check.as_str()) || adjustment,
            "{stem} {rt}: unknown check {check:?}"
        );
    }
}

/// Every recorded run of the suite lies inside the model's simulated range
/// over 100 seeds (widened by 2 %), or the pair is listed in
/// `tests/fixtures/validation/OUTSIDE_RANGE` with what was measured.
#[test]
fn every_recorded_run_falls_inside_the_simulated_range_or_is_listed() {
    let mut outside = BTreeSet::new();
    let mut lines = Vec::new();
    for f in scenarios() {
        let s = load_scenario(&f).unwrap();
        let stem = f.file_stem().unwrap().to_string_lossy().to_string();
        for rt in Runtime::ALL {
            let Ok(runs) = measure::read_recorded(&fixture_dir(&f), rt, &s) else {
                continue;
            };
            let policy = resolve_policy(rt.policy().unwrap_or(&s.pool.policy)).unwrap();
            let as_run = measure::as_recorded(&s, &runs);
            let sim = poolsim::spread::spread(
                &as_run,
                &policy,
                100,
                poolsim::scenario::ArrivalDraws::Fixed,
                &SimOptions::default(),
            );
            let q = sim.makespan_ms;
            for m in &runs {
                let ms = poolsim::metrics::summarize(&m.trace).makespan_ms;
                if !q.covers(ms, 0.02) {
                    outside.insert((stem.clone(), rt.name().to_string(), String::new()));
                    lines.push(format!(
                        "{stem} {}: measured {ms:.0} ms, model {:.0}..{:.0} ms",
                        rt.name(),
                        q.min,
                        q.max
                    ));
                }
            }
        }
    }
    let listed = check_list("OUTSIDE_RANGE");
    assert_eq!(outside, listed, "\n{}", lines.join("\n"));
}
