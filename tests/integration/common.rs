//! Helpers shared by the integration tests.

use std::collections::BTreeSet;
use std::path::PathBuf;

use poolsim::engine::{self, RunResult, SimOptions};
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::Scenario;
use poolsim::scenario::load::load_scenario;
use poolsim::trace::{NullSink, Trace};

/// Runs the `poolsim` binary from the repository's root.
pub fn poolsim(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_poolsim"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("poolsim runs")
}

/// Path of a file in the repository.
pub fn repo_path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Loads `scenarios/<name>`.
pub fn scenario(name: &str) -> Scenario {
    let path = repo_path(&format!("scenarios/{name}"));
    load_scenario(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs a scenario under its own policy.
pub fn run(scenario: &Scenario) -> RunResult {
    let policy = resolve_policy(&scenario.pool.policy).unwrap_or_else(|e| panic!("{e}"));
    engine::simulate(scenario, &policy, &mut NullSink, &SimOptions::default())
}

/// Item start offsets in ms, in submission order.
pub fn starts_ms(result: &RunResult) -> Vec<f64> {
    result
        .trace
        .items
        .iter()
        .map(|i| i.started.as_ms_f64())
        .collect()
}

/// Proptest settings: `cases` generated cases from a fixed seed, so that
/// `cargo test` is reproducible, unless `PROPTEST_RNG_SEED` asks for another.
pub fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    let mut c = proptest::test_runner::Config::with_cases(cases);
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        c.rng_seed = proptest::test_runner::RngSeed::Fixed(0x2026_1202);
    }
    c
}

/// A list of checks a test excuses, `stem runtime check  # why` a line
/// (`#` starts a comment), read from the repository file `rel`: the
/// `KNOWN_MISSES`, `LIVE_VARIES` and `OUTSIDE_RANGE` files of the fixtures.
/// A missing file is an empty list.
pub fn check_list(rel: &str) -> BTreeSet<(String, String, String)> {
    let text = std::fs::read_to_string(repo_path(rel)).unwrap_or_default();
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(|l| {
            let mut t = l.splitn(3, ' ');
            (
                t.next().unwrap_or("").to_string(),
                t.next().unwrap_or("").to_string(),
                t.next().unwrap_or("").trim().to_string(),
            )
        })
        .collect()
}

/// Adds the failed distribution checks of `report` (scenario `stem` on
/// `runtime`) to `misses`, and a line of its figures to `lines`.
pub fn distribution_misses(
    stem: &str,
    runtime: &str,
    r: &poolsim::validate::distribution::DistributionReport,
    misses: &mut BTreeSet<(String, String, String)>,
    lines: &mut Vec<String>,
) {
    for c in &r.checks {
        if !c.pass {
            misses.insert((stem.to_string(), runtime.to_string(), c.metric.to_string()));
        }
    }
    // The figures as a `KNOWN_MISSES` comment line.
    let measured: Vec<String> = r
        .measured_makespans_ms
        .iter()
        .map(|m| format!("{m:.0}"))
        .collect();
    lines.push(format!(
        "# {stem} {runtime}: model {:.0}..{:.0} ms over {} seeds; measured {} ms; median error {:+.1} %; start-offset quantiles off by {:.0} ms",
        r.sim_makespan_ms.min,
        r.sim_makespan_ms.max,
        r.sim_runs,
        measured.join(", "),
        r.median_error * 100.0,
        r.offset_error_ms
    ));
}

/// [`assert_misses_are_listed`] for distribution checks, whose failure
/// message ends with the `KNOWN_MISSES` lines to paste: for each scenario
/// with an unlisted miss, its figures comment and every check it misses.
pub fn assert_distribution_misses_are_listed(
    misses: &BTreeSet<(String, String, String)>,
    known: &BTreeSet<(String, String, String)>,
    lines: &[String],
) {
    let mut all = lines.to_vec();
    let unlisted: BTreeSet<(&str, &str)> = misses
        .difference(known)
        .map(|(stem, rt, _)| (stem.as_str(), rt.as_str()))
        .collect();
    if !unlisted.is_empty() {
        all.push("\nKNOWN_MISSES lines for the unlisted misses:".to_string());
        for (stem, rt) in unlisted {
            let head = format!("# {stem} {rt}: ");
            all.extend(lines.iter().filter(|l| l.starts_with(&head)).cloned());
            all.extend(
                misses
                    .iter()
                    .filter(|(s, r, _)| s == stem && r == rt)
                    .map(|(s, r, check)| format!("{s} {r} {check}")),
            );
        }
    }
    assert_misses_are_listed(misses, known, &all);
}

/// Fails unless the checks that missed are exactly those a list excuses:
/// an unlisted miss is a regression, a listed check that passes must leave
/// the list (so the list stays the truth). `lines` are the figures shown.
pub fn assert_misses_are_listed<T: Ord + std::fmt::Debug>(
    misses: &BTreeSet<T>,
    known: &BTreeSet<T>,
    lines: &[String],
) {
    // `POOLSIM_FIGURES=1 cargo test ...` prints the figures even when the
    // lists hold, to refresh their comment lines after a model change.
    if std::env::var_os("POOLSIM_FIGURES").is_some() {
        for l in lines {
            eprintln!("{l}");
        }
    }
    let unlisted: Vec<_> = misses.difference(known).collect();
    let passing: Vec<_> = known.difference(misses).collect();
    assert!(
        unlisted.is_empty() && passing.is_empty(),
        "unlisted misses: {unlisted:?}\nlisted but passing (remove them): {passing:?}\n{}",
        lines.join("\n")
    );
}

/// The number right after `prefix` in `text` ("last dequeue 629.8 ms ago").
pub fn number_after(text: &str, prefix: &str) -> f64 {
    let rest = &text[text
        .find(prefix)
        .unwrap_or_else(|| panic!("{prefix:?} in {text:?}"))
        + prefix.len()..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    rest[..end]
        .parse()
        .unwrap_or_else(|e| panic!("{e}: {text:?}"))
}

/// The items' start times in ms, earliest first.
pub fn sorted_starts(trace: &Trace) -> Vec<f64> {
    let mut starts: Vec<f64> = trace.items.iter().map(|i| i.started.as_ms_f64()).collect();
    starts.sort_by(f64::total_cmp);
    starts
}

/// A fresh directory under the target directory for one test's files.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a test directory");
    dir
}
