//! A small NetTrace 4 writer, for tests, fuzz seeds and benchmarks: valid
//! traces of chosen events, laid out as the runtime lays them out (Trace
//! object, metadata blocks, event blocks with compressed or uncompressed
//! headers, sequence points, stack blocks, end tag).

use std::collections::HashMap;
use std::io::{self, Write};

use super::events::{AdjustmentReason, DOTNET_RUNTIME_PROVIDER, FRAMEWORK_EVENT_SOURCE_PROVIDER};

/// One event to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SynthEvent {
    pub metadata_id: u32,
    /// OS thread id (also the capture thread).
    pub thread_id: u64,
    /// QPC ticks.
    pub timestamp: u64,
    pub payload: Vec<u8>,
}

/// Writes a trace to `W`, tracking the offset for the block alignment.
pub struct TraceWriter<W: Write> {
    out: W,
    pos: u64,
    sequence: HashMap<u64, u32>,
}

fn utf16z(s: &str, out: &mut Vec<u8>) {
    for u in s.encode_utf16() {
        out.extend_from_slice(&u.to_le_bytes());
    }
    out.extend_from_slice(&[0, 0]);
}

fn varu(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

impl<W: Write> TraceWriter<W> {
    /// Writes the stream header and the Trace object.
    pub fn new(
        out: W,
        sync_time_qpc: i64,
        qpc_frequency: i64,
        pointer_size: u32,
    ) -> io::Result<Self> {
        let mut w = TraceWriter {
            out,
            pos: 0,
            sequence: HashMap::new(),
        };
        let mut b = Vec::new();
        b.extend_from_slice(b"Nettrace");
        b.extend_from_slice(&20i32.to_le_bytes());
        b.extend_from_slice(b"!FastSerialization.1");
        b.push(5);
        type_object(&mut b, "Trace", 4, 4);
        for v in [2025i16, 1, 3, 1, 12, 0, 0, 0] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&sync_time_qpc.to_le_bytes());
        b.extend_from_slice(&qpc_frequency.to_le_bytes());
        b.extend_from_slice(&(pointer_size as i32).to_le_bytes());
        b.extend_from_slice(&4242i32.to_le_bytes());
        b.extend_from_slice(&2i32.to_le_bytes());
        b.extend_from_slice(&1_000_000i32.to_le_bytes());
        b.push(6);
        w.raw(&b)?;
        Ok(w)
    }

    fn raw(&mut self, b: &[u8]) -> io::Result<()> {
        self.out.write_all(b)?;
        self.pos += b.len() as u64;
        Ok(())
    }

    /// Bytes written so far.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Writes one block object: begin tag, type, size, padding, bytes, end tag.
    pub fn block(&mut self, type_name: &str, contents: &[u8]) -> io::Result<()> {
        let mut b = vec![5];
        type_object(&mut b, type_name, 2, 2);
        b.extend_from_slice(&(contents.len() as i32).to_le_bytes());
        let after = self.pos + b.len() as u64;
        let pad = ((4 - after % 4) % 4) as usize;
        b.extend(std::iter::repeat_n(0u8, pad));
        self.raw(&b)?;
        self.raw(contents)?;
        self.raw(&[6])
    }

    /// A MetadataBlock defining `(id, provider, event id, name)` records.
    pub fn metadata(&mut self, records: &[(u32, &str, u32, &str)]) -> io::Result<()> {
        let events: Vec<SynthEvent> = records
            .iter()
            .map(|&(id, provider, event_id, name)| {
                let mut p = Vec::new();
                p.extend_from_slice(&id.to_le_bytes());
                utf16z(provider, &mut p);
                p.extend_from_slice(&event_id.to_le_bytes());
                utf16z(name, &mut p);
                p.extend_from_slice(&0x10000u64.to_le_bytes());
                p.extend_from_slice(&0u32.to_le_bytes());
                p.extend_from_slice(&4u32.to_le_bytes());
                p.extend_from_slice(&0u32.to_le_bytes()); // no fields
                SynthEvent {
                    metadata_id: 0,
                    thread_id: 0,
                    timestamp: 0,
                    payload: p,
                }
            })
            .collect();
        let contents = self.encode_events(&events, true, false);
        self.block("MetadataBlock", &contents)
    }

    /// An EventBlock with compressed headers (as the runtime writes).
    pub fn events(&mut self, events: &[SynthEvent]) -> io::Result<()> {
        let contents = self.encode_events(events, true, true);
        self.block("EventBlock", &contents)
    }

    /// An EventBlock with uncompressed headers.
    pub fn events_uncompressed(&mut self, events: &[SynthEvent]) -> io::Result<()> {
        let contents = self.encode_events(events, false, true);
        self.block("EventBlock", &contents)
    }

    /// An SPBlock listing every thread's last sequence number (and the
    /// extra `(thread, sequence)` pairs given).
    pub fn sequence_point(&mut self, timestamp: u64, extra: &[(u64, u32)]) -> io::Result<()> {
        let mut threads: Vec<(u64, u32)> = self.sequence.iter().map(|(&t, &s)| (t, s)).collect();
        threads.extend_from_slice(extra);
        threads.sort_unstable();
        let mut b = Vec::new();
        b.extend_from_slice(&timestamp.to_le_bytes());
        b.extend_from_slice(&(threads.len() as i32).to_le_bytes());
        for (t, s) in threads {
            b.extend_from_slice(&t.to_le_bytes());
            b.extend_from_slice(&s.to_le_bytes());
        }
        self.block("SPBlock", &b)
    }

    /// A StackBlock of one empty stack.
    pub fn stacks(&mut self) -> io::Result<()> {
        let mut b = Vec::new();
        b.extend_from_slice(&1i32.to_le_bytes());
        b.extend_from_slice(&1i32.to_le_bytes());
        b.extend_from_slice(&0i32.to_le_bytes());
        self.block("StackBlock", &b)
    }

    /// Writes the end-of-stream tag and returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.raw(&[1])?;
        self.out.flush()?;
        Ok(self.out)
    }

    /// Block contents: the 20-byte header then the event blobs. Event
    /// headers in a metadata block carry no sequence numbers.
    fn encode_events(
        &mut self,
        events: &[SynthEvent],
        compressed: bool,
        numbered: bool,
    ) -> Vec<u8> {
        let min = events.iter().map(|e| e.timestamp).min().unwrap_or(0);
        let max = events.iter().map(|e| e.timestamp).max().unwrap_or(0);
        let mut b = Vec::new();
        b.extend_from_slice(&20i16.to_le_bytes());
        b.extend_from_slice(&(compressed as i16).to_le_bytes());
        b.extend_from_slice(&min.to_le_bytes());
        b.extend_from_slice(&max.to_le_bytes());
        // Previous header: (metadata, sequence, capture thread, thread, timestamp, size).
        let (mut pm, mut ps, mut pc, mut pt, mut pts, mut pl) =
            (0u32, 0u32, 0u64, 0u64, 0u64, 0u32);
        for e in events {
            let seq = if numbered {
                let s = self.sequence.entry(e.thread_id).or_insert(0);
                *s = s.wrapping_add(1);
                *s
            } else {
                0
            };
            if compressed {
                let mut flags = 0u8;
                let mut h = Vec::new();
                if e.metadata_id != pm {
                    flags |= 1;
                    varu(u64::from(e.metadata_id), &mut h);
                }
                if numbered && (e.thread_id != pc || seq != ps.wrapping_add(1)) {
                    flags |= 2;
                    varu(u64::from(seq.wrapping_sub(ps).wrapping_sub(1)), &mut h);
                    varu(e.thread_id, &mut h);
                    varu(0, &mut h);
                    pc = e.thread_id;
                }
                if e.thread_id != pt {
                    flags |= 4;
                    varu(e.thread_id, &mut h);
                }
                varu(e.timestamp.wrapping_sub(pts), &mut h);
                if e.payload.len() as u32 != pl {
                    flags |= 128;
                    varu(e.payload.len() as u64, &mut h);
                }
                b.push(flags);
                b.extend_from_slice(&h);
                b.extend_from_slice(&e.payload);
                pm = e.metadata_id;
                if numbered {
                    ps = seq;
                }
                pt = e.thread_id;
                pts = e.timestamp;
                pl = e.payload.len() as u32;
            } else {
                let event_size = 76 + e.payload.len() as u32;
                b.extend_from_slice(&event_size.to_le_bytes());
                b.extend_from_slice(&e.metadata_id.to_le_bytes());
                b.extend_from_slice(&seq.to_le_bytes());
                b.extend_from_slice(&e.thread_id.to_le_bytes());
                b.extend_from_slice(&e.thread_id.to_le_bytes());
                b.extend_from_slice(&0u32.to_le_bytes());
                b.extend_from_slice(&0u32.to_le_bytes());
                b.extend_from_slice(&e.timestamp.to_le_bytes());
                b.extend_from_slice(&[0u8; 32]);
                b.extend_from_slice(&(e.payload.len() as u32).to_le_bytes());
                b.extend_from_slice(&e.payload);
                while b.len() % 4 != 0 {
                    b.push(0);
                }
            }
        }
        b
    }
}

fn type_object(b: &mut Vec<u8>, name: &str, version: i32, min_reader: i32) {
    b.extend_from_slice(&[5, 1]);
    b.extend_from_slice(&version.to_le_bytes());
    b.extend_from_slice(&min_reader.to_le_bytes());
    b.extend_from_slice(&(name.len() as i32).to_le_bytes());
    b.extend_from_slice(name.as_bytes());
    b.push(6);
}

/// Metadata ids [`standard_metadata`] assigns to the thread-pool events.
pub const META_START: u32 = 1;
pub const META_STOP: u32 = 2;
pub const META_WAIT: u32 = 3;
pub const META_SAMPLE: u32 = 4;
pub const META_ADJUSTMENT: u32 = 5;
pub const META_STATS: u32 = 6;
pub const META_MIN_MAX: u32 = 7;
pub const META_WORKING: u32 = 8;
pub const META_ENQUEUE: u32 = 9;
pub const META_DEQUEUE: u32 = 10;
/// An event of another provider, to be skipped.
pub const META_OTHER: u32 = 11;

/// Metadata records for the ten thread-pool events plus one foreign event.
pub fn standard_metadata() -> Vec<(u32, &'static str, u32, &'static str)> {
    let p = DOTNET_RUNTIME_PROVIDER;
    vec![
        (META_START, p, 50, ""),
        (META_STOP, p, 51, ""),
        (META_WAIT, p, 57, "ThreadPoolWorkerThreadWait"),
        (META_SAMPLE, p, 54, "ThreadPoolWorkerThreadAdjustmentSample"),
        (META_ADJUSTMENT, p, 55, ""),
        (META_STATS, p, 56, ""),
        (META_MIN_MAX, p, 59, ""),
        (META_WORKING, p, 60, ""),
        (META_ENQUEUE, p, 61, ""),
        (META_DEQUEUE, p, 62, ""),
        (
            META_OTHER,
            "Microsoft-Windows-DotNETRuntimeRundown",
            146,
            "MethodDCEndVerbose",
        ),
    ]
}

/// Metadata ids [`framework_metadata`] assigns to FrameworkEventSource's
/// work-item events.
pub const META_ENQUEUE_WORK: u32 = 12;
pub const META_DEQUEUE_WORK: u32 = 13;

/// Metadata records for FrameworkEventSource's ThreadPoolEnqueueWork (30)
/// and ThreadPoolDequeueWork (31), named as the runtime names them.
pub fn framework_metadata() -> Vec<(u32, &'static str, u32, &'static str)> {
    let p = FRAMEWORK_EVENT_SOURCE_PROVIDER;
    vec![
        (META_ENQUEUE_WORK, p, 30, "ThreadPoolEnqueueWork"),
        (META_DEQUEUE_WORK, p, 31, "ThreadPoolDequeueWork"),
    ]
}

/// Payload of ThreadPoolEnqueueWork / DequeueWork: the i64 work id alone.
pub fn framework_work_payload(work_id: u64) -> Vec<u8> {
    work_id.to_le_bytes().to_vec()
}

/// Payload of ThreadPoolWorkerThreadStart / Stop / Wait.
pub fn worker_payload(active: u32, retired: u32) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&active.to_le_bytes());
    p.extend_from_slice(&retired.to_le_bytes());
    p.extend_from_slice(&0u16.to_le_bytes());
    p
}

/// Payload of ThreadPoolWorkerThreadAdjustmentAdjustment.
pub fn adjustment_payload(
    average_throughput: f64,
    new_count: u32,
    reason: AdjustmentReason,
) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&average_throughput.to_le_bytes());
    p.extend_from_slice(&new_count.to_le_bytes());
    p.extend_from_slice(&reason.code().to_le_bytes());
    p.extend_from_slice(&0u16.to_le_bytes());
    p
}

/// Payload of ThreadPoolWorkerThreadAdjustmentSample.
pub fn sample_payload(throughput: f64) -> Vec<u8> {
    let mut p = throughput.to_le_bytes().to_vec();
    p.extend_from_slice(&0u16.to_le_bytes());
    p
}

/// Payload of ThreadPoolMinMaxThreads.
pub fn min_max_payload(min_workers: u16, max_workers: u16) -> Vec<u8> {
    let mut p = Vec::new();
    for v in [min_workers, max_workers, 1, 1000, 0] {
        p.extend_from_slice(&v.to_le_bytes());
    }
    p
}

/// Payload of ThreadPoolEnqueue / Dequeue (64-bit pointers).
pub fn work_payload(work_id: u64) -> Vec<u8> {
    let mut p = work_id.to_le_bytes().to_vec();
    p.extend_from_slice(&0u16.to_le_bytes());
    p
}

/// A small valid trace: limits, two start-up threads, a starvation
/// injection and a hill-climbing raise (each creating a thread), samples,
/// work items, a foreign event, a sequence point, a stack block, and an
/// uncompressed block. Clock: 1 GHz from QPC 1,000,000.
pub fn sample_trace() -> Vec<u8> {
    let mut w =
        TraceWriter::new(Vec::new(), 1_000_000, 1_000_000_000, 8).expect("writing to a Vec");
    let ms = |m: u64| 1_000_000 + m * 1_000_000;
    let ev = |metadata_id, thread_id, timestamp, payload| SynthEvent {
        metadata_id,
        thread_id,
        timestamp,
        payload,
    };
    w.metadata(&standard_metadata()).expect("vec");
    w.stacks().expect("vec");
    w.events(&[
        ev(META_MIN_MAX, 100, ms(0), min_max_payload(2, 1000)),
        ev(META_ENQUEUE, 100, ms(1), work_payload(0xaa)),
        ev(META_START, 201, ms(2), worker_payload(1, 0)),
        ev(META_START, 202, ms(2), worker_payload(2, 0)),
        ev(META_DEQUEUE, 201, ms(3), work_payload(0xaa)),
        ev(META_OTHER, 100, ms(4), vec![1, 2, 3]),
    ])
    .expect("vec");
    w.sequence_point(ms(5), &[]).expect("vec");
    w.events(&[
        ev(
            META_ADJUSTMENT,
            300,
            ms(500),
            adjustment_payload(0.0, 3, AdjustmentReason::Starvation),
        ),
        ev(META_START, 203, ms(501), worker_payload(3, 0)),
        ev(META_SAMPLE, 201, ms(600), sample_payload(4.5)),
    ])
    .expect("vec");
    w.events_uncompressed(&[
        ev(
            META_ADJUSTMENT,
            201,
            ms(700),
            adjustment_payload(4.5, 4, AdjustmentReason::ClimbingMove),
        ),
        ev(META_START, 204, ms(701), worker_payload(4, 0)),
        ev(META_WAIT, 204, ms(800), worker_payload(4, 0)),
    ])
    .expect("vec");
    w.finish().expect("vec")
}
