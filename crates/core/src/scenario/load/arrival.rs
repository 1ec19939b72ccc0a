//! A group's `arrival`: exactly one of `at_ms`, `every_ms`,
//! `poisson_per_s` or `after` (an earlier group, by name), with the
//! `start_ms` or `delay_ms` that goes with it; `after` may take `every_ms`
//! or `poisson_per_s` too, for a stream that starts when the earlier group
//! ends. `late_ms` (not with `after`): the group starts late by a draw
//! from [0, late_ms) each run.

use toml::Spanned;

use crate::diagnostics::{Problem, Report};
use crate::scenario::model::{Arrival, Spacing};
use crate::scenario::raw::{RawArrival, TimeUnit};
use crate::time::SimDuration;

/// Highest Poisson arrival rate accepted: one item per nanosecond.
const MAX_POISSON_PER_S: f64 = 1e9;

pub(super) fn build_arrival(
    path: &str,
    a: &Spanned<RawArrival>,
    me: usize,
    names: &[String],
    r: &mut Report<'_>,
) -> Arrival {
    let raw = a.get_ref();
    let kinds = [
        ("at_ms", raw.at_ms.is_some()),
        ("every_ms", raw.every_ms.is_some()),
        ("poisson_per_s", raw.poisson_per_s.is_some()),
        ("after", raw.after.is_some()),
    ];
    let given: Vec<&str> = kinds.iter().filter(|(_, s)| *s).map(|(k, _)| *k).collect();
    let form_help = "write one of { at_ms = 0 }, { every_ms = 100, start_ms = 0 }, { poisson_per_s = 50, start_ms = 0 }, { after = \"earlier group\", delay_ms = 0 } (add every_ms or poisson_per_s to it for a stream)";
    // `after` says when the group starts; `every_ms` or `poisson_per_s`
    // may go with it to say how its items are spaced from then.
    let stream_after = given.len() == 2
        && raw.after.is_some()
        && (raw.every_ms.is_some() || raw.poisson_per_s.is_some());
    if given.len() != 1 && !stream_after {
        let message = if given.is_empty() {
            "an arrival needs one of `at_ms`, `every_ms`, `poisson_per_s` or `after`".to_string()
        } else {
            format!(
                "an arrival has one kind, found {}",
                given
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(" and ")
            )
        };
        r.error(a.span(), path, Problem::new(message).help(form_help));
        return Arrival::At(SimDuration::ZERO);
    }
    let start = raw
        .start_ms
        .as_ref()
        .and_then(|s| {
            r.check(s, &format!("{path}.start_ms"), |n| {
                n.duration(TimeUnit::Ms, false)
            })
        })
        .unwrap_or(SimDuration::ZERO);
    if let Some(d) = &raw.delay_ms
        && raw.after.is_none()
    {
        r.error(
            d.span(),
            &format!("{path}.delay_ms"),
            Problem::new("`delay_ms` goes with `after`")
                .help("use start_ms with every_ms or poisson_per_s, or at_ms for a fixed time"),
        );
    }
    if let Some(after) = &raw.after {
        if let Some(s) = &raw.start_ms {
            r.error(
                s.span(),
                &format!("{path}.start_ms"),
                Problem::new("`start_ms` goes with `every_ms` or `poisson_per_s`, not `after`")
                    .help("write delay_ms = N to wait after the earlier group"),
            );
        }
        let delay = raw
            .delay_ms
            .as_ref()
            .and_then(|d| {
                r.check(d, &format!("{path}.delay_ms"), |n| {
                    n.duration(TimeUnit::Ms, false)
                })
            })
            .unwrap_or(SimDuration::ZERO);
        let earlier = names.get(..me).unwrap_or(names);
        let group = r.check(after, &format!("{path}.after"), |name| {
            earlier.iter().position(|g| g == name).ok_or_else(|| {
                if names.get(me) == Some(name) {
                    return Problem::new(format!(
                        "`after` names \"{name}\", this group itself: a group cannot wait for its own items"
                    ))
                    .help("name an earlier group, or use at_ms for a fixed time");
                }
                if let Some(j) = names.iter().skip(me + 1).position(|g| g == name) {
                    return Problem::new(format!(
                        "`after` names \"{name}\", which is written later in the file (group[{}]): a group can follow only one written before it",
                        me + 1 + j
                    ))
                    .help(format!("move this [[group]] below the one named \"{name}\""));
                }
                Problem::new(format!(
                    "`after` names \"{name}\", which is not an earlier group"
                ))
                .help(if earlier.is_empty() {
                    "the first group cannot wait for another: use at_ms".to_string()
                } else {
                    format!(
                        "a group can follow one written before it: {}",
                        earlier
                            .iter()
                            .map(|g| format!("\"{g}\""))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })
            })
        });
        return Arrival::After {
            group: group.unwrap_or(0),
            delay,
            spacing: build_spacing(path, raw, r).unwrap_or(Spacing::AtOnce),
        };
    }
    if let Some(at) = &raw.at_ms {
        if let Some(s) = &raw.start_ms {
            r.error(
                s.span(),
                &format!("{path}.start_ms"),
                Problem::new("`start_ms` goes with `every_ms` or `poisson_per_s`, not `at_ms`")
                    .help("with `at_ms` all items arrive at that instant: remove `start_ms`"),
            );
        }
        let at = r.check(at, &format!("{path}.at_ms"), |n| {
            n.duration(TimeUnit::Ms, false)
        });
        return Arrival::At(at.unwrap_or(SimDuration::ZERO));
    }
    match build_spacing(path, raw, r) {
        Some(Spacing::Every(every)) => Arrival::Every { start, every },
        Some(Spacing::Poisson(per_second)) => Arrival::Poisson { start, per_second },
        _ => Arrival::At(SimDuration::ZERO),
    }
}

/// The spacing `every_ms` or `poisson_per_s` gives, if either is written
/// (with a bad value, the spacing a later error cannot follow from).
fn build_spacing(path: &str, raw: &RawArrival, r: &mut Report<'_>) -> Option<Spacing> {
    if let Some(every) = &raw.every_ms {
        let every = r.check(every, &format!("{path}.every_ms"), |n| {
            n.duration(TimeUnit::Ms, true)
        });
        return Some(Spacing::Every(every.unwrap_or(SimDuration::ZERO)));
    }
    if let Some(rate) = &raw.poisson_per_s {
        let per_second = r.check(rate, &format!("{path}.poisson_per_s"), |n| {
            let x = n.as_f64();
            if !x.is_finite() || x <= 0.0 {
                Err(Problem::new(format!(
                    "the arrival rate must be a finite number greater than 0 per second, found {n}"
                )))
            } else if x > MAX_POISSON_PER_S {
                Err(Problem::new(format!(
                    "{n} items per second is too many: the limit is {MAX_POISSON_PER_S:e}"
                )))
            } else {
                Ok(x)
            }
        });
        return Some(Spacing::Poisson(per_second.unwrap_or(1.0)));
    }
    None
}

/// `late_ms` of arrival `a` ([`crate::scenario::Group::late`]): a duration,
/// zero when absent; refused with `after` (that group's start is the
/// earlier group's end, not an instant the program chose).
pub(super) fn build_late(path: &str, a: &Spanned<RawArrival>, r: &mut Report<'_>) -> SimDuration {
    let raw = a.get_ref();
    let Some(late) = &raw.late_ms else {
        return SimDuration::ZERO;
    };
    if raw.after.is_some() {
        r.error(
            late.span(),
            &format!("{path}.late_ms"),
            Problem::new("`late_ms` goes with `at_ms`, `every_ms` or `poisson_per_s`, not `after`")
                .help("a group after another starts when that one ends: use delay_ms for a fixed wait"),
        );
        return SimDuration::ZERO;
    }
    r.check(late, &format!("{path}.late_ms"), |n| {
        n.duration(TimeUnit::Ms, false)
    })
    .unwrap_or(SimDuration::ZERO)
}
