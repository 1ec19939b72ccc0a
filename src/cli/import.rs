//! `poolsim import`: read an EventPipe trace (.nettrace) of a real .NET
//! process and print its thread pool's timeline.

use std::fs::File;
use std::path::PathBuf;

use clap::Args;

use poolsim::nettrace::{GoalChange, NetTraceError, PoolTimeline, TraceInfo};
use poolsim::output::human_ms;

use super::EXIT_INPUT;

#[derive(Args, Debug)]
#[command(after_help = "\
Record a trace without dotnet-trace (.NET 5 to 8 write it themselves):
  DOTNET_EnableEventPipe=1 DOTNET_EventPipeOutputPath=app.nettrace \\
  DOTNET_EventPipeConfig='Microsoft-Windows-DotNETRuntime:0x10000:5' dotnet app.dll
(keyword 0x10000 = Threading, level 5 = Verbose; scripts/record-nettrace.sh
does this for the burst program of tests/fixtures/nettrace).

Examples:
  poolsim import app.nettrace
  poolsim import tests/fixtures/nettrace/net8-starvation.nettrace --json

Times are milliseconds since the trace started (its sync time).
Exit codes: 0 the trace was read; 2 bad input (missing file, not a
.nettrace file, truncated or corrupt, an unsupported format version).")]
pub struct ImportArgs {
    /// The trace (.nettrace, NetTrace format 4 or 5: .NET Core 3 to .NET 8).
    pub trace: PathBuf,
    /// Print the timeline as one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: ImportArgs) -> i32 {
    let file = match File::open(&args.trace) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: cannot open {}: {e}", args.trace.display());
            return EXIT_INPUT;
        }
    };
    let timeline = match PoolTimeline::read(file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {}: {e}", args.trace.display());
            if let NetTraceError::Truncated { .. } = e {
                eprintln!(
                    "  help: a trace is complete only once the traced process has exited normally"
                );
            }
            return EXIT_INPUT;
        }
    };
    if args.json {
        let mut value = match serde_json::to_value(&timeline) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_INPUT;
            }
        };
        if let Some(obj) = value.as_object_mut() {
            obj.insert("file".into(), args.trace.display().to_string().into());
        }
        println!("{value}");
    } else {
        print_timeline(&args, &timeline);
    }
    0
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
    if t.enqueued > 0 || t.dequeued > 0 {
        println!(
            "  work items     {} enqueued, {} dequeued",
            t.enqueued, t.dequeued
        );
    }
    if let (Some(f), Some(l)) = (t.first_event_ns, t.last_event_ns) {
        println!(
            "  span           {} to {} ({})",
            human_ms(ms(f)),
            human_ms(ms(l)),
            human_ms(ms(t.duration_ns()))
        );
    }
}
