//! Command-line interface: flags are parsed and validated here, turned into
//! library calls, and the results printed as tables or JSON.

mod compare;
mod measure;
mod reproduce;
mod run;
mod sweep;
mod validate;

use clap::{Parser, Subcommand};

/// Exit code for bad input (scenario, policy or flags).
pub const EXIT_INPUT: i32 = 2;
/// Exit code for a run that did not complete (time limit, stall).
pub const EXIT_INCOMPLETE: i32 = 3;

#[derive(Parser, Debug)]
#[command(
    name = "poolsim",
    version,
    about = "Deterministic simulator of .NET / Mono thread-pool scheduling policies",
    long_about = "poolsim replays a workload scenario (a TOML file) against models of real \
thread pools on a virtual clock: when each work item starts and ends, how many threads \
the pool creates and why, how responsive it stays. Same scenario + seed => same output.\n\n\
Start with:  poolsim run scenarios/seed-001-burst.toml\n\
List the policies:  poolsim policies"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Simulate a scenario and print per-item starts and a summary.
    Run(run::RunArgs),
    /// Run one scenario under several policies: a side-by-side table and
    /// one stacked Gantt chart.
    Compare(compare::CompareArgs),
    /// Replay the seeds' published measurements and compare: published vs
    /// simulated, error, pass/fail against REFERENCE.md's tolerance.
    Reproduce(reproduce::ReproduceArgs),
    /// List the built-in policies and what each models.
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
}

pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_INPUT } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Reproduce(args) => reproduce::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Sweep(args) => sweep::run(args),
        Command::SweepMerge(args) => sweep::merge(args),
        Command::Measure(args) => measure::run(args),
        Command::Validate(args) => validate::run(args),
        Command::Policies => {
            let policies = poolsim::policy::file::builtin_policies();
            let width = policies.iter().map(|p| p.name.len()).max().unwrap_or(0);
            for p in policies {
                let aliases = if p.aliases.is_empty() {
                    String::new()
                } else {
                    format!(" (also: {})", p.aliases.join(", "))
                };
                println!("{:<width$}  {}{}", p.name, p.description, aliases);
            }
            0
        }
    }
}
