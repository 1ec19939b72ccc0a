//! A replayable scenario drafted from a trace's work items
//! (`poolsim import APP.nettrace --scenario OUT.toml`).
//!
//! What is read (see [`crate::nettrace::WorkItems`] for how items pair up):
//!
//! - arrivals: each item's enqueue (FrameworkEventSource 30), relative to
//!   the first; an item with no enqueue in the trace arrives at its dequeue;
//! - each item's pool time: its dequeue (31) to the next event showing its
//!   thread free (its next dequeue, its ThreadPoolWorkerThreadWait 57 or
//!   Stop 51), or the trace's last event for an item still running;
//! - cores: the trace header's processor count; `min_threads` and
//!   `max_threads`: the last ThreadPoolMinMaxThreads (59).
//!
//! What is guessed, and said in the file's header comment:
//!
//! - the bodies: one step of the pool time, since a trace of these events
//!   cannot tell blocking from CPU work (a CPU-bound body replays as a
//!   blocking one). Its kind is read from the adjustments: a pool that
//!   raised its goal for cooperative blocking (reason CooperativeBlocking)
//!   had threads blocked in `Task.Wait` / `.Result`, so the bodies are
//!   `wait_ms` (sync over async, which .NET 6+ compensates), one body for
//!   every item, the shortest pool time (what they waited for
//!   queued behind the backlog, so their pool times grew with the
//!   starvation); otherwise `sleep_ms` (blocking the pool cannot see);
//! - a Poisson stream: when the program's arrivals look like one (see
//!   [`poisson_rate`]: enough of them, gaps as irregular as a Poisson
//!   process's, a steady rate), they are drafted as one phase of
//!   `poisson_per_s` groups, so that `advise` and `run --runs` draw new
//!   arrivals each run: a service's traffic differs from run to run, and
//!   its bursts are what tips a pool into starvation (the arrivals spread
//!   evenly over a phase never burst);
//! - a program's periodic timer: when short items queued from outside the
//!   pool (the timer thread's) each queued the same number of items from
//!   the pool thread running them ([`super::ticks`]), those items are one
//!   group `from = "timer"` with that `per_tick` and the period read (an
//!   upper bound), and what the timer thread queued is left out (these
//!   callbacks, later firings with nothing to queue, other timers': the
//!   model runs its timers itself): a starved pool runs the callbacks
//!   late and so queued the items late, which a replay of the recorded
//!   queueing instants would keep under any setting;
//! - phases otherwise: items whose arrivals are closer than [`PHASE_GAP_MS`] form one
//!   phase (the gap doubles until there are at most [`MAX_PHASES`]); within
//!   a phase items whose pool times are within 5 % (plus 0.5 ms) of the
//!   shortest of them share one group and one body, their mean; a group
//!   arrives at once (`at_ms`) when its arrivals span at most 1 ms, else
//!   evenly (`every_ms`) over their span, save a steady stream's
//!   start-up lead ([`start_up_lead`]): its first arrivals off the grid
//!   are one `at_ms` group each, the first at its instant, the others on
//!   their grid instants and late by a draw of up to a period each run
//!   (`late_ms`);
//! - submission: `queue-user-work-item` from outside the pool (the events
//!   do not say which API queued an item; items queued by pool threads
//!   are counted in the header);
//! - an item never dequeued gets the median pool time;
//! - the policy: `net8` (the trace does not name the runtime's version).

use std::collections::HashSet;
use std::fmt::Write as _;

use super::fanout::{FanOutReading, read_fan_out};
use super::ticks::{TimerReading, read_timer};
use super::timeline::PoolTimeline;

/// Arrivals closer than this belong to one phase (ms).
pub const PHASE_GAP_MS: f64 = 5.0;
/// Most phases drafted; the gap doubles until there are no more.
pub const MAX_PHASES: usize = 32;
/// Pool times within this fraction of a group's shortest share its body.
const BUCKET_FRACTION: f64 = 0.05;
const BUCKET_SLACK_MS: f64 = 0.5;
/// A group whose arrivals span at most this arrives at once (ms).
const AT_ONCE_MS: f64 = 1.0;
/// Fewest arrivals read as a Poisson stream: below this the gaps' spread
/// says too little.
pub const POISSON_MIN_ARRIVALS: usize = 30;
/// The gaps' coefficient of variation (standard deviation / mean) of a
/// Poisson stream is 1; evenly spaced arrivals give 0 and bursts well above
/// 1. A stream's estimate is read as Poisson within these bounds.
pub const POISSON_CV: (f64, f64) = (0.75, 1.33);
/// A steady rate: the span cut into this many equal windows, each holding
/// its share of the arrivals within [`POISSON_WINDOW_SIGMAS`] standard
/// deviations (a Poisson count's is the square root of its mean).
pub const POISSON_WINDOWS: usize = 4;
pub const POISSON_WINDOW_SIGMAS: f64 = 3.0;

/// What [`poisson_rate`] read from a stream of arrivals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoissonReading {
    /// Arrivals a second: gaps over the span.
    pub per_second: f64,
    /// The gaps' coefficient of variation.
    pub cv: f64,
    pub arrivals: usize,
    pub span_ms: f64,
}

/// Whether arrivals (ms, sorted) look like a Poisson stream, the traffic
/// of a service whose clients arrive independently: at least
/// [`POISSON_MIN_ARRIVALS`], the gaps' coefficient of variation within
/// [`POISSON_CV`], and every one of [`POISSON_WINDOWS`] equal windows of
/// the span holding its share within [`POISSON_WINDOW_SIGMAS`] standard
/// deviations. Timer ticks, bursts queued at once and evenly paced loops
/// fail the spread; a stream whose rate changes fails the windows.
pub fn poisson_rate(arrivals: &[f64]) -> Option<PoissonReading> {
    let n = arrivals.len();
    if n < POISSON_MIN_ARRIVALS {
        return None;
    }
    let span = arrivals[n - 1] - arrivals[0];
    if span.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return None;
    }
    let gaps = n - 1;
    let mean = span / gaps as f64;
    let var = arrivals
        .windows(2)
        .map(|w| (w[1] - w[0] - mean).powi(2))
        .sum::<f64>()
        / (gaps - 1) as f64;
    let cv = var.sqrt() / mean;
    if !(POISSON_CV.0..=POISSON_CV.1).contains(&cv) {
        return None;
    }
    let expected = n as f64 / POISSON_WINDOWS as f64;
    let mut counts = [0usize; POISSON_WINDOWS];
    for a in arrivals {
        let k = (((a - arrivals[0]) / span) * POISSON_WINDOWS as f64) as usize;
        counts[k.min(POISSON_WINDOWS - 1)] += 1;
    }
    let steady = counts
        .iter()
        .all(|&c| (c as f64 - expected).abs() <= POISSON_WINDOW_SIGMAS * expected.sqrt());
    steady.then_some(PoissonReading {
        per_second: gaps as f64 * 1000.0 / span,
        cv,
        arrivals: n,
        span_ms: span,
    })
}

/// Why no scenario can be drafted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DraftError {
    #[error(
        "the trace has no work-item events, so a scenario cannot be drafted: arrivals and \
         pool times come from FrameworkEventSource's ThreadPoolEnqueueWork (30) and \
         ThreadPoolDequeueWork (31). Record with the provider added:\n  \
         DOTNET_EventPipeConfig='Microsoft-Windows-DotNETRuntime:0x10000:5,{}'",
        super::events::FRAMEWORK_ITEMS_CONFIG
    )]
    NoItemEvents,
    #[error(
        "the trace has {0} work items queued but none taken by a pool thread, so no pool \
         time can be measured and a scenario cannot be drafted"
    )]
    NoDequeues(u64),
}

/// The name of the group a drafted fan-out's calls are in.
pub const CALLS_GROUP: &str = "calls";

/// A drafted scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    /// The scenario file's text.
    pub toml: String,
    pub items: usize,
    pub phases: usize,
    pub groups: usize,
    /// First arrival to last item end in the trace (ms).
    pub span_ms: f64,
}

struct Item {
    arrival_ms: f64,
    pool_ms: Option<f64>,
    from_pool: bool,
}

struct Group {
    phase: usize,
    arrivals: Vec<f64>,
    body_ms: f64,
    /// One arrival of a steady stream's start-up lead ([`start_up_lead`]).
    lead: bool,
    /// `late_ms` of its arrival: a lead's send after the first, drawn
    /// anew each run (0: none).
    late_ms: f64,
}

/// Fewest arrivals of a group read for a start-up lead.
pub const LEAD_MIN_ARRIVALS: usize = 10;
/// Most arrivals a start-up lead holds.
pub const LEAD_MAX: usize = 16;
/// A gap off the stream's period by more than this fraction of it is off
/// the grid.
pub const LEAD_TOLERANCE: f64 = 0.10;
/// The stream after its lead is steady: at least this share of its gaps
/// on the grid.
pub const LEAD_STEADY_SHARE: f64 = 0.9;

/// How many of a steady stream's first arrivals (ms, sorted) came off its
/// grid: a program's sends are late while it starts (the JIT compiles the
/// code that sends them, on the thread that sends them), and a late send
/// followed by one on time puts two requests close together, which tips
/// a pool near its edge. Measured on `examples/apps/fanout.cs` on .NET 8
/// (every 20 ms): one send 9 to 19 ms late among the first four in every
/// run with tiered compilation, none without it. The lead runs to the
/// last of the first [`LEAD_MAX`] gaps off the median gap by more than
/// [`LEAD_TOLERANCE`]; 0 when the group is short, a burst, or not steady
/// after its lead ([`LEAD_STEADY_SHARE`]).
pub fn start_up_lead(arrivals: &[f64]) -> usize {
    if arrivals.len() < LEAD_MIN_ARRIVALS {
        return 0;
    }
    let gaps: Vec<f64> = arrivals.windows(2).map(|w| w[1] - w[0]).collect();
    let mut sorted = gaps.clone();
    sorted.sort_by(f64::total_cmp);
    let period = sorted[sorted.len() / 2];
    if period <= AT_ONCE_MS {
        return 0;
    }
    let off = |g: f64| (g - period).abs() > LEAD_TOLERANCE * period;
    let Some(last) = gaps.iter().take(LEAD_MAX).rposition(|&g| off(g)) else {
        return 0;
    };
    let rest = &gaps[last + 1..];
    let steady = rest.iter().filter(|&&g| !off(g)).count();
    if rest.len() + 1 < LEAD_MIN_ARRIVALS || (steady as f64) < LEAD_STEADY_SHARE * rest.len() as f64
    {
        return 0;
    }
    last + 1
}

pub(super) fn ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

pub(super) fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

/// A number for TOML, to the microsecond, never negative.
pub(super) fn num(x: f64) -> String {
    let x = if x.is_finite() { x.max(0.0) } else { 0.0 };
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// The goal raises for cooperative blocking in the trace.
fn cooperative_raises(t: &PoolTimeline) -> u64 {
    t.adjustments_by_reason
        .get("CooperativeBlocking")
        .copied()
        .unwrap_or(0)
}

/// Which of the trace's work items are the program's own: all of them,
/// unless the pool raised its goal for cooperative blocking. Then items
/// were blocked in Task.Wait, and what they waited for (a timer's
/// callback, an I/O completion) was queued to the pool by the runtime's
/// own threads (the timer thread, or a pool thread firing timers); the
/// models queue those completions themselves (`wait_ms`), so the program's
/// work is the items queued by the thread that queued the first item.
///
/// A program's periodic timer ([`super::ticks`]) changes both: its
/// callbacks are not the program's items (the model runs them as the
/// timer's), and the items they queue are, whoever queued them.
///
/// A fan-out ([`super::fanout`]) changes it too: its calls are drafted as
/// calls (a group of their own, queued by the step), not as the
/// program's arrivals.
fn program_mask(
    t: &PoolTimeline,
    timer: Option<&TimerReading>,
    fan: Option<&FanOutReading>,
) -> Vec<bool> {
    let records = &t.items.records;
    let cooperative = cooperative_raises(t) > 0;
    let submitter = super::items::submitter(records);
    let mut mask: Vec<bool> = records
        .iter()
        .map(|r| !cooperative || r.enqueue_thread == submitter)
        .collect();
    if let Some(timer) = timer {
        // What the timer thread queued is timer work: this timer's
        // callbacks, its firings after its last items (a callback with
        // nothing left to queue), other timers' (the completions of
        // Task.Delay, which the model queues itself).
        for (keep, r) in mask.iter_mut().zip(records) {
            if r.enqueue_thread == Some(timer.timer_thread) {
                *keep = false;
            }
        }
        for &c in &timer.children {
            mask[c] = true;
        }
    }
    if let Some(fan) = fan {
        for &c in &fan.children {
            mask[c] = false;
        }
    }
    mask
}

/// The pool's threads: those the thread counts name and those that ran items.
fn pool_threads(t: &PoolTimeline) -> HashSet<u64> {
    let mut workers: HashSet<u64> = t.thread_count.iter().map(|p| p.thread_id).collect();
    workers.extend(t.items.records.iter().filter_map(|r| r.thread));
    workers
}

/// The program's periodic timer, when the items show one.
fn program_timer(t: &PoolTimeline) -> Option<TimerReading> {
    read_timer(&t.items.records, &pool_threads(t))
}

/// The program's fan-outs, when the items show them.
fn program_fan_out(t: &PoolTimeline) -> Option<FanOutReading> {
    read_fan_out(&t.items.records, &pool_threads(t))
}

/// The work items a draft is drafted from (the rule of `program_mask`): the
/// ones the replay is compared with.
pub fn program_items(t: &PoolTimeline) -> Vec<&super::items::WorkItem> {
    let mask = program_mask(t, program_timer(t).as_ref(), program_fan_out(t).as_ref());
    t.items
        .records
        .iter()
        .zip(mask)
        .filter_map(|(r, keep)| keep.then_some(r))
        .collect()
}

/// Drafts a scenario from a timeline read with [`PoolTimeline::read`].
/// `source` names the trace in the header.
pub fn draft_scenario(t: &PoolTimeline, source: &str) -> Result<Draft, DraftError> {
    let w = &t.items;
    if w.is_empty() || w.records.is_empty() {
        return Err(DraftError::NoItemEvents);
    }
    if w.records.iter().all(|r| r.dequeued_ns.is_none()) {
        return Err(DraftError::NoDequeues(w.enqueued));
    }
    let workers = pool_threads(t);
    let timer = read_timer(&w.records, &workers);
    let fan = read_fan_out(&w.records, &workers);
    // The completions a wait waited for are not the program's work (see
    // `is_program_item`); the blocked items' pool times grew with the
    // starvation: their own length is what the unstarved items took, the
    // shortest pool time (waiting adds to a pool time, never takes from
    // it), one body for all.
    let cooperative = cooperative_raises(t);
    let mask = program_mask(t, timer.as_ref(), fan.as_ref());
    let fan_calls = fan.as_ref().map_or(0, |f| f.children.len());
    let timer_work = timer.as_ref().map_or(0, |t| {
        w.records
            .iter()
            .filter(|r| r.enqueue_thread == Some(t.timer_thread))
            .count()
    });
    let dropped_completions = mask.iter().filter(|keep| !**keep).count() - timer_work - fan_calls;
    let mut tick_child = vec![false; w.records.len()];
    for &c in timer.iter().flat_map(|t| &t.children) {
        tick_child[c] = true;
    }
    let mut items: Vec<Item> = Vec::new();
    let mut ticked: Vec<Item> = Vec::new();
    for (i, r) in w.records.iter().enumerate() {
        if !mask[i] {
            continue;
        }
        let Some(arrival) = r.enqueued_ns.or(r.dequeued_ns) else {
            continue;
        };
        let item = Item {
            arrival_ms: ms(arrival),
            pool_ms: r.pool_time_ns().map(ms),
            from_pool: r.enqueue_thread.is_some_and(|th| workers.contains(&th)),
        };
        if tick_child[i] {
            ticked.push(item);
        } else {
            items.push(item);
        }
    }
    items.sort_by(|a, b| a.arrival_ms.total_cmp(&b.arrival_ms));
    // The run starts at the first arrival, or the timer's first firing.
    let first_due = timer.as_ref().map(|t| ms(t.first_due_ns));
    let t0 = items
        .first()
        .map(|i| i.arrival_ms)
        .into_iter()
        .chain(first_due)
        .fold(f64::INFINITY, f64::min);
    let t0 = if t0.is_finite() { t0 } else { 0.0 };
    let all = || items.iter().chain(&ticked);
    let mut known: Vec<f64> = all().filter_map(|i| i.pool_ms).collect();
    known.sort_by(f64::total_cmp);
    let median = known.get(known.len() / 2).copied().unwrap_or(0.0);
    let never_dequeued = all().filter(|i| i.pool_ms.is_none()).count();
    let no_enqueue = w.records.iter().filter(|r| r.enqueued_ns.is_none()).count();
    let at_trace_end = w
        .records
        .iter()
        .filter(|r| r.end == Some(super::items::ItemEnd::TraceEnd))
        .count();
    let from_pool = all().filter(|i| i.from_pool).count();

    // A Poisson stream is one phase; otherwise phases split at arrival gaps.
    let arrivals: Vec<f64> = items.iter().map(|i| i.arrival_ms).collect();
    let poisson = poisson_rate(&arrivals);
    let mut gap = PHASE_GAP_MS;
    let phases: Vec<Vec<usize>> = if poisson.is_some() {
        vec![(0..items.len()).collect()]
    } else {
        loop {
            let mut phases: Vec<Vec<usize>> = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match phases.last_mut() {
                    Some(p) if item.arrival_ms - items[p[p.len() - 1]].arrival_ms <= gap => {
                        p.push(i)
                    }
                    _ => phases.push(vec![i]),
                }
            }
            if phases.len() <= MAX_PHASES || !gap.is_finite() {
                break phases;
            }
            gap *= 2.0;
        }
    };

    let floor_ms = (cooperative > 0 && !known.is_empty()).then(|| known[0]);
    // A fan-out's calls: their body is the shortest of their pool times
    // when the pool raised its goal for blocked waits (as the items'
    // above), else their mean.
    let calls = fan.as_ref().map(|fan| {
        let mut times: Vec<f64> = fan
            .children
            .iter()
            .filter_map(|&c| w.records[c].pool_time_ns().map(ms))
            .collect();
        times.sort_by(f64::total_cmp);
        let mean = times.iter().sum::<f64>() / times.len().max(1) as f64;
        let body = if cooperative > 0 {
            times.first().copied().unwrap_or(mean)
        } else {
            mean
        };
        let lo = times.first().copied().unwrap_or(0.0);
        let hi = times.last().copied().unwrap_or(0.0);
        (fan, body, lo, hi)
    });
    // A fan-out's own time is its steps, not its pool time: one body for
    // all, as with the floor.
    let one_body = floor_ms.or(calls.as_ref().map(|_| 0.0));

    // Groups: pool-time buckets within each phase.
    let mut groups: Vec<Group> = Vec::new();
    for (k, phase) in phases.iter().enumerate() {
        if let Some(body) = one_body {
            let mut arrivals: Vec<f64> = phase.iter().map(|&i| items[i].arrival_ms - t0).collect();
            arrivals.sort_by(f64::total_cmp);
            groups.push(Group {
                phase: k + 1,
                arrivals,
                body_ms: body,
                lead: false,
                late_ms: 0.0,
            });
            continue;
        }
        let mut by_time: Vec<(f64, f64)> = phase
            .iter()
            .map(|&i| (items[i].pool_ms.unwrap_or(median), items[i].arrival_ms - t0))
            .collect();
        by_time.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut start = 0;
        while start < by_time.len() {
            let limit = by_time[start].0 * (1.0 + BUCKET_FRACTION) + BUCKET_SLACK_MS;
            let mut end = start;
            while end < by_time.len() && by_time[end].0 <= limit {
                end += 1;
            }
            let bucket = &by_time[start..end];
            let mean = bucket.iter().map(|b| b.0).sum::<f64>() / bucket.len() as f64;
            let mut arrivals: Vec<f64> = bucket.iter().map(|b| b.1).collect();
            arrivals.sort_by(f64::total_cmp);
            groups.push(Group {
                phase: k + 1,
                arrivals,
                body_ms: mean,
                lead: false,
                late_ms: 0.0,
            });
            start = end;
        }
    }
    // A steady stream's start-up lead: its first arrivals at their
    // instants, the rest evenly spaced from the first on the grid.
    let mut leads: Vec<(usize, Vec<f64>, f64)> = Vec::new();
    if poisson.is_none() {
        let mut split = Vec::with_capacity(groups.len());
        for g in groups {
            let lead = start_up_lead(&g.arrivals);
            if lead == 0 {
                split.push(g);
                continue;
            }
            let gaps = g.arrivals[..=lead]
                .windows(2)
                .map(|w| w[1] - w[0])
                .collect();
            let rest = &g.arrivals[lead..];
            let period = (rest[rest.len() - 1] - rest[0]) / (rest.len() - 1) as f64;
            leads.push((g.phase, gaps, period));
            // The first send keeps its instant (the phase starts there);
            // each later one is drawn anew each run, on its grid instant
            // and late by up to a period: one recording shows one
            // start-up, and a re-run's late sends differ in place and
            // size (measured on `examples/apps/fanout.cs`: 9 to 19 ms of
            // 20, among the first four).
            for (k, &a) in g.arrivals[..lead].iter().enumerate() {
                let (at, late_ms) = if k == 0 {
                    (a, 0.0)
                } else {
                    let grid = rest[0] - (lead - k) as f64 * period;
                    (grid.max(g.arrivals[0]), period)
                };
                split.push(Group {
                    phase: g.phase,
                    arrivals: vec![at],
                    body_ms: g.body_ms,
                    lead: true,
                    late_ms,
                });
            }
            split.push(Group {
                arrivals: g.arrivals[lead..].to_vec(),
                ..g
            });
        }
        groups = split;
    }
    groups.sort_by(|a, b| a.arrivals[0].total_cmp(&b.arrivals[0]));

    // The timer's items: one group, one body (the floor of blocked waits,
    // else their mean pool time).
    let timer_group = timer.as_ref().map(|timer| {
        let times: Vec<f64> = ticked.iter().filter_map(|i| i.pool_ms).collect();
        let mean = if times.is_empty() {
            median
        } else {
            times.iter().sum::<f64>() / times.len() as f64
        };
        let lo = times.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = times.iter().copied().fold(0.0, f64::max);
        let start = (ms(timer.first_due_ns) - t0).max(0.0);
        (timer, floor_ms.unwrap_or(mean), start, lo.min(hi), hi)
    });

    let info = t.trace.as_ref();
    let processors = info.map_or(0, |i| i.processors);
    let cores = processors.clamp(1, 4096);
    let span_ms = w.span_ns().map_or(0.0, ms);
    let last_end = w.last_end_ns.map_or(0.0, ms);

    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Drafted by `poolsim import {source} --scenario` from the trace's work items."
    );
    let _ = writeln!(s, "#");
    let _ = writeln!(s, "# Read from the trace:");
    let _ = writeln!(
        s,
        "# - {} items: arrivals from their enqueues (FrameworkEventSource 30), {} ms to {} ms \
         after the trace started; the last ended at {} ms (span {} ms).",
        items.len() + ticked.len(),
        num(t0),
        num(all().map(|i| i.arrival_ms).fold(t0, f64::max)),
        num(last_end),
        num(span_ms)
    );
    let _ = writeln!(
        s,
        "# - pool time of each item: its dequeue (31) to its thread's next dequeue, wait (57) \
         or stop (51); mean {} ms, min {} ms, max {} ms.",
        num(w.pool_time.mean_ms().unwrap_or(0.0)),
        num(w.pool_time.min_ns.map_or(0.0, ms)),
        num(w.pool_time.max_ns.map_or(0.0, ms))
    );
    if processors > 0 {
        let _ = writeln!(
            s,
            "# - cores = {cores}: the trace header's processor count."
        );
    } else {
        let _ = writeln!(
            s,
            "# - cores = 1: GUESSED, the trace header gives no processor count."
        );
    }
    if let Some(m) = &t.min_max {
        let _ = writeln!(
            s,
            "# - min_threads = {}, max_threads = {}: ThreadPoolMinMaxThreads (59).",
            m.min_workers,
            m.max_workers.clamp(1, 32767)
        );
    }
    let _ = writeln!(
        s,
        "# - the real pool: peak {} worker threads, {} goal adjustments ({} starvation).",
        t.peak_threads,
        t.adjustments.len(),
        t.starvation_injections.len()
    );
    let _ = writeln!(s, "#");
    let _ = writeln!(s, "# Guessed:");
    let cooperative = t
        .adjustments_by_reason
        .get("CooperativeBlocking")
        .copied()
        .unwrap_or(0);
    let step = if cooperative > 0 {
        "wait_ms"
    } else {
        "sleep_ms"
    };
    // A fan-out's steps: what it ran before its first call and after its
    // last call's end (when a millisecond or more), around the fan-out.
    let fan_body = calls.as_ref().map(|(fan, ..)| {
        let mut steps: Vec<String> = Vec::new();
        if fan.before_ms >= 1.0 {
            steps.push(format!("{{ {step} = {} }}", num(fan.before_ms)));
        }
        steps.push(format!("{{ fan_out = {} }}", quote(CALLS_GROUP)));
        if fan.after_ms >= 1.0 {
            steps.push(format!("{{ {step} = {} }}", num(fan.after_ms)));
        }
        steps.join(", ")
    });
    if let Some((fan, body, lo, hi)) = &calls {
        let _ = writeln!(
            s,
            "# - every item fans out: {} of them queued calls from the pool thread that ran \
             them and were still running halfway through each of their calls (Task.Run each call, then \
             Task.WhenAll(calls).Wait()), {} calls each ({} with another count, drafted with \
             {} too), so each body is `{{ fan_out = {} }}`{}; the shortest time an item ran \
             before its first call is {} ms and after its last call's end {} ms (each a step \
             when 1 ms or more).",
            fan.parents.len(),
            fan.per_call,
            fan.other_counts,
            fan.per_call,
            quote(CALLS_GROUP),
            if cooperative > 0 {
                format!(", the wait cooperative blocking ({cooperative} goal raises)")
            } else {
                String::new()
            },
            num(fan.before_ms),
            num(fan.after_ms),
        );
        let _ = writeln!(
            s,
            "# - the calls (group {}): {} of them, `{step} = {}`, {} of their pool times ({} to \
             {} ms){}. A trace cannot tell blocking from CPU work (make it `cpu_ms` where a \
             call computes).",
            quote(CALLS_GROUP),
            fan.children.len(),
            num(*body),
            if cooperative > 0 {
                "the shortest"
            } else {
                "the mean"
            },
            num(*lo),
            num(*hi),
            if cooperative > 0 {
                ": they blocked in Task.Wait too, and what they waited for queued behind the \
                 backlog"
            } else {
                ""
            }
        );
        if dropped_completions > 0 {
            let _ = writeln!(
                s,
                "# - left out: {dropped_completions} items queued by other threads than the one \
                 that queued the first item and not by a fan-out (a timer's callbacks, I/O \
                 completions): the completions the waits waited for, which the model queues \
                 itself."
            );
        }
    } else if let Some(body) = floor_ms {
        let _ = writeln!(
            s,
            "# - every body is `wait_ms = {}` (Task.Wait on a call, sync over async): the pool \
             raised its goal {cooperative} times for cooperative blocking, which only threads \
             blocked in Task.Wait / .Result cause. What they waited for queued behind the \
             backlog, so the body is the shortest pool time (what an item took \
             while the pool kept up), one for all. A trace cannot tell blocking from CPU work \
             (make a body `cpu_ms` where the item computes).",
            num(body)
        );
        let _ = writeln!(
            s,
            "# - left out: {dropped_completions} items queued by other threads than the one that \
             queued the first item (a timer's callbacks, I/O completions, continuations): the \
             completions the waits waited for, which the model queues itself for each `wait_ms` \
             (nested work a body queued is left out with them)."
        );
    } else {
        let _ = writeln!(
            s,
            "# - every body is `sleep_ms` of the pool time: a trace cannot tell blocking from \
             CPU work (make a body `cpu_ms` where the item computes), and no CooperativeBlocking \
             adjustment says the threads waited on tasks."
        );
    }
    if let Some((timer, body, start, lo, hi)) = &timer_group {
        let _ = writeln!(
            s,
            "# - a periodic timer (group \"timer\"): {} callbacks, each queued by one thread \
             outside the pool (the timer thread), each queued {} items from the pool thread \
             that ran it ({} in all), so `from = \"timer\"`, `per_tick = {}`, first due at {} \
             ms. Its period, {} ms, is an upper bound: callback k ran at or after the first \
             firing + k periods, never earlier, the tightest at callback {} ({} ms a period); \
             behind a starved pool callbacks run late, so the period may be shorter. Its \
             items' body is {} ms ({} of their pool times, {} to {} ms). Left out: the {} \
             items the timer thread queued (these callbacks, later firings with nothing to \
             queue, other timers'): the model runs its timers itself.",
            timer.callbacks.len(),
            timer.per_tick,
            ticked.len(),
            timer.per_tick,
            num(*start),
            timer.period_ms,
            timer.bound_firing + 1,
            num(timer.bound_ms),
            num(*body),
            if floor_ms.is_some() {
                "the shortest"
            } else {
                "the mean"
            },
            num(*lo),
            num(*hi),
            timer_work
        );
    }
    if let Some(stream) = &poisson {
        let _ = writeln!(
            s,
            "# - arrivals: a Poisson stream of {} a second ({} arrivals over {} ms; their gaps' \
             coefficient of variation {:.2}, a Poisson process's is 1, and a steady rate over \
             the span), drafted as `poisson_per_s` from the first arrival: each run draws new \
             arrivals, as a service's traffic differs from run to run (`advise --fixed-arrivals` \
             holds them). Within it, pool times within 5 % (+0.5 ms) share one group, \
             its share of the rate.",
            num(stream.per_second),
            stream.arrivals,
            num(stream.span_ms),
            stream.cv
        );
    } else {
        let _ = writeln!(
            s,
            "# - phases: {}; arrivals less than {} ms apart form one; within a phase, pool times \
             within 5 % (+0.5 ms) share one group and their mean; a group's arrivals are at once \
             (at_ms) when they span at most 1 ms, else evenly spaced (every_ms).",
            phases.len(),
            num(gap)
        );
        for (phase, gaps, period) in &leads {
            let list: Vec<String> = gaps.iter().map(|g| num(*g)).collect();
            let _ = writeln!(
                s,
                "# - phase {phase} starts off its grid: its first arrivals came {} ms apart where \
                 the steady stream after them keeps {} ms, so the first {} are groups of their \
                 own (\"phase {phase} start N\"): the first at its instant, each later one on \
                 its grid instant and late by a draw of up to a period each run (`late_ms`): a \
                 program is slow to send while it starts (the JIT compiles the sending code on \
                 the sending thread), by an amount one recording shows once, and two sends close \
                 together can tip a pool near its edge.",
                list.join(", "),
                num(*period),
                gaps.len()
            );
        }
    }
    let _ = writeln!(
        s,
        "# - submit = \"queue-user-work-item\" from outside the pool: the events do not name \
         the API ({from_pool} of the items were queued by pool threads)."
    );
    let _ = writeln!(
        s,
        "# - policy = \"net8\": the trace does not name the runtime's version."
    );
    if at_trace_end > 0 {
        let _ = writeln!(
            s,
            "# - items still running when the trace ended: {at_trace_end}; their pool time \
             runs to the trace's last event (an upper bound)."
        );
    }
    if no_enqueue > 0 {
        let _ = writeln!(
            s,
            "# - items taken with no enqueue in the trace: {no_enqueue}; they arrive at \
             their dequeue."
        );
    }
    if never_dequeued > 0 {
        let _ = writeln!(
            s,
            "# - items never taken: {never_dequeued}; their body is the median pool time, \
             {} ms.",
            num(median)
        );
    }
    if w.records_dropped > 0 {
        let _ = writeln!(
            s,
            "# - items past the first {1} left out: {0}.",
            w.records_dropped,
            w.records.len()
        );
    }
    let _ = writeln!(s, "#");
    let _ = writeln!(
        s,
        "# Replay: poolsim run THIS.toml   (compare: poolsim import {source})"
    );
    let _ = writeln!(s);
    let _ = writeln!(s, "name = {}", quote(&format!("drafted from {source}")));
    let _ = writeln!(s, "seed = 1");
    let _ = writeln!(s);
    let _ = writeln!(s, "[machine]");
    let _ = writeln!(s, "cores = {cores}");
    let _ = writeln!(s);
    let _ = writeln!(s, "[pool]");
    let _ = writeln!(s, "policy = \"net8\"");
    if let Some(m) = &t.min_max {
        let max = m.max_workers.clamp(1, 32767);
        let min = m.min_workers.clamp(1, max);
        let _ = writeln!(s, "min_threads = {min}");
        let _ = writeln!(s, "max_threads = {max}");
    }
    if let Some((timer, body, start, _, _)) = &timer_group {
        let _ = writeln!(s);
        let _ = writeln!(s, "[[group]]");
        let _ = writeln!(s, "name = \"timer\"");
        let _ = writeln!(s, "count = {}", ticked.len());
        let _ = writeln!(s, "submit = \"queue-user-work-item\"");
        let _ = writeln!(s, "from = \"timer\"");
        let _ = writeln!(s, "per_tick = {}", timer.per_tick);
        let _ = writeln!(
            s,
            "arrival = {{ every_ms = {}, start_ms = {} }}",
            timer.period_ms,
            num(*start)
        );
        let _ = writeln!(s, "body = [ {{ {step} = {} }} ]", num(body.max(0.001)));
    }
    let per_phase = |p: usize| groups.iter().filter(|g| g.phase == p && !g.lead).count();
    let mut seen: std::collections::HashMap<(usize, bool), usize> =
        std::collections::HashMap::new();
    for g in &groups {
        let n = seen.entry((g.phase, g.lead)).or_insert(0);
        *n += 1;
        let name = if g.lead {
            format!("phase {} start {}", g.phase, n)
        } else if per_phase(g.phase) > 1 {
            format!("phase {} part {}", g.phase, n)
        } else {
            format!("phase {}", g.phase)
        };
        let first = g.arrivals[0];
        let last = g.arrivals[g.arrivals.len() - 1];
        let arrival = if let Some(stream) = &poisson {
            // The group's share of the stream (a Poisson stream thinned is
            // one), over the stream's span, from the first arrival.
            let gaps = if groups.len() == 1 {
                g.arrivals.len() - 1
            } else {
                g.arrivals.len()
            };
            let rate = (gaps.max(1) as f64 * 1000.0 / stream.span_ms).max(0.001);
            format!("{{ poisson_per_s = {}, start_ms = 0 }}", num(rate))
        } else if g.late_ms > 0.0 {
            format!("{{ at_ms = {}, late_ms = {} }}", num(first), num(g.late_ms))
        } else if g.arrivals.len() == 1 || last - first <= AT_ONCE_MS {
            format!("{{ at_ms = {} }}", num(first))
        } else {
            let every = ((last - first) / (g.arrivals.len() - 1) as f64).max(0.001);
            format!("{{ every_ms = {}, start_ms = {} }}", num(every), num(first))
        };
        let _ = writeln!(s);
        let _ = writeln!(s, "[[group]]");
        let _ = writeln!(s, "name = {}", quote(&name));
        let _ = writeln!(s, "count = {}", g.arrivals.len());
        let _ = writeln!(s, "submit = \"queue-user-work-item\"");
        let _ = writeln!(s, "arrival = {arrival}");
        match &fan_body {
            Some(body) => {
                let _ = writeln!(s, "body = [ {body} ]");
            }
            None => {
                let _ = writeln!(s, "body = [ {{ {step} = {} }} ]", num(g.body_ms.max(0.001)));
            }
        }
    }
    if let Some((fan, body, ..)) = &calls {
        let parents: usize = groups.iter().map(|g| g.arrivals.len()).sum();
        let _ = writeln!(s);
        let _ = writeln!(s, "[[group]]");
        let _ = writeln!(s, "name = {}", quote(CALLS_GROUP));
        let _ = writeln!(s, "count = {}", parents * fan.per_call as usize);
        let _ = writeln!(s, "submit = \"task-run\"");
        let _ = writeln!(s, "from = \"fan-out\"");
        let _ = writeln!(s, "body = [ {{ {step} = {} }} ]", num(body.max(0.001)));
    }
    Ok(Draft {
        toml: s,
        items: items.len() + ticked.len(),
        phases: phases.len(),
        groups: groups.len() + usize::from(timer_group.is_some()) + usize::from(calls.is_some()),
        span_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// `n` arrivals of a Poisson process of `per_s` a second (ms).
    fn poisson(n: usize, per_s: f64, seed: u64) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut t = 0.0;
        (0..n)
            .map(|_| {
                let u: f64 = rng.random();
                t += -(1.0 - u).ln() * 1000.0 / per_s;
                t
            })
            .collect()
    }

    #[test]
    fn a_poisson_stream_is_read_with_its_rate() {
        let mut read = 0;
        for seed in 0..50 {
            if let Some(r) = poisson_rate(&poisson(600, 100.0, seed)) {
                read += 1;
                assert!((90.0..=110.0).contains(&r.per_second), "{r:?}");
                assert!((0.75..=1.33).contains(&r.cv));
            }
        }
        // The window test rejects a true Poisson stream rarely (3 sigma in
        // any of four windows); the spread test almost never.
        assert!(read >= 47, "{read} of 50 read as Poisson");
    }

    #[test]
    fn even_bursty_changing_or_short_streams_are_not_poisson() {
        let even: Vec<f64> = (0..600).map(|i| i as f64 * 10.0).collect();
        assert_eq!(poisson_rate(&even), None);
        // A timer queuing 6 items every 500 ms.
        let ticks: Vec<f64> = (0..48).map(|i| (i / 6) as f64 * 500.0).collect();
        assert_eq!(poisson_rate(&ticks), None);
        // 50 a second, then 200 a second.
        let mut changing = poisson(200, 50.0, 1);
        let end = changing[changing.len() - 1];
        changing.extend(poisson(800, 200.0, 2).into_iter().map(|t| t + end));
        assert_eq!(poisson_rate(&changing), None);
        assert_eq!(
            poisson_rate(&poisson(POISSON_MIN_ARRIVALS - 1, 100.0, 3)),
            None
        );
        assert_eq!(poisson_rate(&[5.0; 100]), None);
    }

    #[test]
    fn a_steady_stream_keeps_its_late_start_and_nothing_else_does() {
        // The recording of examples/apps/fanout.cs: sends every 20 ms, the
        // fourth 12.5 ms late and the fifth on time.
        let mut fanout = vec![0.0, 15.285, 34.986, 67.47, 75.023];
        fanout.extend((1..196).map(|i| 75.023 + 20.0 * i as f64));
        assert_eq!(start_up_lead(&fanout), 4);
        // On the grid from the start, or off it only by a little.
        let even: Vec<f64> = (0..200).map(|i| i as f64 * 20.0).collect();
        assert_eq!(start_up_lead(&even), 0);
        let mut near = even.clone();
        near[3] += 1.5;
        assert_eq!(start_up_lead(&near), 0);
        // A late send past the first 16 gaps is not the start-up.
        let mut mid = even.clone();
        mid[40] += 12.0;
        assert_eq!(start_up_lead(&mid), 0);
        // Irregular throughout: no steady stream to lead into.
        let jagged: Vec<f64> = (0..200)
            .map(|i| i as f64 * 20.0 + if i % 3 == 0 { 7.0 } else { 0.0 })
            .collect();
        assert_eq!(start_up_lead(&jagged), 0);
        // Too short to tell, and bursts queued at once.
        assert_eq!(start_up_lead(&fanout[..9]), 0);
        assert_eq!(start_up_lead(&[5.0; 50]), 0);
        // Poisson traffic is drafted as such before this rule is asked.
        assert_eq!(start_up_lead(&poisson(600, 100.0, 1)), 0);
    }
}
