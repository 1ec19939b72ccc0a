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

use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use crate::policy::PoolControl;
use crate::policy::config::{Comparison, CpuReading, FirstCpuSample, FirstTick, GateConfig};
use crate::rng;
use crate::scenario::Scenario;
use crate::time::{SimDuration, SimTime};
use crate::trace::StarvationCheck;

/// Wake-up tags of the gate thread: `GATE_TAG | generation << 8`.
pub const GATE_TAG: u64 = 1;

#[derive(Debug)]
pub struct GateThread {
    config: GateConfig,
    first_tick: SimDuration,
    /// `Environment.TickCount`'s step and the phase of its grid, if stepped.
    tick_count: Option<(u64, u64)>,
    /// The stream of the per-tick drift, when the drift is a distribution.
    drift_rng: Option<ChaCha8Rng>,
    running: bool,
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
        let tiered = match (
            &config.first_tick_tiered_one_core,
            &config.first_tick_tiered,
        ) {
            (Some(one_core), _) if scenario.machine.cores == 1 => Some(one_core),
            (_, tiered) => tiered.as_ref(),
        };
        let unforced = match tiered {
            Some(tiered) if scenario.pool.tiered_compilation => tiered,
            _ => &config.first_tick,
        };
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
        GateThread {
            config: config.clone(),
            first_tick,
            tick_count,
            drift_rng,
            running: false,
            generation: 0,
            idle_ticks: 0,
            last_tick: SimTime::ZERO,
            last_tick_busy_ns: 0,
            sampled: false,
            cpu_utilization: 0,
        }
    }

    fn tag(&self) -> u64 {
        GATE_TAG | (self.generation << 8)
    }

    /// Whether `tag` is this gate thread's current tick.
    pub fn is_tick(&self, tag: u64) -> bool {
        self.running && tag == self.tag()
    }

    /// Starts (or restarts) ticking; called on every thread request.
    pub fn ensure_running(&mut self, pool: &mut dyn PoolControl) {
        self.idle_ticks = 0;
        if self.running {
            return;
        }
        self.running = true;
        self.generation += 1;
        let now = pool.now();
        self.last_tick = now;
        self.last_tick_busy_ns = pool.cpu_busy_core_ns();
        pool.wake_at(now + self.first_tick, self.tag());
    }

    /// Measures CPU utilisation since the previous tick and schedules the
    /// next one, or stops after enough idle ticks (`busy`: work or an
    /// adjustment is pending). Returns whether the tick should check for
    /// starvation.
    pub fn tick(&mut self, pool: &mut dyn PoolControl, busy: bool) -> bool {
        let now = pool.now();
        let total = pool.cpu_busy_core_ns();
        let elapsed = u128::from(now.since(self.last_tick).as_nanos());
        let (processors, most) = match self.config.cpu_reading {
            CpuReading::AllProcessors => (pool.cores().max(1), 100),
            CpuReading::OneProcessor => (1, 100 * u128::from(pool.cores().max(1))),
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
        let cpu_busy = self.cpu_utilization >= self.config.cpu_busy_percent;
        let threshold = if !cpu_busy {
            self.config.starvation_delay
        } else {
            self.config
                .busy_delay_per_thread
                .saturating_mul(u64::from(goal))
        };
        let since_dequeue = SimDuration(
            self.tick_count_at(now)
                .saturating_sub(self.tick_count_at(last_dequeue)),
        );
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

/// The stream name of the gate thread's phase, shared by the models.
pub const GATE_STREAM: &str = "gate-phase";

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
