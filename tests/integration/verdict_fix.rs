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

/// The same service under .NET 8: the pool compensates the blocked waits
/// (cooperative blocking) and still starves, since each wait's timer
/// callback queues behind the requests; the verdict names the finding and
/// its fix is the smallest minimum under which the run is not starved.
#[test]
fn net8_blocked_waits_get_a_verdict_and_the_smallest_fix() {
    let run = |n: Option<u32>| {
        let text = SERVICE.replace("coreclr3", "net8");
        let mut scenario = parse_scenario(&text, "service.toml").unwrap();
        scenario.pool.min_threads = n;
        let policy = resolve_policy(&scenario.pool.policy).unwrap();
        let run = engine::simulate(&scenario, &policy, &mut NullSink, &SimOptions::default());
        assert!(run.outcome.is_completed());
        starvation_verdict(&scenario, &policy, &run.trace)
    };
    let verdict = run(None);
    assert!(verdict.starved, "{:?}", verdict.text);
    assert_eq!(
        verdict.finding,
        Some(poolsim::verdict::Finding::BlockedWaits),
        "{:?}",
        verdict.text
    );
    assert!(
        verdict.text[0].contains("cooperative blocking"),
        "{:?}",
        verdict.text
    );
    let n = fix_value(&verdict);
    assert!(!run(Some(n)).starved, "{n} is enough");
    assert!(run(Some(n - 1)).starved, "{} is not", n - 1);
}

/// `sweep --best 'minimize pool.min_threads subject to …'` answers with
/// the verdict's search: under each policy, asked whether the run is
/// starved, it finds the verdict's value; asked for a p99 latency, the
/// smallest value that gives it.
#[test]
fn the_sweep_finds_the_smallest_minimum_per_policy() {
    use poolsim::sweep::grid::parse_set;
    use poolsim::sweep::run::SweepInput;
    use poolsim::sweep::smallest::{SmallestQuestion, answer};
    let input = SweepInput {
        scenario_text: SERVICE.to_string(),
        scenario_file: "service.toml".to_string(),
        axes: vec![parse_set("pool.min_threads=1..64:*2").unwrap()],
        policies: vec!["net8".into(), "coreclr3".into()],
        seeds: 1,
        arrivals: Default::default(),
    };
    let q = SmallestQuestion::parse(
        "minimize pool.min_threads subject to latency_p99_ms < 100",
        &["pool.min_threads"],
    )
    .unwrap()
    .unwrap();
    let answers = answer(&input, &q).unwrap();
    assert_eq!(answers.len(), 2);
    for a in &answers {
        let t = a.found.smallest.as_ref().unwrap_or_else(|| panic!("{a:?}"));
        let below = a.found.below.as_ref().unwrap();
        // Between the grid's points, and one less misses.
        assert_eq!(below.value + 1, t.value, "{a:?}");
        assert_eq!((t.met, below.met), (1, 0), "{a:?}");
        assert!(t.latency_p99_ms[0].unwrap() < 100.0);
        assert!(below.latency_p99_ms[0].unwrap() >= 100.0);
        // The verdict's fix for the same policy.
        let text = SERVICE.replace("coreclr3", &a.policy);
        let scenario = parse_scenario(&text, "service.toml").unwrap();
        let policy = resolve_policy(&a.policy).unwrap();
        let run = engine::simulate(&scenario, &policy, &mut NullSink, &SimOptions::default());
        let v = starvation_verdict(&scenario, &policy, &run.trace);
        assert_eq!(fix_value(&v), t.value, "{}: {:?}", a.policy, v.text);
    }
    assert_ne!(
        answers[0].found.smallest.as_ref().unwrap().value,
        answers[1].found.smallest.as_ref().unwrap().value,
        "the policies differ"
    );
}

fn fix_value(verdict: &poolsim::verdict::Verdict) -> u32 {
    let fix = verdict
        .fixes
        .iter()
        .find(|f| f.setting.starts_with("ThreadPool.SetMinThreads("))
        .unwrap_or_else(|| panic!("{:?}", verdict.text));
    fix.setting
        .trim_start_matches("ThreadPool.SetMinThreads(")
        .split(',')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// `sweep --best 'minimize pool.min_threads subject to …'` and `advise
/// --goal …` are one question asked two ways: over the same runs (seeds
/// `seed + k`, each with its own draw of the Poisson arrivals) and the same
/// range, they give the same smallest minimum and the same value below it,
/// per policy.
#[test]
fn the_sweep_and_advise_give_the_same_minimum_over_many_runs() {
    use poolsim::advise::{AdviseOptions, RemedyKind, advise, parse_goal};
    use poolsim::scenario::ArrivalDraws;
    use poolsim::sweep::grid::parse_set;
    use poolsim::sweep::run::SweepInput;
    use poolsim::sweep::smallest::{SmallestQuestion, answer};
    const GOAL: &str = "latency_p99_ms < 100";
    const RUNS: u32 = 6;
    // advise searches from one above the pool's minimum (4, the cores) to
    // 1024: the sweep is given the same range.
    let input = SweepInput {
        scenario_text: SERVICE.to_string(),
        scenario_file: "service.toml".to_string(),
        axes: vec![parse_set("pool.min_threads=5,1024").unwrap()],
        policies: vec!["net8".into(), "coreclr3".into()],
        seeds: RUNS,
        arrivals: ArrivalDraws::PerRun,
    };
    let q = SmallestQuestion::parse(
        &format!("minimize pool.min_threads subject to {GOAL}"),
        &["pool.min_threads"],
    )
    .unwrap()
    .unwrap();
    for a in answer(&input, &q).unwrap() {
        let text = SERVICE.replace("coreclr3", &a.policy);
        let scenario = parse_scenario(&text, "service.toml").unwrap();
        let policy = resolve_policy(&a.policy).unwrap();
        let advice = advise(
            &scenario,
            &policy,
            &AdviseOptions {
                runs: RUNS as usize,
                criterion: parse_goal(Some(GOAL)).unwrap(),
                arrivals: ArrivalDraws::PerRun,
            },
        );
        let r = advice
            .remedies
            .iter()
            .find(|r| r.kind == RemedyKind::MinThreads)
            .unwrap_or_else(|| panic!("{}", advice.text()));
        let swept = a.found.smallest.as_ref().unwrap_or_else(|| panic!("{a:?}"));
        assert!(r.meets, "{}", advice.text());
        assert_eq!(
            r.trial.value,
            swept.value,
            "{}: {}",
            a.policy,
            advice.text()
        );
        // The same runs (their figures), and the same value below (advise
        // stops replaying a value once it cannot meet the goal, so only the
        // value is compared).
        assert_eq!(r.trial.latency_p99_ms, swept.latency_p99_ms, "{}", a.policy);
        assert_eq!(
            r.below.as_ref().map(|b| b.value),
            a.found.below.as_ref().map(|b| b.value),
            "{}",
            a.policy
        );
    }
}
