//! `poolsim reproduce`: the seeds' published measurements against the models.
//!
//! One row per published figure in `docs/reference.md`: the seed, what was
//! measured, the published figure, the simulated figure, the error and
//! pass/fail against that seed's tolerance. The scenario files are
//! compiled in (they are the `scenarios/seed-*.toml` files), so the command
//! works from any directory and a row always means the same run.

use serde::Serialize;

use crate::coordination;
use crate::engine::{self, SimOptions};
use crate::metrics;
use crate::policy_file::resolve_policy;
use crate::scenario::load::parse_scenario;
use crate::scenario::{Scenario, Submit};
use crate::time::SimTime;
use crate::trace::{NullSink, Trace};

/// One line of the reproduction table.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub seed: String,
    pub case: String,
    pub policy: String,
    pub scenario: String,
    pub published: String,
    pub simulated: String,
    pub error: String,
    pub tolerance: String,
    pub pass: bool,
}

/// How a row is judged.
enum Check {
    /// Makespan within a relative tolerance of the published total.
    Makespan { published_ms: f64, tolerance: f64 },
    /// Each start within `tolerance_ms` after removing one constant offset
    /// (the first start's), and the makespan within `makespan_tolerance`.
    StartsWithOffset {
        published: &'static [f64],
        tolerance_ms: f64,
        makespan_tolerance: f64,
    },
    /// Sorted start delays fall in batches: `(centre ms, how many)`.
    Batches {
        batches: &'static [(f64, usize)],
        tolerance_ms: f64,
        published: &'static str,
    },
    /// Every item starts within `max_ms` of its submission.
    StartWithin {
        max_ms: f64,
        published: &'static str,
    },
    /// Seed 003: the measured group's makespan within a relative
    /// tolerance, and its probes: the first waits ≥ 60 % of the makespan
    /// (unthrottled), or every probe stays under 1 ms (throttled).
    Responsiveness {
        group: &'static str,
        published_ms: f64,
        tolerance: f64,
        throttled: bool,
        published: &'static str,
    },
}

struct Spec {
    seed: &'static str,
    case: &'static str,
    file: &'static str,
    text: &'static str,
    policy: Option<&'static str>,
    check: Check,
}

/// A compiled-in scenario: (path, text).
type ScenarioFile = (&'static str, &'static str);

/// One published benchmark point: (count, mean ns, allocated bytes).
type OverheadPoint = (u64, f64, f64);

macro_rules! scenario_file {
    ($name:literal) => {
        (
            concat!("scenarios/", $name),
            include_str!(concat!("../../../scenarios/", $name)),
        )
    };
}

fn specs() -> Vec<Spec> {
    let mut v = Vec::new();
    let seed000 = [
        (
            "Task.Run x100 + WhenAll",
            scenario_file!("seed-000-task-run.toml"),
        ),
        (
            "Parallel.Invoke in Task.Run",
            scenario_file!("seed-000-parallel-invoke.toml"),
        ),
        (
            "Parallel.For in Task.Run",
            scenario_file!("seed-000-parallel-for.toml"),
        ),
        (
            "Parallel.ForEach in Task.Run",
            scenario_file!("seed-000-parallel-foreach.toml"),
        ),
        ("PLINQ in Task.Run", scenario_file!("seed-000-plinq.toml")),
    ];
    for (case, (file, text)) in seed000 {
        let plinq = file.contains("plinq");
        for (policy, published) in [
            ("net5", if plinq { 42_000.0 } else { 25_000.0 }),
            ("net6", if plinq { 42_000.0 } else { 9_000.0 }),
        ] {
            v.push(Spec {
                seed: "000",
                case,
                file,
                text,
                policy: Some(policy),
                check: Check::Makespan {
                    published_ms: published,
                    tolerance: 0.15,
                },
            });
        }
    }
    let (file, text) = scenario_file!("seed-001-burst.toml");
    v.push(Spec {
        seed: "001",
        case: "10 x Sleep(4000), default min",
        file,
        text,
        policy: None,
        check: Check::StartsWithOffset {
            published: &[
                32.0, 32.0, 33.0, 32.0, 661.0, 1661.0, 2660.0, 3661.0, 4035.0, 4035.0,
            ],
            tolerance_ms: 150.0,
            makespan_tolerance: 0.05,
        },
    });
    let (file, text) = scenario_file!("seed-001-min20.toml");
    v.push(Spec {
        seed: "001",
        case: "10 x Sleep(4000), SetMinThreads(20)",
        file,
        text,
        policy: None,
        check: Check::StartsWithOffset {
            published: &[27.0, 30.0, 30.0, 30.0, 27.0, 33.0, 32.0, 39.0, 27.0, 41.0],
            tolerance_ms: 150.0,
            makespan_tolerance: 0.05,
        },
    });
    let seed003: [(&str, ScenarioFile, f64, bool, &'static str); 6] = [
        (
            "sync, unthrottled, cold",
            scenario_file!("seed-003-sync-unthrottled.toml"),
            6290.0,
            false,
            "first probe 5.73 s of 6.29 s",
        ),
        (
            "sync, throttled, cold",
            scenario_file!("seed-003-sync-throttled.toml"),
            4690.0,
            true,
            "probes 0.025-0.098 ms, 4.69 s",
        ),
        (
            "sync, unthrottled, warm",
            scenario_file!("seed-003-sync-unthrottled-warm.toml"),
            3410.0,
            false,
            "first probe 2.87 s of 3.41 s",
        ),
        (
            "sync, throttled, warm",
            scenario_file!("seed-003-sync-throttled-warm.toml"),
            4690.0,
            true,
            "probes 0.024-0.075 ms, 4.69 s",
        ),
        (
            "async, unthrottled",
            scenario_file!("seed-003-async-unthrottled.toml"),
            7010.0,
            false,
            "first probe 4.28 s of 7.01 s",
        ),
        (
            "async, SemaphoreSlim(8)",
            scenario_file!("seed-003-async-throttled.toml"),
            6250.0,
            true,
            "probes 0.008-0.067 ms, 6.25 s",
        ),
    ];
    for (case, (file, text), published_ms, throttled, published) in seed003 {
        v.push(Spec {
            seed: "003",
            case,
            file,
            text,
            policy: None,
            check: Check::Responsiveness {
                group: "work",
                published_ms,
                tolerance: 0.25,
                throttled,
                published,
            },
        });
    }
    let (file, text) = scenario_file!("seed-004-test1-tight-loop.toml");
    v.push(Spec {
        seed: "004",
        case: "pool: 10 x Sleep(500), tight loop",
        file,
        text,
        policy: None,
        check: Check::Batches {
            batches: &[(0.0, 3), (500.0, 3), (1000.0, 4)],
            tolerance_ms: 60.0,
            published: "6,5,9 | 508,508,509 | 1005,1008,1008,1009",
        },
    });
    let (file, text) = scenario_file!("seed-004-test3-spaced.toml");
    v.push(Spec {
        seed: "004",
        case: "pool: 10 x Sleep(500), one per 500 ms",
        file,
        text,
        policy: None,
        check: Check::StartWithin {
            max_ms: 20.0,
            published: "1, 2, 0, 0, 0, 0, 0, 0, 0, 0",
        },
    });
    let (file, text) = scenario_file!("seed-004-workaround-sleep1.toml");
    v.push(Spec {
        seed: "004",
        case: "pool: workaround Sleep(1) after each queue",
        file,
        text,
        policy: None,
        check: Check::StartWithin {
            max_ms: 20.0,
            published: "the delay disappears",
        },
    });
    let new_threads: [(&str, ScenarioFile, &'static str); 3] = [
        (
            "new Thread: 10 x Sleep(500), tight loop",
            scenario_file!("seed-004-new-thread-tight-loop.toml"),
            "25, 25, 5, 4, 4, 5, 4, 3, 3, 3",
        ),
        (
            "new Thread: 10 x Sleep(10), tight loop",
            scenario_file!("seed-004-new-thread-short-sleeps.toml"),
            "9, 10, 11, 3, 3, 3, 3, 97, 46, 90",
        ),
        (
            "new Thread: 10 x Sleep(500), one per 500 ms",
            scenario_file!("seed-004-new-thread-spaced.toml"),
            "3, 2, 1, 1, 1, 1, 1, 1, 1, 2",
        ),
    ];
    for (case, (file, text), published) in new_threads {
        v.push(Spec {
            seed: "004",
            case,
            file,
            text,
            policy: None,
            check: Check::StartWithin {
                max_ms: 30.0,
                published,
            },
        });
    }
    v
}

fn fail_row(spec: &Spec, policy: &str, message: String) -> Row {
    Row {
        seed: spec.seed.into(),
        case: spec.case.into(),
        policy: policy.into(),
        scenario: spec.file.into(),
        published: String::new(),
        simulated: message,
        error: String::new(),
        tolerance: String::new(),
        pass: false,
    }
}

fn secs(ms: f64) -> String {
    format!("{:.2} s", ms / 1000.0)
}

/// The items of group `name` and the time window they span.
fn group_window(trace: &Trace, name: &str) -> Option<(u32, SimTime, SimTime)> {
    let g = trace.groups.iter().position(|n| n == name)? as u32;
    let items = trace.items.iter().filter(|i| i.group == g);
    let first = items.clone().map(|i| i.queued).min()?;
    let last = items.map(|i| i.finished).max()?;
    Some((g, first, last))
}

fn judge(
    spec: &Spec,
    scenario: &Scenario,
    trace: &Trace,
    completed: bool,
) -> (String, String, String, String, bool) {
    let summary = metrics::summarize(trace);
    let delays: Vec<f64> = trace
        .items
        .iter()
        .map(|i| i.started.as_ms_f64() - i.queued.as_ms_f64())
        .collect();
    match &spec.check {
        Check::Makespan {
            published_ms,
            tolerance,
        } => {
            let err = (summary.makespan_ms - published_ms) / published_ms;
            (
                secs(*published_ms),
                secs(summary.makespan_ms),
                format!("{:+.1} %", err * 100.0),
                format!("±{:.0} %", tolerance * 100.0),
                completed && err.abs() <= *tolerance,
            )
        }
        Check::StartsWithOffset {
            published,
            tolerance_ms,
            makespan_tolerance,
        } => {
            let starts: Vec<f64> = trace.items.iter().map(|i| i.started.as_ms_f64()).collect();
            if starts.len() != published.len() {
                return (
                    format!("{} starts", published.len()),
                    format!("{} starts", starts.len()),
                    String::new(),
                    String::new(),
                    false,
                );
            }
            let offset = published[0] - starts[0];
            let worst = starts
                .iter()
                .zip(published.iter())
                .map(|(s, p)| (s + offset - p).abs())
                .fold(0.0, f64::max);
            let last_published = published.iter().cloned().fold(0.0, f64::max);
            let body_ms =
                summary.makespan_ms - starts.iter().cloned().fold(0.0, f64::max) + starts[0];
            let published_makespan = last_published - published[0] + body_ms;
            let makespan_err = (summary.makespan_ms - published_makespan) / published_makespan;
            let shown: Vec<String> = starts
                .iter()
                .map(|s| format!("{:.0}", s + offset))
                .collect();
            let published_shown: Vec<String> =
                published.iter().map(|p| format!("{p:.0}")).collect();
            (
                published_shown.join(","),
                shown.join(","),
                format!(
                    "starts ≤ {worst:.0} ms, makespan {:+.1} %",
                    makespan_err * 100.0
                ),
                format!(
                    "±{tolerance_ms:.0} ms, ±{:.0} %",
                    makespan_tolerance * 100.0
                ),
                completed && worst <= *tolerance_ms && makespan_err.abs() <= *makespan_tolerance,
            )
        }
        Check::Batches {
            batches,
            tolerance_ms,
            published,
        } => {
            let mut sorted = delays.clone();
            sorted.sort_by(f64::total_cmp);
            let mut worst = 0.0f64;
            let mut k = 0;
            let mut ok = sorted.len() == batches.iter().map(|b| b.1).sum::<usize>();
            for (centre, n) in batches.iter() {
                for _ in 0..*n {
                    match sorted.get(k) {
                        Some(d) => worst = worst.max((d - centre).abs()),
                        None => ok = false,
                    }
                    k += 1;
                }
            }
            let shown: Vec<String> = delays.iter().map(|d| format!("{d:.0}")).collect();
            (
                published.to_string(),
                shown.join(","),
                format!("worst {worst:.0} ms from its batch"),
                format!("±{tolerance_ms:.0} ms"),
                completed && ok && worst <= *tolerance_ms,
            )
        }
        Check::StartWithin { max_ms, published } => {
            let worst = delays.iter().cloned().fold(0.0, f64::max);
            let shown: Vec<String> = delays.iter().map(|d| format!("{d:.0}")).collect();
            (
                published.to_string(),
                shown.join(","),
                format!("max {worst:.1} ms"),
                format!("≤ {max_ms:.0} ms"),
                completed && worst <= *max_ms,
            )
        }
        Check::Responsiveness {
            group,
            published_ms,
            tolerance,
            throttled,
            published,
        } => {
            let Some((_, first, last)) = group_window(trace, group) else {
                return (
                    published.to_string(),
                    format!("no group {group} in {}", scenario.name),
                    String::new(),
                    String::new(),
                    false,
                );
            };
            let makespan = last.as_ms_f64() - first.as_ms_f64();
            let probes: Vec<f64> = trace
                .probes
                .iter()
                .filter(|p| p.queued >= first && p.queued <= last && p.started != SimTime::MAX)
                .map(|p| p.started.as_ms_f64() - p.queued.as_ms_f64())
                .collect();
            let err = (makespan - published_ms) / published_ms;
            let max_probe = probes.iter().cloned().fold(0.0, f64::max);
            let first_probe = probes.first().copied().unwrap_or(0.0);
            let (probe_ok, probe_text, rule) = if *throttled {
                (
                    !probes.is_empty() && max_probe <= 1.0,
                    format!("{} probes ≤ {:.3} ms", probes.len(), max_probe),
                    "probes ≤ 1 ms",
                )
            } else {
                (
                    first_probe >= 0.6 * makespan,
                    format!("first probe {}", secs(first_probe)),
                    "first probe ≥ 60 % of makespan",
                )
            };
            (
                published.to_string(),
                format!("{probe_text}, {}", secs(makespan)),
                format!("makespan {:+.1} %", err * 100.0),
                format!("{rule}; ±{:.0} %", tolerance * 100.0),
                completed && probe_ok && err.abs() <= *tolerance,
            )
        }
    }
}

/// Seed 002's rows: the coordination-overhead model against the benchmark.
fn overhead_rows() -> Vec<Row> {
    let published: [(Submit, &str, [OverheadPoint; 5]); 2] = [
        (
            Submit::WhenAll,
            "Task.WhenAll (started tasks)",
            [
                (2, 58.48, 120.0),
                (5, 98.48, 144.0),
                (10, 165.26, 184.0),
                (25, 360.30, 304.0),
                (300, 4104.64, 2504.0),
            ],
        ),
        (
            Submit::ParallelForEachAsync,
            "Parallel.ForEachAsync (unlimited)",
            [
                (2, 411.32, 392.0),
                (5, 801.97, 392.0),
                (10, 1493.07, 392.0),
                (25, 3197.74, 392.0),
                (300, 35937.42, 392.0),
            ],
        ),
    ];
    let mut rows = Vec::new();
    for (submit, label, points) in published {
        let Some(cost) = coordination::cost(submit) else {
            continue;
        };
        for (n, mean, bytes) in points {
            let sim_ns = cost.time_ns(n);
            let sim_b = cost.bytes(n);
            let err_t = (sim_ns - mean) / mean;
            let err_b = (sim_b - bytes) / bytes;
            rows.push(Row {
                seed: "002".into(),
                case: format!("{label}, count {n}"),
                policy: "coordination model".into(),
                scenario: "scenarios/seed-002-overhead.toml".into(),
                published: format!("{mean:.1} ns, {bytes:.0} B"),
                simulated: format!("{sim_ns:.1} ns, {sim_b:.0} B"),
                error: format!("{:+.1} %, {:+.1} %", err_t * 100.0, err_b * 100.0),
                tolerance: "±10 %, ±10 %".into(),
                pass: err_t.abs() <= 0.10 && err_b.abs() <= 0.10,
            });
        }
    }
    rows
}

/// The seeds `reproduce` knows.
pub const SEEDS: &[&str] = &["000", "001", "002", "003", "004"];

/// Runs one row.
fn run_spec(spec: &Spec) -> Row {
    let scenario = match parse_scenario(spec.text, spec.file) {
        Ok(s) => s,
        Err(e) => return fail_row(spec, spec.policy.unwrap_or("-"), e.to_string()),
    };
    let policy_name = spec.policy.unwrap_or(&scenario.pool.policy).to_string();
    let policy = match resolve_policy(&policy_name) {
        Ok(p) => p,
        Err(e) => return fail_row(spec, &policy_name, e.to_string()),
    };
    let result = engine::simulate(&scenario, &policy, &mut NullSink, &SimOptions::default());
    let (published, simulated, error, tolerance, pass) = judge(
        spec,
        &scenario,
        &result.trace,
        result.outcome.is_completed(),
    );
    Row {
        seed: spec.seed.into(),
        case: spec.case.into(),
        policy: policy_name,
        scenario: spec.file.into(),
        published,
        simulated,
        error,
        tolerance,
        pass,
    }
}

/// A row the current models miss, and why (the test
/// `every_reference_row_passes_except_the_documented_misses` keeps the list
/// true: it fails when a listed row passes).
#[derive(Clone, Copy, Debug)]
pub struct KnownMiss {
    pub seed: &'static str,
    pub case: &'static str,
    pub policy: &'static str,
    pub reason: &'static str,
}

/// The rows the models miss today.
pub const KNOWN_MISSES: &[KnownMiss] = &[KnownMiss {
    seed: "003",
    case: "async, unthrottled",
    policy: "net-classic",
    // Seeds 1-30 give 58.4-59.8 %.
    reason: "first probe 4.25 s (published 4.28 s) but the run ends at 7.22 s (published 7.01 s, +3 %), so the probe is 58.9 % of the run against the rule's 60 % (published: 61.1 %); the model's tail after the first probe is 10 % slower (2.47 s vs 2.23 s): fewer threads late in the run, mechanism not found",
}];

/// Why `row` is a known miss, if it is one.
pub fn known_miss(row: &Row) -> Option<&'static str> {
    KNOWN_MISSES
        .iter()
        .find(|m| row.seed == m.seed && row.case == m.case && row.policy == m.policy)
        .map(|m| m.reason)
}

/// Runs every row of `seed` (all seeds when `None`), in seed order.
pub fn reproduce(seed: Option<&str>) -> Vec<Row> {
    let specs = specs();
    let mut rows = Vec::new();
    for s in SEEDS {
        if seed.is_some_and(|f| f != *s) {
            continue;
        }
        if *s == "002" {
            rows.extend(overhead_rows());
            continue;
        }
        rows.extend(specs.iter().filter(|x| x.seed == *s).map(run_spec));
    }
    rows
}
