//! The pool mechanics that the simulator ([`crate::engine`]) and the native
//! pool (`crate::measure::native`) share, written once so the two cannot
//! drift apart: the work queues and the dequeue order, the thread requests
//! of the managed queue and the native pool's unmanaged ones, the decisions
//! of the worker loop, and the timer queues with what the timer thread and
//! a worker do with an expired one.
//!
//! [`PoolState`] is plain data with methods that take the instant and return
//! decisions. [`PoolHost`] is what the engine and the native pool each
//! implement around it (their clock, how the policy is told of a thread
//! request, how the timer thread is woken, whether a queue-length change is
//! traced); its provided methods are the shared steps that interleave state
//! changes with questions to the policy, in the order both pools ask them.
//!
//! - Queues: a global FIFO queue, one local queue per thread (LIFO for its
//!   owner, stolen FIFO by others, starting at a random thread), the
//!   high-priority queue (.NET 7+) and the time-sensitive queue (.NET 6).
//!   A worker dequeues own local → high priority → global → steal →
//!   time-sensitive.
//! - Requests: the managed queue's `EnsureThreadRequested` (outstanding
//!   requests up to a cap, the VM's pending count), the native pool's
//!   unmanaged requests (timer firings), and the hint with which a seeking
//!   worker alternates between the two.
//! - Timers: `timers.queues` timer queues, a new timer joining one per
//!   `timers.queue_of`; the timer thread hands an expired queue to the pool
//!   per `timers.dispatch`; the worker that runs a queue runs its first due
//!   callback inline and queues the others at the global tail.
//! - Throttles: the `ConcurrentExclusiveSchedulerPair`s and `SemaphoreSlim`s
//!   of the groups ([`Throttles`]).
//! - A timer callback (or timer queue) queued behind work items is reported
//!   to the host ([`PoolHost::timer_backlog`]; the engine records it as a
//!   decision for `poolsim explain`).
//! - Threads: their states and counts ([`ThreadCounts`]), and the trace's
//!   start and thread-count samples.
//!
//! Not modelled, though it is in the source: a native worker that takes an
//! unmanaged request keeps taking the queued ones for `TP_QUANTUM` (2 ms;
//! dotnet/coreclr v3.1 `src/vm/threadpoolrequest.cpp`,
//! `UnManagedPerAppDomainTPCount::DispatchWorkItem`), so one worker can fire
//! several timer queues in a row. Tried (issue 12): it brings two more of
//! .NET Core 3.1's generated runs inside the model's range (the runs whose
//! two first waiters are released by one injected thread), but takes seed
//! 000's .NET 5 `Parallel.Invoke` from 28.0 s to 20.0 s and
//! `Parallel.ForEach` from 22.0 s to 21.0 s against a published ~25 s, out
//! of their 15 % tolerance. It waits for whatever keeps the real pool
//! slower there.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use crate::policy::config::{RequestMode, ThrottleKind, TimerDispatch, TimerQueueChoice};
use crate::policy::{PolicyConfig, PoolCounts, RequestCause};
use crate::rng;
use crate::scenario::{Scenario, Throttle};
use crate::time::{SimDuration, SimTime};
use crate::trace::{CountSample, ThreadId, Trace};

/// A pool's unit of work, as far as the shared mechanics build it.
pub trait PoolWork: Copy + Eq {
    /// Fire the due timers of timer queue `q`.
    const TIMER_QUEUE: fn(u32) -> Self;
    /// One due timer's callback.
    const TIMER_CALLBACK: fn(u32) -> Self;
}

/// What a pool thread does next in its worker loop.
///
/// The native worker loop takes a pending thread request (`Seek`) —
/// alternating between unmanaged requests (timer firings) and managed ones
/// — and the managed `Dispatch` loop dequeues until the queue is empty (or,
/// native pool, the quantum expires), asking for another thread after
/// dequeues and whenever it leaves for a reason other than an empty queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerNext<W> {
    /// Look for a thread request to take ([`PoolHost::seek`]).
    Seek,
    /// Dequeue the next work item ([`PoolHost::dispatch`]).
    Dispatch,
    /// Run this work unit, then [`WorkerNext::Completed`].
    Run(W),
    /// A work unit just completed: the policy's `work_completed`, then
    /// [`PoolHost::keep_working`] if the thread stays.
    Completed,
    /// No request is pending: the thread waits for work.
    Idle,
}

/// The request a seeking worker took.
enum Taken<W> {
    /// An unmanaged request, with the work it found (if any).
    Unmanaged(Option<W>),
    /// A managed request, with the time-sensitive item to run first (if any).
    Managed(Option<W>),
    None,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadState {
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

/// The pool's threads by state, as the policy counts them.
#[derive(Debug)]
pub struct ThreadCounts {
    /// Idle pool threads; the last to go idle is released first.
    pub idle: Vec<ThreadId>,
    /// Retired pool threads; the last retired is brought back first.
    pub retired: Vec<ThreadId>,
    /// Active pool threads (starting, working or idle): `NumActive`.
    pub existing: u32,
    pub starting: u32,
    pub dedicated_alive: u32,
    pub blocked_sleep: u32,
    pub blocked_wait: u32,
    pub max_threads: u32,
}

impl ThreadCounts {
    pub fn new(max_threads: u32) -> Self {
        ThreadCounts {
            idle: Vec::new(),
            retired: Vec::new(),
            existing: 0,
            starting: 0,
            dedicated_alive: 0,
            blocked_sleep: 0,
            blocked_wait: 0,
            max_threads,
        }
    }

    /// Active pool threads that are not idle.
    pub fn working(&self) -> u32 {
        self.existing - self.idle.len() as u32
    }

    /// The threads a thread-count sample shows: active pool threads and
    /// dedicated threads.
    pub fn alive(&self) -> u32 {
        self.existing + self.dedicated_alive
    }

    /// Whether a new pool thread would pass `max_threads` (retired threads
    /// still count).
    pub fn at_max(&self) -> bool {
        self.existing + self.retired.len() as u32 >= self.max_threads
    }

    /// The snapshot the policy reads, with the pool's queue and request counts.
    pub fn snapshot<W, A>(&self, state: &PoolState<W, A>) -> PoolCounts {
        PoolCounts {
            existing: self.existing,
            working: self.working(),
            starting: self.starting,
            idle: self.idle.len() as u32,
            blocked_sleep: self.blocked_sleep,
            blocked_wait: self.blocked_wait,
            pending_requests: state.pending_requests + state.unmanaged_pending,
            queued: state.queued,
        }
    }

    /// Takes the thread that went idle last, now starting.
    pub fn release_idle(&mut self) -> Option<ThreadId> {
        let thread = self.idle.pop()?;
        self.starting += 1;
        Some(thread)
    }

    /// Takes the thread retired last, active and starting again.
    pub fn unretire(&mut self) -> Option<ThreadId> {
        let thread = self.retired.pop()?;
        self.existing += 1;
        self.starting += 1;
        Some(thread)
    }

    /// A working thread retires: it stops counting as active.
    pub fn retire(&mut self, thread: ThreadId) {
        self.retired.push(thread);
        self.existing -= 1;
    }

    /// Pool thread `thread`, in `state` (idle or retired), exits.
    pub fn pool_thread_exited(&mut self, thread: ThreadId, state: ThreadState) {
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
    }
}

/// A thread's part of the shared state.
#[derive(Debug)]
struct Worker<W> {
    local: VecDeque<W>,
    dispatch_start: SimTime,
    /// Whether this dispatch already asked for a thread (first-dequeue mode).
    requested_this_dispatch: bool,
}

#[derive(Debug, Default)]
struct TimerQueue {
    heap: BinaryHeap<Reverse<(SimTime, u32)>>,
    /// Queued for a worker and not yet run.
    scheduled: bool,
    generation: u64,
}

/// Queues, thread requests and timers of a pool, with work units `W` and
/// timer callbacks `A`.
#[derive(Debug)]
pub struct PoolState<W, A> {
    global: VecDeque<W>,
    high_priority: VecDeque<W>,
    time_sensitive: VecDeque<W>,
    /// .NET 6: every other dispatch entry takes a time-sensitive item first.
    time_sensitive_first: bool,
    /// One per thread of the run (pool or not), indexed by [`ThreadId`].
    workers: Vec<Worker<W>>,
    queued: u64,
    queued_local: u64,
    steal: ChaCha8Rng,

    unmanaged: VecDeque<W>,
    unmanaged_pending: u32,
    /// At most this many unmanaged requests pending (`cores`).
    unmanaged_cap: u32,
    /// Native pool: which request kind a worker tries first.
    hint_unmanaged: bool,
    /// The VM's count of thread requests not yet taken by a worker.
    pending_requests: u32,
    /// The managed queue's outstanding requests (capped).
    outstanding: u32,
    request_cap: u32,
    request_mode: RequestMode,
    quantum: SimDuration,
    leave_at_quantum: bool,

    timer_dispatch: TimerDispatch,
    timer_queues: Vec<TimerQueue>,
    timer_queue_of: TimerQueueChoice,
    timer_pick: ChaCha8Rng,
    /// Each thread's processor, drawn when it first creates a timer
    /// (`TimerQueueChoice::ThreadProcessor`).
    thread_processor: Vec<u32>,
    timers: Vec<A>,
}

impl<W: PoolWork, A: Copy> PoolState<W, A> {
    /// The state of a run on `cores` processors seeded with `seed`.
    pub fn new(config: &PolicyConfig, cores: u32, seed: u64) -> Self {
        let request_cap = match config.dispatch.requests {
            RequestMode::EveryDequeue => cores
                .saturating_mul(config.dispatch.max_outstanding_requests_per_core)
                .max(1),
            RequestMode::FirstDequeue => 1,
        };
        let timer_queue_count = config.timers.queues.resolve(cores).clamp(1, 4096) as usize;
        PoolState {
            global: VecDeque::new(),
            high_priority: VecDeque::new(),
            time_sensitive: VecDeque::new(),
            time_sensitive_first: false,
            workers: Vec::new(),
            queued: 0,
            queued_local: 0,
            steal: rng::stream(seed, "steal"),
            unmanaged: VecDeque::new(),
            unmanaged_pending: 0,
            unmanaged_cap: cores,
            hint_unmanaged: true,
            pending_requests: 0,
            outstanding: 0,
            request_cap,
            request_mode: config.dispatch.requests,
            quantum: config.dispatch.quantum,
            leave_at_quantum: config.dispatch.leave_at_quantum,
            timer_dispatch: config.timers.dispatch,
            timer_queues: (0..timer_queue_count)
                .map(|_| TimerQueue::default())
                .collect(),
            timer_queue_of: config.timers.queue_of,
            timer_pick: rng::stream(seed, "timer-queue"),
            thread_processor: Vec::new(),
            timers: Vec::new(),
        }
    }

    /// A thread of the run was created (its id is the next index).
    pub fn add_thread(&mut self) {
        self.workers.push(Worker {
            local: VecDeque::new(),
            dispatch_start: SimTime::ZERO,
            requested_this_dispatch: false,
        });
    }

    /// Work items queued and not yet dequeued.
    pub fn queued(&self) -> u64 {
        self.queued
    }

    // ---- queues -------------------------------------------------------

    pub fn enqueue_global(&mut self, work: W) {
        self.global.push_back(work);
        self.queued += 1;
    }

    pub fn enqueue_local(&mut self, thread: ThreadId, work: W) {
        self.workers[thread as usize].local.push_back(work);
        self.queued += 1;
        self.queued_local += 1;
    }

    /// Removes `work` from `thread`'s local queue if it is there (the
    /// inlining of `Task.Wait` on a task the waiter queued itself).
    pub fn take_from_local(&mut self, thread: ThreadId, work: W) -> bool {
        let local = &mut self.workers[thread as usize].local;
        if let Some(pos) = local.iter().rposition(|w| *w == work) {
            local.remove(pos);
            self.queued -= 1;
            self.queued_local -= 1;
            true
        } else {
            false
        }
    }

    /// Moves a leaving thread's local items to the global queue.
    pub fn flush_local(&mut self, thread: ThreadId) {
        let local = &mut self.workers[thread as usize].local;
        self.queued_local -= local.len() as u64;
        self.global.extend(local.drain(..));
    }

    fn steal_from_others(&mut self, thread: ThreadId) -> Option<W> {
        if self.queued_local == 0 {
            return None;
        }
        let n = self.workers.len();
        let start = self.steal.random_range(0..n);
        let t = thread as usize;
        let victim = (0..n)
            .map(|k| (start + k) % n)
            .find(|&v| v != t && !self.workers[v].local.is_empty())?;
        let work = self.workers[victim].local.pop_front()?;
        self.queued_local -= 1;
        Some(work)
    }

    /// Own local queue (LIFO), the high-priority queue (.NET 7+), the
    /// global queue (FIFO), then steal; the time-sensitive queue (.NET 6)
    /// only when all of those are empty.
    fn dequeue(&mut self, thread: ThreadId) -> Option<W> {
        if self.queued == 0 {
            return None;
        }
        let t = thread as usize;
        let work = if let Some(w) = self.workers[t].local.pop_back() {
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

    fn dequeue_time_sensitive(&mut self) -> Option<W> {
        let work = self.time_sensitive.pop_front();
        if work.is_some() {
            self.queued -= 1;
        }
        work
    }

    // ---- requests -----------------------------------------------------

    /// The counting half of `EnsureThreadRequested`: one more outstanding
    /// request, up to the cap. True when one was added (the policy is told).
    fn add_request(&mut self) -> bool {
        if self.outstanding < self.request_cap {
            self.outstanding += 1;
            self.pending_requests += 1;
            true
        } else {
            false
        }
    }

    /// Thread `t` takes a pending request at `now`, an unmanaged one first
    /// when the hint says so or no managed one is pending.
    fn take_request(&mut self, t: ThreadId, now: SimTime) -> Taken<W> {
        let unmanaged_ready = self.unmanaged_pending > 0 && !self.unmanaged.is_empty();
        let managed_ready = self.pending_requests > 0;
        if unmanaged_ready && (self.hint_unmanaged || !managed_ready) {
            self.unmanaged_pending -= 1;
            self.hint_unmanaged = false;
            Taken::Unmanaged(self.unmanaged.pop_front())
        } else if managed_ready {
            self.hint_unmanaged = true;
            self.pending_requests -= 1;
            self.outstanding = self.outstanding.saturating_sub(1);
            let worker = &mut self.workers[t as usize];
            worker.dispatch_start = now;
            worker.requested_this_dispatch = false;
            if self.timer_dispatch == TimerDispatch::TimeSensitive {
                // .NET 6.0.1+: every other dispatch entry, pool-wide,
                // takes a time-sensitive item first.
                self.time_sensitive_first = !self.time_sensitive_first;
                if self.time_sensitive_first {
                    return Taken::Managed(self.dequeue_time_sensitive());
                }
            }
            Taken::Managed(None)
        } else {
            Taken::None
        }
    }

    /// Whether a dequeue by `t` asks for another thread (`request_mode`).
    fn asks_after_dequeue(&mut self, t: ThreadId) -> bool {
        match self.request_mode {
            RequestMode::EveryDequeue => true,
            RequestMode::FirstDequeue => {
                !std::mem::replace(&mut self.workers[t as usize].requested_this_dispatch, true)
            }
        }
    }

    // ---- timers -------------------------------------------------------

    /// The callback of timer `id`.
    pub fn timer(&self, id: u32) -> A {
        self.timers[id as usize]
    }

    /// Adds a timer created by thread `by`: it joins the queue of the
    /// processor `by` runs on (`TimerQueue.Instances[GetCurrentProcessorNumber()
    /// % count]`: thread index mod count, or a processor drawn once for the
    /// thread) or a random one, per `timers.queue_of`. Returns the queue
    /// when the timer thread must be re-armed for it.
    fn add_timer(&mut self, due: SimTime, action: A, by: ThreadId) -> Option<u32> {
        let id = self.timers.len() as u32;
        self.timers.push(action);
        let n = self.timer_queues.len();
        let q = match self.timer_queue_of {
            _ if n <= 1 => 0,
            TimerQueueChoice::CreatingThread => by as usize % n,
            TimerQueueChoice::Random => self.timer_pick.random_range(0..n),
            TimerQueueChoice::ThreadProcessor => {
                let t = by as usize;
                while self.thread_processor.len() <= t {
                    let p = self.timer_pick.random_range(0..n) as u32;
                    self.thread_processor.push(p);
                }
                self.thread_processor[t] as usize
            }
        };
        let queue = &mut self.timer_queues[q];
        let earliest = queue.heap.peek().map(|Reverse((at, _))| *at);
        queue.heap.push(Reverse((due, id)));
        (!queue.scheduled && earliest.is_none_or(|e| due < e)).then_some(q as u32)
    }

    /// A new arming of queue `q`'s timer thread: the generation it carries
    /// and its earliest due time, if any.
    fn arm_timer(&mut self, q: u32) -> (u64, Option<SimTime>) {
        let queue = &mut self.timer_queues[q as usize];
        queue.generation += 1;
        let due = queue.heap.peek().map(|Reverse((due, _))| *due);
        (queue.generation, due)
    }

    /// Takes the earliest timer of queue `q` if it is due by `now`.
    fn pop_due_timer(&mut self, q: u32, now: SimTime) -> Option<u32> {
        let heap = &mut self.timer_queues[q as usize].heap;
        match heap.peek() {
            Some(Reverse((due, _))) if *due <= now => heap.pop().map(|Reverse((_, id))| id),
            _ => None,
        }
    }
}

/// What a pool provides around its [`PoolState`]; the provided methods are
/// the mechanics both pools run.
pub trait PoolHost {
    type Work: PoolWork;
    type Timer: Copy;

    fn state(&mut self) -> &mut PoolState<Self::Work, Self::Timer>;
    /// The pool's clock.
    fn clock(&self) -> SimTime;
    /// The policy's `seeking_work`.
    fn seeking_work(&mut self, t: ThreadId);
    /// The policy's `found_no_request`.
    fn found_no_request(&mut self, t: ThreadId);
    /// The policy's `thread_requested`.
    fn thread_requested(&mut self, cause: RequestCause);
    /// The number of queued items changed (the engine traces it).
    fn queue_changed(&mut self);
    /// The timer thread should look at queue `q` at `due`, armed as `generation`.
    fn wake_timer_thread(&mut self, q: u32, due: SimTime, generation: u64);
    /// Timer `timer`'s callback (`None`: timer queue `queue` as a whole) is
    /// being queued behind `ahead` work items that run first, `via` names
    /// where it waits. For tracing only; called with `ahead > 0`.
    fn timer_backlog(&mut self, _timer: Option<u32>, _queue: u32, _ahead: u64, _via: &'static str) {
    }

    /// The managed queue's `EnsureThreadRequested`: one more outstanding
    /// request, up to the cap, and the policy decides whether it adds a worker.
    fn request_thread(&mut self, cause: RequestCause) {
        if self.state().add_request() {
            self.thread_requested(cause);
        }
    }

    /// Queues `work` at the global tail.
    fn enqueue_global(&mut self, work: Self::Work) {
        self.state().enqueue_global(work);
        self.queue_changed();
    }

    /// Thread `t` looks for a thread request to take: an unmanaged one
    /// (its work runs, then counts as completed), a managed one (a dispatch
    /// loop starts, on .NET 6 every other time with a time-sensitive item),
    /// or none ([`WorkerNext::Idle`]).
    fn seek(&mut self, t: ThreadId) -> WorkerNext<Self::Work> {
        self.seeking_work(t);
        let now = self.clock();
        match self.state().take_request(t, now) {
            Taken::Unmanaged(Some(work)) => WorkerNext::Run(work),
            Taken::Unmanaged(None) => WorkerNext::Completed,
            Taken::Managed(Some(work)) => {
                self.queue_changed();
                WorkerNext::Run(work)
            }
            Taken::Managed(None) => WorkerNext::Dispatch,
            Taken::None => {
                self.found_no_request(t);
                WorkerNext::Idle
            }
        }
    }

    /// Thread `t`'s dispatch loop dequeues its next item, asking for
    /// another thread per `request_mode`.
    fn dispatch(&mut self, t: ThreadId) -> WorkerNext<Self::Work> {
        let Some(work) = self.state().dequeue(t) else {
            return WorkerNext::Seek;
        };
        self.queue_changed();
        if self.state().asks_after_dequeue(t) {
            self.request_thread(RequestCause::Dequeue);
        }
        WorkerNext::Run(work)
    }

    /// Thread `t` completed a work unit and stays: when its dispatch
    /// quantum has expired it leaves for the native worker loop asking for
    /// a thread to carry on, or (managed pools) starts a new quantum, on
    /// .NET 6 with one time-sensitive item.
    fn keep_working(&mut self, t: ThreadId) -> WorkerNext<Self::Work> {
        let now = self.clock();
        let state = self.state();
        let worker = &mut state.workers[t as usize];
        if now.since(worker.dispatch_start) < state.quantum {
            return WorkerNext::Dispatch;
        }
        if state.leave_at_quantum {
            self.request_thread(RequestCause::Leaving);
            return WorkerNext::Seek;
        }
        worker.dispatch_start = now;
        if state.timer_dispatch == TimerDispatch::TimeSensitive
            && let Some(work) = state.dequeue_time_sensitive()
        {
            // .NET 6: once per quantum, one time-sensitive item.
            self.queue_changed();
            return WorkerNext::Run(work);
        }
        WorkerNext::Dispatch
    }

    /// Adds a timer created by thread `by`, due at `due` (see
    /// `PoolState::add_timer`).
    fn add_timer(&mut self, due: SimTime, action: Self::Timer, by: ThreadId) {
        if let Some(q) = self.state().add_timer(due, action, by) {
            self.arm_timer_thread(q);
        }
    }

    /// Has the timer thread look at queue `q` when its earliest timer is due.
    fn arm_timer_thread(&mut self, q: u32) {
        if let (generation, Some(due)) = self.state().arm_timer(q) {
            self.wake_timer_thread(q, due, generation);
        }
    }

    /// The timer thread noticed that queue `q` has an expired timer: it
    /// hands the queue to the pool per `timers.dispatch`.
    fn timer_thread(&mut self, q: u32, generation: u64) {
        let state = self.state();
        let queue = &mut state.timer_queues[q as usize];
        if generation != queue.generation || queue.scheduled {
            return;
        }
        match state.timer_dispatch {
            TimerDispatch::GlobalPerCallback => {
                // Mono: every due callback is its own global work item.
                let now = self.clock();
                while let Some(id) = self.state().pop_due_timer(q, now) {
                    let ahead = self.state().queued;
                    if ahead > 0 {
                        self.timer_backlog(Some(id), q, ahead, "global queue");
                    }
                    self.enqueue_global((Self::Work::TIMER_CALLBACK)(id));
                    self.request_thread(RequestCause::Timer);
                }
                self.arm_timer_thread(q);
            }
            TimerDispatch::UnmanagedRequest => {
                queue.scheduled = true;
                state.unmanaged.push_back((Self::Work::TIMER_QUEUE)(q));
                if state.unmanaged_pending < state.unmanaged_cap {
                    state.unmanaged_pending += 1;
                    self.thread_requested(RequestCause::Timer);
                }
            }
            TimerDispatch::TimeSensitive => {
                queue.scheduled = true;
                let ahead = state.queued;
                state.time_sensitive.push_back((Self::Work::TIMER_QUEUE)(q));
                state.queued += 1;
                if ahead > 0 {
                    self.timer_backlog(None, q, ahead, "time-sensitive queue");
                }
                self.request_thread(RequestCause::Timer);
            }
            TimerDispatch::HighPriority => {
                queue.scheduled = true;
                let ahead = state.high_priority.len() as u64;
                state.high_priority.push_back((Self::Work::TIMER_QUEUE)(q));
                state.queued += 1;
                if ahead > 0 {
                    self.timer_backlog(None, q, ahead, "high-priority queue");
                }
                self.request_thread(RequestCause::Timer);
            }
        }
    }

    /// A worker runs timer queue `q`: its due timers are taken, all but the
    /// first queued as callbacks at the global tail. Returns the first,
    /// which the worker runs inline.
    fn fire_timer_queue(&mut self, q: u32) -> Option<u32> {
        let now = self.clock();
        let mut first = None;
        while let Some(id) = self.state().pop_due_timer(q, now) {
            if first.is_none() {
                first = Some(id);
            } else {
                let ahead = self.state().queued;
                if ahead > 0 {
                    self.timer_backlog(Some(id), q, ahead, "global queue");
                }
                self.enqueue_global((Self::Work::TIMER_CALLBACK)(id));
                self.request_thread(RequestCause::Enqueue);
            }
        }
        self.state().timer_queues[q as usize].scheduled = false;
        self.arm_timer_thread(q);
        first
    }
}

// ---- throttles --------------------------------------------------------

/// A `ConcurrentExclusiveSchedulerPair(n)`: tasks wait in the pair's queue;
/// at most `n` processing items are in the pool, each running the pair's
/// tasks in order until the queue is empty.
#[derive(Debug)]
pub struct Pair<W> {
    limit: u32,
    active: u32,
    queue: VecDeque<W>,
}

impl<W> Pair<W> {
    fn new(limit: u32) -> Self {
        Pair {
            limit: limit.max(1),
            active: 0,
            queue: VecDeque::new(),
        }
    }

    /// A task (or continuation) enters the queue. True when a processing
    /// item must be queued to the pool (fewer than the limit are active).
    pub fn push(&mut self, work: W) -> bool {
        self.queue.push_back(work);
        if self.active < self.limit {
            self.active += 1;
            true
        } else {
            false
        }
    }

    /// The next task for a processing item.
    pub fn pop(&mut self) -> Option<W> {
        self.queue.pop_front()
    }

    /// A processing item found the queue empty and ends.
    pub fn processor_done(&mut self) {
        self.active -= 1;
    }

    /// The pair's `maxConcurrencyLevel`.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Tasks waiting in the pair's queue.
    pub fn waiting(&self) -> usize {
        self.queue.len()
    }
}

/// A `SemaphoreSlim(n)` awaited with `WaitAsync()` around a body: granted
/// at once while the count is positive, else the waiter `T` queues; a
/// release hands the count to the first waiter.
#[derive(Debug)]
pub struct Semaphore<T> {
    count: u32,
    limit: u32,
    waiters: VecDeque<T>,
}

impl<T> Semaphore<T> {
    fn new(limit: u32) -> Self {
        Semaphore {
            count: limit,
            limit,
            waiters: VecDeque::new(),
        }
    }

    /// The initial count.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Waiters not yet granted the semaphore.
    pub fn waiting(&self) -> usize {
        self.waiters.len()
    }

    /// Takes the count if it is positive.
    pub fn try_acquire(&mut self) -> bool {
        if self.count > 0 {
            self.count -= 1;
            true
        } else {
            false
        }
    }

    /// Queues a waiter for a later release.
    pub fn wait(&mut self, waiter: T) {
        self.waiters.push_back(waiter);
    }

    /// `Release()`: the first waiter, which now holds the semaphore, or
    /// (none waiting) the count goes back up.
    pub fn release(&mut self) -> Option<T> {
        let waiter = self.waiters.pop_front();
        if waiter.is_none() {
            self.count += 1;
        }
        waiter
    }
}

/// The throttles of a run, one per group that has one
/// ([`group_throttle`](super::group_throttle)).
pub struct Throttles<W, T> {
    pub pairs: Vec<Pair<W>>,
    pub semaphores: Vec<Semaphore<T>>,
    /// Per group: the pair and the semaphore its tasks go through.
    pub of_group: Vec<(Option<u32>, Option<u32>)>,
}

impl<W, T> Throttles<W, T> {
    pub fn new(scenario: &Scenario, config: &PolicyConfig) -> Self {
        let mut throttles = Throttles {
            pairs: Vec::new(),
            semaphores: Vec::new(),
            of_group: Vec::with_capacity(scenario.groups.len()),
        };
        for g in 0..scenario.groups.len() {
            let throttle = super::group_throttle(scenario, g, Some(config));
            let (mut pair, mut semaphore) = (None, None);
            match throttle {
                Some(Throttle {
                    kind: ThrottleKind::ConcurrentExclusive,
                    limit,
                }) => {
                    pair = Some(throttles.pairs.len() as u32);
                    throttles.pairs.push(Pair::new(limit));
                }
                Some(Throttle {
                    kind: ThrottleKind::Semaphore,
                    limit,
                }) => {
                    semaphore = Some(throttles.semaphores.len() as u32);
                    throttles.semaphores.push(Semaphore::new(limit));
                }
                None => {}
            }
            throttles.of_group.push((pair, semaphore));
        }
        throttles
    }
}

// ---- trace ------------------------------------------------------------

/// The trace of a run of `scenario` under `config`, before anything
/// happened, with room for `reserve` items.
pub fn new_trace(scenario: &Scenario, config: &PolicyConfig, reserve: usize) -> Trace {
    Trace {
        scenario: scenario.name.clone(),
        policy: config.name.clone(),
        seed: scenario.seed,
        cores: scenario.machine.cores,
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
    }
}

/// What is left of a trace taken out of a finished run.
pub fn empty_trace() -> Trace {
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

/// Records a thread-count sample taken after a change: nothing when the
/// counts did not change, and one sample per instant (the last).
pub fn sample_counts(counts: &mut Vec<CountSample>, sample: CountSample) {
    match counts.last_mut() {
        Some(last) if last.threads == sample.threads && last.goal == sample.goal => {}
        Some(last) if last.at == sample.at => *last = sample,
        _ => counts.push(sample),
    }
}
