//! Stage two of loading a scenario: check every value and cross-field rule
//! of the [`raw`](crate::scenario::raw) file and build the validated
//! [`Scenario`].
//!
//! Every problem is reported, not just the first, each with file, line,
//! column and TOML path (`group[1].body[0].sleep_ms`). The policy named in
//! `[pool]` is not resolved here (see [`crate::policy_file::resolve_policy_in`]).

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;

use toml::Spanned;

use crate::diagnostics::{Diagnostic, LoadError, Problem, Report, choose};
use crate::scenario::model::THROTTLE_KINDS;
use crate::scenario::model::{
    Arrival, Group, MAX_CORES, MAX_ITEMS, MAX_STEPS, MAX_THREADS_LIMIT, Machine, Origin,
    PoolSettings, Probe, Scenario, Step, Submit, Throttle,
};
use crate::scenario::raw::{
    Number, RawArrival, RawGroup, RawPool, RawScenario, RawStep, RawStepTable, RawThrottle,
    TimeUnit,
};
use crate::time::SimDuration;

/// Every `submit = ...` shape, in the order messages list them (the names
/// are [`Submit::name`]); a new submission shape is one line here.
const SUBMITS: &[Submit] = &[
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

/// The .NET call a shape stands for, in messages.
fn api_name(submit: Submit) -> &'static str {
    match submit {
        Submit::TaskRun => "Task.Run",
        Submit::QueueUserWorkItem => "ThreadPool.QueueUserWorkItem",
        Submit::WhenAll => "Task.WhenAll",
        Submit::NewThread => "new Thread(...).Start()",
        Submit::ParallelInvoke => "Parallel.Invoke",
        Submit::ParallelFor => "Parallel.For",
        Submit::ParallelForEach => "Parallel.ForEach",
        Submit::Plinq => "PLINQ",
        Submit::ParallelForEachAsync => "Parallel.ForEachAsync",
    }
}

/// What a synchronous shape calls its bodies, in messages.
fn bodies_of(submit: Submit) -> String {
    match submit {
        Submit::ParallelInvoke => "Parallel.Invoke actions".to_string(),
        Submit::Plinq => "PLINQ Select bodies".to_string(),
        other => format!("{} bodies", api_name(other)),
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

/// `from = ...` values.
const ORIGINS: &[(&str, Origin)] = &[("main", Origin::Main), ("pool", Origin::Pool)];

/// Highest Poisson arrival rate accepted: one item per nanosecond.
const MAX_POISSON_PER_S: f64 = 1e9;

/// Parses and validates scenario TOML `text`. `file` names the file in
/// messages, and its stem is the default scenario `name`.
pub fn parse_scenario(text: &str, file: &str) -> Result<Scenario, LoadError> {
    let raw: RawScenario = crate::diagnostics::parse_document(text, file)?;
    let mut report = Report::new(file, text);
    if raw.is_empty() {
        return Err(Diagnostic::new("the scenario file is empty: it has no keys or tables")
            .in_file(file)
            .at_offset(text, 0)
            .with_help(
                "a scenario needs [machine] with `cores`, [pool] with `policy` and at least one [[group]] with `count` and `body`; the files in scenarios/ are examples",
            )
            .into());
    }
    let scenario = build_scenario(&raw, file, &mut report);
    report.finish(scenario)
}

/// Span pointing at the first character of the file, for things missing
/// from the top level.
const START: Range<usize> = 0..0;

fn build_scenario(raw: &RawScenario, file: &str, r: &mut Report<'_>) -> Scenario {
    let name = match &raw.name {
        Some(n) => r.check(n, "name", |s| non_empty(s)).unwrap_or_default(),
        None => default_name(file),
    };
    let seed = raw
        .seed
        .as_ref()
        .and_then(|s| r.check(s, "seed", |n| n.integer_in(0, i64::MAX)))
        .map_or(1, |s| s.unsigned_abs());
    let until = raw
        .until_ms
        .as_ref()
        .and_then(|u| r.check(u, "until_ms", |n| n.duration(TimeUnit::Ms, true)));

    let cores = match &raw.machine {
        None => {
            r.error(
                START,
                "machine",
                Problem::new("missing table `[machine]`")
                    .help("add a `[machine]` table with the number of cores: `cores = 4`"),
            );
            1
        }
        Some(m) => match &m.get_ref().cores {
            None => {
                r.error(
                    m.span(),
                    "machine.cores",
                    Problem::new("missing key `cores`")
                        .help("say how many cores the simulated machine has: `cores = 4`"),
                );
                1
            }
            Some(c) => r
                .check(c, "machine.cores", |n| {
                    n.integer_in(1, i64::from(MAX_CORES)).map_err(|p| {
                        p.help("`cores` is the number of processors of the simulated machine")
                    })
                })
                .and_then(|c| u32::try_from(c).ok())
                .unwrap_or(1),
        },
    };
    let tick = raw
        .machine
        .as_ref()
        .and_then(|m| m.get_ref().tick_ms.as_ref())
        .and_then(|t| {
            r.check(t, "machine.tick_ms", |n| {
                n.duration(TimeUnit::Ms, true).map_err(|p| {
                    p.help("`tick_ms` is the step of Environment.TickCount: 15.625 on Windows; leave it out for an exact clock")
                })
            })
        });

    let pool = match &raw.pool {
        None => {
            r.error(
                START,
                "pool",
                Problem::new("missing table `[pool]`")
                    .help("add a `[pool]` table naming a policy: `policy = \"net-classic\"`"),
            );
            None
        }
        Some(p) => Some(build_pool(p, r)),
    };
    let pool = pool.unwrap_or(PoolSettings {
        policy: String::new(),
        min_threads: None,
        max_threads: None,
        gate_phase: None,
        tiered_compilation: true,
    });

    let mut groups = Vec::new();
    match &raw.group {
        None => r.error(
            START,
            "group",
            Problem::new("the scenario has no work: no `[[group]]` table")
                .help("add one: `[[group]]` then `count = 10` and `body = [ { sleep_ms = 100 } ]`"),
        ),
        Some(list) if list.get_ref().is_empty() => r.error(
            list.span(),
            "group",
            Problem::new("the scenario has no work: `group` is empty").help(
                "write each group as a [[group]] table with `count = 10` and `body = [ { sleep_ms = 100 } ]`",
            ),
        ),
        Some(list) => {
            // Every group's name as written (or its default), for `after`.
            let names: Vec<String> = list
                .get_ref()
                .iter()
                .enumerate()
                .map(|(i, g)| match &g.get_ref().name {
                    Some(n) => n.get_ref().clone(),
                    None => format!("group{i}"),
                })
                .collect();
            for (i, g) in list.get_ref().iter().enumerate() {
                groups.push(build_group(i, g, &names, r));
            }
            check_group_names(list.get_ref(), &groups, r);
            check_total_items(list.get_ref(), &groups, r);
        }
    }

    let mut probes = Vec::new();
    if let Some(list) = &raw.probe {
        for (i, p) in list.get_ref().iter().enumerate() {
            let path = format!("probe[{i}]");
            let every = match &p.get_ref().every_ms {
                None => {
                    r.error(
                        p.span(),
                        &format!("{path}.every_ms"),
                        Problem::new("missing key `every_ms`")
                            .help("say how often the probe runs: `every_ms = 500`"),
                    );
                    None
                }
                Some(e) => r.check(e, &format!("{path}.every_ms"), |n| {
                    n.duration(TimeUnit::Ms, true)
                }),
            };
            probes.push(Probe {
                every: every.unwrap_or(SimDuration::ZERO),
            });
        }
    }

    Scenario {
        name,
        seed,
        workload_seed: None,
        machine: Machine { cores, tick },
        pool,
        groups,
        probes,
        until,
    }
}

fn default_name(file: &str) -> String {
    Path::new(file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "scenario".to_string())
}

fn non_empty(s: &str) -> Result<String, Problem> {
    if s.trim().is_empty() {
        Err(Problem::new("must not be empty"))
    } else {
        Ok(s.to_string())
    }
}

fn thread_count(n: &Number) -> Result<u32, Problem> {
    n.integer_in(1, i64::from(MAX_THREADS_LIMIT))
        .map(|v| u32::try_from(v).unwrap_or(MAX_THREADS_LIMIT))
}

fn build_pool(p: &Spanned<RawPool>, r: &mut Report<'_>) -> PoolSettings {
    let raw = p.get_ref();
    let policy = match &raw.policy {
        None => {
            r.error(
                p.span(),
                "pool.policy",
                Problem::new("missing key `policy`").help(
                    "name a policy or give the path of a policy file: `policy = \"net-classic\"`",
                ),
            );
            String::new()
        }
        Some(s) => r
            .check(s, "pool.policy", |s| {
                non_empty(s).map(|s| s.trim().to_string()).map_err(|p| {
                    p.help("name a policy or give the path of a policy file: `policy = \"net-classic\"`")
                })
            })
            .unwrap_or_default(),
    };
    let min_threads = raw
        .min_threads
        .as_ref()
        .and_then(|m| r.check(m, "pool.min_threads", thread_count));
    let max_threads = raw
        .max_threads
        .as_ref()
        .and_then(|m| r.check(m, "pool.max_threads", thread_count));
    if let (Some(min), Some(max), Some(min_span)) = (min_threads, max_threads, &raw.min_threads)
        && min > max
    {
        r.error(
            min_span.span(),
            "pool.min_threads",
            Problem::new(format!(
                "min_threads ({min}) is greater than max_threads ({max})"
            ))
            .help("the pool refuses SetMinThreads above the maximum: lower min_threads or raise max_threads"),
        );
    }
    let gate_phase = raw
        .gate_phase_ms
        .as_ref()
        .and_then(|g| r.check(g, "pool.gate_phase_ms", |n| n.duration(TimeUnit::Ms, false)));
    PoolSettings {
        policy,
        min_threads,
        max_threads,
        gate_phase,
        tiered_compilation: raw.tiered_compilation.as_ref().is_none_or(|t| *t.get_ref()),
    }
}

/// Group `i`; `names` are every group's names, for `after`.
fn build_group(i: usize, g: &Spanned<RawGroup>, names: &[String], r: &mut Report<'_>) -> Group {
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
        Some(b) => build_body(&format!("{path}.body"), b, r),
    };
    let (max_degree, throttle) = match shape {
        Some(shape) => check_shape(&path, shape, raw, r),
        None => (None, None),
    };
    Group {
        name,
        count: count.map_or(1, |c| c.unsigned_abs()),
        submit,
        from,
        arrival,
        body,
        max_degree,
        throttle,
    }
}

/// The rules of a submission shape: synchronous bodies, one-call arrivals,
/// `max_degree` and `throttle`. Returns those two, checked.
fn check_shape(
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
                    api_name(shape)
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
                    api_name(shape)
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

fn build_arrival(
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
    let form_help = "write one of { at_ms = 0 }, { every_ms = 100, start_ms = 0 }, { poisson_per_s = 50, start_ms = 0 }, { after = \"earlier group\", delay_ms = 0 }";
    if given.len() != 1 {
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
    if let Some(every) = &raw.every_ms {
        let every = r.check(every, &format!("{path}.every_ms"), |n| {
            n.duration(TimeUnit::Ms, true)
        });
        return Arrival::Every {
            start,
            every: every.unwrap_or(SimDuration::ZERO),
        };
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
        return Arrival::Poisson {
            start,
            per_second: per_second.unwrap_or(1.0),
        };
    }
    Arrival::At(SimDuration::ZERO)
}

fn build_body(path: &str, b: &Spanned<Vec<Spanned<RawStep>>>, r: &mut Report<'_>) -> Vec<Step> {
    let steps = b.get_ref();
    if steps.is_empty() {
        r.error(
            b.span(),
            path,
            Problem::new("a body needs at least one step")
                .help("e.g. `body = [ { cpu_ms = 5 } ]`; steps: cpu_ms, spin_ms, sleep_ms, wait_ms, await_ms, \"yield\""),
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
            RawStep::Table(t) => build_step(&format!("{path}[{j}]"), s.span(), t, r),
        })
        .collect()
}

fn build_step(
    path: &str,
    span: Range<usize>,
    t: &RawStepTable,
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
    match given.as_slice() {
        [] => {
            r.error(
                span,
                path,
                Problem::new("an empty step").help(
                    "a step is one of { cpu_ms = N }, { spin_ms = N }, { sleep_ms = N }, { wait_ms = N }, { await_ms = N } or \"yield\"",
                ),
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

fn check_group_names(raw: &[Spanned<RawGroup>], groups: &[Group], r: &mut Report<'_>) {
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

fn check_total_items(raw: &[Spanned<RawGroup>], groups: &[Group], r: &mut Report<'_>) {
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

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = r#"
# comment
name = "full"
seed = 7
until_ms = 600000
[machine]
cores = 4
tick_ms = 15.625
[pool]
policy = "net-classic"
min_threads = 4
max_threads = 100
gate_phase_ms = 131
[[group]]
name = "sleepers"
count = 10
submit = "queue-user-work-item"
from = "pool"
arrival = { every_ms = 100, start_ms = 5 }
body = [ { sleep_ms = 4000 }, { cpu_ms = 5 }, "yield", { yield = true }, { spin_ms = 1.5 }, { wait_ms = 2 }, { await_ms = 3 } ]
[[group]]
count = 2
arrival = { poisson_per_s = 50 }
body = [ { cpu_ms = 1 } ]
throttle = { kind = "concurrent-exclusive", limit = 2 }
[[probe]]
every_ms = 500
"#;

    #[test]
    fn a_full_scenario_loads() {
        let s = parse_scenario(FULL, "dir/x.toml").unwrap();
        assert_eq!(s.name, "full");
        assert_eq!(s.seed, 7);
        assert_eq!(s.until, Some(SimDuration::from_ms(600_000)));
        assert_eq!(s.machine.cores, 4);
        assert_eq!(s.machine.tick, Some(SimDuration::from_nanos(15_625_000)));
        assert_eq!(s.pool.policy, "net-classic");
        assert_eq!(s.pool.min_threads, Some(4));
        assert_eq!(s.pool.max_threads, Some(100));
        assert_eq!(s.pool.gate_phase, Some(SimDuration::from_ms(131)));
        assert_eq!(s.groups.len(), 2);
        let g = &s.groups[0];
        assert_eq!(g.name, "sleepers");
        assert_eq!(g.count, 10);
        assert_eq!(g.submit, Submit::QueueUserWorkItem);
        assert_eq!(g.from, Origin::Pool);
        assert_eq!(
            g.arrival,
            Arrival::Every {
                start: SimDuration::from_ms(5),
                every: SimDuration::from_ms(100)
            }
        );
        assert_eq!(
            g.body,
            vec![
                Step::Sleep(SimDuration::from_ms(4000)),
                Step::Cpu(SimDuration::from_ms(5)),
                Step::Yield,
                Step::Yield,
                Step::Spin(SimDuration::from_us(1500)),
                Step::Wait(SimDuration::from_ms(2)),
                Step::Await(SimDuration::from_ms(3)),
            ]
        );
        let g = &s.groups[1];
        assert_eq!(g.name, "group1");
        assert_eq!(g.submit, Submit::TaskRun);
        assert_eq!(g.from, Origin::Main);
        assert_eq!(
            g.arrival,
            Arrival::Poisson {
                start: SimDuration::ZERO,
                per_second: 50.0
            }
        );
        assert_eq!(
            g.throttle,
            Some(Throttle {
                kind: crate::scenario::model::ThrottleKind::ConcurrentExclusive,
                limit: 2
            })
        );
        assert_eq!(
            s.probes,
            vec![Probe {
                every: SimDuration::from_ms(500)
            }]
        );
        assert_eq!(s.item_count(), 12);
    }

    #[test]
    fn every_submission_shape_loads_with_its_options() {
        for shape in SUBMITS {
            let degree = if shape.one_call() {
                "max_degree = 3\n"
            } else {
                ""
            };
            let throttle = if shape.takes_throttle() {
                "throttle = { kind = \"semaphore\", limit = 2 }\n"
            } else {
                ""
            };
            let text = format!(
                "[machine]\ncores = 2\n[pool]\npolicy = \"p\"\n[[group]]\ncount = 4\nsubmit = \"{}\"\n{degree}{throttle}body = [ {{ cpu_ms = 1 }} ]\n",
                shape.name()
            );
            let s = parse_scenario(&text, "s.toml").unwrap_or_else(|e| panic!("{e}"));
            let g = &s.groups[0];
            assert_eq!(g.submit, *shape);
            assert_eq!(g.max_degree, shape.one_call().then_some(3));
            assert_eq!(
                g.throttle,
                shape.takes_throttle().then_some(Throttle {
                    kind: crate::scenario::model::ThrottleKind::Semaphore,
                    limit: 2
                })
            );
        }
        // Without the keys: the API's defaults.
        let s = parse_scenario(FULL, "x.toml").unwrap();
        assert_eq!((s.groups[0].max_degree, s.groups[0].throttle), (None, None));
        assert_eq!(s.groups[1].max_degree, None);
    }

    #[test]
    fn defaults_apply() {
        let text = "[machine]\ncores = 2\n[pool]\npolicy = \"p\"\n[[group]]\ncount = 1\nbody = [\"yield\"]\n";
        let s = parse_scenario(text, "scenarios/ten-sleepers.toml").unwrap();
        assert_eq!(s.name, "ten-sleepers");
        assert_eq!(s.seed, 1);
        assert_eq!(s.until, None);
        assert_eq!(s.pool.min_threads, None);
        assert_eq!(s.pool.gate_phase, None);
        assert_eq!(s.machine.tick, None);
        assert_eq!(s.groups[0].name, "group0");
        assert_eq!(s.groups[0].arrival, Arrival::At(SimDuration::ZERO));
        assert!(s.probes.is_empty());
    }

    #[test]
    fn every_problem_is_reported_in_file_order() {
        let text = "[machine]\ncores = 0\n[pool]\npolicy = \"p\"\nmin_threads = 0\n[[group]]\ncount = 1.5\nbody = []\n";
        let e = parse_scenario(text, "f.toml").unwrap_err();
        let paths: Vec<_> = e.diagnostics().map(|d| d.path.clone().unwrap()).collect();
        assert_eq!(
            paths,
            [
                "machine.cores",
                "pool.min_threads",
                "group[0].count",
                "group[0].body"
            ]
        );
        let lines: Vec<_> = e.diagnostics().map(|d| d.line.unwrap()).collect();
        assert_eq!(lines, [2, 5, 7, 8]);
    }

    #[test]
    fn a_tick_must_be_a_positive_duration() {
        for (tick, says) in [
            ("0", "must be greater than 0 ms"),
            ("-15.625", "must not be negative"),
            ("\"15\"", "number"),
        ] {
            let text = format!(
                "[machine]\ncores = 1\ntick_ms = {tick}\n[pool]\npolicy = \"p\"\n[[group]]\ncount = 1\nbody = [\"yield\"]\n"
            );
            let e = parse_scenario(&text, "t.toml").unwrap_err();
            let d = e.diagnostics().next().unwrap();
            assert_eq!(d.path.as_deref(), Some("machine.tick_ms"), "{tick}");
            assert!(d.message.contains(says), "{tick}: {}", d.message);
        }
    }

    #[test]
    fn many_errors_are_capped_and_stay_fast() {
        let steps = vec!["{ cpu_ms = -1 }"; MAX_STEPS].join(", ");
        let text = format!(
            "[machine]\ncores = 1\n[pool]\npolicy = \"p\"\n[[group]]\ncount = 1\nbody = [ {steps} ]\n"
        );
        let e = parse_scenario(&text, "big.toml").unwrap_err();
        assert_eq!(e.len(), 21);
        let last = e.diagnostics().last().unwrap();
        assert_eq!(
            last.message,
            "9980 more errors not shown; fix the ones above first"
        );

        let garbage = "= = =\n".repeat(20_000);
        let e = parse_scenario(&garbage, "garbage.toml").unwrap_err();
        assert!(e.len() <= 21);
        assert_eq!(e.line(), Some(1));
    }

    #[test]
    fn too_many_steps_are_refused() {
        let steps = vec!["\"yield\""; MAX_STEPS + 1].join(", ");
        let text = format!(
            "[machine]\ncores = 1\n[pool]\npolicy = \"p\"\n[[group]]\ncount = 1\nbody = [ {steps} ]\n"
        );
        let e = parse_scenario(&text, "f.toml").unwrap_err();
        assert_eq!(e.path(), Some("group[0].body"));
        assert!(e.message().contains("at most 10000 steps"), "{e}");
    }

    #[test]
    fn never_panics_on_mangled_input() {
        // Every prefix of a valid file, and a few byte-level mutations.
        for cut in 0..=FULL.len() {
            if let Some(prefix) = FULL.get(..cut) {
                let _ = parse_scenario(prefix, "p.toml");
            }
        }
        for (i, c) in FULL.char_indices().step_by(2) {
            for sub in ["", "\"", "[", "]", "=", "-", "1e400", "\n", "{", "é"] {
                let mut t = String::with_capacity(FULL.len() + 8);
                t.push_str(&FULL[..i]);
                t.push_str(sub);
                t.push_str(&FULL[i + c.len_utf8()..]);
                let _ = parse_scenario(&t, "m.toml");
            }
        }
    }
}
