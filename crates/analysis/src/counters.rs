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
use crate::trace::{ItemRecord, Phase, Trace, TraceEvent};

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
    let mut builder = CountersBuilder::new(trace.cores);
    for item in &trace.items {
        builder.item(item);
    }
    for (at, event) in events.unwrap_or(&[]) {
        builder.event(*at, event);
    }
    builder.finish(trace)
}

/// The counters made as the run goes: each item's record once (in any
/// order) and the events in time order, then [`CountersBuilder::finish`]
/// with the trace for the thread counts and the end. Memory is a few
/// numbers per interval of the run, not per item; [`samples`] is this over
/// a whole trace.
#[derive(Clone, Debug)]
pub struct CountersBuilder {
    cores: u32,
    /// Per interval `k`: the items queued, started and finished in
    /// `((k − 1) s, k s]` (interval 0: at time zero).
    queued: Vec<u64>,
    started: Vec<u64>,
    finished: Vec<u64>,
    unfinished: bool,
    last_finish: SimTime,
    /// Threads in a CPU or spin phase, and core-ns busy per interval.
    phase: Vec<Option<Phase>>,
    running: u32,
    last: u64,
    busy_ns: Vec<f64>,
    saw_phase: bool,
}

/// The interval a time falls in: `k` for `((k − 1) s, k s]`.
fn interval_of(t: u64) -> usize {
    t.div_ceil(INTERVAL_NS) as usize
}

fn count_in(v: &mut Vec<u64>, t: SimTime) {
    if t == SimTime::MAX {
        return;
    }
    let k = interval_of(t.as_nanos());
    if v.len() <= k {
        v.resize(k + 1, 0);
    }
    v[k] += 1;
}

impl CountersBuilder {
    pub fn new(cores: u32) -> Self {
        CountersBuilder {
            cores: cores.max(1),
            queued: Vec::new(),
            started: Vec::new(),
            finished: Vec::new(),
            unfinished: false,
            last_finish: SimTime::ZERO,
            phase: Vec::new(),
            running: 0,
            last: 0,
            busy_ns: Vec::new(),
            saw_phase: false,
        }
    }

    /// One item's record.
    pub fn item(&mut self, i: &ItemRecord) {
        count_in(&mut self.queued, i.queued);
        count_in(&mut self.started, i.started);
        count_in(&mut self.finished, i.finished);
        if i.finished == SimTime::MAX {
            self.unfinished = true;
        } else {
            self.last_finish = self.last_finish.max(i.finished);
        }
    }

    /// One event (only thread phases and exits count, for `cpu-usage`).
    pub fn event(&mut self, at: SimTime, e: &TraceEvent) {
        let (thread, new) = match *e {
            TraceEvent::ThreadPhase { thread, phase, .. } => {
                self.saw_phase = true;
                (thread, Some(phase))
            }
            TraceEvent::ThreadExited { thread } => (thread, None),
            _ => return,
        };
        let t = thread as usize;
        if self.phase.len() <= t {
            self.phase.resize(t + 1, None);
        }
        let was = self.phase[t].is_some_and(busy);
        let now = new.is_some_and(busy);
        self.phase[t] = new;
        let delta = i32::from(now) - i32::from(was);
        if delta != 0 {
            self.account(self.last, at.as_nanos(), None);
            self.last = at.as_nanos();
            self.running = self.running.saturating_add_signed(delta);
        }
    }

    /// Adds the busy cores over `[from, to)` to the intervals (below
    /// `limit` of them, if given).
    fn account(&mut self, from: u64, to: u64, limit: Option<u64>) {
        let level = f64::from(self.running.min(self.cores));
        let mut a = from;
        while a < to {
            let k = a / INTERVAL_NS;
            if limit.is_some_and(|n| k >= n) {
                break;
            }
            if self.busy_ns.len() <= k as usize {
                self.busy_ns.resize(k as usize + 1, 0.0);
            }
            let b = to.min((k + 1) * INTERVAL_NS);
            self.busy_ns[k as usize] += level * (b - a) as f64;
            a = b;
        }
    }

    /// The samples, one per interval up to the end of the run (the last
    /// finish; where an incomplete run stopped); `trace` gives the thread
    /// counts and the end.
    pub fn finish(mut self, trace: &Trace) -> Vec<Sample> {
        let end = if self.unfinished {
            trace.end
        } else {
            self.last_finish
        };
        let n = end.as_nanos().div_ceil(INTERVAL_NS).max(1);
        let cpu = self.saw_phase.then(|| {
            self.account(self.last, n * INTERVAL_NS, Some(n));
            let mut busy = std::mem::take(&mut self.busy_ns);
            busy.resize(n as usize, 0.0);
            busy.into_iter()
                .map(|b| 100.0 * b / (f64::from(self.cores) * INTERVAL_NS as f64))
                .collect::<Vec<f64>>()
        });
        let at = |v: &[u64], k: usize| v.get(k).copied().unwrap_or(0);
        let mut out = Vec::with_capacity(n as usize);
        let mut count_ix = 0usize;
        let mut threads = 0u32;
        let (mut queued, mut started) = (0u64, 0u64);
        for k in 0..=n as usize {
            queued += at(&self.queued, k);
            started += at(&self.started, k);
            if k == 0 {
                continue;
            }
            let t = k as u64 * INTERVAL_NS;
            while count_ix < trace.counts.len() && trace.counts[count_ix].at.as_nanos() <= t {
                threads = trace.counts[count_ix].threads;
                count_ix += 1;
            }
            out.push(Sample {
                at: SimTime(t),
                thread_count: threads,
                queue_length: queued.saturating_sub(started),
                completed_items: at(&self.finished, k),
                cpu_usage: cpu.as_ref().map(|c| c[k - 1]),
            });
        }
        out
    }
}

/// The samples as `dotnet-counters`' CSV.
pub fn counters_csv(trace: &Trace, events: Option<&[(SimTime, TraceEvent)]>) -> Vec<u8> {
    counters_csv_of(&samples(trace, events))
}

/// `samples` as `dotnet-counters`' CSV.
pub fn counters_csv_of(samples: &[Sample]) -> Vec<u8> {
    let mut s = String::from("Timestamp,Provider,Counter Name,Counter Type,Mean/Increment\n");
    for sample in samples {
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
