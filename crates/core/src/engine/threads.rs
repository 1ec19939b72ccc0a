//! The threads' lifecycle: creating, starting, idling, retiring, waking
//! and exiting threads.
//!
//! A pool thread is created starting (ready after its start latency, or
//! the pool's start-up latency for the first), runs the worker loop
//! (`run`), goes idle when it finds no work (its wait for work times out
//! after `idle_timeout`, then the policy says whether it exits), or
//! retires when the policy stops it; an idle or retired thread is woken
//! (after the wake latency) when the pool adds a worker. A dedicated
//! thread (`new Thread`) runs its one frame and exits; the main thread is
//! created the first time it runs work. Every change of state bumps the
//! thread's generation, which invalidates the events scheduled for the
//! earlier state.

use crate::policy::{BlockKind, Policy};
use crate::pool::ThreadKind;
use crate::pool::state::{ThreadState, WorkerNext};
use crate::time::SimDuration;
use crate::trace::{Decision, Phase, ThreadId, ThreadReason, ThreadRecord, TraceEvent, TraceSink};

use super::queue::{EventKind, Fifo};
use super::run::Engine;
use super::world::{Frame, Work, World};

/// What an active thread is doing, while it waits on an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Activity {
    None,
    Cpu,
    Spin,
    /// A Stopwatch busy loop: a whole core until its wall-clock deadline.
    Busy,
    Sleep,
    Wait,
    /// Blocked joining a parallel call; the kind decides cooperative blocking.
    Join(BlockKind),
    SubmitterPause,
    /// Waiting for its core after waking a thread that took it.
    Preempted,
    /// Waiting for a pool thread it created to start (Mono's
    /// `mono_thread_create_internal` waits for the new thread to register),
    /// then goes on as [`PoolThread::after_creation`] says.
    CreatingThread,
}

/// A thread of the run: a pool thread, a dedicated one or the main thread.
#[derive(Debug)]
pub(super) struct PoolThread {
    pub(super) kind: ThreadKind,
    pub(super) state: ThreadState,
    pub(super) activity: Activity,
    /// Invalidates events scheduled for an earlier state.
    pub(super) generation: u64,
    pub(super) frames: Vec<Frame>,
    /// Where a worker's loop goes on once the thread it created has
    /// started ([`Activity::CreatingThread`]).
    pub(super) after_creation: Option<WorkerNext<Work>>,
}

impl<S: TraceSink> World<'_, S> {
    fn new_thread(&mut self, kind: ThreadKind, reason: ThreadReason) -> ThreadId {
        let id = self.threads.len() as ThreadId;
        self.threads.push(PoolThread {
            kind,
            state: ThreadState::Starting,
            activity: Activity::None,
            generation: 0,
            frames: Vec::new(),
            after_creation: None,
        });
        self.pool.add_thread();
        self.trace.threads.push(ThreadRecord {
            thread: id,
            created: self.now,
            reason,
            exited: None,
        });
        self.record(TraceEvent::ThreadCreated { thread: id, reason });
        id
    }

    pub(super) fn create_pool_thread(&mut self, reason: ThreadReason) -> ThreadId {
        let id = self.new_thread(ThreadKind::Pool, reason);
        self.tally.existing += 1;
        self.tally.starting += 1;
        self.phase(id, Phase::Starting, None);
        self.sample_counts();
        let ready = match self.first_start_latency.take() {
            Some(start_up) => {
                self.pool_ready_at = self.now + start_up;
                self.pool_ready_at
            }
            None => (self.now + self.thread_start_latency()).max(self.pool_ready_at),
        };
        self.schedule_in(Fifo::Ready, ready, EventKind::ThreadReady(id, 0));
        id
    }

    /// A new pool thread's start latency: drawn from the `thread-start`
    /// stream when the policy measured it as a distribution.
    pub(super) fn thread_start_latency(&mut self) -> SimDuration {
        self.start_latency.draw_from(self.start_rng.as_mut())
    }

    /// A dedicated thread (`new Thread`) that runs `frame` and exits.
    pub(super) fn create_dedicated_thread(
        &mut self,
        frame: Frame,
        latency: SimDuration,
    ) -> ThreadId {
        let id = self.new_thread(ThreadKind::Dedicated, ThreadReason::Dedicated);
        self.threads[id as usize].frames.push(frame);
        self.tally.dedicated_alive += 1;
        self.phase(id, Phase::Starting, None);
        self.sample_counts();
        self.schedule_in(
            Fifo::Ready,
            self.now + latency,
            EventKind::ThreadReady(id, 0),
        );
        id
    }

    /// The main thread, created the first time it runs work.
    pub(super) fn main_thread(&mut self) -> ThreadId {
        if let Some(t) = self.main_thread {
            return t;
        }
        let id = self.new_thread(ThreadKind::Main, ThreadReason::Main);
        self.threads[id as usize].state = ThreadState::Active;
        self.main_thread = Some(id);
        id
    }

    pub(super) fn make_idle(&mut self, thread: ThreadId) {
        let t = &mut self.threads[thread as usize];
        t.state = ThreadState::Idle;
        t.activity = Activity::None;
        t.generation += 1;
        let generation = t.generation;
        self.tally.idle.push(thread);
        self.phase(thread, Phase::Idle, None);
        self.arm_idle_timeout(thread, generation);
    }

    pub(super) fn release_idle(&mut self) -> bool {
        let Some(thread) = self.tally.release_idle() else {
            return false;
        };
        self.events.disarm_idle(thread);
        let t = &mut self.threads[thread as usize];
        t.state = ThreadState::Starting;
        t.generation += 1;
        let generation = t.generation;
        self.phase(thread, Phase::Starting, None);
        self.schedule_in(
            Fifo::Ready,
            self.now + self.wake_latency,
            EventKind::ThreadReady(thread, generation),
        );
        true
    }

    /// Retires a working thread (it stops counting as active) until it is
    /// brought back or its wait times out.
    pub(super) fn retire(&mut self, thread: ThreadId) {
        let t = &mut self.threads[thread as usize];
        t.state = ThreadState::Retired;
        t.activity = Activity::None;
        t.generation += 1;
        let generation = t.generation;
        self.tally.retire(thread);
        self.phase(thread, Phase::Idle, None);
        self.sample_counts();
        self.arm_idle_timeout(thread, generation);
    }

    pub(super) fn unretire(&mut self) -> bool {
        let Some(thread) = self.tally.unretire() else {
            return false;
        };
        self.events.disarm_idle(thread);
        let t = &mut self.threads[thread as usize];
        t.state = ThreadState::Starting;
        t.generation += 1;
        let generation = t.generation;
        self.phase(thread, Phase::Starting, None);
        self.sample_counts();
        self.schedule_in(
            Fifo::Ready,
            self.now + self.wake_latency,
            EventKind::ThreadReady(thread, generation),
        );
        true
    }

    pub(super) fn exit_thread(&mut self, thread: ThreadId) {
        self.events.disarm_idle(thread);
        let (state, kind) = {
            let t = &self.threads[thread as usize];
            (t.state, t.kind)
        };
        match kind {
            ThreadKind::Dedicated => self.tally.dedicated_alive -= 1,
            ThreadKind::Main => {}
            ThreadKind::Pool => self.tally.pool_thread_exited(thread, state),
        }
        let t = &mut self.threads[thread as usize];
        t.state = ThreadState::Exited;
        t.generation += 1;
        self.trace.threads[thread as usize].exited = Some(self.now);
        self.record(TraceEvent::ThreadExited { thread });
        self.sample_counts();
    }

    /// Arms `thread`'s idle (or retired) wait timeout, due `idle_timeout`
    /// from now, for its state of `generation`.
    fn arm_idle_timeout(&mut self, thread: ThreadId, generation: u64) {
        self.events
            .arm_idle(thread, self.now + self.idle_timeout, generation);
    }
}

impl<S: TraceSink, P: Policy + ?Sized> Engine<'_, S, P> {
    /// An idle (or retired) thread's wait for work timed out (rare: kept
    /// out of the event loop's hot path).
    #[cold]
    #[inline(never)]
    pub(super) fn idle_timeout(&mut self, t: ThreadId, generation: u64) {
        let th = self.world.th(t);
        debug_assert_eq!(th.generation, generation, "a stale idle timeout");
        if th.generation != generation {
            return;
        }
        let state = th.state;
        let goal = self.world.goal;
        let (retired, exits) = match state {
            ThreadState::Retired => {
                self.world.exit_thread(t);
                (true, true)
            }
            ThreadState::Idle => {
                if self.policy.idle_timed_out(&mut self.world, t) {
                    self.world.exit_thread(t);
                    (false, true)
                } else {
                    self.world.tally.idle.retain(|&i| i != t);
                    self.world.make_idle(t);
                    (false, false)
                }
            }
            _ => return,
        };
        if S::ENABLED {
            let decision = Decision::IdleTimeout {
                thread: t,
                waited: self.world.idle_timeout,
                retired,
                exits,
                goal,
                new_goal: self.world.goal,
            };
            self.world.record(TraceEvent::Decision(decision));
        }
    }

    /// `t` created a pool thread from its pool code (a dequeue's thread
    /// request, hill climbing on a completion) and waits for it to start
    /// before it goes on with `next` (Mono: `create_thread` waits on
    /// `start_info->registered`, mono/mono `mono/metadata/threads.c`).
    pub(super) fn wait_for_creation(&mut self, t: ThreadId, next: WorkerNext<Work>) {
        let wait = std::mem::take(&mut self.world.creation_owed);
        let th = self.world.th(t);
        th.activity = Activity::CreatingThread;
        th.after_creation = Some(next);
        let generation = th.generation;
        self.world
            .schedule(self.world.now + wait, EventKind::StepDone(t, generation));
    }

    pub(super) fn block_counts(&mut self, kind: BlockKind) {
        match kind {
            BlockKind::Sleep => self.world.tally.blocked_sleep += 1,
            BlockKind::TaskWait => self.world.tally.blocked_wait += 1,
            BlockKind::Other => {}
        }
    }

    pub(super) fn unblock_counts(&mut self, kind: BlockKind) {
        match kind {
            BlockKind::Sleep => self.world.tally.blocked_sleep -= 1,
            BlockKind::TaskWait => self.world.tally.blocked_wait -= 1,
            BlockKind::Other => {}
        }
    }
}
