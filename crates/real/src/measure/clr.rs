//! Running a plan on a real CLR: Mono 6.8, .NET Core 3.1 or .NET 8.
//!
//! Finds the runtimes (`$POOLSIM_RUNTIMES`, else `./runtimes`, else the
//! `runtimes/` folder of the source tree; Mono and `mcs` on `PATH`), compiles
//! the harness carried in this binary (`harness.cs`) with `mcs` into a cache
//! folder on first use, writes the plan and the runtime's configuration,
//! starts the runtime in its own process group under a wall-clock watchdog,
//! and reads its measured trace back. A run that passes its limit, or a
//! Ctrl-C, kills the whole process group: nothing is left behind.
//!
//! A .NET 8 run also records the runtime's own account of its pool: the
//! runtime writes an EventPipe trace of the thread-pool events itself, from
//! environment variables alone ([`EVENT_PIPE_CONFIG`]), and the run's
//! [`Measured::account`] holds its goal changes with their reasons on the
//! run's time axis. .NET Core 3.1.23 crashes (SIGSEGV in
//! `EventPipeFile::EventPipeFile`, before `Main`) with any EventPipe file
//! session (`tests/fixtures/nettrace/README.md`), so its runs record none;
//! Mono has no EventPipe.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::measured::{self, Measured};
use super::{MeasureError, Runtime};
use crate::policy::PolicyConfig;
use crate::scenario::Scenario;

/// The harness source, compiled on first use.
pub const HARNESS_SOURCE: &str = include_str!("harness.cs");

/// The EventPipe session of a .NET 8 run: the runtime provider's threading
/// keyword (0x10000) at level 4 (Informational: worker thread start/stop,
/// `ThreadPoolWorkerThreadAdjustmentAdjustment`, min/max threads; not the
/// verbose per-item enqueue/dequeue events, which would slow every item).
pub const EVENT_PIPE_CONFIG: &str = "Microsoft-Windows-DotNETRuntime:0x10000:4";

/// The script that installs the runtimes, named in every "missing" message.
pub const INSTALL_HINT: &str = "scripts/install-runtimes.sh";

/// Process groups of runs in flight, killed by [`kill_all`] (Ctrl-C).
static LIVE: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Kills every runtime process group still running (for a Ctrl-C handler).
pub fn kill_all() {
    if let Ok(live) = LIVE.lock() {
        for &pgid in live.iter() {
            // SAFETY: kill(2) with a negative pid signals a process group we created.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
}

/// Where the .NET runtimes are installed.
pub fn runtimes_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("POOLSIM_RUNTIMES") {
        return PathBuf::from(d);
    }
    let local = PathBuf::from("runtimes");
    if local.is_dir() {
        return local;
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../runtimes")
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The `dotnet` host of a .NET runtime.
fn dotnet_host(rt: Runtime) -> Result<PathBuf, MeasureError> {
    let inner = match rt {
        Runtime::Coreclr3 => "coreclr3/dotnetcore2/bin/dotnet",
        Runtime::Net8 => "net8/dnv/net/runtime/.net/dotnet",
        _ => unreachable!("only .NET runtimes have a dotnet host"),
    };
    let p = runtimes_dir().join(inner);
    if p.is_file() {
        Ok(p)
    } else {
        Err(MeasureError::Missing {
            runtime: rt.name().into(),
            looked: p.display().to_string(),
            install: format!("{INSTALL_HINT} {}", rt.name()),
        })
    }
}

fn mono_tool(name: &str) -> Result<PathBuf, MeasureError> {
    find_on_path(name).ok_or_else(|| MeasureError::Missing {
        runtime: "mono".into(),
        looked: format!("`{name}` on PATH"),
        install: format!("{INSTALL_HINT} mono"),
    })
}

/// Checks that `rt` is installed (without running anything).
pub fn check_installed(rt: Runtime) -> Result<(), MeasureError> {
    match rt {
        Runtime::Mono => mono_tool("mono").map(|_| ())?,
        Runtime::Coreclr3 | Runtime::Net8 => dotnet_host(rt).map(|_| ())?,
        Runtime::Native => return Ok(()),
    }
    // The harness is compiled with Mono's mcs, whatever runs it.
    mono_tool("mcs").map(|_| ())
}

fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("POOLSIM_CACHE") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("poolsim");
    }
    if let Some(h) = std::env::var_os("HOME") {
        return PathBuf::from(h).join(".cache/poolsim");
    }
    std::env::temp_dir().join("poolsim-cache")
}

fn fnv(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Compiles the harness (once per source version) and returns the folder
/// holding `harness.exe` and `harness.dll`.
pub fn harness_dir() -> Result<PathBuf, MeasureError> {
    let dir = cache_dir().join(format!("harness-{:016x}", fnv(HARNESS_SOURCE)));
    let exe = dir.join("harness.exe");
    let dll = dir.join("harness.dll");
    if exe.is_file() && dll.is_file() {
        return Ok(dir);
    }
    let mcs = mono_tool("mcs")?;
    std::fs::create_dir_all(&dir).map_err(|e| MeasureError::io(&dir, e))?;
    // Build in a private temp folder, then rename into place: two runs
    // compiling at once never see a half-written exe.
    let tmp = dir.join(format!("tmp-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| MeasureError::io(&tmp, e))?;
    let src = tmp.join("harness.cs");
    std::fs::write(&src, HARNESS_SOURCE).map_err(|e| MeasureError::io(&src, e))?;
    let out = Command::new(&mcs)
        .arg("-optimize+")
        .arg("-nowarn:219,414")
        .arg(format!("-out:{}", tmp.join("harness.exe").display()))
        .arg(&src)
        .output()
        .map_err(|e| MeasureError::io(&mcs, e))?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(MeasureError::Compile(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    std::fs::copy(tmp.join("harness.exe"), tmp.join("harness.dll"))
        .map_err(|e| MeasureError::io(&tmp, e))?;
    std::fs::rename(tmp.join("harness.dll"), &dll).map_err(|e| MeasureError::io(&dll, e))?;
    std::fs::rename(tmp.join("harness.exe"), &exe).map_err(|e| MeasureError::io(&exe, e))?;
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(dir)
}

/// The runtimeconfig of a .NET run: the framework, invariant globalization,
/// the scenario's min/max threads and the policy's cooperative-blocking
/// constants (.NET 8 reads `Blocking.*`; 3.1 ignores them).
///
/// `tiered` sets `System.Runtime.TieredCompilation` (the runtimes' default
/// is on, and so is poolsim's: a model predicts the runtime as users run
/// it). On .NET Core 3.1 its call-counting timer fires as pool work during
/// start-up, which starts the gate thread before the workload's first
/// request and so shifts every later gate tick (measured here: a sleep
/// burst's first injection at 0.79-0.80 s with it, 1.004 s without); the
/// coreclr3 model draws that phase (`first_tick_tiered_ms`). Off, the
/// runtime also compiles the harness fully optimised from the start.
pub fn runtime_config(
    rt: Runtime,
    scenario: &Scenario,
    policy: Option<&PolicyConfig>,
    tiered: bool,
) -> String {
    let (tfm, version) = match rt {
        Runtime::Coreclr3 => ("netcoreapp3.1", "3.1.0"),
        _ => ("net8.0", "8.0.0"),
    };
    let mut props = vec![
        (
            "System.Globalization.Invariant".to_string(),
            "true".to_string(),
        ),
        (
            "System.Runtime.TieredCompilation".to_string(),
            tiered.to_string(),
        ),
    ];
    if let Some(n) = scenario.pool.min_threads {
        props.push((
            "System.Threading.ThreadPool.MinThreads".into(),
            n.to_string(),
        ));
    }
    if let Some(n) = scenario.pool.max_threads {
        props.push((
            "System.Threading.ThreadPool.MaxThreads".into(),
            n.to_string(),
        ));
    }
    if rt == Runtime::Net8
        && let Some(b) = policy.and_then(|p| p.blocking.as_ref())
    {
        let key = |k: &str| format!("System.Threading.ThreadPool.Blocking.{k}");
        props.push((
            key("ThreadsToAddWithoutDelay_ProcCountFactor"),
            b.threads_to_add_without_delay_per_core.to_string(),
        ));
        props.push((
            key("ThreadsPerDelayStep_ProcCountFactor"),
            b.threads_per_delay_step_per_core.to_string(),
        ));
        props.push((key("DelayStepMs"), (b.delay_step.0 / 1_000_000).to_string()));
        props.push((key("MaxDelayMs"), (b.max_delay.0 / 1_000_000).to_string()));
    }
    let props: Vec<String> = props.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
    format!(
        "{{\"runtimeOptions\":{{\"tfm\":\"{tfm}\",\"framework\":{{\"name\":\"Microsoft.NETCore.App\",\"version\":\"{version}\"}},\"configProperties\":{{{}}}}}}}\n",
        props.join(",")
    )
}

/// CPUs this process may run on.
pub fn host_cpus() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

/// How the runtime is made to run on `cores` CPUs and see `processors`:
/// `taskset` to the first `cores` CPUs when the host has them (the runtime
/// then counts them); `DOTNET_PROCESSOR_COUNT` on .NET 8 for a count other
/// than the CPUs it runs on (more cores than the host has, or a scenario's
/// `machine.processors`); an error where neither works.
fn core_settings(
    rt: Runtime,
    cores: u32,
    processors: u32,
) -> Result<(Option<String>, Option<u32>), MeasureError> {
    let host = host_cpus();
    let pinned = (cores <= host).then(|| {
        if cores == 1 {
            "0".to_string()
        } else {
            format!("0-{}", cores - 1)
        }
    });
    let counted = pinned.is_some() && processors == cores;
    if counted {
        return Ok((pinned, None));
    }
    if rt == Runtime::Net8 {
        return Ok((pinned, Some(processors)));
    }
    let problem = if cores > host {
        format!("the scenario has {cores} cores but this host has {host} CPUs")
    } else {
        format!("the scenario's runtime sees {processors} processors on {cores} cores")
    };
    Err(MeasureError::Unsupported(format!(
        "{problem}; {} cannot be made to see a processor count other than the CPUs it runs on \
         (DOTNET_PROCESSOR_COUNT works on .NET 8 only)",
        rt.name()
    )))
}

/// Options of one real run.
#[derive(Clone, Debug)]
pub struct ClrOptions {
    /// Wall-clock limit; the harness stops itself at this, the watchdog
    /// kills the process group 5 s later.
    pub timeout: Duration,
    /// Thread-count sample period.
    pub sample_us: u64,
    /// Keep the run's plan and output files here (else a temp folder that is removed).
    pub keep_dir: Option<PathBuf>,
    /// .NET's tiered compilation on (the default) or off (see [`runtime_config`]).
    pub tiered_compilation: bool,
}

/// Runs `scenario` once on `rt` (Mono, coreclr3 or net8).
pub fn run(
    rt: Runtime,
    scenario: &Scenario,
    policy: Option<&PolicyConfig>,
    opts: &ClrOptions,
) -> Result<Measured, MeasureError> {
    let plan = super::plan::plan_text(
        scenario,
        policy,
        opts.timeout.as_millis() as u64,
        opts.sample_us,
    )
    .map_err(|e| MeasureError::Unsupported(e.0))?;
    let (cpu_list, processor_count) =
        core_settings(rt, scenario.machine.cores, scenario.machine.processors())?;
    check_installed(rt)?;
    let harness = harness_dir()?;
    let work = match &opts.keep_dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!(
            "poolsim-run-{}-{}",
            std::process::id(),
            RUN_COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        )),
    };
    std::fs::create_dir_all(&work).map_err(|e| MeasureError::io(&work, e))?;
    let plan_path = work.join("plan.txt");
    let out_path = work.join("measured.txt");
    let events_path = work.join("events.nettrace");
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&events_path);
    std::fs::write(&plan_path, &plan).map_err(|e| MeasureError::io(&plan_path, e))?;

    let mut cmd = match &cpu_list {
        Some(list) => {
            let mut c = Command::new("taskset");
            c.arg("-c").arg(list);
            c
        }
        None => Command::new("env"),
    };
    match rt {
        Runtime::Mono => {
            cmd.arg(mono_tool("mono")?).arg(harness.join("harness.exe"));
            if let Some(p) = policy.and_then(|p| p.mono.as_ref())
                && p.threads_per_cpu != 1
            {
                cmd.env("MONO_THREADS_PER_CPU", p.threads_per_cpu.to_string());
            }
        }
        Runtime::Coreclr3 | Runtime::Net8 => {
            let host = dotnet_host(rt)?;
            let rc = work.join("harness.runtimeconfig.json");
            std::fs::write(
                &rc,
                runtime_config(rt, scenario, policy, opts.tiered_compilation),
            )
            .map_err(|e| MeasureError::io(&rc, e))?;
            cmd.env("DOTNET_ROOT", host.parent().unwrap_or(Path::new(".")))
                .env("DOTNET_CLI_TELEMETRY_OPTOUT", "1")
                .arg(&host)
                .arg("exec")
                .arg("--runtimeconfig")
                .arg(&rc)
                .arg(harness.join("harness.dll"));
            if let Some(n) = processor_count {
                cmd.env("DOTNET_PROCESSOR_COUNT", n.to_string());
            }
            if rt == Runtime::Net8 {
                cmd.env("DOTNET_EnableEventPipe", "1")
                    .env("DOTNET_EventPipeOutputPath", &events_path)
                    .env("DOTNET_EventPipeConfig", EVENT_PIPE_CONFIG)
                    .env("DOTNET_EventPipeRundown", "0");
            }
        }
        Runtime::Native => unreachable!("the native pool does not run a plan"),
    }
    cmd.arg(&plan_path).arg(&out_path);
    let result = run_watched(cmd, opts.timeout + Duration::from_secs(5));
    let finish = |r: Result<Measured, MeasureError>| {
        if opts.keep_dir.is_none() {
            let _ = std::fs::remove_dir_all(&work);
        }
        r
    };
    let (code, stderr) = match result {
        Ok(v) => v,
        Err(e) => return finish(Err(e)),
    };
    match code {
        Some(0) => {}
        Some(2) => {
            return finish(Err(MeasureError::Unsupported(
                stderr.trim().trim_start_matches("harness: ").to_string(),
            )));
        }
        Some(3) => return finish(Err(MeasureError::TimedOut(opts.timeout))),
        other => {
            return finish(Err(MeasureError::Harness {
                runtime: rt.name().into(),
                code: other,
                stderr: stderr.trim().to_string(),
            }));
        }
    }
    let text = match std::fs::read_to_string(&out_path) {
        Ok(t) => t,
        Err(e) => return finish(Err(MeasureError::io(&out_path, e))),
    };
    let groups: Vec<String> = scenario.groups.iter().map(|g| g.name.clone()).collect();
    let parsed = measured::parse(
        &text,
        &groups,
        &scenario.name,
        rt.name(),
        scenario.seed,
        scenario.machine.cores,
    )
    .map_err(|e| MeasureError::Harness {
        runtime: rt.name().into(),
        code: Some(0),
        stderr: e.to_string(),
    })
    .map(|mut m| {
        if let Ok(bytes) = std::fs::read(&events_path) {
            attach_events(&mut m, bytes);
        }
        m
    });
    finish(parsed)
}

/// Keeps a run's EventPipe trace and reads the runtime's account from it
/// (on the run's time axis when the run has a `clock`), and gives the
/// measured thread-count samples the runtime's goal at their time and the
/// measured threads the reasons they are owed to. An
/// unreadable trace is kept and said on stderr; the run itself stands.
pub fn attach_events(m: &mut Measured, bytes: Vec<u8>) {
    match crate::nettrace::PoolTimeline::read(&bytes[..]) {
        Ok(timeline) => {
            m.account = m
                .clock
                .map(|clock| crate::account::Account::from_timeline(&timeline, clock));
            // The measured thread counts carry the runtime's goal beside
            // them, and each thread the reason it is owed to (threads in
            // order of their first item: the k-th exists for the goal's
            // raise past k).
            if let Some(a) = &m.account {
                for c in &mut m.trace.counts {
                    c.goal = a.goal_at(c.at.as_ms_f64());
                }
                for (k, t) in m.trace.threads.iter_mut().enumerate() {
                    // A thread's first item starts a little after its creation.
                    let seen = t.created.as_ms_f64() + 5.0;
                    if let Some(r) = a.thread_reason(k as u32, seen) {
                        t.reason = r;
                    }
                }
            }
        }
        Err(e) => eprintln!("note: the runtime's event trace could not be read: {e}"),
    }
    m.events_file = Some(bytes);
}

static RUN_COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Runs `cmd` in a new process group; kills the group after `limit`.
/// Returns the exit code (None: killed by a signal) and stderr.
fn run_watched(mut cmd: Command, limit: Duration) -> Result<(Option<i32>, String), MeasureError> {
    use std::os::unix::process::CommandExt;
    let program = format!("{:?}", cmd.get_program());
    cmd.process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| MeasureError::io(Path::new(&program), e))?;
    let pgid = child.id() as i32;
    if let Ok(mut live) = LIVE.lock() {
        live.push(pgid);
    }
    // Drain stderr on a thread so a chatty runtime never blocks on a full pipe.
    let mut err_pipe = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(p) = err_pipe.as_mut() {
            use std::io::Read;
            let _ = p.read_to_string(&mut s);
        }
        s
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() > limit => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break None,
        }
    };
    // Whatever happened, nothing of the group survives the run.
    // SAFETY: signals the process group created above.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
    let status = match status {
        Some(s) => s,
        None => {
            let _ = child.wait();
            if let Ok(mut live) = LIVE.lock() {
                live.retain(|&p| p != pgid);
            }
            return Err(MeasureError::TimedOut(limit));
        }
    };
    if let Ok(mut live) = LIVE.lock() {
        live.retain(|&p| p != pgid);
    }
    let stderr = reader.join().unwrap_or_default();
    Ok((status.code(), stderr))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load::parse_scenario;

    #[test]
    fn runtime_config_carries_threads_and_blocking_constants() {
        let s = parse_scenario(
            "[machine]\ncores = 2\n[pool]\npolicy = \"net8\"\nmin_threads = 12\n[[group]]\ncount = 1\nbody = [ { sleep_ms = 1 } ]\n",
            "t.toml",
        )
        .unwrap();
        let p = crate::policy_file::resolve_policy("net8").unwrap();
        let rc = runtime_config(Runtime::Net8, &s, Some(&p), false);
        let v: serde_json::Value = serde_json::from_str(&rc).unwrap();
        let props = &v["runtimeOptions"]["configProperties"];
        assert_eq!(props["System.Threading.ThreadPool.MinThreads"], 12);
        assert_eq!(
            props["System.Threading.ThreadPool.Blocking.DelayStepMs"],
            serde_json::json!(p.blocking.as_ref().unwrap().delay_step.0 / 1_000_000)
        );
        assert_eq!(v["runtimeOptions"]["framework"]["version"], "8.0.0");
        assert_eq!(props["System.Runtime.TieredCompilation"], false);
        let rc3 = runtime_config(Runtime::Coreclr3, &s, Some(&p), true);
        assert!(rc3.contains("3.1.0") && !rc3.contains("Blocking"), "{rc3}");
    }

    #[test]
    fn more_cores_than_the_host_only_work_on_net8() {
        let many = host_cpus() + 2;
        assert!(matches!(
            core_settings(Runtime::Coreclr3, many, many),
            Err(MeasureError::Unsupported(_))
        ));
        assert_eq!(
            core_settings(Runtime::Net8, many, many).unwrap(),
            (None, Some(many))
        );
        assert_eq!(
            core_settings(Runtime::Mono, 1, 1).unwrap(),
            (Some("0".into()), None)
        );
    }

    #[test]
    fn a_processor_count_apart_from_the_cores_only_works_on_net8() {
        // One CPU seen as 8 processors: pinned to CPU 0, told 8.
        assert_eq!(
            core_settings(Runtime::Net8, 1, 8).unwrap(),
            (Some("0".into()), Some(8))
        );
        for rt in [Runtime::Coreclr3, Runtime::Mono] {
            let Err(MeasureError::Unsupported(why)) = core_settings(rt, 1, 8) else {
                panic!("{} accepted 8 processors on 1 core", rt.name());
            };
            assert!(
                why.contains("8 processors on 1 cores") && why.contains(".NET 8 only"),
                "{why}"
            );
        }
    }

    #[test]
    fn a_hung_process_is_killed_at_its_limit() {
        // A shell that starts a grandchild and hangs: its group is killed.
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg("sleep 30 & sleep 30");
        let started = Instant::now();
        let r = run_watched(cmd, Duration::from_millis(300));
        assert!(matches!(r, Err(MeasureError::TimedOut(_))));
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(LIVE.lock().unwrap().is_empty());
    }
}
