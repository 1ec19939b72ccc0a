//! The playground's calls as plain Rust: a JSON request in, a JSON response
//! out. The request is what the page's controls hold (the scenario's TOML
//! text as typed, the policies A and B, the seed, how many seeds the
//! distribution takes); the response is what `poolsim run`, `explain` and
//! `run --runs N` would say about it — the report's data for the chart
//! (the same JSON `run --html` embeds, [`render::html::report_data`]), the
//! summary, the explanation and the spread over seeds — or, for text that
//! does not load, the error exactly as the command line prints it, with
//! each problem's line and column as numbers for the editor to mark.
//!
//! Each call is a pure function of its request: no clock, no file, no
//! randomness but the scenario's seeded streams, so the same request gives
//! the same bytes. In the browser every policy is a built-in one
//! ([`NoFiles`]): a scenario naming a policy file gets the message the
//! command line gives for a file it cannot read.
//!
//! The seed works as `run --runs N` varies it: the workload (arrivals,
//! drawn durations) stays that of the scenario's own seed `S`, and the k-th
//! seed `S + k` changes what the pool does (the gate thread's phase, hill
//! climbing's sample interval, timer choices), so the run the slider shows
//! is one of the runs of the distribution.

use serde::{Deserialize, Serialize};

use poolsim_analysis::diagnostics::LoadError;
use poolsim_analysis::engine::{self, Outcome, SimOptions};
use poolsim_analysis::explain::explain;
use poolsim_analysis::metrics::{self, Summary};
use poolsim_analysis::output::{self, human_ms};
use poolsim_analysis::policy::PolicyConfig;
use poolsim_analysis::policy_file::{
    NoFiles, builtin_policies, resolve_policy_for_scenario_text_in, resolve_policy_in,
};
use poolsim_analysis::render::{self, ChartOptions, Timeline};
use poolsim_analysis::scenario::load::parse_scenario;
use poolsim_analysis::scenario::{ArrivalDraws, Scenario};
use poolsim_analysis::spread::{self, Quantiles, RunFigures, Spread};
use poolsim_analysis::time::{SimDuration, SimTime};
use poolsim_analysis::trace::{EventLog, Trace};
use poolsim_analysis::verdict::{Verdict, starvation_verdict};

/// An item whose start comes this long or longer after it was queued is a
/// late start: the gate thread's starvation delay (500 ms in the classic
/// and portable pools, policies/net-classic.toml `[gate]`; seed 001
/// (docs/reference.md) starts its fifth item 629 ms late). An item that
/// never started counts from its queueing to the run's end.
pub const LATE_START: SimDuration = SimDuration::from_ms(500);

/// The events a playground run may take unless the request says otherwise:
/// the page stays responsive on a scenario typed too large (the run then
/// stops and says so, as `run --max-events` does).
pub const DEFAULT_MAX_EVENTS: u64 = 5_000_000;

/// Seeds of the distribution unless the request says otherwise.
pub const DEFAULT_RUNS: u32 = 50;

/// The most seeds a distribution takes.
pub const MAX_RUNS: u32 = 1000;

/// The most policies one request runs (A and B).
pub const MAX_POLICIES: usize = 2;

/// The file name messages give when the request names none.
pub const DEFAULT_FILE: &str = "scenario.toml";

/// The late starts a run's response lists by item (the count is whole).
const LATE_LISTED: usize = 50;

/// What the page asks.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The scenario's TOML text.
    pub scenario: String,
    /// The file the text stands for, as messages name it (the preset's
    /// path, so an error reads as `poolsim run` gives it for that file).
    #[serde(default)]
    pub file: Option<String>,
    /// The policies to run it under, by built-in name or alias; `null` or
    /// `""`: the scenario's own `pool.policy`. None given: the scenario's.
    #[serde(default)]
    pub policies: Vec<Option<String>>,
    /// The k-th run of the distribution: the pool of seed `S + k`, and
    /// random (Poisson) arrivals drawn from workload seed `W + k` as
    /// `run --runs` draws them (`W`, `S`: the scenario's; 0: the scenario
    /// as written).
    #[serde(default)]
    pub seed_offset: u64,
    /// Seeds of the distribution (`spread`): `S .. S + runs`.
    #[serde(default)]
    pub runs: Option<u32>,
    /// Stop the simulation at this simulated time (ms), as `--until-ms`.
    #[serde(default)]
    pub until_ms: Option<u64>,
    /// Stop after this many events ([`DEFAULT_MAX_EVENTS`] if absent).
    #[serde(default)]
    pub max_events: Option<u64>,
}

/// Why a request gets no result: its text does not load (the scenario's
/// or a policy's diagnostics), or the request itself is wrong.
#[derive(Debug)]
pub enum Refusal {
    Load(LoadError),
    Request(String),
}

impl From<LoadError> for Refusal {
    fn from(e: LoadError) -> Refusal {
        Refusal::Load(e)
    }
}

/// One problem of a refused text, for the editor to mark.
#[derive(Serialize)]
struct DiagnosticOut<'a> {
    file: Option<&'a str>,
    line: Option<usize>,
    column: Option<usize>,
    path: Option<&'a str>,
    message: &'a str,
    help: Option<&'a str>,
    /// As printed (`FILE:LINE:COL: error at `PATH`: MESSAGE` and its help).
    text: String,
}

#[derive(Serialize)]
struct RefusalOut<'a> {
    ok: bool,
    /// The whole message, as the command line prints it to stderr.
    error: String,
    diagnostics: Vec<DiagnosticOut<'a>>,
}

impl Refusal {
    fn to_json(&self) -> String {
        let out = match self {
            Refusal::Load(e) => RefusalOut {
                ok: false,
                error: e.to_string(),
                diagnostics: e
                    .diagnostics()
                    .map(|d| DiagnosticOut {
                        file: d.file.as_deref(),
                        line: d.line,
                        column: d.column,
                        path: d.path.as_deref(),
                        message: &d.message,
                        help: d.help.as_deref(),
                        text: d.to_string(),
                    })
                    .collect(),
            },
            Refusal::Request(message) => RefusalOut {
                ok: false,
                error: format!("error: {message}"),
                diagnostics: Vec::new(),
            },
        };
        serde_json::to_string(&out).unwrap_or_else(|e| {
            format!("{{\"ok\":false,\"error\":\"error: the response: {e}\",\"diagnostics\":[]}}")
        })
    }
}

/// The scenario of a request and its policies, each with the name shown.
struct Loaded {
    /// As written (its own seed).
    scenario: Scenario,
    policies: Vec<(String, PolicyConfig)>,
}

fn parse_request(text: &str) -> Result<Request, Refusal> {
    serde_json::from_str(text).map_err(|e| Refusal::Request(format!("the request: {e}")))
}

fn load(req: &Request) -> Result<Loaded, Refusal> {
    let file = req.file.as_deref().unwrap_or(DEFAULT_FILE);
    let scenario = parse_scenario(&req.scenario, file)?;
    let asked: Vec<Option<&str>> = if req.policies.is_empty() {
        vec![None]
    } else {
        req.policies
            .iter()
            .map(|p| p.as_deref().map(str::trim).filter(|p| !p.is_empty()))
            .collect()
    };
    if asked.len() > MAX_POLICIES {
        return Err(Refusal::Request(format!(
            "at most {MAX_POLICIES} policies at once, {} asked for",
            asked.len()
        )));
    }
    let mut policies = Vec::with_capacity(asked.len());
    for name in asked {
        // Every policy here is a built-in, so the name shown is the one
        // given (an alias such as `net5` stays `net5`), as on the command
        // line.
        let resolved = match name {
            Some(name) => (name.to_string(), resolve_policy_in(name, &NoFiles)?),
            None => (
                scenario.pool.policy.clone(),
                scenario_policy(&scenario.pool.policy, &req.scenario, file)?,
            ),
        };
        policies.push(resolved);
    }
    Ok(Loaded { scenario, policies })
}

/// The policy the scenario names, resolved as the command line resolves
/// it for a scenario file, an error about the name placed at its value in
/// the text.
fn scenario_policy(name: &str, text: &str, file: &str) -> Result<PolicyConfig, LoadError> {
    resolve_policy_for_scenario_text_in(name, file, text, &NoFiles)
}

fn options(req: &Request) -> SimOptions {
    SimOptions {
        until: req.until_ms.map(SimDuration::from_ms),
        max_events: req.max_events.unwrap_or(DEFAULT_MAX_EVENTS),
    }
}

/// A run's late starts.
#[derive(Serialize)]
struct LateStarts {
    threshold_ms: f64,
    count: usize,
    /// The first of them, by item id.
    items: Vec<u32>,
}

fn late_starts(trace: &Trace) -> LateStarts {
    let late: Vec<u32> = trace
        .items
        .iter()
        .filter(|i| {
            let start = if i.started == SimTime::MAX {
                trace.end
            } else {
                i.started
            };
            start.since(i.queued) >= LATE_START
        })
        .map(|i| i.item)
        .collect();
    LateStarts {
        threshold_ms: LATE_START.as_ms_f64(),
        count: late.len(),
        items: late.into_iter().take(LATE_LISTED).collect(),
    }
}

/// One policy's run, as the page shows it.
#[derive(Serialize)]
struct RunOut {
    /// The policy as shown (the name given).
    policy: String,
    /// The policy file's own name (`net5` is `net-classic`).
    model: String,
    seed: u64,
    workload_seed: u64,
    /// `completed`, `time-limit`, `event-budget`, `stalled`, `deadlock`.
    outcome: &'static str,
    events: u64,
    /// The run in one line beside the chart: makespan, peak threads and
    /// start delay p99, in the summary's units.
    figures: String,
    summary: Summary,
    /// The summary as `poolsim run` prints it (its essential lines), then
    /// the starvation verdict.
    summary_text: String,
    /// `None` for a run that did not complete (the fixes it tries would
    /// simulate without the playground's limits).
    verdict: Option<Verdict>,
    /// What `poolsim explain` prints.
    explanation: String,
    late_starts: LateStarts,
}

fn outcome_kind(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Completed => "completed",
        Outcome::TimeLimit { .. } => "time-limit",
        Outcome::EventBudget { .. } => "event-budget",
        Outcome::Stalled { .. } => "stalled",
        Outcome::Deadlock { .. } => "deadlock",
    }
}

/// Simulates one policy with every detail event kept: the chart's
/// timeline and what the page says about the run.
fn simulate(
    scenario: &Scenario,
    policy: &PolicyConfig,
    shown: &str,
    options: &SimOptions,
) -> (Timeline, RunOut) {
    let mut log = EventLog::default();
    let mut result = engine::simulate(scenario, policy, &mut log, options);
    // `explain` names the policy file (before the name shown replaces it).
    let explanation = explain(&result.trace, &log.events, None).to_text();
    result.trace.policy = shown.to_string();
    let timeline = Timeline::build(&result.trace, Some(&log.events));
    let summary = metrics::summarize(&result.trace);
    let completed = result.outcome.is_completed();
    let verdict = completed.then(|| starvation_verdict(scenario, policy, &result.trace));
    let summary_text = summary_lines(&summary, &result.outcome, verdict.as_ref()).join("\n");
    let figures = format!(
        "{} · peak {} threads · start delay p99 {}",
        if completed {
            format!("makespan {}", human_ms(summary.makespan_ms))
        } else {
            format!("did not complete ({})", outcome_kind(&result.outcome))
        },
        summary.threads_peak,
        if summary.started == 0 {
            "-".to_string()
        } else {
            human_ms(summary.start_delay_ms.p99)
        }
    );
    let out = RunOut {
        policy: shown.to_string(),
        model: policy.name.clone(),
        seed: scenario.seed,
        workload_seed: scenario.workload_seed(),
        outcome: outcome_kind(&result.outcome),
        events: result.events,
        figures,
        late_starts: late_starts(&result.trace),
        summary,
        summary_text,
        verdict,
        explanation,
    };
    (timeline, out)
}

/// The summary's lines as `poolsim run` prints them (the same function,
/// less the `changed` line: the text here is the text as typed), then the
/// starvation verdict's lines when the run starved.
fn summary_lines(s: &Summary, outcome: &Outcome, verdict: Option<&Verdict>) -> Vec<String> {
    let mut out = output::summary_lines(s, outcome, &[]);
    if let Some(v) = verdict.filter(|v| v.starved) {
        out.extend(v.text.iter().cloned());
    }
    out
}

fn run_request(req: &Request) -> Result<String, Refusal> {
    let loaded = load(req)?;
    // The slider's offset K is run K of the distribution: the pool's seed
    // and the random arrivals both that run's, as `run --runs` draws them.
    let scenario = loaded
        .scenario
        .for_run(req.seed_offset, ArrivalDraws::PerRun);
    let options = options(req);
    let mut panels = Vec::with_capacity(loaded.policies.len());
    let mut runs = Vec::with_capacity(loaded.policies.len());
    for (shown, policy) in &loaded.policies {
        let (timeline, out) = simulate(&scenario, policy, shown, &options);
        panels.push((render::with_headline(shown, &timeline), timeline));
        runs.push(out);
    }
    let report = render::html::report_data(&panels, &ChartOptions::default())
        .map_err(|e| Refusal::Request(format!("the chart: {e}")))?;
    let runs =
        serde_json::to_string(&runs).map_err(|e| Refusal::Request(format!("the response: {e}")))?;
    Ok(format!(
        "{{\"ok\":true,\"first_seed\":{},\"report\":{report},\"runs\":{runs}}}",
        loaded.scenario.seed
    ))
}

/// One policy's distribution over seeds.
#[derive(Serialize)]
struct SpreadOut<'a> {
    policy: &'a str,
    #[serde(flatten)]
    spread: &'a Spread,
    /// Each seed's figures, in seed order.
    per_run: &'a [RunFigures],
    /// `per-run` when each run drew its own random arrivals; absent when
    /// the scenario has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    arrivals: Option<&'static str>,
    /// "62.0 % of runs: 5.25 s, peak 6 threads (seed 3 is one)", as
    /// `run --runs` lists the outcomes.
    outcome_lines: Vec<String>,
    /// The quantiles as `run --runs` prints them: a row per figure, its
    /// name then min, p5, p50, p95 and max.
    table: Vec<[String; 6]>,
}

/// The spread's quantile rows (makespan, start delay p95, peak threads).
fn quantile_rows(s: &Spread) -> Vec<[String; 6]> {
    let row = |name: &str, q: &Quantiles, f: &dyn Fn(f64) -> String| {
        [
            name.to_string(),
            f(q.min),
            f(q.p5),
            f(q.p50),
            f(q.p95),
            f(q.max),
        ]
    };
    vec![
        row("makespan", &s.makespan_ms, &|x| human_ms(x)),
        row("start delay p95", &s.start_delay_p95_ms, &|x| human_ms(x)),
        row("peak threads", &s.threads_peak, &|x| format!("{x:.0}")),
    ]
}

fn spread_request(req: &Request) -> Result<String, Refusal> {
    let loaded = load(req)?;
    let runs = req.runs.unwrap_or(DEFAULT_RUNS);
    if !(1..=MAX_RUNS).contains(&runs) {
        return Err(Refusal::Request(format!(
            "runs must be 1 to {MAX_RUNS}, found {runs}"
        )));
    }
    let options = options(req);
    let spreads: Vec<(String, Spread)> = loaded
        .policies
        .iter()
        .map(|(shown, policy)| {
            (
                shown.clone(),
                spread::spread(
                    &loaded.scenario,
                    policy,
                    runs as usize,
                    ArrivalDraws::PerRun,
                    &options,
                ),
            )
        })
        .collect();
    let out: Vec<SpreadOut<'_>> = spreads
        .iter()
        .map(|(shown, s)| SpreadOut {
            policy: shown,
            spread: s,
            per_run: &s.per_run,
            arrivals: s.arrivals.map(ArrivalDraws::name),
            outcome_lines: s.outcome_lines(8),
            table: quantile_rows(s),
        })
        .collect();
    let json =
        serde_json::to_string(&out).map_err(|e| Refusal::Request(format!("the response: {e}")))?;
    Ok(format!("{{\"ok\":true,\"spreads\":{json}}}"))
}

/// `poolsim_run`: each policy's run of the scenario at the asked seed —
/// `{"ok":true,"first_seed":S,"report":{...},"runs":[...]}` — or the
/// refusal, `{"ok":false,"error":"...","diagnostics":[...]}`.
pub fn run_json(request: &str) -> String {
    parse_request(request)
        .and_then(|r| run_request(&r))
        .unwrap_or_else(|refusal| refusal.to_json())
}

/// `poolsim_spread`: each policy's distribution over the seeds `S .. S +
/// runs` — `{"ok":true,"spreads":[...]}` — or the refusal.
pub fn spread_json(request: &str) -> String {
    parse_request(request)
        .and_then(|r| spread_request(&r))
        .unwrap_or_else(|refusal| refusal.to_json())
}

#[derive(Serialize)]
struct PolicyOut {
    name: String,
    aliases: Vec<String>,
    description: String,
}

/// `poolsim_policies`: the built-in policies as `poolsim policies` lists
/// them (name, aliases, what each models), for the page's selectors.
pub fn policies_json() -> String {
    let list: Vec<PolicyOut> = builtin_policies()
        .into_iter()
        .map(|p| PolicyOut {
            name: p.name,
            aliases: p.aliases,
            description: p.description,
        })
        .collect();
    serde_json::to_string(&list).unwrap_or_else(|_| "[]".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use poolsim_analysis::explain::explain_scenario;
    use poolsim_analysis::policy_file::resolve_policy_for_scenario_file;
    use poolsim_analysis::scenario::load::load_scenario;
    use serde_json::{Value, json};

    const SEED_001: &str = include_str!("../../../scenarios/seed-001-burst.toml");
    const SEED_001_FILE: &str = "scenarios/seed-001-burst.toml";

    fn call(f: fn(&str) -> String, request: Value) -> Value {
        serde_json::from_str(&f(&request.to_string())).unwrap()
    }

    /// Seed 001 with `min_threads = N` added to its `[pool]` table.
    fn seed_001_min(n: u32) -> String {
        SEED_001.replace("[pool]\n", &format!("[pool]\nmin_threads = {n}\n"))
    }

    fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("poolsim-wasm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn seed_001_starts_six_items_late_and_min_threads_10_none() {
        let v = call(
            run_json,
            json!({"scenario": SEED_001, "file": SEED_001_FILE}),
        );
        assert_eq!(v["ok"], true, "{v}");
        let run = &v["runs"][0];
        assert_eq!(run["policy"], "net-classic");
        assert_eq!(run["outcome"], "completed");
        // Seed 001 (docs/reference.md): four start at once, then one a
        // second from the gate thread, the last two on reused threads.
        assert_eq!(run["late_starts"]["count"], 6);
        assert_eq!(run["late_starts"]["items"], json!([4, 5, 6, 7, 8, 9]));
        assert_eq!(v["report"]["panels"][0]["items"], 10);
        let text = run["summary_text"].as_str().unwrap();
        assert!(text.contains("makespan      8.00 s"), "{text}");
        assert!(text.contains("STARVATION"), "{text}");
        assert!(text.contains("pool.min_threads = 10"), "{text}");

        let v = call(
            run_json,
            json!({"scenario": seed_001_min(10), "file": SEED_001_FILE}),
        );
        let run = &v["runs"][0];
        assert_eq!(run["late_starts"]["count"], 0, "{run}");
        assert!(
            run["summary_text"]
                .as_str()
                .unwrap()
                .contains("makespan      4.00 s")
        );
        // With the default minimum written out, the run is the file's.
        let v4 = call(
            run_json,
            json!({"scenario": seed_001_min(4), "file": SEED_001_FILE}),
        );
        assert_eq!(v4["runs"][0]["late_starts"]["count"], 6);
    }

    #[test]
    fn the_explanation_is_explains_and_the_report_is_run_s() {
        let path = temp_file("seed-001.toml", SEED_001);
        let scenario = load_scenario(&path).unwrap();
        let policy = resolve_policy_for_scenario_file(&scenario.pool.policy, &path).unwrap();
        let expected = explain_scenario(&scenario, &policy, None).to_text();
        let v = call(
            run_json,
            json!({"scenario": SEED_001, "file": path.display().to_string()}),
        );
        assert_eq!(v["runs"][0]["explanation"], expected.as_str());
        // The chart's data is that of `run --html` (a timeline of the same
        // run under the same title).
        let mut log = EventLog::default();
        let mut r = engine::simulate(&scenario, &policy, &mut log, &SimOptions::default());
        r.trace.policy = "net-classic".into();
        let t = Timeline::build(&r.trace, Some(&log.events));
        let data = render::html::report_data(
            &[(render::with_headline("net-classic", &t), t)],
            &ChartOptions::default(),
        )
        .unwrap();
        let data: Value = serde_json::from_str(&data).unwrap();
        assert_eq!(v["report"], data);
    }

    #[test]
    fn the_same_request_gives_the_same_bytes() {
        let request = json!({
            "scenario": include_str!("../../../scenarios/seed-000-task-run.toml"),
            "policies": [null, "net6"],
            "seed_offset": 3,
            "runs": 12,
        })
        .to_string();
        let a = run_json(&request);
        assert_eq!(a, run_json(&request));
        assert!(a.starts_with("{\"ok\":true"), "{}", &a[..200.min(a.len())]);
        let s = spread_json(&request);
        assert_eq!(s, spread_json(&request));
    }

    #[test]
    fn a_scenario_error_is_the_command_line_s_with_its_place() {
        let text = SEED_001.replace("cores = 4", "cores = 0");
        let path = temp_file("bad-cores.toml", &text);
        let file = path.display().to_string();
        let expected = load_scenario(&path).unwrap_err();
        let v = call(run_json, json!({"scenario": text, "file": file}));
        assert_eq!(v["ok"], false);
        assert_eq!(v["error"], expected.to_string().as_str());
        let line = text.lines().position(|l| l == "cores = 0").unwrap() + 1;
        let d = &v["diagnostics"][0];
        assert_eq!(d["line"], line);
        assert_eq!(d["column"], 9);
        assert_eq!(d["path"], "machine.cores");
        assert!(
            d["text"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{file}:{line}:9: error"))
        );
        // A syntax error too: the line and column of the bad token.
        let v = call(run_json, json!({"scenario": "name = \"x\"\n[machine\n"}));
        assert_eq!(v["diagnostics"][0]["line"], 2, "{v}");
        assert!(
            v["error"].as_str().unwrap().starts_with("scenario.toml:2:"),
            "{v}"
        );
    }

    #[test]
    fn a_policy_name_error_is_placed_at_its_value() {
        let text = SEED_001.replace("\"net-classic\"", "\"net-clasic\"");
        let path = temp_file("bad-policy.toml", &text);
        let file = path.display().to_string();
        let scenario = load_scenario(&path).unwrap();
        let expected = resolve_policy_for_scenario_file(&scenario.pool.policy, &path).unwrap_err();
        let v = call(run_json, json!({"scenario": text, "file": file}));
        assert_eq!(v["error"], expected.to_string().as_str());
        let line = text
            .lines()
            .position(|l| l.starts_with("policy ="))
            .unwrap()
            + 1;
        assert_eq!(v["diagnostics"][0]["line"], line, "{v}");
        // A policy given by the page is resolved as `--policy` resolves it.
        let v = call(
            run_json,
            json!({"scenario": SEED_001, "policies": ["net99"]}),
        );
        let expected = poolsim_analysis::policy_file::resolve_policy("net99").unwrap_err();
        assert_eq!(v["error"], expected.to_string().as_str());
        assert!(v["diagnostics"][0]["line"].is_null());
    }

    #[test]
    fn two_policies_are_two_panels_on_one_axis() {
        let v = call(
            run_json,
            json!({"scenario": SEED_001, "policies": [null, "net6"]}),
        );
        assert_eq!(v["ok"], true, "{v}");
        let names: Vec<&str> = v["report"]["panels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["net-classic", "net6"]);
        assert_eq!(v["runs"][1]["policy"], "net6");
        assert_eq!(v["runs"][1]["model"], "net6");
        let v = call(
            run_json,
            json!({"scenario": SEED_001, "policies": ["net6", "net8", "mono"]}),
        );
        assert_eq!(v["ok"], false);
        assert!(
            v["error"].as_str().unwrap().contains("at most 2 policies"),
            "{v}"
        );
    }

    #[test]
    fn the_slider_s_seed_is_that_run_of_the_distribution() {
        let scenario = include_str!("../../../scenarios/seed-000-task-run.toml");
        let s = call(spread_json, json!({"scenario": scenario, "runs": 8}));
        assert_eq!(s["ok"], true, "{s}");
        let spread = &s["spreads"][0];
        assert_eq!(spread["runs"], 8);
        let per_run = spread["per_run"].as_array().unwrap();
        let first = spread["first_seed"].as_u64().unwrap();
        assert_eq!(per_run.len(), 8);
        for (k, r) in per_run.iter().enumerate() {
            assert_eq!(r["seed"].as_u64().unwrap(), first + k as u64);
            let v = call(run_json, json!({"scenario": scenario, "seed_offset": k}));
            let run = &v["runs"][0];
            assert_eq!(run["seed"], r["seed"]);
            // No random arrivals: the workload is the same in every run.
            assert_eq!(run["workload_seed"].as_u64().unwrap(), first);
            assert_eq!(
                run["summary"]["makespan_ms"], r["makespan_ms"],
                "seed {}",
                r["seed"]
            );
            assert_eq!(run["summary"]["threads_peak"], r["threads_peak"]);
        }
        let lines = spread["outcome_lines"].as_array().unwrap();
        assert!(lines[0].as_str().unwrap().contains("% of runs"), "{spread}");

        // Poisson arrivals: run k draws its own, from workload seed W + k.
        let poisson = "seed = 7\n[machine]\ncores = 2\n[pool]\npolicy = \"net8\"\n\
            [[group]]\nname = \"requests\"\ncount = 40\n\
            arrival = { poisson_per_s = 100 }\nbody = [ { cpu_ms = 1 }, { wait_ms = 20 } ]\n";
        let s = call(spread_json, json!({"scenario": poisson, "runs": 4}));
        assert_eq!(s["ok"], true, "{s}");
        let per_run = s["spreads"][0]["per_run"].as_array().unwrap().clone();
        let mut makespans = Vec::new();
        for (k, r) in per_run.iter().enumerate() {
            let v = call(run_json, json!({"scenario": poisson, "seed_offset": k}));
            let run = &v["runs"][0];
            assert_eq!(run["seed"].as_u64().unwrap(), 7 + k as u64);
            assert_eq!(run["workload_seed"].as_u64().unwrap(), 7 + k as u64);
            assert_eq!(run["summary"]["makespan_ms"], r["makespan_ms"]);
            makespans.push(r["makespan_ms"].as_f64().unwrap());
        }
        makespans.dedup();
        assert!(makespans.len() > 1, "the draws differ: {makespans:?}");

        let v = call(spread_json, json!({"scenario": scenario, "runs": 0}));
        assert!(
            v["error"]
                .as_str()
                .unwrap()
                .contains("runs must be 1 to 1000"),
            "{v}"
        );
    }

    #[test]
    fn limits_stop_a_run_and_it_says_so() {
        let v = call(run_json, json!({"scenario": SEED_001, "max_events": 20}));
        let run = &v["runs"][0];
        assert_eq!(run["outcome"], "event-budget", "{run}");
        assert!(run["verdict"].is_null());
        let text = run["summary_text"].as_str().unwrap();
        assert!(
            text.contains("INCOMPLETE    event budget of 20 events"),
            "{text}"
        );
        let v = call(run_json, json!({"scenario": SEED_001, "until_ms": 2000}));
        assert_eq!(v["runs"][0]["outcome"], "time-limit");
        assert!(v["runs"][0]["late_starts"]["count"].as_u64().unwrap() >= 4);
        let v = call(run_json, json!({"scenario": SEED_001, "colour": 1}));
        assert!(
            v["error"]
                .as_str()
                .unwrap()
                .contains("unknown field `colour`"),
            "{v}"
        );
    }
}
