//! `poolsim advise EVIDENCE`: from the app's evidence (a scenario, or an
//! EventPipe trace with its work items) to a setting to paste, with its
//! odds ([`poolsim::advise`]); for a trace, the replay of its drafted
//! scenario is checked against the recording first
//! ([`poolsim::replay_check`]).

use std::fs::File;
use std::path::{Path, PathBuf};

use clap::Args;

use poolsim::advise::{self, Advice, AdviseOptions};
use poolsim::engine::{self, SimOptions};
use poolsim::metrics;
use poolsim::nettrace::draft::program_items;
use poolsim::nettrace::infer::draft_any;
use poolsim::nettrace::replay::imported_run;
use poolsim::nettrace::{NetTraceError, PoolTimeline};
use poolsim::output;
use poolsim::policy::PolicyConfig;
use poolsim::policy_file::resolve_policy;
use poolsim::render::{self, ChartOptions, Timeline};
use poolsim::replay_check::{self, Check};
use poolsim::scenario::load::parse_scenario;
use poolsim::scenario::{ArrivalDraws, Scenario};
use poolsim::trace::{EventLog, NullSink};

use super::failure::{EXIT_EVIDENCE, EXIT_NO_ADVICE};
use super::{Failure, ScenarioArgs};

#[derive(Args, Debug)]
#[command(after_help = "\
EVIDENCE is a scenario (.toml) or a .NET EventPipe trace (.nettrace). A
trace's work items (recorded with the work-item provider, see
docs/commands.md#advise) are drafted into a scenario as `import --scenario`
drafts them; without them the items are inferred from the workers' busy
stretches. The replay of the draft is checked against the recording (peak
threads within 2, span within 10 %, latency quantiles) before any advice; a
miss, or items that were inferred, mark the advice UNCONFIRMED.

Each remedy is replayed --runs times (seeds, and Poisson arrivals drawn anew
each run): the pool's minimum (the smallest MinThreads that meets the goal in
95 % of the runs, found by the search of `run`'s verdict and of `sweep --best
'minimize pool.min_threads ...'`); on .NET 6+ with items blocked in
Task.Wait, the smallest ThreadsToAddWithoutDelay_ProcCountFactor (threads
for blocked waits added at once, up to min + factor x cores); awaiting
instead of blocking; and .NET 6+ for a pool before it. The goal is 'no starvation' (work waits for a thread
less than 10 % of the run, or the cores are the limit) unless --goal says
otherwise, in `sweep --best`'s conditions.

Examples:
  poolsim advise scenarios/seed-001-burst.toml
  poolsim advise service.toml --goal 'latency_p99_ms < 200'
  poolsim advise service.toml --runtime coreclr3 --runs 40 --json
  poolsim advise app.nettrace --runtime net8 --html advice.html

Exit codes: 0 advice given (or no change needed); 2 bad input (a file that
does not parse, a truncated trace, a bad goal); 3 the workload does not
complete as it is (deadlock, time limit); 4 no remedy meets the goal (no
recommendation is made up); 5 the evidence holds nothing to advise on (a
trace with no pool work).")]
pub struct AdviseArgs {
    /// The app's evidence: a scenario file (.toml) or an EventPipe trace
    /// (.nettrace), best with its work-item events.
    #[arg(value_name = "EVIDENCE")]
    pub evidence: PathBuf,
    /// The runtime (policy) to advise for: net8, net6, coreclr3,
    /// net-classic, mono, ... (default: the scenario's; net8 for a trace).
    #[arg(long, value_name = "POLICY")]
    pub runtime: Option<String>,
    /// What a run must achieve: conditions as `sweep --best` takes them,
    /// like 'latency_p99_ms < 200 and threads_peak <= 64' (default: no
    /// starvation).
    #[arg(long, value_name = "CONDITIONS")]
    pub goal: Option<String>,
    /// Runs per remedy.
    #[arg(long, default_value_t = advise::DEFAULT_RUNS, value_name = "N")]
    pub runs: usize,
    #[arg(long, help = super::FIXED_ARRIVALS_HELP)]
    pub fixed_arrivals: bool,
    /// Try a change of the scenario first: KEY=VALUE, as `run --set`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Print the advice (and the replay check) as JSON.
    #[arg(long)]
    pub json: bool,
    /// Draw the workload as it is and with the recommendation, stacked on
    /// one time axis (first run of each).
    #[arg(long, value_name = "FILE.png")]
    pub png: Option<PathBuf>,
    /// The same as one self-contained HTML page.
    #[arg(long, value_name = "FILE.html")]
    pub html: Option<PathBuf>,
}

/// Most runs per remedy.
const MAX_RUNS: usize = 1000;

fn is_trace(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("nettrace"))
}

pub fn run(args: AdviseArgs) -> Result<(), Failure> {
    if args.runs == 0 || args.runs > MAX_RUNS {
        return Err(Failure::error(format!(
            "--runs {}: give from 1 to {MAX_RUNS} runs per remedy",
            args.runs
        )));
    }
    let criterion = advise::parse_goal(args.goal.as_deref())?;
    output::check_outputs(
        &[
            ("--png", args.png.as_deref(), "png"),
            ("--html", args.html.as_deref(), "html"),
        ],
        &[args.evidence.as_path()],
    )?;
    let (scenario, policy, checks) = if is_trace(&args.evidence) {
        if !args.set.is_empty() {
            return Err(Failure::error(
                "--set changes a scenario file: write the draft with `poolsim import TRACE --scenario F.toml`, then advise on F.toml",
            ));
        }
        let (s, p, checks, inferred) = from_trace(&args)?;
        (s, p, Some((checks, inferred)))
    } else {
        let scenario_args = ScenarioArgs {
            file: args.evidence.clone(),
            set: args.set.clone(),
            ..ScenarioArgs::default()
        };
        let (s, p) = scenario_args.load(args.runtime.as_deref())?;
        (s, p, None)
    };
    // A workload that does not complete as it is cannot be advised on by
    // its odds: say so (its first run's account is `run`'s).
    let first = engine::simulate(&scenario, &policy, &mut NullSink, &SimOptions::default());
    if !first.outcome.is_completed() {
        return Err(Failure::Incomplete(Some(format!(
            "error: {} does not complete under {} as it is ({}): `poolsim run {}{}` tells why",
            scenario.name,
            policy.name,
            match first.outcome {
                engine::Outcome::Deadlock { .. } => "it deadlocks",
                engine::Outcome::TimeLimit { .. } => "it reaches its time limit",
                engine::Outcome::Stalled { .. } => "it stalls",
                _ => "it runs out of its event budget",
            },
            args.evidence.display(),
            args.runtime
                .as_deref()
                .map_or(String::new(), |r| format!(" --policy {r}"))
        ))));
    }
    let opts = AdviseOptions {
        runs: args.runs,
        criterion,
        arrivals: ArrivalDraws::from_fixed_flag(args.fixed_arrivals),
    };
    let advice = advise::advise(&scenario, &policy, &opts);
    // Advice on a trace is confirmed when its draft's replay matches the
    // recording, and the draft's items were recorded, not inferred from
    // busy stretches (a stretch may hold several items: a what-if on the
    // thread count cannot be checked against one recording).
    let inferred = checks.as_ref().is_some_and(|(_, i)| *i);
    let matches = checks.as_ref().is_none_or(|(c, _)| c.iter().all(|c| c.ok));
    let confirmed = matches && !inferred;
    let checks = checks.map(|(c, _)| c);
    write_charts(&args, &scenario, &policy, &advice)?;
    if args.json {
        let value = serde_json::json!({
            "advice": advice,
            "replay_check": checks,
            "confirmed": confirmed,
            "draft": checks.as_ref().map(|_| if inferred { "inferred" } else { "items" }),
        });
        println!("{}", serde_json::to_string(&value)?);
    } else {
        if let Some(c) = &checks {
            print!("{}", replay_check::text(c));
            if !matches {
                println!(
                    "  the replay misses the recording: the advice below is UNCONFIRMED (it rests on a draft that is not the app)"
                );
            } else if inferred {
                println!(
                    "  the trace has no work items: the draft's items are inferred from the workers' busy stretches (its header, `poolsim import TRACE --scenario F.toml`, says how sure), and a busy stretch may hold several items: the advice below is UNCONFIRMED until the items are recorded (docs/commands.md#advise)"
                );
            }
            println!();
        }
        print!("{}", advice.text());
    }
    if advice.as_is_meets || advice.recommended.is_some() {
        Ok(())
    } else {
        Err(Failure::Exit(EXIT_NO_ADVICE))
    }
}

/// The trace read, its items drafted into a scenario, the draft replayed
/// and checked against the recording.
/// The trace read, drafted and replayed: the scenario, the policy, the
/// replay check, and whether the draft's items were inferred (no items in
/// the trace).
fn from_trace(args: &AdviseArgs) -> Result<(Scenario, PolicyConfig, Vec<Check>, bool), Failure> {
    let path = &args.evidence;
    let file = File::open(path)
        .map_err(|e| Failure::error(format!("cannot open {}: {e}", path.display())))?;
    let timeline = PoolTimeline::read(file).map_err(|e| {
        let mut text = format!("error: {}: {e}", path.display());
        if let NetTraceError::Truncated { .. } = e {
            text.push_str(
                "\n  help: a trace is complete only once the traced process has exited normally",
            );
        }
        Failure::Input(text)
    })?;
    if timeline.threads_started == 0
        && timeline.items.enqueued == 0
        && timeline.adjustments.is_empty()
    {
        return Err(Failure::Message(
            EXIT_EVIDENCE,
            format!(
                "error: {}: the trace holds no thread-pool work (no worker thread started, no item queued, no adjustment): nothing to advise on",
                path.display()
            ),
        ));
    }
    let source = path.display().to_string();
    // From the work items when the trace has them, else from the pool's
    // own events (thread starts, waits, adjustments: `nettrace::infer`).
    let draft = draft_any(&timeline, &source).map_err(|e| {
        Failure::Message(
            EXIT_EVIDENCE,
            format!(
                "error: {}: {e}\n  advise drafts the workload from the items, or from the workers' busy stretches; this trace shows neither",
                path.display()
            ),
        )
    })?;
    let mut scenario = parse_scenario(&draft.toml, &source).map_err(|e| {
        Failure::Input(format!(
            "error: the scenario drafted from {} does not load:\n{e}",
            path.display()
        ))
    })?;
    let runtime = args.runtime.as_deref().unwrap_or("net8");
    let policy = resolve_policy(runtime)?;
    scenario.pool.policy = policy.name.clone();
    let name = path
        .file_name()
        .map_or_else(|| source.clone(), |n| n.to_string_lossy().into_owned());
    let mut recorded = metrics::summarize(&imported_run(&timeline, &name).trace);
    // The latencies of the program's own items, the ones the draft replays
    // (without the completions it leaves out for the model to queue).
    let latencies: Vec<f64> = program_items(&timeline)
        .iter()
        .filter_map(|r| {
            let end = r.dequeued_ns? + r.pool_time_ns()?;
            Some((end - r.enqueued_ns.or(r.dequeued_ns)?) as f64 / 1e6)
        })
        .collect();
    if !latencies.is_empty() {
        recorded.latency_ms = metrics::Percentiles::of(latencies);
    }
    if recorded.finished == 0 {
        // No items recorded: the span is the draft's (first busy stretch
        // to the last), the peak the trace's own.
        recorded.makespan_ms = draft.span_ms;
        recorded.threads_peak = timeline.peak_threads;
    }
    let replay = engine::simulate(&scenario, &policy, &mut NullSink, &SimOptions::default());
    let replayed = metrics::summarize(&replay.trace);
    let checks = replay_check::compare(&recorded, &replayed);
    Ok((scenario, policy, checks, timeline.items.records.is_empty()))
}

/// `--png` / `--html`: the first run as it is and with the recommendation.
fn write_charts(
    args: &AdviseArgs,
    scenario: &Scenario,
    policy: &PolicyConfig,
    advice: &Advice,
) -> Result<(), Failure> {
    if args.png.is_none() && args.html.is_none() {
        return Ok(());
    }
    let mut variants: Vec<(String, Scenario, PolicyConfig)> =
        vec![("as it is".into(), scenario.clone(), policy.clone())];
    if let Some(i) = advice.recommended {
        let r = &advice.remedies[i];
        if let Some((s, p)) = r.apply(scenario, policy) {
            variants.push((r.what.clone(), s, p));
        }
    }
    let panels: Vec<(String, Timeline)> = variants
        .iter()
        .map(|(title, s, p)| {
            let mut log = EventLog::default();
            let run = engine::simulate(s, p, &mut log, &SimOptions::default());
            let timeline = Timeline::build(&run.trace, Some(&log.events));
            (render::with_headline(title, &timeline), timeline)
        })
        .collect();
    let options = ChartOptions::default();
    let mut files: Vec<(&PathBuf, Vec<u8>)> = Vec::new();
    if let Some(path) = &args.png {
        files.push((
            path,
            render::render_png(&panels, &options).map_err(Failure::error)?,
        ));
    }
    if let Some(path) = &args.html {
        files.push((
            path,
            render::render_html(&panels, &options)
                .map_err(Failure::error)?
                .into_bytes(),
        ));
    }
    output::write_all_atomic(&files)?;
    Ok(())
}
