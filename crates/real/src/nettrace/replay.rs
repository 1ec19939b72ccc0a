//! A recorded trace as a run: the [`Trace`] and detail events that
//! `poolsim run`'s renderers (Gantt PNG/SVG, Chrome trace) already draw.
//!
//! - Lanes: one per pool worker thread, in order of appearance: each start
//!   (ThreadPoolWorkerThreadStart, 50) opens a lane (an OS id reused after
//!   a stop opens a new one) with the reason the start is owed to
//!   ([`PoolTimeline::threads_created_by_reason`]) mapped to a
//!   [`ThreadReason`]: `WithinGoal` -> demand, `Starvation` -> starvation,
//!   `CooperativeBlocking` -> cooperative-blocking, the hill-climbing
//!   reasons (Warmup, Initializing, RandomMove, ClimbingMove, ChangePoint,
//!   Stabilizing, ThreadTimedOut) -> hill-climbing, others -> observed. A
//!   thread that runs items with no start in the trace (started before it)
//!   gets a lane from its first item on, reason observed. A stop (51)
//!   closes the lane.
//! - Counts: the threads existing (the start and stop events' active count)
//!   and the goal (the minimum from ThreadPoolMinMaxThreads, then every
//!   adjustment's new count) as a step series; each adjustment is also a
//!   [`TraceEvent::GoalChanged`] with the runtime's reason name.
//! - Items (when item events were recorded): queued at their enqueue
//!   (an item with no enqueue: at its dequeue), started at their dequeue on
//!   the lane of the dequeuing thread, finished when the thread was next
//!   seen free ([`crate::nettrace::WorkItems`]); never dequeued: not
//!   started. The queue length is a [`TraceEvent::QueueLength`] series.
//!   The trace does not say what an item did, so each is one segment
//!   ("running"), as for a measured run.
//!
//! Times are nanoseconds from the trace's start (its sync time); an event
//! before it is put at 0.

use std::collections::HashMap;

use serde_json::json;

use crate::render::chrome::chrome_trace_json;
use crate::time::SimTime;
use crate::trace::{
    CountSample, ItemRecord, ThreadId, ThreadReason, ThreadRecord, Trace, TraceEvent,
};

use super::events::AdjustmentReason;
use super::timeline::{PoolTimeline, WITHIN_GOAL};

/// The name of the one group every imported item belongs to.
pub const ITEMS_GROUP: &str = "work items";

/// A recorded trace as the renderers take a run.
#[derive(Clone, Debug)]
pub struct ImportedRun {
    pub trace: Trace,
    /// Thread creations and exits, goal changes, items queued / started /
    /// finished, queue lengths, in time order.
    pub events: Vec<(SimTime, TraceEvent)>,
    /// The OS thread id of each lane.
    pub os_threads: Vec<u64>,
}

fn at(ns: i64) -> SimTime {
    SimTime(u64::try_from(ns).unwrap_or(0))
}

/// The thread reason a start owed to `owed_to` is drawn with.
pub fn thread_reason(owed_to: Option<&str>) -> ThreadReason {
    match owed_to {
        Some(WITHIN_GOAL) => ThreadReason::Demand,
        Some("Starvation") => ThreadReason::Starvation,
        Some("CooperativeBlocking") => ThreadReason::CooperativeBlocking,
        Some(
            "Warmup" | "Initializing" | "RandomMove" | "ClimbingMove" | "ChangePoint"
            | "Stabilizing" | "ThreadTimedOut",
        ) => ThreadReason::HillClimbing,
        _ => ThreadReason::Observed,
    }
}

/// Lanes of OS threads: each OS id's lanes, in creation order.
#[derive(Default)]
struct Lanes {
    records: Vec<ThreadRecord>,
    os: Vec<u64>,
    by_os: HashMap<u64, Vec<usize>>,
}

impl Lanes {
    fn open(&mut self, os: u64, created: SimTime, reason: ThreadReason) -> usize {
        let i = self.records.len();
        self.records.push(ThreadRecord {
            thread: i as ThreadId,
            created,
            reason,
            exited: None,
        });
        self.os.push(os);
        self.by_os.entry(os).or_default().push(i);
        i
    }

    /// The lane OS thread `os` had at `t`: its last lane created at or
    /// before `t`, else its first.
    fn lane_at(&self, os: u64, t: SimTime) -> Option<usize> {
        let lanes = self.by_os.get(&os)?;
        lanes
            .iter()
            .rev()
            .find(|&&i| self.records[i].created <= t)
            .or(lanes.first())
            .copied()
    }
}

/// Builds the run the renderers draw from a timeline read with
/// [`PoolTimeline::read`] (so that items are finished). `name` is the
/// scenario name shown (the file's name).
pub fn imported_run(t: &PoolTimeline, name: &str) -> ImportedRun {
    let info = t.trace.as_ref();
    let mut events: Vec<(SimTime, TraceEvent)> = Vec::new();
    let mut lanes = Lanes::default();

    // Thread starts and stops.
    for p in &t.thread_count {
        let when = at(p.time_ns);
        if p.change > 0 {
            let reason = thread_reason(p.owed_to.as_deref());
            let lane = lanes.open(p.thread_id, when, reason);
            events.push((
                when,
                TraceEvent::ThreadCreated {
                    thread: lane as ThreadId,
                    reason,
                },
            ));
        } else if let Some(lane) = lanes.lane_at(p.thread_id, when)
            && lanes.records[lane].exited.is_none()
        {
            lanes.records[lane].exited = Some(when);
            events.push((
                when,
                TraceEvent::ThreadExited {
                    thread: lane as ThreadId,
                },
            ));
        }
    }
    // Threads that ran items but never started within the trace.
    for r in &t.items.records {
        if let (Some(os), Some(deq)) = (r.thread, r.dequeued_ns)
            && !lanes.by_os.contains_key(&os)
        {
            let when = at(deq);
            let lane = lanes.open(os, when, ThreadReason::Observed);
            events.push((
                when,
                TraceEvent::ThreadCreated {
                    thread: lane as ThreadId,
                    reason: ThreadReason::Observed,
                },
            ));
        }
    }

    // Threads and goal over time.
    let mut changes: Vec<(i64, Option<u32>, Option<u32>)> = Vec::new();
    if let Some(m) = &t.min_max {
        changes.push((m.time_ns, None, Some(u32::from(m.min_workers))));
    }
    for p in &t.thread_count {
        changes.push((p.time_ns, Some(p.count), None));
    }
    for a in &t.adjustments {
        changes.push((a.time_ns, None, Some(a.new_count)));
        events.push((
            at(a.time_ns),
            TraceEvent::GoalChanged {
                goal: a.new_count,
                reason: a.reason.goal_reason(),
            },
        ));
    }
    changes.sort_by_key(|c| c.0);
    let mut counts: Vec<CountSample> = Vec::new();
    let (mut threads, mut goal) = (0u32, None);
    for (ns, th, g) in changes {
        if let Some(th) = th {
            threads = th;
        }
        if g.is_some() {
            goal = g;
        }
        let when = at(ns);
        match counts.last_mut() {
            Some(last) if last.at == when => {
                last.threads = threads;
                last.goal = goal;
            }
            _ => counts.push(CountSample {
                at: when,
                threads,
                goal,
            }),
        }
    }

    // Work items, in arrival order.
    let mut order: Vec<usize> = (0..t.items.records.len()).collect();
    let arrival = |i: usize| {
        let r = &t.items.records[i];
        r.enqueued_ns.or(r.dequeued_ns).unwrap_or(0)
    };
    order.sort_by_key(|&i| (arrival(i), i));
    let mut items: Vec<ItemRecord> = Vec::with_capacity(order.len());
    for (k, &i) in order.iter().enumerate() {
        let r = &t.items.records[i];
        let item = k as u32;
        let queued = at(arrival(i));
        let started = r.dequeued_ns.map_or(SimTime::MAX, at).max(queued);
        let lane = r
            .thread
            .and_then(|os| lanes.lane_at(os, started))
            .map_or(ThreadId::MAX, |l| l as ThreadId);
        let finished = match (r.ended_ns, started) {
            (_, SimTime::MAX) => SimTime::MAX,
            (Some(e), s) => at(e).max(s),
            (None, _) => SimTime::MAX,
        };
        events.push((
            queued,
            TraceEvent::ItemQueued {
                item,
                local_of: None,
            },
        ));
        if started != SimTime::MAX && lane != ThreadId::MAX {
            events.push((started, TraceEvent::ItemStarted { item, thread: lane }));
            if finished != SimTime::MAX {
                events.push((finished, TraceEvent::ItemFinished { item, thread: lane }));
            }
        }
        items.push(ItemRecord {
            item,
            group: 0,
            thread: lane,
            queued,
            started,
            finished,
        });
    }
    for q in &t.items.queue {
        events.push((at(q.time_ns), TraceEvent::QueueLength { queued: q.queued }));
    }
    events.sort_by_key(|(when, _)| *when);

    let end_ns = info
        .and_then(|i| i.last_event_ns)
        .or(t.last_event_ns)
        .unwrap_or(0);
    let trace = Trace {
        scenario: name.to_string(),
        policy: "recorded".to_string(),
        seed: 0,
        cores: info.map_or(0, |i| i.processors),
        groups: vec![ITEMS_GROUP.to_string()],
        items,
        threads: lanes.records,
        probes: Vec::new(),
        counts,
        cpu_busy_ns: None,
        end: at(end_ns),
    };
    ImportedRun {
        trace,
        events,
        os_threads: lanes.os,
    }
}

/// The Chrome / Perfetto trace of an imported run: what `poolsim run
/// --chrome` writes, plus one instant event per goal adjustment (on the
/// main track) named `goal N (Reason)`, with the goal before and the
/// average throughput the runtime logged.
pub fn chrome_json(run: &ImportedRun, t: &PoolTimeline) -> String {
    let base = chrome_trace_json(&run.trace, Some(&run.events));
    let Some(body) = base.strip_suffix("\n]}\n") else {
        return base;
    };
    let mut out = body.to_string();
    for a in &t.adjustments {
        let reason = match a.reason {
            AdjustmentReason::Other(_) => a.reason.name(),
            known => known.static_name().to_string(),
        };
        let e = json!({
            "name": format!("goal {} ({reason})", a.new_count),
            "cat": "goal",
            "ph": "i",
            "ts": at(a.time_ns).as_nanos() as f64 / 1000.0,
            "pid": 1,
            "tid": 0,
            "s": "p",
            "args": {
                "goal": a.new_count,
                "previous": a.previous_count,
                "reason": reason,
                "average_throughput": a.average_throughput,
            },
        });
        out.push_str(",\n");
        out.push_str(&e.to_string());
    }
    out.push_str("\n]}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_reasons_map_to_thread_reasons() {
        assert_eq!(thread_reason(Some(WITHIN_GOAL)), ThreadReason::Demand);
        assert_eq!(thread_reason(Some("Starvation")), ThreadReason::Starvation);
        assert_eq!(
            thread_reason(Some("ClimbingMove")),
            ThreadReason::HillClimbing
        );
        assert_eq!(
            thread_reason(Some("CooperativeBlocking")),
            ThreadReason::CooperativeBlocking
        );
        assert_eq!(thread_reason(Some("Reason9")), ThreadReason::Observed);
        assert_eq!(thread_reason(None), ThreadReason::Observed);
    }
}
