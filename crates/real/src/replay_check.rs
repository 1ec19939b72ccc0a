//! Is a replay of a trace's drafted scenario the app the trace recorded?
//!
//! Advice drafted from a trace rests on the draft: before any advice,
//! `advise` replays the draft and compares it with the recording on one
//! time axis (both from the first item queued to the last item finished,
//! as [`crate::metrics::Summary`] measures a run): the peak of pool
//! threads, the span (where the phases end), and the items' latency
//! quantiles when items were recorded. A comparison outside its tolerance
//! marks the advice unconfirmed, and says where.

use serde::Serialize;

use crate::metrics::Summary;

/// Peak threads: the replay within this many threads of the recording.
pub const PEAK_THREADS_WITHIN: f64 = 2.0;
/// The span (last item's end): within this share of the recording's.
pub const SPAN_WITHIN: f64 = 0.10;
/// Latency quantiles: within this share of the recording's, or within
/// [`LATENCY_FLOOR_MS`] of it, whichever is wider.
pub const LATENCY_WITHIN: f64 = 0.25;
/// Below this latency differences are noise of the recording itself (ms).
pub const LATENCY_FLOOR_MS: f64 = 5.0;

/// One comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Check {
    pub what: &'static str,
    pub recorded: f64,
    pub replayed: f64,
    /// The tolerance in words.
    pub within: String,
    pub ok: bool,
}

/// Compares a replay's summary with the recording's.
pub fn compare(recorded: &Summary, replayed: &Summary) -> Vec<Check> {
    let mut out = Vec::new();
    let (r, p) = (recorded.threads_peak as f64, replayed.threads_peak as f64);
    out.push(Check {
        what: "peak threads",
        recorded: r,
        replayed: p,
        within: format!("± {PEAK_THREADS_WITHIN:.0}"),
        ok: (r - p).abs() <= PEAK_THREADS_WITHIN,
    });
    let (r, p) = (recorded.makespan_ms, replayed.makespan_ms);
    out.push(Check {
        what: "span (ms)",
        recorded: r,
        replayed: p,
        within: format!("± {:.0} %", SPAN_WITHIN * 100.0),
        ok: (r - p).abs() <= SPAN_WITHIN * r.abs(),
    });
    if recorded.finished > 0 && replayed.finished > 0 {
        for (what, r, p) in [
            (
                "latency p50 (ms)",
                recorded.latency_ms.p50,
                replayed.latency_ms.p50,
            ),
            (
                "latency p99 (ms)",
                recorded.latency_ms.p99,
                replayed.latency_ms.p99,
            ),
        ] {
            let tol = (LATENCY_WITHIN * r.abs()).max(LATENCY_FLOOR_MS);
            out.push(Check {
                what,
                recorded: r,
                replayed: p,
                within: format!(
                    "± {:.0} % or {LATENCY_FLOOR_MS:.0} ms",
                    LATENCY_WITHIN * 100.0
                ),
                ok: (r - p).abs() <= tol,
            });
        }
    }
    out
}

/// The checks as `advise` prints them.
pub fn text(checks: &[Check]) -> String {
    let mut out =
        String::from("replay check  the drafted scenario replayed against the recording\n");
    for c in checks {
        out.push_str(&format!(
            "  {:<18} recorded {:>10}   replayed {:>10}   {:<16} {}\n",
            c.what,
            fmt(c.recorded),
            fmt(c.replayed),
            c.within,
            if c.ok { "ok" } else { "MISS" }
        ));
    }
    out
}

fn fmt(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e9 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Percentiles;

    fn summary(peak: u32, span: f64, p99: f64) -> Summary {
        let mut s = crate::metrics::summarize(&crate::trace::Trace {
            scenario: String::new(),
            policy: String::new(),
            seed: 0,
            cores: 1,
            groups: vec![],
            call_groups: Vec::new(),
            items: vec![],
            threads: vec![],
            probes: vec![],
            counts: vec![],
            cpu_busy_ns: None,
            end: crate::time::SimTime::ZERO,
        });
        s.threads_peak = peak;
        s.makespan_ms = span;
        s.finished = 10;
        s.latency_ms = Percentiles::of(vec![p99 / 2.0, p99]);
        s
    }

    #[test]
    fn each_check_holds_inside_its_tolerance_and_misses_outside() {
        let rec = summary(18, 10_000.0, 400.0);
        let near = compare(&rec, &summary(20, 10_900.0, 380.0));
        assert!(near.iter().all(|c| c.ok), "{near:?}");
        let far = compare(&rec, &summary(4, 12_000.0, 100.0));
        let missed: Vec<&str> = far.iter().filter(|c| !c.ok).map(|c| c.what).collect();
        assert!(missed.contains(&"peak threads"), "{far:?}");
        assert!(missed.contains(&"span (ms)"), "{far:?}");
        assert!(missed.contains(&"latency p99 (ms)"), "{far:?}");
    }
}
