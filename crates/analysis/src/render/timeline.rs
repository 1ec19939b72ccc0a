//! A renderer-neutral timeline of one run: what each pool thread did when,
//! why each thread was created, thread counts, queue length and probes.
//!
//! Built from a [`Trace`] and, when the run was traced in detail, its
//! [`TraceEvent`]s. With detail events every phase of every thread becomes a
//! segment (CPU, spin, sleep, waiting for a timer callback, pool-internal
//! work, thread start-up). Without them (a measured trace, or a run traced
//! with the null sink) each item becomes one segment, from its start to its
//! end on the thread that started it, so simulated and measured runs render
//! through the same code. The Gantt chart and the Chrome trace both read
//! this structure.
//!
//! A thread's start-up or wake-up that finds no work (it goes straight back
//! to waiting) makes no segment: an idle worker woken for a request another
//! thread took is not drawn as "starting" every time.
//!
//! The pool's decisions come from the same events, in `poolsim explain`'s
//! words ([`super::decisions`]): the gate (monitor) ticks, hill-climbing
//! samples and cooperative-blocking steps, each goal change with its
//! reason, and for each lane the sentence of the decision that created its
//! thread. Each item's queued, started and finished times are kept for the
//! charts' tooltips while the run has at most [`ITEM_TIMES_BUDGET`] items.
//! A recorded trace, which has no decision events, gives its goal
//! adjustments instead ([`Timeline::build_recorded`]): each is marked with
//! its reason, and the threads started for it say so.

use crate::time::{SimDuration, SimTime};
use crate::trace::{ItemId, Phase, ThreadId, ThreadReason, Trace, TraceEvent};

use super::decisions::{DecisionLines, DecisionMark, GoalMark, RecordedAdjustment};

/// One stretch of time a thread spent in one phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub start: SimTime,
    pub end: SimTime,
    /// The work item the thread was running, if any.
    pub item: Option<ItemId>,
    /// Index into [`Timeline::groups`] of that item's group.
    pub group: Option<u32>,
    pub phase: Phase,
}

/// One pool thread's row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lane {
    pub thread: ThreadId,
    pub created: SimTime,
    pub reason: ThreadReason,
    pub exited: Option<SimTime>,
    /// Non-idle segments in start order; never empty-length.
    pub segments: Vec<Segment>,
    /// Why the thread exists: `poolsim explain`'s sentence for the decision
    /// that created it (or for its creation alone), when the run's detail
    /// events say.
    pub why: Option<String>,
}

/// A thread creation and why it happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadMark {
    pub at: SimTime,
    pub thread: ThreadId,
    pub reason: ThreadReason,
}

/// Thread counts from `at` until the next point (a step series).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CountPoint {
    pub at: SimTime,
    /// Threads that exist.
    pub threads: u32,
    /// The policy's thread goal, when known.
    pub goal: Option<u32>,
}

/// Queue length from `at` until the next point (a step series).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueuePoint {
    pub at: SimTime,
    pub queued: u64,
}

/// One responsiveness probe: queued by the main thread, run by the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeMark {
    pub queued: SimTime,
    /// `None` when the probe never ran.
    pub started: Option<SimTime>,
}

impl ProbeMark {
    /// Time from queueing to running (`None` when it never ran).
    pub fn latency(&self) -> Option<SimDuration> {
        self.started.map(|s| s.since(self.queued))
    }
}

/// One item's life, for the charts' tooltips.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItemTimes {
    pub item: ItemId,
    /// The thread that started it.
    pub thread: ThreadId,
    pub queued: SimTime,
    pub started: SimTime,
    /// `None` when the run stopped before it finished.
    pub finished: Option<SimTime>,
}

/// The most items whose times a timeline keeps ([`Timeline::item_times`]):
/// a run with more keeps none (some 8 MB at most).
pub const ITEM_TIMES_BUDGET: usize = 1 << 18;

/// Where the segments came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentSource {
    /// Thread phase events: segments carry the real phase.
    Phases,
    /// Item records only: one segment per item, its phase shown as
    /// [`Phase::Cpu`] ("running"), as the trace does not say more.
    Items,
}

/// Everything a chart of one run shows, in simulated time.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    pub scenario: String,
    pub policy: String,
    pub seed: u64,
    pub cores: u32,
    pub groups: Vec<String>,
    /// Work items in the run.
    pub items: usize,
    /// Items that had not finished when the run stopped (a time limit, a
    /// stall): the chart then says where it stopped, not where the "last
    /// item ends".
    pub unfinished: usize,
    /// When the run ended (at least the end of the last segment).
    pub end: SimTime,
    pub source: SegmentSource,
    /// One lane per thread, in thread-id order.
    pub lanes: Vec<Lane>,
    /// Thread creations in time order.
    pub creations: Vec<ThreadMark>,
    /// Existing threads and goal over time.
    pub threads: Vec<CountPoint>,
    /// Queue length over time (empty without detail events).
    pub queue: Vec<QueuePoint>,
    pub probes: Vec<ProbeMark>,
    /// The pool's gate (monitor) ticks, hill-climbing samples,
    /// cooperative-blocking steps and thread exits, in time order (empty
    /// without detail events).
    pub decisions: Vec<DecisionMark>,
    /// Every change of the policy's thread goal, with its reason, in time
    /// order (empty without detail events).
    pub goals: Vec<GoalMark>,
    /// The started items' times, in item order; empty past
    /// [`ITEM_TIMES_BUDGET`] items.
    pub item_times: Vec<ItemTimes>,
}

impl Timeline {
    /// Builds the timeline of `trace`, using the detail `events` recorded by
    /// an [`EventLog`](crate::trace::EventLog) when given (and when they
    /// contain thread phases).
    pub fn build(trace: &Trace, events: Option<&[(SimTime, TraceEvent)]>) -> Timeline {
        let events = events.unwrap_or(&[]);
        let has_phases = events
            .iter()
            .any(|(_, e)| matches!(e, TraceEvent::ThreadPhase { .. }));
        let mut lanes: Vec<Lane> = trace
            .threads
            .iter()
            .map(|t| Lane {
                thread: t.thread,
                created: t.created,
                reason: t.reason,
                exited: t.exited,
                segments: Vec::new(),
                why: None,
            })
            .collect();
        let end_hint = trace_end(trace);
        let source = if has_phases {
            segments_from_phases(events, &mut lanes, end_hint);
            SegmentSource::Phases
        } else {
            segments_from_items(trace, &mut lanes, end_hint);
            SegmentSource::Items
        };
        let mut creations: Vec<ThreadMark> = trace
            .threads
            .iter()
            .map(|t| ThreadMark {
                at: t.created,
                thread: t.thread,
                reason: t.reason,
            })
            .collect();
        creations.sort_by_key(|m| (m.at, m.thread));
        let threads = trace
            .counts
            .iter()
            .map(|c| CountPoint {
                at: c.at,
                threads: c.threads,
                goal: c.goal,
            })
            .collect();
        let queue = queue_series(events);
        let probes: Vec<ProbeMark> = trace
            .probes
            .iter()
            .map(|p| ProbeMark {
                queued: p.queued,
                started: (p.started != SimTime::MAX).then_some(p.started),
            })
            .collect();
        let mut end = end_hint;
        for lane in &lanes {
            if let Some(s) = lane.segments.last() {
                end = end.max(s.end);
            }
        }
        for p in &probes {
            end = end.max(p.started.unwrap_or(p.queued));
        }
        let mut decisions = DecisionLines::default();
        for (at, event) in events {
            decisions.event(*at, event);
        }
        let (decisions, goals, whys) = decisions.finish();
        for (thread, why) in whys {
            if let Some(lane) = lanes.get_mut(thread as usize) {
                lane.why = Some(why);
            }
        }
        let item_times = if trace.items.len() <= ITEM_TIMES_BUDGET {
            trace
                .items
                .iter()
                .filter(|i| i.started != SimTime::MAX && i.thread != ThreadId::MAX)
                .map(|i| ItemTimes {
                    item: i.item,
                    thread: i.thread,
                    queued: i.queued,
                    started: i.started,
                    finished: (i.finished != SimTime::MAX).then_some(i.finished),
                })
                .collect()
        } else {
            Vec::new()
        };
        Timeline {
            scenario: trace.scenario.clone(),
            policy: trace.policy.clone(),
            seed: trace.seed,
            cores: trace.cores,
            groups: trace.groups.clone(),
            items: trace.items.len(),
            unfinished: trace
                .items
                .iter()
                .filter(|i| i.finished == SimTime::MAX)
                .count(),
            end,
            source,
            lanes,
            creations,
            threads,
            queue,
            probes,
            decisions,
            goals,
            item_times,
        }
    }

    /// The timeline of a recorded run (`poolsim import`), built as
    /// [`Timeline::build`] builds one, with the runtime's goal `adjustments`
    /// (in time order) as its decisions and goal changes: each marked with
    /// its reason and line ([`RecordedAdjustment`]), which is also the
    /// reason why of each thread started for it. The goal changes are the
    /// adjustments' (the events' own goal changes, which no decision
    /// explains, give way to them).
    pub fn build_recorded(
        trace: &Trace,
        events: Option<&[(SimTime, TraceEvent)]>,
        adjustments: &[RecordedAdjustment],
    ) -> Timeline {
        let mut t = Timeline::build(trace, events);
        t.decisions
            .extend(adjustments.iter().map(RecordedAdjustment::mark));
        t.decisions.sort_by_key(|d| d.at);
        t.goals = adjustments
            .iter()
            .map(RecordedAdjustment::goal_mark)
            .collect();
        for a in adjustments {
            for &(thread, _) in &a.created {
                if let Some(lane) = t.lanes.get_mut(thread as usize) {
                    lane.why = Some(a.line());
                }
            }
        }
        t
    }

    /// The times of `item`, when kept.
    pub fn item_times_of(&self, item: ItemId) -> Option<&ItemTimes> {
        self.item_times
            .binary_search_by_key(&item, |i| i.item)
            .ok()
            .map(|i| &self.item_times[i])
    }

    /// Whether thread lane `lane` exists during any part of `[from, to]`.
    pub fn lane_active(&self, lane: &Lane, from: SimTime, to: SimTime) -> bool {
        let until = lane.exited.unwrap_or(self.end).max(lane.created);
        lane.created <= to && (until > from || (until == from && lane.created == until))
    }

    /// Segments in all lanes.
    pub fn segment_count(&self) -> usize {
        self.lanes.iter().map(|l| l.segments.len()).sum()
    }

    /// The longest queue seen (0 without queue data).
    pub fn max_queue(&self) -> u64 {
        self.queue.iter().map(|q| q.queued).max().unwrap_or(0)
    }

    /// The most threads (or goal) seen; the lane count without counts.
    pub fn max_threads(&self) -> u32 {
        match self
            .threads
            .iter()
            .map(|c| c.threads.max(c.goal.unwrap_or(0)))
            .max()
        {
            Some(m) => m,
            None => u32::try_from(self.lanes.len()).unwrap_or(u32::MAX),
        }
    }

    /// The longest probe latency, if any probe ran.
    pub fn max_probe_latency(&self) -> Option<SimDuration> {
        self.probes.iter().filter_map(ProbeMark::latency).max()
    }

    /// When the last segment ends: the last item's end, as the titles say
    /// (zero without segments, and in a run without items, such as a
    /// recorded trace whose lanes come from its waits).
    pub fn busy_until(&self) -> SimTime {
        if self.items == 0 {
            return SimTime::ZERO;
        }
        self.lanes
            .iter()
            .filter_map(|l| l.segments.last().map(|s| s.end))
            .max()
            .unwrap_or(SimTime::ZERO)
    }
}

/// The end of the run as the trace knows it, even when `end` was not set.
pub(crate) fn trace_end(trace: &Trace) -> SimTime {
    let mut end = trace.end;
    for i in &trace.items {
        if i.finished != SimTime::MAX {
            end = end.max(i.finished);
        } else if i.started != SimTime::MAX {
            end = end.max(i.started);
        }
    }
    for t in &trace.threads {
        end = end.max(t.created);
        if let Some(x) = t.exited {
            end = end.max(x);
        }
    }
    if let Some(c) = trace.counts.last() {
        end = end.max(c.at);
    }
    end
}

/// Lane index of `thread`, growing `lanes` for threads the trace's thread
/// list does not know (a defensive case: a measured log may be partial).
fn lane_mut(lanes: &mut Vec<Lane>, thread: ThreadId, at: SimTime) -> &mut Lane {
    let i = thread as usize;
    while lanes.len() <= i {
        let id = lanes.len() as ThreadId;
        lanes.push(Lane {
            thread: id,
            created: at,
            reason: ThreadReason::Observed,
            exited: None,
            segments: Vec::new(),
            why: None,
        });
    }
    &mut lanes[i]
}

/// Turns thread phase events into segments: a phase lasts until the
/// thread's next phase, until it starts or finishes an item (the dispatch
/// loop moving on), or until it exits.
fn segments_from_phases(events: &[(SimTime, TraceEvent)], lanes: &mut Vec<Lane>, end: SimTime) {
    let mut phases = PhaseSegments::default();
    let mut emit = |thread: ThreadId, seg: Segment| {
        lane_mut(lanes, thread, seg.start).segments.push(seg);
    };
    for (at, event) in events {
        phases.event(*at, event, &mut emit);
    }
    phases.close_all(end, &mut emit);
}

/// The segments of thread phase events, made as the events come (what
/// [`Timeline::build`] does over a whole event log, and a streamed chart or
/// Chrome trace as the run goes): a phase lasts until the thread's next
/// phase, until it starts or finishes an item (the dispatch loop moving
/// on), or until it exits. Idle phases make no segment, nor does a start
/// or wake-up that goes straight back to idle (it found no work).
#[derive(Clone, Debug, Default)]
pub struct PhaseSegments {
    /// Per thread: the phase it is in, the item and its group, and since when.
    open: Vec<Option<OpenPhase>>,
}

/// A thread's phase not yet ended: the phase, the item and its group, and
/// since when.
type OpenPhase = (Phase, Option<ItemId>, Option<u32>, SimTime);

impl PhaseSegments {
    /// Whether `event` is one that opens or closes a phase.
    pub fn concerns(event: &TraceEvent) -> bool {
        matches!(
            event,
            TraceEvent::ThreadPhase { .. }
                | TraceEvent::ItemStarted { .. }
                | TraceEvent::ItemFinished { .. }
                | TraceEvent::ThreadExited { .. }
        )
    }

    /// One event at `at`; a segment it ends goes to `emit` with its thread.
    pub fn event(
        &mut self,
        at: SimTime,
        event: &TraceEvent,
        emit: &mut impl FnMut(ThreadId, Segment),
    ) {
        match *event {
            TraceEvent::ThreadPhase {
                thread,
                phase,
                item,
                group,
            } => {
                self.close(thread, at, Some(phase), emit);
                self.open[thread as usize] = Some((phase, item, group, at));
            }
            TraceEvent::ItemStarted { thread, .. }
            | TraceEvent::ItemFinished { thread, .. }
            | TraceEvent::ThreadExited { thread } => self.close(thread, at, None, emit),
            _ => {}
        }
    }

    /// Ends every open phase at `end`, in thread order.
    pub fn close_all(&mut self, end: SimTime, emit: &mut impl FnMut(ThreadId, Segment)) {
        for thread in 0..self.open.len() {
            self.close(thread as ThreadId, end, None, emit);
        }
    }

    /// Ends `thread`'s open phase at `at`; `next` is the phase it enters.
    fn close(
        &mut self,
        thread: ThreadId,
        at: SimTime,
        next: Option<Phase>,
        emit: &mut impl FnMut(ThreadId, Segment),
    ) {
        let i = thread as usize;
        if self.open.len() <= i {
            self.open.resize(i + 1, None);
        }
        if let Some((phase, item, group, since)) = self.open[i].take()
            && phase != Phase::Idle
            && !(phase == Phase::Starting && next == Some(Phase::Idle))
            && at > since
        {
            emit(
                thread,
                Segment {
                    start: since,
                    end: at,
                    item,
                    group,
                    phase,
                },
            );
        }
    }
}

/// One segment per started item, on the thread that started it.
fn segments_from_items(trace: &Trace, lanes: &mut Vec<Lane>, end: SimTime) {
    for rec in &trace.items {
        if rec.started == SimTime::MAX || rec.thread == ThreadId::MAX {
            continue;
        }
        let finish = if rec.finished == SimTime::MAX {
            end
        } else {
            rec.finished
        };
        if finish <= rec.started {
            continue;
        }
        lane_mut(lanes, rec.thread, rec.started)
            .segments
            .push(Segment {
                start: rec.started,
                end: finish,
                item: Some(rec.item),
                group: Some(rec.group),
                phase: Phase::Cpu,
            });
    }
    for lane in lanes.iter_mut() {
        if !lane.segments.is_sorted_by_key(|s| (s.start, s.item)) {
            lane.segments.sort_by_key(|s| (s.start, s.item));
        }
    }
}

/// The queue length as a step series: the last value at each instant,
/// repeats dropped.
fn queue_series(events: &[(SimTime, TraceEvent)]) -> Vec<QueuePoint> {
    let mut series = QueueSeries::default();
    for (at, event) in events {
        if let TraceEvent::QueueLength { queued } = *event {
            series.push(*at, queued);
        }
    }
    let mut out = Vec::new();
    series.finish(&mut |p| out.push(p));
    out
}

/// The queue length step series of [`Timeline::queue`], made as the
/// `QueueLength` events come: the last value at each instant, repeats
/// dropped, from a zero at time zero. Only the last point can still change
/// (an event at the same instant) or go (then equal to the one before), so
/// every point before the last two is final and leaves by
/// [`QueueSeries::drain`].
#[derive(Clone, Debug, Default)]
pub struct QueueSeries {
    /// The points not yet drained (at most two after a drain).
    points: Vec<QueuePoint>,
    /// Whether the first point was seen (and the zero before it given).
    started: bool,
}

impl QueueSeries {
    pub fn push(&mut self, at: SimTime, queued: u64) {
        let out = &mut self.points;
        match out.last_mut() {
            Some(last) if last.at == at => last.queued = queued,
            Some(last) if last.queued == queued => {}
            _ => out.push(QueuePoint { at, queued }),
        }
        // A same-instant overwrite may have made the last two equal.
        let n = out.len();
        if n >= 2 && out[n - 1].queued == out[n - 2].queued {
            out.pop();
        }
    }

    /// Gives the final points, in time order.
    pub fn drain(&mut self, emit: &mut impl FnMut(QueuePoint)) {
        if self.points.len() > 2 {
            let keep = self.points.len() - 2;
            self.give_zero(emit);
            for p in self.points.drain(..keep) {
                emit(p);
            }
        }
    }

    /// Gives every point left: the series is over.
    pub fn finish(&mut self, emit: &mut impl FnMut(QueuePoint)) {
        if !self.points.is_empty() {
            self.give_zero(emit);
        }
        for p in self.points.drain(..) {
            emit(p);
        }
    }

    /// The zero at time zero, before a series that starts later.
    fn give_zero(&mut self, emit: &mut impl FnMut(QueuePoint)) {
        if !self.started {
            self.started = true;
            if self.points.first().is_some_and(|q| q.at > SimTime::ZERO) {
                emit(QueuePoint {
                    at: SimTime::ZERO,
                    queued: 0,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{ItemRecord, ThreadRecord};

    fn trace() -> Trace {
        Trace {
            scenario: "s".into(),
            policy: "p".into(),
            seed: 1,
            cores: 2,
            groups: vec!["g".into()],
            call_groups: Vec::new(),
            items: vec![
                ItemRecord {
                    item: 0,
                    group: 0,
                    thread: 0,
                    queued: SimTime(0),
                    started: SimTime(10),
                    finished: SimTime(50),
                },
                ItemRecord {
                    item: 1,
                    group: 0,
                    thread: ThreadId::MAX,
                    queued: SimTime(0),
                    started: SimTime::MAX,
                    finished: SimTime::MAX,
                },
            ],
            threads: vec![ThreadRecord {
                thread: 0,
                created: SimTime(0),
                reason: ThreadReason::Demand,
                exited: None,
            }],
            probes: vec![],
            counts: vec![],
            cpu_busy_ns: None,
            end: SimTime(60),
        }
    }

    #[test]
    fn a_recorded_timeline_marks_its_adjustments_and_the_threads_they_started() {
        use crate::trace::GoalReason;
        let mut tr = trace();
        tr.threads.push(ThreadRecord {
            thread: 1,
            created: SimTime(30),
            reason: ThreadReason::Starvation,
            exited: None,
        });
        let adjustments = [
            RecordedAdjustment {
                at: SimTime(20),
                previous: Some(1),
                goal: 1,
                reason: GoalReason::Initializing,
                name: "Initializing".into(),
                raises: ThreadReason::HillClimbing,
                created: vec![],
            },
            RecordedAdjustment {
                at: SimTime(25),
                previous: Some(1),
                goal: 2,
                reason: GoalReason::Starvation,
                name: "Starvation".into(),
                raises: ThreadReason::Starvation,
                created: vec![(1, SimTime(30))],
            },
        ];
        let goal_events = [(
            SimTime(25),
            TraceEvent::GoalChanged {
                goal: 2,
                reason: GoalReason::Starvation,
            },
        )];
        let plain = Timeline::build(&tr, Some(&goal_events));
        assert!(plain.decisions.is_empty());
        assert_eq!(plain.goals[0].why, None, "no decision explains it");
        let t = Timeline::build_recorded(&tr, Some(&goal_events), &adjustments);
        let marks: Vec<_> = t
            .decisions
            .iter()
            .map(|d| (d.at, d.rule, d.raised))
            .collect();
        assert_eq!(
            marks,
            vec![
                (SimTime(20), "Initializing", false),
                (SimTime(25), "Starvation", true)
            ]
        );
        assert_eq!(t.goals.len(), 2);
        assert_eq!(
            t.goals[1].why.as_deref(),
            Some(t.decisions[1].text.as_str())
        );
        assert_eq!(
            t.lanes[1].why.as_deref(),
            Some(t.decisions[1].text.as_str())
        );
        assert_eq!(t.lanes[0].why, plain.lanes[0].why, "not started for either");
        // The lanes and segments are those of the plain build.
        assert_eq!(t.lanes[0].segments, plain.lanes[0].segments);
    }

    #[test]
    fn busy_until_is_the_last_items_end_and_nothing_without_items() {
        let t = Timeline::build(&trace(), None);
        assert_eq!(t.busy_until(), SimTime(50));
        let mut none = trace();
        none.items.clear();
        let ev = [(
            SimTime(5),
            TraceEvent::ThreadPhase {
                thread: 0,
                phase: Phase::Internal,
                item: None,
                group: None,
            },
        )];
        let t = Timeline::build(&none, Some(&ev));
        assert_eq!(t.segment_count(), 1);
        assert_eq!(t.busy_until(), SimTime::ZERO, "no item ends anywhere");
    }

    #[test]
    fn items_become_segments_without_events() {
        let t = Timeline::build(&trace(), None);
        assert_eq!(t.source, SegmentSource::Items);
        assert_eq!(t.lanes[0].segments.len(), 1);
        assert_eq!(t.lanes[0].segments[0].start, SimTime(10));
        assert_eq!(t.lanes[0].segments[0].end, SimTime(50));
    }

    #[test]
    fn phases_split_at_item_boundaries_and_skip_idle() {
        let ev = vec![
            (
                SimTime(0),
                TraceEvent::ThreadPhase {
                    thread: 0,
                    phase: Phase::Starting,
                    item: None,
                    group: None,
                },
            ),
            (SimTime(10), TraceEvent::ItemStarted { item: 0, thread: 0 }),
            (
                SimTime(10),
                TraceEvent::ThreadPhase {
                    thread: 0,
                    phase: Phase::Sleep,
                    item: Some(0),
                    group: Some(0),
                },
            ),
            (
                SimTime(30),
                TraceEvent::ThreadPhase {
                    thread: 0,
                    phase: Phase::Cpu,
                    item: Some(0),
                    group: Some(0),
                },
            ),
            (SimTime(50), TraceEvent::ItemFinished { item: 0, thread: 0 }),
            (
                SimTime(50),
                TraceEvent::ThreadPhase {
                    thread: 0,
                    phase: Phase::Idle,
                    item: None,
                    group: None,
                },
            ),
            (SimTime(5), TraceEvent::QueueLength { queued: 2 }),
            (SimTime(10), TraceEvent::QueueLength { queued: 1 }),
            (SimTime(10), TraceEvent::QueueLength { queued: 1 }),
        ];
        let t = Timeline::build(&trace(), Some(&ev));
        assert_eq!(t.source, SegmentSource::Phases);
        let phases: Vec<_> = t.lanes[0]
            .segments
            .iter()
            .map(|s| (s.start.0, s.end.0, s.phase))
            .collect();
        assert_eq!(
            phases,
            vec![
                (0, 10, Phase::Starting),
                (10, 30, Phase::Sleep),
                (30, 50, Phase::Cpu)
            ]
        );
        assert_eq!(
            t.queue,
            vec![
                QueuePoint {
                    at: SimTime(0),
                    queued: 0
                },
                QueuePoint {
                    at: SimTime(5),
                    queued: 2
                },
                QueuePoint {
                    at: SimTime(10),
                    queued: 1
                },
            ]
        );
    }
}
