//! Real runs: a scenario executed on a real thread pool (Mono, .NET Core
//! 3.1, .NET 8 through the CLR harness, or the native Rust pool), read back
//! into the simulator's own [`crate::trace::Trace`].

pub mod clr;
pub mod measured;
pub mod native;
pub mod plan;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::policy::PolicyConfig;
use crate::scenario::Scenario;
use measured::Measured;

/// A real thread pool to run a scenario on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Runtime {
    /// Mono 6.8 (Debian's `mono-runtime`).
    Mono,
    /// .NET Core 3.1.23: the classic native pool of .NET Core 3.x / .NET 5.
    Coreclr3,
    /// .NET 8.0.4: the portable managed pool of .NET 6 and later.
    Net8,
    /// poolsim's own pool on OS threads, driven by a policy model.
    Native,
}

impl Runtime {
    pub const ALL: [Runtime; 4] = [
        Runtime::Mono,
        Runtime::Coreclr3,
        Runtime::Net8,
        Runtime::Native,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Runtime::Mono => "mono",
            Runtime::Coreclr3 => "coreclr3",
            Runtime::Net8 => "net8",
            Runtime::Native => "native",
        }
    }

    pub fn parse(s: &str) -> Option<Runtime> {
        Runtime::ALL.into_iter().find(|r| r.name() == s)
    }

    /// The policy that models this runtime's pool (`None`: native, which
    /// runs the policy it is given).
    pub fn policy(self) -> Option<&'static str> {
        match self {
            Runtime::Mono => Some("mono"),
            Runtime::Coreclr3 => Some("coreclr3-linux"),
            Runtime::Net8 => Some("net8"),
            Runtime::Native => None,
        }
    }
}

/// Why a real run did not give a trace.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    #[error("{runtime} is not installed (looked for {looked}); install it with `{install}`")]
    Missing {
        runtime: String,
        looked: String,
        install: String,
    },
    #[error("cannot run this scenario for real: {0}")]
    Unsupported(String),
    #[error("compiling the harness with mcs failed:\n{0}")]
    Compile(String),
    #[error("the run passed its wall-clock limit of {0:?} and was killed")]
    TimedOut(Duration),
    #[error("{runtime} failed (exit {code:?}): {stderr}")]
    Harness {
        runtime: String,
        code: Option<i32>,
        stderr: String,
    },
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

impl MeasureError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> MeasureError {
        MeasureError::Io {
            path: path.display().to_string(),
            source,
        }
    }
}

/// Options of a measurement.
#[derive(Clone, Debug)]
pub struct MeasureOptions {
    /// Wall-clock limit of one run.
    pub timeout: Duration,
    /// Thread-count sample period.
    pub sample: Duration,
    /// .NET's tiered compilation (on by default, as users run it; see
    /// [`clr::runtime_config`]).
    pub tiered_compilation: bool,
}

impl Default for MeasureOptions {
    fn default() -> Self {
        MeasureOptions {
            timeout: Duration::from_secs(300),
            sample: Duration::from_millis(10),
            tiered_compilation: true,
        }
    }
}

/// Runs `scenario` once on `runtime`. `policy`: the policy the native pool
/// runs (required for native), or whose settings a CLR run applies
/// (min threads, `Blocking.*`, `MONO_THREADS_PER_CPU`, a default throttle).
pub fn measure_once(
    runtime: Runtime,
    scenario: &Scenario,
    policy: Option<&PolicyConfig>,
    opts: &MeasureOptions,
) -> Result<Measured, MeasureError> {
    match runtime {
        Runtime::Native => {
            let policy = policy.ok_or_else(|| {
                MeasureError::Unsupported("the native pool needs a policy to run".into())
            })?;
            let trace = native::run_native(
                scenario,
                policy,
                &native::NativeOptions {
                    timeout: opts.timeout,
                    sample_every: opts.sample,
                },
            )
            .map_err(|e| match e {
                native::NativeError::TimedOut(d) => MeasureError::TimedOut(d),
                other => MeasureError::Unsupported(other.to_string()),
            })?;
            Ok(Measured {
                trace,
                runtime_version: format!("poolsim native pool {}", env!("CARGO_PKG_VERSION")),
                processors: scenario.machine.cores,
                threads_source: "native".into(),
                header: Vec::new(),
                complete: true,
                clock: None,
                account: None,
                events_file: None,
                completed: Vec::new(),
            })
        }
        rt => clr::run(
            rt,
            scenario,
            policy,
            &clr::ClrOptions {
                timeout: opts.timeout,
                sample_us: opts.sample.as_micros() as u64,
                keep_dir: None,
                tiered_compilation: opts.tiered_compilation,
            },
        ),
    }
}

/// `scenario` as `runs` ran it: tiered compilation off when every run
/// says it had it off (their `# settings:` header), else as the scenario
/// says.
pub fn as_recorded(scenario: &Scenario, runs: &[Measured]) -> Scenario {
    let mut s = scenario.clone();
    if !runs.is_empty() && runs.iter().all(|m| m.tiered_compilation() == Some(false)) {
        s.pool.tiered_compilation = false;
    }
    s
}

/// Reads the recorded runs of `runtime` in `dir`, in file-name order.
/// A run's EventPipe trace, when it was recorded, is the `.nettrace` file
/// of the same name beside it (`net8-1.nettrace`).
pub fn read_recorded(
    dir: &Path,
    runtime: Runtime,
    scenario: &Scenario,
) -> Result<Vec<Measured>, String> {
    let prefix = format!("{}-", runtime.name());
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("error: {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "txt")
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!(
            "error: no recorded {} runs ({}*.txt) in {}",
            runtime.name(),
            prefix,
            dir.display()
        ));
    }
    let groups: Vec<String> = scenario.groups.iter().map(|g| g.name.clone()).collect();
    files
        .iter()
        .map(|f| {
            let text =
                std::fs::read_to_string(f).map_err(|e| format!("error: {}: {e}", f.display()))?;
            let mut m = measured::parse(
                &text,
                &groups,
                &scenario.name,
                runtime.name(),
                scenario.seed,
                scenario.machine.cores,
            )
            .map_err(|e| format!("error: {}: {e}", f.display()))?;
            // The runtime's event trace of the same run, when it was kept.
            if let Ok(bytes) = std::fs::read(f.with_extension("nettrace")) {
                clr::attach_events(&mut m, bytes);
            }
            Ok(m)
        })
        .collect()
}

/// A scenario whose real run passed its wall-clock limit and was killed
/// (`measure --timeout-s`, by default five times the model's makespan plus
/// 30 s): the pool never finished the workload. Nothing of the run is
/// kept but this record, `<runtime>.hung` in the scenario's folder of
/// runs, so that a replay of the set knows the run hung rather than that
/// it was never made. A model agrees when none of its runs completes
/// either (a deadlock: every thread blocked on work only the pool can run).
pub fn hung_record(dir: &Path, runtime: Runtime) -> PathBuf {
    dir.join(format!("{}.hung", runtime.name()))
}

/// The wall-clock limit (s) a recorded run of `runtime` in `dir` hung
/// past, when it did ([`hung_record`]).
pub fn read_hung(dir: &Path, runtime: Runtime) -> Option<f64> {
    let text = std::fs::read_to_string(hung_record(dir, runtime)).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("limit_s "))
        .and_then(|v| v.trim().parse().ok())
}

/// Writes the [`hung_record`] of a run of `scenario_file` on `runtime`
/// that was killed at `limit`.
pub fn write_hung(
    dir: &Path,
    runtime: Runtime,
    scenario_file: &str,
    limit: Duration,
) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = hung_record(dir, runtime);
    let text = format!(
        "# scenario: {scenario_file}\n\
         # runtime: {}\n\
         # A run passed its wall-clock limit and was killed: the pool never finished\n\
         # the workload. No run of it is kept; the runs after it were not made.\n\
         # recorded by: poolsim {}\n\
         limit_s {:.3}\n",
        runtime.name(),
        env!("CARGO_PKG_VERSION"),
        limit.as_secs_f64()
    );
    std::fs::write(&path, text)?;
    Ok(path)
}
