//! Chrome Trace Event Format output, for `chrome://tracing` and Perfetto.
//!
//! One process (pid 1) for the pool; one track per pool thread (tid =
//! thread id + 1) named after the thread and why it was created; tid 0 is
//! the main thread, which waits on the responsiveness probes; a "pool
//! decisions" track (tid [`DECISIONS_TID`], listed first) holds the pool's
//! decisions. Item phases are complete events (`"ph":"X"`), thread
//! creations (with `poolsim explain`'s sentence for why) and probes instant
//! events (`"ph":"i"`), thread counts and queue length counters
//! (`"ph":"C"`). On the decisions track, instant events: every gate
//! (monitor) tick, hill-climbing sample, cooperative-blocking step and
//! thread exit, named by what it decided, and every goal change a decision
//! explains, named `goal A -> B (reason)`, each with explain's sentence.
//! (A thread that wakes and finds no work draws no "starting" slice: see
//! [`crate::render::timeline`].) Times are microseconds since the start of
//! the run.
//! Format: <https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU>.
//! The output is built from the same [`Timeline`] the charts use, in a fixed
//! order, so the same run gives the same bytes.

use serde::Serialize;
use serde_json::{Value, json};

use crate::render::{DecisionKind, DecisionMark, QueuePoint, Segment, Timeline};
use crate::time::{NANOS_PER_US, SimTime};
use crate::trace::{ThreadId, ThreadReason, Trace, TraceEvent};

/// The process id every event uses.
const PID: u32 = 1;
/// The main thread's track.
const MAIN_TID: u32 = 0;
/// The pool decisions' track: past every thread's track (thread ids stay
/// below the scenario's 100 million item limit), within a signed 32-bit id.
pub const DECISIONS_TID: u32 = 2_000_000_000;

#[derive(Serialize)]
struct Event<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'a str>,
    ph: &'static str,
    ts: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    pid: u32,
    tid: u32,
    /// Scope of an instant event: "t" thread, "p" process.
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    #[serde(skip_serializing_if = "Value::is_null")]
    args: Value,
}

fn us(t: SimTime) -> f64 {
    t.as_nanos() as f64 / NANOS_PER_US as f64
}

/// Appends events as a JSON array body, one per line.
struct Writer<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl Writer<'_> {
    fn push(&mut self, event: &Event<'_>) {
        if !self.first {
            self.out.extend_from_slice(b",\n");
        }
        self.first = false;
        // Serializing plain structs and `Value`s into a Vec cannot fail.
        serde_json::to_writer(&mut *self.out, event).expect("serializing a trace event");
    }
}

/// The run as Chrome trace JSON: an object with `traceEvents`,
/// `displayTimeUnit` and `otherData` (scenario, policy, seed, cores).
/// With detail `events` item phases are separate events; without, each
/// item is one event.
pub fn chrome_trace_json(trace: &Trace, events: Option<&[(SimTime, TraceEvent)]>) -> String {
    let timeline = Timeline::build(trace, events);
    let mut out = Vec::with_capacity(256 + timeline.segment_count() * 160);
    let lanes: Vec<(ThreadId, ThreadReason)> = timeline
        .lanes
        .iter()
        .map(|l| (l.thread, l.reason))
        .collect();
    write_head(&mut out, &timeline, &lanes);
    let mut name = String::new();
    for lane in &timeline.lanes {
        for seg in &lane.segments {
            write_segment(&mut out, lane.thread, seg, &timeline.groups, &mut name);
        }
    }
    write_counts(&mut out, &timeline);
    for q in &timeline.queue {
        write_queue_point(&mut out, q);
    }
    write_probes(&mut out, &timeline);
    // Every piece written is JSON produced by serde_json or ASCII literals.
    String::from_utf8(out).expect("JSON is UTF-8")
}

/// The object's head and the metadata events: names and order of the
/// process and its threads (`lanes`, in lane order). Reads the timeline's
/// run fields only (scenario, policy, seed, cores, items).
pub(crate) fn write_head(
    out: &mut Vec<u8>,
    timeline: &Timeline,
    lanes: &[(ThreadId, ThreadReason)],
) {
    let other = json!({
        "scenario": timeline.scenario,
        "policy": timeline.policy,
        "seed": timeline.seed,
        "cores": timeline.cores,
        "items": timeline.items,
        "generator": "poolsim",
    });
    out.extend_from_slice(b"{\"displayTimeUnit\":\"ms\",\"otherData\":");
    out.extend_from_slice(other.to_string().as_bytes());
    out.extend_from_slice(b",\"traceEvents\":[\n");
    let mut w = Writer { out, first: true };

    let process = format!(
        "poolsim: {} / {} (seed {})",
        timeline.scenario, timeline.policy, timeline.seed
    );
    let meta = |w: &mut Writer, name: &str, tid: u32, args: Value| {
        w.push(&Event {
            name,
            cat: None,
            ph: "M",
            ts: 0.0,
            dur: None,
            pid: PID,
            tid,
            s: None,
            args,
        })
    };
    meta(&mut w, "process_name", MAIN_TID, json!({ "name": process }));
    meta(
        &mut w,
        "thread_name",
        MAIN_TID,
        json!({ "name": "main thread" }),
    );
    meta(
        &mut w,
        "thread_sort_index",
        MAIN_TID,
        json!({ "sort_index": 0 }),
    );
    meta(
        &mut w,
        "thread_name",
        DECISIONS_TID,
        json!({ "name": "pool decisions (gate ticks, hill climbing, goal changes)" }),
    );
    meta(
        &mut w,
        "thread_sort_index",
        DECISIONS_TID,
        json!({ "sort_index": -1 }),
    );
    for &(thread, reason) in lanes {
        let tid = thread.saturating_add(1);
        let name = format!("worker {} ({})", thread, reason.name());
        meta(&mut w, "thread_name", tid, json!({ "name": name }));
        meta(
            &mut w,
            "thread_sort_index",
            tid,
            json!({ "sort_index": tid }),
        );
    }
}

/// One item phase or stretch of pool-internal work on `thread`'s track
/// (after the head: it starts with its separator). `name` is a reused buffer.
pub(crate) fn write_segment(
    out: &mut Vec<u8>,
    thread: ThreadId,
    seg: &Segment,
    groups: &[String],
    name: &mut String,
) {
    let tid = thread.saturating_add(1);
    let group = seg
        .group
        .and_then(|g| groups.get(g as usize))
        .map(String::as_str);
    name.clear();
    match group {
        Some(g) => {
            name.push_str(g);
            name.push_str(": ");
            name.push_str(seg.phase.name());
        }
        None => name.push_str(seg.phase.name()),
    }
    let args = match seg.item {
        Some(item) => json!({ "item": item, "group": group, "phase": seg.phase.name() }),
        None => json!({ "phase": seg.phase.name() }),
    };
    Writer { out, first: false }.push(&Event {
        name,
        cat: Some(seg.phase.name()),
        ph: "X",
        ts: us(seg.start),
        dur: Some(us(seg.end) - us(seg.start)),
        pid: PID,
        tid,
        s: None,
        args,
    });
}

/// Thread creations, on the created thread's track (with why, when the
/// run's events say), the thread counts, and the pool's decisions and goal
/// changes on their track.
pub(crate) fn write_counts(out: &mut Vec<u8>, timeline: &Timeline) {
    let mut w = Writer { out, first: false };
    for mark in &timeline.creations {
        let name = format!("thread created ({})", mark.reason.name());
        let why = timeline
            .lanes
            .get(mark.thread as usize)
            .filter(|l| l.thread == mark.thread)
            .and_then(|l| l.why.as_deref());
        let args = match why {
            Some(why) => {
                json!({ "thread": mark.thread, "reason": mark.reason.name(), "why": why })
            }
            None => json!({ "thread": mark.thread, "reason": mark.reason.name() }),
        };
        w.push(&Event {
            name: &name,
            cat: Some("thread"),
            ph: "i",
            ts: us(mark.at),
            dur: None,
            pid: PID,
            tid: mark.thread.saturating_add(1),
            s: Some("t"),
            args,
        });
    }
    for d in &timeline.decisions {
        w.push(&Event {
            name: &decision_name(d),
            cat: Some("decision"),
            ph: "i",
            ts: us(d.at),
            dur: None,
            pid: PID,
            tid: DECISIONS_TID,
            s: Some("t"),
            args: json!({ "rule": d.rule, "decision": d.text }),
        });
    }
    // The goal changes a decision explains (an imported trace's, which no
    // decision explains, are the importer's to write).
    for g in timeline.goals.iter().filter(|g| g.why.is_some()) {
        let name = match g.previous {
            Some(p) => format!("goal {p} -> {} ({})", g.goal, g.reason),
            None => format!("goal {} ({})", g.goal, g.reason),
        };
        w.push(&Event {
            name: &name,
            cat: Some("goal"),
            ph: "i",
            ts: us(g.at),
            dur: None,
            pid: PID,
            tid: DECISIONS_TID,
            s: Some("t"),
            args: json!({
                "goal": g.goal,
                "previous": g.previous,
                "reason": g.reason,
                "why": g.why,
            }),
        });
    }
    for c in &timeline.threads {
        let args = match c.goal {
            Some(goal) => json!({ "existing": c.threads, "goal": goal }),
            None => json!({ "existing": c.threads }),
        };
        w.push(&Event {
            name: "threads",
            cat: Some("counts"),
            ph: "C",
            ts: us(c.at),
            dur: None,
            pid: PID,
            tid: MAIN_TID,
            s: None,
            args,
        });
    }
}

/// A decision's event name: what it is and what it decided.
fn decision_name(d: &DecisionMark) -> String {
    match d.kind {
        DecisionKind::Gate if d.raised => "gate tick: thread added".to_string(),
        DecisionKind::Gate if d.starved => "gate tick: starved, no thread added".to_string(),
        DecisionKind::Gate => "gate tick: no change".to_string(),
        DecisionKind::HillClimbing if d.raised => {
            format!("hill climbing: goal raised ({})", d.rule)
        }
        DecisionKind::HillClimbing => format!("hill climbing ({})", d.rule),
        DecisionKind::CooperativeBlocking if d.raised => {
            "cooperative blocking: goal raised".to_string()
        }
        DecisionKind::CooperativeBlocking => "cooperative blocking".to_string(),
        DecisionKind::ThreadExit => format!("thread exit ({})", d.rule),
    }
}

/// One point of the queue length counter.
pub(crate) fn write_queue_point(out: &mut Vec<u8>, q: &QueuePoint) {
    Writer { out, first: false }.push(&Event {
        name: "queue length",
        cat: Some("counts"),
        ph: "C",
        ts: us(q.at),
        dur: None,
        pid: PID,
        tid: MAIN_TID,
        s: None,
        args: json!({ "queued": q.queued }),
    });
}

/// Probes (queued: instant, with the latency; the main thread's wait), and
/// the object's end.
pub(crate) fn write_probes(out: &mut Vec<u8>, timeline: &Timeline) {
    let mut w = Writer { out, first: false };
    for (i, p) in timeline.probes.iter().enumerate() {
        let latency_ms = p.latency().map(|l| l.as_ms_f64());
        w.push(&Event {
            name: "probe queued",
            cat: Some("probe"),
            ph: "i",
            ts: us(p.queued),
            dur: None,
            pid: PID,
            tid: MAIN_TID,
            s: Some("p"),
            args: json!({ "probe": i, "latency_ms": latency_ms }),
        });
        if let Some(started) = p.started {
            w.push(&Event {
                name: "waiting for probe",
                cat: Some("probe"),
                ph: "X",
                ts: us(p.queued),
                dur: Some(us(started) - us(p.queued)),
                pid: PID,
                tid: MAIN_TID,
                s: None,
                args: json!({ "probe": i, "latency_ms": latency_ms }),
            });
        }
    }
    out.extend_from_slice(b"\n]}\n");
}
