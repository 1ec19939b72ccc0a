//! What every table of a policy file shares: [`Table`], the lookup of a
//! table and its keys that reports a missing table once and each missing
//! key by name, and the checkers of values (integers and floats in range,
//! durations in ms, thread counts, the gate's first tick and tick count,
//! fixed or measured spreads).

use std::ops::Range;

use toml::Spanned;

use crate::diagnostics::{Problem, Report};
use crate::policy::config::{FirstTick, Spread, ThreadCount};
use crate::policy_file::raw::{FirstTickValue, NumberOrList, NumberOrText};
use crate::scenario::model::MAX_THREADS_LIMIT;
use crate::scenario::raw::{Number, TimeUnit};
use crate::time::SimDuration;

/// Largest `K` in `"K*cores"`.
pub(super) const MAX_PER_CORE: u32 = 1024;

/// A table of the policy file during checking: where it is and whether it
/// was written at all (a missing table is one error, not one per key).
pub(super) struct Table<'t, T> {
    pub(super) raw: &'t T,
    span: Range<usize>,
    path: &'static str,
    pub(super) present: bool,
    /// The built-in file to look at for its keys.
    example: &'static str,
}

impl<'t, T> Table<'t, T> {
    /// A table every policy file gives.
    pub(super) fn required(
        value: &'t Option<Spanned<T>>,
        fallback: &'t T,
        path: &'static str,
        r: &mut Report<'_>,
    ) -> Table<'t, T> {
        let t = Table::given(value, fallback, path, "net-classic.toml");
        if !t.present {
            r.error(
                0..0,
                path,
                Problem::new(format!("missing table `[{path}]`")).help(
                    "a policy file gives every table and constant; copy policies/net-classic.toml and edit it",
                ),
            );
        }
        t
    }

    /// A table that may be absent (its presence is checked by the caller).
    pub(super) fn given(
        value: &'t Option<Spanned<T>>,
        fallback: &'t T,
        path: &'static str,
        example: &'static str,
    ) -> Table<'t, T> {
        match value {
            Some(v) => Table {
                raw: v.get_ref(),
                span: v.span(),
                path,
                present: true,
                example,
            },
            None => Table {
                raw: fallback,
                span: 0..0,
                path,
                present: false,
                example,
            },
        }
    }

    /// Checks the required key `key`, whose value is `value`.
    pub(super) fn get<V, U>(
        &self,
        r: &mut Report<'_>,
        key: &str,
        value: &Option<Spanned<V>>,
        check: impl FnOnce(&V) -> Result<U, Problem>,
    ) -> Option<U> {
        let path = format!("{}.{key}", self.path);
        match value {
            Some(v) => r.check(v, &path, check),
            None => {
                if self.present {
                    r.error(
                        self.span.clone(),
                        &path,
                        Problem::new(format!("missing key `{key}`")).help(format!(
                            "a policy file gives every constant; see policies/{}",
                            self.example
                        )),
                    );
                }
                None
            }
        }
    }
}

pub(super) fn u32_in(lo: u32, hi: u32) -> impl Fn(&Number) -> Result<u32, Problem> {
    move |n| {
        n.integer_in(i64::from(lo), i64::from(hi))
            .map(|v| u32::try_from(v).unwrap_or(hi))
    }
}

pub(super) fn float_at_least(lo: f64) -> impl Fn(&Number) -> Result<f64, Problem> {
    move |n| n.float_in(lo, f64::INFINITY)
}

pub(super) fn ms(positive: bool) -> impl Fn(&Number) -> Result<SimDuration, Problem> {
    move |n| n.duration(TimeUnit::Ms, positive)
}

pub(super) fn flag(b: &bool) -> Result<bool, Problem> {
    Ok(*b)
}

pub(super) fn thread_count(v: &NumberOrText) -> Result<ThreadCount, Problem> {
    match v {
        NumberOrText::Number(n) => u32_in(1, MAX_THREADS_LIMIT)(n).map(ThreadCount::Fixed),
        NumberOrText::Text(s) => {
            let t: String = s
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect::<String>()
                .to_ascii_lowercase();
            let bad = || {
                Problem::new(format!(
                    "expected a number, \"cores\" or \"K*cores\", found \"{s}\""
                ))
                .help("e.g. min = \"cores\", max = \"4*cores\" or max = 32767")
            };
            if t == "cores" {
                return Ok(ThreadCount::PerCore(1));
            }
            let k = t.strip_suffix("*cores").ok_or_else(bad)?;
            let digits = k.strip_prefix('+').unwrap_or(k);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            // Any run of digits is a multiple; a huge one is out of range,
            // not malformed.
            digits
                .parse::<u32>()
                .ok()
                .filter(|k| (1..=MAX_PER_CORE).contains(k))
                .map(ThreadCount::PerCore)
                .ok_or_else(|| {
                    Problem::new(format!(
                        "the multiple of cores must be between 1 and {MAX_PER_CORE}, found {digits}"
                    ))
                })
        }
    }
}

pub(super) fn first_tick(v: &FirstTickValue) -> Result<FirstTick, Problem> {
    match v {
        FirstTickValue::Number(n) => n.duration(TimeUnit::Ms, false).map(FirstTick::After),
        FirstTickValue::Text(s) if s.trim().eq_ignore_ascii_case("random") => Ok(FirstTick::Random),
        FirstTickValue::Text(s) => Err(Problem::new(format!(
            "expected a number of ms, \"random\" or a list of quantiles, found \"{s}\""
        ))
        .help("\"random\" draws the gate's phase from the run's seed; a number is the delay of its first tick after it starts; a list gives that delay's measured quantiles")),
        FirstTickValue::List(values) => quantiles(values, TimeUnit::Ms).map(FirstTick::Measured),
    }
}

/// `tick_count_ms`: a step in ms, or `"exact"`.
pub(super) fn tick_count(v: &NumberOrText) -> Result<Option<SimDuration>, Problem> {
    match v {
        NumberOrText::Number(n) => n.duration(TimeUnit::Ms, false).map(Some),
        NumberOrText::Text(s) if s.trim().eq_ignore_ascii_case("exact") => Ok(None),
        NumberOrText::Text(s) => Err(Problem::new(format!(
            "expected a number of ms or \"exact\", found \"{s}\""
        ))
        .help("the step of Environment.TickCount as the gate thread reads it (Linux: 4 ms at HZ = 250; Windows: 15.625 ms); \"exact\" for a clock without steps")),
    }
}

/// Most values in a measured distribution (`sleep_overshoot_us`, `drift_ms`).
const MAX_QUANTILES: usize = 101;

/// A fixed duration (a number) or measured quantiles (a list of at least
/// two ascending numbers, at equally spaced probabilities from 0 to 1), in `unit`.
pub(super) fn spread(unit: TimeUnit) -> impl Fn(&NumberOrList) -> Result<Spread, Problem> {
    move |v| match v {
        NumberOrList::Number(n) => n.duration(unit, false).map(Spread::fixed),
        NumberOrList::List(values) => quantiles(values, unit),
    }
}

/// Measured quantiles: at least two ascending numbers, at equally spaced
/// probabilities from 0 to 1, in `unit`.
fn quantiles(values: &[Number], unit: TimeUnit) -> Result<Spread, Problem> {
    let help = "a list gives the measured quantiles at equally spaced probabilities \
                (0, 1/(n-1), ..., 1), ascending, e.g. [100, 150, 200, 400]; \
                one number is a fixed value";
    if values.len() < 2 || values.len() > MAX_QUANTILES {
        return Err(Problem::new(format!(
            "a list of quantiles needs 2 to {MAX_QUANTILES} values, found {}",
            values.len()
        ))
        .help(help));
    }
    let mut quantiles = Vec::with_capacity(values.len());
    for (i, n) in values.iter().enumerate() {
        let d = n
            .duration(unit, false)
            .map_err(|p| Problem::new(format!("value {} {}", i + 1, p.message)))?;
        if let Some(&prev) = quantiles.last()
            && d < prev
        {
            return Err(Problem::new(format!(
                "quantiles must not decrease: value {} ({n}) is below value {i}",
                i + 1
            ))
            .help(help));
        }
        quantiles.push(d);
    }
    Ok(Spread::from_quantiles(quantiles))
}
