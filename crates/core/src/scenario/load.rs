//! Stage two of loading a scenario: check every value and cross-field rule
//! of the [`raw`](crate::scenario::raw) file and build the validated
//! [`Scenario`].
//!
//! Every problem is reported, not just the first, each with file, line,
//! column and TOML path (`group[1].body[0].sleep_ms`). The policy named in
//! `[pool]` is not resolved here (see [`crate::policy_file::resolve_policy_in`]).
//!
//! This file builds the scenario's top level (name, seed, `[machine]`,
//! `[pool]`, the list of groups, `[[probe]]`); beside it, `group` builds
//! one `[[group]]`, `shape` checks its submission shape and throttle,
//! `arrival` its arrival and `body` its steps.

mod arrival;
mod body;
mod group;
mod shape;
#[cfg(test)]
mod tests;

use std::ops::Range;
use std::path::Path;

use toml::Spanned;

use crate::diagnostics::{Diagnostic, LoadError, Problem, Report};
use crate::scenario::model::{
    MAX_CORES, MAX_THREADS_LIMIT, Machine, PoolSettings, Probe, Scenario,
};
use crate::scenario::raw::{Number, RawPool, RawScenario, TimeUnit};
use crate::time::SimDuration;
use group::{build_group, check_fan_outs, check_group_names, check_total_items};

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
    let processors = raw
        .machine
        .as_ref()
        .and_then(|m| m.get_ref().processors.as_ref())
        .and_then(|p| {
            r.check(p, "machine.processors", |n| {
                n.integer_in(1, i64::from(MAX_CORES)).map_err(|p| {
                    p.help("`processors` is what the runtime sees (DOTNET_PROCESSOR_COUNT on .NET 8); leave it out to use `cores`")
                })
            })
        })
        .and_then(|p| u32::try_from(p).ok());
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
            check_fan_outs(list.get_ref(), &mut groups, r);
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
        machine: Machine {
            cores,
            processors,
            tick,
        },
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
