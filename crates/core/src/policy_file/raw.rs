//! The policy file as written: serde structs mirroring the TOML.
//!
//! Stage one of loading a policy, as [`crate::scenario::raw`] is for a
//! scenario. Every table refuses unknown keys (`deny_unknown_fields`), every
//! key is optional here (a missing key or table is reported by
//! [`super::build`]), and every value keeps its byte span ([`Spanned`]) for
//! the messages. Numbers are the scenario's [`Number`]; a value that may be a
//! number or a word is a [`NumberOrText`].

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use toml::Spanned;

use crate::scenario::raw::Number;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a policy table")]
pub(super) struct RawPolicy {
    pub name: Option<Spanned<String>>,
    pub aliases: Option<Spanned<Vec<Spanned<String>>>>,
    pub model: Option<Spanned<String>>,
    pub base: Option<Spanned<String>>,
    pub description: Option<Spanned<String>>,
    pub threads: Option<Spanned<RawThreads>>,
    pub gate: Option<Spanned<RawGate>>,
    pub hill_climbing: Option<Spanned<RawHillClimbing>>,
    pub dispatch: Option<Spanned<RawDispatch>>,
    pub timers: Option<Spanned<RawTimers>>,
    pub blocking: Option<Spanned<RawBlocking>>,
    pub mono: Option<Spanned<RawMono>>,
    pub net20: Option<Spanned<RawNet20>>,
    pub library: Option<Spanned<RawLibrary>>,
    pub throttle: Option<Spanned<RawThrottle>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(super) struct RawLibrary {
    pub range_is_list: Option<Spanned<bool>>,
    pub first_call_ms: Option<Spanned<RawFirstCall>>,
}

/// `[library.first_call_ms]`: the first call's cost of each parallel API,
/// keyed by its `submit` name in scenario files; an API left out costs
/// nothing.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(super) struct RawFirstCall {
    #[serde(rename = "parallel-for")]
    pub parallel_for: Option<Spanned<NumberOrList>>,
    #[serde(rename = "parallel-foreach")]
    pub parallel_foreach: Option<Spanned<NumberOrList>>,
    #[serde(rename = "parallel-invoke")]
    pub parallel_invoke: Option<Spanned<NumberOrList>>,
    pub plinq: Option<Spanned<NumberOrList>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(super) struct RawThreads {
    pub min: Option<Spanned<NumberOrText>>,
    pub max: Option<Spanned<NumberOrText>>,
    pub start_ms: Option<Spanned<NumberOrList>>,
    pub first_start_ms: Option<Spanned<NumberOrList>>,
    pub wake_us: Option<Spanned<Number>>,
    pub idle_timeout_ms: Option<Spanned<Number>>,
    pub dedicated_start_ms: Option<Spanned<Number>>,
    pub honours_set_min_threads: Option<Spanned<bool>>,
    pub main_yields_to_first_worker: Option<Spanned<bool>>,
    pub spin_cpu_percent: Option<Spanned<Number>>,
    pub sleep_overshoot_us: Option<Spanned<NumberOrList>>,
    pub wake_preempt_us: Option<Spanned<NumberOrList>>,
    pub cpu_second_ms: Option<Spanned<NumberOrList>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(super) struct RawGate {
    pub period_ms: Option<Spanned<Number>>,
    pub cpu_busy_percent: Option<Spanned<Number>>,
    pub starvation_delay_ms: Option<Spanned<Number>>,
    pub busy_delay_per_thread_ms: Option<Spanned<Number>>,
    pub comparison: Option<Spanned<String>>,
    pub first_tick_ms: Option<Spanned<FirstTickValue>>,
    pub first_tick_tiered_ms: Option<Spanned<FirstTickValue>>,
    pub first_tick_tiered_one_core_ms: Option<Spanned<FirstTickValue>>,
    pub tick_count_ms: Option<Spanned<NumberOrText>>,
    pub drift_ms: Option<Spanned<NumberOrList>>,
    pub idle_ticks_before_stop: Option<Spanned<Number>>,
    pub first_cpu_sample: Option<Spanned<String>>,
    pub cpu_reading: Option<Spanned<String>>,
    pub start: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(super) struct RawHillClimbing {
    pub enabled: Option<Spanned<bool>>,
    pub wave_period: Option<Spanned<Number>>,
    pub max_wave_magnitude: Option<Spanned<Number>>,
    pub wave_magnitude_multiplier: Option<Spanned<Number>>,
    pub wave_history_size: Option<Spanned<Number>>,
    pub bias: Option<Spanned<Number>>,
    pub max_change_per_second: Option<Spanned<Number>>,
    pub max_change_per_sample: Option<Spanned<Number>>,
    pub max_sample_error: Option<Spanned<Number>>,
    pub sample_interval_low_ms: Option<Spanned<Number>>,
    pub sample_interval_high_ms: Option<Spanned<Number>>,
    pub error_smoothing_factor: Option<Spanned<Number>>,
    pub target_signal_to_noise_ratio: Option<Spanned<Number>>,
    pub gain_exponent: Option<Spanned<Number>>,
    pub startup_completions_tiered: Option<Spanned<Number>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(super) struct RawDispatch {
    pub quantum_ms: Option<Spanned<Number>>,
    pub max_outstanding_requests_per_core: Option<Spanned<Number>>,
    pub requests: Option<Spanned<String>>,
    pub leave_at_quantum: Option<Spanned<bool>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(super) struct RawTimers {
    pub queues: Option<Spanned<NumberOrText>>,
    pub dispatch: Option<Spanned<String>>,
    pub queue_of: Option<Spanned<String>>,
    pub tick_count_ms: Option<Spanned<NumberOrText>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(super) struct RawBlocking {
    pub enabled: Option<Spanned<bool>>,
    pub threads_to_add_without_delay_per_core: Option<Spanned<Number>>,
    pub threads_per_delay_step_per_core: Option<Spanned<Number>>,
    pub delay_step_ms: Option<Spanned<Number>>,
    pub max_delay_ms: Option<Spanned<Number>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(super) struct RawMono {
    pub max_creations_per_second: Option<Spanned<Number>>,
    pub inject_tries: Option<Spanned<Number>>,
    pub threads_per_cpu: Option<Spanned<Number>>,
    pub heuristic_start: Option<Spanned<String>>,
    pub creation_wait_ms: Option<Spanned<Number>>,
    pub max_starting: Option<Spanned<Number>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(super) struct RawNet20 {
    pub creation_delay_ms: Option<Spanned<Number>>,
    pub creation_delay_growth: Option<Spanned<Number>>,
    pub sp1_start_delay_bug: Option<Spanned<bool>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
pub(super) struct RawThrottle {
    pub kind: Option<Spanned<String>>,
    pub limit: Option<Spanned<NumberOrText>>,
}

/// A value that is a number or a word: `min`/`max`/`queues`/`limit`
/// (`"cores"`, `"K*cores"`) and `tick_count_ms` (`"exact"`).
#[derive(Debug)]
pub(super) enum NumberOrText {
    Number(Number),
    Text(String),
}

impl<'de> Deserialize<'de> for NumberOrText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<NumberOrText, D::Error> {
        struct NumberOrTextVisitor;
        impl Visitor<'_> for NumberOrTextVisitor {
            type Value = NumberOrText;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number or a string")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<NumberOrText, E> {
                Ok(NumberOrText::Number(Number::Integer(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<NumberOrText, E> {
                Ok(NumberOrText::Number(Number::from(v)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<NumberOrText, E> {
                Ok(NumberOrText::Number(Number::Float(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<NumberOrText, E> {
                Ok(NumberOrText::Text(v.to_string()))
            }
        }
        deserializer.deserialize_any(NumberOrTextVisitor)
    }
}

/// The gate's first tick (`first_tick_ms`, `first_tick_tiered_ms`,
/// `first_tick_tiered_one_core_ms`): a number of ms, `"random"`, or a list
/// of measured quantiles.
#[derive(Debug)]
pub(super) enum FirstTickValue {
    Number(Number),
    Text(String),
    List(Vec<Number>),
}

impl<'de> Deserialize<'de> for FirstTickValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<FirstTickValue, D::Error> {
        struct FirstTickVisitor;
        impl<'de> Visitor<'de> for FirstTickVisitor {
            type Value = FirstTickValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number of ms, \"random\" or a list of quantiles")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<FirstTickValue, E> {
                Ok(FirstTickValue::Number(Number::Integer(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<FirstTickValue, E> {
                Ok(FirstTickValue::Number(Number::from(v)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<FirstTickValue, E> {
                Ok(FirstTickValue::Number(Number::Float(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<FirstTickValue, E> {
                Ok(FirstTickValue::Text(v.to_string()))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<FirstTickValue, A::Error> {
                let mut values = Vec::new();
                while let Some(n) = seq.next_element::<Number>()? {
                    values.push(n);
                }
                Ok(FirstTickValue::List(values))
            }
        }
        deserializer.deserialize_any(FirstTickVisitor)
    }
}

/// A value that is a number or a list of numbers: a duration that is fixed
/// or drawn from measured quantiles (`sleep_overshoot_us`, `drift_ms`).
#[derive(Debug)]
pub(super) enum NumberOrList {
    Number(Number),
    List(Vec<Number>),
}

impl<'de> Deserialize<'de> for NumberOrList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<NumberOrList, D::Error> {
        struct NumberOrListVisitor;
        impl<'de> Visitor<'de> for NumberOrListVisitor {
            type Value = NumberOrList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number or a list of numbers")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<NumberOrList, E> {
                Ok(NumberOrList::Number(Number::Integer(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<NumberOrList, E> {
                Ok(NumberOrList::Number(Number::from(v)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<NumberOrList, E> {
                Ok(NumberOrList::Number(Number::Float(v)))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<NumberOrList, A::Error> {
                let mut values = Vec::new();
                while let Some(n) = seq.next_element::<Number>()? {
                    values.push(n);
                }
                Ok(NumberOrList::List(values))
            }
        }
        deserializer.deserialize_any(NumberOrListVisitor)
    }
}
