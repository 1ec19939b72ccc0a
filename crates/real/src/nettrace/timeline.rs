//! The real pool's timeline, built from decoded events: thread count over
//! time, every goal adjustment with its reason, which reason (and which
//! adjustment) the created threads are owed to, the starvation injections,
//! and when each worker waited for work.
//!
//! It keeps one entry per adjustment and per thread start or stop (the
//! output itself), counts samples and statistics, pairs up the work items
//! ([`WorkItems`], bounded) and keeps the workers' waits and wake-ups
//! ([`ActivityPoint`], bounded).
//!
//! # Waiting and awake
//!
//! A .NET 6+ worker writes ThreadPoolWorkerThreadWait (57) when it finds no
//! work and is about to block on the pool's semaphore (dotnet/runtime
//! `PortableThreadPool.WorkerThread.cs`: the semaphore's wait callback,
//! after its spinning); nothing is written when it is released. So a worker
//! is known to be waiting from a wait on, and known to be awake again at the
//! first event it writes itself after it (a dequeue, an enqueue, a
//! hill-climbing sample or adjustment it logs on its way out of an item):
//! the wake-up itself is somewhere before. From its start (50) to its first
//! wait it is awake. Between a wait and the next sign of it, the trace says
//! nothing; a stop (51) after a wait is a wait that timed out.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::Read;

use serde::Serialize;

use super::error::NetTraceError;
use super::events::{AdjustmentReason, PoolEvent, TimedEvent};
use super::items::{ItemEnd, ItemSource, WorkItems};
use super::reader::TraceInfo;

/// The key of [`PoolTimeline::threads_created_by_reason`] for threads
/// created with no goal increase to owe them to: start-up threads up to the
/// minimum, and replacements of exited threads.
pub const WITHIN_GOAL: &str = "WithinGoal";

/// Worker thread ids remembered for the distinct-thread count; more are
/// not counted.
const MAX_DISTINCT_THREADS: usize = 1 << 16;

/// Waits and wake-ups kept ([`PoolTimeline::activity`]); past it none are
/// kept, and [`PoolTimeline::activity_kept_until_ns`] says from when.
pub const MAX_ACTIVITY_POINTS: usize = 1 << 19;

/// The pool's limits (ThreadPoolMinMaxThreads).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct MinMaxThreads {
    pub time_ns: i64,
    pub min_workers: u16,
    pub max_workers: u16,
    pub min_io: u16,
    pub max_io: u16,
}

/// A change of the existing worker threads (a start or a stop).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ThreadCountPoint {
    pub time_ns: i64,
    /// Worker threads existing after the change.
    pub count: u32,
    /// +1 a start, -1 a stop.
    pub change: i8,
    pub thread_id: u64,
    /// For a start: the reason it is owed to (see
    /// [`PoolTimeline::threads_created_by_reason`]).
    pub owed_to: Option<String>,
    /// For a start owed to a goal increase: the index in
    /// [`PoolTimeline::adjustments`] of the adjustment that made it.
    #[serde(skip)]
    pub owed_to_adjustment: Option<usize>,
}

/// A worker seen to begin waiting for work, or seen awake again after a
/// wait (see the module head).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ActivityPoint {
    pub time_ns: i64,
    pub thread_id: u64,
    /// True: it began waiting (ThreadPoolWorkerThreadWait); false: it wrote
    /// an event after a wait, so it was awake again by then.
    pub waiting: bool,
}

/// Whether an adjustment raised, lowered or kept the goal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum GoalChange {
    Raised,
    Lowered,
    Kept,
    /// The first goal seen, with no earlier goal or minimum to compare.
    First,
}

/// One ThreadPoolWorkerThreadAdjustmentAdjustment.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Adjustment {
    pub time_ns: i64,
    pub new_count: u32,
    /// The goal before (the previous adjustment's, else the minimum).
    pub previous_count: Option<u32>,
    pub change: GoalChange,
    pub reason: AdjustmentReason,
    pub average_throughput: f64,
}

/// A goal increase by the starvation rule (or cooperative blocking).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Injection {
    pub time_ns: i64,
    pub new_count: u32,
    pub previous_count: Option<u32>,
}

/// What a trace says the pool did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PoolTimeline {
    /// The trace's header and reader counts (set by [`PoolTimeline::read`]).
    pub trace: Option<TraceInfo>,
    /// Time of the first and last decoded thread-pool event.
    pub first_event_ns: Option<i64>,
    pub last_event_ns: Option<i64>,
    /// The last ThreadPoolMinMaxThreads.
    pub min_max: Option<MinMaxThreads>,
    /// Most worker threads existing at once (ActiveWorkerThreadCount of
    /// the start, stop and wait events).
    pub peak_threads: u32,
    /// When the peak was first reached.
    pub peak_threads_at_ns: Option<i64>,
    pub threads_started: u64,
    pub threads_stopped: u64,
    /// Distinct OS threads that started or waited as pool workers.
    pub distinct_worker_threads: u64,
    /// Every start and stop, in time order.
    pub thread_count: Vec<ThreadCountPoint>,
    /// Every goal adjustment, in time order.
    pub adjustments: Vec<Adjustment>,
    /// Sum of the goal increases, by reason name.
    pub goal_raised_by_reason: BTreeMap<String, u64>,
    /// Thread starts, each owed to the oldest goal increase not yet used
    /// by a start ([`WITHIN_GOAL`] when there is none).
    pub threads_created_by_reason: BTreeMap<String, u64>,
    /// Adjustments by reason name.
    pub adjustments_by_reason: BTreeMap<String, u64>,
    /// Goal increases with reason Starvation.
    pub starvation_injections: Vec<Injection>,
    /// Goal increases with reason CooperativeBlocking.
    pub cooperative_blocking_injections: Vec<Injection>,
    /// The goal after the last adjustment.
    pub final_goal: Option<u32>,
    pub throughput_samples: u64,
    pub stats_events: u64,
    pub max_working_threads: Option<u32>,
    /// Distinct work items queued and taken (set from [`Self::items`] by
    /// [`PoolTimeline::finish`]).
    pub enqueued: u64,
    pub dequeued: u64,
    /// The work items, paired up.
    pub items: WorkItems,
    /// Every worker's waits and its first sign of life after each, in time
    /// order (at most [`MAX_ACTIVITY_POINTS`]); a start makes a worker
    /// awake, a stop ends it (both in [`Self::thread_count`]).
    #[serde(skip)]
    pub activity: Vec<ActivityPoint>,
    /// When the first activity point that was not kept came, if one was
    /// not: from then on the points say nothing.
    #[serde(skip)]
    pub activity_kept_until_ns: Option<i64>,
    /// Unused goal increases: reason, threads still owed, adjustment index.
    #[serde(skip)]
    credits: VecDeque<(AdjustmentReason, u32, usize)>,
    #[serde(skip)]
    workers: BTreeSet<u64>,
    /// The workers waiting since their last wait.
    #[serde(skip)]
    waiting: BTreeSet<u64>,
}

fn bump(map: &mut BTreeMap<String, u64>, key: String, by: u64) {
    let v = map.entry(key).or_insert(0);
    *v = v.saturating_add(by);
}

impl PoolTimeline {
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads a trace and builds its timeline.
    pub fn read<R: Read>(r: R) -> Result<Self, NetTraceError> {
        let mut t = PoolTimeline::new();
        let info = super::read_events(r, |e| t.push(&e))?;
        t.finish(info.last_event_ns);
        t.trace = Some(info);
        Ok(t)
    }

    /// Builds a timeline from events in time order.
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a TimedEvent>) -> Self {
        let mut t = PoolTimeline::new();
        for e in events {
            t.push(e);
        }
        let end = t.last_event_ns;
        t.finish(end);
        t
    }

    /// The trace ended at `end_ns` (its last event of any provider): items
    /// still running end there; the item counts are filled in.
    pub fn finish(&mut self, end_ns: Option<i64>) {
        self.items.finish(end_ns);
        self.enqueued = self.items.enqueued;
        self.dequeued = self.items.dequeued;
    }

    /// The goal before an adjustment: the last one's, else the minimum.
    fn current_goal(&self) -> Option<u32> {
        self.final_goal
            .or_else(|| self.min_max.map(|m| u32::from(m.min_workers)))
    }

    fn see_count(&mut self, active: u32, time_ns: i64) {
        if active > self.peak_threads {
            self.peak_threads = active;
            self.peak_threads_at_ns = Some(time_ns);
        }
    }

    fn see_worker(&mut self, thread: u64) {
        if self.workers.len() < MAX_DISTINCT_THREADS && self.workers.insert(thread) {
            self.distinct_worker_threads += 1;
        }
    }

    /// Keeps an activity point while there is room.
    fn note_activity(&mut self, time_ns: i64, thread_id: u64, waiting: bool) {
        if self.activity_kept_until_ns.is_some() {
            return;
        }
        if self.activity.len() >= MAX_ACTIVITY_POINTS {
            self.activity_kept_until_ns = Some(time_ns);
            return;
        }
        self.activity.push(ActivityPoint {
            time_ns,
            thread_id,
            waiting,
        });
    }

    /// A worker's state as event `e` shows it: a wait begins waiting, any
    /// other event it writes after a wait shows it awake. Every wait is
    /// kept, a repeated one too: a .NET 6+ worker writes a wait each time
    /// it blocks on the pool's semaphore and nothing when it wakes, so a
    /// second wait with nothing between is either a wait that timed out and
    /// waits again, or a wake-up, work and a new wait (the charts draw it
    /// as waiting; `infer` reads the work between).
    fn see_activity(&mut self, e: &TimedEvent) {
        let thread = e.thread_id;
        match e.event {
            PoolEvent::WorkerThreadWait { .. } => {
                self.waiting.insert(thread);
                self.note_activity(e.time_ns, thread, true);
            }
            PoolEvent::WorkerThreadStart { .. } | PoolEvent::WorkerThreadStop { .. } => {
                self.waiting.remove(&thread);
            }
            _ => {
                if self.waiting.remove(&thread) {
                    self.note_activity(e.time_ns, thread, false);
                }
            }
        }
    }

    /// Adds one event (events must come in time order).
    pub fn push(&mut self, e: &TimedEvent) {
        let t = e.time_ns;
        self.first_event_ns = Some(self.first_event_ns.map_or(t, |f| f.min(t)));
        self.last_event_ns = Some(self.last_event_ns.map_or(t, |l| l.max(t)));
        self.see_activity(e);
        match e.event {
            PoolEvent::WorkerThreadStart { active, .. } => {
                self.threads_started += 1;
                self.see_count(active, t);
                self.see_worker(e.thread_id);
                let (reason, adjustment) = match self.credits.front_mut() {
                    Some((reason, n, index)) => {
                        let (r, i) = (*reason, *index);
                        *n -= 1;
                        if *n == 0 {
                            self.credits.pop_front();
                        }
                        (r.name(), Some(i))
                    }
                    None => (WITHIN_GOAL.to_string(), None),
                };
                bump(&mut self.threads_created_by_reason, reason.clone(), 1);
                self.thread_count.push(ThreadCountPoint {
                    time_ns: t,
                    count: active,
                    change: 1,
                    thread_id: e.thread_id,
                    owed_to: Some(reason),
                    owed_to_adjustment: adjustment,
                });
            }
            PoolEvent::WorkerThreadStop { active, .. } => {
                self.items.thread_free(e.thread_id, t, ItemEnd::ThreadStop);
                self.threads_stopped += 1;
                self.see_count(active, t);
                self.thread_count.push(ThreadCountPoint {
                    time_ns: t,
                    count: active,
                    change: -1,
                    thread_id: e.thread_id,
                    owed_to: None,
                    owed_to_adjustment: None,
                });
            }
            PoolEvent::WorkerThreadWait { active, .. } => {
                self.items.thread_free(e.thread_id, t, ItemEnd::ThreadWait);
                self.see_count(active, t);
                self.see_worker(e.thread_id);
            }
            PoolEvent::Adjustment {
                average_throughput,
                new_count,
                reason,
            } => {
                let previous = self.current_goal();
                let change = match previous {
                    None => GoalChange::First,
                    Some(p) if new_count > p => GoalChange::Raised,
                    Some(p) if new_count < p => GoalChange::Lowered,
                    Some(_) => GoalChange::Kept,
                };
                match (change, previous) {
                    (GoalChange::Raised, Some(p)) => {
                        let up = new_count - p;
                        bump(
                            &mut self.goal_raised_by_reason,
                            reason.name(),
                            u64::from(up),
                        );
                        let index = self.adjustments.len();
                        self.credits.push_back((reason, up, index));
                        let injection = Injection {
                            time_ns: t,
                            new_count,
                            previous_count: previous,
                        };
                        match reason {
                            AdjustmentReason::Starvation => {
                                self.starvation_injections.push(injection)
                            }
                            AdjustmentReason::CooperativeBlocking => {
                                self.cooperative_blocking_injections.push(injection)
                            }
                            _ => {}
                        }
                    }
                    (GoalChange::Lowered, Some(p)) => {
                        // A lower goal withdraws the newest unused increases.
                        let mut down = p - new_count;
                        while down > 0 {
                            let Some((_, n, _)) = self.credits.back_mut() else {
                                break;
                            };
                            let k = (*n).min(down);
                            *n -= k;
                            down -= k;
                            if *n == 0 {
                                self.credits.pop_back();
                            }
                        }
                    }
                    _ => {}
                }
                bump(&mut self.adjustments_by_reason, reason.name(), 1);
                self.adjustments.push(Adjustment {
                    time_ns: t,
                    new_count,
                    previous_count: previous,
                    change,
                    reason,
                    average_throughput,
                });
                self.final_goal = Some(new_count);
            }
            PoolEvent::AdjustmentSample { .. } => self.throughput_samples += 1,
            PoolEvent::AdjustmentStats(_) => self.stats_events += 1,
            PoolEvent::MinMaxThreads {
                min_workers,
                max_workers,
                min_io,
                max_io,
            } => {
                self.min_max = Some(MinMaxThreads {
                    time_ns: t,
                    min_workers,
                    max_workers,
                    min_io,
                    max_io,
                });
            }
            PoolEvent::WorkingThreadCount { count } => {
                self.max_working_threads =
                    Some(self.max_working_threads.map_or(count, |m| m.max(count)));
            }
            PoolEvent::Enqueue { work_id } => {
                self.items
                    .enqueue(ItemSource::Runtime, work_id, t, e.thread_id)
            }
            PoolEvent::Dequeue { work_id } => {
                self.items
                    .dequeue(ItemSource::Runtime, work_id, t, e.thread_id)
            }
            PoolEvent::EnqueueWork { work_id } => {
                self.items
                    .enqueue(ItemSource::FrameworkEventSource, work_id, t, e.thread_id)
            }
            PoolEvent::DequeueWork { work_id } => {
                self.items
                    .dequeue(ItemSource::FrameworkEventSource, work_id, t, e.thread_id)
            }
        }
    }

    /// Span from the first to the last thread-pool event.
    pub fn duration_ns(&self) -> i64 {
        match (self.first_event_ns, self.last_event_ns) {
            (Some(f), Some(l)) => l.saturating_sub(f),
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(time_ms: i64, thread_id: u64, event: PoolEvent) -> TimedEvent {
        TimedEvent {
            time_ns: time_ms * 1_000_000,
            qpc: time_ms,
            thread_id,
            clr_instance_id: Some(0),
            event,
        }
    }

    fn adj(new_count: u32, reason: u32) -> PoolEvent {
        PoolEvent::Adjustment {
            average_throughput: 1.0,
            new_count,
            reason: AdjustmentReason::from_code(reason),
        }
    }

    fn start(active: u32) -> PoolEvent {
        PoolEvent::WorkerThreadStart { active, retired: 0 }
    }

    #[test]
    fn creations_are_owed_to_the_raise_before_them() {
        let events = [
            ev(
                0,
                1,
                PoolEvent::MinMaxThreads {
                    min_workers: 2,
                    max_workers: 100,
                    min_io: 2,
                    max_io: 100,
                },
            ),
            ev(1, 10, start(1)),
            ev(1, 11, start(2)),
            ev(500, 1, adj(3, 6)),
            ev(501, 12, start(3)),
            ev(1000, 1, adj(4, 6)),
            ev(1001, 13, start(4)),
            ev(1500, 1, adj(6, 3)),
            ev(1600, 1, adj(5, 3)),
            ev(1601, 14, start(5)),
            ev(
                1700,
                14,
                PoolEvent::WorkerThreadStop {
                    active: 4,
                    retired: 0,
                },
            ),
            ev(1800, 15, start(5)),
        ];
        let t = PoolTimeline::from_events(&events);
        assert_eq!(t.peak_threads, 5);
        assert_eq!(t.peak_threads_at_ns, Some(1601 * 1_000_000));
        assert_eq!(t.threads_started, 6);
        assert_eq!(t.threads_stopped, 1);
        assert_eq!(t.starvation_injections.len(), 2);
        assert_eq!(t.adjustments[0].previous_count, Some(2));
        assert_eq!(t.adjustments[0].change, GoalChange::Raised);
        assert_eq!(t.adjustments[3].change, GoalChange::Lowered);
        assert_eq!(t.goal_raised_by_reason["Starvation"], 2);
        assert_eq!(t.goal_raised_by_reason["ClimbingMove"], 2);
        assert_eq!(t.threads_created_by_reason["Starvation"], 2);
        // Raised by 2, lowered by 1: one climbing thread, then a replacement.
        assert_eq!(t.threads_created_by_reason["ClimbingMove"], 1);
        assert_eq!(t.threads_created_by_reason[WITHIN_GOAL], 3);
        assert_eq!(t.final_goal, Some(5));
        assert_eq!(t.distinct_worker_threads, 6);
        // Which adjustment each start is owed to: the two Starvation raises,
        // the ClimbingMove raise (one of its two left after the lowering),
        // then none (a replacement within the goal).
        let owed: Vec<Option<usize>> = t
            .thread_count
            .iter()
            .filter(|p| p.change > 0)
            .map(|p| p.owed_to_adjustment)
            .collect();
        assert_eq!(owed, vec![None, None, Some(0), Some(1), Some(2), None]);
    }

    #[test]
    fn waits_and_the_first_sign_of_life_after_each_are_kept() {
        let wait = PoolEvent::WorkerThreadWait {
            active: 1,
            retired: 0,
        };
        let events = [
            ev(1, 10, start(1)),
            ev(100, 10, wait),
            // A repeated wait (timed out and waiting again, or woke, ran
            // work and waits again): kept.
            ev(150, 10, wait),
            // A dequeue on the thread: it was awake again by then.
            ev(300, 10, PoolEvent::DequeueWork { work_id: 5 }),
            // A worker with no start in the trace, known by its wait.
            ev(400, 11, wait),
            // Awake already: no point.
            ev(500, 10, PoolEvent::AdjustmentSample { throughput: 1.0 }),
            ev(600, 10, wait),
            ev(
                700,
                10,
                PoolEvent::WorkerThreadStop {
                    active: 1,
                    retired: 0,
                },
            ),
            // The gate thread's adjustment is no worker's sign of life.
            ev(800, 20, adj(3, 6)),
            ev(801, 12, start(2)),
        ];
        let t = PoolTimeline::from_events(&events);
        let points: Vec<(i64, u64, bool)> = t
            .activity
            .iter()
            .map(|p| (p.time_ns / 1_000_000, p.thread_id, p.waiting))
            .collect();
        assert_eq!(
            points,
            vec![
                (100, 10, true),
                (150, 10, true),
                (300, 10, false),
                (400, 11, true),
                (600, 10, true)
            ]
        );
        assert_eq!(t.activity_kept_until_ns, None);
        assert_eq!(t.thread_count.last().unwrap().owed_to_adjustment, None);
    }
}
