//! Every answer a distribution: `run --runs N` over seeds, the outcomes a
//! model gives run to run, and tiered compilation's start-up work as one
//! of their sources.

use poolsim::engine::SimOptions;
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::ArrivalDraws;
use poolsim::scenario::load::parse_scenario;
use poolsim::spread::spread;

use crate::common::poolsim;

#[test]
fn run_with_runs_prints_the_distribution_and_is_byte_identical() {
    let args = [
        "run",
        "scenarios/seed-001-burst.toml",
        "--runs",
        "200",
        "--json",
    ];
    let a = poolsim(&args);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let b = poolsim(&args);
    assert_eq!(a.stdout, b.stdout, "same scenario + seeds => same bytes");
    let v: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    assert_eq!(v["runs"], 200);
    let m = &v["makespan_ms"];
    let q: Vec<f64> = ["min", "p5", "p50", "p95", "max"]
        .iter()
        .map(|k| m[k].as_f64().unwrap())
        .collect();
    assert!(q.windows(2).all(|w| w[0] <= w[1]), "{q:?}");
    let outcomes = v["outcomes"].as_array().unwrap();
    assert!(!outcomes.is_empty());
    let share: f64 = outcomes.iter().map(|o| o["share"].as_f64().unwrap()).sum();
    assert!((share - 1.0).abs() < 1e-9, "{share}");
    for o in outcomes {
        assert!(o["makespan_ms"].as_f64().unwrap() >= q[0]);
        assert!(o["threads_peak"].as_u64().unwrap() >= 1);
    }
}

#[test]
fn run_without_runs_keeps_its_single_run_output() {
    let o = poolsim(&["run", "scenarios/seed-001-burst.toml", "--json"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v.get("outcomes").is_none(), "{v}");
    assert!(v["makespan_ms"].is_number(), "{v}");
}

/// On .NET Core 3.1 tiered compilation's start-up timer starts the gate
/// thread before the program's first request, at a phase the program does
/// not control; staggered sleeps then end differently run to run (measured
/// here on `scenarios/validation/staggered-arrivals.toml`, 30 x Sleep(650)
/// every 100 ms on 2 cores: 7.14, 6.50 and 5.86 s with it on, 7.00 s three
/// times with it off). The model draws that phase from the seed only when
/// tiering is on (the TickCount grid's phase, drawn either way, moves a
/// quarter of the runs by one round).
#[test]
fn tiered_compilation_spreads_the_classic_pool_s_outcomes() {
    let text = |tiered: bool| {
        format!(
            "[machine]\ncores = 2\n[pool]\npolicy = \"coreclr3-linux\"\n\
             tiered_compilation = {tiered}\n\
             [[group]]\nname = \"s\"\ncount = 30\n\
             arrival = {{ every_ms = 100 }}\nbody = [ {{ sleep_ms = 650 }} ]\n"
        )
    };
    let policy = resolve_policy("coreclr3-linux").unwrap();
    let on = spread(
        &parse_scenario(&text(true), "on.toml").unwrap(),
        &policy,
        100,
        ArrivalDraws::PerRun,
        &SimOptions::default(),
    );
    let off = spread(
        &parse_scenario(&text(false), "off.toml").unwrap(),
        &policy,
        100,
        ArrivalDraws::PerRun,
        &SimOptions::default(),
    );
    // Off, the TickCount grid alone still moves some runs (two outcomes);
    // on, the gate's phase gives more, and earlier ones: the measured runs
    // with it on end up to 1.1 s before the 7.00 s of every run with it off.
    assert!(
        on.outcomes.len() > off.outcomes.len(),
        "{:?}\n{:?}",
        on.outcomes,
        off.outcomes
    );
    assert!(
        on.makespan_ms.min < off.makespan_ms.min - 300.0,
        "{:?} {:?}",
        on.makespan_ms,
        off.makespan_ms
    );
    assert!(
        off.makespan_ms.covers(7000.0, 0.02),
        "{:?}",
        off.makespan_ms
    );
    // The measured runs with tiering on lie inside the model's range, but
    // for the 5.86 s run: with the measured gate drift (a distribution of
    // median 0.33 ms a tick, where a fixed 0.5 ms stood) the model
    // reaches 5.95 s in 1 of 1000 seeds (5 of 1000 before), none of these
    // 100. Pinned so that a model that covers it again says so.
    for real in [7140.0, 6500.0] {
        assert!(
            on.makespan_ms.covers(real, 0.02),
            "{real} {:?}",
            on.makespan_ms
        );
    }
    assert!(
        !on.makespan_ms.covers(5860.0, 0.02),
        "5860 ms now covered: {:?}",
        on.makespan_ms
    );
}

/// The measured timing, per item: on the Linux policies a `Thread.Sleep`
/// returns a little late (the measured overshoot) and a `Task.Delay` on
/// CoreCLR is due on the 4 ms `TickCount` grid (up to a step early or
/// late); Mono's timers are exact but wake late; the Windows-derived
/// policies keep exact timing.
#[test]
fn sleeps_and_timers_end_as_measured_on_linux_and_exactly_elsewhere() {
    use poolsim::engine::{self, SimOptions};
    use poolsim::trace::NullSink;
    let offsets = |policy: &str, step: &str, seed: u64| -> Vec<f64> {
        let text = format!(
            "seed = {seed}\n[machine]\ncores = 2\n[pool]\npolicy = \"{policy}\"\nmin_threads = 20\n\
             [[group]]\nname = \"g\"\ncount = 10\narrival = {{ every_ms = 7 }}\nbody = [ {{ {step} = 1000 }} ]\n"
        );
        let s = parse_scenario(&text, "t.toml").unwrap();
        let p = resolve_policy(policy).unwrap();
        let r = engine::simulate(&s, &p, &mut NullSink, &SimOptions::default());
        r.trace
            .items
            .iter()
            .map(|i| i.finished.as_ms_f64() - i.started.as_ms_f64() - 1000.0)
            .collect()
    };
    for seed in 1..=5 {
        for step in ["sleep_ms", "wait_ms", "await_ms"] {
            // Exact: the same for every item (a released waiter's 20 us wake-up at most).
            let o = offsets("net-classic", step, seed);
            assert!(
                o.iter()
                    .all(|&x| (x - o[0]).abs() < 1e-9 && x.abs() <= 0.02 + 1e-9),
                "{step} {o:?}"
            );
        }
        let sleeps = offsets("net8", "sleep_ms", seed);
        assert!(
            sleeps.iter().all(|&o| (0.08..=1.94).contains(&o)),
            "{sleeps:?}"
        );
        let delays = offsets("net8", "await_ms", seed);
        assert!(
            delays.iter().all(|&o| (-4.0..=6.0).contains(&o)),
            "{delays:?}"
        );
        let mono = offsets("mono", "await_ms", seed);
        assert!(mono.iter().all(|&o| (0.06..=2.0).contains(&o)), "{mono:?}");
    }
    // Over seeds the timers end both early (due on CoreCLR's 4 ms grid, up
    // to a step before `d`) and late (never early by more than a step; late
    // by the timer thread's wake-up overshoot, more than a released
    // waiter's 20 us).
    let all: Vec<f64> = (1..=5)
        .flat_map(|seed| offsets("coreclr3-linux", "await_ms", seed))
        .collect();
    assert!(
        all.iter().any(|&o| o < -0.5) && all.iter().any(|&o| o > 0.05),
        "{all:?}"
    );
    assert!(all.iter().all(|&o| o > -4.0), "{all:?}");
}

#[test]
fn a_chart_of_one_run_says_which_outcome_it_shows() {
    // Ten Sleep(1000)s on two cores, .NET Core 3.1's model: the gate's
    // phase (tiered compilation), the TickCount grid and the sleeps'
    // overshoot give several outcomes over 50 seeds; the chart is the run
    // of seed 8.
    let dir = std::env::temp_dir().join(format!("poolsim-outcome-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("one.svg");
    let out = poolsim(&[
        "run",
        "scenarios/validation/round/sleep-burst.toml",
        "--policy",
        "coreclr3-linux",
        "--seed",
        "8",
        "--runs",
        "50",
        "--items",
        "0",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let line = text
        .lines()
        .find(|l| l.starts_with("the run above (seed 8) is outcome "))
        .expect("the table says which outcome");
    let k: usize = line["the run above (seed 8) is outcome ".len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let outcomes = text.lines().filter(|l| l.contains("% of runs:")).count();
    assert!(outcomes >= 2, "{text}");
    let chart = std::fs::read_to_string(&svg).unwrap();
    assert!(
        chart.contains(&format!("seed 8: outcome {k} of {outcomes} (")),
        "the chart's title names outcome {k} of {outcomes}"
    );
    assert!(
        chart.contains("2 cores"),
        "the chart's title names the machine"
    );
    let one = dir.join("one-core.svg");
    let out = poolsim(&[
        "run",
        "scenarios/validation/one-core.toml",
        "--items",
        "0",
        "--svg",
        one.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let chart = std::fs::read_to_string(&one).unwrap();
    assert!(
        chart.contains("1 core ") || chart.contains("1 core<"),
        "one core, not '1 cores'"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn fixed_draws_vary_the_pool_alone_and_per_run_draws_the_arrivals_too() {
    // Poisson arrivals of round sleeps on one core: the gate's phase (a
    // seeded stream) moves the outcome; with the draws held (validation,
    // `--fixed-arrivals`) the arrival instants must not move, as every
    // real run of the file replays the same ones.
    let s = parse_scenario(
        "name = \"poisson\"\nseed = 3\n[machine]\ncores = 1\n[pool]\npolicy = \"net8\"\n\
         [[group]]\nname = \"g\"\ncount = 12\narrival = { poisson_per_s = 20 }\n\
         body = [ { sleep_ms = 1000 } ]\n",
        "poisson.toml",
    )
    .unwrap();
    let policy = resolve_policy("net8").unwrap();
    let queued = |s: &poolsim::scenario::Scenario| -> Vec<u64> {
        let r = poolsim::engine::simulate(
            s,
            &policy,
            &mut poolsim::trace::NullSink,
            &SimOptions::default(),
        );
        r.trace.items.iter().map(|i| i.queued.as_nanos()).collect()
    };
    let first = queued(&s);
    let mut starts = std::collections::BTreeSet::new();
    for k in 1..20 {
        let other = s.for_run(k, ArrivalDraws::Fixed);
        assert_eq!(queued(&other), first, "seed {}: arrivals moved", s.seed + k);
        let r = poolsim::engine::simulate(
            &other,
            &policy,
            &mut poolsim::trace::NullSink,
            &SimOptions::default(),
        );
        starts.insert(
            r.trace
                .items
                .iter()
                .map(|i| i.started.as_nanos())
                .collect::<Vec<_>>(),
        );
    }
    assert!(
        starts.len() > 1,
        "the pool's own randomness should still vary the starts"
    );
    // A scenario's own seed (--seed) still draws its own arrivals.
    let mut reseeded = s.clone();
    reseeded.seed += 1;
    assert_ne!(queued(&reseeded), first);
    // Drawn per run (the default of `--runs`): run k's arrivals are those
    // of seed S + k, the run `--seed S+k` makes alone.
    assert_eq!(queued(&s.for_run(0, ArrivalDraws::PerRun)), first);
    for k in 1..5 {
        let per_run = s.for_run(k, ArrivalDraws::PerRun);
        let mut alone = s.clone();
        alone.seed += k;
        assert_eq!(queued(&per_run), queued(&alone), "run {k}");
        assert_ne!(queued(&per_run), first, "run {k}");
    }
    // A workload without random arrivals keeps its seed either way.
    let every = parse_scenario(
        "seed = 3\n[machine]\ncores = 1\n[pool]\npolicy = \"net8\"\n\
         [[group]]\nname = \"g\"\ncount = 4\narrival = { every_ms = 50 }\n\
         body = [ { sleep_ms = 100 } ]\n",
        "every.toml",
    )
    .unwrap();
    assert!(!every.has_random_arrivals() && s.has_random_arrivals());
    assert_eq!(every.for_run(2, ArrivalDraws::PerRun).workload_seed(), 3);
}

/// The standard output of `poolsim ARGS EXTRA`, which must succeed.
fn stdout_of(args: &[&str], extra: &[&str]) -> String {
    let all: Vec<&str> = args.iter().chain(extra).copied().collect();
    let out = poolsim(&all);
    assert!(
        out.status.success(),
        "{all:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn an_outcome_of_a_spread_can_be_looked_at_with_its_seed() {
    // gen-1-32 (Poisson arrivals, one core): `run --runs` names a seed for
    // each outcome. Drawn per run (the default), `--seed K` alone gives
    // that outcome's makespan; with `--fixed-arrivals`, `--seed K
    // --workload-seed S` does, where `--seed K` alone draws another
    // workload.
    let file = "tests/fixtures/generated/coreclr3/gen-1-32.toml";
    let outcomes_of = |extra: &[&str]| -> Vec<serde_json::Value> {
        let v: serde_json::Value =
            serde_json::from_str(&stdout_of(&["run", file, "--runs", "40", "--json"], extra))
                .unwrap();
        assert_eq!(
            v["arrivals"],
            if extra.is_empty() { "per-run" } else { "fixed" }
        );
        let outcomes = v["outcomes"].as_array().expect("outcomes").clone();
        assert!(
            outcomes.len() > 1,
            "gen-1-32 has several outcomes: {outcomes:?}"
        );
        outcomes
    };
    let makespan = |args: &[&str]| -> f64 {
        let v: serde_json::Value =
            serde_json::from_str(&stdout_of(&["run", file, "--json"], args)).unwrap();
        v["makespan_ms"].as_f64().expect("makespan_ms")
    };
    let text = |extra: &[&str]| stdout_of(&["run", file, "--runs", "40"], extra);

    let per_run = text(&[]);
    assert!(
        per_run.contains(&format!(
            "why an outcome: poolsim explain {file} --seed K (K: its seed)"
        )) && per_run.contains("each run drew its own Poisson arrivals"),
        "{per_run}"
    );
    for o in outcomes_of(&[]) {
        let k = o["seed"].as_u64().expect("an outcome's seed").to_string();
        let shown = o["makespan_ms"].as_f64().unwrap();
        // The outcome's makespan is its runs' median: seed K's own lies
        // within the outcome's width of it.
        let alone = makespan(&["--seed", &k]);
        assert!(
            (alone - shown).abs() <= poolsim::spread::SAME_OUTCOME * shown,
            "seed {k}: {alone} ms, the outcome says {shown} ms"
        );
    }

    let fixed = text(&["--fixed-arrivals"]);
    assert!(
        fixed.contains(&format!(
            "why an outcome: poolsim explain {file} --seed K --workload-seed 1"
        )),
        "{fixed}"
    );
    let mut differs_alone = false;
    for o in outcomes_of(&["--fixed-arrivals"]) {
        let k = o["seed"].as_u64().expect("an outcome's seed").to_string();
        let shown = o["makespan_ms"].as_f64().unwrap();
        let with = makespan(&["--seed", &k, "--workload-seed", "1"]);
        assert!(
            (with - shown).abs() <= 1e-3 * shown,
            "seed {k} on the first workload: {with} ms, the outcome says {shown} ms"
        );
        differs_alone |= (makespan(&["--seed", &k]) - shown).abs() > 1e-3 * shown;
        let ex = poolsim(&["explain", file, "--seed", &k, "--workload-seed", "1"]);
        assert!(ex.status.success(), "explain takes --workload-seed");
    }
    assert!(differs_alone, "--seed alone also moves the arrivals");
    // compare --runs names the same command, with the policy to pick.
    let cmp = |extra: &[&str]| {
        let args = [
            "compare",
            file,
            "-p",
            "coreclr3-linux",
            "-p",
            "net8",
            "--runs",
            "20",
        ];
        stdout_of(&args, extra)
    };
    let text = cmp(&["--fixed-arrivals"]);
    assert!(
        text.contains(&format!(
            "why an outcome: poolsim explain {file} --policy P --seed K --workload-seed 1"
        )),
        "{text}"
    );
    let text = cmp(&[]);
    assert!(
        text.contains(&format!(
            "why an outcome: poolsim explain {file} --policy P --seed K (P, K"
        )) && text.contains("each run with its own draw of the random arrivals"),
        "{text}"
    );
}
