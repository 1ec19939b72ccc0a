//! Times the Gantt renderer on a synthetic run of 1,000,000 items on 64
//! threads (and a 600-thread run, banded), printing the median of 3 runs.
//!
//! ```text
//! cargo run --release --example render_bench
//! ```
//!
//! The trace is built directly (no simulation), so only rendering is timed.

use std::time::{Duration, Instant};

use poolsim::render::{ChartOptions, Timeline, render_png, render_svg};
use poolsim::time::SimTime;
use poolsim::trace::{CountSample, ItemRecord, ProbeRecord, ThreadReason, ThreadRecord, Trace};

/// `items` items spread over `threads` threads, back to back, each 0.2–1.8 ms
/// (a fixed linear congruential sequence, so every run is the same).
fn synthetic(items: u32, threads: u32) -> Trace {
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        rng = rng
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        rng >> 33
    };
    let mut clock = vec![0u64; threads as usize];
    let mut recs = Vec::with_capacity(items as usize);
    for item in 0..items {
        let thread = item % threads;
        let start = clock[thread as usize] + next() % 50_000;
        let dur = 200_000 + next() % 1_600_000;
        clock[thread as usize] = start + dur;
        recs.push(ItemRecord {
            item,
            group: item % 3,
            thread,
            queued: SimTime(0),
            started: SimTime(start),
            finished: SimTime(start + dur),
        });
    }
    let end = SimTime(clock.iter().copied().max().unwrap_or(0));
    Trace {
        scenario: "synthetic".into(),
        policy: "none".into(),
        seed: 0,
        cores: threads,
        groups: vec!["a".into(), "b".into(), "c".into()],
        call_groups: Vec::new(),
        items: recs,
        threads: (0..threads)
            .map(|t| ThreadRecord {
                thread: t,
                created: SimTime(u64::from(t) * 1_000_000),
                reason: if t < 8 {
                    ThreadReason::Demand
                } else {
                    ThreadReason::Starvation
                },
                exited: None,
            })
            .collect(),
        probes: (0..end.0 / 500_000_000)
            .map(|k| ProbeRecord {
                queued: SimTime(k * 500_000_000),
                started: SimTime(k * 500_000_000 + 3_000_000),
            })
            .collect(),
        counts: (0..threads)
            .map(|t| CountSample {
                at: SimTime(u64::from(t) * 1_000_000),
                threads: t + 1,
                goal: Some(t + 1),
            })
            .collect(),
        cpu_busy_ns: None,
        end,
    }
}

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

/// Runs `f` three times and prints the median time and `what` of the result.
fn time<T>(label: &str, mut f: impl FnMut() -> T, what: impl Fn(&T) -> String) {
    let mut runs = Vec::new();
    let mut about = String::new();
    for _ in 0..3 {
        let start = Instant::now();
        let out = f();
        runs.push(start.elapsed());
        about = what(&out);
    }
    println!(
        "{label}: median {:.3} s of 3 ({about})",
        median(runs).as_secs_f64()
    );
}

fn main() {
    let opts = ChartOptions::default();
    let trace = synthetic(1_000_000, 64);
    time(
        "timeline, 1,000,000 items",
        || Timeline::build(&trace, None),
        |t| format!("{} segments", t.segment_count()),
    );
    let timeline = vec![("1,000,000 items".to_string(), Timeline::build(&trace, None))];
    time(
        "PNG, 1,000,000 items, 64 threads",
        || render_png(&timeline, &opts).unwrap(),
        |png| format!("{} bytes", png.len()),
    );
    time(
        "SVG, 1,000,000 items, 64 threads",
        || render_svg(&timeline, &opts).unwrap(),
        |svg| format!("{} bytes", svg.len()),
    );
    let wide = vec![(
        "600 threads".to_string(),
        Timeline::build(&synthetic(1_000_000, 600), None),
    )];
    time(
        "PNG, 1,000,000 items, 600 threads",
        || render_png(&wide, &opts).unwrap(),
        |png| format!("{} bytes", png.len()),
    );
}
