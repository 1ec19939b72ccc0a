//! The native pool's state, guarded by one mutex together with the policy:
//! queues, thread slots and counts, thread requests, timers, throttles and
//! the trace being recorded. Everything here runs with that mutex held; the
//! thread bodies ([`super::threads`]) release it only to run a step.
//!
//! The mechanics mirror [`crate::engine`] function by function (same names
//! where they exist there), so a native run asks the policy the same
//! questions at the same points as a simulated one.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use super::sys;
use super::threads;
use crate::engine::rng;
use crate::policy::config::{RequestMode, ThrottleKind, TimerDispatch, TimerQueueChoice};
use crate::policy::{Policy, PolicyConfig, PoolControl, PoolCounts, RequestCause};
use crate::scenario::arrivals;
use crate::scenario::{Arrival, Origin, Scenario, Submit, Throttle};
use crate::time::{SimDuration, SimTime};
use crate::trace::{
    CountSample, ItemId, ItemRecord, ProbeRecord, ThreadId, ThreadReason, ThreadRecord, Trace,
};

/// Stack size of the threads the pool starts: bodies are shallow, and a
/// scenario may ask for thousands of threads.
const STACK_SIZE: usize = 512 * 1024;
/// Shortest period of the thread-count samples (100 µs).
const MIN_SAMPLE_NS: u128 = 100_000;

/// The policy, movable to the threads that call it.
pub(super) struct SendPolicy(pub Box<dyn Policy>);

// SAFETY: `policy::build` returns one of the five model types asserted
// `Send` below; they hold only owned plain data (numbers, configs, Vecs,
// ChaCha8 streams). The box is only ever used under the pool mutex, so it
// is never touched by two threads at once.
unsafe impl Send for SendPolicy {}

const _: () = {
    const fn assert_send<T: Send>() {}
    assert_send::<crate::policy::classic::Classic>();
    assert_send::<crate::policy::portable::Portable>();
    assert_send::<crate::policy::mono::Mono>();
    assert_send::<crate::policy::net20::Net20>();
    assert_send::<crate::policy::dedicated::Dedicated>();
};

/// A unit of work in a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Work {
    /// Start a task item.
    Item(ItemId),
    /// Resume an item at its next step (an `await` or `yield` continuation,
    /// or a semaphore grant).
    Continuation(ItemId),
    /// Fire the due timers of a timer queue.
    TimerQueue(u32),
    /// One due timer's callback.
    TimerCallback(u32),
    /// A responsiveness probe of the given `[[probe]]` loop.
    Probe(u32),
    /// A pool work item submitting a group (`from = "pool"`).
    Submitter(u32),
    /// A `ConcurrentExclusiveSchedulerPair` processing item.
    PairProcessor(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ThreadKind {
    Pool,
    Dedicated,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ThreadState {
    /// Created or released; first dequeue pending.
    Starting,
    /// In its dispatch loop or inside a work item.
    Active,
    /// Waiting for work.
    Idle,
    /// Stopped working because the pool had more threads than its goal.
    Retired,
    Exited,
}

/// One OS thread of the run (pool or dedicated); its index is its
/// [`ThreadId`] and its [`ThreadRecord`]'s.
pub(super) struct Slot {
    pub kind: ThreadKind,
    pub state: ThreadState,
    pub local: VecDeque<Work>,
    /// What the thread waits on: release from idle, or its `Task.Wait`.
    pub cv: Arc<Condvar>,
    /// The timer callback of its current `Task.Delay(d).Wait()` has run.
    pub released: bool,
    pub dispatch_start: SimTime,
    pub requested_this_dispatch: bool,
    /// When its current idle or retired wait times out.
    pub idle_deadline: SimTime,
    pub cpu_clock: Option<sys::CpuClock>,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum TimerAction {
    /// Release a thread blocked in `Task.Delay(d).Wait()`.
    ReleaseWaiter(ThreadId),
    /// Run an item's continuation after `await Task.Delay(d)`.
    Resume(ItemId),
}

#[derive(Debug, Default)]
struct TimerQueue {
    heap: BinaryHeap<Reverse<(SimTime, u32)>>,
    /// Queued for a worker and not yet run.
    scheduled: bool,
    generation: u64,
}

/// What the timer thread does at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum TimerEvent {
    /// A wake-up the policy asked for.
    PolicyWake(u64),
    /// The native timer thread notices an expired timer in queue `q`.
    TimerThread(u32, u64),
    /// A periodic thread-count sample.
    Sample,
}

pub(super) struct GroupState {
    pub submitted: u64,
    finished: u64,
    /// The group's first submission; `None` until the group it follows ends.
    pub base: Option<SimTime>,
    offsets: Vec<SimDuration>,
    pub submitter_queued: bool,
    pair: Option<u32>,
    semaphore: Option<u32>,
}

pub(super) struct Pair {
    limit: u32,
    pub active: u32,
    pub queue: VecDeque<Work>,
}

struct Semaphore {
    count: u32,
    waiters: VecDeque<ItemId>,
}

/// What remains of the main thread's arrivals.
pub(super) enum Arrivals {
    /// Every group it submits has been submitted.
    Done,
    /// The next one is due then.
    Next(SimTime),
    /// Only groups waiting for an earlier group to finish remain.
    Waiting,
}

/// The condition variables that go with the pool mutex.
#[derive(Default)]
pub(super) struct Signals {
    pub timer: Condvar,
    pub main: Condvar,
    pub done: Condvar,
    pub probe: Condvar,
}

/// What every thread of a run shares.
pub(super) struct Shared {
    pub scenario: Arc<Scenario>,
    pub t0: Instant,
    /// CPUs every thread of the run is pinned to (empty: not pinned).
    pub cpus: Vec<usize>,
    /// Raised (with the pool's `stopped`) when the run ends.
    pub stop: AtomicBool,
    pub signals: Arc<Signals>,
    state: Mutex<Inner>,
    sleep_lock: Mutex<()>,
    sleep_cv: Condvar,
}

pub(super) type Guard<'a> = MutexGuard<'a, Inner>;

impl Shared {
    pub fn new(
        scenario: &Scenario,
        config: &PolicyConfig,
        policy: Box<dyn Policy>,
        cpus: Vec<usize>,
        sample_every: Duration,
    ) -> Arc<Shared> {
        let scenario = Arc::new(scenario.clone());
        let signals = Arc::new(Signals::default());
        let t0 = Instant::now();
        Arc::new_cyclic(|weak| {
            let pool = Pool::new(
                weak.clone(),
                Arc::clone(&scenario),
                Arc::clone(&signals),
                config,
                policy.as_ref(),
                t0,
                sample_every,
            );
            Shared {
                scenario,
                t0,
                cpus,
                stop: AtomicBool::new(false),
                signals,
                state: Mutex::new(Inner {
                    dedicated: policy.dedicated_threads(),
                    retire_on_stop: policy.retire_on_stop(),
                    policy: SendPolicy(policy),
                    pool,
                }),
                sleep_lock: Mutex::new(()),
                sleep_cv: Condvar::new(),
            }
        })
    }

    pub fn lock(&self) -> Guard<'_> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Blocks the calling thread for `d` without CPU (`Thread.Sleep`), or
    /// until the run stops. Returns false when it stopped.
    pub fn pause(&self, d: SimDuration) -> bool {
        self.pause_until_instant(Instant::now() + Duration::from_nanos(d.as_nanos()))
    }

    /// Blocks until the run's clock reads `at`. Returns false when the run stopped.
    pub fn pause_until(&self, at: SimTime) -> bool {
        self.pause_until_instant(self.t0 + Duration::from_nanos(at.as_nanos()))
    }

    fn pause_until_instant(&self, until: Instant) -> bool {
        let mut guard = self
            .sleep_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        loop {
            if self.stopped() {
                return false;
            }
            let now = Instant::now();
            if now >= until {
                return true;
            }
            guard = self
                .sleep_cv
                .wait_timeout(guard, until - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Ends the run: every waiting thread wakes up and leaves. Call with
    /// the pool mutex held (`g`), so no wake-up is lost.
    pub fn stop_all(&self, g: &mut Inner) {
        self.stop.store(true, Ordering::SeqCst);
        g.pool.stopped = true;
        for slot in &g.pool.threads {
            slot.cv.notify_all();
        }
        self.signals.timer.notify_all();
        self.signals.main.notify_all();
        self.signals.done.notify_all();
        self.signals.probe.notify_all();
        let _sleepers = self
            .sleep_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.sleep_cv.notify_all();
    }
}

/// The policy and the pool it drives.
pub(super) struct Inner {
    pub policy: SendPolicy,
    pub pool: Pool,
    pub dedicated: bool,
    pub retire_on_stop: bool,
}

/// Queues, threads, counts, timers and the trace.
pub(super) struct Pool {
    shared: Weak<Shared>,
    scenario: Arc<Scenario>,
    signals: Arc<Signals>,
    t0: Instant,
    pub stopped: bool,
    /// Every item finished and no probe is in flight.
    pub done: bool,
    /// A thread the run needed could not be started.
    pub failure: Option<String>,
    pub handles: Vec<JoinHandle<()>>,

    pub threads: Vec<Slot>,
    idle: Vec<ThreadId>,
    retired: Vec<ThreadId>,
    /// Active pool threads (starting, working or idle): `NumActive`.
    existing: u32,
    pub starting: u32,
    dedicated_alive: u32,
    pub blocked_sleep: u32,
    pub blocked_wait: u32,
    max_threads: u32,
    idle_timeout: SimDuration,
    pub quantum: SimDuration,
    pub leave_at_quantum: bool,
    pub request_mode: RequestMode,

    global: VecDeque<Work>,
    high_priority: VecDeque<Work>,
    time_sensitive: VecDeque<Work>,
    pub time_sensitive_first: bool,
    pub unmanaged: VecDeque<Work>,
    pub unmanaged_pending: u32,
    pub hint_unmanaged: bool,
    queued: u64,
    queued_local: u64,
    /// The VM's count of thread requests not yet taken by a worker.
    pub pending_requests: u32,
    /// The managed queue's outstanding requests (capped).
    pub outstanding: u32,
    request_cap: u32,
    steal: ChaCha8Rng,

    pub timer_dispatch: TimerDispatch,
    timer_queues: Vec<TimerQueue>,
    pub timers: Vec<TimerAction>,
    timer_pick: ChaCha8Rng,
    timer_queue_of: TimerQueueChoice,
    events: BinaryHeap<Reverse<(SimTime, u64, TimerEvent)>>,
    seq: u64,
    sample_every: SimDuration,

    pub item_step: Vec<u32>,
    item_acquired: Vec<bool>,
    pub item_pair: Vec<Option<u32>>,
    pub groups: Vec<GroupState>,
    pub pairs: Vec<Pair>,
    semaphores: Vec<Semaphore>,
    pub items_total: u64,
    pub items_finished: u64,
    pub probe_in_flight: Vec<Option<u32>>,

    goal: Option<u32>,
    /// CPU time of threads that have exited.
    cpu_exited_ns: u128,
    pub trace: Trace,
}

impl Pool {
    fn new(
        shared: Weak<Shared>,
        scenario: Arc<Scenario>,
        signals: Arc<Signals>,
        config: &PolicyConfig,
        policy: &dyn Policy,
        t0: Instant,
        sample_every: Duration,
    ) -> Pool {
        let cores = scenario.machine.cores;
        let mut pairs = Vec::new();
        let mut semaphores = Vec::new();
        let default_throttle = config.throttle.as_ref().map(|t| Throttle {
            kind: t.kind,
            limit: t.limit.resolve(cores).max(1),
        });
        let groups = scenario
            .groups
            .iter()
            .enumerate()
            .map(|(g, group)| {
                let throttleable = matches!(
                    group.submit,
                    Submit::TaskRun
                        | Submit::QueueUserWorkItem
                        | Submit::WhenAll
                        | Submit::ParallelForEachAsync
                );
                let throttle =
                    group
                        .throttle
                        .or(if throttleable { default_throttle } else { None });
                let (mut pair, mut semaphore) = (None, None);
                match throttle {
                    Some(Throttle {
                        kind: ThrottleKind::ConcurrentExclusive,
                        limit,
                    }) => {
                        pair = Some(pairs.len() as u32);
                        pairs.push(Pair {
                            limit: limit.max(1),
                            active: 0,
                            queue: VecDeque::new(),
                        });
                    }
                    Some(Throttle {
                        kind: ThrottleKind::Semaphore,
                        limit,
                    }) => {
                        semaphore = Some(semaphores.len() as u32);
                        semaphores.push(Semaphore {
                            count: limit,
                            waiters: VecDeque::new(),
                        });
                    }
                    None => {}
                }
                GroupState {
                    submitted: 0,
                    finished: 0,
                    base: arrivals::start(&scenario, g).map(|s| SimTime::ZERO + s),
                    offsets: arrivals::offsets(&scenario, g),
                    submitter_queued: false,
                    pair,
                    semaphore,
                }
            })
            .collect();
        let request_cap = match config.dispatch.requests {
            RequestMode::EveryDequeue => cores
                .saturating_mul(config.dispatch.max_outstanding_requests_per_core)
                .max(1),
            RequestMode::FirstDequeue => 1,
        };
        let timer_queue_count = config.timers.queues.resolve(cores).clamp(1, 4096) as usize;
        let items_total = scenario.item_count();
        let reserve = items_total.min(1 << 20) as usize;
        let trace = Trace {
            scenario: scenario.name.clone(),
            policy: config.name.clone(),
            seed: scenario.seed,
            cores,
            groups: scenario.groups.iter().map(|g| g.name.clone()).collect(),
            items: Vec::with_capacity(reserve),
            threads: Vec::new(),
            probes: Vec::new(),
            counts: vec![CountSample {
                at: SimTime::ZERO,
                threads: 0,
                goal: None,
            }],
            cpu_busy_ns: None,
            end: SimTime::ZERO,
        };
        Pool {
            shared,
            signals,
            t0,
            stopped: false,
            done: false,
            failure: None,
            handles: Vec::new(),
            threads: Vec::new(),
            idle: Vec::new(),
            retired: Vec::new(),
            existing: 0,
            starting: 0,
            dedicated_alive: 0,
            blocked_sleep: 0,
            blocked_wait: 0,
            max_threads: policy.max_threads(),
            idle_timeout: config.threads.idle_timeout,
            quantum: config.dispatch.quantum,
            leave_at_quantum: config.dispatch.leave_at_quantum,
            request_mode: config.dispatch.requests,
            global: VecDeque::new(),
            high_priority: VecDeque::new(),
            time_sensitive: VecDeque::new(),
            time_sensitive_first: false,
            unmanaged: VecDeque::new(),
            unmanaged_pending: 0,
            hint_unmanaged: true,
            queued: 0,
            queued_local: 0,
            pending_requests: 0,
            outstanding: 0,
            request_cap,
            steal: rng::stream(scenario.seed, "steal"),
            timer_dispatch: config.timers.dispatch,
            timer_queues: (0..timer_queue_count)
                .map(|_| TimerQueue::default())
                .collect(),
            timers: Vec::new(),
            timer_pick: rng::stream(scenario.seed, "timer-queue"),
            timer_queue_of: config.timers.queue_of,
            events: BinaryHeap::new(),
            seq: 0,
            sample_every: SimDuration(
                sample_every
                    .as_nanos()
                    .clamp(MIN_SAMPLE_NS, u128::from(u64::MAX)) as u64,
            ),
            item_step: Vec::with_capacity(reserve),
            item_acquired: Vec::with_capacity(reserve),
            item_pair: Vec::with_capacity(reserve),
            groups,
            pairs,
            semaphores,
            items_total,
            items_finished: 0,
            probe_in_flight: vec![None; scenario.probes.len()],
            goal: None,
            cpu_exited_ns: 0,
            trace,
            scenario,
        }
    }

    /// Wall time since the run started, on the simulator's clock type.
    pub fn clock(&self) -> SimTime {
        SimTime(self.t0.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64)
    }

    pub fn is_pool(&self, t: ThreadId) -> bool {
        self.threads[t as usize].kind == ThreadKind::Pool
    }

    pub fn working(&self) -> u32 {
        self.existing - self.idle.len() as u32
    }

    // ---- trace --------------------------------------------------------

    /// A thread-count sample after a change (the engine's dedup rule).
    fn sample_counts(&mut self) {
        let sample = CountSample {
            at: self.clock(),
            threads: self.existing + self.dedicated_alive,
            goal: self.goal,
        };
        let counts = &mut self.trace.counts;
        match counts.last_mut() {
            Some(last) if last.threads == sample.threads && last.goal == sample.goal => {}
            Some(last) if last.at == sample.at => *last = sample,
            _ => counts.push(sample),
        }
    }

    /// The periodic sample: recorded even when nothing changed.
    fn sample_periodic(&mut self) {
        let sample = CountSample {
            at: self.clock(),
            threads: self.existing + self.dedicated_alive,
            goal: self.goal,
        };
        match self.trace.counts.last_mut() {
            Some(last) if last.at == sample.at => *last = sample,
            _ => self.trace.counts.push(sample),
        }
    }

    /// Creates the record of a new item of group `g`, queued now.
    fn new_item(&mut self, g: u32) -> ItemId {
        let item = self.trace.items.len() as ItemId;
        let now = self.clock();
        self.trace.items.push(ItemRecord {
            item,
            group: g,
            thread: ThreadId::MAX,
            queued: now,
            started: SimTime::MAX,
            finished: SimTime::MAX,
        });
        self.item_step.push(0);
        self.item_acquired.push(false);
        self.item_pair.push(self.groups[g as usize].pair);
        item
    }

    /// Marks the run done when every item finished and no probe is in flight.
    pub fn check_done(&mut self) {
        if !self.done
            && self.items_finished == self.items_total
            && self.probe_in_flight.iter().all(Option::is_none)
        {
            self.done = true;
            self.signals.done.notify_all();
        }
    }

    /// Stops the run because a thread could not be started.
    fn fail(&mut self, what: String) {
        if self.failure.is_none() {
            self.failure = Some(what);
        }
        self.signals.done.notify_all();
    }

    /// The recorded trace, closed at the last item's finish.
    pub fn take_trace(&mut self) -> Trace {
        let now = self.clock();
        self.trace.end = self
            .trace
            .items
            .iter()
            .map(|i| i.finished)
            .max()
            .unwrap_or(now);
        self.trace.cpu_busy_ns = Some(self.cpu_ns());
        std::mem::replace(&mut self.trace, empty_trace())
    }

    // ---- queues -------------------------------------------------------

    pub fn enqueue_global(&mut self, work: Work) {
        self.global.push_back(work);
        self.queued += 1;
    }

    fn enqueue_local(&mut self, thread: ThreadId, work: Work) {
        self.threads[thread as usize].local.push_back(work);
        self.queued += 1;
        self.queued_local += 1;
    }

    /// Queues from `from`: a pool thread's local queue, else the global queue.
    pub fn enqueue_from(&mut self, from: Option<ThreadId>, work: Work) {
        match from {
            Some(t) if self.is_pool(t) => self.enqueue_local(t, work),
            _ => self.enqueue_global(work),
        }
    }

    /// Moves a leaving thread's local items to the global queue.
    pub fn flush_local(&mut self, thread: ThreadId) {
        let local: Vec<Work> = self.threads[thread as usize].local.drain(..).collect();
        self.queued_local -= local.len() as u64;
        self.global.extend(local);
    }

    fn steal_from_others(&mut self, thread: ThreadId) -> Option<Work> {
        if self.queued_local == 0 {
            return None;
        }
        let n = self.threads.len();
        let start = self.steal.random_range(0..n);
        let t = thread as usize;
        let victim = (0..n)
            .map(|k| (start + k) % n)
            .find(|&v| v != t && !self.threads[v].local.is_empty())?;
        let work = self.threads[victim].local.pop_front()?;
        self.queued_local -= 1;
        Some(work)
    }

    /// Own local queue (LIFO), the high-priority queue (.NET 7+), the
    /// global queue (FIFO), then steal; the time-sensitive queue (.NET 6)
    /// only when all of those are empty.
    pub fn dequeue(&mut self, thread: ThreadId) -> Option<Work> {
        let t = thread as usize;
        let work = if let Some(w) = self.threads[t].local.pop_back() {
            self.queued_local -= 1;
            Some(w)
        } else if let Some(w) = self.high_priority.pop_front() {
            Some(w)
        } else if let Some(w) = self.global.pop_front() {
            Some(w)
        } else if let Some(w) = self.steal_from_others(thread) {
            Some(w)
        } else {
            self.time_sensitive.pop_front()
        };
        if work.is_some() {
            self.queued -= 1;
        }
        work
    }

    pub fn dequeue_time_sensitive(&mut self) -> Option<Work> {
        let work = self.time_sensitive.pop_front();
        if work.is_some() {
            self.queued -= 1;
        }
        work
    }

    // ---- threads ------------------------------------------------------

    fn spawn(
        &mut self,
        name: String,
        body: impl FnOnce(Arc<Shared>) + Send + 'static,
    ) -> Result<(), String> {
        if self.stopped {
            return Err("the run is stopping".into());
        }
        let Some(shared) = self.shared.upgrade() else {
            return Err("the run is over".into());
        };
        let handle = std::thread::Builder::new()
            .name(name)
            .stack_size(STACK_SIZE)
            .spawn(move || body(shared))
            .map_err(|e| format!("could not start a thread: {e}"))?;
        self.handles.push(handle);
        Ok(())
    }

    fn push_slot(&mut self, kind: ThreadKind, reason: ThreadReason) -> ThreadId {
        let id = self.threads.len() as ThreadId;
        self.threads.push(Slot {
            kind,
            state: ThreadState::Starting,
            local: VecDeque::new(),
            cv: Arc::new(Condvar::new()),
            released: false,
            dispatch_start: SimTime::ZERO,
            requested_this_dispatch: false,
            idle_deadline: SimTime::MAX,
            cpu_clock: None,
        });
        self.trace.threads.push(ThreadRecord {
            thread: id,
            created: self.clock(),
            reason,
            exited: None,
        });
        id
    }

    fn create_pool_thread(&mut self, reason: ThreadReason) -> bool {
        let id = self.threads.len() as ThreadId;
        if self
            .spawn(format!("poolsim-worker-{id}"), move |sh| {
                threads::worker_main(sh, id)
            })
            .is_err()
        {
            return false;
        }
        self.push_slot(ThreadKind::Pool, reason);
        self.existing += 1;
        self.starting += 1;
        self.sample_counts();
        true
    }

    /// A dedicated thread (`new Thread`) that runs `item` and exits.
    fn create_dedicated_thread(&mut self, item: ItemId) {
        let id = self.threads.len() as ThreadId;
        match self.spawn(format!("poolsim-thread-{id}"), move |sh| {
            threads::dedicated_main(sh, id, item)
        }) {
            Ok(()) => {
                self.push_slot(ThreadKind::Dedicated, ThreadReason::Dedicated);
                self.dedicated_alive += 1;
                self.sample_counts();
            }
            Err(e) => self.fail(e),
        }
    }

    /// A thread of the run reached its body: its CPU clock joins the count.
    pub fn thread_started(&mut self, t: ThreadId, clock: Option<sys::CpuClock>) {
        self.threads[t as usize].cpu_clock = clock;
    }

    /// A thread of the run is leaving: its CPU time is kept.
    pub fn thread_gone(&mut self, t: ThreadId) {
        if let Some(clock) = self.threads[t as usize].cpu_clock.take() {
            self.cpu_exited_ns += u128::from(clock.read_ns().unwrap_or(0));
        }
    }

    /// CPU time of the run's pool and dedicated threads so far.
    fn cpu_ns(&self) -> u128 {
        self.cpu_exited_ns
            + self
                .threads
                .iter()
                .filter_map(|s| s.cpu_clock)
                .map(|c| u128::from(c.read_ns().unwrap_or(0)))
                .sum::<u128>()
    }

    pub fn make_idle(&mut self, thread: ThreadId) {
        let deadline = self.clock() + self.idle_timeout;
        let t = &mut self.threads[thread as usize];
        t.state = ThreadState::Idle;
        t.idle_deadline = deadline;
        self.idle.push(thread);
    }

    fn release_idle(&mut self) -> bool {
        let Some(thread) = self.idle.pop() else {
            return false;
        };
        let t = &mut self.threads[thread as usize];
        t.state = ThreadState::Starting;
        t.cv.notify_all();
        self.starting += 1;
        true
    }

    /// Retires a working thread (it stops counting as active) until it is
    /// brought back or its wait times out.
    pub fn retire(&mut self, thread: ThreadId) {
        let deadline = self.clock() + self.idle_timeout;
        let t = &mut self.threads[thread as usize];
        t.state = ThreadState::Retired;
        t.idle_deadline = deadline;
        self.retired.push(thread);
        self.existing -= 1;
        self.sample_counts();
    }

    fn unretire(&mut self) -> bool {
        let Some(thread) = self.retired.pop() else {
            return false;
        };
        let t = &mut self.threads[thread as usize];
        t.state = ThreadState::Starting;
        t.cv.notify_all();
        self.existing += 1;
        self.starting += 1;
        self.sample_counts();
        true
    }

    /// An idle thread timed out but stays: it waits again from now.
    pub fn idle_again(&mut self, thread: ThreadId) {
        self.idle.retain(|&i| i != thread);
        self.make_idle(thread);
    }

    pub fn exit_thread(&mut self, thread: ThreadId) {
        let (state, kind) = {
            let t = &self.threads[thread as usize];
            (t.state, t.kind)
        };
        match kind {
            ThreadKind::Dedicated => self.dedicated_alive -= 1,
            ThreadKind::Pool => {
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
                // Work left in its local queue (a retired thread's) stays
                // runnable (the engine leaves it there for stealing).
                self.flush_local(thread);
            }
        }
        self.threads[thread as usize].state = ThreadState::Exited;
        self.trace.threads[thread as usize].exited = Some(self.clock());
        self.sample_counts();
    }

    // ---- timers -------------------------------------------------------

    fn schedule(&mut self, at: SimTime, event: TimerEvent) {
        self.seq += 1;
        let earliest = self.events.peek().map(|Reverse((at, _, _))| *at);
        self.events.push(Reverse((at, self.seq, event)));
        if earliest.is_none_or(|e| at < e) {
            self.signals.timer.notify_all();
        }
    }

    /// The timer thread's next event, when due by `now`.
    pub fn due_event(&mut self, now: SimTime) -> Result<(SimTime, TimerEvent), Option<SimTime>> {
        match self.events.peek() {
            Some(Reverse((at, _, _))) if *at <= now => {
                let Reverse((at, _, event)) = self.events.pop().expect("peeked");
                Ok((at, event))
            }
            Some(Reverse((at, _, _))) => Err(Some(*at)),
            None => Err(None),
        }
    }

    /// A timer created by thread `by` joins a queue as in the engine
    /// (`timers.queue_of`).
    pub fn add_timer(&mut self, due: SimTime, action: TimerAction, by: ThreadId) {
        let id = self.timers.len() as u32;
        self.timers.push(action);
        let n = self.timer_queues.len();
        let q = match self.timer_queue_of {
            _ if n <= 1 => 0,
            TimerQueueChoice::CreatingThread => by as usize % n,
            TimerQueueChoice::Random => self.timer_pick.random_range(0..n),
        };
        let queue = &mut self.timer_queues[q];
        let earliest = queue.heap.peek().map(|Reverse((at, _))| *at);
        queue.heap.push(Reverse((due, id)));
        if !queue.scheduled && earliest.is_none_or(|e| due < e) {
            self.arm_timer_thread(q as u32);
        }
    }

    fn arm_timer_thread(&mut self, q: u32) {
        let queue = &mut self.timer_queues[q as usize];
        queue.generation += 1;
        let generation = queue.generation;
        if let Some(Reverse((due, _))) = queue.heap.peek().copied() {
            self.schedule(due, TimerEvent::TimerThread(q, generation));
        }
    }
}

fn empty_trace() -> Trace {
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
    }
}

impl PoolControl for Pool {
    fn now(&self) -> SimTime {
        self.clock()
    }
    fn cores(&self) -> u32 {
        self.scenario.machine.cores
    }
    fn counts(&self) -> PoolCounts {
        PoolCounts {
            existing: self.existing,
            working: self.working(),
            starting: self.starting,
            idle: self.idle.len() as u32,
            blocked_sleep: self.blocked_sleep,
            blocked_wait: self.blocked_wait,
            pending_requests: self.pending_requests + self.unmanaged_pending,
            queued: self.queued,
        }
    }
    /// CPU time of this run's pool and dedicated threads (their per-thread
    /// clocks), not of the whole process: other work in the process (a test
    /// harness, another run) does not make the gate thread see a busy CPU.
    fn cpu_busy_core_ns(&mut self) -> u128 {
        self.cpu_ns()
    }
    fn add_worker(&mut self, reason: ThreadReason) -> bool {
        if self.release_idle() || self.unretire() {
            return true;
        }
        if self.existing + self.retired.len() as u32 >= self.max_threads {
            return false;
        }
        self.create_pool_thread(reason)
    }
    fn wake_at(&mut self, at: SimTime, tag: u64) {
        self.schedule(at, TimerEvent::PolicyWake(tag));
    }
    fn goal_changed(&mut self, goal: u32, _reason: &'static str) {
        self.goal = Some(goal);
        self.sample_counts();
    }
}

impl Inner {
    /// The run starts: the policy's `start`, the first periodic sample.
    pub fn start(&mut self) {
        self.policy.0.start(&mut self.pool);
        let at = SimTime::ZERO + self.pool.sample_every;
        self.pool.schedule(at, TimerEvent::Sample);
    }

    /// The managed queue's `EnsureThreadRequested`: one more outstanding
    /// request, up to the cap, and the policy decides whether it adds a worker.
    pub fn request_thread(&mut self, cause: RequestCause) {
        let pool = &mut self.pool;
        if pool.outstanding < pool.request_cap {
            pool.outstanding += 1;
            pool.pending_requests += 1;
            self.policy.0.thread_requested(&mut self.pool, cause);
        }
    }

    /// Submits one item of group `g` from `from` (a pool thread) or the
    /// main thread: a task to the pool (or its throttle), or a dedicated thread.
    fn submit_task(&mut self, g: u32, from: Option<ThreadId>) {
        let scenario = Arc::clone(&self.pool.scenario);
        let submit = scenario.groups[g as usize].submit;
        let pair = self.pool.groups[g as usize].pair;
        if submit == Submit::NewThread || (self.dedicated && pair.is_none()) {
            let item = self.pool.new_item(g);
            self.pool.create_dedicated_thread(item);
            return;
        }
        let item = self.pool.new_item(g);
        if let Some(p) = pair {
            self.pair_push(p, Work::Item(item), from);
            return;
        }
        let local = match (submit, from) {
            (Submit::QueueUserWorkItem, _) => None,
            (_, Some(t)) if self.pool.is_pool(t) => Some(t),
            _ => None,
        };
        match local {
            Some(t) => self.pool.enqueue_local(t, Work::Item(item)),
            None => self.pool.enqueue_global(Work::Item(item)),
        }
        self.request_thread(RequestCause::Enqueue);
    }

    /// Submits every item of group `g` due by now. Returns when the next
    /// one is due, `None` when the group is fully submitted.
    pub fn submit_due(&mut self, g: u32, from: Option<ThreadId>) -> Option<SimTime> {
        let gi = g as usize;
        let base = self.pool.groups[gi].base?;
        loop {
            let state = &self.pool.groups[gi];
            let &offset = state.offsets.get(state.submitted as usize)?;
            let at = base + offset;
            if at > self.pool.clock() {
                return Some(at);
            }
            self.submit_task(g, from);
            self.pool.groups[gi].submitted += 1;
        }
    }

    /// The main thread's arrivals: submits what is due in every group it
    /// submits (group by group, as the engine's same-instant arrivals), and
    /// queues the submitter item of each due `from = "pool"` group.
    pub fn main_arrivals(&mut self) -> Arrivals {
        let scenario = Arc::clone(&self.pool.scenario);
        let mut next: Option<SimTime> = None;
        let mut pending = false;
        for (g, group) in scenario.groups.iter().enumerate() {
            if group.count == 0 {
                continue;
            }
            let state = &self.pool.groups[g];
            let Some(base) = state.base else {
                pending = true;
                continue;
            };
            if group.from == Origin::Pool {
                if state.submitter_queued {
                    continue;
                }
                if base <= self.pool.clock() {
                    // Task.Run(() => { ...submit... }) from the main thread.
                    self.pool.groups[g].submitter_queued = true;
                    self.pool.enqueue_global(Work::Submitter(g as u32));
                    self.request_thread(RequestCause::Enqueue);
                } else {
                    pending = true;
                    next = Some(next.map_or(base, |n| n.min(base)));
                }
                continue;
            }
            if let Some(at) = self.submit_due(g as u32, None) {
                pending = true;
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
        match (pending, next) {
            (false, _) => Arrivals::Done,
            (true, Some(at)) => Arrivals::Next(at),
            (true, None) => Arrivals::Waiting,
        }
    }

    /// A task (or continuation) enters pair `p`'s queue; a processing item
    /// is started if fewer than the limit are active.
    pub fn pair_push(&mut self, p: u32, work: Work, from: Option<ThreadId>) {
        let pair = &mut self.pool.pairs[p as usize];
        pair.queue.push_back(work);
        if pair.active < pair.limit {
            pair.active += 1;
            self.pool.enqueue_from(from, Work::PairProcessor(p));
            self.request_thread(RequestCause::Enqueue);
        }
    }

    /// Queues the continuation of `item` where its scheduler puts it: the
    /// pair's queue for a task on a pair, else `from`'s local queue (a pool
    /// thread) or the global queue.
    pub fn queue_continuation(&mut self, item: ItemId, from: Option<ThreadId>) {
        if let Some(p) = self.pool.item_pair[item as usize] {
            self.pair_push(p, Work::Continuation(item), None);
        } else {
            self.pool.enqueue_from(from, Work::Continuation(item));
            self.request_thread(RequestCause::Enqueue);
        }
    }

    /// `await semaphore.WaitAsync()` at an item's start: true when granted
    /// (or already held); false when the item now waits for a release.
    pub fn acquire(&mut self, item: ItemId) -> bool {
        let i = item as usize;
        let group = self.pool.trace.items[i].group as usize;
        let Some(s) = self.pool.groups[group].semaphore else {
            return true;
        };
        if self.pool.item_acquired[i] {
            return true;
        }
        self.pool.item_acquired[i] = true;
        let sem = &mut self.pool.semaphores[s as usize];
        if sem.count > 0 {
            sem.count -= 1;
            true
        } else {
            sem.waiters.push_back(item);
            false
        }
    }

    /// `item` ran its last step on `t`.
    pub fn finish_item(&mut self, t: ThreadId, item: ItemId) {
        let i = item as usize;
        let now = self.pool.clock();
        self.pool.trace.items[i].finished = now;
        self.pool.items_finished += 1;
        let group = self.pool.trace.items[i].group;
        self.group_item_finished(group);
        if self.pool.item_acquired[i]
            && let Some(s) = self.pool.groups[group as usize].semaphore
        {
            // semaphore.Release(): the first waiter's continuation goes to
            // this thread's local queue.
            match self.pool.semaphores[s as usize].waiters.pop_front() {
                Some(waiter) => {
                    self.pool.enqueue_from(Some(t), Work::Continuation(waiter));
                    self.request_thread(RequestCause::Enqueue);
                }
                None => self.pool.semaphores[s as usize].count += 1,
            }
        }
        self.pool.check_done();
    }

    /// Counts a finished item of group `g`; when it was the last, the groups
    /// that follow it (`arrival = { after = ... }`) are due.
    fn group_item_finished(&mut self, g: u32) {
        let scenario = Arc::clone(&self.pool.scenario);
        let state = &mut self.pool.groups[g as usize];
        state.finished += 1;
        if state.finished < scenario.groups[g as usize].count {
            return;
        }
        let now = self.pool.clock();
        for (h, group) in scenario.groups.iter().enumerate() {
            if let Arrival::After {
                group: after,
                delay,
            } = group.arrival
                && after == g as usize
                && group.count > 0
            {
                self.pool.groups[h].base = Some(now + delay);
                self.pool.signals.main.notify_all();
            }
        }
    }

    /// A probe loop queues its probe item.
    pub fn queue_probe(&mut self, p: u32) {
        let id = self.pool.trace.probes.len() as u32;
        let now = self.pool.clock();
        self.pool.trace.probes.push(ProbeRecord {
            queued: now,
            started: SimTime::MAX,
        });
        self.pool.probe_in_flight[p as usize] = Some(id);
        self.pool.enqueue_global(Work::Probe(p));
        self.request_thread(RequestCause::Enqueue);
    }

    /// The probe item of loop `p` started: its loop's `Wait()` returns.
    pub fn probe_started(&mut self, p: u32) {
        if let Some(id) = self.pool.probe_in_flight[p as usize].take() {
            self.pool.trace.probes[id as usize].started = self.pool.clock();
        }
        self.pool.signals.probe.notify_all();
        self.pool.check_done();
    }

    /// Runs the timer queue `q` on a worker: its due timers are taken, all
    /// but the first queued as callbacks at the global tail. Returns the
    /// first, which the worker runs inline.
    pub fn fire_timer_queue(&mut self, q: u32) -> Option<u32> {
        let now = self.pool.clock();
        let mut first = None;
        while let Some(Reverse((due, id))) = self.pool.timer_queues[q as usize].heap.peek().copied()
        {
            if due > now {
                break;
            }
            self.pool.timer_queues[q as usize].heap.pop();
            if first.is_none() {
                first = Some(id);
            } else {
                self.pool.enqueue_global(Work::TimerCallback(id));
                self.request_thread(RequestCause::Enqueue);
            }
        }
        self.pool.timer_queues[q as usize].scheduled = false;
        self.pool.arm_timer_thread(q);
        first
    }

    /// The timer thread handles an event that came due.
    pub fn timer_event(&mut self, at: SimTime, event: TimerEvent) {
        match event {
            TimerEvent::PolicyWake(tag) => self.policy.0.wake(&mut self.pool, tag),
            TimerEvent::TimerThread(q, generation) => self.timer_thread(q, generation),
            TimerEvent::Sample => {
                self.pool.sample_periodic();
                let now = self.pool.clock();
                let next = (at + self.pool.sample_every).max(now);
                self.pool.schedule(next, TimerEvent::Sample);
            }
        }
    }

    /// The timer thread noticed that queue `q` has an expired timer.
    fn timer_thread(&mut self, q: u32, generation: u64) {
        let queue = &self.pool.timer_queues[q as usize];
        if generation != queue.generation || queue.scheduled {
            return;
        }
        match self.pool.timer_dispatch {
            TimerDispatch::GlobalPerCallback => {
                // Mono: every due callback is its own global work item.
                let now = self.pool.clock();
                while let Some(Reverse((due, id))) =
                    self.pool.timer_queues[q as usize].heap.peek().copied()
                {
                    if due > now {
                        break;
                    }
                    self.pool.timer_queues[q as usize].heap.pop();
                    self.pool.enqueue_global(Work::TimerCallback(id));
                    self.request_thread(RequestCause::Timer);
                }
                self.pool.arm_timer_thread(q);
            }
            TimerDispatch::UnmanagedRequest => {
                self.pool.timer_queues[q as usize].scheduled = true;
                self.pool.unmanaged.push_back(Work::TimerQueue(q));
                if self.pool.unmanaged_pending < self.pool.scenario.machine.cores {
                    self.pool.unmanaged_pending += 1;
                    self.policy
                        .0
                        .thread_requested(&mut self.pool, RequestCause::Timer);
                }
            }
            TimerDispatch::TimeSensitive => {
                self.pool.timer_queues[q as usize].scheduled = true;
                self.pool.time_sensitive.push_back(Work::TimerQueue(q));
                self.pool.queued += 1;
                self.request_thread(RequestCause::Timer);
            }
            TimerDispatch::HighPriority => {
                self.pool.timer_queues[q as usize].scheduled = true;
                self.pool.high_priority.push_back(Work::TimerQueue(q));
                self.pool.queued += 1;
                self.request_thread(RequestCause::Timer);
            }
        }
    }
}
