//! The work queues and the dequeue order (own local queue, high priority,
//! global, steal, time-sensitive), and the thread requests: the managed
//! queue's outstanding ones, the native pool's unmanaged ones, and which a
//! seeking worker takes.

use rand::RngExt;

use super::{PoolState, PoolWork};
use crate::policy::config::{RequestMode, TimerDispatch};
use crate::time::SimTime;
use crate::trace::ThreadId;

/// The request a seeking worker took.
pub(super) enum Taken<W> {
    /// An unmanaged request, with the work it found (if any).
    Unmanaged(Option<W>),
    /// A managed request, with the time-sensitive item to run first (if any).
    Managed(Option<W>),
    None,
}

impl<W: PoolWork, A: Copy> PoolState<W, A> {
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
    pub(super) fn dequeue(&mut self, thread: ThreadId) -> Option<W> {
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

    pub(super) fn dequeue_time_sensitive(&mut self) -> Option<W> {
        let work = self.time_sensitive.pop_front();
        if work.is_some() {
            self.queued -= 1;
        }
        work
    }

    // ---- requests -----------------------------------------------------

    /// The counting half of `EnsureThreadRequested`: one more outstanding
    /// request, up to the cap. True when one was added (the policy is told).
    pub(super) fn add_request(&mut self) -> bool {
        if self.outstanding < self.request_cap {
            self.outstanding += 1;
            self.pending_requests += 1;
            true
        } else {
            false
        }
    }

    /// Whether a thread request, managed or unmanaged, waits for a thread
    /// (`AreRequestsPendingInAnyAppDomains`).
    pub(super) fn requests_pending(&self) -> bool {
        self.pending_requests + self.unmanaged_pending > 0
    }

    /// Thread `t` takes a pending request at `now`, an unmanaged one first
    /// when the hint says so or no managed one is pending.
    pub(super) fn take_request(&mut self, t: ThreadId, now: SimTime) -> Taken<W> {
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
    pub(super) fn asks_after_dequeue(&mut self, t: ThreadId) -> bool {
        match self.request_mode {
            RequestMode::EveryDequeue => true,
            RequestMode::FirstDequeue => {
                !std::mem::replace(&mut self.workers[t as usize].requested_this_dispatch, true)
            }
        }
    }
}
