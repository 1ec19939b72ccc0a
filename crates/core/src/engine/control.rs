//! The engine's side of the pool's interfaces: [`PoolControl`], what a
//! policy may read and do (on the [`World`]), and [`PoolHost`], what the
//! shared pool mechanics (`crate::pool::state`) call back (on the
//! [`Engine`]).

use crate::policy::{Policy, PoolControl, PoolCounts, RequestCause, Wake};
use crate::pool::TimerAction;
use crate::pool::state::{PoolHost, PoolState, PoolWork};
use crate::time::SimTime;
use crate::trace::{Decision, GoalReason, ThreadId, ThreadReason, TraceEvent, TraceSink};

use super::queue::EventKind;
use super::run::Engine;
use super::world::{Work, World};

impl<S: TraceSink> PoolControl for World<'_, S> {
    fn now(&self) -> SimTime {
        self.now
    }
    fn processors(&self) -> u32 {
        self.scenario.machine.processors()
    }
    fn counts(&self) -> PoolCounts {
        self.tally.snapshot(&self.pool)
    }
    fn cpu_busy_core_ns(&mut self) -> u128 {
        self.cpu.advance(self.now);
        self.cpu.busy_core_ns()
    }
    fn cores_taken(&self) -> bool {
        self.cpu.cores_taken()
    }
    fn add_worker(&mut self, reason: ThreadReason) -> bool {
        if self.release_idle() || self.unretire() {
            return true;
        }
        if self.tally.at_max() {
            return false;
        }
        self.create_pool_thread(reason);
        self.creation_owed = self.creation_owed + self.creation_wait;
        true
    }
    fn wake_at(&mut self, at: SimTime, wake: Wake) {
        self.schedule(at, EventKind::PolicyWake(wake.pack()));
    }
    fn goal_changed(&mut self, goal: u32, reason: GoalReason) {
        self.goal = Some(goal);
        self.record(TraceEvent::GoalChanged { goal, reason });
        self.sample_counts();
    }
    fn decision(&mut self, decision: Decision) {
        if S::ENABLED {
            self.record(TraceEvent::Decision(decision));
        }
    }
}

impl PoolWork for Work {
    const TIMER_QUEUE: fn(u32) -> Self = Work::TimerQueue;
    const TIMER_CALLBACK: fn(u32) -> Self = Work::TimerCallback;
}

impl<S: TraceSink, P: Policy + ?Sized> PoolHost for Engine<'_, S, P> {
    type Work = Work;
    type Timer = TimerAction;

    fn state(&mut self) -> &mut PoolState<Work, TimerAction> {
        &mut self.world.pool
    }
    fn clock(&self) -> SimTime {
        self.world.now
    }
    fn seeking_work(&mut self, t: ThreadId) {
        self.policy.seeking_work(&mut self.world, t);
    }
    fn found_no_request(&mut self, t: ThreadId) {
        self.policy.found_no_request(&mut self.world, t);
    }
    fn thread_requested(&mut self, cause: RequestCause) {
        self.policy.thread_requested(&mut self.world, cause);
    }
    fn queue_changed(&mut self) {
        self.world.queue_changed();
    }
    fn wake_timer_thread(&mut self, q: u32, due: SimTime, generation: u64) {
        let at = self.world.timer_wake(due);
        self.world
            .schedule(at, EventKind::TimerThread(q, generation));
    }
    fn timer_backlog(&mut self, timer: Option<u32>, queue: u32, ahead: u64, via: &'static str) {
        if !S::ENABLED {
            return;
        }
        let releases = timer.and_then(|id| match self.world.pool.timer(id) {
            TimerAction::ReleaseWaiter(t) => Some(t),
            TimerAction::Resume(_) | TimerAction::Tick(_) => None,
        });
        self.world
            .record(TraceEvent::Decision(Decision::TimerBacklog {
                timer,
                queue,
                ahead,
                via,
                releases,
            }));
    }
}
