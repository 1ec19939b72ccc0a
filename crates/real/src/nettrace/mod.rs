//! EventPipe `.nettrace` reader: the real thread pool's timeline, from a
//! trace the .NET runtime wrote itself.
//!
//! # Formats
//!
//! The NetTrace format as .NET Core 3.0 to .NET 8 write it (described in
//! microsoft/perfview `src/TraceEvent/EventPipe/NetTraceFormat_v5.md`;
//! written from that description, no code copied):
//!
//! - the `Nettrace` magic, then the FastSerialization header
//!   `!FastSerialization.1`;
//! - the Trace object, version 4 or 5 (sync time UTC and QPC, QPC
//!   frequency, pointer size, process id, processors, sampling rate);
//! - then objects until the NullReference (end-of-stream) tag:
//!   `MetadataBlock`, `EventBlock` (version 2, event headers compressed
//!   (flag bit 0) or not), `StackBlock` (skipped), `SPBlock` (sequence
//!   points: dropped-event counts, and the sort windows). Metadata records
//!   may carry the V5 tags (opcode, V2 field layouts) after the V1 fields:
//!   only the header (id, provider, event id, name, keywords, version,
//!   level) is read, the rest skipped.
//!
//! Not supported, each reported as [`NetTraceError::Unsupported`]: NetPerf
//! (format 3 and older, .NET Core 2.x, no `Nettrace` magic) and the
//! NetTrace 6 block format (a zero after the magic instead of the
//! FastSerialization header), newer than .NET 8 writes.
//!
//! # Guarantees
//!
//! - Streaming: input comes through a `BufRead`; memory held is one block
//!   buffer (reused, at most [`MAX_BLOCK_BYTES`]), the metadata map and the
//!   last sequence number of each capture thread (forgotten at every
//!   sequence point), plus in [`read_events`] the decoded thread-pool
//!   events of one sequence-point window (at most [`MAX_WINDOW_EVENTS`]).
//!   [`PoolTimeline`] adds one entry per thread start, stop and adjustment,
//!   and the work items bounded as [`WorkItems`] says (at most 262,144
//!   item records and 524,288 queue-length points; counts go on).
//! - No panic on any input: every read is bounds-checked, lengths are
//!   capped, arithmetic is checked or wrapping; a truncated, zeroed or
//!   random file gives a [`NetTraceError`] with the byte offset. Every event
//!   not decoded is skipped (and counted in [`TraceInfo`]).
//! - Time: each event's QPC timestamp becomes nanoseconds since the
//!   Trace object's sync time, with the trace's own QPC frequency.
//!
//! # What is decoded
//!
//! The thread-pool events of Microsoft-Windows-DotNETRuntime (keyword
//! 0x10000), matched by provider and event id (the runtime's native events
//! carry no names in their metadata), and the work items .NET 6+ log
//! through System.Diagnostics.Eventing.FrameworkEventSource (events 30 and
//! 31, keyword 0x2 or 0x10, level 5; written by dotnet/runtime's
//! `ThreadPoolWorkQueue.cs`): see [`events`] for the ids and layouts,
//! [`PoolEvent`] for the typed result, [`PoolTimeline`] for what `poolsim
//! import` prints and [`WorkItems`] for the items paired up. From a
//! timeline, [`replay`] builds the [`crate::trace::Trace`] the charts draw,
//! and [`draft`] a replayable scenario.
//!
//! ```no_run
//! use poolsim_real::nettrace::{read_events, PoolEvent};
//!
//! let file = std::fs::File::open("app.nettrace").unwrap();
//! let info = read_events(file, |e| {
//!     if let PoolEvent::Adjustment { new_count, reason, .. } = e.event {
//!         println!("{:>8.1} ms  goal {new_count}  ({reason})", e.time_ns as f64 / 1e6);
//!     }
//! })
//! .unwrap();
//! println!("{} events, {} lost", info.events, info.events_lost);
//! ```

mod bytes;
pub mod draft;
mod error;
pub mod events;
pub mod fanout;
pub mod infer;
mod items;
mod reader;
pub mod replay;
pub mod synth;
pub mod ticks;
mod timeline;

use std::io::{BufReader, Read};

pub use error::NetTraceError;
pub use events::{
    AdjustmentReason, AdjustmentStats, DOTNET_RUNTIME_PROVIDER, FRAMEWORK_EVENT_SOURCE_PROVIDER,
    FRAMEWORK_ITEMS_CONFIG, PoolEvent, THREADING_KEYWORD, TimedEvent, decode_framework_event,
    decode_pool_event,
};
pub use items::{DurationStats, ItemEnd, ItemSource, QueueLengthPoint, WorkItem, WorkItems};
pub use reader::{
    EventMeta, MAX_BLOCK_BYTES, MAX_METADATA, NetTraceReader, RawEvent, SyncTimeUtc, TraceInfo,
};
pub use timeline::{
    ActivityPoint, Adjustment, GoalChange, Injection, MAX_ACTIVITY_POINTS, MinMaxThreads,
    PoolTimeline, ThreadCountPoint, WITHIN_GOAL,
};

/// Most decoded events held for sorting between two sequence points; a
/// window with more is emitted in parts (each part sorted).
pub const MAX_WINDOW_EVENTS: usize = 1 << 18;

/// Reads a whole trace and calls `f` with every thread-pool event decoded
/// (DotNETRuntime's thread-pool events and FrameworkEventSource's work items),
/// in time order (events are sorted within each sequence-point window; the
/// format guarantees windows do not overlap in time). Returns the trace's
/// header and counts.
///
/// On an error, the events decoded before it have been delivered.
pub fn read_events<R: Read>(
    r: R,
    mut f: impl FnMut(TimedEvent),
) -> Result<TraceInfo, NetTraceError> {
    let mut reader = NetTraceReader::new(BufReader::with_capacity(1 << 16, r))?;
    let clock = reader.info().clone();
    let mut window: Vec<TimedEvent> = Vec::new();
    let mut current_window = 0u64;
    let mut decoded = 0u64;
    let mut undecoded = 0u64;
    let mut last_qpc: Option<i64> = None;
    let flush = |window: &mut Vec<TimedEvent>, f: &mut dyn FnMut(TimedEvent)| {
        window.sort_by_key(|e| e.qpc);
        for e in window.drain(..) {
            f(e);
        }
    };
    let result = loop {
        let ev = match reader.next_event() {
            Ok(Some(ev)) => ev,
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        };
        if ev.window != current_window {
            flush(&mut window, &mut f);
            current_window = ev.window;
        }
        last_qpc = Some(last_qpc.map_or(ev.timestamp, |q: i64| q.max(ev.timestamp)));
        let Some(meta) = ev.meta else { continue };
        let decoded_event = if events::is_pool_event_id(meta.event_id)
            && meta.provider == DOTNET_RUNTIME_PROVIDER
        {
            decode_pool_event(meta.event_id, ev.payload, clock.pointer_size)
        } else if events::is_framework_event_id(meta.event_id)
            && meta.provider == FRAMEWORK_EVENT_SOURCE_PROVIDER
        {
            decode_framework_event(meta.event_id, ev.payload).map(|e| (e, None))
        } else {
            continue;
        };
        match decoded_event {
            Some((event, clr_instance_id)) => {
                decoded += 1;
                window.push(TimedEvent {
                    time_ns: clock.qpc_to_ns(ev.timestamp),
                    qpc: ev.timestamp,
                    thread_id: ev.thread_id,
                    clr_instance_id,
                    event,
                });
                if window.len() >= MAX_WINDOW_EVENTS {
                    flush(&mut window, &mut f);
                }
            }
            None => undecoded += 1,
        }
    };
    flush(&mut window, &mut f);
    let info = reader.info_mut();
    info.pool_events = decoded;
    info.undecoded_pool_events = undecoded;
    info.last_event_ns = last_qpc.map(|q| clock.qpc_to_ns(q));
    result.map(|()| reader.info().clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(bytes: &[u8]) -> Result<(Vec<TimedEvent>, TraceInfo), NetTraceError> {
        let mut v = Vec::new();
        let info = read_events(bytes, |e| v.push(e))?;
        Ok((v, info))
    }

    #[test]
    fn sample_trace_decodes() {
        let bytes = synth::sample_trace();
        let (events, info) = collect(&bytes).unwrap();
        assert_eq!(info.format_version, 4);
        assert_eq!(info.pointer_size, 8);
        assert_eq!(info.qpc_frequency, 1_000_000_000);
        assert_eq!(info.metadata_records, 11);
        assert_eq!(info.events, 12);
        assert_eq!(info.pool_events, 11);
        assert_eq!(info.sequence_points, 1);
        assert_eq!(info.events_lost, 0);
        assert_eq!(info.bytes, bytes.len() as u64);
        assert_eq!(events.len(), 11);
        assert_eq!(events[0].time_ns, 0);
        assert!(events.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
        assert_eq!(
            events[0].event,
            PoolEvent::MinMaxThreads {
                min_workers: 2,
                max_workers: 1000,
                min_io: 1,
                max_io: 1000
            }
        );
        let adj: Vec<_> = events
            .iter()
            .filter_map(|e| match e.event {
                PoolEvent::Adjustment {
                    new_count, reason, ..
                } => Some((e.time_ns, new_count, reason)),
                _ => None,
            })
            .collect();
        assert_eq!(
            adj,
            vec![
                (500_000_000, 3, AdjustmentReason::Starvation),
                (700_000_000, 4, AdjustmentReason::ClimbingMove)
            ]
        );
        let last = events.last().unwrap();
        assert_eq!(last.thread_id, 204);
        assert_eq!(
            last.event,
            PoolEvent::WorkerThreadWait {
                active: 4,
                retired: 0
            }
        );

        let t = PoolTimeline::read(&bytes[..]).unwrap();
        assert_eq!(t.peak_threads, 4);
        assert_eq!(t.threads_started, 4);
        assert_eq!(t.threads_created_by_reason[WITHIN_GOAL], 2);
        assert_eq!(t.threads_created_by_reason["Starvation"], 1);
        assert_eq!(t.threads_created_by_reason["ClimbingMove"], 1);
        assert_eq!(t.starvation_injections.len(), 1);
        assert_eq!(t.enqueued, 1);
        assert_eq!(t.dequeued, 1);
        assert_eq!(t.throughput_samples, 1);
    }

    #[test]
    fn every_prefix_is_an_error() {
        let bytes = synth::sample_trace();
        for n in 0..bytes.len() {
            let err = collect(&bytes[..n]).unwrap_err();
            assert!(err.offset() <= n as u64, "prefix {n}: {err}");
        }
    }

    #[test]
    fn dropped_events_are_counted() {
        let mut w = synth::TraceWriter::new(Vec::new(), 0, 1000, 8).unwrap();
        w.metadata(&synth::standard_metadata()).unwrap();
        let e = |ts| synth::SynthEvent {
            metadata_id: synth::META_ENQUEUE,
            thread_id: 7,
            timestamp: ts,
            payload: synth::work_payload(1),
        };
        w.events(&[e(1), e(2)]).unwrap();
        // The thread says it got to 5: 3, 4, 5 were dropped.
        w.sequence_point(3, &[(7, 5)]).unwrap();
        let bytes = w.finish().unwrap();
        // The writer's own entry for thread 7 (2) sorts first; the extra
        // (7, 5) then raises it: 3 lost.
        let (_, info) = collect(&bytes).unwrap();
        assert_eq!(info.events_lost, 3);
    }

    #[test]
    fn headers_of_other_formats_are_named() {
        let netperf = b"\x14\x00\x00\x00!FastSerialization.1";
        assert!(matches!(
            collect(netperf),
            Err(NetTraceError::Unsupported { .. })
        ));
        let mut v6 = b"Nettrace".to_vec();
        v6.extend_from_slice(&[0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0]);
        let err = collect(&v6).unwrap_err();
        assert!(err.to_string().contains("version 6"), "{err}");
        assert!(matches!(
            collect(&[0u8; 4096]),
            Err(NetTraceError::Format { offset: 0, .. })
        ));
    }

    #[test]
    fn a_huge_block_size_is_refused_without_allocating() {
        let mut bytes = synth::sample_trace();
        // The first block object follows the Trace object: find its size
        // field after the "MetadataBlock" type name and its end tag.
        let at = bytes
            .windows(13)
            .position(|w| w == b"MetadataBlock")
            .unwrap()
            + 14;
        bytes[at..at + 4].copy_from_slice(&0x7fff_ffffi32.to_le_bytes());
        assert!(matches!(
            collect(&bytes),
            Err(NetTraceError::TooLarge { .. })
        ));
        bytes[at..at + 4].copy_from_slice(&0x00ff_ffffi32.to_le_bytes());
        assert!(matches!(
            collect(&bytes),
            Err(NetTraceError::Truncated { .. })
        ));
    }
}
