//! A sweep's plan (every run, checked before any starts) and its execution
//! in parallel across cores (rayon: runs in parallel, never one run split).
//!
//! Run order, which is also CSV order: first the scenario as written
//! (`--seeds` runs), then for each policy in `--policy` order, for each grid
//! point (first `--set` slowest), each replicate. Run `r` of a point uses
//! seed `point's scenario seed + r`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;
use toml::Table;

use crate::diagnostics::LoadError;
use crate::engine::{self, SimOptions};
use crate::metrics;
use crate::policy::PolicyConfig;
use crate::policy_file::parse_policy;
use crate::scenario::load::parse_scenario;
use crate::scenario::{ArrivalDraws, Scenario};
use crate::sweep::apply::{self, DocName, KeyPath, PolicySource, Target};
use crate::sweep::grid::{self, Axis, Shard};
use crate::sweep::table::{self, Row, SweepTable};
use crate::sweep::{SweepError, fingerprint};
use crate::trace::NullSink;

/// At most this many runs in one sweep.
pub const MAX_RUNS: usize = 5_000_000;
/// At most this many (point, policy) pairs, each a validated scenario and policy.
pub const MAX_POINTS: usize = 1_000_000;
/// At most this many seeds per point.
pub const MAX_SEEDS: u32 = 100_000;

/// What to sweep.
#[derive(Clone, Debug)]
pub struct SweepInput {
    /// The scenario file's text.
    pub scenario_text: String,
    /// The scenario file's path: named in messages, its stem is the default
    /// scenario name, and a relative policy path is looked up beside it.
    pub scenario_file: String,
    /// The `--set` axes, in order.
    pub axes: Vec<Axis>,
    /// `--policy` names or paths; empty: the scenario's own policy.
    pub policies: Vec<String>,
    /// Runs per point, seeds `seed`, `seed + 1`, ….
    pub seeds: u32,
    /// Whether each run draws its own random (Poisson) arrivals, as
    /// `advise` and `run --runs` do ([`Scenario::for_run`]), or replays
    /// the scenario's own draw.
    pub arrivals: ArrivalDraws,
}

/// A validated scenario and policy: one grid point under one policy.
#[derive(Clone, Debug)]
struct Instance {
    scenario: Arc<Scenario>,
    policy: Arc<PolicyConfig>,
}

/// One run of a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunSpec {
    pub run: usize,
    /// `None`: the scenario as written.
    pub point: Option<usize>,
    /// Index into [`Plan::policies`] (0 for the scenario as written).
    pub policy: usize,
    pub replicate: u32,
}

/// Every run of a sweep, each scenario and policy already validated.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The scenario's `name`.
    pub scenario_name: String,
    pub axes: Vec<Axis>,
    pub keys: Vec<KeyPath>,
    /// Grid points: one value index per axis.
    pub points: Vec<Vec<usize>>,
    /// Policy labels, in `--policy` order.
    pub policies: Vec<String>,
    /// The scenario's own `pool.policy`.
    pub baseline_policy: String,
    pub seeds: u32,
    pub arrivals: ArrivalDraws,
    pub fingerprint: String,
    baseline: Instance,
    /// Index `policy * points + point`.
    instances: Vec<Instance>,
}

/// The diagnostics of a loader error about an edited document, without
/// line and column (they point into the re-serialized text, not the
/// user's file), as one block.
fn without_location(e: &LoadError) -> String {
    let diags: Vec<String> = e
        .diagnostics()
        .map(|d| {
            let mut d = d.clone();
            d.line = None;
            d.column = None;
            d.to_string()
        })
        .collect();
    if diags.len() == 1 {
        diags.join("")
    } else {
        diags
            .iter()
            .map(|d| format!("\n  {}", d.replace('\n', "\n  ")))
            .collect()
    }
}

/// The problems found while checking every grid point: the first few
/// distinct ones, each with the first setting that shows it.
#[derive(Default)]
struct Problems {
    /// (prefix, first setting, diagnostics, further settings with the same)
    list: Vec<(String, String, String, usize)>,
    hidden: usize,
}

impl Problems {
    const SHOWN: usize = 5;

    fn add(&mut self, prefix: String, at: String, diag: String) {
        if let Some(p) = self.list.iter_mut().find(|p| p.0 == prefix && p.2 == diag) {
            p.3 += 1;
        } else if self.list.len() < Self::SHOWN {
            self.list.push((prefix, at, diag, 0));
        } else {
            self.hidden += 1;
        }
    }

    fn text(&self, failed: usize, total: usize, what: &str) -> String {
        let mut out = String::new();
        for (prefix, at, diag, more) in &self.list {
            let others = match more {
                0 => String::new(),
                1 => " (and 1 other setting)".to_string(),
                n => format!(" (and {n} other settings)"),
            };
            let at = match (at.is_empty(), diag.starts_with('\n')) {
                (true, _) => String::new(),
                (false, true) => format!("at {at}{others}:"),
                (false, false) => format!("at {at}{others}: "),
            };
            out.push_str(&format!("{prefix}{at}{diag}\n"));
        }
        if self.hidden > 0 {
            out.push_str(&format!("… and {} more problems\n", self.hidden));
        }
        out.push_str(&format!(
            "refused before any run: {failed} of {total} {what} cannot be built"
        ));
        out
    }
}

fn parse_table(text: &str, file: &str) -> Result<Table, SweepError> {
    text.parse::<Table>()
        .map_err(|e| SweepError::new(format!("{file}: cannot read it as TOML: {e}")))
}

/// The edited document as text for the loader.
fn serialize(doc: &Table, file: &str) -> Result<String, SweepError> {
    toml::to_string(doc).map_err(|e| SweepError::new(format!("{file}: cannot re-write it: {e}")))
}

impl Plan {
    /// Checks every `--set`, policy and grid point and builds the plan; a
    /// value the loader refuses at any point is an error here, before any
    /// run starts.
    pub fn build(input: &SweepInput) -> Result<Plan, SweepError> {
        let file = input.scenario_file.as_str();
        if input.seeds == 0 || input.seeds > MAX_SEEDS {
            return Err(SweepError::new(format!(
                "--seeds {}: give from 1 to {MAX_SEEDS} runs per point",
                input.seeds
            )));
        }
        // The scenario as written, with the loader's own locations.
        let scenario = parse_scenario(&input.scenario_text, file)
            .map_err(|e| SweepError::new(e.to_string()))?;
        let scenario_doc = parse_table(&input.scenario_text, file)?;
        let dir = Path::new(file).parent();
        let baseline_policy = scenario.pool.policy.clone();
        let baseline_source =
            apply::policy_source(&baseline_policy, dir).map_err(SweepError::new)?;
        let baseline = Instance {
            scenario: Arc::new(scenario.clone()),
            policy: Arc::new(
                parse_policy(&baseline_source.text, &baseline_source.file)
                    .map_err(|e| SweepError::new(e.to_string()))?,
            ),
        };

        let mut sources: Vec<PolicySource> = Vec::new();
        if input.policies.is_empty() {
            sources.push(baseline_source.clone());
        }
        for name in &input.policies {
            if sources.iter().any(|s| s.label == name.trim()) {
                return Err(SweepError::new(format!("--policy {name} is given twice")));
            }
            let src = apply::policy_source(name, None)
                .map_err(|e| SweepError::new(format!("--policy {name}: {e}")))?;
            sources.push(src);
        }
        let policy_docs: Vec<Table> = sources
            .iter()
            .map(|s| parse_table(&s.text, &s.file))
            .collect::<Result<_, _>>()?;

        // Resolve every key against the documents it edits.
        let mut keys: Vec<KeyPath> = Vec::new();
        for axis in &input.axes {
            let (target, path) = apply::split_target(&axis.key);
            let key = match target {
                Target::Scenario => apply::resolve(
                    &axis.key,
                    path,
                    target,
                    &scenario_doc,
                    &DocName {
                        what: &format!("the scenario {file}"),
                        base: None,
                    },
                ),
                Target::Policy => {
                    let mut resolved = None;
                    for (src, doc) in sources.iter().zip(&policy_docs) {
                        let what = format!("policy {} ({})", src.label, src.file);
                        let base = doc.get("base").and_then(toml::Value::as_str);
                        let k = apply::resolve(
                            &axis.key,
                            path,
                            target,
                            doc,
                            &DocName { what: &what, base },
                        );
                        match k {
                            Ok(k) => resolved = Some(Ok(k)),
                            Err(e) => {
                                resolved = Some(Err(e));
                                break;
                            }
                        }
                    }
                    resolved.unwrap_or_else(|| Err("no policy to edit".to_string()))
                }
            }
            .map_err(|e| SweepError::new(format!("--set {}: {e}", axis.key)))?;
            if let Some(other) = keys.iter().find(|k| k.canonical() == key.canonical()) {
                return Err(SweepError::new(format!(
                    "--set {} and --set {} name the same value ({}): give it once",
                    other.key,
                    axis.key,
                    key.canonical()
                )));
            }
            keys.push(key);
        }

        let points = match grid::point_count(&input.axes) {
            Some(n) if n.saturating_mul(sources.len()) <= MAX_POINTS => grid::points(&input.axes),
            _ => {
                return Err(SweepError::new(format!(
                    "the grid has more than {MAX_POINTS} points x policies: sweep fewer values"
                )));
            }
        };
        let total = (points.len() * sources.len() + 1).saturating_mul(input.seeds as usize);
        if total > MAX_RUNS {
            return Err(SweepError::new(format!(
                "the sweep has {total} runs, more than {MAX_RUNS}: sweep fewer values, policies or seeds, or split the grid into several sweeps"
            )));
        }

        let scenario_axes: Vec<usize> = (0..keys.len())
            .filter(|&i| keys[i].target == Target::Scenario)
            .collect();
        let policy_axes: Vec<usize> = (0..keys.len())
            .filter(|&i| keys[i].target == Target::Policy)
            .collect();
        let describe = |point: &[usize], axes: &[usize]| {
            axes.iter()
                .map(|&a| format!("{}={}", input.axes[a].key, input.axes[a].values[point[a]]))
                .collect::<Vec<_>>()
                .join(", ")
        };

        let mut problems = Problems::default();
        let mut failed_points = 0usize;
        let mut scenario_cache: HashMap<Vec<usize>, Option<Arc<Scenario>>> = HashMap::new();
        let mut policy_cache: HashMap<(usize, Vec<usize>), Option<Arc<PolicyConfig>>> =
            HashMap::new();
        let mut instances = Vec::with_capacity(points.len() * sources.len());
        for (p, src) in sources.iter().enumerate() {
            for point in &points {
                let s_key: Vec<usize> = scenario_axes.iter().map(|&a| point[a]).collect();
                let scenario = scenario_cache
                    .entry(s_key)
                    .or_insert_with(|| {
                        if scenario_axes.is_empty() {
                            return Some(baseline.scenario.clone());
                        }
                        let mut doc = scenario_doc.clone();
                        for &a in &scenario_axes {
                            apply::set(
                                &mut doc,
                                &keys[a].segs,
                                input.axes[a].values[point[a]].to_toml(),
                            );
                        }
                        let result = serialize(&doc, file).and_then(|text| {
                            parse_scenario(&text, file)
                                .map_err(|e| SweepError::new(without_location(&e)))
                        });
                        match result {
                            Ok(s) => Some(Arc::new(s)),
                            Err(e) => {
                                problems.add(
                                    String::new(),
                                    describe(point, &scenario_axes),
                                    e.to_string(),
                                );
                                None
                            }
                        }
                    })
                    .clone();
                let p_key: Vec<usize> = policy_axes.iter().map(|&a| point[a]).collect();
                let policy = policy_cache
                    .entry((p, p_key))
                    .or_insert_with(|| {
                        let mut doc = policy_docs[p].clone();
                        for &a in &policy_axes {
                            apply::set(
                                &mut doc,
                                &keys[a].segs,
                                input.axes[a].values[point[a]].to_toml(),
                            );
                        }
                        let text = if policy_axes.is_empty() {
                            Ok(src.text.clone())
                        } else {
                            serialize(&doc, &src.file)
                        };
                        let result = text.and_then(|text| {
                            parse_policy(&text, &src.file).map_err(|e| {
                                SweepError::new(if policy_axes.is_empty() {
                                    e.to_string()
                                } else {
                                    without_location(&e)
                                })
                            })
                        });
                        match result {
                            Ok(c) => Some(Arc::new(c)),
                            Err(e) => {
                                problems.add(
                                    format!("--policy {}: ", src.label),
                                    describe(point, &policy_axes),
                                    e.to_string(),
                                );
                                None
                            }
                        }
                    })
                    .clone();
                match (scenario, policy) {
                    (Some(scenario), Some(policy)) => instances.push(Instance { scenario, policy }),
                    _ => failed_points += 1,
                }
            }
        }
        if !problems.list.is_empty() {
            let what = if sources.len() > 1 {
                "grid points x policies"
            } else {
                "grid points"
            };
            return Err(SweepError::new(problems.text(
                failed_points.max(1),
                points.len() * sources.len(),
                what,
            )));
        }

        // How the arrivals are drawn changes the runs only where they are
        // random, and only there is it part of the sweep's identity.
        let draws = match input.arrivals {
            _ if !scenario.has_random_arrivals() => "",
            ArrivalDraws::PerRun => "arrivals drawn per run",
            ArrivalDraws::Fixed => "arrivals fixed",
        };
        let seeds = input.seeds.to_string();
        let policies_text = sources
            .iter()
            .map(|s| format!("{}\u{1}{}", s.label, s.text))
            .collect::<Vec<_>>()
            .join("\u{2}");
        let axes_text = input
            .axes
            .iter()
            .map(|a| {
                let vals: Vec<String> = a.values.iter().map(|v| v.to_string()).collect();
                format!("{}={}", a.key, vals.join(","))
            })
            .collect::<Vec<_>>()
            .join("\u{2}");
        let mut parts: Vec<&[u8]> = vec![
            env!("CARGO_PKG_VERSION").as_bytes(),
            input.scenario_text.as_bytes(),
            baseline_policy.as_bytes(),
            baseline_source.text.as_bytes(),
            policies_text.as_bytes(),
            axes_text.as_bytes(),
            seeds.as_bytes(),
        ];
        if !draws.is_empty() {
            parts.push(draws.as_bytes());
        }
        let fingerprint = fingerprint(&parts);

        Ok(Plan {
            scenario_name: scenario.name.clone(),
            axes: input.axes.clone(),
            keys,
            points,
            policies: sources.into_iter().map(|s| s.label).collect(),
            baseline_policy,
            seeds: input.seeds,
            arrivals: input.arrivals,
            fingerprint,
            baseline,
            instances,
        })
    }

    /// The scenario and policy of grid point `point` under policy `policy`
    /// (indices into [`Plan::points`] and [`Plan::policies`]), validated.
    pub fn instance(&self, point: usize, policy: usize) -> Option<(&Scenario, &PolicyConfig)> {
        let i = self.instances.get(policy * self.points.len() + point)?;
        Some((&i.scenario, &i.policy))
    }

    /// Runs in the whole sweep.
    pub fn total_runs(&self) -> usize {
        (1 + self.points.len() * self.policies.len()) * self.seeds as usize
    }

    /// The runs of `shard` (all runs without one), in order.
    pub fn runs(&self, shard: Option<Shard>) -> Vec<usize> {
        (0..self.total_runs())
            .filter(|&r| shard.is_none_or(|s| s.contains(r)))
            .collect()
    }

    /// What run `run` is.
    pub fn spec(&self, run: usize) -> RunSpec {
        let seeds = self.seeds as usize;
        let replicate = (run % seeds) as u32;
        let group = run / seeds;
        if group == 0 {
            return RunSpec {
                run,
                point: None,
                policy: 0,
                replicate,
            };
        }
        let i = group - 1;
        RunSpec {
            run,
            point: Some(i % self.points.len().max(1)),
            policy: i / self.points.len().max(1),
            replicate,
        }
    }

    /// Simulates run `run` and measures it.
    pub fn run_one(&self, run: usize) -> Row {
        let spec = self.spec(run);
        let (instance, label, values) = match spec.point {
            None => (
                &self.baseline,
                self.baseline_policy.clone(),
                vec![None; self.axes.len()],
            ),
            Some(q) => (
                &self.instances[spec.policy * self.points.len() + q],
                self.policies[spec.policy].clone(),
                self.points[q]
                    .iter()
                    .zip(&self.axes)
                    .map(|(&i, a)| Some(a.values[i]))
                    .collect(),
            ),
        };
        // Replicate k is run k of the point: the pool's seed `seed + k`,
        // and its own draw of random arrivals unless they are fixed.
        let scenario = instance
            .scenario
            .for_run(u64::from(spec.replicate), self.arrivals);
        let seed = scenario.seed;
        let result = engine::simulate(
            &scenario,
            &instance.policy,
            &mut NullSink,
            &SimOptions::default(),
        );
        let summary = metrics::summarize(&result.trace);
        Row {
            run,
            point: spec.point,
            policy: label,
            values,
            replicate: spec.replicate,
            seed,
            metrics: table::measure(&summary, &result.outcome),
        }
    }

    /// An empty table of this sweep (keys, run count, fingerprint).
    pub fn table(&self, rows: Vec<Row>) -> SweepTable {
        SweepTable {
            keys: self.axes.iter().map(|a| a.key.clone()).collect(),
            runs: self.total_runs(),
            fingerprint: self.fingerprint.clone(),
            rows,
        }
    }
}

/// The rows a sweep finished.
#[derive(Clone, Debug)]
pub struct Executed {
    /// In run order.
    pub rows: Vec<Row>,
    /// Runs asked for.
    pub wanted: usize,
    /// `cancel` was set before every run finished.
    pub interrupted: bool,
}

/// Runs `runs` of `plan` on `jobs` threads (all cores when `None`),
/// calling `on_run` after each. Once `cancel` is set, runs not yet started
/// are skipped; those already running finish and are kept.
pub fn execute(
    plan: &Plan,
    runs: &[usize],
    jobs: Option<usize>,
    cancel: &AtomicBool,
    on_run: &(dyn Fn() + Sync),
) -> Result<Executed, SweepError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.unwrap_or(0))
        .build()
        .map_err(|e| SweepError::new(format!("cannot start the worker threads: {e}")))?;
    let mut rows: Vec<Row> = pool.install(|| {
        runs.par_iter()
            .filter_map(|&run| {
                if cancel.load(Ordering::Relaxed) {
                    return None;
                }
                let row = plan.run_one(run);
                on_run();
                Some(row)
            })
            .collect()
    });
    rows.sort_by_key(|r| r.run);
    Ok(Executed {
        interrupted: rows.len() < runs.len(),
        wanted: runs.len(),
        rows,
    })
}

/// The scenario in `scenario_text` with each `KEY=VALUE` of `sets` applied
/// (one value each, the keys of `sweep --set`), under `policy` (`None`: the
/// scenario's own): `run --set` tries a change without editing the file,
/// through the same checks as a sweep's grid point.
pub fn with_settings(
    scenario_text: &str,
    scenario_file: &str,
    policy: Option<&str>,
    sets: &[String],
) -> Result<(Scenario, PolicyConfig), SweepError> {
    let mut axes = Vec::new();
    for set in sets {
        let axis = grid::parse_set(set).map_err(SweepError::new)?;
        if axis.values.len() != 1 {
            return Err(SweepError::new(format!(
                "--set {set}: give one value here ({} given); `poolsim sweep` tries several",
                axis.values.len()
            )));
        }
        axes.push(axis);
    }
    // The plan's messages speak of grid points; here there is one setting.
    let plan = Plan::build(&SweepInput {
        scenario_text: scenario_text.to_string(),
        scenario_file: scenario_file.to_string(),
        axes,
        policies: policy.map(str::to_string).into_iter().collect(),
        seeds: 1,
        arrivals: ArrivalDraws::Fixed,
    })
    .map_err(|e| {
        let text = e.to_string();
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with("refused before any run:"))
            .collect();
        let text = lines.join("\n");
        SweepError::new(match text.strip_prefix("at ") {
            Some(rest) => format!("--set {rest}"),
            None => text,
        })
    })?;
    let (scenario, policy) = plan
        .instance(0, 0)
        .ok_or_else(|| SweepError::new("no setting to apply"))?;
    Ok((scenario.clone(), policy.clone()))
}
