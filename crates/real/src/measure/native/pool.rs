//! The native pool's state, guarded by one mutex together with the policy:
//! queues, thread slots and counts, thread requests, timers, throttles and
//! the trace being recorded. Everything here runs with that mutex held; the
//! thread bodies ([`super::threads`]) release it only to run a step.
//!
//! The mechanics the engine has too are not written here but shared with
//! it through [`crate::pool::state`]: the queues and the dequeue
//! order, thread requests (managed and unmanaged), the worker loop's
//! decisions, the timer queues and what the timer thread and a worker do
//! with them, the throttles, the thread states and counts, and the trace's
//! start and samples. [`Inner`] is their [`PoolHost`]. What remains here is
//! what only real threads need (spawning, condition variables, the wall
//! clock, CPU clocks) and the rest of the bookkeeping, which follows the
//! engine's function by function (same names), so a native run asks the
//! policy the same questions at the same points as a simulated one.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::sys;
use crate::policy::{Policy, PolicyConfig, PoolControl, PoolCounts, RequestCause};
use crate::pool::state::{
    Pair, PoolHost, PoolState, PoolWork, Semaphore, ThreadCounts, ThreadState, Throttles,
};
use crate::pool::{ThreadKind, TimerAction};
use crate::scenario::arrivals;
use crate::scenario::{Arrival, Origin, Scenario, Submit};
use crate::time::{SimDuration, SimTime};
use crate::trace::{
    CountSample, ItemId, ItemRecord, ProbeRecord, ThreadId, ThreadReason, ThreadRecord, Trace,
};

/// Stack size of the threads the pool starts: bodies are shallow, and a
/// scenario may ask for thousands of threads.
const STACK_SIZE: usize = 512 * 1024;
/// Shortest period of the thread-count samples (100 µs).
const MIN_SAMPLE_NS: u128 = 100_000;

/// The bodies of the threads the pool starts (written in `threads`), given
/// by the driver: the pool's data does not name the code that runs on it.
#[derive(Clone, Copy)]
pub(super) struct Bodies {
    /// A pool worker, from its creation to its exit.
    pub worker: fn(Arc<Shared>, ThreadId),
    /// A dedicated thread that runs one item and exits.
    pub dedicated: fn(Arc<Shared>, ThreadId, ItemId),
}

/// A unit of work in the native pool's queues (the simulator's `Work` has
/// more: it runs the TPL shapes as frames, where the native pool runs each
/// item's steps on its thread).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum NativeWork {
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

impl PoolWork for NativeWork {
    const TIMER_QUEUE: fn(u32) -> Self = NativeWork::TimerQueue;
    const TIMER_CALLBACK: fn(u32) -> Self = NativeWork::TimerCallback;
}

/// One OS thread of the run (pool or dedicated); its index is its
/// [`ThreadId`] and its [`ThreadRecord`]'s.
pub(super) struct Slot {
    pub kind: ThreadKind,
    pub state: ThreadState,
    /// What the thread waits on: release from idle, or its `Task.Wait`.
    pub cv: Arc<Condvar>,
    /// The timer callback of its current `Task.Delay(d).Wait()` has run.
    pub released: bool,
    /// When its current idle or retired wait times out.
    pub idle_deadline: SimTime,
    pub cpu_clock: Option<sys::CpuClock>,
}

/// What the timer thread does at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum TimerEvent {
    /// A wake-up the policy asked for.
    PolicyWake(crate::policy::Wake),
    /// The native timer thread notices an expired timer in queue `q`.
    TimerThread(u32, u64),
    /// A periodic thread-count sample.
    Sample,
}

/// A group's submissions in real time (the simulator's `GroupState` keeps
/// its virtual arrival clock instead).
pub(super) struct LiveGroup {
    pub submitted: u64,
    finished: u64,
    /// The group's first submission; `None` until the group it follows ends.
    pub base: Option<SimTime>,
    offsets: Vec<SimDuration>,
    pub submitter_queued: bool,
    pair: Option<u32>,
    semaphore: Option<u32>,
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
    /// The code its threads run.
    pub bodies: Bodies,
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
        bodies: Bodies,
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
                bodies,
                state: Mutex::new(Inner {
                    dedicated: policy.dedicated_threads(),
                    retire_on_stop: policy.retire_on_stop(),
                    policy,
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
    pub policy: Box<dyn Policy>,
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
    /// The threads by state (shared with the engine).
    pub tally: ThreadCounts,
    idle_timeout: SimDuration,

    /// Queues, thread requests and timers (shared with the engine).
    pub state: PoolState<NativeWork, TimerAction>,
    events: BinaryHeap<Reverse<(SimTime, u64, TimerEvent)>>,
    seq: u64,
    sample_every: SimDuration,

    pub item_step: Vec<u32>,
    item_acquired: Vec<bool>,
    pub item_pair: Vec<Option<u32>>,
    pub groups: Vec<LiveGroup>,
    pub pairs: Vec<Pair<NativeWork>>,
    /// Waiters: items.
    semaphores: Vec<Semaphore<ItemId>>,
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
        let processors = scenario.machine.processors();
        let throttles = Throttles::new(&scenario, config);
        let groups = scenario
            .groups
            .iter()
            .enumerate()
            .zip(&throttles.of_group)
            .map(|((g, _), &(pair, semaphore))| LiveGroup {
                submitted: 0,
                finished: 0,
                base: arrivals::start(&scenario, g).map(|s| SimTime::ZERO + s),
                offsets: arrivals::offsets(&scenario, g),
                submitter_queued: false,
                pair,
                semaphore,
            })
            .collect();
        let items_total = scenario.item_count();
        let reserve = items_total.min(1 << 20) as usize;
        let trace = crate::pool::state::new_trace(&scenario, config, reserve);
        Pool {
            shared,
            signals,
            t0,
            stopped: false,
            done: false,
            failure: None,
            handles: Vec::new(),
            threads: Vec::new(),
            tally: ThreadCounts::new(policy.max_threads()),
            idle_timeout: config.threads.idle_timeout,
            state: PoolState::new(config, processors, scenario.seed),
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
            pairs: throttles.pairs,
            semaphores: throttles.semaphores,
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

    // ---- trace --------------------------------------------------------

    /// A thread-count sample after a change (the engine's dedup rule).
    fn sample_counts(&mut self) {
        let sample = CountSample {
            at: self.clock(),
            threads: self.tally.alive(),
            goal: self.goal,
        };
        crate::pool::state::sample_counts(&mut self.trace.counts, sample);
    }

    /// The periodic sample: recorded even when nothing changed.
    fn sample_periodic(&mut self) {
        let sample = CountSample {
            at: self.clock(),
            threads: self.tally.alive(),
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
        std::mem::replace(&mut self.trace, crate::pool::state::empty_trace())
    }

    // ---- queues -------------------------------------------------------

    pub fn enqueue_global(&mut self, work: NativeWork) {
        self.state.enqueue_global(work);
    }

    /// Queues from `from`: a pool thread's local queue, else the global queue.
    pub fn enqueue_from(&mut self, from: Option<ThreadId>, work: NativeWork) {
        match from {
            Some(t) if self.is_pool(t) => self.state.enqueue_local(t, work),
            _ => self.state.enqueue_global(work),
        }
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
            cv: Arc::new(Condvar::new()),
            released: false,
            idle_deadline: SimTime::MAX,
            cpu_clock: None,
        });
        self.trace.threads.push(ThreadRecord {
            thread: id,
            created: self.clock(),
            reason,
            exited: None,
        });
        self.state.add_thread();
        id
    }

    fn create_pool_thread(&mut self, reason: ThreadReason) -> bool {
        let id = self.threads.len() as ThreadId;
        if self
            .spawn(format!("poolsim-worker-{id}"), move |sh| {
                let body = sh.bodies.worker;
                body(sh, id)
            })
            .is_err()
        {
            return false;
        }
        self.push_slot(ThreadKind::Pool, reason);
        self.tally.existing += 1;
        self.tally.starting += 1;
        self.sample_counts();
        true
    }

    /// A dedicated thread (`new Thread`) that runs `item` and exits.
    fn create_dedicated_thread(&mut self, item: ItemId) {
        let id = self.threads.len() as ThreadId;
        match self.spawn(format!("poolsim-thread-{id}"), move |sh| {
            let body = sh.bodies.dedicated;
            body(sh, id, item)
        }) {
            Ok(()) => {
                self.push_slot(ThreadKind::Dedicated, ThreadReason::Dedicated);
                self.tally.dedicated_alive += 1;
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
        self.tally.idle.push(thread);
    }

    fn release_idle(&mut self) -> bool {
        let Some(thread) = self.tally.release_idle() else {
            return false;
        };
        let t = &mut self.threads[thread as usize];
        t.state = ThreadState::Starting;
        t.cv.notify_all();
        true
    }

    /// Retires a working thread (it stops counting as active) until it is
    /// brought back or its wait times out.
    pub fn retire(&mut self, thread: ThreadId) {
        let deadline = self.clock() + self.idle_timeout;
        let t = &mut self.threads[thread as usize];
        t.state = ThreadState::Retired;
        t.idle_deadline = deadline;
        self.tally.retire(thread);
        self.sample_counts();
    }

    fn unretire(&mut self) -> bool {
        let Some(thread) = self.tally.unretire() else {
            return false;
        };
        let t = &mut self.threads[thread as usize];
        t.state = ThreadState::Starting;
        t.cv.notify_all();
        self.sample_counts();
        true
    }

    /// An idle thread timed out but stays: it waits again from now.
    pub fn idle_again(&mut self, thread: ThreadId) {
        self.tally.idle.retain(|&i| i != thread);
        self.make_idle(thread);
    }

    pub fn exit_thread(&mut self, thread: ThreadId) {
        let (state, kind) = {
            let t = &self.threads[thread as usize];
            (t.state, t.kind)
        };
        match kind {
            ThreadKind::Dedicated => self.tally.dedicated_alive -= 1,
            // The process's own main thread has no slot here.
            ThreadKind::Main => debug_assert!(false, "a native slot is never the main thread"),
            ThreadKind::Pool => {
                self.tally.pool_thread_exited(thread, state);
                // Work left in its local queue (a retired thread's) stays
                // runnable (the engine leaves it there for stealing).
                self.state.flush_local(thread);
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
}

impl PoolControl for Pool {
    fn now(&self) -> SimTime {
        self.clock()
    }
    fn processors(&self) -> u32 {
        self.scenario.machine.processors()
    }
    fn counts(&self) -> PoolCounts {
        self.tally.snapshot(&self.state)
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
        if self.tally.at_max() {
            return false;
        }
        self.create_pool_thread(reason)
    }
    fn wake_at(&mut self, at: SimTime, wake: crate::policy::Wake) {
        self.schedule(at, TimerEvent::PolicyWake(wake));
    }
    fn goal_changed(&mut self, goal: u32, _reason: crate::trace::GoalReason) {
        self.goal = Some(goal);
        self.sample_counts();
    }
}

impl Inner {
    /// The run starts: the policy's `start`, the first periodic sample.
    pub fn start(&mut self) {
        self.policy.start(&mut self.pool);
        let at = SimTime::ZERO + self.pool.sample_every;
        self.pool.schedule(at, TimerEvent::Sample);
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
            self.pair_push(p, NativeWork::Item(item), from);
            return;
        }
        let local = match (submit, from) {
            (Submit::QueueUserWorkItem, _) => None,
            (_, Some(t)) if self.pool.is_pool(t) => Some(t),
            _ => None,
        };
        match local {
            Some(t) => self.pool.state.enqueue_local(t, NativeWork::Item(item)),
            None => self.pool.enqueue_global(NativeWork::Item(item)),
        }
        self.request_thread(RequestCause::Enqueue);
    }

    /// A firing of group `g`'s timer runs its callback on pool thread `t`:
    /// it queues the group's next `per_tick` items from `t` (the engine's
    /// `timer_tick`).
    pub fn timer_tick(&mut self, t: ThreadId, g: u32) {
        let scenario = Arc::clone(&self.pool.scenario);
        let group = &scenario.groups[g as usize];
        let Some(timer) = group.timer() else {
            return;
        };
        for _ in 0..timer.per_tick {
            if self.pool.groups[g as usize].submitted >= group.count {
                break;
            }
            self.submit_task(g, Some(t));
            self.pool.groups[g as usize].submitted += 1;
        }
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
            if let Some(timer) = group.timer() {
                if state.submitter_queued {
                    continue;
                }
                if base <= self.pool.clock() {
                    // new Timer(callback, null, 0, period): the main thread
                    // has no slot here, so the timer joins thread 0's queue.
                    self.pool.groups[g].submitter_queued = true;
                    let now = self.pool.clock();
                    let tick = TimerAction::Tick(g as u32);
                    self.add_periodic_timer(now, tick, 0, timer.period, timer.firings);
                } else {
                    pending = true;
                    next = Some(next.map_or(base, |n| n.min(base)));
                }
                continue;
            }
            if group.from == Origin::Pool {
                if state.submitter_queued {
                    continue;
                }
                if base <= self.pool.clock() {
                    // Task.Run(() => { ...submit... }) from the main thread.
                    self.pool.groups[g].submitter_queued = true;
                    self.pool.enqueue_global(NativeWork::Submitter(g as u32));
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
    pub fn pair_push(&mut self, p: u32, work: NativeWork, from: Option<ThreadId>) {
        if self.pool.pairs[p as usize].push(work) {
            self.pool.enqueue_from(from, NativeWork::PairProcessor(p));
            self.request_thread(RequestCause::Enqueue);
        }
    }

    /// Queues the continuation of `item` where its scheduler puts it: the
    /// pair's queue for a task on a pair, else `from`'s local queue (a pool
    /// thread) or the global queue.
    pub fn queue_continuation(&mut self, item: ItemId, from: Option<ThreadId>) {
        if let Some(p) = self.pool.item_pair[item as usize] {
            self.pair_push(p, NativeWork::Continuation(item), None);
        } else {
            self.pool.enqueue_from(from, NativeWork::Continuation(item));
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
        if sem.try_acquire() {
            true
        } else {
            sem.wait(item);
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
            if let Some(waiter) = self.pool.semaphores[s as usize].release() {
                self.pool
                    .enqueue_from(Some(t), NativeWork::Continuation(waiter));
                self.request_thread(RequestCause::Enqueue);
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
                ..
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
        self.pool.enqueue_global(NativeWork::Probe(p));
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

    /// The timer thread handles an event that came due.
    pub fn timer_event(&mut self, at: SimTime, event: TimerEvent) {
        match event {
            TimerEvent::PolicyWake(tag) => self.policy.wake(&mut self.pool, tag),
            TimerEvent::TimerThread(q, generation) => self.timer_thread(q, generation),
            TimerEvent::Sample => {
                self.pool.sample_periodic();
                let now = self.pool.clock();
                let next = (at + self.pool.sample_every).max(now);
                self.pool.schedule(next, TimerEvent::Sample);
            }
        }
    }
}

impl PoolHost for Inner {
    type Work = NativeWork;
    type Timer = TimerAction;

    fn state(&mut self) -> &mut PoolState<NativeWork, TimerAction> {
        &mut self.pool.state
    }
    fn clock(&self) -> SimTime {
        self.pool.clock()
    }
    fn seeking_work(&mut self, t: ThreadId) {
        self.policy.seeking_work(&mut self.pool, t);
    }
    fn found_no_request(&mut self, t: ThreadId) {
        self.policy.found_no_request(&mut self.pool, t);
    }
    fn thread_requested(&mut self, cause: RequestCause) {
        self.policy.thread_requested(&mut self.pool, cause);
    }
    fn queue_changed(&mut self) {}
    fn wake_timer_thread(&mut self, q: u32, due: SimTime, generation: u64) {
        self.pool
            .schedule(due, TimerEvent::TimerThread(q, generation));
    }
}
