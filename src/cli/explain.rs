//! `poolsim explain`: the pool's decisions in words, in time order.

use clap::Args;

use poolsim::explain::explain_scenario;

use super::{Failure, ScenarioArgs, chart_window};

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
  poolsim explain scenarios/seed-001-burst.toml --set pool.min_threads=10

Exit codes: 0 success; 2 bad input.")]
pub struct ExplainArgs {
    /// Policy to use instead of the scenario's `pool.policy`.
    #[arg(long, short)]
    pub policy: Option<String>,
    #[command(flatten)]
    pub scenario: ScenarioArgs,
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

pub fn run(args: ExplainArgs) -> Result<(), Failure> {
    let (scenario, policy) = args.scenario.load(args.policy.as_deref())?;
    let window = chart_window(args.from_ms, args.to_ms)?;
    let explanation = explain_scenario(&scenario, &policy, window);
    if args.json {
        println!("{}", serde_json::to_string(&explanation)?);
    } else {
        print!("{}", explanation.to_text());
    }
    Ok(())
}
