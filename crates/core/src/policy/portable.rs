//! The .NET 6+ managed ("portable") thread pool.
//!
//! Read: dotnet/runtime `src/libraries/System.Private.CoreLib/src/System/
//! Threading/PortableThreadPool*.cs` (.NET 6–8), summarised with the
//! details in `docs/research/portable-pool-and-timers.md`.
//!
//! The classic rules with the portable pool's counts — a goal
//! (`NumThreadsGoal`) compared with threads processing work
//! (`NumProcessingWork`); a request adds a worker only while processing <
//! goal; the gate thread (first check 500 ms after it starts, parks after
//! two idle ticks) raises the goal to processing + 1 on starvation (strict
//! `>` against 500 ms, or goal × 1000 ms with the CPU busy); hill climbing
//! on completions while processing ≤ goal; a worker that completes an item
//! with processing > goal goes back to waiting — plus **cooperative
//! blocking** (new in .NET 6, `PortableThreadPool.Blocking.cs`):
//! - a pool thread blocking in `Task.Wait`/`.Result` counts as blocked;
//!   the target is `min(min + blocked, max)`;
//! - the gate thread raises the goal toward the target: at once up to
//!   `noDelayCap = min + ThreadsToAddWithoutDelay` (or the threads that
//!   exist, if more), then one thread per delay of
//!   `min((1 + (goal − noDelayCap) / ThreadsPerDelayStep) × DelayStepMs,
//!   MaxDelayMs)`;
//! - when blocked threads unblock, the goal drops by what blocking added;
//! - while an adjustment is pending, starvation injection and hill climbing
//!   are skipped. `Thread.Sleep` and other waits do not count.
//!
//! Each decision (a gate tick with requests pending, a blocking adjustment
//! with its delay, a hill-climbing sample, a worker sent back to wait, a
//! thread created on demand) is recorded with its inputs through
//! [`PoolControl::decision`] before it acts.

use crate::policy::Wake;
use crate::policy::classic::HillClimbingSampler;
use crate::policy::config::{BlockingConfig, PolicyConfig};
use crate::policy::gate::{self, GateThread, InjectionRule, LastDequeue, TickView};
use crate::policy::hill_climbing::Transition;
use crate::policy::{
    BlockKind, Policy, PolicyBase, PoolControl, RequestCause, maybe_add_working_worker, move_goal,
};
use crate::scenario::Scenario;
use crate::time::{SimDuration, SimTime};
use crate::trace::{BlockingDelay, Decision, GoalReason, ThreadId, ThreadReason};

/// Wake-up tag of a cooperative-blocking adjustment (`| generation << 8`).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pending {
    None,
    WithDelayIfNecessary,
    Immediately,
}

#[derive(Debug)]
pub struct Portable {
    base: PolicyBase,
    goal: u32,
    last_dequeue: SimTime,
    gate: GateThread,
    hill_climbing: HillClimbingSampler,
    blocking: Option<BlockingConfig>,
    cores: u32,
    blocked: u32,
    added_by_blocking: u32,
    pending: Pending,
    /// Invalidates a scheduled adjustment when a new one is scheduled.
    adjustment_generation: u64,
    adjustment_scheduled: bool,
    /// The gate thread's running blocking-adjustment delay (`DelayHelper`'s
    /// previous delay: when it started, how long), if any.
    delay: Option<(SimTime, SimDuration)>,
}

impl Portable {
    pub fn new(config: &PolicyConfig, scenario: &Scenario) -> Portable {
        let base = PolicyBase::new(config, scenario);
        Portable {
            goal: base.min,
            base,
            last_dequeue: SimTime::ZERO,
            gate: GateThread::new(&config.gate, scenario, gate::GATE_STREAM),
            hill_climbing: HillClimbingSampler::new(config, scenario, "hill-climbing"),
            blocking: config.blocking.clone().filter(|b| b.enabled),
            cores: scenario.machine.processors(),
            blocked: 0,
            added_by_blocking: 0,
            pending: Pending::None,
            adjustment_generation: 0,
            adjustment_scheduled: false,
            delay: None,
        }
    }

    /// `MinThreadsGoal`: min(goal, target), never below the minimum. The
    /// floor of hill climbing's control setting and new count
    /// (`HillClimbing.Update` clamps to it in .NET 6+: "when some threads
    /// are blocked due to cooperative blocking, ensure that hill climbing
    /// does not decrease the thread count below the expected minimum") and
    /// of a timed-out thread's goal (`PortableThreadPool.Blocking.cs`,
    /// `PortableThreadPool.WorkerThread.cs`).
    fn min_threads_goal(&self) -> u32 {
        self.base.min.max(self.target().min(self.goal))
    }

    fn target(&self) -> u32 {
        if self.blocked == 0 {
            self.base.min
        } else {
            self.base
                .min
                .saturating_add(self.blocked)
                .min(self.base.max)
        }
    }

    fn set_goal(&mut self, pool: &mut dyn PoolControl, goal: u32, reason: GoalReason) {
        move_goal(&mut self.goal, self.base.limits(), pool, goal, reason);
    }

    #[inline]
    fn maybe_add_working_worker(&mut self, pool: &mut dyn PoolControl, reason: ThreadReason) {
        maybe_add_working_worker(pool, self.goal, reason);
    }

    fn schedule_adjustment(&mut self, pool: &mut dyn PoolControl, after: SimDuration) {
        self.adjustment_generation += 1;
        self.adjustment_scheduled = true;
        pool.wake_at(
            pool.now() + after,
            Wake::BlockingAdjustment(self.adjustment_generation),
        );
    }

    /// `min + ThreadsToAddWithoutDelay`, at most `max`.
    fn no_delay_cap(&self, cfg: &BlockingConfig) -> u32 {
        let without_delay = cfg
            .threads_to_add_without_delay_per_core
            .saturating_mul(self.cores);
        self.base
            .min
            .saturating_add(without_delay)
            .min(self.base.max)
    }

    /// The delay before the goal may grow past `goal` (beyond the no-delay cap).
    fn delay_after(&self, cfg: &BlockingConfig, goal: u32, no_delay_cap: u32) -> SimDuration {
        let per_step = cfg
            .threads_per_delay_step_per_core
            .saturating_mul(self.cores)
            .max(1);
        let steps = 1 + goal.saturating_sub(no_delay_cap) / per_step;
        cfg.delay_step
            .saturating_mul(u64::from(steps))
            .min(cfg.max_delay)
    }

    /// The gate thread woke for a blocking adjustment (`GateThreadStart`'s
    /// first step, with `DelayHelper`): with nothing pending the running
    /// delay is dropped; with a delay running, an adjustment that may wait
    /// waits for it to elapse; otherwise `PerformBlockingAdjustment` runs,
    /// told whether the previous delay elapsed (false when none was
    /// running), and the delay it returns starts now.
    fn blocking_wake(&mut self, pool: &mut dyn PoolControl) {
        if self.pending == Pending::None {
            self.delay = None;
            return;
        }
        let now = pool.now();
        // The running delay: how long it is, how long since it started.
        let running = self.delay.map(|(start, d)| (d, now.since(start)));
        if self.pending == Pending::WithDelayIfNecessary
            && let Some((needed, since)) = running
            && since < needed
        {
            // Not yet: sleep the rest of the delay.
            self.schedule_adjustment(pool, SimDuration(needed.0 - since.0));
            return;
        }
        let next = self.perform_blocking_adjustment(pool, running);
        self.delay = next.map(|d| (now, d));
        if let Some(d) = next {
            self.schedule_adjustment(pool, d);
        }
    }

    /// `PerformBlockingAdjustment(previousDelayElapsed)` on the gate thread
    /// (`running`: the running delay and the time since it started, `None`
    /// when none was running: the previous delay has not elapsed). Up to
    /// the no-delay cap the goal jumps to the target at once; beyond it,
    /// the goal grows by one only when the previous delay has elapsed, so
    /// the first increase past the cap waits one delay too (measured on
    /// .NET 8, 2 cores: threads at 28, 53, 104, 154, 230, 305, 406 ms; a
    /// thread blocking past the cap after the goal had met its target is
    /// added ~25-33 ms later). Returns the delay before the next
    /// adjustment, if the goal is still short of the target.
    fn perform_blocking_adjustment(
        &mut self,
        pool: &mut dyn PoolControl,
        running: Option<(SimDuration, SimDuration)>,
    ) -> Option<SimDuration> {
        let cfg = self.blocking.clone()?;
        self.pending = Pending::None;
        let target = self.target();
        if self.goal == target {
            return None;
        }
        if self.goal > target {
            let drop = (self.goal - target).min(self.added_by_blocking);
            if drop > 0 {
                self.added_by_blocking -= drop;
                let goal = self.goal - drop;
                pool.decision(Decision::CooperativeBlocking {
                    blocked: self.blocked,
                    min: self.base.min,
                    target,
                    no_delay_cap: self.no_delay_cap(&cfg),
                    goal: self.goal,
                    new_goal: self.base.clamp(goal),
                    delay: None,
                    next_in: None,
                });
                self.set_goal(pool, goal, GoalReason::CooperativeBlocking);
                self.hill_climbing
                    .climber
                    .force_change(self.goal, Transition::CooperativeBlocking);
            }
            return None;
        }
        let no_delay_cap = self.no_delay_cap(&cfg);
        let existing = pool.counts().existing;
        let ceiling = no_delay_cap.max(existing.min(self.base.max));
        let old_goal = self.goal;
        let (new_goal, delayed) = if self.goal < target.min(ceiling) {
            (target.min(ceiling), false)
        } else if let Some((needed, since)) = running
            && since >= needed
        {
            (self.goal + 1, true)
        } else {
            (self.goal, true)
        };
        let next = (new_goal < target).then(|| self.delay_after(&cfg, new_goal, no_delay_cap));
        pool.decision(Decision::CooperativeBlocking {
            blocked: self.blocked,
            min: self.base.min,
            target,
            no_delay_cap,
            goal: old_goal,
            new_goal,
            delay: delayed.then_some(match running {
                Some((needed, since)) => BlockingDelay::Running { needed, since },
                None => BlockingDelay::Starts,
            }),
            next_in: next,
        });
        if new_goal > old_goal {
            self.added_by_blocking += new_goal - old_goal;
            self.set_goal(pool, new_goal, GoalReason::CooperativeBlocking);
            self.hill_climbing
                .climber
                .force_change(self.goal, Transition::CooperativeBlocking);
            let counts = pool.counts();
            if counts.working >= old_goal && counts.pending_requests > 0 {
                self.maybe_add_working_worker(pool, ThreadReason::CooperativeBlocking);
            }
        }
        if self.goal < target {
            self.pending = Pending::WithDelayIfNecessary;
        }
        next
    }
}

impl Policy for Portable {
    fn base(&self) -> &PolicyBase {
        &self.base
    }
    fn goal(&self) -> Option<u32> {
        Some(self.goal)
    }
    fn retire_on_stop(&self) -> bool {
        false
    }

    fn start(&mut self, pool: &mut dyn PoolControl) {
        pool.goal_changed(self.goal, GoalReason::MinThreads);
    }

    #[inline]
    fn thread_requested(&mut self, pool: &mut dyn PoolControl, _cause: RequestCause) {
        self.maybe_add_working_worker(pool, ThreadReason::Demand);
        self.gate.ensure_running(pool);
    }

    #[inline]
    fn seeking_work(&mut self, pool: &mut dyn PoolControl, _thread: ThreadId) {
        self.gate.first_thread_dispatching(pool);
        self.last_dequeue = pool.now();
    }

    fn work_completed(&mut self, pool: &mut dyn PoolControl, thread: ThreadId) -> bool {
        let now = pool.now();
        self.last_dequeue = now;
        let counts = pool.counts();
        if self.pending == Pending::None
            && let Some(new_goal) = self.hill_climbing.completed(
                now,
                self.goal,
                counts.working,
                self.gate.cpu_utilization,
                (self.min_threads_goal(), self.base.max),
            )
        {
            let old = self.goal;
            if let Some(stats) = self.hill_climbing.climber.last_sample() {
                let goal = self.base.clamp(new_goal);
                pool.decision(stats.decision((old, goal), 1e9, self.gate.cpu_utilization));
            }
            let reason = GoalReason::from(self.hill_climbing.climber.last_transition());
            self.set_goal(pool, new_goal, reason);
            if self.goal > old {
                self.maybe_add_working_worker(pool, ThreadReason::HillClimbing);
            }
        }
        // ShouldStopProcessingWorkNow.
        let working = pool.counts().working;
        let keep = working <= self.goal;
        if !keep {
            pool.decision(Decision::WorkerStop {
                thread,
                rule: "ShouldStopProcessingWorkNow",
                threads: working,
                threads_name: "working",
                goal: self.goal,
                retires: false,
            });
        }
        keep
    }

    fn thread_blocked(&mut self, pool: &mut dyn PoolControl, _thread: ThreadId, kind: BlockKind) {
        if kind != BlockKind::TaskWait || self.blocking.is_none() {
            return;
        }
        self.blocked += 1;
        if self.pending != Pending::WithDelayIfNecessary && self.goal < self.target() {
            let was_none = self.pending == Pending::None;
            self.pending = Pending::WithDelayIfNecessary;
            if was_none {
                // Wake the gate thread now.
                self.schedule_adjustment(pool, SimDuration::ZERO);
            }
        }
    }

    fn thread_unblocked(&mut self, pool: &mut dyn PoolControl, _thread: ThreadId, kind: BlockKind) {
        if kind != BlockKind::TaskWait || self.blocking.is_none() {
            return;
        }
        self.blocked = self.blocked.saturating_sub(1);
        if self.pending != Pending::Immediately
            && self.added_by_blocking > 0
            && self.goal > self.target()
        {
            self.pending = Pending::Immediately;
            self.schedule_adjustment(pool, SimDuration::ZERO);
        }
    }

    fn wake(&mut self, pool: &mut dyn PoolControl, tag: Wake) {
        if self.gate.is_start(tag) {
            self.gate.begin(pool);
            return;
        }
        if let Wake::BlockingAdjustment(generation) = tag {
            if generation == self.adjustment_generation && self.adjustment_scheduled {
                self.adjustment_scheduled = false;
                self.blocking_wake(pool);
            }
            return;
        }
        if !self.gate.is_tick(tag) {
            return;
        }
        // Every gate wake starts with the blocking step: nothing pending
        // drops the running delay.
        if self.pending == Pending::None {
            self.delay = None;
        }
        let counts = pool.counts();
        let (min, max) = self.base.limits();
        let view = TickView {
            requests_pending: counts.pending_requests > 0,
            busy: counts.pending_requests > 0 || self.pending != Pending::None,
            counted: counts.working,
            goal: self.goal,
            min,
            max,
            blocking_pending: self.pending != Pending::None,
            last_dequeue: LastDequeue::At(self.last_dequeue),
        };
        if let Some(goal) = self
            .gate
            .starvation_tick(pool, view, InjectionRule::CountedPlusOne)
        {
            self.set_goal(pool, goal, GoalReason::Starvation);
            self.hill_climbing
                .climber
                .force_change(self.goal, Transition::Starvation);
            self.maybe_add_working_worker(pool, ThreadReason::Starvation);
        }
    }

    fn idle_timed_out(&mut self, pool: &mut dyn PoolControl, _thread: ThreadId) -> bool {
        let counts = pool.counts();
        if counts.existing <= counts.working {
            return false;
        }
        let remaining = counts.existing - 1;
        let goal = remaining.min(self.goal).max(self.min_threads_goal());
        self.set_goal(pool, goal, GoalReason::ThreadTimedOut);
        self.hill_climbing
            .climber
            .force_change(self.goal, Transition::ThreadTimedOut);
        true
    }
}

impl crate::policy::Model for Portable {
    fn new(config: &PolicyConfig, scenario: &Scenario) -> Portable {
        Portable::new(config, scenario)
    }
}
