//! A starvation verdict for one run, in the words of .NET's own guidance.
//!
//! .NET's "Debug ThreadPool starvation" guide (dotnet/docs,
//! `docs/core/diagnostics/debug-threadpool-starvation.md`) gives the
//! signature to look for in `dotnet-counters`: the thread count climbs by
//! about one or two threads a second, CPU use stays well below 100 %, and
//! work sits in the queue. That is the gate thread's starvation rule at
//! work (`policy::gate`): the pool adds a thread only when no work item was
//! dequeued for the starvation delay, about once per gate period.
//!
//! The pool is the limit of a run ([`crate::remedy::starved`]) when work
//! sat queued and not taken for at least [`MIN_STARVED_SHARE`] of the
//! makespan ([`crate::metrics::time_starved`]) while pool CPU use stayed
//! below [`CPU_WELL_BELOW`] (when known). [`starvation_verdict`] then names
//! what the pool was doing, one [`Finding`], the first that fits:
//! - [`Finding::GateStarvation`], the signature above: at least two threads
//!   created by the starvation rule, at [`MIN_RATE_PER_S`] to
//!   [`MAX_RATE_PER_S`] a second over the span of those injections;
//! - [`Finding::BlockedWaits`]: .NET 6+ added threads for pool threads
//!   blocked in `Task.Wait` (cooperative blocking, `policy::blocking`), and
//!   work still waited: the compensation's delays, or waits whose
//!   completion itself needs a pool thread (a timer's callback queued to
//!   the pool), keep it behind;
//! - [`Finding::AtLimit`]: the pool held its maximum of threads;
//! - [`Finding::GoalLimited`]: threads existed beyond the pool's goal (they
//!   park, idle) for at least [`MIN_STARVED_SHARE`] of the run while work
//!   waited: the goal (hill climbing's, or a lowered one) kept them idle;
//! - [`Finding::Starved`]: none of these; the pool added threads too slowly.
//!
//! It names the likely cause — the blocking body steps of the items that
//! were running when the pool added threads — and the settings that would
//! remove it, found by simulating: the smallest `SetMinThreads` under which
//! the run is no longer starved ([`crate::remedy::Search`], the search
//! `sweep --best 'minimize pool.min_threads …'` and `advise` use), and
//! .NET 6+'s cooperative blocking where the step is a `Task.Wait` the
//! current policy does not compensate.

use serde::Serialize;

use crate::engine::{self, SimOptions};
use crate::metrics::{self, Summary};
use crate::policy::{ModelKind, PolicyConfig};
use crate::policy_file::resolve_policy;
use crate::remedy::{Criterion, Search, Trial};
use crate::scenario::{Scenario, Step};
use crate::time::SimTime;
use crate::trace::{ItemRecord, NullSink, ThreadReason, Trace};

/// The slowest climb that counts as the starvation signature (threads/s).
pub const MIN_RATE_PER_S: f64 = 0.5;
/// The fastest climb that counts: faster is hill climbing or cooperative
/// blocking, not the gate's once-a-period injection (threads/s).
pub const MAX_RATE_PER_S: f64 = 3.0;
/// CPU use, as a share of the cores, that counts as "well below 100 %".
pub const CPU_WELL_BELOW: f64 = 0.8;
/// The least share of the makespan with work waiting for a thread.
pub const MIN_STARVED_SHARE: f64 = 0.1;
/// The least 95th percentile of the items' start delays (ms) of a starved
/// run: in a dense stream some item is always queued for a few
/// microseconds (the union of the waits covers most of the run) while none
/// waits long; the pool is not the limit then.
pub const MIN_DELAY_P95_MS: f64 = 10.0;
/// Scenarios with more items than this get no internal sweep (it would take
/// more than a moment); the verdict says which sweep to run instead.
pub const SWEEP_ITEM_LIMIT: usize = 100_000;

/// Pool threads blocked in one body step when the starvation rule fired.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cause {
    pub group: String,
    /// The step in the scenario's words (`sleep_ms = 4000`).
    pub step: String,
    /// The real call (`Thread.Sleep(4000)`).
    pub call: String,
    /// Items of this group running at the injections: the fewest and the
    /// most at any one of them.
    pub running_at_injections: (usize, usize),
}

/// A setting that removes (or shrinks) the starvation, with its simulated effect.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fix {
    /// What to change (`ThreadPool.SetMinThreads(10, ...)`).
    pub setting: String,
    pub makespan_ms: f64,
    pub starvation_injections: usize,
}

/// What the pool was doing while work waited (see the module head).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Finding {
    GateStarvation,
    BlockedWaits,
    AtLimit,
    GoalLimited,
    Starved,
}

/// The verdict on one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    /// Whether the pool was the limit of the run (work waited for a thread
    /// while the cores were not busy).
    pub starved: bool,
    /// What the pool was doing then (`None` when not starved).
    pub finding: Option<Finding>,
    pub starvation_injections: usize,
    /// Threads a second the starvation rule added over its span.
    pub rate_per_s: Option<f64>,
    pub cpu_utilization: Option<f64>,
    pub time_starved_ms: f64,
    pub makespan_ms: f64,
    pub causes: Vec<Cause>,
    pub fixes: Vec<Fix>,
    /// The verdict in words, a line each.
    pub text: Vec<String>,
}

fn step_words(step: &Step) -> Option<(String, String)> {
    let ms = |d: &crate::time::SimDuration| fmt_num(d.as_ms_f64());
    match step {
        Step::Sleep(d) => Some((
            format!("sleep_ms = {}", ms(d)),
            format!("Thread.Sleep({})", ms(d)),
        )),
        Step::Wait(d) => Some((
            format!("wait_ms = {}", ms(d)),
            format!("Task.Delay({}).Wait()", ms(d)),
        )),
        Step::Spin(d) => Some((
            format!("spin_ms = {}", ms(d)),
            format!("SpinWait.SpinUntil(() => false, {})", ms(d)),
        )),
        Step::Busy(d) => Some((
            format!("busy_ms = {}", ms(d)),
            format!("a Stopwatch busy loop of {} ms", ms(d)),
        )),
        Step::FanOut { .. } => Some((
            "fan_out".to_string(),
            "Task.WhenAll(calls).Wait()".to_string(),
        )),
        Step::Cpu(_) | Step::Await(_) | Step::Yield => None,
    }
}

pub(crate) fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

/// Starvation-rule injection times of `trace`, in order.
fn injections(trace: &Trace) -> Vec<crate::time::SimTime> {
    let mut at: Vec<_> = trace
        .threads
        .iter()
        .filter(|t| t.reason == ThreadReason::Starvation)
        .map(|t| t.created)
        .collect();
    at.sort_unstable();
    at
}

/// The parts of the signature.
struct Signature {
    rate: Option<f64>,
    climbing: bool,
    cpu_low: bool,
    queued: bool,
}

impl Signature {
    /// The pool was the limit: the one rule of [`crate::remedy::starved`].
    fn starved(&self) -> bool {
        self.cpu_low && self.queued
    }
}

fn signature(summary: &Summary, at: &[crate::time::SimTime]) -> Signature {
    let rate = (at.len() >= 2).then(|| {
        let span = at[at.len() - 1].since(at[0]).as_ms_f64() / 1000.0;
        if span > 0.0 {
            (at.len() - 1) as f64 / span
        } else {
            f64::INFINITY
        }
    });
    let climbing = rate.is_some_and(|r| (MIN_RATE_PER_S..=MAX_RATE_PER_S).contains(&r));
    let cpu_low = summary.cpu_utilization.is_none_or(|u| u < CPU_WELL_BELOW);
    let queued = crate::remedy::work_waited(summary);
    debug_assert_eq!(cpu_low && queued, crate::remedy::starved(summary));
    Signature {
        rate,
        climbing,
        cpu_low,
        queued,
    }
}

/// Whether a thread created for `reason` is one the pool added because
/// work was stuck (the starvation rule, or cooperative blocking's
/// compensation): the moments whose running items name the cause.
pub fn is_injection(reason: ThreadReason) -> bool {
    matches!(
        reason,
        ThreadReason::Starvation | ThreadReason::CooperativeBlocking
    )
}

/// The verdict on a run of `scenario` under `policy` whose trace is `trace`.
/// May simulate the scenario again (a few times) to find the fixes.
pub fn starvation_verdict(scenario: &Scenario, policy: &PolicyConfig, trace: &Trace) -> Verdict {
    let summary = metrics::summarize(trace);
    let mut running = RunningAtInjections::new(trace.groups.len());
    let mut at: Vec<SimTime> = trace
        .threads
        .iter()
        .filter(|t| is_injection(t.reason))
        .map(|t| t.created)
        .collect();
    at.sort_unstable();
    for t in at {
        running.injection(t);
    }
    for item in &trace.items {
        running.add(item);
    }
    starvation_verdict_of(scenario, policy, trace, &summary, &running)
}

/// [`starvation_verdict`] of a run whose items were streamed: its summary
/// and the items running at each injection were gathered as the items went
/// by ([`crate::stream::RunStream`]); `trace` gives the threads.
pub fn starvation_verdict_of(
    scenario: &Scenario,
    policy: &PolicyConfig,
    trace: &Trace,
    summary: &Summary,
    running: &RunningAtInjections,
) -> Verdict {
    let at = injections(trace);
    let sig = signature(summary, &at);
    let Signature {
        rate,
        cpu_low,
        queued,
        ..
    } = sig;
    let starved = sig.starved();
    let finding = starved.then(|| finding_of(scenario, policy, trace, summary, &sig));
    let headline = finding.as_ref().map(|f| f.1.clone()).unwrap_or_default();
    let finding = finding.map(|f| f.0);

    let mut verdict = Verdict {
        starved,
        finding,
        starvation_injections: at.len(),
        rate_per_s: rate,
        cpu_utilization: summary.cpu_utilization,
        time_starved_ms: summary.time_starved_ms,
        makespan_ms: summary.makespan_ms,
        causes: Vec::new(),
        fixes: Vec::new(),
        text: Vec::new(),
    };
    if !starved {
        verdict.text.push(no_starvation_reason(
            summary,
            at.len(),
            rate,
            cpu_low,
            queued,
        ));
        return verdict;
    }
    verdict.causes = causes(scenario, &running.by_group());
    verdict.fixes = fixes(scenario, policy, summary, &verdict.causes);
    verdict.text = words(&verdict, headline, scenario);
    verdict
}

/// How many items of each group ran at each starvation injection, gathered
/// as the items go by: each item adds one to the injections within its
/// `[started, finished)`, kept as differences, so an item costs two binary
/// searches however many injections the run had. Every injection before an
/// item's end must be known when the item is added (true of the engine's
/// streamed items: an item leaves after it ended).
#[derive(Clone, Debug, Default)]
pub struct RunningAtInjections {
    at: Vec<SimTime>,
    /// Per group: the change in running items at each injection.
    diff: Vec<Vec<i64>>,
}

impl RunningAtInjections {
    pub fn new(groups: usize) -> Self {
        RunningAtInjections {
            at: Vec::new(),
            diff: vec![Vec::new(); groups],
        }
    }

    /// A starvation injection at `t` (in time order).
    pub fn injection(&mut self, t: SimTime) {
        debug_assert!(self.at.last().is_none_or(|&l| l <= t));
        self.at.push(t);
    }

    pub fn add(&mut self, item: &ItemRecord) {
        let Some(diff) = self.diff.get_mut(item.group as usize) else {
            return;
        };
        let lo = self.at.partition_point(|&t| t < item.started);
        let hi = self.at.partition_point(|&t| t < item.finished);
        if lo >= hi {
            return;
        }
        if diff.len() <= hi {
            diff.resize(hi + 1, 0);
        }
        diff[lo] += 1;
        diff[hi] -= 1;
    }

    /// Per group: the fewest and the most items running at an injection
    /// (`(usize::MAX, 0)` without injections).
    pub fn by_group(&self) -> Vec<(usize, usize)> {
        self.diff
            .iter()
            .map(|diff| {
                let mut here = 0i64;
                let mut range = (usize::MAX, 0usize);
                for k in 0..self.at.len() {
                    here += diff.get(k).copied().unwrap_or(0);
                    let h = here.max(0) as usize;
                    range = (range.0.min(h), range.1.max(h));
                }
                range
            })
            .collect()
    }
}

fn no_starvation_reason(
    s: &Summary,
    injections: usize,
    rate: Option<f64>,
    cpu_low: bool,
    queued: bool,
) -> String {
    if !queued {
        return format!(
            "no starvation: work waited for a thread {} of the run, 95 % of the items within {}, the starvation rule added {injections} thread{}",
            crate::output::human_ms(s.time_starved_ms),
            crate::output::human_ms(s.start_delay_ms.p95),
            if injections == 1 { "" } else { "s" }
        );
    }
    let mut why = Vec::new();
    if let Some(r) = rate
        && !(MIN_RATE_PER_S..=MAX_RATE_PER_S).contains(&r)
    {
        why.push(format!("threads came at {r:.1}/s, not 1-2/s"));
    }
    if !cpu_low {
        why.push(format!(
            "CPU was busy ({:.0} %): the cores, not the pool, were the limit",
            s.cpu_utilization.unwrap_or(0.0) * 100.0
        ));
    }
    format!(
        "no starvation verdict: work waited for a thread {} of the run, but {}",
        crate::output::human_ms(s.time_starved_ms),
        why.join("; ")
    )
}

/// The measure of the run's time with more threads than the pool's goal
/// (the threads beyond it park, idle), from the thread-count samples.
fn beyond_goal_ms(trace: &Trace) -> f64 {
    let mut total = 0u64;
    for (k, c) in trace.counts.iter().enumerate() {
        let until = trace.counts.get(k + 1).map_or(trace.end, |n| n.at);
        if c.goal.is_some_and(|g| g < c.threads) && until > c.at {
            total += until.since(c.at).as_nanos();
        }
    }
    total as f64 / 1e6
}

/// What the pool was doing in a starved run: the first finding that fits
/// (the module head gives the order), and the verdict's first line.
fn finding_of(
    scenario: &Scenario,
    policy: &PolicyConfig,
    trace: &Trace,
    summary: &Summary,
    sig: &Signature,
) -> (Finding, String) {
    use crate::output::human_ms;
    let by = |r: ThreadReason| {
        summary
            .threads_created_by_reason
            .get(r.name())
            .copied()
            .unwrap_or(0)
    };
    let cpu = summary
        .cpu_utilization
        .map(|u| format!("{:.0} %", u * 100.0))
        .unwrap_or_else(|| "an unknown level".into());
    let waited = format!(
        "work waited for a thread {} of the {} run",
        human_ms(summary.time_starved_ms),
        human_ms(summary.makespan_ms)
    );
    let injections = injections(trace).len();
    if sig.climbing {
        return (
            Finding::GateStarvation,
            format!(
                "STARVATION: the starvation rule added {} threads at {:.1} a second while CPU stayed at {cpu} and {waited}",
                injections,
                sig.rate.unwrap_or(0.0),
            ),
        );
    }
    let blocking = by(ThreadReason::CooperativeBlocking);
    if blocking >= 2 {
        return (
            Finding::BlockedWaits,
            format!(
                "STARVATION (blocked waits): the pool added {blocking} threads for threads blocked in Task.Wait (cooperative blocking), {} in all, yet CPU stayed at {cpu} and {waited}",
                summary.threads_peak
            ),
        );
    }
    let (_, max) = crate::policy::thread_limits(policy, scenario);
    if summary.threads_peak >= max {
        return (
            Finding::AtLimit,
            format!(
                "AT THE LIMIT: the pool held its maximum of {max} threads while CPU stayed at {cpu} and {waited}"
            ),
        );
    }
    let beyond = beyond_goal_ms(trace);
    if beyond >= MIN_STARVED_SHARE * summary.makespan_ms {
        return (
            Finding::GoalLimited,
            format!(
                "GOAL-LIMITED: threads existed beyond the pool's goal, idle, for {} while CPU stayed at {cpu} and {waited}",
                human_ms(beyond)
            ),
        );
    }
    (
        Finding::Starved,
        format!(
            "STARVATION: the pool added {} thread{} ({injections} by the starvation rule) while CPU stayed at {cpu} and {waited}",
            summary.threads_created,
            if summary.threads_created == 1 {
                ""
            } else {
                "s"
            },
        ),
    )
}

fn causes(scenario: &Scenario, running: &[(usize, usize)]) -> Vec<Cause> {
    let mut out = Vec::new();
    // Without an injection to look at, every group's blocking steps.
    let any = running.iter().any(|n| n.1 > 0);
    for (g, n) in running.iter().enumerate() {
        if any && n.1 == 0 {
            continue;
        }
        let n = if any { *n } else { (0, 0) };
        let Some(group) = scenario.groups.get(g) else {
            continue;
        };
        for step in &group.body {
            if let Some((words, call)) = step_words(step) {
                out.push(Cause {
                    group: group.name.clone(),
                    step: words,
                    call,
                    running_at_injections: n,
                });
            }
        }
    }
    out.sort_by_key(|c| std::cmp::Reverse(c.running_at_injections.1));
    out
}

/// A run's summary, starvation injections and outcome.
fn simulate_quietly(
    scenario: &Scenario,
    policy: &PolicyConfig,
) -> (Summary, usize, engine::Outcome) {
    let run = engine::simulate(scenario, policy, &mut NullSink, &SimOptions::default());
    let at = injections(&run.trace);
    (metrics::summarize(&run.trace), at.len(), run.outcome)
}

fn fixes(scenario: &Scenario, policy: &PolicyConfig, s: &Summary, causes: &[Cause]) -> Vec<Fix> {
    let mut out = Vec::new();
    if s.items > SWEEP_ITEM_LIMIT {
        return out;
    }
    // SetMinThreads: the smallest minimum under which the run is no longer
    // starved, by the search `sweep --best 'minimize pool.min_threads …'`
    // and `advise` use, from one above the current minimum to a thread per
    // item (at most the pool's maximum and [`crate::advise::MAX_MIN_THREADS`];
    // else, with none enough, no fix).
    if policy.threads.honours_set_min_threads {
        let (min, max) = crate::policy::thread_limits(policy, scenario);
        let items = u32::try_from(s.items).unwrap_or(u32::MAX);
        let top = items
            .min(crate::advise::MAX_MIN_THREADS)
            .min(max)
            .max(min + 1);
        let mut injections_at = Vec::new();
        let found = Search::new(min + 1, top, 1.0).smallest(|n| {
            let mut variant = scenario.clone();
            variant.pool.min_threads = Some(n);
            let (sum, inj, outcome) = simulate_quietly(&variant, policy);
            injections_at.push((n, inj));
            Trial::judge(n, &[(sum, outcome)], &Criterion::NoStarvation)
        });
        if let Some(t) = found.smallest
            && let Some(Some(makespan)) = t.makespan_ms.first()
            && *makespan < s.makespan_ms
        {
            let n = t.value;
            let inj = injections_at
                .iter()
                .rev()
                .find(|(v, _)| *v == n)
                .map_or(0, |(_, i)| *i);
            out.push(Fix {
                setting: format!("ThreadPool.SetMinThreads({n}, ...)  (pool.min_threads = {n})"),
                makespan_ms: *makespan,
                starvation_injections: inj,
            });
        }
    }
    // Cooperative blocking: .NET 6+ compensates a thread blocked in Task.Wait.
    let waits = causes.iter().any(|c| c.step.starts_with("wait_ms"));
    if waits
        && policy.model != ModelKind::Portable
        && let Ok(net6) = resolve_policy("net6")
    {
        let (sum, inj, outcome) = simulate_quietly(scenario, &net6);
        if outcome.is_completed() && sum.makespan_ms < s.makespan_ms {
            out.push(Fix {
                setting: "run on .NET 6+ (policy net6): Task.Wait counts as cooperative blocking"
                    .into(),
                makespan_ms: sum.makespan_ms,
                starvation_injections: inj,
            });
        }
    }
    out
}

fn words(v: &Verdict, headline: String, scenario: &Scenario) -> Vec<String> {
    use crate::output::human_ms;
    let mut text = vec![headline];
    if v.causes.is_empty() {
        text.push(
            "  likely cause: items that hold their thread for long (no blocking step was found; long CPU work?)"
                .into(),
        );
    }
    for c in &v.causes {
        let running = match c.running_at_injections {
            (_, 0) => String::new(),
            (lo, hi) if lo == hi => format!("; {lo} of its items running at each injection"),
            (lo, hi) => format!("; {lo} to {hi} of its items running at each injection"),
        };
        text.push(format!(
            "  likely cause: pool threads blocked in {} (group `{}`, {}{running})",
            c.call, c.group, c.step,
        ));
    }
    if v.fixes.is_empty() {
        if v.makespan_ms > 0.0
            && scenario.groups.iter().map(|g| g.count).sum::<u64>() as usize > SWEEP_ITEM_LIMIT
        {
            text.push(
                "  to find a setting: poolsim sweep SCENARIO --set pool.min_threads=1..256:*2 --metric makespan_ms --metric threads_created_starvation"
                    .into(),
            );
        } else {
            text.push("  no setting found that removes it: do not block pool threads (await instead of Wait/Sleep)".into());
        }
    }
    for f in &v.fixes {
        text.push(format!(
            "  fix: {} -> makespan {} (was {}), {} starvation injection{}",
            f.setting,
            human_ms(f.makespan_ms),
            human_ms(v.makespan_ms),
            f.starvation_injections,
            if f.starvation_injections == 1 {
                ""
            } else {
                "s"
            }
        ));
    }
    text
}
