//! The scenario file as written: serde structs mirroring the TOML.
//!
//! Stage one of loading. Every table refuses unknown keys
//! (`deny_unknown_fields`), every key is optional here (missing keys are
//! reported by [`crate::scenario::load`] with the table's position), and
//! every value keeps its byte span ([`Spanned`]) so that a later error can
//! point at it. Numbers are read as [`Number`] — integer or float, as written —
//! so that "a float where a count belongs" or "a negative duration" get
//! their own clear messages rather than serde's.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use toml::Spanned;

use crate::diagnostics::Problem;
use crate::time::SimDuration;

/// A TOML number as written: integer or float.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number {
    Integer(i64),
    Float(f64),
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Number::Integer(i) => write!(f, "{i}"),
            // `{:?}` keeps the decimal point: `1.0`, not `1`.
            Number::Float(x) => write!(f, "{x:?}"),
        }
    }
}

/// An unsigned TOML integer: an integer while it fits in `i64`, else a float.
impl From<u64> for Number {
    fn from(v: u64) -> Number {
        match i64::try_from(v) {
            Ok(i) => Number::Integer(i),
            Err(_) => Number::Float(v as f64),
        }
    }
}

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Number, D::Error> {
        struct NumberVisitor;
        impl Visitor<'_> for NumberVisitor {
            type Value = Number;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Number, E> {
                Ok(Number::Integer(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Number, E> {
                Ok(Number::from(v))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Number, E> {
                Ok(Number::Float(v))
            }
        }
        deserializer.deserialize_any(NumberVisitor)
    }
}

/// The unit a duration key is written in (the key's suffix).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    Ms,
    Us,
}

impl TimeUnit {
    fn name(self) -> &'static str {
        match self {
            TimeUnit::Ms => "ms",
            TimeUnit::Us => "us",
        }
    }
    fn per_ms(self) -> f64 {
        match self {
            TimeUnit::Ms => 1.0,
            TimeUnit::Us => 1000.0,
        }
    }
}

impl Number {
    /// The value as a float (integers convert exactly up to 2^53).
    pub fn as_f64(self) -> f64 {
        match self {
            Number::Integer(i) => i as f64,
            Number::Float(x) => x,
        }
    }

    /// A whole number in `lo..=hi`; floats are refused, even `4.0`.
    pub(crate) fn integer_in(self, lo: i64, hi: i64) -> Result<i64, Problem> {
        match self {
            Number::Integer(i) if (lo..=hi).contains(&i) => Ok(i),
            Number::Integer(i) if i < 0 && lo == 0 && hi == i64::MAX => {
                Err(Problem::new(format!("must not be negative, found {i}")))
            }
            Number::Integer(i) => Err(Problem::new(format!(
                "must be {}, found {i}",
                describe_range(lo, hi)
            ))),
            // TOML integers are 64-bit signed: a longer whole number is read
            // as a float.
            Number::Float(x) if x.is_finite() && x.fract() == 0.0 && x.abs() >= 9.2e18 => {
                Err(Problem::new(format!(
                    "is too large: TOML whole numbers go from {} to {} (found {self})",
                    i64::MIN,
                    i64::MAX
                ))
                .help(format!("use a value up to {hi}")))
            }
            Number::Float(x) => {
                let p = Problem::new(format!("must be a whole number, found {self}"));
                Err(if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e15 {
                    p.help(format!("write it without the decimal point: {x:.0}"))
                } else {
                    p
                })
            }
        }
    }

    /// A finite float in `lo..=hi` (integers accepted).
    pub(crate) fn float_in(self, lo: f64, hi: f64) -> Result<f64, Problem> {
        let x = self.as_f64();
        if !x.is_finite() {
            return Err(Problem::new(format!(
                "must be a finite number, found {self}"
            )));
        }
        if x < lo || x > hi {
            let range = if hi == f64::INFINITY || hi == f64::MAX {
                format!("at least {lo}")
            } else {
                format!("between {lo} and {hi}")
            };
            return Err(Problem::new(format!("must be {range}, found {self}")));
        }
        Ok(x)
    }

    /// A duration written in `unit`: finite, `>= 0` (`> 0` if `positive`),
    /// at most [`crate::scenario::model::MAX_DURATION_MS`].
    pub(crate) fn duration(self, unit: TimeUnit, positive: bool) -> Result<SimDuration, Problem> {
        let x = self.as_f64();
        let u = unit.name();
        if !x.is_finite() {
            return Err(Problem::new(format!(
                "must be a finite duration in {u}, found {self}"
            )));
        }
        if x < 0.0 {
            return Err(Problem::new(format!(
                "a duration must not be negative, found {self} {u}"
            )));
        }
        if positive && x == 0.0 {
            return Err(Problem::new(format!("must be greater than 0 {u}")));
        }
        let max_ms = crate::scenario::model::MAX_DURATION_MS;
        let ms = x / unit.per_ms();
        let too_long = || {
            Problem::new(format!(
                "{self} {u} is too long: the limit is {} {u} (10 days)",
                max_ms * unit.per_ms()
            ))
        };
        if ms > max_ms {
            return Err(too_long());
        }
        SimDuration::try_from_ms_f64(ms).ok_or_else(too_long)
    }
}

fn describe_range(lo: i64, hi: i64) -> String {
    if hi == i64::MAX {
        format!("at least {lo}")
    } else {
        format!("between {lo} and {hi}")
    }
}

/// The whole scenario file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a scenario table")]
pub struct RawScenario {
    pub name: Option<Spanned<String>>,
    pub seed: Option<Spanned<Number>>,
    pub until_ms: Option<Spanned<Number>>,
    pub machine: Option<Spanned<RawMachine>>,
    pub pool: Option<Spanned<RawPool>>,
    pub group: Option<Spanned<Vec<Spanned<RawGroup>>>>,
    pub probe: Option<Spanned<Vec<Spanned<RawProbe>>>>,
}

impl RawScenario {
    /// Nothing written: no key and no table (an empty or comment-only file).
    pub fn is_empty(&self) -> bool {
        self.name.is_none()
            && self.seed.is_none()
            && self.until_ms.is_none()
            && self.machine.is_none()
            && self.pool.is_none()
            && self.group.is_none()
            && self.probe.is_none()
    }
}

/// `[machine]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct RawMachine {
    pub cores: Option<Spanned<Number>>,
    pub processors: Option<Spanned<Number>>,
    pub tick_ms: Option<Spanned<Number>>,
}

/// `[pool]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct RawPool {
    pub policy: Option<Spanned<String>>,
    pub min_threads: Option<Spanned<Number>>,
    pub max_threads: Option<Spanned<Number>>,
    pub gate_phase_ms: Option<Spanned<Number>>,
    pub tiered_compilation: Option<Spanned<bool>>,
}

/// `[[group]]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct RawGroup {
    pub name: Option<Spanned<String>>,
    pub count: Option<Spanned<Number>>,
    pub submit: Option<Spanned<String>>,
    pub from: Option<Spanned<String>>,
    pub per_tick: Option<Spanned<Number>>,
    pub arrival: Option<Spanned<RawArrival>>,
    pub body: Option<Spanned<Vec<Spanned<RawStep>>>>,
    pub max_degree: Option<Spanned<Number>>,
    pub throttle: Option<Spanned<RawThrottle>>,
}

/// `throttle = { kind = "...", limit = N }` of a group.
#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table like { kind = \"semaphore\", limit = 4 }"
)]
pub struct RawThrottle {
    pub kind: Option<Spanned<String>>,
    pub limit: Option<Spanned<Number>>,
}

/// `arrival = { ... }`: exactly one of `at_ms`, `every_ms`, `poisson_per_s`;
/// `start_ms` goes with the last two.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table like { at_ms = 0 }")]
pub struct RawArrival {
    pub at_ms: Option<Spanned<Number>>,
    pub every_ms: Option<Spanned<Number>>,
    pub poisson_per_s: Option<Spanned<Number>>,
    pub start_ms: Option<Spanned<Number>>,
    pub after: Option<Spanned<String>>,
    pub delay_ms: Option<Spanned<Number>>,
    pub late_ms: Option<Spanned<Number>>,
}

/// One element of `body = [...]`: the string `"yield"` or a step table.
#[derive(Debug)]
pub enum RawStep {
    /// The string `"yield"`.
    Yield,
    /// `{ cpu_ms = 5 }` and the like (boxed: the table is large).
    Table(Box<RawStepTable>),
}

/// A step written as a table: exactly one key is expected (checked later).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a step table like { cpu_ms = 5 }")]
pub struct RawStepTable {
    pub cpu_ms: Option<Spanned<Number>>,
    pub spin_ms: Option<Spanned<Number>>,
    pub busy_ms: Option<Spanned<Number>>,
    pub sleep_ms: Option<Spanned<Number>>,
    pub wait_ms: Option<Spanned<Number>>,
    pub await_ms: Option<Spanned<Number>>,
    /// `{ fan_out = "calls" }`: the group whose items the step queues.
    pub fan_out: Option<Spanned<String>>,
    #[serde(rename = "yield")]
    pub yield_: Option<Spanned<bool>>,
}

impl<'de> Deserialize<'de> for RawStep {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RawStep, D::Error> {
        struct StepVisitor;
        impl<'de> Visitor<'de> for StepVisitor {
            type Value = RawStep;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("\"yield\" or a step table like { cpu_ms = 5 }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawStep, E> {
                if v == "yield" {
                    Ok(RawStep::Yield)
                } else {
                    Err(E::invalid_value(de::Unexpected::Str(v), &self))
                }
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawStep, A::Error> {
                RawStepTable::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|t| RawStep::Table(Box::new(t)))
            }
        }
        deserializer.deserialize_any(StepVisitor)
    }
}

/// `[[probe]]`
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub struct RawProbe {
    pub every_ms: Option<Spanned<Number>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_how_they_were_written() {
        #[derive(Deserialize)]
        struct T {
            a: Number,
            b: Number,
        }
        let t: T = toml::from_str("a = 4\nb = 4.5").unwrap();
        assert_eq!(t.a, Number::Integer(4));
        assert_eq!(t.b, Number::Float(4.5));
    }

    #[test]
    fn integer_checks_explain_the_rule() {
        assert_eq!(Number::Integer(4).integer_in(1, 10), Ok(4));
        let p = Number::Integer(0).integer_in(1, 4096).unwrap_err();
        assert_eq!(p.message, "must be between 1 and 4096, found 0");
        let p = Number::Integer(-3).integer_in(0, i64::MAX).unwrap_err();
        assert_eq!(p.message, "must not be negative, found -3");
        let p = Number::Integer(-3).integer_in(1, 10).unwrap_err();
        assert_eq!(p.message, "must be between 1 and 10, found -3");
        let p = Number::Float(2.5).integer_in(1, 10).unwrap_err();
        assert_eq!(p.message, "must be a whole number, found 2.5");
        let p = Number::Float(4.0).integer_in(1, 10).unwrap_err();
        assert_eq!(p.message, "must be a whole number, found 4.0");
        let p = Number::Float(4.0).integer_in(1, 10).unwrap_err();
        assert_eq!(
            p.help.as_deref(),
            Some("write it without the decimal point: 4")
        );
        // A seed past i64::MAX reaches us as a float.
        let p = Number::Float(1.0063793827673651e19)
            .integer_in(0, i64::MAX)
            .unwrap_err();
        assert!(p.message.starts_with("is too large"), "{}", p.message);
        assert!(p.message.contains("9223372036854775807"), "{}", p.message);
    }

    #[test]
    fn durations_are_checked_and_converted() {
        assert_eq!(
            Number::Float(1.5).duration(TimeUnit::Ms, false),
            Ok(SimDuration::from_us(1500))
        );
        assert_eq!(
            Number::Integer(20).duration(TimeUnit::Us, true),
            Ok(SimDuration::from_us(20))
        );
        assert!(Number::Integer(0).duration(TimeUnit::Ms, true).is_err());
        assert!(
            Number::Float(f64::NAN)
                .duration(TimeUnit::Ms, false)
                .is_err()
        );
        assert!(
            Number::Float(f64::INFINITY)
                .duration(TimeUnit::Ms, false)
                .is_err()
        );
        let p = Number::Float(1e12)
            .duration(TimeUnit::Ms, false)
            .unwrap_err();
        assert_eq!(
            p.message,
            "1000000000000.0 ms is too long: the limit is 864000000 ms (10 days)"
        );
        let p = Number::Integer(-5)
            .duration(TimeUnit::Ms, false)
            .unwrap_err();
        assert_eq!(p.message, "a duration must not be negative, found -5 ms");
    }
}
