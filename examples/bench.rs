//! The engine's speed and memory, in one run; docs/speed.md's
//! performance figures come from it.
//!
//! cargo build --release && cargo run --release --example bench [-- OPTIONS]
//!
//! Prints:
//! - events/s and items/s of 1 M items arriving all at t = 0 (a backlog) and
//!   spread (`every_ms`), each the median of several runs, with the wall
//!   time of the run (the engine alone: `trace::Discard` keeps no event and
//!   no item record);
//! - the ratio of those events/s to a bare `std::collections::BinaryHeap`
//!   push+pop loop with entries of the engine's size and ~1 k pending,
//!   measured in this process between the runs;
//! - the peak memory (VmHWM) of 1 M and 10 M spread items: of the engine
//!   alone (this binary re-run as a child per case, so each case has its own
//!   peak), of `poolsim run --json`, `--trace`, `--png` and `--chrome` (the
//!   release `poolsim` binary beside this one, run as a child; its peak is
//!   the child's maximum resident set from `wait4`; the Chrome trace of 10 M
//!   items is a 6 GB file and takes minutes);
//! - the peak memory (VmHWM) of `poolsim run` (no outputs) on a backlog
//!   of 10 M and 30 M items queued at t = 0, and the bytes a queued item
//!   costs: the slope between the two, clear of the fixed costs;
//! - the ratio to a SimPy peer (`benches/peer_simpy.py`) at 100 k and 1 M
//!   items, if SimPy is installed.
//!
//! Options: `--quick` (1 M items only for memory, 100 k only for SimPy, 3
//! runs), `--no-simpy`, `--simpy-only` (the SimPy section alone),
//! `--backlog-memory` (the backlog's memory alone). Wall-clock
//! figures depend on the machine and its load:
//! compare figures of one run.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use poolsim::engine::{EVENT_ENTRY_BYTES, SimOptions, simulate};
use poolsim::policy::config::PolicyConfig;
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::Scenario;
use poolsim::scenario::load::parse_scenario;
use poolsim::trace::Discard;

const CORES: u32 = 16;
const CPU_MS: f64 = 5.0;
const EVERY_MS: f64 = 0.5;
const POLICY: &str = "net-classic";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Case {
    /// Every item queued at t = 0.
    Backlog,
    /// One item every `EVERY_MS`.
    Spread,
}

impl Case {
    fn name(self) -> &'static str {
        match self {
            Case::Backlog => "backlog",
            Case::Spread => "spread",
        }
    }
    fn parse(s: &str) -> Option<Case> {
        match s {
            "backlog" => Some(Case::Backlog),
            "spread" => Some(Case::Spread),
            _ => None,
        }
    }
}

fn scenario_text(case: Case, items: u64) -> String {
    let arrival = match case {
        Case::Backlog => "{ at_ms = 0 }".to_string(),
        Case::Spread => format!("{{ every_ms = {EVERY_MS} }}"),
    };
    format!(
        "name = \"bench: {items} x {CPU_MS} ms CPU items, {case}, {CORES} cores\"\n\
         seed = 1\n\n[machine]\ncores = {CORES}\n\n[pool]\npolicy = \"{POLICY}\"\n\n\
         [[group]]\nname = \"cpu\"\ncount = {items}\narrival = {arrival}\n\
         body = [ {{ cpu_ms = {CPU_MS} }} ]\n",
        case = case.name(),
    )
}

fn scenario(case: Case, items: u64) -> Scenario {
    parse_scenario(&scenario_text(case, items), "bench.toml").unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    })
}

fn policy() -> PolicyConfig {
    resolve_policy(POLICY).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    })
}

/// One simulation: (wall seconds, events).
fn time_run(scenario: &Scenario, policy: &PolicyConfig) -> (f64, u64) {
    let start = Instant::now();
    let result = simulate(scenario, policy, &mut Discard, &SimOptions::default());
    let wall = start.elapsed().as_secs_f64();
    assert!(result.outcome.is_completed(), "{:?}", result.outcome);
    (wall, result.events)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// An entry of the bare heap: a (time, sequence) key and a payload, the
/// size of the engine's entries.
const PAYLOAD: usize = (EVENT_ENTRY_BYTES - 16) / 4;
type HeapEntry = std::cmp::Reverse<((u64, u64), [u32; PAYLOAD])>;

/// Push+pop pairs per second of a bare `BinaryHeap` holding `pending`
/// entries: pop the earliest, push one a pseudo-random 0-1 ms later.
fn bare_heap_rate(pending: usize, ops: u64) -> f64 {
    assert_eq!(std::mem::size_of::<HeapEntry>(), EVENT_ENTRY_BYTES);
    let mut heap: std::collections::BinaryHeap<HeapEntry> =
        std::collections::BinaryHeap::with_capacity(pending + 1);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut seq = 0u64;
    for _ in 0..pending {
        seq += 1;
        heap.push(std::cmp::Reverse((
            (next() % 1_000_000, seq),
            [0u32; PAYLOAD],
        )));
    }
    let start = Instant::now();
    let mut sum = 0u64;
    for _ in 0..ops {
        let std::cmp::Reverse(((at, _), payload)) = heap.pop().expect("pending");
        sum = sum.wrapping_add(u64::from(payload[0]));
        seq += 1;
        let payload = [seq as u32; PAYLOAD];
        heap.push(std::cmp::Reverse(((at + next() % 1_000_000, seq), payload)));
    }
    let wall = start.elapsed().as_secs_f64();
    std::hint::black_box(sum);
    ops as f64 / wall
}

/// This process's peak resident set (VmHWM), KiB.
fn vm_hwm_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs `cmd` and returns its exit status and maximum resident set (KiB,
/// from `wait4`) with its wall time.
fn run_measured(cmd: &mut Command) -> Option<(bool, u64, f64)> {
    let start = Instant::now();
    let child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our child, not yet waited for; the pointers are live.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed().as_secs_f64();
    if r != pid {
        return None;
    }
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    Some((ok, usage.ru_maxrss as u64, wall))
}

fn mib(kib: u64) -> String {
    format!("{:.0} MiB", kib as f64 / 1024.0)
}

/// `--child CASE ITEMS`: simulate once without outputs and print VmHWM.
fn child(args: &[String]) -> ! {
    let case = args.first().and_then(|s| Case::parse(s)).expect("case");
    let items: u64 = args.get(1).and_then(|s| s.parse().ok()).expect("items");
    let scenario = scenario(case, items);
    let (wall, events) = time_run(&scenario, &policy());
    println!(
        "peak_kib={} events={events} wall_s={wall:.3}",
        vm_hwm_kib().unwrap_or(0)
    );
    std::process::exit(0)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        child(&args[1..]);
    }
    let quick = args.iter().any(|a| a == "--quick");
    let no_simpy = args.iter().any(|a| a == "--no-simpy");
    let simpy_only = args.iter().any(|a| a == "--simpy-only");
    if args.iter().any(|a| a == "--backlog-memory") {
        backlog_memory();
        return;
    }
    let runs = if quick { 3 } else { 5 };
    let policy = policy();

    println!(
        "poolsim bench: {CPU_MS} ms CPU items on {CORES} cores under {POLICY}; spread = every {EVERY_MS} ms"
    );
    println!("(wall-clock figures depend on the machine and its load; ratios are within this run)");
    println!();
    if !simpy_only {
        // Memory first: a child's peak (`wait4`) starts from this process's
        // own peak (it is spawned sharing this memory until it execs), so
        // the children are measured while this process is still small.
        memory(quick);
        backlog_memory();
        speed(runs, &policy);
    }
    if !no_simpy {
        simpy_peer(quick, &policy);
    }
}

/// The engine's speed against the bare heap.
fn speed(runs: usize, policy: &PolicyConfig) {
    const SPEED_ITEMS: u64 = 1_000_000;
    let heap_ops = 20_000_000;
    let mut heap_rates = vec![bare_heap_rate(1024, heap_ops)];
    let mut speed = Vec::new();
    for case in [Case::Backlog, Case::Spread] {
        let scenario = scenario(case, SPEED_ITEMS);
        let mut walls = Vec::new();
        let mut events = 0;
        for _ in 0..runs {
            let (wall, e) = time_run(&scenario, policy);
            walls.push(wall);
            events = e;
            heap_rates.push(bare_heap_rate(1024, heap_ops / 4));
        }
        speed.push((case, median(walls), events));
    }
    let heap_rate = median(heap_rates);
    println!(
        "bare BinaryHeap, {EVENT_ENTRY_BYTES} B entries, 1024 pending: {:.1} M push+pop/s (median)",
        heap_rate / 1e6
    );
    println!(
        "engine, {SPEED_ITEMS} items, median of {runs} runs (trace::Discard: no event or item kept; no event can go stale):"
    );
    for (case, wall, events) in &speed {
        let rate = *events as f64 / wall;
        println!(
            "  {:8} {:6.3} s  {:>9} events ({:.2}/item)  {:5.1} M events/s = {:.2}x the bare heap  {:5.2} M items/s",
            case.name(),
            wall,
            events,
            *events as f64 / SPEED_ITEMS as f64,
            rate / 1e6,
            rate / heap_rate,
            SPEED_ITEMS as f64 / wall / 1e6,
        );
    }
    println!();
}

/// Peak memory of the engine alone and of `poolsim run` with each output.
fn memory(quick: bool) {
    let exe = std::env::current_exe().expect("current exe");
    let poolsim = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("poolsim"))
        .filter(|p| p.exists());
    let dir = std::env::temp_dir().join(format!("poolsim-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    println!("peak memory (VmHWM), spread items:");
    if let Some(poolsim) = &poolsim
        && let Some((true, kib, _)) = run_measured(Command::new(poolsim).arg("--version"))
    {
        println!("  (floor: `poolsim --version` peaks at {})", mib(kib));
    }
    let sizes: &[u64] = if quick {
        &[1_000_000]
    } else {
        &[1_000_000, 10_000_000]
    };
    for &n in sizes {
        let out = Command::new(&exe)
            .args(["--child", "spread", &n.to_string()])
            .output();
        match out {
            Ok(o) if o.status.success() => {
                let text = String::from_utf8_lossy(&o.stdout);
                let field = |k: &str| {
                    text.split_whitespace()
                        .find_map(|f| f.strip_prefix(k))
                        .unwrap_or("?")
                        .to_string()
                };
                let kib: u64 = field("peak_kib=").parse().unwrap_or(0);
                println!(
                    "  {n:>9} items, engine only (no outputs): {:>9}  ({} s)",
                    mib(kib),
                    field("wall_s=")
                );
            }
            _ => println!("  {n:>9} items, engine only: child failed"),
        }
        let Some(poolsim) = &poolsim else {
            continue;
        };
        let file = dir.join(format!("spread-{n}.toml"));
        std::fs::write(&file, scenario_text(Case::Spread, n)).expect("write scenario");
        let mut outputs: Vec<(&str, Vec<String>)> = vec![
            ("run --json", vec!["--json".into()]),
            (
                "run --trace",
                vec!["--trace".into(), path_arg(&dir.join("trace.csv"))],
            ),
        ];
        outputs.push((
            "run --png",
            vec!["--png".into(), path_arg(&dir.join("chart.png"))],
        ));
        outputs.push((
            "run --chrome",
            vec!["--chrome".into(), path_arg(&dir.join("chrome.json"))],
        ));
        for (label, extra) in outputs {
            let mut cmd = Command::new(poolsim);
            cmd.arg("run").arg(&file).args(&extra);
            match run_measured(&mut cmd) {
                Some((true, kib, wall)) => println!(
                    "  {n:>9} items, poolsim {label:<12} {:>9}  ({wall:.3} s)",
                    mib(kib)
                ),
                _ => println!("  {n:>9} items, poolsim {label}: failed"),
            }
        }
    }
    if poolsim.is_none() {
        println!(
            "  (poolsim binary not found beside the example: run `cargo build --release` first)"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!();
}

/// Peak memory of `poolsim run` (no outputs) on a backlog queued at t = 0,
/// at two sizes, and the bytes a queued item costs from the slope.
fn backlog_memory() {
    const SIZES: [u64; 2] = [10_000_000, 30_000_000];
    let Some(poolsim) = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("poolsim")))
        .filter(|p| p.exists())
    else {
        println!(
            "backlog memory: poolsim binary not found beside the example: run `cargo build --release` first"
        );
        println!();
        return;
    };
    let dir = std::env::temp_dir().join(format!("poolsim-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    println!(
        "peak memory (VmHWM), backlog (every item queued at t = 0), poolsim run without outputs:"
    );
    let mut peaks = Vec::new();
    for n in SIZES {
        let file = dir.join(format!("backlog-{n}.toml"));
        std::fs::write(&file, scenario_text(Case::Backlog, n)).expect("write scenario");
        match run_measured(Command::new(&poolsim).arg("run").arg(&file)) {
            Some((true, kib, wall)) => {
                println!(
                    "  {n:>9} items, poolsim run          {:>9}  ({wall:.3} s)",
                    mib(kib)
                );
                peaks.push((n, kib));
            }
            _ => println!("  {n:>9} items, poolsim run: failed"),
        }
    }
    if let [(n0, k0), (n1, k1)] = peaks[..] {
        let bytes = (k1 as f64 - k0 as f64) * 1024.0 / (n1 - n0) as f64;
        println!("  per queued item (slope {n0} -> {n1} items): {bytes:.1} B");
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!();
}

/// The ratio to the SimPy peer.
fn simpy_peer(quick: bool, policy: &PolicyConfig) {
    let has_simpy = Command::new("python3")
        .args(["-c", "import simpy"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_simpy {
        println!("SimPy peer: SimPy not installed (pip install simpy); skipped");
        return;
    }
    let peer = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peer_simpy.py");
    // The peer models the pool with its gate only: no hill climbing here either.
    let mut gate_only = policy.clone();
    gate_only.hill_climbing.enabled = false;
    println!("SimPy peer (benches/peer_simpy.py; poolsim under {POLICY} without hill climbing):");
    let sizes: &[u64] = if quick {
        &[100_000]
    } else {
        &[100_000, 1_000_000]
    };
    for &n in sizes {
        for case in [Case::Backlog, Case::Spread] {
            let out = Command::new("python3")
                .arg(&peer)
                .args([&n.to_string(), case.name()])
                .args(["--cores", &CORES.to_string()])
                .args(["--cpu-ms", &CPU_MS.to_string()])
                .args(["--every-ms", &EVERY_MS.to_string()])
                .output();
            let simpy_wall = out.ok().filter(|o| o.status.success()).and_then(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .split_whitespace()
                    .find_map(|f| {
                        f.strip_prefix("wall_s=")
                            .and_then(|v| v.parse::<f64>().ok())
                    })
            });
            let scenario = scenario(case, n);
            let ours = median((0..3).map(|_| time_run(&scenario, &gate_only).0).collect());
            match simpy_wall {
                Some(w) => println!(
                    "  {n:>9} items {:8} SimPy {w:7.2} s, poolsim {ours:6.3} s: {:.0}x",
                    case.name(),
                    w / ours
                ),
                None => println!("  {n:>9} items {:8} SimPy peer failed", case.name()),
            }
        }
    }
}

fn path_arg(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}
