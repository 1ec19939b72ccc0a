//! A group's `body`: between one and `MAX_STEPS` steps, each doing one
//! thing (`cpu_ms`, `spin_ms`, `busy_ms`, `sleep_ms`, `wait_ms`,
//! `await_ms` or `"yield"`) for a duration that is not negative, or
//! fanning out to another group's items (`fan_out`, by the group's name;
//! the rules between the two groups are `group::check_fan_outs`).

use std::ops::Range;

use toml::Spanned;

use crate::diagnostics::{Problem, Report};
use crate::scenario::model::{MAX_STEPS, Step};
use crate::scenario::raw::{Number, RawStep, RawStepTable, TimeUnit};
use crate::time::SimDuration;

/// The body at `path`; `names` are every group's names (for `fan_out`).
pub(super) fn build_body(
    path: &str,
    b: &Spanned<Vec<Spanned<RawStep>>>,
    names: &[String],
    r: &mut Report<'_>,
) -> Vec<Step> {
    let steps = b.get_ref();
    if steps.is_empty() {
        r.error(
            b.span(),
            path,
            Problem::new("a body needs at least one step")
                .help("e.g. `body = [ { cpu_ms = 5 } ]`; steps: cpu_ms, spin_ms, busy_ms, sleep_ms, wait_ms, await_ms, fan_out, \"yield\""),
        );
        return Vec::new();
    }
    if steps.len() > MAX_STEPS {
        r.error(
            b.span(),
            path,
            Problem::new(format!(
                "a body has at most {MAX_STEPS} steps, found {}",
                steps.len()
            )),
        );
        return Vec::new();
    }
    steps
        .iter()
        .enumerate()
        .filter_map(|(j, s)| match s.get_ref() {
            RawStep::Yield => Some(Step::Yield),
            RawStep::Table(t) => build_step(&format!("{path}[{j}]"), s.span(), t, names, r),
        })
        .collect()
}

fn build_step(
    path: &str,
    span: Range<usize>,
    t: &RawStepTable,
    names: &[String],
    r: &mut Report<'_>,
) -> Option<Step> {
    type Make = fn(SimDuration) -> Step;
    let timed: [(&str, &Option<Spanned<Number>>, Make); 6] = [
        ("cpu_ms", &t.cpu_ms, Step::Cpu),
        ("spin_ms", &t.spin_ms, Step::Spin),
        ("busy_ms", &t.busy_ms, Step::Busy),
        ("sleep_ms", &t.sleep_ms, Step::Sleep),
        ("wait_ms", &t.wait_ms, Step::Wait),
        ("await_ms", &t.await_ms, Step::Await),
    ];
    let mut given: Vec<&str> = timed
        .iter()
        .filter(|(_, v, _)| v.is_some())
        .map(|(k, _, _)| *k)
        .collect();
    if t.yield_.is_some() {
        given.push("yield");
    }
    if t.fan_out.is_some() {
        given.push("fan_out");
    }
    match given.as_slice() {
        [] => {
            r.error(
                span,
                path,
                Problem::new("an empty step").help(format!(
                    "a step is one of {}",
                    crate::scenario::model::STEP_FORMS
                )),
            );
            None
        }
        [_] => {
            if let Some(y) = &t.yield_ {
                if *y.get_ref() {
                    return Some(Step::Yield);
                }
                r.error(
                    y.span(),
                    &format!("{path}.yield"),
                    Problem::new("`yield = false` is not a step")
                        .help("remove the step, or write \"yield\" to yield"),
                );
                return None;
            }
            if let Some(f) = &t.fan_out {
                return r.check(f, &format!("{path}.fan_out"), |name| {
                    let choices: Vec<(&str, usize)> = names
                        .iter()
                        .enumerate()
                        .map(|(i, n)| (n.as_str(), i))
                        .collect();
                    crate::diagnostics::choose(name, &choices, "group")
                        .map(|g| Step::FanOut { group: g as u32 })
                });
            }
            let (key, value, make) = timed.iter().find(|(_, v, _)| v.is_some())?;
            let value = value.as_ref()?;
            r.check(value, &format!("{path}.{key}"), |n| {
                n.duration(TimeUnit::Ms, false)
            })
            .map(make)
        }
        several => {
            let keys = several
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(" and ");
            let split = several
                .iter()
                .map(|k| {
                    if *k == "yield" {
                        "\"yield\"".to_string()
                    } else if *k == "fan_out" {
                        "{ fan_out = \"group\" }".to_string()
                    } else {
                        format!("{{ {k} = ... }}")
                    }
                })
                .collect::<Vec<_>>()
                .join(", ");
            r.error(
                span,
                path,
                Problem::new(format!("a step does one thing, found {keys}")).help(format!(
                    "split it into steps, in the order they run: {split}"
                )),
            );
            None
        }
    }
}
