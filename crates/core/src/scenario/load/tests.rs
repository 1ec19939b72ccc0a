//! The loader's tests: a full scenario, every submission shape, the
//! defaults, every problem reported in file order, the caps, and no panic
//! on mangled input.

use super::shape::SUBMITS;
use super::*;
use crate::scenario::model::{Arrival, MAX_STEPS, Origin, Step, Submit, Throttle};

const FULL: &str = r#"
# comment
name = "full"
seed = 7
until_ms = 600000
[machine]
cores = 4
tick_ms = 15.625
[pool]
policy = "net-classic"
min_threads = 4
max_threads = 100
gate_phase_ms = 131
[[group]]
name = "sleepers"
count = 10
submit = "queue-user-work-item"
from = "pool"
arrival = { every_ms = 100, start_ms = 5 }
body = [ { sleep_ms = 4000 }, { cpu_ms = 5 }, "yield", { yield = true }, { spin_ms = 1.5 }, { wait_ms = 2 }, { await_ms = 3 } ]
[[group]]
count = 2
arrival = { poisson_per_s = 50 }
body = [ { cpu_ms = 1 } ]
throttle = { kind = "concurrent-exclusive", limit = 2 }
[[probe]]
every_ms = 500
"#;

#[test]
fn a_full_scenario_loads() {
    let s = parse_scenario(FULL, "dir/x.toml").unwrap();
    assert_eq!(s.name, "full");
    assert_eq!(s.seed, 7);
    assert_eq!(s.until, Some(SimDuration::from_ms(600_000)));
    assert_eq!(s.machine.cores, 4);
    assert_eq!(s.machine.tick, Some(SimDuration::from_nanos(15_625_000)));
    assert_eq!(s.pool.policy, "net-classic");
    assert_eq!(s.pool.min_threads, Some(4));
    assert_eq!(s.pool.max_threads, Some(100));
    assert_eq!(s.pool.gate_phase, Some(SimDuration::from_ms(131)));
    assert_eq!(s.groups.len(), 2);
    let g = &s.groups[0];
    assert_eq!(g.name, "sleepers");
    assert_eq!(g.count, 10);
    assert_eq!(g.submit, Submit::QueueUserWorkItem);
    assert_eq!(g.from, Origin::Pool);
    assert_eq!(
        g.arrival,
        Arrival::Every {
            start: SimDuration::from_ms(5),
            every: SimDuration::from_ms(100)
        }
    );
    assert_eq!(
        g.body,
        vec![
            Step::Sleep(SimDuration::from_ms(4000)),
            Step::Cpu(SimDuration::from_ms(5)),
            Step::Yield,
            Step::Yield,
            Step::Spin(SimDuration::from_us(1500)),
            Step::Wait(SimDuration::from_ms(2)),
            Step::Await(SimDuration::from_ms(3)),
        ]
    );
    let g = &s.groups[1];
    assert_eq!(g.name, "group1");
    assert_eq!(g.submit, Submit::TaskRun);
    assert_eq!(g.from, Origin::Main);
    assert_eq!(
        g.arrival,
        Arrival::Poisson {
            start: SimDuration::ZERO,
            per_second: 50.0
        }
    );
    assert_eq!(
        g.throttle,
        Some(Throttle {
            kind: crate::scenario::model::ThrottleKind::ConcurrentExclusive,
            limit: 2
        })
    );
    assert_eq!(
        s.probes,
        vec![Probe {
            every: SimDuration::from_ms(500)
        }]
    );
    assert_eq!(s.item_count(), 12);
}

#[test]
fn every_submission_shape_loads_with_its_options() {
    for shape in SUBMITS {
        let degree = if shape.one_call() {
            "max_degree = 3\n"
        } else {
            ""
        };
        let throttle = if shape.takes_throttle() {
            "throttle = { kind = \"semaphore\", limit = 2 }\n"
        } else {
            ""
        };
        let text = format!(
            "[machine]\ncores = 2\n[pool]\npolicy = \"p\"\n[[group]]\ncount = 4\nsubmit = \"{}\"\n{degree}{throttle}body = [ {{ cpu_ms = 1 }} ]\n",
            shape.name()
        );
        let s = parse_scenario(&text, "s.toml").unwrap_or_else(|e| panic!("{e}"));
        let g = &s.groups[0];
        assert_eq!(g.submit, *shape);
        assert_eq!(g.max_degree, shape.one_call().then_some(3));
        assert_eq!(
            g.throttle,
            shape.takes_throttle().then_some(Throttle {
                kind: crate::scenario::model::ThrottleKind::Semaphore,
                limit: 2
            })
        );
    }
    // Without the keys: the API's defaults.
    let s = parse_scenario(FULL, "x.toml").unwrap();
    assert_eq!((s.groups[0].max_degree, s.groups[0].throttle), (None, None));
    assert_eq!(s.groups[1].max_degree, None);
}

#[test]
fn defaults_apply() {
    let text =
        "[machine]\ncores = 2\n[pool]\npolicy = \"p\"\n[[group]]\ncount = 1\nbody = [\"yield\"]\n";
    let s = parse_scenario(text, "scenarios/ten-sleepers.toml").unwrap();
    assert_eq!(s.name, "ten-sleepers");
    assert_eq!(s.seed, 1);
    assert_eq!(s.until, None);
    assert_eq!(s.pool.min_threads, None);
    assert_eq!(s.pool.gate_phase, None);
    assert_eq!(s.machine.tick, None);
    assert_eq!(s.machine.processors, None);
    assert_eq!(s.machine.processors(), 2, "the runtime sees the cores");
    assert_eq!(s.groups[0].name, "group0");
    assert_eq!(s.groups[0].arrival, Arrival::At(SimDuration::ZERO));
    assert!(s.probes.is_empty());
}

#[test]
fn processors_are_the_runtimes_count_apart_from_the_cores() {
    let text = "[machine]\ncores = 2\nprocessors = 16\n[pool]\npolicy = \"p\"\n[[group]]\ncount = 1\nbody = [\"yield\"]\n";
    let s = parse_scenario(text, "p.toml").unwrap();
    assert_eq!((s.machine.cores, s.machine.processors()), (2, 16));
    for bad in ["0", "4097", "2.5", "\"many\""] {
        let e = parse_scenario(&text.replace("16", bad), "p.toml").unwrap_err();
        let d = e.diagnostics().next().unwrap();
        assert_eq!(d.path.as_deref(), Some("machine.processors"), "{bad}");
    }
}

#[test]
fn every_problem_is_reported_in_file_order() {
    let text = "[machine]\ncores = 0\n[pool]\npolicy = \"p\"\nmin_threads = 0\n[[group]]\ncount = 1.5\nbody = []\n";
    let e = parse_scenario(text, "f.toml").unwrap_err();
    let paths: Vec<_> = e.diagnostics().map(|d| d.path.clone().unwrap()).collect();
    assert_eq!(
        paths,
        [
            "machine.cores",
            "pool.min_threads",
            "group[0].count",
            "group[0].body"
        ]
    );
    let lines: Vec<_> = e.diagnostics().map(|d| d.line.unwrap()).collect();
    assert_eq!(lines, [2, 5, 7, 8]);
}

#[test]
fn a_tick_must_be_a_positive_duration() {
    for (tick, says) in [
        ("0", "must be greater than 0 ms"),
        ("-15.625", "must not be negative"),
        ("\"15\"", "number"),
    ] {
        let text = format!(
            "[machine]\ncores = 1\ntick_ms = {tick}\n[pool]\npolicy = \"p\"\n[[group]]\ncount = 1\nbody = [\"yield\"]\n"
        );
        let e = parse_scenario(&text, "t.toml").unwrap_err();
        let d = e.diagnostics().next().unwrap();
        assert_eq!(d.path.as_deref(), Some("machine.tick_ms"), "{tick}");
        assert!(d.message.contains(says), "{tick}: {}", d.message);
    }
}

#[test]
fn many_errors_are_capped_and_stay_fast() {
    let steps = vec!["{ cpu_ms = -1 }"; MAX_STEPS].join(", ");
    let text = format!(
        "[machine]\ncores = 1\n[pool]\npolicy = \"p\"\n[[group]]\ncount = 1\nbody = [ {steps} ]\n"
    );
    let e = parse_scenario(&text, "big.toml").unwrap_err();
    assert_eq!(e.len(), 21);
    let last = e.diagnostics().last().unwrap();
    assert_eq!(
        last.message,
        "9980 more errors not shown; fix the ones above first"
    );

    let garbage = "= = =\n".repeat(20_000);
    let e = parse_scenario(&garbage, "garbage.toml").unwrap_err();
    assert!(e.len() <= 21);
    assert_eq!(e.line(), Some(1));
}

#[test]
fn too_many_steps_are_refused() {
    let steps = vec!["\"yield\""; MAX_STEPS + 1].join(", ");
    let text = format!(
        "[machine]\ncores = 1\n[pool]\npolicy = \"p\"\n[[group]]\ncount = 1\nbody = [ {steps} ]\n"
    );
    let e = parse_scenario(&text, "f.toml").unwrap_err();
    assert_eq!(e.path(), Some("group[0].body"));
    assert!(e.message().contains("at most 10000 steps"), "{e}");
}

#[test]
fn never_panics_on_mangled_input() {
    // Every prefix of a valid file, and a few byte-level mutations.
    for cut in 0..=FULL.len() {
        if let Some(prefix) = FULL.get(..cut) {
            let _ = parse_scenario(prefix, "p.toml");
        }
    }
    for (i, c) in FULL.char_indices().step_by(2) {
        for sub in ["", "\"", "[", "]", "=", "-", "1e400", "\n", "{", "é"] {
            let mut t = String::with_capacity(FULL.len() + 8);
            t.push_str(&FULL[..i]);
            t.push_str(sub);
            t.push_str(&FULL[i + c.len_utf8()..]);
            let _ = parse_scenario(&t, "m.toml");
        }
    }
}

#[test]
fn after_takes_a_stream_but_not_an_instant() {
    let text = second_group_arriving;
    let s = parse_scenario(&text("{ after = \"a\", poisson_per_s = 20 }"), "x.toml").unwrap();
    assert_eq!(
        s.groups[1].arrival,
        Arrival::After {
            group: 0,
            delay: SimDuration::ZERO,
            spacing: crate::scenario::model::Spacing::Poisson(20.0)
        }
    );
    let s = parse_scenario(
        &text("{ after = \"a\", delay_ms = 5, every_ms = 10 }"),
        "x.toml",
    )
    .unwrap();
    assert_eq!(
        s.groups[1].arrival.spacing(),
        crate::scenario::model::Spacing::Every(SimDuration::from_ms(10))
    );
    let e = parse_scenario(&text("{ after = \"a\", at_ms = 5 }"), "x.toml").unwrap_err();
    assert!(e.to_string().contains("found `at_ms` and `after`"), "{e}");
    let e = parse_scenario(
        &text("{ after = \"a\", every_ms = 5, poisson_per_s = 3 }"),
        "x.toml",
    )
    .unwrap_err();
    assert!(e.to_string().contains("an arrival has one kind"), "{e}");
}

/// Two groups on two cores, "a" at once and "b" with `arrival`.
fn second_group_arriving(arrival: &str) -> String {
    format!(
        "[machine]\ncores = 2\n[pool]\npolicy = \"net8\"\n\
         [[group]]\nname = \"a\"\ncount = 1\nbody = [ {{ cpu_ms = 1 }} ]\n\
         [[group]]\nname = \"b\"\ncount = 2\narrival = {arrival}\nbody = [ {{ cpu_ms = 1 }} ]\n"
    )
}

/// A group of `keys` (TOML lines) on one core.
fn one_group(keys: &str) -> String {
    format!(
        "[machine]\ncores = 1\n[pool]\npolicy = \"p\"\n[[group]]\ncount = 48\nbody = [ {{ sleep_ms = 800 }} ]\n{keys}\n"
    )
}

#[test]
fn a_timer_group_reads_its_burst_and_period() {
    let text = one_group(
        "submit = \"queue-user-work-item\"\nfrom = \"timer\"\nper_tick = 6\narrival = { every_ms = 500, start_ms = 20 }",
    );
    let g = &parse_scenario(&text, "t.toml").unwrap().groups[0];
    assert_eq!(g.from, Origin::Timer { per_tick: 6 });
    assert_eq!(g.from.name(), "timer");
    assert_eq!(
        g.arrival,
        Arrival::Every {
            start: SimDuration::from_ms(20),
            every: SimDuration::from_ms(500)
        }
    );
    // One item a firing by default.
    let text = one_group("from = \"timer\"\narrival = { every_ms = 250 }");
    let g = &parse_scenario(&text, "t.toml").unwrap().groups[0];
    assert_eq!(g.from, Origin::Timer { per_tick: 1 });
}

#[test]
fn a_timer_group_is_refused_what_a_timer_cannot_do() {
    for (keys, path, says) in [
        (
            "per_tick = 6",
            "group[0].per_tick",
            "`per_tick` goes with `from = \"timer\"`",
        ),
        (
            "from = \"timer\"\narrival = { at_ms = 0 }",
            "group[0].arrival",
            "its arrival is `every_ms`",
        ),
        (
            "from = \"timer\"\narrival = { poisson_per_s = 5 }",
            "group[0].arrival",
            "its arrival is `every_ms`",
        ),
        (
            "from = \"timer\"\narrival = { every_ms = 500.5 }",
            "group[0].arrival.every_ms",
            "whole number of milliseconds",
        ),
        (
            "from = \"timer\"\nsubmit = \"parallel-for\"\narrival = { every_ms = 500 }",
            "group[0].submit",
            "cannot go with `from = \"timer\"`",
        ),
        (
            "from = \"timer\"\nper_tick = 0\narrival = { every_ms = 500 }",
            "group[0].per_tick",
            "must be",
        ),
        ("from = \"clock\"", "group[0].from", "timer"),
    ] {
        let e = parse_scenario(&one_group(keys), "t.toml").unwrap_err();
        let d = e.diagnostics().next().unwrap();
        assert_eq!(d.path.as_deref(), Some(path), "{keys}");
        let all = format!("{} {}", d.message, d.help.as_deref().unwrap_or(""));
        assert!(all.contains(says), "{keys}: {all}");
    }
}

/// A gateway: 10 requests, each fanning out to `calls` (40 items: 4 a call).
const FAN_OUT: &str = r#"
[machine]
cores = 2
[pool]
policy = "p"
[[group]]
name = "requests"
count = 10
arrival = { every_ms = 20 }
body = [ { cpu_ms = 1 }, { fan_out = "calls" } ]
[[group]]
name = "calls"
count = 40
from = "fan-out"
body = [ { wait_ms = 100 } ]
"#;

#[test]
fn a_fan_out_names_its_calls_and_shares_them_evenly() {
    let s = parse_scenario(FAN_OUT, "f.toml").unwrap();
    assert_eq!(s.groups[0].body[1], Step::FanOut { group: 1 });
    assert_eq!(s.groups[1].from, Origin::FanOut { per_call: 4 });
    assert_eq!(s.call_groups(), [1]);
    // Two fan-out steps in a body: each request makes two calls.
    let twice = FAN_OUT.replace(
        "{ fan_out = \"calls\" } ]",
        "{ fan_out = \"calls\" }, { fan_out = \"calls\" } ]",
    );
    let s = parse_scenario(&twice, "f.toml").unwrap();
    assert_eq!(s.groups[1].from, Origin::FanOut { per_call: 2 });
}

#[test]
fn a_fan_out_that_cannot_be_run_says_why() {
    for (from, to, path, says) in [
        (
            "fan_out = \"calls\"",
            "fan_out = \"cals\"",
            "group[0].body[1].fan_out",
            "did you mean \"calls\"",
        ),
        (
            "count = 40",
            "count = 41",
            "group[1].count",
            "`count = 40` is 4 a call",
        ),
        (
            "from = \"fan-out\"\n",
            "",
            "group[0].body[1].fan_out",
            "whose items arrive on their own",
        ),
        (
            "{ cpu_ms = 1 }, { fan_out = \"calls\" }",
            "{ cpu_ms = 1 }",
            "group[1].from",
            "no step fans out to \"calls\"",
        ),
        (
            "from = \"fan-out\"\n",
            "from = \"fan-out\"\narrival = { at_ms = 0 }\n",
            "group[1].arrival",
            "no arrival of its own",
        ),
        (
            "from = \"fan-out\"\n",
            "from = \"fan-out\"\nsubmit = \"parallel-for\"\n",
            "group[1].submit",
            "cannot go with `from = \"fan-out\"`",
        ),
        // The step queues its calls itself: a pair's scheduler would not
        // tell the caller when they end.
        (
            "from = \"fan-out\"\n",
            "from = \"fan-out\"\nthrottle = { kind = \"concurrent-exclusive\", limit = 2 }\n",
            "group[1].throttle",
            "kind = \"semaphore\"",
        ),
        // Fanning out to itself can never meet its count.
        (
            "body = [ { wait_ms = 100 } ]",
            "body = [ { fan_out = \"calls\" } ]",
            "group[1].count",
            "do not share evenly",
        ),
        (
            "{ fan_out = \"calls\" }",
            "{ fan_out = \"calls\", cpu_ms = 2 }",
            "group[0].body[1]",
            "a step does one thing",
        ),
    ] {
        let text = FAN_OUT.replacen(from, to, 1);
        assert_ne!(text, FAN_OUT, "{from}");
        let e = parse_scenario(&text, "f.toml").unwrap_err();
        assert!(
            e.diagnostics()
                .all(|d| !d.path.as_deref().unwrap_or("").starts_with("machine"))
        );
        let d = e
            .diagnostics()
            .find(|d| d.path.as_deref() == Some(path))
            .unwrap_or_else(|| panic!("no error at {path}: {e}"));
        let all = format!("{} {}", d.message, d.help.clone().unwrap_or_default());
        assert!(all.contains(says), "{path}: {all}");
    }
}

#[test]
fn a_late_start_is_a_duration_and_not_for_after() {
    let text = second_group_arriving;
    let s = parse_scenario(&text("{ at_ms = 15, late_ms = 20 }"), "x.toml").unwrap();
    assert_eq!(s.groups[1].arrival, Arrival::At(SimDuration::from_ms(15)));
    assert_eq!(s.groups[1].late, SimDuration::from_ms(20));
    assert_eq!(s.groups[0].late, SimDuration::ZERO);
    let s = parse_scenario(
        &text("{ every_ms = 10, start_ms = 5, late_ms = 2.5 }"),
        "x.toml",
    )
    .unwrap();
    assert_eq!(s.groups[1].late, SimDuration::from_us(2500));
    let e = parse_scenario(&text("{ after = \"a\", late_ms = 5 }"), "x.toml").unwrap_err();
    assert!(
        e.to_string()
            .contains("`late_ms` goes with `at_ms`, `every_ms` or `poisson_per_s`, not `after`"),
        "{e}"
    );
    let e = parse_scenario(&text("{ at_ms = 0, late_ms = -1 }"), "x.toml").unwrap_err();
    assert!(e.to_string().contains("late_ms"), "{e}");
}
