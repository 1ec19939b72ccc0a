//! `poolsim import`: read an EventPipe trace (.nettrace) of a real .NET
//! process and print its thread pool's timeline; draw it as `poolsim run`
//! draws a simulation (`--png`, `--svg`, `--html`, `--chrome`, built by
//! `poolsim::nettrace::replay`: each lane what its thread did as far as the
//! trace tells, every goal adjustment marked with its reason), and draft a
//! replayable scenario from its work items (`--scenario`,
//! `poolsim::nettrace::draft`).

use std::fs::File;
use std::path::PathBuf;

use clap::Args;

use poolsim::nettrace::infer::draft_any;
use poolsim::nettrace::replay::{chrome_json, imported_run};
use poolsim::nettrace::{
    FRAMEWORK_ITEMS_CONFIG, GoalChange, NetTraceError, PoolTimeline, TraceInfo,
};
use poolsim::output::{self, human_ms};
use poolsim::render::{self, ChartOptions};
use poolsim::scenario::load::parse_scenario;

use super::Failure;

#[derive(Args, Debug)]
#[command(after_help = "\
Record a trace without dotnet-trace (.NET 5 to 8 write it themselves):
  DOTNET_EnableEventPipe=1 DOTNET_EventPipeOutputPath=app.nettrace \\
  DOTNET_EventPipeConfig='Microsoft-Windows-DotNETRuntime:0x10000:5' dotnet app.dll
(keyword 0x10000 = Threading, level 5 = Verbose; scripts/record-nettrace.sh
does this for the burst program of tests/fixtures/nettrace). For the work
items (queue length, per-item times, --scenario) add the provider .NET 6+
log them with:
  DOTNET_EventPipeConfig='Microsoft-Windows-DotNETRuntime:0x10000:5,System.Diagnostics.Eventing.FrameworkEventSource:0x12:5'

Examples:
  poolsim import app.nettrace
  poolsim import tests/fixtures/nettrace/net8-starvation.nettrace --json
  poolsim import tests/fixtures/nettrace/net8-items.nettrace --png items.png --chrome items.json
  poolsim import tests/fixtures/nettrace/net8-starvation.nettrace --html starvation.html
  poolsim import tests/fixtures/nettrace/net8-items.nettrace --scenario items.toml
  poolsim run items.toml

The charts' lanes: with item events, one bar per item (from its dequeue to
its thread's next dequeue, wait or stop); without, a thread is busy from its
start, or its first event after a wait, to its next wait
(ThreadPoolWorkerThreadWait), drawn as pool-internal work: the trace does
not say what it ran. Each goal adjustment is marked in the decisions strip
with its reason (Starvation on the gate row, hill climbing's on the
climbing row), and a thread started for one says so when hovered.

Times are milliseconds since the trace started (its sync time).
Exit codes: 0 the trace was read; 2 bad input (missing file, not a
.nettrace file, truncated or corrupt, an unsupported format version).")]
pub struct ImportArgs {
    /// The trace (.nettrace, NetTrace format 4 or 5: .NET Core 3 to .NET 8).
    pub trace: PathBuf,
    /// Print the timeline as one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Draw the trace as `poolsim run --png` draws a run: one lane per
    /// worker thread (its items, its start with the reason it is owed to),
    /// threads and goal and queue length over time.
    #[arg(long, value_name = "FILE.png")]
    pub png: Option<PathBuf>,
    /// The same chart as SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub svg: Option<PathBuf>,
    /// The same chart as one self-contained HTML page to open in a
    /// browser, offline: zoom and pan, hover a thread (why it was started)
    /// or an adjustment (its reason).
    #[arg(long, value_name = "FILE.html")]
    pub html: Option<PathBuf>,
    /// Write a Chrome / Perfetto trace (threads, items, counters, and each
    /// goal adjustment with its reason).
    #[arg(long, value_name = "FILE.json")]
    pub chrome: Option<PathBuf>,
    /// Draft a replayable scenario from the work items (needs their events,
    /// see below): arrivals from the enqueues, bodies from the pool times.
    #[arg(long, value_name = "OUT.toml")]
    pub scenario: Option<PathBuf>,
}

pub fn run(args: ImportArgs) -> Result<(), Failure> {
    let file = File::open(&args.trace)
        .map_err(|e| Failure::error(format!("cannot open {}: {e}", args.trace.display())))?;
    let timeline = PoolTimeline::read(file).map_err(|e| {
        let mut text = format!("error: {}: {e}", args.trace.display());
        if let NetTraceError::Truncated { .. } = e {
            text.push_str(
                "\n  help: a trace is complete only once the traced process has exited normally",
            );
        }
        Failure::Input(text)
    })?;
    write_outputs(&args, &timeline)?;
    if args.json {
        let mut value = serde_json::to_value(&timeline)?;
        if let Some(obj) = value.as_object_mut() {
            obj.insert("file".into(), args.trace.display().to_string().into());
        }
        println!("{value}");
    } else {
        print_timeline(&args, &timeline);
    }
    if let Some(path) = &args.scenario {
        eprintln!(
            "wrote {} (replay: poolsim run {})",
            path.display(),
            path.display()
        );
    }
    Ok(())
}

/// Renders and drafts every output asked for, then writes them all (a
/// failure leaves no file behind).
fn write_outputs(args: &ImportArgs, t: &PoolTimeline) -> anyhow::Result<()> {
    let outputs = [
        ("--png", args.png.as_deref(), "png"),
        ("--svg", args.svg.as_deref(), "svg"),
        ("--html", args.html.as_deref(), "html"),
        ("--chrome", args.chrome.as_deref(), "json"),
        ("--scenario", args.scenario.as_deref(), "toml"),
    ];
    output::check_outputs(&outputs, &[args.trace.as_path()])?;
    let source = args.trace.display().to_string();
    let name = args
        .trace
        .file_name()
        .map_or_else(|| source.clone(), |n| n.to_string_lossy().into_owned());
    let mut files: Vec<(&PathBuf, Vec<u8>)> = Vec::new();
    if let Some(path) = &args.scenario {
        let draft = draft_any(t, &source)?;
        // What is written must load: an extreme trace (times or counts
        // past the scenario's limits) is refused here, not by `run` later.
        if let Err(e) = parse_scenario(&draft.toml, &path.display().to_string()) {
            anyhow::bail!("the scenario drafted from this trace does not load:\n{e}");
        }
        files.push((path, draft.toml.into_bytes()));
    }
    let chart = args.png.is_some() || args.svg.is_some() || args.html.is_some();
    if chart || args.chrome.is_some() {
        let run = imported_run(t, &name);
        if chart {
            let timeline = run.timeline();
            // Without item events the bars are the threads' waits' gaps:
            // the title says so, since the trace does not say what ran.
            let title = if run.from_waits {
                "recorded · no item events: a thread is busy from its start or wake-up to its next wait"
            } else {
                "recorded"
            };
            let panels = [(render::with_headline(title, &timeline), timeline)];
            let options = ChartOptions::default();
            if let Some(path) = &args.png {
                files.push((path, render::render_png(&panels, &options)?));
            }
            if let Some(path) = &args.svg {
                files.push((path, render::render_svg(&panels, &options)?.into_bytes()));
            }
            if let Some(path) = &args.html {
                files.push((path, render::render_html(&panels, &options)?.into_bytes()));
            }
        }
        if let Some(path) = &args.chrome {
            files.push((path, chrome_json(&run, t).into_bytes()));
        }
    }
    output::write_all_atomic(&files)
}

fn ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

fn print_header(args: &ImportArgs, info: &TraceInfo) {
    let t = &info.sync_time_utc;
    println!(
        "trace         {}   {} bytes   NetTrace {}   pid {}   {} processors",
        args.trace.display(),
        info.bytes,
        info.format_version,
        info.process_id,
        info.processors
    );
    println!(
        "started       {:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:03} UTC   clock {} ticks/s",
        t.year, t.month, t.day, t.hour, t.minute, t.second, t.millisecond, info.qpc_frequency
    );
    let mut read = format!(
        "{} read, {} thread-pool events decoded",
        info.events, info.pool_events
    );
    if info.undecoded_pool_events > 0 {
        read.push_str(&format!(
            ", {} too short to decode",
            info.undecoded_pool_events
        ));
    }
    if info.events_without_metadata > 0 {
        read.push_str(&format!(
            ", {} without metadata",
            info.events_without_metadata
        ));
    }
    read.push_str(&format!(", {} lost by the runtime", info.events_lost));
    println!("events        {read}");
}

/// One line of the merged timeline.
enum Row<'a> {
    Thread(&'a poolsim::nettrace::ThreadCountPoint),
    Adjust(&'a poolsim::nettrace::Adjustment),
}

fn print_timeline(args: &ImportArgs, t: &PoolTimeline) {
    if let Some(info) = &t.trace {
        print_header(args, info);
    }
    if let Some(m) = &t.min_max {
        println!(
            "limits        worker threads min {} max {}   I/O threads min {} max {}   (at {:.1} ms)",
            m.min_workers,
            m.max_workers,
            m.min_io,
            m.max_io,
            ms(m.time_ns)
        );
    }
    let decoded = t.trace.as_ref().map_or(0, |i| i.pool_events);
    if decoded == 0 {
        println!();
        println!("no thread-pool events in this trace: record with the Threading keyword, e.g.");
        println!("  DOTNET_EventPipeConfig='Microsoft-Windows-DotNETRuntime:0x10000:5'");
        return;
    }

    // Starts, stops and adjustments merged in time order (each list is).
    let mut rows: Vec<(i64, Row)> = Vec::with_capacity(t.thread_count.len() + t.adjustments.len());
    rows.extend(t.thread_count.iter().map(|p| (p.time_ns, Row::Thread(p))));
    rows.extend(t.adjustments.iter().map(|a| (a.time_ns, Row::Adjust(a))));
    rows.sort_by_key(|(time, _)| *time);
    println!();
    println!("timeline (ms since the trace started)");
    println!(
        "  {:>10}  {:<40} {:>7} {:>5}",
        "time_ms", "event", "threads", "goal"
    );
    let mut threads: Option<u32> = None;
    let mut goal: Option<u32> = None;
    let show = |v: Option<u32>| v.map_or_else(|| "-".to_string(), |n| n.to_string());
    for (time, row) in &rows {
        let what = match row {
            Row::Thread(p) => {
                threads = Some(p.count);
                if p.change > 0 {
                    format!(
                        "thread start (tid {}) {}",
                        p.thread_id,
                        p.owed_to
                            .as_deref()
                            .map(|r| format!("<- {r}"))
                            .unwrap_or_default()
                    )
                } else {
                    format!("thread stop (tid {})", p.thread_id)
                }
            }
            Row::Adjust(a) => {
                goal = Some(a.new_count);
                let from = a
                    .previous_count
                    .map_or_else(|| "?".to_string(), |p| p.to_string());
                let arrow = match a.change {
                    GoalChange::Raised => "up",
                    GoalChange::Lowered => "down",
                    GoalChange::Kept => "kept",
                    GoalChange::First => "set",
                };
                format!("goal {from} -> {} {arrow} {}", a.new_count, a.reason)
            }
        };
        println!(
            "  {:>10.1}  {:<40} {:>7} {:>5}",
            ms(*time),
            what,
            show(threads),
            show(goal)
        );
    }

    println!();
    println!("adjustments");
    println!(
        "  {:>10}  {:>4} {:>4}  {:<20} {:>14}",
        "time_ms", "from", "goal", "reason", "avg_throughput"
    );
    for a in &t.adjustments {
        println!(
            "  {:>10.1}  {:>4} {:>4}  {:<20} {:>14.3}",
            ms(a.time_ns),
            a.previous_count
                .map_or_else(|| "?".to_string(), |p| p.to_string()),
            a.new_count,
            a.reason.name(),
            a.average_throughput
        );
    }
    if t.adjustments.is_empty() {
        println!("  (none)");
    }

    println!();
    if t.starvation_injections.is_empty() {
        println!("starvation injections: none");
    } else {
        println!("starvation injections: {}", t.starvation_injections.len());
        for i in &t.starvation_injections {
            println!(
                "  {:>10.1}  goal {} -> {}",
                ms(i.time_ns),
                i.previous_count
                    .map_or_else(|| "?".to_string(), |p| p.to_string()),
                i.new_count
            );
        }
    }
    if !t.cooperative_blocking_injections.is_empty() {
        println!(
            "cooperative-blocking raises: {} (at {})",
            t.cooperative_blocking_injections.len(),
            t.cooperative_blocking_injections
                .iter()
                .map(|i| format!("{:.1} ms", ms(i.time_ns)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }

    let list = |m: &std::collections::BTreeMap<String, u64>| {
        m.iter()
            .map(|(r, n)| format!("{n} {r}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!();
    println!("summary");
    println!(
        "  peak threads   {}{}",
        t.peak_threads,
        t.peak_threads_at_ns
            .map(|ns| format!(" (first at {})", human_ms(ms(ns))))
            .unwrap_or_default()
    );
    let created = list(&t.threads_created_by_reason);
    println!(
        "  created        {}{}   stopped {}   distinct worker threads {}",
        t.threads_started,
        if created.is_empty() {
            String::new()
        } else {
            format!(" ({created})")
        },
        t.threads_stopped,
        t.distinct_worker_threads
    );
    let raised = list(&t.goal_raised_by_reason);
    println!(
        "  goal raised    {}",
        if raised.is_empty() {
            "never".to_string()
        } else {
            format!("by {raised}")
        }
    );
    println!(
        "  adjustments    {}{}   final goal {}",
        t.adjustments.len(),
        if t.adjustments.is_empty() {
            String::new()
        } else {
            format!(" ({})", list(&t.adjustments_by_reason))
        },
        show(t.final_goal)
    );
    println!(
        "  starvation     {} injections",
        t.starvation_injections.len()
    );
    println!(
        "  hill climbing  {} throughput samples, {} stats events",
        t.throughput_samples, t.stats_events
    );
    if let Some(w) = t.max_working_threads {
        println!("  working        at most {w} threads processing work");
    }
    print_items(t);
    if let (Some(f), Some(l)) = (t.first_event_ns, t.last_event_ns) {
        println!(
            "  span           {} to {} ({})",
            human_ms(ms(f)),
            human_ms(ms(l)),
            human_ms(ms(t.duration_ns()))
        );
    }
}

/// The work items' summary line(s), or how to record them.
fn print_items(t: &PoolTimeline) {
    let w = &t.items;
    if w.is_empty() {
        println!("  work items     no item events (add {FRAMEWORK_ITEMS_CONFIG} to record them)");
        return;
    }
    let source = match w.source {
        Some(poolsim::nettrace::ItemSource::Runtime) => "DotNETRuntime 61/62",
        _ => "FrameworkEventSource 30/31",
    };
    println!(
        "  work items     {} enqueued, {} dequeued ({source}), queue peak {}{}",
        w.enqueued,
        w.dequeued,
        w.max_queue,
        if w.never_dequeued > 0 {
            format!(", {} never dequeued", w.never_dequeued)
        } else {
            String::new()
        }
    );
    let stats = |d: &poolsim::nettrace::DurationStats| match (d.mean_ms(), d.min_ns, d.max_ns) {
        (Some(mean), Some(min), Some(max)) => format!(
            "mean {}   min {}   max {}",
            human_ms(mean),
            human_ms(ms(min)),
            human_ms(ms(max))
        ),
        _ => "-".to_string(),
    };
    println!(
        "  queue time     {}   (enqueue -> dequeue)",
        stats(&w.queue_time)
    );
    println!(
        "  pool time      {}   (dequeue -> the thread's next dequeue, wait or stop)",
        stats(&w.pool_time)
    );
    if let Some(span) = w.span_ns() {
        println!(
            "  items span     {} (first item event to the last item's end){}",
            human_ms(ms(span)),
            if w.running_at_end > 0 {
                format!(
                    "; {} running when the trace ended (ended at its last event)",
                    w.running_at_end
                )
            } else {
                String::new()
            }
        );
    }
    let mut notes = Vec::new();
    if w.repeated_enqueues > 0 {
        notes.push(format!(
            "{} repeated enqueues of a waiting id",
            w.repeated_enqueues
        ));
    }
    if w.dequeued_without_enqueue > 0 {
        notes.push(format!(
            "{} dequeues with no enqueue in the trace",
            w.dequeued_without_enqueue
        ));
    }
    if w.other_source_events > 0 {
        notes.push(format!(
            "{} item events of the other source ignored",
            w.other_source_events
        ));
    }
    if w.records_dropped > 0 {
        notes.push(format!("{} items counted but not kept", w.records_dropped));
    }
    if !notes.is_empty() {
        println!("  items note     {}", notes.join(", "));
    }
}
