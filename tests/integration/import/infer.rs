//! A scenario inferred from a trace with no work-item events
//! ([`poolsim::nettrace::infer`]): the real .NET 8 traces of 20 sleeping
//! items (runtime events only), replayed under net8 against what the
//! program itself printed; a synthetic trace with cooperative blocking;
//! a synthetic trace of two phases.

use poolsim::metrics::summarize;
use poolsim::nettrace::PoolTimeline;
use poolsim::nettrace::draft::DraftError;
use poolsim::nettrace::infer::{draft_any, draft_from_activity};
use poolsim::nettrace::synth::{self, SynthEvent, TraceWriter};
use poolsim::nettrace::{AdjustmentReason, draft::draft_scenario};
use poolsim::scenario::load::parse_scenario;
use poolsim::scenario::{Arrival, Step};
use poolsim::time::SimTime;

use super::super::common::{repo_path, run};
use super::{program_items, timeline};

/// The `peak_thread_count` of a fixture's `summary` line.
fn program_peak(stem: &str) -> u32 {
    let text =
        std::fs::read_to_string(repo_path(&format!("tests/fixtures/nettrace/{stem}.txt"))).unwrap();
    let line = text.lines().find(|l| l.starts_with("summary ")).unwrap();
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix("peak_thread_count="))
        .unwrap()
        .parse()
        .unwrap()
}

/// Recorded and replayed figures of a fixture's inferred draft.
struct Check {
    recorded_peak: u32,
    replayed_peak: u32,
    recorded_span_ms: f64,
    replayed_span_ms: f64,
    toml: String,
}

fn replay_fixture(stem: &str) -> Check {
    let t = timeline(stem);
    assert_eq!(t.enqueued, 0, "{stem} has no work-item events");
    assert_eq!(draft_scenario(&t, stem), Err(DraftError::NoItemEvents));
    let draft = draft_from_activity(&t, &format!("{stem}.nettrace")).unwrap();
    // What `import --scenario` gets from any trace.
    assert_eq!(draft_any(&t, &format!("{stem}.nettrace")).unwrap(), draft);
    let s =
        parse_scenario(&draft.toml, "draft.toml").unwrap_or_else(|e| panic!("{e}\n{}", draft.toml));
    assert_eq!(s.pool.policy, "net8");
    assert_eq!(s.machine.cores, 2, "the trace's processor count");
    assert_eq!(s.pool.min_threads, Some(2), "ThreadPoolMinMaxThreads");
    let items: u64 = s.groups.iter().map(|g| g.count).sum();
    assert_eq!(items as usize, draft.items);
    // No cooperative blocking in these traces: the bodies sleep.
    for g in &s.groups {
        assert!(
            g.body.iter().all(|st| matches!(st, Step::Sleep(_))),
            "{:?}\n{}",
            g.body,
            draft.toml
        );
    }
    let result = run(&s);
    assert!(result.outcome.is_completed());
    let started = result
        .trace
        .items
        .iter()
        .map(|i| i.started)
        .filter(|&x| x != SimTime::MAX)
        .min()
        .unwrap();
    let finished = result
        .trace
        .items
        .iter()
        .map(|i| i.finished)
        .filter(|&x| x != SimTime::MAX)
        .max()
        .unwrap();
    let program = program_items(stem);
    let first = program.iter().map(|i| i.start_ms).min().unwrap();
    let last = program.iter().map(|i| i.end_ms).max().unwrap();
    Check {
        recorded_peak: program_peak(stem),
        replayed_peak: summarize(&result.trace).threads_peak,
        recorded_span_ms: (last - first) as f64,
        replayed_span_ms: finished.as_ms_f64() - started.as_ms_f64(),
        toml: draft.toml,
    }
}

fn assert_replays(stem: &str) -> Check {
    let c = replay_fixture(stem);
    eprintln!(
        "{stem}: peak threads recorded {} replayed {}; span recorded {} ms replayed {:.1} ms",
        c.recorded_peak, c.replayed_peak, c.recorded_span_ms, c.replayed_span_ms
    );
    assert!(
        c.replayed_peak.abs_diff(c.recorded_peak) <= 2,
        "{stem}: peak threads recorded {} replayed {}\n{}",
        c.recorded_peak,
        c.replayed_peak,
        c.toml
    );
    assert!(
        (c.replayed_span_ms - c.recorded_span_ms).abs() <= 0.10 * c.recorded_span_ms,
        "{stem}: span recorded {} ms replayed {} ms\n{}",
        c.recorded_span_ms,
        c.replayed_span_ms,
        c.toml
    );
    // Every guess is named, with where each number came from.
    for needle in [
        "Read from the trace",
        "Inferred (where from; how sure)",
        "Guessed",
        "processor count",
        "ThreadPoolMinMaxThreads (59)",
        "busy stretches",
        "How sure",
        "submit = \"queue-user-work-item\"",
        "policy = \"net8\": the trace does not name",
        "a burst queued at its start",
    ] {
        assert!(c.toml.contains(needle), "{stem}: {needle}\n{}", c.toml);
    }
    c
}

/// 20 × Thread.Sleep(2000) queued at once on 2 cores: 5 Starvation raises,
/// one thread each, peak 7.
#[test]
fn infer_starvation_trace_replays_its_peak_and_span() {
    let c = assert_replays("net8-starvation");
    // The raises are 1 s apart with a goal of 3 and more: the CPU was idle,
    // the items blocked.
    assert!(c.toml.contains("the CPU was below 80 %"), "{}", c.toml);
    assert!(
        c.toml
            .contains("5 Starvation / CooperativeBlocking raise(s) fell in it"),
        "{}",
        c.toml
    );
    // One phase, all queued at once.
    let s = parse_scenario(&c.toml, "d.toml").unwrap();
    for g in &s.groups {
        assert_eq!(
            g.arrival,
            Arrival::At(poolsim::time::SimDuration(0)),
            "{}",
            c.toml
        );
    }
}

/// 20 × Thread.Sleep(500) queued at once on 2 cores: the two start-up
/// threads, a Warmup raise and a third thread, peak 3.
#[test]
fn infer_burst_trace_replays_its_peak_and_span() {
    let c = assert_replays("net8-burst");
    // No Starvation or CooperativeBlocking raise: the kind is a guess.
    assert!(c.toml.contains("`sleep_ms`: GUESSED"), "{}", c.toml);
    assert!(c.toml.contains("2 stretches began within"), "{}", c.toml);
}

#[test]
fn infer_same_trace_same_text() {
    for stem in ["net8-starvation", "net8-burst"] {
        let a = draft_from_activity(&timeline(stem), "x").unwrap();
        let b = draft_from_activity(&timeline(stem), "x").unwrap();
        assert_eq!(a, b);
    }
}

/// A trace writer over the runtime's events alone, 1 tick = 1 ns.
struct Runtime {
    events: Vec<SynthEvent>,
}

impl Runtime {
    fn new(min: u16) -> Self {
        let mut r = Runtime { events: Vec::new() };
        r.push(
            synth::META_MIN_MAX,
            1,
            0.0,
            synth::min_max_payload(min, 1000),
        );
        r
    }

    fn push(&mut self, metadata_id: u32, thread_id: u64, at_ms: f64, payload: Vec<u8>) {
        self.events.push(SynthEvent {
            metadata_id,
            thread_id,
            timestamp: (at_ms * 1e6) as u64,
            payload,
        });
    }

    fn start(&mut self, thread: u64, at_ms: f64, active: u32) {
        self.push(
            synth::META_START,
            thread,
            at_ms,
            synth::worker_payload(active, 0),
        );
    }

    fn wait(&mut self, thread: u64, at_ms: f64, active: u32) {
        self.push(
            synth::META_WAIT,
            thread,
            at_ms,
            synth::worker_payload(active, 0),
        );
    }

    fn raise(&mut self, at_ms: f64, goal: u32, reason: AdjustmentReason) {
        self.push(
            synth::META_ADJUSTMENT,
            2,
            at_ms,
            synth::adjustment_payload(0.0, goal, reason),
        );
    }

    fn bytes(mut self) -> Vec<u8> {
        let mut w = TraceWriter::new(Vec::new(), 0, 1_000_000_000, 8).unwrap();
        w.metadata(&synth::standard_metadata()).unwrap();
        self.events.sort_by_key(|e| e.timestamp);
        w.events(&self.events).unwrap();
        w.finish().unwrap()
    }

    fn timeline(self) -> PoolTimeline {
        PoolTimeline::read(&self.bytes()[..]).unwrap()
    }
}

/// Threads blocked in Task.Wait: the pool raises its goal for cooperative
/// blocking, thread after thread; the draft's bodies are `wait_ms`, the
/// shortest stretch is read as one wait, a worker woken only for a wait's
/// completion is left out, and the header says why.
#[test]
fn infer_cooperative_blocking_gives_wait_bodies() {
    let build = || {
        let mut r = Runtime::new(2);
        // Two start-up threads, then one thread per CooperativeBlocking
        // raise, 25 ms apart; each runs its items back to back (about
        // 100 ms each, more for those whose completion waited), then waits.
        r.start(10, 1.0, 1);
        r.start(11, 1.5, 2);
        let mut active = 2;
        for (k, thread) in (12..18u64).enumerate() {
            let at = 2.0 + 25.0 * k as f64;
            active += 1;
            r.raise(at, active, AdjustmentReason::CooperativeBlocking);
            r.start(thread, at + 0.5, active);
        }
        let ends = [
            (10, 430.0),
            (11, 331.5),
            (12, 305.0),
            (13, 228.0),
            (14, 255.0),
            (15, 180.0),
            (16, 207.5),
            (17, 260.0),
        ];
        for (thread, end) in ends {
            r.wait(thread, end, active);
        }
        // Thread 15 wakes to run a timer's callback (a wait's completion)
        // and blocks again: a repeated wait.
        r.wait(15, 240.0, active);
        PoolTimeline::read(&r.bytes()[..]).unwrap()
    };
    let t = build();
    assert_eq!(t.cooperative_blocking_injections.len(), 6);
    let d = draft_from_activity(&t, "coop.nettrace").unwrap();
    let s = parse_scenario(&d.toml, "d.toml").unwrap_or_else(|e| panic!("{e}\n{}", d.toml));
    assert!(!s.groups.is_empty());
    for g in &s.groups {
        match g.body.as_slice() {
            [Step::Wait(w)] => assert!(w.as_ms_f64() > 0.0, "{}", d.toml),
            other => panic!("{other:?}\n{}", d.toml),
        }
    }
    assert!(d.toml.contains("wait_ms"), "{}", d.toml);
    assert!(d.toml.contains("CooperativeBlocking"), "{}", d.toml);
    assert!(d.toml.contains("sync over async"), "{}", d.toml);
    // The least inflated wait: thread 15's, 77.5 ms to 180 ms.
    assert!(
        d.toml.contains("waits of the shortest stretch, 102.5 ms"),
        "{}",
        d.toml
    );
    // The callback between thread 15's two waits is a completion.
    assert!(d.toml.contains("left out: 1 stretch(es)"), "{}", d.toml);
    // The raises make it one burst.
    assert_eq!(d.phases, 1, "{}", d.toml);
    assert!(d.toml.contains("a burst queued at its start"), "{}", d.toml);
    // Deterministic.
    assert_eq!(draft_from_activity(&build(), "coop.nettrace").unwrap(), d);
}

/// Two bursts with an idle gap between: the second follows the first
/// (`after`), the idle time as its delay. The second phase's first
/// stretches are seen only from the samples the workers log as items
/// complete: their starts are estimated, and the header says so.
#[test]
fn infer_a_later_phase_follows_the_earlier_one() {
    let mut r = Runtime::new(2);
    // Phase 1: two threads, 1000 ms of work each, then they wait.
    r.start(10, 0.0, 1);
    r.start(11, 0.5, 2);
    r.wait(10, 1000.0, 2);
    r.wait(11, 1000.5, 2);
    // Phase 2 from 3000 ms: both wake (unseen), log a sample as their first
    // items complete at 3500 ms; the gate raises the goal and a third thread
    // starts; all wait at 4000 ms.
    r.push(synth::META_SAMPLE, 10, 3500.0, synth::sample_payload(4.0));
    r.push(synth::META_SAMPLE, 11, 3500.2, synth::sample_payload(4.0));
    r.raise(3510.0, 3, AdjustmentReason::Starvation);
    r.start(12, 3510.5, 3);
    r.wait(10, 4000.0, 3);
    r.wait(11, 4000.2, 3);
    r.wait(12, 4010.5, 3);
    let t = r.timeline();
    let d = draft_from_activity(&t, "phases.nettrace").unwrap();
    let s = parse_scenario(&d.toml, "d.toml").unwrap_or_else(|e| panic!("{e}\n{}", d.toml));
    assert_eq!(d.phases, 2, "{}", d.toml);
    let first = s
        .groups
        .iter()
        .position(|g| g.name.starts_with("phase 1"))
        .unwrap();
    let later: Vec<_> = s
        .groups
        .iter()
        .filter(|g| g.name.starts_with("phase 2"))
        .collect();
    assert!(!later.is_empty(), "{}", d.toml);
    for g in later {
        match g.arrival {
            Arrival::After { group, delay, .. } => {
                assert_eq!(group, first, "{}", d.toml);
                // Phase 1 ended at 1000.5 ms; phase 2's stretches are
                // estimated to start one item before their samples.
                assert!(delay.as_ms_f64() > 0.0, "{}", d.toml);
                assert!(delay.as_ms_f64() < 2510.0, "{}", d.toml);
            }
            ref other => panic!("{other:?}\n{}", d.toml),
        }
    }
    assert!(d.toml.contains("ESTIMATED"), "{}", d.toml);
    assert!(d.toml.contains("after = \"phase 1\""), "{}", d.toml);
}

#[test]
fn infer_nothing_busy_is_no_draft() {
    let mut r = Runtime::new(2);
    r.raise(10.0, 2, AdjustmentReason::Initializing);
    let t = r.timeline();
    assert_eq!(draft_from_activity(&t, "x"), Err(DraftError::NoItemEvents));
}

/// A later phase seen only through repeated waits: the workers wake
/// without an event, run, and wait again. The timeline keeps the repeated
/// waits, and the phase's work is drafted from them.
#[test]
fn infer_repeated_waits_show_a_later_phase() {
    let mut r = Runtime::new(2);
    // Phase 1: two threads, 1000 ms each; a third started for a
    // Starvation raise runs 500 ms.
    r.start(10, 0.0, 1);
    r.start(11, 0.5, 2);
    r.raise(500.0, 3, AdjustmentReason::Starvation);
    r.start(12, 500.5, 3);
    r.wait(10, 1000.0, 3);
    r.wait(11, 1000.5, 3);
    r.wait(12, 1000.5, 3);
    // Phase 2 from about 3000 ms: all three wake (no event), the gate
    // raises the goal once, a fourth thread starts; all wait again.
    r.raise(3510.0, 4, AdjustmentReason::Starvation);
    r.start(13, 3510.5, 4);
    r.wait(10, 4000.0, 4);
    r.wait(11, 4000.5, 4);
    r.wait(12, 4001.0, 4);
    r.wait(13, 4010.5, 4);
    let t = PoolTimeline::read(&r.bytes()[..]).unwrap();
    // Every wait is kept, the repeated ones too.
    assert_eq!(t.activity.iter().filter(|p| p.waiting).count(), 7);

    let phase2 = |toml: &str| -> u64 {
        let s = parse_scenario(toml, "d.toml").unwrap_or_else(|e| panic!("{e}\n{toml}"));
        s.groups
            .iter()
            .filter(|g| g.name.starts_with("phase 2"))
            .map(|g| g.count)
            .sum()
    };
    let seen = draft_from_activity(&t, "phases.nettrace").unwrap();
    assert_eq!(seen.phases, 2, "{}", seen.toml);
    assert!(
        seen.toml.contains("arrival = { after = \"phase 1"),
        "{}",
        seen.toml
    );
    assert!(seen.toml.contains("ESTIMATED"), "{}", seen.toml);
    // Four workers busy in phase 2: at least four items.
    assert!(phase2(&seen.toml) >= 4, "{}", seen.toml);
}
