//! Stage two of loading a policy: check every value of the
//! [`raw`](super::raw) file and build the validated [`PolicyConfig`].
//!
//! Every problem is reported, not just the first, each with its TOML path
//! (`gate.period_ms`); a missing table is one error, not one per key. No
//! file is read here: a wrapping policy's own keys are checked here
//! ([`wrapper_keys`]) and joined with its base ([`build_wrapper`]) once
//! [`super::resolve`] has loaded that base.
//!
//! The parts, by job:
//! - this file: a full policy ([`build_policy`]): its names, its model, which
//!   model tables go with it, and the optional `[library]`;
//! - `check`: what every table shares: the table and key lookup that
//!   reports what is missing, and the value checkers (ranges, durations,
//!   thread counts, first ticks, quantiles);
//! - `core_tables`: the tables every policy file gives: `[threads]`,
//!   `[gate]`, `[hill_climbing]`, `[dispatch]`, `[timers]`;
//! - `model_tables`: the tables of one model: `[blocking]` (portable),
//!   `[mono]`, `[net20]`;
//! - `wrapper`: wrapping policies (`base` and `[throttle]`).

mod check;
mod core_tables;
mod model_tables;
#[cfg(test)]
mod tests;
mod wrapper;

use std::collections::HashSet;
use std::ops::Range;
use std::path::Path;

use toml::Spanned;

use self::check::{MAX_PER_CORE, Table, spread};
use self::core_tables::{
    build_dispatch, build_gate, build_hill_climbing, build_threads, build_timers,
};
use self::model_tables::{build_blocking, build_mono, build_net20};
pub(super) use self::wrapper::{build_wrapper, wrapper_keys};
use super::raw::{RawLibrary, RawPolicy};
use crate::diagnostics::{Problem, Report, choose};
use crate::policy::config::{FirstCallCosts, GateStart, LibraryConfig, ModelKind, PolicyConfig};
use crate::scenario::Submit;
use crate::scenario::raw::TimeUnit;

/// The models a policy file may name: the model registry's (`policy::models!`).
pub(super) const MODELS: &[ModelKind] = ModelKind::ALL;

/// The model-specific tables: (model, table, built-in file to copy it from).
const MODEL_TABLES: &[(ModelKind, &str, &str)] = &[
    (ModelKind::Portable, "blocking", "net6.toml"),
    (ModelKind::Mono, "mono", "mono.toml"),
    (ModelKind::Net20, "net20", "net20-sp1.toml"),
];

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
    let range_is_list = t
        .get(r, "range_is_list", &t.raw.range_is_list, |b| Ok(*b))
        .unwrap_or(false);
    let mut first_call = FirstCallCosts::default();
    if let Some(table) = &t.raw.first_call_ms {
        let raw = table.get_ref();
        for (submit, value) in [
            (Submit::ParallelFor, &raw.parallel_for),
            (Submit::ParallelForEach, &raw.parallel_foreach),
            (Submit::ParallelInvoke, &raw.parallel_invoke),
            (Submit::Plinq, &raw.plinq),
        ] {
            let Some(v) = value else { continue };
            let path = format!("library.first_call_ms.{}", submit.name());
            if let Some(cost) = r.check(v, &path, spread(TimeUnit::Ms)) {
                first_call.costs.push((submit, cost));
            }
        }
    }
    LibraryConfig {
        range_is_list,
        first_call,
    }
}

fn model_list() -> String {
    MODELS
        .iter()
        .map(|m| format!("\"{}\"", m.name()))
        .collect::<Vec<_>>()
        .join(", ")
}
