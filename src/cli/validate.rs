//! `poolsim validate`: simulate a scenario with the model of a runtime's
//! pool, run it for real (or read recorded runs), and report how far apart
//! they are, metric by metric, against stated tolerances.

use std::path::{Path, PathBuf};

use clap::Args;

use poolsim::account::{self, Account, AdjustmentReport};
use poolsim::engine::{self, SimOptions};
use poolsim::measure;
use poolsim::measure::measured::Measured;
use poolsim::output;
use poolsim::output::human_ms;
use poolsim::render::{self, ChartOptions, Timeline};
use poolsim::spread;
use poolsim::trace::EventLog;
use poolsim::validate::distribution::{self, DistTolerances, DistributionReport};
use poolsim::validate::{self, Report, Tolerances};

use super::Failure;
use super::measure::{RUNTIME_HELP, measure_timed, prepare, save_if_asked};

#[derive(Args, Debug)]
#[command(after_long_help = "\
Pairs: coreclr3 <-> coreclr3-linux (the classic model, .NET Core 3.x / .NET 5), net8 <-> net8 \
(the portable model, .NET 6+), mono <-> mono, native <-> the scenario's policy (or --policy).

Tolerances: makespan within 10 %; mean start and end offset errors within 100 ms or 5 % of \
the measured makespan, whichever is larger; peak threads within 2 or 25 % of the measured \
peak; threads-over-time distance (mean |difference|) within 1.5 threads or 20 % of the \
measured peak. Each is the median over the repetitions. Times count from each run's first \
submission.

With --runs N the model is simulated with N seeds (the scenario's seed and the next N-1; \
the arrival instants stay the scenario's, which the real runs replay) and \
the real runs are checked against that distribution instead: every measured makespan inside \
the simulated [min, max] widened by 2 %; the median makespan within 5 %; the pooled start \
offsets quantile by quantile within 100 ms or 5 % of the makespan. The two-sample \
Kolmogorov-Smirnov statistic of the makespans and the simulated p5-p95 width against the \
measured min-max width are reported. The exit status then follows these checks.

With --generate N (no scenario file) it draws N scenarios from a fixed grammar of real-world \
shapes (src/generate.rs: round and arbitrary durations; sleep, wait, busy, cpu, await and \
yield bodies; 4 to 60 items at once, staggered or Poisson; 1 or 2 cores; default or raised \
min threads; with and without a throttle), seeded by --seed, runs each --repeat times and \
checks each as with --runs (default 100). --record DIR saves each scenario (gen-S-K.toml) and \
its runs (gen-S-K/RUNTIME-J.txt); --fixtures DIR replays such a set. The set passes when at \
least 90 % of the measured runs fall inside their simulated ranges and the median of the \
scenarios' median makespan errors is at most 5 %.

Exit codes: 0 every check passed, 1 a check failed, 2 bad input / runtime missing / \
scenario the runtime cannot express, 3 a run failed or was killed.

Examples:
  poolsim validate scenarios/validation/sleep-burst.toml --runtime coreclr3 --repeat 3
  poolsim validate scenarios/validation/sleep-burst.toml --runtime net8 \\
      --fixtures tests/fixtures/validation/sleep-burst
  poolsim validate scenarios/validation/one-core.toml --runtime net8 --repeat 5 --runs 200
  poolsim validate --generate 40 --seed 1 --runtime mono --repeat 5 --record gen-mono
  poolsim validate --generate 40 --grammar apps --seed 1 --runtime net8 --dry-run")]
pub struct ValidateArgs {
    /// The scenario file (TOML); leave it out with --generate.
    #[arg(required_unless_present = "generate", conflicts_with = "generate")]
    pub scenario: Option<PathBuf>,
    #[arg(long, short, value_name = "RUNTIME", help = format!("The real pool: {RUNTIME_HELP}"))]
    pub runtime: String,
    /// The model to validate (default: the runtime's own; for native, the
    /// scenario's policy).
    #[arg(long, short)]
    pub policy: Option<String>,
    /// Real runs to compare with (each metric is the median over them).
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub repeat: u32,
    /// Compare with runs recorded earlier (`RUNTIME-*.txt` in DIR) instead
    /// of running anything.
    #[arg(long, value_name = "DIR", conflicts_with = "record")]
    pub fixtures: Option<PathBuf>,
    /// Save the live runs in DIR as fixtures (`RUNTIME-1.txt`, ...).
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
    /// A PNG with the simulated Gantt chart above each measured one.
    #[arg(long, value_name = "FILE.png")]
    pub png: Option<PathBuf>,
    /// Kill a run that takes longer than this (default: 5 × the simulated
    /// makespan + 30 s; for a run the model finds stuck, 5 × the time it
    /// is found so + 30 s).
    #[arg(long, value_name = "S")]
    pub timeout_s: Option<u64>,
    /// Switch .NET's tiered compilation off for the live runs and the model
    /// (on by default, as users run it; see `poolsim measure --help`).
    #[arg(long)]
    pub no_tiered_compilation: bool,
    /// Simulate N seeds and check the measured runs against that
    /// distribution (default: 1, one seed and the median checks; 100 with
    /// --generate).
    #[arg(long, value_name = "N")]
    pub runs: Option<usize>,
    /// Draw N scenarios from the fixed grammar and validate each.
    #[arg(long, value_name = "N", conflicts_with = "png")]
    pub generate: Option<usize>,
    /// The grammar's seed for --generate.
    #[arg(long, default_value_t = 1, value_name = "S", requires = "generate")]
    pub seed: u64,
    /// Which grammar --generate draws from: `bursts` (4 to 60 items at once,
    /// staggered or Poisson over a few seconds; the recorded sets'
    /// grammar) or `apps` (the shapes of real apps: 1 to 2,000 items,
    /// request streams sustained 5 to 60 s at loads under, near and over
    /// what the pool keeps up with, async fan-out, nested submission,
    /// head-of-line blocking, Parallel loops over blocking bodies, a
    /// warm-up then traffic; crates/analysis/src/generate_apps.rs).
    #[arg(long, value_enum, default_value_t = Grammar::Bursts, requires = "generate")]
    pub grammar: Grammar,
    /// With --generate: run nothing; print each scenario's simulated range
    /// and what the live runs would cost in wall-clock time.
    #[arg(long, requires = "generate")]
    pub dry_run: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The grammars of `validate --generate`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grammar {
    /// `poolsim::generate`: small bursts (the recorded sets).
    Bursts,
    /// `poolsim::generate_apps`: the shapes of real apps.
    Apps,
}

/// `--runs`, checked before anything else (both modes take it).
pub fn check_runs(args: &ValidateArgs) -> Result<(), Failure> {
    if args.runs == Some(0) {
        return Err(Failure::error("--runs must be at least 1"));
    }
    Ok(())
}

/// `validate FILE`, one scenario (`validate --generate N`: validate_set.rs).
pub fn run(args: &ValidateArgs, scenario_file: &Path) -> Result<(), Failure> {
    check_runs(args)?;
    let (runtime, mut scenario, policy) = prepare(
        &args.runtime,
        args.repeat,
        scenario_file,
        args.policy.as_deref(),
    )?;
    if args.no_tiered_compilation {
        scenario.pool.tiered_compilation = false;
    }
    let tiered = scenario.pool.tiered_compilation;
    output::check_outputs(&[("--png", args.png.as_deref(), "png")], &[scenario_file])?;
    let mut runs = match &args.fixtures {
        // Its message says `error: ` itself.
        Some(dir) => measure::read_recorded(dir, runtime, &scenario).map_err(Failure::Input)?,
        None => measure_timed(
            runtime,
            &scenario,
            &policy,
            args.repeat,
            args.timeout_s,
            tiered,
        )?,
    };
    save_if_asked(
        args.record.as_deref(),
        &mut runs,
        runtime,
        scenario_file,
        tiered,
    )?;
    // A recording says whether it ran with tiered compilation; the model
    // predicts the runtime as it was run.
    let scenario = measure::as_recorded(&scenario, &runs);
    let mut log = EventLog::default();
    let sim = engine::simulate(&scenario, &policy, &mut log, &SimOptions::default());
    if !sim.outcome.is_completed() {
        return Err(Failure::Incomplete(Some(format!(
            "error: the simulation did not complete: {:?}",
            sim.outcome
        ))));
    }
    let measured: Vec<_> = runs.iter().map(|m| m.trace.clone()).collect();
    let report = validate::validate(
        &sim.trace,
        &measured,
        runtime.name(),
        &Tolerances::default(),
    );
    // The runtime's own account (its goal changes and their reasons), where
    // the runs recorded one, against the model's.
    let accounts: Vec<(Account, f64)> = runs
        .iter()
        .zip(&report.repetitions)
        .filter_map(|(m, c)| m.account.clone().map(|a| (a, c.makespan_measured_ms)))
        .collect();
    let adjustments = account::compare(
        &Account::from_model(&log.events),
        &accounts,
        validate::adjustment_tolerances(&report),
    );
    if let Some(path) = &args.png {
        let mut panels = vec![(
            format!("model: {}", policy.name),
            Timeline::build(&sim.trace, Some(&log.events)),
        )];
        for (k, m) in measured.iter().enumerate() {
            panels.push((
                format!("measured: {} run {}", runtime.name(), k + 1),
                Timeline::build(m, None),
            ));
        }
        render::render_png(&panels, &ChartOptions::default())
            .map_err(anyhow::Error::from)
            .and_then(|bytes| output::write_atomic(path, &bytes))?;
    }
    let dist = args.runs.filter(|&n| n > 1).map(|n| {
        let sim = spread::spread_with_offsets(&scenario, &policy, n, &SimOptions::default());
        distribution::compare_distributions(
            &sim,
            (&scenario.name, &policy.name),
            &measured,
            runtime.name(),
            &DistTolerances::default(),
        )
    });
    if args.json {
        let mut value = serde_json::to_value(&report)?;
        if let (Some(d), Some(obj)) = (&dist, value.as_object_mut()) {
            obj.insert(
                "distribution".into(),
                serde_json::to_value(d).unwrap_or_default(),
            );
        }
        if let (Some(a), Some(obj)) = (&adjustments, value.as_object_mut()) {
            obj.insert(
                "adjustments".into(),
                serde_json::to_value(a).unwrap_or_default(),
            );
        }
        println!("{value}");
    } else {
        print_report(&report, &runs, adjustments.as_ref(), runtime.name());
        if let Some(d) = &dist {
            println!();
            print_distribution(d);
        }
    }
    let pass = dist.as_ref().map_or(report.pass, |d| d.pass)
        && adjustments.as_ref().is_none_or(|a| a.pass);
    if pass { Ok(()) } else { Err(Failure::Miss) }
}

/// The distribution checks of `--runs N`, in words and a table.
pub fn print_distribution(d: &DistributionReport) {
    let q = &d.sim_makespan_ms;
    println!(
        "distribution: model over {} seeds ({}..{}), makespan min {} p5 {} p50 {} p95 {} max {}",
        d.sim_runs,
        d.first_seed,
        d.first_seed + d.sim_runs as u64 - 1,
        human_ms(q.min),
        human_ms(q.p5),
        human_ms(q.p50),
        human_ms(q.p95),
        human_ms(q.max)
    );
    for o in d.sim_outcomes.iter().take(4) {
        println!(
            "  {:>5.1} % of seeds: {}, peak {} threads",
            o.share * 100.0,
            human_ms(o.makespan_ms),
            o.threads_peak
        );
    }
    let real: Vec<String> = d
        .measured_makespans_ms
        .iter()
        .zip(&d.measured_peaks)
        .map(|(m, p)| format!("{} ({p} th)", human_ms(*m)))
        .collect();
    println!("  measured runs: {}", real.join(", "));
    println!(
        "  {} of {} measured runs inside [min, max] +/- 2 %",
        d.covered,
        d.measured_makespans_ms.len()
    );
    for c in &d.checks {
        check_row(c.metric, c.value, c.tolerance, c.unit, c.pass);
    }
    println!(
        "two-sample KS on makespans: D = {:.2}, p = {:.3} (reported, not checked)",
        d.ks.d, d.ks.p_value
    );
    println!(
        "latency (queued -> finished), model median vs measured median (reported, not checked):"
    );
    for (name, pair) in [
        ("p50", d.latency_p50_ms),
        ("p95", d.latency_p95_ms),
        ("p99", d.latency_p99_ms),
    ] {
        println!(
            "  {name}  {} vs {}  ({:+.1} %)",
            human_ms(pair.simulated),
            human_ms(pair.measured),
            pair.error() * 100.0
        );
    }
    println!(
        "peak threads, model median vs measured median: {:.0} vs {:.0}",
        d.threads_peak.simulated, d.threads_peak.measured
    );
    println!(
        "thread-count curve, measured runs vs the model's median curve: {:.1} threads apart on \
         average (median over the runs; within {:.1}: {}; reported, not checked)",
        d.threads_curve_distance,
        d.threads_curve_tolerance,
        if d.threads_curve_within { "yes" } else { "no" }
    );
    match d.width_ratio {
        Some(r) => {
            println!("model p5-p95 width / measured min-max width: {r:.2} (reported, not checked)")
        }
        None => println!(
            "measured runs all gave one makespan; model p5-p95 spans {:.1} %",
            d.sim_p5_p95_rel * 100.0
        ),
    }
    println!("{}", if d.pass { "PASS" } else { "FAIL" });
}

/// The adjustment checks: the runtime's reasons beside the model's.
fn print_adjustments(a: &AdjustmentReport, runtime: &str) {
    println!();
    println!(
        "adjustments (ThreadPoolWorkerThreadAdjustmentAdjustment, from t0; {} of the {runtime} runs \
         carry the runtime's EventPipe account)",
        a.runs
    );
    println!("{:<22} {:>5} {:>6}  measured", "reason", "code", "model");
    for c in &a.reasons {
        let real: Vec<String> = c.measured.iter().map(|n| n.to_string()).collect();
        println!(
            "{:<22} {:>5} {:>6}  {}",
            c.reason.name(),
            c.code,
            c.model,
            real.join(" ")
        );
    }
    if a.reasons.is_empty() {
        println!("(no adjustment in the model or in the runs)");
    }
    let seconds = |v: &[f64]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter()
                .map(|t| format!("{:.2}", t / 1000.0))
                .collect::<Vec<_>>()
                .join(" ")
        }
    };
    for i in &a.injections {
        println!("{} injections (s from t0):", i.reason.name());
        println!("  model  {}", seconds(&i.model_ms));
        for (k, r) in i.measured_ms.iter().enumerate() {
            println!("  run {:<2} {}", k + 1, seconds(r));
        }
    }
    println!(
        "{:<24} {:>12} {:>12}  result",
        "adjustment check", "value", "tolerance"
    );
    for c in &a.checks {
        check_row(&c.metric, c.value, c.tolerance, c.unit, c.pass);
    }
}

/// One row of a check table: metric, value, tolerance, result.
fn check_row(metric: &str, value: f64, tolerance: f64, unit: &str, pass: bool) {
    println!(
        "{metric:<24} {value:>9.1} {unit:<4} {tolerance:>9.1} {unit:<4}  {}",
        if pass { "pass" } else { "FAIL" }
    );
}

fn print_report(
    r: &Report,
    runs: &[Measured],
    adjustments: Option<&AdjustmentReport>,
    runtime: &str,
) {
    println!(
        "scenario  {}\nmodel     {}\nmeasured  {} ({}), {} run(s)",
        r.scenario,
        r.policy,
        r.runtime,
        runs.first().map_or("", |m| m.runtime_version.as_str()),
        runs.len()
    );
    println!();
    println!(
        "{:>4} {:>11} {:>11} {:>8} {:>10} {:>10} {:>10} {:>7} {:>7} {:>7}",
        "run",
        "model ms",
        "real ms",
        "error",
        "start avg",
        "start p95",
        "end avg",
        "peak m",
        "peak r",
        "curve"
    );
    for (k, c) in r.repetitions.iter().enumerate() {
        println!(
            "{:>4} {:>11.1} {:>11.1} {:>7.1}% {:>10.1} {:>10.1} {:>10.1} {:>7} {:>7} {:>7.2}",
            k + 1,
            c.makespan_sim_ms,
            c.makespan_measured_ms,
            c.makespan_rel_error * 100.0,
            c.start_error_ms.mean,
            c.start_error_ms.p95,
            c.end_error_ms.mean,
            c.peak_threads_sim,
            c.peak_threads_measured,
            c.threads_curve_distance
        );
    }
    println!();
    println!(
        "{:<24} {:>12} {:>12}  result",
        "check (median)", "value", "tolerance"
    );
    for c in &r.checks {
        println!(
            "{:<24} {:>9.1} {:<2} {:>9.1} {:<2}  {}",
            c.metric,
            c.value,
            if c.unit == "threads" { "th" } else { c.unit },
            c.tolerance,
            if c.unit == "threads" { "th" } else { c.unit },
            if c.pass { "pass" } else { "FAIL" }
        );
    }
    println!(
        "start error p95 (median): {:.1} ms (reported, not checked)",
        validate::start_p95(r)
    );
    if let Some(a) = adjustments {
        print_adjustments(a, runtime);
    }
    let pass = r.pass && adjustments.is_none_or(|a| a.pass);
    println!("{}", if pass { "PASS" } else { "FAIL" });
}
