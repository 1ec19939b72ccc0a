//! The classic native thread pool of .NET Framework 4.x, .NET Core 3.x and .NET 5.
//!
//! Read: dotnet/coreclr v3.1 `src/vm/win32threadpool.cpp` (worker counts
//! `NumActive` / `NumWorking` / `MaxWorking`, `MaybeAddWorkingWorker`,
//! `ShouldWorkerKeepRunning`, the gate thread and
//! `SufficientDelaySinceLastDequeue`) and `src/vm/hillclimbing.cpp`; the
//! constants and where each was read are in `policies/net-classic.toml`.
//!
//! The model:
//! - The thread goal (`MaxWorking`) starts at the minimum. A thread request
//!   adds one working worker (releasing an idle one, else creating one) only
//!   while working threads are below the goal. Threads blocked inside a work
//!   item still count as working: that is why a burst of sleeping items
//!   waits for the gate thread.
//! - The gate thread ticks every `gate.period`, its phase relative to the
//!   first thread request drawn from the run's seed (or set by the
//!   scenario). On a tick, if thread requests are pending and the time since
//!   the last dequeue exceeds the starvation threshold (`starvation_delay`
//!   while CPU utilisation over the last tick is below `cpu_busy_percent`,
//!   else `goal × busy_delay_per_thread`), and working ≥ goal, the goal
//!   becomes working + 1 and one worker is added.
//! - The last-dequeue time moves when a worker starts dispatching and on
//!   every completion.
//! - Hill climbing runs on a work-item completion once its sample interval
//!   has elapsed (and only while existing threads ≤ goal); it may move the
//!   goal either way. A worker that completes an item while active threads >
//!   goal retires (`ShouldWorkerKeepRunning`); then, no longer counted, it
//!   asks for a thread to carry on and, with requests pending, adds a
//!   working worker (the engine's half, `PoolHost::retired`), so an idle
//!   thread takes what it left.
//! - An idle worker exits after `idle_timeout`; the goal then drops to
//!   max(min, min(goal, active threads)).
//!
//! Each decision (a gate tick with requests pending, a hill-climbing sample,
//! a worker told to stop, a thread created on demand) is recorded with its
//! inputs through [`PoolControl::decision`] before it acts.

use crate::policy::Wake;
use crate::policy::config::PolicyConfig;
use crate::policy::gate::{self, GateThread, InjectionRule, LastDequeue, TickView};
use crate::policy::hill_climbing::{HillClimbing, Transition};
use crate::policy::{
    Policy, PolicyBase, PoolControl, RequestCause, maybe_add_working_worker, move_goal,
};
use crate::rng;
use crate::scenario::Scenario;
use crate::time::{SimDuration, SimTime};
use crate::trace::{Decision, GoalReason, ThreadId, ThreadReason};

/// When hill climbing samples: the completion-driven bookkeeping around
/// [`HillClimbing::update`] (CoreCLR 3.1 `ShouldAdjustMaxWorkersActive` /
/// `AdjustMaxWorkersActive`). A sample is due once the interval chosen at
/// the last adjustment has elapsed (the first completion always qualifies),
/// and only while active threads ≤ goal; it is taken only if the sample
/// spans at least half the interval, otherwise the next completion retries.
#[derive(Debug)]
pub struct HillClimbingSampler {
    pub climber: HillClimbing,
    enabled: bool,
    completions: u64,
    prior_completions: u64,
    prior_time: SimTime,
    /// `NextCompletedWorkRequestsTime - PriorCompletedWorkRequestsTime`.
    required: SimDuration,
    /// `ThreadAdjustmentInterval`, ms.
    interval_ms: u32,
    sample_start: SimTime,
    /// How long before the first request the start-up's sample was taken:
    /// added to the span of the sample after it (`SimTime` starts at the
    /// first request).
    head_start: SimDuration,
    /// `[hill_climbing] startup_completions_tiered`.
    startup_completions: u32,
}

impl HillClimbingSampler {
    pub fn new(config: &PolicyConfig, scenario: &Scenario, stream_name: &str) -> Self {
        let hc = &config.hill_climbing;
        HillClimbingSampler {
            climber: HillClimbing::new(hc, rng::stream_seed(scenario.seed, stream_name)),
            enabled: hc.enabled,
            completions: 0,
            prior_completions: 0,
            prior_time: SimTime::ZERO,
            required: SimDuration::ZERO,
            interval_ms: hc.sample_interval_low_ms,
            sample_start: SimTime::ZERO,
            head_start: SimDuration::ZERO,
            startup_completions: hc.startup_completions_tiered,
        }
    }

    /// The start-up's completions before the program's first request, `before`
    /// it (`[hill_climbing] startup_completions_tiered`, when start-up work
    /// created the gate thread): the first takes the first sample, whose
    /// figures no later decision reads (the first sample is never in the
    /// wave's window), and draws the next interval; the rest count toward
    /// the next sample. Returns how many completions there were.
    pub fn startup(&mut self, before: SimDuration, goal: u32, limits: (u32, u32)) -> u32 {
        let n = self.startup_completions;
        if !self.enabled || n == 0 {
            return 0;
        }
        // Its span reaches back to the clock's epoch in the CLR (a
        // zero-initialised start time); any positive span reads the same.
        let span = before.as_secs_f64().max(1e-3);
        let (_, next_interval) = self.climber.update(goal, span, 1, 0, limits.0, limits.1);
        self.interval_ms = next_interval;
        self.completions = u64::from(n);
        self.prior_completions = 1;
        self.required = SimDuration::from_ms(u64::from(next_interval));
        self.head_start = before;
        n
    }

    /// Counts a completion; when a sample is taken returns the new goal.
    pub fn completed(
        &mut self,
        now: SimTime,
        goal: u32,
        active: u32,
        cpu_utilization: u32,
        limits: (u32, u32),
    ) -> Option<u32> {
        self.completions += 1;
        if !self.enabled
            || active > goal
            || now.since(self.prior_time) + self.head_start < self.required
        {
            return None;
        }
        let elapsed = now.since(self.sample_start) + self.head_start;
        if elapsed.as_nanos() < u64::from(self.interval_ms / 2) * 1_000_000
            || elapsed.as_nanos() == 0
        {
            return None;
        }
        let done = (self.completions - self.prior_completions).min(u64::from(u32::MAX)) as u32;
        let (new_goal, next_interval) = self.climber.update(
            goal,
            elapsed.as_secs_f64(),
            done,
            cpu_utilization,
            limits.0,
            limits.1,
        );
        self.interval_ms = next_interval;
        self.prior_completions = self.completions;
        self.prior_time = now;
        self.required = SimDuration::from_ms(u64::from(next_interval));
        self.sample_start = now;
        self.head_start = SimDuration::ZERO;
        Some(new_goal)
    }
}

/// The classic pool.
#[derive(Debug)]
pub struct Classic {
    base: PolicyBase,
    goal: u32,
    last_dequeue: SimTime,
    gate: GateThread,
    hill_climbing: HillClimbingSampler,
}

impl Classic {
    pub fn new(config: &PolicyConfig, scenario: &Scenario) -> Classic {
        let base = PolicyBase::new(config, scenario);
        Classic {
            goal: base.min,
            base,
            last_dequeue: SimTime::ZERO,
            gate: GateThread::new(&config.gate, scenario, gate::GATE_STREAM),
            hill_climbing: HillClimbingSampler::new(config, scenario, "hill-climbing"),
        }
    }

    #[inline]
    fn maybe_add_working_worker(&mut self, pool: &mut dyn PoolControl, reason: ThreadReason) {
        maybe_add_working_worker(pool, self.goal, reason);
    }

    fn set_goal(&mut self, pool: &mut dyn PoolControl, goal: u32, reason: GoalReason) {
        move_goal(&mut self.goal, self.base.limits(), pool, goal, reason);
    }
}

impl Policy for Classic {
    fn base(&self) -> &PolicyBase {
        &self.base
    }
    fn goal(&self) -> Option<u32> {
        Some(self.goal)
    }

    fn start(&mut self, pool: &mut dyn PoolControl) {
        pool.goal_changed(self.goal, GoalReason::MinThreads);
        if let Some(before) = self.gate.started_by_startup() {
            let completions = self
                .hill_climbing
                .startup(before, self.goal, self.base.limits());
            if completions > 0 {
                pool.decision(Decision::StartupSample {
                    before,
                    completions,
                });
            }
        }
    }

    #[inline]
    fn thread_requested(&mut self, pool: &mut dyn PoolControl, _cause: RequestCause) {
        self.gate.ensure_running(pool);
        self.maybe_add_working_worker(pool, ThreadReason::Demand);
    }

    #[inline]
    fn seeking_work(&mut self, pool: &mut dyn PoolControl, _thread: ThreadId) {
        self.gate.first_thread_dispatching(pool);
        // UpdateLastDequeueTime before every ExecuteWorkRequest.
        self.last_dequeue = pool.now();
    }

    fn work_completed(&mut self, pool: &mut dyn PoolControl, thread: ThreadId) -> bool {
        let now = pool.now();
        self.last_dequeue = now;
        let counts = pool.counts();
        let limits = self.base.limits();
        if let Some(new_goal) = self.hill_climbing.completed(
            now,
            self.goal,
            counts.existing,
            self.gate.cpu_utilization,
            limits,
        ) {
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
        // ShouldWorkerKeepRunning: with more active threads than the goal,
        // this one retires.
        let existing = pool.counts().existing;
        let keep = existing <= self.goal;
        if !keep {
            pool.decision(Decision::WorkerStop {
                thread,
                rule: "ShouldWorkerKeepRunning",
                threads: existing,
                threads_name: "active",
                goal: self.goal,
                retires: true,
            });
        }
        keep
    }

    fn wake(&mut self, pool: &mut dyn PoolControl, tag: Wake) {
        if self.gate.is_start(tag) {
            self.gate.begin(pool);
            return;
        }
        if !self.gate.is_tick(tag) {
            return;
        }
        let counts = pool.counts();
        let (min, max) = self.base.limits();
        let view = TickView {
            requests_pending: counts.pending_requests > 0,
            busy: counts.pending_requests > 0,
            counted: counts.existing,
            goal: self.goal,
            min,
            max,
            blocking_pending: false,
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
        let remaining = pool.counts().existing.saturating_sub(1);
        let goal = remaining.min(self.goal).max(self.base.min);
        self.set_goal(pool, goal, GoalReason::ThreadTimedOut);
        self.hill_climbing
            .climber
            .force_change(self.goal, Transition::ThreadTimedOut);
        true
    }
}

impl crate::policy::Model for Classic {
    fn new(config: &PolicyConfig, scenario: &Scenario) -> Classic {
        Classic::new(config, scenario)
    }
}
