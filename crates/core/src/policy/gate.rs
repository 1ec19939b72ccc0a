//! The gate thread (native pool) / monitor thread (Mono): a periodic check
//! for starvation, shared by the models built on the classic pool.
//!
//! Read: dotnet/coreclr v3.1 `win32threadpool.cpp` (`GateThreadStart`,
//! `SufficientDelaySinceLastDequeue`), dotnet/runtime
//! `PortableThreadPool.GateThread.cs`, mono `threadpool-worker-default.c`
//! (`monitor_thread`); see `docs/research/`.
//!
//! - It starts with the first thread request. Its first tick comes after
//!   `first_tick` (native Linux: ~1000 ms, one period for an initial CPU
//!   reading and one more; portable and Mono: 500 ms), or at a phase drawn
//!   from the run's seed when the policy says the phase is unknown (a gate
//!   thread started long before the workload), or at the scenario's
//!   `gate_phase_ms`.
//! - With tiered compilation on (the runtimes' default, the scenario's
//!   `[pool] tiered_compilation`), start-up work the program does not
//!   control (the call-counting timer's work item) requests a thread before
//!   the workload does, so the gate starts earlier: `first_tick_tiered`
//!   replaces `first_tick` (on CoreCLR 3.1 a phase drawn from the seed, so
//!   the outcome varies run to run as the real runs do).
//! - The starvation test subtracts two readings of `Environment.TickCount`
//!   (the last dequeue's and the tick's). On Linux CoreCLR reads it from
//!   `CLOCK_MONOTONIC_COARSE` (coreclr PAL `GetTickCount64`, runtime
//!   `CoreLibNative_GetTickCount64`), which steps once a kernel tick: 4 ms
//!   at HZ = 250, as on the machine the fixtures were recorded on
//!   (`clock_getres` says 0.004 s). So a delay a little over the threshold
//!   reads as exactly the threshold unless a step falls between: with
//!   round durations, whether a tick injects a thread depends on where the
//!   grid lies, which the program does not control (`tick_count_ms`, its
//!   phase drawn from the seed).
//! - Where the gate thread starts with the pool (`start =
//!   "with-first-thread"`: .NET Core 3.1 on Linux, measured), it is created
//!   with the pool's first worker and looks at the cores when that worker
//!   first dispatches: when the worker's CPU work takes every core, the gate
//!   thread first runs only at the next scheduler tick (the step of the
//!   coarse clock), and its cadence starts there, so its first check reads
//!   a tick count a whole step further from the worker's dequeue stamp than
//!   the time between them. With a core free its first tick stays as the
//!   first-tick keys say. [`GateThread::first_thread_dispatching`] and
//!   [`GateThread::begin`] model it; `explain` narrates it
//!   (`Decision::GateStarted`); `docs/research/coreclr3-first-starvation-check.md`.
//! - Each tick measures the process's CPU utilisation since the previous
//!   tick; the next tick follows `period + drift` later (a gate thread that
//!   sleeps after its work drifts; a periodic timer does not). Where the
//!   drift was measured as a distribution (Linux: the gap between threads
//!   injected on successive ticks is 500 ms + 0.2..1 ms), each tick draws
//!   its own from the stream `<gate stream>/drift`.
//! - After `idle_ticks_before_stop` ticks with no thread request pending it
//!   stops (native) or parks (portable); the next request restarts its
//!   cadence from that moment.
//! - Starvation (`SufficientDelaySinceLastDequeue`): the time since the
//!   last dequeue exceeds `starvation_delay` while CPU utilisation is below
//!   `cpu_busy_percent`, else `goal × busy_delay_per_thread`; `>` on CoreCLR,
//!   `>=` on Mono. [`GateThread::check`] returns the test's inputs, which
//!   the models record as a [`Decision::GateTick`](crate::trace::Decision).
//! - A tick with requests pending runs one starvation rule for every model,
//!   [`GateThread::starvation_tick`]: the test above, then the goal. What
//!   differs is data: which threads count against the goal and the maximum
//!   (CoreCLR's native pool: the existing ones, `ThreadCounts.NumActive`;
//!   the portable pool and Mono: the working ones), when the last dequeue
//!   was ([`LastDequeue`]: Mono before its first completion reads the time
//!   since boot), whether a cooperative-blocking adjustment is pending
//!   (portable: the tick leaves the goal to it), and how the new goal is
//!   set ([`InjectionRule`]). The model then adds the thread its own way.

use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use crate::policy::config::{
    Comparison, CpuReading, FirstCpuSample, FirstTick, GateConfig, GateStart,
};
use crate::policy::{PoolControl, Wake};
use crate::rng;
use crate::scenario::Scenario;
use crate::time::{SimDuration, SimTime};
use crate::trace::{Decision, GateOutcome, StarvationCheck};

/// Where a gate thread that starts with the pool is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Starting {
    /// Ticking as the policy says (or stopped).
    No,
    /// Created at this time, its first tick due as the policy says; waits
    /// for the pool's first worker to dispatch.
    ForFirstThread(SimTime),
    /// Created at this time; the worker has dispatched: looks at the cores.
    Ready(SimTime),
    /// Created at this time; the cores were taken: first runs at the
    /// scheduler tick it waits for, and its cadence starts then.
    AtTick(SimTime),
}

#[derive(Debug)]
pub struct GateThread {
    config: GateConfig,
    first_tick: SimDuration,
    /// The first tick after a gate thread's first run (`first_tick_ms`),
    /// when that run waited for a scheduler tick.
    first_tick_after_start: SimDuration,
    /// `Environment.TickCount`'s step and the phase of its grid, if stepped.
    tick_count: Option<(u64, u64)>,
    /// The stream of the per-tick drift, when the drift is a distribution.
    drift_rng: Option<ChaCha8Rng>,
    running: bool,
    /// Whether the gate thread is created with the pool's first worker and
    /// may wait for a scheduler tick to first run (`start =
    /// "with-first-thread"`, a first tick counted from the request), until
    /// it has started once.
    starts_with_pool: bool,
    /// How long before the program's first request start-up work created
    /// the gate thread (tiered compilation's work item, `first_tick_tiered`
    /// on several processors), if it did.
    started_by_startup: Option<SimDuration>,
    starting: Starting,
    /// Invalidates ticks scheduled before a stop.
    generation: u64,
    idle_ticks: u32,
    last_tick: SimTime,
    last_tick_busy_ns: u128,
    /// A CPU sample has been taken (on a tick with work pending).
    sampled: bool,
    /// CPU utilisation over the last tick, percent.
    pub cpu_utilization: u32,
}

impl GateThread {
    pub fn new(config: &GateConfig, scenario: &Scenario, stream_name: &str) -> GateThread {
        let period = config.period.as_nanos().max(1);
        // TC_DelaySingleProcMultiplier reads the processor count.
        let one_core = scenario.machine.processors() == 1;
        let tiered = match (
            &config.first_tick_tiered_one_core,
            &config.first_tick_tiered,
        ) {
            (Some(one_core_tick), _) if one_core => Some((one_core_tick, true)),
            (_, tiered) => tiered.as_ref().map(|t| (t, false)),
        };
        // Whether the first tick counts from the program's request (the gate
        // thread is created by it), not a phase of a gate already running.
        let (unforced, from_request) = match tiered {
            Some((tiered, from_request)) if scenario.pool.tiered_compilation => {
                (tiered, from_request)
            }
            _ => (&config.first_tick, true),
        };
        let starts_with_pool = config.start == GateStart::WithFirstThread
            && scenario.pool.gate_phase.is_none()
            && from_request;
        let first_tick = match (scenario.pool.gate_phase, unforced) {
            (Some(phase), _) => phase,
            (None, FirstTick::After(d)) => *d,
            (None, FirstTick::Random) => {
                let mut rng = rng::stream(scenario.seed, stream_name);
                SimDuration(rng.random_range(0..period))
            }
            (None, FirstTick::Measured(spread)) => {
                spread.draw(&mut rng::stream(scenario.seed, stream_name))
            }
        };
        let tick_count = config.tick_count.map(|step| {
            let step = step.as_nanos().max(1);
            (step, tick_count_phase(scenario.seed, stream_name, step))
        });
        let drift_rng = (!config.drift.is_fixed())
            .then(|| rng::stream(scenario.seed, &format!("{stream_name}/drift")));
        let first_tick_after_start = match config.first_tick {
            FirstTick::After(d) => d,
            FirstTick::Random | FirstTick::Measured(_) => config.period + config.period,
        };
        // A gate thread that start-up work created ticks one period for its
        // first CPU reading and one more before its first check: it started
        // that long before its first tick.
        let started_by_startup =
            (!from_request).then(|| first_tick_after_start.saturating_sub(first_tick));
        GateThread {
            config: config.clone(),
            first_tick,
            first_tick_after_start,
            started_by_startup,
            tick_count,
            drift_rng,
            running: false,
            starts_with_pool,
            starting: Starting::No,
            generation: 0,
            idle_ticks: 0,
            last_tick: SimTime::ZERO,
            last_tick_busy_ns: 0,
            sampled: false,
            cpu_utilization: 0,
        }
    }

    /// When start-up work the program does not control (tiered
    /// compilation's call-counting work item, on several processors) made
    /// the pool's first request and so created the gate thread: how long
    /// before the program's first request. `None` when the program's own
    /// first request creates it (one processor, tiering off, or a policy
    /// without `first_tick_tiered`).
    pub fn started_by_startup(&self) -> Option<SimDuration> {
        self.started_by_startup
    }

    fn tag(&self) -> Wake {
        Wake::GateTick(self.generation)
    }

    fn start_tag(&self) -> Wake {
        Wake::GateStart(self.generation)
    }

    /// Whether `tag` is this gate thread's current tick.
    pub fn is_tick(&self, tag: Wake) -> bool {
        self.running && tag == self.tag()
    }

    /// Whether `tag` is this gate thread's first run (see [`GateThread::begin`]).
    pub fn is_start(&self, tag: Wake) -> bool {
        self.running && self.starting != Starting::No && tag == self.start_tag()
    }

    /// Starts (or restarts) ticking; called on every thread request.
    #[inline]
    pub fn ensure_running(&mut self, pool: &mut dyn PoolControl) {
        self.idle_ticks = 0;
        if self.running {
            return;
        }
        self.running = true;
        self.generation += 1;
        let now = pool.now();
        if self.starts_with_pool {
            // Created with the pool's first worker: looks at the cores when
            // it dispatches.
            self.starts_with_pool = false;
            self.starting = Starting::ForFirstThread(now);
        }
        self.start_ticking(pool, now, self.first_tick);
    }

    /// The first tick comes `first_tick` after `now`.
    fn start_ticking(&mut self, pool: &mut dyn PoolControl, now: SimTime, first_tick: SimDuration) {
        self.last_tick = now;
        self.last_tick_busy_ns = pool.cpu_busy_core_ns();
        pool.wake_at(now + first_tick, self.tag());
    }

    /// A pool thread is about to dispatch (`UpdateLastDequeueTime`): the
    /// pool's start-up is over, so a gate thread created with it is ready to
    /// run. It looks at the cores once this instant's work has started
    /// ([`GateThread::begin`]).
    #[inline]
    pub fn first_thread_dispatching(&mut self, pool: &mut dyn PoolControl) {
        if let Starting::ForFirstThread(created) = self.starting {
            self.starting = Starting::Ready(created);
            pool.wake_at(pool.now(), self.start_tag());
        }
    }

    /// The gate thread's first run, once the pool's first worker has
    /// dispatched (its [`GateThread::is_start`] wake-up). With a core free
    /// it runs at once and its first tick stays as the policy's first-tick
    /// keys say. With the CPU work taking every core it runs only at the
    /// next scheduler tick (the coarse clock's step): its cadence, and the
    /// tick count its checks read, start on that tick, `first_tick_ms`
    /// before its first check.
    pub fn begin(&mut self, pool: &mut dyn PoolControl) {
        let now = pool.now();
        match self.starting {
            Starting::Ready(created) => match self.tick_count {
                Some((step, phase)) if pool.cores_taken() => {
                    self.starting = Starting::AtTick(created);
                    // The tick due from the request is dropped.
                    self.generation += 1;
                    pool.wake_at(next_tick(now, step, phase), self.start_tag());
                }
                _ => {
                    self.starting = Starting::No;
                    pool.decision(Decision::GateStarted {
                        created,
                        waited_for_tick: false,
                        first_tick: created + self.first_tick,
                    });
                }
            },
            Starting::AtTick(created) => {
                self.starting = Starting::No;
                let first_tick = self.first_tick_after_start;
                pool.decision(Decision::GateStarted {
                    created,
                    waited_for_tick: true,
                    first_tick: now + first_tick,
                });
                self.start_ticking(pool, now, first_tick);
            }
            Starting::No | Starting::ForFirstThread(_) => {}
        }
    }

    /// Measures CPU utilisation since the previous tick and schedules the
    /// next one, or stops after enough idle ticks (`busy`: work or an
    /// adjustment is pending). Returns whether the tick should check for
    /// starvation.
    pub fn tick(&mut self, pool: &mut dyn PoolControl, busy: bool) -> bool {
        // A gate thread that ticks before any worker dispatched has run:
        // nothing is left to wait for.
        if let Starting::ForFirstThread(_) = self.starting {
            self.starting = Starting::No;
        }
        let now = pool.now();
        let total = pool.cpu_busy_core_ns();
        let elapsed = u128::from(now.since(self.last_tick).as_nanos());
        let (processors, most) = match self.config.cpu_reading {
            CpuReading::AllProcessors => (pool.processors().max(1), 100),
            CpuReading::OneProcessor => (1, 100 * u128::from(pool.processors().max(1))),
        };
        let capacity = elapsed * u128::from(processors);
        self.cpu_utilization = ((total - self.last_tick_busy_ns) * 100)
            .checked_div(capacity)
            .map_or(0, |u| u.min(most) as u32);
        // Mono's first sample (on its first round with work queued) spans
        // the machine's uptime: about 0 % whatever the threads do now.
        if !self.sampled && self.config.first_cpu_sample == FirstCpuSample::SinceBoot {
            self.cpu_utilization = 0;
        }
        self.sampled |= busy;
        self.last_tick = now;
        self.last_tick_busy_ns = total;
        if busy {
            self.idle_ticks = 0;
        } else {
            self.idle_ticks += 1;
        }
        let limit = self.config.idle_ticks_before_stop;
        if limit > 0 && self.idle_ticks >= limit {
            self.running = false;
            return false;
        }
        let drift = match self.drift_rng.as_mut() {
            Some(rng) => self.config.drift.draw(rng),
            None => self.config.drift.min(),
        };
        pool.wake_at(now + self.config.period + drift, self.tag());
        true
    }

    /// `Environment.TickCount` at `t`, in ns: `t` itself on an exact clock,
    /// else the last step of the grid at or before `t`.
    fn tick_count_at(&self, t: SimTime) -> u64 {
        match self.tick_count {
            None => t.as_nanos(),
            Some((step, phase)) => (t.as_nanos() + phase) / step * step,
        }
    }

    /// `SufficientDelaySinceLastDequeue`.
    pub fn starved(&self, now: SimTime, last_dequeue: SimTime, goal: u32) -> bool {
        self.check(now, last_dequeue, goal).starved
    }

    /// `SufficientDelaySinceLastDequeue` with the inputs it read.
    pub fn check(&self, now: SimTime, last_dequeue: SimTime, goal: u32) -> StarvationCheck {
        let since_dequeue = SimDuration(
            self.tick_count_at(now)
                .saturating_sub(self.tick_count_at(last_dequeue)),
        );
        self.check_since(since_dequeue, goal)
    }

    /// `SufficientDelaySinceLastDequeue` on a delay the caller read (Mono's
    /// monitor before any completion: the time since boot).
    pub fn check_since(&self, since_dequeue: SimDuration, goal: u32) -> StarvationCheck {
        let cpu_busy = self.cpu_utilization >= self.config.cpu_busy_percent;
        let threshold = if !cpu_busy {
            self.config.starvation_delay
        } else {
            self.config
                .busy_delay_per_thread
                .saturating_mul(u64::from(goal))
        };
        StarvationCheck {
            since_dequeue,
            threshold,
            comparison: comparison_symbol(self.config.comparison),
            cpu_percent: self.cpu_utilization,
            cpu_busy_percent: self.config.cpu_busy_percent,
            cpu_busy,
            starved: self.config.comparison.holds(since_dequeue, threshold),
        }
    }
}

/// How a starved tick raises the goal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InjectionRule {
    /// CoreCLR's gate thread (`GateThreadStart`, native and portable): at
    /// the maximum nothing (`AtMax`); with fewer threads counted than the
    /// goal nothing either (`BelowGoal`: a thread request will add one);
    /// else the goal becomes the counted threads + 1.
    CountedPlusOne,
    /// Mono's monitor (`monitor_thread`): the goal (`max_working`) + 1
    /// while below the maximum; at the maximum, a thread is still added
    /// while fewer work than the goal (`AtMax` once as many work).
    GoalPlusOne,
}

/// When the last work item was dequeued, as the starvation test reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LastDequeue {
    /// At this time (read through `Environment.TickCount`).
    At(SimTime),
    /// Never: the stamp is still 0 on a clock since boot, this long ago.
    SinceBoot(SimDuration),
}

/// What a starvation tick reads of the pool.
#[derive(Clone, Copy, Debug)]
pub struct TickView {
    /// Thread requests are pending: the tick has work to look at.
    pub requests_pending: bool,
    /// The tick counts as busy (keeps the gate running): requests, or an
    /// adjustment, pending.
    pub busy: bool,
    /// The threads the rule compares with the goal and the maximum.
    pub counted: u32,
    pub goal: u32,
    /// The pool's limits: a goal is clamped to them.
    pub min: u32,
    pub max: u32,
    /// A cooperative-blocking adjustment is pending (portable pool).
    pub blocking_pending: bool,
    pub last_dequeue: LastDequeue,
}

impl GateThread {
    /// A gate tick (after [`GateThread::is_tick`]): measures the CPU,
    /// schedules the next tick, and with requests pending runs the
    /// starvation test and records it ([`Decision::GateTick`]). Returns the
    /// goal to move to when the tick injects a thread (`None` otherwise);
    /// the model then moves its goal and adds the thread.
    pub fn starvation_tick(
        &mut self,
        pool: &mut dyn PoolControl,
        view: TickView,
        rule: InjectionRule,
    ) -> Option<u32> {
        if !self.tick(pool, view.busy) || !view.requests_pending {
            return None;
        }
        let check = match view.last_dequeue {
            LastDequeue::At(t) => self.check(pool.now(), t, view.goal),
            LastDequeue::SinceBoot(d) => self.check_since(d, view.goal),
        };
        let (outcome, target) = match rule {
            InjectionRule::CountedPlusOne => {
                let outcome = if view.blocking_pending {
                    GateOutcome::BlockingPending
                } else if !check.starved {
                    GateOutcome::NotStarved
                } else if view.counted >= view.max {
                    GateOutcome::AtMax
                } else if view.counted < view.goal {
                    GateOutcome::BelowGoal
                } else {
                    GateOutcome::Inject
                };
                (outcome, view.counted + 1)
            }
            InjectionRule::GoalPlusOne => {
                let outcome = if !check.starved {
                    GateOutcome::NotStarved
                } else if view.goal >= view.max && view.counted >= view.goal {
                    GateOutcome::AtMax
                } else {
                    GateOutcome::Inject
                };
                let target = if view.goal < view.max {
                    view.goal + 1
                } else {
                    view.goal
                };
                (outcome, target)
            }
        };
        let inject = outcome == GateOutcome::Inject;
        pool.decision(Decision::GateTick {
            check,
            goal: view.goal,
            new_goal: if inject {
                target.clamp(view.min.min(view.max), view.max)
            } else {
                view.goal
            },
            threads: view.counted,
            outcome,
        });
        inject.then_some(target)
    }
}

/// The stream name of the gate thread's phase, shared by the models.
pub const GATE_STREAM: &str = "gate-phase";

/// The first step of the grid of `step` ns at `phase` (see
/// [`tick_count_phase`]) after `t`: where a thread that waits for the
/// scheduler tick runs, the kernel's tick being the coarse clock's step.
pub fn next_tick(t: SimTime, step: u64, phase: u64) -> SimTime {
    SimTime(((t.as_nanos() + phase) / step + 1) * step - phase)
}

/// Where the `Environment.TickCount` grid of `step` ns lies against the run
/// (seeded): the gate's test and the timers' due times read one clock, so
/// both take their phase from here.
pub fn tick_count_phase(seed: u64, stream_name: &str, step: u64) -> u64 {
    let mut rng = rng::stream(seed, &format!("{stream_name}/tick-count"));
    rng.random_range(0..step.max(1))
}

/// `">"` or `">="`, as a decision names the comparison.
pub fn comparison_symbol(comparison: Comparison) -> &'static str {
    match comparison {
        Comparison::Greater => ">",
        Comparison::GreaterOrEqual => ">=",
    }
}
