//! The timer queues: a new timer joins one (per `timers.queue_of`), the
//! timer thread is armed for the earliest, and the due ones are taken in
//! order.
//!
//! A periodic timer (a program's `System.Threading.Timer` with a period)
//! stays in its queue: when it is taken, its next due time is set at once,
//! as CoreCLR's `TimerQueue.FireNextTimers` does before it runs the
//! callback (dotnet/runtime `src/libraries/System.Private.CoreLib/src/
//! System/Threading/Timer.cs`, the same in .NET Core 3.1's
//! `src/System.Private.CoreLib/shared/System/Threading/Timer.cs`): the
//! old due time plus the period when the timer fires less than a period
//! late, else 1 ms after it fires (`_dueTime = elapsed - dueTime < period
//! ? period - (elapsed - dueTime) : 1`). So a callback that runs late,
//! behind a starved pool, does not push the later ones back unless it is
//! a whole period late. CoreCLR takes the due timers on a pool thread
//! (the timer queue is itself pool work), so a starved pool delays the
//! taking too; Mono's `Timer.Scheduler` thread takes them on time and
//! sets `next_run` = now + period there (mono/mono `mcs/class/corlib/
//! System.Threading/Timer.cs`), which on time is the same instant.

use std::cmp::Reverse;

use rand::RngExt;

use super::{Periodic, PoolState, PoolWork};
use crate::policy::config::TimerQueueChoice;
use crate::time::{SimDuration, SimTime};
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

    /// Adds a periodic timer created by thread `by`, first due at `due`,
    /// then every `period` (see the module head) until it has fired
    /// `firings` times. Returns the queue when the timer thread must be
    /// re-armed for it.
    pub(super) fn add_periodic_timer(
        &mut self,
        due: SimTime,
        action: A,
        by: ThreadId,
        period: SimDuration,
        firings: u32,
    ) -> Option<u32> {
        let id = self.timers.len() as u32;
        if firings > 1 {
            self.periodic.push((
                id,
                Periodic {
                    period,
                    left: firings - 1,
                },
            ));
        }
        self.add_timer(due, action, by)
    }

    /// A new arming of queue `q`'s timer thread: the generation it carries
    /// and its earliest due time, if any.
    pub(super) fn arm_timer(&mut self, q: u32) -> (u64, Option<SimTime>) {
        let queue = &mut self.timer_queues[q as usize];
        queue.generation += 1;
        let due = queue.heap.peek().map(|Reverse((due, _))| *due);
        (queue.generation, due)
    }

    /// Takes the earliest timer of queue `q` if it is due by `now`; a
    /// periodic one with firings left goes back in with its next due time
    /// (see the module head), always after `now`.
    pub(super) fn pop_due_timer(&mut self, q: u32, now: SimTime) -> Option<u32> {
        let heap = &mut self.timer_queues[q as usize].heap;
        let (due, id) = match heap.peek() {
            Some(Reverse((due, _))) if *due <= now => heap.pop().map(|Reverse(e)| e)?,
            _ => return None,
        };
        if let Some((_, p)) = self.periodic.iter_mut().find(|(t, _)| *t == id)
            && p.left > 0
        {
            p.left -= 1;
            let late = now.since(due);
            let next = if late < p.period {
                due + p.period
            } else {
                now + SimDuration::from_ms(1)
            };
            heap.push(Reverse((next, id)));
        }
        Some(id)
    }
}
