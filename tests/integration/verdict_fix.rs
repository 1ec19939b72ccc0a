//! The verdict's `SetMinThreads` fix is the smallest minimum that removes
//! the starvation signature, the value a sweep over the minimum finds too.

use poolsim::engine::{self, SimOptions};
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::load::parse_scenario;
use poolsim::trace::NullSink;
use poolsim::verdict::starvation_verdict;

/// A service: 4 cores, 200 requests a second, each `.Result` on a 50 ms
/// call between two 1 ms steps of CPU.
const SERVICE: &str = "name = \"service\"\n[machine]\ncores = 4\n[pool]\npolicy = \"coreclr3\"\n\
    [[group]]\nname = \"requests\"\ncount = 3000\narrival = { poisson_per_s = 200 }\n\
    body = [ { cpu_ms = 1 }, { wait_ms = 50 }, { cpu_ms = 1 } ]\n";

fn with_min(n: Option<u32>) -> poolsim::verdict::Verdict {
    let mut scenario = parse_scenario(SERVICE, "service.toml").unwrap();
    scenario.pool.min_threads = n;
    let policy = resolve_policy(&scenario.pool.policy).unwrap();
    let run = engine::simulate(&scenario, &policy, &mut NullSink, &SimOptions::default());
    assert!(run.outcome.is_completed());
    starvation_verdict(&scenario, &policy, &run.trace)
}

#[test]
fn the_min_threads_fix_is_the_smallest_that_removes_the_signature() {
    let verdict = with_min(None);
    assert!(verdict.starved, "{:?}", verdict.text);
    let fix = verdict
        .fixes
        .iter()
        .find(|f| f.setting.starts_with("ThreadPool.SetMinThreads("))
        .unwrap_or_else(|| panic!("{:?}", verdict.text));
    let n: u32 = fix
        .setting
        .trim_start_matches("ThreadPool.SetMinThreads(")
        .split(',')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(!with_min(Some(n)).starved, "{n} is enough");
    assert!(with_min(Some(n - 1)).starved, "{} is not", n - 1);
}
