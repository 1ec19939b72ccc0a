//! The .nettrace reader against real traces of .NET 8 (tests/fixtures/nettrace,
//! recorded by scripts/record-nettrace.sh from burst.cs) and against broken
//! input: truncated, zeroed, random and mutated files give errors, never
//! panics.

use std::collections::BTreeMap;
use std::fs;

use proptest::prelude::*;

use poolsim::nettrace::{
    AdjustmentReason, NetTraceError, PoolEvent, PoolTimeline, TimedEvent, TraceInfo, WITHIN_GOAL,
    read_events, synth,
};

use super::common::{proptest_config, repo_path};

/// (trace, program output) of each fixture.
const FIXTURES: [&str; 3] = ["net8-burst", "net8-starvation", "net8-items"];

fn fixture(stem: &str) -> Vec<u8> {
    fs::read(repo_path(&format!(
        "tests/fixtures/nettrace/{stem}.nettrace"
    )))
    .unwrap()
}

/// The `summary ...` line burst.cs printed, as key -> value.
fn program_summary(stem: &str) -> BTreeMap<String, i64> {
    let text =
        fs::read_to_string(repo_path(&format!("tests/fixtures/nettrace/{stem}.txt"))).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("summary "))
        .expect("a summary line");
    line.split_whitespace()
        .skip(1)
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect()
}

fn decode(bytes: &[u8]) -> Result<(Vec<TimedEvent>, TraceInfo), NetTraceError> {
    let mut v = Vec::new();
    let info = read_events(bytes, |e| v.push(e))?;
    Ok((v, info))
}

#[test]
fn nettrace_fixtures_decode() {
    for stem in FIXTURES {
        let bytes = fixture(stem);
        let (events, info) = decode(&bytes).unwrap_or_else(|e| panic!("{stem}: {e}"));
        assert_eq!(info.format_version, 4, "{stem}");
        assert_eq!(info.qpc_frequency, 1_000_000_000, "{stem}");
        assert_eq!(info.pointer_size, 8, "{stem}");
        assert_eq!(info.processors, 2, "{stem}");
        assert_eq!(
            info.bytes,
            bytes.len() as u64,
            "{stem}: read to the end tag"
        );
        assert_eq!(info.events_lost, 0, "{stem}");
        assert_eq!(info.undecoded_pool_events, 0, "{stem}");
        assert_eq!(info.events_without_metadata, 0, "{stem}");
        assert!(
            info.events > info.pool_events,
            "{stem}: other events are skipped"
        );
        assert_eq!(events.len() as u64, info.pool_events, "{stem}");
        // Time order, from the trace's start, within the program's run.
        assert!(events.windows(2).all(|w| w[0].qpc <= w[1].qpc), "{stem}");
        assert!(
            events
                .iter()
                .all(|e| e.time_ns >= 0 && e.time_ns < 60_000_000_000),
            "{stem}"
        );
        // The runtime's events end with ClrInstanceID 0; FrameworkEventSource's
        // work items have none.
        assert!(
            events.iter().all(|e| e.thread_id != 0
                && match e.event {
                    PoolEvent::EnqueueWork { .. } | PoolEvent::DequeueWork { .. } =>
                        e.clr_instance_id.is_none(),
                    _ => e.clr_instance_id == Some(0),
                }),
            "{stem}"
        );
        // The pool's limits come first of the runtime's events (min = cores
        // on .NET 8); the first work item is queued before the pool exists.
        let first = events
            .iter()
            .find(|e| !matches!(e.event, PoolEvent::EnqueueWork { .. }))
            .unwrap();
        assert!(
            matches!(
                first.event,
                PoolEvent::MinMaxThreads {
                    min_workers: 2,
                    max_workers: 32767,
                    ..
                }
            ),
            "{stem}: {first:?}"
        );
    }
}

#[test]
fn nettrace_peak_threads_agree_with_the_program() {
    for stem in FIXTURES {
        let printed = program_summary(stem);
        let t = PoolTimeline::read(&fixture(stem)[..]).unwrap();
        let peak = i64::from(t.peak_threads);
        let program_peak = printed["peak_thread_count"];
        assert!(
            (peak - program_peak).abs() <= 1,
            "{stem}: trace peak {peak}, ThreadPool.ThreadCount peak {program_peak}"
        );
        // Every thread that ran an item was a pool worker the trace saw start.
        assert!(
            t.threads_started as i64 >= printed["distinct_threads"],
            "{stem}"
        );
        assert_eq!(t.threads_started, t.distinct_worker_threads, "{stem}");
        assert_eq!(
            t.thread_count.len() as u64,
            t.threads_started + t.threads_stopped
        );
        let created: u64 = t.threads_created_by_reason.values().sum();
        assert_eq!(created, t.threads_started, "{stem}");
        // Start-up threads up to the minimum owe nothing to an adjustment.
        assert_eq!(t.threads_created_by_reason[WITHIN_GOAL], 2, "{stem}");
    }
}

#[test]
fn nettrace_adjustments_have_known_reasons() {
    for stem in FIXTURES {
        let t = PoolTimeline::read(&fixture(stem)[..]).unwrap();
        assert!(!t.adjustments.is_empty(), "{stem}");
        for a in &t.adjustments {
            assert!(a.reason.is_known(), "{stem}: {a:?}");
            assert!(a.new_count >= 2 && a.new_count <= 32767, "{stem}: {a:?}");
        }
        assert!(
            t.adjustments
                .windows(2)
                .all(|w| w[0].time_ns <= w[1].time_ns)
        );
    }
    // Two-second sleepers on two cores: the starvation rule adds a thread
    // per injection, each a goal increase of one.
    let t = PoolTimeline::read(&fixture("net8-starvation")[..]).unwrap();
    assert!(t.starvation_injections.len() >= 2, "{:?}", t.adjustments);
    for i in &t.starvation_injections {
        assert_eq!(i.previous_count.map(|p| p + 1), Some(i.new_count));
    }
    assert_eq!(
        t.threads_created_by_reason["Starvation"],
        t.starvation_injections.len() as u64
    );
    assert_eq!(
        t.peak_threads as usize,
        2 + t.starvation_injections.len(),
        "min 2 threads plus one per injection"
    );
    // Half-second sleepers: hill climbing's first moves, no starvation.
    let t = PoolTimeline::read(&fixture("net8-burst")[..]).unwrap();
    assert!(t.starvation_injections.is_empty());
    assert!(t.adjustments.iter().any(
        |a| a.reason == AdjustmentReason::Initializing || a.reason == AdjustmentReason::Warmup
    ));
}

#[test]
fn nettrace_timeline_serializes() {
    let t = PoolTimeline::read(&fixture("net8-starvation")[..]).unwrap();
    let v = serde_json::to_value(&t).unwrap();
    assert_eq!(v["peak_threads"], t.peak_threads);
    assert_eq!(v["adjustments"][0]["reason"], "Starvation");
    assert_eq!(v["trace"]["qpc_frequency"], 1_000_000_000);
}

#[test]
fn nettrace_truncated_fixtures_are_errors() {
    // Every prefix of the small trace; every 499th of the big one.
    for (stem, stride) in [
        ("net8-starvation", 1),
        ("net8-items", 1),
        ("net8-burst", 499),
    ] {
        let bytes = fixture(stem);
        let mut n = 0;
        while n < bytes.len() {
            match decode(&bytes[..n]) {
                Ok(_) => panic!("{stem}: the {n}-byte prefix decoded"),
                Err(e) => assert!(e.offset() <= n as u64, "{stem} prefix {n}: {e}"),
            }
            n += stride;
        }
    }
}

#[test]
fn nettrace_zeroed_and_random_files_are_errors() {
    let len = fixture("net8-burst").len();
    let zeros = vec![0u8; len];
    match decode(&zeros) {
        Err(NetTraceError::Format { offset: 0, .. }) => {}
        other => panic!("{:?}", other.map(|(_, i)| i)),
    }
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let prologue = &fixture("net8-starvation")[..0x66];
    for size in [1usize, 7, 8, 64, 1000, 65_536, 300_000] {
        let random: Vec<u8> = (0..size).map(|_| next() as u8).collect();
        assert!(decode(&random).is_err(), "{size} random bytes");
        // A valid header and Trace object, then noise.
        let mut v = prologue.to_vec();
        v.extend_from_slice(&random);
        assert!(decode(&v).is_err(), "prologue + {size} random bytes");
    }
}

/// One mutation of a byte string.
#[derive(Clone, Debug)]
enum Mutation {
    Set(usize, u8),
    Xor(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Truncate(usize),
    /// A little-endian u32 (a size or count) set to an extreme value.
    Word(usize, u32),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let pos = any::<usize>();
    prop_oneof![
        (pos, any::<u8>()).prop_map(|(p, b)| Mutation::Set(p, b)),
        (pos, 1u8..).prop_map(|(p, b)| Mutation::Xor(p, b)),
        (pos, proptest::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(p, v)| Mutation::Insert(p, v)),
        (pos, 1usize..64).prop_map(|(p, n)| Mutation::Delete(p, n)),
        pos.prop_map(Mutation::Truncate),
        (
            pos,
            prop_oneof![
                Just(0u32),
                Just(u32::MAX),
                Just(0x7fff_ffff),
                Just(0x00ff_ffff),
                any::<u32>()
            ]
        )
            .prop_map(|(p, w)| Mutation::Word(p, w)),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    if bytes.is_empty() {
        return;
    }
    let at = |p: usize, len: usize| p % len;
    match m {
        Mutation::Set(p, b) => {
            let i = at(*p, bytes.len());
            bytes[i] = *b;
        }
        Mutation::Xor(p, b) => {
            let i = at(*p, bytes.len());
            bytes[i] ^= *b;
        }
        Mutation::Insert(p, v) => {
            let i = at(*p, bytes.len() + 1);
            bytes.splice(i..i, v.iter().copied());
        }
        Mutation::Delete(p, n) => {
            let i = at(*p, bytes.len());
            let end = (i + n).min(bytes.len());
            bytes.drain(i..end);
        }
        Mutation::Truncate(p) => {
            let n = at(*p, bytes.len());
            bytes.truncate(n);
        }
        Mutation::Word(p, w) => {
            if bytes.len() >= 4 {
                let i = at(*p, bytes.len() - 3);
                bytes[i..i + 4].copy_from_slice(&w.to_le_bytes());
            }
        }
    }
}

proptest! {
    #![proptest_config(proptest_config(2000))]

    /// Mutated traces (the small fixture and the synthetic sample) decode
    /// or fail with an error inside the file; they never panic. The
    /// 100,000-input run is `cargo run --release --example fuzz_nettrace`.
    #[test]
    fn nettrace_mutated_inputs_never_panic(
        seed in 0usize..2,
        mutations in proptest::collection::vec(mutation(), 1..6),
    ) {
        let mut bytes = if seed == 0 { fixture("net8-starvation") } else { synth::sample_trace() };
        for m in &mutations {
            apply(&mut bytes, m);
        }
        match decode(&bytes) {
            Ok((events, info)) => {
                prop_assert_eq!(events.len() as u64, info.pool_events);
                prop_assert!(info.bytes <= bytes.len() as u64);
                let _ = PoolTimeline::from_events(&events);
            }
            Err(e) => prop_assert!(e.offset() <= bytes.len() as u64, "{}", e),
        }
    }
}

/// `poolsim import` end to end; it needs `import` wired into
/// src/cli/mod.rs (`Import(import::ImportArgs)` => `import::run`).
#[test]
fn nettrace_import_cli() {
    let bin = env!("CARGO_BIN_EXE_poolsim");
    let path = repo_path("tests/fixtures/nettrace/net8-starvation.nettrace");
    let out = std::process::Command::new(bin)
        .arg("import")
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("starvation injections:"), "{text}");
    assert!(text.contains("Starvation"), "{text}");
    let out = std::process::Command::new(bin)
        .args(["import", "--json"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["peak_threads"].as_u64().unwrap() >= 3);
    // Bad input: exit 2 with the byte offset.
    let bytes = fs::read(&path).unwrap();
    let cut = std::env::temp_dir().join(format!("poolsim-cut-{}.nettrace", std::process::id()));
    fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let out = std::process::Command::new(bin)
        .arg("import")
        .arg(&cut)
        .output()
        .unwrap();
    let _ = fs::remove_file(&cut);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("byte "));
}
