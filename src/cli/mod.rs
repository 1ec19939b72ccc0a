//! Command-line interface: flags are parsed and validated here, turned into
//! library calls, and the results printed as tables or JSON.
//!
//! One path: `run` parses the flags and calls the command, which returns
//! `Result<(), Failure>`; `main` prints the failure and exits with its code.

mod advise;
mod compare;
mod explain;
mod failure;
mod import;
mod measure;
mod new;
mod policies;
mod reproduce;
mod run;
mod scenario_args;
mod serve;
mod sweep;
mod validate;
mod validate_set;

use clap::{Parser, Subcommand};
use poolsim::scenario::ArrivalDraws;

pub use failure::Failure;
pub use scenario_args::ScenarioArgs;

#[derive(Parser, Debug)]
#[command(
    name = "poolsim",
    version,
    about = "Deterministic simulator of .NET / Mono thread-pool scheduling policies",
    long_about = "poolsim replays a workload scenario (a TOML file) against models of real \
thread pools on a virtual clock: when each work item starts and ends, how many threads \
the pool creates and why, how responsive it stays. Same scenario + seed => same output.\n\n\
Start with:  poolsim run scenarios/seed-001-burst.toml\n\
Why each thread was made:  poolsim explain scenarios/seed-001-burst.toml\n\
Write your own scenario:  poolsim new my.toml  (a commented starter)\n\
List the policies:  poolsim policies\n\n\
Exit codes: 0 success; 1 a reproduce row (not a listed known miss) or a validate check missed its \
tolerance; 2 bad input; 3 a run did not complete (deadlock, time limit, \
stall); 4 advise found no remedy that meets the goal; 5 advise's evidence holds nothing to \
advise on; 130 a sweep stopped by Ctrl-C."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Simulate a scenario and print per-item starts and a summary.
    Run(run::RunArgs),
    /// Narrate every decision of the pool in time order: the rule that
    /// fired and its inputs (Starvation, CooperativeBlocking, hill climbing).
    Explain(explain::ExplainArgs),
    /// Write a commented starter scenario to FILE (or stdout with `-`).
    New(new::NewArgs),
    /// Read a .NET 6+ app's EventPipe trace (.nettrace): the real pool's
    /// thread counts, adjustments and their reasons.
    Import(import::ImportArgs),
    /// Run one scenario under several policies: a side-by-side table and
    /// one stacked Gantt chart.
    Compare(compare::CompareArgs),
    /// From the app's evidence (a scenario, or a trace with its work
    /// items) to a setting to paste: the smallest MinThreads that meets
    /// the goal, and other remedies, each with its odds over many runs.
    Advise(advise::AdviseArgs),
    /// Replay the seeds' published measurements and compare: published vs
    /// simulated, error, pass/fail against each row's tolerance
    /// (docs/reference.md).
    Reproduce(reproduce::ReproduceArgs),
    /// List the built-in policies and what each models.
    #[command(after_help = "\
Each line: the name to give --policy or a scenario's `policy = \"...\"`, what it models,
and its other names. A policy file (a .toml beside the scenario, or a path) can wrap or
retune any of them; see policies/*.toml.

Examples:
  poolsim policies
  poolsim run scenarios/seed-001-burst.toml --policy net6
  poolsim compare scenarios/seed-000-task-run.toml --policy net5 --policy net6

Exit codes: 0 always.")]
    Policies,
    /// Run a scenario over a grid of parameter values (in parallel): a CSV
    /// row per run, a chart of a metric against a key, the best point.
    Sweep(sweep::SweepArgs),
    /// Join the CSVs of `sweep --shard K/N` runs into the whole sweep's
    /// CSV (byte for byte) and chart.
    SweepMerge(sweep::SweepMergeArgs),
    /// Run a scenario for real on a thread pool (Mono, .NET Core 3.1,
    /// .NET 8, or the native pool) and summarise the measured runs.
    Measure(measure::MeasureArgs),
    /// Simulate a scenario with a runtime's model, run it on the runtime,
    /// and report the model's errors against stated tolerances.
    Validate(validate::ValidateArgs),
    /// Serve the playground (built by scripts/build-playground.sh) on
    /// http://127.0.0.1:PORT/ for a browser.
    Serve(serve::ServeArgs),
}

/// The name to show for a policy: the one the user gave when it names a
/// built-in (an alias like `net5` stays `net5`), else the file's own name.
pub fn shown_policy_name(given: &str, policy: &poolsim::policy::PolicyConfig) -> String {
    let builtin = poolsim::policy_file::builtin_policies()
        .iter()
        .any(|p| p.name == given || p.aliases.iter().any(|a| a == given));
    if builtin {
        given.to_string()
    } else {
        policy.name.clone()
    }
}

/// `--fixed-arrivals` of `run`, `compare` and `advise`.
pub const FIXED_ARRIVALS_HELP: &str = "Replay the first run's draw of the random (Poisson) \
arrivals in every run; by default each run draws its own, as a service's traffic differs from \
run to run (validation holds them, as its real runs replay one plan)";

/// The command that narrates one outcome of a spread: the pool of its seed
/// (`K`) on that run's workload, as `--runs` simulated it (its own draw of
/// random arrivals with `arrivals` [`ArrivalDraws::PerRun`], else the
/// first seed's). `policy`: the policy argument to show (`P` when the
/// reader picks one).
pub fn explain_hint(
    scenario_file: &std::path::Path,
    policy: Option<&str>,
    scenario: &poolsim::scenario::Scenario,
    arrivals: ArrivalDraws,
) -> String {
    let policy = policy.map(|p| format!(" --policy {p}")).unwrap_or_default();
    let base = format!(
        "poolsim explain {}{policy} --seed K",
        scenario_file.display()
    );
    let (seed, workload) = (scenario.seed, scenario.workload_seed());
    if arrivals == ArrivalDraws::PerRun && scenario.has_random_arrivals() {
        // Run K's workload seed is `workload + (K - seed)`: K itself when
        // the two seeds are one, else K plus their difference, written
        // as shell arithmetic so that the line pastes once K is filled in.
        if workload == seed {
            base
        } else if workload > seed {
            format!("{base} --workload-seed $((K+{}))", workload - seed)
        } else {
            format!("{base} --workload-seed $((K-{}))", seed - workload)
        }
    } else {
        format!("{base} --workload-seed {workload}")
    }
}

/// A time in ms on the command line, 0 or more. The flag takes a leading
/// `-` as a value (`allow_negative_numbers`), so `--until-ms -5` is told
/// what is wrong with it rather than how to pass `-5` past the parser.
pub fn time_ms(text: &str) -> Result<f64, String> {
    let v: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a time in ms: give a number, 0 or more"))?;
    if v.is_nan() || v.is_infinite() {
        return Err(format!(
            "`{text}` is not a time in ms: give a finite number"
        ));
    }
    if v < 0.0 {
        return Err(format!(
            "durations and times must not be negative: give a time in ms, 0 or more (got {text})"
        ));
    }
    Ok(v)
}

/// [`time_ms`] in whole milliseconds (`--until-ms`).
pub fn whole_ms(text: &str) -> Result<u64, String> {
    let v = time_ms(text)?;
    if v.fract() != 0.0 || v > u64::MAX as f64 / 1e6 {
        return Err(format!(
            "`{text}` is not a whole number of ms within range (0 to {})",
            u64::MAX / 1_000_000
        ));
    }
    Ok(v as u64)
}

/// `--from-ms` / `--to-ms` as a chart window, checked.
pub fn chart_window(
    from_ms: Option<f64>,
    to_ms: Option<f64>,
) -> Result<Option<(poolsim::time::SimTime, poolsim::time::SimTime)>, String> {
    use poolsim::time::SimTime;
    if from_ms.is_none() && to_ms.is_none() {
        return Ok(None);
    }
    let check = |flag: &str, v: f64| -> Result<SimTime, String> {
        if !v.is_finite() || v < 0.0 {
            return Err(format!("{flag} {v}: give a time in ms, 0 or more"));
        }
        Ok(SimTime((v * 1e6).round() as u64))
    };
    let from = check("--from-ms", from_ms.unwrap_or(0.0))?;
    let to = match to_ms {
        Some(t) => check("--to-ms", t)?,
        None => SimTime::MAX,
    };
    if to <= from {
        return Err(format!(
            "--from-ms {} must be below --to-ms {}",
            from.as_ms_f64(),
            to.as_ms_f64()
        ));
    }
    Ok(Some((from, to)))
}

/// Parses the flags and runs the command.
pub fn run() -> Result<(), Failure> {
    // A closed stdout (`poolsim run ... | head -1`) ends the process quietly,
    // as it ends any Unix filter, instead of a panic in println!.
    // SAFETY: setting a signal's disposition to the default at start-up,
    // before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // --help and --version: printed to stdout, a success.
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return Ok(());
        }
        Err(e) => return Err(Failure::Usage(e)),
    };
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Explain(args) => explain::run(args),
        Command::New(args) => new::run(args),
        Command::Import(args) => import::run(args),
        Command::Reproduce(args) => reproduce::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Advise(args) => advise::run(args),
        Command::Sweep(args) => sweep::run(args),
        Command::SweepMerge(args) => sweep::merge(args),
        Command::Measure(args) => measure::run(args),
        Command::Validate(args) => match &args.scenario {
            Some(file) => validate::run(&args, file),
            None => validate_set::run(&args),
        },
        Command::Policies => policies::run(),
        Command::Serve(args) => serve::run(args),
    }
}
