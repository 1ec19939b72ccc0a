//! A replayable scenario inferred from a trace with no work-item events
//! (recorded with `Microsoft-Windows-DotNETRuntime:0x10000:5` alone), from
//! what the pool itself logged ([`PoolTimeline`]):
//!
//! - ThreadPoolWorkerThreadStart (50) and ThreadPoolWorkerThreadStop (51)
//!   ([`PoolTimeline::thread_count`], each start with the reason it is owed
//!   to), ThreadPoolWorkerThreadWait (57) and a worker's first event after
//!   a wait ([`PoolTimeline::activity`], which keeps a worker's repeated
//!   waits too);
//! - ThreadPoolWorkerThreadAdjustmentAdjustment (55): every goal change and
//!   its reason ([`PoolTimeline::adjustments`]);
//! - ThreadPoolMinMaxThreads (59) and the trace header's processor count.
//!
//! [`draft_any`] drafts from the work items when the trace has them
//! ([`draft_scenario`]), else from these ([`draft_from_activity`]).
//!
//! # What is inferred
//!
//! - Busy stretches: a worker is busy from its start (50), or from when it
//!   woke after a wait, to its next wait (57), its stop (51) or the trace's
//!   end. A .NET 6+ worker writes a wait each time it blocks and nothing
//!   when it wakes: the first event after a wait is a hill-climbing sample
//!   or adjustment (54/55/56) it logs as an item completes, or its next
//!   wait; such a stretch's start is estimated as one typical item before
//!   that event (never before the wait). A stretch from a start shorter
//!   than [`MIN_ITEM_MS`] is a worker that found the queue empty: no item.
//!   With cooperative blocking, a stretch after a wait showing less than
//!   the shortest stretch from a start is a wait's completion (a timer's
//!   callback), which the model queues itself: left out.
//! - Items: a stretch holds at least one item and maybe several run back
//!   to back. Up to three readings are drafted: "uniform", when every
//!   stretch from a thread start to a wait or stop is within [`SPLIT_FIT`]
//!   of a whole number of one length (the shortest stretch divided by 1 to
//!   [`MAX_SPLIT`]), that many items of that length; "waits", with
//!   cooperative blocking, waits of the shortest stretch (the least
//!   inflated by completions queued behind the backlog), each stretch
//!   holding between one and as many as fit it, the share fitted by replay
//!   to the trace's span; "per-stretch", one item per stretch of its
//!   length. Each is replayed under [`REPLAY_POLICY`] and compared with the
//!   trace (peak threads within [`PEAK_THREADS_WITHIN`], span within
//!   [`SPAN_WITHIN`], as `advise` checks): the first that matches, in that
//!   order, is drafted, else the closest. The header gives every
//!   reading's figures and the groups of those not kept.
//! - The blocking kind, from the adjustments' reasons: CooperativeBlocking
//!   ⇒ `wait_ms` (threads blocked in `Task.Wait` / `.Result`, sync over
//!   async); else `sleep_ms`. Starvation raises closer together than the
//!   goal × 1000 ms the .NET 6+ gate waits while the CPU is busy prove the
//!   CPU was below 80 % (blocking the pool cannot see); with no raise, or
//!   only far-apart ones, CPU work is possible but the trace has no CPU
//!   figure: `sleep_ms` is kept and the header says it is a guess.
//! - Arrivals: busy periods (some worker busy) split at idle gaps. A period
//!   holds a burst when at least two stretches begin within
//!   [`FIRST_WAVE_MS`] of its start, a Starvation or CooperativeBlocking
//!   raise falls in it, or no stretch in it began while another worker was
//!   waiting: that work was queued before it ran, so it arrives at the
//!   period's start. A stretch that began while another worker was waiting
//!   (and not for a raise) is fresh work arriving then (a stream); fresh
//!   arrivals are spread evenly over their span (`every_ms`). Each burst
//!   opens a phase; a later phase's burst follows the previous phase
//!   (`after = "GROUP", delay_ms` = the idle time between them).
//!
//! # Not seen
//!
//! Work a worker ran between two waits is seen only through the repeated
//! wait. The header counts the Starvation and
//! CooperativeBlocking raises that fall where no worker was seen busy, and
//! the workers busy before the trace began: work the draft misses.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::draft::{Draft, DraftError, draft_scenario, ms, num, quote};
use super::events::AdjustmentReason;
use super::timeline::{GoalChange, PoolTimeline};
use crate::engine::{self, SimOptions};
use crate::metrics::summarize;
use crate::policy_file::resolve_policy;
use crate::replay_check::{PEAK_THREADS_WITHIN, SPAN_WITHIN};
use crate::scenario::load::parse_scenario;
use crate::time::SimTime;
use crate::trace::NullSink;

/// A stretch shorter than this holds no item: a worker that found the
/// queue empty and waited again (ms).
pub const MIN_ITEM_MS: f64 = 1.0;
/// Stretches beginning within this of a busy period's start are its first
/// wave (ms).
pub const FIRST_WAVE_MS: f64 = 20.0;
/// A stretch fits a length `q` when it is within this share of `q` of a
/// whole number of `q`.
pub const SPLIT_FIT: f64 = 0.02;
/// The shortest stretch is tried as 1 to this many items.
pub const MAX_SPLIT: usize = 8;
/// Replays the bisection of the waits' share takes (after its two ends).
const WAIT_FIT_STEPS: usize = 8;
/// The policy the readings are replayed under (and the draft names).
pub const REPLAY_POLICY: &str = "net8";
/// Seeds each reading is replayed with; its peak and span are their
/// medians, so that a reading is not kept or dropped by one seed's luck
/// (the gate thread's phase moves a burst's span by a second and more).
pub const REPLAY_SEEDS: u64 = 5;
/// The .NET 6+ gate's wait per thread of the goal with a busy CPU
/// (`DequeueDelayThresholdMs`, used at or above `CpuUtilizationLow`, 80 %).
const GATE_BUSY_DELAY_PER_THREAD_MS: f64 = 1000.0;
/// Bodies within this share (plus the slack) of a group's shortest share it.
const BUCKET_FRACTION: f64 = 0.05;
const BUCKET_SLACK_MS: f64 = 0.5;
/// Most groups per phase and kind; the share doubles until there are no more.
const MAX_BUCKETS: usize = 16;
/// Arrivals spanning at most this arrive at once (ms).
const AT_ONCE_MS: f64 = 1.0;

/// Drafts a scenario from any trace: from its work items when it has them
/// ([`draft_scenario`]), else from the pool's own events
/// ([`draft_from_activity`]).
pub fn draft_any(t: &PoolTimeline, source: &str) -> Result<Draft, DraftError> {
    match draft_scenario(t, source) {
        Err(DraftError::NoItemEvents) => draft_from_activity(t, source),
        other => other,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Begin {
    /// At the thread's start (50): exact.
    ThreadStart,
    /// Before the first event it wrote after a wait: estimated.
    AfterSign,
    /// Between two waits with nothing between: estimated.
    Unseen,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Wait,
    Stop,
    /// Still busy when the trace (or the activity kept) ended: a lower bound.
    Running,
}

#[derive(Clone, Debug)]
struct Stretch {
    thread: u64,
    begin: Begin,
    /// The wait before it (estimated starts).
    wait_ns: Option<i64>,
    /// The first event after that wait (AfterSign), else the start.
    seen_ns: i64,
    start_ns: i64,
    end_ns: i64,
    end: End,
    /// For a thread start: the reason it is owed to.
    owed_to: Option<String>,
}

impl Stretch {
    fn len_ms(&self) -> f64 {
        ms(self.end_ns - self.start_ns)
    }

    /// From a thread start to a wait or stop: its length is exact.
    fn exact(&self) -> bool {
        self.begin == Begin::ThreadStart && self.end != End::Running
    }
}

/// A worker waiting from `from_ns` until a stretch of it begins, a time,
/// or the end.
#[derive(Clone, Copy, Debug)]
enum Until {
    Stretch(usize),
    At(i64),
    Never,
}

#[derive(Clone, Copy, Debug)]
struct Idle {
    from_ns: i64,
    until: Until,
}

enum State {
    Busy {
        since: i64,
        begin: Begin,
        wait: Option<i64>,
        owed: Option<String>,
        idle: Option<usize>,
    },
    Waiting {
        since: i64,
        idle: usize,
    },
    Gone,
}

struct Activity {
    stretches: Vec<Stretch>,
    idle: Vec<Idle>,
    /// Workers first seen waiting, with no start in the trace: busy before
    /// it from a time it does not give.
    busy_before: usize,
    /// Where the activity known ends (the trace's end, or the first point
    /// not kept).
    cut_ns: i64,
    truncated: bool,
}

enum Mark {
    Start(Option<String>),
    Wait,
    Sign,
    Stop,
}

/// The workers' busy stretches and waits (see the module head).
fn activity(t: &PoolTimeline) -> Activity {
    let trace_end = t
        .trace
        .as_ref()
        .and_then(|i| i.last_event_ns)
        .into_iter()
        .chain(t.last_event_ns)
        .max()
        .unwrap_or(0);
    let cut_ns = t
        .activity_kept_until_ns
        .map_or(trace_end, |u| u.min(trace_end));
    let mut marks: Vec<(i64, u8, usize, u64, Mark)> = Vec::new();
    for (i, p) in t.thread_count.iter().enumerate() {
        if p.time_ns >= cut_ns && p.change > 0 {
            continue;
        }
        if p.change > 0 {
            marks.push((p.time_ns, 0, i, p.thread_id, Mark::Start(p.owed_to.clone())));
        } else if p.time_ns <= cut_ns {
            marks.push((p.time_ns, 2, i, p.thread_id, Mark::Stop));
        }
    }
    for (i, p) in t.activity.iter().enumerate() {
        if p.time_ns > cut_ns {
            continue;
        }
        let m = if p.waiting { Mark::Wait } else { Mark::Sign };
        marks.push((p.time_ns, 1, i, p.thread_id, m));
    }
    marks.sort_by_key(|m| (m.0, m.1, m.2));

    let mut stretches: Vec<Stretch> = Vec::new();
    let mut idle: Vec<Idle> = Vec::new();
    let mut busy_before = 0usize;
    let mut state: BTreeMap<u64, State> = BTreeMap::new();
    // Closes a busy state into a stretch ending at `end_ns`.
    let close = |stretches: &mut Vec<Stretch>,
                 idle: &mut Vec<Idle>,
                 thread: u64,
                 s: State,
                 end_ns: i64,
                 end: End| {
        if let State::Busy {
            since,
            begin,
            wait,
            owed,
            idle: i,
        } = s
        {
            if let Some(i) = i {
                idle[i].until = Until::Stretch(stretches.len());
            }
            stretches.push(Stretch {
                thread,
                begin,
                wait_ns: wait,
                seen_ns: since,
                start_ns: since,
                end_ns: end_ns.max(since),
                end,
                owed_to: owed,
            });
        }
    };
    for (time, _, _, thread, mark) in marks {
        let before = state.remove(&thread);
        let next = match mark {
            Mark::Start(owed) => {
                match before {
                    Some(s @ State::Busy { .. }) => {
                        close(&mut stretches, &mut idle, thread, s, time, End::Stop)
                    }
                    Some(State::Waiting { idle: i, .. }) => idle[i].until = Until::At(time),
                    _ => {}
                }
                State::Busy {
                    since: time,
                    begin: Begin::ThreadStart,
                    wait: None,
                    owed,
                    idle: None,
                }
            }
            Mark::Wait => {
                match before {
                    Some(s @ State::Busy { .. }) => {
                        close(&mut stretches, &mut idle, thread, s, time, End::Wait)
                    }
                    // A wait after a wait with nothing between: it woke,
                    // worked and waited again.
                    Some(State::Waiting { since, idle: i }) => {
                        let s = State::Busy {
                            since: time,
                            begin: Begin::Unseen,
                            wait: Some(since),
                            owed: None,
                            idle: Some(i),
                        };
                        close(&mut stretches, &mut idle, thread, s, time, End::Wait);
                    }
                    Some(State::Gone) => {}
                    None => busy_before += 1,
                }
                idle.push(Idle {
                    from_ns: time,
                    until: Until::Never,
                });
                State::Waiting {
                    since: time,
                    idle: idle.len() - 1,
                }
            }
            Mark::Sign => match before {
                Some(State::Waiting { since, idle: i }) => State::Busy {
                    since: time,
                    begin: Begin::AfterSign,
                    wait: Some(since),
                    owed: None,
                    idle: Some(i),
                },
                Some(s @ State::Busy { .. }) => s,
                _ => State::Busy {
                    since: time,
                    begin: Begin::AfterSign,
                    wait: None,
                    owed: None,
                    idle: None,
                },
            },
            Mark::Stop => {
                match before {
                    Some(s @ State::Busy { .. }) => {
                        close(&mut stretches, &mut idle, thread, s, time, End::Stop)
                    }
                    Some(State::Waiting { idle: i, .. }) => idle[i].until = Until::At(time),
                    _ => {}
                }
                State::Gone
            }
        };
        state.insert(thread, next);
    }
    for (thread, s) in state {
        if matches!(s, State::Busy { .. }) {
            close(&mut stretches, &mut idle, thread, s, cut_ns, End::Running);
        }
    }
    Activity {
        stretches,
        idle,
        busy_before,
        cut_ns,
        truncated: t.activity_kept_until_ns.is_some(),
    }
}

/// Removes the stretches `drop` picks; returns how many.
fn drop_where(act: &mut Activity, drop: impl Fn(&Stretch) -> bool) -> usize {
    let keep: Vec<bool> = act.stretches.iter().map(|s| !drop(s)).collect();
    let mut new_index = vec![usize::MAX; keep.len()];
    let mut next = 0;
    for (i, &k) in keep.iter().enumerate() {
        if k {
            new_index[i] = next;
            next += 1;
        }
    }
    for w in &mut act.idle {
        if let Until::Stretch(i) = w.until {
            w.until = if keep[i] {
                Until::Stretch(new_index[i])
            } else {
                Until::At(act.stretches[i].start_ns)
            };
        }
    }
    let before = act.stretches.len();
    let mut i = 0;
    act.stretches.retain(|_| {
        i += 1;
        keep[i - 1]
    });
    before - act.stretches.len()
}

/// Whole items of one length in every exact stretch.
#[derive(Clone, Copy, Debug)]
struct Split {
    q_ms: f64,
    /// The shortest stretch holds this many.
    k: usize,
    /// Exact stretches it was fitted on.
    fitted: usize,
    max_residual_ms: f64,
}

/// The largest length every exact stretch is (within [`SPLIT_FIT`]) a whole
/// number of, if some stretch then holds more than one; `None` when the
/// stretches are all about one length (one item each) or fit none.
fn fit_split(lens: &[f64]) -> Option<Split> {
    let m = lens.len();
    if m < 2 {
        return None;
    }
    let lmin = lens.iter().copied().fold(f64::INFINITY, f64::min);
    if lmin.is_nan() || lmin < 1.0 {
        return None;
    }
    for k in 1..=MAX_SPLIT {
        // Two lengths agree with some ratio j/k too easily: three at least.
        if k >= 2 && m < 3 {
            break;
        }
        let q0 = lmin / k as f64;
        let n: Vec<f64> = lens.iter().map(|l| (l / q0).round().max(1.0)).collect();
        let items: f64 = n.iter().sum();
        let q = lens.iter().sum::<f64>() / items;
        let max_residual_ms = lens
            .iter()
            .zip(&n)
            .map(|(l, n)| (l - n * q).abs())
            .fold(0.0, f64::max);
        if max_residual_ms <= SPLIT_FIT * q {
            return (items as usize > m).then_some(Split {
                q_ms: q,
                k,
                fitted: m,
                max_residual_ms,
            });
        }
    }
    None
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// One drafted item.
#[derive(Clone, Copy, Debug)]
struct DItem {
    phase: usize,
    burst: bool,
    /// From the first stretch's start (ms).
    arrival_ms: f64,
    body_ms: f64,
    /// The order the pool took it in (its stretch's start, ns).
    order_ns: i64,
    /// Its stretch's end, from the first stretch's start (ms).
    end_ms: f64,
}

struct Group {
    name: String,
    phase: usize,
    burst: bool,
    arrivals: Vec<f64>,
    body_ms: f64,
    first_order_ns: i64,
    last_end_ms: f64,
}

/// A way of reading the stretches as items.
struct Reading {
    key: &'static str,
    describe: String,
}

struct Trial {
    groups: Vec<Group>,
    items: usize,
    /// The scenario without its header.
    body: String,
    replayed: Option<Replayed>,
}

struct Replayed {
    peak: u32,
    span_ms: f64,
}

/// The groups of a reading, each named, in file order.
fn groups_of(items: &[DItem]) -> Vec<Group> {
    let phases = items.iter().map(|i| i.phase).max().unwrap_or(0);
    let mut out: Vec<Group> = Vec::new();
    for phase in 1..=phases {
        for burst in [true, false] {
            let mut these: Vec<&DItem> = items
                .iter()
                .filter(|i| i.phase == phase && i.burst == burst)
                .collect();
            if these.is_empty() {
                continue;
            }
            these.sort_by(|a, b| a.body_ms.total_cmp(&b.body_ms));
            let mut fraction = BUCKET_FRACTION;
            let buckets: Vec<Vec<&DItem>> = loop {
                let mut buckets: Vec<Vec<&DItem>> = Vec::new();
                for &i in &these {
                    match buckets.last_mut() {
                        Some(b)
                            if i.body_ms <= b[0].body_ms * (1.0 + fraction) + BUCKET_SLACK_MS =>
                        {
                            b.push(i)
                        }
                        _ => buckets.push(vec![i]),
                    }
                }
                if buckets.len() <= MAX_BUCKETS || fraction > 1e6 {
                    break buckets;
                }
                fraction *= 2.0;
            };
            let mut groups: Vec<Group> = buckets
                .into_iter()
                .map(|b| {
                    let mut arrivals: Vec<f64> = b.iter().map(|i| i.arrival_ms).collect();
                    arrivals.sort_by(f64::total_cmp);
                    Group {
                        name: String::new(),
                        phase,
                        burst,
                        body_ms: b.iter().map(|i| i.body_ms).sum::<f64>() / b.len() as f64,
                        first_order_ns: b.iter().map(|i| i.order_ns).min().unwrap_or(0),
                        last_end_ms: b.iter().map(|i| i.end_ms).fold(0.0, f64::max),
                        arrivals,
                    }
                })
                .collect();
            // A burst's groups in the order the pool took them; streams by
            // their first arrival.
            if burst {
                groups.sort_by_key(|g| g.first_order_ns);
            } else {
                groups.sort_by(|a, b| a.arrivals[0].total_cmp(&b.arrivals[0]));
            }
            let several = groups.len() > 1;
            for (k, g) in groups.iter_mut().enumerate() {
                g.name = match (burst, several) {
                    (true, false) => format!("phase {phase}"),
                    (true, true) => format!("phase {phase} part {}", k + 1),
                    (false, false) => format!("phase {phase} stream"),
                    (false, true) => format!("phase {phase} stream {}", k + 1),
                };
            }
            out.extend(groups);
        }
    }
    out
}

/// The `arrival = ...` of group `i`.
fn arrival_of(groups: &[Group], i: usize, phase_start_ms: &BTreeMap<usize, f64>) -> String {
    let g = &groups[i];
    let first = g.arrivals[0];
    let last = g.arrivals[g.arrivals.len() - 1];
    if g.burst {
        // The last group of an earlier phase to finish, in the recording.
        let mut before: Option<&Group> = None;
        for e in groups[..i].iter().filter(|e| e.phase < g.phase) {
            if before.is_none_or(|b| e.last_end_ms > b.last_end_ms) {
                before = Some(e);
            }
        }
        if let Some(e) = before {
            let start = phase_start_ms.get(&g.phase).copied().unwrap_or(first);
            return format!(
                "{{ after = {}, delay_ms = {} }}",
                quote(&e.name),
                num((start - e.last_end_ms).max(0.0))
            );
        }
    }
    if g.arrivals.len() == 1 || last - first <= AT_ONCE_MS {
        format!("{{ at_ms = {} }}", num(first))
    } else {
        let every = ((last - first) / (g.arrivals.len() - 1) as f64).max(0.001);
        format!("{{ every_ms = {}, start_ms = {} }}", num(every), num(first))
    }
}

/// The scenario's tables (no header).
fn scenario_body(
    name: &str,
    cores: u32,
    t: &PoolTimeline,
    groups: &[Group],
    step: &str,
    phase_start_ms: &BTreeMap<usize, f64>,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "name = {}", quote(name));
    let _ = writeln!(s, "seed = 1");
    let _ = writeln!(s);
    let _ = writeln!(s, "[machine]");
    let _ = writeln!(s, "cores = {cores}");
    let _ = writeln!(s);
    let _ = writeln!(s, "[pool]");
    let _ = writeln!(s, "policy = {}", quote(REPLAY_POLICY));
    if let Some(m) = &t.min_max {
        let max = m.max_workers.clamp(1, 32767);
        let min = m.min_workers.clamp(1, max);
        let _ = writeln!(s, "min_threads = {min}");
        let _ = writeln!(s, "max_threads = {max}");
    }
    for (i, g) in groups.iter().enumerate() {
        let _ = writeln!(s);
        let _ = writeln!(s, "[[group]]");
        let _ = writeln!(s, "name = {}", quote(&g.name));
        let _ = writeln!(s, "count = {}", g.arrivals.len());
        let _ = writeln!(s, "submit = \"queue-user-work-item\"");
        let _ = writeln!(s, "arrival = {}", arrival_of(groups, i, phase_start_ms));
        let _ = writeln!(s, "body = [ {{ {step} = {} }} ]", num(g.body_ms.max(0.001)));
    }
    s
}

/// Peak threads and span (first item's start to last item's end) of the
/// scenario's replay under [`REPLAY_POLICY`]; `None` if it does not load or
/// the policy is missing.
fn replay(toml: &str) -> Option<Replayed> {
    let scenario = parse_scenario(toml, "draft.toml").ok()?;
    let policy = resolve_policy(REPLAY_POLICY).ok()?;
    let mut peaks = Vec::with_capacity(REPLAY_SEEDS as usize);
    let mut spans = Vec::with_capacity(REPLAY_SEEDS as usize);
    for k in 0..REPLAY_SEEDS {
        let s = scenario.with_run_seed(scenario.seed.wrapping_add(k));
        let run = engine::simulate(&s, &policy, &mut NullSink, &SimOptions::default());
        peaks.push(summarize(&run.trace).threads_peak);
        let started = run
            .trace
            .items
            .iter()
            .filter(|i| i.started != SimTime::MAX)
            .map(|i| i.started.as_ms_f64())
            .fold(f64::INFINITY, f64::min);
        let ended = run
            .trace
            .items
            .iter()
            .filter(|i| i.finished != SimTime::MAX)
            .map(|i| i.finished.as_ms_f64())
            .fold(f64::NEG_INFINITY, f64::max);
        spans.push(if started.is_finite() && ended.is_finite() {
            (ended - started).max(0.0)
        } else {
            0.0
        });
    }
    peaks.sort_unstable();
    spans.sort_by(f64::total_cmp);
    let mid = peaks.len() / 2;
    Some(Replayed {
        peak: peaks[mid],
        span_ms: spans[mid],
    })
}

/// How far a replay is from the recording, in tolerances (≤ 1: within).
fn miss(r: &Replayed, peak: u32, span_ms: f64) -> f64 {
    let dp = (f64::from(r.peak) - f64::from(peak)).abs() / PEAK_THREADS_WITHIN;
    let ds = (r.span_ms - span_ms).abs() / (SPAN_WITHIN * span_ms.abs()).max(1e-9);
    dp.max(ds)
}

fn is_pressure(reason: AdjustmentReason) -> bool {
    matches!(
        reason,
        AdjustmentReason::Starvation | AdjustmentReason::CooperativeBlocking
    )
}

/// Drafts a scenario from a timeline with no work-item events, from the
/// workers' starts, stops and waits and the goal adjustments (see the
/// module head). `source` names the trace in the header. Returns
/// [`DraftError::NoItemEvents`] when no worker was seen busy either.
pub fn draft_from_activity(t: &PoolTimeline, source: &str) -> Result<Draft, DraftError> {
    let mut act = activity(t);
    // A worker that found nothing: no item (the waits it made stay).
    // A thread that started, found no work and waited: no item.
    let empty = drop_where(&mut act, |s| s.exact() && s.len_ms() < MIN_ITEM_MS);
    let cooperative = t.cooperative_blocking_injections.len();
    let coop_adjustments = t
        .adjustments_by_reason
        .get("CooperativeBlocking")
        .copied()
        .unwrap_or(0);
    let is_coop = coop_adjustments > 0;
    let step = if is_coop { "wait_ms" } else { "sleep_ms" };
    // With cooperative blocking, a worker that woke after a wait and shows
    // less than one wait's worth of work (the shortest exact stretch) ran
    // a wait's completion (a timer's callback, an I/O completion): the
    // model queues those itself for each `wait_ms`.
    let completions = if is_coop {
        let shortest = act
            .stretches
            .iter()
            .filter(|s| s.exact())
            .map(Stretch::len_ms)
            .fold(f64::INFINITY, f64::min);
        drop_where(&mut act, |s| {
            let visible = match s.begin {
                Begin::ThreadStart => return false,
                Begin::AfterSign => s.len_ms(),
                Begin::Unseen => 0.0,
            };
            visible < shortest
        })
    } else {
        0
    };
    if act.stretches.is_empty() {
        return Err(DraftError::NoItemEvents);
    }

    // Items of one length, from the exact stretches.
    let exact: Vec<f64> = act
        .stretches
        .iter()
        .filter(|s| s.exact())
        .map(Stretch::len_ms)
        .collect();
    let split = fit_split(&exact);
    let shortest = exact.iter().copied().fold(f64::INFINITY, f64::min);
    let shortest = shortest.is_finite().then_some(shortest);
    let typical = split
        .map(|s| s.q_ms)
        .or(if is_coop { shortest } else { None })
        .or_else(|| median(exact.clone()));

    // Estimated starts: one typical item before the sign, never before the
    // wait; with no typical item, at the sign (or half-way after the wait).
    for s in &mut act.stretches {
        let wait = s.wait_ns.unwrap_or(s.seen_ns);
        s.start_ns = match (s.begin, typical) {
            (Begin::ThreadStart, _) => s.seen_ns,
            (Begin::AfterSign, Some(q)) => (s.seen_ns - (q * 1e6) as i64).max(wait),
            (Begin::AfterSign, None) => s.seen_ns,
            (Begin::Unseen, Some(q)) => (s.end_ns - (q * 1e6) as i64).max(wait),
            (Begin::Unseen, None) => wait + (s.end_ns - wait) / 2,
        }
        .min(s.end_ns);
    }
    let idle_until = |u: Until| match u {
        Until::Stretch(i) => act.stretches[i].start_ns,
        Until::At(x) => x,
        Until::Never => i64::MAX,
    };

    // Stretches by start.
    let mut order: Vec<usize> = (0..act.stretches.len()).collect();
    order.sort_by_key(|&i| (act.stretches[i].start_ns, act.stretches[i].thread));
    let t0 = act.stretches[order[0]].start_ns;
    let last_end_ns = act.stretches.iter().map(|s| s.end_ns).max().unwrap_or(t0);
    let span_ms = ms(last_end_ns - t0);

    // Workers waiting at each stretch's start (another's wait covers it).
    let mut deltas: Vec<(i64, i32)> = Vec::new();
    for w in &act.idle {
        let until = idle_until(w.until);
        if until > w.from_ns {
            deltas.push((w.from_ns, 1));
            if until != i64::MAX {
                deltas.push((until, -1));
            }
        }
    }
    // At one instant, the ends first: a wait ending at a stretch's start is
    // that stretch's own.
    deltas.sort_by_key(|d| (d.0, d.1));
    let mut waiting_at: Vec<i32> = vec![0; act.stretches.len()];
    {
        let (mut k, mut waiting) = (0usize, 0i32);
        for &i in &order {
            let at = act.stretches[i].start_ns;
            while k < deltas.len() && deltas[k].0 <= at {
                waiting += deltas[k].1;
                k += 1;
            }
            waiting_at[i] = waiting;
        }
    }

    // Busy periods, and which hold a burst.
    struct Period {
        start_ns: i64,
        end_ns: i64,
        members: Vec<usize>,
        first_wave: usize,
        fresh: usize,
        raises: usize,
        burst: bool,
    }
    let mut periods: Vec<Period> = Vec::new();
    for &i in &order {
        let s = &act.stretches[i];
        match periods.last_mut() {
            Some(p) if s.start_ns <= p.end_ns => {
                p.end_ns = p.end_ns.max(s.end_ns);
                p.members.push(i);
            }
            _ => periods.push(Period {
                start_ns: s.start_ns,
                end_ns: s.end_ns,
                members: vec![i],
                first_wave: 0,
                fresh: 0,
                raises: 0,
                burst: false,
            }),
        }
    }
    let wave_ns = (FIRST_WAVE_MS * 1e6) as i64;
    // A stretch is fresh work when another worker was waiting as it began
    // and it was not started for a Starvation / CooperativeBlocking raise.
    let fresh = |i: usize| {
        let s = &act.stretches[i];
        let raised = matches!(
            s.owed_to.as_deref(),
            Some("Starvation" | "CooperativeBlocking")
        );
        waiting_at[i] > 0 && !raised
    };
    let mut unseen_raises = 0usize;
    for a in &t.adjustments {
        if a.change == GoalChange::Raised && is_pressure(a.reason) {
            // Periods are in time order and do not overlap.
            let k = periods.partition_point(|p| p.end_ns < a.time_ns);
            match periods.get_mut(k).filter(|p| p.start_ns <= a.time_ns) {
                Some(p) => p.raises += 1,
                None => unseen_raises += 1,
            }
        }
    }
    for p in &mut periods {
        p.first_wave = p
            .members
            .iter()
            .filter(|&&i| act.stretches[i].start_ns <= p.start_ns + wave_ns)
            .count();
        p.fresh = p
            .members
            .iter()
            .filter(|&&i| act.stretches[i].start_ns > p.start_ns + wave_ns && fresh(i))
            .count();
        p.burst = p.first_wave >= 2 || p.raises > 0 || (p.members.len() >= 2 && p.fresh == 0);
    }
    // Phases: each burst opens one (the first period opens the first).
    let mut phase_of_period: Vec<usize> = Vec::with_capacity(periods.len());
    let mut phase = 1usize;
    for (k, p) in periods.iter().enumerate() {
        if k > 0 && p.burst {
            phase += 1;
        }
        phase_of_period.push(phase);
    }
    let phases = phase;
    // Per stretch: its phase, and whether it arrives with its phase's burst.
    let mut placed: Vec<(usize, bool, i64)> = vec![(0, false, 0); act.stretches.len()];
    let mut phase_start_ms: BTreeMap<usize, f64> = BTreeMap::new();
    for (k, p) in periods.iter().enumerate() {
        let ph = phase_of_period[k];
        if p.burst {
            phase_start_ms.entry(ph).or_insert(ms(p.start_ns - t0));
        }
        for &i in &p.members {
            let s = &act.stretches[i];
            let in_burst = p.burst && (s.start_ns <= p.start_ns + wave_ns || !fresh(i));
            placed[i] = (ph, in_burst, p.start_ns);
        }
    }

    let info = t.trace.as_ref();
    let processors = info.map_or(0, |i| i.processors);
    let cores = processors.clamp(1, 4096);
    let name = format!("drafted from {source}");
    let recorded_peak = t.peak_threads;
    // A reading's items, groups, scenario and replay.
    let trial_of = |per_stretch: &[(usize, f64)]| -> Trial {
        let mut items = Vec::new();
        for (i, s) in act.stretches.iter().enumerate() {
            let (ph, in_burst, period_start) = placed[i];
            let (n, body) = per_stretch[i];
            for j in 0..n {
                let arrival_ns = if in_burst {
                    period_start
                } else {
                    // Fresh: the first at the stretch's start, the rest as
                    // it became free for them.
                    s.start_ns + (j as f64 * body * 1e6) as i64
                };
                items.push(DItem {
                    phase: ph,
                    burst: in_burst,
                    arrival_ms: ms(arrival_ns - t0),
                    body_ms: body,
                    order_ns: s.start_ns,
                    end_ms: ms(s.end_ns - t0),
                });
            }
        }
        let groups = groups_of(&items);
        let body = scenario_body(&name, cores, t, &groups, step, &phase_start_ms);
        let replayed = replay(&body);
        Trial {
            groups,
            items: items.len(),
            body,
            replayed,
        }
    };

    // The readings, in the order they are preferred.
    let mut readings: Vec<(Reading, Trial)> = Vec::new();
    if let Some(sp) = split {
        let q = sp.q_ms;
        let per_stretch: Vec<(usize, f64)> = act
            .stretches
            .iter()
            .map(|s| {
                let l = s.len_ms();
                let n = match s.end {
                    End::Running => (l / q - SPLIT_FIT).ceil(),
                    _ => (l / q).round(),
                };
                (n.max(1.0) as usize, q)
            })
            .collect();
        let trial = trial_of(&per_stretch);
        readings.push((
            Reading {
                key: "uniform",
                describe: format!(
                    "items of {} ms: each of the {} stretches from a thread start to a wait or \
                     stop is within {} ms (at most {} % of it) of a whole number of {} ms, the \
                     shortest holding {}; the length is their total over the items",
                    num(q),
                    sp.fitted,
                    num(sp.max_residual_ms),
                    num(SPLIT_FIT * 100.0),
                    num(q),
                    sp.k
                ),
            },
            trial,
        ));
    }
    if let (true, Some(lmin)) = (is_coop, shortest) {
        // Each stretch holds between one wait and as many as fit it; the
        // share between is fitted so that the replay spans what the trace
        // did (bisection; the closest kept).
        let most: Vec<f64> = act.stretches.iter().map(|s| s.len_ms() / lmin).collect();
        let at = |f: f64| -> Vec<(usize, f64)> {
            most.iter()
                .map(|m| ((f * m).round().max(1.0) as usize, lmin))
                .collect()
        };
        let span_of = |x: &Trial| x.replayed.as_ref().map(|r| r.span_ms);
        let mut tried: Vec<(f64, Trial)> = Vec::new();
        let (mut lo, mut hi) = (0.0f64, 1.0f64);
        for f in [lo, hi] {
            let x = trial_of(&at(f));
            tried.push((f, x));
        }
        let low_span = span_of(&tried[0].1);
        let high_span = span_of(&tried[1].1);
        if let (Some(a), Some(b)) = (low_span, high_span)
            && a < span_ms
            && span_ms < b
        {
            for _ in 0..WAIT_FIT_STEPS {
                let mid = (lo + hi) / 2.0;
                let x = trial_of(&at(mid));
                let below = span_of(&x).is_some_and(|v| v < span_ms);
                tried.push((mid, x));
                if below {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
        }
        let best = (0..tried.len())
            .min_by(|&a, &b| {
                let d =
                    |i: usize| span_of(&tried[i].1).map_or(f64::INFINITY, |v| (v - span_ms).abs());
                d(a).total_cmp(&d(b)).then(a.cmp(&b))
            })
            .unwrap_or(0);
        let (f, trial) = tried.swap_remove(best);
        readings.push((
            Reading {
                key: "waits",
                describe: format!(
                    "waits of the shortest stretch, {} ms (a blocked item's stretch is its wait \
                     plus the time its completion queued behind the backlog, so the shortest is \
                     the least inflated: an upper bound of one wait); each stretch holds a share \
                     of {} (0: one wait, 1: as many as fit it) of the waits it could hold, \
                     FITTED so that the replay spans what the trace did: this reading's span \
                     check is not independent, its peak is",
                    num(lmin),
                    num(f)
                ),
            },
            trial,
        ));
    }
    let per_stretch: Vec<(usize, f64)> = act.stretches.iter().map(|s| (1, s.len_ms())).collect();
    let trial = trial_of(&per_stretch);
    readings.push((
        Reading {
            key: "per-stretch",
            describe: if is_coop {
                "one wait per stretch, its length the stretch's (a stretch may hold several \
                 waits run back to back, and each holds the time its completion queued behind \
                 the backlog, which the model adds again: an upper bound)"
            } else {
                "one item per stretch, its body the stretch's length (a stretch may hold several \
                 short items run back to back; it cannot hold less than one)"
            }
            .to_string(),
        },
        trial,
    ));

    let chosen = readings
        .iter()
        .position(|(_, x)| {
            x.replayed
                .as_ref()
                .is_some_and(|r| miss(r, recorded_peak, span_ms) <= 1.0)
        })
        .or_else(|| {
            (0..readings.len())
                .filter(|&i| readings[i].1.replayed.is_some())
                .min_by(|&a, &b| {
                    let m = |i: usize| {
                        readings[i]
                            .1
                            .replayed
                            .as_ref()
                            .map_or(f64::INFINITY, |r| miss(r, recorded_peak, span_ms))
                    };
                    m(a).total_cmp(&m(b)).then(a.cmp(&b))
                })
        })
        .unwrap_or(0);
    let (reading, trial) = &readings[chosen];

    // ---- The header: what was read, inferred and guessed. ----
    let mut h = String::new();
    let _ = writeln!(
        h,
        "# Drafted by `poolsim import {source} --scenario` from the pool's own events: the trace \
         has no work-item events (FrameworkEventSource 30/31), so the workload is inferred from \
         the workers' starts (50), stops (51) and waits (57), the goal adjustments (55) with \
         their reasons, and the limits (59)."
    );
    let _ = writeln!(h, "#");
    let _ = writeln!(h, "# Read from the trace (sure):");
    if processors > 0 {
        let _ = writeln!(
            h,
            "# - cores = {cores}: the trace header's processor count."
        );
    } else {
        let _ = writeln!(
            h,
            "# - cores = 1: GUESSED, the trace header gives no processor count."
        );
    }
    match &t.min_max {
        Some(m) => {
            let _ = writeln!(
                h,
                "# - min_threads = {}, max_threads = {}: ThreadPoolMinMaxThreads (59).",
                m.min_workers.clamp(1, m.max_workers.clamp(1, 32767)),
                m.max_workers.clamp(1, 32767)
            );
        }
        None => {
            let _ = writeln!(
                h,
                "# - min_threads, max_threads: the policy's (GUESSED: no \
                 ThreadPoolMinMaxThreads (59) in the trace)."
            );
        }
    }
    let by_reason = |m: &BTreeMap<String, u64>| {
        if m.is_empty() {
            "none".to_string()
        } else {
            m.iter()
                .map(|(k, v)| format!("{v} {k}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let _ = writeln!(
        h,
        "# - the real pool: peak {} worker threads; {} started ({}); goal adjustments: {}.",
        t.peak_threads,
        t.threads_started,
        by_reason(&t.threads_created_by_reason),
        by_reason(&t.adjustments_by_reason)
    );
    let count_begin = |b: Begin| act.stretches.iter().filter(|s| s.begin == b).count();
    let count_end = |e: End| act.stretches.iter().filter(|s| s.end == e).count();
    let _ = writeln!(
        h,
        "# - {} busy stretches of {} workers, {} ms to {} ms after the trace started (span {} \
         ms, the recording's): from a thread's start (50) or its first event after a wait to \
         its next wait (57) or stop (51); {} from a start (exact), {} ending at the trace's end \
         (lengths are lower bounds).",
        act.stretches.len(),
        act.stretches
            .iter()
            .map(|s| s.thread)
            .collect::<BTreeSet<_>>()
            .len(),
        num(ms(t0)),
        num(ms(last_end_ns)),
        num(span_ms),
        count_begin(Begin::ThreadStart),
        count_end(End::Running)
    );
    if empty > 0 {
        let _ = writeln!(
            h,
            "# - {empty} more stretch(es) from a thread start lasted under {} ms: a thread that \
             found the queue empty and waited; no item.",
            num(MIN_ITEM_MS)
        );
    }
    if completions > 0 {
        let _ = writeln!(
            h,
            "# - left out: {completions} stretch(es) of a worker woken after a wait that show less \
             than the shortest stretch from a start: with cooperative blocking, the waits' \
             completions (a timer's callback, an I/O completion), which the model queues \
             itself for each `wait_ms`."
        );
    }
    let estimated = count_begin(Begin::AfterSign) + count_begin(Begin::Unseen);
    let _ = writeln!(h, "#");
    let _ = writeln!(h, "# Inferred (where from; how sure):");
    if estimated > 0 {
        let _ = writeln!(
            h,
            "# - starts of {estimated} stretches that follow a wait: ESTIMATED, one typical item \
             ({} ms) before the first event the worker wrote after the wait (a hill-climbing \
             sample or adjustment, logged as an item completes), never before the wait; a \
             worker writes nothing when it wakes.",
            typical.map_or_else(|| "unknown: at that event".to_string(), num)
        );
    }
    let _ = writeln!(
        h,
        "# - items: {} in {} group(s): {}.",
        trial.items,
        trial.groups.len(),
        reading.describe
    );
    let (peak_r, span_r) = (t.peak_threads, span_ms);
    let mut lines = Vec::new();
    for (r, x) in &readings {
        let figures = match &x.replayed {
            Some(p) => format!(
                "{} items, replay peak {} threads, span {} ms{}",
                x.items,
                p.peak,
                num(p.span_ms),
                if miss(p, peak_r, span_r) <= 1.0 {
                    " (matches)"
                } else {
                    " (MISS)"
                }
            ),
            None => format!("{} items, not replayed", x.items),
        };
        lines.push(format!("{}: {figures}", r.key));
    }
    let _ = writeln!(
        h,
        "#   How sure: each reading was replayed under {REPLAY_POLICY} (the medians of {REPLAY_SEEDS} seeds) against the \
         trace's peak {} threads and span {} ms (within {} threads and {} %, as `advise` \
         checks); the first to match of uniform items, the waits, one per stretch is kept, \
         else the closest. {}. Kept: {}.",
        peak_r,
        num(span_r),
        num(PEAK_THREADS_WITHIN),
        num(SPAN_WITHIN * 100.0),
        lines.join("; "),
        reading.key
    );
    for (i, (r, x)) in readings.iter().enumerate() {
        if i == chosen {
            continue;
        }
        let groups: Vec<String> = x
            .groups
            .iter()
            .map(|g| {
                format!(
                    "{} x {step} = {} ({})",
                    g.arrivals.len(),
                    num(g.body_ms),
                    g.name
                )
            })
            .collect();
        let _ = writeln!(
            h,
            "#   Not kept, {}: {}; its groups: {}.",
            r.key,
            r.describe,
            groups.join(", ")
        );
    }
    if split.is_none() && exact.len() >= 2 {
        let _ = writeln!(
            h,
            "#   The {} exact stretches are no whole numbers of one length (within {} %): \
             the items differ in length, or the split cannot be told.",
            exact.len(),
            num(SPLIT_FIT * 100.0)
        );
    }

    // The blocking kind.
    let starvation = &t.starvation_injections;
    if is_coop {
        let _ = writeln!(
            h,
            "# - bodies are `wait_ms` (Task.Wait on a call, sync over async): the pool raised its \
             goal {cooperative} times ({coop_adjustments} adjustments) for cooperative blocking \
             (reason CooperativeBlocking), which only threads blocked in Task.Wait / .Result \
             cause; sure of the kind, not of each body's length. The model queues each wait's \
             completion to the pool itself."
        );
    } else {
        let mut idle_proof: Option<(f64, u32)> = None;
        for w in starvation.windows(2) {
            let gap = ms(w[1].time_ns - w[0].time_ns);
            let goal = w[1].previous_count.unwrap_or(w[0].new_count);
            if gap < f64::from(goal) * GATE_BUSY_DELAY_PER_THREAD_MS && idle_proof.is_none() {
                idle_proof = Some((gap, goal));
            }
        }
        match (starvation.len(), idle_proof) {
            (0, _) => {
                let _ = writeln!(
                    h,
                    "# - bodies are `sleep_ms`: GUESSED. No Starvation or CooperativeBlocking \
                     raise: the gate never saw the work stall (items kept completing), so \
                     nothing tells blocking from computing, and the trace has no CPU figure \
                     (make a body `cpu_ms` where the items compute)."
                );
            }
            (n, Some((gap, goal))) => {
                let _ = writeln!(
                    h,
                    "# - bodies are `sleep_ms` (blocking the pool cannot see, as \
                     Thread.Sleep): {n} Starvation raises and no CooperativeBlocking one; two \
                     of them {} ms apart with a goal of {goal}, where the .NET 6+ gate waits \
                     goal x {} ms from the last dequeue while the CPU is at 80 % or more: the \
                     CPU was below 80 %, so the threads blocked (sure of the kind).",
                    num(gap),
                    num(GATE_BUSY_DELAY_PER_THREAD_MS)
                );
            }
            (n, None) => {
                let _ = writeln!(
                    h,
                    "# - bodies are `sleep_ms`: GUESSED. {n} Starvation raise(s) and no \
                     CooperativeBlocking one: threads were held in blocking the pool cannot \
                     see, or computed with the CPU busy (no two raises are close enough to \
                     prove the CPU below 80 %); the trace has no CPU figure (make a body \
                     `cpu_ms` where the items compute)."
                );
            }
        }
    }

    // Arrivals.
    let stream_items = trial
        .groups
        .iter()
        .filter(|g| !g.burst)
        .map(|g| g.arrivals.len())
        .sum::<usize>();
    for (k, p) in periods.iter().enumerate() {
        let at = ms(p.start_ns - t0);
        let why = if p.burst {
            let mut why = Vec::new();
            if p.first_wave >= 2 {
                why.push(format!(
                    "{} stretches began within {} ms of its start",
                    p.first_wave,
                    num(FIRST_WAVE_MS)
                ));
            }
            if p.raises > 0 {
                why.push(format!(
                    "{} Starvation / CooperativeBlocking raise(s) fell in it (work waited for a \
                     thread)",
                    p.raises
                ));
            }
            if p.members.len() >= 2 && p.fresh == 0 {
                why.push(
                    "every later stretch began while no other worker waited (threads started \
                     or woke one by one while the others stayed busy)"
                        .to_string(),
                );
            }
            let fresh = if p.fresh > 0 {
                format!(
                    "; {} later stretch(es) began while another worker waited: fresh work, \
                     arriving then",
                    p.fresh
                )
            } else {
                String::new()
            };
            format!("a burst queued at its start ({}){fresh}", why.join("; "))
        } else {
            "no burst: its stretches began one at a time with other workers waiting or none \
             busy, fresh work arriving at each start"
                .to_string()
        };
        let _ = writeln!(
            h,
            "# - busy period {} ({} ms to {} ms, {} stretches, phase {}): {why}.",
            k + 1,
            num(at),
            num(ms(p.end_ns - t0)),
            p.members.len(),
            phase_of_period[k]
        );
    }
    let _ = writeln!(
        h,
        "#   How sure: a burst's items all arrive at its start (they may have come in over \
         its time, faster than the pool took them: the trace cannot tell).{}",
        if stream_items > 0 {
            format!(
                " {stream_items} fresh item(s) are spread evenly over their span (every_ms), \
                 an approximation of when each came."
            )
        } else {
            String::new()
        }
    );
    if phases > 1 {
        let _ = writeln!(
            h,
            "# - phases: {phases}; each later phase's burst follows the earlier phase's last \
             group to finish (after = ..., delay_ms = the idle time between them in the trace): \
             GUESSED that the program waited for the earlier phase (a phase started on a clock \
             would be at_ms); its stream groups keep their times from the start."
        );
    }
    let _ = writeln!(h, "#");
    let _ = writeln!(h, "# Guessed:");
    let _ = writeln!(
        h,
        "# - submit = \"queue-user-work-item\" from outside the pool: the events do not name the \
         API that queued the work."
    );
    let _ = writeln!(
        h,
        "# - policy = \"{REPLAY_POLICY}\": the trace does not name the runtime's version."
    );
    let mut missing = Vec::new();
    if unseen_raises > 0 {
        missing.push(format!(
            "{unseen_raises} Starvation / CooperativeBlocking raise(s) came while no worker was \
             seen busy: work the waits do not show (a worker that woke, ran items and waited \
             again with no other event between is seen waiting throughout)"
        ));
    }
    if act.busy_before > 0 {
        missing.push(format!(
            "{} worker(s) were busy before the trace began (first seen waiting): that work is \
             left out",
            act.busy_before
        ));
    }
    if act.truncated {
        missing.push(format!(
            "the waits kept ran out at {} ms: nothing after is drafted",
            num(ms(act.cut_ns))
        ));
    }
    if !missing.is_empty() {
        let _ = writeln!(h, "#");
        let _ = writeln!(h, "# Not seen:");
        for m in missing {
            let _ = writeln!(h, "# - {m}.");
        }
    }
    let _ = writeln!(h, "#");
    let _ = writeln!(
        h,
        "# Replay: poolsim run THIS.toml   (compare: poolsim import {source})"
    );
    let _ = writeln!(h);
    Ok(Draft {
        toml: format!("{h}{}", trial.body),
        items: trial.items,
        phases,
        groups: trial.groups.len(),
        span_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_split_needs_every_stretch_to_fit() {
        // 8, 9 and 3 items of 500 ms, with a little noise.
        let s = fit_split(&[4004.5, 4503.5, 1501.0]).unwrap();
        assert_eq!(s.k, 3);
        assert!((s.q_ms - 500.45).abs() < 0.01, "{s:?}");
        // About one length each: one item each, no split.
        assert!(fit_split(&[1000.0, 1003.0, 998.0]).is_none());
        // Lengths with no common item.
        assert!(fit_split(&[1000.0, 1370.0, 1810.0]).is_none());
        // Two stretches are not enough for a split of the shortest.
        assert!(fit_split(&[1000.0, 1500.0]).is_none());
        assert_eq!(fit_split(&[1000.0, 2001.0]).map(|s| s.k), Some(1));
    }
}
