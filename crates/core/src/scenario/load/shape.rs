//! The submission shapes (`submit = ...`) and their rules: the bodies of
//! the synchronous shapes do not await, a one-call shape arrives once,
//! `max_degree` goes with the shapes that have a degree of parallelism and
//! `throttle` (built here) with those that run on a task scheduler.

use toml::Spanned;

use super::thread_count;
use crate::diagnostics::{Problem, Report, choose};
use crate::scenario::model::THROTTLE_KINDS;
use crate::scenario::model::{MAX_THREADS_LIMIT, Submit, Throttle};
use crate::scenario::raw::{RawGroup, RawStep, RawStepTable, RawThrottle};

/// Every `submit = ...` shape, in the order messages list them (the names
/// are [`Submit::name`]); a new submission shape is one line here.
pub(super) const SUBMITS: &[Submit] = &[
    Submit::TaskRun,
    Submit::QueueUserWorkItem,
    Submit::WhenAll,
    Submit::NewThread,
    Submit::ParallelInvoke,
    Submit::ParallelFor,
    Submit::ParallelForEach,
    Submit::Plinq,
    Submit::ParallelForEachAsync,
];

/// What a synchronous shape calls its bodies, in messages.
fn bodies_of(submit: Submit) -> String {
    match submit {
        Submit::ParallelInvoke => "Parallel.Invoke actions".to_string(),
        Submit::Plinq => "PLINQ Select bodies".to_string(),
        other => format!("{} bodies", other.api_name()),
    }
}

/// `"a", "b" and "c"` of the shapes that pass `keep`.
fn shape_list(keep: impl Fn(Submit) -> bool) -> String {
    let names: Vec<String> = SUBMITS
        .iter()
        .filter(|s| keep(**s))
        .map(|s| format!("`{}`", s.name()))
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

/// The rules of a submission shape: synchronous bodies, one-call arrivals,
/// `max_degree` and `throttle`. Returns those two, checked.
pub(super) fn check_shape(
    path: &str,
    shape: Submit,
    raw: &RawGroup,
    r: &mut Report<'_>,
) -> (Option<u32>, Option<Throttle>) {
    let name = shape.name();
    if shape.synchronous_body()
        && let Some(body) = &raw.body
    {
        for (j, step) in body.get_ref().iter().enumerate() {
            let is_yield = |t: &RawStepTable| t.yield_.as_ref().is_some_and(|y| *y.get_ref());
            let found = match step.get_ref() {
                RawStep::Yield => Some("a `yield` step (await Task.Yield())"),
                RawStep::Table(t) if t.await_ms.is_some() => {
                    Some("an `await_ms` step (await Task.Delay)")
                }
                RawStep::Table(t) if is_yield(t) => Some("a `yield` step (await Task.Yield())"),
                _ => None,
            };
            if let Some(what) = found {
                r.error(
                    step.span(),
                    &format!("{path}.body[{j}]"),
                    Problem::new(format!(
                        "{} are synchronous: {what} cannot be in one (submit = \"{name}\")",
                        bodies_of(shape)
                    ))
                    .help(
                        "block the thread instead with { wait_ms = N } (Task.Delay(N).Wait()) or { sleep_ms = N }, or use submit = \"parallel-foreach-async\" for an async body",
                    ),
                );
            }
        }
    }
    if shape.one_call()
        && let Some(a) = &raw.arrival
        && a.get_ref().at_ms.is_none()
        && a.get_ref().after.is_none()
    {
        let kind = if a.get_ref().every_ms.is_some() {
            Some("every_ms")
        } else if a.get_ref().poisson_per_s.is_some() {
            Some("poisson_per_s")
        } else {
            None
        };
        if let Some(kind) = kind {
            r.error(
                a.span(),
                &format!("{path}.arrival"),
                Problem::new(format!(
                    "`{name}` is one {} call over all `count` items: its arrival must be `at_ms` or `after`, found `{kind}`",
                    shape.api_name()
                ))
                .help("write arrival = { at_ms = N }; for calls at several times, write one group per call"),
            );
        }
    }
    let max_degree = raw.max_degree.as_ref().and_then(|m| {
        let key = format!("{path}.max_degree");
        if shape.one_call() {
            return r.check(m, &key, |n| {
                n.integer_in(1, i64::from(MAX_THREADS_LIMIT))
                    .map(|v| u32::try_from(v).unwrap_or(MAX_THREADS_LIMIT))
            });
        }
        let help = if shape == Submit::NewThread {
            "remove it: every item gets a thread of its own".to_string()
        } else {
            "to limit how many items run at once, use throttle = { kind = \"semaphore\", limit = N }"
                .to_string()
        };
        r.error(
            m.span(),
            &key,
            Problem::new(format!(
                "`{name}` has no degree of parallelism: `max_degree` goes with {}",
                shape_list(Submit::one_call)
            ))
            .help(help),
        );
        None
    });
    let throttle = raw.throttle.as_ref().and_then(|t| {
        let key = format!("{path}.throttle");
        if shape.takes_throttle() {
            return build_throttle(&key, t, r);
        }
        let (why, help) = if shape == Submit::NewThread {
            (
                "its items are threads of their own, not work on a task scheduler".to_string(),
                format!("a throttle goes on {}", shape_list(Submit::takes_throttle)),
            )
        } else {
            (
                format!(
                    "{} does not go through a task scheduler that poolsim models",
                    shape.api_name()
                ),
                format!(
                    "use max_degree = N to limit its parallelism; a throttle goes on {}",
                    shape_list(Submit::takes_throttle)
                ),
            )
        };
        r.error(
            t.span(),
            &key,
            Problem::new(format!("a throttle cannot go on `{name}`: {why}")).help(help),
        );
        None
    });
    (max_degree, throttle)
}

/// `throttle = { kind = ..., limit = N }`.
fn build_throttle(path: &str, t: &Spanned<RawThrottle>, r: &mut Report<'_>) -> Option<Throttle> {
    let raw = t.get_ref();
    let form = "write throttle = { kind = \"concurrent-exclusive\", limit = 4 } or { kind = \"semaphore\", limit = 4 }";
    let kind = match &raw.kind {
        None => {
            r.error(
                t.span(),
                &format!("{path}.kind"),
                Problem::new("missing key `kind`").help(form),
            );
            None
        }
        Some(k) => r.check(k, &format!("{path}.kind"), |s| {
            choose(s, THROTTLE_KINDS, "throttle kind")
        }),
    };
    let limit = match &raw.limit {
        None => {
            r.error(
                t.span(),
                &format!("{path}.limit"),
                Problem::new("missing key `limit`").help(form),
            );
            None
        }
        Some(l) => r.check(l, &format!("{path}.limit"), thread_count),
    };
    Some(Throttle {
        kind: kind?,
        limit: limit?,
    })
}
