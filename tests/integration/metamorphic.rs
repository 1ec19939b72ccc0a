//! Metamorphic checks: relations between runs that must hold whatever the
//! numbers are.

use proptest::prelude::*;

use poolsim::engine::{self, RunResult, SimOptions};
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::load::parse_scenario;
use poolsim::time::SimTime;
use poolsim::trace::NullSink;

fn run(text: &str, policy: &str) -> RunResult {
    let s = parse_scenario(text, "meta.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let p = resolve_policy(policy).unwrap();
    let r = engine::simulate(&s, &p, &mut NullSink, &SimOptions::default());
    assert!(r.outcome.is_completed(), "{:?}\n{text}", r.outcome);
    r
}

fn last_end(r: &RunResult) -> SimTime {
    r.trace.items.iter().map(|i| i.finished).max().unwrap()
}

proptest! {
    #![proptest_config(crate::common::proptest_config(200))]

    /// Under dedicated threads a pure-sleep burst ends at its last arrival
    /// plus the thread start cost plus the sleep.
    #[test]
    fn dedicated_sleep_burst_ends_at_last_arrival_plus_start_plus_sleep(
        cores in 1u32..8, count in 1u64..60, every in 0u64..50, sleep in 1u64..500, seed in 0u64..1_000_000_000_000
    ) {
        let arrival = if every == 0 { "{ at_ms = 0 }".to_string() } else { format!("{{ every_ms = {every} }}") };
        let text = format!(
            "seed = {seed}\n[machine]\ncores = {cores}\n[pool]\npolicy = \"dedicated-threads\"\n\
             [[group]]\ncount = {count}\narrival = {arrival}\nbody = [ {{ sleep_ms = {sleep} }} ]\n"
        );
        let r = run(&text, "dedicated-threads");
        let policy = resolve_policy("dedicated-threads").unwrap();
        let start = policy.threads.start_latency.min();
        let last_arrival = SimTime::from_ms(every * (count - 1));
        let expected = last_arrival + start + poolsim::time::SimDuration::from_ms(sleep);
        prop_assert_eq!(last_end(&r), expected);
    }

    /// Under dedicated threads, more cores never slow a CPU-only scenario.
    #[test]
    fn dedicated_cpu_work_never_slows_with_more_cores(
        cores in 1u32..8, extra in 1u32..8, count in 1u64..40, work in 1u64..80, seed in 0u64..1_000_000_000_000
    ) {
        let text = |c: u32| format!(
            "seed = {seed}\n[machine]\ncores = {c}\n[pool]\npolicy = \"dedicated-threads\"\n\
             [[group]]\ncount = {count}\nbody = [ {{ cpu_ms = {work} }} ]\n"
        );
        let fewer = last_end(&run(&text(cores), "dedicated-threads"));
        let more = last_end(&run(&text(cores + extra), "dedicated-threads"));
        prop_assert!(more <= fewer, "{} cores: {:?}, {} cores: {:?}", cores, fewer, cores + extra, more);
    }

    /// Raising min_threads never delays the first start of a burst, under
    /// every policy that honours SetMinThreads.
    #[test]
    fn raising_min_threads_never_delays_the_first_start(
        cores in 1u32..8, min in 1u32..16, raise in 1u32..32, count in 1u64..60,
        which in 0usize..6, sleep in 1u64..1000, seed in 0u64..1_000_000_000_000
    ) {
        let policy = ["net-classic", "coreclr3-linux", "net6", "net8", "net20-sp1", "net20"][which];
        let text = |m: u32| format!(
            "seed = {seed}\n[machine]\ncores = {cores}\n[pool]\npolicy = \"{policy}\"\nmin_threads = {m}\n\
             [[group]]\ncount = {count}\nbody = [ {{ sleep_ms = {sleep} }} ]\n"
        );
        let first = |r: &RunResult| r.trace.items.iter().map(|i| i.started).min().unwrap();
        let low = first(&run(&text(min), policy));
        let high = first(&run(&text(min + raise), policy));
        prop_assert!(high <= low, "{}: min {} first start {:?}, min {} {:?}", policy, min, low, min + raise, high);
    }
}
