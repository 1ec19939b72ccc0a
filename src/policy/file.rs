//! Policy files: TOML in, a validated [`PolicyConfig`] out, and the
//! registry of the policies compiled into the binary.
//!
//! A policy file names a model (code) and gives every one of its constants,
//! in the units its key says (`_ms`, `_us`, `_percent`). The core tables
//! (`[threads]`, `[gate]`, `[hill_climbing]`, `[dispatch]`, `[timers]`) are
//! required in every file; `[blocking]`, `[mono]` and `[net20]` are required
//! exactly when the model is `portable`, `mono` or `net20`, and refused
//! otherwise.
//!
//! A *wrapping* policy names another policy with `base = "NAME-OR-PATH"`
//! instead of a model, and has only `name`, `aliases`, `description`, `base`
//! and a `[throttle]` table: it is its base with a throttle over every group.
//!
//! The files in `policies/` are built in (see [`BUILTIN`]), so `poolsim`
//! works from any directory; a user copies one, edits a constant and passes
//! its path. Errors have the same form as scenario errors: file, line,
//! column, TOML path, message, help.

use std::collections::HashSet;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use toml::Spanned;

use crate::diagnostics::{Diagnostic, LoadError, Problem, Report, choose, did_you_mean};
use crate::policy::config::{
    BlockingConfig, Comparison, DispatchConfig, FirstTick, GateConfig, HillClimbingConfig,
    LibraryConfig, ModelKind, MonoConfig, Net20Config, PolicyConfig, RequestMode, ThreadCount,
    ThreadsConfig, ThrottleConfig, TimerDispatch, TimerQueueChoice, TimersConfig,
};
use crate::scenario::model::{MAX_THREADS_LIMIT, THROTTLE_KINDS, throttle_kind_name};
use crate::scenario::raw::{Number, TimeUnit};
use crate::time::SimDuration;

/// The policy files compiled into the binary: (file name, text). Add a file
/// in `policies/` and a line here.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "net-classic.toml",
        include_str!("../../policies/net-classic.toml"),
    ),
    (
        "coreclr3-linux.toml",
        include_str!("../../policies/coreclr3-linux.toml"),
    ),
    ("net6.toml", include_str!("../../policies/net6.toml")),
    ("net8.toml", include_str!("../../policies/net8.toml")),
    ("mono.toml", include_str!("../../policies/mono.toml")),
    (
        "net20-sp1.toml",
        include_str!("../../policies/net20-sp1.toml"),
    ),
    ("net20.toml", include_str!("../../policies/net20.toml")),
    (
        "dedicated-threads.toml",
        include_str!("../../policies/dedicated-threads.toml"),
    ),
    (
        "net-classic-throttled.toml",
        include_str!("../../policies/net-classic-throttled.toml"),
    ),
    (
        "net6-throttled.toml",
        include_str!("../../policies/net6-throttled.toml"),
    ),
];

/// The models a policy file may name; a new model is one line here.
const MODELS: &[ModelKind] = &[
    ModelKind::Classic,
    ModelKind::Portable,
    ModelKind::Mono,
    ModelKind::Net20,
    ModelKind::Dedicated,
];

/// `comparison = ...` values.
const COMPARISONS: &[(&str, Comparison)] = &[
    (">", Comparison::Greater),
    (">=", Comparison::GreaterOrEqual),
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
    ("random", TimerQueueChoice::Random),
];

/// Largest `K` in `"K*cores"`.
const MAX_PER_CORE: u32 = 1024;

/// Most wrapping policies in one chain (`a` wraps `b` wraps `c` ...).
const MAX_WRAP_DEPTH: usize = 8;

/// The model-specific tables: (model, table, built-in file to copy it from).
const MODEL_TABLES: &[(ModelKind, &str, &str)] = &[
    (ModelKind::Portable, "blocking", "net6.toml"),
    (ModelKind::Mono, "mono", "mono.toml"),
    (ModelKind::Net20, "net20", "net20-sp1.toml"),
];

// ---------------------------------------------------------------------------
// Stage one: the file as written.

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a policy table")]
struct RawPolicy {
    name: Option<Spanned<String>>,
    aliases: Option<Spanned<Vec<Spanned<String>>>>,
    model: Option<Spanned<String>>,
    base: Option<Spanned<String>>,
    description: Option<Spanned<String>>,
    threads: Option<Spanned<RawThreads>>,
    gate: Option<Spanned<RawGate>>,
    hill_climbing: Option<Spanned<RawHillClimbing>>,
    dispatch: Option<Spanned<RawDispatch>>,
    timers: Option<Spanned<RawTimers>>,
    blocking: Option<Spanned<RawBlocking>>,
    mono: Option<Spanned<RawMono>>,
    net20: Option<Spanned<RawNet20>>,
    library: Option<Spanned<RawLibrary>>,
    throttle: Option<Spanned<RawThrottle>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct RawLibrary {
    range_is_list: Option<Spanned<bool>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct RawThreads {
    min: Option<Spanned<NumberOrText>>,
    max: Option<Spanned<NumberOrText>>,
    start_ms: Option<Spanned<Number>>,
    wake_us: Option<Spanned<Number>>,
    idle_timeout_ms: Option<Spanned<Number>>,
    dedicated_start_ms: Option<Spanned<Number>>,
    honours_set_min_threads: Option<Spanned<bool>>,
    spin_cpu_percent: Option<Spanned<Number>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct RawGate {
    period_ms: Option<Spanned<Number>>,
    cpu_busy_percent: Option<Spanned<Number>>,
    starvation_delay_ms: Option<Spanned<Number>>,
    busy_delay_per_thread_ms: Option<Spanned<Number>>,
    comparison: Option<Spanned<String>>,
    first_tick_ms: Option<Spanned<NumberOrText>>,
    first_tick_tiered_ms: Option<Spanned<NumberOrText>>,
    tick_count_ms: Option<Spanned<NumberOrText>>,
    drift_ms: Option<Spanned<Number>>,
    idle_ticks_before_stop: Option<Spanned<Number>>,
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
    requests: Option<Spanned<String>>,
    leave_at_quantum: Option<Spanned<bool>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct RawTimers {
    queues: Option<Spanned<NumberOrText>>,
    dispatch: Option<Spanned<String>>,
    queue_of: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct RawBlocking {
    enabled: Option<Spanned<bool>>,
    threads_to_add_without_delay_per_core: Option<Spanned<Number>>,
    threads_per_delay_step_per_core: Option<Spanned<Number>>,
    delay_step_ms: Option<Spanned<Number>>,
    max_delay_ms: Option<Spanned<Number>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct RawMono {
    max_creations_per_second: Option<Spanned<Number>>,
    inject_tries: Option<Spanned<Number>>,
    threads_per_cpu: Option<Spanned<Number>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct RawNet20 {
    creation_delay_ms: Option<Spanned<Number>>,
    creation_delay_growth: Option<Spanned<Number>>,
    sp1_start_delay_bug: Option<Spanned<bool>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table")]
struct RawThrottle {
    kind: Option<Spanned<String>>,
    limit: Option<Spanned<NumberOrText>>,
}

/// A value that is a number or a word: `min`/`max`/`queues`/`limit`
/// (`"cores"`, `"K*cores"`) and `first_tick_ms` (`"random"`).
#[derive(Debug)]
enum NumberOrText {
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
                Ok(NumberOrText::Number(match i64::try_from(v) {
                    Ok(i) => Number::Integer(i),
                    Err(_) => Number::Float(v as f64),
                }))
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

// ---------------------------------------------------------------------------
// Loading, and where a wrapping policy looks for its base.

/// Where the base of a wrapping policy is looked up.
#[derive(Clone, Debug)]
enum Lookup {
    /// A built-in policy: bases are built-in names only (no file access).
    Builtin,
    /// A file: built-in names, then paths relative to `dir` (the wrapper
    /// file's directory), then to the current directory.
    Files { dir: PathBuf },
}

/// One policy being loaded, for the cycle check and messages.
#[derive(Clone, Debug)]
struct Link {
    /// Identity: `builtin:FILE` or the canonical path.
    id: String,
    /// As shown in messages.
    shown: String,
}

impl Link {
    fn builtin(file: &str) -> Link {
        Link {
            id: format!("builtin:{file}"),
            shown: format!("policies/{file}"),
        }
    }

    fn file(path: &Path, shown: &str) -> Link {
        let id = std::fs::canonicalize(path)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| format!("file:{}", path.display()));
        Link {
            id,
            shown: shown.to_string(),
        }
    }
}

fn chain_text(chain: &[Link], last: &Link) -> String {
    chain
        .iter()
        .chain(std::iter::once(last))
        .map(|l| l.shown.as_str())
        .collect::<Vec<_>>()
        .join(" -> ")
}

/// Parses and validates policy TOML `text`; `file` names it in messages, its
/// stem is the default `name`, and its directory is where a relative `base`
/// path is looked up first.
pub fn parse_policy(text: &str, file: &str) -> Result<PolicyConfig, LoadError> {
    let dir = Path::new(file)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let me = Link::file(Path::new(file), file);
    parse_in(text, file, &Lookup::Files { dir }, &me, &mut Vec::new())
}

/// Reads and validates the policy file at `path`.
pub fn load_policy(path: &Path) -> Result<PolicyConfig, LoadError> {
    load_in(path, &mut Vec::new())
}

fn load_in(path: &Path, chain: &mut Vec<Link>) -> Result<PolicyConfig, LoadError> {
    let file = path.display().to_string();
    let text = crate::diagnostics::read_text(path, &file)?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let me = Link::file(path, &file);
    parse_in(&text, &file, &Lookup::Files { dir }, &me, chain)
}

fn parse_builtin(file: &str, text: &str, chain: &mut Vec<Link>) -> Result<PolicyConfig, LoadError> {
    let shown = format!("policies/{file}");
    parse_in(text, &shown, &Lookup::Builtin, &Link::builtin(file), chain)
}

/// Stage one and two of one file; `chain` holds the wrapping policies whose
/// bases are being loaded (outermost first).
fn parse_in(
    text: &str,
    file: &str,
    lookup: &Lookup,
    me: &Link,
    chain: &mut Vec<Link>,
) -> Result<PolicyConfig, LoadError> {
    let raw: RawPolicy = crate::diagnostics::parse_document(text, file)?;
    let mut report = Report::new(file, text);
    let mut base_error = None;
    let policy = match &raw.base {
        Some(base) => {
            chain.push(me.clone());
            let p = build_wrapper(
                &raw,
                base,
                file,
                lookup,
                chain,
                &mut report,
                &mut base_error,
            );
            chain.pop();
            p
        }
        None => Some(build_policy(&raw, file, &mut report)),
    };
    match report.finish(policy) {
        Ok(Some(p)) => Ok(p),
        // Every path that gives no policy records an error first.
        Ok(None) => Err(Diagnostic::new("the policy could not be built")
            .in_file(file)
            .into()),
        Err(e) => Err(match base_error {
            Some(b) => e.followed_by(b),
            None => e,
        }),
    }
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
        .map(|(file, text)| parse_builtin(file, text, &mut Vec::new()))
        .collect()
}

/// Name and aliases of a built-in file, read without checking it (so that
/// looking up a base does not load every built-in).
fn builtin_names(file: &str, text: &str) -> Vec<String> {
    #[derive(Deserialize)]
    struct Names {
        name: Option<String>,
        #[serde(default)]
        aliases: Vec<String>,
    }
    let stem = file.strip_suffix(".toml").unwrap_or(file).to_string();
    match toml::from_str::<Names>(text) {
        Ok(n) => std::iter::once(n.name.unwrap_or(stem))
            .chain(n.aliases)
            .collect(),
        Err(_) => vec![stem],
    }
}

/// Names and aliases of every built-in, in [`BUILTIN`] order (read once).
fn builtin_name_table() -> &'static [Vec<String>] {
    static NAMES: std::sync::OnceLock<Vec<Vec<String>>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        BUILTIN
            .iter()
            .map(|(file, text)| builtin_names(file, text))
            .collect()
    })
}

/// The built-in file named (case-insensitively) `wanted` by its name or an alias.
fn builtin_named(wanted: &str) -> Option<(&'static str, &'static str)> {
    BUILTIN
        .iter()
        .zip(builtin_name_table())
        .find(|(_, names)| names.iter().any(|n| n.trim().eq_ignore_ascii_case(wanted)))
        .map(|(b, _)| *b)
}

/// "net-classic (also net5, ...); ..." for help lines.
fn known_builtins() -> String {
    builtin_name_table()
        .iter()
        .map(|names| match names.split_first() {
            Some((name, [])) => name.clone(),
            Some((name, aliases)) => format!("{name} (also {})", aliases.join(", ")),
            None => String::new(),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Like [`resolve_policy`], but a relative policy path written in a scenario
/// file is looked up beside that file first (`scenario_dir`), and an error
/// about the name itself (unknown, file not found) names the scenario key
/// it came from, `pool.policy`.
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
    resolve_in(name_or_path, scenario_dir.or(Some(Path::new("")))).map_err(|e| {
        if e.file().is_none() && e.path().is_none() {
            e.at_path("pool.policy")
        } else {
            e
        }
    })
}

/// Like [`resolve_policy_for_scenario`] for the scenario file at
/// `scenario_file` (as the CLI has it): an error about the `policy` value
/// itself also gives the scenario file, line and column of that value.
pub fn resolve_policy_for_scenario_file(
    name_or_path: &str,
    scenario_file: &Path,
) -> Result<PolicyConfig, LoadError> {
    resolve_policy_for_scenario(name_or_path, scenario_file.parent()).map_err(|e| {
        if e.file().is_some() {
            return e;
        }
        let file = scenario_file.display().to_string();
        let Ok(text) = std::fs::read_to_string(scenario_file) else {
            return e;
        };
        match crate::diagnostics::value_span(&text, &["pool", "policy"]) {
            Some(span) => e.placed_in(&file, &text, span.start),
            None => e,
        }
    })
}

/// A built-in policy by name or alias (case-insensitive); else, if
/// `name_or_path` looks like a path (contains `/` or `\`, or ends in
/// `.toml`), the policy file there; else an error listing the known names.
pub fn resolve_policy(name_or_path: &str) -> Result<PolicyConfig, LoadError> {
    resolve_in(name_or_path, None)
}

/// [`resolve_policy`]; `scenario_dir` is `Some` when the name was written in
/// a scenario file in that directory (for the help of a missing file).
fn resolve_in(name_or_path: &str, scenario_dir: Option<&Path>) -> Result<PolicyConfig, LoadError> {
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
    if looks_like_path(wanted) {
        let path = Path::new(wanted);
        if path.exists() {
            return load_policy(path);
        }
        let places = match scenario_dir {
            Some(dir) if !dir.as_os_str().is_empty() && path.is_relative() => format!(
                "a relative path is looked up beside the scenario file, in {}, then in the current directory",
                dir.display()
            ),
            Some(_) if path.is_relative() => {
                "a relative path is looked up beside the scenario file, then in the current directory".to_string()
            }
            _ => "relative paths start from the current directory".to_string(),
        };
        return Err(
            Diagnostic::new(format!("policy file \"{wanted}\" not found"))
                .with_help(format!(
                    "check the path: {places}; or use a built-in policy: {known}"
                ))
                .into(),
        );
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

fn looks_like_path(s: &str) -> bool {
    s.contains('/') || s.contains('\\') || s.to_ascii_lowercase().ends_with(".toml")
}

/// Why a base could not be had.
enum BaseFailure {
    /// A problem with the `base` value itself (unknown, cycle, too deep).
    Here(Problem),
    /// The base was found but does not load: its own diagnostics.
    There(String, LoadError),
}

/// Finds and loads the base `wanted` of the wrapping policy at the end of
/// `chain`.
fn resolve_base(
    wanted: &str,
    lookup: &Lookup,
    chain: &mut Vec<Link>,
) -> Result<PolicyConfig, BaseFailure> {
    let wanted = wanted.trim();
    if wanted.is_empty() {
        return Err(BaseFailure::Here(Problem::new("must not be empty").help(
            format!(
                "name the policy this one wraps; built-in policies: {}",
                known_builtins()
            ),
        )));
    }
    let cycle = |chain: &[Link], link: &Link| {
        if chain.iter().any(|l| l.id == link.id) {
            let message = if chain.last().is_some_and(|l| l.id == link.id) && chain.len() == 1 {
                format!("a policy cannot wrap itself: {}", chain_text(chain, link))
            } else {
                format!("wrapping cycle: {}", chain_text(chain, link))
            };
            Some(BaseFailure::Here(Problem::new(message).help(
                "the chain of `base` names must end at a policy with a `model`",
            )))
        } else {
            None
        }
    };
    if let Some((file, text)) = builtin_named(wanted) {
        let link = Link::builtin(file);
        if let Some(f) = cycle(chain, &link) {
            return Err(f);
        }
        return parse_builtin(file, text, chain)
            .map_err(|e| BaseFailure::There(link.shown.clone(), e));
    }
    let known = known_builtins();
    let dir = match lookup {
        Lookup::Files { dir } => dir,
        Lookup::Builtin => {
            return Err(BaseFailure::Here(
                Problem::new(format!("unknown base policy \"{wanted}\"")).help(format!(
                    "a built-in policy wraps built-in policies only: {known}"
                )),
            ));
        }
    };
    let beside = dir.join(wanted);
    let candidates = [beside.clone(), PathBuf::from(wanted)];
    if let Some(path) = candidates.iter().find(|p| p.is_file()) {
        let shown = path.display().to_string();
        let link = Link::file(path, &shown);
        if let Some(f) = cycle(chain, &link) {
            return Err(f);
        }
        return load_in(path, chain).map_err(|e| BaseFailure::There(shown, e));
    }
    if looks_like_path(wanted) {
        let places = if dir.as_os_str().is_empty() || beside == Path::new(wanted) {
            "relative paths start from the current directory".to_string()
        } else {
            format!(
                "a relative path is looked up in {} (the wrapping file's directory), then in the current directory",
                dir.display()
            )
        };
        return Err(BaseFailure::Here(
            Problem::new(format!("base policy file \"{wanted}\" not found"))
                .help(format!("{places}; built-in policies: {known}")),
        ));
    }
    let names = builtin_name_table().iter().flatten().map(String::as_str);
    let problem = Problem::new(format!("unknown base policy \"{wanted}\""));
    Err(BaseFailure::Here(match did_you_mean(wanted, names) {
        Some(s) => problem.help(format!("did you mean \"{s}\"? Built-in policies: {known}")),
        None => problem.help(format!(
            "built-in policies: {known}; or give the path of a policy file (ending in .toml)"
        )),
    }))
}

// ---------------------------------------------------------------------------
// Stage two: checks.

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

fn first_tick(v: &NumberOrText) -> Result<FirstTick, Problem> {
    match v {
        NumberOrText::Number(n) => n.duration(TimeUnit::Ms, false).map(FirstTick::After),
        NumberOrText::Text(s) if s.trim().eq_ignore_ascii_case("random") => Ok(FirstTick::Random),
        NumberOrText::Text(s) => Err(Problem::new(format!(
            "expected a number of ms or \"random\", found \"{s}\""
        ))
        .help("\"random\" draws the gate's phase from the run's seed; a number is the delay of its first tick after it starts")),
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

/// A wrapping policy: `base` and an optional `[throttle]`.
fn build_wrapper(
    raw: &RawPolicy,
    base: &Spanned<String>,
    file: &str,
    lookup: &Lookup,
    chain: &mut Vec<Link>,
    r: &mut Report<'_>,
    base_error: &mut Option<LoadError>,
) -> Option<PolicyConfig> {
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
    if chain.len() > MAX_WRAP_DEPTH {
        let (last, rest) = chain.split_last()?;
        r.error(
            base.span(),
            "base",
            Problem::new(format!(
                "more than {MAX_WRAP_DEPTH} wrapping policies in a chain: {}",
                chain_text(rest, last)
            ))
            .help("let this policy wrap a policy with a `model` directly"),
        );
        return None;
    }
    let base_policy = match resolve_base(&base_name, lookup, chain) {
        Ok(p) => p,
        Err(BaseFailure::Here(problem)) => {
            r.error(base.span(), "base", problem);
            return None;
        }
        Err(BaseFailure::There(shown, e)) => {
            r.error(
                base.span(),
                "base",
                Problem::new(if shown == base_name {
                    format!("the base policy \"{base_name}\" does not load")
                } else {
                    format!("the base policy \"{base_name}\" ({shown}) does not load")
                })
                .help("its errors follow"),
            );
            *base_error = Some(e);
            return None;
        }
    };
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

fn build_policy(raw: &RawPolicy, file: &str, r: &mut Report<'_>) -> PolicyConfig {
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
        spin_cpu_percent: t
            .get(
                r,
                "spin_cpu_percent",
                &t.raw.spin_cpu_percent,
                u32_in(1, 100),
            )
            .unwrap_or(100),
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
        tick_count: g
            .get(r, "tick_count_ms", &g.raw.tick_count_ms, tick_count)
            .unwrap_or_default(),
        drift: g
            .get(r, "drift_ms", &g.raw.drift_ms, ms(false))
            .unwrap_or_default(),
        idle_ticks_before_stop: g
            .get(
                r,
                "idle_ticks_before_stop",
                &g.raw.idle_ticks_before_stop,
                u32_in(0, 100_000),
            )
            .unwrap_or_default(),
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
    use crate::scenario::model::ThrottleKind;

    fn builtin_text(file: &str) -> &'static str {
        BUILTIN
            .iter()
            .find(|(f, _)| *f == file)
            .map(|(_, t)| *t)
            .unwrap()
    }

    fn net_classic() -> &'static str {
        builtin_text("net-classic.toml")
    }

    fn builtin(name: &str) -> PolicyConfig {
        resolve_policy(name).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A scratch directory of this process, emptied.
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("poolsim-policy-unit-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn every_builtin_parses_and_names_are_unique() {
        for (file, text) in BUILTIN {
            if let Err(e) = parse_builtin(file, text, &mut Vec::new()) {
                panic!("built-in {file} does not parse:\n{e}");
            }
            // The same text read as a user's file gives the same policy.
            let shown = format!("policies/{file}");
            assert_eq!(
                parse_policy(text, &shown).unwrap(),
                parse_builtin(file, text, &mut Vec::new()).unwrap(),
                "{file}"
            );
        }
        let all = builtin_policies();
        assert_eq!(all.len(), BUILTIN.len());
        let mut seen = HashSet::new();
        for p in &all {
            for n in std::iter::once(&p.name).chain(&p.aliases) {
                assert!(seen.insert(n.to_ascii_lowercase()), "{n} is used twice");
            }
            assert!(!p.description.is_empty(), "{} has no description", p.name);
        }
        // Every model has a built-in.
        for m in MODELS {
            assert!(all.iter().any(|p| p.model == *m), "no built-in for {m:?}");
        }
    }

    #[test]
    fn net_classic_has_the_clr_constants() {
        let p = parse_policy(net_classic(), "net-classic.toml").unwrap();
        assert_eq!(p.name, "net-classic");
        assert_eq!(p.aliases, ["net5", "netcore3", "netfx4"]);
        assert_eq!(p.model, ModelKind::Classic);
        assert_eq!(p.threads.min, ThreadCount::PerCore(1));
        assert_eq!(p.threads.max, ThreadCount::Fixed(32767));
        assert_eq!(p.threads.start_latency, SimDuration::from_us(200));
        assert_eq!(p.threads.wake_latency, SimDuration::from_us(20));
        assert_eq!(p.threads.idle_timeout, SimDuration::from_ms(20_000));
        assert_eq!(p.threads.dedicated_start_latency, SimDuration::from_ms(4));
        assert!(p.threads.honours_set_min_threads);
        assert_eq!(p.gate.period, SimDuration::from_ms(500));
        assert_eq!(p.gate.comparison, Comparison::Greater);
        assert_eq!(p.gate.first_tick, FirstTick::Random);
        assert_eq!(p.gate.drift, SimDuration::ZERO);
        assert_eq!(p.gate.idle_ticks_before_stop, 0);
        assert_eq!(p.hill_climbing.wave_period, 4);
        assert_eq!(p.dispatch.quantum, SimDuration::from_ms(30));
        assert_eq!(p.dispatch.requests, RequestMode::EveryDequeue);
        assert!(p.dispatch.leave_at_quantum);
        assert_eq!(
            p.timers,
            TimersConfig {
                queues: ThreadCount::PerCore(1),
                dispatch: TimerDispatch::UnmanagedRequest,
                queue_of: TimerQueueChoice::Random,
            }
        );
        assert_eq!((&p.blocking, &p.mono, &p.net20), (&None, &None, &None));
        assert_eq!(p.throttle, None);
    }

    #[test]
    fn coreclr3_linux_is_net_classic_with_linux_gate_timing() {
        let classic = builtin("net-classic");
        let p = builtin("coreclr3");
        assert_eq!(p.name, "coreclr3-linux");
        assert_eq!(p.threads.start_latency, SimDuration::from_us(500));
        assert_eq!(
            p.gate.first_tick,
            FirstTick::After(SimDuration::from_ms(1000))
        );
        assert_eq!(p.gate.drift, SimDuration::from_us(500));
        assert_eq!(p.gate.idle_ticks_before_stop, 1);
        // Measured on Linux: a timer joins its creating thread's queue.
        assert_eq!(p.timers.queue_of, TimerQueueChoice::CreatingThread);
        // Everything else is net-classic's.
        let same = PolicyConfig {
            name: classic.name.clone(),
            aliases: classic.aliases.clone(),
            description: classic.description.clone(),
            threads: ThreadsConfig {
                start_latency: classic.threads.start_latency,
                ..p.threads.clone()
            },
            gate: classic.gate.clone(),
            timers: classic.timers.clone(),
            ..p
        };
        assert_eq!(same, classic);
    }

    #[test]
    fn portable_builtins_have_their_constants() {
        let p = builtin("net6");
        assert_eq!(p.aliases, ["portable", "net6.0"]);
        assert_eq!(p.model, ModelKind::Portable);
        assert_eq!(
            p.gate.first_tick,
            FirstTick::After(SimDuration::from_ms(500))
        );
        assert_eq!(p.gate.idle_ticks_before_stop, 2);
        assert_eq!(p.dispatch.requests, RequestMode::EveryDequeue);
        assert!(!p.dispatch.leave_at_quantum);
        assert_eq!(p.timers.dispatch, TimerDispatch::TimeSensitive);
        assert_eq!(
            p.blocking,
            Some(BlockingConfig {
                enabled: true,
                threads_to_add_without_delay_per_core: 1,
                threads_per_delay_step_per_core: 1,
                delay_step: SimDuration::from_ms(25),
                max_delay: SimDuration::from_ms(250),
            })
        );
        let q = builtin("net7");
        assert_eq!(q.name, "net8");
        assert_eq!(q.gate.tick_count, Some(SimDuration::from_ms(4)));
        assert_eq!(p.gate.tick_count, None);
        assert_eq!(q.dispatch.requests, RequestMode::FirstDequeue);
        assert_eq!(q.timers.dispatch, TimerDispatch::HighPriority);
        // Otherwise as net6.
        let as_net6 = PolicyConfig {
            name: p.name.clone(),
            aliases: p.aliases.clone(),
            description: p.description.clone(),
            dispatch: DispatchConfig {
                requests: RequestMode::EveryDequeue,
                ..q.dispatch.clone()
            },
            timers: p.timers.clone(),
            // net8 was measured on Linux, whose TickCount steps every 4 ms.
            gate: GateConfig {
                tick_count: p.gate.tick_count,
                ..q.gate.clone()
            },
            ..q
        };
        assert_eq!(as_net6, p);
    }

    #[test]
    fn mono_builtin_has_its_constants() {
        let p = builtin("mono6");
        assert_eq!(p.name, "mono");
        assert_eq!(p.model, ModelKind::Mono);
        assert_eq!(p.threads.max, ThreadCount::PerCore(100));
        assert_eq!(p.threads.start_latency, SimDuration::from_ms(1));
        assert_eq!(p.threads.idle_timeout, SimDuration::from_ms(30_000));
        // SetMinThreads sets limit_worker_min (reached through hill climbing).
        assert!(p.threads.honours_set_min_threads);
        assert_eq!(p.gate.comparison, Comparison::GreaterOrEqual);
        assert_eq!(p.gate.idle_ticks_before_stop, 120);
        assert!(p.dispatch.leave_at_quantum);
        assert_eq!(
            p.timers,
            TimersConfig {
                queues: ThreadCount::Fixed(1),
                dispatch: TimerDispatch::GlobalPerCallback,
                queue_of: TimerQueueChoice::Random,
            }
        );
        assert_eq!(
            p.mono,
            Some(MonoConfig {
                max_creations_per_second: 10,
                inject_tries: 5,
                threads_per_cpu: 1
            })
        );
        assert_eq!((&p.blocking, &p.net20), (&None, &None));
    }

    #[test]
    fn net20_builtins_have_their_constants() {
        let sp1 = builtin("net35");
        assert_eq!(sp1.name, "net20-sp1");
        assert_eq!(sp1.aliases, ["net20sp1", "net35"]);
        assert_eq!(sp1.model, ModelKind::Net20);
        assert_eq!(sp1.threads.max, ThreadCount::PerCore(250));
        assert_eq!(sp1.threads.start_latency, SimDuration::from_ms(5));
        assert_eq!(sp1.threads.wake_latency, SimDuration::from_us(50));
        assert_eq!(sp1.threads.idle_timeout, SimDuration::from_ms(40_000));
        assert!(!sp1.hill_climbing.enabled);
        assert_eq!(sp1.dispatch.max_outstanding_requests_per_core, 1024);
        assert!(!sp1.dispatch.leave_at_quantum);
        assert_eq!(sp1.timers.queues, ThreadCount::Fixed(1));
        assert_eq!(
            sp1.net20,
            Some(Net20Config {
                creation_delay: SimDuration::from_ms(500),
                creation_delay_growth: 1.1,
                sp1_start_delay_bug: true
            })
        );
        let rtm = builtin("net20");
        assert!(rtm.aliases.is_empty());
        assert_eq!(rtm.threads.max, ThreadCount::PerCore(25));
        assert!(!rtm.net20.as_ref().unwrap().sp1_start_delay_bug);
        let as_sp1 = PolicyConfig {
            name: sp1.name.clone(),
            aliases: sp1.aliases.clone(),
            description: sp1.description.clone(),
            threads: sp1.threads.clone(),
            net20: sp1.net20.clone(),
            ..rtm
        };
        assert_eq!(as_sp1, sp1);
    }

    #[test]
    fn dedicated_builtin_has_its_constants() {
        let p = builtin("new-thread");
        assert_eq!(p.name, "dedicated-threads");
        assert_eq!(p.aliases, ["dedicated", "new-thread"]);
        assert_eq!(p.model, ModelKind::Dedicated);
        assert_eq!(p.threads.min, ThreadCount::Fixed(1));
        assert_eq!(p.threads.start_latency, SimDuration::from_ms(4));
        assert_eq!(p.threads.idle_timeout, SimDuration::ZERO);
        assert!(!p.hill_climbing.enabled);
        assert_eq!(p.gate, builtin("net-classic").gate);
        assert_eq!(p.timers.dispatch, TimerDispatch::GlobalPerCallback);
    }

    #[test]
    fn throttled_builtins_are_their_base_with_a_throttle() {
        let throttle = Some(ThrottleConfig {
            kind: ThrottleKind::ConcurrentExclusive,
            limit: ThreadCount::PerCore(2),
        });
        for (name, alias, base) in [
            ("net-classic-throttled", "net5-throttled", "net-classic"),
            ("net6-throttled", "net6-throttled", "net6"),
        ] {
            let p = builtin(alias);
            assert_eq!(p.name, name);
            assert_eq!(p.throttle, throttle);
            let base = builtin(base);
            assert_eq!(
                PolicyConfig {
                    name: base.name.clone(),
                    aliases: base.aliases.clone(),
                    description: base.description.clone(),
                    throttle: None,
                    ..p
                },
                base
            );
        }
        assert_eq!(builtin("net5-throttled").aliases, ["net5-throttled"]);
    }

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
    fn first_tick_is_a_duration_or_random() {
        let t = |s: &str| first_tick(&NumberOrText::Text(s.to_string()));
        assert_eq!(t("random"), Ok(FirstTick::Random));
        assert_eq!(t(" Random "), Ok(FirstTick::Random));
        assert!(t("soon").unwrap_err().message.contains("\"random\""));
        assert_eq!(
            first_tick(&NumberOrText::Number(Number::Float(0.5))),
            Ok(FirstTick::After(SimDuration::from_us(500)))
        );
        assert!(first_tick(&NumberOrText::Number(Number::Integer(-1))).is_err());
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
    fn linux_policies_put_a_timer_on_its_creators_queue() {
        for name in ["coreclr3-linux.toml", "net8.toml"] {
            let p = parse_policy(builtin_text(name), name).unwrap();
            assert_eq!(
                p.timers.queue_of,
                TimerQueueChoice::CreatingThread,
                "{name}"
            );
        }
        let text = builtin_text("net8.toml").replace("\"creating-thread\"", "\"by-cpu\"");
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
    fn a_wrapper_may_wrap_an_unthrottled_wrapper_up_to_the_depth_limit() {
        let dir = scratch("depth");
        // w0 wraps net6 with no throttle (a rename); w1..wN wrap the previous one.
        std::fs::write(dir.join("w0.toml"), "base = \"net6\"\n").unwrap();
        for k in 1..=MAX_WRAP_DEPTH {
            std::fs::write(
                dir.join(format!("w{k}.toml")),
                format!("base = \"w{}.toml\"\n", k - 1),
            )
            .unwrap();
        }
        let ok = load_policy(&dir.join(format!("w{}.toml", MAX_WRAP_DEPTH - 1))).unwrap();
        assert_eq!(ok.name, format!("w{}", MAX_WRAP_DEPTH - 1));
        assert_eq!(ok.model, ModelKind::Portable);
        assert_eq!(ok.blocking, builtin("net6").blocking);
        assert_eq!(ok.description, builtin("net6").description);
        let e = load_policy(&dir.join(format!("w{MAX_WRAP_DEPTH}.toml"))).unwrap_err();
        assert!(
            e.to_string()
                .contains("more than 8 wrapping policies in a chain"),
            "{e}"
        );
        // A throttle over the rename chain is fine: none of them has one.
        std::fs::write(
            dir.join("t.toml"),
            "base = \"w2.toml\"\n[throttle]\nkind = \"semaphore\"\nlimit = 3\n",
        )
        .unwrap();
        let t = load_policy(&dir.join("t.toml")).unwrap();
        assert_eq!(
            t.throttle,
            Some(ThrottleConfig {
                kind: ThrottleKind::Semaphore,
                limit: ThreadCount::Fixed(3)
            })
        );
        assert_eq!(t.description, "w2 behind a throttle (semaphore, limit 3)");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_wrapper_base_is_looked_up_beside_it_first() {
        let dir = scratch("beside");
        let sub = dir.join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        let edited = net_classic().replace("period_ms = 500", "period_ms = 250");
        std::fs::write(sub.join("mine.toml"), edited).unwrap();
        std::fs::write(
            sub.join("wrap.toml"),
            "name = \"wrapped\"\nbase = \"mine.toml\"\n[throttle]\nkind = \"semaphore\"\nlimit = \"cores\"\n",
        )
        .unwrap();
        let p = load_policy(&sub.join("wrap.toml")).unwrap();
        assert_eq!(p.name, "wrapped");
        assert_eq!(p.gate.period, SimDuration::from_ms(250));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn resolve_finds_names_and_aliases_in_any_case() {
        assert_eq!(resolve_policy("net-classic").unwrap().name, "net-classic");
        assert_eq!(resolve_policy("NET5").unwrap().name, "net-classic");
        assert_eq!(resolve_policy(" coreclr3 ").unwrap().name, "coreclr3-linux");
        assert_eq!(resolve_policy("Portable").unwrap().name, "net6");
        let e = resolve_policy("./no/such/policy.toml").unwrap_err();
        assert!(e.message().contains("not found"), "{e}");
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
