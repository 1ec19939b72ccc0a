//! `--counters F.csv`: a run as `dotnet-counters` would have shown it.
//!
//! `dotnet-counters collect --format csv` (dotnet/diagnostics,
//! `src/Tools/dotnet-counters/Exporters/CSVExporter.cs`) writes one row per
//! counter per refresh interval, with the header
//! `Timestamp,Provider,Counter Name,Counter Type,Mean/Increment`. poolsim
//! writes the same columns for the System.Runtime counters a .NET engineer
//! watches for starvation, one sample a second, under their real names:
//!
//! | counter | type | value at the sample at `t` |
//! |---|---|---|
//! | `threadpool-thread-count` | Metric | pool threads that exist at `t` |
//! | `threadpool-queue-length` | Metric | items queued at `t` and not yet started |
//! | `threadpool-completed-items-count` | Rate | items that finished in `(t − 1 s, t]` |
//! | `cpu-usage` | Metric | % of the machine's cores busy over `(t − 1 s, t]` |
//!
//! The timestamp is the run's own clock in seconds from its start (a
//! simulated run has no wall clock). `cpu-usage` needs the threads' phases:
//! it is the time-average of `min(threads in a CPU or spin phase, cores)`
//! over the interval, so a spin counts a whole core; it is left out for a
//! run without phases (a measured one).

use std::fmt::Write as _;

use crate::time::SimTime;
use crate::trace::{Phase, ThreadId, Trace, TraceEvent};

/// The refresh interval of `dotnet-counters` (its default, 1 s).
pub const INTERVAL_NS: u64 = 1_000_000_000;

/// One sample of each counter.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// End of the interval.
    pub at: SimTime,
    pub thread_count: u32,
    pub queue_length: u64,
    pub completed_items: u64,
    /// Percent of the cores, when the run has phases.
    pub cpu_usage: Option<f64>,
}

fn busy(phase: Phase) -> bool {
    matches!(phase, Phase::Cpu | Phase::Spin)
}

/// The samples of `trace` (with `events`, its detail events, for CPU use),
/// one per interval up to the end of the run.
pub fn samples(trace: &Trace, events: Option<&[(SimTime, TraceEvent)]>) -> Vec<Sample> {
    // The last finish; an incomplete run is sampled up to where it stopped.
    let unfinished = trace.items.iter().any(|i| i.finished == SimTime::MAX);
    let end = if unfinished {
        trace.end
    } else {
        trace
            .items
            .iter()
            .map(|i| i.finished)
            .max()
            .unwrap_or(SimTime::ZERO)
    };
    let n = end.as_nanos().div_ceil(INTERVAL_NS).max(1);

    // Starts, finishes and queue times, sorted, for counting by bisection.
    let mut queued: Vec<u64> = trace.items.iter().map(|i| i.queued.as_nanos()).collect();
    let mut started: Vec<u64> = trace.items.iter().map(|i| i.started.as_nanos()).collect();
    let mut finished: Vec<u64> = trace.items.iter().map(|i| i.finished.as_nanos()).collect();
    queued.sort_unstable();
    started.sort_unstable();
    finished.sort_unstable();
    let at_or_before = |v: &[u64], t: u64| v.partition_point(|&x| x <= t) as u64;

    let cpu = events
        .filter(|e| {
            e.iter()
                .any(|(_, e)| matches!(e, TraceEvent::ThreadPhase { .. }))
        })
        .map(|e| cpu_per_interval(e, n, trace.cores));

    let mut out = Vec::with_capacity(n as usize);
    let mut count_ix = 0usize;
    let mut threads = 0u32;
    for k in 1..=n {
        let t = k * INTERVAL_NS;
        while count_ix < trace.counts.len() && trace.counts[count_ix].at.as_nanos() <= t {
            threads = trace.counts[count_ix].threads;
            count_ix += 1;
        }
        let queue_length = at_or_before(&queued, t).saturating_sub(at_or_before(&started, t));
        let completed_items = at_or_before(&finished, t) - at_or_before(&finished, t - INTERVAL_NS);
        out.push(Sample {
            at: SimTime(t),
            thread_count: threads,
            queue_length,
            completed_items,
            cpu_usage: cpu.as_ref().map(|c| c[(k - 1) as usize]),
        });
    }
    out
}

/// Percent of `cores` busy in each of `n` intervals, from thread phases.
fn cpu_per_interval(events: &[(SimTime, TraceEvent)], n: u64, cores: u32) -> Vec<f64> {
    let mut phase: Vec<Option<Phase>> = Vec::new();
    let mut running = 0u32;
    let mut last = 0u64;
    let mut busy_ns = vec![0f64; n as usize];
    let cores = cores.max(1);
    let account = |from: u64, to: u64, running: u32, busy_ns: &mut Vec<f64>| {
        let level = f64::from(running.min(cores));
        let mut a = from;
        while a < to {
            let k = a / INTERVAL_NS;
            if k >= n {
                break;
            }
            let b = to.min((k + 1) * INTERVAL_NS);
            busy_ns[k as usize] += level * (b - a) as f64;
            a = b;
        }
    };
    let set = |thread: ThreadId, new: Option<Phase>, phase: &mut Vec<Option<Phase>>| -> i32 {
        let t = thread as usize;
        if phase.len() <= t {
            phase.resize(t + 1, None);
        }
        let was = phase[t].is_some_and(busy);
        let now = new.is_some_and(busy);
        phase[t] = new;
        i32::from(now) - i32::from(was)
    };
    for (at, e) in events {
        let delta = match e {
            TraceEvent::ThreadPhase {
                thread, phase: p, ..
            } => set(*thread, Some(*p), &mut phase),
            TraceEvent::ThreadExited { thread } => set(*thread, None, &mut phase),
            _ => continue,
        };
        if delta != 0 {
            account(last, at.as_nanos(), running, &mut busy_ns);
            last = at.as_nanos();
            running = running.saturating_add_signed(delta);
        }
    }
    account(last, n * INTERVAL_NS, running, &mut busy_ns);
    busy_ns
        .into_iter()
        .map(|b| 100.0 * b / (f64::from(cores) * INTERVAL_NS as f64))
        .collect()
}

/// The samples as `dotnet-counters`' CSV.
pub fn counters_csv(trace: &Trace, events: Option<&[(SimTime, TraceEvent)]>) -> Vec<u8> {
    let mut s = String::from("Timestamp,Provider,Counter Name,Counter Type,Mean/Increment\n");
    for sample in samples(trace, events) {
        let ts = sample.at.as_nanos() / INTERVAL_NS;
        let row = |s: &mut String, name: &str, kind: &str, value: String| {
            let _ = writeln!(s, "{ts},System.Runtime,{name},{kind},{value}");
        };
        row(
            &mut s,
            "threadpool-thread-count",
            "Metric",
            sample.thread_count.to_string(),
        );
        row(
            &mut s,
            "threadpool-queue-length",
            "Metric",
            sample.queue_length.to_string(),
        );
        row(
            &mut s,
            "threadpool-completed-items-count",
            "Rate",
            sample.completed_items.to_string(),
        );
        if let Some(cpu) = sample.cpu_usage {
            row(&mut s, "cpu-usage", "Metric", format!("{cpu:.1}"));
        }
    }
    s.into_bytes()
}
