//! Time-axis ticks and labels: round steps (1, 2, 5 × 10ⁿ), in ms for short
//! runs and in seconds for runs of two seconds or more.

use crate::time::{NANOS_PER_MS, SimDuration, SimTime};

/// Ticks for a time axis.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TimeTicks {
    /// Tick instants in nanoseconds, within the range.
    pub at: Vec<u64>,
    pub labels: Vec<String>,
    /// "ms" or "s".
    pub unit: &'static str,
}

/// About `target` ticks over `[t0, t1]`.
pub(crate) fn time_ticks(t0: SimTime, t1: SimTime, target: usize) -> TimeTicks {
    let span_ns = t1.since(t0).as_nanos().max(1) as f64;
    let span_ms = span_ns / NANOS_PER_MS as f64;
    let seconds = span_ms >= 2000.0;
    let step_ms = nice_step(span_ms / target.max(1) as f64);
    let step_ns = (step_ms * NANOS_PER_MS as f64).max(1.0);
    let (unit, scale_ms) = if seconds { ("s", 1000.0) } else { ("ms", 1.0) };
    let step_unit = step_ms / scale_ms;
    let decimals = if step_unit >= 1.0 {
        0
    } else {
        (-step_unit.log10().floor()) as usize
    };
    let first = (t0.as_nanos() as f64 / step_ns).ceil() as u64;
    let mut at = Vec::new();
    let mut labels = Vec::new();
    let mut k = first;
    loop {
        let ns = (k as f64 * step_ns).round() as u64;
        if ns > t1.as_nanos() {
            break;
        }
        at.push(ns);
        let value = ns as f64 / NANOS_PER_MS as f64 / scale_ms;
        labels.push(format!("{value:.decimals$}"));
        k += 1;
        if at.len() > 1000 {
            break;
        }
    }
    TimeTicks { at, labels, unit }
}

/// The smallest of 1, 2, 5 × 10ⁿ at least `raw`.
pub(crate) fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * mag >= raw * (1.0 - 1e-9) {
            return m * mag;
        }
    }
    10.0 * mag
}

/// A round upper bound for a count axis (at least 1): a multiple of a
/// 1, 2 or 5 × 10ⁿ step about an eighth of it.
pub(crate) fn nice_ceiling(max: f64) -> f64 {
    if max <= 1.0 {
        return 1.0;
    }
    let step = nice_step(max / 8.0).max(1.0);
    (max / step).ceil() * step
}

/// A duration for titles: "850 ms", "4.21 s", "12 µs".
pub(crate) fn format_duration(d: SimDuration) -> String {
    let ms = d.as_ms_f64();
    if ms >= 1000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else if ms >= 10.0 {
        format!("{ms:.0} ms")
    } else if ms >= 0.1 {
        format!("{ms:.2} ms")
    } else {
        format!("{:.0} µs", ms * 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_in_seconds_for_long_runs() {
        let t = time_ticks(SimTime::ZERO, SimTime::from_ms(7300), 8);
        assert_eq!(t.unit, "s");
        assert_eq!(t.labels[..3], ["0", "1", "2"]);
        let t = time_ticks(SimTime::ZERO, SimTime::from_ms(130), 8);
        assert_eq!(t.unit, "ms");
        assert_eq!(t.labels[1], "20");
        let t = time_ticks(SimTime::ZERO, SimTime::from_ms(3), 6);
        assert_eq!(t.labels[1], "0.5");
    }

    #[test]
    fn ceilings_and_durations() {
        assert_eq!(nice_ceiling(17.0), 20.0);
        assert_eq!(nice_ceiling(101.0), 120.0);
        assert_eq!(nice_ceiling(8.0), 8.0);
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(format_duration(SimDuration::from_ms(4210)), "4.21 s");
        assert_eq!(format_duration(SimDuration::from_ms(850)), "850 ms");
    }
}
