//! A scenario as a plan for the CLR harness (`docs/measure-plan.md`).
//!
//! The plan is what the harness executes on a real runtime: every group's
//! submission shape, origin, throttle, arrival instants (the same instants
//! the engine uses, [`crate::scenario::arrivals`]), body, and the probe.
//! What no runtime can express is refused here, before anything runs.

use std::fmt::Write as _;

use crate::policy::PolicyConfig;
use crate::pool::group_throttle;
use crate::scenario::model::ThrottleKind;
use crate::scenario::{Arrival, Scenario, Step, Submit, Throttle, arrivals};
use crate::time::SimDuration;

/// Why a scenario cannot become a plan.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Unsupported(pub String);

fn us(d: SimDuration) -> u64 {
    // Round to the nearest microsecond.
    (d.0 + 500) / 1000
}

/// Writes the plan of `scenario`. `policy` supplies a wrapping policy's
/// default throttle; `timeout_ms` and `sample_us` bound and sample the run.
pub fn plan_text(
    scenario: &Scenario,
    policy: Option<&PolicyConfig>,
    timeout_ms: u64,
    sample_us: u64,
) -> Result<String, Unsupported> {
    let mut out = String::new();
    let name: String = scenario
        .name
        .chars()
        .map(|c| if c.is_ascii_graphic() { c } else { '_' })
        .collect();
    let _ = writeln!(out, "poolsim-plan 1");
    let _ = writeln!(out, "scenario {name}");
    if let Some(n) = scenario.pool.min_threads {
        let _ = writeln!(out, "min_threads {n}");
    }
    if let Some(n) = scenario.pool.max_threads {
        let _ = writeln!(out, "max_threads {n}");
    }
    let _ = writeln!(out, "timeout_ms {timeout_ms}");
    let _ = writeln!(out, "sample_us {sample_us}");
    for (g, group) in scenario.groups.iter().enumerate() {
        if group.submit == Submit::ParallelForEachAsync {
            return Err(Unsupported(format!(
                "group `{}` uses parallel-foreach-async: Parallel.ForEachAsync is .NET 6+ API, \
                 and the harness is compiled against the .NET Framework 4.x API that all three \
                 runtimes share",
                group.name
            )));
        }
        if group.body.iter().any(|s| matches!(s, Step::FanOut { .. })) {
            return Err(Unsupported(format!(
                "group `{}` has a `fan_out` step, which the harness does not run yet \
                 (examples/apps/fanout.cs is a real program of that shape)",
                group.name
            )));
        }
        let (start_us, after, delay_us) = match &group.arrival {
            Arrival::After { group, delay, .. } => (0, *group as i64, us(*delay)),
            _ => (arrivals::start(scenario, g).map(us).unwrap_or(0), -1, 0),
        };
        let (throttle, limit) = match group_throttle(scenario, g, policy) {
            None => ("none", 0),
            Some(Throttle {
                kind: ThrottleKind::ConcurrentExclusive,
                limit,
            }) => ("concurrent-exclusive", limit),
            Some(Throttle {
                kind: ThrottleKind::Semaphore,
                limit,
            }) => ("semaphore", limit),
        };
        // A timer group also says how many items a firing queues and its period.
        let timer = group.timer().map_or(String::new(), |t| {
            format!(" per_tick={} period_us={}", t.per_tick, us(t.period))
        });
        let _ = writeln!(
            out,
            "group {g} count={} submit={} from={} max_degree={} throttle={throttle} \
             limit={limit} start_us={start_us} after={after} delay_us={delay_us}{timer}",
            group.count,
            group.submit.name(),
            group.from.name(),
            group.max_degree.unwrap_or(0),
        );
        let _ = write!(out, "arrivals {g}");
        if group.submit.one_call() {
            let _ = write!(out, " 0");
        } else {
            for o in arrivals::offsets(scenario, g) {
                let _ = write!(out, " {}", us(o));
            }
        }
        let _ = writeln!(out);
        for step in &group.body {
            let _ = match step {
                Step::Cpu(d) => writeln!(out, "step {g} cpu {}", us(*d)),
                Step::Spin(d) => writeln!(out, "step {g} spin {}", us(*d)),
                Step::Busy(d) => writeln!(out, "step {g} busy {}", us(*d)),
                Step::Sleep(d) => writeln!(out, "step {g} sleep {}", us(*d)),
                Step::Wait(d) => writeln!(out, "step {g} wait {}", us(*d)),
                Step::Await(d) => writeln!(out, "step {g} await {}", us(*d)),
                Step::Yield => writeln!(out, "step {g} yield"),
                Step::FanOut { .. } => unreachable!("refused above"),
            };
        }
    }
    for probe in &scenario.probes {
        let _ = writeln!(out, "probe every_us={}", us(probe.every));
    }
    let _ = writeln!(out, "end");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load::parse_scenario;

    #[test]
    fn a_burst_becomes_groups_arrivals_and_steps() {
        let s = parse_scenario(
            r#"
            [machine]
            cores = 2
            [pool]
            policy = "net-classic"
            min_threads = 4
            [[group]]
            name = "a"
            count = 3
            arrival = { every_ms = 10, start_ms = 5 }
            body = [ { cpu_ms = 1.5 }, { wait_ms = 20 } ]
            [[group]]
            name = "b"
            count = 2
            submit = "parallel-for"
            arrival = { after = "a", delay_ms = 1 }
            body = [ { sleep_ms = 3 } ]
            [[probe]]
            every_ms = 100
            "#,
            "t.toml",
        )
        .unwrap();
        let text = plan_text(&s, None, 1000, 10_000).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "poolsim-plan 1");
        assert!(lines.contains(&"min_threads 4"));
        assert!(lines.contains(
            &"group 0 count=3 submit=task-run from=main max_degree=0 throttle=none limit=0 start_us=5000 after=-1 delay_us=0"
        ));
        assert!(lines.contains(&"arrivals 0 0 10000 20000"));
        assert!(lines.contains(&"step 0 cpu 1500"));
        assert!(lines.contains(&"step 0 wait 20000"));
        assert!(lines.contains(
            &"group 1 count=2 submit=parallel-for from=main max_degree=0 throttle=none limit=0 start_us=0 after=0 delay_us=1000"
        ));
        assert!(lines.contains(&"arrivals 1 0"));
        assert!(lines.contains(&"probe every_us=100000"));
        assert_eq!(*lines.last().unwrap(), "end");
    }

    #[test]
    fn a_timer_group_says_its_burst_and_period() {
        let s = parse_scenario(
            "[machine]\ncores = 2\n[pool]\npolicy = \"net8\"\n[[group]]\ncount = 5\n\
             submit = \"queue-user-work-item\"\nfrom = \"timer\"\nper_tick = 2\n\
             arrival = { every_ms = 500, start_ms = 10 }\nbody = [ { sleep_ms = 1 } ]\n",
            "t.toml",
        )
        .unwrap();
        let text = plan_text(&s, None, 1000, 10_000).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines.contains(
                &"group 0 count=5 submit=queue-user-work-item from=timer max_degree=0 \
                  throttle=none limit=0 start_us=10000 after=-1 delay_us=0 per_tick=2 \
                  period_us=500000"
            ),
            "{text}"
        );
        // Each item at its firing's due time.
        assert!(
            lines.contains(&"arrivals 0 0 0 500000 500000 1000000"),
            "{text}"
        );
    }

    #[test]
    fn a_wrapping_policy_throttles_the_groups_it_wraps() {
        let s = parse_scenario(
            "[machine]\ncores = 2\n[pool]\npolicy = \"net-classic-throttled\"\n[[group]]\ncount = 1\nbody = [ { sleep_ms = 1 } ]\n",
            "t.toml",
        )
        .unwrap();
        let p = crate::policy_file::resolve_policy("net-classic-throttled").unwrap();
        let text = plan_text(&s, Some(&p), 1000, 10_000).unwrap();
        assert!(
            text.contains("throttle=concurrent-exclusive limit=4"),
            "{text}"
        );
    }

    #[test]
    fn parallel_foreach_async_is_refused_with_the_reason() {
        let s = parse_scenario(
            "[machine]\ncores = 2\n[pool]\npolicy = \"net6\"\n[[group]]\nname = \"fea\"\ncount = 4\nsubmit = \"parallel-foreach-async\"\nbody = [ { await_ms = 1 } ]\n",
            "t.toml",
        )
        .unwrap();
        let e = plan_text(&s, None, 1000, 10_000).unwrap_err();
        assert!(
            e.0.contains("fea") && e.0.contains("Parallel.ForEachAsync"),
            "{e}"
        );
    }
}
