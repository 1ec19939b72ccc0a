//! Wrapping policies: a policy with `base = "NAME-OR-PATH"` instead of a
//! model, which takes every constant from its base and may add a
//! `[throttle]`. Its own keys are checked first ([`wrapper_keys`]); once
//! its base is loaded they are joined with it ([`build_wrapper`]).

use std::ops::Range;

use toml::Spanned;

use super::build_names;
use super::check::{Table, thread_count};
use crate::diagnostics::{Problem, Report, choose};
use crate::policy::config::{PolicyConfig, ThreadCount, ThrottleConfig};
use crate::policy_file::raw::{RawPolicy, RawThrottle};
use crate::scenario::model::{THROTTLE_KINDS, throttle_kind_name};

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
/// [`crate::policy_file::resolve`] and joined with [`build_wrapper`].
pub(in crate::policy_file) struct WrapperKeys {
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
pub(in crate::policy_file) fn wrapper_keys(
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
pub(in crate::policy_file) fn build_wrapper(
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
