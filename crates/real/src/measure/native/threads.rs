//! The bodies of the run's threads: pool workers (the engine's worker loop,
//! for real), dedicated threads, the timer thread, the main thread's
//! arrivals and the probe loops; and the execution of an item's steps.
//!
//! A thread holds the pool mutex while it decides (and while the policy
//! decides) and releases it only to run a step: burn CPU, spin, sleep, or
//! wait for its `Task.Delay` callback.

use std::sync::Arc;

use super::pool::{Arrivals, Bodies, Guard, NativeWork, Shared};
use super::sys;
use crate::policy::BlockKind;
use crate::pool::state::ThreadState;
use crate::pool::state::{PoolHost, WorkerNext};
use crate::pool::{ThreadKind, TimerAction};
use crate::scenario::Step;
use crate::time::{SimDuration, SimTime};
use crate::trace::{ItemId, ThreadId};

/// How a piece of work on a thread ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WorkEnd {
    /// It ran to its end (an item: its last step).
    Finished,
    /// The item gave its thread back (`await`, `yield`, a semaphore wait).
    Suspended,
    /// The run stopped meanwhile: the thread leaves without bookkeeping.
    Stopped,
}

/// The bodies the pool starts its threads with.
pub(super) const BODIES: Bodies = Bodies {
    worker: worker_main,
    dedicated: dedicated_main,
};

/// A pool worker, from its creation to its exit.
fn worker_main(sh: Arc<Shared>, t: ThreadId) {
    sys::pin(&sh.cpus);
    let clock = sys::CpuClock::current();
    let mut g = sh.lock();
    g.pool.thread_started(t, clock);
    if !g.pool.stopped {
        // Created: this is its first look for work.
        g.pool.tally.starting -= 1;
        g.pool.threads[t as usize].state = ThreadState::Active;
        g = worker_loop(&sh, g, t);
    }
    g.pool.thread_gone(t);
}

/// A dedicated thread (`new Thread(...).Start()`): runs one item and exits.
fn dedicated_main(sh: Arc<Shared>, t: ThreadId, item: ItemId) {
    sys::pin(&sh.cpus);
    let clock = sys::CpuClock::current();
    let mut g = sh.lock();
    g.pool.thread_started(t, clock);
    if !g.pool.stopped {
        g.pool.threads[t as usize].state = ThreadState::Active;
        let (g2, flow) = run_item(&sh, g, t, item);
        g = g2;
        if flow != WorkEnd::Stopped {
            g.pool.exit_thread(t);
        }
    }
    g.pool.thread_gone(t);
}

/// The worker loop of a pool thread ([`WorkerNext`], as the engine's),
/// until it exits or the run stops.
fn worker_loop<'a>(sh: &'a Shared, mut g: Guard<'a>, t: ThreadId) -> Guard<'a> {
    let mut next = WorkerNext::Seek;
    loop {
        if g.pool.stopped {
            return g;
        }
        next = match next {
            WorkerNext::Seek => g.seek(t),
            WorkerNext::Dispatch => g.dispatch(t),
            WorkerNext::Run(work) => {
                let (g2, flow) = run_work(sh, g, t, work);
                g = g2;
                if flow == WorkEnd::Stopped {
                    return g;
                }
                WorkerNext::Completed
            }
            WorkerNext::Completed => {
                let inner = &mut *g;
                if inner.policy.work_completed(&mut inner.pool, t) {
                    g.keep_working(t)
                } else if !g.retire_on_stop {
                    // Portable pool: back to the semaphore; its local items
                    // move to the global queue.
                    g.pool.state.flush_local(t);
                    WorkerNext::Idle
                } else {
                    g.pool.retire(t);
                    g.retired();
                    let (g2, resumed) = idle_wait(g, t);
                    g = g2;
                    if !resumed {
                        return g;
                    }
                    WorkerNext::Seek
                }
            }
            WorkerNext::Idle => {
                g.pool.make_idle(t);
                let (g2, resumed) = idle_wait(g, t);
                g = g2;
                if !resumed {
                    return g;
                }
                WorkerNext::Seek
            }
        };
    }
}

/// An idle or retired worker waits to be released, or for its idle timeout.
/// Returns whether it was released (false: it exited, or the run stopped).
fn idle_wait(mut g: Guard<'_>, t: ThreadId) -> (Guard<'_>, bool) {
    let ti = t as usize;
    let cv = Arc::clone(&g.pool.threads[ti].cv);
    loop {
        if g.pool.stopped {
            return (g, false);
        }
        let state = g.pool.threads[ti].state;
        match state {
            ThreadState::Starting => {
                // Released (or brought back): its first dequeue comes now.
                g.pool.tally.starting -= 1;
                g.pool.threads[ti].state = ThreadState::Active;
                return (g, true);
            }
            ThreadState::Idle | ThreadState::Retired => {}
            ThreadState::Active | ThreadState::Exited => return (g, false),
        }
        let now = g.pool.clock();
        let deadline = g.pool.threads[ti].idle_deadline;
        if now >= deadline {
            if state == ThreadState::Retired {
                g.pool.exit_thread(t);
                return (g, false);
            }
            let inner = &mut *g;
            if inner.policy.idle_timed_out(&mut inner.pool, t) {
                g.pool.exit_thread(t);
                return (g, false);
            }
            g.pool.idle_again(t);
            continue;
        }
        let wait = std::time::Duration::from_nanos(deadline.since(now).as_nanos());
        g = cv
            .wait_timeout(g, wait)
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .0;
    }
}

/// Runs one dequeued work unit on pool thread `t`.
fn run_work<'a>(
    sh: &'a Shared,
    mut g: Guard<'a>,
    t: ThreadId,
    work: NativeWork,
) -> (Guard<'a>, WorkEnd) {
    match work {
        NativeWork::Item(item) | NativeWork::Continuation(item) => run_item(sh, g, t, item),
        NativeWork::TimerQueue(q) => match g.fire_timer_queue(q) {
            Some(id) => run_timer(sh, g, t, id),
            None => (g, WorkEnd::Finished),
        },
        NativeWork::TimerCallback(id) => run_timer(sh, g, t, id),
        NativeWork::Probe(p) => {
            g.probe_started(p);
            (g, WorkEnd::Finished)
        }
        NativeWork::Submitter(group) => loop {
            // Submits what is due, sleeping (holding the thread) between arrivals.
            let Some(at) = g.submit_due(group, Some(t)) else {
                return (g, WorkEnd::Finished);
            };
            drop(g);
            let go_on = sh.pause_until(at);
            g = sh.lock();
            if !go_on || g.pool.stopped {
                return (g, WorkEnd::Stopped);
            }
        },
        NativeWork::PairProcessor(p) => loop {
            // Runs the pair's tasks in order until its queue is empty.
            match g.pool.pairs[p as usize].pop() {
                Some(NativeWork::Item(item) | NativeWork::Continuation(item)) => {
                    let (g2, flow) = run_item(sh, g, t, item);
                    g = g2;
                    if flow == WorkEnd::Stopped {
                        return (g, flow);
                    }
                }
                Some(_) | None => {
                    g.pool.pairs[p as usize].processor_done();
                    return (g, WorkEnd::Finished);
                }
            }
        },
    }
}

/// Runs timer `id`'s callback on `t`: releases a `Task.Wait`er, or runs
/// an `await` continuation inline (handing it to its pair if it has one).
fn run_timer<'a>(sh: &'a Shared, mut g: Guard<'a>, t: ThreadId, id: u32) -> (Guard<'a>, WorkEnd) {
    match g.pool.state.timer(id) {
        TimerAction::ReleaseWaiter(waiter) => {
            let slot = &mut g.pool.threads[waiter as usize];
            slot.released = true;
            slot.cv.notify_all();
            (g, WorkEnd::Finished)
        }
        TimerAction::Resume(item) => match g.pool.item_pair[item as usize] {
            Some(p) => {
                g.pair_push(p, NativeWork::Continuation(item), None);
                (g, WorkEnd::Finished)
            }
            None => run_item(sh, g, t, item),
        },
        TimerAction::Tick(group) => {
            g.timer_tick(t, group);
            (g, WorkEnd::Finished)
        }
    }
}

/// A pool thread blocks (`blocked`) or unblocks in `kind`: the pool's
/// blocked counts and the policy, as the engine tells them.
fn set_blocked(g: &mut Guard<'_>, t: ThreadId, kind: BlockKind, blocked: bool) {
    let inner = &mut **g;
    let count = match kind {
        BlockKind::Sleep => &mut inner.pool.tally.blocked_sleep,
        _ => &mut inner.pool.tally.blocked_wait,
    };
    if blocked {
        *count += 1;
        inner.policy.thread_blocked(&mut inner.pool, t, kind);
    } else {
        *count -= 1;
        inner.policy.thread_unblocked(&mut inner.pool, t, kind);
    }
}

/// Runs `item` on thread `t` from its next step until it finishes or gives
/// the thread back.
fn run_item<'a>(
    sh: &'a Shared,
    mut g: Guard<'a>,
    t: ThreadId,
    item: ItemId,
) -> (Guard<'a>, WorkEnd) {
    let i = item as usize;
    let ti = t as usize;
    if g.pool.trace.items[i].started == SimTime::MAX {
        if !g.acquire(item) {
            return (g, WorkEnd::Suspended);
        }
        let now = g.pool.clock();
        let rec = &mut g.pool.trace.items[i];
        rec.started = now;
        rec.thread = t;
    }
    let pool_thread = g.pool.threads[ti].kind == ThreadKind::Pool;
    let group = g.pool.trace.items[i].group as usize;
    let scenario = Arc::clone(&sh.scenario);
    let body = &scenario.groups[group].body;
    let mut pc = g.pool.item_step[i] as usize;
    loop {
        if g.pool.stopped {
            return (g, WorkEnd::Stopped);
        }
        let Some(&step) = body.get(pc) else {
            g.finish_item(t, item);
            return (g, WorkEnd::Finished);
        };
        match step {
            _ if step.duration() == Some(SimDuration::ZERO) => {}
            Step::Cpu(d) => {
                drop(g);
                sys::burn_cpu(d.as_nanos(), &sh.stop);
                g = sh.lock();
            }
            Step::Spin(d) => {
                // The deadline follows the scenario's TickCount (as the
                // model's does), counted from the run's start.
                let start = g.pool.clock();
                drop(g);
                let end = sh.scenario.machine.spin_end(start, d);
                let until = sh.t0 + std::time::Duration::from_nanos(end.as_nanos());
                sys::spin_until(until, &sh.stop);
                g = sh.lock();
            }
            Step::Busy(d) => {
                // A Stopwatch loop: the exact clock, the core held throughout.
                drop(g);
                let until =
                    std::time::Instant::now() + std::time::Duration::from_nanos(d.as_nanos());
                sys::busy_until(until, &sh.stop);
                g = sh.lock();
            }
            Step::Sleep(d) => {
                if pool_thread {
                    set_blocked(&mut g, t, BlockKind::Sleep, true);
                }
                drop(g);
                sh.pause(d);
                g = sh.lock();
                if g.pool.stopped {
                    return (g, WorkEnd::Stopped);
                }
                if pool_thread {
                    set_blocked(&mut g, t, BlockKind::Sleep, false);
                }
            }
            Step::Wait(d) => {
                // Task.Delay(d).Wait(): released when the timer's callback
                // has run as pool work.
                let now = g.pool.clock();
                g.pool.threads[ti].released = false;
                g.add_timer(now + d, TimerAction::ReleaseWaiter(t), t);
                if pool_thread {
                    set_blocked(&mut g, t, BlockKind::TaskWait, true);
                }
                let cv = Arc::clone(&g.pool.threads[ti].cv);
                while !g.pool.threads[ti].released && !g.pool.stopped {
                    g = cv
                        .wait(g)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                }
                if g.pool.stopped {
                    return (g, WorkEnd::Stopped);
                }
                if pool_thread {
                    set_blocked(&mut g, t, BlockKind::TaskWait, false);
                }
            }
            Step::Await(d) => {
                // await Task.Delay(d): the rest runs as the timer's callback.
                g.pool.item_step[i] = (pc + 1) as u32;
                let now = g.pool.clock();
                g.add_timer(now + d, TimerAction::Resume(item), t);
                return (g, WorkEnd::Suspended);
            }
            Step::FanOut { .. } => unreachable!("check_supported refuses fan_out steps"),
            Step::Yield => {
                // await Task.Yield(): the global queue (or the task's pair).
                g.pool.item_step[i] = (pc + 1) as u32;
                g.queue_continuation(item, None);
                return (g, WorkEnd::Suspended);
            }
        }
        pc += 1;
    }
}

/// The timer thread: the policy's wake-ups (gate thread, blocking
/// adjustments), the native timer thread noticing expired timer queues,
/// and the periodic thread-count samples.
pub(super) fn timer_main(sh: Arc<Shared>) {
    sys::pin(&sh.cpus);
    let mut g = sh.lock();
    loop {
        if g.pool.stopped {
            return;
        }
        let now = g.pool.clock();
        match g.pool.due_event(now) {
            Ok((at, event)) => g.timer_event(at, event),
            Err(Some(at)) => {
                let wait = std::time::Duration::from_nanos(at.since(now).as_nanos());
                g = sh
                    .signals
                    .timer
                    .wait_timeout(g, wait)
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .0;
            }
            Err(None) => {
                g = sh
                    .signals
                    .timer
                    .wait(g)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
        }
    }
}

/// The program's main thread: submits the groups it submits at their
/// arrival instants (and queues the submitter item of `from = "pool"`
/// groups), until every group has started.
pub(super) fn main_thread(sh: Arc<Shared>) {
    sys::pin(&sh.cpus);
    let mut g = sh.lock();
    loop {
        if g.pool.stopped {
            return;
        }
        // Wait for the next arrival, or for a group that follows another
        // one to become due (`finish_item` notifies).
        g = match g.main_arrivals() {
            Arrivals::Done => return,
            Arrivals::Next(at) => {
                let now = g.pool.clock();
                let wait = std::time::Duration::from_nanos(at.since(now).as_nanos());
                sh.signals
                    .main
                    .wait_timeout(g, wait)
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .0
            }
            Arrivals::Waiting => sh
                .signals
                .main
                .wait(g)
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        };
    }
}

/// A `[[probe]]` loop on its own non-pool thread:
/// `while (work remains) { Thread.Sleep(every); Task.Run(() => sw.Stop()).Wait(); }`.
pub(super) fn probe_main(sh: Arc<Shared>, p: u32) {
    sys::pin(&sh.cpus);
    let every = sh.scenario.probes[p as usize].every;
    loop {
        if !sh.pause(every) {
            return;
        }
        let mut g = sh.lock();
        if g.pool.stopped || g.pool.items_finished == g.pool.items_total {
            return;
        }
        g.queue_probe(p);
        while g.pool.probe_in_flight[p as usize].is_some() && !g.pool.stopped {
            g = sh
                .signals
                .probe
                .wait(g)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}
