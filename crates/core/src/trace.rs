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
//!
//! The pool's decisions (a gate tick's starvation test, a hill-climbing
//! sample, a cooperative-blocking step, a retirement, ...) go to the sink as
//! [`TraceEvent::Decision`] with the inputs the rule read; `poolsim explain`
//! narrates them (the analysis crate's `explain`). No other output reads them.

use crate::time::{SimDuration, SimTime};

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

/// Why a pool's thread goal moved: the minimum it starts at, and the
/// runtime's own reasons (the `Reason` of CoreCLR's
/// `ThreadPoolWorkerThreadAdjustmentAdjustment` event: hill climbing's
/// transitions, starvation, a thread that timed out, cooperative
/// blocking), which a model gives as the runtime would.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GoalReason {
    /// The goal starts at the minimum (`SetMinThreads`, by default the cores).
    MinThreads,
    /// Hill climbing's transitions.
    Warmup,
    Initializing,
    RandomMove,
    ClimbingMove,
    ChangePoint,
    Stabilizing,
    /// The gate (monitor) thread's starvation rule.
    Starvation,
    /// An idle thread timed out and left.
    ThreadTimedOut,
    /// .NET 6+: a thread blocked in a cooperative wait is compensated.
    CooperativeBlocking,
    /// A reason an imported trace gives that has no name here.
    Other,
}

impl GoalReason {
    /// How the reason reads in outputs (`explain`, the Chrome trace): the
    /// model's own reasons in its words (`starvation`, `min-threads`),
    /// hill climbing's transitions by the runtime's names (`ClimbingMove`).
    pub fn name(self) -> &'static str {
        match self {
            GoalReason::MinThreads => "min-threads",
            GoalReason::Warmup => "Warmup",
            GoalReason::Initializing => "Initializing",
            GoalReason::RandomMove => "RandomMove",
            GoalReason::ClimbingMove => "ClimbingMove",
            GoalReason::ChangePoint => "ChangePoint",
            GoalReason::Stabilizing => "Stabilizing",
            GoalReason::Starvation => "starvation",
            GoalReason::ThreadTimedOut => "thread-timed-out",
            GoalReason::CooperativeBlocking => "cooperative-blocking",
            GoalReason::Other => "Other",
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
    /// `thread` entered `phase`, working on `item` (of group `group`) if any.
    ThreadPhase {
        thread: ThreadId,
        phase: Phase,
        item: Option<ItemId>,
        group: Option<u32>,
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
        reason: GoalReason,
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
    /// A decision of the pool, with the inputs its rule read. Recorded just
    /// before the action it takes (goal change, thread added), which follows
    /// at the same instant.
    Decision(Decision),
}

/// What a gate (monitor) thread's starvation test read
/// (`SufficientDelaySinceLastDequeue`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StarvationCheck {
    /// Time since the last dequeue (Mono: the last completion).
    pub since_dequeue: SimDuration,
    /// `starvation_delay`, or `goal × busy_delay_per_thread` with the CPU busy.
    pub threshold: SimDuration,
    /// `">"` (CoreCLR) or `">="` (Mono).
    pub comparison: &'static str,
    /// CPU utilisation over the last tick, percent.
    pub cpu_percent: u32,
    /// `cpu_busy_percent`: at or above it the busy threshold applies.
    pub cpu_busy_percent: u32,
    /// Whether the busy threshold applied.
    pub cpu_busy: bool,
    /// Whether the test held.
    pub starved: bool,
}

/// What a gate tick with thread requests pending did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateOutcome {
    /// Starved: the goal goes up and a worker is added.
    Inject,
    /// The starvation test failed.
    NotStarved,
    /// Starved, but the pool is at `max_threads` (Mono: the goal at its
    /// maximum and every thread working).
    AtMax,
    /// Starved, but fewer threads count than the goal (one is on its way).
    BelowGoal,
    /// .NET 6+: a cooperative-blocking adjustment is pending; starvation
    /// injection waits.
    BlockingPending,
}

/// How a thread throttle hands its slot on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThrottleKind {
    /// `SemaphoreSlim.Release()`: the first waiter's continuation is queued.
    Semaphore,
    /// A `ConcurrentExclusiveSchedulerPair` processing item runs the next
    /// waiting task.
    Pair,
}

/// Beyond the no-delay cap, a cooperative-blocking increase waits for the
/// gate thread's previous delay (`DelayHelper`) to elapse.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BlockingDelay {
    /// A delay of `needed` was running, started `since` ago.
    Running {
        needed: SimDuration,
        since: SimDuration,
    },
    /// No delay was running (the goal had met its target): none has
    /// elapsed, so this adjustment waits and starts one.
    Starts,
}

/// A decision of the pool and the inputs it read ([`TraceEvent::Decision`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// A gate/monitor tick with thread requests pending ran the starvation
    /// test (classic, portable, Mono).
    GateTick {
        check: StarvationCheck,
        /// The goal before the tick.
        goal: u32,
        /// The goal after it (`goal` unless injecting).
        new_goal: u32,
        /// The thread count the model compares with the goal (classic:
        /// active threads, portable and Mono: working threads).
        threads: u32,
        outcome: GateOutcome,
    },
    /// A .NET 2.0 gate check with work queued
    /// (`GrowWorkerThreadPoolIfStarvation`, the NT rule).
    Net20Gate {
        queued: u64,
        workers: u32,
        idle: u64,
        cpu_percent: u32,
        cpu_busy_percent: u32,
        /// With the CPU busy: time since the last dequeue, the threshold
        /// (`workers × busy_delay_per_thread`) and the comparison.
        dequeue: Option<(SimDuration, SimDuration, &'static str)>,
        /// With the CPU busy: time since the last creation and the wait it
        /// needs (`creation_delay × growth^(workers - cores)`).
        creation: Option<(SimDuration, SimDuration)>,
        /// Whether a worker is created.
        create: bool,
    },
    /// A hill-climbing sample was taken (`HillClimbing::Update`).
    HillClimbing {
        /// The sample's transition name (`Warmup`, `ClimbingMove`, ...).
        transition: &'static str,
        /// Whether hill climbing first adopted a goal moved by someone else
        /// (`Initializing`).
        adopted: bool,
        /// Completions per second over the sample.
        throughput: f64,
        /// The sample's duration (short samples accumulated in).
        sample: SimDuration,
        /// Real parts of the thread-count and throughput wave components.
        thread_wave: f64,
        throughput_wave: f64,
        ratio: f64,
        confidence: f64,
        /// The move of the control setting, and the setting after the clamps.
        step: f64,
        control_setting: f64,
        /// The square wave's magnitude (threads) and whether it is high.
        wave_magnitude: u32,
        wave_high: bool,
        cpu_percent: u32,
        goal: u32,
        new_goal: u32,
    },
    /// .NET 6+ `PerformBlockingAdjustment` moved (or will move) the goal.
    CooperativeBlocking {
        /// Threads blocked in a task wait.
        blocked: u32,
        min: u32,
        /// `min(min + blocked, max)`.
        target: u32,
        /// `min + ThreadsToAddWithoutDelay`.
        no_delay_cap: u32,
        goal: u32,
        new_goal: u32,
        /// Beyond the no-delay cap: the gate thread's blocking delay.
        delay: Option<BlockingDelay>,
        /// When the next adjustment is due, if the goal is still short.
        next_in: Option<SimDuration>,
    },
    /// A thread request finds fewer threads than the goal (or, .NET 2.0,
    /// than the minimum) and no idle one: a thread is added on demand.
    Demand {
        /// Threads counted against `limit`.
        threads: u32,
        /// The goal (`MaxWorking`, `NumThreadsGoal`) or the minimum.
        limit: u32,
        /// What `threads` and `limit` are, e.g. `"working"` and `"goal"`.
        threads_name: &'static str,
        limit_name: &'static str,
        /// .NET 2.0: idle (or starting) workers, fewer than the items queued.
        idle_queued: Option<(u64, u64)>,
    },
    /// A worker completed an item with more threads than the goal and was
    /// told to stop.
    WorkerStop {
        thread: ThreadId,
        /// The runtime's rule (`ShouldWorkerKeepRunning`, ...).
        rule: &'static str,
        threads: u32,
        threads_name: &'static str,
        goal: u32,
        /// Whether it retires (native pool) or only goes back to waiting.
        retires: bool,
    },
    /// Mono: a thread request stayed managed, its worker pool holding
    /// `tokens` requests no worker took yet (threadpool.c's `starting` at its
    /// cap): it neither wakes nor creates a thread. Recorded once each time
    /// the cap is reached.
    RequestsHeld {
        tokens: u32,
        working: u32,
        goal: u32,
    },
    /// An idle (or retired) thread waited `waited` for work.
    IdleTimeout {
        thread: ThreadId,
        waited: SimDuration,
        /// It had retired (no policy decision: it exits).
        retired: bool,
        exits: bool,
        goal: Option<u32>,
        new_goal: Option<u32>,
    },
    /// A due timer's callback (or a timer queue) was queued behind work
    /// items that run first.
    TimerBacklog {
        /// The timer, or `None` for a whole timer queue.
        timer: Option<u32>,
        queue: u32,
        /// Work items ahead of it.
        ahead: u64,
        /// Where it waits (`"global queue"`, `"time-sensitive queue"`, ...).
        via: &'static str,
        /// The thread blocked in `Task.Delay().Wait()` the callback releases.
        releases: Option<ThreadId>,
    },
    /// A pool thread released a thread blocked in `Task.Delay().Wait()` that
    /// goes on computing with no core free, and waits for its core (Linux
    /// wake-up preemption, `threads.wake_preempt_us`).
    WakePreempted {
        thread: ThreadId,
        /// The released thread, which runs first.
        woke: ThreadId,
        /// How long `thread` waits for its core.
        waits: SimDuration,
    },
    /// The gate thread, created with the pool's first worker at `created`,
    /// first runs (`[gate] start = "with-first-thread"`): once that worker
    /// has dispatched, and with the cores taken by CPU work only at the next
    /// scheduler tick (`waited_for_tick`). Its first tick is due at
    /// `first_tick`.
    GateStarted {
        created: SimTime,
        waited_for_tick: bool,
        first_tick: SimTime,
    },
    /// Start-up work the program does not control completed pool work items
    /// before the program's first request (tiered compilation's
    /// call-counting work, `[hill_climbing] startup_completions_tiered`):
    /// the first of them took hill climbing's first sample, `before` ahead
    /// of that request, and the other `completions - 1` count toward the
    /// next sample. Recorded at the run's start.
    StartupSample {
        before: SimDuration,
        completions: u32,
    },
    /// The program's main thread, off the one core since `since` (when it
    /// created the pool's first worker), gets it back and goes on submitting
    /// (`threads.main_yields_to_first_worker`): when the worker left it
    /// free, or at a scheduler tick while it computes (`waited_for_tick`).
    MainThreadWaited {
        since: SimTime,
        waited_for_tick: bool,
    },
    /// The first call of a parallel API in the run: its caller compiles
    /// the library's code for it (`[library.first_call_ms]`, measured)
    /// before the call's first body runs.
    FirstCall {
        /// The API.
        api: crate::scenario::Submit,
        thread: ThreadId,
        /// CPU time the compilation takes.
        cost: SimDuration,
    },
    /// A throttled item hands its slot to the next waiting one.
    ThrottleHandOff {
        kind: ThrottleKind,
        /// The item that finished (or suspended), when known.
        from: Option<ItemId>,
        to: ItemId,
        limit: u32,
        /// Still waiting behind it.
        waiting: u32,
    },
}

/// Receives detail events. Implementations must not influence the run.
pub trait TraceSink {
    /// False when every event is discarded: the engine then skips the work
    /// of finding some decisions.
    const ENABLED: bool = true;
    /// True (the default) when the run's [`Trace::items`] holds every
    /// item's record. False: the engine keeps only the items alive and
    /// hands each record to [`TraceSink::item`] instead, in submission
    /// order, once the item and every item before it ended (the unfinished
    /// ones at the end of the run); the trace's `items` is then empty.
    /// That is how a run of millions of items keeps its memory to the
    /// threads and the queue (see the analysis crate's `stream`).
    const KEEP_ITEMS: bool = true;
    /// False when the sink wants no item record at all, kept or handed
    /// out: the engine then keeps only its own part of the items alive.
    const ITEM_RECORDS: bool = true;
    fn record(&mut self, at: SimTime, event: TraceEvent);
    /// One item's record, when [`TraceSink::KEEP_ITEMS`] is false.
    fn item(&mut self, _record: &ItemRecord) {}
}

/// Discards everything; with it the engine does no tracing work at all.
#[derive(Clone, Copy, Debug, Default)]
pub struct NullSink;

impl TraceSink for NullSink {
    const ENABLED: bool = false;
    #[inline(always)]
    fn record(&mut self, _at: SimTime, _event: TraceEvent) {}
}

/// Discards every event and every item's record: a run kept for its
/// outcome, its event count and its threads only, in memory bounded by the
/// threads and the queue (what the speed and memory bench measures as
/// "the engine alone").
#[derive(Clone, Copy, Debug, Default)]
pub struct Discard;

impl TraceSink for Discard {
    const ENABLED: bool = false;
    const KEEP_ITEMS: bool = false;
    const ITEM_RECORDS: bool = false;
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
    /// The groups whose items are calls a `fan_out` step queued (by
    /// index): their latency is their caller's, so a run's latency
    /// figures leave them out (`metrics`).
    pub call_groups: Vec<u32>,
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

#[cfg(test)]
mod tests {
    use super::GoalReason;

    /// Outputs (`explain`, the Chrome trace, `--json`'s adjustments) print
    /// these names: hill climbing's transitions by the runtime's names, the
    /// model's own reasons in its words.
    #[test]
    fn goal_reasons_print_the_names_outputs_have_always_had() {
        let names: Vec<&str> = [
            GoalReason::MinThreads,
            GoalReason::Warmup,
            GoalReason::ClimbingMove,
            GoalReason::Starvation,
            GoalReason::ThreadTimedOut,
            GoalReason::CooperativeBlocking,
        ]
        .iter()
        .map(|r| r.name())
        .collect();
        assert_eq!(
            names,
            [
                "min-threads",
                "Warmup",
                "ClimbingMove",
                "starvation",
                "thread-timed-out",
                "cooperative-blocking"
            ]
        );
    }
}
