//! Scenario and policy files that must be refused, and how: every error
//! names the file, the line, the TOML path and says what is wrong.

use poolsim::error::LoadError;
use poolsim::policy::file::{parse_policy, resolve_policy};
use poolsim::scenario::load::{load_scenario, parse_scenario};

/// A valid scenario; each test breaks one line of it.
const BASE: &str = r#"# ten sleepers
name = "base"
[machine]
cores = 4
[pool]
policy = "net-classic"
[[group]]
name = "sleepers"
count = 10
arrival = { at_ms = 0 }
body = [ { sleep_ms = 4000 } ]
[[probe]]
every_ms = 500
"#;

/// `BASE` with `from` replaced by `to` (which must be there).
fn base_with(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "BASE has no {from:?}");
    BASE.replacen(from, to, 1)
}

fn refused(text: &str) -> LoadError {
    match parse_scenario(text, "s.toml") {
        Ok(s) => panic!("accepted a bad scenario: {s:?}\n{text}"),
        Err(e) => e,
    }
}

/// The first error is at `line` and `path` and its text contains every `words`.
#[track_caller]
fn assert_error(e: &LoadError, file: &str, line: usize, path: &str, words: &[&str]) {
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!("{file}:{line}:")),
        "expected {file}:{line}: in\n{shown}"
    );
    assert!(
        shown.contains(&format!("error at `{path}`")),
        "expected path `{path}` in\n{shown}"
    );
    for w in words {
        assert!(shown.contains(w), "expected {w:?} in\n{shown}");
    }
    assert_eq!(e.line(), Some(line));
    assert_eq!(e.path(), Some(path));
    assert!(e.column().is_some());
}

#[test]
fn the_base_scenario_loads() {
    let s = parse_scenario(BASE, "s.toml").unwrap();
    assert_eq!(s.name, "base");
    assert_eq!(s.machine.cores, 4);
    assert_eq!(s.item_count(), 10);
}

#[test]
fn toml_syntax_error() {
    let e = refused(&base_with(
        "policy = \"net-classic\"",
        "policy = net-classic",
    ));
    assert_error(
        &e,
        "s.toml",
        6,
        "pool.policy",
        &["invalid TOML", "quotes", "policy = \"net-classic\""],
    );
}

#[test]
fn toml_syntax_error_without_a_value() {
    let e = refused(&base_with("cores = 4", "cores ="));
    assert_error(
        &e,
        "s.toml",
        4,
        "machine.cores",
        &["invalid TOML", "has no value"],
    );
}

#[test]
fn unclosed_table_header() {
    let e = refused(&base_with("[pool]", "[pool"));
    assert!(e.to_string().starts_with("s.toml:5:"), "{e}");
    assert!(e.message().contains("unclosed table"), "{e}");
}

#[test]
fn typo_in_a_key_lists_the_allowed_keys() {
    let e = refused(&base_with("cores = 4", "cors = 4"));
    assert_error(
        &e,
        "s.toml",
        4,
        "machine.cors",
        &[
            "unknown key `cors`",
            "did you mean `cores`?",
            "keys allowed here are `cores`",
        ],
    );
}

#[test]
fn unknown_top_level_key_lists_the_allowed_keys() {
    let e = refused(&base_with("name = \"base\"", "nmae = \"base\""));
    assert_error(
        &e,
        "s.toml",
        2,
        "nmae",
        &[
            "unknown key `nmae`",
            "did you mean `name`?",
            "`seed`",
            "`until_ms`",
            "`machine`",
            "`pool`",
            "`group`",
            "`probe`",
        ],
    );
}

#[test]
fn string_where_a_number_belongs() {
    let e = refused(&base_with("cores = 4", "cores = \"four\""));
    assert_error(
        &e,
        "s.toml",
        4,
        "machine.cores",
        &["expected a number", "\"four\"", "without quotes"],
    );
}

#[test]
fn zero_cores() {
    let e = refused(&base_with("cores = 4", "cores = 0"));
    assert_error(
        &e,
        "s.toml",
        4,
        "machine.cores",
        &["between 1 and 4096", "found 0"],
    );
}

#[test]
fn min_threads_above_max_threads() {
    let e = refused(&base_with(
        "policy = \"net-classic\"",
        "policy = \"net-classic\"\nmin_threads = 64\nmax_threads = 8",
    ));
    assert_error(
        &e,
        "s.toml",
        7,
        "pool.min_threads",
        &["min_threads (64)", "max_threads (8)"],
    );
}

#[test]
fn negative_duration() {
    let e = refused(&base_with("sleep_ms = 4000", "sleep_ms = -5"));
    assert_error(
        &e,
        "s.toml",
        11,
        "group[0].body[0].sleep_ms",
        &["must not be negative", "-5"],
    );
}

#[test]
fn absurd_duration_names_the_limit() {
    let e = refused(&base_with("sleep_ms = 4000", "sleep_ms = 1e12"));
    assert_error(
        &e,
        "s.toml",
        11,
        "group[0].body[0].sleep_ms",
        &["too long", "864000000 ms", "10 days"],
    );
}

#[test]
fn count_over_100_million() {
    let e = refused(&base_with("count = 10", "count = 100000001"));
    assert_error(
        &e,
        "s.toml",
        9,
        "group[0].count",
        &["too many", "100000000"],
    );
}

#[test]
fn total_count_over_100_million() {
    let text = base_with("count = 10", "count = 60000000")
        + "[[group]]\ncount = 60000000\nbody = [\"yield\"]\n";
    let e = refused(&text);
    assert_error(
        &e,
        "s.toml",
        15,
        "group[1].count",
        &["120000000 items in all", "100000000"],
    );
}

#[test]
fn float_count() {
    let e = refused(&base_with("count = 10", "count = 2.5"));
    assert_error(&e, "s.toml", 9, "group[0].count", &["whole number", "2.5"]);
    let e = refused(&base_with("count = 10", "count = 10.0"));
    assert_error(
        &e,
        "s.toml",
        9,
        "group[0].count",
        &["whole number", "without the decimal point: 10"],
    );
}

#[test]
fn empty_body() {
    let e = refused(&base_with("body = [ { sleep_ms = 4000 } ]", "body = []"));
    assert_error(&e, "s.toml", 11, "group[0].body", &["at least one step"]);
}

#[test]
fn body_written_as_a_table() {
    let e = refused(&base_with(
        "body = [ { sleep_ms = 4000 } ]",
        "body = { sleep_ms = 4000 }",
    ));
    assert_error(
        &e,
        "s.toml",
        11,
        "group[0].body",
        &["expected an array, found a table"],
    );
}

#[test]
fn step_with_two_keys() {
    let e = refused(&base_with(
        "{ sleep_ms = 4000 }",
        "{ sleep_ms = 4000, cpu_ms = 5 }",
    ));
    assert_error(
        &e,
        "s.toml",
        11,
        "group[0].body[0]",
        &["does one thing", "`cpu_ms` and `sleep_ms`", "split it"],
    );
}

#[test]
fn unknown_step_key() {
    let e = refused(&base_with("{ sleep_ms = 4000 }", "{ slep_ms = 4000 }"));
    assert_error(
        &e,
        "s.toml",
        11,
        "group[0].body[0].slep_ms",
        &[
            "unknown key `slep_ms`",
            "did you mean `sleep_ms`?",
            "`await_ms`",
        ],
    );
}

#[test]
fn unknown_step_word() {
    let e = refused(&base_with("{ sleep_ms = 4000 }", "\"yeild\""));
    assert_error(
        &e,
        "s.toml",
        11,
        "group[0].body[0]",
        &["\"yield\" or a step table", "\"yeild\""],
    );
}

#[test]
fn unknown_submit_value() {
    let e = refused(&base_with(
        "count = 10",
        "count = 10\nsubmit = \"task_run\"",
    ));
    assert_error(
        &e,
        "s.toml",
        10,
        "group[0].submit",
        &[
            "unknown submission mode \"task_run\"",
            "did you mean \"task-run\"?",
            "\"queue-user-work-item\"",
        ],
    );
}

#[test]
fn duplicate_group_names() {
    let text = format!("{BASE}[[group]]\nname = \"sleepers\"\ncount = 1\nbody = [\"yield\"]\n");
    let e = refused(&text);
    assert_error(
        &e,
        "s.toml",
        15,
        "group[1].name",
        &["duplicate group name \"sleepers\"", "line 8"],
    );
}

#[test]
fn missing_machine_table() {
    let e = refused(&base_with("[machine]\ncores = 4\n", ""));
    assert_error(
        &e,
        "s.toml",
        1,
        "machine",
        &["missing table `[machine]`", "cores = 4"],
    );
}

#[test]
fn missing_pool_policy() {
    let e = refused(&base_with("policy = \"net-classic\"", "min_threads = 2"));
    assert_error(&e, "s.toml", 5, "pool.policy", &["missing key `policy`"]);
}

#[test]
fn every_ms_zero() {
    let e = refused(&base_with(
        "arrival = { at_ms = 0 }",
        "arrival = { every_ms = 0 }",
    ));
    assert_error(
        &e,
        "s.toml",
        10,
        "group[0].arrival.every_ms",
        &["greater than 0"],
    );
    let e = refused(&base_with("every_ms = 500", "every_ms = 0"));
    assert_error(&e, "s.toml", 13, "probe[0].every_ms", &["greater than 0"]);
}

#[test]
fn negative_poisson_rate() {
    let e = refused(&base_with(
        "arrival = { at_ms = 0 }",
        "arrival = { poisson_per_s = -1 }",
    ));
    assert_error(
        &e,
        "s.toml",
        10,
        "group[0].arrival.poisson_per_s",
        &["greater than 0", "-1"],
    );
}

#[test]
fn arrival_with_two_kinds() {
    let e = refused(&base_with(
        "arrival = { at_ms = 0 }",
        "arrival = { at_ms = 0, every_ms = 5 }",
    ));
    assert_error(
        &e,
        "s.toml",
        10,
        "group[0].arrival",
        &["one kind", "`at_ms` and `every_ms`"],
    );
}

#[test]
fn group_header_with_single_brackets() {
    let e = refused(&base_with("[[group]]", "[group]"));
    assert_error(
        &e,
        "s.toml",
        7,
        "group",
        &["expected an array", "[[group]]"],
    );
}

#[test]
fn every_problem_is_reported_each_on_its_own_line() {
    let text = base_with("cores = 4", "cores = 0").replace("count = 10", "count = 1.5");
    let e = refused(&text);
    let shown = e.to_string();
    let errors: Vec<&str> = shown.lines().filter(|l| l.starts_with("s.toml:")).collect();
    assert_eq!(errors.len(), 2, "{shown}");
    assert!(
        errors[0].starts_with("s.toml:4:9: error at `machine.cores`"),
        "{shown}"
    );
    assert!(
        errors[1].starts_with("s.toml:9:9: error at `group[0].count`"),
        "{shown}"
    );
    assert_eq!(e.len(), 2);
}

#[test]
fn missing_file() {
    let e = load_scenario(std::path::Path::new("no/such/scenario.toml")).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("no/such/scenario.toml: error: cannot read the file"),
        "{e}"
    );
}

// --- policy files ---------------------------------------------------------

fn net_classic_text() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/policies/net-classic.toml");
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn net_classic_file_gives_the_expected_values() {
    use poolsim::policy::config::{Comparison, ModelKind, ThreadCount};
    use poolsim::time::SimDuration;
    let p = parse_policy(&net_classic_text(), "policies/net-classic.toml").unwrap();
    assert_eq!(p.name, "net-classic");
    assert_eq!(p.aliases, ["net5", "netcore3", "coreclr3", "netfx4"]);
    assert_eq!(p.model, ModelKind::Classic);
    assert!(p.description.starts_with(".NET Framework 4.x"));
    let t = &p.threads;
    assert_eq!(t.min, ThreadCount::PerCore(1));
    assert_eq!(t.max, ThreadCount::Fixed(32767));
    assert_eq!(t.start_latency, SimDuration::from_us(200));
    assert_eq!(t.wake_latency, SimDuration::from_us(20));
    assert_eq!(t.idle_timeout, SimDuration::from_ms(20_000));
    let g = &p.gate;
    assert_eq!(g.period, SimDuration::from_ms(500));
    assert_eq!(g.cpu_busy_percent, 80);
    assert_eq!(g.starvation_delay, SimDuration::from_ms(500));
    assert_eq!(g.busy_delay_per_thread, SimDuration::from_ms(1000));
    assert_eq!(g.comparison, Comparison::Greater);
    let h = &p.hill_climbing;
    assert!(h.enabled);
    assert_eq!(h.wave_period, 4);
    assert_eq!(h.max_wave_magnitude, 20);
    assert_eq!(h.wave_magnitude_multiplier, 1.0);
    assert_eq!(h.wave_history_size, 8);
    assert_eq!(h.bias, 0.15);
    assert_eq!(h.max_change_per_second, 4.0);
    assert_eq!(h.max_change_per_sample, 20.0);
    assert_eq!(h.max_sample_error, 0.15);
    assert_eq!(h.sample_interval_low_ms, 10);
    assert_eq!(h.sample_interval_high_ms, 200);
    assert_eq!(h.error_smoothing_factor, 0.01);
    assert_eq!(h.target_signal_to_noise_ratio, 3.0);
    assert_eq!(h.gain_exponent, 2.0);
    assert_eq!(p.dispatch.quantum, SimDuration::from_ms(30));
    assert_eq!(p.dispatch.max_outstanding_requests_per_core, 1);
    // The built-in copy is the same file.
    assert_eq!(resolve_policy("net-classic").unwrap(), p);
}

fn policy_refused(from: &str, to: &str) -> LoadError {
    let text = net_classic_text();
    assert!(text.contains(from), "net-classic.toml has no {from:?}");
    match parse_policy(&text.replacen(from, to, 1), "p.toml") {
        Ok(p) => panic!("accepted a bad policy: {p:?}"),
        Err(e) => e,
    }
}

fn line_of(needle: &str) -> usize {
    let text = net_classic_text();
    let at = text.find(needle).unwrap();
    text[..at].matches('\n').count() + 1
}

#[test]
fn policy_with_a_bad_constant() {
    let line = line_of("period_ms = 500");
    let e = policy_refused("period_ms = 500", "period_ms = 0");
    assert_error(&e, "p.toml", line, "gate.period_ms", &["greater than 0"]);

    let line = line_of("cpu_busy_percent = 80");
    let e = policy_refused("cpu_busy_percent = 80", "cpu_busy_percent = 180");
    assert_error(
        &e,
        "p.toml",
        line,
        "gate.cpu_busy_percent",
        &["between 0 and 100", "180"],
    );

    let line = line_of("comparison = \">\"");
    let e = policy_refused("comparison = \">\"", "comparison = \"=>\"");
    assert_error(
        &e,
        "p.toml",
        line,
        "gate.comparison",
        &["unknown comparison \"=>\"", "\">=\""],
    );

    let line = line_of("min = \"cores\"");
    let e = policy_refused("min = \"cores\"", "min = \"lots\"");
    assert_error(
        &e,
        "p.toml",
        line,
        "threads.min",
        &["\"cores\" or \"K*cores\"", "\"lots\""],
    );

    let line = line_of("sample_interval_low_ms = 10");
    let e = policy_refused(
        "sample_interval_low_ms = 10",
        "sample_interval_low_ms = 500",
    );
    assert_error(
        &e,
        "p.toml",
        line,
        "hill_climbing.sample_interval_low_ms",
        &["greater than sample_interval_high_ms (200)"],
    );

    let line = line_of("model = \"classic\"");
    let e = policy_refused("model = \"classic\"", "model = \"clasic\"");
    assert_error(
        &e,
        "p.toml",
        line,
        "model",
        &["unknown model \"clasic\"", "did you mean \"classic\"?"],
    );
}

#[test]
fn policy_with_a_typo_in_a_key() {
    let line = line_of("bias = 0.15");
    let e = policy_refused("bias = 0.15", "bais = 0.15");
    assert_error(
        &e,
        "p.toml",
        line,
        "hill_climbing.bais",
        &["unknown key `bais`", "did you mean `bias`?"],
    );
}

#[test]
fn policy_with_a_missing_constant() {
    let e = policy_refused("quantum_ms = 30", "");
    assert_error(
        &e,
        "p.toml",
        line_of("[dispatch]"),
        "dispatch.quantum_ms",
        &["missing key `quantum_ms`"],
    );
}

#[test]
fn unknown_policy_name() {
    let e = resolve_policy("net-clasic").unwrap_err();
    let shown = e.to_string();
    assert!(
        shown.starts_with("error: unknown policy \"net-clasic\""),
        "{shown}"
    );
    assert!(shown.contains("did you mean \"net-classic\"?"), "{shown}");
    assert!(shown.contains("net5"), "{shown}");
    assert_eq!(e.line(), None);

    let e = resolve_policy("mono").unwrap_err();
    assert!(
        e.to_string().contains("built-in policies: net-classic"),
        "{e}"
    );
}

#[test]
fn policy_names_and_paths_resolve() {
    assert_eq!(resolve_policy("NET5").unwrap().name, "net-classic");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/policies/net-classic.toml");
    assert_eq!(resolve_policy(path).unwrap().name, "net-classic");
    let e = resolve_policy("policies/no-such-policy.toml").unwrap_err();
    assert!(e.to_string().contains("not found"), "{e}");
}
