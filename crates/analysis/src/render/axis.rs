//! Axis ticks and labels: time axes in round steps (1, 2, 5 × 10ⁿ), in ms
//! for short runs and in seconds for runs of two seconds or more; integer
//! axes (thread and queue counts) from 0 with four to six ticks.

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

/// An integer axis from 0: a round top and the ticks up to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct IntTicks {
    /// The top of the axis, a multiple of `step`, at least the maximum.
    pub top: u64,
    pub step: u64,
    /// 0, step, 2 × step, …, top.
    pub at: Vec<u64>,
}

/// Ticks for an integer axis from 0 to at least `max`: the finest step of
/// 1, 2, 5 × 10ⁿ (or 25 × 10ⁿ) leaving at most five intervals, so at least
/// four ticks once `max` is 3 or more (0, 1, 2 for 2; 0, 1 for 0 and 1).
pub(crate) fn int_ticks(max: u64) -> IntTicks {
    let max = max.max(1);
    let mut step = u64::MAX;
    let mut mag = 1u64;
    'search: loop {
        for m in [1, 2, 5, 10, 20, 25, 50] {
            let Some(s) = mag.checked_mul(m) else {
                break 'search;
            };
            if max.div_ceil(s) <= 5 {
                step = s;
                break 'search;
            }
        }
        match mag.checked_mul(100) {
            Some(next) => mag = next,
            None => break,
        }
    }
    let top = max.div_ceil(step).saturating_mul(step);
    let at = (0..=top / step).map(|k| k * step).collect();
    IntTicks { top, step, at }
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

/// `1234567` as "1,234,567" (chart titles, the headline, the HTML page).
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// An instant in ms for messages and titles: "1500 ms", "0.25 ms".
pub(crate) fn format_ms(t: SimTime) -> String {
    format!("{} ms", trim_decimals(t.as_ms_f64(), 3))
}

/// `v` with at most `decimals` decimals, without trailing zeros.
pub(crate) fn trim_decimals(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
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
    fn durations() {
        assert_eq!(format_duration(SimDuration::from_ms(4210)), "4.21 s");
        assert_eq!(format_duration(SimDuration::from_ms(850)), "850 ms");
    }

    #[test]
    fn integer_axes_get_four_or_more_ticks_when_the_range_allows() {
        let at = |max| int_ticks(max).at;
        assert_eq!(at(0), [0, 1]);
        assert_eq!(at(1), [0, 1]);
        assert_eq!(at(2), [0, 1, 2]);
        assert_eq!(at(4), [0, 1, 2, 3, 4]);
        assert_eq!(at(8), [0, 2, 4, 6, 8]);
        assert_eq!(at(11), [0, 5, 10, 15]);
        assert_eq!(at(101), [0, 25, 50, 75, 100, 125]);
        for max in (3..5000).chain([u64::from(u32::MAX), 1 << 40]) {
            let t = int_ticks(max);
            assert!(t.top >= max, "{max}: top {}", t.top);
            assert!((4..=6).contains(&t.at.len()), "{max}: {:?}", t.at);
            assert_eq!(t.at.last(), Some(&t.top));
            assert!(t.at.windows(2).all(|w| w[1] - w[0] == t.step));
        }
    }
}
