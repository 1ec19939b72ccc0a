//! `poolsim advise`: from a workload to a setting a .NET engineer can
//! paste, with its odds.
//!
//! The question is "what should I set, and will it work?". The scenario
//! (written, or drafted from a trace by the `real` crate) is replayed as it
//! is, then under each remedy an engineer can apply, each over the same
//! runs: [`AdviseOptions::runs`] seeds, and for Poisson arrivals a fresh
//! draw of the arrivals each run (a service's traffic differs from run to
//! run), so every answer is a share of runs, not one run's luck. A run is
//! judged against the goal ([`Criterion`]: by default the run verdict's
//! question, "is the pool the limit?", or the user's `--goal`).
//!
//! The remedies, per runtime:
//! - **MinThreads**: the smallest minimum meeting the goal in at least
//!   95 % of the runs ([`crate::remedy::Search`], the search of the run
//!   verdict's fix and of `sweep --best 'minimize pool.min_threads …'`),
//!   where the pool honours `SetMinThreads`. What to paste comes from
//!   [`min_threads_paste`]: the runtimeconfig knob
//!   `System.Threading.ThreadPool.MinThreads`, the `SetMinThreads` call,
//!   or the `ThreadPool_ForceMinWorkerThreads` variable (hexadecimal).
//! - **threads for blocked waits at once** (.NET 6+, items blocking in
//!   `Task.Wait`): the smallest
//!   `System.Threading.ThreadPool.Blocking.ThreadsToAddWithoutDelay_ProcCountFactor`
//!   meeting the goal, searched as MinThreads is. Cooperative blocking
//!   raises the goal at once up to min + factor × cores, then one thread
//!   per delay; a larger factor adds the threads a burst of blocked waits
//!   needs before their completions queue behind new work, and only while
//!   threads are blocked (`PortableThreadPool.Blocking.cs`;
//!   docs/research/portable-pool-and-timers.md A4). Only the runtimeconfig
//!   knob sets it (no variable, no call).
//! - **a throttle around the blocking work** (a latency or makespan goal
//!   only): the smallest `SemaphoreSlim(n)` limit, awaited around the body
//!   of each group that blocks in `Task.Wait` or `Thread.Sleep`, meeting
//!   the goal (`throttle_remedy`). Items past the limit wait without a
//!   thread, so the blocked threads stay below what the pool has and the
//!   timers' callbacks that end the waits find a thread. A throttle can
//!   only hold work back: without a goal on the items' times it would
//!   "meet" a starvation goal with a limit of 1, so it is searched only
//!   against one.
//! - **a pair's scheduler for the blocking work** (the same goals): the
//!   smallest `ConcurrentExclusiveSchedulerPair(TaskScheduler.Default, n)`
//!   whose concurrent scheduler starts the blocking groups' items,
//!   meeting the goal (searched as the semaphore is). The pair runs at
//!   most `n` of them at once on pool threads and keeps the rest in its
//!   own queue, without a thread (a fan-out's calls are left out: the
//!   calling item queues them itself).
//! - **await instead of blocking**: every `Task.Delay(d).Wait()` and
//!   `Thread.Sleep(d)` step awaited instead (the code change that removes
//!   the cause).
//! - **.NET 6+**: for a pool before .NET 6 whose items block in
//!   `Task.Wait`, the portable pool's cooperative blocking (`net8`).
//!
//! The recommendation is the MinThreads value when it meets the goal (a
//! setting, no code change), else the first other remedy that does; with
//! none, there is none ([`Advice::recommended`] is `None`), never a guess.

use std::fmt::Write as _;

use rayon::prelude::*;
use serde::Serialize;

use crate::engine::{self, Outcome, SimOptions};
use crate::metrics::{self, Summary};
use crate::output::human_ms;
use crate::policy::config::BlockingConfig;
use crate::policy::{ModelKind, PolicyConfig};
use crate::policy_file::resolve_policy;
use crate::remedy::{Criterion, Search, Span, Trial};
use crate::scenario::{ArrivalDraws, Scenario, Step, Throttle, ThrottleKind};
use crate::trace::NullSink;

/// Runs per remedy by default.
pub const DEFAULT_RUNS: usize = 20;
/// The largest minimum the search tries.
pub const MAX_MIN_THREADS: u32 = 1024;

/// How to advise.
#[derive(Clone, Debug)]
pub struct AdviseOptions {
    /// Runs per remedy (seeds `seed`, `seed + 1`, …).
    pub runs: usize,
    /// What a run must show.
    pub criterion: Criterion,
    /// Draw random arrivals anew for each run, or replay the scenario's
    /// own draw in every run.
    pub arrivals: ArrivalDraws,
}

impl Default for AdviseOptions {
    fn default() -> Self {
        AdviseOptions {
            runs: DEFAULT_RUNS,
            criterion: Criterion::NoStarvation,
            arrivals: ArrivalDraws::PerRun,
        }
    }
}

/// What kind of change a remedy is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RemedyKind {
    MinThreads,
    /// .NET 6+: `ThreadsToAddWithoutDelay_ProcCountFactor`.
    BlockingWithoutDelay,
    /// `SemaphoreSlim(n)` around the blocking groups' bodies.
    Throttle,
    /// The blocking groups' items started on a
    /// `ConcurrentExclusiveSchedulerPair`'s concurrent scheduler of `n`.
    PairThrottle,
    Await,
    Runtime,
}

/// One remedy, replayed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Remedy {
    pub kind: RemedyKind,
    /// The change in words (`MinThreads 12`).
    pub what: String,
    /// Its runs (for MinThreads, those of the smallest value that met the
    /// goal, or of the largest tried when none did).
    pub trial: Trial,
    /// Whether it meets the goal in the required share of runs.
    pub meets: bool,
    /// MinThreads: the value below, tried and missing the goal.
    pub below: Option<Trial>,
    /// What to paste or change, a line each.
    pub paste: Vec<String>,
}

/// The advice on one workload.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Advice {
    pub scenario: String,
    pub policy: String,
    pub cores: u32,
    /// The goal in words.
    pub goal: String,
    /// The share of runs a remedy must meet the goal in.
    pub share: f64,
    /// Whether random arrivals were drawn anew each run.
    pub arrivals_vary: bool,
    /// What of them is drawn ([`crate::scenario::Scenario::drawn_arrivals`];
    /// not in the JSON, whose `arrivals_vary` says it).
    #[serde(skip)]
    pub drawn_arrivals: &'static str,
    /// The workload as it is.
    pub as_is: Trial,
    pub as_is_meets: bool,
    pub remedies: Vec<Remedy>,
    /// Index into `remedies` of the recommendation.
    pub recommended: Option<usize>,
}

/// Runs `runs` of `scenario` under `policy`, in parallel, in order.
fn replay(
    scenario: &Scenario,
    policy: &PolicyConfig,
    opts: &AdviseOptions,
    runs: std::ops::Range<usize>,
) -> Vec<(Summary, Outcome)> {
    runs.into_par_iter()
        .map(|r| {
            let s = scenario.for_run(r as u64, opts.arrivals);
            let run = engine::simulate(&s, policy, &mut NullSink, &SimOptions::default());
            (metrics::summarize(&run.trace), run.outcome)
        })
        .collect()
}

/// Runs replayed together before a remedy's misses are counted.
const BATCH: usize = 4;

/// `opts.runs` runs of `scenario` under `policy`, judged; with `early`,
/// replayed [`BATCH`] at a time and stopped as soon as more runs missed
/// the goal than a value that meets it may miss (its [`Trial::runs`] then
/// says how many were replayed). The batches do not depend on the
/// machine, so neither does the result.
fn replay_judged(
    value: u32,
    scenario: &Scenario,
    policy: &PolicyConfig,
    opts: &AdviseOptions,
    share: f64,
    early: bool,
) -> Trial {
    if !early {
        return Trial::judge(
            value,
            &replay(scenario, policy, opts, 0..opts.runs),
            &opts.criterion,
        );
    }
    let allowed = ((1.0 - share) * opts.runs as f64 + 1e-9).floor() as usize;
    let mut runs = Vec::with_capacity(opts.runs);
    let mut misses = 0;
    let mut from = 0;
    while from < opts.runs {
        let to = (from + BATCH).min(opts.runs);
        let batch = replay(scenario, policy, opts, from..to);
        misses += batch
            .iter()
            .filter(|(s, o)| !opts.criterion.met_by(s, o))
            .count();
        runs.extend(batch);
        if misses > allowed {
            break;
        }
        from = to;
    }
    Trial::judge(value, &runs, &opts.criterion)
}

/// The share a remedy must reach with `runs` runs: every run when there
/// are few, 95 % from [`crate::sweep::smallest::MANY_RUNS`] on.
fn share_for(runs: usize) -> f64 {
    crate::sweep::smallest::share_for(runs)
}

/// Which runtime family a policy stands for, for what to paste.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    /// .NET 5+ (`DOTNET_` variables, runtimeconfig).
    Net5Plus,
    /// .NET Core 3.x (`COMPlus_` variables, runtimeconfig).
    Core3,
    /// .NET Framework (`COMPlus_` variables, no runtimeconfig).
    Framework,
    /// Mono (the call only).
    Mono,
}

fn family(policy: &PolicyConfig) -> Family {
    let name = policy.name.as_str();
    match policy.model {
        ModelKind::Portable => Family::Net5Plus,
        _ if name.starts_with("mono") => Family::Mono,
        _ if name.starts_with("net20") => Family::Framework,
        _ if name.starts_with("coreclr3") => Family::Core3,
        _ => Family::Net5Plus,
    }
}

/// What to paste to set the pool's minimum to `n` worker threads under
/// `policy`'s runtime: the runtimeconfig knob and the variable (its value
/// hexadecimal, as the runtime reads it) where the runtime has them, and
/// the call. Sources: the runtime configuration docs ("Runtime
/// configuration options for threading": `System.Threading.ThreadPool.MinThreads`,
/// `DOTNET_ThreadPool_ForceMinWorkerThreads`), and `COMPlus_` before .NET 5.
pub fn min_threads_paste(policy: &PolicyConfig, n: u32) -> Vec<String> {
    let fam = family(policy);
    let mut out = Vec::new();
    if matches!(fam, Family::Net5Plus | Family::Core3) {
        out.push(format!(
            "runtimeconfig.json   \"configProperties\": {{ \"System.Threading.ThreadPool.MinThreads\": {n} }}"
        ));
        out.push(format!(
            "project file         <ItemGroup><RuntimeHostConfigurationOption Include=\"System.Threading.ThreadPool.MinThreads\" Value=\"{n}\" /></ItemGroup>"
        ));
    }
    out.push(format!(
        "code, at start-up    ThreadPool.GetMinThreads(out _, out int io); ThreadPool.SetMinThreads({n}, io);"
    ));
    let prefix = match fam {
        Family::Net5Plus => Some("DOTNET_"),
        Family::Core3 | Family::Framework => Some("COMPlus_"),
        Family::Mono => None,
    };
    if let Some(p) = prefix {
        out.push(format!(
            "environment          {p}ThreadPool_ForceMinWorkerThreads=0x{n:X}   (hexadecimal: {n})"
        ));
    }
    out
}

/// The scenario with every blocking wait and sleep awaited instead, and
/// the changes in words; `None` when nothing blocks.
fn awaited(scenario: &Scenario) -> Option<(Scenario, Vec<String>)> {
    let mut s = scenario.clone();
    let mut changes = Vec::new();
    for g in &mut s.groups {
        for step in &mut g.body {
            let (call, d) = match *step {
                Step::Wait(d) => ("Task.Delay({}).Wait() or .Result", d),
                Step::Sleep(d) => ("Thread.Sleep({})", d),
                _ => continue,
            };
            let ms = crate::verdict::fmt_num(d.as_ms_f64());
            let line = format!(
                "group `{}`: {} -> await Task.Delay({ms}) (await the call instead of blocking on it)",
                g.name,
                call.replace("{}", &ms)
            );
            if !changes.contains(&line) {
                changes.push(line);
            }
            *step = Step::Await(d);
        }
    }
    (!changes.is_empty()).then_some((s, changes))
}

/// The scenario with every blocking wait and sleep awaited instead
/// (the "await instead of blocking" remedy); `None` when nothing blocks.
pub fn awaited_scenario(scenario: &Scenario) -> Option<Scenario> {
    awaited(scenario).map(|(s, _)| s)
}

/// Whether any item blocks in `Task.Wait`.
fn has_waits(scenario: &Scenario) -> bool {
    scenario
        .groups
        .iter()
        .any(|g| g.body.iter().any(|s| matches!(s, Step::Wait(_))))
}

/// The scenario with the pool's minimum set to `n` (the MinThreads remedy).
fn with_min_threads(scenario: &Scenario, n: u32) -> Scenario {
    let mut s = scenario.clone();
    s.pool.min_threads = Some(n);
    s
}

/// The groups a throttle can go around: those whose items block (a
/// `Task.Wait` or `Thread.Sleep` step), of a shape that takes a throttle
/// and with none of their own or their policy's.
fn throttled_groups(scenario: &Scenario, policy: &PolicyConfig) -> Vec<usize> {
    (0..scenario.groups.len())
        .filter(|&g| {
            let group = &scenario.groups[g];
            group.submit.takes_throttle()
                && crate::pool::group_throttle(scenario, g, Some(policy)).is_none()
                && group
                    .body
                    .iter()
                    .any(|s| matches!(s, Step::Wait(_) | Step::Sleep(_)))
        })
        .collect()
}

/// The scenario with a throttle of `kind` and limit `n` on each of
/// `groups` (the throttle remedies: a `SemaphoreSlim(n)` around each body,
/// or the items started on a pair's concurrent scheduler of `n`).
fn with_throttle(scenario: &Scenario, groups: &[usize], kind: ThrottleKind, n: u32) -> Scenario {
    let mut s = scenario.clone();
    for &g in groups {
        s.groups[g].throttle = Some(Throttle { kind, limit: n });
    }
    s
}

/// The groups a pair's scheduler can take: [`throttled_groups`] but a
/// fan-out's calls, which the calling item queues itself.
fn pair_groups(scenario: &Scenario, policy: &PolicyConfig) -> Vec<usize> {
    throttled_groups(scenario, policy)
        .into_iter()
        .filter(|&g| {
            !matches!(
                scenario.groups[g].from,
                crate::scenario::Origin::FanOut { .. }
            )
        })
        .collect()
}

/// Whether a goal bounds the items' times (a latency, start delay or the
/// makespan), the only goals a throttle is searched against.
fn bounds_times(criterion: &Criterion) -> bool {
    match criterion {
        Criterion::NoStarvation => false,
        Criterion::Constraints(cs) => cs.iter().any(|c| {
            let name = crate::sweep::table::METRICS[c.metric].name;
            name.starts_with("latency") || name.starts_with("start_delay") || name == "makespan_ms"
        }),
    }
}

/// The policy with the no-delay factor set to `k` (the blocking remedy).
fn with_without_delay(policy: &PolicyConfig, k: u32) -> PolicyConfig {
    let mut p = policy.clone();
    if let Some(b) = p.blocking.as_mut() {
        b.threads_to_add_without_delay_per_core = k;
    }
    p
}

impl Remedy {
    /// The workload and pool with this remedy applied, as its runs were
    /// replayed; `None` when the remedy cannot be built (net8's policy
    /// missing from the build).
    pub fn apply(
        &self,
        scenario: &Scenario,
        policy: &PolicyConfig,
    ) -> Option<(Scenario, PolicyConfig)> {
        let v = self.trial.value;
        Some(match self.kind {
            RemedyKind::MinThreads => (with_min_threads(scenario, v), policy.clone()),
            RemedyKind::BlockingWithoutDelay => (scenario.clone(), with_without_delay(policy, v)),
            RemedyKind::Throttle => (
                with_throttle(
                    scenario,
                    &throttled_groups(scenario, policy),
                    ThrottleKind::Semaphore,
                    v,
                ),
                policy.clone(),
            ),
            RemedyKind::PairThrottle => (
                with_throttle(
                    scenario,
                    &pair_groups(scenario, policy),
                    ThrottleKind::ConcurrentExclusive,
                    v,
                ),
                policy.clone(),
            ),
            RemedyKind::Await => (awaited_scenario(scenario)?, policy.clone()),
            RemedyKind::Runtime => (scenario.clone(), resolve_policy("net8").ok()?),
        })
    }
}

/// Advises on `scenario` under `policy`.
pub fn advise(scenario: &Scenario, policy: &PolicyConfig, opts: &AdviseOptions) -> Advice {
    let runs = opts.runs.max(1);
    let opts = AdviseOptions {
        runs,
        ..opts.clone()
    };
    let share = share_for(runs);
    let meets = |t: &Trial| t.runs > 0 && t.share() + 1e-12 >= share;
    // The workload as it is gets every run (the "before" figures); a
    // remedy stops once it cannot meet the goal.
    let judge =
        |value: u32, s: &Scenario, p: &PolicyConfig| replay_judged(value, s, p, &opts, share, true);
    let judge_all = |value: u32, s: &Scenario, p: &PolicyConfig| {
        replay_judged(value, s, p, &opts, share, false)
    };
    let (min, max) = crate::policy::thread_limits(policy, scenario);
    let as_is = judge_all(min, scenario, policy);
    let as_is_meets = meets(&as_is);
    let mut remedies = Vec::new();
    if !as_is_meets {
        if policy.threads.honours_set_min_threads && min < max {
            let items = scenario.groups.iter().map(|g| g.count).sum::<u64>();
            let top = u32::try_from(items)
                .unwrap_or(u32::MAX)
                .min(MAX_MIN_THREADS)
                .min(max)
                .max(min + 1);
            let found = Search::new(min + 1, top, share)
                .smallest(|n| judge(n, &with_min_threads(scenario, n), policy));
            let (trial, ok) = match found.smallest {
                Some(t) => (t, true),
                None => match found.below.clone() {
                    Some(t) => (t, false),
                    None => (as_is.clone(), false),
                },
            };
            let paste = if ok {
                min_threads_paste(policy, trial.value)
            } else {
                Vec::new()
            };
            remedies.push(Remedy {
                kind: RemedyKind::MinThreads,
                what: if ok {
                    format!("MinThreads {}", trial.value)
                } else {
                    format!("MinThreads up to {}", trial.value)
                },
                below: if ok { found.below } else { None },
                trial,
                meets: ok,
                paste,
            });
        }
        if let Some(cfg) = policy.blocking.as_ref().filter(|c| c.enabled)
            && policy.model == ModelKind::Portable
            && has_waits(scenario)
        {
            remedies.push(blocking_remedy(scenario, policy, cfg, share, &judge));
        }
        let groups = throttled_groups(scenario, policy);
        if !groups.is_empty() && bounds_times(&opts.criterion) {
            remedies.push(throttle_remedy(
                scenario,
                policy,
                &groups,
                ThrottleKind::Semaphore,
                share,
                &judge,
            ));
            let pair = pair_groups(scenario, policy);
            if !pair.is_empty() {
                remedies.push(throttle_remedy(
                    scenario,
                    policy,
                    &pair,
                    ThrottleKind::ConcurrentExclusive,
                    share,
                    &judge,
                ));
            }
        }
        if let Some((s, changes)) = awaited(scenario) {
            let trial = judge(min, &s, policy);
            remedies.push(Remedy {
                kind: RemedyKind::Await,
                what: "await instead of blocking".into(),
                meets: meets(&trial),
                trial,
                below: None,
                paste: changes,
            });
        }
        if policy.model != ModelKind::Portable
            && has_waits(scenario)
            && let Ok(net8) = resolve_policy("net8")
        {
            let trial = judge(min, scenario, &net8);
            remedies.push(Remedy {
                kind: RemedyKind::Runtime,
                what: ".NET 8".into(),
                meets: meets(&trial),
                trial,
                below: None,
                paste: vec![
                    "run on .NET 6 or later: a thread blocked in Task.Wait counts as cooperative blocking, and the pool adds threads for it at once".into(),
                ],
            });
        }
    }
    let recommended = remedies.iter().position(|r| r.meets);
    Advice {
        scenario: scenario.name.clone(),
        policy: policy.name.clone(),
        cores: scenario.machine.cores,
        goal: opts.criterion.text(),
        share,
        arrivals_vary: opts.arrivals == ArrivalDraws::PerRun && scenario.has_random_arrivals(),
        drawn_arrivals: scenario.drawn_arrivals(),
        as_is,
        as_is_meets,
        remedies,
        recommended,
    }
}

/// The largest `ThreadsToAddWithoutDelay_ProcCountFactor` the search tries.
pub const MAX_WITHOUT_DELAY_FACTOR: u32 = 64;

/// The runtimeconfig knob of the no-delay factor.
pub const WITHOUT_DELAY_KNOB: &str =
    "System.Threading.ThreadPool.Blocking.ThreadsToAddWithoutDelay_ProcCountFactor";

/// The smallest no-delay factor above the policy's that meets the goal
/// (see the module head), searched as MinThreads is.
fn blocking_remedy(
    scenario: &Scenario,
    policy: &PolicyConfig,
    cfg: &BlockingConfig,
    share: f64,
    judge: &dyn Fn(u32, &Scenario, &PolicyConfig) -> Trial,
) -> Remedy {
    let low = cfg.threads_to_add_without_delay_per_core + 1;
    let found = Search::new(low, MAX_WITHOUT_DELAY_FACTOR.max(low), share)
        .smallest(|k| judge(k, scenario, &with_without_delay(policy, k)));
    let ok = found.smallest.is_some();
    let trial = found
        .smallest
        .or_else(|| found.below.clone())
        .unwrap_or_else(|| judge(low, scenario, policy));
    let k = trial.value;
    let paste = if ok {
        vec![
            format!(
                "runtimeconfig.json   \"configProperties\": {{ \"{WITHOUT_DELAY_KNOB}\": {k} }}"
            ),
            format!(
                "project file         <ItemGroup><RuntimeHostConfigurationOption Include=\"{WITHOUT_DELAY_KNOB}\" Value=\"{k}\" /></ItemGroup>"
            ),
        ]
    } else {
        Vec::new()
    };
    Remedy {
        kind: RemedyKind::BlockingWithoutDelay,
        what: format!(
            "ThreadsToAddWithoutDelay {}{k} x cores",
            if ok { "" } else { "up to " }
        ),
        below: if ok { found.below } else { None },
        trial,
        meets: ok,
        paste,
    }
}

/// The largest throttle limit the search tries.
pub const MAX_THROTTLE: u32 = 1024;

/// The smallest limit of a throttle of `kind` on `groups` (a
/// `SemaphoreSlim` around each body, or a pair's concurrent scheduler
/// starting their items) that meets the goal (see the module head), searched as MinThreads is from a limit of 1 up
/// to the blocking groups' items. A larger limit lets more items block at
/// once, which is what the throttle is there to stop, so the search's
/// "more does not hurt" holds only up to the limit the pool can carry:
/// the gallop from 1 finds the first limit that meets the goal, and one
/// less is tried (`below`).
fn throttle_remedy(
    scenario: &Scenario,
    policy: &PolicyConfig,
    groups: &[usize],
    kind: ThrottleKind,
    share: f64,
    judge: &dyn Fn(u32, &Scenario, &PolicyConfig) -> Trial,
) -> Remedy {
    let items: u64 = groups.iter().map(|&g| scenario.groups[g].count).sum();
    let top = u32::try_from(items)
        .unwrap_or(u32::MAX)
        .clamp(1, MAX_THROTTLE);
    let found = Search::new(1, top, share)
        .smallest(|n| judge(n, &with_throttle(scenario, groups, kind, n), policy));
    let ok = found.smallest.is_some();
    let trial = found
        .smallest
        .or_else(|| found.below.clone())
        .unwrap_or_else(|| judge(top, &with_throttle(scenario, groups, kind, top), policy));
    let n = trial.value;
    let names = groups
        .iter()
        .map(|&g| format!("`{}`", scenario.groups[g].name))
        .collect::<Vec<_>>()
        .join(", ");
    let limit = format!("{}{n}", if ok { "" } else { "up to " });
    // The code to change and the words, per throttle.
    let (remedy, declare, per_group, what) = match kind {
        ThrottleKind::Semaphore => (
            RemedyKind::Throttle,
            format!("static readonly SemaphoreSlim throttle = new SemaphoreSlim({n});"),
            "await throttle.WaitAsync(); try { the item's work } finally { throttle.Release(); }",
            format!("SemaphoreSlim({limit}) around {names}"),
        ),
        ThrottleKind::ConcurrentExclusive => (
            RemedyKind::PairThrottle,
            format!(
                "static readonly TaskScheduler limited = new ConcurrentExclusiveSchedulerPair(TaskScheduler.Default, {n}).ConcurrentScheduler;"
            ),
            "Task.Factory.StartNew(work, CancellationToken.None, TaskCreationOptions.None, limited) where it starts an item",
            format!("ConcurrentExclusiveSchedulerPair({limit}) for {names}"),
        ),
    };
    let paste = if ok {
        let mut lines = vec![format!(
            "{declare}{}",
            if groups.len() > 1 {
                "   (one for each group)"
            } else {
                ""
            }
        )];
        lines.extend(
            groups
                .iter()
                .map(|&g| format!("group `{}`: {per_group}", scenario.groups[g].name)),
        );
        lines
    } else {
        Vec::new()
    };
    Remedy {
        kind: remedy,
        what,
        below: if ok { found.below } else { None },
        trial,
        meets: ok,
        paste,
    }
}

/// "median (lo to hi)" of the completed runs' values, as durations.
fn spread_ms(values: &[Option<f64>]) -> String {
    match Span::of(values) {
        None => "- (no run completed)".into(),
        Some(s) if s.lo == s.hi => human_ms(s.median),
        Some(s) => format!(
            "{} ({} to {})",
            human_ms(s.median),
            human_ms(s.lo),
            human_ms(s.hi)
        ),
    }
}

fn peak(values: &[Option<f64>]) -> String {
    match Span::of(values) {
        Some(s) if s.lo == s.hi => format!("{:.0}", s.lo),
        Some(s) => format!("{:.0} to {:.0}", s.lo, s.hi),
        None => "-".into(),
    }
}

fn odds(t: &Trial) -> String {
    format!(
        "{} of {} run{}",
        t.met,
        t.runs,
        if t.runs == 1 { "" } else { "s" }
    )
}

impl Advice {
    /// The advice as `poolsim advise` prints it.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "workload      {}", self.scenario);
        let _ = writeln!(
            out,
            "runtime       {}   {} cores   {} runs each{}",
            self.policy,
            self.cores,
            self.as_is.runs,
            if self.arrivals_vary {
                format!(" (seeds and {} drawn anew each run)", self.drawn_arrivals)
            } else {
                " (seeds vary; the arrivals are the scenario's)".to_string()
            }
        );
        let _ = writeln!(
            out,
            "goal          {}   in at least {:.0} % of runs",
            self.goal,
            self.share * 100.0
        );
        let _ = writeln!(
            out,
            "              (figures: the median over the runs, then the lowest to the highest)"
        );
        let _ = writeln!(
            out,
            "as it is      meets it in {}   latency p99 {}   makespan {}   threads {}",
            odds(&self.as_is),
            spread_ms(&self.as_is.latency_p99_ms),
            spread_ms(&self.as_is.makespan_ms),
            peak(&self.as_is.threads_peak)
        );
        if self.as_is_meets {
            let _ = writeln!(
                out,
                "\nno change needed: the workload meets the goal as it is."
            );
            return out;
        }
        let _ = writeln!(out, "\nremedies (each replayed {} times):", self.as_is.runs);
        let width = self
            .remedies
            .iter()
            .map(|r| r.what.chars().count())
            .max()
            .unwrap_or(0);
        for r in &self.remedies {
            let mut line = format!(
                "  {:<width$}  {}  meets it in {}",
                r.what,
                if r.meets { "yes" } else { "no " },
                odds(&r.trial)
            );
            if let Some(b) = &r.below {
                let name = match r.kind {
                    RemedyKind::BlockingWithoutDelay => "factor",
                    RemedyKind::Throttle | RemedyKind::PairThrottle => "limit",
                    _ => "MinThreads",
                };
                line.push_str(&format!(" ({name} {}: {})", b.value, odds(b)));
            }
            if r.trial.runs < self.as_is.runs {
                line.push_str(&format!(
                    ", stopped after {} of {} runs: it cannot reach {:.0} %",
                    r.trial.runs,
                    self.as_is.runs,
                    self.share * 100.0
                ));
            }
            let _ = writeln!(out, "{line}");
            let _ = writeln!(
                out,
                "  {:<width$}       latency p99 {}   makespan {}   threads {}",
                "",
                spread_ms(&r.trial.latency_p99_ms),
                spread_ms(&r.trial.makespan_ms),
                peak(&r.trial.threads_peak)
            );
        }
        let Some(i) = self.recommended else {
            let _ = writeln!(
                out,
                "\nno recommendation: no remedy meets the goal in {:.0} % of runs.",
                self.share * 100.0
            );
            return out;
        };
        let r = &self.remedies[i];
        let _ = writeln!(out, "\nrecommended: {}", r.what);
        let _ = writeln!(
            out,
            "  latency p99 {} -> {}; meets the goal in {} (as it is: {})",
            spread_ms(&self.as_is.latency_p99_ms),
            spread_ms(&r.trial.latency_p99_ms),
            odds(&r.trial),
            odds(&self.as_is)
        );
        let _ = writeln!(
            out,
            "  cost: threads {} (as it is: {}), each with its own stack",
            peak(&r.trial.threads_peak),
            peak(&self.as_is.threads_peak)
        );
        if matches!(
            r.kind,
            RemedyKind::MinThreads | RemedyKind::BlockingWithoutDelay
        ) {
            let _ = writeln!(out, "  paste one of:");
        } else {
            let _ = writeln!(out, "  change:");
        }
        for p in &r.paste {
            let _ = writeln!(out, "    {p}");
        }
        out
    }
}

/// The goal `text` (`latency_p99_ms < 200 and threads_peak <= 64`) as a
/// criterion; `None` or "no starvation" is the verdict's question.
pub fn parse_goal(text: Option<&str>) -> Result<Criterion, String> {
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(Criterion::NoStarvation);
    };
    if text.eq_ignore_ascii_case("no starvation") {
        return Ok(Criterion::NoStarvation);
    }
    // The conditions of `--best`, in one place.
    let (_, _, conditions) =
        crate::sweep::best::split_objective(&format!("minimize makespan_ms subject to {text}"))
            .map_err(|e| e.replace("--best", "--goal"))?;
    let conditions = conditions.map_err(|e| {
        e.replace(
            &format!("--best 'minimize makespan_ms subject to {text}'"),
            &format!("--goal '{text}'"),
        )
    })?;
    Ok(Criterion::Constraints(conditions))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load::parse_scenario;

    const SERVICE: &str = "name = \"service\"\n[machine]\ncores = 4\n[pool]\npolicy = \"net8\"\n\
        [[group]]\nname = \"requests\"\ncount = 1500\narrival = { poisson_per_s = 200 }\n\
        body = [ { cpu_ms = 1 }, { wait_ms = 50 }, { cpu_ms = 1 } ]\n";

    fn advice(text: &str, goal: Option<&str>, runs: usize) -> Advice {
        let scenario = parse_scenario(text, "service.toml").unwrap();
        let policy = resolve_policy(&scenario.pool.policy).unwrap();
        let opts = AdviseOptions {
            runs,
            criterion: parse_goal(goal).unwrap(),
            arrivals: ArrivalDraws::PerRun,
        };
        advise(&scenario, &policy, &opts)
    }

    #[test]
    fn the_recommended_minimum_meets_the_goal_and_one_less_does_not() {
        let a = advice(SERVICE, Some("latency_p99_ms < 200"), 20);
        assert!(!a.as_is_meets, "{}", a.text());
        let r = &a.remedies[a.recommended.expect("a recommendation")];
        assert_eq!(r.kind, RemedyKind::MinThreads);
        assert!(r.trial.share() >= 0.95, "{}", a.text());
        let below = r.below.as_ref().expect("the value below was tried");
        assert_eq!(below.value + 1, r.trial.value);
        assert!(below.share() < 0.95, "{}", a.text());
        // Every run of the recommendation has its latency under the goal
        // where it met it.
        let under = r
            .trial
            .latency_p99_ms
            .iter()
            .filter(|l| l.is_some_and(|l| l < 200.0))
            .count();
        assert_eq!(under, r.trial.met);
        let text = a.text();
        let hex = format!("0x{:X}", r.trial.value);
        assert!(text.contains(&hex), "{text}");
        assert!(
            text.contains("System.Threading.ThreadPool.MinThreads"),
            "{text}"
        );
    }

    #[test]
    fn blocked_waits_get_the_no_delay_factor_as_a_remedy_on_net6_and_later() {
        let a = advice(SERVICE, Some("latency_p99_ms < 200"), 8);
        let r = a
            .remedies
            .iter()
            .find(|r| r.kind == RemedyKind::BlockingWithoutDelay)
            .expect("a no-delay factor remedy");
        assert!(r.trial.value >= 2, "{}", a.text());
        if r.meets {
            assert!(r.trial.share() >= a.share, "{}", a.text());
            let below = r.below.as_ref().expect("the factor below was tried");
            assert!(below.share() < a.share, "{}", a.text());
            assert!(r.paste[0].contains(WITHOUT_DELAY_KNOB));
        } else {
            assert!(r.paste.is_empty());
        }
        // Not offered where the pool has no cooperative blocking.
        let classic = advice(
            &SERVICE.replace("\"net8\"", "\"coreclr3\""),
            Some("latency_p99_ms < 200"),
            4,
        );
        assert!(
            classic
                .remedies
                .iter()
                .all(|r| r.kind != RemedyKind::BlockingWithoutDelay)
        );
    }

    /// A remedy applied is what its runs replayed: run 0 of the applied
    /// workload gives the trial's first figures.
    #[test]
    fn a_remedy_applied_replays_its_trial() {
        let scenario = parse_scenario(SERVICE, "service.toml").unwrap();
        let policy = resolve_policy("net8").unwrap();
        let opts = AdviseOptions {
            runs: 4,
            criterion: parse_goal(Some("latency_p99_ms < 200")).unwrap(),
            arrivals: ArrivalDraws::PerRun,
        };
        let a = advise(&scenario, &policy, &opts);
        assert!(!a.remedies.is_empty());
        for r in &a.remedies {
            let (s, p) = r.apply(&scenario, &policy).expect("applies");
            let run = replay(&s, &p, &opts, 0..1);
            assert_eq!(
                Some(run[0].0.latency_ms.p99),
                r.trial.latency_p99_ms[0],
                "{}",
                r.what
            );
        }
    }

    /// Sync-over-async at Mono's thread limit: every thread blocks in a
    /// `Task.Wait` whose timer callback needs a thread of its own, so the
    /// run never ends, and no minimum helps (the limit is the limit). A
    /// throttle keeps threads free for the callbacks.
    #[test]
    fn a_throttle_is_searched_against_a_latency_goal_and_can_be_the_one_that_works() {
        let deadlocking = MONO_DEADLOCK;
        let a = advice(deadlocking, Some("makespan_ms < 60000"), 4);
        assert!(!a.as_is_meets, "{}", a.text());
        assert!(
            a.as_is.makespan_ms.iter().all(Option::is_none),
            "as it is, no run ends: {}",
            a.text()
        );
        let min = a.remedies.iter().find(|r| r.kind == RemedyKind::MinThreads);
        assert!(min.is_none_or(|r| !r.meets), "{}", a.text());
        let i = a.recommended.expect("a recommendation");
        let r = &a.remedies[i];
        assert_eq!(r.kind, RemedyKind::Throttle, "{}", a.text());
        assert_eq!(r.trial.met, r.trial.runs, "{}", a.text());
        if r.trial.value > 1 {
            let below = r.below.as_ref().expect("the limit below was tried");
            assert_eq!(below.value + 1, r.trial.value);
            assert!(below.share() < a.share, "{}", a.text());
        }
        let text = a.text();
        assert!(
            text.contains(&format!("new SemaphoreSlim({})", r.trial.value)),
            "{text}"
        );
        assert!(
            text.contains("group `calls`: await throttle.WaitAsync()"),
            "{text}"
        );
        // Applied, it is what its runs replayed.
        assert_eq!(
            applied_throttle(r),
            Some(Throttle {
                kind: ThrottleKind::Semaphore,
                limit: r.trial.value
            })
        );
        // Against the verdict's own question (starvation) a throttle is not
        // searched: a limit of 1 would "meet" it by holding everything back.
        let b = advice(deadlocking, None, 2);
        assert!(!offers_throttle(&b), "{}", b.text());
    }

    /// Nothing blocks, nothing to throttle.
    #[test]
    fn no_throttle_where_nothing_blocks() {
        let compute = SERVICE.replace("{ wait_ms = 50 }", "{ cpu_ms = 50 }");
        let a = advice(&compute, Some("latency_p99_ms < 200"), 2);
        assert!(!offers_throttle(&a), "{}", a.text());
    }

    /// Sync-over-async at Mono's thread limit on one core: 300 ×
    /// `Task.Delay(100).Wait()` between two 1 ms CPU steps.
    const MONO_DEADLOCK: &str = "name = \"deadlock\"\n[machine]\ncores = 1\n[pool]\npolicy = \"mono\"\n\
        [[group]]\nname = \"calls\"\ncount = 300\n\
        body = [ { cpu_ms = 1 }, { wait_ms = 100 }, { cpu_ms = 1 } ]\n";

    /// The throttle remedy `r` puts on [`MONO_DEADLOCK`]'s group, applied.
    fn applied_throttle(r: &Remedy) -> Option<Throttle> {
        let scenario = parse_scenario(MONO_DEADLOCK, "deadlock.toml").unwrap();
        let policy = resolve_policy("mono").unwrap();
        let (s, _) = r.apply(&scenario, &policy).unwrap();
        s.groups[0].throttle
    }

    fn offers_throttle(a: &Advice) -> bool {
        a.remedies
            .iter()
            .any(|r| matches!(r.kind, RemedyKind::Throttle | RemedyKind::PairThrottle))
    }

    /// The same deadlock, held back by a pair's concurrent scheduler
    /// instead: the items past its limit wait in the pair's queue without
    /// a thread, so the timers' callbacks find one.
    #[test]
    fn a_pair_s_scheduler_is_searched_beside_the_semaphore() {
        let deadlocking = MONO_DEADLOCK;
        let a = advice(deadlocking, Some("makespan_ms < 60000"), 4);
        let r = a
            .remedies
            .iter()
            .find(|r| r.kind == RemedyKind::PairThrottle)
            .unwrap_or_else(|| panic!("a pair remedy: {}", a.text()));
        assert!(r.meets, "{}", a.text());
        assert_eq!(r.trial.met, r.trial.runs, "{}", a.text());
        if r.trial.value > 1 {
            let below = r.below.as_ref().expect("the limit below was tried");
            assert_eq!(below.value + 1, r.trial.value);
            assert!(below.share() < a.share, "{}", a.text());
        }
        assert!(
            r.paste[0].contains(&format!(
                "ConcurrentExclusiveSchedulerPair(TaskScheduler.Default, {})",
                r.trial.value
            )),
            "{:?}",
            r.paste
        );
        assert_eq!(
            applied_throttle(r),
            Some(Throttle {
                kind: ThrottleKind::ConcurrentExclusive,
                limit: r.trial.value
            })
        );
        // The semaphore stays the recommendation when both meet: it comes
        // first.
        let i = a.recommended.expect("a recommendation");
        assert_eq!(a.remedies[i].kind, RemedyKind::Throttle, "{}", a.text());
    }

    /// A fan-out's calls are queued by the calling item itself: a pair's
    /// scheduler cannot take them, a semaphore can.
    #[test]
    fn a_fan_out_s_calls_get_a_semaphore_and_no_pair() {
        let gateway = "name = \"gateway\"\n[machine]\ncores = 2\n[pool]\npolicy = \"net8\"\n\
            [[group]]\nname = \"requests\"\ncount = 100\narrival = { every_ms = 20 }\n\
            body = [ { fan_out = \"calls\" } ]\n\
            [[group]]\nname = \"calls\"\ncount = 400\nfrom = \"fan-out\"\n\
            body = [ { wait_ms = 100 } ]\n";
        let a = advice(gateway, Some("latency_p99_ms < 300"), 2);
        assert!(
            a.remedies.iter().any(|r| r.kind == RemedyKind::Throttle),
            "{}",
            a.text()
        );
        assert!(
            a.remedies
                .iter()
                .all(|r| r.kind != RemedyKind::PairThrottle),
            "{}",
            a.text()
        );
    }

    #[test]
    fn the_same_workload_gives_the_same_advice() {
        let a = advice(SERVICE, None, 4);
        let b = advice(SERVICE, None, 4);
        assert_eq!(a, b);
        assert_eq!(a.text(), b.text());
    }

    #[test]
    fn arrivals_drawn_anew_differ_from_run_to_run() {
        let scenario = parse_scenario(SERVICE, "service.toml").unwrap();
        assert!(scenario.has_random_arrivals());
        let a = scenario.for_run(0, ArrivalDraws::PerRun);
        let b = scenario.for_run(1, ArrivalDraws::PerRun);
        assert_ne!(a.workload_seed(), b.workload_seed());
        let c = scenario.for_run(1, ArrivalDraws::Fixed);
        assert_eq!(a.workload_seed(), c.workload_seed());
        assert_ne!(b.seed, a.seed);
        assert_eq!(b.seed, c.seed);
    }

    #[test]
    fn a_workload_that_meets_the_goal_needs_no_change() {
        let light = SERVICE.replace("poisson_per_s = 200", "poisson_per_s = 5");
        let a = advice(&light, Some("latency_p99_ms < 200"), 4);
        assert!(a.as_is_meets, "{}", a.text());
        assert!(a.remedies.is_empty());
        assert!(a.text().contains("no change needed"));
    }

    #[test]
    fn a_goal_nothing_meets_gives_no_recommendation() {
        let a = advice(SERVICE, Some("latency_p99_ms < 1"), 3);
        assert_eq!(a.recommended, None, "{}", a.text());
        assert!(a.text().contains("no recommendation"));
    }

    #[test]
    fn the_paste_is_the_runtime_s() {
        let net8 = resolve_policy("net8").unwrap();
        let lines = min_threads_paste(&net8, 26).join("\n");
        assert!(
            lines.contains("DOTNET_ThreadPool_ForceMinWorkerThreads=0x1A"),
            "{lines}"
        );
        let core3 = resolve_policy("coreclr3").unwrap();
        let lines = min_threads_paste(&core3, 26).join("\n");
        assert!(
            lines.contains("COMPlus_ThreadPool_ForceMinWorkerThreads=0x1A"),
            "{lines}"
        );
        let mono = resolve_policy("mono").unwrap();
        let lines = min_threads_paste(&mono, 26).join("\n");
        assert!(
            !lines.contains("runtimeconfig") && !lines.contains("0x1A"),
            "{lines}"
        );
        assert!(lines.contains("SetMinThreads(26, io)"), "{lines}");
    }

    #[test]
    fn goals_are_parsed_as_sweep_conditions() {
        assert_eq!(parse_goal(None).unwrap(), Criterion::NoStarvation);
        assert!(matches!(
            parse_goal(Some("latency_p99_ms < 200 and threads_peak <= 64")).unwrap(),
            Criterion::Constraints(c) if c.len() == 2
        ));
        let e = parse_goal(Some("latency_p99 < 200")).unwrap_err();
        assert!(e.contains("did you mean") && e.contains("--goal"), "{e}");
    }
}
