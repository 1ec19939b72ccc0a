//! Virtual time: integer nanoseconds.
//!
//! The engine never uses floating-point time: `SimTime` is an instant on the
//! simulated clock (nanoseconds since the run started) and `SimDuration` a span
//! between two instants. Conversions from milliseconds round to the nearest
//! nanosecond and happen once, when a scenario or policy file is validated.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// An instant on the simulated clock, in nanoseconds since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

/// A span of simulated time, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimDuration(pub u64);

pub const NANOS_PER_MS: u64 = 1_000_000;
pub const NANOS_PER_US: u64 = 1_000;
pub const NANOS_PER_S: u64 = 1_000_000_000;

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub fn from_ms(ms: u64) -> SimTime {
        SimTime(ms * NANOS_PER_MS)
    }
    pub fn as_nanos(self) -> u64 {
        self.0
    }
    /// Milliseconds as a float, for display and metrics only.
    pub fn as_ms_f64(self) -> f64 {
        self.0 as f64 / NANOS_PER_MS as f64
    }
    /// The span since an earlier instant, zero if `earlier` is later.
    pub fn since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }
}

impl SimDuration {
    pub const ZERO: SimDuration = SimDuration(0);

    pub const fn from_nanos(ns: u64) -> SimDuration {
        SimDuration(ns)
    }
    pub const fn from_us(us: u64) -> SimDuration {
        SimDuration(us * NANOS_PER_US)
    }
    pub const fn from_ms(ms: u64) -> SimDuration {
        SimDuration(ms * NANOS_PER_MS)
    }
    /// Converts a (validated, finite, non-negative) number of milliseconds,
    /// rounding to the nearest nanosecond. Returns `None` when the value is
    /// negative, not finite, or does not fit.
    pub fn try_from_ms_f64(ms: f64) -> Option<SimDuration> {
        if !ms.is_finite() || ms < 0.0 {
            return None;
        }
        let ns = (ms * NANOS_PER_MS as f64).round();
        if ns >= u64::MAX as f64 {
            return None;
        }
        Some(SimDuration(ns as u64))
    }
    pub fn as_nanos(self) -> u64 {
        self.0
    }
    /// Milliseconds as a float, for display and metrics only.
    pub fn as_ms_f64(self) -> f64 {
        self.0 as f64 / NANOS_PER_MS as f64
    }
    /// Seconds as a float, for display and the hill-climbing arithmetic
    /// (which the real pool does in floating point too).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NANOS_PER_S as f64
    }
    pub fn saturating_mul(self, k: u64) -> SimDuration {
        SimDuration(self.0.saturating_mul(k))
    }
    /// `self - other`, or zero when `other` is longer.
    pub fn saturating_sub(self, other: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_sub(other.0))
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    fn add(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
}

impl AddAssign<SimDuration> for SimTime {
    fn add_assign(&mut self, d: SimDuration) {
        self.0 = self.0.saturating_add(d.0);
    }
}

impl Sub<SimTime> for SimTime {
    type Output = SimDuration;
    fn sub(self, other: SimTime) -> SimDuration {
        self.since(other)
    }
}

impl Add for SimDuration {
    type Output = SimDuration;
    fn add(self, d: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_add(d.0))
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3} ms", self.as_ms_f64())
    }
}

impl fmt::Display for SimDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3} ms", self.as_ms_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ms_conversion_rounds_and_refuses_bad_values() {
        assert_eq!(
            SimDuration::try_from_ms_f64(1.5),
            Some(SimDuration(1_500_000))
        );
        assert_eq!(
            SimDuration::try_from_ms_f64(0.0000004),
            Some(SimDuration(0))
        );
        assert_eq!(SimDuration::try_from_ms_f64(-1.0), None);
        assert_eq!(SimDuration::try_from_ms_f64(f64::NAN), None);
        assert_eq!(SimDuration::try_from_ms_f64(1e300), None);
    }

    #[test]
    fn arithmetic_saturates_instead_of_wrapping() {
        assert_eq!(SimTime::MAX + SimDuration(5), SimTime::MAX);
        assert_eq!(SimTime(3) - SimTime(10), SimDuration::ZERO);
    }
}
