//! A recorded trace as a run: the [`Trace`] and detail events that
//! `poolsim run`'s renderers (Gantt PNG/SVG, HTML report, Chrome trace)
//! already draw, and the runtime's goal adjustments as the charts mark them
//! ([`ImportedRun::timeline`]).
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
//!   gets a lane from its first item on, reason observed, and one that only
//!   waits from its first wait or sign of life. A stop (51) closes the lane.
//! - Counts: the threads existing (the start and stop events' active count)
//!   and the goal (the minimum from ThreadPoolMinMaxThreads, then every
//!   adjustment's new count) as a step series; each adjustment is also a
//!   [`TraceEvent::GoalChanged`] with the runtime's reason name.
//! - Adjustments: each ThreadPoolWorkerThreadAdjustmentAdjustment (55) is a
//!   [`RecordedAdjustment`]: its reason, the goal before and after, and the
//!   threads whose starts are owed to its increase
//!   ([`ThreadCountPoint::owed_to_adjustment`](super::ThreadCountPoint)).
//!   [`ImportedRun::timeline`] marks each in the decisions strip (a
//!   Starvation raise on the gate row, as a simulated gate tick that
//!   injected) with its line, which is also the lane's reason why of each
//!   thread started for it; the Chrome trace puts the same line on the
//!   decisions track and in each such thread's creation.
//! - What each thread did, as far as the trace tells:
//!   - with item events (recorded with FrameworkEventSource, or the native
//!     pool's 61/62): the items, queued at their enqueue (an item with no
//!     enqueue: at its dequeue), started at their dequeue on the lane of
//!     the dequeuing thread, finished when the thread was next seen free
//!     ([`crate::nettrace::WorkItems`]); never dequeued: not started. The
//!     queue length is a [`TraceEvent::QueueLength`] series. The trace does
//!     not say what an item did, so each is one segment ("item running
//!     (phases not recorded)"), as for a measured run.
//!   - without item events: the workers' waits
//!     ([`PoolTimeline::activity`]). A thread is busy from its start, or
//!     from its first sign of life after a wait, to its next wait (57), its
//!     stop or the trace's end, drawn as [`Phase::Internal`]: the phase the
//!     charts give busy time that belongs to no work item, which claims no
//!     CPU (the trace does not say whether the thread computed, slept or
//!     blocked in its items). From a wait to its next sign of life it is
//!     not drawn: it was waiting, then woke at a time the trace does not
//!     give. If the activity points ran out
//!     ([`MAX_ACTIVITY_POINTS`](super::MAX_ACTIVITY_POINTS)), no
//!     bar goes past the first one not kept.
//!
//! Times are nanoseconds from the trace's start (its sync time); an event
//! before it is put at 0.

use std::collections::HashMap;

use serde_json::json;

use crate::render::Timeline;
use crate::render::chrome::{DECISIONS_TID, chrome_trace_json};
use crate::render::decisions::RecordedAdjustment;
use crate::time::SimTime;
use crate::trace::{
    CountSample, ItemRecord, Phase, ThreadId, ThreadReason, ThreadRecord, Trace, TraceEvent,
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
    /// The runtime's goal adjustments, in time order.
    pub adjustments: Vec<RecordedAdjustment>,
    /// Whether the lanes come from the workers' waits (the trace has no
    /// item events; see the module head).
    pub from_waits: bool,
}

impl ImportedRun {
    /// The timeline the charts draw: [`Timeline::build_recorded`] of the
    /// run, its adjustments marked with their reasons.
    pub fn timeline(&self) -> Timeline {
        Timeline::build_recorded(&self.trace, Some(&self.events), &self.adjustments)
    }
}

/// A thread phase event.
fn phase(thread: usize, phase: Phase) -> TraceEvent {
    TraceEvent::ThreadPhase {
        thread: thread as ThreadId,
        phase,
        item: None,
        group: None,
    }
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
    // Without item events, the lanes show the waits (see the module head).
    let from_waits = t.items.is_empty();
    // Per adjustment, the lanes started for it.
    let mut created: Vec<Vec<(ThreadId, SimTime)>> = vec![Vec::new(); t.adjustments.len()];

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
            // (Past the activity points kept, its waits are not known.)
            if from_waits && t.activity_kept_until_ns.is_none_or(|u| p.time_ns < u) {
                events.push((when, phase(lane, Phase::Internal)));
            }
            if let Some(list) = p.owed_to_adjustment.and_then(|i| created.get_mut(i)) {
                list.push((lane as ThreadId, when));
            }
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

    // Threads that only wait or write other events, never started within
    // the trace; then, without item events, each wait and wake-up.
    for p in &t.activity {
        if !lanes.by_os.contains_key(&p.thread_id) {
            let when = at(p.time_ns);
            let lane = lanes.open(p.thread_id, when, ThreadReason::Observed);
            events.push((
                when,
                TraceEvent::ThreadCreated {
                    thread: lane as ThreadId,
                    reason: ThreadReason::Observed,
                },
            ));
        }
    }
    if from_waits {
        for p in &t.activity {
            let when = at(p.time_ns);
            let Some(lane) = lanes.lane_at(p.thread_id, when) else {
                continue;
            };
            if lanes.records[lane].exited.is_some_and(|x| x <= when) {
                continue;
            }
            let next = if p.waiting {
                Phase::Idle
            } else {
                Phase::Internal
            };
            events.push((when, phase(lane, next)));
        }
        // Past the points kept, the trace's waits are not known: no bar.
        if let Some(until) = t.activity_kept_until_ns {
            let when = at(until);
            for (lane, r) in lanes.records.iter().enumerate() {
                if r.created <= when && r.exited.is_none_or(|x| x > when) {
                    events.push((when, phase(lane, Phase::Idle)));
                }
            }
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
        // A trace without item events has no group to show.
        groups: if items.is_empty() {
            Vec::new()
        } else {
            vec![ITEMS_GROUP.to_string()]
        },
        call_groups: Vec::new(),
        items,
        threads: lanes.records,
        probes: Vec::new(),
        counts,
        cpu_busy_ns: None,
        end: at(end_ns),
    };
    let adjustments = t
        .adjustments
        .iter()
        .zip(created)
        .map(|(a, created)| RecordedAdjustment {
            at: at(a.time_ns),
            previous: a.previous_count,
            goal: a.new_count,
            reason: a.reason.goal_reason(),
            name: a.reason.name(),
            raises: thread_reason(Some(&a.reason.name())),
            created,
        })
        .collect();
    ImportedRun {
        trace,
        events,
        os_threads: lanes.os,
        adjustments,
        from_waits,
    }
}

/// The Chrome / Perfetto trace of an imported run: what `poolsim run
/// --chrome` writes, each thread's creation with the reason why the charts
/// give ([`ImportedRun::timeline`]: the line of the adjustment it was
/// started for), and on the decisions track one instant event per goal
/// adjustment named `goal N (Reason)`, with the goal before, the average
/// throughput the runtime logged and the adjustment's line.
pub fn chrome_json(run: &ImportedRun, t: &PoolTimeline) -> String {
    let base = chrome_trace_json(&run.trace, Some(&run.events));
    let Some(body) = base.strip_suffix("\n]}\n") else {
        return base;
    };
    let timeline = run.timeline();
    // The whys the base wrote (Timeline::build's), and the recorded ones.
    let plain = Timeline::build(&run.trace, Some(&run.events));
    let mut out = String::with_capacity(body.len() + 512 * t.adjustments.len());
    for (i, line) in body.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&with_recorded_why(line, &plain, &timeline));
    }
    for (a, r) in t.adjustments.iter().zip(&run.adjustments) {
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
            "tid": DECISIONS_TID,
            "s": "t",
            "args": {
                "goal": a.new_count,
                "previous": a.previous_count,
                "reason": reason,
                "average_throughput": a.average_throughput,
                "why": r.line(),
            },
        });
        out.push_str(",\n");
        out.push_str(&e.to_string());
    }
    out.push_str("\n]}\n");
    out
}

/// A line of the base Chrome trace, with a thread creation's reason why
/// replaced by the recorded timeline's where they differ.
fn with_recorded_why(line: &str, plain: &Timeline, recorded: &Timeline) -> String {
    if !line.starts_with("{\"name\":\"thread created (") {
        return line.to_string();
    }
    let json = line.strip_suffix(',').unwrap_or(line);
    let Ok(event) = serde_json::from_str::<serde_json::Value>(json) else {
        return line.to_string();
    };
    let Some(thread) = event["args"]["thread"].as_u64() else {
        return line.to_string();
    };
    let why = |t: &Timeline| {
        t.lanes
            .get(thread as usize)
            .and_then(|l| l.why.as_deref())
            .map(|w| serde_json::Value::from(w).to_string())
    };
    match (why(plain), why(recorded)) {
        (Some(old), Some(new)) if old != new => {
            line.replacen(&format!("\"why\":{old}"), &format!("\"why\":{new}"), 1)
        }
        _ => line.to_string(),
    }
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

    use super::super::events::{PoolEvent, TimedEvent};
    use crate::render::SegmentSource;

    fn ev(time_ms: i64, thread_id: u64, event: PoolEvent) -> TimedEvent {
        TimedEvent {
            time_ns: time_ms * 1_000_000,
            qpc: time_ms,
            thread_id,
            clr_instance_id: Some(0),
            event,
        }
    }

    const WAIT: PoolEvent = PoolEvent::WorkerThreadWait {
        active: 2,
        retired: 0,
    };

    /// Two start-up threads, a Starvation raise and the thread started for
    /// it; thread 10 waits, is seen again (it logs a sample), waits and
    /// stops; thread 30 only waits.
    fn waits() -> Vec<TimedEvent> {
        let start = |active| PoolEvent::WorkerThreadStart { active, retired: 0 };
        vec![
            ev(
                0,
                1,
                PoolEvent::MinMaxThreads {
                    min_workers: 2,
                    max_workers: 100,
                    min_io: 1,
                    max_io: 100,
                },
            ),
            ev(10, 10, start(1)),
            ev(11, 11, start(2)),
            ev(100, 10, WAIT),
            ev(250, 30, WAIT),
            ev(300, 10, PoolEvent::AdjustmentSample { throughput: 2.0 }),
            ev(
                500,
                2,
                PoolEvent::Adjustment {
                    average_throughput: 0.5,
                    new_count: 3,
                    reason: AdjustmentReason::Starvation,
                },
            ),
            ev(501, 12, start(3)),
            ev(700, 10, WAIT),
            ev(
                900,
                10,
                PoolEvent::WorkerThreadStop {
                    active: 2,
                    retired: 0,
                },
            ),
            ev(1000, 11, WAIT),
        ]
    }

    fn busy(t: &Timeline) -> Vec<Vec<(u64, u64, Phase)>> {
        t.lanes
            .iter()
            .map(|l| {
                l.segments
                    .iter()
                    .map(|s| (s.start.0 / 1_000_000, s.end.0 / 1_000_000, s.phase))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn without_items_a_thread_is_busy_from_its_start_or_wake_up_to_its_next_wait() {
        let mut t = PoolTimeline::from_events(&waits());
        t.finish(Some(1_200_000_000));
        let run = imported_run(&t, "waits");
        assert!(run.from_waits);
        assert!(run.trace.groups.is_empty());
        // Lanes: 10, 11, 12 (started), then 30 (seen waiting, no start).
        assert_eq!(run.os_threads, vec![10, 11, 12, 30]);
        assert_eq!(run.trace.threads[3].reason, ThreadReason::Observed);
        let tl = run.timeline();
        assert_eq!(tl.source, SegmentSource::Phases);
        let p = Phase::Internal;
        assert_eq!(
            busy(&tl),
            vec![
                // Waiting 100 to 300 (the sample shows it awake), then
                // busy to its next wait; waiting until its stop.
                vec![(10, 100, p), (300, 700, p)],
                vec![(11, 1000, p)],
                // Never waited: busy to the trace's end.
                vec![(501, 1000, p)],
                vec![],
            ]
        );
        // The Starvation raise: on the gate row, with the thread it started.
        assert_eq!(tl.decisions.len(), 1);
        let d = &tl.decisions[0];
        assert_eq!(d.at, SimTime::from_ms(500));
        assert!(d.raised && d.starved);
        assert_eq!(d.reason, Some(ThreadReason::Starvation));
        assert_eq!(d.goal, Some((2, 3)));
        assert!(
            d.text
                .ends_with("-> Starvation: goal 2 -> 3, thread 2 created 1.00 ms later"),
            "{}",
            d.text
        );
        assert_eq!(tl.lanes[2].why.as_deref(), Some(d.text.as_str()));
        assert_eq!(tl.goals.len(), 1);
        assert_eq!(tl.goals[0].why.as_deref(), Some(d.text.as_str()));
    }

    #[test]
    fn no_bar_goes_past_the_last_activity_point_kept() {
        let mut t = PoolTimeline::from_events(&waits());
        t.finish(Some(1_200_000_000));
        // As if the budget ran out at 200 ms: the points from then on gone.
        t.activity.retain(|p| p.time_ns < 200_000_000);
        t.activity_kept_until_ns = Some(200_000_000);
        let tl = imported_run(&t, "waits").timeline();
        let p = Phase::Internal;
        // Thread 12 starts after the cut, thread 30's wait is not kept.
        assert_eq!(
            busy(&tl),
            vec![vec![(10, 100, p)], vec![(11, 200, p)], vec![]]
        );
    }

    #[test]
    fn with_item_events_the_lanes_are_the_items() {
        let mut events = waits();
        events.insert(4, ev(120, 11, PoolEvent::EnqueueWork { work_id: 7 }));
        events.insert(5, ev(130, 10, PoolEvent::DequeueWork { work_id: 7 }));
        let mut t = PoolTimeline::from_events(&events);
        t.finish(Some(1_200_000_000));
        let run = imported_run(&t, "items");
        assert!(!run.from_waits);
        let tl = run.timeline();
        assert_eq!(tl.source, SegmentSource::Items);
        // The item runs from its dequeue to its thread's next wait; no other
        // bar (the waits' busy stretches are not drawn beside items).
        assert_eq!(busy(&tl)[0], vec![(130, 700, Phase::Cpu)]);
        assert_eq!(tl.segment_count(), 1);
    }
}
