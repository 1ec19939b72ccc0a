//! A policy file, validated: which model and its constants.
//!
//! Policy files live in `policies/` (one TOML each; they are also compiled
//! into the binary so `poolsim` works from any directory). A user can copy
//! one, edit a constant and pass the path as the policy. Models are code
//! (`policy::classic`, ...); these are their numbers.

use rand::{Rng, RngExt};

use crate::time::SimDuration;

/// A duration that varies from run to run, as measured: one value (exact
/// timing), or a distribution given by its quantiles at equally spaced
/// probabilities (`n` values: the quantiles at 0, 1/(n−1), ..., 1). A draw
/// is the inverse CDF at a uniform point, interpolated linearly between
/// neighbouring quantiles, from the caller's seeded stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spread {
    /// Ascending; one value = fixed.
    quantiles: Vec<SimDuration>,
}

impl Spread {
    /// Always `d`: no draw is made.
    pub fn fixed(d: SimDuration) -> Spread {
        Spread { quantiles: vec![d] }
    }

    /// The distribution with these quantiles (ascending, not empty; the
    /// policy file loader checks both).
    pub fn from_quantiles(quantiles: Vec<SimDuration>) -> Spread {
        assert!(!quantiles.is_empty() && quantiles.is_sorted());
        Spread { quantiles }
    }

    /// Whether every draw gives the same value (no stream is read).
    pub fn is_fixed(&self) -> bool {
        self.quantiles.first() == self.quantiles.last()
    }

    /// The smallest value.
    pub fn min(&self) -> SimDuration {
        self.quantiles[0]
    }

    /// The quantiles as given.
    pub fn quantiles(&self) -> &[SimDuration] {
        &self.quantiles
    }

    /// A value drawn from `rng` (none is drawn when fixed).
    pub fn draw<R: Rng + ?Sized>(&self, rng: &mut R) -> SimDuration {
        if self.is_fixed() {
            return self.quantiles[0];
        }
        let steps = (self.quantiles.len() - 1) as f64;
        let at = rng.random::<f64>() * steps;
        let i = (at.floor() as usize).min(self.quantiles.len() - 2);
        let (lo, hi) = (
            self.quantiles[i].as_nanos(),
            self.quantiles[i + 1].as_nanos(),
        );
        let frac = at - i as f64;
        SimDuration(lo + ((hi - lo) as f64 * frac).round() as u64)
    }

    /// A value drawn from the run's stream for it, which exists only when
    /// the spread varies (without one: the fixed value).
    pub fn draw_from<R: Rng + ?Sized>(&self, rng: Option<&mut R>) -> SimDuration {
        rng.map_or(self.min(), |rng| self.draw(rng))
    }
}

/// Which model (code) interprets the constants: the model registry's
/// (`policy::models!`).
pub use super::ModelKind;

/// A thread count given in a policy file: a number, or a multiple of the
/// machine's cores (`"cores"`, `"4*cores"`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ThreadCount {
    Fixed(u32),
    PerCore(u32),
}

impl ThreadCount {
    pub fn resolve(self, cores: u32) -> u32 {
        match self {
            ThreadCount::Fixed(n) => n,
            ThreadCount::PerCore(k) => k.saturating_mul(cores),
        }
    }
}

/// How the gate thread compares the time since the last dequeue with its threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// `delay > threshold` (CoreCLR's `SufficientDelaySinceLastDequeue`).
    Greater,
    /// `delay >= threshold` (Mono's monitor thread).
    GreaterOrEqual,
}

/// What the gate thread's CPU-utilisation reading is a share of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuReading {
    /// The CPU the process used over the time since the last reading
    /// times the processors, at most 100 % (Windows' `GetSystemTimes`;
    /// .NET 6+'s `CpuUtilizationReader` on Unix divides by
    /// `Environment.ProcessorCount`; Mono's `mono_cpu_usage` multiplies the
    /// elapsed time by the CPU count).
    AllProcessors,
    /// The CPU the process used over the elapsed time alone, not times the
    /// processors: up to 100 % per processor (CoreCLR 3.x on Linux: the
    /// PAL's `PAL_GetCPUBusyTime` reads `getrusage` against `gettimeofday`
    /// and scales the elapsed time by the processor count only where
    /// `thread_self`, `_lwp_self` or `vm_read` exist, which glibc lacks;
    /// dotnet/coreclr v3.1 `src/pal/src/misc/time.cpp` and
    /// `src/pal/src/configure.cmake`). One busy thread on two cores reads
    /// 100 %: the gate takes the busy threshold and hill climbing refuses to
    /// add threads.
    OneProcessor,
}

/// When the gate thread's cadence starts, for a first tick counted from
/// the program's first request (`first_tick`, not a phase of a gate
/// thread already running).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateStart {
    /// At the request that creates it.
    AtRequest,
    /// With the pool's first worker, which it needs a core beside: when
    /// that worker's first dispatch starts CPU work that takes every core,
    /// the gate thread first runs only at the next scheduler tick (the
    /// kernel's tick is the coarse clock's step, `tick_count`: the running
    /// thread keeps its core until a tick finds its slice used), and its
    /// cadence starts on that tick, `first_tick` before its first check.
    /// With a core free its first tick is as the first-tick keys say (.NET
    /// Core 3.1 on Linux, measured: `scenarios/calibration/first-check-*.toml`).
    WithFirstThread,
}

/// What the gate thread's first CPU-utilisation sample covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FirstCpuSample {
    /// The time since the gate thread started: CoreCLR reads the CPU once
    /// when the gate starts (`GetCPUBusyTime_NT(&prevCPUInfo)` in
    /// `GateThreadStart`, dotnet/coreclr v3.1 `win32threadpool.cpp`; the
    /// portable pool's `CpuUtilizationReader`, read once at start).
    SinceGateStart,
    /// The time since the machine booted: a sample state that starts
    /// zeroed and is not read when the gate starts, so the first reading
    /// divides the process's CPU time by the uptime: about 0 %. No built-in
    /// policy uses it. Mono's was thought to (`worker.cpu_usage_state =
    /// g_new0 (...)`), but its `monitor_thread` reads the CPU once when it
    /// starts (strace here: `getrusage` at the monitor's start, then every
    /// round); its first round injects under full CPU because its last
    /// dequeue is at boot (`[mono] heuristic_start`).
    SinceBoot,
}

impl Comparison {
    pub fn holds(self, delay: SimDuration, threshold: SimDuration) -> bool {
        match self {
            Comparison::Greater => delay > threshold,
            Comparison::GreaterOrEqual => delay >= threshold,
        }
    }
}

/// `[threads]`
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadsConfig {
    /// Default minimum (the value `GetMinThreads` returns).
    pub min: ThreadCount,
    /// Default maximum.
    pub max: ThreadCount,
    /// From the pool deciding to create a thread to that thread's first
    /// dequeue: one value, or measured quantiles drawn per thread (stream
    /// `thread-start`).
    pub start_latency: Spread,
    /// The same for the run's first pool thread, which also pays for the
    /// pool's own start-up: measured, drawn once a run (stream
    /// `first-thread-start`). Threads created before it is ready are not
    /// ready before it either.
    pub first_start_latency: Spread,
    /// From releasing an idle worker to its first dequeue.
    pub wake_latency: SimDuration,
    /// An idle worker exits after waiting this long for work.
    pub idle_timeout: SimDuration,
    /// `new Thread(...).Start()` to the thread running (the `new-thread`
    /// submission and the dedicated model).
    pub dedicated_start_latency: SimDuration,
    /// Whether the scenario's `pool.min_threads` (`SetMinThreads`) changes
    /// injection. Mono accepts the call but keeps its own minimum.
    pub honours_set_min_threads: bool,
    /// Share of a core (percent) a `SpinWait.SpinUntil` spinner (`spin_ms`)
    /// uses: after ten short spins `SpinWait.SpinOnce` yields with
    /// `Thread.Yield`, `Sleep(0)` and every 20th time `Sleep(1)`, so a
    /// spinner ends on time yet mostly leaves its core to others.
    pub spin_cpu_percent: u32,
    /// How late a `Thread.Sleep(x)` returns: drawn for every sleep from
    /// the run's `sleep-overshoot` stream (timer slack and the wake-up of
    /// the sleeping thread, as measured on Linux; fixed 0 = exact timing).
    pub sleep_overshoot: Spread,
    /// How long a pool thread that released a blocked thread waits for its
    /// core when the released thread goes on with CPU work and the cores
    /// are all taken: the scheduler runs the woken thread first (Linux
    /// wake-up preemption), so the releasing thread's next dequeue comes
    /// this much later. Drawn per release from the run's `wake-preempt`
    /// stream; fixed 0 = none.
    pub wake_preemption: Spread,
    /// How long a `cpu_ms` step of one second takes: drawn once per run
    /// from its `cpu-rate` stream (a real run's CPU rate against the
    /// harness's calibration, which takes the fastest of its trials, and
    /// the machine's other work), fixed 1000 ms = exact.
    pub cpu_second: Spread,
    /// On a machine with one core, whether the program's main thread, once
    /// it has created the pool's first worker, loses the core to it: it
    /// submits nothing more until that worker leaves the core (its work
    /// blocks, or it finds none), or, while the worker computes, until the
    /// next scheduler tick (the `timers.tick_count` grid).
    pub main_yields_to_first_worker: bool,
}

/// When the gate thread's first tick comes after it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FirstTick {
    /// A phase drawn from the run's seed in `[0, period)`: the gate thread
    /// may have been started long before the workload (seed 001, docs/reference.md#seed-001).
    Random,
    /// A fixed delay after the gate thread starts (native Linux 3.x: ~1000 ms,
    /// it first waits one period for an initial CPU reading; portable: 500 ms).
    After(SimDuration),
    /// A delay drawn per run from measured quantiles (the gate's own
    /// stream): start-up work the program does not control started the
    /// gate a varying while before the program's first request.
    Measured(Spread),
}

/// `[gate]`: the gate thread's starvation rule.
#[derive(Clone, Debug, PartialEq)]
pub struct GateConfig {
    /// Tick period (`GATE_THREAD_DELAY`).
    pub period: SimDuration,
    /// CPU utilisation (percent) at or above which the pool counts as busy.
    pub cpu_busy_percent: u32,
    /// Starvation threshold while the CPU is not busy.
    pub starvation_delay: SimDuration,
    /// Starvation threshold per goal thread while the CPU is busy
    /// (`DEQUEUE_DELAY_THRESHOLD`).
    pub busy_delay_per_thread: SimDuration,
    /// `>` (CoreCLR) or `>=` (Mono).
    pub comparison: Comparison,
    /// First tick after the gate thread starts.
    pub first_tick: FirstTick,
    /// First tick after the program's first request when tiered
    /// compilation is on (the scenario's `pool.tiered_compilation`, the
    /// runtime's default): its start-up work has run on the pool before
    /// the program's first request, so the gate thread may already be
    /// running at an unknown phase. `None` = the same as `first_tick`.
    pub first_tick_tiered: Option<FirstTick>,
    /// `first_tick_tiered` on a machine with one processor, where the
    /// runtime delays tiering's work 10 times longer
    /// (`TC_DelaySingleProcMultiplier`), so that the program's own first
    /// request, not tiering, may start the gate. `None` = the same as
    /// `first_tick_tiered`.
    pub first_tick_tiered_one_core: Option<FirstTick>,
    /// Step of the `Environment.TickCount` the starvation test reads (the
    /// time of the last dequeue and of the tick): `None` = an exact clock.
    /// On Linux CoreCLR reads `CLOCK_MONOTONIC_COARSE`, which moves once a
    /// kernel tick (4 ms at HZ = 250); the grid's phase against the run is
    /// drawn from the seed.
    pub tick_count: Option<SimDuration>,
    /// Added to every period: a gate thread that sleeps `period` after its
    /// work (native Linux `Sleep(500)`) drifts; a periodic timer does not.
    /// A measured distribution is drawn per tick from the gate's own stream.
    pub drift: Spread,
    /// The gate thread stops (native) or parks (portable) after this many
    /// ticks with no thread request pending, and restarts its cadence on the
    /// next request; 0 = it never stops.
    pub idle_ticks_before_stop: u32,
    /// What the first CPU-utilisation sample covers.
    pub first_cpu_sample: FirstCpuSample,
    /// What a CPU-utilisation reading is a share of.
    pub cpu_reading: CpuReading,
    /// When its cadence starts (for a first tick counted from the request).
    pub start: GateStart,
}

/// `[hill_climbing]`: every constant of CoreCLR's `HillClimbing_*` config.
#[derive(Clone, Debug, PartialEq)]
pub struct HillClimbingConfig {
    pub enabled: bool,
    pub wave_period: u32,
    pub max_wave_magnitude: u32,
    pub wave_magnitude_multiplier: f64,
    pub wave_history_size: u32,
    pub bias: f64,
    pub max_change_per_second: f64,
    pub max_change_per_sample: f64,
    pub max_sample_error: f64,
    pub sample_interval_low_ms: u32,
    pub sample_interval_high_ms: u32,
    pub error_smoothing_factor: f64,
    pub target_signal_to_noise_ratio: f64,
    pub gain_exponent: f64,
    /// Pool work items the runtime's start-up completes before the
    /// program's first request when tiered compilation's work runs on the
    /// pool then (the gate's `first_tick_tiered` on several processors):
    /// the first takes hill climbing's first sample, the rest count toward
    /// the next. 0: hill climbing's first sample is the workload's first
    /// completion.
    pub startup_completions_tiered: u32,
}

/// When the managed work queue asks for another thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestMode {
    /// After every successful dequeue, up to `cores ×
    /// max_outstanding_requests_per_core` outstanding (.NET Framework, Core
    /// 3.x, .NET 5, .NET 6).
    EveryDequeue,
    /// One outstanding request (a flag); a worker asks for one more thread
    /// only after the first dequeue of its dispatch (.NET 7+).
    FirstDequeue,
}

/// `[dispatch]`: the worker's dispatch loop.
#[derive(Clone, Debug, PartialEq)]
pub struct DispatchConfig {
    /// A worker returns to the pool's bookkeeping after dispatching this long.
    pub quantum: SimDuration,
    /// Cap on outstanding thread requests, as a multiple of cores (the
    /// managed queue's `numOutstandingThreadRequests < ProcessorCount`).
    pub max_outstanding_requests_per_core: u32,
    pub requests: RequestMode,
    /// Whether a worker leaves its dispatch loop when the quantum expires
    /// (native pool: yes, and asks for a thread to carry on; portable: no).
    pub leave_at_quantum: bool,
}

/// How an expired timer queue reaches a pool thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerDispatch {
    /// The native timer thread queues an *unmanaged* work request; workers
    /// alternate between unmanaged and managed requests (CoreCLR 3.x/.NET 5,
    /// .NET Framework).
    UnmanagedRequest,
    /// A "time-sensitive" queue read when every other queue is empty, once
    /// per dispatch quantum, and at every other dispatch entry (.NET 6).
    TimeSensitive,
    /// A high-priority queue read after the worker's own local queue and
    /// before the global queue (.NET 7+).
    HighPriority,
    /// Every due timer callback is its own work item at the tail of the
    /// global queue (Mono's timer scheduler thread).
    GlobalPerCallback,
}

/// `[timers]`
#[derive(Clone, Debug, PartialEq)]
pub struct TimersConfig {
    /// Timer queues (`TimerQueue.Instances`: one per processor on CoreCLR;
    /// a timer joins the queue of the processor its creator ran on).
    pub queues: ThreadCount,
    pub dispatch: TimerDispatch,
    /// Which queue a new timer joins.
    pub queue_of: TimerQueueChoice,
    /// Step of the clock timers are due on (`None` = exact). CoreCLR's
    /// `TimerQueue` keeps due times on `TickCount64`, which on Linux reads
    /// `CLOCK_MONOTONIC_COARSE` (4 ms steps at HZ = 250): a timer of `d` ms
    /// created at `t` is due at the first step at least `d` after the step
    /// `t` read, so it fires up to a step early or late. The grid is the
    /// gate's (one clock), its phase drawn from the seed.
    pub tick_count: Option<SimDuration>,
}

/// Which timer queue a new timer joins: the processor its creating thread
/// runs on (`GetCurrentProcessorNumber() % queues`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerQueueChoice {
    /// Thread index mod queues: concurrently running threads sit on
    /// distinct processors, and a thread that blocks and wakes on an idle
    /// machine comes back to its own (measured on Linux: .NET Core 3.1's
    /// `Task.Delay().Wait()` burst releases exactly the callbacks this
    /// grouping predicts).
    CreatingThread,
    /// A queue drawn at random (seeded) for each timer: the placement is
    /// not known.
    Random,
    /// The queue of the processor the creating thread runs on, drawn once
    /// for each thread (seeded; stream `timer-queue`): the scheduler, not
    /// the program, places a thread, and keeps it there (Linux wakes a
    /// thread on its previous processor when that one is idle, and
    /// `Thread.GetCurrentProcessorId` is cached per thread). Threads that
    /// run side by side may share a processor's queue or not, run to run.
    ThreadProcessor,
}

/// `[blocking]`: .NET 6+ cooperative blocking (`PortableThreadPool.Blocking.cs`).
#[derive(Clone, Debug, PartialEq)]
pub struct BlockingConfig {
    pub enabled: bool,
    /// `ThreadsToAddWithoutDelay_ProcCountFactor` (× cores).
    pub threads_to_add_without_delay_per_core: u32,
    /// `ThreadsPerDelayStep_ProcCountFactor` (× cores).
    pub threads_per_delay_step_per_core: u32,
    pub delay_step: SimDuration,
    pub max_delay: SimDuration,
}

/// `[mono]`: Mono's monitor thread.
#[derive(Clone, Debug, PartialEq)]
pub struct MonoConfig {
    /// Threads created per calendar second at most.
    pub max_creations_per_second: u32,
    /// Unpark-or-create attempts after a starvation goal increase.
    pub inject_tries: u32,
    /// `MONO_THREADS_PER_CPU`: min = cores × this.
    pub threads_per_cpu: u32,
    /// Where the hill-climbing heuristic's clock starts.
    pub heuristic_start: HeuristicStart,
    /// How long a worker that creates a pool thread waits for it to start
    /// before it goes on (`create_thread` waits for the new thread to
    /// register, mono/mono `mono/metadata/threads.c`).
    pub creation_wait: SimDuration,
    /// threadpool.c's cap on requests passed to the worker pool and not yet
    /// taken (`counter._.starting == 16`); 0: no cap.
    pub max_starting: u32,
}

/// Where Mono's hill-climbing heuristic counts its first sample from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeuristicStart {
    /// The machine's boot: `heuristic_last_adjustment` and
    /// `heuristic_sample_start` start at 0 (the static `worker` of
    /// mono/mono `threadpool-worker-default.c`, never set by
    /// `mono_threadpool_worker_init`) while `mono_msec_ticks` reads
    /// `CLOCK_MONOTONIC` (`mono/utils/mono-time.c`), the time since boot. So
    /// the process's first completion is always "more than the interval
    /// after the last adjustment": it takes hill climbing's first sample (a
    /// throughput of about 0 over the uptime: Warmup, goal unchanged), and
    /// the workload's completions feed the second.
    SinceBoot,
    /// The pool's start: the first sample comes at the first completion more
    /// than the first interval (10 ms) after the pool started.
    SincePoolStart,
}

/// `[net20]`: the .NET 2.0 (SP1) pool's gate rule and its start-delay bug.
#[derive(Clone, Debug, PartialEq)]
pub struct Net20Config {
    /// With a busy CPU, a thread is added only if the last creation is older
    /// than `creation_delay × creation_delay_growth^max(0, workers − cores)`.
    pub creation_delay: SimDuration,
    pub creation_delay_growth: f64,
    /// The SP1 bug: queueing creates a thread at once (below min) only while
    /// the managed queue holds fewer than `2 × cores` items
    /// (`tpWarmupCount`, which `SetMinThreads` did not raise yet).
    pub sp1_start_delay_bug: bool,
}

pub use crate::scenario::model::ThrottleKind;

/// `[throttle]` of a wrapping policy (`base = "..."`).
#[derive(Clone, Debug, PartialEq)]
pub struct ThrottleConfig {
    pub kind: ThrottleKind,
    pub limit: ThreadCount,
}

/// A validated policy file.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyConfig {
    /// Canonical name, e.g. `net-classic`.
    pub name: String,
    /// Other names that resolve to this file (`net5`, ...).
    pub aliases: Vec<String>,
    /// One line on what it models.
    pub description: String,
    pub model: ModelKind,
    pub threads: ThreadsConfig,
    pub gate: GateConfig,
    pub hill_climbing: HillClimbingConfig,
    pub dispatch: DispatchConfig,
    pub timers: TimersConfig,
    /// Cooperative blocking (portable model).
    pub blocking: Option<BlockingConfig>,
    /// Monitor-thread constants (mono model).
    pub mono: Option<MonoConfig>,
    /// Gate rule and bug switch (net20 model).
    pub net20: Option<Net20Config>,
    /// Facts of the runtime's class library (`[library]`).
    pub library: LibraryConfig,
    /// A throttle over every group (a wrapping policy's `[throttle]`).
    pub throttle: Option<ThrottleConfig>,
}

/// `[library]`: what the runtime's class library does that the TPL shapes
/// depend on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LibraryConfig {
    /// `Enumerable.Range` returns an `IList<int>`, so `Parallel.ForEach`
    /// over it takes the list path (`Parallel.For`'s range partitioning)
    /// instead of chunk partitioning over a shared enumerator.
    pub range_is_list: bool,
    /// The first call of each parallel API in a process: the JIT of the
    /// library's code for it, run on the calling thread before its first
    /// body (`[library.first_call_ms]`).
    pub first_call: FirstCallCosts,
}

/// What the first call of a parallel API costs its caller, by API: CPU
/// time on the calling thread before the call's first body runs, drawn once
/// a run (stream `first-call`). Later calls cost nothing. An API without
/// a measured cost has none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FirstCallCosts {
    /// `(submit, cost)` for the APIs that have one.
    pub costs: Vec<(crate::scenario::Submit, Spread)>,
}

impl FirstCallCosts {
    /// The first call's cost of `submit`'s API, if it has one.
    pub fn of(&self, submit: crate::scenario::Submit) -> Option<&Spread> {
        self.costs
            .iter()
            .find(|(s, _)| *s == submit)
            .map(|(_, c)| c)
    }
}
