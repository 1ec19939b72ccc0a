//! Work coming in from outside the pool's threads: the main thread's
//! arrivals (a group's submissions, one-call APIs it calls), the
//! submissions of a pool work item that submits a group, and the probe
//! loops' probes.
//!
//! The main thread on one core may lose it to the pool's first worker
//! (`threads.main_yields_to_first_worker`): its later arrivals then wait
//! until it gets the core back (`Engine::main_resume`).

use crate::policy::{Policy, RequestCause};
use crate::pool::state::PoolHost;
use crate::scenario::{Origin, Submit};
use crate::time::{SimDuration, SimTime};
use crate::trace::{Decision, ProbeRecord, ThreadId, TraceEvent, TraceSink};

use super::queue::EventKind;
use super::run::Engine;
use super::world::{Frame, Owner, Work};
use crate::pool::TimerAction;

impl<S: TraceSink, P: Policy + ?Sized> Engine<'_, S, P> {
    /// Probe loop `p` wakes: its probe is queued (rare: kept out of the
    /// event loop's hot path).
    #[cold]
    #[inline(never)]
    pub(super) fn probe(&mut self, p: u32) {
        if self.world.items_finished == self.world.items_total {
            return;
        }
        let id = self.world.trace.probes.len() as u32;
        self.world.trace.probes.push(ProbeRecord {
            queued: self.world.now,
            started: SimTime::MAX,
        });
        self.world.probes[p as usize].in_flight = Some(id);
        self.world.record(TraceEvent::ProbeQueued { probe: id });
        self.world.enqueue_global(Work::Probe(p));
        self.request_thread(RequestCause::Enqueue);
    }

    /// Submits user work: a plain task to the pool (or its throttle), or a
    /// dedicated thread.
    fn submit_task(&mut self, g: u32, from: Option<ThreadId>) {
        let group = &self.world.scenario.groups[g as usize];
        let (submit, pair) = (group.submit, self.world.groups[g as usize].pair);
        if submit == Submit::NewThread || (self.dedicated && pair.is_none()) {
            let item = self.world.new_item(g, Owner::Task);
            self.world.record(TraceEvent::ItemQueued {
                item,
                local_of: None,
            });
            let latency = if submit == Submit::NewThread {
                self.world.dedicated_latency
            } else {
                self.world.thread_start_latency()
            };
            self.world
                .create_dedicated_thread(Frame::Item(item), latency);
            return;
        }
        if let Some(p) = pair {
            let item = self.world.new_item(g, Owner::Pair(p));
            self.world.record(TraceEvent::ItemQueued {
                item,
                local_of: None,
            });
            self.pair_push(p, Work::Item(item), from);
            return;
        }
        let item = self.world.new_item(g, Owner::Task);
        let local = match (submit, from) {
            (Submit::QueueUserWorkItem, _) => None,
            (_, Some(t)) if self.world.is_pool(t) => Some(t),
            _ => None,
        };
        self.world.record(TraceEvent::ItemQueued {
            item,
            local_of: local,
        });
        match local {
            Some(t) => self.world.enqueue_local(t, Work::Item(item)),
            None => self.world.enqueue_global(Work::Item(item)),
        }
        self.request_thread(RequestCause::Enqueue);
    }

    pub(super) fn arrival(&mut self, g: u32) {
        if let Some(waiting) = self.world.main_waiting.as_mut() {
            // The main thread is off the core: this group's submissions wait.
            waiting.push(g);
            return;
        }
        let group = &self.world.scenario.groups[g as usize];
        if let Some(timer) = group.timer() {
            // `new Timer(callback, null, 0, period)` on the main thread: due
            // at once, then every period, once for each `per_tick` items.
            let main = self.world.main_thread();
            let due = self.world.timer_due(SimDuration::ZERO);
            self.add_periodic_timer(due, TimerAction::Tick(g), main, timer.period, timer.firings);
            return;
        }
        if group.from == Origin::Pool {
            // Task.Run(() => { ...submit... }) from the main thread.
            self.world.enqueue_global(Work::Submitter(g));
            self.request_thread(RequestCause::Enqueue);
            return;
        }
        if group.submit.one_call() {
            let lp = self.start_call(g);
            let main = self.world.main_thread();
            if self.world.th(main).frames.is_empty() {
                self.world.th(main).frames.push(Frame::Caller(lp));
                self.resume(main);
            } else {
                self.world.main_calls.push_back(lp);
            }
            return;
        }
        if let Some(next) = self.submit_due(g, None) {
            self.world.schedule(next, EventKind::Arrival(g));
        }
    }

    /// A firing of group `g`'s timer (`from = "timer"`) runs its callback on
    /// pool thread `t`: it queues the group's next `per_tick` items from `t`
    /// (`QueueUserWorkItem` to the global queue, `Task.Run` to `t`'s local
    /// queue), as `new Timer(_ => { for (...) Task.Run(work); }, ...)` does.
    pub(super) fn timer_tick(&mut self, t: ThreadId, g: u32) {
        let scenario = self.world.scenario;
        let group = &scenario.groups[g as usize];
        let Some(timer) = group.timer() else {
            return;
        };
        for _ in 0..timer.per_tick {
            if self.world.groups[g as usize].submitted >= group.count {
                break;
            }
            self.submit_task(g, Some(t));
            self.world.groups[g as usize].submitted += 1;
        }
    }

    /// Submits every item of group `g` due by now, from `from` (a pool
    /// thread) or the main thread. Returns when the next item is due.
    pub(super) fn submit_due(&mut self, g: u32, from: Option<ThreadId>) -> Option<SimTime> {
        let scenario = self.world.scenario;
        let group = &scenario.groups[g as usize];
        loop {
            let state = &self.world.groups[g as usize];
            if state.submitted >= group.count {
                return None;
            }
            if state.next_at > self.world.now {
                return Some(state.next_at);
            }
            let created_first = from.is_none()
                && self.world.main_yields
                && self.world.tally.existing == 0
                && self.world.tally.retired.is_empty();
            self.submit_task(g, from);
            let created_first = created_first && self.world.tally.existing > 0;
            let state = &mut self.world.groups[g as usize];
            state.submitted += 1;
            state.next_at += group.arrival.spacing().gap(state.arrivals.as_mut());
            if created_first {
                // One core: the new worker takes it; the main thread's next
                // submissions wait for it (see `main_resume`).
                self.world.main_yields = false;
                self.world.main_waiting = Some(vec![g]);
                self.world.main_waiting_since = self.world.now;
                return None;
            }
        }
    }

    /// The main thread, waiting for the one core since it created the pool's
    /// first worker, gets it back now if the worker's work left it free,
    /// else at the next scheduler tick (the `TickCount` grid); its waiting
    /// groups then submit what is due.
    pub(super) fn main_resume(&mut self, waited: bool) {
        if !waited
            && self.world.cpu.cores_taken()
            && let Some((step, phase)) = self.world.timer_grid
        {
            let next = crate::policy::gate::next_tick(self.world.now, step, phase);
            self.world.schedule(next, EventKind::MainResume(true));
            return;
        }
        let Some(waiting) = self.world.main_waiting.take() else {
            return;
        };
        if S::ENABLED {
            let decision = Decision::MainThreadWaited {
                since: self.world.main_waiting_since,
                waited_for_tick: waited,
            };
            self.world.record(TraceEvent::Decision(decision));
        }
        for g in waiting {
            self.world.schedule(self.world.now, EventKind::Arrival(g));
        }
    }
}
