//! The event loop: [`Engine`] takes the events in order and dispatches
//! each ([`Engine::handle`]); a thread that an event lets go on runs its
//! worker loop (seek, dispatch, run, completed, idle) and the frames on its
//! stack until it waits on an event again.

use crate::policy::{BlockKind, Policy, Wake};
use crate::pool::state::{PoolHost, ThreadState, WorkerNext};
use crate::pool::{ThreadKind, TimerAction};
use crate::scenario::Arrival;
use crate::time::{SimDuration, SimTime};
use crate::trace::{Decision, ItemId, Phase, ThreadId, ThrottleKind, TraceEvent, TraceSink};

use super::items::ItemStates;
use super::queue::EventKind;
use super::threads::Activity;
use super::world::{Frame, Work, World, next_step_is_cpu};
use super::{DEFAULT_UNTIL, Outcome, RunResult, SimOptions};

/// What a frame step asks of the driver.
pub(super) enum Flow {
    /// Wait for an event.
    Pending,
    /// Pop this frame; its parent continues.
    Done,
    /// Run a child frame first.
    Push(Frame),
    /// The frames were suspended (moved into a continuation); the rest of
    /// the stack continues.
    Suspended,
}

/// A run: the world and the policy that makes its decisions.
pub(super) struct Engine<'a, S: TraceSink, P: Policy + ?Sized> {
    pub(super) world: World<'a, S>,
    pub(super) policy: Box<P>,
    pub(super) dedicated: bool,
    pub(super) retire_on_stop: bool,
}

impl<S: TraceSink, P: Policy + ?Sized> Engine<'_, S, P> {
    pub(super) fn run(&mut self, options: &SimOptions) -> RunResult {
        let until = options
            .until
            .or(self.world.scenario.until)
            .unwrap_or(DEFAULT_UNTIL);
        let limit = SimTime::ZERO + until;
        self.policy.start(&mut self.world);
        for g in 0..self.world.groups.len() {
            let group = &self.world.scenario.groups[g];
            // A fan-out group's items are queued by the steps that name it.
            if group.count > 0
                && !matches!(group.arrival, Arrival::After { .. })
                && !matches!(group.from, crate::scenario::Origin::FanOut { .. })
            {
                let at = self.world.groups[g].next_at;
                self.world.schedule(at, EventKind::Arrival(g as u32));
            }
        }
        for (p, probe) in self.world.scenario.probes.iter().enumerate() {
            self.world
                .schedule(SimTime::ZERO + probe.every, EventKind::Probe(p as u32));
        }
        let mut events = 0u64;
        let outcome = loop {
            if self.world.all_done() {
                break Outcome::Completed;
            }
            let Some((key, kind)) = self.world.events.pop() else {
                if self.world.deadlocked() {
                    break Outcome::Deadlock {
                        at: self.world.now,
                        unfinished: self.world.unfinished(),
                        blocked: self.world.blocked_threads(),
                    };
                }
                break Outcome::Stalled {
                    at: self.world.now,
                    unfinished: self.world.unfinished(),
                };
            };
            if key.at > limit {
                self.world.now = limit;
                break Outcome::TimeLimit {
                    at: limit,
                    unfinished: self.world.unfinished(),
                };
            }
            if events >= options.max_events {
                break Outcome::EventBudget {
                    events,
                    unfinished: self.world.unfinished(),
                };
            }
            events += 1;
            self.world.now = key.at;
            if matches!(kind, EventKind::PolicyWake(_)) && self.world.deadlocked() {
                break Outcome::Deadlock {
                    at: self.world.now,
                    unfinished: self.world.unfinished(),
                    blocked: self.world.blocked_threads(),
                };
            }
            self.handle(kind);
        };
        let world = &mut self.world;
        world.cpu.advance(world.now);
        world.trace.cpu_busy_ns = Some(world.cpu.busy_core_ns());
        // The items still in the window (unfinished) go out too.
        world.emit_items(true);
        if S::KEEP_ITEMS && S::ITEM_RECORDS {
            let items = std::mem::replace(&mut world.items, ItemStates::new(true, 0));
            world.trace.items = items.into_records();
        }
        world.trace.end = if outcome.is_completed() && world.items_total > 0 {
            world.last_finish
        } else {
            world.now
        };
        RunResult {
            trace: std::mem::replace(&mut world.trace, crate::pool::state::empty_trace()),
            outcome,
            events,
        }
    }

    pub(super) fn handle(&mut self, kind: EventKind) {
        match kind {
            EventKind::Arrival(g) => self.arrival(g),
            EventKind::ThreadReady(t, generation) => {
                let th = self.world.th(t);
                if th.generation != generation || th.state != ThreadState::Starting {
                    return;
                }
                th.state = ThreadState::Active;
                match th.kind {
                    ThreadKind::Pool => {
                        self.world.tally.starting -= 1;
                        self.worker_loop(t, WorkerNext::Seek);
                        // The first worker has dispatched and its work has
                        // started: the main thread, waiting for the core,
                        // looks whether it gets it.
                        if self.world.main_waiting.is_some() && !self.world.main_resume_scheduled {
                            self.world.main_resume_scheduled = true;
                            self.world
                                .schedule(self.world.now, EventKind::MainResume(false));
                        }
                    }
                    ThreadKind::Dedicated | ThreadKind::Main => self.resume(t),
                }
            }
            EventKind::StepDone(t, generation) => {
                if self.world.th(t).generation != generation {
                    return;
                }
                self.step_done(t);
            }
            EventKind::CpuCheck(generation) => {
                debug_assert_eq!(generation, self.world.cpu_generation, "a stale CPU check");
                if generation != self.world.cpu_generation {
                    return;
                }
                self.world.cpu.advance(self.world.now);
                // The buffer is reused: a CPU check ends about one job an item.
                let mut finished = std::mem::take(&mut self.world.cpu_finished);
                self.world.cpu.pop_finished(&mut finished);
                self.world.cpu_batch = true;
                for &t in &finished {
                    self.world.th(t).activity = Activity::None;
                    self.step_finished(t);
                }
                self.world.cpu_batch = false;
                finished.clear();
                self.world.cpu_finished = finished;
                self.world.reschedule_cpu();
            }
            EventKind::TimerThread(q, generation) => self.timer_thread(q, generation),
            EventKind::Probe(p) => self.probe(p),
            EventKind::PolicyWake(wake) => self.policy.wake(&mut self.world, Wake::unpack(wake)),
            EventKind::MainResume(waited) => self.main_resume(waited),
            EventKind::IdleTimeout(t, generation) => self.idle_timeout(t, generation),
        }
    }

    /// The worker loop of a pool thread ([`WorkerNext`]), from `next` until
    /// it waits on an event.
    fn worker_loop(&mut self, t: ThreadId, mut next: WorkerNext<Work>) {
        loop {
            // Only a creation by `t`'s own pool code below makes it wait.
            self.world.creation_owed = SimDuration::ZERO;
            next = match next {
                WorkerNext::Seek => self.seek(t),
                WorkerNext::Dispatch => self.dispatch(t),
                WorkerNext::Run(work) => {
                    if self.start_work(t, work) || !self.drive(t) {
                        return;
                    }
                    WorkerNext::Completed
                }
                WorkerNext::Completed => {
                    if !self.policy.work_completed(&mut self.world, t) {
                        if self.retire_on_stop {
                            self.world.retire(t);
                            self.retired();
                        } else {
                            // Portable pool: back to the semaphore; its local
                            // items move to the global queue.
                            self.world.pool.flush_local(t);
                            self.world.make_idle(t);
                        }
                        return;
                    }
                    self.keep_working(t)
                }
                WorkerNext::Idle => {
                    self.world.make_idle(t);
                    return;
                }
            };
            if self.world.creation_owed > SimDuration::ZERO {
                self.wait_for_creation(t, next);
                return;
            }
        }
    }

    /// Turns a dequeued work item into frames on `t` (or runs it at once
    /// when it is pool-internal bookkeeping).
    fn start_work(&mut self, t: ThreadId, work: Work) -> bool {
        match work {
            Work::Item(item) => self.world.th(t).frames.push(Frame::Item(item)),
            Work::Continuation(id) => {
                let frames = self.world.continuations[id as usize]
                    .take()
                    .unwrap_or_default();
                self.world.th(t).frames.extend(frames);
            }
            Work::TimerQueue(q) => {
                self.world.phase(t, Phase::Internal, None);
                if let Some(id) = self.fire_timer_queue(q) {
                    return self.run_timer(t, id);
                }
            }
            Work::TimerCallback(id) => {
                self.world.phase(t, Phase::Internal, None);
                return self.run_timer(t, id);
            }
            Work::Probe(p) => {
                self.world.phase(t, Phase::Internal, None);
                if let Some(id) = self.world.probes[p as usize].in_flight.take() {
                    self.world.trace.probes[id as usize].started = self.world.now;
                    self.world.record(TraceEvent::ProbeStarted { probe: id });
                }
                // The probe loop's Wait() returns; it sleeps again.
                let every = self.world.scenario.probes[p as usize].every;
                self.world
                    .schedule(self.world.now + every, EventKind::Probe(p));
            }
            Work::Submitter(g) => self.world.th(t).frames.push(Frame::Submitter(g)),
            Work::Replica(r) => self.world.th(t).frames.push(Frame::Replica(r)),
            Work::Partition(p) => self.world.th(t).frames.push(Frame::Partition(p)),
            Work::AsyncWorker(w) => self.world.th(t).frames.push(Frame::AsyncWorker(w)),
            Work::PairProcessor(p) => self.world.th(t).frames.push(Frame::PairProcessor(p)),
        }
        false
    }

    /// Runs timer `id`'s callback on `t`. True when `t` released a waiter
    /// that took its core, and now waits for it (see [`Engine::preempted_by`]).
    fn run_timer(&mut self, t: ThreadId, id: u32) -> bool {
        match self.world.pool.timer(id) {
            TimerAction::ReleaseWaiter(waiter) => {
                let generation = self.world.th(waiter).generation;
                self.world
                    .schedule(self.world.now, EventKind::StepDone(waiter, generation));
                self.preempted_by(t, waiter)
            }
            TimerAction::Resume(cont) => {
                self.resume_continuation(t, cont);
                false
            }
            TimerAction::Tick(g) => {
                self.timer_tick(t, g);
                false
            }
        }
    }

    /// Linux's wake-up preemption: `t` has just released `waiter`, whose
    /// next step is CPU work. When the cores are all taken with it, the
    /// scheduler runs the woken thread first and `t` goes on only after a
    /// slice (`threads.wake_preempt_us`, drawn per release). True when `t`
    /// now waits for its core.
    fn preempted_by(&mut self, t: ThreadId, waiter: ThreadId) -> bool {
        let world = &mut self.world;
        let Some(preemption) = &world.wake_preemption else {
            return false;
        };
        if !world.cpu.taken_with_one_more() || !next_step_is_cpu(world, waiter) {
            return false;
        }
        let slice = preemption.draw_from(world.preempt_rng.as_mut());
        if S::ENABLED {
            self.world
                .record(TraceEvent::Decision(Decision::WakePreempted {
                    thread: t,
                    woke: waiter,
                    waits: slice,
                }));
        }
        let generation = self.world.th(t).generation;
        self.world.th(t).activity = Activity::Preempted;
        self.world
            .schedule(self.world.now + slice, EventKind::StepDone(t, generation));
        true
    }

    /// Runs the frames on `t`'s stack until one waits on an event (false)
    /// or the stack is empty (true: the work unit is complete).
    fn drive(&mut self, t: ThreadId) -> bool {
        // The item the frame below last ran (for a pair's hand-off).
        let mut ran: Option<ItemId> = None;
        loop {
            let Some(&frame) = self.world.th(t).frames.last() else {
                return true;
            };
            let flow = self.step_frame(t, frame);
            if S::ENABLED {
                self.note_pair_hand_off(frame, &flow, &mut ran);
            }
            match flow {
                Flow::Pending => return false,
                Flow::Done => {
                    self.world.th(t).frames.pop();
                }
                Flow::Push(child) => self.world.th(t).frames.push(child),
                Flow::Suspended => {}
            }
        }
    }

    /// A pair's processing item that ran an item and now takes the next
    /// waiting task hands its slot on.
    fn note_pair_hand_off(&mut self, frame: Frame, flow: &Flow, ran: &mut Option<ItemId>) {
        match (frame, flow) {
            (Frame::Item(item), Flow::Done | Flow::Suspended) => *ran = Some(item),
            (Frame::PairProcessor(p), Flow::Push(Frame::Item(to))) => {
                if let Some(from) = ran.take().filter(|from| from != to) {
                    let pair = &self.world.pairs[p as usize];
                    let decision = Decision::ThrottleHandOff {
                        kind: ThrottleKind::Pair,
                        from: Some(from),
                        to: *to,
                        limit: pair.limit(),
                        waiting: pair.waiting() as u32,
                    };
                    self.world.record(TraceEvent::Decision(decision));
                }
            }
            (Frame::PairProcessor(_), _) => *ran = None,
            _ => {}
        }
    }

    /// An event let `t` go on: drive its frames, and when they are done,
    /// continue as its kind of thread does.
    pub(super) fn resume(&mut self, t: ThreadId) {
        if self.drive(t) {
            self.after_work(t);
        }
    }

    fn after_work(&mut self, t: ThreadId) {
        match self.world.th(t).kind {
            ThreadKind::Pool => self.worker_loop(t, WorkerNext::Completed),
            ThreadKind::Dedicated => self.world.exit_thread(t),
            ThreadKind::Main => {
                if let Some(lp) = self.world.main_calls.pop_front() {
                    self.world.th(t).frames.push(Frame::Caller(lp));
                    self.resume(t);
                }
            }
        }
    }

    /// A timed activity of `t` ended (sleep, spin, release from a wait or a
    /// join, submitter pause).
    fn step_done(&mut self, t: ThreadId) {
        let activity = std::mem::replace(&mut self.world.th(t).activity, Activity::None);
        let pool = self.world.is_pool(t);
        match activity {
            Activity::Spin => {
                self.world.cpu.advance(self.world.now);
                self.world.cpu.remove_spinner();
                self.world.reschedule_cpu();
            }
            Activity::Busy => {
                self.world.cpu.advance(self.world.now);
                self.world.cpu.remove_busy_loop();
                self.world.reschedule_cpu();
            }
            Activity::Sleep => {
                if pool {
                    self.world.tally.blocked_sleep -= 1;
                    self.policy
                        .thread_unblocked(&mut self.world, t, BlockKind::Sleep);
                }
            }
            Activity::Wait => {
                if pool {
                    self.world.tally.blocked_wait -= 1;
                    self.policy
                        .thread_unblocked(&mut self.world, t, BlockKind::TaskWait);
                }
            }
            Activity::Join(kind) => {
                if pool {
                    self.unblock_counts(kind);
                    self.policy.thread_unblocked(&mut self.world, t, kind);
                }
                self.resume(t);
                return;
            }
            Activity::SubmitterPause | Activity::Preempted => {
                self.resume(t);
                return;
            }
            Activity::CreatingThread => {
                if let Some(next) = self.world.th(t).after_creation.take() {
                    self.worker_loop(t, next);
                }
                return;
            }
            Activity::None | Activity::Cpu => return,
        }
        self.step_finished(t);
    }

    /// The current step of the item on top of `t`'s stack is over: go on.
    fn step_finished(&mut self, t: ThreadId) {
        if let Some(&Frame::Item(item)) = self.world.th(t).frames.last() {
            self.world.items.run_mut(item).step += 1;
        }
        self.resume(t);
    }
}
