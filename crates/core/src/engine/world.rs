//! The world: the state of a simulated run apart from the policy, and its
//! plain helpers.
//!
//! [`World`] holds the clock, the event queue, the pool state (queues,
//! thread requests, timers), the threads, the CPU, the items alive, the
//! throttles and the parallel calls' state, and the trace. Its helpers
//! here schedule events at the clock, draw the run's latencies, record
//! to the trace, queue work and tell whether the run is done or stuck;
//! the threads' lifecycle is in `threads`, the event loop in `run`.

use std::collections::VecDeque;

use rand_chacha::ChaCha8Rng;

use crate::policy::PolicyConfig;
use crate::pool::state::{Pair, PoolState, Semaphore, ThreadCounts, ThreadState, Throttles};
use crate::pool::{ThreadKind, TimerAction};
use crate::rng;
use crate::scenario::{Arrival, Origin, Scenario, Step, arrivals};
use crate::time::{SimDuration, SimTime};
use crate::trace::{
    CountSample, Decision, ItemId, Phase, ThreadId, ThrottleKind, Trace, TraceEvent, TraceSink,
};

use super::cpu::Cpu;
use super::items::ItemStates;
use super::queue::{EventKind, EventQueue, Fifo};
use super::shapes::{AsyncWorker, Loop, Partition, Replica};
use super::threads::{Activity, PoolThread};

/// A unit of work in a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Work {
    /// Start a plain task item.
    Item(ItemId),
    /// Resume suspended frames (an `await` continuation).
    Continuation(u32),
    /// Fire the due timers of a timer queue.
    TimerQueue(u32),
    /// One due timer's callback.
    TimerCallback(u32),
    /// A responsiveness probe (`sw.Stop()`) of the given `[[probe]]` loop.
    Probe(u32),
    /// A pool work item submitting a group (`from = "pool"`).
    Submitter(u32),
    /// A `Parallel.For`/`ForEach` replica.
    Replica(u32),
    /// A PLINQ partition.
    Partition(u32),
    /// A `Parallel.ForEachAsync` worker.
    AsyncWorker(u32),
    /// A `ConcurrentExclusiveSchedulerPair` processing item.
    PairProcessor(u32),
}

/// What runs on a thread's stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Frame {
    Item(ItemId),
    Replica(u32),
    Partition(u32),
    AsyncWorker(u32),
    PairProcessor(u32),
    /// The thread that called a one-call API (`Parallel.For`, PLINQ, ...).
    Caller(u32),
    Submitter(u32),
}

/// Who continues when an item's body ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Owner {
    /// A task of its own: nothing.
    Task,
    /// A `Parallel.Invoke` action started as a task: the loop counts it.
    InvokeTask(u32),
    /// Run inline by its caller or a replica/partition/worker/processor:
    /// the parent frame continues.
    Parent,
    /// A `Parallel.ForEachAsync` worker: suspends with the item.
    AsyncWorker(u32),
    /// A task on a `ConcurrentExclusiveSchedulerPair`: continuations go
    /// back to the pair's queue.
    Pair(u32),
    /// A call of a `fan_out` step (its slot in [`World::fan_outs`]): the
    /// call counts it.
    FanOut(u32),
}

/// One call of a `fan_out` step: the items it queued that have not
/// finished, and the thread blocked in `Task.WhenAll(calls).Wait()`.
#[derive(Debug, Default)]
pub(super) struct FanOutCall {
    pub(super) outstanding: u32,
    pub(super) waiter: Option<ThreadId>,
}

#[derive(Debug)]
pub(super) struct GroupState {
    pub(super) submitted: u64,
    pub(super) finished: u64,
    pub(super) next_at: SimTime,
    pub(super) arrivals: Option<ChaCha8Rng>,
    pub(super) pair: Option<u32>,
    pub(super) semaphore: Option<u32>,
    /// The loop of a one-call shape, once called.
    pub(super) call: Option<u32>,
}

#[derive(Debug)]
pub(super) struct ProbeState {
    /// The probe record of the probe in flight, if any.
    pub(super) in_flight: Option<u32>,
}

/// The state of a simulated run apart from the policy: the clock, the
/// pool state, threads, CPU, throttles and the trace (the machine's
/// processors are `Cpu`'s cores, not this).
pub(super) struct World<'a, S: TraceSink> {
    pub(super) scenario: &'a Scenario,
    pub(super) sink: &'a mut S,
    pub(super) now: SimTime,
    /// The pending events (the heap, the FIFOs, the idle deadlines, the
    /// CPU check and the next arrival) and their sequence counter.
    pub(super) events: EventQueue,
    /// Set while a CPU check ends its finished jobs: each of their next
    /// CPU steps changes the jobs, but only the check computed after the
    /// last of them counts ([`World::reschedule_cpu`]).
    pub(super) cpu_batch: bool,

    pub(super) cpu: Cpu,
    pub(super) cpu_generation: u64,
    /// The threads whose CPU work a check found finished (a reused buffer).
    pub(super) cpu_finished: Vec<ThreadId>,

    pub(super) threads: Vec<PoolThread>,
    pub(super) main_thread: Option<ThreadId>,
    pub(super) main_calls: VecDeque<u32>,
    /// The threads by state (shared with the native pool).
    pub(super) tally: ThreadCounts,
    pub(super) start_latency: crate::policy::config::Spread,
    /// The stream of the pool threads' start latencies, when they vary.
    pub(super) start_rng: Option<ChaCha8Rng>,
    /// The pool's start-up latency (drawn once a run): the first pool
    /// thread is ready this long after it is created, until it is used.
    pub(super) first_start_latency: Option<SimDuration>,
    /// When the pool's start-up ends (its first thread is ready): a thread
    /// created before then is not ready before it either.
    pub(super) pool_ready_at: SimTime,
    pub(super) wake_latency: SimDuration,
    /// How long a thread that creates a pool thread waits for it
    /// (`[mono] creation_wait_ms`; zero elsewhere).
    pub(super) creation_wait: SimDuration,
    /// The creation waits owed by the worker whose loop runs now.
    pub(super) creation_owed: SimDuration,
    pub(super) dedicated_latency: SimDuration,
    pub(super) idle_timeout: SimDuration,
    /// How long a `cpu_ms` step of one second takes in this run (drawn once
    /// from the policy's `cpu_second_ms`), when not exactly a second.
    pub(super) cpu_second: Option<u64>,
    /// How late a `Thread.Sleep` returns, and its stream when it varies.
    pub(super) sleep_overshoot: crate::policy::config::Spread,
    pub(super) sleep_rng: Option<ChaCha8Rng>,
    /// The `TickCount` grid timers are due on (step, phase), if stepped.
    pub(super) timer_grid: Option<(u64, u64)>,
    /// The stream of the timer thread's wake-up lateness, when it varies.
    pub(super) timer_rng: Option<ChaCha8Rng>,
    /// How long a thread that released a CPU-bound waiter onto taken cores
    /// waits for its core (`threads.wake_preempt_us`; `None`: it does not),
    /// and its stream.
    pub(super) wake_preemption: Option<crate::policy::config::Spread>,
    pub(super) preempt_rng: Option<ChaCha8Rng>,

    /// The main thread, on one core, loses it to the pool's first worker
    /// (`threads.main_yields_to_first_worker`); `main_waiting` holds the
    /// groups whose submissions wait meanwhile, in arrival order.
    pub(super) main_yields: bool,
    pub(super) main_waiting: Option<Vec<u32>>,
    /// When the main thread lost the core, while it waits (for `explain`).
    pub(super) main_waiting_since: SimTime,
    /// Whether its return is scheduled.
    pub(super) main_resume_scheduled: bool,

    /// Queues, thread requests and timers (shared with the native pool).
    pub(super) pool: PoolState<Work, TimerAction>,
    /// `Enumerable.Range` is a list: `Parallel.ForEach` over it partitions as `For`.
    pub(super) range_is_list: bool,
    /// The first call's cost of each parallel API (`[library.first_call_ms]`).
    first_call_costs: crate::policy::config::FirstCallCosts,
    /// The APIs called so far in the run.
    first_calls_made: Vec<crate::scenario::Submit>,

    pub(super) continuations: Vec<Option<Vec<Frame>>>,
    /// The engine's state of the items alive.
    pub(super) items: ItemStates,

    pub(super) groups: Vec<GroupState>,
    pub(super) loops: Vec<Loop>,
    /// The `fan_out` calls; a slot is free again (`free_fan_outs`) once
    /// its last item finished.
    pub(super) fan_outs: Vec<FanOutCall>,
    pub(super) free_fan_outs: Vec<u32>,
    pub(super) replicas: Vec<Replica>,
    pub(super) partitions: Vec<Partition>,
    pub(super) async_workers: Vec<AsyncWorker>,
    pub(super) pairs: Vec<Pair<Work>>,
    /// Waiters: continuations.
    pub(super) semaphores: Vec<Semaphore<u32>>,

    pub(super) items_total: u64,
    pub(super) items_finished: u64,
    /// The latest end of an item so far.
    pub(super) last_finish: SimTime,
    pub(super) probes: Vec<ProbeState>,

    pub(super) goal: Option<u32>,
    pub(super) trace: Trace,
}

impl<'a, S: TraceSink> World<'a, S> {
    pub(super) fn new(
        scenario: &'a Scenario,
        config: &PolicyConfig,
        max_threads: u32,
        sink: &'a mut S,
    ) -> Self {
        let cores = scenario.machine.cores;
        let throttles = Throttles::new(scenario, config);
        let groups = scenario
            .groups
            .iter()
            .zip(&throttles.of_group)
            .enumerate()
            .map(|(i, (g, &(pair, semaphore)))| {
                // `After`: scheduled when the earlier group finishes.
                let start = arrivals::start(scenario, i).unwrap_or(SimDuration(u64::MAX));
                let arrivals = g.arrival.spacing().is_random().then(|| {
                    rng::stream(scenario.workload_seed(), &format!("arrivals/{}", g.name))
                });
                GroupState {
                    submitted: 0,
                    finished: 0,
                    next_at: SimTime::ZERO + start,
                    arrivals,
                    pair,
                    semaphore,
                    call: None,
                }
            })
            .collect();
        let items_total = scenario.item_count();
        let reserve = items_total.min(1 << 24) as usize;
        World {
            scenario,
            sink,
            now: SimTime::ZERO,
            events: EventQueue::default(),
            cpu_batch: false,
            cpu: Cpu::new(cores, config.threads.spin_cpu_percent),
            cpu_generation: 0,
            cpu_finished: Vec::new(),
            threads: Vec::new(),
            main_thread: None,
            main_calls: VecDeque::new(),
            tally: ThreadCounts::new(max_threads),
            start_latency: config.threads.start_latency.clone(),
            start_rng: (!config.threads.start_latency.is_fixed())
                .then(|| rng::stream(scenario.seed, "thread-start")),
            first_start_latency: Some(
                config
                    .threads
                    .first_start_latency
                    .draw(&mut rng::stream(scenario.seed, "first-thread-start")),
            ),
            pool_ready_at: SimTime::ZERO,
            wake_latency: config.threads.wake_latency,
            creation_wait: config
                .mono
                .as_ref()
                .map_or(SimDuration::ZERO, |m| m.creation_wait),
            creation_owed: SimDuration::ZERO,
            dedicated_latency: config.threads.dedicated_start_latency,
            idle_timeout: config.threads.idle_timeout,
            cpu_second: {
                let spread = &config.threads.cpu_second;
                let second = if spread.is_fixed() {
                    spread.min()
                } else {
                    spread.draw(&mut rng::stream(scenario.seed, "cpu-rate"))
                };
                (second != SimDuration::from_ms(1000)).then(|| second.as_nanos())
            },
            sleep_overshoot: config.threads.sleep_overshoot.clone(),
            sleep_rng: (!config.threads.sleep_overshoot.is_fixed())
                .then(|| rng::stream(scenario.seed, "sleep-overshoot")),
            timer_grid: config.timers.tick_count.map(|step| {
                let step = step.as_nanos().max(1);
                let phase = crate::policy::gate::tick_count_phase(
                    scenario.seed,
                    crate::policy::gate::GATE_STREAM,
                    step,
                );
                (step, phase)
            }),
            timer_rng: (!config.threads.sleep_overshoot.is_fixed())
                .then(|| rng::stream(scenario.seed, "timer-overshoot")),
            wake_preemption: Some(config.threads.wake_preemption.clone())
                .filter(|w| *w != crate::policy::config::Spread::fixed(SimDuration::ZERO)),
            preempt_rng: (!config.threads.wake_preemption.is_fixed())
                .then(|| rng::stream(scenario.seed, "wake-preempt")),
            main_yields: config.threads.main_yields_to_first_worker && cores == 1,
            main_waiting: None,
            main_waiting_since: SimTime::ZERO,
            main_resume_scheduled: false,
            pool: PoolState::new(config, scenario.machine.processors(), scenario.seed),
            range_is_list: config.library.range_is_list,
            first_call_costs: config.library.first_call.clone(),
            first_calls_made: Vec::new(),
            continuations: Vec::new(),
            items: if S::ITEM_RECORDS {
                ItemStates::new(S::KEEP_ITEMS, reserve)
            } else {
                ItemStates::unrecorded()
            },
            groups,
            loops: Vec::new(),
            fan_outs: Vec::new(),
            free_fan_outs: Vec::new(),
            replicas: Vec::new(),
            partitions: Vec::new(),
            async_workers: Vec::new(),
            pairs: throttles.pairs,
            semaphores: throttles.semaphores,
            items_total,
            items_finished: 0,
            last_finish: SimTime::ZERO,
            probes: scenario
                .probes
                .iter()
                .map(|_| ProbeState { in_flight: None })
                .collect(),
            goal: None,
            trace: crate::pool::state::new_trace(scenario, config, 0),
        }
    }

    /// Schedules `kind` at `at` (now if earlier) in the heap (an arrival in
    /// its slot when free: [`EventQueue::schedule`]).
    pub(super) fn schedule(&mut self, at: SimTime, kind: EventKind) {
        self.events.schedule(at.max(self.now), kind);
    }

    /// Schedules `kind` at `at` (now if earlier) in `fifo`, or in the heap
    /// if it is due before the FIFO's last event.
    #[inline]
    pub(super) fn schedule_in(&mut self, fifo: Fifo, at: SimTime, kind: EventKind) {
        self.events.schedule_in(fifo, at.max(self.now), kind);
    }

    /// The time a `cpu_ms` step of `d` takes on a core of its own in this
    /// run (`cpu_second_ms`).
    pub(super) fn cpu_work(&self, d: SimDuration) -> SimDuration {
        match self.cpu_second {
            None => d,
            Some(second) => SimDuration::from_nanos(
                (u128::from(d.as_nanos()) * u128::from(second) / 1_000_000_000) as u64,
            ),
        }
    }

    /// Thread `t` starts computing `d` of CPU (at the run's CPU rate),
    /// for `item` or for the library's own work.
    pub(super) fn start_cpu(&mut self, t: ThreadId, d: SimDuration, item: Option<ItemId>) {
        self.cpu.advance(self.now);
        let work = self.cpu_work(d);
        self.cpu.add_job(t, work);
        self.reschedule_cpu();
        self.th(t).activity = Activity::Cpu;
        self.phase(t, Phase::Cpu, item);
    }

    /// The CPU the caller of `submit`'s API computes before its first body
    /// runs: the API's measured first-call cost (the JIT of the library's
    /// code for it), drawn from the stream `first-call/NAME`, on its first
    /// call in the run; `None` on later calls and for an API without one.
    pub(super) fn first_call_cost(
        &mut self,
        submit: crate::scenario::Submit,
    ) -> Option<SimDuration> {
        if self.first_calls_made.contains(&submit) {
            return None;
        }
        self.first_calls_made.push(submit);
        let cost = self.first_call_costs.of(submit)?;
        let stream = format!("first-call/{}", submit.name());
        let d = cost.draw(&mut rng::stream(self.scenario.seed, &stream));
        (d > SimDuration::ZERO).then_some(d)
    }

    /// When a `Thread.Sleep(d)` started now returns: `d` late by the
    /// policy's measured overshoot (drawn from the `sleep-overshoot` stream).
    pub(super) fn sleep_end(&mut self, d: SimDuration) -> SimTime {
        self.now + d + self.sleep_overshoot.draw_from(self.sleep_rng.as_mut())
    }

    /// When a timer of `d` created now is due: `d` after now, or, on a
    /// stepped `TickCount` (`timers.tick_count`), at the first step at
    /// least `d` after the step now reads.
    pub(super) fn timer_due(&self, d: SimDuration) -> SimTime {
        let Some((step, phase)) = self.timer_grid else {
            return self.now + d;
        };
        let read = (self.now.as_nanos() + phase) / step * step;
        let due = (read + d.as_nanos()).div_ceil(step) * step;
        SimTime(due.saturating_sub(phase)).max(self.now)
    }

    /// When the timer thread, waiting for `due`, wakes: late by a draw of
    /// the policy's sleep overshoot (a timed wait like `Thread.Sleep`), from
    /// the `timer-overshoot` stream.
    pub(super) fn timer_wake(&mut self, due: SimTime) -> SimTime {
        due + self.sleep_overshoot.draw_from(self.timer_rng.as_mut())
    }

    pub(super) fn record(&mut self, event: TraceEvent) {
        self.sink.record(self.now, event);
    }

    pub(super) fn phase(&mut self, thread: ThreadId, phase: Phase, item: Option<ItemId>) {
        if !S::ENABLED {
            return;
        }
        // A thread's phase is of an item alive: its group is in the window.
        let group = item.map(|i| self.items.group(i));
        self.sink.record(
            self.now,
            TraceEvent::ThreadPhase {
                thread,
                phase,
                item,
                group,
            },
        );
    }

    pub(super) fn th(&mut self, t: ThreadId) -> &mut PoolThread {
        &mut self.threads[t as usize]
    }

    pub(super) fn is_pool(&self, t: ThreadId) -> bool {
        self.threads[t as usize].kind == ThreadKind::Pool
    }

    pub(super) fn sample_counts(&mut self) {
        let sample = CountSample {
            at: self.now,
            threads: self.tally.alive(),
            goal: self.goal,
        };
        crate::pool::state::sample_counts(&mut self.trace.counts, sample);
    }

    /// Whether no thread can ever make progress again: the pool is at its
    /// maximum with no idle, starting or retired thread, nothing runs on a
    /// core or sleeps, no more work will arrive, and every thread is blocked
    /// in a task wait or a join — waits that only pool work can end.
    pub(super) fn deadlocked(&self) -> bool {
        if self.unfinished() == 0
            || self.tally.existing + (self.tally.retired.len() as u32) < self.tally.max_threads
            || !self.tally.idle.is_empty()
            || !self.tally.retired.is_empty()
            || self.tally.starting > 0
            || self.cpu.runnable() > 0
            || self.tally.blocked_sleep > 0
        {
            return false;
        }
        // Work the main thread will still submit (a pool-origin group's
        // submitter is pool work: queued, it waits like the rest).
        let arrivals_pending = self
            .scenario
            .groups
            .iter()
            .zip(&self.groups)
            .any(|(g, st)| {
                let due_later = if g.submit.one_call() {
                    st.call.is_none()
                } else {
                    st.submitted < g.count
                };
                // The main thread's submissions, and a timer's firings to come.
                // (A fan-out group's items come from steps, not arrivals.)
                !matches!(g.from, Origin::Pool | Origin::FanOut { .. })
                    && due_later
                    && !matches!(g.arrival, Arrival::After { .. })
            });
        if arrivals_pending {
            return false;
        }
        self.threads.iter().all(|t| match t.state {
            ThreadState::Exited => true,
            ThreadState::Active => match t.activity {
                Activity::Wait | Activity::Join(_) => true,
                // A main thread with nothing left to run is done, not stuck.
                Activity::None => t.kind == ThreadKind::Main && t.frames.is_empty(),
                _ => false,
            },
            _ => false,
        })
    }

    pub(super) fn blocked_threads(&self) -> Vec<(ThreadId, Option<ItemId>)> {
        self.threads
            .iter()
            .enumerate()
            .filter(|(_, t)| {
                t.state == ThreadState::Active
                    && matches!(t.activity, Activity::Wait | Activity::Join(_))
            })
            .map(|(i, t)| {
                let item = match t.frames.last() {
                    Some(Frame::Item(item)) => Some(*item),
                    _ => None,
                };
                (i as ThreadId, item)
            })
            .collect()
    }

    pub(super) fn unfinished(&self) -> u64 {
        self.items_total - self.items_finished
    }

    pub(super) fn all_done(&self) -> bool {
        self.items_finished == self.items_total && self.probes.iter().all(|p| p.in_flight.is_none())
    }

    /// A new item of group `g`, queued now.
    pub(super) fn new_item(&mut self, g: u32, owner: Owner) -> ItemId {
        self.items.push(g, owner, self.now)
    }

    /// `item` ended now: the records that leave the window go out.
    pub(super) fn item_ended(&mut self, item: ItemId) {
        self.last_finish = self.last_finish.max(self.now);
        self.items.finish(item, self.now);
        self.emit_items(false);
    }

    /// Lets the items that ended leave the window (every one, with `all`),
    /// handing their records to the sink in submission order (kept for the
    /// trace, they stay: [`ItemStates::into_records`]).
    pub(super) fn emit_items(&mut self, all: bool) {
        while let Some(record) = self.items.pop_ended(all) {
            if let Some(record) = record {
                self.sink.item(&record);
            }
        }
    }

    // ---- queues -------------------------------------------------------

    pub(super) fn queue_changed(&mut self) {
        self.record(TraceEvent::QueueLength {
            queued: self.pool.queued(),
        });
    }

    pub(super) fn enqueue_global(&mut self, work: Work) {
        self.pool.enqueue_global(work);
        self.queue_changed();
    }

    pub(super) fn enqueue_local(&mut self, thread: ThreadId, work: Work) {
        self.pool.enqueue_local(thread, work);
        self.queue_changed();
    }

    /// Queues from `from`: a pool thread's local queue, else the global queue.
    pub(super) fn enqueue_from(&mut self, from: Option<ThreadId>, work: Work) {
        if S::ENABLED
            && let Work::Continuation(cont) = work
        {
            self.note_semaphore_grant(from, cont);
        }
        match from {
            Some(t) if self.is_pool(t) => self.enqueue_local(t, work),
            _ => self.enqueue_global(work),
        }
    }

    /// A continuation of an item that holds its group's semaphore but has
    /// not started is a waiter the semaphore was just released to
    /// (`SemaphoreSlim.Release()` in the item `from` runs): a hand-off.
    fn note_semaphore_grant(&mut self, from: Option<ThreadId>, cont: u32) {
        let Some(&Frame::Item(to)) = self.continuations[cont as usize]
            .as_ref()
            .and_then(|frames| frames.last())
        else {
            return;
        };
        let state = self.items.get(to);
        if !state.acquired || state.started {
            return;
        }
        let Some(sem) = self.groups[state.group as usize].semaphore else {
            return;
        };
        let from_item = from.and_then(|t| match self.threads[t as usize].frames.last() {
            Some(&Frame::Item(item)) => Some(item),
            _ => None,
        });
        let semaphore = &self.semaphores[sem as usize];
        let decision = Decision::ThrottleHandOff {
            kind: ThrottleKind::Semaphore,
            from: from_item,
            to,
            limit: semaphore.limit(),
            waiting: semaphore.waiting() as u32,
        };
        self.record(TraceEvent::Decision(decision));
    }

    /// Removes `work` from `thread`'s local queue if it is there (the
    /// inlining of `Task.Wait` on a task the waiter queued itself).
    pub(super) fn take_from_local(&mut self, thread: ThreadId, work: Work) -> bool {
        let taken = self.pool.take_from_local(thread, work);
        if taken {
            self.queue_changed();
        }
        taken
    }

    /// The CPU jobs changed: the one check is now for the new earliest
    /// completion (if any).
    pub(super) fn reschedule_cpu(&mut self) {
        self.cpu_generation += 1;
        if self.cpu_batch {
            // The check is computed when the batch ends; the sequence
            // numbers go on as if it were computed now, so every other
            // event keeps its key.
            if self.cpu.has_jobs() {
                self.events.skip_sequence();
            }
            self.events.clear_cpu_check();
            return;
        }
        let at = self.cpu.next_completion().map(|at| at.max(self.now));
        self.events.set_cpu_check(at, self.cpu_generation);
    }

    pub(super) fn store_continuation(&mut self, frames: Vec<Frame>) -> u32 {
        let id = self.continuations.len() as u32;
        self.continuations.push(Some(frames));
        id
    }
}

/// Whether `waiter`'s item goes on with CPU work (`cpu_ms`, `busy_ms`) once
/// released from its current step.
pub(super) fn next_step_is_cpu<S: TraceSink>(world: &World<'_, S>, waiter: ThreadId) -> bool {
    let Some(&Frame::Item(item)) = world.threads[waiter as usize].frames.last() else {
        return false;
    };
    let state = world.items.get(item);
    let body = &world.scenario.groups[state.group as usize].body;
    matches!(
        body.get(state.step as usize + 1),
        Some(Step::Cpu(_) | Step::Busy(_))
    )
}
