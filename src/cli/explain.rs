//! `poolsim explain`: the pool's decisions in words, in time order.

use std::path::PathBuf;

use clap::Args;

use poolsim::explain::explain_scenario;
use poolsim::policy_file::{resolve_policy, resolve_policy_for_scenario_file};
use poolsim::scenario::load::load_scenario;

use super::{EXIT_INPUT, chart_window};

#[derive(Args, Debug)]
#[command(after_help = "\
Each line is one decision of the pool: when, the rule that fired (the
runtime's own reason names: Starvation, CooperativeBlocking, Warmup,
ClimbingMove, ChangePoint, Stabilizing, ThreadTimedOut, ...) and its
inputs, and what it did. Without a window the narration ends with a short
story of the run.

Examples:
  poolsim explain scenarios/seed-001-burst.toml
  poolsim explain scenarios/seed-000-task-run.toml --policy net6 --to-ms 2000
  poolsim explain scenarios/seed-001-burst.toml --json

Exit codes: 0 success; 2 bad input.")]
pub struct ExplainArgs {
    /// The scenario file (TOML).
    pub scenario: PathBuf,
    /// Policy to use instead of the scenario's `pool.policy`.
    #[arg(long, short)]
    pub policy: Option<String>,
    /// Seed for every random stream, instead of the scenario's `seed`.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Seed of the workload alone (Poisson arrivals, drawn durations),
    /// instead of --seed: with `--seed K --workload-seed S`, the pool of
    /// seed K on the workload of seed S, as `run --runs` simulates its
    /// seed K (its workload stays the first seed's).
    #[arg(long, value_name = "S")]
    pub workload_seed: Option<u64>,
    /// Only decisions at or after this time (ms).
    #[arg(long, value_name = "MS", allow_negative_numbers = true, value_parser = super::time_ms)]
    pub from_ms: Option<f64>,
    /// Only decisions before this time (ms).
    #[arg(long, value_name = "MS", allow_negative_numbers = true, value_parser = super::time_ms)]
    pub to_ms: Option<f64>,
    /// Print the lines (and story) as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: ExplainArgs) -> i32 {
    let mut scenario = match load_scenario(&args.scenario) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return EXIT_INPUT;
        }
    };
    if let Some(seed) = args.seed {
        scenario.seed = seed;
    }
    if let Some(seed) = args.workload_seed {
        scenario.workload_seed = Some(seed);
    }
    let policy = match &args.policy {
        Some(flag) => resolve_policy(flag),
        None => resolve_policy_for_scenario_file(&scenario.pool.policy, &args.scenario),
    };
    let policy = match policy {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            return EXIT_INPUT;
        }
    };
    let window = match chart_window(args.from_ms, args.to_ms) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_INPUT;
        }
    };
    let explanation = explain_scenario(&scenario, &policy, window);
    if args.json {
        match serde_json::to_string(&explanation) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_INPUT;
            }
        }
    } else {
        print!("{}", explanation.to_text());
    }
    0
}
