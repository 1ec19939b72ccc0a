//! The timer queues: a new timer joins one (per `timers.queue_of`), the
//! timer thread is armed for the earliest, and the due ones are taken in
//! order.

use std::cmp::Reverse;

use rand::RngExt;

use super::{PoolState, PoolWork};
use crate::policy::config::TimerQueueChoice;
use crate::time::SimTime;
use crate::trace::ThreadId;

impl<W: PoolWork, A: Copy> PoolState<W, A> {
    /// The callback of timer `id`.
    pub fn timer(&self, id: u32) -> A {
        self.timers[id as usize]
    }

    /// Adds a timer created by thread `by`: it joins the queue of the
    /// processor `by` runs on (`TimerQueue.Instances[GetCurrentProcessorNumber()
    /// % count]`: thread index mod count, or a processor drawn once for the
    /// thread) or a random one, per `timers.queue_of`. Returns the queue
    /// when the timer thread must be re-armed for it.
    pub(super) fn add_timer(&mut self, due: SimTime, action: A, by: ThreadId) -> Option<u32> {
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
    pub(super) fn arm_timer(&mut self, q: u32) -> (u64, Option<SimTime>) {
        let queue = &mut self.timer_queues[q as usize];
        queue.generation += 1;
        let due = queue.heap.peek().map(|Reverse((due, _))| *due);
        (queue.generation, due)
    }

    /// Takes the earliest timer of queue `q` if it is due by `now`.
    pub(super) fn pop_due_timer(&mut self, q: u32, now: SimTime) -> Option<u32> {
        let heap = &mut self.timer_queues[q as usize].heap;
        match heap.peek() {
            Some(Reverse((due, _))) if *due <= now => heap.pop().map(|Reverse((_, id))| id),
            _ => None,
        }
    }
}
