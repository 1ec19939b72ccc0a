//! The worker loop and the timer thread, written once for both pools:
//! [`PoolHost`] is what each pool provides around its [`PoolState`], and
//! its provided methods are the shared steps (seek a request, dispatch,
//! keep working or leave at the quantum, hand an expired timer queue to
//! the pool), each answering [`WorkerNext`].

use super::queues::Taken;
use super::{PoolState, PoolWork};
use crate::policy::RequestCause;
use crate::policy::config::TimerDispatch;
use crate::time::{SimDuration, SimTime};
use crate::trace::ThreadId;

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

    /// A worker told to stop has just retired (native pool,
    /// `ShouldWorkerKeepRunning` in `NotifyWorkItemComplete`): the managed
    /// dispatch loop's `finally` asks for a thread to carry on (capped like
    /// every request), then the native worker's `Retire:` path, with
    /// requests still pending, runs `MaybeAddWorkingWorker` once more, cap
    /// or not, so that a request taken by no one is not stranded behind a
    /// thread that left (dotnet/coreclr v3.1 `src/vm/win32threadpool.cpp`,
    /// `WorkerThreadStart`: "some work came in just before we decremented
    /// the active thread count"). Both see this thread gone: the caller
    /// retires it first.
    fn retired(&mut self) {
        self.request_thread(RequestCause::Leaving);
        if self.state().requests_pending() {
            self.thread_requested(RequestCause::Leaving);
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

    /// Adds a periodic timer created by thread `by`: first due at `due`,
    /// then every `period`, `firings` times in all (see
    /// `PoolState::add_periodic_timer`).
    fn add_periodic_timer(
        &mut self,
        due: SimTime,
        action: Self::Timer,
        by: ThreadId,
        period: SimDuration,
        firings: u32,
    ) {
        if let Some(q) = self
            .state()
            .add_periodic_timer(due, action, by, period, firings)
        {
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
