//! `poolsim sweep` and `sweep-merge`: identical bytes on reruns, merged
//! shards equal to the single-machine sweep, bad keys and values refused
//! before any run, `--best`, run order and seeds, Ctrl-C keeping the
//! finished rows, and a 1,000-run sweep finishing fast.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use poolsim::sweep::grid::{Value, parse_set};
use poolsim::sweep::run::execute;
use poolsim::sweep::table::metric_index;
use poolsim::sweep::{Plan, SweepInput, SweepTable};

use crate::common::repo_path;

const SCENARIO: &str = "scenarios/sweep-seed-003-throttle.toml";

fn poolsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_poolsim"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("poolsim runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A fresh directory of this file's own (the rule: `common::temp_dir`).
fn temp_dir(name: &str) -> PathBuf {
    crate::common::temp_dir(&format!("sweep-{name}"))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The README's sweep, smaller: 16 limits x 2 policies x 3 seeds.
fn sweep_args<'a>(csv: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "sweep",
        SCENARIO,
        "--set",
        "group.work.throttle.limit=1..64:4",
        "--policy",
        "net5",
        "--policy",
        "net6",
        "--seeds",
        "3",
        "--metric",
        "makespan_ms",
        "--metric",
        "probe_latency_max_ms",
        "--csv",
        csv,
        "-q",
    ];
    args.extend_from_slice(extra);
    args
}

#[test]
fn the_same_sweep_twice_writes_identical_csv_and_png() {
    let dir = temp_dir("twice");
    let mut outputs = Vec::new();
    for (i, jobs) in ["1", "2"].iter().enumerate() {
        let csv = dir.join(format!("{i}.csv"));
        let png = dir.join(format!("{i}.png"));
        let o = poolsim(&sweep_args(s(&csv), &["--png", s(&png), "-j", jobs]));
        assert!(o.status.success(), "{}", text(&o.stderr));
        outputs.push((std::fs::read(&csv).unwrap(), std::fs::read(&png).unwrap()));
    }
    assert_eq!(outputs[0].0, outputs[1].0, "CSV differs between runs");
    assert_eq!(outputs[0].1, outputs[1].1, "PNG differs between runs");
    assert!(outputs[0].1.starts_with(b"\x89PNG"));
    let table = SweepTable::from_csv(&outputs[0].0, "0.csv").unwrap();
    // (1 as written + 16 limits x 2 policies) x 3 seeds.
    assert_eq!(table.runs, (1 + 16 * 2) * 3);
    assert_eq!(table.rows.len(), table.runs);
    assert!(table.rows.iter().enumerate().all(|(i, r)| r.run == i));
}

#[test]
fn merged_shards_equal_the_single_machine_sweep_byte_for_byte() {
    let dir = temp_dir("shards");
    let full_csv = dir.join("full.csv");
    let full_png = dir.join("full.png");
    let best = "minimize makespan_ms subject to probe_latency_max_ms < 50";
    let o = poolsim(&sweep_args(
        s(&full_csv),
        &[
            "--png",
            s(&full_png),
            "--best",
            best,
            "--title",
            "seed 003 sweep",
        ],
    ));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let full_out = text(&o.stdout);

    let mut shards = Vec::new();
    for k in 1..=3 {
        let csv = dir.join(format!("shard-{k}.csv"));
        let shard = format!("{k}/3");
        let o = poolsim(&sweep_args(s(&csv), &["--shard", &shard, "-j", "1"]));
        assert!(o.status.success(), "{}", text(&o.stderr));
        shards.push(csv);
    }
    // A shard holds exactly its stripe of runs.
    let second = SweepTable::from_csv(&std::fs::read(&shards[1]).unwrap(), "2").unwrap();
    assert!(second.rows.iter().all(|r| r.run % 3 == 1));

    let merged_csv = dir.join("merged.csv");
    let merged_png = dir.join("merged.png");
    let mut args = vec!["sweep-merge"];
    // Out of order on purpose.
    args.extend([s(&shards[2]), s(&shards[0]), s(&shards[1])]);
    args.extend([
        "--csv",
        s(&merged_csv),
        "--png",
        s(&merged_png),
        "--metric",
        "makespan_ms",
        "--metric",
        "probe_latency_max_ms",
        "--best",
        best,
        // A merge knows the runs, not the scenario's name: the same title
        // gives the same chart.
        "--title",
        "seed 003 sweep",
    ]);
    let o = poolsim(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        std::fs::read(&merged_csv).unwrap(),
        std::fs::read(&full_csv).unwrap(),
        "merged CSV differs from the single-machine sweep"
    );
    assert_eq!(
        std::fs::read(&merged_png).unwrap(),
        std::fs::read(&full_png).unwrap(),
        "merged PNG differs from the single-machine sweep"
    );
    // The same best point either way.
    let best_of = |out: &str| {
        out.lines()
            .skip_while(|l| !l.starts_with("best ("))
            .take(2)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let merged_out = text(&o.stdout);
    assert!(!best_of(&full_out).is_empty(), "{full_out}");
    assert_eq!(best_of(&full_out), best_of(&merged_out));

    // A missing shard is refused, naming the missing runs.
    let o = poolsim(&[
        "sweep-merge",
        s(&shards[0]),
        s(&shards[1]),
        "--csv",
        s(&dir.join("partial.csv")),
        "--png",
        s(&dir.join("partial.png")),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("runs are missing (runs 2, 5"),
        "{}",
        text(&o.stderr)
    );

    // A shard of another sweep is refused.
    let other = dir.join("other.csv");
    let o = poolsim(&[
        "sweep",
        SCENARIO,
        "--set",
        "group.work.throttle.limit=1..64:4",
        "--policy",
        "net5",
        "--policy",
        "net6",
        "--seeds",
        "2",
        "--shard",
        "3/3",
        "--csv",
        s(&other),
        "-q",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = poolsim(&[
        "sweep-merge",
        s(&shards[0]),
        s(&shards[1]),
        s(&other),
        "--csv",
        s(&dir.join("mixed.csv")),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("not shards of one sweep"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn bad_keys_ranges_and_values_are_refused_before_any_run() {
    let dir = temp_dir("refused");
    let csv = dir.join("never.csv");
    let png = dir.join("never.png");
    let cases: &[(&[&str], &[&str])] = &[
        // A group that does not exist: the groups are listed.
        (
            &["--set", "group.wrok.throttle.limit=1,2"],
            &["group.wrok.throttle.limit", "work (group[0])"],
        ),
        // A typo in a key: the loader's message with the allowed keys.
        (
            &["--set", "machine.core=1,2"],
            &["machine.core", "did you mean `cores`"],
        ),
        // An empty range.
        (
            &["--set", "pool.min_threads=64..1"],
            &["pool.min_threads=64..1", "is empty", "START <= END"],
        ),
        // A value out of range at one point of the grid.
        (
            &["--set", "group.work.throttle.limit=0..64:8"],
            &[
                "group.work.throttle.limit=0",
                "`group[0].throttle.limit`",
                "must be between 1 and 32767, found 0",
                "refused before any run",
            ],
        ),
        // A policy constant out of range, under one policy.
        (
            &["--set", "policy.gate.period_ms=0,500", "--policy", "net6"],
            &["--policy net6", "policy.gate.period_ms=0", "gate.period_ms"],
        ),
        // A table is not a number.
        (
            &["--set", "group.work.throttle=4"],
            &["is a table, not a number", "kind, limit"],
        ),
        // A wrapping policy's constants are its base's.
        (
            &[
                "--set",
                "policy.hill_climbing.bias=0.1",
                "--policy",
                "net6-throttled",
            ],
            &["wraps `net6`", "--policy net6"],
        ),
        (
            &["--set", "machine.cores=1", "--metric", "latency"],
            &["unknown metric `latency`", "probe_latency_max_ms"],
        ),
        (
            &["--set", "machine.cores=1", "--best", "fastest"],
            &["--best", "minimize METRIC"],
        ),
        (
            &["--set", "machine.cores=1", "--seeds", "0"],
            &["--seeds 0"],
        ),
        (
            &["--set", "machine.cores=1", "--x", "pool.min_threads"],
            &["--x pool.min_threads", "machine.cores"],
        ),
        (
            &["--set", "machine.cores=1", "--shard", "4/3"],
            &["--shard 4/3", "1 <= K <= N"],
        ),
    ];
    for (flags, needles) in cases {
        let mut args = vec!["sweep", SCENARIO, "--csv", s(&csv), "--png", s(&png)];
        args.extend_from_slice(flags);
        let o = poolsim(&args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flags:?}: {err}");
        for needle in *needles {
            assert!(
                err.contains(needle),
                "{flags:?}: missing {needle:?} in\n{err}"
            );
        }
        assert!(!err.contains("panicked"), "{err}");
        assert!(!csv.exists() && !png.exists(), "{flags:?} wrote a file");
        assert!(o.stdout.is_empty(), "{flags:?} ran: {}", text(&o.stdout));
    }
}

#[test]
fn best_finds_the_min_threads_that_starts_every_sleeper_at_once() {
    let dir = temp_dir("best");
    let o = poolsim(&[
        "sweep",
        "scenarios/seed-001-burst.toml",
        "--set",
        "pool.min_threads=1..16",
        "--best",
        "minimize makespan_ms",
        "--csv",
        s(&dir.join("b.csv")),
        "--png",
        s(&dir.join("b.png")),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    // Ten sleepers: ten threads at once end the burst at 4 s, against 8 s
    // with the default four.
    assert!(
        out.contains("policy net-classic, pool.min_threads = 10"),
        "{out}"
    );
    assert!(
        out.contains("gain: makespan_ms 50.0 % lower (8000.2 -> 4000.6)"),
        "{out}"
    );
    assert!(out.contains("net-classic (as written)"), "{out}");
}

fn burst_input(sets: &[&str], policies: &[&str], seeds: u32) -> SweepInput {
    let path = repo_path("scenarios/seed-001-burst.toml");
    SweepInput {
        scenario_text: std::fs::read_to_string(&path).unwrap(),
        scenario_file: "scenarios/seed-001-burst.toml".to_string(),
        axes: sets.iter().map(|s| parse_set(s).unwrap()).collect(),
        policies: policies.iter().map(|s| s.to_string()).collect(),
        seeds,
        arrivals: Default::default(),
    }
}

#[test]
fn runs_are_in_grid_order_with_seeds_counting_up_from_the_scenarios() {
    let plan = Plan::build(&burst_input(
        &["pool.min_threads=4,10", "policy.gate.period_ms=100,500"],
        &["net5", "net6"],
        2,
    ))
    .unwrap();
    assert_eq!(plan.total_runs(), (1 + 4 * 2) * 2);
    let done = execute(
        &plan,
        &plan.runs(None),
        Some(2),
        &AtomicBool::new(false),
        &|| {},
    )
    .unwrap();
    assert!(!done.interrupted);
    let rows = &done.rows;
    // As written first, then net5's points, then net6's; the first key slowest.
    assert_eq!(rows[0].point, None);
    assert_eq!(rows[0].policy, "net-classic");
    assert_eq!((rows[0].seed, rows[1].seed), (1, 2));
    let net5: Vec<(Option<Value>, Option<Value>)> = rows[2..10]
        .iter()
        .step_by(2)
        .map(|r| (r.values[0], r.values[1]))
        .collect();
    assert_eq!(
        net5,
        vec![
            (Some(Value::Int(4)), Some(Value::Int(100))),
            (Some(Value::Int(4)), Some(Value::Int(500))),
            (Some(Value::Int(10)), Some(Value::Int(100))),
            (Some(Value::Int(10)), Some(Value::Int(500))),
        ]
    );
    assert!(rows[2..10].iter().all(|r| r.policy == "net5"));
    assert!(rows[10..].iter().all(|r| r.policy == "net6"));
    assert!(rows.iter().all(|r| r.seed == 1 + u64::from(r.replicate)));
    // The gate period is the policy's: a gate thread checking every 100 ms
    // injects threads sooner than one checking every 500 ms.
    let makespan = metric_index("makespan_ms").unwrap();
    let at = |i: usize| rows[i].metrics[makespan].unwrap();
    assert!(at(2) < at(4), "100 ms gate {} vs 500 ms {}", at(2), at(4));
    // As written (net-classic, min 4, 500 ms) equals net5 at the same settings.
    assert_eq!(at(0), at(4));
}

#[test]
fn a_cancelled_sweep_starts_no_more_runs() {
    let plan = Plan::build(&burst_input(&["pool.min_threads=1..8"], &[], 1)).unwrap();
    let done = execute(
        &plan,
        &plan.runs(None),
        Some(1),
        &AtomicBool::new(true),
        &|| {},
    )
    .unwrap();
    assert!(done.interrupted);
    assert!(done.rows.is_empty());
    assert_eq!(done.wanted, 9);
}

#[test]
fn a_thousand_run_sweep_of_a_seed_scenario_runs_every_point() {
    let input = SweepInput {
        scenario_text: std::fs::read_to_string(repo_path(SCENARIO)).unwrap(),
        scenario_file: SCENARIO.to_string(),
        axes: vec![parse_set("group.work.throttle.limit=1..64").unwrap()],
        policies: vec!["net5".into(), "net6".into()],
        seeds: 8,
        arrivals: Default::default(),
    };
    // Its speed is measured in a release build (README, "Speed"), not here.
    let plan = Plan::build(&input).unwrap();
    let runs = plan.runs(None);
    assert_eq!(runs.len(), 1032);
    let done = execute(&plan, &runs, None, &AtomicBool::new(false), &|| {}).unwrap();
    assert_eq!(done.rows.len(), 1032);
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_the_sweep_and_keeps_the_finished_rows() {
    let dir = temp_dir("ctrl-c");
    let csv = dir.join("partial.csv");
    let child = Command::new(env!("CARGO_BIN_EXE_poolsim"))
        .args([
            "sweep",
            SCENARIO,
            "--set",
            "group.work.throttle.limit=1..64",
            "--policy",
            "net5",
            "--policy",
            "net6",
            "--seeds",
            "400",
            "-j",
            "1",
            "-q",
            "--csv",
            s(&csv),
            "--png",
            s(&dir.join("partial.png")),
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let o = child.wait_with_output().unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted:"), "{err}");
    let table = SweepTable::from_csv(&std::fs::read(&csv).unwrap(), "partial.csv").unwrap();
    assert!(!table.rows.is_empty());
    assert!(
        table.rows.len() < table.runs,
        "{} of {}",
        table.rows.len(),
        table.runs
    );
    assert!(table.rows.windows(2).all(|w| w[0].run < w[1].run));
}
