//! Frames: an item's steps, and the shapes of the Task Parallel Library
//! that run items for their caller.
//!
//! Read: dotnet/runtime `System.Threading.Tasks.Parallel` (`Parallel.cs`,
//! `TaskReplicator.cs`, `ParallelRangeManager.cs`), PLINQ's chunk
//! partitioning, `Parallel.ForEachAsync`, `ConcurrentExclusiveSchedulerPair`,
//! `SemaphoreSlim.WaitAsync`; summarised in `docs/research/mono-and-tpl.md`.
//!
//! - `Parallel.For` / `ForEach` (and `Parallel.Invoke` with more than 10
//!   actions): a task replicator. The caller runs the root replica inline;
//!   every replica, when it starts, queues one successor (the caller's
//!   local queue on a pool thread) until a replica finishes without
//!   yielding. `For` splits the range into `cores` equal ranges and each
//!   replica claims chunks of 1, 2, 4, 8, 16 indices from its own range
//!   first; `ForEach` over an enumerable hands out chunks of 1, 1, 1, 2, 2,
//!   2, 4, ... (up to 128) per replica from one shared enumerator. A
//!   non-root replica yields (re-queues itself) after a time slice of
//!   `100 + (start tick % cores) × 50` ms. The caller then waits: first
//!   running inline any of its replicas still in its own local queue, then
//!   blocking in `Task.Wait` (cooperative blocking on .NET 6+).
//! - `Parallel.Invoke` with at most 10 actions: actions 1..n start as tasks,
//!   action 0 runs inline, then `WaitAll` runs inline the tasks still in the
//!   caller's local queue (last to first) and blocks for the rest.
//! - PLINQ: `min(cores, 512)` partition tasks on the global queue, each
//!   taking chunks from a shared enumerator (each chunk size used 8 times,
//!   then doubled, up to 128); the consumer blocks (not a task wait).
//! - `Parallel.ForEachAsync`: `cores` workers; the first is queued by the
//!   caller, each queues the next after taking its first element; a worker
//!   awaits each body in turn.
//! - `ConcurrentExclusiveSchedulerPair(n)`: tasks wait in the pair's queue;
//!   at most `n` processing items are in the pool, each running the pair's
//!   tasks in order until the queue is empty.
//! - `SemaphoreSlim(n).WaitAsync()` around a body: granted at once while
//!   the count is positive, else the item waits (its thread is freed); a
//!   release hands the count to the first waiter, whose continuation goes
//!   to the releasing thread's local queue.

use super::items::ItemState;
use super::{Activity, Engine, Flow, Frame, Owner, Work};
use crate::policy::{BlockKind, RequestCause};
use crate::policy::{Policy, PoolControl};
use crate::pool::state::PoolHost;
use crate::scenario::{Step, Submit};
use crate::time::SimDuration;
use crate::trace::{Decision, ItemId, Phase, ThreadId, TraceEvent, TraceSink};

/// More than this many actions and `Parallel.Invoke` uses the replicator.
const INVOKE_SMALL_MAX: u64 = 10;
/// PLINQ's cap on the default degree of parallelism.
const PLINQ_MAX_DOP: u64 = 512;
/// Largest chunk of PLINQ's and ForEach's chunk partitioning (value types).
const MAX_CHUNK: u64 = 128;
/// Largest per-replica chunk of `Parallel.For`'s range manager.
const FOR_MAX_STEP: u64 = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LoopKind {
    For,
    ForEach,
    /// `Parallel.Invoke` through the replicator (chunks of one).
    InvokeReplicated,
    /// `Parallel.Invoke` with ≤ 10 actions.
    InvokeSmall,
    Plinq,
    ForEachAsync,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CallPhase {
    /// The first call of its API in the run: the caller computes the
    /// library's JIT first (`[library.first_call_ms]`).
    FirstCall,
    Start,
    Waiting,
}

/// One call of a one-call API over a group's items.
#[derive(Debug)]
pub(super) struct Loop {
    kind: LoopKind,
    /// The API called (its first call in a run has a cost of its own).
    submit: Submit,
    /// The item ids are `first_item .. first_item + count`, in index order.
    first_item: ItemId,
    count: u64,
    /// Shared enumerator position (ForEach, PLINQ, ForEachAsync, Invoke).
    next_index: u64,
    /// `For`: per-range (next, end).
    ranges: Vec<(u64, u64)>,
    stop_replicating: bool,
    /// Parts started by the call that have not finished (replicas other
    /// than the root, Invoke tasks, partitions, workers).
    outstanding: u32,
    /// The replicas the caller may inline, in creation order.
    pending_replicas: Vec<u32>,
    phase: CallPhase,
    caller_blocked: Option<ThreadId>,
    /// DOP limit (For/ForEach/Invoke: replicas; PLINQ: partitions;
    /// ForEachAsync: workers).
    degree: u64,
    workers_started: u64,
    cores: u64,
}

#[derive(Debug)]
pub(super) struct Replica {
    lp: u32,
    root: bool,
    /// Replicas this one may still create (including through its successor).
    remaining: u64,
    started: bool,
    slice: SimDuration,
    slice_start: crate::time::SimTime,
    /// Current chunk (next, end).
    chunk: (u64, u64),
    /// `For`: the range this replica prefers and its chunk size.
    range: usize,
    step: u64,
    /// `ForEach`: chunks taken (chunk size grows every 3).
    grabs: u64,
    /// Run inline by the caller's wait.
    inlined: bool,
}

#[derive(Debug)]
pub(super) struct Partition {
    lp: u32,
    chunk: (u64, u64),
    grabs: u64,
}

#[derive(Debug)]
pub(super) struct AsyncWorker {
    lp: u32,
    took_first: bool,
}

impl<S: TraceSink, P: Policy + ?Sized> Engine<'_, S, P> {
    pub(super) fn step_frame(&mut self, t: ThreadId, frame: Frame) -> Flow {
        match frame {
            Frame::Item(item) => self.step_item(t, item),
            Frame::Replica(r) => self.step_replica(t, r),
            Frame::Partition(p) => self.step_partition(t, p),
            Frame::AsyncWorker(w) => self.step_async_worker(t, w),
            Frame::PairProcessor(p) => self.step_pair(t, p),
            Frame::Caller(lp) => self.step_caller(t, lp),
            Frame::Submitter(g) => self.step_submitter(t, g),
        }
    }

    // ---- items ---------------------------------------------------------

    /// Moves the item on top of `t`'s stack (and, for an async worker, the
    /// worker below it) into a continuation.
    fn suspend(&mut self, t: ThreadId, item: ItemId) -> u32 {
        let take = match self.world.items.get(item).owner {
            Owner::AsyncWorker(_) => 2,
            _ => 1,
        };
        let frames = &mut self.world.th(t).frames;
        let at = frames.len().saturating_sub(take);
        let suspended = frames.split_off(at);
        self.world.store_continuation(suspended)
    }

    /// Queues continuation `cont` of `item` where its scheduler puts it:
    /// the pair's queue for a task on a pair, else `from`'s local queue (a
    /// pool thread) or the global queue.
    fn queue_continuation(&mut self, item: ItemId, cont: u32, from: Option<ThreadId>) {
        if let Owner::Pair(p) = self.world.items.get(item).owner {
            self.pair_push(p, Work::Continuation(cont), None);
        } else {
            self.world.enqueue_from(from, Work::Continuation(cont));
            self.request_thread(RequestCause::Enqueue);
        }
    }

    /// Runs a continuation inline on `t` (a timer callback continuing an
    /// `await Task.Delay`), or hands it to its pair.
    pub(super) fn resume_continuation(&mut self, t: ThreadId, cont: u32) {
        let frames = self.world.continuations[cont as usize]
            .clone()
            .unwrap_or_default();
        if let Some(Frame::Item(item)) = frames.last().copied()
            && let Owner::Pair(p) = self.world.items.get(item).owner
        {
            self.pair_push(p, Work::Continuation(cont), None);
            return;
        }
        self.world.continuations[cont as usize] = None;
        self.world.th(t).frames.extend(frames);
    }

    fn step_item(&mut self, t: ThreadId, item: ItemId) -> Flow {
        let ItemState { group, started, .. } = self.world.items.get(item);
        if !started {
            if let Some(sem) = self.world.groups[group as usize].semaphore
                && !self.world.items.get(item).acquired
            {
                // await semaphore.WaitAsync()
                if self.world.semaphores[sem as usize].try_acquire() {
                    self.world.items.run_mut(item).acquired = true;
                } else {
                    let cont = self.suspend(t, item);
                    self.world.semaphores[sem as usize].wait(cont);
                    self.world.items.run_mut(item).acquired = true;
                    return Flow::Suspended;
                }
            }
            let now = self.world.now;
            self.world.items.start(item, t, now);
            self.world
                .record(TraceEvent::ItemStarted { item, thread: t });
        }
        let scenario = self.world.scenario;
        let body = &scenario.groups[group as usize].body;
        let pool = self.world.is_pool(t);
        loop {
            let pc = self.world.items.get(item).step as usize;
            let Some(step) = body.get(pc) else {
                return self.finish_item(t, item);
            };
            let now = self.world.now;
            let generation = self.world.th(t).generation;
            match *step {
                _ if step.duration() == Some(SimDuration::ZERO) => {}
                Step::Cpu(d) => {
                    self.world.start_cpu(t, d, Some(item));
                    return Flow::Pending;
                }
                Step::Spin(d) => {
                    self.world.cpu.advance(now);
                    self.world.cpu.add_spinner();
                    self.world.reschedule_cpu();
                    self.world.th(t).activity = Activity::Spin;
                    self.world.phase(t, Phase::Spin, Some(item));
                    let end = self.world.scenario.machine.spin_end(now, d);
                    self.world
                        .schedule(end, super::EventKind::StepDone(t, generation));
                    return Flow::Pending;
                }
                Step::Busy(d) => {
                    // Shown as CPU: the thread holds its core throughout.
                    self.world.cpu.advance(now);
                    self.world.cpu.add_busy_loop();
                    self.world.reschedule_cpu();
                    self.world.th(t).activity = Activity::Busy;
                    self.world.phase(t, Phase::Cpu, Some(item));
                    self.world
                        .schedule(now + d, super::EventKind::StepDone(t, generation));
                    return Flow::Pending;
                }
                Step::Sleep(d) => {
                    self.world.th(t).activity = Activity::Sleep;
                    self.world.phase(t, Phase::Sleep, Some(item));
                    let end = self.world.sleep_end(d);
                    self.world
                        .schedule(end, super::EventKind::StepDone(t, generation));
                    if pool {
                        self.world.tally.blocked_sleep += 1;
                        self.policy
                            .thread_blocked(&mut self.world, t, BlockKind::Sleep);
                    }
                    return Flow::Pending;
                }
                Step::Wait(d) => {
                    self.world.th(t).activity = Activity::Wait;
                    self.world.phase(t, Phase::Wait, Some(item));
                    let due = self.world.timer_due(d);
                    self.add_timer(due, super::TimerAction::ReleaseWaiter(t), t);
                    if pool {
                        self.world.tally.blocked_wait += 1;
                        self.policy
                            .thread_blocked(&mut self.world, t, BlockKind::TaskWait);
                    }
                    return Flow::Pending;
                }
                Step::Await(d) => {
                    self.world.items.run_mut(item).step += 1;
                    let cont = self.suspend(t, item);
                    let due = self.world.timer_due(d);
                    self.add_timer(due, super::TimerAction::Resume(cont), t);
                    return Flow::Suspended;
                }
                Step::Yield => {
                    self.world.items.run_mut(item).step += 1;
                    let cont = self.suspend(t, item);
                    // Task.Yield: the global queue (or the task's scheduler).
                    self.queue_continuation(item, cont, None);
                    return Flow::Suspended;
                }
                Step::FanOut { group: calls } => {
                    // Past the step before blocking: the release resumes
                    // the item at its next step.
                    self.world.items.run_mut(item).step += 1;
                    self.fan_out(t, item, calls);
                    return Flow::Pending;
                }
            }
            self.world.items.run_mut(item).step += 1;
        }
    }

    fn finish_item(&mut self, t: ThreadId, item: ItemId) -> Flow {
        self.world.items_finished += 1;
        self.world
            .record(TraceEvent::ItemFinished { item, thread: t });
        let group = self.world.items.get(item).group;
        self.group_item_finished(group);
        let state = self.world.items.get(item);
        self.world.item_ended(item);
        if state.acquired
            && let Some(sem) = self.world.groups[group as usize].semaphore
        {
            // semaphore.Release(): the first waiter's continuation goes to
            // this thread's local queue.
            if let Some(cont) = self.world.semaphores[sem as usize].release() {
                self.world.enqueue_from(Some(t), Work::Continuation(cont));
                self.request_thread(RequestCause::Enqueue);
            }
        }
        if let Owner::InvokeTask(lp) = state.owner {
            self.world.loops[lp as usize].outstanding -= 1;
            self.check_release(lp);
        }
        if let Owner::FanOut(call) = state.owner {
            self.fan_out_item_finished(call);
        }
        Flow::Done
    }

    /// A `fan_out` step on `t`: `Task.Run` of the next `per_call` items of
    /// group `g` (to `t`'s local queue on a pool thread; the global queue
    /// for `QueueUserWorkItem` or from another thread), then
    /// `Task.WhenAll(calls).Wait()`: `t` blocks until the last one
    /// finishes. The wait is on `WhenAll`'s task, which cannot run inline,
    /// so unlike `Parallel.Invoke`'s `WaitAll` it runs none of them itself.
    fn fan_out(&mut self, t: ThreadId, caller: ItemId, g: u32) {
        let group = &self.world.scenario.groups[g as usize];
        let crate::scenario::Origin::FanOut { per_call } = group.from else {
            unreachable!("the loader lets `fan_out` name fan-out groups only");
        };
        let submit = group.submit;
        let call = match self.world.free_fan_outs.pop() {
            Some(call) => call,
            None => {
                self.world
                    .fan_outs
                    .push(super::world::FanOutCall::default());
                (self.world.fan_outs.len() - 1) as u32
            }
        };
        self.world.fan_outs[call as usize] = super::world::FanOutCall {
            outstanding: per_call,
            waiter: Some(t),
        };
        for _ in 0..per_call {
            self.world.groups[g as usize].submitted += 1;
            let item = self.world.new_item(g, Owner::FanOut(call));
            if self.dedicated {
                self.world.record(TraceEvent::ItemQueued {
                    item,
                    local_of: None,
                });
                let latency = self.world.thread_start_latency();
                self.world
                    .create_dedicated_thread(Frame::Item(item), latency);
                continue;
            }
            let local = (submit == Submit::TaskRun && self.world.is_pool(t)).then_some(t);
            self.world.record(TraceEvent::ItemQueued {
                item,
                local_of: local,
            });
            self.world.enqueue_from(local, Work::Item(item));
            self.request_thread(RequestCause::Enqueue);
        }
        let kind = BlockKind::TaskWait;
        self.world.th(t).activity = Activity::Join(kind);
        self.world.phase(t, Phase::Join, Some(caller));
        if self.world.is_pool(t) {
            self.block_counts(kind);
            self.policy.thread_blocked(&mut self.world, t, kind);
        }
    }

    /// An item of `fan_out` call `call` finished: the last one releases
    /// the caller (`WhenAll`'s task completes on this thread and sets the
    /// waiter's event).
    fn fan_out_item_finished(&mut self, call: u32) {
        let c = &mut self.world.fan_outs[call as usize];
        c.outstanding -= 1;
        if c.outstanding > 0 {
            return;
        }
        if let Some(t) = c.waiter.take() {
            let generation = self.world.th(t).generation;
            self.world
                .schedule(self.world.now, super::EventKind::StepDone(t, generation));
        }
        self.world.free_fan_outs.push(call);
    }

    /// Counts a finished item of group `g`; when it was the last, the groups
    /// that follow it (`arrival = { after = ... }`) are due.
    fn group_item_finished(&mut self, g: u32) {
        let state = &mut self.world.groups[g as usize];
        state.finished += 1;
        if state.finished < self.world.scenario.groups[g as usize].count {
            return;
        }
        let scenario = self.world.scenario;
        for (h, group) in scenario.groups.iter().enumerate() {
            if let crate::scenario::Arrival::After {
                group: after,
                delay,
                ..
            } = group.arrival
                && after == g as usize
                && group.count > 0
            {
                let at = self.world.now + delay;
                self.world.groups[h].next_at = at;
                self.world.schedule(at, super::EventKind::Arrival(h as u32));
            }
        }
    }

    // ---- one-call APIs -------------------------------------------------

    /// Sets up the call of group `g`'s one-call API; `caller` is the pool
    /// thread calling it, or `None` for the main thread.
    pub(super) fn start_call(&mut self, g: u32) -> u32 {
        let group = &self.world.scenario.groups[g as usize];
        let count = group.count;
        let cores = u64::from(self.world.scenario.machine.processors().max(1));
        let kind = match group.submit {
            Submit::ParallelFor => LoopKind::For,
            // Parallel.ForEach takes its IList<T> path when the source is a
            // list: Enumerable.Range is one on .NET 8 (measured: the same
            // timeline as Parallel.For; over a plain iterator, chunk
            // partitioning, 7.1 s against 9.2 s for seed 000).
            Submit::ParallelForEach if self.world.range_is_list => LoopKind::For,
            Submit::ParallelForEach => LoopKind::ForEach,
            Submit::ParallelInvoke if count > INVOKE_SMALL_MAX || group.max_degree.is_some() => {
                LoopKind::InvokeReplicated
            }
            Submit::ParallelInvoke => LoopKind::InvokeSmall,
            Submit::Plinq => LoopKind::Plinq,
            _ => LoopKind::ForEachAsync,
        };
        let degree = match (kind, group.max_degree) {
            (_, Some(d)) => u64::from(d),
            (LoopKind::Plinq, None) => cores.min(PLINQ_MAX_DOP),
            (LoopKind::ForEachAsync, None) => cores,
            _ => u64::MAX,
        };
        let owner = match kind {
            LoopKind::InvokeSmall => Owner::Task,
            _ => Owner::Parent,
        };
        let first_item = self.world.items.next_id();
        for _ in 0..count {
            let item = self.world.new_item(g, owner);
            self.world.record(TraceEvent::ItemQueued {
                item,
                local_of: None,
            });
        }
        let ranges = if kind == LoopKind::For {
            let n = cores.min(count.max(1));
            (0..n)
                .map(|k| (count * k / n, count * (k + 1) / n))
                .collect()
        } else {
            Vec::new()
        };
        let lp = self.world.loops.len() as u32;
        self.world.loops.push(Loop {
            kind,
            submit: group.submit,
            first_item,
            count,
            next_index: 0,
            ranges,
            stop_replicating: false,
            outstanding: 0,
            pending_replicas: Vec::new(),
            phase: CallPhase::Start,
            caller_blocked: None,
            degree,
            workers_started: 0,
            cores,
        });
        self.world.groups[g as usize].call = Some(lp);
        lp
    }

    fn new_replica(&mut self, lp: u32, root: bool, remaining: u64) -> u32 {
        let r = self.world.replicas.len() as u32;
        let cores = self.world.loops[lp as usize].cores;
        let ranges = self.world.loops[lp as usize].ranges.len().max(1);
        // CooperativeMultitaskingTaskTimeout: 100 + (tick % cores) * 50 ms.
        let tick = self.world.now.as_nanos() / 1_000_000;
        let slice = SimDuration::from_ms(100 + (tick % cores) * 50);
        self.world.replicas.push(Replica {
            lp,
            root,
            remaining,
            started: false,
            slice,
            slice_start: self.world.now,
            chunk: (0, 0),
            range: r as usize % ranges,
            step: 1,
            grabs: 0,
            inlined: false,
        });
        r
    }

    fn step_caller(&mut self, t: ThreadId, lp: u32) -> Flow {
        let l = lp as usize;
        if self.world.loops[l].phase == CallPhase::FirstCall {
            // The library's code for the API is compiled: the call goes on.
            self.world.loops[l].phase = CallPhase::Start;
        } else if self.world.loops[l].phase == CallPhase::Start
            && let Some(cost) = self.world.first_call_cost(self.world.loops[l].submit)
        {
            self.world.loops[l].phase = CallPhase::FirstCall;
            let api = self.world.loops[l].submit;
            self.world.decision(Decision::FirstCall {
                api,
                thread: t,
                cost,
            });
            self.world.start_cpu(t, cost, None);
            // The call queues its first part before the code that part runs
            // is compiled (`TaskReplicator.Run` starts the root replica as a
            // task): the pool starts a thread meanwhile, and the parts
            // queued after the compilation find it ready (measured: the
            // second body starts 0.0 to 0.8 ms after the first).
            self.request_thread(RequestCause::Enqueue);
            return Flow::Pending;
        }
        if self.world.loops[l].phase == CallPhase::Start {
            self.world.loops[l].phase = CallPhase::Waiting;
            let kind = self.world.loops[l].kind;
            let pool_caller = self.world.is_pool(t).then_some(t);
            match kind {
                LoopKind::For | LoopKind::ForEach | LoopKind::InvokeReplicated => {
                    let degree = self.world.loops[l].degree;
                    let root = self.new_replica(lp, true, degree.saturating_sub(1));
                    return Flow::Push(Frame::Replica(root));
                }
                LoopKind::InvokeSmall => {
                    let (first, count) =
                        (self.world.loops[l].first_item, self.world.loops[l].count);
                    for a in 1..count {
                        let item = first + a as ItemId;
                        self.world.items.run_mut(item).owner = Owner::InvokeTask(lp);
                        self.world.loops[l].outstanding += 1;
                        self.world.enqueue_from(pool_caller, Work::Item(item));
                        self.request_thread(RequestCause::Enqueue);
                    }
                    if count > 0 {
                        self.world.items.run_mut(first).owner = Owner::Parent;
                        return Flow::Push(Frame::Item(first));
                    }
                }
                LoopKind::Plinq => {
                    let parts = self.world.loops[l]
                        .degree
                        .min(self.world.loops[l].count.max(1));
                    for _ in 0..parts {
                        let p = self.world.partitions.len() as u32;
                        self.world.partitions.push(Partition {
                            lp,
                            chunk: (0, 0),
                            grabs: 0,
                        });
                        self.world.loops[l].outstanding += 1;
                        self.world.enqueue_global(Work::Partition(p));
                        self.request_thread(RequestCause::Enqueue);
                    }
                }
                LoopKind::ForEachAsync => {
                    self.spawn_async_worker(lp);
                    if pool_caller.is_some() {
                        // `await Parallel.ForEachAsync(...)` frees the pool thread.
                        return Flow::Done;
                    }
                }
            }
        }
        // Waiting for the parts: inline what is still in our own local
        // queue, else block.
        if self.world.loops[l].outstanding == 0 {
            return Flow::Done;
        }
        if self.world.is_pool(t) {
            match self.world.loops[l].kind {
                LoopKind::InvokeSmall => {
                    let (first, count) =
                        (self.world.loops[l].first_item, self.world.loops[l].count);
                    for a in (1..count).rev() {
                        let item = first + a as ItemId;
                        if self.world.take_from_local(t, Work::Item(item)) {
                            return Flow::Push(Frame::Item(item));
                        }
                    }
                }
                LoopKind::For | LoopKind::ForEach | LoopKind::InvokeReplicated => {
                    let pending = self.world.loops[l].pending_replicas.clone();
                    for r in pending {
                        if self.world.take_from_local(t, Work::Replica(r)) {
                            self.world.replicas[r as usize].inlined = true;
                            return Flow::Push(Frame::Replica(r));
                        }
                    }
                }
                LoopKind::Plinq | LoopKind::ForEachAsync => {}
            }
        }
        let kind = match self.world.loops[l].kind {
            LoopKind::Plinq => BlockKind::Other,
            _ => BlockKind::TaskWait,
        };
        self.world.loops[l].caller_blocked = Some(t);
        self.world.th(t).activity = Activity::Join(kind);
        self.world.phase(t, Phase::Join, None);
        if self.world.is_pool(t) {
            self.block_counts(kind);
            self.policy.thread_blocked(&mut self.world, t, kind);
        }
        Flow::Pending
    }

    /// Wakes a caller blocked on `lp` once every part has finished.
    fn check_release(&mut self, lp: u32) {
        let l = &mut self.world.loops[lp as usize];
        if l.outstanding == 0
            && let Some(t) = l.caller_blocked.take()
        {
            let generation = self.world.th(t).generation;
            self.world
                .schedule(self.world.now, super::EventKind::StepDone(t, generation));
        }
    }

    /// Claims the next chunk for replica `r`; false when the loop is exhausted.
    fn claim_replica_chunk(&mut self, r: u32) -> bool {
        let lp = self.world.replicas[r as usize].lp as usize;
        let kind = self.world.loops[lp].kind;
        match kind {
            LoopKind::For => {
                let n = self.world.loops[lp].ranges.len();
                let start = self.world.replicas[r as usize].range;
                for k in 0..n {
                    let idx = (start + k) % n;
                    let (next, end) = self.world.loops[lp].ranges[idx];
                    if next < end {
                        let rep = &mut self.world.replicas[r as usize];
                        if idx != rep.range {
                            rep.range = idx;
                            rep.step = 1;
                        }
                        let take = rep.step.min(end - next);
                        rep.step = (rep.step * 2).min(FOR_MAX_STEP);
                        rep.chunk = (next, next + take);
                        self.world.loops[lp].ranges[idx].0 = next + take;
                        return true;
                    }
                }
                false
            }
            LoopKind::ForEach | LoopKind::InvokeReplicated => {
                let l = &mut self.world.loops[lp];
                if l.next_index >= l.count {
                    return false;
                }
                let rep = &mut self.world.replicas[r as usize];
                let size = if kind == LoopKind::ForEach {
                    (1u64 << (rep.grabs / 3).min(7)).min(MAX_CHUNK)
                } else {
                    1
                };
                rep.grabs += 1;
                let take = size.min(l.count - l.next_index);
                rep.chunk = (l.next_index, l.next_index + take);
                l.next_index += take;
                true
            }
            _ => false,
        }
    }

    fn loop_has_work(&self, lp: usize) -> bool {
        let l = &self.world.loops[lp];
        match l.kind {
            LoopKind::For => l.ranges.iter().any(|(a, b)| a < b),
            _ => l.next_index < l.count,
        }
    }

    fn step_replica(&mut self, t: ThreadId, r: u32) -> Flow {
        let ri = r as usize;
        let lp = self.world.replicas[ri].lp;
        let l = lp as usize;
        if !self.world.replicas[ri].started {
            self.world.replicas[ri].started = true;
            self.world.replicas[ri].slice_start = self.world.now;
            if !self.world.loops[l].stop_replicating
                && self.world.replicas[ri].remaining > 0
                && self.loop_has_work(l)
            {
                let remaining = self.world.replicas[ri].remaining - 1;
                self.world.replicas[ri].remaining = 0;
                let next = self.new_replica(lp, false, remaining);
                self.world.loops[l].outstanding += 1;
                self.world.loops[l].pending_replicas.push(next);
                let from = self.world.is_pool(t).then_some(t);
                self.world.enqueue_from(from, Work::Replica(next));
                self.request_thread(RequestCause::Enqueue);
            }
        }
        let (next, end) = self.world.replicas[ri].chunk;
        let kind = self.world.loops[l].kind;
        let elapsed = self.world.now.since(self.world.replicas[ri].slice_start);
        let may_yield = !self.world.replicas[ri].root
            && kind != LoopKind::InvokeReplicated
            && elapsed >= self.world.replicas[ri].slice;
        // For yields between chunks, ForEach between elements.
        let yield_point = match kind {
            LoopKind::For => next >= end,
            _ => true,
        };
        let started_any = self.world.replicas[ri].grabs > 0 || next > 0 || end > 0;
        if may_yield && yield_point && started_any && self.loop_has_work_or_chunk(l, ri) {
            // Yield: a new task continues this replica later.
            self.world.replicas[ri].started = false;
            let from = self.world.is_pool(t).then_some(t);
            self.world.enqueue_from(from, Work::Replica(r));
            self.request_thread(RequestCause::Enqueue);
            return Flow::Done;
        }
        if next < end {
            self.world.replicas[ri].chunk.0 = next + 1;
            let item = self.world.loops[l].first_item + next as ItemId;
            return Flow::Push(Frame::Item(item));
        }
        if self.claim_replica_chunk(r) {
            let (next, _) = self.world.replicas[ri].chunk;
            self.world.replicas[ri].chunk.0 = next + 1;
            let item = self.world.loops[l].first_item + next as ItemId;
            return Flow::Push(Frame::Item(item));
        }
        // Finished without yielding: no more replicas.
        self.world.loops[l].stop_replicating = true;
        if !self.world.replicas[ri].root {
            self.world.loops[l].outstanding -= 1;
            self.world.loops[l].pending_replicas.retain(|&x| x != r);
            self.check_release(lp);
        }
        Flow::Done
    }

    fn loop_has_work_or_chunk(&self, l: usize, ri: usize) -> bool {
        let (next, end) = self.world.replicas[ri].chunk;
        next < end || self.loop_has_work(l)
    }

    fn step_partition(&mut self, _t: ThreadId, p: u32) -> Flow {
        let pi = p as usize;
        let lp = self.world.partitions[pi].lp;
        let l = lp as usize;
        let (next, end) = self.world.partitions[pi].chunk;
        if next < end {
            self.world.partitions[pi].chunk.0 = next + 1;
            return Flow::Push(Frame::Item(self.world.loops[l].first_item + next as ItemId));
        }
        let lpr = &mut self.world.loops[l];
        if lpr.next_index < lpr.count {
            let part = &mut self.world.partitions[pi];
            // Each chunk size is used for 8 chunks, then doubled.
            let size = (1u64 << (part.grabs / 8).min(7)).min(MAX_CHUNK);
            part.grabs += 1;
            let take = size.min(lpr.count - lpr.next_index);
            part.chunk = (lpr.next_index + 1, lpr.next_index + take);
            let item = lpr.first_item + lpr.next_index as ItemId;
            lpr.next_index += take;
            return Flow::Push(Frame::Item(item));
        }
        self.world.loops[l].outstanding -= 1;
        self.check_release(lp);
        Flow::Done
    }

    fn spawn_async_worker(&mut self, lp: u32) {
        let w = self.world.async_workers.len() as u32;
        self.world.async_workers.push(AsyncWorker {
            lp,
            took_first: false,
        });
        let l = &mut self.world.loops[lp as usize];
        l.outstanding += 1;
        l.workers_started += 1;
        self.world.enqueue_global(Work::AsyncWorker(w));
        self.request_thread(RequestCause::Enqueue);
    }

    fn step_async_worker(&mut self, _t: ThreadId, w: u32) -> Flow {
        let lp = self.world.async_workers[w as usize].lp;
        let l = lp as usize;
        if self.world.loops[l].next_index >= self.world.loops[l].count {
            self.world.loops[l].outstanding -= 1;
            self.check_release(lp);
            return Flow::Done;
        }
        let index = self.world.loops[l].next_index;
        self.world.loops[l].next_index += 1;
        if !self.world.async_workers[w as usize].took_first {
            self.world.async_workers[w as usize].took_first = true;
            let lpr = &self.world.loops[l];
            if lpr.workers_started < lpr.degree && lpr.next_index < lpr.count {
                self.spawn_async_worker(lp);
            }
        }
        let item = self.world.loops[l].first_item + index as ItemId;
        self.world.items.run_mut(item).owner = Owner::AsyncWorker(w);
        Flow::Push(Frame::Item(item))
    }

    // ---- throttles -------------------------------------------------------

    /// A task (or continuation) enters pair `p`'s queue; a processing item
    /// is started if fewer than the limit are active.
    pub(super) fn pair_push(&mut self, p: u32, work: Work, from: Option<ThreadId>) {
        if self.world.pairs[p as usize].push(work) {
            self.world.enqueue_from(from, Work::PairProcessor(p));
            self.request_thread(RequestCause::Enqueue);
        }
    }

    fn step_pair(&mut self, t: ThreadId, p: u32) -> Flow {
        match self.world.pairs[p as usize].pop() {
            Some(Work::Item(item)) => Flow::Push(Frame::Item(item)),
            Some(Work::Continuation(cont)) => {
                let frames = self.world.continuations[cont as usize]
                    .take()
                    .unwrap_or_default();
                let th = self.world.th(t);
                let Some((&top, rest)) = frames.split_last() else {
                    return Flow::Suspended;
                };
                th.frames.extend_from_slice(rest);
                Flow::Push(top)
            }
            Some(_) | None => {
                self.world.pairs[p as usize].processor_done();
                Flow::Done
            }
        }
    }

    fn step_submitter(&mut self, t: ThreadId, g: u32) -> Flow {
        let group = &self.world.scenario.groups[g as usize];
        if group.submit.one_call() {
            if self.world.groups[g as usize].call.is_some() {
                return Flow::Done;
            }
            let lp = self.start_call(g);
            return Flow::Push(Frame::Caller(lp));
        }
        self.world.phase(t, Phase::Internal, None);
        match self.submit_due(g, Some(t)) {
            None => Flow::Done,
            Some(next) => {
                let th = self.world.th(t);
                th.activity = Activity::SubmitterPause;
                let generation = th.generation;
                self.world
                    .schedule(next, super::EventKind::StepDone(t, generation));
                Flow::Pending
            }
        }
    }
}
