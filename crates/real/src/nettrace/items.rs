//! Work items paired up from their enqueue and dequeue events: how many,
//! the queue length over time, and each item's time in the queue and on
//! its pool thread.
//!
//! What the runtime logs (dotnet/runtime
//! `src/libraries/System.Private.CoreLib/src/System/Threading/ThreadPoolWorkQueue.cs`,
//! .NET 6 to 8): `Enqueue` writes FrameworkEventSource 30 with the item's
//! hash code; `Dispatch` writes 31 on the worker thread just before the item
//! runs, and writes nothing when it ends. So an item's time on its thread
//! is taken to run from its dequeue to the next event that shows the thread
//! free: its next dequeue (31), its ThreadPoolWorkerThreadWait (57, the
//! worker found no work) or ThreadPoolWorkerThreadStop (51); an item still
//! running when the trace stops ends at the trace's last event
//! ([`ItemEnd::TraceEnd`], an upper bound). Each is an upper bound of the
//! item's own run: the dispatch loop's own work between two items is in it.
//!
//! Pairing: an enqueue of an id already waiting is counted in
//! [`WorkItems::repeated_enqueues`] and not as a new item (`TransferLocalWork`
//! queues a parked thread's local items again, logging them again; two
//! waiting items with one hash code cannot be told apart). A dequeue of an
//! id never enqueued (queued before the trace started) makes an item with
//! no arrival. The native pool's ThreadPoolEnqueue / Dequeue (DotNETRuntime
//! 61 and 62, pointer ids) are paired the same way; a trace with both kinds
//! uses the kind seen first and counts the other in
//! [`WorkItems::other_source_events`].
//!
//! Memory is bounded: at most [`MAX_ITEM_RECORDS`] item records and
//! [`MAX_QUEUE_POINTS`] queue-length points are kept (the counts and
//! duration statistics go on past them), and at most [`MAX_PENDING`] ids
//! are remembered as waiting.

use std::collections::HashMap;

use serde::Serialize;

/// Item records kept; later items are counted only.
pub const MAX_ITEM_RECORDS: usize = 1 << 18;
/// Queue-length points kept.
pub const MAX_QUEUE_POINTS: usize = 1 << 19;
/// Waiting ids remembered (a trace that lost its dequeues would otherwise
/// grow this without end).
pub const MAX_PENDING: usize = 1 << 20;

/// Which events the items come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ItemSource {
    /// FrameworkEventSource 30 / 31 (.NET 6+, the managed queue).
    FrameworkEventSource,
    /// DotNETRuntime 61 / 62 (the native pool).
    Runtime,
}

/// What ended an item's time on its thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ItemEnd {
    /// The same thread dequeued another item.
    NextDequeue,
    /// The thread waited for work (ThreadPoolWorkerThreadWait).
    ThreadWait,
    /// The thread exited (ThreadPoolWorkerThreadStop).
    ThreadStop,
    /// Still running at the trace's last event.
    TraceEnd,
}

/// One work item.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WorkItem {
    /// The id the runtime logged (a hash code on .NET 6+).
    pub work_id: u64,
    /// When it was queued (`None`: queued before the trace started).
    pub enqueued_ns: Option<i64>,
    /// The OS thread that queued it.
    pub enqueue_thread: Option<u64>,
    /// When a worker took it (`None`: never, within the trace).
    pub dequeued_ns: Option<i64>,
    /// The OS thread that ran it.
    pub thread: Option<u64>,
    /// When its thread was next seen free.
    pub ended_ns: Option<i64>,
    pub end: Option<ItemEnd>,
}

impl WorkItem {
    /// Time on its thread (dequeue to end), in ns.
    pub fn pool_time_ns(&self) -> Option<i64> {
        Some(self.ended_ns?.saturating_sub(self.dequeued_ns?))
    }

    /// Time in the queue (enqueue to dequeue), in ns.
    pub fn queue_time_ns(&self) -> Option<i64> {
        Some(self.dequeued_ns?.saturating_sub(self.enqueued_ns?))
    }
}

/// The thread that queued the first item: the program's submitter (its
/// main loop, or whatever sends its requests), as the draft reads it.
/// Items other threads queued from outside the pool are the runtime's
/// (the timer thread's queues and callbacks, I/O completions) when the
/// program's waits show.
pub fn submitter(records: &[WorkItem]) -> Option<u64> {
    records
        .iter()
        .filter(|r| r.enqueued_ns.is_some())
        .min_by_key(|r| r.enqueued_ns)
        .and_then(|r| r.enqueue_thread)
}

/// Queue length from `time_ns` on (a step series).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct QueueLengthPoint {
    pub time_ns: i64,
    pub queued: u64,
}

/// Count, total, min and max of durations (ns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DurationStats {
    pub count: u64,
    pub total_ns: i128,
    pub min_ns: Option<i64>,
    pub max_ns: Option<i64>,
}

impl DurationStats {
    fn add(&mut self, ns: i64) {
        self.count += 1;
        self.total_ns = self.total_ns.saturating_add(i128::from(ns));
        self.min_ns = Some(self.min_ns.map_or(ns, |m| m.min(ns)));
        self.max_ns = Some(self.max_ns.map_or(ns, |m| m.max(ns)));
    }

    /// The mean in ms (`None` without durations).
    pub fn mean_ms(&self) -> Option<f64> {
        (self.count > 0).then(|| self.total_ns as f64 / self.count as f64 / 1e6)
    }
}

/// An item waiting in the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Waiting {
    record: Option<usize>,
    enqueued_ns: i64,
}

/// An item running on a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Running {
    record: Option<usize>,
    dequeued_ns: i64,
}

/// The work items of a trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WorkItems {
    /// The events the items come from (`None`: no item events).
    pub source: Option<ItemSource>,
    /// Distinct items queued (repeats of a waiting id not counted).
    pub enqueued: u64,
    pub dequeued: u64,
    /// Enqueues of an id already waiting.
    pub repeated_enqueues: u64,
    /// Dequeues of an id not waiting (queued before the trace started).
    pub dequeued_without_enqueue: u64,
    /// Items still waiting at the end of the trace (set by `finish`).
    pub never_dequeued: u64,
    /// Items running when the trace ended (set by `finish`).
    pub running_at_end: u64,
    /// Item events of the other source, not used.
    pub other_source_events: u64,
    /// Most items waiting at once.
    pub max_queue: u64,
    /// Time of the first enqueue (or dequeue) and of the last item end.
    pub first_ns: Option<i64>,
    pub last_end_ns: Option<i64>,
    /// Enqueue to dequeue, over the items that have both.
    pub queue_time: DurationStats,
    /// Dequeue to end, over the items that ended.
    pub pool_time: DurationStats,
    /// One record per item, in the order they were first seen (at most
    /// `MAX_ITEM_RECORDS`).
    pub records: Vec<WorkItem>,
    /// Items past `MAX_ITEM_RECORDS`, counted but not kept.
    pub records_dropped: u64,
    /// Items waiting over time (at most `MAX_QUEUE_POINTS` points).
    pub queue: Vec<QueueLengthPoint>,
    #[serde(skip)]
    queued_now: u64,
    #[serde(skip)]
    waiting: HashMap<u64, Waiting>,
    #[serde(skip)]
    running: HashMap<u64, Running>,
}

impl WorkItems {
    /// Whether any item event was seen.
    pub fn is_empty(&self) -> bool {
        self.source.is_none()
    }

    /// Takes the source on first use; false for the other one's events.
    fn accept(&mut self, source: ItemSource) -> bool {
        match self.source {
            None => {
                self.source = Some(source);
                true
            }
            Some(s) if s == source => true,
            Some(_) => {
                self.other_source_events += 1;
                false
            }
        }
    }

    fn new_record(&mut self, item: WorkItem) -> Option<usize> {
        if self.records.len() < MAX_ITEM_RECORDS {
            self.records.push(item);
            Some(self.records.len() - 1)
        } else {
            self.records_dropped += 1;
            None
        }
    }

    fn queue_point(&mut self, time_ns: i64) {
        self.max_queue = self.max_queue.max(self.queued_now);
        let queued = self.queued_now;
        if let Some(last) = self.queue.last_mut()
            && last.time_ns == time_ns
        {
            last.queued = queued;
        } else if self.queue.len() < MAX_QUEUE_POINTS {
            self.queue.push(QueueLengthPoint { time_ns, queued });
        }
    }

    fn see_time(&mut self, time_ns: i64) {
        self.first_ns = Some(self.first_ns.map_or(time_ns, |f| f.min(time_ns)));
    }

    /// An item was queued by OS thread `thread`.
    pub fn enqueue(&mut self, source: ItemSource, work_id: u64, time_ns: i64, thread: u64) {
        if !self.accept(source) {
            return;
        }
        if self.waiting.contains_key(&work_id) {
            self.repeated_enqueues += 1;
            return;
        }
        self.see_time(time_ns);
        self.enqueued += 1;
        let record = self.new_record(WorkItem {
            work_id,
            enqueued_ns: Some(time_ns),
            enqueue_thread: Some(thread),
            dequeued_ns: None,
            thread: None,
            ended_ns: None,
            end: None,
        });
        if self.waiting.len() < MAX_PENDING {
            self.waiting.insert(
                work_id,
                Waiting {
                    record,
                    enqueued_ns: time_ns,
                },
            );
        }
        self.queued_now = self.queued_now.saturating_add(1);
        self.queue_point(time_ns);
    }

    /// OS thread `thread` took an item and runs it.
    pub fn dequeue(&mut self, source: ItemSource, work_id: u64, time_ns: i64, thread: u64) {
        if !self.accept(source) {
            return;
        }
        self.thread_free(thread, time_ns, ItemEnd::NextDequeue);
        self.see_time(time_ns);
        self.dequeued += 1;
        let record = match self.waiting.remove(&work_id) {
            Some(w) => {
                self.queued_now = self.queued_now.saturating_sub(1);
                self.queue_time.add(time_ns.saturating_sub(w.enqueued_ns));
                self.queue_point(time_ns);
                if let Some(r) = w.record.and_then(|i| self.records.get_mut(i)) {
                    r.dequeued_ns = Some(time_ns);
                    r.thread = Some(thread);
                }
                w.record
            }
            None => {
                self.dequeued_without_enqueue += 1;
                self.new_record(WorkItem {
                    work_id,
                    enqueued_ns: None,
                    enqueue_thread: None,
                    dequeued_ns: Some(time_ns),
                    thread: Some(thread),
                    ended_ns: None,
                    end: None,
                })
            }
        };
        if self.running.len() < MAX_PENDING || self.running.contains_key(&thread) {
            self.running.insert(
                thread,
                Running {
                    record,
                    dequeued_ns: time_ns,
                },
            );
        }
    }

    /// OS thread `thread` was seen free: the item it ran (if any) ended.
    pub fn thread_free(&mut self, thread: u64, time_ns: i64, end: ItemEnd) {
        let Some(r) = self.running.remove(&thread) else {
            return;
        };
        let ended = time_ns.max(r.dequeued_ns);
        self.pool_time.add(ended.saturating_sub(r.dequeued_ns));
        self.last_end_ns = Some(self.last_end_ns.map_or(ended, |l| l.max(ended)));
        if let Some(rec) = r.record.and_then(|i| self.records.get_mut(i)) {
            rec.ended_ns = Some(ended);
            rec.end = Some(end);
        }
    }

    /// The trace ended at `end_ns`: running items end there.
    pub fn finish(&mut self, end_ns: Option<i64>) {
        let mut threads: Vec<u64> = self.running.keys().copied().collect();
        threads.sort_unstable();
        self.running_at_end = threads.len() as u64;
        for t in threads {
            let at = end_ns.unwrap_or_else(|| self.running[&t].dequeued_ns);
            self.thread_free(t, at, ItemEnd::TraceEnd);
        }
        self.never_dequeued = self.queued_now;
    }

    /// From the first item event to the last item's end, in ns.
    pub fn span_ns(&self) -> Option<i64> {
        Some(self.last_end_ns?.saturating_sub(self.first_ns?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: ItemSource = ItemSource::FrameworkEventSource;

    #[test]
    fn items_pair_up_and_end_when_their_thread_is_free() {
        let mut w = WorkItems::default();
        w.enqueue(F, 1, 0, 100);
        w.enqueue(F, 2, 1, 100);
        w.enqueue(F, 2, 2, 100); // a repeat of a waiting id
        w.enqueue(F, 3, 3, 100);
        w.dequeue(F, 1, 10, 7);
        w.dequeue(F, 2, 12, 8);
        w.dequeue(F, 3, 510, 7); // ends item 1
        w.thread_free(8, 600, ItemEnd::ThreadWait);
        w.dequeue(F, 9, 700, 8); // never enqueued
        w.dequeue(ItemSource::Runtime, 4, 701, 8);
        w.finish(Some(1000));
        assert_eq!((w.enqueued, w.dequeued), (3, 4));
        assert_eq!(w.repeated_enqueues, 1);
        assert_eq!(w.dequeued_without_enqueue, 1);
        assert_eq!(w.other_source_events, 1);
        assert_eq!((w.never_dequeued, w.running_at_end), (0, 2));
        assert_eq!(w.max_queue, 3);
        let pool: Vec<_> = w
            .records
            .iter()
            .map(|r| (r.pool_time_ns(), r.end))
            .collect();
        assert_eq!(
            pool,
            vec![
                (Some(500), Some(ItemEnd::NextDequeue)),
                (Some(588), Some(ItemEnd::ThreadWait)),
                (Some(490), Some(ItemEnd::TraceEnd)),
                (Some(300), Some(ItemEnd::TraceEnd)),
            ]
        );
        assert_eq!(w.records[1].queue_time_ns(), Some(11));
        assert_eq!(w.span_ns(), Some(1000));
        let q: Vec<_> = w.queue.iter().map(|p| (p.time_ns, p.queued)).collect();
        assert_eq!(q, vec![(0, 1), (1, 2), (3, 3), (10, 2), (12, 1), (510, 0)]);
    }
}
