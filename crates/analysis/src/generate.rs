//! Workloads nobody chose: scenarios drawn from a fixed grammar of the
//! shapes real code has, for `poolsim validate --generate N --seed S`.
//!
//! A validation suite written by hand is written by someone who knows the
//! models; it drifts toward the cases they get right (durations that avoid
//! the gate's 500 ms ticks, settings that make runs repeatable). A generated
//! set cannot: the grammar below was fixed before any of its scenarios was
//! measured, and it is never edited to drop a case a model misses. The same
//! `(N, S)` gives the same scenarios for every runtime; only the `policy`
//! line names the runtime's model.
//!
//! The grammar (each choice drawn independently from the set's seed):
//! - **machine**: 1 or 2 cores (even odds);
//! - **pool**: the runtime's defaults (70 %) or `SetMinThreads(n)` with n
//!   in {4, 8, 16} (30 %);
//! - **items**: 4 to 60 in all; one group (75 %) or two (25 %, the second
//!   starting after a delay, or after the first ends);
//! - **submission**: `Task.Run` (60 %) or `ThreadPool.QueueUserWorkItem`
//!   (40 %), from the main thread;
//! - **arrivals**: all at once (40 %), staggered (30 %) or Poisson (30 %);
//!   the whole arrival span is at most 6 s (the interval is capped, the
//!   rate raised);
//! - **body**: 1 step (60 %), 2 (30 %) or 3 (10 %), each a sleep (30 %),
//!   a `Task.Delay().Wait()` (15 %), an `await Task.Delay` (15 %), a
//!   Stopwatch busy loop (15 %), calibrated CPU work (15 %) or an
//!   `await Task.Yield()` (10 %);
//! - **durations**: round (half the draws: a multiple of 100 ms up to 1 s
//!   or of 500 ms up to 2 s) or arbitrary (10 to 2000 ms); CPU and busy
//!   steps round ({20, 50, 100, 200, 500} ms) or arbitrary (5 to 500 ms),
//!   then scaled down (to a multiple of 10 ms, at least 5 ms) so that the
//!   group's CPU work is at most 2 s per core;
//! - **throttle**: none (70 %), `SemaphoreSlim(n)` (15 %) or a
//!   `ConcurrentExclusiveSchedulerPair` of n (15 %), n from 2 to 8.
//!
//! ```
//! use poolsim_analysis::generate::generate;
//! let set = generate(3, 42, "net8");
//! assert_eq!(set.len(), 3);
//! assert_eq!(set, generate(3, 42, "net8"));
//! let scenario = poolsim_analysis::scenario::load::parse_scenario(&set[0].toml, &set[0].file).unwrap();
//! assert!((4..=60).contains(&scenario.item_count()));
//! ```

use std::fmt::Write as _;

use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use crate::rng;

/// One generated scenario: its file name (`gen-S-K.toml`) and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generated {
    pub file: String,
    pub toml: String,
}

/// The most CPU work (cpu and busy steps) one group may carry, per core.
const CPU_BUDGET_MS_PER_CORE: u64 = 2000;
/// The longest arrival span of a group.
const ARRIVAL_SPAN_MS: u64 = 6000;

/// `n` scenarios drawn from the grammar with `seed`, each naming `policy`.
pub fn generate(n: usize, seed: u64, policy: &str) -> Vec<Generated> {
    (0..n)
        .map(|k| {
            let mut r = rng::stream(seed, &format!("generate/{k}"));
            Generated {
                file: format!("gen-{seed}-{:02}.toml", k + 1),
                toml: draw(&mut r, seed, k + 1, policy),
            }
        })
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Sleep,
    Wait,
    Await,
    Busy,
    Cpu,
    Yield,
}

/// One of `weighted`'s values, drawn by weight (both grammars draw with it).
pub(crate) fn pick<T: Copy>(r: &mut ChaCha8Rng, weighted: &[(u32, T)]) -> T {
    let total: u32 = weighted.iter().map(|w| w.0).sum();
    let mut x = r.random_range(0..total);
    for &(w, v) in weighted {
        if x < w {
            return v;
        }
        x -= w;
    }
    weighted[weighted.len() - 1].1
}

/// A blocking duration: round half the time, arbitrary otherwise.
fn blocking_ms(r: &mut ChaCha8Rng) -> u64 {
    if r.random_bool(0.5) {
        if r.random_bool(0.5) {
            100 * r.random_range(1..=10u64)
        } else {
            500 * r.random_range(1..=4u64)
        }
    } else {
        r.random_range(10..=2000u64)
    }
}

/// A CPU or busy-loop duration.
fn cpu_ms(r: &mut ChaCha8Rng) -> u64 {
    if r.random_bool(0.5) {
        [20, 50, 100, 200, 500][r.random_range(0..5usize)]
    } else {
        r.random_range(5..=500u64)
    }
}

struct Group {
    count: u64,
    submit: &'static str,
    arrival: String,
    body: Vec<(Kind, u64)>,
    throttle: Option<(&'static str, u32)>,
}

fn draw_group(r: &mut ChaCha8Rng, count: u64, cores: u64) -> Group {
    let submit = pick(r, &[(60, "task-run"), (40, "queue-user-work-item")]);
    let arrival = match pick(r, &[(40, 0u8), (30, 1), (30, 2)]) {
        0 => "{ at_ms = 0 }".to_string(),
        1 => {
            let every = if r.random_bool(0.5) {
                [50, 100, 200, 250, 500][r.random_range(0..5usize)]
            } else {
                r.random_range(10..=300u64)
            };
            let cap = (ARRIVAL_SPAN_MS / count).max(1);
            format!("{{ every_ms = {} }}", every.min(cap))
        }
        _ => {
            let rate = r.random_range(2..=50u64);
            let floor = count.div_ceil(ARRIVAL_SPAN_MS / 1000);
            format!("{{ poisson_per_s = {} }}", rate.max(floor))
        }
    };
    let steps = pick(r, &[(60, 1usize), (30, 2), (10, 3)]);
    let mut body: Vec<(Kind, u64)> = (0..steps)
        .map(|_| {
            let kind = pick(
                r,
                &[
                    (30, Kind::Sleep),
                    (15, Kind::Wait),
                    (15, Kind::Await),
                    (15, Kind::Busy),
                    (15, Kind::Cpu),
                    (10, Kind::Yield),
                ],
            );
            let ms = match kind {
                Kind::Busy | Kind::Cpu => cpu_ms(r),
                Kind::Yield => 0,
                _ => blocking_ms(r),
            };
            (kind, ms)
        })
        .collect();
    let cpu_per_item: u64 = body
        .iter()
        .filter(|(k, _)| matches!(k, Kind::Busy | Kind::Cpu))
        .map(|s| s.1)
        .sum();
    let budget = CPU_BUDGET_MS_PER_CORE * cores;
    if cpu_per_item * count > budget {
        for (k, ms) in &mut body {
            if matches!(k, Kind::Busy | Kind::Cpu) {
                let scaled = *ms * budget / (cpu_per_item * count);
                *ms = (scaled / 10 * 10).max(5);
            }
        }
    }
    let throttle = match pick(r, &[(70, 0u8), (15, 1), (15, 2)]) {
        0 => None,
        1 => Some(("semaphore", r.random_range(2..=8u32))),
        _ => Some(("concurrent-exclusive", r.random_range(2..=8u32))),
    };
    Group {
        count,
        submit,
        arrival,
        body,
        throttle,
    }
}

fn step_toml(kind: Kind, ms: u64) -> String {
    match kind {
        Kind::Sleep => format!("{{ sleep_ms = {ms} }}"),
        Kind::Wait => format!("{{ wait_ms = {ms} }}"),
        Kind::Await => format!("{{ await_ms = {ms} }}"),
        Kind::Busy => format!("{{ busy_ms = {ms} }}"),
        Kind::Cpu => format!("{{ cpu_ms = {ms} }}"),
        Kind::Yield => "\"yield\"".to_string(),
    }
}

fn step_words(kind: Kind, ms: u64) -> String {
    match kind {
        Kind::Sleep => format!("sleep {ms}"),
        Kind::Wait => format!("wait {ms}"),
        Kind::Await => format!("await {ms}"),
        Kind::Busy => format!("busy {ms}"),
        Kind::Cpu => format!("cpu {ms}"),
        Kind::Yield => "yield".to_string(),
    }
}

fn draw(r: &mut ChaCha8Rng, seed: u64, k: usize, policy: &str) -> String {
    let cores: u64 = if r.random_bool(0.5) { 1 } else { 2 };
    let min_threads = if r.random_bool(0.3) {
        Some([4u32, 8, 16][r.random_range(0..3usize)])
    } else {
        None
    };
    let total: u64 = r.random_range(4..=60u64);
    let two = total >= 8 && r.random_bool(0.25);
    let counts = if two {
        let first = r.random_range(4..=total - 4);
        vec![first, total - first]
    } else {
        vec![total]
    };
    let groups: Vec<Group> = counts.iter().map(|&c| draw_group(r, c, cores)).collect();
    // The second group starts after a delay, or after the first ends.
    let second_start = if two {
        Some(if r.random_bool(0.5) {
            format!("{{ after = \"g1\", delay_ms = {} }}", blocking_ms(r))
        } else {
            format!("start_ms = {}", blocking_ms(r))
        })
    } else {
        None
    };
    let summary: Vec<String> = groups
        .iter()
        .map(|g| {
            let body: Vec<String> = g.body.iter().map(|&(k, ms)| step_words(k, ms)).collect();
            let submit = if g.submit == "task-run" {
                "Task.Run"
            } else {
                "QUWI"
            };
            let arrival = g
                .arrival
                .trim_start_matches('{')
                .trim_end_matches('}')
                .trim()
                .replace(" = ", " ");
            let throttle = match g.throttle {
                Some(("semaphore", n)) => format!(", SemaphoreSlim({n})"),
                Some((_, n)) => format!(", ConcurrentExclusive({n})"),
                None => String::new(),
            };
            format!(
                "{} x {submit} ({}) {arrival}{throttle}",
                g.count,
                body.join(", ")
            )
        })
        .collect();
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# Generated by `poolsim validate --generate` (set seed {seed}, scenario {k}) from the\n\
         # fixed grammar of src/generate.rs. Not chosen, not edited."
    );
    let _ = writeln!(
        t,
        "name = \"generated {seed}/{k}: {}, {cores} core{}\"",
        summary.join(" then "),
        if cores == 1 { "" } else { "s" }
    );
    let _ = writeln!(t, "seed = 1\n\n[machine]\ncores = {cores}\n\n[pool]");
    let _ = writeln!(t, "policy = \"{policy}\"");
    if let Some(m) = min_threads {
        let _ = writeln!(t, "min_threads = {m}");
    }
    for (j, g) in groups.iter().enumerate() {
        let _ = writeln!(t, "\n[[group]]\nname = \"g{}\"\ncount = {}", j + 1, g.count);
        let _ = writeln!(t, "submit = \"{}\"", g.submit);
        match (&second_start, j) {
            (Some(s), 1) if s.starts_with('{') => {
                let _ = writeln!(t, "arrival = {s}");
            }
            (Some(s), 1) if g.arrival.contains("at_ms") => {
                let _ = writeln!(t, "arrival = {{ {} }}", s.replace("start_ms", "at_ms"));
            }
            (Some(s), 1) => {
                // start_ms = N inside the group's own arrival table.
                let inner = g
                    .arrival
                    .trim_start_matches('{')
                    .trim_end_matches('}')
                    .trim();
                let _ = writeln!(t, "arrival = {{ {inner}, {s} }}");
            }
            _ => {
                let _ = writeln!(t, "arrival = {}", g.arrival);
            }
        }
        let body: Vec<String> = g.body.iter().map(|&(k, ms)| step_toml(k, ms)).collect();
        let _ = writeln!(t, "body = [ {} ]", body.join(", "));
        if let Some((kind, limit)) = g.throttle {
            let _ = writeln!(t, "throttle = {{ kind = \"{kind}\", limit = {limit} }}");
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load::parse_scenario;

    #[test]
    fn every_generated_scenario_loads_and_keeps_to_the_grammar() {
        for policy in ["coreclr3-linux", "net8", "mono"] {
            for g in generate(200, 7, policy) {
                let s = parse_scenario(&g.toml, &g.file)
                    .unwrap_or_else(|e| panic!("{}:\n{}\n{e}", g.file, g.toml));
                assert!((4..=60).contains(&s.item_count()), "{}", g.toml);
                assert!((1..=2).contains(&s.machine.cores));
                assert_eq!(s.pool.policy, policy);
            }
        }
    }

    #[test]
    fn the_set_depends_only_on_its_seed_and_not_on_the_runtime() {
        let a = generate(20, 3, "net8");
        let b = generate(20, 3, "mono");
        assert_eq!(a.len(), 20);
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.toml.replace("\"net8\"", "\"mono\""), y.toml);
        }
        assert_ne!(generate(20, 4, "net8"), a);
        // Scenario k does not depend on how many are drawn.
        assert_eq!(generate(5, 3, "net8")[..], a[..5]);
    }

    #[test]
    fn the_grammar_reaches_every_body_and_arrival() {
        let all: String = generate(200, 1, "net8")
            .into_iter()
            .map(|g| g.toml)
            .collect();
        for needle in [
            "sleep_ms = ",
            "wait_ms = ",
            "await_ms = ",
            "busy_ms = ",
            "cpu_ms = ",
            "\"yield\"",
            "at_ms = 0",
            "every_ms = ",
            "poisson_per_s = ",
            "kind = \"semaphore\"",
            "kind = \"concurrent-exclusive\"",
            "min_threads = ",
            "after = \"g1\"",
            "cores = 1",
            "cores = 2",
            "queue-user-work-item",
        ] {
            assert!(all.contains(needle), "{needle}");
        }
    }
}
