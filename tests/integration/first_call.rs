//! The first call of a parallel API in a process pays the JIT of the
//! library's code for it on the calling thread before its first body runs
//! (`[library.first_call_ms]`); a later call does not. Checked against the
//! calibration recordings (`tests/fixtures/calibration/first-API/`, the
//! runs of `scenarios/calibration/first-API.toml`) on each runtime's model.

use std::collections::BTreeMap;

use poolsim::engine::{self, SimOptions};
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::load::parse_scenario;
use poolsim::trace::NullSink;

use crate::common::repo_path;

const APIS: [&str; 4] = [
    "parallel-for",
    "parallel-foreach",
    "parallel-invoke",
    "plinq",
];
const MODELS: [(&str, &str); 3] = [
    ("coreclr3", "coreclr3-linux"),
    ("net8", "net8"),
    ("mono", "mono"),
];

/// Where the model's second body misses the measured one by a millisecond
/// or more. Mono's `Parallel.ForEach`: the model's parked worker, woken
/// for the second replica, starts as a new thread does (`start_ms` 1.0),
/// 1.02 ms after the first body, where the real one follows within
/// 0.01 ms (median of 10 runs); the first call's cost is not the cause.
const KNOWN_GAP_MISSES: &[(&str, &str)] = &[("parallel-foreach", "mono")];

fn calibration(api: &str) -> String {
    let path = repo_path(&format!("scenarios/calibration/first-{api}.toml"));
    std::fs::read_to_string(path).expect("the calibration scenario")
}

/// Per group, the sorted `started - queued` (ms) of its items in a
/// recording or a simulated trace: `(queued_us, started_us)` pairs.
fn delays(items: &[(u32, u64, u64)]) -> BTreeMap<u32, Vec<f64>> {
    let mut first_queued: BTreeMap<u32, u64> = BTreeMap::new();
    for &(g, q, _) in items {
        let e = first_queued.entry(g).or_insert(q);
        *e = (*e).min(q);
    }
    let mut out: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for &(g, _, s) in items {
        out.entry(g)
            .or_default()
            .push(s.saturating_sub(first_queued[&g]) as f64 / 1000.0);
    }
    for v in out.values_mut() {
        v.sort_by(f64::total_cmp);
    }
    out
}

/// The recorded runs' per-group delays.
fn recorded(api: &str, runtime: &str) -> Vec<BTreeMap<u32, Vec<f64>>> {
    let dir = repo_path(&format!("tests/fixtures/calibration/first-{api}"));
    (1..=10)
        .map(|k| {
            let text = std::fs::read_to_string(dir.join(format!("{runtime}-{k}.txt")))
                .expect("a recording");
            let items: Vec<(u32, u64, u64)> = text
                .lines()
                .filter(|l| l.starts_with("item "))
                .map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    (
                        f[1].parse().unwrap(),
                        f[4].parse().unwrap(),
                        f[5].parse().unwrap(),
                    )
                })
                .collect();
            delays(&items)
        })
        .collect()
}

fn simulated(api: &str, policy: &str, seed: u64) -> BTreeMap<u32, Vec<f64>> {
    let text = calibration(api).replace("seed = 1", &format!("seed = {seed}"));
    let s = parse_scenario(&text, "first.toml").unwrap();
    let p = resolve_policy(policy).unwrap();
    let r = engine::simulate(&s, &p, &mut NullSink, &SimOptions::default());
    let items: Vec<(u32, u64, u64)> = r
        .trace
        .items
        .iter()
        .map(|i| {
            (
                i.group,
                i.queued.as_nanos() / 1000,
                i.started.as_nanos() / 1000,
            )
        })
        .collect();
    delays(&items)
}

#[test]
fn the_first_call_of_each_api_starts_its_bodies_as_late_as_measured() {
    for api in APIS {
        for (runtime, policy) in MODELS {
            let runs = recorded(api, runtime);
            let firsts: Vec<f64> = runs.iter().map(|r| r[&0][0]).collect();
            let lo = firsts.iter().cloned().fold(f64::MAX, f64::min);
            let hi = firsts.iter().cloned().fold(f64::MIN, f64::max);
            // The recordings show the cost: several ms on the first call,
            // under a millisecond on the second.
            assert!(lo > 2.0, "{api} {runtime}: {firsts:?}");
            for r in &runs {
                assert!(r[&1][0] < 1.0, "{api} {runtime}: {:?}", r[&1]);
            }
            let mut seen = Vec::new();
            let mut gaps = Vec::new();
            for seed in 1..=20 {
                let m = simulated(api, policy, seed);
                let (first, second) = (&m[&0], &m[&1]);
                // The first body waits for the drawn cost (the measured
                // range; the CPU rate of the run stretches it a little).
                assert!(
                    first[0] >= lo * 0.95 && first[0] <= hi * 1.08,
                    "{api} {policy} seed {seed}: first body at {:.2} ms, measured {lo:.2}..{hi:.2}",
                    first[0]
                );
                gaps.push(first[1] - first[0]);
                // The second call pays nothing.
                assert!(second[0] < 0.5, "{api} {policy} seed {seed}: {second:?}");
                seen.push(first[0]);
            }
            // The pool started a thread while the call compiled: the second
            // body follows the first as closely as measured (the medians
            // over the runs within a millisecond). Without that it would
            // wait for the pool's start-up after the compilation (1 to 8 ms
            // more on .NET 8).
            gaps.sort_by(f64::total_cmp);
            let mut real: Vec<f64> = runs.iter().map(|r| r[&0][1] - r[&0][0]).collect();
            real.sort_by(f64::total_cmp);
            let (model_gap, real_gap) = (gaps[10], real[5]);
            let within = (model_gap - real_gap).abs() < 1.0;
            let known = KNOWN_GAP_MISSES.contains(&(api, policy));
            assert!(
                within != known,
                "{api} {policy}: second body {model_gap:.2} ms after the first, measured \
                 {real_gap:.2} ms ({})",
                if known {
                    "a listed miss that passes: unlist it"
                } else {
                    "not within 1 ms"
                }
            );
            // Drawn per run, not one value.
            seen.sort_by(f64::total_cmp);
            assert!(seen[19] - seen[0] > 1.0, "{api} {policy}: {seen:?}");
        }
    }
}

#[test]
fn a_model_without_measured_costs_starts_the_first_call_at_once() {
    for api in APIS {
        let m = simulated(api, "net-classic", 1);
        assert!(m[&0][0] < 0.5, "{api}: {:?}", m[&0]);
    }
}

#[test]
fn explain_names_the_first_call_once() {
    let out = crate::common::poolsim(&[
        "explain",
        repo_path("scenarios/calibration/first-parallel-foreach.toml")
            .to_str()
            .unwrap(),
        "--policy",
        "net8",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("first Parallel.ForEach call"))
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(lines[0].contains("ms of CPU"), "{}", lines[0]);
}
