//! What the gate's CPU reading is a share of (`[gate] cpu_reading`):
//! .NET Core 3.1 on Linux reads the process's CPU time against the elapsed
//! time alone (the PAL's `PAL_GetCPUBusyTime` scales by the processors
//! only where glibc lacks the functions it tests for), so one busy thread on
//! two cores reads 100 % and the gate takes its busy threshold; the
//! Windows-derived and .NET 6+ readings are a share of all processors.

use poolsim::engine::{self, SimOptions};
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::load::parse_scenario;
use poolsim::trace::{Decision, EventLog, TraceEvent};

/// The gate ticks' (CPU %, busy threshold applied) of one thread computing
/// for 3 s beside sleepers queued behind it, on `cores`, under `policy`;
/// the first tick left out (on some policies it spans time from before the
/// workload).
fn gate_readings(policy: &str, cores: u32) -> Vec<(u32, bool)> {
    let text = format!(
        "seed = 1\n[machine]\ncores = {cores}\n[pool]\npolicy = \"{policy}\"\nmin_threads = {cores}\n\
         tiered_compilation = false\n\
         [[group]]\nname = \"cpu\"\ncount = 1\nbody = [ {{ cpu_ms = 3000 }} ]\n\
         [[group]]\nname = \"sleep\"\ncount = 6\nbody = [ {{ sleep_ms = 2000 }} ]\n"
    );
    let s = parse_scenario(&text, "t.toml").unwrap();
    let p = resolve_policy(policy).unwrap();
    let mut log = EventLog::default();
    engine::simulate(&s, &p, &mut log, &SimOptions::default());
    log.events
        .iter()
        .filter_map(|(at, e)| match e {
            TraceEvent::Decision(Decision::GateTick { check, .. }) if at.as_ms_f64() < 2900.0 => {
                Some((check.cpu_percent, check.cpu_busy))
            }
            _ => None,
        })
        .skip(1)
        .collect()
}

#[test]
fn coreclr3_on_linux_reads_one_busy_thread_of_two_cores_as_100_percent() {
    let linux = gate_readings("coreclr3-linux", 2);
    assert!(!linux.is_empty());
    for (cpu, busy) in &linux {
        assert!((99..=101).contains(cpu) && *busy, "{linux:?}");
    }
    // A share of all processors: half.
    for policy in ["net-classic", "net8", "mono"] {
        let all = gate_readings(policy, 2);
        assert!(!all.is_empty(), "{policy}");
        for (cpu, busy) in &all {
            assert!((49..=51).contains(cpu) && !*busy, "{policy}: {all:?}");
        }
    }
    // On one processor the two readings agree.
    let one: Vec<u32> = gate_readings("coreclr3-linux", 1)
        .iter()
        .map(|r| r.0)
        .collect();
    let classic: Vec<u32> = gate_readings("net-classic", 1)
        .iter()
        .map(|r| r.0)
        .collect();
    assert!(!one.is_empty() && one.iter().all(|&c| c >= 99), "{one:?}");
    assert!(classic.iter().all(|&c| c >= 99), "{classic:?}");
}
