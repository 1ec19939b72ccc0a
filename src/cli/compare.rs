//! `poolsim compare`: one scenario under several policies, side by side.

use std::path::PathBuf;

use clap::Args;

use poolsim::engine::{self, SimOptions};
use poolsim::metrics::{self, Summary};
use poolsim::output;
use poolsim::render::{self, ChartOptions, Timeline};
use poolsim::scenario::ArrivalDraws;
use poolsim::spread::{self, Spread};
use poolsim::trace::EventLog;

use poolsim::output::{human_ms, human_ms_fine};

use super::{Failure, ScenarioArgs, shown_policy_name};

#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  poolsim compare scenarios/seed-000-task-run.toml --policy net5 --policy net6
  poolsim compare scenarios/seed-000-task-run.toml -p net5 -p net6 --png net5-vs-net6.png
  poolsim compare scenarios/seed-000-task-run.toml -p net5 -p net6 --html net5-vs-net6.html
  poolsim compare scenarios/validation/staggered-arrivals.toml -p coreclr3 -p net8 --runs 100
  poolsim compare scenarios/seed-001-burst.toml -p net5 -p net6 --set pool.min_threads=10

--runs N simulates every policy with N seeds (the scenario's seed and the next N-1; the
workload, its Poisson arrivals included, stays the first seed's) and adds
each one's makespan p5 / p50 / p95 and its most common outcomes (a real pool gives different
outcomes run to run; see `poolsim run --help`). The table and the chart are of the first seed.

Exit codes: 0 every policy's run completed; 2 bad input; 3 a policy's run
did not complete (deadlock, time limit, stall): the table marks it with !
and the reason follows it.")]
pub struct CompareArgs {
    /// A policy to run it under (repeat the flag for each: --policy A
    /// --policy B; one alone is allowed): a built-in name or a policy file.
    #[arg(long = "policy", short = 'p', required = true, num_args = 1)]
    pub policies: Vec<String>,
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// One PNG with each policy's Gantt chart stacked on a shared time axis.
    #[arg(long, value_name = "FILE.png")]
    pub png: Option<PathBuf>,
    /// The same chart as SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub svg: Option<PathBuf>,
    /// The same charts as one self-contained HTML page, on one time axis:
    /// zoom, pan and hover in a browser, offline.
    #[arg(long, value_name = "FILE.html")]
    pub html: Option<PathBuf>,
    /// Simulate each policy with N seeds and report the spread of its
    /// outcomes (default 1: one run each).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub runs: u32,
    #[arg(long, help = super::FIXED_ARRIVALS_HELP)]
    pub fixed_arrivals: bool,
    /// Print the summaries as a JSON array.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: CompareArgs) -> Result<(), Failure> {
    let names: Vec<Option<&str>> = args.policies.iter().map(|p| Some(p.as_str())).collect();
    let (scenario, resolved) = args.scenario.load_each(&names)?;
    let policies: Vec<_> = args
        .policies
        .iter()
        .zip(resolved)
        .map(|(name, p)| (shown_policy_name(name, &p), p))
        .collect();
    let outputs = [
        ("--png", args.png.as_deref(), "png"),
        ("--svg", args.svg.as_deref(), "svg"),
        ("--html", args.html.as_deref(), "html"),
    ];
    output::check_outputs(&outputs, &[args.scenario.file.as_path()])?;
    if args.runs == 0 {
        return Err(Failure::error("--runs must be at least 1"));
    }
    let arrivals = ArrivalDraws::from_fixed_flag(args.fixed_arrivals);
    let spreads: Vec<Option<Spread>> = policies
        .iter()
        .map(|(_, p)| {
            (args.runs > 1).then(|| {
                spread::spread(
                    &scenario,
                    p,
                    args.runs as usize,
                    arrivals,
                    &SimOptions::default(),
                )
            })
        })
        .collect();
    let mut summaries = Vec::new();
    let mut panels = Vec::new();
    let mut incomplete = Vec::new();
    let chart = args.png.is_some() || args.svg.is_some() || args.html.is_some();
    for (shown, policy) in &policies {
        let mut log = EventLog::default();
        let mut result = engine::simulate(&scenario, policy, &mut log, &SimOptions::default());
        result.trace.policy = shown.clone();
        summaries.push((
            metrics::summarize(&result.trace),
            result.outcome.is_completed(),
        ));
        if !result.outcome.is_completed() {
            incomplete.push((shown.clone(), result.outcome.clone()));
        }
        if chart {
            let timeline = Timeline::build(&result.trace, Some(&log.events));
            panels.push((render::with_headline(shown, &timeline), timeline));
        }
    }
    let mut files: Vec<(&PathBuf, Vec<u8>)> = Vec::new();
    let rendered = (|| -> anyhow::Result<()> {
        if let Some(path) = &args.png {
            files.push((path, render::render_png(&panels, &ChartOptions::default())?));
        }
        if let Some(path) = &args.svg {
            files.push((
                path,
                render::render_svg(&panels, &ChartOptions::default())?.into_bytes(),
            ));
        }
        if let Some(path) = &args.html {
            let html = if spreads.iter().all(Option::is_some) && args.runs > 1 {
                // With --runs, each policy's panel holds a run of each of
                // its outcomes and the reader picks the one drawn.
                let mut outcome_panels = Vec::new();
                let first_runs = std::mem::take(&mut panels);
                for (i, (((shown, policy), (_, first)), (spread, (_, completed)))) in policies
                    .iter()
                    .zip(first_runs)
                    .zip(spreads.iter().zip(&summaries))
                    .enumerate()
                {
                    let Some(s) = spread else { continue };
                    let hint = super::explain_hint(
                        &args.scenario.file,
                        Some(&args.policies[i]),
                        &scenario,
                        arrivals,
                    );
                    let seeds = super::run::OutcomeSeeds { shown, spread: s };
                    let (panel, _) = seeds.panel(first, *completed, hint, |seed| {
                        let mut log = EventLog::default();
                        let mut result = engine::simulate(
                            &scenario.for_run(seed.wrapping_sub(scenario.seed), arrivals),
                            policy,
                            &mut log,
                            &SimOptions::default(),
                        );
                        result.trace.policy = shown.clone();
                        let end = result.trace.end;
                        Ok((Timeline::build(&result.trace, Some(&log.events)), end))
                    })?;
                    outcome_panels.push(panel);
                }
                render::html::render_html_outcomes(&outcome_panels, &ChartOptions::default())?
            } else {
                render::render_html(&panels, &ChartOptions::default())?
            };
            files.push((path, html.into_bytes()));
        }
        Ok(())
    })();
    rendered.and_then(|()| output::write_all_atomic(&files))?;
    if args.json {
        let list: Vec<serde_json::Value> = summaries
            .iter()
            .zip(&policies)
            .zip(&spreads)
            .map(|(((s, done), (shown, _)), spread)| {
                let mut v = serde_json::to_value(s).unwrap_or_default();
                if let Some(o) = v.as_object_mut() {
                    o.insert("completed".into(), (*done).into());
                    if let Some(sp) = spread {
                        super::run::insert_spread(o, sp, s);
                    }
                    if let Some((_, outcome)) = incomplete.iter().find(|(n, _)| n == shown) {
                        o.insert(
                            "outcome".into(),
                            poolsim::output::outcome_lines(outcome).join(" ").into(),
                        );
                    }
                }
                v
            })
            .collect();
        println!("{}", serde_json::to_string(&list)?);
    } else {
        print_table(&summaries);
        if spreads.iter().any(Option::is_some) {
            println!();
            println!(
                "over {} seeds from {}{}:",
                args.runs,
                scenario.seed,
                arrivals_note(&spreads)
            );
            for ((shown, _), sp) in policies.iter().zip(&spreads) {
                let Some(sp) = sp else { continue };
                let q = &sp.makespan_ms;
                println!(
                    "  {shown}: makespan p5 {}  p50 {}  p95 {}; {} distinct outcome{}",
                    human_ms(q.p5),
                    human_ms(q.p50),
                    human_ms(q.p95),
                    sp.outcomes.len(),
                    if sp.outcomes.len() == 1 { "" } else { "s" }
                );
                for line in sp.outcome_lines(3) {
                    println!("    {}", line.trim_start());
                }
            }
            if spreads.iter().flatten().any(|sp| sp.outcomes.len() > 1) {
                println!(
                    "why an outcome: {} (P, K: its policy and seed)",
                    super::explain_hint(&args.scenario.file, Some("P"), &scenario, arrivals)
                );
            }
        }
        for (shown, outcome) in &incomplete {
            println!();
            println!("{shown}: the run did not complete");
            for line in poolsim::output::outcome_lines(outcome) {
                println!("{line}");
            }
        }
    }
    if incomplete.is_empty() {
        Ok(())
    } else {
        let names: Vec<&str> = incomplete.iter().map(|(n, _)| n.as_str()).collect();
        Err(Failure::Incomplete(Some(format!(
            "error: {} did not complete: {}",
            if names.len() == 1 { "a run" } else { "runs" },
            names.join(", ")
        ))))
    }
}

fn print_table(rows: &[(Summary, bool)]) {
    let cell = |f: &dyn Fn(&Summary) -> String| -> String {
        rows.iter()
            .map(|(s, _)| format!("{:>18}", f(s)))
            .collect::<Vec<_>>()
            .join("")
    };
    let first = &rows[0].0;
    println!(
        "scenario  {}   seed {}   cores {}",
        first.scenario, first.seed, first.cores
    );
    println!("{:<20}{}", "", cell(&|s| s.policy.clone()));
    println!(
        "{:<20}{}",
        "makespan",
        rows.iter()
            .map(|(s, done)| format!(
                "{:>18}",
                if *done {
                    human_ms(s.makespan_ms)
                } else {
                    "- (incomplete)".to_string()
                }
            ))
            .collect::<Vec<_>>()
            .join("")
    );
    println!(
        "{:<20}{}",
        "start delay p50",
        cell(&|s| human_ms(s.start_delay_ms.p50))
    );
    println!(
        "{:<20}{}",
        "start delay p95",
        cell(&|s| human_ms(s.start_delay_ms.p95))
    );
    println!(
        "{:<20}{}",
        "start delay p99",
        cell(&|s| human_ms(s.start_delay_ms.p99))
    );
    println!(
        "{:<20}{}",
        "start delay max",
        cell(&|s| human_ms(s.start_delay_ms.max))
    );
    println!(
        "{:<20}{}",
        "latency p50",
        cell(&|s| human_ms(s.latency_ms.p50))
    );
    println!(
        "{:<20}{}",
        "latency p95",
        cell(&|s| human_ms(s.latency_ms.p95))
    );
    println!(
        "{:<20}{}",
        "latency p99",
        cell(&|s| human_ms(s.latency_ms.p99))
    );
    println!(
        "{:<20}{}",
        "latency max",
        cell(&|s| human_ms(s.latency_ms.max))
    );
    println!(
        "{:<20}{}",
        "time starved",
        cell(&|s| human_ms(s.time_starved_ms))
    );
    println!(
        "{:<20}{}",
        "threads peak",
        cell(&|s| s.threads_peak.to_string())
    );
    println!(
        "{:<20}{}",
        "threads created",
        cell(&|s| s.threads_created.to_string())
    );
    for (reason, label) in [
        ("starvation", "  by starvation"),
        ("hill-climbing", "  by hill climbing"),
        ("cooperative-blocking", "  by coop. blocking"),
    ] {
        if rows
            .iter()
            .any(|(s, _)| s.threads_created_by_reason.contains_key(reason))
        {
            println!(
                "{:<20}{}",
                label,
                cell(&|s| s
                    .threads_created_by_reason
                    .get(reason)
                    .copied()
                    .unwrap_or(0)
                    .to_string())
            );
        }
    }
    if rows.iter().any(|(s, _)| s.probe_latency_ms_max.is_some()) {
        println!(
            "{:<20}{}",
            "probe latency max",
            cell(&|s| s.probe_latency_ms_max.map_or("-".into(), human_ms_fine))
        );
    }
    println!(
        "{:<20}{}",
        "finished",
        rows.iter()
            .map(|(s, done)| format!(
                "{:>18}",
                format!(
                    "{}/{}{}",
                    s.finished,
                    s.items,
                    if *done { "" } else { " !" }
                )
            ))
            .collect::<Vec<_>>()
            .join("")
    );
}

/// How the spreads drew random arrivals, for the "over N seeds" line:
/// nothing when the scenario has none.
fn arrivals_note(spreads: &[Option<Spread>]) -> &'static str {
    match spreads.iter().flatten().find_map(|s| s.arrivals) {
        Some(ArrivalDraws::PerRun) => ", each run with its own draw of the random arrivals",
        Some(ArrivalDraws::Fixed) => ", every run on the first seed's arrivals",
        None => "",
    }
}
