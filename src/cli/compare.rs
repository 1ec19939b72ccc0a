//! `poolsim compare`: one scenario under several policies, side by side.

use std::path::PathBuf;

use clap::Args;

use poolsim::engine::{self, SimOptions};
use poolsim::metrics::{self, Summary};
use poolsim::output;
use poolsim::policy::file::resolve_policy;
use poolsim::render::{self, ChartOptions, Timeline};
use poolsim::scenario::load::load_scenario;
use poolsim::trace::EventLog;

use super::EXIT_INPUT;

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The scenario file (TOML).
    pub scenario: PathBuf,
    /// A policy to run it under (give two or more): a built-in name or a
    /// policy file.
    #[arg(long = "policy", short = 'p', required = true, num_args = 1)]
    pub policies: Vec<String>,
    /// Seed for every random stream, instead of the scenario's `seed`.
    #[arg(long)]
    pub seed: Option<u64>,
    /// One PNG with each policy's Gantt chart stacked on a shared time axis.
    #[arg(long, value_name = "FILE.png")]
    pub png: Option<PathBuf>,
    /// The same chart as SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub svg: Option<PathBuf>,
    /// Print the summaries as a JSON array.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: CompareArgs) -> i32 {
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
    let mut policies = Vec::new();
    for name in &args.policies {
        match resolve_policy(name) {
            Ok(p) => policies.push(p),
            Err(e) => {
                eprintln!("{e}");
                return EXIT_INPUT;
            }
        }
    }
    let outputs = [
        ("--png", args.png.as_deref(), "png"),
        ("--svg", args.svg.as_deref(), "svg"),
    ];
    if let Err(e) = output::check_outputs(&outputs, &[args.scenario.as_path()]) {
        eprintln!("error: {e:#}");
        return EXIT_INPUT;
    }
    let mut summaries = Vec::new();
    let mut panels = Vec::new();
    let chart = args.png.is_some() || args.svg.is_some();
    for policy in &policies {
        let mut log = EventLog::default();
        let result = engine::simulate(&scenario, policy, &mut log, &SimOptions::default());
        summaries.push((
            metrics::summarize(&result.trace),
            result.outcome.is_completed(),
        ));
        if chart {
            panels.push((
                policy.name.clone(),
                Timeline::build(&result.trace, Some(&log.events)),
            ));
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
        Ok(())
    })();
    if let Err(e) = rendered.and_then(|()| output::write_all_atomic(&files)) {
        eprintln!("error: {e:#}");
        return EXIT_INPUT;
    }
    if args.json {
        let list: Vec<&Summary> = summaries.iter().map(|(s, _)| s).collect();
        match serde_json::to_string(&list) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_INPUT;
            }
        }
    } else {
        print_table(&summaries);
    }
    0
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
        cell(&|s| format!("{:.1} ms", s.makespan_ms))
    );
    println!(
        "{:<20}{}",
        "start delay p50",
        cell(&|s| format!("{:.1} ms", s.start_delay_ms.p50))
    );
    println!(
        "{:<20}{}",
        "start delay p95",
        cell(&|s| format!("{:.1} ms", s.start_delay_ms.p95))
    );
    println!(
        "{:<20}{}",
        "start delay max",
        cell(&|s| format!("{:.1} ms", s.start_delay_ms.max))
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
    if rows.iter().any(|(s, _)| s.probe_latency_ms_max.is_some()) {
        println!(
            "{:<20}{}",
            "probe latency max",
            cell(&|s| s
                .probe_latency_ms_max
                .map_or("-".into(), |v| format!("{v:.3} ms")))
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
