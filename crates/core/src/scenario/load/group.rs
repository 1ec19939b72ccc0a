//! One `[[group]]`: its name, `count`, `submit`, `from`, arrival and
//! body, built and checked; then the rules across groups: every name its
//! own, and all the items together under the limit.

use std::collections::HashMap;

use toml::Spanned;

use super::arrival::{build_arrival, build_late};
use super::body::build_body;
use super::non_empty;
use super::shape::{SUBMITS, check_shape};
use crate::diagnostics::{Problem, Report, choose};
use crate::scenario::model::{
    Arrival, Group, MAX_ITEMS, Origin, Step, Submit, Throttle, ThrottleKind,
};
use crate::scenario::raw::{Number, RawGroup};
use crate::time::{NANOS_PER_MS, SimDuration};

/// `from = ...` values.
const ORIGINS: &[(&str, Origin)] = &[
    ("main", Origin::Main),
    ("pool", Origin::Pool),
    ("timer", Origin::Timer { per_tick: 1 }),
    // `per_call` is set by `check_fan_outs`, once every body is read.
    ("fan-out", Origin::FanOut { per_call: 0 }),
];

/// Group `i`; `names` are every group's names, for `after`.
pub(super) fn build_group(
    i: usize,
    g: &Spanned<RawGroup>,
    names: &[String],
    r: &mut Report<'_>,
) -> Group {
    let raw = g.get_ref();
    let path = format!("group[{i}]");
    let name = match &raw.name {
        Some(n) => r
            .check(n, &format!("{path}.name"), |s| non_empty(s))
            .unwrap_or_default(),
        None => format!("group{i}"),
    };
    let count = match &raw.count {
        None => {
            r.error(
                g.span(),
                &format!("{path}.count"),
                Problem::new("missing key `count`")
                    .help("say how many items the group has: `count = 10`"),
            );
            None
        }
        Some(c) => r.check(c, &format!("{path}.count"), |n| {
            n.integer_in(1, MAX_ITEMS as i64).map_err(|p| {
                if matches!(n, Number::Integer(v) if *v > MAX_ITEMS as i64) {
                    Problem::new(format!(
                        "{n} items is too many: the limit is {MAX_ITEMS} (100 million)"
                    ))
                } else {
                    p
                }
            })
        }),
    };
    // `None`: the value was refused (the shape rules below are then skipped).
    let shape = match &raw.submit {
        None => Some(Submit::TaskRun),
        Some(s) => r.check(s, &format!("{path}.submit"), |s| {
            let modes: Vec<(&str, Submit)> = SUBMITS.iter().map(|m| (m.name(), *m)).collect();
            choose(s, &modes, "submission mode")
        }),
    };
    let submit = shape.unwrap_or(Submit::TaskRun);
    let from = raw
        .from
        .as_ref()
        .and_then(|s| r.check(s, &format!("{path}.from"), |s| choose(s, ORIGINS, "origin")))
        .unwrap_or(Origin::Main);
    let arrival = match &raw.arrival {
        None => Arrival::At(SimDuration::ZERO),
        Some(a) => build_arrival(&format!("{path}.arrival"), a, i, names, r),
    };
    let late = raw.arrival.as_ref().map_or(SimDuration::ZERO, |a| {
        build_late(&format!("{path}.arrival"), a, r)
    });
    let body = match &raw.body {
        None => {
            r.error(
                g.span(),
                &format!("{path}.body"),
                Problem::new("missing key `body`").help(
                    "say what each item does: `body = [ { cpu_ms = 5 }, { sleep_ms = 100 } ]`",
                ),
            );
            Vec::new()
        }
        Some(b) => build_body(&format!("{path}.body"), b, names, r),
    };
    let (max_degree, throttle) = match shape {
        Some(shape) => check_shape(&path, shape, raw, r),
        None => (None, None),
    };
    let from = check_timer(&path, g, from, submit, &arrival, r);
    if let Origin::FanOut { .. } = from {
        check_fan_out_group(&path, g, submit, throttle.as_ref(), r);
    }
    Group {
        name,
        count: count.map_or(1, |c| c.unsigned_abs()),
        submit,
        from,
        arrival,
        late,
        body,
        max_degree,
        throttle,
    }
}

/// A timer group (`from = "timer"`): its `per_tick`, a period of whole
/// milliseconds, items its callback can queue. `per_tick` anywhere else
/// is refused.
fn check_timer(
    path: &str,
    g: &Spanned<RawGroup>,
    from: Origin,
    submit: Submit,
    arrival: &Arrival,
    r: &mut Report<'_>,
) -> Origin {
    let raw = g.get_ref();
    let Origin::Timer { .. } = from else {
        if let Some(p) = &raw.per_tick {
            r.error(
                p.span(),
                &format!("{path}.per_tick"),
                Problem::new("`per_tick` goes with `from = \"timer\"`").help(
                    "items a timer's callback queues each time it fires: \
                     `from = \"timer\"`, `per_tick = 6`, `arrival = { every_ms = 500 }`",
                ),
            );
        }
        return from;
    };
    let per_tick = raw
        .per_tick
        .as_ref()
        .and_then(|p| {
            r.check(p, &format!("{path}.per_tick"), |n| {
                n.integer_in(1, i64::from(u32::MAX))
            })
        })
        .map_or(1, |n| n as u32);
    let at = raw.from.as_ref().map_or(g.span(), |f| f.span());
    match arrival {
        Arrival::Every { every, .. }
            if every.as_nanos() >= NANOS_PER_MS && every.as_nanos() % NANOS_PER_MS == 0 => {}
        Arrival::Every { every, .. } => r.error(
            raw.arrival.as_ref().map_or(at.clone(), |a| a.span()),
            &format!("{path}.arrival.every_ms"),
            Problem::new(format!(
                "a timer's period is a whole number of milliseconds (System.Threading.Timer \
                 takes an int), found {} ms",
                every.as_ms_f64()
            ))
            .help("round it: `every_ms = 500`"),
        ),
        _ => r.error(
            raw.arrival.as_ref().map_or(at.clone(), |a| a.span()),
            &format!("{path}.arrival"),
            Problem::new("a timer fires every period: its arrival is `every_ms`").help(
                "`arrival = { every_ms = 500 }` (the period; `start_ms` is when the program \
                 creates the timer)",
            ),
        ),
    }
    if !matches!(submit, Submit::TaskRun | Submit::QueueUserWorkItem) {
        r.error(
            raw.submit.as_ref().map_or(at, |s| s.span()),
            &format!("{path}.submit"),
            Problem::new(format!(
                "a timer's callback queues work items: `submit = \"{}\"` cannot go with \
                 `from = \"timer\"`",
                submit.name()
            ))
            .help("`submit = \"task-run\"` or `submit = \"queue-user-work-item\"`"),
        );
    }
    Origin::Timer { per_tick }
}

/// A `from = "fan-out"` group: its items are queued by a `fan_out` step
/// (`Task.Run` or `QueueUserWorkItem`), so it has no arrival.
fn check_fan_out_group(
    path: &str,
    g: &Spanned<RawGroup>,
    submit: Submit,
    throttle: Option<&Throttle>,
    r: &mut Report<'_>,
) {
    let raw = g.get_ref();
    // The step queues its calls to the pool itself; a call that went to a
    // ConcurrentExclusiveSchedulerPair would need the pair to tell the
    // waiting caller when it ends, which is not modelled.
    if let (Some(t), Some(at)) = (throttle, raw.throttle.as_ref())
        && t.kind == ThrottleKind::ConcurrentExclusive
    {
        r.error(
            at.span(),
            &format!("{path}.throttle"),
            Problem::new(
                "a fan-out step queues its calls to the pool itself: a \
                 `concurrent-exclusive` throttle cannot go on its calls' group",
            )
            .help(
                "throttle the calls with `throttle = { kind = \"semaphore\", limit = N }` \
                 (SemaphoreSlim around each call)",
            ),
        );
    }
    if let Some(a) = &raw.arrival {
        r.error(
            a.span(),
            &format!("{path}.arrival"),
            Problem::new(
                "a fan-out group's items are queued by the `fan_out` step that names it: \
                 it has no arrival of its own",
            )
            .help("remove `arrival`; the calls come when the items running the step reach it"),
        );
    }
    if !matches!(submit, Submit::TaskRun | Submit::QueueUserWorkItem) {
        let at = raw.submit.as_ref().map_or(g.span(), |s| s.span());
        r.error(
            at,
            &format!("{path}.submit"),
            Problem::new(format!(
                "a fan-out step queues each call as a work item: `submit = \"{}\"` cannot go \
                 with `from = \"fan-out\"`",
                submit.name()
            ))
            .help("`submit = \"task-run\"` (the caller's local queue) or `submit = \"queue-user-work-item\"`"),
        );
    }
}

/// The rules between a `fan_out` step and the group it names: the group
/// is `from = "fan-out"`, and its `count` is the same number of items for
/// every call (the items of the groups whose bodies name it, once per
/// step), which sets its `per_call`. A group that fans out to itself, or
/// round a circle, can never meet that count: it is refused by the same
/// rule.
pub(super) fn check_fan_outs(raw: &[Spanned<RawGroup>], groups: &mut [Group], r: &mut Report<'_>) {
    let mut calls = vec![0u64; groups.len()];
    for (h, (g, rg)) in groups.iter().zip(raw).enumerate() {
        for (j, step) in g.body.iter().enumerate() {
            let Step::FanOut { group: target } = *step else {
                continue;
            };
            let target = target as usize;
            if matches!(groups[target].from, Origin::FanOut { .. }) {
                calls[target] = calls[target].saturating_add(g.count);
                continue;
            }
            let span = rg
                .get_ref()
                .body
                .as_ref()
                .and_then(|b| b.get_ref().get(j).map(|s| s.span()))
                .unwrap_or(rg.span());
            r.error(
                span,
                &format!("group[{h}].body[{j}].fan_out"),
                Problem::new(format!(
                    "`fan_out` names \"{}\", whose items arrive on their own: the group a step \
                     fans out to has `from = \"fan-out\"`",
                    groups[target].name
                ))
                .help(format!(
                    "add `from = \"fan-out\"` to group \"{}\" (and remove its arrival)",
                    groups[target].name
                )),
            );
        }
    }
    for (i, (g, rg)) in groups.iter_mut().zip(raw).enumerate() {
        let Origin::FanOut { per_call } = &mut g.from else {
            continue;
        };
        let raw = rg.get_ref();
        let n = calls[i];
        if n == 0 {
            let at = raw.from.as_ref().map_or(rg.span(), |f| f.span());
            r.error(
                at,
                &format!("group[{i}].from"),
                Problem::new(format!(
                    "no step fans out to \"{}\": its items would never be queued",
                    g.name
                ))
                .help(format!(
                    "add `{{ fan_out = \"{}\" }}` to the body of the group whose items make the calls",
                    g.name
                )),
            );
            continue;
        }
        if g.count % n != 0 || g.count / n > u64::from(u32::MAX) {
            let at = raw.count.as_ref().map_or(rg.span(), |c| c.span());
            let each = (g.count / n).max(1);
            r.error(
                at,
                &format!("group[{i}].count"),
                Problem::new(format!(
                    "{} items do not share evenly among the {n} fan-out calls that queue them",
                    g.count
                ))
                .help(format!(
                    "every call queues the same number: `count = {}` is {each} a call",
                    each.saturating_mul(n)
                )),
            );
            continue;
        }
        *per_call = (g.count / n) as u32;
    }
}

pub(super) fn check_group_names(raw: &[Spanned<RawGroup>], groups: &[Group], r: &mut Report<'_>) {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, (g, rg)) in groups.iter().zip(raw).enumerate() {
        if g.name.is_empty() {
            continue;
        }
        match seen.get(g.name.as_str()) {
            None => {
                seen.insert(g.name.as_str(), i);
            }
            Some(&first) => {
                let (span, path) = match &rg.get_ref().name {
                    Some(n) => (n.span(), format!("group[{i}].name")),
                    None => (rg.span(), format!("group[{i}]")),
                };
                let first_line = raw
                    .get(first)
                    .map(|f| match &f.get_ref().name {
                        Some(n) => n.span().start,
                        None => f.span().start,
                    })
                    .map(|at| r.line_of(at))
                    .unwrap_or(0);
                r.error(
                    span,
                    &path,
                    Problem::new(format!(
                        "duplicate group name \"{}\" (group[{first}], line {first_line}, has it too)",
                        g.name
                    ))
                    .help("give each group its own name"),
                );
            }
        }
    }
}

pub(super) fn check_total_items(raw: &[Spanned<RawGroup>], groups: &[Group], r: &mut Report<'_>) {
    let total: u64 = groups.iter().map(|g| g.count).fold(0, u64::saturating_add);
    if total <= MAX_ITEMS {
        return;
    }
    // Point at the count that crosses the limit.
    let mut sum = 0u64;
    for (i, (g, rg)) in groups.iter().zip(raw).enumerate() {
        sum = sum.saturating_add(g.count);
        if sum > MAX_ITEMS {
            let span = rg.get_ref().count.as_ref().map_or(rg.span(), |c| c.span());
            r.error(
                span,
                &format!("group[{i}].count"),
                Problem::new(format!(
                    "the groups hold {total} items in all, more than the limit of {MAX_ITEMS} (100 million)"
                )),
            );
            return;
        }
    }
}
