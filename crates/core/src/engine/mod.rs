//! The discrete-event engine: virtual clock, event queue, cores, pool mechanics.
//!
//! A pure library: no file I/O, no wall clock, no printing. It runs a
//! validated [`Scenario`] against one [`Policy`] and returns the recorded
//! [`Trace`]. Events at the same instant run in the order they were
//! scheduled (the event queue orders them by time, then insertion
//! sequence), so a run is a function of the scenario and its seed alone.
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
//!
//! The engine's files, by job:
//! - `queue`: the event queue (`EventQueue`): the pending events in a heap,
//!   FIFOs, slots and the idle deadlines (`deadlines`), taken by (time,
//!   insertion sequence), with its own tests;
//! - `world`: the state of a run apart from the policy (`World`) and its
//!   plain helpers: scheduling at the clock, the run's latencies, trace
//!   records, queueing work, whether the run is done or stuck;
//! - `threads`: the threads' lifecycle: creating, starting, idling,
//!   retiring, waking and exiting threads, an idle wait's timeout;
//! - `run`: the event loop and its dispatch (`Engine`), the worker loop and
//!   the driver of a thread's frames;
//! - `arrivals`: work from outside the pool's threads: the main thread's
//!   arrivals, a submitter's submissions, the probes;
//! - `control`: the engine's side of `PoolControl` (what a policy reads
//!   and does) and of `PoolHost` (what the shared pool mechanics call back);
//! - `shapes`: the frames: an item's steps and the parallel APIs' shapes;
//! - `items`: the items alive; `cpu`: the machine's cores.
//!
//! This file keeps the public API: [`SimOptions`], [`Outcome`],
//! [`RunResult`], [`simulate`], [`simulate_with_policy`] and
//! [`EVENT_ENTRY_BYTES`].
//!
//! [`Decision`]: crate::trace::Decision
//! [`PoolControl::decision`]: crate::policy::PoolControl::decision

mod arrivals;
mod control;
pub mod cpu;
mod deadlines;
mod items;
mod queue;
mod run;
mod shapes;
mod threads;
mod world;

use std::cmp::Reverse;

use crate::policy::{Policy, PolicyConfig};
use crate::scenario::Scenario;
use crate::time::{SimDuration, SimTime};
use crate::trace::{ItemId, ThreadId, Trace, TraceSink};
use run::Engine;
use world::World;

// The engine's vocabulary, as its files name it (`super::Work`, ...).
use crate::pool::TimerAction;
use queue::{EventKey, EventKind};
use run::Flow;
use threads::Activity;
use world::{Frame, Owner, Work};

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

/// The size of one entry of the engine's event heap (for the benchmark's
/// bare-heap baseline, `examples/bench.rs`).
pub const EVENT_ENTRY_BYTES: usize = std::mem::size_of::<Reverse<(EventKey, EventKind)>>();
