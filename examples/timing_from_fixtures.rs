//! Measures, from the recorded real runs, how late a `Thread.Sleep` returns,
//! how far the gate (monitor) thread's ticks drift, and how long a new
//! pool thread takes to start, per runtime: the constants of the Linux
//! policies' `sleep_overshoot_us` and `drift_ms`.
//!
//! ```sh
//! cargo run --release --example timing_from_fixtures            # mono, net8, coreclr3
//! cargo run --release --example timing_from_fixtures -- net8
//! ```
//!
//! Sources: `tests/fixtures/generated/RUNTIME/` (40 scenarios x 5 runs,
//! tiered compilation on) and `tests/fixtures/validation/STEM/RUNTIME-K.txt`
//! (the hand-written suite), all recorded on one 2-core Linux machine.
//! Each recording gives every item's `queued`, `started` and `finished`
//! times (µs) and the thread index it started on.
//!
//! - **Sleep overshoot**: every item whose body is a single `sleep_ms = x`
//!   step gives `finished − started − x` (the item starts its sleep when
//!   it starts; the harness stamps the finish right after `Thread.Sleep`
//!   returns). Printed as 11 quantiles at equally spaced probabilities from
//!   p1 to p99 (the top percent mixes in the CPU contention the engine
//!   models itself).
//! - **Gate drift**: a thread the gate injects starts its first item right
//!   after a tick. Two consecutive new threads whose first items start
//!   within 8 ms of `k × 500 ms` apart (k = 1..3), the second's item queued
//!   before the first's started (so it waited for a thread: an injection,
//!   not demand), give a per-tick drift of `(gap − k × 500 ms) / k`.
//!   Printed as 11 quantiles from p10 to p90 (the tails mix in the two
//!   threads' start latencies and the odd pair that was not two injections),
//!   negative values read as 0.
//! - **Timer end offset** (reported): every item whose body is a single
//!   `wait_ms = x` or `await_ms = x` gives `finished − started − x`: the
//!   timer's lateness plus its callback's (or continuation's) wait for a pool
//!   thread. On CoreCLR (3.1 and 8) some end up to ~3 ms *early*: the timer
//!   queue keeps due times on `TickCount64`, the 4 ms coarse clock
//!   (`[timers] tick_count_ms`); Mono's never do.
//! - **Thread start latency** (reported, not modelled as a distribution):
//!   in runs whose first two items were queued before either started, the
//!   gap between the first items of the first two distinct threads. On the
//!   portable pool (.NET 8: one outstanding request, renewed by the thread
//!   that dequeues) that is one thread creation; on the others the second
//!   thread may already exist, so the figure mixes creation and wake-up.
//! - **Wake-up preemption** (`wake_preempt_us`), from two calibration
//!   workloads (not validation sets), recorded in
//!   `tests/fixtures/calibration/STEM/`: on one core, three waiters block
//!   in `Task.Delay(d).Wait()` (groups `wait-D`) and then compute 30 ms,
//!   while the pool works through a backlog of 50 ms sleeps. The wait is
//!   the gap on a sleeps' thread between an item's end and its next item
//!   (queued before that end) at the release.
//!   - `wake-preempt.toml`: the waiters are pool items and one pool thread
//!     works through the sleeps, so it fires each timer within one sleep
//!     after it is due: the largest such gap within 60 ms after the due
//!     time. Only runs whose sleeps (to the last release) ran on that one
//!     thread count: on .NET 8 cooperative blocking, and on Mono its own
//!     injection, add threads, so only .NET Core 3.1's runs qualify.
//!   - `wake-preempt-dedicated.toml`: the waiters are threads of their own;
//!     the release is dated from the waiter's end less its 30 ms of CPU at
//!     the runtime's median CPU rate, and the gap is the one that opens
//!     nearest before it (within 3 ms before to 1.5 ms after).
//!
//!   Printed as 11 quantiles from p0 to p100 of every release (a release the
//!   scheduler did not preempt gives a few µs).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use poolsim::measure::measured;
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::load::load_scenario;
use poolsim::scenario::{Scenario, Step};
use poolsim::trace::Trace;

/// The median CPU rate of `runtime`'s model (ms a `cpu_ms` step of 1000 ms
/// takes: the middle of its `cpu_second_ms` quantiles), to date a release
/// from the end of the released thread's 30 ms of CPU.
fn cpu_second_median(runtime: &str) -> f64 {
    let Ok(policy) = resolve_policy(runtime) else {
        return 1000.0;
    };
    let q = policy.threads.cpu_second.quantiles();
    q[q.len() / 2].as_nanos() as f64 / 1e6
}

/// Every release's wait for the core in the two wake-up preemption
/// calibrations of `runtime` (µs; see the module head).
fn wake_preemptions(root: &Path, runtime: &str) -> Vec<f64> {
    let mut out = Vec::new();
    for (stem, dedicated) in [("wake-preempt", false), ("wake-preempt-dedicated", true)] {
        let toml = root.join(format!("scenarios/calibration/{stem}.toml"));
        let dir = root.join(format!("tests/fixtures/calibration/{stem}"));
        let Some((scenario, traces)) = recordings(&toml, &dir, runtime) else {
            continue;
        };
        let groups: Vec<String> = scenario.groups.iter().map(|g| g.name.clone()).collect();
        for trace in traces {
            out.extend(releases(&trace.items, &groups, dedicated, runtime));
        }
    }
    out
}

/// `toml`'s scenario and the runs of `runtime` recorded in `dir`
/// (`RUNTIME-K.txt`), parsed.
fn recordings(toml: &Path, dir: &Path, runtime: &str) -> Option<(Scenario, Vec<Trace>)> {
    let scenario = load_scenario(toml).ok()?;
    let groups: Vec<String> = scenario.groups.iter().map(|g| g.name.clone()).collect();
    let traces = sorted_files(dir, "txt")
        .into_iter()
        .filter(|file| {
            let name = file.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with(&format!("{runtime}-"))
        })
        .filter_map(|file| {
            let text = std::fs::read_to_string(&file).ok()?;
            let m = measured::parse(&text, &groups, &scenario.name, runtime, 0, 2).ok()?;
            Some(m.trace)
        })
        .collect();
    Some((scenario, traces))
}

/// The waits of one calibration run's releases (µs).
fn releases(
    items: &[poolsim::trace::ItemRecord],
    groups: &[String],
    dedicated: bool,
    runtime: &str,
) -> Vec<f64> {
    let us = |t: poolsim::time::SimTime| t.as_nanos() as f64 / 1000.0;
    // (end of an item, gap to the thread's next item) on the sleeps' threads.
    let mut sleeps: Vec<_> = items
        .iter()
        .filter(|i| groups[i.group as usize] == "sleeps")
        .collect();
    sleeps.sort_by_key(|i| (i.thread, i.started));
    let gaps: Vec<(f64, f64)> = sleeps
        .windows(2)
        .filter(|w| w[0].thread == w[1].thread && w[1].queued < w[0].finished)
        .map(|w| (us(w[0].finished), us(w[1].started) - us(w[0].finished)))
        .collect();
    let waiters: Vec<(f64, f64, f64)> = items
        .iter()
        .filter_map(|i| {
            let d: f64 = groups[i.group as usize]
                .strip_prefix("wait-")?
                .parse()
                .ok()?;
            Some((us(i.started), d * 1000.0, us(i.finished)))
        })
        .collect();
    let mut out = Vec::new();
    if dedicated {
        // The release is dated from the end of the released thread's
        // 30 ms of CPU; the releasing thread's sleep ended just before it.
        let cpu = 30.0 * cpu_second_median(runtime);
        for &(_, _, finished) in &waiters {
            let released = finished - cpu;
            let nearest = gaps
                .iter()
                .filter(|(end, _)| (released - 3000.0..=released + 1500.0).contains(end))
                .min_by(|a, b| (a.0 - released).abs().total_cmp(&(b.0 - released).abs()));
            out.extend(nearest.map(|&(_, gap)| gap));
        }
    } else {
        // One thread works through the sleeps, so it releases every waiter
        // within one sleep after the delay is due: the largest gap there.
        // The reading needs that one thread: runs whose sleeps before the
        // last release ran on more threads (the pool added some) tell nothing.
        let last_due = waiters.iter().map(|w| w.0 + w.1).fold(0.0, f64::max);
        let threads: std::collections::HashSet<u32> = sleeps
            .iter()
            .filter(|i| us(i.started) <= last_due + 60_000.0)
            .map(|i| i.thread)
            .collect();
        if threads.len() != 1 {
            return out;
        }
        for &(started, d, _) in &waiters {
            let due = started + d;
            let wait = gaps
                .iter()
                .filter(|(end, _)| (due..=due + 60_000.0).contains(end))
                .map(|&(_, gap)| gap)
                .fold(None, |m: Option<f64>, g| Some(m.map_or(g, |m| m.max(g))));
            out.extend(wait);
        }
    }
    out
}

/// The gate period of every Linux runtime measured here.
const PERIOD_US: f64 = 500_000.0;

struct Item {
    group: u32,
    thread: u32,
    queued_us: f64,
    started_us: f64,
    finished_us: f64,
}

/// Every recorded run of `runtime` with its scenario.
fn runs(root: &Path, runtime: &str) -> Vec<(Scenario, Vec<Item>)> {
    let mut sets: Vec<(PathBuf, PathBuf)> = Vec::new();
    let generated = root.join("tests/fixtures/generated").join(runtime);
    for toml in sorted_files(&generated, "toml") {
        let stem = toml.file_stem().unwrap_or_default().to_owned();
        sets.push((toml, generated.join(stem)));
    }
    for toml in sorted_files(&root.join("scenarios/validation"), "toml") {
        let stem = toml.file_stem().unwrap_or_default().to_owned();
        sets.push((toml, root.join("tests/fixtures/validation").join(stem)));
    }
    let mut out = Vec::new();
    for (toml, dir) in sets {
        let Some((scenario, traces)) = recordings(&toml, &dir, runtime) else {
            continue;
        };
        for trace in traces {
            let us = |t: poolsim::time::SimTime| t.as_nanos() as f64 / 1000.0;
            let items = trace
                .items
                .iter()
                .map(|i| Item {
                    group: i.group,
                    thread: i.thread,
                    queued_us: us(i.queued),
                    started_us: us(i.started),
                    finished_us: us(i.finished),
                })
                .collect();
            out.push((scenario.clone(), items));
        }
    }
    out
}

fn sorted_files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == ext))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The quantile at `p` of sorted `v`, interpolated linearly.
fn quantile(v: &[f64], p: f64) -> f64 {
    let r = p * (v.len() - 1) as f64;
    let i = r.floor() as usize;
    if i + 1 >= v.len() {
        return v[v.len() - 1];
    }
    v[i] + (v[i + 1] - v[i]) * (r - i as f64)
}

/// 11 quantiles equally spaced from `lo` to `hi`.
fn quantiles(mut v: Vec<f64>, lo: f64, hi: f64) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    (0..11)
        .map(|k| quantile(&v, lo + (hi - lo) * k as f64 / 10.0))
        .collect()
}

fn list(v: &[f64], digits: usize) -> String {
    let parts: Vec<String> = v
        .iter()
        .map(|x| format!("{:.*}", digits, x.max(0.0)))
        .collect();
    format!("[{}]", parts.join(", "))
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let wanted: Vec<String> = std::env::args().skip(1).collect();
    let runtimes: Vec<&str> = ["mono", "net8", "coreclr3"]
        .into_iter()
        .filter(|r| wanted.is_empty() || wanted.iter().any(|w| w == r))
        .collect();
    for runtime in runtimes {
        let mut sleeps = Vec::new();
        let mut drifts = Vec::new();
        let mut starts = Vec::new();
        let mut timers = Vec::new();
        let recorded = runs(root, runtime);
        for (scenario, items) in &recorded {
            for i in items {
                match scenario.groups[i.group as usize].body[..] {
                    [Step::Sleep(d)] => {
                        let x = d.as_nanos() as f64 / 1000.0;
                        sleeps.push(i.finished_us - i.started_us - x);
                    }
                    [Step::Wait(d)] | [Step::Await(d)] => {
                        let x = d.as_nanos() as f64 / 1000.0;
                        timers.push(i.finished_us - i.started_us - x);
                    }
                    _ => {}
                }
            }
            let mut by_start: Vec<&Item> = items.iter().collect();
            by_start.sort_by(|a, b| a.started_us.total_cmp(&b.started_us));
            let mut seen = HashSet::new();
            let firsts: Vec<&Item> = by_start
                .iter()
                .copied()
                .filter(|i| seen.insert(i.thread))
                .collect();
            for pair in firsts.windows(2) {
                let (a, b) = (pair[0], pair[1]);
                let gap = b.started_us - a.started_us;
                let k = (gap / PERIOD_US).round();
                if (1.0..=3.0).contains(&k)
                    && (gap - k * PERIOD_US).abs() < 8_000.0
                    && b.queued_us < a.started_us
                {
                    drifts.push((gap - k * PERIOD_US) / k / 1000.0);
                }
            }
            if let [a, b, ..] = by_start[..]
                && b.queued_us <= a.started_us
                && let [t1, t2, ..] = firsts[..]
            {
                starts.push(t2.started_us - t1.started_us);
            }
        }
        println!("== {runtime}: {} recorded runs", recorded.len());
        if !sleeps.is_empty() {
            println!(
                "sleep overshoot, {} sleeps, us, p1..p99: sleep_overshoot_us = {}",
                sleeps.len(),
                list(&quantiles(sleeps.clone(), 0.01, 0.99), 0)
            );
            let q = quantiles(sleeps, 0.0, 1.0);
            println!(
                "  min {:.0}  p50 {:.0}  max {:.0} us",
                q[0],
                quantile(&q, 0.5),
                q[10]
            );
        }
        if !drifts.is_empty() {
            println!(
                "gate drift per tick, {} gaps, ms, p10..p90: drift_ms = {}",
                drifts.len(),
                list(&quantiles(drifts, 0.10, 0.90), 2)
            );
        }
        if !timers.is_empty() {
            let n = timers.len();
            let q = quantiles(timers, 0.0, 1.0);
            println!(
                "timer end offset (single wait/await items), {n} items, ms: min {:.2}, p10 {:.2}, p50 {:.2}, p90 {:.2}",
                q[0] / 1000.0,
                q[1] / 1000.0,
                q[5] / 1000.0,
                q[9] / 1000.0
            );
        }
        let preempted = wake_preemptions(root, runtime);
        if !preempted.is_empty() {
            let n = preempted.len();
            let big = preempted.iter().filter(|&&g| g > 1000.0).count();
            println!(
                "wake-up preemption, {n} releases ({big} over 1 ms), us, p0..p100: wake_preempt_us = {}",
                list(&quantiles(preempted, 0.0, 1.0), 0)
            );
        }
        if !starts.is_empty() {
            let n = starts.len();
            let q = quantiles(starts, 0.0, 1.0);
            println!(
                "second thread's first start after the first's, {n} runs, us: min {:.0}, p10 {:.0}, p50 {:.0}, p90 {:.0}, max {:.0}",
                q[0], q[1], q[5], q[9], q[10]
            );
        }
    }
}
