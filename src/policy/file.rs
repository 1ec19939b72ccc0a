//! Policy files: TOML in, a validated [`PolicyConfig`] out, and the
//! registry of the policies compiled into the binary.
//!
//! A policy file names a model (code) and gives every one of its constants,
//! in the units its key says (`_ms`, `_us`, `_percent`). The files in
//! `policies/` are built in (see [`BUILTIN`]), so `poolsim` works from any
//! directory; a user copies one, edits a constant and passes its path.
//! Errors have the same form as scenario errors: file, line, column, TOML
//! path, message, help.

use std::collections::HashSet;
use std::fmt;
use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use toml::Spanned;

use crate::error::{Diagnostic, LoadError, Problem, Report, choose, did_you_mean};
use crate::policy::config::{
    Comparison, DispatchConfig, GateConfig, HillClimbingConfig, ModelKind, PolicyConfig,
    ThreadCount, ThreadsConfig,
};
use crate::scenario::model::MAX_THREADS_LIMIT;
use crate::scenario::raw::{Number, TimeUnit};
use crate::time::SimDuration;

/// The policy files compiled into the binary: (file name, text). Add a file
/// in `policies/` and a line here.
pub const BUILTIN: &[(&str, &str)] = &[(
    "net-classic.toml",
    include_str!("../../policies/net-classic.toml"),
)];

/// The models a policy file may name; a new model is one line here.
const MODELS: &[ModelKind] = &[ModelKind::Classic];

/// `comparison = ...` values.
const COMPARISONS: &[(&str, Comparison)] = &[
    (">", Comparison::Greater),
    (">=", Comparison::GreaterOrEqual),
];

/// Largest `K` in `"K*cores"`.
const MAX_PER_CORE: u32 = 1024;

// ---------------------------------------------------------------------------
// Stage one: the file as written.

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a policy table")]
struct RawPolicy {
    name: Option<Spanned<String>>,
    aliases: Option<Spanned<Vec<Spanned<String>>>>,
    model: Option<Spanned<String>>,
    description: Option<Spanned<String>>,
    threads: Option<Spanned<RawThreads>>,
    gate: Option<Spanned<RawGate>>,
    hill_climbing: Option<Spanned<RawHillClimbing>>,
    dispatch: Option<Spanned<RawDispatch>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct RawThreads {
    min: Option<Spanned<RawThreadCount>>,
    max: Option<Spanned<RawThreadCount>>,
    start_ms: Option<Spanned<Number>>,
    wake_us: Option<Spanned<Number>>,
    idle_timeout_ms: Option<Spanned<Number>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct RawGate {
    period_ms: Option<Spanned<Number>>,
    cpu_busy_percent: Option<Spanned<Number>>,
    starvation_delay_ms: Option<Spanned<Number>>,
    busy_delay_per_thread_ms: Option<Spanned<Number>>,
    comparison: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct RawHillClimbing {
    enabled: Option<Spanned<bool>>,
    wave_period: Option<Spanned<Number>>,
    max_wave_magnitude: Option<Spanned<Number>>,
    wave_magnitude_multiplier: Option<Spanned<Number>>,
    wave_history_size: Option<Spanned<Number>>,
    bias: Option<Spanned<Number>>,
    max_change_per_second: Option<Spanned<Number>>,
    max_change_per_sample: Option<Spanned<Number>>,
    max_sample_error: Option<Spanned<Number>>,
    sample_interval_low_ms: Option<Spanned<Number>>,
    sample_interval_high_ms: Option<Spanned<Number>>,
    error_smoothing_factor: Option<Spanned<Number>>,
    target_signal_to_noise_ratio: Option<Spanned<Number>>,
    gain_exponent: Option<Spanned<Number>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct RawDispatch {
    quantum_ms: Option<Spanned<Number>>,
    max_outstanding_requests_per_core: Option<Spanned<Number>>,
}

/// `min`/`max`: a number, or `"cores"` / `"K*cores"`.
#[derive(Debug)]
enum RawThreadCount {
    Number(Number),
    Text(String),
}

impl<'de> Deserialize<'de> for RawThreadCount {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RawThreadCount, D::Error> {
        struct CountVisitor;
        impl Visitor<'_> for CountVisitor {
            type Value = RawThreadCount;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number, \"cores\" or \"K*cores\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawThreadCount, E> {
                Ok(RawThreadCount::Number(Number::Integer(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawThreadCount, E> {
                Ok(RawThreadCount::Number(match i64::try_from(v) {
                    Ok(i) => Number::Integer(i),
                    Err(_) => Number::Float(v as f64),
                }))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RawThreadCount, E> {
                Ok(RawThreadCount::Number(Number::Float(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawThreadCount, E> {
                Ok(RawThreadCount::Text(v.to_string()))
            }
        }
        deserializer.deserialize_any(CountVisitor)
    }
}

// ---------------------------------------------------------------------------
// Stage two: checks.

/// Parses and validates policy TOML `text`; `file` names it in messages and
/// its stem is the default `name`.
pub fn parse_policy(text: &str, file: &str) -> Result<PolicyConfig, LoadError> {
    let raw: RawPolicy = crate::error::parse_document(text, file)?;
    let mut report = Report::new(file, text);
    let policy = build_policy(&raw, file, &mut report);
    report.finish(policy)
}

/// Reads and validates the policy file at `path`.
pub fn load_policy(path: &Path) -> Result<PolicyConfig, LoadError> {
    let file = path.display().to_string();
    let text = crate::scenario::load::read_text(path, &file)?;
    parse_policy(&text, &file)
}

/// Every built-in policy, in [`BUILTIN`] order.
pub fn builtin_policies() -> Vec<PolicyConfig> {
    builtin_results()
        .into_iter()
        .filter_map(Result::ok)
        .collect()
}

fn builtin_results() -> Vec<Result<PolicyConfig, LoadError>> {
    BUILTIN
        .iter()
        .map(|(file, text)| parse_policy(text, &format!("policies/{file}")))
        .collect()
}

/// Like [`resolve_policy`], but a relative policy path written in a scenario
/// file is looked up beside that file first (`scenario_dir`).
pub fn resolve_policy_for_scenario(
    name_or_path: &str,
    scenario_dir: Option<&Path>,
) -> Result<PolicyConfig, LoadError> {
    let wanted = Path::new(name_or_path.trim());
    if let Some(dir) = scenario_dir
        && wanted.is_relative()
        && wanted
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("toml"))
    {
        let beside = dir.join(wanted);
        if beside.is_file() {
            return load_policy(&beside);
        }
    }
    resolve_policy(name_or_path)
}

/// A built-in policy by name or alias (case-insensitive); else, if
/// `name_or_path` looks like a path (contains `/` or `\`, or ends in
/// `.toml`), the policy file there; else an error listing the known names.
pub fn resolve_policy(name_or_path: &str) -> Result<PolicyConfig, LoadError> {
    let wanted = name_or_path.trim();
    let builtins = builtin_results();
    for (result, (file, _)) in builtins.iter().zip(BUILTIN) {
        match result {
            Ok(p) => {
                if p.name.eq_ignore_ascii_case(wanted)
                    || p.aliases.iter().any(|a| a.eq_ignore_ascii_case(wanted))
                {
                    return Ok(p.clone());
                }
            }
            Err(e) => {
                let stem = file.strip_suffix(".toml").unwrap_or(file);
                if stem.eq_ignore_ascii_case(wanted) {
                    return Err(e.clone());
                }
            }
        }
    }
    let policies: Vec<&PolicyConfig> = builtins.iter().filter_map(|r| r.as_ref().ok()).collect();
    let known = policies
        .iter()
        .map(|p| {
            if p.aliases.is_empty() {
                p.name.clone()
            } else {
                format!("{} (also {})", p.name, p.aliases.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    let looks_like_path = wanted.contains('/')
        || wanted.contains('\\')
        || wanted.to_ascii_lowercase().ends_with(".toml");
    if looks_like_path {
        let path = Path::new(wanted);
        if path.exists() {
            return load_policy(path);
        }
        return Err(Diagnostic::new(format!("policy file \"{wanted}\" not found"))
            .with_help(format!(
                "check the path (relative paths start from the current directory), or use a built-in policy: {known}"
            ))
            .into());
    }
    let names = policies
        .iter()
        .flat_map(|p| std::iter::once(p.name.as_str()).chain(p.aliases.iter().map(String::as_str)));
    let help = match did_you_mean(wanted, names) {
        Some(s) => format!("did you mean \"{s}\"? Built-in policies: {known}"),
        None => format!(
            "built-in policies: {known}; or give the path of a policy file (ending in .toml)"
        ),
    };
    Err(Diagnostic::new(format!("unknown policy \"{wanted}\""))
        .with_help(help)
        .into())
}

/// A table of the policy file during checking: where it is and whether it
/// was written at all (a missing table is one error, not one per key).
struct Table<'t, T> {
    raw: &'t T,
    span: Range<usize>,
    path: &'static str,
    present: bool,
}

impl<'t, T> Table<'t, T> {
    fn new(
        value: &'t Option<Spanned<T>>,
        fallback: &'t T,
        path: &'static str,
        r: &mut Report<'_>,
    ) -> Table<'t, T> {
        match value {
            Some(v) => Table {
                raw: v.get_ref(),
                span: v.span(),
                path,
                present: true,
            },
            None => {
                r.error(
                    0..0,
                    path,
                    Problem::new(format!("missing table `[{path}]`")).help(
                        "a policy file gives every table and constant; copy policies/net-classic.toml and edit it",
                    ),
                );
                Table {
                    raw: fallback,
                    span: 0..0,
                    path,
                    present: false,
                }
            }
        }
    }

    /// Checks the required key `key`, whose value is `value`.
    fn get<V, U>(
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
                        Problem::new(format!("missing key `{key}`")).help(
                            "a policy file gives every constant; see policies/net-classic.toml",
                        ),
                    );
                }
                None
            }
        }
    }
}

fn u32_in(lo: u32, hi: u32) -> impl Fn(&Number) -> Result<u32, Problem> {
    move |n| {
        n.integer_in(i64::from(lo), i64::from(hi))
            .map(|v| u32::try_from(v).unwrap_or(hi))
    }
}

fn float_at_least(lo: f64) -> impl Fn(&Number) -> Result<f64, Problem> {
    move |n| n.float_in(lo, f64::INFINITY)
}

fn ms(positive: bool) -> impl Fn(&Number) -> Result<SimDuration, Problem> {
    move |n| n.duration(TimeUnit::Ms, positive)
}

fn thread_count(v: &RawThreadCount) -> Result<ThreadCount, Problem> {
    match v {
        RawThreadCount::Number(n) => u32_in(1, MAX_THREADS_LIMIT)(n).map(ThreadCount::Fixed),
        RawThreadCount::Text(s) => {
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
            let k: u32 = k.parse().map_err(|_| bad())?;
            if k == 0 || k > MAX_PER_CORE {
                return Err(Problem::new(format!(
                    "the multiple of cores must be between 1 and {MAX_PER_CORE}, found {k}"
                )));
            }
            Ok(ThreadCount::PerCore(k))
        }
    }
}

fn policy_name(s: &str) -> Result<String, Problem> {
    let t = s.trim();
    if t.is_empty() {
        return Err(Problem::new("must not be empty"));
    }
    if t.chars().any(char::is_whitespace) {
        return Err(Problem::new(format!(
            "a policy name is one word (it is typed on the command line), found \"{t}\""
        ))
        .help("use dashes: \"my-policy\""));
    }
    Ok(t.to_string())
}

fn build_policy(raw: &RawPolicy, file: &str, r: &mut Report<'_>) -> PolicyConfig {
    let name = match &raw.name {
        Some(n) => r.check(n, "name", |s| policy_name(s)).unwrap_or_default(),
        None => Path::new(file)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    let mut aliases = Vec::new();
    if let Some(list) = &raw.aliases {
        let mut seen: HashSet<String> = HashSet::new();
        seen.insert(name.to_ascii_lowercase());
        for (i, a) in list.get_ref().iter().enumerate() {
            let path = format!("aliases[{i}]");
            if let Some(alias) = r.check(a, &path, |s| policy_name(s)) {
                if seen.insert(alias.to_ascii_lowercase()) {
                    aliases.push(alias);
                } else {
                    r.error(
                        a.span(),
                        &path,
                        Problem::new(format!(
                            "\"{alias}\" is already the name or an alias of this policy"
                        )),
                    );
                }
            }
        }
    }
    let model = match &raw.model {
        None => {
            r.error(
                0..0,
                "model",
                Problem::new("missing key `model`").help(format!(
                    "say which model interprets the constants: {}",
                    model_list()
                )),
            );
            None
        }
        Some(m) => r.check(m, "model", |s| {
            let choices: Vec<(&str, ModelKind)> = MODELS.iter().map(|k| (k.name(), *k)).collect();
            choose(s, &choices, "model")
        }),
    };
    let description = match &raw.description {
        Some(d) => d.get_ref().trim().to_string(),
        None => String::new(),
    };

    let fallback_threads = RawThreads::default();
    let t = Table::new(&raw.threads, &fallback_threads, "threads", r);
    let min = t.get(r, "min", &t.raw.min, thread_count);
    let max = t.get(r, "max", &t.raw.max, thread_count);
    if let (Some(lo), Some(hi), Some(min_span)) = (min, max, &t.raw.min) {
        let (a, b, unit) = match (lo, hi) {
            (ThreadCount::Fixed(a), ThreadCount::Fixed(b)) => (a, b, ""),
            (ThreadCount::PerCore(a), ThreadCount::PerCore(b)) => (a, b, "*cores"),
            _ => (0, 1, ""),
        };
        if a > b {
            r.error(
                min_span.span(),
                "threads.min",
                Problem::new(format!("min ({a}{unit}) is greater than max ({b}{unit})")),
            );
        }
    }
    let threads = ThreadsConfig {
        min: min.unwrap_or(ThreadCount::Fixed(1)),
        max: max.unwrap_or(ThreadCount::Fixed(1)),
        start_latency: t
            .get(r, "start_ms", &t.raw.start_ms, ms(false))
            .unwrap_or_default(),
        wake_latency: t
            .get(r, "wake_us", &t.raw.wake_us, |n| {
                n.duration(TimeUnit::Us, false)
            })
            .unwrap_or_default(),
        idle_timeout: t
            .get(r, "idle_timeout_ms", &t.raw.idle_timeout_ms, ms(false))
            .unwrap_or_default(),
        dedicated_start_latency: SimDuration::from_ms(4),
        honours_set_min_threads: true,
    };

    let fallback_gate = RawGate::default();
    let g = Table::new(&raw.gate, &fallback_gate, "gate", r);
    let gate = GateConfig {
        period: g
            .get(r, "period_ms", &g.raw.period_ms, ms(true))
            .unwrap_or_default(),
        cpu_busy_percent: g
            .get(
                r,
                "cpu_busy_percent",
                &g.raw.cpu_busy_percent,
                u32_in(0, 100),
            )
            .unwrap_or_default(),
        starvation_delay: g
            .get(
                r,
                "starvation_delay_ms",
                &g.raw.starvation_delay_ms,
                ms(false),
            )
            .unwrap_or_default(),
        busy_delay_per_thread: g
            .get(
                r,
                "busy_delay_per_thread_ms",
                &g.raw.busy_delay_per_thread_ms,
                ms(false),
            )
            .unwrap_or_default(),
        comparison: g
            .get(r, "comparison", &g.raw.comparison, |s| {
                choose(s, COMPARISONS, "comparison")
            })
            .unwrap_or(Comparison::Greater),
        first_tick: crate::policy::config::FirstTick::Random,
        drift: SimDuration::ZERO,
        idle_ticks_before_stop: 0,
    };

    let fallback_hc = RawHillClimbing::default();
    let h = Table::new(&raw.hill_climbing, &fallback_hc, "hill_climbing", r);
    let hc = h.raw;
    let low = h.get(
        r,
        "sample_interval_low_ms",
        &hc.sample_interval_low_ms,
        u32_in(1, 3_600_000),
    );
    let high = h.get(
        r,
        "sample_interval_high_ms",
        &hc.sample_interval_high_ms,
        u32_in(1, 3_600_000),
    );
    if let (Some(lo), Some(hi), Some(low_span)) = (low, high, &hc.sample_interval_low_ms)
        && lo > hi
    {
        r.error(
            low_span.span(),
            "hill_climbing.sample_interval_low_ms",
            Problem::new(format!(
                "sample_interval_low_ms ({lo}) is greater than sample_interval_high_ms ({hi})"
            )),
        );
    }
    let hill_climbing = HillClimbingConfig {
        enabled: h
            .get(r, "enabled", &hc.enabled, |b| Ok(*b))
            .unwrap_or_default(),
        wave_period: h
            .get(r, "wave_period", &hc.wave_period, u32_in(1, 10_000))
            .unwrap_or(1),
        max_wave_magnitude: h
            .get(
                r,
                "max_wave_magnitude",
                &hc.max_wave_magnitude,
                u32_in(0, MAX_THREADS_LIMIT),
            )
            .unwrap_or_default(),
        wave_magnitude_multiplier: h
            .get(
                r,
                "wave_magnitude_multiplier",
                &hc.wave_magnitude_multiplier,
                float_at_least(0.0),
            )
            .unwrap_or_default(),
        wave_history_size: h
            .get(
                r,
                "wave_history_size",
                &hc.wave_history_size,
                u32_in(1, 10_000),
            )
            .unwrap_or(1),
        bias: h
            .get(r, "bias", &hc.bias, float_at_least(0.0))
            .unwrap_or_default(),
        max_change_per_second: h
            .get(
                r,
                "max_change_per_second",
                &hc.max_change_per_second,
                float_at_least(0.0),
            )
            .unwrap_or_default(),
        max_change_per_sample: h
            .get(
                r,
                "max_change_per_sample",
                &hc.max_change_per_sample,
                float_at_least(0.0),
            )
            .unwrap_or_default(),
        max_sample_error: h
            .get(
                r,
                "max_sample_error",
                &hc.max_sample_error,
                float_at_least(0.0),
            )
            .unwrap_or_default(),
        sample_interval_low_ms: low.unwrap_or(1),
        sample_interval_high_ms: high.unwrap_or(1),
        error_smoothing_factor: h
            .get(
                r,
                "error_smoothing_factor",
                &hc.error_smoothing_factor,
                |n| n.float_in(0.0, 1.0),
            )
            .unwrap_or_default(),
        target_signal_to_noise_ratio: h
            .get(
                r,
                "target_signal_to_noise_ratio",
                &hc.target_signal_to_noise_ratio,
                float_at_least(0.0),
            )
            .unwrap_or_default(),
        gain_exponent: h
            .get(r, "gain_exponent", &hc.gain_exponent, float_at_least(0.0))
            .unwrap_or_default(),
    };

    let fallback_dispatch = RawDispatch::default();
    let d = Table::new(&raw.dispatch, &fallback_dispatch, "dispatch", r);
    let dispatch = DispatchConfig {
        quantum: d
            .get(r, "quantum_ms", &d.raw.quantum_ms, ms(true))
            .unwrap_or_default(),
        max_outstanding_requests_per_core: d
            .get(
                r,
                "max_outstanding_requests_per_core",
                &d.raw.max_outstanding_requests_per_core,
                u32_in(1, MAX_PER_CORE),
            )
            .unwrap_or(1),
        requests: crate::policy::config::RequestMode::EveryDequeue,
        leave_at_quantum: true,
    };

    PolicyConfig {
        name,
        aliases,
        description,
        model: model.unwrap_or(ModelKind::Classic),
        threads,
        gate,
        hill_climbing,
        dispatch,
        timers: crate::policy::config::TimersConfig {
            queues: ThreadCount::PerCore(1),
            dispatch: crate::policy::config::TimerDispatch::UnmanagedRequest,
        },
        blocking: None,
        mono: None,
        net20: None,
        throttle: None,
    }
}

fn model_list() -> String {
    MODELS
        .iter()
        .map(|m| format!("\"{}\"", m.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net_classic() -> &'static str {
        BUILTIN
            .iter()
            .find(|(f, _)| *f == "net-classic.toml")
            .map(|(_, t)| *t)
            .unwrap()
    }

    #[test]
    fn every_builtin_parses_and_names_are_unique() {
        for (file, text) in BUILTIN {
            if let Err(e) = parse_policy(text, file) {
                panic!("built-in {file} does not parse:\n{e}");
            }
        }
        let all = builtin_policies();
        assert_eq!(all.len(), BUILTIN.len());
        let mut seen = HashSet::new();
        for p in &all {
            for n in std::iter::once(&p.name).chain(&p.aliases) {
                assert!(seen.insert(n.to_ascii_lowercase()), "{n} is used twice");
            }
        }
    }

    #[test]
    fn net_classic_has_the_clr_constants() {
        let p = parse_policy(net_classic(), "net-classic.toml").unwrap();
        assert_eq!(p.name, "net-classic");
        assert_eq!(p.aliases, ["net5", "netcore3", "coreclr3", "netfx4"]);
        assert_eq!(p.model, ModelKind::Classic);
        assert_eq!(p.threads.min, ThreadCount::PerCore(1));
        assert_eq!(p.threads.max, ThreadCount::Fixed(32767));
        assert_eq!(p.threads.start_latency, SimDuration::from_us(200));
        assert_eq!(p.threads.wake_latency, SimDuration::from_us(20));
        assert_eq!(p.threads.idle_timeout, SimDuration::from_ms(20_000));
        assert_eq!(p.gate.period, SimDuration::from_ms(500));
        assert_eq!(p.gate.comparison, Comparison::Greater);
        assert_eq!(p.hill_climbing.wave_period, 4);
        assert_eq!(p.dispatch.quantum, SimDuration::from_ms(30));
    }

    #[test]
    fn thread_counts_accept_numbers_and_multiples_of_cores() {
        let n = |s: &str| thread_count(&RawThreadCount::Text(s.to_string()));
        assert_eq!(n("cores"), Ok(ThreadCount::PerCore(1)));
        assert_eq!(n("4*cores"), Ok(ThreadCount::PerCore(4)));
        assert_eq!(n(" 2 * Cores "), Ok(ThreadCount::PerCore(2)));
        assert!(n("0*cores").is_err());
        assert!(n("cores*2").is_err());
        assert!(n("-1*cores").is_err());
        assert!(n("many").is_err());
        assert_eq!(
            thread_count(&RawThreadCount::Number(Number::Integer(8))),
            Ok(ThreadCount::Fixed(8))
        );
        assert!(thread_count(&RawThreadCount::Number(Number::Float(8.5))).is_err());
    }

    #[test]
    fn every_missing_constant_is_named() {
        let text = net_classic()
            .replace("period_ms = 500", "")
            .replace("bias = 0.15", "");
        let e = parse_policy(&text, "p.toml").unwrap_err();
        let paths: Vec<_> = e.diagnostics().filter_map(|d| d.path.clone()).collect();
        assert_eq!(paths, ["gate.period_ms", "hill_climbing.bias"]);
    }

    #[test]
    fn a_missing_table_is_one_error() {
        let text = match net_classic().find("[dispatch]") {
            Some(i) => &net_classic()[..i],
            None => panic!("no [dispatch]"),
        };
        let e = parse_policy(text, "p.toml").unwrap_err();
        assert_eq!(e.len(), 1, "{e}");
        assert_eq!(e.path(), Some("dispatch"));
    }

    #[test]
    fn resolve_finds_names_and_aliases_in_any_case() {
        assert_eq!(resolve_policy("net-classic").unwrap().name, "net-classic");
        assert_eq!(resolve_policy("NET5").unwrap().name, "net-classic");
        assert_eq!(resolve_policy(" coreclr3 ").unwrap().name, "net-classic");
        let e = resolve_policy("./no/such/policy.toml").unwrap_err();
        assert!(e.message().contains("not found"), "{e}");
    }

    #[test]
    fn never_panics_on_mangled_policy() {
        // Mutations at every token boundary outside comments.
        let text = net_classic();
        let mut previous = '\n';
        let mut in_comment = false;
        for (i, c) in text.char_indices() {
            let boundary = matches!(previous, ' ' | '=' | '[' | '"' | '\n' | ',');
            in_comment = (in_comment || c == '#') && c != '\n';
            previous = c;
            if in_comment || !boundary {
                continue;
            }
            for sub in ["", "\"", "[", "=", "-", "1e400", "\n", "cores", "0"] {
                let mut t = String::with_capacity(text.len() + 8);
                t.push_str(&text[..i]);
                t.push_str(sub);
                t.push_str(&text[i + c.len_utf8()..]);
                let _ = parse_policy(&t, "m.toml");
            }
        }
    }
}
