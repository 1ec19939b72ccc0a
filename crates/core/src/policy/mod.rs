//! Pool policies: the decisions a thread pool makes (when to add a thread,
//! what the thread goal is), behind one small trait the engine calls at its
//! decision points. One module per model; constants come from policy files
//! (`policies/*.toml`, validated into [`config`] by [`crate::policy_file`]).
//!
//! The engine owns the mechanics every pool shares (queues, thread states,
//! the thread-request count of the managed work queue, timers) and asks the
//! policy only what differs between pools.

pub mod config;
pub mod gate;
pub mod hill_climbing;

/// The model registry: each model once, as its module, its type, the name
/// a policy file gives it (`model = "..."`) and what it is. [`ModelKind`],
/// the policy files' list of models, [`build`] and the engine's per-model
/// dispatch ([`with_model`]) all come from this list, so a new model is its
/// file, its policy TOML and one line here. A line may carry attributes
/// (`#[cfg(test)]` for a model only the tests know).
macro_rules! models {
    ($( $(#[$attr:meta])* $kind:ident => $module:ident :: $model:ident, $name:literal, $about:literal; )*) => {
        $( $(#[$attr])* pub mod $module; )*

        /// Which model a policy runs (`model = "..."` in its file).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ModelKind {
            $( #[doc = $about] $(#[$attr])* $kind, )*
        }

        impl ModelKind {
            /// Every model, in registry order.
            pub const ALL: &[ModelKind] = &[$( $(#[$attr])* ModelKind::$kind, )*];

            /// The name a policy file gives the model.
            pub fn name(self) -> &'static str {
                match self {
                    $( $(#[$attr])* ModelKind::$kind => $name, )*
                }
            }
        }

        /// Calls `run` with the model `kind` as its own type, so that the
        /// caller is compiled once per model (the engine's loop then inlines
        /// the model's decision points).
        pub fn with_model<R: ModelRun>(kind: ModelKind, run: R) -> R::Output {
            match kind {
                $( $(#[$attr])* ModelKind::$kind => run.run::<$module::$model>(), )*
            }
        }
    };
}

models! {
    Classic => classic::Classic, "classic",
        ".NET Framework 4.x / .NET Core 3.x / .NET 5 native pool.";
    Portable => portable::Portable, "portable",
        ".NET 6+ managed (\"portable\") pool: classic + cooperative blocking.";
    Mono => mono::Mono, "mono", "Mono 6.8's port of the classic pool (monitor thread).";
    Net20 => net20::Net20, "net20", ".NET 2.0 SP1's pool with its start-delay bug.";
    Dedicated => dedicated::Dedicated, "dedicated", "A new OS thread for every work item.";
    #[cfg(test)]
    FixedForTests => fixed_for_tests::Fixed, "fixed-for-tests",
        "A model only the tests know: the minimum's threads, no more.";
}

/// A model built from its policy and the scenario: what the registry needs
/// of a model's type.
pub trait Model: Policy + Sized + 'static {
    fn new(config: &PolicyConfig, scenario: &Scenario) -> Self;
}

/// Work to do with a model as its own type ([`with_model`]).
pub trait ModelRun {
    type Output;
    fn run<M: Model>(self) -> Self::Output;
}

use crate::scenario::Scenario;
use crate::time::SimTime;
use crate::trace::{Decision, GoalReason, ThreadId, ThreadReason};

pub use config::PolicyConfig;

/// What a blocked pool thread waits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKind {
    /// `Thread.Sleep`: never counted as cooperative blocking.
    Sleep,
    /// `Task.Wait()` / `.Result` on an unfinished task: cooperative blocking
    /// in the .NET 6+ pool.
    TaskWait,
    /// Any other wait (`Monitor.Wait`, an event, a PLINQ consumer): not
    /// cooperative blocking.
    Other,
}

/// Why the work queue asked for a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestCause {
    /// A work item was queued (user work, a continuation, a timer callback).
    Enqueue,
    /// A worker dequeued an item and more work may remain (chain reaction).
    Dequeue,
    /// A worker left its dispatch loop with work left (quantum, stop).
    Leaving,
    /// The timer thread queued an expired timer queue.
    Timer,
}

/// A snapshot of the pool's thread and queue counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolCounts {
    /// Active threads: starting, working or idle (CoreCLR's `NumActive`;
    /// retired and exited threads excluded).
    pub existing: u32,
    /// Threads not idle: starting, woken, running or blocked inside a work item
    /// (CoreCLR's `NumWorking`, the portable pool's `NumProcessingWork`).
    pub working: u32,
    /// Threads created or released that have not reached their first dequeue.
    pub starting: u32,
    /// Threads waiting for work.
    pub idle: u32,
    /// Working threads blocked in `Thread.Sleep`.
    pub blocked_sleep: u32,
    /// Working threads blocked in a task wait.
    pub blocked_wait: u32,
    /// Thread requests not yet taken by a worker.
    pub pending_requests: u32,
    /// Work items in the global and local queues.
    pub queued: u64,
}

/// The engine's side of the conversation: what a policy may read and do.
pub trait PoolControl {
    fn now(&self) -> SimTime;
    /// The processors the runtime sees (`Environment.ProcessorCount`:
    /// `machine.processors`, else `machine.cores`).
    fn processors(&self) -> u32;
    fn counts(&self) -> PoolCounts;
    /// Core-nanoseconds of CPU used since the run started.
    fn cpu_busy_core_ns(&mut self) -> u128;
    /// Whether the CPU work running now (computing threads, busy loops)
    /// leaves no core free for another thread to run at once. Only the
    /// simulator schedules cores; on real threads the OS does (false).
    fn cores_taken(&self) -> bool {
        false
    }
    /// Releases an idle worker, else brings back a retired one, else creates
    /// a thread. Returns false when none is possible (`max_threads` reached).
    fn add_worker(&mut self, reason: ThreadReason) -> bool;
    /// Calls [`Policy::wake`] with `wake` at `at` (not before now).
    fn wake_at(&mut self, at: SimTime, wake: Wake);
    /// Records a goal change in the trace.
    fn goal_changed(&mut self, goal: u32, reason: GoalReason);
    /// Records a decision and the inputs its rule read, for `poolsim
    /// explain` (only the trace sink sees it). Call it just before acting.
    fn decision(&mut self, _decision: Decision) {}
}

/// A wake-up a policy asked for with [`PoolControl::wake_at`], handed back
/// to [`Policy::wake`]: what it is for, and the generation of what asked
/// (a gate thread stopped and started again has a new one, so the wake-ups
/// of its earlier run are told apart and dropped).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Wake {
    /// The gate (monitor) thread's next tick.
    GateTick(u64),
    /// The gate thread's first run, when it starts with the pool's first
    /// worker (`start = "with-first-thread"`).
    GateStart(u64),
    /// A cooperative-blocking adjustment's delay has passed (portable pool).
    BlockingAdjustment(u64),
    /// .NET 2.0's gate thread: its CPU reading.
    Net20Reading(u64),
    /// .NET 2.0's gate thread: its starvation check.
    Net20Check(u64),
}

impl Wake {
    /// The wake-up in one word, as an event queue keeps it: the
    /// generation above three bits of kind.
    pub fn pack(self) -> u64 {
        let (kind, generation) = match self {
            Wake::GateTick(g) => (0, g),
            Wake::GateStart(g) => (1, g),
            Wake::BlockingAdjustment(g) => (2, g),
            Wake::Net20Reading(g) => (3, g),
            Wake::Net20Check(g) => (4, g),
        };
        (generation << 3) | kind
    }

    /// The wake-up [`Wake::pack`] made `word` of.
    pub fn unpack(word: u64) -> Wake {
        let generation = word >> 3;
        match word & 7 {
            0 => Wake::GateTick(generation),
            1 => Wake::GateStart(generation),
            2 => Wake::BlockingAdjustment(generation),
            3 => Wake::Net20Reading(generation),
            _ => Wake::Net20Check(generation),
        }
    }
}

/// What every model holds alike: its name and its thread limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyBase {
    /// Canonical policy name (from its file).
    pub name: String,
    /// Minimum threads, after the scenario's `SetMinThreads`.
    pub min: u32,
    /// Maximum threads, after the scenario's `SetMaxThreads`.
    pub max: u32,
}

impl PolicyBase {
    /// The policy file's name and the limits of [`thread_limits`].
    pub fn new(config: &PolicyConfig, scenario: &Scenario) -> PolicyBase {
        let (min, max) = thread_limits(config, scenario);
        PolicyBase {
            name: config.name.clone(),
            min,
            max,
        }
    }

    /// `(min, max)`, as [`move_goal`] takes them.
    pub fn limits(&self) -> (u32, u32) {
        (self.min, self.max)
    }

    /// `goal` clamped to `[min, max]` (to `max` alone if min exceeds it).
    pub fn clamp(&self, goal: u32) -> u32 {
        goal.clamp(self.min.min(self.max), self.max)
    }
}

/// A pool model. Every method is a decision point of the real pool, apart
/// from [`Policy::base`] and the accessors that read it.
///
/// `Send`: the native pool calls a model from the threads it drives (under
/// its mutex), so a model holds only data that may move between threads.
pub trait Policy: Send {
    /// The model's name and thread limits, which [`Policy::name`],
    /// [`Policy::min_threads`] and [`Policy::max_threads`] read.
    fn base(&self) -> &PolicyBase;
    /// Canonical policy name (from its file).
    fn name(&self) -> &str {
        &self.base().name
    }
    /// The pool's minimum (`SetMinThreads`): the floor of the thread goal
    /// (.NET 2.0: the workers it creates without delay).
    fn min_threads(&self) -> u32 {
        self.base().min
    }
    /// The pool's maximum (`SetMaxThreads`): the engine creates no thread
    /// beyond it.
    fn max_threads(&self) -> u32 {
        self.base().max
    }
    /// The current thread goal, if the model has one (the .NET 2.0 pool and
    /// dedicated threads have none).
    fn goal(&self) -> Option<u32> {
        None
    }
    /// The run starts.
    fn start(&mut self, _pool: &mut dyn PoolControl) {}
    /// The work queue asked for a thread (work was queued, or a worker found
    /// more work after a dequeue).
    fn thread_requested(&mut self, pool: &mut dyn PoolControl, cause: RequestCause);
    /// A worker is about to look for a thread request (a new or released
    /// thread, or one back from a dispatch quantum or an empty queue).
    fn seeking_work(&mut self, _pool: &mut dyn PoolControl, _thread: ThreadId) {}
    /// A worker looked for a thread request and found none: it goes idle
    /// (`PoolHost::seek`; not called for a worker that retires).
    fn found_no_request(&mut self, _pool: &mut dyn PoolControl, _thread: ThreadId) {}
    /// A worker finished a work item. Returns whether it keeps dispatching
    /// (false: it retires, as when the pool has more active threads than its
    /// goal).
    fn work_completed(&mut self, pool: &mut dyn PoolControl, thread: ThreadId) -> bool;
    /// A working thread blocks / unblocks inside a work item.
    fn thread_blocked(&mut self, _pool: &mut dyn PoolControl, _thread: ThreadId, _kind: BlockKind) {
    }
    fn thread_unblocked(
        &mut self,
        _pool: &mut dyn PoolControl,
        _thread: ThreadId,
        _kind: BlockKind,
    ) {
    }
    /// A wake-up the policy asked for with [`PoolControl::wake_at`].
    fn wake(&mut self, _pool: &mut dyn PoolControl, _wake: Wake) {}
    /// An idle worker waited `idle_timeout` for work. Returns whether it exits.
    fn idle_timed_out(&mut self, _pool: &mut dyn PoolControl, _thread: ThreadId) -> bool {
        true
    }
    /// Whether a worker told to stop by [`Policy::work_completed`] retires
    /// (native pool: it stops counting as active) or only goes idle
    /// (portable pool: back to the semaphore).
    fn retire_on_stop(&self) -> bool {
        true
    }
    /// Whether user work submitted to the pool runs on a new thread each
    /// (the dedicated model).
    fn dedicated_threads(&self) -> bool {
        false
    }
}

/// Builds the model a policy file names, with the scenario's overrides
/// (`min_threads`, `max_threads`, gate phase) and the run's seed.
/// (`engine::simulate` builds the same models, each as its own type.)
pub fn build(config: &PolicyConfig, scenario: &Scenario) -> Box<dyn Policy> {
    struct Boxed<'a>(&'a PolicyConfig, &'a Scenario);
    impl ModelRun for Boxed<'_> {
        type Output = Box<dyn Policy>;
        fn run<M: Model>(self) -> Box<dyn Policy> {
            Box::new(M::new(self.0, self.1))
        }
    }
    with_model(config.model, Boxed(config, scenario))
}

/// Moves a thread goal to `goal` clamped to `[min, max]` and records a
/// change in the trace (the goal bookkeeping every goal-based model shares).
pub fn move_goal(
    current: &mut u32,
    (min, max): (u32, u32),
    pool: &mut dyn PoolControl,
    goal: u32,
    reason: GoalReason,
) {
    let goal = goal.clamp(min.min(max), max);
    if goal != *current {
        *current = goal;
        pool.goal_changed(goal, reason);
    }
}

/// `MaybeAddWorkingWorker`: one more working thread (an idle one released,
/// else a new one) while fewer than `goal` threads work. On demand (a thread
/// request) with no idle thread to release, the decision is recorded.
#[inline]
pub fn maybe_add_working_worker(pool: &mut dyn PoolControl, goal: u32, reason: ThreadReason) {
    let counts = pool.counts();
    if counts.working < goal {
        if reason == ThreadReason::Demand && counts.idle == 0 {
            pool.decision(Decision::Demand {
                threads: counts.working,
                limit: goal,
                threads_name: "working",
                limit_name: "goal",
                idle_queued: None,
            });
        }
        pool.add_worker(reason);
    }
}

/// Default and overridden thread limits: `SetMinThreads` clamps to at least
/// 1 (and is ignored where the runtime ignores it), `SetMaxThreads` to at
/// least min.
pub fn thread_limits(config: &PolicyConfig, scenario: &Scenario) -> (u32, u32) {
    let cores = scenario.machine.processors();
    let default_min = config.threads.min.resolve(cores);
    let min = if config.threads.honours_set_min_threads {
        scenario.pool.min_threads.unwrap_or(default_min)
    } else {
        default_min
    }
    .max(1);
    let max = scenario
        .pool
        .max_threads
        .unwrap_or_else(|| config.threads.max.resolve(cores))
        .max(min);
    (min, max)
}

#[cfg(test)]
mod tests {
    use super::Wake;

    #[test]
    fn a_wake_up_comes_back_as_it_was_asked_for() {
        let all = |g| {
            [
                Wake::GateTick(g),
                Wake::GateStart(g),
                Wake::BlockingAdjustment(g),
                Wake::Net20Reading(g),
                Wake::Net20Check(g),
            ]
        };
        for g in [0, 1, 7, 8, 255, 1 << 40] {
            for w in all(g) {
                assert_eq!(Wake::unpack(w.pack()), w);
            }
            // Kinds and generations never share a word.
            let words: std::collections::BTreeSet<u64> = all(g)
                .iter()
                .chain(all(g + 1).iter())
                .map(|w| w.pack())
                .collect();
            assert_eq!(words.len(), 10);
        }
    }
}
