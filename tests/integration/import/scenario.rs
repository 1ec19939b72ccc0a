//! `poolsim import --scenario`: a replayable scenario drafted from a
//! trace's work items, replayed under net8 against the trace itself.

use std::fs;

use poolsim::metrics::summarize;
use poolsim::nettrace::draft::{DraftError, draft_scenario};
use poolsim::scenario::Step;
use poolsim::scenario::load::parse_scenario;

use super::super::common::{poolsim, run};
use super::{fixture_path, temp, timeline};

#[test]
fn import_draft_replays_the_burst() {
    let t = timeline("net8-items");
    let draft = draft_scenario(&t, "net8-items.nettrace").unwrap();
    let s =
        parse_scenario(&draft.toml, "draft.toml").unwrap_or_else(|e| panic!("{e}\n{}", draft.toml));
    let items: u64 = s.groups.iter().map(|g| g.count).sum();
    assert_eq!(items, 20);
    assert_eq!(draft.items, 20);
    assert_eq!(s.machine.cores, 2, "the trace's processor count");
    assert_eq!(s.pool.policy, "net8");
    // Bodies: one sleep each, the pool time (about 500 ms).
    for g in &s.groups {
        match g.body.as_slice() {
            [Step::Sleep(d)] => assert!((499.0..=560.0).contains(&d.as_ms_f64()), "{d:?}"),
            other => panic!("{other:?}"),
        }
    }
    // The trace's span of items: first enqueue to the last item's end.
    let span = t.items.span_ns().unwrap() as f64 / 1e6;
    assert!((draft.span_ms - span).abs() < 1e-6);
    let result = run(&s);
    assert!(result.outcome.is_completed());
    let makespan = summarize(&result.trace).makespan_ms;
    assert!(
        (makespan - span).abs() <= 0.25 * span,
        "simulated makespan {makespan} ms, trace span {span} ms\n{}",
        draft.toml
    );
    // The header says what was read and what was guessed.
    for needle in [
        "Read from the trace",
        "Guessed",
        "sleep_ms",
        "processor count",
    ] {
        assert!(draft.toml.contains(needle), "{needle}\n{}", draft.toml);
    }
}

#[test]
fn import_draft_splits_phases_at_arrival_gaps() {
    use poolsim::nettrace::PoolTimeline;
    use poolsim::nettrace::synth::{self, SynthEvent, TraceWriter};
    let mut w = TraceWriter::new(Vec::new(), 0, 1_000_000_000, 8).unwrap();
    let mut meta = synth::standard_metadata();
    meta.extend(synth::framework_metadata());
    w.metadata(&meta).unwrap();
    let ev = |m, th, ms: u64, id| SynthEvent {
        metadata_id: m,
        thread_id: th,
        timestamp: ms * 1_000_000,
        payload: synth::framework_work_payload(id),
    };
    let mut events = Vec::new();
    // Phase 1: 4 items at 0 ms run 100 ms each on one thread, which then
    // waits; then an item at 1000 ms runs until the thread takes the next,
    // queued at 1100 ms, which runs 50 ms: three phases (gaps > 5 ms).
    for id in 0..4 {
        events.push(ev(synth::META_ENQUEUE_WORK, 1, 0, id));
    }
    for id in 0..4u64 {
        events.push(ev(synth::META_DEQUEUE_WORK, 20, id * 100, id));
    }
    events.push(SynthEvent {
        metadata_id: synth::META_WAIT,
        thread_id: 20,
        timestamp: 400 * 1_000_000,
        payload: synth::worker_payload(1, 0),
    });
    events.push(ev(synth::META_ENQUEUE_WORK, 1, 1000, 10));
    events.push(ev(synth::META_DEQUEUE_WORK, 20, 1000, 10));
    events.push(ev(synth::META_ENQUEUE_WORK, 1, 1100, 11));
    events.push(ev(synth::META_DEQUEUE_WORK, 20, 1100, 11));
    events.push(SynthEvent {
        metadata_id: synth::META_WAIT,
        thread_id: 20,
        timestamp: 1150 * 1_000_000,
        payload: synth::worker_payload(1, 0),
    });
    events.sort_by_key(|e| e.timestamp);
    w.events(&events).unwrap();
    let t = PoolTimeline::read(&w.finish().unwrap()[..]).unwrap();
    let d = draft_scenario(&t, "synthetic").unwrap();
    assert_eq!(d.phases, 3, "{}", d.toml);
    let s = parse_scenario(&d.toml, "d.toml").unwrap_or_else(|e| panic!("{e}\n{}", d.toml));
    let counts: Vec<u64> = s.groups.iter().map(|g| g.count).collect();
    assert_eq!(counts, vec![4, 1, 1], "{}", d.toml);
    assert!(d.toml.contains("sleep_ms = 100"), "{}", d.toml);
    assert!(d.toml.contains("{ at_ms = 1000 }"), "{}", d.toml);
    assert!(d.toml.contains("sleep_ms = 50"), "{}", d.toml);
}

#[test]
fn import_scenario_cli_writes_a_file_run_accepts() {
    let out_path = temp("draft.toml");
    let out = poolsim(&[
        "import",
        &fixture_path("net8-items"),
        "--scenario",
        out_path.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = poolsim(&["run", out_path.to_str().unwrap(), "--json"]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(v["items"], 20);
    let _ = fs::remove_file(&out_path);
}

/// A trace of the runtime's events alone has no items to draft from: the
/// draft is inferred from the workers' busy stretches (`nettrace::infer`),
/// and its header says so, with the config that records the items.
#[test]
fn import_scenario_without_item_events_infers_one() {
    let t = timeline("net8-starvation");
    assert_eq!(draft_scenario(&t, "x"), Err(DraftError::NoItemEvents));
    let out_path = temp("inferred.toml");
    let out = poolsim(&[
        "import",
        &fixture_path("net8-starvation"),
        "--scenario",
        out_path.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = fs::read_to_string(&out_path).unwrap();
    assert!(text.contains("busy stretches"), "{text}");
    let run = poolsim(&["run", out_path.to_str().unwrap(), "--json"]);
    assert_eq!(run.status.code(), Some(0));
    let _ = fs::remove_file(&out_path);
}

/// A pool that raised its goal for cooperative blocking had threads
/// blocked in `Task.Wait`: the draft's bodies are `wait_ms`, which the
/// .NET 6+ models compensate as the runtime did; without such an
/// adjustment they stay `sleep_ms`.
#[test]
fn import_draft_reads_the_blocking_kind_from_the_adjustments() {
    use poolsim::nettrace::AdjustmentReason;
    use poolsim::nettrace::PoolTimeline;
    use poolsim::nettrace::synth::{self, SynthEvent, TraceWriter};
    let draft = |reason: Option<AdjustmentReason>| {
        let mut w = TraceWriter::new(Vec::new(), 0, 1_000_000_000, 8).unwrap();
        let mut meta = synth::standard_metadata();
        meta.extend(synth::framework_metadata());
        w.metadata(&meta).unwrap();
        let mut events = Vec::new();
        for id in 0..4u64 {
            events.push(SynthEvent {
                metadata_id: synth::META_ENQUEUE_WORK,
                thread_id: 1,
                timestamp: 0,
                payload: synth::framework_work_payload(id),
            });
            events.push(SynthEvent {
                metadata_id: synth::META_DEQUEUE_WORK,
                thread_id: 20 + id,
                timestamp: (id + 1) * 1_000_000,
                payload: synth::framework_work_payload(id),
            });
            events.push(SynthEvent {
                metadata_id: synth::META_WAIT,
                thread_id: 20 + id,
                timestamp: (id + 101) * 1_000_000,
                payload: synth::worker_payload(1, 0),
            });
        }
        if let Some(reason) = reason {
            events.push(SynthEvent {
                metadata_id: synth::META_ADJUSTMENT,
                thread_id: 9,
                timestamp: 2_000_000,
                payload: synth::adjustment_payload(0.0, 5, reason),
            });
        }
        events.sort_by_key(|e| e.timestamp);
        w.events(&events).unwrap();
        let t = PoolTimeline::read(&w.finish().unwrap()[..]).unwrap();
        draft_scenario(&t, "synthetic").unwrap().toml
    };
    let blocked = draft(Some(AdjustmentReason::CooperativeBlocking));
    assert!(
        blocked.contains("body = [ { wait_ms = 100 } ]"),
        "{blocked}"
    );
    assert!(blocked.contains("cooperative blocking"), "{blocked}");
    for other in [Some(AdjustmentReason::Starvation), None] {
        let d = draft(other);
        assert!(d.contains("body = [ { sleep_ms = 100 } ]"), "{d}");
    }
}
