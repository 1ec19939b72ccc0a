//! The discrete-event engine: virtual clock, event heap, cores, pool mechanics.
//!
//! A pure library: no file I/O, no wall clock, no printing. It runs a
//! validated [`Scenario`] against one [`Policy`] and returns the recorded
//! [`Trace`]. Events at the same instant run in the order they were
//! scheduled (the heap is keyed by time, then insertion sequence), so a run
//! is a function of the scenario and its seed alone.
//!
//! Mechanics shared by every CLR pool live here (MODELS.md, "Vocabulary"):
//! - a global FIFO queue and one local queue per pool thread (LIFO for its
//!   owner, stolen FIFO by others); `Task.Run` from a pool thread and
//!   continuations of `await` go local, everything else global; a worker
//!   dequeues own local → global → steal from another thread;
//! - the managed work queue's thread requests: queueing work requests a
//!   thread, a worker takes a request to start a dispatch loop, and every
//!   dequeue that leaves work behind requests one more ("chain reaction"),
//!   with at most `cores × max_outstanding_requests_per_core` outstanding;
//! - a dispatch quantum, after which the worker returns to the pool's
//!   bookkeeping (and asks for a thread to carry on);
//! - timers fired by pool work: the timer thread only notices expiry and
//!   queues the timer queue as one work item at the tail of the global
//!   queue; the worker that runs it queues every due callback but the first
//!   as its own global work item and runs the first inline. A thread in
//!   `Task.Delay(d).Wait()` is released only when its callback has run.
//!
//! What differs between pools (when a thread is added, the goal) is asked of
//! the [`Policy`].

pub mod cpu;
pub mod rng;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use crate::policy::{self, BlockKind, Policy, PolicyConfig, PoolControl, PoolCounts};
use crate::scenario::{Arrival, Origin, Scenario, Step, Submit};
use crate::time::{SimDuration, SimTime};
use crate::trace::{
    CountSample, ItemId, ItemRecord, Phase, ProbeRecord, ThreadId, ThreadReason, ThreadRecord,
    Trace, TraceEvent, TraceSink,
};
use cpu::Cpu;

/// Limits on one run.
#[derive(Clone, Debug)]
pub struct SimOptions {
    /// Simulated-time limit; overrides the scenario's `until_ms`.
    pub until: Option<SimDuration>,
    /// Maximum number of events to process.
    pub max_events: u64,
}

/// Simulated-time limit when neither the scenario nor the caller sets one.
pub const DEFAULT_UNTIL: SimDuration = SimDuration::from_ms(7 * 24 * 3600 * 1000);
/// Event budget when the caller does not set one.
pub const DEFAULT_MAX_EVENTS: u64 = 2_000_000_000;

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            until: None,
            max_events: DEFAULT_MAX_EVENTS,
        }
    }
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every item finished.
    Completed,
    /// The simulated clock reached the limit with work unfinished.
    TimeLimit { at: SimTime, unfinished: u64 },
    /// The event budget ran out with work unfinished.
    EventBudget { events: u64, unfinished: u64 },
    /// Nothing left to happen, yet items are unfinished.
    Stalled { at: SimTime, unfinished: u64 },
}

impl Outcome {
    pub fn is_completed(&self) -> bool {
        matches!(self, Outcome::Completed)
    }
}

/// The result of one simulated run.
#[derive(Clone, Debug)]
pub struct RunResult {
    pub trace: Trace,
    pub outcome: Outcome,
    /// Events processed.
    pub events: u64,
}

/// Runs `scenario` under the policy `config`, sending detail events to `sink`.
pub fn simulate<S: TraceSink>(
    scenario: &Scenario,
    config: &PolicyConfig,
    sink: &mut S,
    options: &SimOptions,
) -> RunResult {
    let policy = policy::build(config, scenario);
    let mut engine = Engine {
        core: Core::new(scenario, config, policy.max_threads(), sink),
        policy,
    };
    engine.run(options)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum EventKind {
    /// The main thread submits the next items of a group.
    Arrival(u32),
    /// A created or released thread is ready for its first dequeue.
    ThreadReady(ThreadId, u64),
    /// A thread's timed activity (sleep, spin, release from a wait,
    /// submitter pause) ends.
    StepDone(ThreadId, u64),
    /// The earliest CPU job may have finished.
    CpuCheck(u64),
    /// The timer thread notices an expired timer.
    TimerThread(u64),
    /// The main thread wakes from its probe sleep.
    Probe(u32),
    /// A wake-up the policy asked for.
    PolicyWake(u64),
    /// An idle thread's wait for work times out.
    IdleTimeout(ThreadId, u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct EventKey {
    at: SimTime,
    seq: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Work {
    /// Start or resume a user item at its current step.
    Item(ItemId),
    /// The timer queue: fire every due timer.
    TimerQueue,
    /// One due timer's callback.
    TimerCallback(u32),
    /// A responsiveness probe (`sw.Stop()`) of the given `[[probe]]` loop.
    Probe(u32),
    /// A pool-thread loop submitting a group's items.
    Submitter(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ThreadState {
    /// Created or released; first dequeue pending.
    Starting,
    /// In its dispatch loop or inside a work item.
    Active,
    /// Waiting for work.
    Idle,
    /// Stopped working because the pool had more threads than its goal;
    /// not counted as active, can be brought back before it times out.
    Retired,
    Exited,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Activity {
    None,
    Cpu,
    Spin,
    Sleep,
    Wait,
    SubmitterPause,
}

#[derive(Debug)]
struct PoolThread {
    state: ThreadState,
    activity: Activity,
    /// Invalidates events scheduled for an earlier state.
    generation: u64,
    local: VecDeque<Work>,
    current: Option<Work>,
    dispatch_start: SimTime,
}

#[derive(Clone, Copy, Debug)]
enum TimerAction {
    /// Release a thread blocked in `Task.Delay(d).Wait()`.
    ReleaseWaiter(ThreadId),
    /// Run an item's continuation after `await Task.Delay(d)`.
    Continue(ItemId),
}

#[derive(Debug)]
struct GroupState {
    submitted: u64,
    next_at: SimTime,
    arrivals: Option<ChaCha8Rng>,
}

#[derive(Debug)]
struct ProbeState {
    /// The probe record of the probe in flight, if any.
    in_flight: Option<u32>,
}

struct Core<'a, S: TraceSink> {
    scenario: &'a Scenario,
    sink: &'a mut S,
    now: SimTime,
    seq: u64,
    events: BinaryHeap<Reverse<(EventKey, EventKind)>>,

    cpu: Cpu,
    cpu_generation: u64,

    threads: Vec<PoolThread>,
    idle: Vec<ThreadId>,
    retired: Vec<ThreadId>,
    /// Active threads (starting, working or idle): CoreCLR's `NumActive`.
    existing: u32,
    blocked_sleep: u32,
    blocked_wait: u32,
    max_threads: u32,
    start_latency: SimDuration,
    wake_latency: SimDuration,
    idle_timeout: SimDuration,
    quantum: SimDuration,

    global: VecDeque<Work>,
    queued: u64,
    queued_local: u64,
    pending_requests: u32,
    request_cap: u32,
    steal: ChaCha8Rng,

    timers: Vec<TimerAction>,
    timer_heap: BinaryHeap<Reverse<(SimTime, u32)>>,
    timer_queue_scheduled: bool,
    timer_thread_generation: u64,

    groups: Vec<GroupState>,
    item_step: Vec<u32>,
    items_total: u64,
    items_finished: u64,
    probes: Vec<ProbeState>,

    goal: Option<u32>,
    trace: Trace,
}

struct Engine<'a, S: TraceSink> {
    core: Core<'a, S>,
    policy: Box<dyn Policy>,
}

/// What a thread does next in its worker loop.
enum Next {
    /// Look for a thread request to take (the native worker loop).
    Seek,
    /// Dequeue the next work item (the managed dispatch loop).
    Dispatch,
    /// A work item just completed.
    Completed,
}

/// Whether a work item ran to its end or is waiting on an event.
enum Progress {
    Done,
    Pending,
}

impl<'a, S: TraceSink> Core<'a, S> {
    fn new(
        scenario: &'a Scenario,
        config: &PolicyConfig,
        max_threads: u32,
        sink: &'a mut S,
    ) -> Self {
        let groups = scenario
            .groups
            .iter()
            .map(|g| {
                let (start, arrivals) = match &g.arrival {
                    Arrival::At(at) => (*at, None),
                    Arrival::Every { start, .. } => (*start, None),
                    Arrival::Poisson { start, .. } => (
                        *start,
                        Some(rng::stream(scenario.seed, &format!("arrivals/{}", g.name))),
                    ),
                };
                GroupState {
                    submitted: 0,
                    next_at: SimTime::ZERO + start,
                    arrivals,
                }
            })
            .collect();
        let items_total = scenario.item_count();
        Core {
            scenario,
            sink,
            now: SimTime::ZERO,
            seq: 0,
            events: BinaryHeap::new(),
            cpu: Cpu::new(scenario.machine.cores),
            cpu_generation: 0,
            threads: Vec::new(),
            idle: Vec::new(),
            retired: Vec::new(),
            existing: 0,
            blocked_sleep: 0,
            blocked_wait: 0,
            max_threads,
            start_latency: config.threads.start_latency,
            wake_latency: config.threads.wake_latency,
            idle_timeout: config.threads.idle_timeout,
            quantum: config.dispatch.quantum,
            global: VecDeque::new(),
            queued: 0,
            queued_local: 0,
            pending_requests: 0,
            request_cap: scenario
                .machine
                .cores
                .saturating_mul(config.dispatch.max_outstanding_requests_per_core)
                .max(1),
            steal: rng::stream(scenario.seed, "steal"),
            timers: Vec::new(),
            timer_heap: BinaryHeap::new(),
            timer_queue_scheduled: false,
            timer_thread_generation: 0,
            groups,
            item_step: Vec::with_capacity(items_total.min(1 << 24) as usize),
            items_total,
            items_finished: 0,
            probes: scenario
                .probes
                .iter()
                .map(|_| ProbeState { in_flight: None })
                .collect(),
            goal: None,
            trace: Trace {
                scenario: scenario.name.clone(),
                policy: config.name.clone(),
                seed: scenario.seed,
                cores: scenario.machine.cores,
                groups: scenario.groups.iter().map(|g| g.name.clone()).collect(),
                items: Vec::with_capacity(items_total.min(1 << 24) as usize),
                threads: Vec::new(),
                probes: Vec::new(),
                counts: vec![CountSample {
                    at: SimTime::ZERO,
                    threads: 0,
                    goal: None,
                }],
                cpu_busy_ns: None,
                end: SimTime::ZERO,
            },
        }
    }

    fn schedule(&mut self, at: SimTime, kind: EventKind) {
        let at = at.max(self.now);
        self.seq += 1;
        self.events
            .push(Reverse((EventKey { at, seq: self.seq }, kind)));
    }

    fn record(&mut self, event: TraceEvent) {
        self.sink.record(self.now, event);
    }

    fn phase(&mut self, thread: ThreadId, phase: Phase, item: Option<ItemId>) {
        self.sink.record(
            self.now,
            TraceEvent::ThreadPhase {
                thread,
                phase,
                item,
            },
        );
    }

    fn sample_counts(&mut self) {
        let sample = CountSample {
            at: self.now,
            threads: self.existing,
            goal: self.goal,
        };
        let counts = &mut self.trace.counts;
        match counts.last_mut() {
            Some(last) if last.threads == sample.threads && last.goal == sample.goal => {}
            Some(last) if last.at == sample.at => *last = sample,
            _ => counts.push(sample),
        }
    }

    fn working(&self) -> u32 {
        self.existing - self.idle.len() as u32
    }

    fn unfinished(&self) -> u64 {
        self.items_total - self.items_finished
    }

    fn all_done(&self) -> bool {
        self.items_finished == self.items_total && self.probes.iter().all(|p| p.in_flight.is_none())
    }

    // ---- queues -------------------------------------------------------

    fn enqueue_global(&mut self, work: Work) {
        self.global.push_back(work);
        self.queued += 1;
        self.record(TraceEvent::QueueLength {
            queued: self.queued,
        });
    }

    fn enqueue_local(&mut self, thread: ThreadId, work: Work) {
        self.threads[thread as usize].local.push_back(work);
        self.queued += 1;
        self.queued_local += 1;
        self.record(TraceEvent::QueueLength {
            queued: self.queued,
        });
    }

    /// Own local queue (LIFO), then the global queue (FIFO), then steal
    /// (FIFO end) from another thread's local queue, starting at a random one.
    fn dequeue(&mut self, thread: ThreadId) -> Option<Work> {
        let t = thread as usize;
        let work = if let Some(w) = self.threads[t].local.pop_back() {
            self.queued_local -= 1;
            Some(w)
        } else if let Some(w) = self.global.pop_front() {
            Some(w)
        } else if self.queued_local > 0 {
            let n = self.threads.len();
            let start = self.steal.random_range(0..n);
            let victim = (0..n)
                .map(|k| (start + k) % n)
                .find(|&v| v != t && !self.threads[v].local.is_empty());
            let stolen = victim.and_then(|v| self.threads[v].local.pop_front());
            if stolen.is_some() {
                self.queued_local -= 1;
            }
            stolen
        } else {
            None
        };
        if work.is_some() {
            self.queued -= 1;
            self.record(TraceEvent::QueueLength {
                queued: self.queued,
            });
        }
        work
    }

    // ---- threads ------------------------------------------------------

    fn create_thread(&mut self, reason: ThreadReason) -> ThreadId {
        let id = self.threads.len() as ThreadId;
        self.threads.push(PoolThread {
            state: ThreadState::Starting,
            activity: Activity::None,
            generation: 0,
            local: VecDeque::new(),
            current: None,
            dispatch_start: SimTime::ZERO,
        });
        self.existing += 1;
        self.trace.threads.push(ThreadRecord {
            thread: id,
            created: self.now,
            reason,
            exited: None,
        });
        self.record(TraceEvent::ThreadCreated { thread: id, reason });
        self.phase(id, Phase::Starting, None);
        self.sample_counts();
        self.schedule(self.now + self.start_latency, EventKind::ThreadReady(id, 0));
        id
    }

    fn make_idle(&mut self, thread: ThreadId) {
        let t = &mut self.threads[thread as usize];
        t.state = ThreadState::Idle;
        t.activity = Activity::None;
        t.current = None;
        t.generation += 1;
        let generation = t.generation;
        self.idle.push(thread);
        self.phase(thread, Phase::Idle, None);
        self.schedule(
            self.now + self.idle_timeout,
            EventKind::IdleTimeout(thread, generation),
        );
    }

    fn release_idle(&mut self) -> bool {
        let Some(thread) = self.idle.pop() else {
            return false;
        };
        let t = &mut self.threads[thread as usize];
        t.state = ThreadState::Starting;
        t.generation += 1;
        let generation = t.generation;
        self.phase(thread, Phase::Starting, None);
        self.schedule(
            self.now + self.wake_latency,
            EventKind::ThreadReady(thread, generation),
        );
        true
    }

    /// Retires a working thread (it stops counting as active) until it is
    /// brought back or its wait times out.
    fn retire(&mut self, thread: ThreadId) {
        let t = &mut self.threads[thread as usize];
        t.state = ThreadState::Retired;
        t.activity = Activity::None;
        t.current = None;
        t.generation += 1;
        let generation = t.generation;
        self.retired.push(thread);
        self.existing -= 1;
        self.phase(thread, Phase::Idle, None);
        self.sample_counts();
        self.schedule(
            self.now + self.idle_timeout,
            EventKind::IdleTimeout(thread, generation),
        );
    }

    fn unretire(&mut self) -> bool {
        let Some(thread) = self.retired.pop() else {
            return false;
        };
        let t = &mut self.threads[thread as usize];
        t.state = ThreadState::Starting;
        t.generation += 1;
        let generation = t.generation;
        self.existing += 1;
        self.phase(thread, Phase::Starting, None);
        self.sample_counts();
        self.schedule(
            self.now + self.wake_latency,
            EventKind::ThreadReady(thread, generation),
        );
        true
    }

    fn exit_thread(&mut self, thread: ThreadId) {
        let state = self.threads[thread as usize].state;
        let list = if state == ThreadState::Retired {
            &mut self.retired
        } else {
            &mut self.idle
        };
        if let Some(pos) = list.iter().position(|&t| t == thread) {
            list.remove(pos);
        }
        if state != ThreadState::Retired {
            self.existing -= 1;
        }
        let t = &mut self.threads[thread as usize];
        t.state = ThreadState::Exited;
        t.generation += 1;
        self.trace.threads[thread as usize].exited = Some(self.now);
        self.record(TraceEvent::ThreadExited { thread });
        self.sample_counts();
    }

    fn reschedule_cpu(&mut self) {
        self.cpu_generation += 1;
        if let Some(at) = self.cpu.next_completion() {
            self.schedule(at, EventKind::CpuCheck(self.cpu_generation));
        }
    }

    // ---- timers -------------------------------------------------------

    fn add_timer(&mut self, due: SimTime, action: TimerAction) {
        let id = self.timers.len() as u32;
        self.timers.push(action);
        let earliest = self.timer_heap.peek().map(|Reverse((at, _))| *at);
        self.timer_heap.push(Reverse((due, id)));
        if !self.timer_queue_scheduled && earliest.is_none_or(|e| due < e) {
            self.arm_timer_thread();
        }
    }

    fn arm_timer_thread(&mut self) {
        self.timer_thread_generation += 1;
        if let Some(Reverse((due, _))) = self.timer_heap.peek().copied() {
            self.schedule(due, EventKind::TimerThread(self.timer_thread_generation));
        }
    }
}

impl<S: TraceSink> PoolControl for Core<'_, S> {
    fn now(&self) -> SimTime {
        self.now
    }
    fn cores(&self) -> u32 {
        self.scenario.machine.cores
    }
    fn counts(&self) -> PoolCounts {
        PoolCounts {
            existing: self.existing,
            working: self.working(),
            idle: self.idle.len() as u32,
            blocked_sleep: self.blocked_sleep,
            blocked_wait: self.blocked_wait,
            pending_requests: self.pending_requests,
            queued: self.queued,
        }
    }
    fn cpu_busy_core_ns(&mut self) -> u128 {
        self.cpu.advance(self.now);
        self.cpu.busy_core_ns()
    }
    fn add_worker(&mut self, reason: ThreadReason) -> bool {
        if self.release_idle() || self.unretire() {
            return true;
        }
        if self.existing + self.retired.len() as u32 >= self.max_threads {
            return false;
        }
        self.create_thread(reason);
        true
    }
    fn wake_at(&mut self, at: SimTime, tag: u64) {
        self.schedule(at, EventKind::PolicyWake(tag));
    }
    fn goal_changed(&mut self, goal: u32, reason: &'static str) {
        self.goal = Some(goal);
        self.record(TraceEvent::GoalChanged { goal, reason });
        self.sample_counts();
    }
}

impl<S: TraceSink> Engine<'_, S> {
    fn run(&mut self, options: &SimOptions) -> RunResult {
        let until = options
            .until
            .or(self.core.scenario.until)
            .unwrap_or(DEFAULT_UNTIL);
        let limit = SimTime::ZERO + until;
        self.policy.start(&mut self.core);
        for g in 0..self.core.groups.len() {
            if self.core.scenario.groups[g].count > 0 {
                let at = self.core.groups[g].next_at;
                self.core.schedule(at, EventKind::Arrival(g as u32));
            }
        }
        for (p, probe) in self.core.scenario.probes.iter().enumerate() {
            self.core
                .schedule(SimTime::ZERO + probe.every, EventKind::Probe(p as u32));
        }
        let mut events = 0u64;
        let outcome = loop {
            if self.core.all_done() {
                break Outcome::Completed;
            }
            let Some(Reverse((key, kind))) = self.core.events.pop() else {
                break Outcome::Stalled {
                    at: self.core.now,
                    unfinished: self.core.unfinished(),
                };
            };
            if key.at > limit {
                self.core.now = limit;
                break Outcome::TimeLimit {
                    at: limit,
                    unfinished: self.core.unfinished(),
                };
            }
            if events >= options.max_events {
                break Outcome::EventBudget {
                    events,
                    unfinished: self.core.unfinished(),
                };
            }
            events += 1;
            self.core.now = key.at;
            self.handle(kind);
        };
        let core = &mut self.core;
        core.cpu.advance(core.now);
        core.trace.cpu_busy_ns = Some(core.cpu.busy_core_ns());
        core.trace.end = core
            .trace
            .items
            .iter()
            .map(|i| i.finished)
            .max()
            .unwrap_or(core.now);
        if !outcome.is_completed() {
            core.trace.end = core.now;
        }
        RunResult {
            trace: std::mem::replace(
                &mut core.trace,
                Trace {
                    scenario: String::new(),
                    policy: String::new(),
                    seed: 0,
                    cores: 0,
                    groups: Vec::new(),
                    items: Vec::new(),
                    threads: Vec::new(),
                    probes: Vec::new(),
                    counts: Vec::new(),
                    cpu_busy_ns: None,
                    end: SimTime::ZERO,
                },
            ),
            outcome,
            events,
        }
    }

    fn handle(&mut self, kind: EventKind) {
        match kind {
            EventKind::Arrival(g) => {
                if self.core.scenario.groups[g as usize].from == Origin::Pool {
                    // Task.Run(() => { for (...) submit; }) from the main thread.
                    self.core.enqueue_global(Work::Submitter(g));
                    self.request_thread();
                } else if let Some(next) = self.submit_due(g, None) {
                    self.core.schedule(next, EventKind::Arrival(g));
                }
            }
            EventKind::ThreadReady(t, generation) => {
                let th = &mut self.core.threads[t as usize];
                if th.generation != generation || th.state != ThreadState::Starting {
                    return;
                }
                th.state = ThreadState::Active;
                self.worker_loop(t, Next::Seek);
            }
            EventKind::StepDone(t, generation) => {
                if self.core.threads[t as usize].generation != generation {
                    return;
                }
                self.step_done(t);
            }
            EventKind::CpuCheck(generation) => {
                if generation != self.core.cpu_generation {
                    return;
                }
                self.core.cpu.advance(self.core.now);
                let mut finished = Vec::new();
                self.core.cpu.pop_finished(&mut finished);
                for t in finished {
                    self.core.threads[t as usize].activity = Activity::None;
                    self.resume_after_step(t);
                }
                self.core.reschedule_cpu();
            }
            EventKind::TimerThread(generation) => {
                if generation != self.core.timer_thread_generation
                    || self.core.timer_queue_scheduled
                {
                    return;
                }
                self.core.timer_queue_scheduled = true;
                self.core.enqueue_global(Work::TimerQueue);
                self.request_thread();
            }
            EventKind::Probe(p) => {
                if self.core.items_finished == self.core.items_total {
                    return;
                }
                let id = self.core.trace.probes.len() as u32;
                self.core.trace.probes.push(ProbeRecord {
                    queued: self.core.now,
                    started: SimTime::MAX,
                });
                self.core.probes[p as usize].in_flight = Some(id);
                self.core.record(TraceEvent::ProbeQueued { probe: id });
                self.core.enqueue_global(Work::Probe(p));
                self.request_thread();
            }
            EventKind::PolicyWake(tag) => self.policy.wake(&mut self.core, tag),
            EventKind::IdleTimeout(t, generation) => {
                let th = &self.core.threads[t as usize];
                if th.generation != generation {
                    return;
                }
                match th.state {
                    ThreadState::Retired => self.core.exit_thread(t),
                    ThreadState::Idle => {
                        if self.policy.idle_timed_out(&mut self.core, t) {
                            self.core.exit_thread(t);
                        } else {
                            self.core.idle.retain(|&i| i != t);
                            self.core.make_idle(t);
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// The managed queue's `EnsureThreadRequested`: one more outstanding
    /// request, up to the cap, and the policy decides whether it adds a worker.
    fn request_thread(&mut self) {
        if self.core.pending_requests < self.core.request_cap {
            self.core.pending_requests += 1;
            self.policy.thread_requested(&mut self.core);
        }
    }

    /// Submits every item of group `g` due by now, from `from` (a pool
    /// thread) or the main thread. Returns when the next item is due.
    fn submit_due(&mut self, g: u32, from: Option<ThreadId>) -> Option<SimTime> {
        let scenario = self.core.scenario;
        let group = &scenario.groups[g as usize];
        loop {
            let state = &self.core.groups[g as usize];
            if state.submitted >= group.count {
                return None;
            }
            if state.next_at > self.core.now {
                return Some(state.next_at);
            }
            let item = self.core.trace.items.len() as ItemId;
            self.core.trace.items.push(ItemRecord {
                item,
                group: g,
                thread: ThreadId::MAX,
                queued: self.core.now,
                started: SimTime::MAX,
                finished: SimTime::MAX,
            });
            self.core.item_step.push(0);
            let local = match (group.submit, from) {
                (Submit::TaskRun, Some(t)) => Some(t),
                _ => None,
            };
            self.core.record(TraceEvent::ItemQueued {
                item,
                local_of: local,
            });
            match local {
                Some(t) => self.core.enqueue_local(t, Work::Item(item)),
                None => self.core.enqueue_global(Work::Item(item)),
            }
            let state = &mut self.core.groups[g as usize];
            state.submitted += 1;
            match &group.arrival {
                Arrival::At(_) => {}
                Arrival::Every { every, .. } => state.next_at += *every,
                Arrival::Poisson { per_second, .. } => {
                    if let Some(rng) = state.arrivals.as_mut() {
                        let u: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
                        let gap_ns = (-u.ln() / per_second * 1e9).round();
                        state.next_at += SimDuration(gap_ns.min(1e18) as u64);
                    }
                }
            }
            self.request_thread();
        }
    }

    /// The worker loop of one thread, from `next` until it waits on an event.
    ///
    /// Mirrors CoreCLR 3.1: the native `WorkerThreadStart` loop takes a
    /// pending thread request (`Seek`); the managed `Dispatch` loop dequeues
    /// until the queue is empty or the quantum expires, asking for another
    /// thread on every successful dequeue and whenever it leaves for a reason
    /// other than an empty queue.
    fn worker_loop(&mut self, t: ThreadId, mut next: Next) {
        loop {
            next = match next {
                Next::Seek => {
                    self.policy.seeking_work(&mut self.core, t);
                    if self.core.pending_requests == 0 {
                        self.core.make_idle(t);
                        return;
                    }
                    self.core.pending_requests -= 1;
                    self.core.threads[t as usize].dispatch_start = self.core.now;
                    Next::Dispatch
                }
                Next::Dispatch => match self.core.dequeue(t) {
                    None => Next::Seek,
                    Some(work) => {
                        self.request_thread();
                        match self.run_work(t, work) {
                            Progress::Done => Next::Completed,
                            Progress::Pending => return,
                        }
                    }
                },
                Next::Completed => {
                    self.core.threads[t as usize].current = None;
                    let keep = self.policy.work_completed(&mut self.core, t);
                    if !keep {
                        self.request_thread();
                        self.core.retire(t);
                        return;
                    }
                    let start = self.core.threads[t as usize].dispatch_start;
                    if self.core.now.since(start) >= self.core.quantum {
                        self.request_thread();
                        Next::Seek
                    } else {
                        Next::Dispatch
                    }
                }
            };
        }
    }

    fn run_work(&mut self, t: ThreadId, work: Work) -> Progress {
        self.core.threads[t as usize].current = Some(work);
        match work {
            Work::Item(item) => {
                let rec = &mut self.core.trace.items[item as usize];
                if rec.started == SimTime::MAX {
                    rec.started = self.core.now;
                    rec.thread = t;
                    self.core
                        .record(TraceEvent::ItemStarted { item, thread: t });
                }
                self.run_steps(t, item)
            }
            Work::Submitter(g) => self.run_submitter(t, g),
            Work::TimerQueue => {
                self.core.phase(t, Phase::Internal, None);
                self.core.timer_queue_scheduled = false;
                let mut first = None;
                while let Some(Reverse((due, id))) = self.core.timer_heap.peek().copied() {
                    if due > self.core.now {
                        break;
                    }
                    self.core.timer_heap.pop();
                    if first.is_none() {
                        first = Some(id);
                    } else {
                        self.core.enqueue_global(Work::TimerCallback(id));
                        self.request_thread();
                    }
                }
                self.core.arm_timer_thread();
                match first {
                    Some(id) => self.run_timer(t, id),
                    None => Progress::Done,
                }
            }
            Work::TimerCallback(id) => self.run_timer(t, id),
            Work::Probe(p) => {
                self.core.phase(t, Phase::Internal, None);
                if let Some(id) = self.core.probes[p as usize].in_flight.take() {
                    self.core.trace.probes[id as usize].started = self.core.now;
                    self.core.record(TraceEvent::ProbeStarted { probe: id });
                }
                // The main thread's Wait() returns; it sleeps again.
                let every = self.core.scenario.probes[p as usize].every;
                self.core
                    .schedule(self.core.now + every, EventKind::Probe(p));
                Progress::Done
            }
        }
    }

    fn run_timer(&mut self, t: ThreadId, id: u32) -> Progress {
        match self.core.timers[id as usize] {
            TimerAction::ReleaseWaiter(waiter) => {
                let generation = self.core.threads[waiter as usize].generation;
                self.core
                    .schedule(self.core.now, EventKind::StepDone(waiter, generation));
                Progress::Done
            }
            TimerAction::Continue(item) => {
                self.core.threads[t as usize].current = Some(Work::Item(item));
                self.run_steps(t, item)
            }
        }
    }

    fn run_submitter(&mut self, t: ThreadId, g: u32) -> Progress {
        self.core.phase(t, Phase::Internal, None);
        match self.submit_due(g, Some(t)) {
            None => Progress::Done,
            Some(next) => {
                let th = &mut self.core.threads[t as usize];
                th.activity = Activity::SubmitterPause;
                let generation = th.generation;
                self.core.schedule(next, EventKind::StepDone(t, generation));
                Progress::Pending
            }
        }
    }

    /// Runs `item`'s steps on `t` from its current step until one takes time.
    fn run_steps(&mut self, t: ThreadId, item: ItemId) -> Progress {
        let scenario = self.core.scenario;
        let group = self.core.trace.items[item as usize].group;
        let body = &scenario.groups[group as usize].body;
        loop {
            let pc = self.core.item_step[item as usize] as usize;
            let Some(step) = body.get(pc) else {
                self.core.trace.items[item as usize].finished = self.core.now;
                self.core.items_finished += 1;
                self.core
                    .record(TraceEvent::ItemFinished { item, thread: t });
                return Progress::Done;
            };
            let now = self.core.now;
            let generation = self.core.threads[t as usize].generation;
            match *step {
                Step::Cpu(d) | Step::Spin(d) | Step::Sleep(d) | Step::Wait(d) | Step::Await(d)
                    if d == SimDuration::ZERO => {}
                Step::Cpu(d) => {
                    self.core.cpu.advance(now);
                    self.core.cpu.add_job(t, d);
                    self.core.reschedule_cpu();
                    self.core.threads[t as usize].activity = Activity::Cpu;
                    self.core.phase(t, Phase::Cpu, Some(item));
                    return Progress::Pending;
                }
                Step::Spin(d) => {
                    self.core.cpu.advance(now);
                    self.core.cpu.add_spinner();
                    self.core.reschedule_cpu();
                    self.core.threads[t as usize].activity = Activity::Spin;
                    self.core.phase(t, Phase::Spin, Some(item));
                    self.core
                        .schedule(now + d, EventKind::StepDone(t, generation));
                    return Progress::Pending;
                }
                Step::Sleep(d) => {
                    self.core.threads[t as usize].activity = Activity::Sleep;
                    self.core.blocked_sleep += 1;
                    self.core.phase(t, Phase::Sleep, Some(item));
                    self.core
                        .schedule(now + d, EventKind::StepDone(t, generation));
                    self.policy
                        .thread_blocked(&mut self.core, t, BlockKind::Sleep);
                    return Progress::Pending;
                }
                Step::Wait(d) => {
                    self.core.threads[t as usize].activity = Activity::Wait;
                    self.core.blocked_wait += 1;
                    self.core.phase(t, Phase::Wait, Some(item));
                    self.core.add_timer(now + d, TimerAction::ReleaseWaiter(t));
                    self.policy
                        .thread_blocked(&mut self.core, t, BlockKind::TaskWait);
                    return Progress::Pending;
                }
                Step::Await(d) => {
                    self.core.item_step[item as usize] += 1;
                    self.core.add_timer(now + d, TimerAction::Continue(item));
                    return Progress::Done;
                }
                Step::Yield => {
                    self.core.item_step[item as usize] += 1;
                    self.core.enqueue_global(Work::Item(item));
                    self.request_thread();
                    return Progress::Done;
                }
            }
            self.core.item_step[item as usize] += 1;
        }
    }

    /// A timed activity of `t` ended (sleep, spin, release from a wait,
    /// submitter pause).
    fn step_done(&mut self, t: ThreadId) {
        let activity = self.core.threads[t as usize].activity;
        self.core.threads[t as usize].activity = Activity::None;
        match activity {
            Activity::Spin => {
                self.core.cpu.advance(self.core.now);
                self.core.cpu.remove_spinner();
                self.core.reschedule_cpu();
            }
            Activity::Sleep => {
                self.core.blocked_sleep -= 1;
                self.policy
                    .thread_unblocked(&mut self.core, t, BlockKind::Sleep);
            }
            Activity::Wait => {
                self.core.blocked_wait -= 1;
                self.policy
                    .thread_unblocked(&mut self.core, t, BlockKind::TaskWait);
            }
            Activity::SubmitterPause => {
                let Some(Work::Submitter(g)) = self.core.threads[t as usize].current else {
                    return;
                };
                if let Progress::Done = self.run_submitter(t, g) {
                    self.worker_loop(t, Next::Completed);
                }
                return;
            }
            Activity::None | Activity::Cpu => return,
        }
        self.resume_after_step(t);
    }

    /// The current step of the item on `t` is over: go on with the next.
    fn resume_after_step(&mut self, t: ThreadId) {
        let Some(Work::Item(item)) = self.core.threads[t as usize].current else {
            return;
        };
        self.core.item_step[item as usize] += 1;
        if let Progress::Done = self.run_steps(t, item) {
            self.worker_loop(t, Next::Completed);
        }
    }
}
