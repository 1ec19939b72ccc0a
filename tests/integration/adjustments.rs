//! The runtime's own account of its thread goal (`ThreadPoolWorkerThread
//! AdjustmentAdjustment` with its Reason, from the EventPipe trace each .NET 8
//! run writes) against the model's, on the runs recorded in
//! `tests/fixtures/adjustments/` (`FIXTURES=tests/fixtures/adjustments
//! scripts/record-fixtures.sh net8`, the runtime's defaults). No runtime needed.

use std::collections::BTreeSet;
use std::path::PathBuf;

use poolsim::account::{self, Account, AdjustmentReport};
use poolsim::engine::{self, SimOptions};
use poolsim::measure::{self, Runtime, measured::Measured};
use poolsim::nettrace::AdjustmentReason;
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::load::load_scenario;
use poolsim::trace::{EventLog, ThreadReason};
use poolsim::validate::{self, Tolerances};

use crate::common::repo_path;

/// The recorded scenarios: `tests/fixtures/adjustments/<stem>/net8-K.{txt,nettrace}`.
fn recorded() -> Vec<(String, PathBuf)> {
    let mut v: Vec<(String, PathBuf)> = std::fs::read_dir(repo_path("tests/fixtures/adjustments"))
        .expect("tests/fixtures/adjustments exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| (p.file_name().unwrap().to_string_lossy().to_string(), p))
        .collect();
    v.sort();
    v
}

fn runs(stem: &str, dir: &std::path::Path) -> Vec<Measured> {
    let s = load_scenario(&repo_path(&format!("scenarios/validation/{stem}.toml"))).unwrap();
    measure::read_recorded(dir, Runtime::Net8, &s).unwrap()
}

/// The adjustment report of `validate --runtime net8 --fixtures DIR`.
fn report(stem: &str, dir: &std::path::Path) -> AdjustmentReport {
    let s = load_scenario(&repo_path(&format!("scenarios/validation/{stem}.toml"))).unwrap();
    let runs = measure::read_recorded(dir, Runtime::Net8, &s).unwrap();
    let s = measure::as_recorded(&s, &runs);
    let policy = resolve_policy(Runtime::Net8.policy().unwrap()).unwrap();
    let mut log = EventLog::default();
    let sim = engine::simulate(&s, &policy, &mut log, &SimOptions::default());
    let traces: Vec<_> = runs.iter().map(|m| m.trace.clone()).collect();
    let timing = validate::validate(&sim.trace, &traces, "net8", &Tolerances::default());
    let accounts: Vec<(Account, f64)> = runs
        .iter()
        .zip(&timing.repetitions)
        .map(|(m, c)| (m.account.clone().unwrap(), c.makespan_measured_ms))
        .collect();
    account::compare(
        &Account::from_model(&log.events),
        &accounts,
        validate::adjustment_tolerances(&timing),
    )
    .unwrap()
}

#[test]
fn every_recorded_net8_run_carries_the_runtimes_account() {
    let recorded = recorded();
    assert!(recorded.len() >= 8, "{} recorded scenarios", recorded.len());
    let mut reasons = BTreeSet::new();
    for (stem, dir) in &recorded {
        let s = load_scenario(&repo_path(&format!("scenarios/validation/{stem}.toml"))).unwrap();
        let runs = runs(stem, dir);
        assert!(runs.len() >= 3, "{stem}: {} runs", runs.len());
        for (k, m) in runs.iter().enumerate() {
            assert!(m.clock.is_some(), "{stem} run {}: no clock record", k + 1);
            let a = m
                .account
                .as_ref()
                .unwrap_or_else(|| panic!("{stem} run {}: no .nettrace beside it", k + 1));
            // .NET 8 starts at its minimum: SetMinThreads, else the
            // processor count.
            let min = s.pool.min_threads.unwrap_or(m.processors);
            assert_eq!(a.initial_goal, Some(min), "{stem} run {}", k + 1);
            reasons.extend(a.adjustments.iter().map(|x| x.reason));
        }
    }
    // The suite makes the gate inject and hill climbing move.
    assert!(
        reasons.contains(&AdjustmentReason::Starvation),
        "{reasons:?}"
    );
}

/// Each Starvation raise in the runtime's account is followed, within a
/// gate tick, by the thread count the program itself sampled
/// (`ThreadPool.ThreadCount`) reaching the new goal: the two clocks agree.
#[test]
fn the_runtimes_injections_land_on_the_runs_own_time_axis() {
    let (stem, dir) = recorded()
        .into_iter()
        .find(|(s, _)| s == "sleep-burst")
        .expect("sleep-burst is recorded");
    let mut raises = 0;
    for m in runs(&stem, &dir) {
        // The measured threads carry the reasons the account owes them to:
        // two within the minimum, the rest from the starvation rule.
        let reasons: Vec<ThreadReason> = m.trace.threads.iter().map(|t| t.reason).collect();
        assert!(reasons.len() > 2, "{reasons:?}");
        assert!(
            reasons[..2].iter().all(|r| *r == ThreadReason::Demand),
            "{reasons:?}"
        );
        assert!(
            reasons[2..].iter().all(|r| *r == ThreadReason::Starvation),
            "{reasons:?}"
        );
        let a = m.account.unwrap();
        let counts = &m.trace.counts;
        for x in a
            .adjustments
            .iter()
            .filter(|x| x.reason == AdjustmentReason::Starvation)
        {
            raises += 1;
            assert!(x.at_ms > 0.0, "a starvation raise before t0: {x:?}");
            let before = counts
                .iter()
                .take_while(|c| c.at.as_ms_f64() < x.at_ms - 50.0)
                .last()
                .map_or(0, |c| c.threads);
            let after = counts
                .iter()
                .find(|c| c.at.as_ms_f64() >= x.at_ms && c.threads >= x.goal)
                .map(|c| c.at.as_ms_f64() - x.at_ms);
            assert!(before < x.goal, "{x:?}: already {before} threads before it");
            assert!(
                after.is_some_and(|d| d <= 500.0),
                "{x:?}: the sampled count reached {} only after {after:?} ms",
                x.goal
            );
        }
    }
    assert!(
        raises >= 3,
        "{raises} starvation raises in the sleep-burst runs"
    );
}

/// `tests/fixtures/adjustments/KNOWN_MISSES`: `stem check  # why` lines.
fn known_misses() -> BTreeSet<(String, String)> {
    let text = std::fs::read_to_string(repo_path("tests/fixtures/adjustments/KNOWN_MISSES"))
        .unwrap_or_default();
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (stem, check) = l.split_once(' ').unwrap_or((l, ""));
            (stem.to_string(), check.trim().to_string())
        })
        .collect()
}

#[test]
fn the_model_gives_the_runtimes_adjustments_or_the_miss_is_listed() {
    let known = known_misses();
    let mut failed = BTreeSet::new();
    let mut lines = Vec::new();
    let mut checks = 0;
    for (stem, dir) in recorded() {
        let r = report(&stem, &dir);
        for c in &r.checks {
            checks += 1;
            if !c.pass {
                failed.insert((stem.clone(), c.metric.clone()));
                lines.push(format!(
                    "{stem} {}: {:.1} {} (tolerance {:.1})",
                    c.metric, c.value, c.unit, c.tolerance
                ));
            }
        }
    }
    assert!(checks >= 16, "{checks} adjustment checks");
    crate::common::assert_misses_are_listed(&failed, &known, &lines);
}

#[test]
fn validate_prints_the_adjustment_checks_next_to_the_timing_checks() {
    let args = [
        "validate",
        "scenarios/validation/sleep-burst.toml",
        "--runtime",
        "net8",
        "--fixtures",
        "tests/fixtures/adjustments/sleep-burst",
    ];
    let out = crate::common::poolsim(&args);
    let text = String::from_utf8_lossy(&out.stdout);
    let timing = text.find("check (median)").expect("timing checks");
    let adjustments = text.find("adjustment check").expect("adjustment checks");
    assert!(timing < adjustments, "{text}");
    assert!(text.contains("Starvation count"), "{text}");
    assert!(text.contains("Starvation times"), "{text}");
    assert!(text.contains("goal curve distance"), "{text}");
    // The JSON report carries them too.
    let out = crate::common::poolsim(&[&args[..], &["--json"]].concat());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let reasons = v["adjustments"]["reasons"].as_array().expect("reasons");
    assert!(
        reasons
            .iter()
            .any(|r| r["reason"] == "Starvation" && r["code"] == 6)
    );
}

#[test]
fn run_prints_the_models_adjustments_as_the_runtime_logs_them() {
    let out = crate::common::poolsim(&["run", "scenarios/seed-001-burst.toml", "--items", "0"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("adjustments   4 Starvation   (ThreadPoolWorkerThreadAdjustmentAdjustment"),
        "{text}"
    );
    let out = crate::common::poolsim(&["run", "scenarios/seed-001-burst.toml", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let adjustments = v["adjustments"].as_array().unwrap();
    let created = &v["threads_created_by_reason"]["starvation"];
    assert_eq!(adjustments.len() as u64, created.as_u64().unwrap());
    for (k, a) in adjustments.iter().enumerate() {
        assert_eq!(a["reason"], "Starvation");
        // Goal 4 -> 5 -> ... one a gate tick.
        assert_eq!(a["goal"], 5 + k as u64);
        assert_eq!(a["previous"], 4 + k as u64);
    }
    assert_eq!(
        v["adjustments_by_reason"],
        serde_json::json!([["Starvation", 4]])
    );
    // The same account whether or not a chart asks for every event.
    let dir = std::env::temp_dir().join(format!("poolsim-adj-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let png = dir.join("c.png");
    let out = crate::common::poolsim(&[
        "run",
        "scenarios/seed-001-burst.toml",
        "--json",
        "--png",
        png.to_str().unwrap(),
    ]);
    let w: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(w["adjustments"], v["adjustments"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_portable_pools_cooperative_blocking_is_reason_8() {
    let s = poolsim::scenario::load::parse_scenario(
        r#"
        name = "8 x Task.Delay(1000).Wait() on 2 cores"
        [machine]
        cores = 2
        [pool]
        policy = "net8"
        [[group]]
        count = 8
        body = [ { wait_ms = 1000 } ]
        "#,
        "t.toml",
    )
    .unwrap();
    let mut log = EventLog::default();
    let policy = resolve_policy("net8").unwrap();
    engine::simulate(&s, &policy, &mut log, &SimOptions::default());
    let a = Account::from_model(&log.events);
    let blocking: Vec<_> = a
        .adjustments
        .iter()
        .filter(|x| x.reason == AdjustmentReason::CooperativeBlocking)
        .collect();
    assert!(!blocking.is_empty(), "{a:?}");
    assert!(blocking.iter().all(|x| x.reason.code() == 8));
    assert_eq!(a.initial_goal, Some(2));
}
