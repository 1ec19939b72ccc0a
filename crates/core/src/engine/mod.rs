//! The discrete-event engine: virtual clock, event heap, cores, pool mechanics.
//!
//! A pure library: no file I/O, no wall clock, no printing. It runs a
//! validated [`Scenario`] against one [`Policy`] and returns the recorded
//! [`Trace`]. Events at the same instant run in the order they were
//! scheduled (the heap is keyed by time, then insertion sequence), so a run
//! is a function of the scenario and its seed alone.
//!
//! Mechanics shared by the CLR pools live here (`docs/research/portable-pool-and-timers.md`;
//! dotnet/coreclr v3.1 `src/vm/win32threadpool.cpp`, dotnet/runtime
//! `PortableThreadPool.*.cs`):
//! - a global FIFO queue and one local queue per pool thread (LIFO for its
//!   owner, stolen FIFO by others); `Task.Run` from a pool thread goes
//!   local, everything else global; a worker dequeues own local → (high
//!   priority) → global → steal from another thread, starting at a random one;
//! - the managed work queue's thread requests: queueing work requests a
//!   thread; a worker takes a request to start a dispatch loop; a dequeue
//!   asks for one more thread (after every dequeue up to `cores`
//!   outstanding, or after the first of a dispatch with one outstanding);
//! - a dispatch quantum, after which a native-pool worker returns to the
//!   pool's bookkeeping and asks for a thread to carry on;
//! - timers fired by pool work: `cores` timer queues, a timer joining its
//!   creating thread's (or, per policy, a random one); an expired queue reaches a worker as an unmanaged request
//!   (native pool), through a time-sensitive or high-priority queue (.NET
//!   6, 7+), or callback by callback at the global tail (Mono); the worker
//!   that runs a queue runs its first due callback inline and queues the
//!   others at the global tail. A thread in `Task.Delay(d).Wait()` is
//!   released only when its callback has run. On Linux the worker that
//!   releases such a waiter, when the waiter goes on computing and no core
//!   is free, is preempted by it and goes on only after its wait for the
//!   core (`[threads] wake_preempt_us`, measured on one core with
//!   `scenarios/calibration/wake-preempt*.toml`): the engine's one piece of
//!   the OS scheduler beyond processor sharing.
//!
//! Execution inside a thread is a stack of frames (an item's steps, a
//! `Parallel.For` replica, a PLINQ partition, a concurrency-limited
//! scheduler's processing loop, the caller of a parallel API); `await`
//! suspends the frames of the async method into a continuation that runs
//! later as pool work. The shapes live in `shapes`.
//!
//! The items alive are a window in submission order (`items`): a queued
//! item is its queue time and group (16 B, with its queue entry 24 B), and
//! gets the rest of its state (step, thread, start, end) when it runs.
//!
//! What differs between pools (when a thread is added, the goal) is asked of
//! the [`Policy`].
//!
//! The queues, thread requests, worker-loop decisions, timer queues,
//! throttles and thread counts are in `crate::pool::state`, which the native pool
//! (`crate::measure::native`) uses too; this module drives them on the
//! virtual clock.
//!
//! With a sink that keeps events ([`TraceSink::ENABLED`]) the engine records
//! the decisions the policy does not see as [`Decision`]s: an idle or
//! retired thread's timeout, a timer callback queued behind a backlog, a
//! worker waiting for its core after a release, a throttle handing its slot
//! to the next item. The policies record theirs
//! through [`PoolControl::decision`].

pub mod cpu;
mod deadlines;
mod items;
mod shapes;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use crate::policy::Wake;
use crate::policy::{BlockKind, Policy, PolicyConfig, PoolControl, PoolCounts, RequestCause};
use crate::pool::state::{
    Pair, PoolHost, PoolState, PoolWork, Semaphore, ThreadCounts, ThreadState, Throttles,
    WorkerNext,
};
use crate::pool::{ThreadKind, TimerAction};
use crate::rng;
use crate::scenario::{Arrival, Origin, Scenario, Step, Submit};
use crate::time::{SimDuration, SimTime};
use crate::trace::{
    CountSample, Decision, GoalReason, ItemId, Phase, ProbeRecord, ThreadId, ThreadReason,
    ThreadRecord, ThrottleKind, Trace, TraceEvent, TraceSink,
};
use cpu::Cpu;
use deadlines::IdleDeadlines;
use items::ItemStates;
use shapes::{AsyncWorker, Loop, Partition, Replica};

/// Limits on one run.
#[derive(Clone, Debug)]
pub struct SimOptions {
    /// Simulated-time limit; overrides the scenario's `until_ms`.
    pub until: Option<SimDuration>,
    /// Maximum number of events to process.
    pub max_events: u64,
}

/// Simulated-time limit when neither the scenario nor the caller sets one.
pub const DEFAULT_UNTIL: SimDuration = SimDuration::from_ms(7 * 24 * 3600 * 1000);
/// Event budget when the caller does not set one.
pub const DEFAULT_MAX_EVENTS: u64 = 2_000_000_000;

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            until: None,
            max_events: DEFAULT_MAX_EVENTS,
        }
    }
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every item finished.
    Completed,
    /// The simulated clock reached the limit with work unfinished.
    TimeLimit { at: SimTime, unfinished: u64 },
    /// The event budget ran out with work unfinished.
    EventBudget { events: u64, unfinished: u64 },
    /// Nothing left to happen, yet items are unfinished.
    Stalled { at: SimTime, unfinished: u64 },
    /// Every thread is blocked on work that needs a pool thread and the pool
    /// may not create another (sync-over-async at `max_threads`, a timer
    /// callback that can never run): nothing can ever progress.
    Deadlock {
        at: SimTime,
        unfinished: u64,
        /// Threads blocked, with the item each one is running (if any).
        blocked: Vec<(ThreadId, Option<ItemId>)>,
    },
}

impl Outcome {
    pub fn is_completed(&self) -> bool {
        matches!(self, Outcome::Completed)
    }
}

/// The result of one simulated run.
#[derive(Clone, Debug)]
pub struct RunResult {
    pub trace: Trace,
    pub outcome: Outcome,
    /// Events processed.
    pub events: u64,
}

/// Runs `scenario` under the policy `config`, sending detail events to `sink`.
///
/// The engine is compiled once per model here (its decision points then
/// inline into the event loop); [`simulate_with_policy`] runs any model
/// through a `dyn Policy`, with the same results.
pub fn simulate<S: TraceSink>(
    scenario: &Scenario,
    config: &PolicyConfig,
    sink: &mut S,
    options: &SimOptions,
) -> RunResult {
    use crate::policy::{Model, ModelRun, with_model};
    // Each model as its own type, from the model registry (`policy::build`
    // makes the same models behind `dyn Policy`).
    struct Run<'a, S> {
        scenario: &'a Scenario,
        config: &'a PolicyConfig,
        sink: &'a mut S,
        options: &'a SimOptions,
    }
    impl<S: TraceSink> ModelRun for Run<'_, S> {
        type Output = RunResult;
        fn run<M: Model>(self) -> RunResult {
            let model = Box::new(M::new(self.config, self.scenario));
            run_engine(self.scenario, self.config, model, self.sink, self.options)
        }
    }
    with_model(
        config.model,
        Run {
            scenario,
            config,
            sink,
            options,
        },
    )
}

/// Runs `scenario` under a model the caller built — its own [`Policy`]
/// implementation, or one from [`crate::policy::build`] — sending detail events to
/// `sink`. The model makes the decisions (when to add a thread, the goal,
/// whether a worker retires); `config` gives the mechanics every pool
/// shares (thread start and wake latencies, idle timeout, queues, thread
/// requests, timer dispatch, the library's parallel APIs). The trace
/// carries the model's [`Policy::name`]. [`simulate`] is this with the
/// model `config` names.
pub fn simulate_with_policy<S: TraceSink>(
    scenario: &Scenario,
    config: &PolicyConfig,
    policy: Box<dyn Policy>,
    sink: &mut S,
    options: &SimOptions,
) -> RunResult {
    run_engine(scenario, config, policy, sink, options)
}

fn run_engine<S: TraceSink, P: Policy + ?Sized>(
    scenario: &Scenario,
    config: &PolicyConfig,
    policy: Box<P>,
    sink: &mut S,
    options: &SimOptions,
) -> RunResult {
    let name = policy.name().to_string();
    let mut engine = Engine {
        world: World::new(scenario, config, policy.max_threads(), sink),
        dedicated: policy.dedicated_threads(),
        retire_on_stop: policy.retire_on_stop(),
        policy,
    };
    let mut result = engine.run(options);
    result.trace.policy = name;
    result
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum EventKind {
    /// The main thread submits the next items of a group.
    Arrival(u32),
    /// A created or released thread is ready for its first dequeue.
    ThreadReady(ThreadId, u64),
    /// A thread's timed activity (sleep, spin, release from a wait or a
    /// join, submitter pause) ends.
    StepDone(ThreadId, u64),
    /// The earliest CPU job may have finished.
    CpuCheck(u64),
    /// The timer thread notices an expired timer in queue `q`.
    TimerThread(u32, u64),
    /// The probe loop wakes from its sleep.
    Probe(u32),
    /// A wake-up the policy asked for ([`Wake::pack`]ed).
    PolicyWake(u64),
    /// An idle (or retired) thread's wait for work times out.
    IdleTimeout(ThreadId, u64),
    /// The main thread, off the one core since it created the pool's first
    /// worker, looks whether it gets the core back (`threads.main_yields_to_first_worker`);
    /// `true` once it has waited for a scheduler tick.
    MainResume(bool),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct EventKey {
    at: SimTime,
    seq: u64,
}

/// The FIFOs beside the event heap ([`World::fifos`]): one per kind of
/// event that is mostly scheduled in time order.
#[derive(Clone, Copy, Debug)]
enum Fifo {
    /// Threads ready after their start or wake latency.
    Ready,
}

const FIFOS: usize = 1;
// `World::pop_event` merges the one FIFO by hand: a second must be merged
// there too.
const _: () = assert!(FIFOS == 1, "pop_event reads fifos[Fifo::Ready] alone");

/// The size of one entry of the engine's event heap (for the benchmark's
/// bare-heap baseline, `examples/bench.rs`).
pub const EVENT_ENTRY_BYTES: usize = std::mem::size_of::<Reverse<(EventKey, EventKind)>>();

/// A unit of work in a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Work {
    /// Start a plain task item.
    Item(ItemId),
    /// Resume suspended frames (an `await` continuation).
    Continuation(u32),
    /// Fire the due timers of a timer queue.
    TimerQueue(u32),
    /// One due timer's callback.
    TimerCallback(u32),
    /// A responsiveness probe (`sw.Stop()`) of the given `[[probe]]` loop.
    Probe(u32),
    /// A pool work item submitting a group (`from = "pool"`).
    Submitter(u32),
    /// A `Parallel.For`/`ForEach` replica.
    Replica(u32),
    /// A PLINQ partition.
    Partition(u32),
    /// A `Parallel.ForEachAsync` worker.
    AsyncWorker(u32),
    /// A `ConcurrentExclusiveSchedulerPair` processing item.
    PairProcessor(u32),
}

/// What runs on a thread's stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Frame {
    Item(ItemId),
    Replica(u32),
    Partition(u32),
    AsyncWorker(u32),
    PairProcessor(u32),
    /// The thread that called a one-call API (`Parallel.For`, PLINQ, ...).
    Caller(u32),
    Submitter(u32),
}

/// What a frame step asks of the driver.
enum Flow {
    /// Wait for an event.
    Pending,
    /// Pop this frame; its parent continues.
    Done,
    /// Run a child frame first.
    Push(Frame),
    /// The frames were suspended (moved into a continuation); the rest of
    /// the stack continues.
    Suspended,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Activity {
    None,
    Cpu,
    Spin,
    /// A Stopwatch busy loop: a whole core until its wall-clock deadline.
    Busy,
    Sleep,
    Wait,
    /// Blocked joining a parallel call; the kind decides cooperative blocking.
    Join(BlockKind),
    SubmitterPause,
    /// Waiting for its core after waking a thread that took it.
    Preempted,
    /// Waiting for a pool thread it created to start (Mono's
    /// `mono_thread_create_internal` waits for the new thread to register),
    /// then goes on as [`PoolThread::after_creation`] says.
    CreatingThread,
}

#[derive(Debug)]
struct PoolThread {
    kind: ThreadKind,
    state: ThreadState,
    activity: Activity,
    /// Invalidates events scheduled for an earlier state.
    generation: u64,
    frames: Vec<Frame>,
    /// Where a worker's loop goes on once the thread it created has
    /// started ([`Activity::CreatingThread`]).
    after_creation: Option<WorkerNext<Work>>,
}

/// Who continues when an item's body ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    /// A task of its own: nothing.
    Task,
    /// A `Parallel.Invoke` action started as a task: the loop counts it.
    InvokeTask(u32),
    /// Run inline by its caller or a replica/partition/worker/processor:
    /// the parent frame continues.
    Parent,
    /// A `Parallel.ForEachAsync` worker: suspends with the item.
    AsyncWorker(u32),
    /// A task on a `ConcurrentExclusiveSchedulerPair`: continuations go
    /// back to the pair's queue.
    Pair(u32),
}

#[derive(Debug)]
struct GroupState {
    submitted: u64,
    finished: u64,
    next_at: SimTime,
    arrivals: Option<ChaCha8Rng>,
    pair: Option<u32>,
    semaphore: Option<u32>,
    /// The loop of a one-call shape, once called.
    call: Option<u32>,
}

#[derive(Debug)]
struct ProbeState {
    /// The probe record of the probe in flight, if any.
    in_flight: Option<u32>,
}

/// The state of a simulated run apart from the policy: the clock, the
/// pool state, threads, CPU, throttles and the trace (the machine's
/// processors are `Cpu`'s cores, not this).
struct World<'a, S: TraceSink> {
    scenario: &'a Scenario,
    sink: &'a mut S,
    now: SimTime,
    seq: u64,
    events: BinaryHeap<Reverse<(EventKey, EventKind)>>,
    /// Events kept off `events`, by [`Fifo`]: an event due no earlier than
    /// the last one in its FIFO joins it, one due earlier goes to the heap,
    /// so each FIFO is sorted by (time, sequence), and
    /// [`World::pop_event`] merges the fronts with the heap's top: events
    /// run in the same order as from one heap.
    fifos: [VecDeque<(EventKey, EventKind)>; FIFOS],
    /// Idle and retired threads' timeouts, one a thread, removed when the
    /// wait ends early: none goes stale.
    idle_deadlines: IdleDeadlines,
    /// The one pending CPU check (when the earliest job may finish) and
    /// the CPU generation it is for: replaced, not superseded, when the
    /// jobs change.
    cpu_check: Option<(EventKey, u64)>,
    /// Set while a CPU check ends its finished jobs: each of their next
    /// CPU steps changes the jobs, but only the check computed after the
    /// last of them counts ([`World::reschedule_cpu`]).
    cpu_batch: bool,
    /// One pending arrival kept beside the heap (a group's next submission;
    /// with one group arriving at a time, every arrival), merged by key.
    arrival: Option<(EventKey, u32)>,

    cpu: Cpu,
    cpu_generation: u64,
    /// The threads whose CPU work a check found finished (a reused buffer).
    cpu_finished: Vec<ThreadId>,

    threads: Vec<PoolThread>,
    main_thread: Option<ThreadId>,
    main_calls: VecDeque<u32>,
    /// The threads by state (shared with the native pool).
    tally: ThreadCounts,
    start_latency: crate::policy::config::Spread,
    /// The stream of the pool threads' start latencies, when they vary.
    start_rng: Option<ChaCha8Rng>,
    /// The pool's start-up latency (drawn once a run): the first pool
    /// thread is ready this long after it is created, until it is used.
    first_start_latency: Option<SimDuration>,
    /// When the pool's start-up ends (its first thread is ready): a thread
    /// created before then is not ready before it either.
    pool_ready_at: SimTime,
    wake_latency: SimDuration,
    /// How long a thread that creates a pool thread waits for it
    /// (`[mono] creation_wait_ms`; zero elsewhere).
    creation_wait: SimDuration,
    /// The creation waits owed by the worker whose loop runs now.
    creation_owed: SimDuration,
    dedicated_latency: SimDuration,
    idle_timeout: SimDuration,
    /// How long a `cpu_ms` step of one second takes in this run (drawn once
    /// from the policy's `cpu_second_ms`), when not exactly a second.
    cpu_second: Option<u64>,
    /// How late a `Thread.Sleep` returns, and its stream when it varies.
    sleep_overshoot: crate::policy::config::Spread,
    sleep_rng: Option<ChaCha8Rng>,
    /// The `TickCount` grid timers are due on (step, phase), if stepped.
    timer_grid: Option<(u64, u64)>,
    /// The stream of the timer thread's wake-up lateness, when it varies.
    timer_rng: Option<ChaCha8Rng>,
    /// How long a thread that released a CPU-bound waiter onto taken cores
    /// waits for its core (`threads.wake_preempt_us`; `None`: it does not),
    /// and its stream.
    wake_preemption: Option<crate::policy::config::Spread>,
    preempt_rng: Option<ChaCha8Rng>,

    /// The main thread, on one core, loses it to the pool's first worker
    /// (`threads.main_yields_to_first_worker`); `main_waiting` holds the
    /// groups whose submissions wait meanwhile, in arrival order.
    main_yields: bool,
    main_waiting: Option<Vec<u32>>,
    /// When the main thread lost the core, while it waits (for `explain`).
    main_waiting_since: SimTime,
    /// Whether its return is scheduled.
    main_resume_scheduled: bool,

    /// Queues, thread requests and timers (shared with the native pool).
    pool: PoolState<Work, TimerAction>,
    /// `Enumerable.Range` is a list: `Parallel.ForEach` over it partitions as `For`.
    range_is_list: bool,

    continuations: Vec<Option<Vec<Frame>>>,
    /// The engine's state of the items alive.
    items: ItemStates,

    groups: Vec<GroupState>,
    loops: Vec<Loop>,
    replicas: Vec<Replica>,
    partitions: Vec<Partition>,
    async_workers: Vec<AsyncWorker>,
    pairs: Vec<Pair<Work>>,
    /// Waiters: continuations.
    semaphores: Vec<Semaphore<u32>>,

    items_total: u64,
    items_finished: u64,
    /// The latest end of an item so far.
    last_finish: SimTime,
    probes: Vec<ProbeState>,

    goal: Option<u32>,
    trace: Trace,
}

struct Engine<'a, S: TraceSink, P: Policy + ?Sized> {
    world: World<'a, S>,
    policy: Box<P>,
    dedicated: bool,
    retire_on_stop: bool,
}

impl<'a, S: TraceSink> World<'a, S> {
    fn new(
        scenario: &'a Scenario,
        config: &PolicyConfig,
        max_threads: u32,
        sink: &'a mut S,
    ) -> Self {
        let cores = scenario.machine.cores;
        let throttles = Throttles::new(scenario, config);
        let groups = scenario
            .groups
            .iter()
            .zip(&throttles.of_group)
            .map(|(g, &(pair, semaphore))| {
                let (start, arrivals) = match &g.arrival {
                    Arrival::At(at) => (*at, None),
                    // Scheduled when the earlier group finishes.
                    Arrival::After { .. } => (SimDuration(u64::MAX), None),
                    Arrival::Every { start, .. } => (*start, None),
                    Arrival::Poisson { start, .. } => (
                        *start,
                        Some(rng::stream(
                            scenario.workload_seed(),
                            &format!("arrivals/{}", g.name),
                        )),
                    ),
                };
                GroupState {
                    submitted: 0,
                    finished: 0,
                    next_at: SimTime::ZERO + start,
                    arrivals,
                    pair,
                    semaphore,
                    call: None,
                }
            })
            .collect();
        let items_total = scenario.item_count();
        let reserve = items_total.min(1 << 24) as usize;
        World {
            scenario,
            sink,
            now: SimTime::ZERO,
            seq: 0,
            events: BinaryHeap::new(),
            fifos: Default::default(),
            idle_deadlines: IdleDeadlines::default(),
            cpu_check: None,
            cpu_batch: false,
            arrival: None,
            cpu: Cpu::new(cores, config.threads.spin_cpu_percent),
            cpu_generation: 0,
            cpu_finished: Vec::new(),
            threads: Vec::new(),
            main_thread: None,
            main_calls: VecDeque::new(),
            tally: ThreadCounts::new(max_threads),
            start_latency: config.threads.start_latency.clone(),
            start_rng: (!config.threads.start_latency.is_fixed())
                .then(|| rng::stream(scenario.seed, "thread-start")),
            first_start_latency: Some(
                config
                    .threads
                    .first_start_latency
                    .draw(&mut rng::stream(scenario.seed, "first-thread-start")),
            ),
            pool_ready_at: SimTime::ZERO,
            wake_latency: config.threads.wake_latency,
            creation_wait: config
                .mono
                .as_ref()
                .map_or(SimDuration::ZERO, |m| m.creation_wait),
            creation_owed: SimDuration::ZERO,
            dedicated_latency: config.threads.dedicated_start_latency,
            idle_timeout: config.threads.idle_timeout,
            cpu_second: {
                let spread = &config.threads.cpu_second;
                let second = if spread.is_fixed() {
                    spread.min()
                } else {
                    spread.draw(&mut rng::stream(scenario.seed, "cpu-rate"))
                };
                (second != SimDuration::from_ms(1000)).then(|| second.as_nanos())
            },
            sleep_overshoot: config.threads.sleep_overshoot.clone(),
            sleep_rng: (!config.threads.sleep_overshoot.is_fixed())
                .then(|| rng::stream(scenario.seed, "sleep-overshoot")),
            timer_grid: config.timers.tick_count.map(|step| {
                let step = step.as_nanos().max(1);
                let phase = crate::policy::gate::tick_count_phase(
                    scenario.seed,
                    crate::policy::gate::GATE_STREAM,
                    step,
                );
                (step, phase)
            }),
            timer_rng: (!config.threads.sleep_overshoot.is_fixed())
                .then(|| rng::stream(scenario.seed, "timer-overshoot")),
            wake_preemption: Some(config.threads.wake_preemption.clone())
                .filter(|w| *w != crate::policy::config::Spread::fixed(SimDuration::ZERO)),
            preempt_rng: (!config.threads.wake_preemption.is_fixed())
                .then(|| rng::stream(scenario.seed, "wake-preempt")),
            main_yields: config.threads.main_yields_to_first_worker && cores == 1,
            main_waiting: None,
            main_waiting_since: SimTime::ZERO,
            main_resume_scheduled: false,
            pool: PoolState::new(config, cores, scenario.seed),
            range_is_list: config.library.range_is_list,
            continuations: Vec::new(),
            items: if S::ITEM_RECORDS {
                ItemStates::new(S::KEEP_ITEMS, reserve)
            } else {
                ItemStates::unrecorded()
            },
            groups,
            loops: Vec::new(),
            replicas: Vec::new(),
            partitions: Vec::new(),
            async_workers: Vec::new(),
            pairs: throttles.pairs,
            semaphores: throttles.semaphores,
            items_total,
            items_finished: 0,
            last_finish: SimTime::ZERO,
            probes: scenario
                .probes
                .iter()
                .map(|_| ProbeState { in_flight: None })
                .collect(),
            goal: None,
            trace: crate::pool::state::new_trace(scenario, config, 0),
        }
    }

    fn schedule(&mut self, at: SimTime, kind: EventKind) {
        let at = at.max(self.now);
        self.seq += 1;
        let key = EventKey { at, seq: self.seq };
        if let EventKind::Arrival(g) = kind
            && self.arrival.is_none()
        {
            self.arrival = Some((key, g));
            return;
        }
        self.events.push(Reverse((key, kind)));
    }

    /// The time a `cpu_ms` step of `d` takes on a core of its own in this
    /// run (`cpu_second_ms`).
    fn cpu_work(&self, d: SimDuration) -> SimDuration {
        match self.cpu_second {
            None => d,
            Some(second) => SimDuration::from_nanos(
                (u128::from(d.as_nanos()) * u128::from(second) / 1_000_000_000) as u64,
            ),
        }
    }

    /// When a `Thread.Sleep(d)` started now returns: `d` late by the
    /// policy's measured overshoot (drawn from the `sleep-overshoot` stream).
    fn sleep_end(&mut self, d: SimDuration) -> SimTime {
        self.now + d + self.sleep_overshoot.draw_from(self.sleep_rng.as_mut())
    }

    /// When a timer of `d` created now is due: `d` after now, or, on a
    /// stepped `TickCount` (`timers.tick_count`), at the first step at
    /// least `d` after the step now reads.
    fn timer_due(&self, d: SimDuration) -> SimTime {
        let Some((step, phase)) = self.timer_grid else {
            return self.now + d;
        };
        let read = (self.now.as_nanos() + phase) / step * step;
        let due = (read + d.as_nanos()).div_ceil(step) * step;
        SimTime(due.saturating_sub(phase)).max(self.now)
    }

    /// When the timer thread, waiting for `due`, wakes: late by a draw of
    /// the policy's sleep overshoot (a timed wait like `Thread.Sleep`), from
    /// the `timer-overshoot` stream.
    fn timer_wake(&mut self, due: SimTime) -> SimTime {
        due + self.sleep_overshoot.draw_from(self.timer_rng.as_mut())
    }

    /// Schedules `kind` at `at` in `fifo`, or in the heap if it is due
    /// before the FIFO's last event.
    #[inline]
    fn schedule_in(&mut self, fifo: Fifo, at: SimTime, kind: EventKind) {
        let at = at.max(self.now);
        self.seq += 1;
        let key = EventKey { at, seq: self.seq };
        let queue = &mut self.fifos[fifo as usize];
        if queue.back().is_none_or(|(last, _)| last.at <= at) {
            queue.push_back((key, kind));
        } else {
            self.events.push(Reverse((key, kind)));
        }
    }

    /// The next event by (time, sequence): the heap's, a FIFO's, the
    /// earliest idle deadline, the CPU check or the next arrival.
    ///
    /// Each source's first key is packed into one `u128` (`u128::MAX` for
    /// none) and the least is taken without a branch per source (which
    /// source wins changes from one event to the next). Sequence numbers
    /// are unique, so the least key names its source.
    #[inline(always)]
    fn pop_event(&mut self) -> Option<(EventKey, EventKind)> {
        #[inline(always)]
        fn packed(key: Option<EventKey>) -> u128 {
            key.map_or(u128::MAX, |k| {
                (u128::from(k.at.as_nanos()) << 64) | u128::from(k.seq)
            })
        }
        let heap = packed(self.events.peek().map(|Reverse((key, _))| *key));
        let ready = packed(
            self.fifos[Fifo::Ready as usize]
                .front()
                .map(|&(key, _)| key),
        );
        let idle = packed(self.idle_deadlines.first().map(|(key, _, _)| key));
        let cpu = packed(self.cpu_check.map(|(key, _)| key));
        let arrival = packed(self.arrival.map(|(key, _)| key));
        let least = heap.min(ready).min(idle).min(cpu).min(arrival);
        if least == u128::MAX {
            return None;
        }
        if least == ready {
            self.fifos[Fifo::Ready as usize].pop_front()
        } else if least == cpu {
            self.cpu_check
                .take()
                .map(|(key, generation)| (key, EventKind::CpuCheck(generation)))
        } else if least == arrival {
            self.arrival
                .take()
                .map(|(key, g)| (key, EventKind::Arrival(g)))
        } else if least == idle {
            self.pop_idle_deadline()
        } else {
            self.pop_heap()
        }
    }

    /// The earliest idle deadline as an event (rare: kept out of line).
    #[cold]
    #[inline(never)]
    fn pop_idle_deadline(&mut self) -> Option<(EventKey, EventKind)> {
        self.idle_deadlines
            .pop()
            .map(|(key, t, generation)| (key, EventKind::IdleTimeout(t, generation)))
    }

    /// The heap's first event (out of line: most events come from the
    /// FIFOs and slots, and the heap's sift would bloat the caller).
    #[inline(never)]
    fn pop_heap(&mut self) -> Option<(EventKey, EventKind)> {
        self.events.pop().map(|Reverse(event)| event)
    }

    /// Arms `thread`'s idle (or retired) wait timeout, due `idle_timeout`
    /// from now, for its state of `generation`.
    fn arm_idle_timeout(&mut self, thread: ThreadId, generation: u64) {
        self.seq += 1;
        let key = EventKey {
            at: self.now + self.idle_timeout,
            seq: self.seq,
        };
        self.idle_deadlines.arm(thread, key, generation);
    }

    fn record(&mut self, event: TraceEvent) {
        self.sink.record(self.now, event);
    }

    fn phase(&mut self, thread: ThreadId, phase: Phase, item: Option<ItemId>) {
        if !S::ENABLED {
            return;
        }
        // A thread's phase is of an item alive: its group is in the window.
        let group = item.map(|i| self.items.group(i));
        self.sink.record(
            self.now,
            TraceEvent::ThreadPhase {
                thread,
                phase,
                item,
                group,
            },
        );
    }

    fn th(&mut self, t: ThreadId) -> &mut PoolThread {
        &mut self.threads[t as usize]
    }

    fn is_pool(&self, t: ThreadId) -> bool {
        self.threads[t as usize].kind == ThreadKind::Pool
    }

    fn sample_counts(&mut self) {
        let sample = CountSample {
            at: self.now,
            threads: self.tally.alive(),
            goal: self.goal,
        };
        crate::pool::state::sample_counts(&mut self.trace.counts, sample);
    }

    /// Whether no thread can ever make progress again: the pool is at its
    /// maximum with no idle, starting or retired thread, nothing runs on a
    /// core or sleeps, no more work will arrive, and every thread is blocked
    /// in a task wait or a join — waits that only pool work can end.
    fn deadlocked(&self) -> bool {
        if self.unfinished() == 0
            || self.tally.existing + (self.tally.retired.len() as u32) < self.tally.max_threads
            || !self.tally.idle.is_empty()
            || !self.tally.retired.is_empty()
            || self.tally.starting > 0
            || self.cpu.runnable() > 0
            || self.tally.blocked_sleep > 0
        {
            return false;
        }
        // Work the main thread will still submit (a pool-origin group's
        // submitter is pool work: queued, it waits like the rest).
        let arrivals_pending = self
            .scenario
            .groups
            .iter()
            .zip(&self.groups)
            .any(|(g, st)| {
                let due_later = if g.submit.one_call() {
                    st.call.is_none()
                } else {
                    st.submitted < g.count
                };
                g.from == Origin::Main && due_later && !matches!(g.arrival, Arrival::After { .. })
            });
        if arrivals_pending {
            return false;
        }
        self.threads.iter().all(|t| match t.state {
            ThreadState::Exited => true,
            ThreadState::Active => match t.activity {
                Activity::Wait | Activity::Join(_) => true,
                // A main thread with nothing left to run is done, not stuck.
                Activity::None => t.kind == ThreadKind::Main && t.frames.is_empty(),
                _ => false,
            },
            _ => false,
        })
    }

    fn blocked_threads(&self) -> Vec<(ThreadId, Option<ItemId>)> {
        self.threads
            .iter()
            .enumerate()
            .filter(|(_, t)| {
                t.state == ThreadState::Active
                    && matches!(t.activity, Activity::Wait | Activity::Join(_))
            })
            .map(|(i, t)| {
                let item = match t.frames.last() {
                    Some(Frame::Item(item)) => Some(*item),
                    _ => None,
                };
                (i as ThreadId, item)
            })
            .collect()
    }

    fn unfinished(&self) -> u64 {
        self.items_total - self.items_finished
    }

    fn all_done(&self) -> bool {
        self.items_finished == self.items_total && self.probes.iter().all(|p| p.in_flight.is_none())
    }

    /// A new item of group `g`, queued now.
    fn new_item(&mut self, g: u32, owner: Owner) -> ItemId {
        self.items.push(g, owner, self.now)
    }

    /// `item` ended now: the records that leave the window go out.
    fn item_ended(&mut self, item: ItemId) {
        self.last_finish = self.last_finish.max(self.now);
        self.items.finish(item, self.now);
        self.emit_items(false);
    }

    /// Lets the items that ended leave the window (every one, with `all`),
    /// handing their records to the sink in submission order (kept for the
    /// trace, they stay: [`ItemStates::into_records`]).
    fn emit_items(&mut self, all: bool) {
        while let Some(record) = self.items.pop_ended(all) {
            if let Some(record) = record {
                self.sink.item(&record);
            }
        }
    }

    // ---- queues -------------------------------------------------------

    fn queue_changed(&mut self) {
        self.record(TraceEvent::QueueLength {
            queued: self.pool.queued(),
        });
    }

    fn enqueue_global(&mut self, work: Work) {
        self.pool.enqueue_global(work);
        self.queue_changed();
    }

    fn enqueue_local(&mut self, thread: ThreadId, work: Work) {
        self.pool.enqueue_local(thread, work);
        self.queue_changed();
    }

    /// Queues from `from`: a pool thread's local queue, else the global queue.
    fn enqueue_from(&mut self, from: Option<ThreadId>, work: Work) {
        if S::ENABLED
            && let Work::Continuation(cont) = work
        {
            self.note_semaphore_grant(from, cont);
        }
        match from {
            Some(t) if self.is_pool(t) => self.enqueue_local(t, work),
            _ => self.enqueue_global(work),
        }
    }

    /// A continuation of an item that holds its group's semaphore but has
    /// not started is a waiter the semaphore was just released to
    /// (`SemaphoreSlim.Release()` in the item `from` runs): a hand-off.
    fn note_semaphore_grant(&mut self, from: Option<ThreadId>, cont: u32) {
        let Some(&Frame::Item(to)) = self.continuations[cont as usize]
            .as_ref()
            .and_then(|frames| frames.last())
        else {
            return;
        };
        let state = self.items.get(to);
        if !state.acquired || state.started {
            return;
        }
        let Some(sem) = self.groups[state.group as usize].semaphore else {
            return;
        };
        let from_item = from.and_then(|t| match self.threads[t as usize].frames.last() {
            Some(&Frame::Item(item)) => Some(item),
            _ => None,
        });
        let semaphore = &self.semaphores[sem as usize];
        let decision = Decision::ThrottleHandOff {
            kind: ThrottleKind::Semaphore,
            from: from_item,
            to,
            limit: semaphore.limit(),
            waiting: semaphore.waiting() as u32,
        };
        self.record(TraceEvent::Decision(decision));
    }

    /// Removes `work` from `thread`'s local queue if it is there (the
    /// inlining of `Task.Wait` on a task the waiter queued itself).
    fn take_from_local(&mut self, thread: ThreadId, work: Work) -> bool {
        let taken = self.pool.take_from_local(thread, work);
        if taken {
            self.queue_changed();
        }
        taken
    }

    // ---- threads ------------------------------------------------------

    fn new_thread(&mut self, kind: ThreadKind, reason: ThreadReason) -> ThreadId {
        let id = self.threads.len() as ThreadId;
        self.threads.push(PoolThread {
            kind,
            state: ThreadState::Starting,
            activity: Activity::None,
            generation: 0,
            frames: Vec::new(),
            after_creation: None,
        });
        self.pool.add_thread();
        self.trace.threads.push(ThreadRecord {
            thread: id,
            created: self.now,
            reason,
            exited: None,
        });
        self.record(TraceEvent::ThreadCreated { thread: id, reason });
        id
    }

    fn create_pool_thread(&mut self, reason: ThreadReason) -> ThreadId {
        let id = self.new_thread(ThreadKind::Pool, reason);
        self.tally.existing += 1;
        self.tally.starting += 1;
        self.phase(id, Phase::Starting, None);
        self.sample_counts();
        let ready = match self.first_start_latency.take() {
            Some(start_up) => {
                self.pool_ready_at = self.now + start_up;
                self.pool_ready_at
            }
            None => (self.now + self.thread_start_latency()).max(self.pool_ready_at),
        };
        self.schedule_in(Fifo::Ready, ready, EventKind::ThreadReady(id, 0));
        id
    }

    /// A new pool thread's start latency: drawn from the `thread-start`
    /// stream when the policy measured it as a distribution.
    fn thread_start_latency(&mut self) -> SimDuration {
        self.start_latency.draw_from(self.start_rng.as_mut())
    }

    /// A dedicated thread (`new Thread`) that runs `frame` and exits.
    fn create_dedicated_thread(&mut self, frame: Frame, latency: SimDuration) -> ThreadId {
        let id = self.new_thread(ThreadKind::Dedicated, ThreadReason::Dedicated);
        self.threads[id as usize].frames.push(frame);
        self.tally.dedicated_alive += 1;
        self.phase(id, Phase::Starting, None);
        self.sample_counts();
        self.schedule_in(
            Fifo::Ready,
            self.now + latency,
            EventKind::ThreadReady(id, 0),
        );
        id
    }

    /// The main thread, created the first time it runs work.
    fn main_thread(&mut self) -> ThreadId {
        if let Some(t) = self.main_thread {
            return t;
        }
        let id = self.new_thread(ThreadKind::Main, ThreadReason::Main);
        self.threads[id as usize].state = ThreadState::Active;
        self.main_thread = Some(id);
        id
    }

    fn make_idle(&mut self, thread: ThreadId) {
        let t = &mut self.threads[thread as usize];
        t.state = ThreadState::Idle;
        t.activity = Activity::None;
        t.generation += 1;
        let generation = t.generation;
        self.tally.idle.push(thread);
        self.phase(thread, Phase::Idle, None);
        self.arm_idle_timeout(thread, generation);
    }

    fn release_idle(&mut self) -> bool {
        let Some(thread) = self.tally.release_idle() else {
            return false;
        };
        self.idle_deadlines.disarm(thread);
        let t = &mut self.threads[thread as usize];
        t.state = ThreadState::Starting;
        t.generation += 1;
        let generation = t.generation;
        self.phase(thread, Phase::Starting, None);
        self.schedule_in(
            Fifo::Ready,
            self.now + self.wake_latency,
            EventKind::ThreadReady(thread, generation),
        );
        true
    }

    /// Retires a working thread (it stops counting as active) until it is
    /// brought back or its wait times out.
    fn retire(&mut self, thread: ThreadId) {
        let t = &mut self.threads[thread as usize];
        t.state = ThreadState::Retired;
        t.activity = Activity::None;
        t.generation += 1;
        let generation = t.generation;
        self.tally.retire(thread);
        self.phase(thread, Phase::Idle, None);
        self.sample_counts();
        self.arm_idle_timeout(thread, generation);
    }

    fn unretire(&mut self) -> bool {
        let Some(thread) = self.tally.unretire() else {
            return false;
        };
        self.idle_deadlines.disarm(thread);
        let t = &mut self.threads[thread as usize];
        t.state = ThreadState::Starting;
        t.generation += 1;
        let generation = t.generation;
        self.phase(thread, Phase::Starting, None);
        self.sample_counts();
        self.schedule_in(
            Fifo::Ready,
            self.now + self.wake_latency,
            EventKind::ThreadReady(thread, generation),
        );
        true
    }

    fn exit_thread(&mut self, thread: ThreadId) {
        self.idle_deadlines.disarm(thread);
        let (state, kind) = {
            let t = &self.threads[thread as usize];
            (t.state, t.kind)
        };
        match kind {
            ThreadKind::Dedicated => self.tally.dedicated_alive -= 1,
            ThreadKind::Main => {}
            ThreadKind::Pool => self.tally.pool_thread_exited(thread, state),
        }
        let t = &mut self.threads[thread as usize];
        t.state = ThreadState::Exited;
        t.generation += 1;
        self.trace.threads[thread as usize].exited = Some(self.now);
        self.record(TraceEvent::ThreadExited { thread });
        self.sample_counts();
    }

    /// The CPU jobs changed: the one check is now for the new earliest
    /// completion (if any).
    fn reschedule_cpu(&mut self) {
        self.cpu_generation += 1;
        if self.cpu_batch {
            // The check is computed when the batch ends; the sequence
            // numbers go on as if it were computed now, so every other
            // event keeps its key.
            if self.cpu.has_jobs() {
                self.seq += 1;
            }
            self.cpu_check = None;
            return;
        }
        self.cpu_check = self.cpu.next_completion().map(|at| {
            self.seq += 1;
            let key = EventKey {
                at: at.max(self.now),
                seq: self.seq,
            };
            (key, self.cpu_generation)
        });
    }

    fn store_continuation(&mut self, frames: Vec<Frame>) -> u32 {
        let id = self.continuations.len() as u32;
        self.continuations.push(Some(frames));
        id
    }
}

/// Whether `waiter`'s item goes on with CPU work (`cpu_ms`, `busy_ms`) once
/// released from its current step.
fn next_step_is_cpu<S: TraceSink>(world: &World<'_, S>, waiter: ThreadId) -> bool {
    let Some(&Frame::Item(item)) = world.threads[waiter as usize].frames.last() else {
        return false;
    };
    let state = world.items.get(item);
    let body = &world.scenario.groups[state.group as usize].body;
    matches!(
        body.get(state.step as usize + 1),
        Some(Step::Cpu(_) | Step::Busy(_))
    )
}

impl<S: TraceSink> PoolControl for World<'_, S> {
    fn now(&self) -> SimTime {
        self.now
    }
    fn cores(&self) -> u32 {
        self.scenario.machine.cores
    }
    fn counts(&self) -> PoolCounts {
        self.tally.snapshot(&self.pool)
    }
    fn cpu_busy_core_ns(&mut self) -> u128 {
        self.cpu.advance(self.now);
        self.cpu.busy_core_ns()
    }
    fn cores_taken(&self) -> bool {
        self.cpu.cores_taken()
    }
    fn add_worker(&mut self, reason: ThreadReason) -> bool {
        if self.release_idle() || self.unretire() {
            return true;
        }
        if self.tally.at_max() {
            return false;
        }
        self.create_pool_thread(reason);
        self.creation_owed = self.creation_owed + self.creation_wait;
        true
    }
    fn wake_at(&mut self, at: SimTime, wake: Wake) {
        self.schedule(at, EventKind::PolicyWake(wake.pack()));
    }
    fn goal_changed(&mut self, goal: u32, reason: GoalReason) {
        self.goal = Some(goal);
        self.record(TraceEvent::GoalChanged { goal, reason });
        self.sample_counts();
    }
    fn decision(&mut self, decision: Decision) {
        if S::ENABLED {
            self.record(TraceEvent::Decision(decision));
        }
    }
}

impl PoolWork for Work {
    const TIMER_QUEUE: fn(u32) -> Self = Work::TimerQueue;
    const TIMER_CALLBACK: fn(u32) -> Self = Work::TimerCallback;
}

impl<S: TraceSink, P: Policy + ?Sized> PoolHost for Engine<'_, S, P> {
    type Work = Work;
    type Timer = TimerAction;

    fn state(&mut self) -> &mut PoolState<Work, TimerAction> {
        &mut self.world.pool
    }
    fn clock(&self) -> SimTime {
        self.world.now
    }
    fn seeking_work(&mut self, t: ThreadId) {
        self.policy.seeking_work(&mut self.world, t);
    }
    fn found_no_request(&mut self, t: ThreadId) {
        self.policy.found_no_request(&mut self.world, t);
    }
    fn thread_requested(&mut self, cause: RequestCause) {
        self.policy.thread_requested(&mut self.world, cause);
    }
    fn queue_changed(&mut self) {
        self.world.queue_changed();
    }
    fn wake_timer_thread(&mut self, q: u32, due: SimTime, generation: u64) {
        let at = self.world.timer_wake(due);
        self.world
            .schedule(at, EventKind::TimerThread(q, generation));
    }
    fn timer_backlog(&mut self, timer: Option<u32>, queue: u32, ahead: u64, via: &'static str) {
        if !S::ENABLED {
            return;
        }
        let releases = timer.and_then(|id| match self.world.pool.timer(id) {
            TimerAction::ReleaseWaiter(t) => Some(t),
            TimerAction::Resume(_) => None,
        });
        self.world
            .record(TraceEvent::Decision(Decision::TimerBacklog {
                timer,
                queue,
                ahead,
                via,
                releases,
            }));
    }
}

impl<S: TraceSink, P: Policy + ?Sized> Engine<'_, S, P> {
    fn run(&mut self, options: &SimOptions) -> RunResult {
        let until = options
            .until
            .or(self.world.scenario.until)
            .unwrap_or(DEFAULT_UNTIL);
        let limit = SimTime::ZERO + until;
        self.policy.start(&mut self.world);
        for g in 0..self.world.groups.len() {
            let group = &self.world.scenario.groups[g];
            if group.count > 0 && !matches!(group.arrival, Arrival::After { .. }) {
                let at = self.world.groups[g].next_at;
                self.world.schedule(at, EventKind::Arrival(g as u32));
            }
        }
        for (p, probe) in self.world.scenario.probes.iter().enumerate() {
            self.world
                .schedule(SimTime::ZERO + probe.every, EventKind::Probe(p as u32));
        }
        let mut events = 0u64;
        let outcome = loop {
            if self.world.all_done() {
                break Outcome::Completed;
            }
            let Some((key, kind)) = self.world.pop_event() else {
                if self.world.deadlocked() {
                    break Outcome::Deadlock {
                        at: self.world.now,
                        unfinished: self.world.unfinished(),
                        blocked: self.world.blocked_threads(),
                    };
                }
                break Outcome::Stalled {
                    at: self.world.now,
                    unfinished: self.world.unfinished(),
                };
            };
            if key.at > limit {
                self.world.now = limit;
                break Outcome::TimeLimit {
                    at: limit,
                    unfinished: self.world.unfinished(),
                };
            }
            if events >= options.max_events {
                break Outcome::EventBudget {
                    events,
                    unfinished: self.world.unfinished(),
                };
            }
            events += 1;
            self.world.now = key.at;
            if matches!(kind, EventKind::PolicyWake(_)) && self.world.deadlocked() {
                break Outcome::Deadlock {
                    at: self.world.now,
                    unfinished: self.world.unfinished(),
                    blocked: self.world.blocked_threads(),
                };
            }
            self.handle(kind);
        };
        let world = &mut self.world;
        world.cpu.advance(world.now);
        world.trace.cpu_busy_ns = Some(world.cpu.busy_core_ns());
        // The items still in the window (unfinished) go out too.
        world.emit_items(true);
        if S::KEEP_ITEMS && S::ITEM_RECORDS {
            let items = std::mem::replace(&mut world.items, ItemStates::new(true, 0));
            world.trace.items = items.into_records();
        }
        world.trace.end = if outcome.is_completed() && world.items_total > 0 {
            world.last_finish
        } else {
            world.now
        };
        RunResult {
            trace: std::mem::replace(&mut world.trace, crate::pool::state::empty_trace()),
            outcome,
            events,
        }
    }

    fn handle(&mut self, kind: EventKind) {
        match kind {
            EventKind::Arrival(g) => self.arrival(g),
            EventKind::ThreadReady(t, generation) => {
                let th = self.world.th(t);
                if th.generation != generation || th.state != ThreadState::Starting {
                    return;
                }
                th.state = ThreadState::Active;
                match th.kind {
                    ThreadKind::Pool => {
                        self.world.tally.starting -= 1;
                        self.worker_loop(t, WorkerNext::Seek);
                        // The first worker has dispatched and its work has
                        // started: the main thread, waiting for the core,
                        // looks whether it gets it.
                        if self.world.main_waiting.is_some() && !self.world.main_resume_scheduled {
                            self.world.main_resume_scheduled = true;
                            self.world
                                .schedule(self.world.now, EventKind::MainResume(false));
                        }
                    }
                    ThreadKind::Dedicated | ThreadKind::Main => self.resume(t),
                }
            }
            EventKind::StepDone(t, generation) => {
                if self.world.th(t).generation != generation {
                    return;
                }
                self.step_done(t);
            }
            EventKind::CpuCheck(generation) => {
                debug_assert_eq!(generation, self.world.cpu_generation, "a stale CPU check");
                if generation != self.world.cpu_generation {
                    return;
                }
                self.world.cpu.advance(self.world.now);
                // The buffer is reused: a CPU check ends about one job an item.
                let mut finished = std::mem::take(&mut self.world.cpu_finished);
                self.world.cpu.pop_finished(&mut finished);
                self.world.cpu_batch = true;
                for &t in &finished {
                    self.world.th(t).activity = Activity::None;
                    self.step_finished(t);
                }
                self.world.cpu_batch = false;
                finished.clear();
                self.world.cpu_finished = finished;
                self.world.reschedule_cpu();
            }
            EventKind::TimerThread(q, generation) => self.timer_thread(q, generation),
            EventKind::Probe(p) => self.probe(p),
            EventKind::PolicyWake(wake) => self.policy.wake(&mut self.world, Wake::unpack(wake)),
            EventKind::MainResume(waited) => self.main_resume(waited),
            EventKind::IdleTimeout(t, generation) => self.idle_timeout(t, generation),
        }
    }

    /// Probe loop `p` wakes: its probe is queued (rare: kept out of the
    /// event loop's hot path).
    #[cold]
    #[inline(never)]
    fn probe(&mut self, p: u32) {
        if self.world.items_finished == self.world.items_total {
            return;
        }
        let id = self.world.trace.probes.len() as u32;
        self.world.trace.probes.push(ProbeRecord {
            queued: self.world.now,
            started: SimTime::MAX,
        });
        self.world.probes[p as usize].in_flight = Some(id);
        self.world.record(TraceEvent::ProbeQueued { probe: id });
        self.world.enqueue_global(Work::Probe(p));
        self.request_thread(RequestCause::Enqueue);
    }

    /// An idle (or retired) thread's wait for work timed out (rare: kept
    /// out of the event loop's hot path).
    #[cold]
    #[inline(never)]
    fn idle_timeout(&mut self, t: ThreadId, generation: u64) {
        let th = self.world.th(t);
        debug_assert_eq!(th.generation, generation, "a stale idle timeout");
        if th.generation != generation {
            return;
        }
        let state = th.state;
        let goal = self.world.goal;
        let (retired, exits) = match state {
            ThreadState::Retired => {
                self.world.exit_thread(t);
                (true, true)
            }
            ThreadState::Idle => {
                if self.policy.idle_timed_out(&mut self.world, t) {
                    self.world.exit_thread(t);
                    (false, true)
                } else {
                    self.world.tally.idle.retain(|&i| i != t);
                    self.world.make_idle(t);
                    (false, false)
                }
            }
            _ => return,
        };
        if S::ENABLED {
            let decision = Decision::IdleTimeout {
                thread: t,
                waited: self.world.idle_timeout,
                retired,
                exits,
                goal,
                new_goal: self.world.goal,
            };
            self.world.record(TraceEvent::Decision(decision));
        }
    }

    /// Submits user work: a plain task to the pool (or its throttle), or a
    /// dedicated thread.
    fn submit_task(&mut self, g: u32, from: Option<ThreadId>) {
        let group = &self.world.scenario.groups[g as usize];
        let (submit, pair) = (group.submit, self.world.groups[g as usize].pair);
        if submit == Submit::NewThread || (self.dedicated && pair.is_none()) {
            let item = self.world.new_item(g, Owner::Task);
            self.world.record(TraceEvent::ItemQueued {
                item,
                local_of: None,
            });
            let latency = if submit == Submit::NewThread {
                self.world.dedicated_latency
            } else {
                self.world.thread_start_latency()
            };
            self.world
                .create_dedicated_thread(Frame::Item(item), latency);
            return;
        }
        if let Some(p) = pair {
            let item = self.world.new_item(g, Owner::Pair(p));
            self.world.record(TraceEvent::ItemQueued {
                item,
                local_of: None,
            });
            self.pair_push(p, Work::Item(item), from);
            return;
        }
        let item = self.world.new_item(g, Owner::Task);
        let local = match (submit, from) {
            (Submit::QueueUserWorkItem, _) => None,
            (_, Some(t)) if self.world.is_pool(t) => Some(t),
            _ => None,
        };
        self.world.record(TraceEvent::ItemQueued {
            item,
            local_of: local,
        });
        match local {
            Some(t) => self.world.enqueue_local(t, Work::Item(item)),
            None => self.world.enqueue_global(Work::Item(item)),
        }
        self.request_thread(RequestCause::Enqueue);
    }

    fn arrival(&mut self, g: u32) {
        if let Some(waiting) = self.world.main_waiting.as_mut() {
            // The main thread is off the core: this group's submissions wait.
            waiting.push(g);
            return;
        }
        let group = &self.world.scenario.groups[g as usize];
        if group.from == Origin::Pool {
            // Task.Run(() => { ...submit... }) from the main thread.
            self.world.enqueue_global(Work::Submitter(g));
            self.request_thread(RequestCause::Enqueue);
            return;
        }
        if group.submit.one_call() {
            let lp = self.start_call(g);
            let main = self.world.main_thread();
            if self.world.th(main).frames.is_empty() {
                self.world.th(main).frames.push(Frame::Caller(lp));
                self.resume(main);
            } else {
                self.world.main_calls.push_back(lp);
            }
            return;
        }
        if let Some(next) = self.submit_due(g, None) {
            self.world.schedule(next, EventKind::Arrival(g));
        }
    }

    /// Submits every item of group `g` due by now, from `from` (a pool
    /// thread) or the main thread. Returns when the next item is due.
    fn submit_due(&mut self, g: u32, from: Option<ThreadId>) -> Option<SimTime> {
        let scenario = self.world.scenario;
        let group = &scenario.groups[g as usize];
        loop {
            let state = &self.world.groups[g as usize];
            if state.submitted >= group.count {
                return None;
            }
            if state.next_at > self.world.now {
                return Some(state.next_at);
            }
            let created_first = from.is_none()
                && self.world.main_yields
                && self.world.tally.existing == 0
                && self.world.tally.retired.is_empty();
            self.submit_task(g, from);
            let created_first = created_first && self.world.tally.existing > 0;
            let state = &mut self.world.groups[g as usize];
            state.submitted += 1;
            match &group.arrival {
                Arrival::At(_) | Arrival::After { .. } => {}
                Arrival::Every { every, .. } => state.next_at += *every,
                Arrival::Poisson { per_second, .. } => {
                    if let Some(rng) = state.arrivals.as_mut() {
                        let u: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
                        let gap_ns = (-u.ln() / per_second * 1e9).round();
                        state.next_at += SimDuration(gap_ns.min(1e18) as u64);
                    }
                }
            }
            if created_first {
                // One core: the new worker takes it; the main thread's next
                // submissions wait for it (see `main_resume`).
                self.world.main_yields = false;
                self.world.main_waiting = Some(vec![g]);
                self.world.main_waiting_since = self.world.now;
                return None;
            }
        }
    }

    /// The main thread, waiting for the one core since it created the pool's
    /// first worker, gets it back now if the worker's work left it free,
    /// else at the next scheduler tick (the `TickCount` grid); its waiting
    /// groups then submit what is due.
    fn main_resume(&mut self, waited: bool) {
        if !waited
            && self.world.cpu.cores_taken()
            && let Some((step, phase)) = self.world.timer_grid
        {
            let next = crate::policy::gate::next_tick(self.world.now, step, phase);
            self.world.schedule(next, EventKind::MainResume(true));
            return;
        }
        let Some(waiting) = self.world.main_waiting.take() else {
            return;
        };
        if S::ENABLED {
            let decision = Decision::MainThreadWaited {
                since: self.world.main_waiting_since,
                waited_for_tick: waited,
            };
            self.world.record(TraceEvent::Decision(decision));
        }
        for g in waiting {
            self.world.schedule(self.world.now, EventKind::Arrival(g));
        }
    }

    /// The worker loop of a pool thread ([`WorkerNext`]), from `next` until
    /// it waits on an event.
    fn worker_loop(&mut self, t: ThreadId, mut next: WorkerNext<Work>) {
        loop {
            // Only a creation by `t`'s own pool code below makes it wait.
            self.world.creation_owed = SimDuration::ZERO;
            next = match next {
                WorkerNext::Seek => self.seek(t),
                WorkerNext::Dispatch => self.dispatch(t),
                WorkerNext::Run(work) => {
                    if self.start_work(t, work) || !self.drive(t) {
                        return;
                    }
                    WorkerNext::Completed
                }
                WorkerNext::Completed => {
                    if !self.policy.work_completed(&mut self.world, t) {
                        if self.retire_on_stop {
                            self.request_thread(RequestCause::Leaving);
                            self.world.retire(t);
                        } else {
                            // Portable pool: back to the semaphore; its local
                            // items move to the global queue.
                            self.world.pool.flush_local(t);
                            self.world.make_idle(t);
                        }
                        return;
                    }
                    self.keep_working(t)
                }
                WorkerNext::Idle => {
                    self.world.make_idle(t);
                    return;
                }
            };
            if self.world.creation_owed > SimDuration::ZERO {
                self.wait_for_creation(t, next);
                return;
            }
        }
    }

    /// `t` created a pool thread from its pool code (a dequeue's thread
    /// request, hill climbing on a completion) and waits for it to start
    /// before it goes on with `next` (Mono: `create_thread` waits on
    /// `start_info->registered`, mono/mono `mono/metadata/threads.c`).
    fn wait_for_creation(&mut self, t: ThreadId, next: WorkerNext<Work>) {
        let wait = std::mem::take(&mut self.world.creation_owed);
        let th = self.world.th(t);
        th.activity = Activity::CreatingThread;
        th.after_creation = Some(next);
        let generation = th.generation;
        self.world
            .schedule(self.world.now + wait, EventKind::StepDone(t, generation));
    }

    /// Turns a dequeued work item into frames on `t` (or runs it at once
    /// when it is pool-internal bookkeeping).
    fn start_work(&mut self, t: ThreadId, work: Work) -> bool {
        match work {
            Work::Item(item) => self.world.th(t).frames.push(Frame::Item(item)),
            Work::Continuation(id) => {
                let frames = self.world.continuations[id as usize]
                    .take()
                    .unwrap_or_default();
                self.world.th(t).frames.extend(frames);
            }
            Work::TimerQueue(q) => {
                self.world.phase(t, Phase::Internal, None);
                if let Some(id) = self.fire_timer_queue(q) {
                    return self.run_timer(t, id);
                }
            }
            Work::TimerCallback(id) => {
                self.world.phase(t, Phase::Internal, None);
                return self.run_timer(t, id);
            }
            Work::Probe(p) => {
                self.world.phase(t, Phase::Internal, None);
                if let Some(id) = self.world.probes[p as usize].in_flight.take() {
                    self.world.trace.probes[id as usize].started = self.world.now;
                    self.world.record(TraceEvent::ProbeStarted { probe: id });
                }
                // The probe loop's Wait() returns; it sleeps again.
                let every = self.world.scenario.probes[p as usize].every;
                self.world
                    .schedule(self.world.now + every, EventKind::Probe(p));
            }
            Work::Submitter(g) => self.world.th(t).frames.push(Frame::Submitter(g)),
            Work::Replica(r) => self.world.th(t).frames.push(Frame::Replica(r)),
            Work::Partition(p) => self.world.th(t).frames.push(Frame::Partition(p)),
            Work::AsyncWorker(w) => self.world.th(t).frames.push(Frame::AsyncWorker(w)),
            Work::PairProcessor(p) => self.world.th(t).frames.push(Frame::PairProcessor(p)),
        }
        false
    }

    /// Runs timer `id`'s callback on `t`. True when `t` released a waiter
    /// that took its core, and now waits for it (see [`Engine::preempted_by`]).
    fn run_timer(&mut self, t: ThreadId, id: u32) -> bool {
        match self.world.pool.timer(id) {
            TimerAction::ReleaseWaiter(waiter) => {
                let generation = self.world.th(waiter).generation;
                self.world
                    .schedule(self.world.now, EventKind::StepDone(waiter, generation));
                self.preempted_by(t, waiter)
            }
            TimerAction::Resume(cont) => {
                self.resume_continuation(t, cont);
                false
            }
        }
    }

    /// Linux's wake-up preemption: `t` has just released `waiter`, whose
    /// next step is CPU work. When the cores are all taken with it, the
    /// scheduler runs the woken thread first and `t` goes on only after a
    /// slice (`threads.wake_preempt_us`, drawn per release). True when `t`
    /// now waits for its core.
    fn preempted_by(&mut self, t: ThreadId, waiter: ThreadId) -> bool {
        let world = &mut self.world;
        let Some(preemption) = &world.wake_preemption else {
            return false;
        };
        if !world.cpu.taken_with_one_more() || !next_step_is_cpu(world, waiter) {
            return false;
        }
        let slice = preemption.draw_from(world.preempt_rng.as_mut());
        if S::ENABLED {
            self.world
                .record(TraceEvent::Decision(Decision::WakePreempted {
                    thread: t,
                    woke: waiter,
                    waits: slice,
                }));
        }
        let generation = self.world.th(t).generation;
        self.world.th(t).activity = Activity::Preempted;
        self.world
            .schedule(self.world.now + slice, EventKind::StepDone(t, generation));
        true
    }

    /// Runs the frames on `t`'s stack until one waits on an event (false)
    /// or the stack is empty (true: the work unit is complete).
    fn drive(&mut self, t: ThreadId) -> bool {
        // The item the frame below last ran (for a pair's hand-off).
        let mut ran: Option<ItemId> = None;
        loop {
            let Some(&frame) = self.world.th(t).frames.last() else {
                return true;
            };
            let flow = self.step_frame(t, frame);
            if S::ENABLED {
                self.note_pair_hand_off(frame, &flow, &mut ran);
            }
            match flow {
                Flow::Pending => return false,
                Flow::Done => {
                    self.world.th(t).frames.pop();
                }
                Flow::Push(child) => self.world.th(t).frames.push(child),
                Flow::Suspended => {}
            }
        }
    }

    /// A pair's processing item that ran an item and now takes the next
    /// waiting task hands its slot on.
    fn note_pair_hand_off(&mut self, frame: Frame, flow: &Flow, ran: &mut Option<ItemId>) {
        match (frame, flow) {
            (Frame::Item(item), Flow::Done | Flow::Suspended) => *ran = Some(item),
            (Frame::PairProcessor(p), Flow::Push(Frame::Item(to))) => {
                if let Some(from) = ran.take().filter(|from| from != to) {
                    let pair = &self.world.pairs[p as usize];
                    let decision = Decision::ThrottleHandOff {
                        kind: ThrottleKind::Pair,
                        from: Some(from),
                        to: *to,
                        limit: pair.limit(),
                        waiting: pair.waiting() as u32,
                    };
                    self.world.record(TraceEvent::Decision(decision));
                }
            }
            (Frame::PairProcessor(_), _) => *ran = None,
            _ => {}
        }
    }

    /// An event let `t` go on: drive its frames, and when they are done,
    /// continue as its kind of thread does.
    fn resume(&mut self, t: ThreadId) {
        if self.drive(t) {
            self.after_work(t);
        }
    }

    fn after_work(&mut self, t: ThreadId) {
        match self.world.th(t).kind {
            ThreadKind::Pool => self.worker_loop(t, WorkerNext::Completed),
            ThreadKind::Dedicated => self.world.exit_thread(t),
            ThreadKind::Main => {
                if let Some(lp) = self.world.main_calls.pop_front() {
                    self.world.th(t).frames.push(Frame::Caller(lp));
                    self.resume(t);
                }
            }
        }
    }

    /// A timed activity of `t` ended (sleep, spin, release from a wait or a
    /// join, submitter pause).
    fn step_done(&mut self, t: ThreadId) {
        let activity = std::mem::replace(&mut self.world.th(t).activity, Activity::None);
        let pool = self.world.is_pool(t);
        match activity {
            Activity::Spin => {
                self.world.cpu.advance(self.world.now);
                self.world.cpu.remove_spinner();
                self.world.reschedule_cpu();
            }
            Activity::Busy => {
                self.world.cpu.advance(self.world.now);
                self.world.cpu.remove_busy_loop();
                self.world.reschedule_cpu();
            }
            Activity::Sleep => {
                if pool {
                    self.world.tally.blocked_sleep -= 1;
                    self.policy
                        .thread_unblocked(&mut self.world, t, BlockKind::Sleep);
                }
            }
            Activity::Wait => {
                if pool {
                    self.world.tally.blocked_wait -= 1;
                    self.policy
                        .thread_unblocked(&mut self.world, t, BlockKind::TaskWait);
                }
            }
            Activity::Join(kind) => {
                if pool {
                    self.unblock_counts(kind);
                    self.policy.thread_unblocked(&mut self.world, t, kind);
                }
                self.resume(t);
                return;
            }
            Activity::SubmitterPause | Activity::Preempted => {
                self.resume(t);
                return;
            }
            Activity::CreatingThread => {
                if let Some(next) = self.world.th(t).after_creation.take() {
                    self.worker_loop(t, next);
                }
                return;
            }
            Activity::None | Activity::Cpu => return,
        }
        self.step_finished(t);
    }

    fn block_counts(&mut self, kind: BlockKind) {
        match kind {
            BlockKind::Sleep => self.world.tally.blocked_sleep += 1,
            BlockKind::TaskWait => self.world.tally.blocked_wait += 1,
            BlockKind::Other => {}
        }
    }

    fn unblock_counts(&mut self, kind: BlockKind) {
        match kind {
            BlockKind::Sleep => self.world.tally.blocked_sleep -= 1,
            BlockKind::TaskWait => self.world.tally.blocked_wait -= 1,
            BlockKind::Other => {}
        }
    }

    /// The current step of the item on top of `t`'s stack is over: go on.
    fn step_finished(&mut self, t: ThreadId) {
        if let Some(&Frame::Item(item)) = self.world.th(t).frames.last() {
            self.world.items.run_mut(item).step += 1;
        }
        self.resume(t);
    }
}
