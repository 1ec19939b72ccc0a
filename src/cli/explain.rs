//! `poolsim explain`: the pool's decisions in words, in time order; with
//! `--html`, the same run as `poolsim run --html` draws it (its decisions
//! strip and thread tooltips say what these lines say, in the same words:
//! `poolsim::render::decisions`).

use std::path::PathBuf;

use clap::Args;

use poolsim::engine::SimOptions;
use poolsim::explain::explain_scenario;
use poolsim::output;
use poolsim::policy::PolicyConfig;
use poolsim::render;
use poolsim::scenario::Scenario;
use poolsim::time::SimTime;

use super::run::{Wants, chart_options, run_streamed};
use super::{Failure, ScenarioArgs, chart_window, shown_policy_name};

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
  poolsim explain scenarios/seed-001-burst.toml --html burst.html

--html writes the page `poolsim run --html` writes for the same scenario,
policy, --set and window: hover a decision or a thread for its line.

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
    /// Also write the run as one self-contained HTML page (the one `poolsim
    /// run --html` writes), its decisions marked with these lines.
    #[arg(long, value_name = "FILE.html")]
    pub html: Option<PathBuf>,
}

pub fn run(args: ExplainArgs) -> Result<(), Failure> {
    let (scenario, policy) = args.scenario.load(args.policy.as_deref())?;
    let window = chart_window(args.from_ms, args.to_ms)?;
    output::check_outputs(
        &[("--html", args.html.as_deref(), "html")],
        &[args.scenario.file.as_path()],
    )?;
    let explanation = explain_scenario(&scenario, &policy, window);
    if let Some(path) = &args.html {
        let shown = shown_policy_name(
            args.policy.as_deref().unwrap_or(&scenario.pool.policy),
            &policy,
        );
        let html = run_html(&scenario, &policy, &shown, window)?;
        output::write_all_atomic(&[(path, html.into_bytes())])?;
    }
    if args.json {
        println!("{}", serde_json::to_string(&explanation)?);
    } else {
        print!("{}", explanation.to_text());
    }
    Ok(())
}

/// The page `poolsim run --html` writes for one run of `scenario` (no
/// `--runs`): `run`'s own streamed path and chart options.
fn run_html(
    scenario: &Scenario,
    policy: &PolicyConfig,
    shown: &str,
    window: Option<(SimTime, SimTime)>,
) -> anyhow::Result<String> {
    let wants = Wants {
        items: 0,
        trace: None,
        chart: true,
        chrome: None,
        counters: false,
    };
    let streamed = run_streamed(
        &wants,
        scenario,
        policy,
        shown,
        window,
        &SimOptions::default(),
    )?;
    let timeline = streamed
        .timeline
        .ok_or_else(|| anyhow::anyhow!("the run's chart was not made"))?;
    let options = chart_options(window, streamed.result.trace.end);
    let panels = [(render::with_headline(shown, &timeline), timeline)];
    Ok(render::render_html(&panels, &options)?)
}
