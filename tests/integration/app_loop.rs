//! advise's closed loop on real programs, from their fixtures
//! (`tests/fixtures/apps/APP/`, recorded by `scripts/app-loop.sh APP` on
//! .NET 8): the program's trace is advised on now, and the program's
//! re-runs with the setting it advised then must fall inside the range the
//! advice predicts now. The tolerances were stated before any re-run was
//! measured (scripts/app-loop.sh): latency p99 within 15 % of the
//! simulated range, makespan within 10 %, peak threads within 2.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::common::poolsim;

/// The runs advise replays each setting over, as `scripts/app-loop.sh`
/// advises (100, not advise's default 20: at a cliff 20 runs cannot tell
/// 94 % from 100 %).
const ADVISE_RUNS: &str = "100";

fn fixture(app: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/apps")
        .join(app)
}

/// `summary k=v ...` as the programs print it.
fn summary(path: &Path) -> HashMap<String, f64> {
    let text = fs::read_to_string(path).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("summary "))
        .unwrap_or_else(|| panic!("{}: no summary line", path.display()));
    line.split_whitespace()
        .skip(1)
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect()
}

/// The lowest and highest of a trial's figure in advise's JSON (runs that
/// did not complete are nulls), as advise's own text reads it.
fn range(values: &serde_json::Value) -> (f64, f64) {
    let v: Vec<Option<f64>> = values
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64())
        .collect();
    let s = poolsim::remedy::Span::of(&v).expect("a completed run");
    (s.lo, s.hi)
}

/// The scenario `import --scenario` drafts from `app`'s recording: its
/// text and the scenario it loads as.
fn drafted(app: &str) -> (String, poolsim::scenario::Scenario) {
    drafted_from(app, "recorded.nettrace")
}

/// [`drafted`] from another trace of `app`'s fixtures.
fn drafted_from(app: &str, trace: &str) -> (String, poolsim::scenario::Scenario) {
    let dir = fixture(app);
    let out_dir = std::env::temp_dir().join(format!("poolsim-{app}-{}", std::process::id()));
    fs::create_dir_all(&out_dir).unwrap();
    let toml = out_dir.join(format!("{app}.toml"));
    let out = poolsim(&[
        "import",
        dir.join(trace).to_str().unwrap(),
        "--scenario",
        toml.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{app}: {out:?}");
    let text = fs::read_to_string(&toml).unwrap();
    let _ = fs::remove_dir_all(&out_dir);
    let s = poolsim::scenario::load::parse_scenario(&text, &format!("{app}.toml")).unwrap();
    (text, s)
}

/// The loop of one app: the replay check passes, the advice is the one
/// the re-runs applied, and every re-run is inside the predicted range.
fn closed_loop(app: &str) {
    let (reruns, misses) = check_loop(app);
    assert!(reruns >= 3, "{app}: {reruns} re-runs");
    assert!(misses.is_empty(), "{app}: {misses:#?}");
}

/// Advises on `app`'s recording now and compares its re-runs with the
/// range predicted: the number of re-runs and each figure outside
/// (asserting that the replay check passes, that the advice is still the
/// one the re-runs applied and that it helps).
fn check_loop(app: &str) -> (usize, Vec<String>) {
    let dir = fixture(app);
    let out = poolsim(&[
        "advise",
        dir.join("recorded.nettrace").to_str().unwrap(),
        "--runs",
        ADVISE_RUNS,
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{app}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["confirmed"], true, "{app}: {}", v["replay_check"]);
    let advice = &v["advice"];
    let r = &advice["remedies"][advice["recommended"].as_u64().unwrap() as usize];
    assert_eq!(r["kind"], "min-threads");
    // The setting the re-runs were made with (the recording's advice).
    let then: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.join("advice.json")).unwrap()).unwrap();
    let then_advice = &then["advice"];
    let then_r = &then_advice["remedies"][then_advice["recommended"].as_u64().unwrap() as usize];
    assert_eq!(
        r["trial"]["value"], then_r["trial"]["value"],
        "{app}: the advice changed since the re-runs were measured: re-record with scripts/app-loop.sh {app}"
    );
    let t = &r["trial"];
    let (lat_lo, lat_hi) = range(&t["latency_p99_ms"]);
    let (mk_lo, mk_hi) = range(&t["makespan_ms"]);
    let (th_lo, th_hi) = range(&t["threads_peak"]);
    let mut reruns = 0;
    let mut misses = Vec::new();
    let mut paths: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "summary"))
        .collect();
    paths.sort();
    for path in paths {
        reruns += 1;
        let s = summary(&path);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let lat = s["latency_p99_ms"];
        if !(lat_lo * 0.85..=lat_hi * 1.15).contains(&lat) {
            misses.push(format!(
                "{name}: latency p99 {lat} outside {lat_lo}..{lat_hi} (± 15 %)"
            ));
        }
        let mk = s["makespan_ms"];
        if !(mk_lo * 0.90..=mk_hi * 1.10).contains(&mk) {
            misses.push(format!(
                "{name}: makespan {mk} outside {mk_lo}..{mk_hi} (± 10 %)"
            ));
        }
        let th = s["peak_thread_count"];
        if !(th_lo - 2.0..=th_hi + 2.0).contains(&th) {
            misses.push(format!(
                "{name}: peak threads {th} outside {th_lo}..{th_hi} (± 2)"
            ));
        }
    }
    // And as the app ran before the advice: the recording's own summary
    // is what the draft was checked against.
    let before = summary(&dir.join("recorded.txt"));
    assert!(before["latency_p99_ms"] > lat_hi, "{app}: the advice helps");
    (reruns, misses)
}

#[test]
fn batch_of_blocking_calls() {
    closed_loop("batch");
}

/// A sync-over-async service under Poisson traffic: the draft reads the
/// arrivals as a Poisson stream, so the advice is weighed over new
/// arrivals each run, bursts included (with the recorded arrivals spread
/// evenly it advised MinThreads 4, with which the real pool spirals).
#[test]
fn sync_over_async_service() {
    closed_loop("service");
}

/// A timer whose callback queues blocking calls: the starved recording ran
/// the callbacks late, so the calls were queued late. The draft reads the
/// timer (`from = "timer"`, its period an upper bound), so the advice's
/// makespan is the fixed program's, not the starved queueing's (with the
/// recorded queueing instants replayed it predicted 9.0 s where the
/// re-runs took 4.3 s).
#[test]
fn timer_driven_bursts() {
    closed_loop("ticker");
}

/// The ticker's draft: one timer group, 6 calls a firing, 8 firings, a
/// period a little above the program's 500 ms (the bound the late
/// callbacks allow), and nothing the timer thread queued left as a phase.
#[test]
fn the_ticker_draft_reads_its_timer() {
    let (text, s) = drafted("ticker");
    let timers: Vec<_> = s
        .groups
        .iter()
        .filter(|g| matches!(g.from, poolsim::scenario::Origin::Timer { .. }))
        .collect();
    assert_eq!(timers.len(), 1, "{text}");
    let t = timers[0];
    assert_eq!(t.from, poolsim::scenario::Origin::Timer { per_tick: 6 });
    assert_eq!(t.count, 48);
    match t.arrival {
        poolsim::scenario::Arrival::Every { every, .. } => {
            let ms = every.as_ms_f64();
            assert!((500.0..=520.0).contains(&ms), "period {ms} ms");
        }
        ref other => panic!("{other:?}"),
    }
    // The program queued nothing but the timer's calls.
    assert_eq!(s.groups.len(), 1, "{text}");
}

/// A gateway fanning out to 4 blocking backend calls per request and
/// blocking on `Task.WhenAll(calls).Wait()` (`examples/apps/fanout.cs`), a
/// program written after the draft's rules. The draft reads the fan-out
/// (`crates/real/src/nettrace/fanout.rs`) and its replay matches the
/// recording (54.3 s, 229 threads). The advice sits above a cliff: a late
/// send during the program's start-up puts two requests close together,
/// and that tips a pool near its edge. Its lateness differs run to run
/// (9 to 19 ms of the 20 ms period, measured), so the draft draws each
/// start-up send anew each run (`late_ms`), and advise says MinThreads 30
/// (29: 94 of 100 runs). The 10 re-runs with it all held. (Before, with
/// the recorded start-up replayed as it was, the advice was 28 and 5 of
/// 10 re-runs collapsed, as 7 of 18 runs with 28 did in all.)
#[test]
fn fan_out_gateway() {
    let (reruns, misses) = check_loop("fanout");
    assert_eq!(reruns, 10);
    assert!(misses.is_empty(), "{misses:#?}");
}

/// The gateway's draft: every request fans out to 4 calls of one blocking
/// wait, the calls are their own group queued by the step, and the timer
/// completions the waits waited for are left out.
#[test]
fn the_fanout_draft_reads_its_calls() {
    let (text, s) = drafted("fanout");
    // The requests: the first four (the program's start-up sent them off
    // its 20 ms grid: 15.3, 19.7, 32.5 and 7.6 ms apart), the first at its
    // instant, the others on the grid the steady stream keeps (20 ms back
    // from its first, at 75.0 ms) and late by up to a period each run;
    // then the steady stream; then the calls.
    assert_eq!(s.groups.len(), 6, "{text}");
    let (requests, calls) = s.groups.split_at(5);
    let at: Vec<f64> = requests[..4]
        .iter()
        .map(|g| match g.arrival {
            poolsim::scenario::Arrival::At(t) => t.as_ms_f64(),
            ref other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(at, [0.0, 15.024, 35.023, 55.023], "{text}");
    let late: Vec<f64> = requests[..4].iter().map(|g| g.late.as_ms_f64()).collect();
    assert_eq!(late, [0.0, 20.0, 20.0, 20.0], "{text}");
    assert_eq!(requests[4].late, poolsim::time::SimDuration::ZERO);
    assert!(requests[..4].iter().all(|g| g.count == 1));
    assert_eq!(requests[4].count, 196);
    for g in requests {
        assert_eq!(
            g.body,
            [poolsim::scenario::Step::FanOut { group: 5 }],
            "{text}"
        );
    }
    let calls = &calls[0];
    assert_eq!(calls.count, 800);
    assert_eq!(
        calls.from,
        poolsim::scenario::Origin::FanOut { per_call: 4 }
    );
    let ms = call_wait_ms(calls);
    assert!((100.0..=103.0).contains(&ms), "call {ms} ms");
}

/// A drafted calls group's body: one blocking wait, its length (ms).
fn call_wait_ms(calls: &poolsim::scenario::Group) -> f64 {
    match calls.body[..] {
        [poolsim::scenario::Step::Wait(d)] => d.as_ms_f64(),
        ref other => panic!("a call's body is one wait: {other:?}"),
    }
}

/// advise's JSON on a trace of `app`'s fixtures.
fn advised(app: &str, trace: &str) -> serde_json::Value {
    let out = poolsim(&[
        "advise",
        fixture(app).join(trace).to_str().unwrap(),
        "--runs",
        ADVISE_RUNS,
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{app}: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A healthy run of the gateway (MinThreads 28, one of the eight recorded
/// on 2026-12-07 that held; `healthy-28.txt` is its output): the fan-out is
/// read from the program's requests alone. The runtime's timer queues,
/// queued by the timer thread, queue their timers' callbacks, which end
/// before the queue's item when the pool keeps up; read as fan-outs, they
/// made 87 more "requests" and 0.01 ms "calls", and the replay held 7
/// threads where the program had 34.
#[test]
fn a_healthy_fanout_trace_drafts_the_gateway_and_replays_it() {
    let (text, s) = drafted_from("fanout", "healthy-28.nettrace");
    let (requests, calls) = s.groups.split_at(s.groups.len() - 1);
    let calls = &calls[0];
    assert_eq!(calls.count, 800, "{text}");
    assert_eq!(
        calls.from,
        poolsim::scenario::Origin::FanOut { per_call: 4 }
    );
    let ms = call_wait_ms(calls);
    assert!((95.0..=100.0).contains(&ms), "call {ms} ms");
    assert_eq!(requests.iter().map(|g| g.count).sum::<u64>(), 200);
    let call_group = (s.groups.len() - 1) as u32;
    for g in requests {
        assert_eq!(
            g.body,
            [poolsim::scenario::Step::FanOut { group: call_group }],
            "{text}"
        );
    }
    let v = advised("fanout", "healthy-28.nettrace");
    assert_eq!(v["confirmed"], true, "{}", v["replay_check"]);
}

/// A run of the gateway with MinThreads 28 that collapsed (2 of the 8
/// recorded; `collapsed-28.txt`: 43.8 s, 213 threads). In this run a late
/// send put requests 2 and 3 7.6 ms apart and their calls started 5-8 ms
/// after they were queued, so seven requests overlapped at 210 ms and the
/// timers due then waited for a thread. The draft draws its two late
/// sends anew each run (`late_ms`), and the replay (the first seed's draw)
/// collapses too, with 209 threads: 4 from the recording, outside the
/// check's 2, so advise still says its advice is unconfirmed. A known
/// miss: over 100 runs the model holds with 28 in 97 (`as it is`), where
/// the real program held in 11 of 18 runs with 28; the real pool's edge
/// sits a thread or two above the model's.
#[test]
fn a_fanout_run_that_collapsed_with_28_is_a_known_miss_advise_flags() {
    let v = advised("fanout", "collapsed-28.nettrace");
    assert_eq!(v["confirmed"], false);
    let peak = v["replay_check"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["what"] == "peak threads")
        .unwrap();
    assert_eq!(peak["recorded"], 213.0);
    assert_eq!(peak["replayed"], 209.0, "{peak}");
    assert_eq!(v["advice"]["as_is"]["met"], 97, "{}", v["advice"]["as_is"]);
}
