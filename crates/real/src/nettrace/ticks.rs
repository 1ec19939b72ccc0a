//! A program's periodic timer, read from a trace's work items: the shape
//! of `new Timer(_ => { for (...) ThreadPool.QueueUserWorkItem(work); },
//! null, 0, period)`.
//!
//! What the trace shows of it (FrameworkEventSource 30/31 on .NET 6+):
//! each firing's callback is a short work item queued by a thread outside
//! the pool (the timer thread queues the timer queue's work; dotnet/runtime
//! `TimerQueue.Portable.cs`), and while a pool thread runs it, that thread
//! queues the firing's items. So a firing is an item queued from outside
//! the pool, inside whose run its thread queued others (its children).
//!
//! What is read:
//!
//! - the firings: the items with children that one thread outside the
//!   pool queued, at least [`MIN_FIRINGS`] of them, every one with the
//!   same number of children (`per_tick`; the last may have fewer);
//! - the first firing's due time: when its callback was queued;
//! - the period: an upper bound. A callback runs when its firing is due or
//!   later, never earlier, and a late callback moves the timer's later due
//!   times only later (`TimerQueue.FireNextTimers`: the old due time plus
//!   the period, or 1 ms after a callback a whole period late; modelled in
//!   `pool::state` timers). So firing k, due at or after first + k x
//!   period, ran at `run_k`: the period is at most (run_k - first) / k for
//!   every k, and the smallest of these is the reading, to the whole
//!   millisecond below (a `Timer`'s period is an int of ms). When the pool
//!   kept up the callbacks ran on time and the bound is the period; behind
//!   a starved pool it is above it by the least lateness over k.
//! - callbacks that ended before their items did: one that waited for
//!   them is a fan-out (`super::fanout`), not a timer;
//! - a check that the firings are periodic at all: the last firing may not
//!   come later than [`MAX_STRETCH`] times what the period gives (firings
//!   at irregular times give a small bound and a long span).

use std::collections::{HashMap, HashSet};

use super::items::WorkItem;

/// Fewest firings read as a timer.
pub const MIN_FIRINGS: usize = 3;
/// The last firing at most this many times (firings - 1) x the period
/// after the first.
pub const MAX_STRETCH: f64 = 1.5;

/// A periodic timer read from the work items (indices into the records).
#[derive(Clone, Debug, PartialEq)]
pub struct TimerReading {
    /// Each firing's callback item, in the order they ran.
    pub callbacks: Vec<usize>,
    /// The thread outside the pool that queued them (the timer thread).
    pub timer_thread: u64,
    /// The items the callbacks queued, firing by firing.
    pub children: Vec<usize>,
    /// Items each firing queued (the last may have queued fewer).
    pub per_tick: u32,
    /// When the first firing's callback was queued (ns, the trace's clock).
    pub first_due_ns: i64,
    /// When each callback ran (ns).
    pub runs_ns: Vec<i64>,
    /// The period read (whole ms).
    pub period_ms: u64,
    /// The upper bound before rounding down (ms), and the firing (from 0)
    /// that gave it.
    pub bound_ms: f64,
    pub bound_firing: usize,
}

/// The items each item queued while it ran (indices into `records`): an
/// item queued by a pool thread was queued from the item that thread was
/// running then. `workers` are the pool's threads.
pub fn children_by_parent(
    records: &[WorkItem],
    workers: &HashSet<u64>,
) -> HashMap<usize, Vec<usize>> {
    // Each pool thread's runs, by start.
    let mut runs: HashMap<u64, Vec<(i64, i64, usize)>> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        if let (Some(th), Some(start)) = (r.thread, r.dequeued_ns) {
            runs.entry(th)
                .or_default()
                .push((start, r.ended_ns.unwrap_or(i64::MAX), i));
        }
    }
    for list in runs.values_mut() {
        list.sort_unstable();
    }
    let mut children: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        let (Some(th), Some(at)) = (r.enqueue_thread, r.enqueued_ns) else {
            continue;
        };
        if !workers.contains(&th) {
            continue;
        }
        let Some(list) = runs.get(&th) else { continue };
        let k = list.partition_point(|&(start, _, _)| start <= at);
        if k == 0 {
            continue;
        }
        let (_, end, parent) = list[k - 1];
        if at <= end && parent != i {
            children.entry(parent).or_default().push(i);
        }
    }
    children
}

/// Reads a periodic timer from `records` (see the module head); `workers`
/// are the pool's threads. `None` when the items do not show one.
pub fn read_timer(records: &[WorkItem], workers: &HashSet<u64>) -> Option<TimerReading> {
    let children = children_by_parent(records, workers);
    // Callbacks: parents queued from outside the pool, by the thread that
    // queued the most of them. A callback queues and goes: an item that
    // waited for what it queued is a fan-out (`super::fanout`).
    let mut by_thread: HashMap<u64, Vec<usize>> = HashMap::new();
    for (&p, kids) in &children {
        let r = &records[p];
        if let (Some(th), Some(_), Some(_)) = (r.enqueue_thread, r.enqueued_ns, r.dequeued_ns)
            && !workers.contains(&th)
            && !super::fanout::waits_for(records, p, kids)
        {
            by_thread.entry(th).or_default().push(p);
        }
    }
    let (timer_thread, mut callbacks) = by_thread
        .into_iter()
        .max_by_key(|(_, v)| (v.len(), std::cmp::Reverse(v.iter().min().copied())))?;
    if callbacks.len() < MIN_FIRINGS {
        return None;
    }
    callbacks.sort_by_key(|&p| (records[p].dequeued_ns, p));
    let per_tick = children[&callbacks[0]].len();
    let last = callbacks.len() - 1;
    let regular = callbacks.iter().enumerate().all(|(k, p)| {
        let n = children[p].len();
        n == per_tick || (k == last && n < per_tick)
    });
    if !regular {
        return None;
    }
    let first_due_ns = records[callbacks[0]].enqueued_ns?;
    let runs_ns: Vec<i64> = callbacks
        .iter()
        .map(|&p| records[p].dequeued_ns)
        .collect::<Option<_>>()?;
    let (bound_firing, bound_ms) = runs_ns
        .iter()
        .enumerate()
        .skip(1)
        .map(|(k, &run)| (k, (run - first_due_ns) as f64 / 1e6 / k as f64))
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    if bound_ms < 1.0 {
        return None;
    }
    let period_ms = bound_ms.floor() as u64;
    let span_ms = (runs_ns[last] - first_due_ns) as f64 / 1e6;
    if span_ms > MAX_STRETCH * last as f64 * period_ms as f64 {
        return None;
    }
    let mut kids: Vec<usize> = Vec::new();
    for p in &callbacks {
        let mut c = children[p].clone();
        c.sort_by_key(|&i| (records[i].enqueued_ns, i));
        kids.extend(c);
    }
    Some(TimerReading {
        callbacks,
        timer_thread,
        children: kids,
        per_tick: per_tick as u32,
        first_due_ns,
        runs_ns,
        period_ms,
        bound_ms,
        bound_firing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;
    const TIMER_THREAD: u64 = 1;

    /// An item queued by `by` at `queued` ms, run by `on` from `start` to
    /// `end` ms.
    fn item(by: u64, queued: f64, on: u64, start: f64, end: f64) -> WorkItem {
        WorkItem {
            work_id: 0,
            enqueued_ns: Some((queued * MS as f64) as i64),
            enqueue_thread: Some(by),
            dequeued_ns: Some((start * MS as f64) as i64),
            thread: Some(on),
            ended_ns: Some((end * MS as f64) as i64),
            end: None,
        }
    }

    /// A timer firing every `period` ms whose callbacks run at `runs`
    /// (ms, on thread 10 + k), each queuing `per_tick` items of 800 ms.
    fn timer(period: f64, runs: &[f64], per_tick: usize) -> Vec<WorkItem> {
        let mut out = Vec::new();
        for (k, &run) in runs.iter().enumerate() {
            let th = 10 + k as u64;
            out.push(item(TIMER_THREAD, k as f64 * period, th, run, run + 0.5));
            for j in 0..per_tick {
                let q = run + 0.1 + j as f64 * 0.01;
                out.push(item(th, q, 20 + j as u64, q + 1.0, q + 801.0));
            }
        }
        out
    }

    fn workers(records: &[WorkItem]) -> HashSet<u64> {
        records.iter().filter_map(|r| r.thread).collect()
    }

    #[test]
    fn a_timer_on_time_is_read_with_its_period_and_burst() {
        let runs: Vec<f64> = (0..8).map(|k| k as f64 * 730.0 + 0.2).collect();
        let records = timer(730.0, &runs, 6);
        let t = read_timer(&records, &workers(&records)).expect("a timer");
        assert_eq!(t.per_tick, 6);
        assert_eq!(t.callbacks.len(), 8);
        assert_eq!(t.children.len(), 48);
        assert_eq!(t.period_ms, 730);
        assert_eq!(t.first_due_ns, 0);
    }

    #[test]
    fn late_callbacks_give_a_bound_above_the_period_never_below() {
        // The ticker app's recording (tests/fixtures/apps/ticker): a 500 ms
        // timer whose callbacks ran 300, 503, 104, 297, 498, 97 and 298 ms
        // late behind a starved pool (runs read from its trace).
        let runs = [6.4, 807.4, 1503.4, 1607.7, 2303.7, 3004.6, 3104.1, 3805.0];
        let records = timer(500.0, &runs, 6);
        let t = read_timer(&records, &workers(&records)).expect("a timer");
        assert!(
            (500..=520).contains(&t.period_ms),
            "period read {} ms",
            t.period_ms
        );
        assert_eq!(
            t.bound_firing, 6,
            "the 7th callback was the least late per firing"
        );
    }

    #[test]
    fn bursts_of_unequal_size_or_too_few_firings_are_not_a_timer() {
        let runs: Vec<f64> = (0..8).map(|k| k as f64 * 500.0).collect();
        let mut records = timer(500.0, &runs, 6);
        // One firing in the middle queues a seventh item.
        let extra = item(12, 1000.3, 30, 1001.0, 1002.0);
        records.push(extra);
        assert_eq!(read_timer(&records, &workers(&records)), None);
        let records = timer(500.0, &runs[..2], 6);
        assert_eq!(read_timer(&records, &workers(&records)), None);
    }

    #[test]
    fn firings_at_irregular_times_are_not_a_timer() {
        // Quick firings first, then long silences: no period fits.
        let runs = [0.0, 10.0, 20.0, 3000.0, 9000.0];
        let records = timer(0.0, &runs, 2);
        assert_eq!(read_timer(&records, &workers(&records)), None);
    }

    #[test]
    fn items_queued_by_the_main_thread_alone_are_not_a_timer() {
        let records: Vec<WorkItem> = (0..20)
            .map(|k| {
                item(
                    TIMER_THREAD,
                    k as f64 * 100.0,
                    10,
                    k as f64 * 100.0,
                    k as f64 * 100.0 + 5.0,
                )
            })
            .collect();
        assert_eq!(read_timer(&records, &workers(&records)), None);
    }
}
