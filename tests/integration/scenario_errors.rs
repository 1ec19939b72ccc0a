//! Scenario and policy files that must be refused, and how: every error
//! names the file, the line, the TOML path and says what is wrong.

use poolsim::diagnostics::LoadError;
use poolsim::policy_file::{parse_policy, resolve_policy};
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
            "\"when-all\"",
            "\"new-thread\"",
            "\"parallel-invoke\"",
            "\"parallel-for\"",
            "\"parallel-foreach\"",
            "\"plinq\"",
            "\"parallel-foreach-async\"",
        ],
    );
}

/// `BASE` with the group's `count = 10` line followed by `lines`, and its
/// body replaced by `body`.
fn shaped(lines: &str, body: &str) -> String {
    base_with("count = 10", &format!("count = 10\n{lines}")).replacen(
        "body = [ { sleep_ms = 4000 } ]",
        body,
        1,
    )
}

#[test]
fn every_submission_shape_is_accepted() {
    use poolsim::scenario::Submit;
    for (name, submit) in [
        ("task-run", Submit::TaskRun),
        ("queue-user-work-item", Submit::QueueUserWorkItem),
        ("when-all", Submit::WhenAll),
        ("new-thread", Submit::NewThread),
        ("parallel-invoke", Submit::ParallelInvoke),
        ("parallel-for", Submit::ParallelFor),
        ("parallel-foreach", Submit::ParallelForEach),
        ("plinq", Submit::Plinq),
        ("parallel-foreach-async", Submit::ParallelForEachAsync),
    ] {
        assert_eq!(submit.name(), name);
        let text = base_with("count = 10", &format!("count = 10\nsubmit = \"{name}\""));
        let s = parse_scenario(&text, "s.toml").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.groups[0].submit, submit);
    }
}

#[test]
fn max_degree_and_throttle_are_read() {
    use poolsim::policy::config::ThrottleKind;
    use poolsim::scenario::Throttle;
    let s = parse_scenario(
        &shaped(
            "submit = \"parallel-foreach-async\"\nmax_degree = 4\nthrottle = { kind = \"semaphore\", limit = 3 }",
            "body = [ { await_ms = 10 }, \"yield\" ]",
        ),
        "s.toml",
    )
    .unwrap();
    let g = &s.groups[0];
    assert_eq!(g.max_degree, Some(4));
    assert_eq!(
        g.throttle,
        Some(Throttle {
            kind: ThrottleKind::Semaphore,
            limit: 3
        })
    );
}

#[test]
fn parallel_for_body_with_await_or_yield() {
    let text = shaped(
        "submit = \"parallel-for\"",
        "body = [ { cpu_ms = 1 }, { await_ms = 5 }, \"yield\" ]",
    );
    let e = refused(&text);
    assert_error(
        &e,
        "s.toml",
        12,
        "group[0].body[1]",
        &[
            "Parallel.For bodies are synchronous",
            "`await_ms`",
            "wait_ms",
            "parallel-foreach-async",
        ],
    );
    assert_eq!(e.len(), 2, "{e}");
    let second = e.diagnostics().nth(1).unwrap();
    assert_eq!(second.path.as_deref(), Some("group[0].body[2]"));
    assert!(second.message.contains("`yield`"), "{e}");

    let e = refused(&shaped("submit = \"plinq\"", "body = [ { yield = true } ]"));
    assert_error(
        &e,
        "s.toml",
        12,
        "group[0].body[0]",
        &["PLINQ Select bodies are synchronous", "`yield`"],
    );
    let e = refused(&shaped(
        "submit = \"parallel-invoke\"",
        "body = [ { await_ms = 1 } ]",
    ));
    assert_error(
        &e,
        "s.toml",
        12,
        "group[0].body[0]",
        &["Parallel.Invoke actions are synchronous"],
    );
    // The async shapes take them.
    for shape in ["parallel-foreach-async", "task-run", "when-all"] {
        let text = shaped(
            &format!("submit = \"{shape}\""),
            "body = [ { await_ms = 5 }, \"yield\" ]",
        );
        parse_scenario(&text, "s.toml").unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn one_call_shape_with_a_repeating_arrival() {
    let text = shaped("submit = \"parallel-foreach\"", "body = [ { cpu_ms = 1 } ]").replacen(
        "arrival = { at_ms = 0 }",
        "arrival = { every_ms = 100 }",
        1,
    );
    let e = refused(&text);
    assert_error(
        &e,
        "s.toml",
        11,
        "group[0].arrival",
        &[
            "`parallel-foreach` is one Parallel.ForEach call",
            "must be `at_ms`",
            "found `every_ms`",
            "one group per call",
        ],
    );
    let text = shaped(
        "submit = \"parallel-foreach-async\"",
        "body = [ { cpu_ms = 1 } ]",
    )
    .replacen(
        "arrival = { at_ms = 0 }",
        "arrival = { poisson_per_s = 5 }",
        1,
    );
    let e = refused(&text);
    assert_error(
        &e,
        "s.toml",
        11,
        "group[0].arrival",
        &["found `poisson_per_s`"],
    );
    // Not a one-call shape: any arrival.
    let text = shaped("submit = \"when-all\"", "body = [ { cpu_ms = 1 } ]").replacen(
        "arrival = { at_ms = 0 }",
        "arrival = { every_ms = 100 }",
        1,
    );
    parse_scenario(&text, "s.toml").unwrap();
}

#[test]
fn max_degree_where_there_is_none() {
    for shape in ["task-run", "queue-user-work-item", "when-all", "new-thread"] {
        let e = refused(&shaped(
            &format!("submit = \"{shape}\"\nmax_degree = 4"),
            "body = [ { cpu_ms = 1 } ]",
        ));
        assert_error(
            &e,
            "s.toml",
            11,
            "group[0].max_degree",
            &[
                &format!("`{shape}` has no degree of parallelism"),
                "`parallel-for`",
                "`plinq`",
            ],
        );
    }
    // Absent submit is task-run.
    let e = refused(&shaped("max_degree = 4", "body = [ { cpu_ms = 1 } ]"));
    assert_error(
        &e,
        "s.toml",
        10,
        "group[0].max_degree",
        &["`task-run` has no degree of parallelism", "throttle"],
    );
}

#[test]
fn max_degree_out_of_range() {
    for bad in ["0", "32768", "2.5"] {
        let e = refused(&shaped(
            &format!("submit = \"parallel-for\"\nmax_degree = {bad}"),
            "body = [ { cpu_ms = 1 } ]",
        ));
        assert_error(&e, "s.toml", 11, "group[0].max_degree", &[bad]);
    }
}

#[test]
fn throttle_on_a_shape_that_has_no_scheduler() {
    let e = refused(&shaped(
        "submit = \"new-thread\"\nthrottle = { kind = \"semaphore\", limit = 2 }",
        "body = [ { cpu_ms = 1 } ]",
    ));
    assert_error(
        &e,
        "s.toml",
        11,
        "group[0].throttle",
        &[
            "a throttle cannot go on `new-thread`",
            "`task-run`, `queue-user-work-item`, `when-all` and `parallel-foreach-async`",
        ],
    );
    for shape in [
        "parallel-invoke",
        "parallel-for",
        "parallel-foreach",
        "plinq",
    ] {
        let e = refused(&shaped(
            &format!(
                "submit = \"{shape}\"\nthrottle = {{ kind = \"concurrent-exclusive\", limit = 2 }}"
            ),
            "body = [ { cpu_ms = 1 } ]",
        ));
        assert_error(
            &e,
            "s.toml",
            11,
            "group[0].throttle",
            &[
                &format!("a throttle cannot go on `{shape}`"),
                "task scheduler",
                "max_degree",
            ],
        );
    }
}

#[test]
fn bad_throttle_values() {
    let e = refused(&shaped(
        "throttle = { kind = \"semafore\", limit = 2 }",
        "body = [ { cpu_ms = 1 } ]",
    ));
    assert_error(
        &e,
        "s.toml",
        10,
        "group[0].throttle.kind",
        &[
            "unknown throttle kind \"semafore\"",
            "did you mean \"semaphore\"?",
            "\"concurrent-exclusive\"",
        ],
    );
    let e = refused(&shaped(
        "throttle = { kind = \"semaphore\", limit = 0 }",
        "body = [ { cpu_ms = 1 } ]",
    ));
    assert_error(
        &e,
        "s.toml",
        10,
        "group[0].throttle.limit",
        &["between 1 and 32767", "found 0"],
    );
    let e = refused(&shaped(
        "throttle = { kind = \"semaphore\" }",
        "body = [ { cpu_ms = 1 } ]",
    ));
    assert_error(
        &e,
        "s.toml",
        10,
        "group[0].throttle.limit",
        &["missing key `limit`"],
    );
    let e = refused(&shaped(
        "throttle = { kind = \"semaphore\", limit = 2, count = 3 }",
        "body = [ { cpu_ms = 1 } ]",
    ));
    assert_error(
        &e,
        "s.toml",
        10,
        "group[0].throttle.count",
        &["unknown key `count`", "`kind`, `limit`"],
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

fn policy_text(file: &str) -> String {
    let path = format!("{}/policies/{file}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).unwrap()
}

fn net_classic_text() -> String {
    policy_text("net-classic.toml")
}

/// A fresh scratch directory for this test.
fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "poolsim-scenario-errors-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn net_classic_file_gives_the_expected_values() {
    use poolsim::policy::config::{
        Comparison, FirstTick, ModelKind, RequestMode, Spread, ThreadCount, TimerDispatch,
    };
    use poolsim::time::SimDuration;
    let p = parse_policy(&net_classic_text(), "policies/net-classic.toml").unwrap();
    assert_eq!(p.name, "net-classic");
    assert_eq!(p.aliases, ["net5", "netcore3", "netfx4"]);
    assert_eq!(p.model, ModelKind::Classic);
    assert!(p.description.starts_with(".NET Framework 4.x"));
    let t = &p.threads;
    assert_eq!(t.min, ThreadCount::PerCore(1));
    assert_eq!(t.max, ThreadCount::Fixed(32767));
    assert_eq!(t.start_latency, Spread::fixed(SimDuration::from_us(200)));
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
    assert_eq!(p.threads.dedicated_start_latency, SimDuration::from_ms(4));
    assert!(p.threads.honours_set_min_threads);
    assert_eq!(g.first_tick, FirstTick::Random);
    assert_eq!(g.drift, Spread::fixed(SimDuration::ZERO));
    assert_eq!(g.idle_ticks_before_stop, 0);
    assert_eq!(p.dispatch.requests, RequestMode::EveryDequeue);
    assert!(p.dispatch.leave_at_quantum);
    assert_eq!(p.timers.queues, ThreadCount::PerCore(1));
    assert_eq!(p.timers.dispatch, TimerDispatch::UnmanagedRequest);
    assert_eq!(p.blocking, None);
    assert_eq!(p.throttle, None);
    // The built-in copy is the same file.
    assert_eq!(resolve_policy("net-classic").unwrap(), p);
}

fn policy_refused(from: &str, to: &str) -> LoadError {
    policy_file_refused("net-classic.toml", from, to)
}

/// `policies/FILE` with `from` replaced by `to`, which must be refused.
fn policy_file_refused(file: &str, from: &str, to: &str) -> LoadError {
    let text = policy_text(file);
    assert!(text.contains(from), "{file} has no {from:?}");
    policy_text_refused(&text.replacen(from, to, 1), "p.toml")
}

fn policy_text_refused(text: &str, file: &str) -> LoadError {
    match parse_policy(text, file) {
        Ok(p) => panic!("accepted a bad policy: {p:?}\n{text}"),
        Err(e) => e,
    }
}

fn line_of(needle: &str) -> usize {
    line_in("net-classic.toml", needle)
}

fn line_in(file: &str, needle: &str) -> usize {
    let text = policy_text(file);
    let at = text.find(needle).unwrap();
    text[..at].matches('\n').count() + 1
}

#[test]
fn policy_with_a_bad_new_constant() {
    // (file, the line as written, the bad line, path, words of the error)
    let cases: &[(&str, &str, &str, &str, &[&str])] = &[
        (
            "net-classic.toml",
            "dedicated_start_ms = 4",
            "dedicated_start_ms = -4",
            "threads.dedicated_start_ms",
            &["must not be negative"],
        ),
        (
            "net-classic.toml",
            "honours_set_min_threads = true",
            "honours_set_min_threads = \"yes\"",
            "threads.honours_set_min_threads",
            &["expected true or false"],
        ),
        (
            "net-classic.toml",
            "first_tick_ms = \"random\"",
            "first_tick_ms = \"soon\"",
            "gate.first_tick_ms",
            &["a number of ms, \"random\" or a list", "\"soon\""],
        ),
        (
            "net-classic.toml",
            "first_tick_ms = \"random\"",
            "first_tick_ms = -1",
            "gate.first_tick_ms",
            &["must not be negative"],
        ),
        (
            "net-classic.toml",
            "drift_ms = 0",
            "drift_ms = -0.5",
            "gate.drift_ms",
            &["must not be negative"],
        ),
        (
            "net-classic.toml",
            "drift_ms = 0",
            "drift_ms = [0.3, 0.2]",
            "gate.drift_ms",
            &[
                "quantiles must not decrease",
                "value 2 (0.2) is below value 1",
            ],
        ),
        (
            "net-classic.toml",
            "drift_ms = 0",
            "drift_ms = [0.3]",
            "gate.drift_ms",
            &["a list of quantiles needs 2 to 101 values, found 1"],
        ),
        (
            "net-classic.toml",
            "drift_ms = 0",
            "drift_ms = \"soon\"",
            "gate.drift_ms",
            &["a number or a list of numbers"],
        ),
        (
            "net8.toml",
            "sleep_overshoot_us = [82,",
            "sleep_overshoot_us = [-82,",
            "threads.sleep_overshoot_us",
            &["value 1", "must not be negative"],
        ),
        (
            "net-classic.toml",
            "sleep_overshoot_us = 0",
            "sleep_overshoot_us = [1, \"x\"]",
            "threads.sleep_overshoot_us[1]",
            &["expected a number"],
        ),
        (
            "net-classic.toml",
            "idle_ticks_before_stop = 0",
            "idle_ticks_before_stop = 100001",
            "gate.idle_ticks_before_stop",
            &["between 0 and 100000"],
        ),
        (
            "net-classic.toml",
            "requests = \"every-dequeue\"",
            "requests = \"every_dequeue\"",
            "dispatch.requests",
            &[
                "unknown request mode",
                "did you mean \"every-dequeue\"?",
                "\"first-dequeue\"",
            ],
        ),
        (
            "net-classic.toml",
            "leave_at_quantum = true",
            "leave_at_quantum = 1",
            "dispatch.leave_at_quantum",
            &["expected true or false"],
        ),
        (
            "net-classic.toml",
            "queues = \"cores\"",
            "queues = 0",
            "timers.queues",
            &["between 1 and 32767"],
        ),
        (
            "net-classic.toml",
            "dispatch = \"unmanaged-request\"",
            "dispatch = \"unmanaged\"",
            "timers.dispatch",
            &[
                "unknown timer dispatch \"unmanaged\"",
                "\"time-sensitive\"",
                "\"high-priority\"",
                "\"global-per-callback\"",
            ],
        ),
        (
            "net6.toml",
            "max_delay_ms = 250",
            "max_delay_ms = 600",
            "blocking.max_delay_ms",
            &["between 1 and 500 ms", "clamps MaxDelayMs to [1, 500]"],
        ),
        (
            "net6.toml",
            "delay_step_ms = 25",
            "delay_step_ms = 0",
            "blocking.delay_step_ms",
            &["greater than 0"],
        ),
        (
            "net6.toml",
            "delay_step_ms = 25",
            "delay_step_ms = 251",
            "blocking.delay_step_ms",
            &[
                "greater than max_delay_ms (250)",
                "DelayStepMs to [1, MaxDelayMs]",
            ],
        ),
        (
            "net6.toml",
            "threads_per_delay_step_per_core = 1",
            "threads_per_delay_step_per_core = 0",
            "blocking.threads_per_delay_step_per_core",
            &["between 1 and 1024"],
        ),
        (
            "net6.toml",
            "threads_to_add_without_delay_per_core = 1",
            "threads_to_add_without_delay_per_core = 1025",
            "blocking.threads_to_add_without_delay_per_core",
            &["between 0 and 1024"],
        ),
        (
            "mono.toml",
            "threads_per_cpu = 1",
            "threads_per_cpu = 51",
            "mono.threads_per_cpu",
            &["between 1 and 50", "MONO_THREADS_PER_CPU"],
        ),
        (
            "mono.toml",
            "inject_tries = 5",
            "inject_tries = 0",
            "mono.inject_tries",
            &["between 1 and 1000"],
        ),
        (
            "mono.toml",
            "max_creations_per_second = 10",
            "max_creations_per_second = 100001",
            "mono.max_creations_per_second",
            &["between 1 and 100000"],
        ),
        (
            "net20-sp1.toml",
            "creation_delay_growth = 1.1",
            "creation_delay_growth = 0.9",
            "net20.creation_delay_growth",
            &["at least 1"],
        ),
        (
            "net20-sp1.toml",
            "creation_delay_ms = 500",
            "creation_delay_ms = -1",
            "net20.creation_delay_ms",
            &["must not be negative"],
        ),
    ];
    for (file, from, to, path, words) in cases {
        let e = policy_file_refused(file, from, to);
        assert_error(&e, "p.toml", line_in(file, from), path, words);
        assert_eq!(e.len(), 1, "{e}");
    }
}

#[test]
fn portable_policy_without_blocking() {
    let text = policy_text("net6.toml");
    let cut = &text[..text.find("[blocking]").unwrap()];
    let e = policy_text_refused(cut, "p.toml");
    assert_error(
        &e,
        "p.toml",
        1,
        "blocking",
        &[
            "missing table `[blocking]`",
            "model = \"portable\" needs it",
            "policies/net6.toml",
        ],
    );
    assert_eq!(e.len(), 1, "{e}");
}

#[test]
fn classic_policy_with_a_mono_table() {
    let text = net_classic_text()
        + "\n[mono]\nmax_creations_per_second = 10\ninject_tries = 5\nthreads_per_cpu = 1\n";
    let line = text[..text.find("[mono]").unwrap()].matches('\n').count() + 1;
    let e = policy_text_refused(&text, "p.toml");
    assert_error(
        &e,
        "p.toml",
        line,
        "mono",
        &[
            "`[mono]` is for model = \"mono\"",
            "this policy's model is \"classic\"",
        ],
    );
    assert_eq!(e.len(), 1, "{e}");
    // And a [net20] or [blocking] table the same way.
    for (table, model) in [("net20", "net20"), ("blocking", "portable")] {
        let text = net_classic_text() + &format!("\n[{table}]\n");
        let e = policy_text_refused(&text, "p.toml");
        assert_eq!(e.path(), Some(table));
        assert!(
            e.message().contains(&format!("is for model = \"{model}\"")),
            "{e}"
        );
    }
}

#[test]
fn mono_policy_without_its_table() {
    let text = policy_text("mono.toml");
    let cut = &text[..text.find("\n[mono]").unwrap()];
    let e = policy_text_refused(cut, "p.toml");
    assert_error(
        &e,
        "p.toml",
        1,
        "mono",
        &["missing table `[mono]`", "mono.toml"],
    );
}

#[test]
fn wrapping_policy_with_a_model_key() {
    let text = "name = \"w\"\nbase = \"net6\"\nmodel = \"portable\"\n[throttle]\nkind = \"semaphore\"\nlimit = 2\n[gate]\nperiod_ms = 250\n";
    let e = policy_text_refused(text, "w.toml");
    assert_error(
        &e,
        "w.toml",
        3,
        "model",
        &[
            "a wrapping policy (`base = \"net6\"`)",
            "`model` is not allowed here",
            "name, aliases, description, base and [throttle]",
        ],
    );
    assert_eq!(e.len(), 2, "{e}");
    let second = e.diagnostics().nth(1).unwrap();
    assert_eq!(second.path.as_deref(), Some("gate"));
    assert_eq!(second.line, Some(7));
}

#[test]
fn wrapping_policy_resolves_its_base() {
    use poolsim::policy::config::{ThreadCount, ThrottleConfig, ThrottleKind};
    let text = "name = \"mine\"\naliases = [\"m\"]\nbase = \"NET5\"\n[throttle]\nkind = \"semaphore\"\nlimit = \"4*cores\"\n";
    let p = parse_policy(text, "w.toml").unwrap();
    let base = resolve_policy("net-classic").unwrap();
    assert_eq!(p.name, "mine");
    assert_eq!(p.aliases, ["m"]);
    assert_eq!(p.model, base.model);
    assert_eq!(p.gate, base.gate);
    assert_eq!(
        p.throttle,
        Some(ThrottleConfig {
            kind: ThrottleKind::Semaphore,
            limit: ThreadCount::PerCore(4)
        })
    );
    // The built-in throttled policies, by file too.
    let path = format!(
        "{}/policies/net-classic-throttled.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    assert_eq!(
        resolve_policy(&path).unwrap(),
        resolve_policy("net5-throttled").unwrap()
    );
}

#[test]
fn wrapping_an_already_throttled_policy() {
    let text = "base = \"net-classic-throttled\"\n[throttle]\nkind = \"semaphore\"\nlimit = 2\n";
    let e = policy_text_refused(text, "w.toml");
    assert_error(
        &e,
        "w.toml",
        2,
        "throttle",
        &[
            "\"net-classic-throttled\" already has a throttle",
            "concurrent-exclusive, limit 2*cores",
            "do not stack",
        ],
    );
}

#[test]
fn wrapping_an_unknown_base() {
    let e = policy_text_refused("base = \"net-clasic\"\n", "w.toml");
    assert_error(
        &e,
        "w.toml",
        1,
        "base",
        &[
            "unknown base policy \"net-clasic\"",
            "did you mean \"net-classic\"?",
            "net6",
        ],
    );
    let e = policy_text_refused("base = \"no/such/base.toml\"\n", "w.toml");
    assert_error(
        &e,
        "w.toml",
        1,
        "base",
        &["\"no/such/base.toml\" not found"],
    );
}

#[test]
fn wrapper_cycle_names_the_chain() {
    let dir = scratch_dir("cycle");
    std::fs::write(dir.join("a.toml"), "base = \"b.toml\"\n").unwrap();
    std::fs::write(
        dir.join("b.toml"),
        "# b wraps a\nbase = \"a.toml\"\n[throttle]\nkind = \"semaphore\"\nlimit = 2\n",
    )
    .unwrap();
    let a = dir.join("a.toml");
    let e = poolsim::policy_file::load_policy(&a).unwrap_err();
    let shown = e.to_string();
    let a_shown = a.display().to_string();
    let b_shown = dir.join("b.toml").display().to_string();
    assert_error(
        &e,
        &a_shown,
        1,
        "base",
        &["the base policy \"b.toml\"", "does not load"],
    );
    let second = e.diagnostics().nth(1).unwrap();
    assert_eq!(second.file.as_deref(), Some(b_shown.as_str()), "{shown}");
    assert_eq!(second.line, Some(2));
    assert_eq!(second.path.as_deref(), Some("base"));
    assert!(
        second.message.contains(&format!(
            "wrapping cycle: {a_shown} -> {b_shown} -> {a_shown}"
        )),
        "{shown}"
    );

    // A policy naming itself.
    std::fs::write(dir.join("self.toml"), "base = \"self.toml\"\n").unwrap();
    let e = poolsim::policy_file::load_policy(&dir.join("self.toml")).unwrap_err();
    assert!(
        e.message().starts_with("a policy cannot wrap itself"),
        "{e}"
    );
    assert_eq!(e.len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_model_policy_with_a_throttle_table() {
    let text = net_classic_text() + "\n[throttle]\nkind = \"semaphore\"\nlimit = 2\n";
    let e = policy_text_refused(&text, "p.toml");
    assert_eq!(e.path(), Some("throttle"));
    assert!(e.message().contains("goes in a wrapping policy"), "{e}");
    assert!(e.help().unwrap().contains("base = \"net-classic\""), "{e}");
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

    let e = resolve_policy("java").unwrap_err();
    assert!(
        e.to_string().contains("built-in policies: net-classic"),
        "{e}"
    );
    for name in [
        "net6",
        "net8",
        "mono",
        "net20-sp1",
        "net20",
        "dedicated-threads",
        "coreclr3-linux",
        "net6-throttled",
    ] {
        assert!(e.to_string().contains(name), "{name} not listed: {e}");
    }
}

#[test]
fn policy_names_and_paths_resolve() {
    assert_eq!(resolve_policy("NET5").unwrap().name, "net-classic");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/policies/net-classic.toml");
    assert_eq!(resolve_policy(path).unwrap().name, "net-classic");
    let e = resolve_policy("policies/no-such-policy.toml").unwrap_err();
    assert!(e.to_string().contains("not found"), "{e}");
}
