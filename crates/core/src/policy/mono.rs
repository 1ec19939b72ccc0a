//! Mono 6.8's thread pool (`mono/metadata/threadpool-worker-default.c`).
//!
//! Read: mono/mono `threadpool-worker-default.c` and `threadpool.c`
//! (2019–2020), summarised in `docs/research/mono-and-tpl.md`.
//!
//! The model:
//! - The goal (`max_working`) starts at cores × `MONO_THREADS_PER_CPU`.
//!   `SetMinThreads(n)` (`mono_threadpool_worker_set_min`) only sets
//!   `limit_worker_min`: nothing is created and the goal does not move then.
//!   The new floor takes effect when hill climbing next adjusts
//!   (`hill_climbing_update` clamps its result to `[limit_worker_min,
//!   limit_worker_max]`, `heuristic_adjust` stores it and requests a
//!   worker), i.e. at the first completion after a sample interval; the
//!   monitor's starvation step (+1) is not clamped. Measured here on Mono
//!   6.8: SetMinThreads(16), 16 sleepers on 2 cores: threads at 0, 0, 0.5 s,
//!   then 10 at once at the first completions (1.0 s), the creation cap.
//! - A thread request unparks an idle worker if there is one; otherwise it
//!   creates a thread if working threads are below the goal and fewer than
//!   `max_creations_per_second` were created in the current calendar second.
//!   (The source suggests threads still starting do not count against the
//!   goal; the measured burst — two threads at once on 2 cores, then one per
//!   500 ms — says they do, so they count here.)
//! - The monitor thread ticks every 500 ms from the first request. Its
//!   "last dequeue" is really the last completion, 0 until one happens on a
//!   clock that counts from boot (`[mono] heuristic_start`): until the
//!   process's first completion every tick with requests pending injects,
//!   whatever the CPU (measured: `scenarios/calibration/monitor-before-
//!   first-completion.toml`). Otherwise, if requests are pending and
//!   `now ≥ last + (cpu < 80 % ? 500 : goal × 1000)` (note `≥`), the goal
//!   grows by one (at the maximum it stays, and the round goes on only
//!   while fewer threads work than the goal) and up to `inject_tries`
//!   unpark-or-create attempts follow.
//!   It exits after `idle_ticks_before_stop` ticks with nothing pending.
//! - Hill climbing runs on completions (`heuristic_adjust`: on a
//!   millisecond clock, strictly after the adjustment interval, only while
//!   no more threads work than the goal) with Mono's port of CoreCLR's
//!   algorithm, slips included: the sample duration passed in ms (a 1000x
//!   gain), a noise average that grows 1 % a sample, and an interval
//!   stretched at least 10x at the minimum
//!   ([`HillClimbing::mono_port`]). A raised goal takes effect at the next
//!   request or monitor round.
//! - A worker that completes an item while working > goal parks, unless a
//!   token is left (below): then it dispatches on.
//! - Requests pass to the worker pool (a token, then unpark-or-create) only
//!   while fewer than `[mono] max_starting` (16) tokens are left untaken
//!   (threadpool.c's `counter._.starting`). A worker takes one when it
//!   starts or wakes; one dispatching stays in `worker_callback` while
//!   requests are outstanding and takes none, so under long items the cap
//!   is reached and a raised goal waits for the monitor. A worker that finds
//!   no request takes (drains) them all before it parks.
//! - The process's first completion takes hill climbing's first sample (its
//!   clock counts from boot, `[mono] heuristic_start`), and a worker that
//!   creates a thread waits for it to start (`[mono] creation_wait_ms`).
//!
//! Each decision (a monitor tick with requests pending, a hill-climbing
//! sample, a worker parked, a thread created on demand) is recorded with its
//! inputs through [`PoolControl::decision`] before it acts.

use crate::policy::Wake;
use crate::policy::config::{HeuristicStart, HillClimbingConfig, PolicyConfig};
use crate::policy::gate::{self, GateThread, InjectionRule, LastDequeue, TickView};
use crate::policy::hill_climbing::{HillClimbing, Transition};
use crate::policy::{Policy, PolicyBase, PoolControl, RequestCause, move_goal, thread_limits};
use crate::rng;
use crate::scenario::Scenario;
use crate::time::{SimDuration, SimTime};
use crate::trace::{Decision, GoalReason, ThreadId, ThreadReason};

/// Mono's `heuristic_notify_work_completed` / `heuristic_should_adjust` /
/// `heuristic_adjust`, on its millisecond clock (`mono_msec_ticks`):
/// every completion counts; when the last completion is *more* than the
/// adjustment interval after the last adjustment and no more threads work
/// than the goal, the completions are taken (and lost if the sample is
/// shorter than half the interval) and hill climbing runs with the
/// sample's duration in milliseconds.
#[derive(Debug)]
struct Heuristic {
    climber: HillClimbing,
    enabled: bool,
    completions: u64,
    sample_start_ms: u64,
    last_adjustment_ms: u64,
    /// `heuristic_adjustment_interval`, 10 ms at start.
    interval_ms: u64,
    /// Whether the first sample comes at the first completion
    /// ([`HeuristicStart::SinceBoot`]).
    since_boot: bool,
}

/// The uptime the first sample of a [`HeuristicStart::SinceBoot`] clock
/// spans: the machine's, unknown. Any uptime of minutes or more gives that
/// sample a throughput of about 0 items/ms, all it feeds into later samples
/// (its move is 0: hill climbing is in Warmup).
pub const ASSUMED_UPTIME_MS: u64 = 3_600_000;

/// `t` on `mono_msec_ticks`' clock, which counts from boot: the assumed
/// uptime at the pool's start, plus `t`.
fn since_boot(t: SimTime) -> SimDuration {
    SimDuration::from_ms(ASSUMED_UPTIME_MS) + t.since(SimTime::ZERO)
}

impl Heuristic {
    fn new(hc: &HillClimbingConfig, start: HeuristicStart, seed: u64) -> Self {
        Heuristic {
            since_boot: start == HeuristicStart::SinceBoot,
            climber: HillClimbing::new(hc, rng::stream_seed(seed, "hill-climbing")).mono_port(),
            enabled: hc.enabled,
            completions: 0,
            sample_start_ms: 0,
            last_adjustment_ms: 0,
            interval_ms: 10,
        }
    }

    fn completed(
        &mut self,
        now: SimTime,
        goal: u32,
        working: u32,
        cpu_utilization: u32,
        limits: (u32, u32),
    ) -> Option<u32> {
        self.completions += 1;
        let now_ms = now.as_nanos() / 1_000_000;
        // On a clock since boot the first completion is always far past the
        // last adjustment (0). The first sample is never accumulated, so
        // none was taken while the count is 0.
        let first_since_boot = self.since_boot && self.climber.total_samples() == 0;
        if !self.enabled
            || (!first_since_boot && now_ms <= self.last_adjustment_ms + self.interval_ms)
            || working > goal
        {
            return None;
        }
        let completions = std::mem::take(&mut self.completions);
        let duration_ms = if first_since_boot {
            since_boot(now).as_nanos() / 1_000_000
        } else {
            now_ms.saturating_sub(self.sample_start_ms)
        };
        if duration_ms < self.interval_ms / 2 {
            return None;
        }
        let (new_goal, next_interval) = self.climber.update(
            goal,
            duration_ms as f64,
            completions.min(u64::from(u32::MAX)) as u32,
            cpu_utilization,
            limits.0,
            limits.1,
        );
        self.interval_ms = u64::from(next_interval);
        self.sample_start_ms = now_ms;
        self.last_adjustment_ms = now_ms;
        Some(new_goal)
    }
}

#[derive(Debug)]
pub struct Mono {
    base: PolicyBase,
    goal: u32,
    /// `heuristic_last_dequeue`: the last completion, `None` before the
    /// first (the field starts at 0; on a clock since boot, `[mono]
    /// heuristic_start`, that is the boot).
    last_completion: Option<SimTime>,
    gate: GateThread,
    hill_climbing: Heuristic,
    max_creations_per_second: u32,
    inject_tries: u32,
    creation_second: u64,
    created_this_second: u32,
    /// Requests passed to the worker pool and not yet taken: threadpool.c's
    /// `counter._.starting`, equal to threadpool-worker-default.c's
    /// `work_items_count` (both rise in `RequestWorkerThread`, both fall
    /// when a worker pops a token and enters `worker_callback`).
    tokens: u32,
    /// `RequestWorkerThread` passes no request on once `starting` is here.
    max_tokens: u32,
    /// Workers inside `worker_callback`, which keeps dispatching while any
    /// request is outstanding, popping no token.
    in_callback: Vec<bool>,
    /// Whether a request was held at the cap since the tokens were last
    /// below it (to narrate each episode once).
    held: bool,
}

impl Mono {
    pub fn new(config: &PolicyConfig, scenario: &Scenario) -> Mono {
        let (_, max) = thread_limits(config, scenario);
        let per_cpu = config.mono.as_ref().map_or(1, |m| m.threads_per_cpu.max(1));
        let initial = config
            .threads
            .min
            .resolve(scenario.machine.processors())
            .saturating_mul(per_cpu)
            .max(1)
            .min(max.max(1));
        let max = max.max(initial);
        // set_min refuses a value above limit_worker_max (and non-positive ones).
        let min = match scenario.pool.min_threads {
            Some(n) if config.threads.honours_set_min_threads && n >= 1 && n <= max => n,
            _ => initial,
        };
        Mono {
            base: PolicyBase {
                name: config.name.clone(),
                min,
                max,
            },
            goal: initial.min(max),
            last_completion: None,
            gate: GateThread::new(&config.gate, scenario, gate::GATE_STREAM),
            hill_climbing: Heuristic::new(
                &config.hill_climbing,
                config
                    .mono
                    .as_ref()
                    .map_or(HeuristicStart::SinceBoot, |m| m.heuristic_start),
                scenario.seed,
            ),
            max_creations_per_second: config
                .mono
                .as_ref()
                .map_or(10, |m| m.max_creations_per_second),
            inject_tries: config.mono.as_ref().map_or(5, |m| m.inject_tries),
            creation_second: u64::MAX,
            created_this_second: 0,
            tokens: 0,
            max_tokens: config.mono.as_ref().map_or(0, |m| m.max_starting),
            in_callback: Vec::new(),
            held: false,
        }
    }

    /// `worker_try_unpark` then `worker_try_create`.
    fn unpark_or_create(&mut self, pool: &mut dyn PoolControl, reason: ThreadReason) -> bool {
        let counts = pool.counts();
        if counts.idle > 0 {
            return pool.add_worker(reason);
        }
        if counts.working >= self.goal || counts.existing >= self.base.max {
            return false;
        }
        let second = pool.now().as_nanos() / 1_000_000_000;
        if second != self.creation_second {
            self.creation_second = second;
            self.created_this_second = 0;
        }
        if self.created_this_second >= self.max_creations_per_second {
            return false;
        }
        self.created_this_second += 1;
        if reason == ThreadReason::Demand {
            pool.decision(Decision::Demand {
                threads: counts.working,
                limit: self.goal,
                threads_name: "working",
                limit_name: "goal",
                idle_queued: None,
            });
        }
        pool.add_worker(reason)
    }

    fn set_goal(&mut self, pool: &mut dyn PoolControl, goal: u32, reason: GoalReason) {
        move_goal(&mut self.goal, self.base.limits(), pool, goal, reason);
    }
}

impl Policy for Mono {
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

    fn thread_requested(&mut self, pool: &mut dyn PoolControl, _cause: RequestCause) {
        if self.max_tokens > 0 {
            // `RequestWorkerThread`: with `starting` at its cap the request
            // stays managed: no token, no unpark, no creation.
            if self.tokens >= self.max_tokens {
                if !std::mem::replace(&mut self.held, true) {
                    pool.decision(Decision::RequestsHeld {
                        tokens: self.tokens,
                        working: pool.counts().working,
                        goal: self.goal,
                    });
                }
                return;
            }
            self.held = false;
            self.tokens += 1;
        }
        self.gate.ensure_running(pool);
        self.unpark_or_create(pool, ThreadReason::Demand);
    }

    fn seeking_work(&mut self, pool: &mut dyn PoolControl, thread: ThreadId) {
        // A monitor thread that starts with the pool runs once a worker
        // dispatches (`[gate] start`; Mono's is "at-request").
        self.gate.first_thread_dispatching(pool);
        // A new or woken worker pops a token and enters `worker_callback`;
        // one back from a dispatch stays inside it.
        let t = thread as usize;
        if self.in_callback.len() <= t {
            self.in_callback.resize(t + 1, false);
        }
        if !std::mem::replace(&mut self.in_callback[t], true) {
            self.tokens = self.tokens.saturating_sub(1);
        }
    }

    fn found_no_request(&mut self, _pool: &mut dyn PoolControl, thread: ThreadId) {
        // No request outstanding: the worker leaves `worker_callback` and
        // pops every token left, finding nothing each time, then parks.
        if let Some(inside) = self.in_callback.get_mut(thread as usize) {
            *inside = false;
        }
        self.tokens = 0;
    }

    fn work_completed(&mut self, pool: &mut dyn PoolControl, thread: ThreadId) -> bool {
        let now = pool.now();
        self.last_completion = Some(now);
        let counts = pool.counts();
        if let Some(new_goal) = self.hill_climbing.completed(
            now,
            self.goal,
            counts.working,
            self.gate.cpu_utilization,
            self.base.limits(),
        ) {
            if let Some(stats) = self.hill_climbing.climber.last_sample() {
                let goal = self.base.clamp(new_goal);
                pool.decision(stats.decision((self.goal, goal), 1e6, self.gate.cpu_utilization));
            }
            let reason = GoalReason::from(self.hill_climbing.climber.last_transition());
            self.set_goal(pool, new_goal, reason);
        }
        let working = pool.counts().working;
        if working <= self.goal {
            return true;
        }
        // `Dispatch` returns false and `worker_callback` ends; back in
        // `worker_thread` the worker pops a token if there is one and
        // dispatches on: it parks only when none is left.
        if self.tokens > 0 {
            self.tokens -= 1;
            return true;
        }
        if let Some(inside) = self.in_callback.get_mut(thread as usize) {
            *inside = false;
        }
        pool.decision(Decision::WorkerStop {
            thread,
            rule: "worker_thread: working > max_working",
            threads: working,
            threads_name: "working",
            goal: self.goal,
            retires: false,
        });
        false
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
        let last_dequeue = match self.last_completion {
            Some(last) => LastDequeue::At(last),
            // Before the first completion `heuristic_last_dequeue` is still
            // 0: on a clock since boot the delay is the machine's uptime, so
            // every round with work injects, whatever the CPU.
            None if self.hill_climbing.since_boot => LastDequeue::SinceBoot(since_boot(pool.now())),
            None => LastDequeue::At(SimTime::ZERO),
        };
        let view = TickView {
            requests_pending: counts.pending_requests > 0,
            busy: counts.pending_requests > 0,
            counted: counts.working,
            goal: self.goal,
            // The goal moves within (0, limit_worker_max).
            min: 0,
            max: self.base.max,
            blocking_pending: false,
            last_dequeue,
        };
        let Some(goal) = self
            .gate
            .starvation_tick(pool, view, InjectionRule::GoalPlusOne)
        else {
            return;
        };
        // max_working + 1, bounded by limit_worker_max only; at the maximum
        // the monitor still adds a thread while fewer work than the goal.
        if goal > self.goal {
            move_goal(
                &mut self.goal,
                (0, self.base.max),
                pool,
                goal,
                GoalReason::Starvation,
            );
            self.hill_climbing
                .climber
                .force_change(self.goal, Transition::Starvation);
        }
        for _ in 0..self.inject_tries {
            if self.unpark_or_create(pool, ThreadReason::Starvation) {
                break;
            }
        }
    }

    fn idle_timed_out(&mut self, pool: &mut dyn PoolControl, _thread: ThreadId) -> bool {
        let remaining = pool.counts().existing.saturating_sub(1);
        let goal = remaining.min(self.goal).max(self.base.min);
        self.set_goal(pool, goal, GoalReason::ThreadTimedOut);
        true
    }
}


impl crate::policy::Model for Mono {
    fn new(config: &PolicyConfig, scenario: &Scenario) -> Mono {
        Mono::new(config, scenario)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load::parse_scenario;

    /// `[hill_climbing]` of `policies/mono.toml`: CoreCLR's constants.
    fn mono_hill_climbing() -> HillClimbingConfig {
        crate::policy::hill_climbing::coreclr_constants()
    }

    fn heuristic(start: HeuristicStart) -> Heuristic {
        let scenario = parse_scenario(
            "[machine]\ncores = 2\n[pool]\npolicy = \"mono\"\n[[group]]\ncount = 1\nbody = [\"yield\"]\n",
            "h.toml",
        )
        .unwrap();
        Heuristic::new(&mono_hill_climbing(), start, scenario.seed)
    }

    #[test]
    fn the_heuristic_adjusts_only_strictly_after_its_interval_on_a_ms_clock() {
        let mut h = heuristic(HeuristicStart::SincePoolStart);
        let ms = |x: u64| SimTime(x * 1_000_000);
        // The first interval is 10 ms from 0: 5 and 10 ms are too early
        // (`last_dequeue > last_adjustment + interval`, strict), 10.9 ms
        // reads 10 on the ms clock, 11 ms adjusts.
        assert_eq!(h.completed(ms(5), 2, 2, 0, (2, 200)), None);
        assert_eq!(h.completed(ms(10), 2, 2, 0, (2, 200)), None);
        assert_eq!(h.completed(SimTime(10_900_000), 2, 2, 0, (2, 200)), None);
        assert!(h.completed(ms(11), 2, 2, 0, (2, 200)).is_some());
        assert_eq!(h.climber.total_samples(), 1);
        assert_eq!(h.completions, 0, "the sample took every completion");
        // More threads working than the goal: no adjustment, completions kept.
        let later = ms(11 + h.interval_ms + 1);
        assert_eq!(h.completed(later, 2, 3, 0, (2, 200)), None);
        assert_eq!(h.completions, 1);
        assert_eq!(h.climber.total_samples(), 1);
    }

    #[test]
    fn on_a_clock_since_boot_the_first_completion_takes_the_first_sample() {
        let mut h = heuristic(HeuristicStart::SinceBoot);
        let ms = |x: u64| SimTime(x * 1_000_000);
        // 0.4 ms reads 0 on the ms clock, yet the last adjustment (0) is an
        // uptime ago: the first completion samples, in Warmup, goal kept.
        assert_eq!(h.completed(SimTime(400_000), 1, 1, 0, (1, 100)), Some(1));
        assert_eq!(h.climber.total_samples(), 1);
        let first = h.climber.last_sample().expect("a sample");
        assert!(
            first.throughput < 1e-3,
            "1 item over the uptime: {}",
            first.throughput
        );
        // From then on the interval counts from that sample.
        let interval = h.interval_ms;
        assert!((10..=200).contains(&interval), "{interval}");
        assert_eq!(h.completed(ms(interval), 1, 1, 0, (1, 100)), None);
        assert!(h.completed(ms(interval + 1), 1, 1, 0, (1, 100)).is_some());
        assert_eq!(h.climber.total_samples(), 2);
    }
}
