//! A program's fan-out, read from a trace's work items: the shape of
//! `var calls = new Task[n]; for (...) calls[j] = Task.Run(call);
//! Task.WhenAll(calls).Wait();` inside a work item (a gateway's handler
//! calling its backends and blocking on the answers).
//!
//! What the trace shows of it (FrameworkEventSource 30/31 on .NET 6+):
//! while a pool thread runs an item, that thread queues the calls (their
//! enqueues carry its thread id; [`super::ticks::children_by_parent`]
//! finds the item it was running), and the item's run on its thread lasts
//! until its last call has ended: the thread is blocked in the wait, so it
//! takes no other item before then. A timer's callback queues items too,
//! but ends at once without waiting for them (`super::ticks`).
//!
//! What is read:
//!
//! - the fan-outs: items the program's submitter queued (the thread that
//!   queued the first item, `items::submitter`: its requests) that queued calls
//!   and were still running halfway through each call's run
//!   ([`waits_for`]), at least [`MIN_FAN_OUTS`] of them. Items other
//!   threads queued from outside the pool are not: on .NET 8 the timer
//!   thread queues each timer queue as an item, which runs its first due
//!   timer inline and queues the others' callbacks, and in a pool that
//!   keeps up those callbacks run and end before the queue's item does
//!   (measured: a healthy run of `examples/apps/fanout.cs` read 87 of
//!   them as fan-outs and their callbacks as 0.01 ms calls). Requests
//!   sent from several threads are read from the first one's alone;
//! - the calls each made (`per_call`): the most common count among them
//!   (the engine makes every call of a step queue the same number);
//! - the time an item ran before its first call, and after its last
//!   call's end: the shortest over the fan-outs (what an item took while
//!   the pool kept up; waiting adds to both, never takes from them).
//!
//! Nested fan-outs (a call that fans out in turn) are not read: their
//! calls are drafted as calls.

use std::collections::{HashMap, HashSet};

use super::items::{WorkItem, submitter};
use super::ticks::children_by_parent;

/// Fewest fan-outs read as the program's shape.
pub const MIN_FAN_OUTS: usize = 3;

/// The fan-outs read from the work items (indices into the records).
#[derive(Clone, Debug, PartialEq)]
pub struct FanOutReading {
    /// The items that fanned out and waited, in the order they were queued.
    pub parents: Vec<usize>,
    /// Every call they queued (all of them, whatever their parent's count).
    pub children: Vec<usize>,
    /// Calls each fan-out queued: the most common count.
    pub per_call: u32,
    /// Fan-outs that queued another number of calls (drafted with
    /// `per_call` all the same).
    pub other_counts: usize,
    /// The shortest time from a fan-out's start to its first call (ms).
    pub before_ms: f64,
    /// The shortest time from its last call's end to its own end (ms).
    pub after_ms: f64,
}

/// Whether `parent` waited for `kids`: it was still running halfway
/// through the run of each of them. (An item's end in the trace is its
/// thread's next event, often a few milliseconds late, so "no sooner than
/// their end" would misread a waiting parent whose last call's thread
/// logged late; one that queues and goes ends before its calls are even
/// half done.)
pub fn waits_for(records: &[WorkItem], parent: usize, kids: &[usize]) -> bool {
    let Some(end) = records[parent].ended_ns else {
        return false;
    };
    let middle = kids
        .iter()
        .filter_map(|&c| {
            let r = &records[c];
            let (start, stop) = (r.dequeued_ns?, r.ended_ns?);
            Some(start + (stop - start) / 2)
        })
        .max();
    middle.is_some_and(|m| end >= m)
}

/// Reads the program's fan-outs from `records` (see the module head);
/// `workers` are the pool's threads. `None` when the items show none.
pub fn read_fan_out(records: &[WorkItem], workers: &HashSet<u64>) -> Option<FanOutReading> {
    let children = children_by_parent(records, workers);
    let program = submitter(records);
    let mut parents: Vec<usize> = children
        .iter()
        .filter(|(p, kids)| {
            let r = &records[**p];
            r.enqueue_thread.is_some_and(|th| !workers.contains(&th))
                && r.enqueue_thread == program
                && waits_for(records, **p, kids)
        })
        .map(|(p, _)| *p)
        .collect();
    if parents.len() < MIN_FAN_OUTS {
        return None;
    }
    parents.sort_by_key(|&p| (records[p].enqueued_ns, p));
    let mut counts: HashMap<usize, usize> = HashMap::new();
    for p in &parents {
        *counts.entry(children[p].len()).or_default() += 1;
    }
    // The most common count; the smaller one on a tie.
    let (&per_call, &most) = counts
        .iter()
        .max_by_key(|(n, k)| (**k, std::cmp::Reverse(**n)))?;
    let mut kids: Vec<usize> = Vec::new();
    let mut before = f64::INFINITY;
    let mut after = f64::INFINITY;
    for p in &parents {
        let r = &records[*p];
        let mut c = children[p].clone();
        c.sort_by_key(|&i| (records[i].enqueued_ns, i));
        if let (Some(start), Some(first)) = (r.dequeued_ns, records[c[0]].enqueued_ns) {
            before = before.min((first - start).max(0) as f64 / 1e6);
        }
        let last = c.iter().filter_map(|&i| records[i].ended_ns).max();
        if let (Some(end), Some(last)) = (r.ended_ns, last) {
            after = after.min((end - last).max(0) as f64 / 1e6);
        }
        kids.extend(c);
    }
    Some(FanOutReading {
        other_counts: parents.len() - most,
        parents,
        children: kids,
        per_call: u32::try_from(per_call).ok()?,
        before_ms: if before.is_finite() { before } else { 0.0 },
        after_ms: if after.is_finite() { after } else { 0.0 },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;
    const MAIN: u64 = 1;
    const TIMER: u64 = 2;

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

    /// `requests` requests 20 ms apart from the main thread, request k on
    /// thread 10 + k: it runs `before` ms, queues `calls` calls (each run
    /// on its own thread for 100 ms), and ends `after` ms after the last
    /// one when it `waits`, else at once.
    fn gateway(
        requests: usize,
        calls: usize,
        before: f64,
        after: f64,
        waits: bool,
    ) -> Vec<WorkItem> {
        let mut out = Vec::new();
        for k in 0..requests {
            let th = 10 + k as u64;
            let start = k as f64 * 20.0 + 1.0;
            let first = start + before;
            let last_end = first + (calls - 1) as f64 * 0.01 + 105.0;
            let end = if waits { last_end + after } else { first + 0.5 };
            out.push(item(MAIN, k as f64 * 20.0, th, start, end));
            for j in 0..calls {
                let q = first + j as f64 * 0.01;
                let on = 1000 + (k * calls + j) as u64;
                out.push(item(th, q, on, q + 5.0, q + 105.0));
            }
        }
        out
    }

    fn workers(records: &[WorkItem]) -> HashSet<u64> {
        records.iter().filter_map(|r| r.thread).collect()
    }

    #[test]
    fn requests_that_wait_for_their_calls_are_fan_outs() {
        let records = gateway(6, 4, 2.0, 0.5, true);
        let fan = read_fan_out(&records, &workers(&records)).expect("a fan-out");
        assert_eq!(fan.per_call, 4);
        assert_eq!(fan.parents, [0, 5, 10, 15, 20, 25]);
        assert_eq!(fan.children.len(), 24);
        assert_eq!(fan.other_counts, 0);
        assert!((fan.before_ms - 2.0).abs() < 1e-6, "{}", fan.before_ms);
        assert!((fan.after_ms - 0.5).abs() < 1e-3, "{}", fan.after_ms);
    }

    #[test]
    fn the_runtime_s_timer_queues_are_not_fan_outs() {
        // The gateway, and a timer thread (outside the pool) queuing
        // timer queues each running a callback inline while the one it
        // queued runs and ends on another thread: they "wait" for it.
        let mut records = gateway(6, 4, 2.0, 0.5, true);
        let requests = records.len();
        for k in 0..8 {
            let at = 100.0 + k as f64 * 20.0;
            records.push(item(TIMER, at, 2000 + k, at + 0.1, at + 0.3));
            records.push(item(2000 + k, at + 0.15, 3000 + k, at + 0.16, at + 0.17));
        }
        let fan = read_fan_out(&records, &workers(&records)).expect("a fan-out");
        assert_eq!(fan.parents, [0, 5, 10, 15, 20, 25]);
        assert_eq!(fan.children.len(), 24);
        assert!(fan.children.iter().all(|&c| c < requests));
        assert_eq!(fan.other_counts, 0);
    }

    #[test]
    fn items_that_queue_work_and_end_at_once_are_not_fan_outs() {
        // A timer callback's shape: it queues and goes.
        let records = gateway(6, 4, 0.1, 0.0, false);
        assert_eq!(read_fan_out(&records, &workers(&records)), None);
    }

    #[test]
    fn too_few_fan_outs_are_not_read_and_the_count_is_the_common_one() {
        let records = gateway(MIN_FAN_OUTS - 1, 4, 0.1, 0.1, true);
        assert_eq!(read_fan_out(&records, &workers(&records)), None);
        // Three of four calls each, one of two: per_call 4, one other.
        let mut records = gateway(3, 4, 0.1, 0.1, true);
        records.extend(gateway(1, 2, 0.1, 0.1, true).into_iter().map(|mut r| {
            r.enqueued_ns = r.enqueued_ns.map(|t| t + 1000 * MS);
            r.dequeued_ns = r.dequeued_ns.map(|t| t + 1000 * MS);
            r.ended_ns = r.ended_ns.map(|t| t + 1000 * MS);
            r
        }));
        let fan = read_fan_out(&records, &workers(&records)).expect("a fan-out");
        assert_eq!(
            (fan.per_call, fan.other_counts, fan.parents.len()),
            (4, 1, 4)
        );
        assert_eq!(fan.children.len(), 14);
    }
}
