//! Charts and Chrome traces made as the run goes, in memory bounded by the
//! picture and the threads, not by the items: what `poolsim run --png`,
//! `--svg` and `--chrome` use, the run's items streamed
//! ([`crate::stream::RunStream`]).
//!
//! [`DetailSink`] takes the run's events as they come; its
//! [`PhaseSegments`] turns thread phases into segments, and each segment
//! goes to:
//! - the chart's [`ChartLanes`]: segments kept exactly while the run has
//!   few (the chart is then the one [`Timeline::build`] makes from a whole
//!   event log), and past [`ChartLanes::BUDGET`] merged at a time
//!   resolution that doubles as needed: a lane keeps, per resolution step,
//!   one segment as long as the step's busy time, in the phase and group
//!   that had most of it, and whole steps of one segment as they are. The
//!   resolution stays a fraction of a pixel column (the span over 4096 at
//!   the first merge), and the Gantt chart adds up busy time per pixel
//!   column anyway, so it draws the same coverage. The queue length is bucketed
//!   the same way, each bucket keeping its first, lowest, highest and last
//!   points, so the chart's per-pixel envelope is kept.
//! - the Chrome trace's [`ChromeStream`]: every segment, exactly, as the
//!   JSON event [`chrome_trace_json`](crate::render::chrome::chrome_trace_json)
//!   writes, in per-thread buffers that go to a spill file past
//!   [`ChromeStream::HOLD`] bytes; at the end the file is put together in
//!   the same order, so the bytes are those of the whole-trace writer.
//!
//! The pool's decisions (gate ticks, hill-climbing samples, goal changes,
//! why each thread exists) go through the [`DecisionLines`] the whole-trace
//! timeline uses, kept in memory: they grow with the run's simulated time
//! (a few a second), not with its items. The items' times for the chart's
//! tooltips are kept while the run has at most [`ITEM_TIMES_BUDGET`] items,
//! as [`Timeline::build`] keeps them.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

use crate::render::chrome;
use crate::render::decisions::DecisionLines;
use crate::render::timeline::{ITEM_TIMES_BUDGET, PhaseSegments, QueueSeries, trace_end};
use crate::render::{ItemTimes, Lane, QueuePoint, Segment, SegmentSource, Timeline};
use crate::time::SimTime;
use crate::trace::{ItemId, Phase, ThreadId, Trace, TraceEvent, TraceSink};

/// The sink of a run whose chart or Chrome trace is made as it goes; every
/// event goes on to `events` too.
pub struct DetailSink<E: TraceSink> {
    pub events: E,
    phases: PhaseSegments,
    queue: QueueSeries,
    saw_phase: bool,
    chart: Option<ChartLanes>,
    chrome: Option<ChromeStream>,
    decisions: DecisionLines,
    items: ItemTracker,
}

impl<E: TraceSink> DetailSink<E> {
    /// `chart`: build a chart's timeline (of `window`, if given: segments
    /// outside it are dropped); `chrome`: write a Chrome trace.
    pub fn new(
        events: E,
        chart: bool,
        window: Option<(SimTime, SimTime)>,
        chrome: bool,
        groups: Vec<String>,
    ) -> Self {
        DetailSink {
            events,
            phases: PhaseSegments::default(),
            queue: QueueSeries::default(),
            saw_phase: false,
            chart: chart.then(|| ChartLanes::new(window)),
            chrome: chrome.then(|| ChromeStream::new(groups)),
            decisions: DecisionLines::default(),
            items: ItemTracker::default(),
        }
    }

    /// A segment or queue point the event ends.
    fn detail(&mut self, at: SimTime, event: &TraceEvent) {
        self.decisions.event(at, event);
        if self.chart.is_some() {
            self.items.event(at, event);
        }
        if PhaseSegments::concerns(event) {
            self.saw_phase |= matches!(event, TraceEvent::ThreadPhase { .. });
            // An event ends at most one thread's phase.
            let mut ended = None;
            self.phases
                .event(at, event, &mut |t, s| ended = Some((t, s)));
            if let Some((t, s)) = ended {
                self.segment(t, s);
            }
        } else if let TraceEvent::QueueLength { queued } = *event {
            // The series is taken out while its final points go on.
            let mut series = std::mem::take(&mut self.queue);
            series.push(at, queued);
            series.drain(&mut |q| self.queue_point(q));
            self.queue = series;
        }
    }

    /// Smaller limits than [`ChartLanes::BUDGET`] and
    /// [`ChromeStream::HOLD`]: for tests of the merging and the spill file.
    pub fn with_limits(mut self, budget: usize, hold: usize) -> Self {
        if let Some(c) = &mut self.chart {
            c.budget = budget.max(2);
        }
        if let Some(c) = &mut self.chrome {
            c.hold = hold;
        }
        self
    }

    fn segment(&mut self, thread: ThreadId, seg: Segment) {
        if let Some(c) = &mut self.chart {
            c.segment(thread, seg);
        }
        if let Some(c) = &mut self.chrome {
            c.segment(thread, &seg);
        }
    }

    fn queue_point(&mut self, q: QueuePoint) {
        if let Some(c) = &mut self.chart {
            c.queue_point(q);
        }
        if let Some(c) = &mut self.chrome {
            c.queue_point(&q);
        }
    }

    /// Ends the run: the chart's timeline (if asked) and the Chrome trace
    /// written to `chrome_out` (if asked), with the inner sink. `items`
    /// and `unfinished` are the run's counts (the items were streamed, the
    /// trace has none).
    pub fn finish(
        mut self,
        trace: &Trace,
        items: usize,
        unfinished: usize,
        chrome_out: Option<&mut dyn Write>,
    ) -> std::io::Result<(Option<Timeline>, E)> {
        if self.chart.is_none() && self.chrome.is_none() {
            return Ok((None, self.events));
        }
        let end_hint = trace_end(trace);
        let mut segs = Vec::new();
        self.phases
            .close_all(end_hint, &mut |t, s| segs.push((t, s)));
        for (t, s) in segs {
            self.segment(t, s);
        }
        let mut series = std::mem::take(&mut self.queue);
        series.finish(&mut |q| self.queue_point(q));
        let source = if self.saw_phase {
            SegmentSource::Phases
        } else {
            SegmentSource::Items
        };
        // The timeline without segments or queue: what both outputs share.
        let mut timeline = Timeline::build(&without_items(trace), None);
        timeline.items = items;
        timeline.unfinished = unfinished;
        timeline.source = source;
        let (decisions, goals, whys) = std::mem::take(&mut self.decisions).finish();
        timeline.decisions = decisions;
        timeline.goals = goals;
        for (thread, why) in whys {
            lane_mut(&mut timeline.lanes, thread, None).why = Some(why);
        }
        timeline.item_times = std::mem::take(&mut self.items).finish();
        if let (Some(c), Some(out)) = (self.chrome.take(), chrome_out) {
            c.finish(&timeline, out)?;
        }
        let Some(chart) = self.chart.take() else {
            return Ok((None, self.events));
        };
        let (lanes, queue, latest) = chart.finish();
        timeline.end = timeline.end.max(latest);
        for (thread, segments) in lanes.into_iter().enumerate() {
            let lane = lane_mut(&mut timeline.lanes, thread as ThreadId, segments.first());
            lane.segments = segments;
        }
        timeline.queue = queue;
        for lane in &timeline.lanes {
            if let Some(s) = lane.segments.last() {
                timeline.end = timeline.end.max(s.end);
            }
        }
        Ok((Some(timeline), self.events))
    }
}

/// `trace`'s threads, counts and probes, with no items.
fn without_items(trace: &Trace) -> Trace {
    Trace {
        scenario: trace.scenario.clone(),
        policy: trace.policy.clone(),
        seed: trace.seed,
        cores: trace.cores,
        groups: trace.groups.clone(),
        call_groups: trace.call_groups.clone(),
        items: Vec::new(),
        threads: trace.threads.clone(),
        probes: trace.probes.clone(),
        counts: trace.counts.clone(),
        cpu_busy_ns: trace.cpu_busy_ns,
        end: trace.end,
    }
}

/// The lane of `thread`, added (as [`Timeline::build`] does) for a thread
/// the trace does not list.
fn lane_mut<'a>(
    lanes: &'a mut Vec<Lane>,
    thread: ThreadId,
    first: Option<&Segment>,
) -> &'a mut Lane {
    let at = first.map_or(SimTime::ZERO, |s| s.start);
    while lanes.len() <= thread as usize {
        let id = lanes.len() as ThreadId;
        lanes.push(Lane {
            thread: id,
            created: at,
            reason: crate::trace::ThreadReason::Observed,
            exited: None,
            segments: Vec::new(),
            why: None,
        });
    }
    &mut lanes[thread as usize]
}

/// The items' queued, started and finished times, by item id, while the
/// run has at most [`ITEM_TIMES_BUDGET`] items (past it, none are kept).
#[derive(Clone, Debug, Default)]
struct ItemTracker {
    /// By item id: queued, started, its thread, finished (`SimTime::MAX`
    /// while unknown).
    items: Vec<(SimTime, SimTime, ThreadId, SimTime)>,
    over: bool,
}

impl ItemTracker {
    fn event(&mut self, at: SimTime, event: &TraceEvent) {
        if self.over {
            return;
        }
        match *event {
            TraceEvent::ItemQueued { item, .. } => {
                let i = item as usize;
                if i >= ITEM_TIMES_BUDGET {
                    self.over = true;
                    self.items = Vec::new();
                    return;
                }
                if self.items.len() <= i {
                    self.items
                        .resize(i + 1, (SimTime::MAX, SimTime::MAX, 0, SimTime::MAX));
                }
                if self.items[i].0 == SimTime::MAX {
                    self.items[i].0 = at;
                }
            }
            TraceEvent::ItemStarted { item, thread } => {
                if let Some(e) = self.items.get_mut(item as usize)
                    && e.1 == SimTime::MAX
                {
                    e.1 = at;
                    e.2 = thread;
                }
            }
            TraceEvent::ItemFinished { item, .. } => {
                if let Some(e) = self.items.get_mut(item as usize) {
                    e.3 = at;
                }
            }
            _ => {}
        }
    }

    fn finish(self) -> Vec<ItemTimes> {
        self.items
            .into_iter()
            .enumerate()
            .filter(|(_, e)| e.1 != SimTime::MAX)
            .map(|(i, (queued, started, thread, finished))| ItemTimes {
                item: i as ItemId,
                thread,
                queued,
                started,
                finished: (finished != SimTime::MAX).then_some(finished),
            })
            .collect()
    }
}

impl<E: TraceSink> TraceSink for DetailSink<E> {
    fn record(&mut self, at: SimTime, event: TraceEvent) {
        if self.chart.is_some() || self.chrome.is_some() {
            self.detail(at, &event);
        }
        self.events.record(at, event);
    }
}

/// A chart's lanes and queue series, kept within [`ChartLanes::BUDGET`]
/// (see the module head).
#[derive(Clone, Debug)]
pub struct ChartLanes {
    window: Option<(SimTime, SimTime)>,
    lanes: Vec<BucketLane>,
    queue: Vec<QueuePoint>,
    /// Segments kept in all lanes.
    kept: usize,
    /// The merge step in ns; 0 while exact.
    resolution: u64,
    /// The earliest time kept.
    first: Option<SimTime>,
    /// The latest segment end seen, kept or not.
    latest: SimTime,
    budget: usize,
    /// Queue points before this index are bucketed at the resolution.
    settled: usize,
}

impl ChartLanes {
    /// Segments (and, apart, queue points) kept before merging: some 40 MB.
    pub const BUDGET: usize = 1 << 20;
    /// Resolution steps over the span at the first merge.
    const STEPS: u64 = 4096;

    pub fn new(window: Option<(SimTime, SimTime)>) -> Self {
        ChartLanes {
            window,
            lanes: Vec::new(),
            queue: Vec::new(),
            kept: 0,
            resolution: 0,
            first: None,
            latest: SimTime::ZERO,
            budget: Self::BUDGET,
            settled: 0,
        }
    }

    /// The current merge step in ns (0: exact).
    pub fn resolution(&self) -> u64 {
        self.resolution
    }

    /// Segments kept, in all lanes.
    pub fn kept(&self) -> usize {
        self.kept
    }

    pub fn segment(&mut self, thread: ThreadId, seg: Segment) {
        self.latest = self.latest.max(seg.end);
        let i = thread as usize;
        if self.lanes.len() <= i {
            self.lanes.resize(i + 1, BucketLane::default());
        }
        if let Some((a, b)) = self.window {
            if seg.end < a {
                return;
            }
            // Past the window only a lane's last segment is kept: it says
            // where the lane's work ends.
            if seg.start > b {
                self.lanes[i].after = Some(seg);
                return;
            }
        }
        self.first = Some(self.first.map_or(seg.start, |f| f.min(seg.start)));
        let lane = &mut self.lanes[i];
        let before = lane.len();
        lane.add(seg, self.resolution);
        self.kept = self.kept + lane.len() - before;
        if self.kept > self.budget {
            self.coarsen(seg.end);
        }
    }

    pub fn queue_point(&mut self, q: QueuePoint) {
        if let Some((a, b)) = self.window {
            if q.at > b {
                return;
            }
            // Of the points before the window only the last one counts: it
            // sets the level at the window's start.
            if q.at < a
                && let Some(last) = self.queue.last_mut()
                && last.at < a
            {
                *last = q;
                return;
            }
        }
        // Once merging, the points of a bucket are bucketed as soon as a
        // later bucket starts.
        if self.resolution > 0
            && let Some(first) = self.queue.get(self.settled)
            && first.at.as_nanos() / self.resolution != q.at.as_nanos() / self.resolution
        {
            let before = self.settled.checked_sub(1).map(|i| self.queue[i].queued);
            let bucketed = bucket_queue(&self.queue[self.settled..], self.resolution, before);
            self.queue.truncate(self.settled);
            self.queue.extend(bucketed);
            self.settled = self.queue.len();
        }
        self.queue.push(q);
        if self.queue.len() > self.budget {
            self.coarsen(q.at);
        }
    }

    /// Doubles the resolution (from the span over [`ChartLanes::STEPS`] at
    /// the first merge) until everything kept fits in half the budget.
    fn coarsen(&mut self, now: SimTime) {
        let from = match self.window {
            Some((a, _)) => a,
            None => self.first.unwrap_or(SimTime::ZERO),
        };
        let span = now.as_nanos().saturating_sub(from.as_nanos()).max(1);
        let mut resolution = (span / Self::STEPS).max(1).max(self.resolution * 2);
        loop {
            let mut kept = 0;
            for lane in &mut self.lanes {
                let old = std::mem::take(lane).into_segments();
                for seg in old {
                    lane.add(seg, resolution);
                }
                kept += lane.len();
            }
            self.queue = bucket_queue(&self.queue, resolution, None);
            self.settled = self.queue.len().saturating_sub(1);
            self.kept = kept;
            self.resolution = resolution;
            if kept <= self.budget / 2 && self.queue.len() <= self.budget / 2 {
                break;
            }
            resolution *= 2;
        }
    }

    /// The lanes (by thread id), the queue series, and the latest segment
    /// end seen.
    pub fn finish(mut self) -> (Vec<Vec<Segment>>, Vec<QueuePoint>, SimTime) {
        if self.resolution > 0 {
            self.queue = bucket_queue(&self.queue, self.resolution, None);
        }
        let lanes = self
            .lanes
            .into_iter()
            .map(BucketLane::into_segments)
            .collect();
        (lanes, self.queue, self.latest)
    }
}

/// One lane's segments: exact while the resolution is 0; otherwise the
/// busy time of each resolution bucket as one segment, from the bucket's
/// first busy instant, as long as the bucket's busy time, in the phase and
/// group that had most of it (and the item, if it was the only one). Whole
/// buckets of one segment stay one segment; touching segments of the same
/// phase and group join.
#[derive(Clone, Debug, Default)]
struct BucketLane {
    out: Vec<Segment>,
    open: Option<OpenBucket>,
    /// The latest segment past a chart's window.
    after: Option<Segment>,
}

/// The bucket being filled.
#[derive(Clone, Debug)]
struct OpenBucket {
    index: u64,
    start: SimTime,
    busy: u64,
    /// Busy time per (phase, group).
    by_key: Vec<(Phase, Option<u32>, u64)>,
    item: Option<ItemId>,
    single_item: bool,
}

impl BucketLane {
    /// Segments kept (an open bucket counts as one).
    fn len(&self) -> usize {
        self.out.len() + usize::from(self.open.is_some())
    }

    fn add(&mut self, seg: Segment, resolution: u64) {
        if resolution == 0 {
            self.out.push(seg);
            return;
        }
        let (mut a, b) = (seg.start.as_nanos(), seg.end.as_nanos());
        while a < b {
            let k = a / resolution;
            let bucket_end = (k + 1) * resolution;
            if a == k * resolution && b >= bucket_end {
                // Whole buckets: one segment as it is.
                self.flush();
                let whole_end = b / resolution * resolution;
                self.push(Segment {
                    start: SimTime(a),
                    end: SimTime(whole_end),
                    ..seg
                });
                a = whole_end;
                continue;
            }
            let piece_end = b.min(bucket_end);
            if self.open.as_ref().is_some_and(|o| o.index != k) {
                self.flush();
            }
            let open = self.open.get_or_insert_with(|| OpenBucket {
                index: k,
                start: SimTime(a),
                busy: 0,
                by_key: Vec::new(),
                item: seg.item,
                single_item: true,
            });
            let len = piece_end - a;
            open.busy += len;
            match open
                .by_key
                .iter_mut()
                .find(|(p, g, _)| *p == seg.phase && *g == seg.group)
            {
                Some(entry) => entry.2 += len,
                None => open.by_key.push((seg.phase, seg.group, len)),
            }
            if open.item != seg.item {
                open.single_item = false;
            }
            a = piece_end;
        }
    }

    /// The open bucket becomes a segment.
    fn flush(&mut self) {
        let Some(open) = self.open.take() else {
            return;
        };
        // The (phase, group) with most time; the first of equals.
        let mut best = open.by_key[0];
        for &entry in &open.by_key[1..] {
            if entry.2 > best.2 {
                best = entry;
            }
        }
        self.push(Segment {
            start: open.start,
            end: SimTime(open.start.as_nanos() + open.busy),
            item: if open.single_item { open.item } else { None },
            group: best.1,
            phase: best.0,
        });
    }

    /// Adds a segment, joined to the last one when they touch and match.
    fn push(&mut self, seg: Segment) {
        if let Some(last) = self.out.last_mut()
            && last.end == seg.start
            && last.phase == seg.phase
            && last.group == seg.group
        {
            last.end = seg.end;
            if last.item != seg.item {
                last.item = None;
            }
            return;
        }
        self.out.push(seg);
    }

    fn into_segments(mut self) -> Vec<Segment> {
        self.flush();
        self.out.extend(self.after);
        self.out
    }
}

/// `queue` with, per `resolution` bucket, only its first, lowest, highest
/// and last points (in time order, repeats dropped, also of `before`: the
/// value before the first point).
fn bucket_queue(queue: &[QueuePoint], resolution: u64, before: Option<u64>) -> Vec<QueuePoint> {
    let mut out: Vec<QueuePoint> = Vec::new();
    let mut k = 0;
    while k < queue.len() {
        let bucket = queue[k].at.as_nanos() / resolution;
        let mut j = k;
        let (mut lo, mut hi) = (k, k);
        while j < queue.len() && queue[j].at.as_nanos() / resolution == bucket {
            if queue[j].queued < queue[lo].queued {
                lo = j;
            }
            if queue[j].queued > queue[hi].queued {
                hi = j;
            }
            j += 1;
        }
        let mut picks = [k, lo, hi, j - 1];
        picks.sort_unstable();
        for (n, &p) in picks.iter().enumerate() {
            if n > 0 && picks[n - 1] == p {
                continue;
            }
            if out.last().map_or(before, |l| Some(l.queued)) == Some(queue[p].queued) {
                continue;
            }
            out.push(queue[p]);
        }
        k = j;
    }
    out
}

/// A Chrome trace written as the run goes (see the module head).
pub struct ChromeStream {
    groups: Vec<String>,
    /// Per thread: its segments' events not yet spilled.
    lanes: Vec<Vec<u8>>,
    /// The queue counter's events not yet spilled.
    queue: Vec<u8>,
    held: usize,
    spill: Option<Spill>,
    name: String,
    hold: usize,
}

/// The spill file and its chunks: (stream, offset, length), stream
/// `u32::MAX` being the queue.
struct Spill {
    file: File,
    path: PathBuf,
    chunks: Vec<(u32, u64, u64)>,
    len: u64,
}

impl Drop for Spill {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

const QUEUE_STREAM: u32 = u32::MAX;

impl ChromeStream {
    /// Bytes of events held in memory before they go to the spill file.
    pub const HOLD: usize = 32 << 20;

    pub fn new(groups: Vec<String>) -> Self {
        ChromeStream {
            groups,
            lanes: Vec::new(),
            queue: Vec::new(),
            held: 0,
            spill: None,
            name: String::new(),
            hold: Self::HOLD,
        }
    }

    fn segment(&mut self, thread: ThreadId, seg: &Segment) {
        let i = thread as usize;
        if self.lanes.len() <= i {
            self.lanes.resize(i + 1, Vec::new());
        }
        let before = self.lanes[i].len();
        chrome::write_segment(
            &mut self.lanes[i],
            thread,
            seg,
            &self.groups,
            &mut self.name,
        );
        self.held += self.lanes[i].len() - before;
        self.maybe_spill();
    }

    fn queue_point(&mut self, q: &QueuePoint) {
        let before = self.queue.len();
        chrome::write_queue_point(&mut self.queue, q);
        self.held += self.queue.len() - before;
        self.maybe_spill();
    }

    fn maybe_spill(&mut self) {
        if self.held <= self.hold {
            return;
        }
        // A failing spill file keeps the events in memory: the output is
        // the same, only bigger in memory.
        if self.spill.is_none() {
            let path = std::env::temp_dir().join(format!(
                "poolsim-chrome-{}-{}.spill",
                std::process::id(),
                SPILLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            ));
            match File::options()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(file) => {
                    self.spill = Some(Spill {
                        file,
                        path,
                        chunks: Vec::new(),
                        len: 0,
                    })
                }
                Err(_) => return,
            }
        }
        let Some(spill) = &mut self.spill else {
            return;
        };
        let streams = self
            .lanes
            .iter_mut()
            .enumerate()
            .map(|(i, b)| (i as u32, b))
            .chain(std::iter::once((QUEUE_STREAM, &mut self.queue)));
        for (id, buf) in streams {
            if buf.is_empty() {
                continue;
            }
            if spill.file.write_all(buf).is_err() {
                return;
            }
            spill.chunks.push((id, spill.len, buf.len() as u64));
            spill.len += buf.len() as u64;
            *buf = Vec::new();
        }
        self.held = 0;
    }

    /// Writes the whole trace to `out`, in the order of the whole-trace
    /// writer: head, each thread's segments, creations and counts, the
    /// queue, probes.
    fn finish(mut self, timeline: &Timeline, out: &mut dyn Write) -> std::io::Result<()> {
        let mut head = Vec::new();
        // The lanes: the trace's threads, and any thread only events named.
        let mut lanes: Vec<(ThreadId, crate::trace::ThreadReason)> = timeline
            .lanes
            .iter()
            .map(|l| (l.thread, l.reason))
            .collect();
        while lanes.len() < self.lanes.len() {
            lanes.push((
                lanes.len() as ThreadId,
                crate::trace::ThreadReason::Observed,
            ));
        }
        chrome::write_head(&mut head, timeline, &lanes);
        out.write_all(&head)?;
        let mut copy = |stream: u32, rest: &[u8], out: &mut dyn Write| -> std::io::Result<()> {
            if let Some(spill) = &mut self.spill {
                for &(id, offset, len) in &spill.chunks {
                    if id == stream {
                        spill.file.seek(SeekFrom::Start(offset))?;
                        std::io::copy(&mut (&mut spill.file).take(len), out)?;
                    }
                }
            }
            out.write_all(rest)
        };
        for (i, buf) in self.lanes.iter().enumerate() {
            copy(i as u32, buf, out)?;
        }
        let mut tail = Vec::new();
        chrome::write_counts(&mut tail, timeline);
        out.write_all(&tail)?;
        copy(QUEUE_STREAM, &self.queue, out)?;
        let mut tail = Vec::new();
        chrome::write_probes(&mut tail, timeline);
        out.write_all(&tail)
    }
}

static SPILLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(start: u64, end: u64, phase: Phase, item: u32) -> Segment {
        Segment {
            start: SimTime(start),
            end: SimTime(end),
            item: Some(item),
            group: Some(item % 2),
            phase,
        }
    }

    #[test]
    fn past_its_budget_a_lane_merges_what_is_thinner_than_the_resolution() {
        let mut lanes = ChartLanes::new(None);
        lanes.budget = 1000;
        // One thread: 100 ns of CPU, 10 ns of sleep, 5 ns idle, 10 000 times.
        let mut t = 0;
        for k in 0..10_000u32 {
            lanes.segment(0, seg(t, t + 100, Phase::Cpu, k));
            lanes.segment(0, seg(t + 100, t + 110, Phase::Sleep, k));
            t += 115;
        }
        assert!(lanes.kept() <= 1000, "{}", lanes.kept());
        assert!(lanes.resolution() > 0);
        let (out, _, latest) = lanes.finish();
        let lane = &out[0];
        assert_eq!(latest, SimTime(t - 5));
        // In order, without overlaps, from the first busy instant.
        assert_eq!(lane[0].start, SimTime(0));
        assert!(lane.windows(2).all(|w| w[0].end <= w[1].start));
        assert!(lane.last().unwrap().end <= SimTime(t - 5));
        // The busy time is kept whole: 110 ns of every 115.
        let busy: u64 = lane.iter().map(|s| s.end.0 - s.start.0).sum();
        assert_eq!(busy, 10_000 * 110);
        // CPU had most of each step.
        assert!(lane.iter().all(|s| s.phase == Phase::Cpu));
        assert!(lane.iter().all(|s| s.item.is_none()));
    }

    #[test]
    fn a_long_segment_stays_one_segment_past_the_budget() {
        let mut lanes = ChartLanes::new(None);
        lanes.budget = 10;
        for k in 0..20u32 {
            let t = u64::from(k) * 10;
            lanes.segment(1, seg(t, t + 5, Phase::Sleep, k));
        }
        lanes.segment(1, seg(1_000, 1_000_000, Phase::Cpu, 99));
        let (out, _, _) = lanes.finish();
        let long: Vec<_> = out[1].iter().filter(|s| s.phase == Phase::Cpu).collect();
        assert_eq!(long.len(), 1, "{:?}", out[1]);
        assert_eq!(long[0].end, SimTime(1_000_000));
        assert_eq!(long[0].item, Some(99));
    }

    #[test]
    fn under_its_budget_a_lane_keeps_every_segment() {
        let mut lanes = ChartLanes::new(None);
        for k in 0..500u32 {
            let t = u64::from(k) * 20;
            lanes.segment(k % 3, seg(t, t + 10, Phase::Cpu, k));
        }
        assert_eq!(lanes.resolution(), 0);
        let (out, _, _) = lanes.finish();
        assert_eq!(out.iter().map(Vec::len).sum::<usize>(), 500);
    }

    #[test]
    fn merging_keeps_busy_time_where_it_was_and_a_busy_queue_does_not_force_it() {
        let mut lanes = ChartLanes::new(None);
        lanes.budget = 4000;
        // 2 ns of start-up every 100 ns, and the queue going 0, 1, 0, ...
        // every 50 ns, over 1 ms.
        let q = |at, queued| QueuePoint {
            at: SimTime(at),
            queued,
        };
        for k in 0..10_000u64 {
            let t = k * 100;
            lanes.segment(0, seg(t, t + 2, Phase::Starting, 0));
            lanes.queue_point(q(t, 1));
            lanes.queue_point(q(t + 50, 0));
        }
        // The queue (20 000 points, up to 4 a step) needs steps of 1 000 ns
        // or more to fit 4 000 points; it does not run away to the span.
        assert!(lanes.resolution() <= 2_000, "{}", lanes.resolution());
        let (out, queue, _) = lanes.finish();
        assert!(queue.len() <= 4000, "{}", queue.len());
        let busy_before = |t: u64| -> u64 {
            out[0]
                .iter()
                .map(|s| s.end.0.min(t).saturating_sub(s.start.0))
                .sum()
        };
        // Half the busy time in each half of the run, as it was.
        assert_eq!(busy_before(u64::MAX), 20_000);
        let first_half = busy_before(500_000);
        assert!((9_000..=11_000).contains(&first_half), "{first_half}");
    }

    #[test]
    fn a_queue_bucket_keeps_its_first_lowest_highest_and_last_points() {
        let q = |at, queued| QueuePoint {
            at: SimTime(at),
            queued,
        };
        let points = [q(0, 5), q(1, 9), q(2, 1), q(3, 4), q(10, 4), q(11, 7)];
        assert_eq!(
            bucket_queue(&points, 10, None),
            [q(0, 5), q(1, 9), q(2, 1), q(3, 4), q(11, 7)]
        );
    }
}
