//! The pool's threads: the state each is in ([`ThreadState`]) and how many
//! are in each, as the policy counts them ([`ThreadCounts`]): idle threads
//! released last-in first-out, retired ones brought back, the snapshot the
//! policy reads.

use super::PoolState;
use crate::policy::PoolCounts;
use crate::trace::ThreadId;

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
