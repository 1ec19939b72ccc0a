//! `poolsim validate`: simulate a scenario with the model of a runtime's
//! pool, run it for real (or read recorded runs), and report how far apart
//! they are, metric by metric, against stated tolerances.

use std::path::PathBuf;

use clap::Args;

use poolsim::engine::{self, SimOptions};
use poolsim::measure;
use poolsim::measure::measured::Measured;
use poolsim::output;
use poolsim::render::{self, ChartOptions, Timeline};
use poolsim::trace::EventLog;
use poolsim::validate::{self, Report, Tolerances};

use super::measure::{RUNTIME_HELP, measure_or_exit, prepare, save_or_exit};
use super::{EXIT_INCOMPLETE, EXIT_INPUT};

/// Exit code when a check fails.
pub const EXIT_FAIL: i32 = 1;

#[derive(Args, Debug)]
#[command(after_long_help = "\
Pairs: coreclr3 <-> coreclr3-linux (the classic model, .NET Core 3.x / .NET 5), net8 <-> net8 \
(the portable model, .NET 6+), mono <-> mono, native <-> the scenario's policy (or --policy).

Tolerances: makespan within 10 %; mean start and end offset errors within 100 ms or 5 % of \
the measured makespan, whichever is larger; peak threads within 2 or 25 % of the measured \
peak; threads-over-time distance (mean |difference|) within 1.5 threads or 20 % of the \
measured peak. Each is the median over the repetitions. Times count from each run's first \
submission.

Exit status: 0 every check passed, 1 a check failed, 2 bad input / runtime missing / \
scenario the runtime cannot express, 3 a run failed or was killed.

Examples:
  poolsim validate scenarios/validation/sleep-burst.toml --runtime coreclr3 --repeat 3
  poolsim validate scenarios/validation/sleep-burst.toml --runtime net8 \\
      --fixtures tests/fixtures/validation/sleep-burst")]
pub struct ValidateArgs {
    /// The scenario file (TOML).
    pub scenario: PathBuf,
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
    /// makespan + 30 s).
    #[arg(long, value_name = "S")]
    pub timeout_s: Option<u64>,
    /// Switch .NET's tiered compilation off for the live runs and the model
    /// (on by default, as users run it; see `poolsim measure --help`).
    #[arg(long)]
    pub no_tiered_compilation: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: ValidateArgs) -> i32 {
    let (runtime, mut scenario, policy) = match prepare(
        &args.runtime,
        args.repeat,
        &args.scenario,
        args.policy.as_deref(),
    ) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("{e}");
            return EXIT_INPUT;
        }
    };
    if args.no_tiered_compilation {
        scenario.pool.tiered_compilation = false;
    }
    let tiered = scenario.pool.tiered_compilation;
    if let Err(e) = output::check_outputs(
        &[("--png", args.png.as_deref(), "png")],
        &[args.scenario.as_path()],
    ) {
        eprintln!("error: {e:#}");
        return EXIT_INPUT;
    }
    let mut runs = match &args.fixtures {
        Some(dir) => match measure::read_recorded(dir, runtime, &scenario) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{e}");
                return EXIT_INPUT;
            }
        },
        None => match measure_or_exit(
            runtime,
            &scenario,
            &policy,
            args.repeat,
            args.timeout_s,
            tiered,
        ) {
            Ok(r) => r,
            Err(code) => return code,
        },
    };
    if let Err(code) = save_or_exit(
        args.record.as_deref(),
        &mut runs,
        runtime,
        &args.scenario,
        tiered,
    ) {
        return code;
    }
    // A recording says whether it ran with tiered compilation; the model
    // predicts the runtime as it was run.
    let scenario = measure::as_recorded(&scenario, &runs);
    let mut log = EventLog::default();
    let sim = engine::simulate(&scenario, &policy, &mut log, &SimOptions::default());
    if !sim.outcome.is_completed() {
        eprintln!("error: the simulation did not complete: {:?}", sim.outcome);
        return EXIT_INCOMPLETE;
    }
    let measured: Vec<_> = runs.iter().map(|m| m.trace.clone()).collect();
    let report = validate::validate(
        &sim.trace,
        &measured,
        runtime.name(),
        &Tolerances::default(),
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
        let written = render::render_png(&panels, &ChartOptions::default())
            .map_err(anyhow::Error::from)
            .and_then(|bytes| output::write_atomic(path, &bytes));
        if let Err(e) = written {
            eprintln!("error: {e:#}");
            return EXIT_INPUT;
        }
    }
    if args.json {
        match serde_json::to_string(&report) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_INPUT;
            }
        }
    } else {
        print_report(&report, &runs);
    }
    if report.pass { 0 } else { EXIT_FAIL }
}

fn print_report(r: &Report, runs: &[Measured]) {
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
    println!("{}", if r.pass { "PASS" } else { "FAIL" });
}
