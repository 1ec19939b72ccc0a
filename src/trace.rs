//! What a run produced: typed trace events for sinks, and the recorded
//! [`Trace`] that metrics, CSV and charts read.
//!
//! Two layers. The engine always records the few facts every output needs
//! (per item: queued, started, finished, thread; per thread: created, why,
//! exited; probe latencies; thread counts over time) into a [`Trace`]. A
//! measured run on a real runtime fills the same struct, so metrics and
//! charts have one code path for both. Detail events (every phase of every
//! thread, goal changes, queue lengths) go to a [`TraceSink`]; the default
//! [`NullSink`] compiles to nothing, so tracing off costs nothing.

use crate::time::SimTime;

/// Index of a pool thread in [`Trace::threads`].
pub type ThreadId = u32;
/// Index of a work item in [`Trace::items`].
pub type ItemId = u32;

/// Why the pool created a thread (or why one exited).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ThreadReason {
    /// Created at once because the pool was below its goal (min threads, or
    /// a goal raised earlier).
    Demand,
    /// Added by the gate/monitor thread's starvation rule.
    Starvation,
    /// Added after hill climbing raised the goal.
    HillClimbing,
    /// Added to compensate a thread blocked in a cooperative wait (.NET 6+).
    CooperativeBlocking,
    /// A dedicated thread (`new Thread(...).Start()`).
    Dedicated,
    /// The program's main thread, when it runs work inline (the root of a
    /// `Parallel.For` called from `Main`).
    Main,
    /// Observed in a measured run; the runtime does not say why.
    Observed,
}

impl ThreadReason {
    pub fn name(self) -> &'static str {
        match self {
            ThreadReason::Demand => "demand",
            ThreadReason::Starvation => "starvation",
            ThreadReason::HillClimbing => "hill-climbing",
            ThreadReason::CooperativeBlocking => "cooperative-blocking",
            ThreadReason::Dedicated => "dedicated",
            ThreadReason::Main => "main",
            ThreadReason::Observed => "observed",
        }
    }
}

/// What a thread is doing, for timelines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Being created or woken, before its first dequeue.
    Starting,
    /// Waiting for work.
    Idle,
    /// Running CPU work (possibly sharing a core).
    Cpu,
    /// Busy-waiting on the wall clock.
    Spin,
    /// Blocked in `Thread.Sleep`.
    Sleep,
    /// Blocked in `Task.Wait` on a timer whose callback has not run yet.
    Wait,
    /// Blocked waiting for the parts of a parallel call it started
    /// (`Parallel.For`'s caller, a PLINQ consumer).
    Join,
    /// Running pool-internal work (timer queue, a submitter loop, a probe).
    Internal,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Starting => "starting",
            Phase::Idle => "idle",
            Phase::Cpu => "cpu",
            Phase::Spin => "spin",
            Phase::Sleep => "sleep",
            Phase::Wait => "wait",
            Phase::Join => "join",
            Phase::Internal => "internal",
        }
    }
}

/// A detail event, sent to a [`TraceSink`] as it happens.
#[derive(Clone, Debug, PartialEq)]
pub enum TraceEvent {
    ItemQueued {
        item: ItemId,
        local_of: Option<ThreadId>,
    },
    ItemStarted {
        item: ItemId,
        thread: ThreadId,
    },
    ItemFinished {
        item: ItemId,
        thread: ThreadId,
    },
    /// `thread` entered `phase`, working on `item` if any.
    ThreadPhase {
        thread: ThreadId,
        phase: Phase,
        item: Option<ItemId>,
    },
    ThreadCreated {
        thread: ThreadId,
        reason: ThreadReason,
    },
    ThreadExited {
        thread: ThreadId,
    },
    /// The policy's thread goal changed.
    GoalChanged {
        goal: u32,
        reason: &'static str,
    },
    /// Work items waiting in the global and local queues.
    QueueLength {
        queued: u64,
    },
    ProbeQueued {
        probe: u32,
    },
    ProbeStarted {
        probe: u32,
    },
}

/// Receives detail events. Implementations must not influence the run.
pub trait TraceSink {
    fn record(&mut self, at: SimTime, event: TraceEvent);
}

/// Discards everything; with it the engine does no tracing work at all.
#[derive(Clone, Copy, Debug, Default)]
pub struct NullSink;

impl TraceSink for NullSink {
    #[inline(always)]
    fn record(&mut self, _at: SimTime, _event: TraceEvent) {}
}

/// Keeps every event in memory, in order.
#[derive(Clone, Debug, Default)]
pub struct EventLog {
    pub events: Vec<(SimTime, TraceEvent)>,
}

impl TraceSink for EventLog {
    fn record(&mut self, at: SimTime, event: TraceEvent) {
        self.events.push((at, event));
    }
}

/// One work item's life.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ItemRecord {
    pub item: ItemId,
    /// Index into [`Trace::groups`].
    pub group: u32,
    /// The thread its first segment ran on.
    pub thread: ThreadId,
    pub queued: SimTime,
    pub started: SimTime,
    pub finished: SimTime,
}

/// One pool thread's life.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadRecord {
    pub thread: ThreadId,
    pub created: SimTime,
    pub reason: ThreadReason,
    pub exited: Option<SimTime>,
}

/// One responsiveness probe: queued by the main thread, started by a pool thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeRecord {
    pub queued: SimTime,
    pub started: SimTime,
}

/// Thread counts from an instant on (a step function).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CountSample {
    pub at: SimTime,
    /// Threads that exist (not exited).
    pub threads: u32,
    /// The policy's goal, when the source knows it.
    pub goal: Option<u32>,
}

/// Everything every output needs from one run, simulated or measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    pub scenario: String,
    /// Policy name (simulated) or runtime name (measured).
    pub policy: String,
    pub seed: u64,
    pub cores: u32,
    pub groups: Vec<String>,
    /// Indexed by item id, in submission order.
    pub items: Vec<ItemRecord>,
    pub threads: Vec<ThreadRecord>,
    pub probes: Vec<ProbeRecord>,
    pub counts: Vec<CountSample>,
    /// Core-nanoseconds of CPU used by pool threads (simulated runs).
    pub cpu_busy_ns: Option<u128>,
    /// When the run ended.
    pub end: SimTime,
}
