//! Stage two of loading a policy: check every value of the
//! [`raw`](super::raw) file and build the validated [`PolicyConfig`].
//!
//! Every problem is reported, not just the first, each with its TOML path
//! (`gate.period_ms`); a missing table is one error, not one per key. No
//! file is read here: a wrapping policy's own keys are checked here
//! ([`wrapper_keys`]) and joined with its base ([`build_wrapper`]) once
//! [`super::resolve`] has loaded that base.

use std::collections::HashSet;
use std::ops::Range;
use std::path::Path;

use toml::Spanned;

use super::raw::{
    FirstTickValue, NumberOrList, NumberOrText, RawBlocking, RawDispatch, RawGate, RawHillClimbing,
    RawLibrary, RawMono, RawNet20, RawPolicy, RawThreads, RawThrottle, RawTimers,
};
use crate::diagnostics::{Problem, Report, choose};
use crate::policy::config::{
    BlockingConfig, Comparison, CpuReading, DispatchConfig, FirstCpuSample, FirstTick, GateConfig,
    GateStart, HeuristicStart, HillClimbingConfig, LibraryConfig, ModelKind, MonoConfig,
    Net20Config, PolicyConfig, RequestMode, Spread, ThreadCount, ThreadsConfig, ThrottleConfig,
    TimerDispatch, TimerQueueChoice, TimersConfig,
};
use crate::scenario::model::{MAX_THREADS_LIMIT, THROTTLE_KINDS, throttle_kind_name};
use crate::scenario::raw::{Number, TimeUnit};
use crate::time::SimDuration;

/// The models a policy file may name: the model registry's (`policy::models!`).
pub(super) const MODELS: &[ModelKind] = ModelKind::ALL;

/// `comparison = ...` values.
const COMPARISONS: &[(&str, Comparison)] = &[
    (">", Comparison::Greater),
    (">=", Comparison::GreaterOrEqual),
];

const CPU_READINGS: &[(&str, CpuReading)] = &[
    ("all-processors", CpuReading::AllProcessors),
    ("one-processor", CpuReading::OneProcessor),
];

const GATE_STARTS: &[(&str, GateStart)] = &[
    ("at-request", GateStart::AtRequest),
    ("with-first-thread", GateStart::WithFirstThread),
];

const FIRST_CPU_SAMPLES: &[(&str, FirstCpuSample)] = &[
    ("since-gate-start", FirstCpuSample::SinceGateStart),
    ("since-boot", FirstCpuSample::SinceBoot),
];

/// `[mono] heuristic_start = ...` values.
const HEURISTIC_STARTS: &[(&str, HeuristicStart)] = &[
    ("since-boot", HeuristicStart::SinceBoot),
    ("since-pool-start", HeuristicStart::SincePoolStart),
];

/// `[dispatch] requests = ...` values.
const REQUEST_MODES: &[(&str, RequestMode)] = &[
    ("every-dequeue", RequestMode::EveryDequeue),
    ("first-dequeue", RequestMode::FirstDequeue),
];

/// `[timers] dispatch = ...` values.
const TIMER_DISPATCHES: &[(&str, TimerDispatch)] = &[
    ("unmanaged-request", TimerDispatch::UnmanagedRequest),
    ("time-sensitive", TimerDispatch::TimeSensitive),
    ("high-priority", TimerDispatch::HighPriority),
    ("global-per-callback", TimerDispatch::GlobalPerCallback),
];

const TIMER_QUEUE_CHOICES: &[(&str, TimerQueueChoice)] = &[
    ("creating-thread", TimerQueueChoice::CreatingThread),
    ("thread-processor", TimerQueueChoice::ThreadProcessor),
    ("random", TimerQueueChoice::Random),
];

/// Largest `K` in `"K*cores"`.
const MAX_PER_CORE: u32 = 1024;

/// The model-specific tables: (model, table, built-in file to copy it from).
const MODEL_TABLES: &[(ModelKind, &str, &str)] = &[
    (ModelKind::Portable, "blocking", "net6.toml"),
    (ModelKind::Mono, "mono", "mono.toml"),
    (ModelKind::Net20, "net20", "net20-sp1.toml"),
];

/// A table of the policy file during checking: where it is and whether it
/// was written at all (a missing table is one error, not one per key).
struct Table<'t, T> {
    raw: &'t T,
    span: Range<usize>,
    path: &'static str,
    present: bool,
    /// The built-in file to look at for its keys.
    example: &'static str,
}

impl<'t, T> Table<'t, T> {
    /// A table every policy file gives.
    fn required(
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
    fn given(
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

fn flag(b: &bool) -> Result<bool, Problem> {
    Ok(*b)
}

fn thread_count(v: &NumberOrText) -> Result<ThreadCount, Problem> {
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

fn first_tick(v: &FirstTickValue) -> Result<FirstTick, Problem> {
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
fn tick_count(v: &NumberOrText) -> Result<Option<SimDuration>, Problem> {
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
fn spread(unit: TimeUnit) -> impl Fn(&NumberOrList) -> Result<Spread, Problem> {
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

/// `name`, `aliases` and `description`, shared by full and wrapping policies.
fn build_names(raw: &RawPolicy, file: &str, r: &mut Report<'_>) -> (String, Vec<String>, String) {
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
    let description = match &raw.description {
        Some(d) => d.get_ref().trim().to_string(),
        None => String::new(),
    };
    (name, aliases, description)
}

fn build_throttle(t: &Table<'_, RawThrottle>, r: &mut Report<'_>) -> Option<ThrottleConfig> {
    let kind = t.get(r, "kind", &t.raw.kind, |s| {
        choose(s, THROTTLE_KINDS, "throttle kind")
    });
    let limit = t.get(r, "limit", &t.raw.limit, thread_count);
    Some(ThrottleConfig {
        kind: kind?,
        limit: limit?,
    })
}

fn throttle_text(t: &ThrottleConfig) -> String {
    let limit = match t.limit {
        ThreadCount::Fixed(n) => n.to_string(),
        ThreadCount::PerCore(1) => "cores".to_string(),
        ThreadCount::PerCore(k) => format!("{k}*cores"),
    };
    format!("{}, limit {limit}", throttle_kind_name(t.kind))
}

/// A wrapping policy's own keys, checked; its base is loaded by
/// [`super::resolve`] and joined with [`build_wrapper`].
pub(super) struct WrapperKeys {
    name: String,
    aliases: Vec<String>,
    description: String,
    /// The `base` value, trimmed.
    pub base_name: String,
    /// The `[throttle]` table, if written and valid.
    throttle: Option<ThrottleConfig>,
}

/// A wrapping policy (`base` and an optional `[throttle]`), before its base
/// is loaded: its names, no key it takes from its base, its throttle.
pub(super) fn wrapper_keys(
    raw: &RawPolicy,
    base: &Spanned<String>,
    file: &str,
    r: &mut Report<'_>,
) -> WrapperKeys {
    let (name, aliases, description) = build_names(raw, file, r);
    let base_name = base.get_ref().trim().to_string();
    // Keys that a wrapper takes from its base.
    let spans: [(&str, Option<Range<usize>>); 10] = [
        ("`model`", raw.model.as_ref().map(Spanned::span)),
        ("`[threads]`", raw.threads.as_ref().map(Spanned::span)),
        ("`[gate]`", raw.gate.as_ref().map(Spanned::span)),
        (
            "`[hill_climbing]`",
            raw.hill_climbing.as_ref().map(Spanned::span),
        ),
        ("`[dispatch]`", raw.dispatch.as_ref().map(Spanned::span)),
        ("`[timers]`", raw.timers.as_ref().map(Spanned::span)),
        ("`[blocking]`", raw.blocking.as_ref().map(Spanned::span)),
        ("`[mono]`", raw.mono.as_ref().map(Spanned::span)),
        ("`[net20]`", raw.net20.as_ref().map(Spanned::span)),
        ("`[library]`", raw.library.as_ref().map(Spanned::span)),
    ];
    for (what, span) in spans {
        if let Some(span) = span {
            let path = what.trim_matches(['`', '[', ']']);
            r.error(
                span,
                path,
                Problem::new(format!(
                    "a wrapping policy (`base = \"{base_name}\"`) takes every constant from its base: {what} is not allowed here"
                ))
                .help(
                    "a wrapping policy has only name, aliases, description, base and [throttle]; to change a constant, copy the base's file and edit it",
                ),
            );
        }
    }
    let fallback = RawThrottle::default();
    let throttle_table = Table::given(
        &raw.throttle,
        &fallback,
        "throttle",
        "net-classic-throttled.toml",
    );
    let throttle = if throttle_table.present {
        build_throttle(&throttle_table, r)
    } else {
        None
    };
    WrapperKeys {
        name,
        aliases,
        description,
        base_name,
        throttle,
    }
}

/// The wrapping policy `keys` over its loaded base: throttles do not
/// stack; the rest is the base's.
pub(super) fn build_wrapper(
    raw: &RawPolicy,
    keys: WrapperKeys,
    base_policy: PolicyConfig,
    r: &mut Report<'_>,
) -> Option<PolicyConfig> {
    let WrapperKeys {
        name,
        aliases,
        description,
        base_name: _,
        throttle,
    } = keys;
    if let (Some(inner), Some(outer)) = (&base_policy.throttle, &raw.throttle) {
        r.error(
            outer.span(),
            "throttle",
            Problem::new(format!(
                "the base policy \"{}\" already has a throttle ({}); throttles do not stack",
                base_policy.name,
                throttle_text(inner)
            ))
            .help("wrap the unthrottled policy it wraps instead, or remove this [throttle] to only rename it"),
        );
        return None;
    }
    let throttle = match raw.throttle {
        Some(_) => Some(throttle?),
        None => base_policy.throttle.clone(),
    };
    let description = if !description.is_empty() {
        description
    } else {
        match &throttle {
            Some(t) => format!(
                "{} behind a throttle ({})",
                base_policy.name,
                throttle_text(t)
            ),
            None => base_policy.description.clone(),
        }
    };
    Some(PolicyConfig {
        name,
        aliases,
        description,
        throttle,
        ..base_policy
    })
}

pub(super) fn build_policy(raw: &RawPolicy, file: &str, r: &mut Report<'_>) -> PolicyConfig {
    let (name, aliases, description) = build_names(raw, file, r);
    let model = match &raw.model {
        None => {
            r.error(
                0..0,
                "model",
                Problem::new("missing key `model`").help(format!(
                    "say which model interprets the constants: {}; or write `base = \"NAME\"` to wrap another policy",
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
    if let Some(t) = &raw.throttle {
        r.error(
            t.span(),
            "throttle",
            Problem::new("`[throttle]` goes in a wrapping policy, not in one with a `model`").help(
                format!("write a separate file with `base = \"{name}\"` and this [throttle] table"),
            ),
        );
    }

    let threads = build_threads(raw, r);
    let gate = build_gate(raw, r);
    let hill_climbing = build_hill_climbing(raw, r);
    let dispatch = build_dispatch(raw, r);
    let timers = build_timers(raw, r);

    // Model-specific tables: required with their model, refused without it.
    let spans: [Option<Range<usize>>; 3] = [
        raw.blocking.as_ref().map(Spanned::span),
        raw.mono.as_ref().map(Spanned::span),
        raw.net20.as_ref().map(Spanned::span),
    ];
    for ((kind, table, example), span) in MODEL_TABLES.iter().zip(spans) {
        let Some(model) = model else { break };
        match span {
            None if model == *kind => r.error(
                0..0,
                table,
                Problem::new(format!(
                    "missing table `[{table}]`: model = \"{}\" needs it",
                    kind.name()
                ))
                .help(format!("copy it from policies/{example} and edit it")),
            ),
            Some(span) if model != *kind => r.error(
                span,
                table,
                Problem::new(format!(
                    "`[{table}]` is for model = \"{}\"; this policy's model is \"{}\"",
                    kind.name(),
                    model.name()
                ))
                .help(format!(
                    "remove the table, or set model = \"{}\"",
                    kind.name()
                )),
            ),
            _ => {}
        }
    }
    // A refused table's keys are not checked (one error for it is enough);
    // with an unknown model every written table is.
    let checks = |kind: ModelKind| model.is_none_or(|m| m == kind);
    let wants = |kind: ModelKind| model == Some(kind);
    let blocking = checks(ModelKind::Portable)
        .then(|| build_blocking(raw, r))
        .flatten()
        .filter(|_| wants(ModelKind::Portable));
    let mono = checks(ModelKind::Mono)
        .then(|| build_mono(raw, r))
        .flatten()
        .filter(|_| wants(ModelKind::Mono));
    let net20 = checks(ModelKind::Net20)
        .then(|| build_net20(raw, r))
        .flatten()
        .filter(|_| wants(ModelKind::Net20));
    // 2.0 runs its queueing path (create a worker, or make sure the gate
    // thread exists) on every QueueUserWorkItem: a managed request cap
    // would starve it, and 2.0 has none.
    if wants(ModelKind::Net20) && dispatch.max_outstanding_requests_per_core != MAX_PER_CORE {
        let span = raw
            .dispatch
            .as_ref()
            .and_then(|d| {
                d.get_ref()
                    .max_outstanding_requests_per_core
                    .as_ref()
                    .map(Spanned::span)
            })
            .unwrap_or(0..0);
        r.error(
            span,
            "dispatch.max_outstanding_requests_per_core",
            Problem::new(format!(
                "model = \"net20\" has no managed request cap: 2.0 asks for a thread on every \
                 queued item, found {}",
                dispatch.max_outstanding_requests_per_core
            ))
            .help(format!(
                "write max_outstanding_requests_per_core = {MAX_PER_CORE} (no cap), as policies/net20-sp1.toml does"
            )),
        );
    }
    // 2.0's gate (its own model, `policy::net20`) starts with its first
    // request; it does not model a start with the pool.
    if wants(ModelKind::Net20) && gate.start != GateStart::AtRequest {
        let span = raw
            .gate
            .as_ref()
            .and_then(|g| g.get_ref().start.as_ref().map(Spanned::span))
            .unwrap_or(0..0);
        r.error(
            span,
            "gate.start",
            Problem::new(
                "model = \"net20\" does not model a gate thread that starts with the pool"
                    .to_string(),
            )
            .help("write start = \"at-request\", as policies/net20-sp1.toml does"),
        );
    }

    PolicyConfig {
        name,
        aliases,
        description,
        model: model.unwrap_or(ModelKind::Classic),
        threads,
        gate,
        hill_climbing,
        dispatch,
        timers,
        blocking,
        mono,
        net20,
        library: build_library(raw, r),
        throttle: None,
    }
}

/// `[library]`: facts of the runtime's class library the TPL shapes depend on.
fn build_library(raw: &RawPolicy, r: &mut Report<'_>) -> LibraryConfig {
    if raw.library.is_none() {
        return LibraryConfig::default();
    }
    let fallback = RawLibrary::default();
    let t = Table::given(&raw.library, &fallback, "library", "net8.toml");
    LibraryConfig {
        range_is_list: t
            .get(r, "range_is_list", &t.raw.range_is_list, |b| Ok(*b))
            .unwrap_or(false),
    }
}

fn build_threads(raw: &RawPolicy, r: &mut Report<'_>) -> ThreadsConfig {
    let fallback = RawThreads::default();
    let t = Table::required(&raw.threads, &fallback, "threads", r);
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
    ThreadsConfig {
        min: min.unwrap_or(ThreadCount::Fixed(1)),
        max: max.unwrap_or(ThreadCount::Fixed(1)),
        start_latency: t
            .get(r, "start_ms", &t.raw.start_ms, spread(TimeUnit::Ms))
            .unwrap_or_else(|| Spread::fixed(SimDuration::ZERO)),
        first_start_latency: t
            .get(
                r,
                "first_start_ms",
                &t.raw.first_start_ms,
                spread(TimeUnit::Ms),
            )
            .unwrap_or_else(|| Spread::fixed(SimDuration::ZERO)),
        wake_latency: t
            .get(r, "wake_us", &t.raw.wake_us, |n| {
                n.duration(TimeUnit::Us, false)
            })
            .unwrap_or_default(),
        idle_timeout: t
            .get(r, "idle_timeout_ms", &t.raw.idle_timeout_ms, ms(false))
            .unwrap_or_default(),
        dedicated_start_latency: t
            .get(
                r,
                "dedicated_start_ms",
                &t.raw.dedicated_start_ms,
                ms(false),
            )
            .unwrap_or_default(),
        honours_set_min_threads: t
            .get(
                r,
                "honours_set_min_threads",
                &t.raw.honours_set_min_threads,
                flag,
            )
            .unwrap_or(true),
        main_yields_to_first_worker: t
            .get(
                r,
                "main_yields_to_first_worker",
                &t.raw.main_yields_to_first_worker,
                flag,
            )
            .unwrap_or(false),
        spin_cpu_percent: t
            .get(
                r,
                "spin_cpu_percent",
                &t.raw.spin_cpu_percent,
                u32_in(1, 100),
            )
            .unwrap_or(100),
        sleep_overshoot: t
            .get(
                r,
                "sleep_overshoot_us",
                &t.raw.sleep_overshoot_us,
                spread(TimeUnit::Us),
            )
            .unwrap_or_else(|| Spread::fixed(SimDuration::ZERO)),
        wake_preemption: t
            .get(
                r,
                "wake_preempt_us",
                &t.raw.wake_preempt_us,
                spread(TimeUnit::Us),
            )
            .unwrap_or_else(|| Spread::fixed(SimDuration::ZERO)),
        cpu_second: t
            .get(r, "cpu_second_ms", &t.raw.cpu_second_ms, |v| {
                let s = spread(TimeUnit::Ms)(v)?;
                if s.min() == SimDuration::ZERO {
                    return Err(Problem::new("must be above 0 ms").help(
                        "how long a cpu_ms step of 1000 ms takes: 1000 is exact, 1030 is 3 % slow",
                    ));
                }
                Ok(s)
            })
            .unwrap_or_else(|| Spread::fixed(SimDuration::from_ms(1000))),
    }
}

fn build_gate(raw: &RawPolicy, r: &mut Report<'_>) -> GateConfig {
    let fallback = RawGate::default();
    let g = Table::required(&raw.gate, &fallback, "gate", r);
    GateConfig {
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
        first_tick: g
            .get(r, "first_tick_ms", &g.raw.first_tick_ms, first_tick)
            .unwrap_or(FirstTick::Random),
        first_tick_tiered: g.get(
            r,
            "first_tick_tiered_ms",
            &g.raw.first_tick_tiered_ms,
            first_tick,
        ),
        first_tick_tiered_one_core: g.get(
            r,
            "first_tick_tiered_one_core_ms",
            &g.raw.first_tick_tiered_one_core_ms,
            first_tick,
        ),
        tick_count: g
            .get(r, "tick_count_ms", &g.raw.tick_count_ms, tick_count)
            .unwrap_or_default(),
        drift: g
            .get(r, "drift_ms", &g.raw.drift_ms, spread(TimeUnit::Ms))
            .unwrap_or_else(|| Spread::fixed(SimDuration::ZERO)),
        idle_ticks_before_stop: g
            .get(
                r,
                "idle_ticks_before_stop",
                &g.raw.idle_ticks_before_stop,
                u32_in(0, 100_000),
            )
            .unwrap_or_default(),
        first_cpu_sample: g
            .get(r, "first_cpu_sample", &g.raw.first_cpu_sample, |s| {
                choose(s, FIRST_CPU_SAMPLES, "first CPU sample")
            })
            .unwrap_or(FirstCpuSample::SinceGateStart),
        cpu_reading: g
            .get(r, "cpu_reading", &g.raw.cpu_reading, |s| {
                choose(s, CPU_READINGS, "CPU reading")
            })
            .unwrap_or(CpuReading::AllProcessors),
        start: g
            .get(r, "start", &g.raw.start, |s| {
                choose(s, GATE_STARTS, "gate start")
            })
            .unwrap_or(GateStart::AtRequest),
    }
}

fn build_hill_climbing(raw: &RawPolicy, r: &mut Report<'_>) -> HillClimbingConfig {
    let fallback = RawHillClimbing::default();
    let h = Table::required(&raw.hill_climbing, &fallback, "hill_climbing", r);
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
    HillClimbingConfig {
        enabled: h.get(r, "enabled", &hc.enabled, flag).unwrap_or_default(),
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
        startup_completions_tiered: h
            .get(
                r,
                "startup_completions_tiered",
                &hc.startup_completions_tiered,
                u32_in(0, 1_000),
            )
            .unwrap_or_default(),
    }
}

fn build_dispatch(raw: &RawPolicy, r: &mut Report<'_>) -> DispatchConfig {
    let fallback = RawDispatch::default();
    let d = Table::required(&raw.dispatch, &fallback, "dispatch", r);
    DispatchConfig {
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
        requests: d
            .get(r, "requests", &d.raw.requests, |s| {
                choose(s, REQUEST_MODES, "request mode")
            })
            .unwrap_or(RequestMode::EveryDequeue),
        leave_at_quantum: d
            .get(r, "leave_at_quantum", &d.raw.leave_at_quantum, flag)
            .unwrap_or_default(),
    }
}

fn build_timers(raw: &RawPolicy, r: &mut Report<'_>) -> TimersConfig {
    let fallback = RawTimers::default();
    let t = Table::required(&raw.timers, &fallback, "timers", r);
    TimersConfig {
        queues: t
            .get(r, "queues", &t.raw.queues, thread_count)
            .unwrap_or(ThreadCount::Fixed(1)),
        dispatch: t
            .get(r, "dispatch", &t.raw.dispatch, |s| {
                choose(s, TIMER_DISPATCHES, "timer dispatch")
            })
            .unwrap_or(TimerDispatch::GlobalPerCallback),
        queue_of: t
            .get(r, "queue_of", &t.raw.queue_of, |s| {
                choose(s, TIMER_QUEUE_CHOICES, "timer queue choice")
            })
            .unwrap_or(TimerQueueChoice::Random),
        tick_count: t
            .get(r, "tick_count_ms", &t.raw.tick_count_ms, tick_count)
            .unwrap_or_default(),
    }
}

/// The runtime clamps `MaxDelayMs` to `[1, 500]`.
const MAX_BLOCKING_DELAY_MS: f64 = 500.0;

/// `[blocking]`, if written (its presence is checked against the model).
fn build_blocking(raw: &RawPolicy, r: &mut Report<'_>) -> Option<BlockingConfig> {
    raw.blocking.as_ref()?;
    let fallback = RawBlocking::default();
    let b = Table::given(&raw.blocking, &fallback, "blocking", "net6.toml");
    let clamp_help = "the runtime clamps MaxDelayMs to [1, 500] and DelayStepMs to [1, MaxDelayMs]: a value outside would not be what .NET runs";
    let max_delay = b.get(r, "max_delay_ms", &b.raw.max_delay_ms, |n| {
        let d = n.duration(TimeUnit::Ms, true)?;
        let x = d.as_ms_f64();
        if !(1.0..=MAX_BLOCKING_DELAY_MS).contains(&x) {
            return Err(
                Problem::new(format!("must be between 1 and 500 ms, found {n}")).help(clamp_help),
            );
        }
        Ok(d)
    });
    let delay_step = b.get(r, "delay_step_ms", &b.raw.delay_step_ms, |n| {
        let d = n.duration(TimeUnit::Ms, true)?;
        if d.as_ms_f64() < 1.0 {
            return Err(Problem::new(format!("must be at least 1 ms, found {n}")).help(clamp_help));
        }
        Ok(d)
    });
    if let (Some(step), Some(max), Some(step_span)) = (delay_step, max_delay, &b.raw.delay_step_ms)
        && step > max
    {
        r.error(
            step_span.span(),
            "blocking.delay_step_ms",
            Problem::new(format!(
                "delay_step_ms ({}) is greater than max_delay_ms ({})",
                step_span.get_ref(),
                b.raw
                    .max_delay_ms
                    .as_ref()
                    .map_or(String::new(), |m| m.get_ref().to_string())
            ))
            .help(clamp_help),
        );
    }
    Some(BlockingConfig {
        enabled: b.get(r, "enabled", &b.raw.enabled, flag).unwrap_or(true),
        threads_to_add_without_delay_per_core: b
            .get(
                r,
                "threads_to_add_without_delay_per_core",
                &b.raw.threads_to_add_without_delay_per_core,
                u32_in(0, MAX_PER_CORE),
            )
            .unwrap_or(1),
        threads_per_delay_step_per_core: b
            .get(
                r,
                "threads_per_delay_step_per_core",
                &b.raw.threads_per_delay_step_per_core,
                u32_in(1, MAX_PER_CORE),
            )
            .unwrap_or(1),
        delay_step: delay_step.unwrap_or(SimDuration::from_ms(25)),
        max_delay: max_delay.unwrap_or(SimDuration::from_ms(250)),
    })
}

/// `[mono]`, if written.
fn build_mono(raw: &RawPolicy, r: &mut Report<'_>) -> Option<MonoConfig> {
    raw.mono.as_ref()?;
    let fallback = RawMono::default();
    let m = Table::given(&raw.mono, &fallback, "mono", "mono.toml");
    Some(MonoConfig {
        max_creations_per_second: m
            .get(
                r,
                "max_creations_per_second",
                &m.raw.max_creations_per_second,
                u32_in(1, 100_000),
            )
            .unwrap_or(10),
        inject_tries: m
            .get(r, "inject_tries", &m.raw.inject_tries, u32_in(1, 1000))
            .unwrap_or(5),
        threads_per_cpu: m
            .get(r, "threads_per_cpu", &m.raw.threads_per_cpu, |n| {
                u32_in(1, 50)(n).map_err(|p| p.help("MONO_THREADS_PER_CPU: Mono clamps it to 1-50"))
            })
            .unwrap_or(1),
        heuristic_start: m
            .get(r, "heuristic_start", &m.raw.heuristic_start, |s| {
                choose(s, HEURISTIC_STARTS, "heuristic start")
            })
            .unwrap_or(HeuristicStart::SinceBoot),
        creation_wait: m
            .get(r, "creation_wait_ms", &m.raw.creation_wait_ms, ms(false))
            .unwrap_or(SimDuration::ZERO),
        max_starting: m
            .get(r, "max_starting", &m.raw.max_starting, u32_in(0, 32767))
            .unwrap_or(0),
    })
}

/// `[net20]`, if written.
fn build_net20(raw: &RawPolicy, r: &mut Report<'_>) -> Option<Net20Config> {
    raw.net20.as_ref()?;
    let fallback = RawNet20::default();
    let n = Table::given(&raw.net20, &fallback, "net20", "net20-sp1.toml");
    Some(Net20Config {
        creation_delay: n
            .get(r, "creation_delay_ms", &n.raw.creation_delay_ms, ms(false))
            .unwrap_or_default(),
        creation_delay_growth: n
            .get(
                r,
                "creation_delay_growth",
                &n.raw.creation_delay_growth,
                float_at_least(1.0),
            )
            .unwrap_or(1.0),
        sp1_start_delay_bug: n
            .get(r, "sp1_start_delay_bug", &n.raw.sp1_start_delay_bug, flag)
            .unwrap_or_default(),
    })
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
    use crate::policy_file::{NoFiles, parse_policy_in};

    /// A policy file's text parsed with no file system behind it.
    fn parse_policy(
        text: &str,
        file: &str,
    ) -> Result<crate::policy::PolicyConfig, crate::diagnostics::LoadError> {
        parse_policy_in(text, file, &NoFiles)
    }
    use crate::policy_file::test_support::{builtin_text, net_classic};

    #[test]
    fn thread_counts_accept_numbers_and_multiples_of_cores() {
        let n = |s: &str| thread_count(&NumberOrText::Text(s.to_string()));
        assert_eq!(n("cores"), Ok(ThreadCount::PerCore(1)));
        assert_eq!(n("4*cores"), Ok(ThreadCount::PerCore(4)));
        assert_eq!(n(" 2 * Cores "), Ok(ThreadCount::PerCore(2)));
        assert!(n("0*cores").is_err());
        assert!(n("cores*2").is_err());
        assert!(n("-1*cores").is_err());
        assert!(n("many").is_err());
        assert_eq!(
            thread_count(&NumberOrText::Number(Number::Integer(8))),
            Ok(ThreadCount::Fixed(8))
        );
        assert!(thread_count(&NumberOrText::Number(Number::Float(8.5))).is_err());
    }

    #[test]
    fn first_tick_is_a_duration_random_or_measured_quantiles() {
        let t = |s: &str| first_tick(&FirstTickValue::Text(s.to_string()));
        assert_eq!(t("random"), Ok(FirstTick::Random));
        assert_eq!(t(" Random "), Ok(FirstTick::Random));
        assert!(t("soon").unwrap_err().message.contains("\"random\""));
        assert_eq!(
            first_tick(&FirstTickValue::Number(Number::Float(0.5))),
            Ok(FirstTick::After(SimDuration::from_us(500)))
        );
        assert!(first_tick(&FirstTickValue::Number(Number::Integer(-1))).is_err());
        let list = |v: &[i64]| {
            first_tick(&FirstTickValue::List(
                v.iter().map(|&n| Number::Integer(n)).collect(),
            ))
        };
        assert_eq!(
            list(&[800, 850, 900]),
            Ok(FirstTick::Measured(Spread::from_quantiles(vec![
                SimDuration::from_ms(800),
                SimDuration::from_ms(850),
                SimDuration::from_ms(900),
            ])))
        );
        assert!(list(&[900, 800]).unwrap_err().message.contains("decrease"));
        assert!(list(&[900]).is_err());
    }

    #[test]
    fn every_missing_constant_is_named() {
        let text = net_classic()
            .replace("period_ms = 500", "")
            .replace("bias = 0.15", "")
            .replace("leave_at_quantum = true", "");
        let e = parse_policy(&text, "p.toml").unwrap_err();
        let paths: Vec<_> = e.diagnostics().filter_map(|d| d.path.clone()).collect();
        assert_eq!(
            paths,
            [
                "gate.period_ms",
                "hill_climbing.bias",
                "dispatch.leave_at_quantum"
            ]
        );
    }

    #[test]
    fn linux_policies_draw_a_timers_queue_and_name_the_choices() {
        for name in ["coreclr3-linux.toml", "net8.toml"] {
            let p = parse_policy(builtin_text(name), name).unwrap();
            assert_eq!(
                p.timers.queue_of,
                TimerQueueChoice::ThreadProcessor,
                "{name}"
            );
            let text = builtin_text(name).replace(
                "queue_of = \"thread-processor\"",
                "queue_of = \"creating-thread\"",
            );
            let p = parse_policy(&text, name).unwrap();
            assert_eq!(p.timers.queue_of, TimerQueueChoice::CreatingThread);
        }
        let text = builtin_text("net8.toml")
            .replace("queue_of = \"thread-processor\"", "queue_of = \"by-cpu\"");
        let e = parse_policy(&text, "p.toml").unwrap_err();
        assert_eq!(e.path(), Some("timers.queue_of"));
        assert!(e.to_string().contains("creating-thread"), "{e}");
    }

    #[test]
    fn net20_refuses_a_request_cap() {
        let sp1 = builtin_text("net20-sp1.toml");
        assert!(parse_policy(sp1, "net20-sp1.toml").is_ok());
        let capped = sp1.replace(
            "max_outstanding_requests_per_core = 1024",
            "max_outstanding_requests_per_core = 1",
        );
        assert_ne!(capped, sp1);
        let e = parse_policy(&capped, "p.toml").unwrap_err();
        assert_eq!(e.len(), 1, "{e}");
        assert_eq!(e.path(), Some("dispatch.max_outstanding_requests_per_core"));
        assert!(e.to_string().contains("no managed request cap"), "{e}");
    }

    #[test]
    fn the_gate_start_is_one_of_its_words_and_net20_has_only_at_request() {
        let classic = builtin_text("net-classic.toml");
        let with_pool = classic.replace("start = \"at-request\"", "start = \"with-first-thread\"");
        assert_ne!(with_pool, classic);
        let p = parse_policy(&with_pool, "p.toml").unwrap();
        assert_eq!(p.gate.start, GateStart::WithFirstThread);
        let unknown = classic.replace("start = \"at-request\"", "start = \"at-boot\"");
        let e = parse_policy(&unknown, "p.toml").unwrap_err();
        assert_eq!(e.path(), Some("gate.start"));
        assert!(e.to_string().contains("with-first-thread"), "{e}");
        let sp1 = builtin_text("net20-sp1.toml");
        let e = parse_policy(
            &sp1.replace("start = \"at-request\"", "start = \"with-first-thread\""),
            "p.toml",
        )
        .unwrap_err();
        assert_eq!(e.len(), 1, "{e}");
        assert_eq!(e.path(), Some("gate.start"));
        assert!(e.to_string().contains("at-request"), "{e}");
    }

    #[test]
    fn a_missing_table_is_one_error() {
        let text = match net_classic().find("[timers]") {
            Some(i) => &net_classic()[..i],
            None => panic!("no [timers]"),
        };
        let e = parse_policy(text, "p.toml").unwrap_err();
        assert_eq!(e.len(), 1, "{e}");
        assert_eq!(e.path(), Some("timers"));
    }

    #[test]
    fn model_tables_go_with_their_model() {
        let net6 = builtin_text("net6.toml");
        // Each model-specific table, refused under another model.
        let e = parse_policy(
            &net6.replace("model = \"portable\"", "model = \"mono\""),
            "p.toml",
        )
        .unwrap_err();
        let paths: Vec<_> = e.diagnostics().filter_map(|d| d.path.clone()).collect();
        assert_eq!(paths, ["mono", "blocking"], "{e}");
        assert!(
            e.to_string()
                .contains("missing table `[mono]`: model = \"mono\" needs it")
        );
        assert!(e.to_string().contains("policies/mono.toml"));
        assert!(
            e.to_string().contains(
                "`[blocking]` is for model = \"portable\"; this policy's model is \"mono\""
            )
        );
        // An unknown model: one error, not one per table.
        let e = parse_policy(
            &net6.replace("model = \"portable\"", "model = \"portabel\""),
            "p.toml",
        )
        .unwrap_err();
        assert_eq!(e.len(), 1, "{e}");
    }

    #[test]
    fn blocking_delays_follow_the_runtime_clamps() {
        let net6 = builtin_text("net6.toml");
        let e = parse_policy(
            &net6.replace("max_delay_ms = 250", "max_delay_ms = 501"),
            "p.toml",
        )
        .unwrap_err();
        assert_eq!(e.path(), Some("blocking.max_delay_ms"));
        assert!(
            e.to_string().contains("clamps MaxDelayMs to [1, 500]"),
            "{e}"
        );
        let e = parse_policy(
            &net6.replace("delay_step_ms = 25", "delay_step_ms = 300"),
            "p.toml",
        )
        .unwrap_err();
        assert_eq!(e.path(), Some("blocking.delay_step_ms"));
        assert!(
            e.message().contains("greater than max_delay_ms (250)"),
            "{e}"
        );
        let e = parse_policy(
            &net6.replace("delay_step_ms = 25", "delay_step_ms = 0.5"),
            "p.toml",
        )
        .unwrap_err();
        assert!(e.message().contains("at least 1 ms"), "{e}");
    }

    #[test]
    fn never_panics_on_mangled_policy() {
        // Mutations at every token boundary outside comments (net6 has
        // every core table and a model table; the wrapper has the rest).
        for file in ["net6.toml", "net-classic-throttled.toml"] {
            let text = builtin_text(file);
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
}
