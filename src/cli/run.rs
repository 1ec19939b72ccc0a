//! `poolsim run`: simulate one scenario under one policy.

use std::path::PathBuf;

use clap::Args;

use poolsim::account::{Account, AccountSink};
use poolsim::counters::{Sample, counters_csv_of};
use poolsim::engine::{self, Outcome, SimOptions};
use poolsim::metrics::Summary;
use poolsim::output;
use poolsim::output::human_ms;
use poolsim::render::streamed::DetailSink;
use poolsim::render::{self, ChartOptions, Timeline};
use poolsim::scenario::ArrivalDraws;
use poolsim::spread::{self, Quantiles, Spread};
use poolsim::stream::RunStream;
use poolsim::time::{SimDuration, SimTime};
use poolsim::trace::ItemRecord;
use poolsim::verdict::{RunningAtInjections, Verdict, starvation_verdict_of};

use super::{Failure, ScenarioArgs, shown_policy_name};

/// `--set` as `run` says it: the summary lists the changes. (No final stop:
/// clap drops it from a doc comment, and `run --help` printed none.)
const SET_HELP: &str = "Try a change without editing the file: KEY=VALUE, a number at a TOML path \
as `sweep --set` takes one (pool.min_threads=16, group.requests.count=200, \
policy.gate.period_ms=250). Repeat for several; the summary lists them";

#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  poolsim run scenarios/seed-001-burst.toml
  poolsim run scenarios/seed-001-burst.toml --policy net6 --png burst.png
  poolsim run scenarios/seed-001-burst.toml --html burst.html
  poolsim run scenarios/seed-000-task-run.toml --json --counters counters.csv
  poolsim run big.toml --until-ms 60000 --png first-minute.png --to-ms 60000
  poolsim run scenarios/seed-001-burst.toml --runs 200 --json
  poolsim run scenarios/seed-001-burst.toml --set pool.min_threads=10

A real pool gives different outcomes run to run (the gate thread's phase,
timer choices, hill climbing's random sample interval); --runs N simulates
seeds S, S+1, ..., S+N-1 (S: --seed or the scenario's seed) and reports the
spread and the distinct outcomes with their share. A service's traffic
differs from run to run too: each run draws its own Poisson arrivals (run K
those of seed K, as `run --seed K` does); --fixed-arrivals replays seed S's
in every run, so that the seeds vary only what the pool does. The per-item
table, --trace and the charts show the run of seed S, and say which outcome
it is.

Exit codes: 0 the run completed; 2 bad input (scenario, policy, flags,
output path); 3 the run did not complete (deadlock, time limit, stall,
event budget), said in the summary.

The scenario format: poolsim new FILE writes a commented starter; the
README's \"Scenario files\" lists every key.",
    mut_arg("set", |a| a.help(SET_HELP)))]
pub struct RunArgs {
    /// Policy to use instead of the scenario's `pool.policy`: a built-in name
    /// (see `poolsim policies`) or a path to a policy file.
    #[arg(long, short)]
    pub policy: Option<String>,
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// Simulate N seeds (from the seed on) and report the spread:
    /// makespan, start delay p95 and peak threads as min/p5/p50/p95/max,
    /// and the distinct outcomes with their share.
    #[arg(long, default_value_t = 1, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub runs: u32,
    #[arg(long, help = super::FIXED_ARRIVALS_HELP)]
    pub fixed_arrivals: bool,
    /// Write one CSV row per work item:
    /// item,group,thread,queued_ns,started_ns,finished_ns.
    #[arg(long, value_name = "FILE.csv")]
    pub trace: Option<PathBuf>,
    /// Draw a Gantt chart (one lane per thread, phases, thread creations,
    /// threads and queue over time, probes) as PNG.
    #[arg(long, value_name = "FILE.png")]
    pub png: Option<PathBuf>,
    /// The same chart as SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub svg: Option<PathBuf>,
    /// The same chart as one self-contained HTML page to open in a
    /// browser, offline: zoom and pan the time axis, hover an item, a
    /// thread (why it was created) or a decision of the pool.
    #[arg(long, value_name = "FILE.html")]
    pub html: Option<PathBuf>,
    /// Write a Chrome / Perfetto trace (open it at ui.perfetto.dev).
    #[arg(long, value_name = "FILE.json")]
    pub chrome: Option<PathBuf>,
    /// Write dotnet-counters-style samples, one a second
    /// (threadpool-thread-count, threadpool-queue-length,
    /// threadpool-completed-items-count, cpu-usage) as CSV.
    #[arg(long, value_name = "FILE.csv")]
    pub counters: Option<PathBuf>,
    /// Charts: start the time axis here (ms); the run itself is whole.
    #[arg(long, value_name = "MS", allow_negative_numbers = true, value_parser = super::time_ms)]
    pub from_ms: Option<f64>,
    /// Charts: end the time axis here (ms).
    #[arg(long, value_name = "MS", allow_negative_numbers = true, value_parser = super::time_ms)]
    pub to_ms: Option<f64>,
    /// Print the summary as one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Per-item table: show the first N items (0: no table).
    #[arg(long, default_value_t = 50, value_name = "N")]
    pub items: usize,
    /// Stop the simulation at this simulated time (ms), instead of the
    /// scenario's `until_ms` (default: 7 days).
    #[arg(long, value_name = "MS", allow_negative_numbers = true, value_parser = super::whole_ms)]
    pub until_ms: Option<u64>,
    /// Stop after this many simulated events (default: 2,000,000,000, far
    /// beyond any real scenario; a run that hits it says so).
    #[arg(long, value_name = "N")]
    pub max_events: Option<u64>,
}

pub fn run(args: RunArgs) -> Result<(), Failure> {
    let (scenario, policy) = args.scenario.load(args.policy.as_deref())?;
    let shown = shown_policy_name(
        args.policy.as_deref().unwrap_or(&scenario.pool.policy),
        &policy,
    );
    let window = super::chart_window(args.from_ms, args.to_ms)?;
    let outputs = [
        ("--trace", args.trace.as_deref(), ""),
        ("--png", args.png.as_deref(), "png"),
        ("--svg", args.svg.as_deref(), "svg"),
        ("--html", args.html.as_deref(), "html"),
        ("--chrome", args.chrome.as_deref(), "json"),
        ("--counters", args.counters.as_deref(), "csv"),
    ];
    output::check_outputs(&outputs, &[args.scenario.file.as_path()])?;
    let options = SimOptions {
        until: args.until_ms.map(SimDuration::from_ms),
        max_events: args.max_events.unwrap_or(engine::DEFAULT_MAX_EVENTS),
    };
    // The items are streamed: the summary, the verdict, the table's first
    // items, the CSV and the counters are made as the items leave the
    // engine, which keeps only those alive; a chart's timeline and a Chrome
    // trace are made as the events come (render::streamed). Large outputs
    // (the CSV, 800 MB at 10 M items; the Chrome trace) go to their
    // temporary files as the run goes, renamed last.
    let wants = Wants {
        items: args.items,
        trace: args.trace.as_ref(),
        chart: args.png.is_some() || args.svg.is_some() || args.html.is_some(),
        chrome: args.chrome.as_ref(),
        counters: args.counters.is_some(),
    };
    let StreamedRun {
        result,
        summary,
        running,
        first: first_items,
        account,
        timeline,
        counters,
        staged,
    } = run_streamed(&wants, &scenario, &policy, &shown, window, &options)?;
    let verdict = starvation_verdict_of(&scenario, &policy, &result.trace, &summary, &running);
    let arrivals = ArrivalDraws::from_fixed_flag(args.fixed_arrivals);
    let spread = (args.runs > 1).then(|| {
        let mut s = spread::spread(&scenario, &policy, args.runs as usize, arrivals, &options);
        // The run already simulated is seed S; the spread re-simulates it
        // without a trace sink, to the same figures.
        s.first_seed = scenario.seed;
        s
    });
    let chart_options = chart_options(window, result.trace.end);

    // Render everything first, then write: a failure leaves no file behind.
    let mut files: Vec<(&PathBuf, Vec<u8>)> = Vec::new();
    let rendered = (|| -> anyhow::Result<()> {
        if let Some(timeline) = timeline {
            // With --runs, the chart says which of the outcomes it shows.
            let title = match &spread {
                Some(s) => outcome_title(
                    &shown,
                    scenario.seed,
                    s,
                    s.outcome_of(summary.makespan_ms, summary.threads_peak),
                ),
                None => shown.clone(),
            };
            // The title's second line says what happened (render::headline).
            let panels = [(render::with_headline(&title, &timeline), timeline)];
            if let Some(path) = &args.png {
                files.push((path, render::render_png(&panels, &chart_options)?));
            }
            if let Some(path) = &args.svg {
                let svg = render::render_svg(&panels, &chart_options)?;
                files.push((path, svg.into_bytes()));
            }
            if let Some(path) = &args.html {
                let html = match &spread {
                    None => render::render_html(&panels, &chart_options)?,
                    // With --runs, the page holds a run of each outcome and
                    // the reader picks the one drawn.
                    Some(s) => {
                        let [(_, first)] = panels;
                        let hint = super::explain_hint(
                            &args.scenario.file,
                            args.policy.as_deref(),
                            &scenario,
                            arrivals,
                        );
                        let seeds = OutcomeSeeds {
                            shown: &shown,
                            spread: s,
                        };
                        let completed = result.outcome.is_completed();
                        let (panel, end) = seeds.panel(first, completed, hint, |seed| {
                            let run = run_streamed(
                                &Wants {
                                    items: 0,
                                    trace: None,
                                    chart: true,
                                    chrome: None,
                                    counters: false,
                                },
                                &scenario.for_run(seed.wrapping_sub(scenario.seed), arrivals),
                                &policy,
                                &shown,
                                window,
                                &options,
                            )?;
                            let end = run.result.trace.end;
                            let timeline = run
                                .timeline
                                .ok_or_else(|| anyhow::anyhow!("seed {seed}: no chart was made"))?;
                            Ok((timeline, end))
                        })?;
                        let opts = self::chart_options(window, end.max(result.trace.end));
                        render::html::render_html_outcomes(&[panel], &opts)?
                    }
                };
                files.push((path, html.into_bytes()));
            }
        }
        if let (Some(path), Some(samples)) = (&args.counters, &counters) {
            files.push((path, counters_csv_of(samples)));
        }
        Ok(())
    })();
    rendered
        .and_then(|()| output::write_all_atomic(&files))
        .and_then(|()| staged.into_iter().try_for_each(output::Staged::commit))?;

    let account = Account::from_model(&account.events);
    if args.json {
        let mut value = serde_json::to_value(&summary)?;
        if let Some(obj) = value.as_object_mut() {
            if !result.outcome.is_completed() {
                // An incomplete run has no makespan: its last finish is not one.
                let last = obj.insert("makespan_ms".into(), serde_json::Value::Null);
                if let Some(last) = last {
                    obj.insert("last_finish_ms".into(), last);
                }
            }
            obj.insert("outcome".into(), outcome_json(&result.outcome));
            if !args.scenario.set.is_empty() {
                obj.insert("changed".into(), args.scenario.set.clone().into());
            }
            if let Some(n) = scenario.machine.processors {
                obj.insert("processors".into(), n.into());
            }
            obj.insert("events".into(), result.events.into());
            // The goal changes as the runtime logs them
            // (ThreadPoolWorkerThreadAdjustmentAdjustment), as `import` reads them.
            obj.insert(
                "adjustments".into(),
                serde_json::to_value(&account.adjustments).unwrap_or_default(),
            );
            obj.insert(
                "adjustments_by_reason".into(),
                serde_json::to_value(account.count_by_reason()).unwrap_or_default(),
            );
            obj.insert(
                "starvation".into(),
                serde_json::to_value(&verdict).unwrap_or_default(),
            );
            if let Some(s) = &spread {
                insert_spread(obj, s, &summary);
            }
        }
        println!("{value}");
    } else {
        if args.items > 0 {
            print_items(&first_items, summary.items, &result.trace.groups);
        }
        print_summary(
            &summary,
            &result.outcome,
            &args.scenario.set,
            scenario.machine.processors,
        );
        print_adjustments(&account);
        print_verdict(&verdict);
        if let Some(s) = &spread {
            let hint = super::explain_hint(
                &args.scenario.file,
                args.policy.as_deref(),
                &scenario,
                arrivals,
            );
            print_spread(s, &summary, &hint, scenario.drawn_arrivals());
        }
    }
    if result.outcome.is_completed() {
        Ok(())
    } else {
        // The summary said how the run ended.
        Err(Failure::Incomplete(None))
    }
}

/// The panel title of a `--runs` run of seed `seed`: which of `s`'s
/// outcomes it is (`outcome`, its index), or that it did not complete.
pub(super) fn outcome_title(shown: &str, seed: u64, s: &Spread, outcome: Option<usize>) -> String {
    match outcome {
        Some(k) => format!(
            "{shown} · seed {}: outcome {} of {} ({:.0} % of {} runs)",
            seed,
            k + 1,
            s.outcomes.len(),
            s.outcomes[k].share * 100.0,
            s.runs
        ),
        None => format!("{shown} · seed {seed}: did not complete"),
    }
}

/// One policy's `--runs N --html` panel: the run of each outcome drawn.
pub(super) struct OutcomeSeeds<'a> {
    /// The policy as shown.
    pub shown: &'a str,
    /// Its spread, from the first seed on.
    pub spread: &'a Spread,
}

impl<'a> OutcomeSeeds<'a> {
    /// The panel of the outcomes drawn ([`render::html::outcomes_drawn`]),
    /// each the run of its seed, titled with its outcome: the first seed's
    /// run `first` (`completed` or not) for its own outcome (the one whose
    /// first seed it is), and for every other outcome the run of its seed
    /// made by `simulate(seed)` (its timeline and end), on the first
    /// seed's workload as `--runs` made it. A first run that did not
    /// complete is a choice of its own, last. Also the latest end of the
    /// runs simulated here.
    pub fn panel(
        &self,
        first: Timeline,
        completed: bool,
        hint: String,
        mut simulate: impl FnMut(u64) -> anyhow::Result<(Timeline, SimTime)>,
    ) -> anyhow::Result<(render::html::OutcomePanel<'a>, SimTime)> {
        let s = self.spread;
        // The first seed is the smallest: each outcome's seed is its first,
        // so the first seed's outcome is the one of that seed (which
        // `outcome_of`, by figures alone, may not name when two outcomes'
        // makespans are near).
        let first_outcome = if completed {
            s.outcomes
                .iter()
                .position(|o| o.seed == first.seed)
                .or_else(|| s.outcome_of(first.busy_until().as_ms_f64(), first.max_threads()))
        } else {
            None
        };
        let titled = |k: Option<usize>, t: Timeline| {
            let title = outcome_title(self.shown, t.seed, s, k);
            (render::with_headline(&title, &t), t)
        };
        let mut first = Some(first);
        let mut runs = Vec::new();
        let mut outcomes = Vec::new();
        let mut selected = 0;
        let mut end = SimTime::ZERO;
        for k in render::html::outcomes_drawn(s, first_outcome) {
            if Some(k) == first_outcome
                && let Some(t) = first.take()
            {
                selected = runs.len();
                runs.push(titled(Some(k), t));
            } else {
                let (t, run_end) = simulate(s.outcomes[k].seed)?;
                end = end.max(run_end);
                runs.push(titled(Some(k), t));
            }
            outcomes.push(Some(k));
        }
        if let Some(t) = first {
            selected = runs.len();
            runs.push(titled(None, t));
            outcomes.push(None);
        }
        Ok((
            render::html::OutcomePanel {
                name: self.shown.to_string(),
                spread: s,
                runs,
                outcomes,
                selected,
                hint: Some(hint),
            },
            end,
        ))
    }
}

/// A run whose items (and, for a chart or Chrome trace, events) were
/// streamed.
pub(super) struct StreamedRun {
    pub result: engine::RunResult,
    pub summary: Summary,
    /// The items running at each injection, for the verdict.
    pub running: RunningAtInjections,
    pub first: Vec<ItemRecord>,
    pub account: AccountSink,
    /// The chart's timeline, when a chart was asked for.
    pub timeline: Option<Timeline>,
    /// The counters' samples, when asked for.
    pub counters: Option<Vec<Sample>>,
    /// The CSV and Chrome traces, written, to commit.
    pub staged: Vec<output::Staged>,
}

/// The chart's options for a run that ended at `end`: an open-ended window
/// ends where the run's last item does (or where an incomplete run
/// stopped), the trace's end.
pub(super) fn chart_options(window: Option<(SimTime, SimTime)>, end: SimTime) -> ChartOptions {
    ChartOptions {
        time_range: window.map(|(a, b)| {
            (
                a,
                if b == SimTime::MAX {
                    end.max(a + SimDuration(1))
                } else {
                    b
                },
            )
        }),
        ..ChartOptions::default()
    }
}

/// What a streamed run makes as it goes.
pub(super) struct Wants<'a> {
    /// The first items kept for the table.
    pub items: usize,
    /// The CSV trace's file.
    pub trace: Option<&'a PathBuf>,
    /// A chart's timeline.
    pub chart: bool,
    /// The Chrome trace's file.
    pub chrome: Option<&'a PathBuf>,
    /// The counters' samples.
    pub counters: bool,
}

/// One run, streamed: `run`'s path, and `explain --html`'s.
pub(super) fn run_streamed(
    wants: &Wants<'_>,
    scenario: &poolsim::scenario::Scenario,
    policy: &poolsim::policy::PolicyConfig,
    shown: &str,
    window: Option<(SimTime, SimTime)>,
    options: &SimOptions,
) -> anyhow::Result<StreamedRun> {
    let mut csv = match wants.trace {
        Some(path) => Some(output::Staged::create(path)?),
        None => None,
    };
    let groups: Vec<String> = scenario.groups.iter().map(|g| g.name.clone()).collect();
    let detail = DetailSink::new(
        AccountSink::default(),
        wants.chart,
        window,
        wants.chrome.is_some(),
        groups.clone(),
    );
    let mut stream = RunStream::new(detail, wants.items, csv.as_mut().map(|(_, w)| w), groups)?
        .with_call_groups(&scenario.call_groups());
    if wants.counters {
        stream = stream.with_counters(scenario.machine.cores);
    }
    let mut result = engine::simulate(scenario, policy, &mut stream, options);
    result.trace.policy = shown.to_string();
    let streamed = stream.finish(&result.trace);
    streamed.csv?;
    let mut staged = Vec::new();
    if let Some((s, w)) = csv {
        staged.push(s.close(w)?);
    }
    let unfinished = streamed.summary.items - streamed.summary.finished;
    let mut chrome = match wants.chrome {
        Some(path) => Some(output::Staged::create(path)?),
        None => None,
    };
    let timeline = streamed.events.finish(
        &result.trace,
        streamed.summary.items,
        unfinished,
        chrome.as_mut().map(|(_, w)| w as &mut dyn std::io::Write),
    );
    let (timeline, account) = timeline?;
    if let Some((s, w)) = chrome {
        staged.push(s.close(w)?);
    }
    Ok(StreamedRun {
        result,
        summary: streamed.summary,
        running: streamed.running,
        first: streamed.first,
        account,
        timeline,
        counters: streamed.counters,
        staged,
    })
}

/// `--runs N --json`: `runs`, the quantiles in place of the one run's
/// figures (`makespan_ms: {min, p5, p50, p95, max}`), `outcomes`, and the
/// outcome the run of the first seed (the rest of the object) belongs to.
pub(super) fn insert_spread(
    obj: &mut serde_json::Map<String, serde_json::Value>,
    s: &Spread,
    one: &Summary,
) {
    fn v<T: serde::Serialize>(x: &T) -> serde_json::Value {
        serde_json::to_value(x).unwrap_or_default()
    }
    obj.insert("runs".into(), s.runs.into());
    obj.insert("first_seed".into(), s.first_seed.into());
    obj.insert("incomplete_runs".into(), s.incomplete.into());
    if let Some(m) = obj.remove("makespan_ms") {
        obj.insert("makespan_ms_of_first_seed".into(), m);
    }
    obj.insert("makespan_ms".into(), v(&s.makespan_ms));
    obj.insert("start_delay_p95_ms".into(), v(&s.start_delay_p95_ms));
    obj.insert("threads_peak_spread".into(), v(&s.threads_peak));
    obj.insert("outcomes".into(), v(&s.outcomes));
    if let Some(draws) = s.arrivals {
        obj.insert("arrivals".into(), draws.name().into());
    }
    obj.insert(
        "first_seed_outcome".into(),
        s.outcome_of(one.makespan_ms, one.threads_peak).into(),
    );
}

fn print_spread(s: &Spread, one: &Summary, hint: &str, drawn: &str) {
    let q = |x: &Quantiles, f: &dyn Fn(f64) -> String| {
        format!(
            "min {}   p5 {}   p50 {}   p95 {}   max {}",
            f(x.min),
            f(x.p5),
            f(x.p50),
            f(x.p95),
            f(x.max)
        )
    };
    println!();
    println!(
        "spread over {} seeds ({} to {}){}",
        s.runs,
        s.first_seed,
        s.first_seed.wrapping_add(s.runs as u64 - 1),
        if s.incomplete > 0 {
            format!(", {} incomplete and left out", s.incomplete)
        } else {
            String::new()
        }
    );
    match s.arrivals {
        Some(ArrivalDraws::PerRun) => println!(
            "each run drew its own {drawn} (--fixed-arrivals: seed {}'s in every run)",
            s.first_seed
        ),
        Some(ArrivalDraws::Fixed) => println!(
            "every run on seed {}'s {drawn} (--fixed-arrivals)",
            s.first_seed
        ),
        None => {}
    }
    println!("makespan      {}", q(&s.makespan_ms, &|x| human_ms(x)));
    println!(
        "delay p95     {}",
        q(&s.start_delay_p95_ms, &|x| human_ms(x))
    );
    println!(
        "peak threads  {}",
        q(&s.threads_peak, &|x| format!("{x:.0}"))
    );
    println!("outcomes");
    for line in s.outcome_lines(8) {
        println!("  {line}");
    }
    match s.outcome_of(one.makespan_ms, one.threads_peak) {
        Some(k) => println!(
            "the run above (seed {}) is outcome {} ({:.1} % of runs)",
            one.seed,
            k + 1,
            s.outcomes[k].share * 100.0
        ),
        None => println!("the run above (seed {}) did not complete", one.seed),
    }
    if s.outcomes.len() > 1 {
        println!("why an outcome: {hint} (K: its seed)");
    }
}

fn outcome_json(outcome: &Outcome) -> serde_json::Value {
    use serde_json::json;
    match outcome {
        Outcome::Completed => json!({"kind": "completed"}),
        Outcome::TimeLimit { at, unfinished } => {
            json!({"kind": "time-limit", "at_ms": at.as_ms_f64(), "unfinished": unfinished})
        }
        Outcome::EventBudget { events, unfinished } => {
            json!({"kind": "event-budget", "events": events, "unfinished": unfinished})
        }
        Outcome::Stalled { at, unfinished } => {
            json!({"kind": "stalled", "at_ms": at.as_ms_f64(), "unfinished": unfinished})
        }
        Outcome::Deadlock {
            at,
            unfinished,
            blocked,
        } => json!({
            "kind": "deadlock",
            "at_ms": at.as_ms_f64(),
            "unfinished": unfinished,
            "blocked": blocked
                .iter()
                .map(|(t, i)| json!({"thread": t, "item": i}))
                .collect::<Vec<_>>(),
        }),
    }
}

fn fmt_ms(t: SimTime) -> String {
    if t == SimTime::MAX {
        "-".into()
    } else {
        format!("{:.1}", t.as_ms_f64())
    }
}

/// The first items (`items`, as many as the table shows) of `total`.
fn print_items(items: &[ItemRecord], total: usize, groups: &[String]) {
    let limit = items.len();
    println!(
        "{:>6}  {:<12} {:>6}  {:>11}  {:>11}  {:>11}  {:>9}",
        "item", "group", "thread", "queued ms", "started ms", "finished ms", "delay ms"
    );
    for i in items {
        let group = groups
            .get(i.group as usize)
            .map(String::as_str)
            .unwrap_or("");
        let thread = if i.thread == u32::MAX {
            "-".to_string()
        } else {
            i.thread.to_string()
        };
        let delay = if i.started == SimTime::MAX {
            "-".to_string()
        } else {
            format!("{:.1}", i.started.as_ms_f64() - i.queued.as_ms_f64())
        };
        println!(
            "{:>6}  {:<12} {:>6}  {:>11}  {:>11}  {:>11}  {:>9}",
            i.item,
            group,
            thread,
            fmt_ms(i.queued),
            fmt_ms(i.started),
            fmt_ms(i.finished),
            delay
        );
    }
    if total > limit {
        println!(
            "   ... {} more items not shown (--items {} shows every item, --items 0 none; --trace F.csv writes them all)",
            total - limit,
            total
        );
    }
    println!();
}

fn print_verdict(v: &Verdict) {
    if v.starved {
        for line in &v.text {
            println!("{line}");
        }
    }
}

/// The summary; `processors`: the runtime's processor count when the
/// scenario sets one apart from its cores (`machine.processors`).
fn print_summary(s: &Summary, outcome: &Outcome, sets: &[String], processors: Option<u32>) {
    for line in output::summary_lines(s, outcome, sets) {
        match processors {
            Some(n) if line.starts_with("policy ") => {
                println!("{line}   processors {n} (the runtime's count)");
            }
            _ => println!("{line}"),
        }
    }
}

/// The model's goal changes by the runtime's reason for them, as a .NET
/// trace would show them (nothing for a model without a goal).
fn print_adjustments(account: &Account) {
    let counts = account.count_by_reason();
    if counts.is_empty() {
        return;
    }
    let text: Vec<String> = counts.iter().map(|(r, n)| format!("{n} {r}")).collect();
    println!(
        "adjustments   {}   (ThreadPoolWorkerThreadAdjustmentAdjustment, by Reason)",
        text.join(", ")
    );
}
