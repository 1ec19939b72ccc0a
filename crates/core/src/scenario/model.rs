//! The validated scenario: what the engine runs.
//!
//! Every value here has been checked (ranges, cross-field rules) by
//! [`crate::scenario::load`]; the engine trusts it and never re-validates.
//! Durations are integer nanoseconds ([`SimDuration`]).

use crate::time::{SimDuration, SimTime};

/// Upper bound on items in one group and in one scenario ("counts over
/// 100 million are refused").
pub const MAX_ITEMS: u64 = 100_000_000;
/// Upper bound on any single duration in a scenario: 10 simulated days.
pub const MAX_DURATION_MS: f64 = 10.0 * 24.0 * 3600.0 * 1000.0;
/// Upper bound on `machine.cores`.
pub const MAX_CORES: u32 = 4096;
/// Upper bound on `pool.max_threads` (the classic pool's own limit on 64-bit).
pub const MAX_THREADS_LIMIT: u32 = 32767;
/// Upper bound on the steps of one body.
pub const MAX_STEPS: usize = 10_000;

/// A complete, validated workload scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Human-readable title (`name = ...`), defaults to the file stem.
    pub name: String,
    /// Seed of every random stream of the run (arrivals, policy noise, gate phase).
    pub seed: u64,
    /// Seed of the workload's own random streams (Poisson arrivals) when it
    /// is not `seed`: a spread over seeds (the analysis crate's `spread`, sweep
    /// replicates) varies what the pool does, not the program it runs, as
    /// the real runs of one scenario replay the same arrival instants.
    /// Never read from a file; see [`Scenario::workload_seed`].
    pub workload_seed: Option<u64>,
    pub machine: Machine,
    pub pool: PoolSettings,
    pub groups: Vec<Group>,
    pub probes: Vec<Probe>,
    /// Simulated-time limit: the run stops (and says so) when the clock passes it.
    pub until: Option<SimDuration>,
}

impl Scenario {
    /// The seed of the workload's random streams: `workload_seed`, else `seed`.
    pub fn workload_seed(&self) -> u64 {
        self.workload_seed.unwrap_or(self.seed)
    }

    /// This scenario with the run's seed `seed` and the workload kept: its
    /// arrival instants stay those of this scenario's seed.
    pub fn with_run_seed(&self, seed: u64) -> Scenario {
        let mut s = self.clone();
        s.workload_seed = Some(self.workload_seed());
        s.seed = seed;
        s
    }

    /// The scenario of run `k` of several (`--runs`, `advise`'s trials):
    /// the pool's seed `seed + k`; the workload's random arrivals drawn
    /// anew per run (`arrivals` [`ArrivalDraws::PerRun`], from workload
    /// seed `workload_seed + k`; a workload with none keeps its seed), as a
    /// service's traffic differs from run to run, or held at this
    /// scenario's draw ([`ArrivalDraws::Fixed`]),
    /// as the real harness replays one plan. Run 0 is this scenario
    /// either way. The one rule every multi-run command draws its runs by.
    pub fn for_run(&self, k: u64, arrivals: ArrivalDraws) -> Scenario {
        let mut s = self.with_run_seed(self.seed.wrapping_add(k));
        if arrivals == ArrivalDraws::PerRun && self.has_random_arrivals() {
            s.workload_seed = Some(self.workload_seed().wrapping_add(k));
        }
        s
    }

    /// Whether any group's arrivals are random (Poisson, alone or after
    /// another group; a start `late_ms`), so that drawing them per run
    /// changes anything.
    pub fn has_random_arrivals(&self) -> bool {
        let (poisson, late) = self.drawn_parts();
        poisson || late
    }

    /// What of the arrivals is drawn, in words: "Poisson arrivals", "late
    /// starts" (`late_ms`) or both.
    pub fn drawn_arrivals(&self) -> &'static str {
        match self.drawn_parts() {
            (true, true) => "Poisson arrivals and late starts",
            (false, true) => "late starts",
            _ => "Poisson arrivals",
        }
    }

    /// Whether any group has Poisson gaps, and whether any starts late.
    fn drawn_parts(&self) -> (bool, bool) {
        let poisson = self.groups.iter().any(|g| g.arrival.spacing().is_random());
        let late = self.groups.iter().any(|g| g.late > SimDuration::ZERO);
        (poisson, late)
    }
}

/// Whether the runs of a multi-run command draw random arrivals per run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ArrivalDraws {
    /// Each run draws its own (the default of `run`/`compare --runs` and
    /// `advise`): the spread covers the traffic's variation too.
    #[default]
    PerRun,
    /// Every run replays the first run's arrival instants: the spread is
    /// the pool's alone (validation, whose real runs replay one plan).
    Fixed,
}

impl ArrivalDraws {
    /// Its name in JSON: `per-run` or `fixed`.
    pub fn name(self) -> &'static str {
        match self {
            ArrivalDraws::PerRun => "per-run",
            ArrivalDraws::Fixed => "fixed",
        }
    }

    /// `Fixed` when `fixed` (a `--fixed-arrivals` flag), else `PerRun`.
    pub fn from_fixed_flag(fixed: bool) -> ArrivalDraws {
        if fixed {
            ArrivalDraws::Fixed
        } else {
            ArrivalDraws::PerRun
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Machine {
    /// The cores the work runs on (CPU-bound steps share them).
    pub cores: u32,
    /// `processors`: the processors the runtime sees
    /// (`Environment.ProcessorCount`), when it differs from `cores`: .NET 8
    /// honours `DOTNET_PROCESSOR_COUNT`, so a pool sized for a large
    /// machine can run on a small one. `None` = `cores`. Read it through
    /// [`Machine::processors`].
    pub processors: Option<u32>,
    /// `tick_ms`: the step of `Environment.TickCount`, which
    /// `SpinWait.SpinUntil` reads for its timeout. `None` = an exact clock.
    /// On Windows the tick is the system timer's, 15.625 ms by default, so
    /// a `spin_ms` step ends on the first tick at least its length after
    /// the tick it started in (`spin_end`).
    pub tick: Option<SimDuration>,
}

impl Machine {
    /// The processors the runtime sees (`Environment.ProcessorCount`): what
    /// the pool sizes itself by (minimum threads, CPU readings, timer
    /// queues, `Parallel.For`'s replicas), where `cores` is what the work
    /// runs on.
    pub fn processors(&self) -> u32 {
        self.processors.unwrap_or(self.cores)
    }

    /// When a `spin_ms` step of length `d` started at `start` ends:
    /// `SpinWait.SpinUntil(cond, d)` reads `TickCount` when it starts and
    /// returns at the first reading at least `d` later. `TickCount` moves
    /// only at ticks, and a spinner's `Sleep(1)` wakes at a tick, so the
    /// spin ends at the tick `ceil(d / tick)` ticks after the last tick
    /// at or before `start`. With an exact clock it ends at `start + d`.
    pub fn spin_end(&self, start: SimTime, d: SimDuration) -> SimTime {
        match self.tick {
            Some(q) if q.as_nanos() > 0 && d.as_nanos() > 0 => {
                let q = q.as_nanos();
                let base = start.as_nanos() / q * q;
                let ticks = d.as_nanos().div_ceil(q);
                SimTime(base.saturating_add(ticks.saturating_mul(q)))
            }
            _ => start + d,
        }
    }
}

/// `[pool]`: which policy, and the settings a program can change at run time.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolSettings {
    /// A policy name (`net-classic`, `net5`, ...) or a path to a policy file.
    pub policy: String,
    /// `ThreadPool.SetMinThreads(n, ...)`; `None` = the policy's default.
    pub min_threads: Option<u32>,
    /// `ThreadPool.SetMaxThreads(n, ...)`; `None` = the policy's default.
    pub max_threads: Option<u32>,
    /// Offset of the first gate-thread tick after the first thread request.
    /// `None` = drawn from the run's seed in `[0, period)`. Set it when a
    /// published run fixes the phase (seed 001, docs/reference.md#seed-001).
    pub gate_phase: Option<SimDuration>,
    /// `tiered_compilation`: whether .NET's tiered compilation is on (the
    /// runtime's default, so `true` unless the scenario says otherwise).
    /// Its start-up work runs on the pool before the program's first
    /// request, which sets the gate thread's phase against that request
    /// (see the policies' `first_tick_tiered_ms`).
    pub tiered_compilation: bool,
}

/// `[[group]]`: `count` identical work items.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub name: String,
    pub count: u64,
    pub submit: Submit,
    pub from: Origin,
    pub arrival: Arrival,
    /// `late_ms` of the arrival: the group's first submission comes late
    /// by a draw from [0, late) each run, on the workload's seed (stream
    /// `late/<group>`, [`crate::scenario::arrivals::start`]). A program's
    /// first sends are late while it starts (the JIT compiles the sending
    /// code; the sending thread waits for a core), by an amount a second
    /// run does not repeat: one recording shows one start-up. Zero: on
    /// time, nothing drawn.
    pub late: SimDuration,
    pub body: Vec<Step>,
    /// `max_degree`: `ParallelOptions.MaxDegreeOfParallelism` for the
    /// parallel shapes, `WithDegreeOfParallelism` for PLINQ, the DOP of
    /// `Parallel.ForEachAsync`. `None` = the API's default.
    pub max_degree: Option<u32>,
    /// A throttle between this group's items and the pool.
    pub throttle: Option<Throttle>,
}

/// How an item reaches the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submit {
    /// `Task.Run(...)`: global queue from a non-pool thread, the calling
    /// thread's local queue from a pool thread.
    TaskRun,
    /// `ThreadPool.QueueUserWorkItem(...)`: always the global queue.
    QueueUserWorkItem,
    /// `Task.Run` for each item, then `await Task.WhenAll(tasks)`: scheduling
    /// as `TaskRun`; the coordination cost is WhenAll's.
    WhenAll,
    /// `new Thread(...).Start()` per item: outside the pool.
    NewThread,
    /// `Parallel.Invoke(actions)`: the `count` items are the actions.
    ParallelInvoke,
    /// `Parallel.For(0, count, body)`.
    ParallelFor,
    /// `Parallel.ForEach(Enumerable.Range(0, count), body)`.
    ParallelForEach,
    /// `Enumerable.Range(0, count).AsParallel().Select(body)`, enumerated.
    Plinq,
    /// `await Parallel.ForEachAsync(Enumerable.Range(0, count), body)`.
    ParallelForEachAsync,
}

impl Submit {
    /// Whether a throttle can go on this shape: those whose items are tasks
    /// or work items whose scheduling is modelled. A group's own `throttle`
    /// is accepted only here, and a wrapping policy's `[throttle]` applies
    /// only here (the loader, both pools and the measure plan ask this).
    pub fn takes_throttle(self) -> bool {
        matches!(
            self,
            Submit::TaskRun
                | Submit::QueueUserWorkItem
                | Submit::WhenAll
                | Submit::ParallelForEachAsync
        )
    }

    /// The name used in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            Submit::TaskRun => "task-run",
            Submit::QueueUserWorkItem => "queue-user-work-item",
            Submit::WhenAll => "when-all",
            Submit::NewThread => "new-thread",
            Submit::ParallelInvoke => "parallel-invoke",
            Submit::ParallelFor => "parallel-for",
            Submit::ParallelForEach => "parallel-foreach",
            Submit::Plinq => "plinq",
            Submit::ParallelForEachAsync => "parallel-foreach-async",
        }
    }

    /// The .NET call the shape stands for, in messages.
    pub fn api_name(self) -> &'static str {
        match self {
            Submit::TaskRun => "Task.Run",
            Submit::QueueUserWorkItem => "ThreadPool.QueueUserWorkItem",
            Submit::WhenAll => "Task.WhenAll",
            Submit::NewThread => "new Thread(...).Start()",
            Submit::ParallelInvoke => "Parallel.Invoke",
            Submit::ParallelFor => "Parallel.For",
            Submit::ParallelForEach => "Parallel.ForEach",
            Submit::Plinq => "PLINQ",
            Submit::ParallelForEachAsync => "Parallel.ForEachAsync",
        }
    }

    /// Shapes whose bodies run synchronously inside the API (no `await_ms`
    /// or `yield` step allowed).
    pub fn synchronous_body(self) -> bool {
        matches!(
            self,
            Submit::ParallelInvoke | Submit::ParallelFor | Submit::ParallelForEach | Submit::Plinq
        )
    }

    /// Shapes that are one call over all `count` items (arrival must be `at_ms`).
    pub fn one_call(self) -> bool {
        matches!(
            self,
            Submit::ParallelInvoke
                | Submit::ParallelFor
                | Submit::ParallelForEach
                | Submit::Plinq
                | Submit::ParallelForEachAsync
        )
    }
}

/// What kind of throttle stands between a group and the pool (a group's
/// own `throttle`, or a wrapping policy's `[throttle]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThrottleKind {
    /// `ConcurrentExclusiveSchedulerPair(TaskScheduler.Default, n).ConcurrentScheduler`.
    ConcurrentExclusive,
    /// `await SemaphoreSlim(n).WaitAsync()` around each body.
    Semaphore,
}

/// `kind = ...` of a throttle (policy `[throttle]` and scenario `throttle = {...}`).
pub const THROTTLE_KINDS: &[(&str, ThrottleKind)] = &[
    ("concurrent-exclusive", ThrottleKind::ConcurrentExclusive),
    ("semaphore", ThrottleKind::Semaphore),
];

/// The name of a throttle kind in files.
pub fn throttle_kind_name(kind: ThrottleKind) -> &'static str {
    THROTTLE_KINDS
        .iter()
        .find(|(_, k)| *k == kind)
        .map_or("?", |(n, _)| n)
}

/// A throttle between a group and the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Throttle {
    pub kind: ThrottleKind,
    /// Maximum concurrency (pair) or initial count (semaphore).
    pub limit: u32,
}

/// Which thread submits the group's items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The program's main thread (not a pool thread).
    Main,
    /// A pool work item queued (globally) at the group's first arrival that
    /// submits the items in turn, sleeping between arrivals: the shape of
    /// `Task.Run(() => { for (...) Task.Run(work); })`.
    Pool,
    /// A periodic timer the main thread creates at the group's start
    /// (`new Timer(callback, null, 0, every_ms)`): each firing's callback
    /// runs as pool work and queues the next `per_tick` items from its pool
    /// thread. Its arrival is `every_ms` (the period, whole milliseconds as
    /// `System.Threading.Timer` takes it); the group fires
    /// `ceil(count / per_tick)` times. A starved pool runs the callbacks
    /// late, and so queues the items late, without moving the timer's
    /// schedule (`pool::state` timers).
    Timer { per_tick: u32 },
    /// Another group's `fan_out` step (`{ fan_out = "calls" }`): each call
    /// queues the group's next `per_call` items from the caller's thread
    /// (`Task.Run`: its local queue on a pool thread) and blocks until they
    /// have all finished. The group has no arrival of its own; its `count`
    /// is every call's items together.
    FanOut { per_call: u32 },
}

/// The timer of a `from = "timer"` group, as the engine, the native pool
/// and the harness's plan all read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupTimer {
    pub period: SimDuration,
    /// Items each firing queues (the last may queue fewer).
    pub per_tick: u32,
    /// `ceil(count / per_tick)`.
    pub firings: u32,
}

impl Group {
    /// The group's timer when it has one (`from = "timer"` with its
    /// `every_ms` arrival, as the loader requires).
    pub fn timer(&self) -> Option<GroupTimer> {
        let (Origin::Timer { per_tick }, Arrival::Every { every, .. }) = (self.from, &self.arrival)
        else {
            return None;
        };
        let per_tick = per_tick.max(1);
        let firings = self.count.div_ceil(u64::from(per_tick));
        Some(GroupTimer {
            period: *every,
            per_tick,
            firings: u32::try_from(firings).unwrap_or(u32::MAX),
        })
    }
}

impl Origin {
    /// The name `from = "..."` takes.
    pub fn name(self) -> &'static str {
        match self {
            Origin::Main => "main",
            Origin::Pool => "pool",
            Origin::Timer { .. } => "timer",
            Origin::FanOut { .. } => "fan-out",
        }
    }
}

/// When the items of a group are submitted.
#[derive(Clone, Debug, PartialEq)]
pub enum Arrival {
    /// All at one instant, in a tight loop.
    At(SimDuration),
    /// One every `every`, the first at `start`.
    Every {
        start: SimDuration,
        every: SimDuration,
    },
    /// A Poisson process of `per_second` items per second from `start`,
    /// drawn from the run's `arrivals` stream.
    Poisson { start: SimDuration, per_second: f64 },
    /// `delay` after the last item of an earlier group (by index)
    /// finished, spaced by `spacing` from then (all at once by default):
    /// the next phase of the same program (seed 003 runs its throttled
    /// pass after the unthrottled one, in one process; a service's next
    /// phase of traffic starts when a warm-up ends).
    After {
        group: usize,
        delay: SimDuration,
        spacing: Spacing,
    },
}

/// How a group's items are spaced once it has started.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Spacing {
    /// All at once, in a tight loop.
    AtOnce,
    /// One every period.
    Every(SimDuration),
    /// Exponential gaps: a Poisson process of this many items a second,
    /// drawn from the run's `arrivals/<group>` stream.
    Poisson(f64),
}

impl Arrival {
    /// How the items are spaced once the group has started.
    pub fn spacing(&self) -> Spacing {
        match *self {
            Arrival::At(_) => Spacing::AtOnce,
            Arrival::Every { every, .. } => Spacing::Every(every),
            Arrival::Poisson { per_second, .. } => Spacing::Poisson(per_second),
            Arrival::After { spacing, .. } => spacing,
        }
    }
}

impl Spacing {
    /// The gap before the next item: the one rule the simulator and the
    /// real runners' plans draw arrivals by (`rng`: the group's
    /// `arrivals/<group>` stream, used by Poisson spacing only).
    pub fn gap(&self, rng: Option<&mut rand_chacha::ChaCha8Rng>) -> SimDuration {
        use rand::RngExt;
        match *self {
            Spacing::AtOnce => SimDuration::ZERO,
            Spacing::Every(every) => every,
            Spacing::Poisson(per_second) => match rng {
                Some(rng) => {
                    let u: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
                    let gap_ns = (-u.ln() / per_second * 1e9).round();
                    SimDuration(gap_ns.min(1e18) as u64)
                }
                None => SimDuration::ZERO,
            },
        }
    }

    /// Whether the gaps are drawn (a random stream is needed).
    pub fn is_random(&self) -> bool {
        matches!(self, Spacing::Poisson(_))
    }
}

/// One step of a work item's body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// CPU work of this many core-nanoseconds; stretched when runnable
    /// threads outnumber cores (processor sharing).
    Cpu(SimDuration),
    /// Busy-wait until this much wall-clock time has passed
    /// (`SpinWait.SpinUntil(() => false, ms)`): holds a core share while it
    /// runs, but ends on time however contended the cores are.
    Spin(SimDuration),
    /// A Stopwatch busy loop (`while (sw.ElapsedMilliseconds < ms) {}`):
    /// holds a whole core the whole time and ends on wall-clock time (the
    /// Stopwatch is exact; no `TickCount` step), however contended the
    /// cores are.
    Busy(SimDuration),
    /// `Thread.Sleep(ms)`: holds the thread, no CPU, not cooperative blocking.
    Sleep(SimDuration),
    /// `Task.Delay(ms).Wait()`: holds the thread until the timer's callback
    /// has run as pool work; cooperative blocking where the policy has it.
    Wait(SimDuration),
    /// `await Task.Delay(ms)`: frees the thread; the rest of the body runs as
    /// the timer callback's continuation.
    Await(SimDuration),
    /// `await Task.Yield()`: the rest of the body is queued to the global queue.
    Yield,
    /// `{ fan_out = "calls" }`: `var calls = new Task[n]; for (...) calls[j]
    /// = Task.Run(call); Task.WhenAll(calls).Wait();` with the next `n` items
    /// of group `group` (`from = "fan-out"`, `n` its `per_call`). The items
    /// go to this thread's local queue on a pool thread (the global queue
    /// with `submit = "queue-user-work-item"`); the thread is held until
    /// the last of them finishes, cooperative blocking where the policy has
    /// it. The wait cannot run them inline: it waits on `WhenAll`'s task.
    FanOut { group: u32 },
}

/// `[[probe]]`: the main thread's responsiveness probe of seed 003:
/// `while (work remains) { Thread.Sleep(every); Task.Run(() => sw.Stop()).Wait(); }`.
/// Its latency is the time from queueing the probe item to its start.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    pub every: SimDuration,
}

/// Every form a step takes, as the loader's help lists them.
pub const STEP_FORMS: &str = "{ cpu_ms = N }, { spin_ms = N }, { busy_ms = N }, { sleep_ms = N }, \
     { wait_ms = N }, { await_ms = N }, { fan_out = \"group\" } or \"yield\"";

impl Step {
    /// The step's duration, for the timed steps (all but `yield`).
    pub fn duration(&self) -> Option<SimDuration> {
        match *self {
            Step::Cpu(d)
            | Step::Spin(d)
            | Step::Busy(d)
            | Step::Sleep(d)
            | Step::Wait(d)
            | Step::Await(d) => Some(d),
            Step::Yield | Step::FanOut { .. } => None,
        }
    }
}

impl Scenario {
    /// The groups whose items are calls of a `fan_out` step (by index).
    pub fn call_groups(&self) -> Vec<u32> {
        self.groups
            .iter()
            .enumerate()
            .filter(|(_, g)| matches!(g.from, Origin::FanOut { .. }))
            .map(|(i, _)| i as u32)
            .collect()
    }

    /// Total number of work items over all groups (probes excluded).
    pub fn item_count(&self) -> u64 {
        self.groups.iter().map(|g| g.count).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(tick_ns: Option<u64>) -> Machine {
        Machine {
            processors: None,
            cores: 4,
            tick: tick_ns.map(SimDuration::from_nanos),
        }
    }

    #[test]
    fn an_exact_clock_ends_a_spin_on_time() {
        let m = machine(None);
        let start = SimTime(1_234_567);
        let d = SimDuration::from_ms(40);
        assert_eq!(m.spin_end(start, d), start + d);
    }

    #[test]
    fn a_tick_clock_ends_a_spin_on_the_first_tick_far_enough_from_the_starting_tick() {
        // Windows: 15.625 ms ticks.
        let m = machine(Some(15_625_000));
        let ms = |x: f64| SimTime((x * 1e6).round() as u64);
        // Started on a tick: 40 ms needs 3 ticks, 20 ms needs 2.
        assert_eq!(m.spin_end(ms(0.0), SimDuration::from_ms(40)), ms(46.875));
        assert_eq!(m.spin_end(ms(0.0), SimDuration::from_ms(20)), ms(31.25));
        // Just after a tick: TickCount still reads that tick.
        assert_eq!(
            m.spin_end(ms(31.25 + 0.02), SimDuration::from_ms(40)),
            ms(78.125)
        );
        // Late in a tick: the spin is short by almost a tick.
        assert_eq!(m.spin_end(ms(15.0), SimDuration::from_ms(40)), ms(46.875));
        // Exactly a whole number of ticks: no extra tick.
        assert_eq!(
            m.spin_end(ms(0.0), SimDuration::from_nanos(31_250_000)),
            ms(31.25)
        );
        // A zero spin ends at once.
        assert_eq!(m.spin_end(ms(3.0), SimDuration::ZERO), ms(3.0));
    }

    #[test]
    fn a_tick_never_ends_a_spin_before_it_starts() {
        let m = machine(Some(4_000_000));
        for start in (0..20_000_000u64).step_by(333_333) {
            for d in [1u64, 999_999, 4_000_000, 4_000_001, 17_000_000] {
                let end = m.spin_end(SimTime(start), SimDuration::from_nanos(d));
                assert!(end > SimTime(start), "start {start} d {d}");
                assert_eq!(end.as_nanos() % 4_000_000, 0, "ends on a tick");
                // Never more than one tick short of d, never more than a tick long.
                assert!(
                    end.as_nanos() + 4_000_000 > start + d,
                    "start {start} d {d}"
                );
                assert!(
                    end.as_nanos() < start + d + 4_000_000,
                    "start {start} d {d}"
                );
            }
        }
    }
}
