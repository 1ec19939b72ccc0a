//! The streaming block reader: stream header, Trace object, then one block
//! object at a time, handing out the events of each EventBlock in file order.
//!
//! Memory held: one block buffer (reused; a block is at most
//! [`MAX_BLOCK_BYTES`]), the metadata table (id -> provider, event id,
//! name, version) and the last sequence number of each capture thread (reset
//! at every sequence point). Nothing else grows with the trace.

use std::collections::HashMap;
use std::io::{BufRead, ErrorKind};

use serde::Serialize;

use super::bytes::Bytes;
use super::error::NetTraceError;

/// Largest block accepted. The runtime writes blocks of at most a few
/// hundred KB; anything near this is a corrupt length.
pub const MAX_BLOCK_BYTES: usize = 64 << 20;
/// Most metadata records accepted (a real trace has hundreds).
pub const MAX_METADATA: usize = 1 << 20;
/// Longest provider or event name accepted, in UTF-16 units.
const MAX_NAME_UNITS: usize = 4096;
/// Capture threads whose sequence numbers are followed between two sequence
/// points; more are not checked for drops.
const MAX_TRACKED_THREADS: usize = 1 << 16;

const MAGIC: &[u8; 8] = b"Nettrace";
const FAST_SERIALIZATION: &[u8] = b"!FastSerialization.1";

// FastSerialization tags.
const TAG_NULL_REFERENCE: u8 = 1;
const TAG_BEGIN_PRIVATE_OBJECT: u8 = 5;
const TAG_END_OBJECT: u8 = 6;

/// Size of an uncompressed (V4/V5) event header, EventSize field included.
const UNCOMPRESSED_HEADER: usize = 80;

// Compressed-header flag bits.
const F_METADATA_ID: u8 = 1 << 0;
const F_CAPTURE_THREAD_AND_SEQUENCE: u8 = 1 << 1;
const F_THREAD_ID: u8 = 1 << 2;
const F_STACK_ID: u8 = 1 << 3;
const F_ACTIVITY_ID: u8 = 1 << 4;
const F_RELATED_ACTIVITY_ID: u8 = 1 << 5;
const F_DATA_LENGTH: u8 = 1 << 7;

/// The trace's wall-clock start, as the Trace object stores it (UTC).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SyncTimeUtc {
    pub year: i16,
    pub month: i16,
    pub day_of_week: i16,
    pub day: i16,
    pub hour: i16,
    pub minute: i16,
    pub second: i16,
    pub millisecond: i16,
}

/// What the Trace object says about the trace, and counts of what the
/// reader met.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TraceInfo {
    /// Version of the Trace object: 4 (.NET Core 3.0 to .NET 8) or 5.
    pub format_version: u32,
    pub sync_time_utc: SyncTimeUtc,
    /// QPC ticks at `sync_time_utc`; event times are counted from here.
    pub sync_time_qpc: i64,
    /// QPC ticks per second (1,000,000,000 on Linux).
    pub qpc_frequency: i64,
    /// 4 or 8.
    pub pointer_size: u32,
    pub process_id: u32,
    pub processors: u32,
    pub expected_cpu_sampling_rate: u32,
    /// Bytes read, up to and including the end-of-stream tag.
    pub bytes: u64,
    /// Block objects read (of every kind).
    pub blocks: u64,
    pub metadata_records: u64,
    /// Metadata records that could not be parsed (their events are skipped).
    pub bad_metadata_records: u64,
    /// Events in EventBlocks.
    pub events: u64,
    /// Events whose metadata id was never defined (skipped).
    pub events_without_metadata: u64,
    pub sequence_points: u64,
    /// Events the runtime dropped, from sequence-number gaps.
    pub events_lost: u64,
    /// Objects of unknown type, skipped.
    pub unknown_objects: u64,
    /// Thread-pool events decoded (filled by `read_events`).
    pub pool_events: u64,
    /// Thread-pool events whose payload was too short to decode (skipped).
    pub undecoded_pool_events: u64,
    /// Time of the last event of any provider, in ns since the sync time:
    /// the end of the trace (filled by `read_events`).
    pub last_event_ns: Option<i64>,
}

impl TraceInfo {
    /// Nanoseconds from the trace's sync time to QPC time `qpc`.
    pub fn qpc_to_ns(&self, qpc: i64) -> i64 {
        if self.qpc_frequency <= 0 {
            return 0;
        }
        let delta = i128::from(qpc) - i128::from(self.sync_time_qpc);
        let ns = delta * 1_000_000_000 / i128::from(self.qpc_frequency);
        i64::try_from(ns).unwrap_or(if ns < 0 { i64::MIN } else { i64::MAX })
    }
}

/// One metadata record: what kind of event an id stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventMeta {
    pub provider: String,
    pub event_id: u32,
    /// Often empty: the runtime's native events carry no name.
    pub name: String,
    pub keywords: u64,
    pub version: u32,
    pub level: u32,
}

/// One event, borrowed from the reader until the next call.
#[derive(Clone, Copy, Debug)]
pub struct RawEvent<'a> {
    /// `None` when the metadata id was never defined.
    pub meta: Option<&'a EventMeta>,
    pub metadata_id: u32,
    /// QPC ticks.
    pub timestamp: i64,
    /// OS id of the thread the event is about.
    pub thread_id: u64,
    /// OS id of the thread that wrote the event.
    pub capture_thread_id: u64,
    pub sequence_number: u32,
    pub processor: u32,
    pub stack_id: u32,
    pub payload: &'a [u8],
    /// File offset of the event's header.
    pub offset: u64,
    /// Sequence points read before this event: events with the same count
    /// lie between the same two sequence points.
    pub window: u64,
}

/// The previous event header, for header compression (reset per block).
#[derive(Clone, Copy, Debug, Default)]
struct Header {
    metadata_id: u32,
    sequence: u32,
    capture_thread: u64,
    processor: u32,
    thread: u64,
    stack_id: u32,
    timestamp: u64,
    payload_size: u32,
}

/// A bad spot inside a block: position in the block and what was expected.
struct Bad(usize, &'static str);

/// Reads one event header and locates its payload, at `b`'s position.
/// Returns the payload's range in the block; `b` ends after the event.
fn read_event_header(
    b: &mut Bytes<'_>,
    compressed: bool,
    h: &mut Header,
    block_len: usize,
) -> Result<(usize, usize), Bad> {
    let start = b.pos();
    if compressed {
        let flags = b.u8().ok_or(Bad(start, "event header flags"))?;
        if flags & F_METADATA_ID != 0 {
            h.metadata_id = b.varu32().ok_or(Bad(b.pos(), "metadata id"))?;
        }
        if flags & F_CAPTURE_THREAD_AND_SEQUENCE != 0 {
            let delta = b.varu32().ok_or(Bad(b.pos(), "sequence number"))?;
            h.sequence = h.sequence.wrapping_add(delta).wrapping_add(1);
            h.capture_thread = b.varu64().ok_or(Bad(b.pos(), "capture thread id"))?;
            h.processor = b.varu32().ok_or(Bad(b.pos(), "processor number"))?;
        } else if h.metadata_id != 0 {
            h.sequence = h.sequence.wrapping_add(1);
        }
        if flags & F_THREAD_ID != 0 {
            h.thread = b.varu64().ok_or(Bad(b.pos(), "thread id"))?;
        }
        if flags & F_STACK_ID != 0 {
            h.stack_id = b.varu32().ok_or(Bad(b.pos(), "stack id"))?;
        }
        let dt = b.varu64().ok_or(Bad(b.pos(), "timestamp"))?;
        h.timestamp = h.timestamp.wrapping_add(dt);
        if flags & F_ACTIVITY_ID != 0 {
            b.skip(16).ok_or(Bad(b.pos(), "activity id"))?;
        }
        if flags & F_RELATED_ACTIVITY_ID != 0 {
            b.skip(16).ok_or(Bad(b.pos(), "related activity id"))?;
        }
        // Bit 6 (IsSorted) marks sort points; read_events sorts by sequence point instead.
        if flags & F_DATA_LENGTH != 0 {
            h.payload_size = b.varu32().ok_or(Bad(b.pos(), "payload size"))?;
        }
        let payload_start = b.pos();
        let size = h.payload_size as usize;
        b.skip(size).ok_or(Bad(payload_start, "event payload"))?;
        Ok((payload_start, size))
    } else {
        let event_size = b.u32().ok_or(Bad(start, "event size"))? as usize;
        let meta = b.u32().ok_or(Bad(b.pos(), "metadata id"))?;
        h.metadata_id = meta & 0x7fff_ffff;
        h.sequence = b.u32().ok_or(Bad(b.pos(), "sequence number"))?;
        h.thread = b.u64().ok_or(Bad(b.pos(), "thread id"))?;
        h.capture_thread = b.u64().ok_or(Bad(b.pos(), "capture thread id"))?;
        h.processor = b.u32().ok_or(Bad(b.pos(), "processor number"))?;
        h.stack_id = b.u32().ok_or(Bad(b.pos(), "stack id"))?;
        h.timestamp = b.u64().ok_or(Bad(b.pos(), "timestamp"))?;
        b.skip(32).ok_or(Bad(b.pos(), "activity ids"))?;
        h.payload_size = b.u32().ok_or(Bad(b.pos(), "payload size"))?;
        let payload_start = b.pos();
        let size = h.payload_size as usize;
        if event_size < UNCOMPRESSED_HEADER - 4 || size > event_size - (UNCOMPRESSED_HEADER - 4) {
            return Err(Bad(
                start,
                "event size (smaller than its header and payload)",
            ));
        }
        // The next event starts EventSize bytes after the size field, then
        // 4-byte aligned (the block itself starts aligned in the file).
        let end = start
            .checked_add(4)
            .and_then(|e| e.checked_add(event_size))
            .ok_or(Bad(start, "event size"))?;
        if end > block_len {
            return Err(Bad(start, "event (runs past its block)"));
        }
        let aligned = end
            .checked_add(3)
            .map(|e| e & !3)
            .unwrap_or(end)
            .min(block_len);
        b.set_pos(aligned);
        Ok((payload_start, size))
    }
}

/// Byte source with a running offset.
struct Source<R> {
    inner: R,
    pos: u64,
}

impl<R: BufRead> Source<R> {
    /// The buffered bytes (empty at end of file), retrying interrupted reads.
    fn fill(&mut self) -> Result<&[u8], NetTraceError> {
        loop {
            match self.inner.fill_buf() {
                Ok(_) => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(NetTraceError::Io {
                        offset: self.pos,
                        source: e,
                    });
                }
            }
        }
        let pos = self.pos;
        self.inner.fill_buf().map_err(|source| NetTraceError::Io {
            offset: pos,
            source,
        })
    }

    fn read_exact(&mut self, out: &mut [u8], what: &'static str) -> Result<(), NetTraceError> {
        let mut done = 0;
        while done < out.len() {
            let pos = self.pos;
            let avail = self.fill()?;
            if avail.is_empty() {
                return Err(NetTraceError::Truncated { offset: pos, what });
            }
            let n = avail.len().min(out.len() - done);
            out[done..done + n].copy_from_slice(&avail[..n]);
            self.inner.consume(n);
            self.pos += n as u64;
            done += n;
        }
        Ok(())
    }

    /// Reads `n` bytes into `buf` (cleared first), growing it only as the
    /// bytes arrive, so a false huge length on a short file costs nothing.
    fn read_vec(
        &mut self,
        buf: &mut Vec<u8>,
        n: usize,
        what: &'static str,
    ) -> Result<(), NetTraceError> {
        buf.clear();
        while buf.len() < n {
            let pos = self.pos;
            let avail = self.fill()?;
            if avail.is_empty() {
                return Err(NetTraceError::Truncated { offset: pos, what });
            }
            let k = avail.len().min(n - buf.len());
            buf.extend_from_slice(&avail[..k]);
            self.inner.consume(k);
            self.pos += k as u64;
        }
        Ok(())
    }

    fn skip(&mut self, mut n: usize, what: &'static str) -> Result<(), NetTraceError> {
        while n > 0 {
            let pos = self.pos;
            let avail = self.fill()?;
            if avail.is_empty() {
                return Err(NetTraceError::Truncated { offset: pos, what });
            }
            let k = avail.len().min(n);
            self.inner.consume(k);
            self.pos += k as u64;
            n -= k;
        }
        Ok(())
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, NetTraceError> {
        let mut b = [0u8; 1];
        self.read_exact(&mut b, what)?;
        Ok(b[0])
    }

    fn i32(&mut self, what: &'static str) -> Result<i32, NetTraceError> {
        let mut b = [0u8; 4];
        self.read_exact(&mut b, what)?;
        Ok(i32::from_le_bytes(b))
    }

    fn i16(&mut self, what: &'static str) -> Result<i16, NetTraceError> {
        let mut b = [0u8; 2];
        self.read_exact(&mut b, what)?;
        Ok(i16::from_le_bytes(b))
    }

    fn i64(&mut self, what: &'static str) -> Result<i64, NetTraceError> {
        let mut b = [0u8; 8];
        self.read_exact(&mut b, what)?;
        Ok(i64::from_le_bytes(b))
    }

    fn expect_tag(&mut self, tag: u8, what: &'static str) -> Result<(), NetTraceError> {
        let at = self.pos;
        let got = self.u8(what)?;
        if got != tag {
            return Err(NetTraceError::format(
                at,
                format!("expected {what} (tag {tag}), found byte {got}"),
            ));
        }
        Ok(())
    }
}

/// Metadata id -> record. Ids are small and dense in real traces.
#[derive(Default)]
struct MetaTable {
    dense: Vec<Option<EventMeta>>,
    sparse: HashMap<u32, EventMeta>,
    count: usize,
}

const DENSE_IDS: u32 = 1 << 16;

impl MetaTable {
    fn get(&self, id: u32) -> Option<&EventMeta> {
        if id < DENSE_IDS {
            self.dense.get(id as usize).and_then(Option::as_ref)
        } else {
            self.sparse.get(&id)
        }
    }

    /// Inserts; false when the table is full.
    fn insert(&mut self, id: u32, meta: EventMeta) -> bool {
        let slot_was_empty = self.get(id).is_none();
        if slot_was_empty && self.count >= MAX_METADATA {
            return false;
        }
        if id < DENSE_IDS {
            let i = id as usize;
            if self.dense.len() <= i {
                self.dense.resize(i + 1, None);
            }
            self.dense[i] = Some(meta);
        } else {
            self.sparse.insert(id, meta);
        }
        if slot_was_empty {
            self.count += 1;
        }
        true
    }
}

/// Parses a metadata record's payload: id, provider, event id, name,
/// keywords, version, level (field descriptions and tags are not needed).
fn parse_metadata(payload: &[u8]) -> Option<(u32, EventMeta)> {
    let mut b = Bytes::new(payload);
    let id = b.u32()?;
    let provider = b.utf16z(MAX_NAME_UNITS)?;
    let event_id = b.u32()?;
    let name = b.utf16z(MAX_NAME_UNITS)?;
    let keywords = b.u64().unwrap_or(0);
    let version = b.u32().unwrap_or(0);
    let level = b.u32().unwrap_or(0);
    Some((
        id,
        EventMeta {
            provider,
            event_id,
            name,
            keywords,
            version,
            level,
        },
    ))
}

/// A streaming reader of a `.nettrace` file (NetTrace format 4 and 5).
///
/// ```no_run
/// use std::io::BufReader;
/// use poolsim_real::nettrace::NetTraceReader;
///
/// let file = std::fs::File::open("app.nettrace").unwrap();
/// let mut reader = NetTraceReader::new(BufReader::new(file)).unwrap();
/// while let Some(event) = reader.next_event().unwrap() {
///     if let Some(meta) = event.meta {
///         println!("{} {} {} bytes", meta.provider, meta.event_id, event.payload.len());
///     }
/// }
/// ```
pub struct NetTraceReader<R> {
    src: Source<R>,
    info: TraceInfo,
    meta: MetaTable,
    block: Vec<u8>,
    block_offset: u64,
    cursor: usize,
    compressed: bool,
    header: Header,
    in_events: bool,
    done: bool,
    last_sequence: HashMap<u64, u32>,
}

impl<R: BufRead> NetTraceReader<R> {
    /// Reads the stream header and the Trace object.
    pub fn new(inner: R) -> Result<Self, NetTraceError> {
        let mut src = Source { inner, pos: 0 };
        let info = read_prologue(&mut src)?;
        Ok(NetTraceReader {
            src,
            info,
            meta: MetaTable::default(),
            block: Vec::new(),
            block_offset: 0,
            cursor: 0,
            compressed: false,
            header: Header::default(),
            in_events: false,
            done: false,
            last_sequence: HashMap::new(),
        })
    }

    /// The Trace object's fields and the counts so far.
    pub fn info(&self) -> &TraceInfo {
        &self.info
    }

    /// Mutable access to the counts, for layers that decode payloads.
    pub fn info_mut(&mut self) -> &mut TraceInfo {
        &mut self.info
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> u64 {
        self.src.pos
    }

    /// The next event in file order, `None` after the end-of-stream tag.
    /// After an error every further call returns `Ok(None)`.
    pub fn next_event(&mut self) -> Result<Option<RawEvent<'_>>, NetTraceError> {
        loop {
            if self.in_events {
                if self.cursor < self.block.len() {
                    break;
                }
                self.in_events = false;
            }
            if self.done {
                return Ok(None);
            }
            if let Err(e) = self.read_object() {
                self.done = true;
                self.in_events = false;
                return Err(e);
            }
        }
        let start = self.cursor;
        let mut b = Bytes::at(&self.block, start);
        let parsed = read_event_header(&mut b, self.compressed, &mut self.header, self.block.len());
        let (payload_start, payload_len) = match parsed {
            Ok(p) => p,
            Err(Bad(pos, what)) => {
                self.done = true;
                self.in_events = false;
                return Err(NetTraceError::format(
                    self.block_offset.saturating_add(pos as u64),
                    format!("bad {what} in an event block"),
                ));
            }
        };
        self.cursor = b.pos();
        let h = self.header;
        self.info.events += 1;
        if h.metadata_id != 0 {
            self.track_sequence(h.capture_thread, h.sequence);
        }
        let meta = self.meta.get(h.metadata_id);
        if meta.is_none() {
            self.info.events_without_metadata += 1;
        }
        let payload = self
            .block
            .get(payload_start..payload_start.saturating_add(payload_len))
            .unwrap_or(&[]);
        Ok(Some(RawEvent {
            meta,
            metadata_id: h.metadata_id,
            timestamp: h.timestamp as i64,
            thread_id: h.thread,
            capture_thread_id: h.capture_thread,
            sequence_number: h.sequence,
            processor: h.processor,
            stack_id: h.stack_id,
            payload,
            offset: self.block_offset.saturating_add(start as u64),
            window: self.info.sequence_points,
        }))
    }

    /// Counts the events a capture thread skipped (a gap in its numbers).
    fn track_sequence(&mut self, thread: u64, seq: u32) {
        match self.last_sequence.get_mut(&thread) {
            Some(last) => {
                let expected = last.wrapping_add(1);
                // A reset to 1 is a new thread reusing an OS id, not a drop.
                if seq != expected && seq != 1 {
                    let gap = seq.wrapping_sub(expected);
                    if gap < (1 << 31) {
                        self.info.events_lost =
                            self.info.events_lost.saturating_add(u64::from(gap));
                    }
                }
                *last = seq;
            }
            None => {
                if self.last_sequence.len() < MAX_TRACKED_THREADS {
                    self.last_sequence.insert(thread, seq);
                }
            }
        }
    }

    /// Reads one object (or the end-of-stream tag) and digests it.
    fn read_object(&mut self) -> Result<(), NetTraceError> {
        let at = self.src.pos;
        let tag = self.src.u8("the next object or the end-of-stream tag")?;
        match tag {
            TAG_NULL_REFERENCE => {
                self.done = true;
                self.info.bytes = self.src.pos;
                return Ok(());
            }
            TAG_BEGIN_PRIVATE_OBJECT => {}
            _ => {
                return Err(NetTraceError::format(
                    at,
                    format!(
                        "expected an object (tag 5) or the end of the stream (tag 1), found byte {tag}"
                    ),
                ));
            }
        }
        let type_at = self.src.pos;
        let ty = read_type(&mut self.src)?;
        if ty.name == "Trace" {
            return Err(NetTraceError::format(type_at, "a second Trace object"));
        }
        let size_at = self.src.pos;
        let size = self.src.i32("a block size")?;
        let size = usize::try_from(size)
            .map_err(|_| NetTraceError::format(size_at, format!("negative block size {size}")))?;
        if size > MAX_BLOCK_BYTES {
            return Err(NetTraceError::TooLarge {
                offset: size_at,
                what: "a block size",
                value: size as u64,
                limit: MAX_BLOCK_BYTES as u64,
            });
        }
        // Block contents start 4-byte aligned in the file.
        let pad = ((4 - self.src.pos % 4) % 4) as usize;
        self.src.skip(pad, "the padding before a block")?;
        self.block_offset = self.src.pos;
        self.src.read_vec(&mut self.block, size, "a block")?;
        self.src
            .expect_tag(TAG_END_OBJECT, "the end of a block object")?;
        self.info.blocks += 1;
        match ty.name.as_str() {
            "EventBlock" => {
                if ty.version < 2 {
                    return Err(NetTraceError::Unsupported {
                        offset: type_at,
                        message: format!(
                            "EventBlock version {} (NetPerf, before NetTrace 4)",
                            ty.version
                        ),
                    });
                }
                let (start, compressed) = self.block_header()?;
                self.cursor = start;
                self.compressed = compressed;
                self.header = Header::default();
                self.in_events = true;
            }
            "MetadataBlock" => self.metadata_block()?,
            "SPBlock" => self.sequence_point_block()?,
            "StackBlock" => {}
            _ => self.info.unknown_objects += 1,
        }
        Ok(())
    }

    /// The header of an event or metadata block: where its events start
    /// and whether their headers are compressed.
    fn block_header(&self) -> Result<(usize, bool), NetTraceError> {
        let mut b = Bytes::new(&self.block);
        let size = b.i16().ok_or_else(|| {
            NetTraceError::format(self.block_offset, "a block too short for its header")
        })?;
        let flags = b.i16().ok_or_else(|| {
            NetTraceError::format(self.block_offset, "a block too short for its header")
        })?;
        let size = usize::try_from(size).unwrap_or(0);
        if size < 20 || size > self.block.len() {
            return Err(NetTraceError::format(
                self.block_offset,
                format!(
                    "block header size {size} (must be at least 20 and within the block of {} bytes)",
                    self.block.len()
                ),
            ));
        }
        Ok((size, flags & 1 != 0))
    }

    fn metadata_block(&mut self) -> Result<(), NetTraceError> {
        let (start, compressed) = self.block_header()?;
        let mut b = Bytes::at(&self.block, start);
        let mut h = Header::default();
        while b.remaining() > 0 {
            let (ps, pl) = read_event_header(&mut b, compressed, &mut h, self.block.len())
                .map_err(|Bad(pos, what)| {
                    NetTraceError::format(
                        self.block_offset.saturating_add(pos as u64),
                        format!("bad {what} in a metadata block"),
                    )
                })?;
            let payload = self.block.get(ps..ps.saturating_add(pl)).unwrap_or(&[]);
            match parse_metadata(payload) {
                Some((id, meta)) => {
                    if !self.meta.insert(id, meta) {
                        return Err(NetTraceError::TooLarge {
                            offset: self.block_offset.saturating_add(ps as u64),
                            what: "the number of metadata records",
                            value: self.meta.count as u64 + 1,
                            limit: MAX_METADATA as u64,
                        });
                    }
                    self.info.metadata_records += 1;
                }
                None => self.info.bad_metadata_records += 1,
            }
        }
        Ok(())
    }

    /// A sequence point: every thread's last sequence number. Gaps are
    /// drops; threads not listed are forgotten.
    fn sequence_point_block(&mut self) -> Result<(), NetTraceError> {
        let bad = |pos: usize, what: &str| {
            NetTraceError::format(
                self.block_offset.saturating_add(pos as u64),
                format!("bad {what} in a sequence point block"),
            )
        };
        let mut b = Bytes::new(&self.block);
        let _timestamp = b.i64().ok_or_else(|| bad(0, "timestamp"))?;
        let count = b.i32().ok_or_else(|| bad(8, "thread count"))?;
        let count = usize::try_from(count).map_err(|_| bad(8, "thread count (negative)"))?;
        if count.checked_mul(12).is_none_or(|n| n > b.remaining()) {
            return Err(bad(8, "thread count (more threads than the block holds)"));
        }
        let mut lost: u64 = 0;
        let mut next = HashMap::with_capacity(count.min(MAX_TRACKED_THREADS));
        for _ in 0..count {
            let pos = b.pos();
            let thread = b.u64().ok_or_else(|| bad(pos, "thread id"))?;
            let seq = b.u32().ok_or_else(|| bad(pos, "sequence number"))?;
            if let Some(&last) = self.last_sequence.get(&thread) {
                let gap = seq.wrapping_sub(last);
                if gap < (1 << 31) {
                    lost = lost.saturating_add(u64::from(gap));
                }
            }
            if next.len() < MAX_TRACKED_THREADS {
                next.insert(thread, seq);
            }
        }
        self.info.events_lost = self.info.events_lost.saturating_add(lost);
        self.last_sequence = next;
        self.info.sequence_points += 1;
        Ok(())
    }
}

/// A FastSerialization type object.
struct TypeInfo {
    version: i32,
    min_reader_version: i32,
    name: String,
}

fn read_type<R: BufRead>(src: &mut Source<R>) -> Result<TypeInfo, NetTraceError> {
    src.expect_tag(TAG_BEGIN_PRIVATE_OBJECT, "the start of a type object")?;
    src.expect_tag(TAG_NULL_REFERENCE, "the null type of a type object")?;
    let version = src.i32("a type version")?;
    let min_reader_version = src.i32("a type's minimum reader version")?;
    let len_at = src.pos;
    let len = src.i32("a type name length")?;
    let len = usize::try_from(len)
        .ok()
        .filter(|&n| n <= 256)
        .ok_or_else(|| {
            NetTraceError::format(
                len_at,
                format!("type name length {len} (0 to 256 expected)"),
            )
        })?;
    let mut name = vec![0u8; len];
    src.read_exact(&mut name, "a type name")?;
    let name = String::from_utf8(name)
        .map_err(|_| NetTraceError::format(len_at + 4, "a type name that is not UTF-8"))?;
    src.expect_tag(TAG_END_OBJECT, "the end of a type object")?;
    Ok(TypeInfo {
        version,
        min_reader_version,
        name,
    })
}

/// The stream header and the Trace object.
fn read_prologue<R: BufRead>(src: &mut Source<R>) -> Result<TraceInfo, NetTraceError> {
    let mut magic = [0u8; 8];
    src.read_exact(&mut magic, "the 'Nettrace' magic")?;
    if &magic != MAGIC {
        if magic[..4] == [20, 0, 0, 0] && magic[4..] == FAST_SERIALIZATION[..4] {
            return Err(NetTraceError::Unsupported {
                offset: 0,
                message: "a NetPerf file (format 3 or older, .NET Core 2.x); this reader decodes NetTrace 4 and 5"
                    .into(),
            });
        }
        // Text where the magic should be: most likely a scenario.
        let text = magic
            .iter()
            .all(|&b| b.is_ascii_graphic() || b.is_ascii_whitespace());
        return Err(NetTraceError::format(
            0,
            if text {
                "not a .nettrace file (it does not start with 'Nettrace'; it starts with text: \
                 for a scenario, `poolsim run FILE` replays it and `poolsim advise FILE` finds a \
                 setting for it)"
            } else {
                "not a .nettrace file (it does not start with 'Nettrace')"
            },
        ));
    }
    let len = src.i32("the serialization header")?;
    if len == 0 {
        let major = src.i32("the format version")?;
        return Err(NetTraceError::Unsupported {
            offset: 12,
            message: format!(
                "NetTrace format version {major} (the block format newer than .NET 8 writes); this reader decodes versions 4 and 5"
            ),
        });
    }
    if len != FAST_SERIALIZATION.len() as i32 {
        return Err(NetTraceError::format(
            8,
            format!("expected the length 20 of \"!FastSerialization.1\", found {len}"),
        ));
    }
    let mut fs = [0u8; 20];
    src.read_exact(&mut fs, "\"!FastSerialization.1\"")?;
    if fs[..] != *FAST_SERIALIZATION {
        return Err(NetTraceError::format(
            12,
            "expected \"!FastSerialization.1\"",
        ));
    }
    src.expect_tag(TAG_BEGIN_PRIVATE_OBJECT, "the Trace object")?;
    let type_at = src.pos;
    let ty = read_type(src)?;
    if ty.name != "Trace" {
        return Err(NetTraceError::format(
            type_at,
            format!("expected the Trace object first, found {:?}", ty.name),
        ));
    }
    if ty.version < 4 || ty.min_reader_version > 5 {
        return Err(NetTraceError::Unsupported {
            offset: type_at,
            message: format!(
                "Trace object version {} (minimum reader version {}); this reader decodes 4 and 5",
                ty.version, ty.min_reader_version
            ),
        });
    }
    let mut t = [0i16; 8];
    for v in &mut t {
        *v = src.i16("the trace start time")?;
    }
    let sync_time_utc = SyncTimeUtc {
        year: t[0],
        month: t[1],
        day_of_week: t[2],
        day: t[3],
        hour: t[4],
        minute: t[5],
        second: t[6],
        millisecond: t[7],
    };
    let sync_time_qpc = src.i64("the sync time (QPC)")?;
    let freq_at = src.pos;
    let qpc_frequency = src.i64("the QPC frequency")?;
    if qpc_frequency <= 0 {
        return Err(NetTraceError::format(
            freq_at,
            format!("QPC frequency {qpc_frequency} (must be positive)"),
        ));
    }
    let ptr_at = src.pos;
    let pointer_size = src.i32("the pointer size")?;
    if pointer_size != 4 && pointer_size != 8 {
        return Err(NetTraceError::format(
            ptr_at,
            format!("pointer size {pointer_size} (4 or 8 expected)"),
        ));
    }
    let process_id = src.i32("the process id")? as u32;
    let processors = src.i32("the number of processors")? as u32;
    let expected_cpu_sampling_rate = src.i32("the expected CPU sampling rate")? as u32;
    src.expect_tag(TAG_END_OBJECT, "the end of the Trace object")?;
    Ok(TraceInfo {
        format_version: ty.version as u32,
        sync_time_utc,
        sync_time_qpc,
        qpc_frequency,
        pointer_size: pointer_size as u32,
        process_id,
        processors,
        expected_cpu_sampling_rate,
        ..TraceInfo::default()
    })
}
