//! The event queue: every pending event, and the rule that orders them.
//!
//! Events run by (time, insertion sequence): each one scheduled takes the
//! next sequence number, so two due at the same instant run in the order
//! they were scheduled, and a run is a function of its scenario and seed.
//! The queue keeps its events in several sources, each cheaper than the
//! heap for the events it holds, and [`EventQueue::pop`] merges them so
//! that they come out exactly as from one heap keyed by (time, sequence):
//! - the heap, for any event;
//! - a FIFO per [`Fifo`] (threads ready after their start or wake
//!   latency): an event due no earlier than its FIFO's last joins it, one
//!   due earlier goes to the heap, so each FIFO is sorted;
//! - the arrival slot: one pending [`EventKind::Arrival`] (a group's next
//!   submission; with one group arriving at a time, every arrival), the
//!   others in the heap;
//! - the CPU-check slot: the one pending [`EventKind::CpuCheck`], replaced
//!   (not superseded) when the CPU jobs change;
//! - the idle deadlines ([`IdleDeadlines`]): one [`EventKind::IdleTimeout`]
//!   a thread, removed when its wait ends early.
//!
//! A replaced CPU check and a disarmed idle deadline are gone: they never
//! come out.
//!
//! The queue does not know the clock: the world clamps a time to now
//! before it schedules (`World::schedule`).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::time::SimTime;
use crate::trace::ThreadId;

use super::deadlines::IdleDeadlines;

/// What an event does when it runs (the event loop's dispatch,
/// `Engine::handle`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum EventKind {
    /// The main thread submits the next items of a group.
    Arrival(u32),
    /// A created or released thread is ready for its first dequeue.
    ThreadReady(ThreadId, u64),
    /// A thread's timed activity (sleep, spin, release from a wait or a
    /// join, submitter pause) ends.
    StepDone(ThreadId, u64),
    /// The earliest CPU job may have finished.
    CpuCheck(u64),
    /// The timer thread notices an expired timer in queue `q`.
    TimerThread(u32, u64),
    /// The probe loop wakes from its sleep.
    Probe(u32),
    /// A wake-up the policy asked for ([`Wake::pack`](crate::policy::Wake::pack)ed).
    PolicyWake(u64),
    /// An idle (or retired) thread's wait for work times out.
    IdleTimeout(ThreadId, u64),
    /// The main thread, off the one core since it created the pool's first
    /// worker, looks whether it gets the core back (`threads.main_yields_to_first_worker`);
    /// `true` once it has waited for a scheduler tick.
    MainResume(bool),
}

/// When an event runs: its time, then its sequence number (unique).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct EventKey {
    pub(super) at: SimTime,
    pub(super) seq: u64,
}

/// The FIFOs beside the event heap ([`EventQueue::schedule_in`]): one per
/// kind of event that is mostly scheduled in time order.
#[derive(Clone, Copy, Debug)]
pub(super) enum Fifo {
    /// Threads ready after their start or wake latency.
    Ready,
}

const FIFOS: usize = 1;
// `EventQueue::pop` merges the one FIFO by hand: a second must be merged
// there too.
const _: () = assert!(FIFOS == 1, "pop reads fifos[Fifo::Ready] alone");

/// The pending events and the sequence counter (see the module head).
#[derive(Debug, Default)]
pub(super) struct EventQueue {
    /// The last sequence number given.
    seq: u64,
    heap: BinaryHeap<Reverse<(EventKey, EventKind)>>,
    /// Events kept off the heap, by [`Fifo`]: an event due no earlier than
    /// the last one in its FIFO joins it, one due earlier goes to the heap,
    /// so each FIFO is sorted by (time, sequence), and [`EventQueue::pop`]
    /// merges the fronts with the heap's top: events run in the same order
    /// as from one heap.
    fifos: [VecDeque<(EventKey, EventKind)>; FIFOS],
    /// Idle and retired threads' timeouts, one a thread, removed when the
    /// wait ends early: none goes stale.
    idle_deadlines: IdleDeadlines,
    /// The one pending CPU check (when the earliest job may finish) and
    /// the CPU generation it is for: replaced, not superseded, when the
    /// jobs change.
    cpu_check: Option<(EventKey, u64)>,
    /// One pending arrival kept beside the heap (a group's next submission;
    /// with one group arriving at a time, every arrival), merged by key.
    arrival: Option<(EventKey, u32)>,
}

impl EventQueue {
    /// The key of an event due at `at` scheduled now: the next sequence
    /// number.
    #[inline(always)]
    fn key(&mut self, at: SimTime) -> EventKey {
        self.seq += 1;
        EventKey { at, seq: self.seq }
    }

    /// Schedules `kind` at `at` in the heap; an arrival goes to the arrival
    /// slot when it is free.
    #[inline(always)]
    pub(super) fn schedule(&mut self, at: SimTime, kind: EventKind) {
        let key = self.key(at);
        if let EventKind::Arrival(g) = kind
            && self.arrival.is_none()
        {
            self.arrival = Some((key, g));
            return;
        }
        self.heap.push(Reverse((key, kind)));
    }

    /// Schedules `kind` at `at` in `fifo`, or in the heap if it is due
    /// before the FIFO's last event.
    ///
    /// Always inlined, as [`EventQueue::schedule`]: called from every
    /// model's engine, the two were otherwise kept out of line (2.8 % more
    /// instructions on 100 k spread items).
    #[inline(always)]
    pub(super) fn schedule_in(&mut self, fifo: Fifo, at: SimTime, kind: EventKind) {
        let key = self.key(at);
        let queue = &mut self.fifos[fifo as usize];
        if queue.back().is_none_or(|(last, _)| last.at <= at) {
            queue.push_back((key, kind));
        } else {
            self.heap.push(Reverse((key, kind)));
        }
    }

    /// The one CPU check is now at `at` (none with `None`), for CPU
    /// `generation`: a pending one is replaced (it never comes out).
    pub(super) fn set_cpu_check(&mut self, at: Option<SimTime>, generation: u64) {
        self.cpu_check = at.map(|at| (self.key(at), generation));
    }

    /// No CPU check is pending (a pending one never comes out).
    pub(super) fn clear_cpu_check(&mut self) {
        self.cpu_check = None;
    }

    /// Uses up a sequence number without scheduling anything, so the events
    /// scheduled after keep the keys they would have had had one been
    /// scheduled now.
    pub(super) fn skip_sequence(&mut self) {
        self.seq += 1;
    }

    /// Arms `thread`'s idle (or retired) wait timeout at `at`, for its
    /// state of `generation`, replacing one it had. `at` must not be
    /// earlier than the last idle deadline armed (every wait is as long).
    pub(super) fn arm_idle(&mut self, thread: ThreadId, at: SimTime, generation: u64) {
        let key = self.key(at);
        self.idle_deadlines.arm(thread, key, generation);
    }

    /// `thread`'s wait ended before its deadline (or it has none): its
    /// timeout never comes out.
    pub(super) fn disarm_idle(&mut self, thread: ThreadId) {
        self.idle_deadlines.disarm(thread);
    }

    /// The next event by (time, sequence): the heap's, a FIFO's, the
    /// earliest idle deadline, the CPU check or the next arrival.
    ///
    /// Each source's first key is packed into one `u128` (`u128::MAX` for
    /// none) and the least is taken without a branch per source (which
    /// source wins changes from one event to the next). Sequence numbers
    /// are unique, so the least key names its source.
    #[inline(always)]
    pub(super) fn pop(&mut self) -> Option<(EventKey, EventKind)> {
        #[inline(always)]
        fn packed(key: Option<EventKey>) -> u128 {
            key.map_or(u128::MAX, |k| {
                (u128::from(k.at.as_nanos()) << 64) | u128::from(k.seq)
            })
        }
        let heap = packed(self.heap.peek().map(|Reverse((key, _))| *key));
        let ready = packed(
            self.fifos[Fifo::Ready as usize]
                .front()
                .map(|&(key, _)| key),
        );
        let idle = packed(self.idle_deadlines.first().map(|(key, _, _)| key));
        let cpu = packed(self.cpu_check.map(|(key, _)| key));
        let arrival = packed(self.arrival.map(|(key, _)| key));
        let least = heap.min(ready).min(idle).min(cpu).min(arrival);
        if least == u128::MAX {
            return None;
        }
        if least == ready {
            self.fifos[Fifo::Ready as usize].pop_front()
        } else if least == cpu {
            self.cpu_check
                .take()
                .map(|(key, generation)| (key, EventKind::CpuCheck(generation)))
        } else if least == arrival {
            self.arrival
                .take()
                .map(|(key, g)| (key, EventKind::Arrival(g)))
        } else if least == idle {
            self.pop_idle_deadline()
        } else {
            self.pop_heap()
        }
    }

    /// The earliest idle deadline as an event (rare: kept out of line).
    #[cold]
    #[inline(never)]
    fn pop_idle_deadline(&mut self) -> Option<(EventKey, EventKind)> {
        self.idle_deadlines
            .pop()
            .map(|(key, t, generation)| (key, EventKind::IdleTimeout(t, generation)))
    }

    /// The heap's first event (out of line: most events come from the
    /// FIFOs and slots, and the heap's sift would bloat the caller).
    #[inline(never)]
    fn pop_heap(&mut self) -> Option<(EventKey, EventKind)> {
        self.heap.pop().map(|Reverse(event)| event)
    }
}

#[cfg(test)]
mod tests {
    use rand::RngExt;

    use super::*;

    fn t(ns: u64) -> SimTime {
        SimTime(ns)
    }

    fn key(at: u64, seq: u64) -> EventKey {
        EventKey { at: t(at), seq }
    }

    fn drain(q: &mut EventQueue) -> Vec<(EventKey, EventKind)> {
        std::iter::from_fn(|| q.pop()).collect()
    }

    #[test]
    fn events_come_out_by_time_then_insertion_whichever_source_holds_them() {
        let mut q = EventQueue::default();
        q.schedule(t(50), EventKind::StepDone(1, 0)); // 1: heap
        q.schedule_in(Fifo::Ready, t(20), EventKind::ThreadReady(2, 0)); // 2: FIFO
        q.schedule(t(40), EventKind::Arrival(0)); // 3: arrival slot
        q.set_cpu_check(Some(t(30)), 7); // 4: CPU-check slot
        q.arm_idle(3, t(10), 1); // 5: idle deadlines
        q.schedule(t(60), EventKind::Arrival(1)); // 6: the slot is taken: heap
        q.schedule_in(Fifo::Ready, t(70), EventKind::ThreadReady(4, 1)); // 7: FIFO
        assert_eq!(
            drain(&mut q),
            vec![
                (key(10, 5), EventKind::IdleTimeout(3, 1)),
                (key(20, 2), EventKind::ThreadReady(2, 0)),
                (key(30, 4), EventKind::CpuCheck(7)),
                (key(40, 3), EventKind::Arrival(0)),
                (key(50, 1), EventKind::StepDone(1, 0)),
                (key(60, 6), EventKind::Arrival(1)),
                (key(70, 7), EventKind::ThreadReady(4, 1)),
            ]
        );
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn an_event_due_before_its_fifos_last_goes_to_the_heap_and_still_comes_out_in_order() {
        let mut q = EventQueue::default();
        q.schedule_in(Fifo::Ready, t(100), EventKind::ThreadReady(0, 0)); // 1
        q.schedule_in(Fifo::Ready, t(100), EventKind::ThreadReady(1, 0)); // 2: joins (not earlier)
        q.schedule_in(Fifo::Ready, t(50), EventKind::ThreadReady(2, 0)); // 3: earlier: heap
        q.schedule_in(Fifo::Ready, t(150), EventKind::ThreadReady(3, 0)); // 4
        assert_eq!(q.fifos[Fifo::Ready as usize].len(), 3);
        assert_eq!(q.heap.len(), 1);
        assert_eq!(
            drain(&mut q),
            vec![
                (key(50, 3), EventKind::ThreadReady(2, 0)),
                (key(100, 1), EventKind::ThreadReady(0, 0)),
                (key(100, 2), EventKind::ThreadReady(1, 0)),
                (key(150, 4), EventKind::ThreadReady(3, 0)),
            ]
        );
    }

    #[test]
    fn a_replaced_cpu_check_and_a_disarmed_idle_deadline_never_come_out() {
        let mut q = EventQueue::default();
        q.set_cpu_check(Some(t(10)), 1); // 1: replaced
        q.arm_idle(0, t(20), 1); // 2: disarmed
        q.arm_idle(1, t(20), 1); // 3: re-armed later
        q.set_cpu_check(Some(t(30)), 2); // 4
        q.disarm_idle(0);
        q.disarm_idle(5); // never armed: nothing
        q.arm_idle(1, t(40), 2); // 5
        q.schedule(t(35), EventKind::Probe(0)); // 6
        assert_eq!(
            drain(&mut q),
            vec![
                (key(30, 4), EventKind::CpuCheck(2)),
                (key(35, 6), EventKind::Probe(0)),
                (key(40, 5), EventKind::IdleTimeout(1, 2)),
            ]
        );
        // A cleared check is gone too, and a skipped sequence number moves
        // the later keys on.
        q.set_cpu_check(Some(t(50)), 3); // 7
        q.clear_cpu_check();
        q.skip_sequence(); // 8
        q.schedule(t(50), EventKind::MainResume(false)); // 9
        assert_eq!(
            drain(&mut q),
            vec![(key(50, 9), EventKind::MainResume(false))]
        );
    }

    #[test]
    fn equal_times_keep_insertion_order_across_sources() {
        let mut q = EventQueue::default();
        q.arm_idle(2, t(5), 0); // 1
        q.schedule(t(5), EventKind::PolicyWake(9)); // 2
        q.schedule(t(5), EventKind::Arrival(3)); // 3: slot
        q.schedule_in(Fifo::Ready, t(5), EventKind::ThreadReady(1, 0)); // 4
        q.set_cpu_check(Some(t(5)), 4); // 5
        q.schedule(t(5), EventKind::Arrival(4)); // 6: heap
        q.schedule(t(5), EventKind::TimerThread(0, 1)); // 7
        let seqs: Vec<u64> = drain(&mut q).iter().map(|(k, _)| k.seq).collect();
        assert_eq!(seqs, vec![1, 2, 3, 4, 5, 6, 7]);
    }

    /// Many random operations on every source, against a plain list that
    /// keeps every pending event and gives the least key.
    #[test]
    fn random_schedules_come_out_as_from_one_sorted_list() {
        const TIMEOUT: u64 = 1_000;
        for seed in 0..40 {
            let mut rng = crate::rng::stream(seed, "event-queue-test");
            let mut q = EventQueue::default();
            let mut reference: Vec<(EventKey, EventKind)> = Vec::new();
            let mut seq = 0u64;
            let mut now = 0u64;
            let mut popped = 0;
            for _ in 0..2_000 {
                // Times from now on, often equal (as the world clamps them).
                let at = now
                    + match rng.random_range(0..4u32) {
                        0 => 0,
                        1 => rng.random_range(0..5),
                        _ => rng.random_range(0..2_000),
                    };
                let thread = rng.random_range(0..8u32);
                match rng.random_range(0..10u32) {
                    0 | 1 => {
                        let kind = EventKind::StepDone(thread, seq);
                        q.schedule(t(at), kind);
                        seq += 1;
                        reference.push((key(at, seq), kind));
                    }
                    2 => {
                        let kind = EventKind::Arrival(thread);
                        q.schedule(t(at), kind);
                        seq += 1;
                        reference.push((key(at, seq), kind));
                    }
                    3 | 4 => {
                        let kind = EventKind::ThreadReady(thread, seq);
                        q.schedule_in(Fifo::Ready, t(at), kind);
                        seq += 1;
                        reference.push((key(at, seq), kind));
                    }
                    5 => {
                        let generation = seq;
                        reference.retain(|(_, k)| !matches!(k, EventKind::CpuCheck(_)));
                        match rng.random_range(0..5u32) {
                            0 => q.clear_cpu_check(),
                            1 => q.set_cpu_check(None, generation),
                            2 => {
                                q.clear_cpu_check();
                                q.skip_sequence();
                                seq += 1;
                            }
                            _ => {
                                q.set_cpu_check(Some(t(at)), generation);
                                seq += 1;
                                reference.push((key(at, seq), EventKind::CpuCheck(generation)));
                            }
                        }
                    }
                    6 => {
                        // Every idle wait is as long: deadlines in order.
                        let generation = seq;
                        reference.retain(
                            |(_, k)| !matches!(k, EventKind::IdleTimeout(th, _) if *th == thread),
                        );
                        q.arm_idle(thread, t(now + TIMEOUT), generation);
                        seq += 1;
                        reference.push((
                            key(now + TIMEOUT, seq),
                            EventKind::IdleTimeout(thread, generation),
                        ));
                    }
                    7 => {
                        q.disarm_idle(thread);
                        reference.retain(
                            |(_, k)| !matches!(k, EventKind::IdleTimeout(th, _) if *th == thread),
                        );
                    }
                    _ => {
                        for _ in 0..rng.random_range(1..4u32) {
                            let least = reference
                                .iter()
                                .enumerate()
                                .min_by_key(|(_, (k, _))| *k)
                                .map(|(i, _)| i);
                            let expected = least.map(|i| reference.swap_remove(i));
                            let got = q.pop();
                            assert_eq!(got, expected, "seed {seed}");
                            if let Some((k, _)) = got {
                                assert!(k.at.as_nanos() >= now, "time went back");
                                now = k.at.as_nanos();
                                popped += 1;
                            }
                        }
                    }
                }
            }
            // The rest, in order.
            reference.sort();
            assert_eq!(drain(&mut q), reference, "seed {seed}");
            assert!(popped > 100, "seed {seed}: too few pops ({popped})");
        }
    }
}
