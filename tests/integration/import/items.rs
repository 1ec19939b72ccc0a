//! Work items from FrameworkEventSource's ThreadPoolEnqueueWork (30) and
//! ThreadPoolDequeueWork (31): counted, paired, timed, against what the
//! recorded program itself printed, and on synthetic traces.

use std::collections::BTreeMap;

use poolsim::nettrace::synth::{self, SynthEvent, TraceWriter};
use poolsim::nettrace::{ItemEnd, ItemSource, PoolEvent, PoolTimeline, read_events};

use super::{fixture, program_items, timeline};

#[test]
fn import_items_of_a_net8_trace_are_counted_and_paired() {
    let t = timeline("net8-items");
    let w = &t.items;
    assert_eq!(w.source, Some(ItemSource::FrameworkEventSource));
    assert_eq!((w.enqueued, w.dequeued), (20, 20));
    assert_eq!((t.enqueued, t.dequeued), (20, 20));
    assert_eq!(w.repeated_enqueues, 0);
    assert_eq!(w.dequeued_without_enqueue, 0);
    assert_eq!(w.never_dequeued, 0);
    assert_eq!(w.other_source_events, 0);
    assert_eq!(w.records.len(), 20);
    // Every item was queued by the main thread and ran on a worker.
    let workers: Vec<u64> = t.thread_count.iter().map(|p| p.thread_id).collect();
    for r in &w.records {
        assert!(!workers.contains(&r.enqueue_thread.unwrap()), "{r:?}");
        assert!(workers.contains(&r.thread.unwrap()), "{r:?}");
        assert!(r.ended_ns.is_some() && r.end.is_some(), "{r:?}");
    }
    // The events are read as decoded events too, with the right ids.
    let mut ids = Vec::new();
    read_events(&fixture("net8-items")[..], |e| {
        if let PoolEvent::EnqueueWork { work_id } = e.event {
            ids.push(work_id);
        }
    })
    .unwrap();
    assert_eq!(ids.len(), 20);
    // Hash codes: small positive numbers, distinct here.
    assert!(ids.iter().all(|&id| id > 0 && id < 1 << 31), "{ids:x?}");
    let mut distinct = ids.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 20);
}

#[test]
fn import_item_times_agree_with_the_program() {
    let t = timeline("net8-items");
    let printed = program_items("net8-items");
    assert_eq!(printed.len(), 20);
    // Pool times against the program's own Stopwatch (start to end of the
    // body), sorted: the trace's include the dispatch between two items.
    let mut ours: Vec<f64> = t
        .items
        .records
        .iter()
        .map(|r| r.pool_time_ns().unwrap() as f64 / 1e6)
        .collect();
    let mut theirs: Vec<f64> = printed
        .iter()
        .map(|p| (p.end_ms - p.start_ms) as f64)
        .collect();
    ours.sort_by(f64::total_cmp);
    theirs.sort_by(f64::total_cmp);
    for (a, b) in ours.iter().zip(&theirs) {
        assert!(
            (a - b).abs() <= 10.0,
            "pool times {ours:?}\nprogram {theirs:?}"
        );
    }
    // The same number of threads ran them, with the same shares.
    let mut by_os: BTreeMap<u64, usize> = BTreeMap::new();
    for r in &t.items.records {
        *by_os.entry(r.thread.unwrap()).or_default() += 1;
    }
    let mut by_managed: BTreeMap<i64, usize> = BTreeMap::new();
    for p in &printed {
        *by_managed.entry(p.thread).or_default() += 1;
    }
    let mut a: Vec<usize> = by_os.into_values().collect();
    let mut b: Vec<usize> = by_managed.into_values().collect();
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, b);
    // The longest wait in the queue is the last item's start, as the
    // program timed it from just before the first enqueue.
    let last_start = printed.iter().map(|p| p.start_ms).max().unwrap() as f64;
    let max_wait = t.items.queue_time.max_ns.unwrap() as f64 / 1e6;
    assert!(
        (max_wait - last_start).abs() <= 50.0,
        "max queue time {max_wait} ms, last start {last_start} ms"
    );
    // Every item's end but the last few is a next dequeue or a wait.
    let ends = |e: ItemEnd| t.items.records.iter().filter(|r| r.end == Some(e)).count();
    assert!(ends(ItemEnd::NextDequeue) >= 15);
    assert!(ends(ItemEnd::TraceEnd) <= 3);
}

#[test]
fn import_queue_length_is_a_consistent_step_series() {
    let t = timeline("net8-items");
    let q = &t.items.queue;
    assert!(!q.is_empty());
    assert!(q.windows(2).all(|w| w[0].time_ns < w[1].time_ns));
    assert_eq!(q.last().unwrap().queued, 0, "every item was taken");
    let max = q.iter().map(|p| p.queued).max().unwrap();
    assert_eq!(max, t.items.max_queue);
    // A tight loop of 20 QueueUserWorkItem calls outruns the 2 threads.
    assert!((15..=20).contains(&max), "queue peak {max}");
    // After the last enqueue the queue only shrinks, one item at a time.
    let last_enqueue = t
        .items
        .records
        .iter()
        .filter_map(|r| r.enqueued_ns)
        .max()
        .unwrap();
    let after: Vec<u64> = q
        .iter()
        .filter(|p| p.time_ns > last_enqueue)
        .map(|p| p.queued)
        .collect();
    assert!(after.windows(2).all(|w| w[1] + 1 == w[0]), "{after:?}");
}

fn ev(metadata_id: u32, thread_id: u64, ms: u64, payload: Vec<u8>) -> SynthEvent {
    SynthEvent {
        metadata_id,
        thread_id,
        timestamp: ms * 1_000_000,
        payload,
    }
}

#[test]
fn import_items_pair_on_a_synthetic_trace() {
    let mut w = TraceWriter::new(Vec::new(), 0, 1_000_000_000, 8).unwrap();
    let mut meta = synth::standard_metadata();
    meta.extend(synth::framework_metadata());
    // Event 30 of another provider: not an item.
    meta.push((14, "Some.Other.Source", 30, "ThreadPoolEnqueueWork"));
    w.metadata(&meta).unwrap();
    let enq = |id| synth::framework_work_payload(id);
    w.events(&[
        ev(synth::META_START, 20, 1, synth::worker_payload(1, 0)),
        ev(synth::META_ENQUEUE_WORK, 1, 10, enq(0xa)),
        ev(synth::META_ENQUEUE_WORK, 1, 11, enq(0xb)),
        ev(synth::META_ENQUEUE_WORK, 1, 11, enq(0xb)), // TransferLocalWork's repeat
        ev(14, 1, 12, enq(0xc)),
        ev(synth::META_DEQUEUE_WORK, 20, 20, enq(0xa)),
        ev(synth::META_DEQUEUE_WORK, 20, 120, enq(0xb)),
        ev(synth::META_WAIT, 20, 150, synth::worker_payload(1, 0)),
        ev(synth::META_DEQUEUE_WORK, 20, 200, enq(0xd)), // queued before the trace
        ev(synth::META_STOP, 20, 260, synth::worker_payload(0, 0)),
        ev(synth::META_ENQUEUE, 1, 300, synth::work_payload(0xe)), // the other source
    ])
    .unwrap();
    let bytes = w.finish().unwrap();
    let t = PoolTimeline::read(&bytes[..]).unwrap();
    let w = &t.items;
    assert_eq!(w.source, Some(ItemSource::FrameworkEventSource));
    assert_eq!((w.enqueued, w.dequeued), (2, 3));
    assert_eq!(w.repeated_enqueues, 1);
    assert_eq!(w.dequeued_without_enqueue, 1);
    assert_eq!(w.other_source_events, 1);
    let times: Vec<_> = w
        .records
        .iter()
        .map(|r| {
            (
                r.work_id,
                r.queue_time_ns().map(|n| n / 1_000_000),
                r.pool_time_ns().map(|n| n / 1_000_000),
                r.end,
            )
        })
        .collect();
    assert_eq!(
        times,
        vec![
            (0xa, Some(10), Some(100), Some(ItemEnd::NextDequeue)),
            (0xb, Some(109), Some(30), Some(ItemEnd::ThreadWait)),
            (0xd, None, Some(60), Some(ItemEnd::ThreadStop)),
        ]
    );
    assert_eq!(w.max_queue, 2);
    assert_eq!(t.trace.as_ref().unwrap().last_event_ns, Some(300_000_000));
}

#[test]
fn import_an_item_running_at_the_end_ends_at_the_last_event() {
    let mut w = TraceWriter::new(Vec::new(), 0, 1_000_000_000, 8).unwrap();
    let mut meta = synth::standard_metadata();
    meta.extend(synth::framework_metadata());
    w.metadata(&meta).unwrap();
    let id = synth::framework_work_payload(7);
    w.events(&[
        ev(synth::META_ENQUEUE_WORK, 1, 0, id.clone()),
        ev(synth::META_DEQUEUE_WORK, 20, 5, id),
        // A later event of another provider marks the trace's end.
        ev(synth::META_OTHER, 1, 905, vec![0; 4]),
    ])
    .unwrap();
    let t = PoolTimeline::read(&w.finish().unwrap()[..]).unwrap();
    let r = &t.items.records[0];
    assert_eq!(r.end, Some(ItemEnd::TraceEnd));
    assert_eq!(r.pool_time_ns(), Some(900_000_000));
    assert_eq!(t.items.running_at_end, 1);
}
