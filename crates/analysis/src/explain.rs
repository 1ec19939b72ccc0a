//! `poolsim explain`: the pool's decisions in words, in time order.
//!
//! A pure library: it reads the [`Trace`] and the detail events of one run
//! (an [`EventLog`]) and returns lines and a story; the CLI prints them.
//! Each line is one decision the pool made, with the rule that fired, the
//! inputs the rule read and what it did. A decision event is recorded just
//! before its action, so the goal change and the thread added or woken that
//! follow it at the same instant are merged into its line ("-> Starvation:
//! goal 4 -> 5, thread 4 created"). Kinds use the runtime's reason names
//! where it has one (the `Reason` of .NET's
//! `ThreadPoolWorkerThreadAdjustmentAdjustment` event: Warmup,
//! Initializing, RandomMove, ClimbingMove, ChangePoint, Stabilizing,
//! Starvation, ThreadTimedOut, CooperativeBlocking).
//!
//! What each line reports, and where the model reads it:
//! - `Starvation` / `GateTick`: a gate-thread (Mono: monitor-thread) tick
//!   with thread requests pending ran `SufficientDelaySinceLastDequeue`:
//!   the time since the last dequeue against `starvation_delay`, or against
//!   `goal × busy_delay_per_thread` when the CPU reading is at or above
//!   `cpu_busy_percent`, with `>` (CoreCLR) or `>=` (Mono); on starvation the
//!   goal becomes threads + 1 and a worker is added. Read in
//!   [`crate::policy::gate`] (CoreCLR 3.1 `win32threadpool.cpp`
//!   `GateThreadStart`, dotnet/runtime `PortableThreadPool.GateThread.cs`,
//!   mono `threadpool-worker-default.c` `monitor_thread`); .NET 2.0's NT
//!   rule (`GrowWorkerThreadPoolIfStarvation`) in [`crate::policy::net20`].
//!   The CPU reading is the policy's (`[gate] cpu_reading`): a share of all
//!   processors, except .NET Core 3.1 on Linux, whose reading is a share of
//!   one processor and goes past 100 % on more than one core (two busy
//!   threads on two cores read 200 %).
//! - `Warmup`, `Initializing`, `ClimbingMove`, `Stabilizing`: a hill-climbing
//!   sample (`HillClimbing::Update`): the throughput over the sample, the
//!   square wave's magnitude and phase, the Goertzel components of thread
//!   count and throughput, the step of the control setting, and the goal it
//!   gives. Read in [`crate::policy::hill_climbing`] (CoreCLR 3.1
//!   `hillclimbing.cpp`, the .NET 6 port, Mono's C port). `RandomMove` and
//!   `ChangePoint` are declared by the runtime and never produced.
//! - `CooperativeBlocking`: .NET 6+ `PerformBlockingAdjustment`: threads
//!   blocked in `Task.Wait`, the target `min + blocked`, the no-delay cap and,
//!   beyond it, the delay an increase needs since the previous one. Read in
//!   [`crate::policy::portable`] (`PortableThreadPool.Blocking.cs`).
//! - `Demand`: a thread request found fewer working threads than the goal
//!   (.NET 2.0: fewer workers than the minimum) and no idle thread, and
//!   created one (`MaybeAddWorkingWorker`, mono `worker_request`, 2.0
//!   `ShouldGrowWorkerThreadPool`). Releases of idle threads are not lines.
//! - `Retire`: a worker completed an item with more threads than the goal
//!   (`ShouldWorkerKeepRunning`: it retires; .NET 6+
//!   `ShouldStopProcessingWorkNow` and Mono: it goes back to waiting).
//! - `ThreadTimedOut`: an idle worker waited `idle_timeout` for work and
//!   exits, the goal lowered to the threads left (or, portable pool, stays
//!   when no other thread is idle); a retired one simply exits.
//! - `TimerBacklog`: a due timer's callback (or a timer queue) was queued
//!   behind work items that run first: at the global tail (the callbacks a
//!   timer-queue run does not run inline, Mono's per-callback items), or
//!   the .NET 6 time-sensitive queue, served only when every other queue is
//!   empty (or once per dispatch quantum). Read in `pool::state`
//!   (`TimerQueue.cs`, `ThreadPoolWorkQueue.cs`).
//! - `GateStarted`: a gate thread created with the pool's first worker
//!   first runs, which its first tick counts from: once the worker has
//!   dispatched, and when CPU work takes every core only at the next
//!   scheduler tick (`[gate] start`, measured on .NET Core 3.1). Read in
//!   `policy::gate`.
//! - `StartupSample`: with tiered compilation on, on several processors,
//!   the runtime's start-up completes pool work of its own before the
//!   program's first request (tiering's call-counting timer callback and
//!   its background work); the first of those completions takes hill
//!   climbing's first sample, so the workload's completions go to the
//!   second (`[hill_climbing] startup_completions_tiered`, measured on
//!   .NET Core 3.1). Read in `policy::classic`.
//! - `FirstCall`: the first call of a parallel API in the run, whose
//!   caller compiles the library's code for it before its first body runs
//!   (`[library.first_call_ms]`, measured on each installed runtime).
//!   Read in `engine::shapes`.
//! - `MainThreadWaited`: on one core the program's main thread, once it
//!   created the pool's first worker, lost the core to it and submits again
//!   only when the worker leaves it free or at a scheduler tick
//!   (`[threads] main_yields_to_first_worker`, measured on .NET Core 3.1).
//!   Read in the engine (`Engine::main_resume`).
//! - `WakePreempted`: a pool thread ran a timer's callback that released a
//!   thread blocked in `Task.Delay().Wait()`, which goes on computing with
//!   no core free: Linux's scheduler runs the released thread first, and the
//!   pool thread dequeues its next item only after its wait for the core
//!   (`[threads] wake_preempt_us`, measured on one core). Read in the engine
//!   (`Engine::preempted_by`).
//! - `ThrottleHandOff`: a throttled item hands its slot to the next waiting
//!   one: `SemaphoreSlim.Release()` queues the first waiter's continuation,
//!   a `ConcurrentExclusiveSchedulerPair` processing item runs the next
//!   task of its queue.
//! - A thread created without a decision line (a dedicated thread, a
//!   measured run) gets a line of its own, named after its reason, and the
//!   goal's starting value is a `MinThreads` line.
//!
//! Without a window the lines end with a story of the run: the threads in
//! creation order grouped by reason and cadence, items that reuse threads,
//! and counts of the other decisions.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;

use crate::engine::{self, Outcome, SimOptions};
use crate::policy::PolicyConfig;
use crate::scenario::Scenario;
use crate::time::{SimDuration, SimTime};
use crate::trace::{
    BlockingDelay, Decision, EventLog, GateOutcome, GoalReason, Phase, StarvationCheck, ThreadId,
    ThreadReason, ThrottleKind, Trace, TraceEvent,
};

/// One decision in words.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExplainLine {
    /// When, in ms since the run started.
    pub at_ms: f64,
    /// The rule that fired (the runtime's reason name where it has one).
    pub kind: &'static str,
    pub text: String,
}

/// The narration of one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Explanation {
    pub scenario: String,
    pub policy: String,
    pub lines: Vec<ExplainLine>,
    /// A short story of the whole run (only without a window).
    pub story: Option<String>,
}

impl Explanation {
    /// The lines (time right-aligned), then the story after a blank line.
    pub fn to_text(&self) -> String {
        let times: Vec<String> = self
            .lines
            .iter()
            .map(|l| format!("{:.1}", l.at_ms))
            .collect();
        let width = times.iter().map(String::len).max().unwrap_or(0);
        let mut out = format!("{} under {}\n", self.scenario, self.policy);
        if self.lines.is_empty() {
            out.push_str("(no decisions)\n");
        }
        for (line, at) in self.lines.iter().zip(&times) {
            let _ = writeln!(out, "{at:>width$} ms  {}", line.text);
        }
        if let Some(story) = &self.story {
            let _ = write!(out, "\n{story}\n");
        }
        out
    }
}

/// Simulates `scenario` under `policy` with every detail event kept and
/// explains the run; `window` keeps only the lines from its start
/// (inclusive) to its end (exclusive).
pub fn explain_scenario(
    scenario: &Scenario,
    policy: &PolicyConfig,
    window: Option<(SimTime, SimTime)>,
) -> Explanation {
    let mut log = EventLog::default();
    let result = engine::simulate(scenario, policy, &mut log, &SimOptions::default());
    let mut explanation = explain(&result.trace, &log.events, window);
    if let Some(story) = explanation.story.as_mut()
        && let Some(end) = unfinished(&result.outcome)
    {
        story.push(' ');
        story.push_str(&end);
    }
    explanation
}

/// How a run that did not complete ended, in words.
fn unfinished(outcome: &Outcome) -> Option<String> {
    match outcome {
        Outcome::Completed => None,
        Outcome::TimeLimit { at, unfinished } => Some(format!(
            "The run stopped at the time limit, {} ms, with {} unfinished.",
            ms(at.since(SimTime::ZERO)),
            count(*unfinished, "item")
        )),
        Outcome::EventBudget { events, unfinished } => Some(format!(
            "The run stopped after {} with {} unfinished.",
            count(*events, "event"),
            count(*unfinished, "item")
        )),
        Outcome::Stalled { at, unfinished } => Some(format!(
            "Nothing was left to happen at {} ms, with {} unfinished.",
            ms(at.since(SimTime::ZERO)),
            count(*unfinished, "item")
        )),
        Outcome::Deadlock {
            at,
            unfinished,
            blocked,
        } => Some(format!(
            "Deadlock at {} ms: {} blocked on work only a pool thread can run, \
             the pool at its maximum, {} unfinished.",
            ms(at.since(SimTime::ZERO)),
            count(blocked.len() as u64, "thread"),
            count(*unfinished, "item")
        )),
    }
}

/// What followed a decision at the same instant: its goal change and the
/// threads it created or woke.
#[derive(Debug, Default)]
struct Effects {
    goal: Option<u32>,
    created: Option<ThreadId>,
    woken: Option<ThreadId>,
}

impl Effects {
    /// ", thread 4 created" / ", thread 2 woken" / "".
    fn threads(&self) -> String {
        match (self.created, self.woken) {
            (Some(t), _) => format!(", thread {t} created"),
            (None, Some(t)) => format!(", thread {t} woken"),
            (None, None) => String::new(),
        }
    }
}

/// The reason of the thread a decision adds, if it adds one.
pub(crate) fn adds_worker(d: &Decision) -> Option<ThreadReason> {
    match d {
        Decision::GateTick { outcome, .. } if *outcome == GateOutcome::Inject => {
            Some(ThreadReason::Starvation)
        }
        Decision::Net20Gate { create: true, .. } => Some(ThreadReason::Starvation),
        Decision::HillClimbing { goal, new_goal, .. } if new_goal > goal => {
            Some(ThreadReason::HillClimbing)
        }
        Decision::CooperativeBlocking { goal, new_goal, .. } if new_goal > goal => {
            Some(ThreadReason::CooperativeBlocking)
        }
        Decision::Demand { .. } => Some(ThreadReason::Demand),
        _ => None,
    }
}

/// Takes what decision `d` at `at` did from the events from `i` on (its
/// goal change, then the one thread it created or woke) into `effects`;
/// returns the index of the first event not taken.
fn merge_effects(
    d: &Decision,
    at: SimTime,
    events: &[(SimTime, TraceEvent)],
    mut i: usize,
    effects: &mut Effects,
) -> usize {
    let same_instant = |i: usize| events.get(i).filter(|(t, _)| *t == at).map(|(_, e)| e);
    let moves_goal = matches!(
        d,
        Decision::GateTick { .. }
            | Decision::HillClimbing { .. }
            | Decision::CooperativeBlocking { .. }
    );
    if moves_goal && let Some(TraceEvent::GoalChanged { goal, .. }) = same_instant(i) {
        effects.goal = Some(*goal);
        i += 1;
    }
    let Some(expected) = adds_worker(d) else {
        return i;
    };
    match same_instant(i) {
        Some(TraceEvent::ThreadCreated { thread, reason }) if *reason == expected => {
            effects.created = Some(*thread);
            i += 1;
            if let Some(TraceEvent::ThreadPhase {
                thread: t,
                phase: Phase::Starting,
                ..
            }) = same_instant(i)
                && t == thread
            {
                i += 1;
            }
        }
        Some(TraceEvent::ThreadPhase {
            thread,
            phase: Phase::Starting,
            ..
        }) => {
            effects.woken = Some(*thread);
            i += 1;
        }
        _ => {}
    }
    i
}

/// Explains a run from its trace and detail events (in recording order).
pub fn explain(
    trace: &Trace,
    events: &[(SimTime, TraceEvent)],
    window: Option<(SimTime, SimTime)>,
) -> Explanation {
    let mut lines = Vec::new();
    let mut tally = Tally::default();
    let in_window = |at: SimTime| window.is_none_or(|(from, to)| at >= from && at < to);
    let mut i = 0;
    while i < events.len() {
        let (at, event) = (events[i].0, &events[i].1);
        i += 1;
        let line = match event {
            TraceEvent::Decision(d) => {
                let mut effects = Effects::default();
                i = merge_effects(d, at, events, i, &mut effects);
                tally.count(d);
                describe(d, &effects)
            }
            TraceEvent::ThreadCreated { thread, reason } => created_line(*thread, *reason),
            TraceEvent::GoalChanged {
                goal,
                reason: GoalReason::MinThreads,
            } => {
                tally.min_goal.get_or_insert(*goal);
                Some((
                    "MinThreads",
                    format!("goal starts at {goal} threads (min threads)"),
                ))
            }
            _ => None,
        };
        if let Some((kind, text)) = line
            && in_window(at)
        {
            lines.push(ExplainLine {
                at_ms: at.as_ms_f64(),
                kind,
                text,
            });
        }
    }
    let story = window.is_none().then(|| story(trace, &tally));
    Explanation {
        scenario: trace.scenario.clone(),
        policy: trace.policy.clone(),
        lines,
        story,
    }
}

/// A line for a thread created without a decision of its own.
fn created_line(thread: ThreadId, reason: ThreadReason) -> Option<(&'static str, String)> {
    let (kind, text) = match reason {
        ThreadReason::Main => return None,
        ThreadReason::Demand => ("Demand", format!("thread {thread} created on demand")),
        ThreadReason::Starvation => (
            "Starvation",
            format!("thread {thread} created by the starvation rule"),
        ),
        ThreadReason::HillClimbing => (
            "ClimbingMove",
            format!("thread {thread} created after hill climbing raised the goal"),
        ),
        ThreadReason::CooperativeBlocking => (
            "CooperativeBlocking",
            format!("thread {thread} created for cooperative blocking"),
        ),
        ThreadReason::Dedicated => (
            "Dedicated",
            format!("thread {thread} created: a dedicated thread (new Thread)"),
        ),
        ThreadReason::Observed => ("Observed", format!("thread {thread} observed")),
    };
    Some((kind, text))
}

/// "1 item", "2 items".
fn count(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// An instant in ms to 0.1 ms, for the story ("328.1").
fn at_ms(t: SimTime) -> String {
    ms(SimDuration(t.as_nanos() / 100_000 * 100_000))
}

/// A duration in ms, without trailing zeros ("630", "0.25").
fn ms(d: SimDuration) -> String {
    let s = format!("{:.3}", d.as_ms_f64());
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// "goal 4 -> 5" or "goal stays 4".
fn goal_move(goal: u32, new_goal: u32) -> String {
    if goal == new_goal {
        format!("goal stays {goal}")
    } else {
        format!("goal {goal} -> {new_goal}")
    }
}

/// The starvation test in words: "last dequeue 630 ms ago > 500 ms (CPU 0 % < 80 %)".
fn starvation_test(c: &StarvationCheck, goal: u32) -> String {
    let since = if c.since_dequeue >= SimDuration::from_ms(crate::policy::mono::ASSUMED_UPTIME_MS) {
        // Mono's monitor before any completion: its "last dequeue" is 0 on
        // a clock that counts from boot.
        "no completion yet: last dequeue at boot, the machine's uptime ago".to_string()
    } else {
        format!("last dequeue {} ms ago", ms(c.since_dequeue))
    };
    let test = if c.starved {
        format!("{since} {} {} ms", c.comparison, ms(c.threshold))
    } else {
        format!("{since}, not {} {} ms", c.comparison, ms(c.threshold))
    };
    let cpu = if c.cpu_busy {
        let per = if goal > 0 {
            format!(
                ": threshold goal {goal} x {} ms",
                ms(SimDuration(c.threshold.as_nanos() / u64::from(goal)))
            )
        } else {
            String::new()
        };
        format!("CPU {} % >= {} %{per}", c.cpu_percent, c.cpu_busy_percent)
    } else {
        format!("CPU {} % < {} %", c.cpu_percent, c.cpu_busy_percent)
    };
    format!("{test} ({cpu})")
}

/// A decision (and what followed it) as a kind and a text; `None` for a
/// thread request that did nothing visible.
fn describe(d: &Decision, effects: &Effects) -> Option<(&'static str, String)> {
    let threads = effects.threads();
    let line = match d {
        Decision::GateTick {
            check,
            goal,
            new_goal,
            threads: counted,
            outcome,
        } => {
            let test = starvation_test(check, *goal);
            match outcome {
                GateOutcome::Inject => (
                    "Starvation",
                    format!(
                        "gate tick: {test} -> Starvation: {}{threads}",
                        goal_move(*goal, effects.goal.unwrap_or(*new_goal))
                    ),
                ),
                GateOutcome::NotStarved => ("GateTick", format!("gate tick: {test} -> no change")),
                GateOutcome::AtMax => (
                    "GateTick",
                    format!("gate tick: {test}, but {counted} threads is the maximum -> no change"),
                ),
                GateOutcome::BelowGoal => (
                    "GateTick",
                    format!(
                        "gate tick: {test}, but {counted} threads < goal {goal} (one is on its way) -> no change"
                    ),
                ),
                GateOutcome::BlockingPending => (
                    "GateTick",
                    format!(
                        "gate tick: {test}, but a cooperative-blocking adjustment is pending -> no starvation injection"
                    ),
                ),
            }
        }
        Decision::Net20Gate {
            queued,
            workers,
            idle,
            cpu_percent,
            cpu_busy_percent,
            dequeue,
            creation,
            create,
        } => {
            let mut text = format!(
                "gate check: {} queued, {}, {idle} idle",
                count(*queued, "item"),
                count(*workers, "worker")
            );
            match (dequeue, creation) {
                (Some((since, threshold, cmp)), Some((since_creation, wait))) => {
                    let not = |ok: bool| if ok { "" } else { "not " };
                    let dequeue_ok = match *cmp {
                        ">=" => since >= threshold,
                        _ => since > threshold,
                    };
                    let _ = write!(
                        text,
                        " (CPU {cpu_percent} % >= {cpu_busy_percent} %): last dequeue {} ms ago {}{cmp} {} ms (workers x {} ms), last creation {} ms ago {}> {} ms",
                        ms(*since),
                        not(dequeue_ok),
                        ms(*threshold),
                        ms(SimDuration(
                            threshold.as_nanos() / u64::from((*workers).max(1))
                        )),
                        ms(*since_creation),
                        not(since_creation > wait),
                        ms(*wait)
                    );
                }
                _ => {
                    let _ = write!(text, " (CPU {cpu_percent} % < {cpu_busy_percent} %)");
                }
            }
            if *create {
                ("Starvation", format!("{text} -> Starvation{threads}"))
            } else if *idle > 0 {
                ("GateTick", format!("{text} -> no thread: one is idle"))
            } else {
                ("GateTick", format!("{text} -> no thread"))
            }
        }
        Decision::HillClimbing {
            transition,
            adopted,
            throughput,
            sample,
            thread_wave,
            throughput_wave,
            ratio,
            confidence,
            step,
            control_setting,
            wave_magnitude,
            wave_high,
            cpu_percent,
            goal,
            new_goal,
        } => {
            let mut text = String::from("hill climbing: ");
            if *adopted {
                let _ = write!(text, "adopts goal {goal} (Initializing), ");
            }
            let over = if *sample >= SimDuration::from_ms(crate::policy::mono::ASSUMED_UPTIME_MS) {
                // Mono's first sample, on a clock that counts from boot.
                "the machine's uptime (the heuristic's clock counts from boot)".to_string()
            } else {
                format!("{} ms", ms(*sample))
            };
            let _ = write!(
                text,
                "{throughput:.1} items/s over {over} (CPU {cpu_percent} %)"
            );
            if matches!(*transition, "ClimbingMove" | "Stabilizing") {
                let _ = write!(
                    text,
                    ", thread wave {thread_wave:+.3}, throughput wave {throughput_wave:+.3}, ratio {ratio:+.3}, confidence {confidence:.2}"
                );
            }
            let _ = write!(
                text,
                ", step {step:+.3} to {control_setting:.2}, wave {wave_magnitude} {} -> {transition}: {}{threads}",
                if *wave_high { "high" } else { "low" },
                goal_move(*goal, effects.goal.unwrap_or(*new_goal))
            );
            (*transition, text)
        }
        Decision::CooperativeBlocking {
            blocked,
            min,
            target,
            no_delay_cap,
            goal,
            new_goal,
            delay,
            next_in,
        } => {
            let mut text = format!(
                "blocking adjustment: {} blocked in Task.Wait, target {target} (min {min} + {blocked})",
                count(*blocked, "thread")
            );
            if new_goal < goal {
                let _ = write!(text, ": they unblocked");
            } else {
                match delay {
                    None => {
                        let _ = write!(text, ", up to the no-delay cap {no_delay_cap}: at once");
                    }
                    Some(BlockingDelay::Running { needed, since }) => {
                        let _ = write!(
                            text,
                            ", beyond the no-delay cap {no_delay_cap}: {} ms since the gate's delay started {} delay {} ms",
                            ms(*since),
                            if since >= needed { ">=" } else { "<" },
                            ms(*needed)
                        );
                    }
                    Some(BlockingDelay::Starts) => {
                        let _ = write!(
                            text,
                            ", beyond the no-delay cap {no_delay_cap}: no delay running, so none has elapsed: wait"
                        );
                    }
                }
            }
            let _ = write!(
                text,
                " -> CooperativeBlocking: {}{threads}",
                goal_move(*goal, effects.goal.unwrap_or(*new_goal))
            );
            if let Some(next) = next_in {
                let _ = write!(text, "; next step in {} ms", ms(*next));
            }
            ("CooperativeBlocking", text)
        }
        Decision::Demand {
            threads: counted,
            limit,
            threads_name,
            limit_name,
            idle_queued,
        } => {
            if effects.created.is_none() && effects.woken.is_none() {
                return None;
            }
            let idle = match idle_queued {
                Some((idle, queued)) => format!(", {idle} idle < {queued} queued"),
                None => ", none idle".to_string(),
            };
            (
                "Demand",
                format!(
                    "thread request: {counted} {threads_name} < {limit_name} {limit}{idle} -> {}",
                    threads.trim_start_matches(", ")
                ),
            )
        }
        Decision::WorkerStop {
            thread,
            rule,
            threads: counted,
            threads_name,
            goal,
            retires,
        } => (
            "Retire",
            format!(
                "thread {thread} completed an item with {counted} {threads_name} > goal {goal} ({rule}) -> {}",
                if *retires {
                    "it retires"
                } else {
                    "it goes back to waiting"
                }
            ),
        ),
        Decision::RequestsHeld {
            tokens,
            working,
            goal,
        } => (
            "RequestsHeld",
            format!(
                "thread request: {tokens} requests passed on and not yet taken (threadpool.c: starting = {tokens}, the cap) -> it stays managed: no thread woken or created by a request ({working} working, goal {goal}) until the workers go idle; only the monitor adds threads"
            ),
        ),
        Decision::IdleTimeout {
            thread,
            waited,
            retired,
            exits,
            goal,
            new_goal,
        } => {
            let goal_text = match (goal, new_goal) {
                (Some(g), Some(n)) if g != n => format!(", goal {g} -> {n}"),
                _ => String::new(),
            };
            if *retired {
                (
                    "ThreadTimedOut",
                    format!(
                        "thread {thread} retired and waited {} ms to be brought back -> it exits",
                        ms(*waited)
                    ),
                )
            } else if *exits {
                (
                    "ThreadTimedOut",
                    format!(
                        "thread {thread} idle for {} ms -> ThreadTimedOut: it exits{goal_text}",
                        ms(*waited)
                    ),
                )
            } else {
                (
                    "ThreadTimedOut",
                    format!(
                        "thread {thread} idle for {} ms, but no other thread is idle -> it stays",
                        ms(*waited)
                    ),
                )
            }
        }
        Decision::TimerBacklog {
            timer,
            queue,
            ahead,
            via,
            releases,
        } => {
            let what = match timer {
                Some(id) => format!("timer {id} fired: its callback"),
                None => format!("timer queue {queue} fired: it"),
            };
            let releases = match releases {
                Some(t) => format!(" (it releases thread {t} from Task.Delay().Wait())"),
                None => String::new(),
            };
            (
                "TimerBacklog",
                format!(
                    "{what} waits in the {via} behind {}{releases}{threads}",
                    count(*ahead, "item")
                ),
            )
        }
        Decision::WakePreempted {
            thread,
            woke,
            waits,
        } => (
            "WakePreempted",
            format!(
                "thread {thread} released thread {woke} from Task.Delay().Wait(), which computes with no core free -> the scheduler runs thread {woke} first; thread {thread} waits {} ms for its core before its next dequeue{threads}",
                ms(*waits)
            ),
        ),
        Decision::GateStarted {
            created,
            waited_for_tick,
            first_tick,
        } => {
            let how = if *waited_for_tick {
                "the CPU work took every core, so it ran only at the scheduler tick"
            } else {
                "a core was free"
            };
            (
                "GateStarted",
                format!(
                    "gate thread (created at {} ms with the pool's first worker) first runs: {how}; its first tick is due at {} ms",
                    ms(created.since(SimTime::ZERO)),
                    ms(first_tick.since(SimTime::ZERO))
                ),
            )
        }
        Decision::StartupSample {
            before,
            completions,
        } => {
            let rest = completions.saturating_sub(1);
            let others = match rest {
                0 => String::new(),
                1 => "; the other counts toward the next sample".to_string(),
                n => format!("; the other {n} count toward the next sample"),
            };
            (
                "StartupSample",
                format!(
                    "start-up work the program does not control (tiered compilation) completed {} on the pool {} ms before the first request: the first took hill climbing's first sample{others}",
                    count(u64::from(*completions), "work item"),
                    ms(*before)
                ),
            )
        }
        Decision::FirstCall { api, thread, cost } => (
            "FirstCall",
            format!(
                "the run's first {} call: thread {thread} compiles the library's code for it ({} ms of CPU, the measured first-call cost) before its first body; later calls pay none",
                api.api_name(),
                ms(*cost)
            ),
        ),
        Decision::MainThreadWaited {
            since,
            waited_for_tick,
        } => {
            let how = if *waited_for_tick {
                "the worker computes, so at the scheduler tick"
            } else {
                "the worker left it free"
            };
            (
                "MainThreadWaited",
                format!(
                    "main thread gets the one core back ({how}) and submits again; it lost it at {} ms to the pool's first worker",
                    ms(since.since(SimTime::ZERO))
                ),
            )
        }
        Decision::ThrottleHandOff {
            kind,
            from,
            to,
            limit,
            waiting,
        } => {
            let from = match from {
                Some(item) => format!("item {item}"),
                None => "an item".to_string(),
            };
            let text = match kind {
                ThrottleKind::Semaphore => format!(
                    "{from} released the semaphore (limit {limit}) -> item {to} goes next, {waiting} still waiting{threads}"
                ),
                ThrottleKind::Pair => format!(
                    "after {from}, the scheduler pair (limit {limit}) runs item {to} next, {waiting} still waiting{threads}"
                ),
            };
            ("ThrottleHandOff", text)
        }
    };
    Some(line)
}

/// Counts over the whole run, for the story.
#[derive(Debug, Default)]
struct Tally {
    min_goal: Option<u32>,
    /// Hill-climbing samples by transition, and how many moved the goal.
    samples: BTreeMap<&'static str, (u32, u32)>,
    goal_range: Option<(u32, u32)>,
    blocking_raises: u32,
    blocking_delays: Vec<SimDuration>,
    stops: u32,
    /// Mono: times thread requests were held at the token cap.
    held: u32,
    timeouts: u32,
    timer_backlog: u32,
    timer_backlog_max: u64,
    preempted: u32,
    preempted_total: SimDuration,
    hand_offs: u32,
    hand_off_kind: Option<(ThrottleKind, u32)>,
    gate_ticks: u32,
    injections: u32,
    /// Start-up work took hill climbing's first sample.
    startup_sample: bool,
}

impl Tally {
    fn count(&mut self, d: &Decision) {
        match d {
            Decision::GateTick { outcome, .. } => {
                self.gate_ticks += 1;
                if *outcome == GateOutcome::Inject {
                    self.injections += 1;
                }
            }
            Decision::Net20Gate { create, .. } => {
                self.gate_ticks += 1;
                if *create {
                    self.injections += 1;
                }
            }
            Decision::HillClimbing {
                transition,
                goal,
                new_goal,
                ..
            } => {
                let entry = self.samples.entry(transition).or_default();
                entry.0 += 1;
                if goal != new_goal {
                    entry.1 += 1;
                }
                let (lo, hi) = self.goal_range.get_or_insert((*new_goal, *new_goal));
                *lo = (*lo).min(*new_goal);
                *hi = (*hi).max(*new_goal);
            }
            Decision::CooperativeBlocking {
                goal,
                new_goal,
                delay,
                ..
            } => {
                if new_goal > goal {
                    self.blocking_raises += 1;
                    if let Some(BlockingDelay::Running { needed, .. }) = delay {
                        self.blocking_delays.push(*needed);
                    }
                }
            }
            Decision::Demand { .. } => {}
            Decision::WorkerStop { .. } => self.stops += 1,
            Decision::RequestsHeld { .. } => self.held += 1,
            Decision::IdleTimeout { exits, .. } => {
                if *exits {
                    self.timeouts += 1;
                }
            }
            Decision::TimerBacklog { ahead, .. } => {
                self.timer_backlog += 1;
                self.timer_backlog_max = self.timer_backlog_max.max(*ahead);
            }
            Decision::StartupSample { .. } => self.startup_sample = true,
            Decision::GateStarted { .. }
            | Decision::MainThreadWaited { .. }
            | Decision::FirstCall { .. } => {}
            Decision::WakePreempted { waits, .. } => {
                self.preempted += 1;
                self.preempted_total = self.preempted_total + *waits;
            }
            Decision::ThrottleHandOff { kind, limit, .. } => {
                self.hand_offs += 1;
                self.hand_off_kind.get_or_insert((*kind, *limit));
            }
        }
    }
}

/// "8 and 9", "3, 4 and 5".
fn and_list<T: std::fmt::Display>(xs: &[T]) -> String {
    match xs {
        [] => String::new(),
        [x] => x.to_string(),
        [init @ .., last] => {
            let init: Vec<String> = init.iter().map(T::to_string).collect();
            format!("{} and {last}", init.join(", "))
        }
    }
}

/// The threads in creation order, grouped into runs of one reason.
fn thread_story(trace: &Trace, min_goal: Option<u32>) -> Option<String> {
    let threads: Vec<_> = trace
        .threads
        .iter()
        .filter(|t| t.reason != ThreadReason::Main)
        .collect();
    if threads.is_empty() {
        return None;
    }
    let mut runs: Vec<(ThreadReason, Vec<SimTime>)> = Vec::new();
    for t in &threads {
        match runs.last_mut() {
            Some((reason, times)) if *reason == t.reason => times.push(t.created),
            _ => runs.push((t.reason, vec![t.created])),
        }
    }
    let mut parts = Vec::new();
    for (k, (reason, times)) in runs.iter().enumerate() {
        let source = match reason {
            ThreadReason::Demand => {
                let min = match min_goal {
                    Some(m) if k == 0 && times.len() as u32 == m => " (min threads)",
                    _ => "",
                };
                format!("on demand{min}")
            }
            ThreadReason::Starvation => "from the starvation rule".to_string(),
            ThreadReason::HillClimbing => "from hill climbing".to_string(),
            ThreadReason::CooperativeBlocking => "for cooperative blocking".to_string(),
            ThreadReason::Dedicated => "as dedicated threads".to_string(),
            ThreadReason::Observed => "observed".to_string(),
            ThreadReason::Main => String::new(),
        };
        let n = times.len();
        let first = times[0];
        let last = times[n - 1];
        let part = if n == 1 {
            format!("one {source} at {} ms", at_ms(first))
        } else if first == last {
            format!("{n} threads at once {source}")
        } else {
            let gaps: Vec<u64> = times
                .windows(2)
                .map(|w| w[1].since(w[0]).as_nanos())
                .collect();
            let lo = gaps.iter().copied().min().unwrap_or(0);
            let hi = gaps.iter().copied().max().unwrap_or(0);
            if hi - lo <= hi / 50 {
                let mean = SimDuration(gaps.iter().sum::<u64>() / gaps.len() as u64);
                let every = if (mean.as_ms_f64() - 1000.0).abs() < 20.0 {
                    "a second".to_string()
                } else {
                    format!(
                        "every {} ms",
                        ms(SimDuration(mean.as_nanos() / 100_000 * 100_000))
                    )
                };
                format!("{n} threads {source}, one {every}")
            } else {
                format!(
                    "{n} threads {source} between {} and {} ms",
                    at_ms(first),
                    at_ms(last)
                )
            }
        };
        parts.push(part);
    }
    Some(parts.join(", then "))
}

/// Items that started on a thread an earlier item had already run on.
fn reuse_story(trace: &Trace) -> Option<String> {
    let mut seen: BTreeSet<ThreadId> = BTreeSet::new();
    let mut items: Vec<&crate::trace::ItemRecord> = trace
        .items
        .iter()
        .filter(|i| i.started != SimTime::MAX && i.thread != ThreadId::MAX)
        .collect();
    items.sort_by_key(|i| (i.started, i.item));
    let mut reusing = Vec::new();
    let mut reused_threads = Vec::new();
    for item in items {
        if !seen.insert(item.thread) {
            reusing.push(item.item);
            if !reused_threads.contains(&item.thread) {
                reused_threads.push(item.thread);
            }
        }
    }
    if reusing.is_empty() {
        return None;
    }
    if reusing.len() <= 4 {
        reused_threads.sort_unstable();
        let verb = if reusing.len() == 1 {
            "reuses"
        } else {
            "reuse"
        };
        let noun = if reused_threads.len() == 1 {
            "thread"
        } else {
            "threads"
        };
        Some(format!(
            "item{} {} {verb} {noun} {}",
            if reusing.len() == 1 { "" } else { "s" },
            and_list(&reusing),
            and_list(&reused_threads)
        ))
    } else {
        Some(format!(
            "{} of {} reuse a thread an earlier item ran on",
            reusing.len(),
            count(trace.items.len() as u64, "item")
        ))
    }
}

/// The story of the whole run.
fn story(trace: &Trace, tally: &Tally) -> String {
    let mut parts = Vec::new();
    if let Some(threads) = thread_story(trace, tally.min_goal) {
        parts.push(threads);
    }
    if tally.gate_ticks > 0 {
        parts.push(format!(
            "{} of {} with requests pending found starvation",
            tally.injections,
            count(tally.gate_ticks, "gate tick")
        ));
    }
    if !tally.samples.is_empty() {
        let total: u32 = tally.samples.values().map(|s| s.0).sum();
        let moved: u32 = tally.samples.values().map(|s| s.1).sum();
        let by: Vec<String> = tally
            .samples
            .iter()
            .map(|(name, (n, _))| format!("{name} x{n}"))
            .collect();
        let range = match tally.goal_range {
            Some((lo, hi)) if moved > 0 && lo != hi => format!(", the goal between {lo} and {hi}"),
            _ => String::new(),
        };
        let first = if tally.startup_sample {
            " after the start-up's first"
        } else {
            ""
        };
        parts.push(format!(
            "hill climbing took {}{first} ({}) and moved the goal {}{range}",
            count(total, "sample"),
            by.join(", "),
            count(moved, "time")
        ));
    }
    if tally.blocking_raises > 0 {
        let delays = match (tally.blocking_delays.first(), tally.blocking_delays.last()) {
            (Some(a), Some(b)) if a != b => {
                format!(", delays from {} to {} ms", ms(*a), ms(*b))
            }
            (Some(a), _) => format!(", each after {} ms", ms(*a)),
            _ => String::new(),
        };
        parts.push(format!(
            "cooperative blocking raised the goal {}{delays}",
            count(tally.blocking_raises, "time")
        ));
    }
    if tally.stops > 0 {
        parts.push(format!(
            "{} stopped with more threads than the goal",
            count(tally.stops, "worker")
        ));
    }
    if tally.held > 0 {
        parts.push(format!(
            "thread requests were held at the cap of requests in flight {} (no thread woken or created by a request then)",
            count(tally.held, "time")
        ));
    }
    if tally.timeouts > 0 {
        parts.push(format!(
            "{} exited after the idle timeout",
            count(tally.timeouts, "thread")
        ));
    }
    if tally.timer_backlog > 0 {
        parts.push(format!(
            "{} waited behind a backlog (up to {})",
            count(tally.timer_backlog, "timer callback"),
            count(tally.timer_backlog_max, "item")
        ));
    }
    if tally.preempted > 0 {
        parts.push(format!(
            "{} for a core by pool threads that released a computing thread ({} ms in all)",
            count(tally.preempted, "wait"),
            ms(tally.preempted_total)
        ));
    }
    if let Some((kind, limit)) = tally.hand_off_kind {
        let what = match kind {
            ThrottleKind::Semaphore => "semaphore",
            ThrottleKind::Pair => "scheduler pair",
        };
        parts.push(format!(
            "{} through the {what} (limit {limit})",
            count(tally.hand_offs, "hand-off")
        ));
    }
    if let Some(reuse) = reuse_story(trace) {
        parts.push(reuse);
    }
    if parts.is_empty() {
        return "Nothing to tell: no thread was created.".to_string();
    }
    let mut s = parts.join("; ");
    if let Some(first) = s.get(0..1) {
        let upper = first.to_uppercase();
        s.replace_range(0..1, &upper);
    }
    s.push('.');
    s
}
