//! The corpus of bad scenario and policy files, `tests/corpus/`: every
//! `NAME.toml` with a `NAME.expected` beside it must be refused — by the
//! scenario loader or, when the file parses, by resolving its policy as the
//! CLI does — without a panic, and the error must contain every line of
//! `NAME.expected`, in the order written (the `file:line:col` prefix, the
//! TOML path, the gist of the message and of the help). The other `.toml`
//! files there are policy files that corpus scenarios name.
//!
//! A few lines of `NAME.expected` are not fragments:
//!
//! - `load: policy` — `NAME.toml` is a policy file, loaded on its own (as
//!   when a scenario names it) instead of as a scenario;
//! - `count: N` — the error holds exactly N diagnostics.
//!
//! To add a case: write `NAME.toml` and `NAME.expected`; `poolsim run
//! tests/corpus/NAME.toml` shows the message to take the fragments from
//! (for a policy file, a scenario naming it as its `policy`).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::process::Command;

use poolsim::diagnostics::LoadError;
use poolsim::policy_file::{
    load_policy, parse_policy, resolve_policy, resolve_policy_for_scenario,
    resolve_policy_for_scenario_file,
};
use poolsim::scenario::load::{load_scenario, parse_scenario};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

/// One case: its name, its file and what its error must hold.
struct Case {
    name: String,
    /// `NAME.toml`.
    file: PathBuf,
    /// `load: policy`: the file is a policy file, not a scenario.
    policy: bool,
    /// `count: N`: the number of diagnostics.
    count: Option<usize>,
    /// The fragments, in the order the error must hold them.
    expected: Vec<String>,
}

fn cases() -> Vec<Case> {
    let dir = corpus_dir();
    let mut cases: Vec<Case> = std::fs::read_dir(&dir)
        .expect("tests/corpus exists")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "expected"))
        .map(|p| {
            let name = p
                .file_stem()
                .and_then(|s| s.to_str())
                .expect("a UTF-8 file name")
                .to_string();
            let text = std::fs::read_to_string(&p).expect("a readable .expected file");
            let mut case = Case {
                file: dir.join(format!("{name}.toml")),
                name,
                policy: false,
                count: None,
                expected: Vec::new(),
            };
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                if line == "load: policy" {
                    case.policy = true;
                } else if let Some(n) = line.strip_prefix("count: ") {
                    let n = n.parse().expect("`count: N` with N a number");
                    case.count = Some(n);
                } else {
                    case.expected.push(line.to_string());
                }
            }
            case
        })
        .collect();
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    cases
}

/// What `poolsim run FILE` does before simulating: load the scenario, then
/// resolve its policy (a relative policy path beside the scenario first).
fn load_as_the_cli_does(path: &Path) -> Result<(), LoadError> {
    let scenario = load_scenario(path)?;
    resolve_policy_for_scenario(&scenario.pool.policy, path.parent())?;
    Ok(())
}

/// What is wrong with `e` as the error of `case`, if anything.
fn mismatch(case: &Case, e: &LoadError) -> Option<String> {
    let shown = e.to_string();
    if let Some(n) = case.count
        && e.len() != n
    {
        return Some(format!("{n} diagnostics expected, {} found", e.len()));
    }
    let mut rest = shown.as_str();
    for fragment in &case.expected {
        match rest.find(fragment.as_str()) {
            Some(at) => rest = &rest[at + fragment.len()..],
            None if shown.contains(fragment.as_str()) => {
                return Some(format!("{fragment:?} is out of order"));
            }
            None => return Some(format!("the error lacks {fragment:?}")),
        }
    }
    None
}

#[test]
fn every_corpus_file_is_refused_with_its_expected_message() {
    let cases = cases();
    let mut failures = Vec::new();
    for case in &cases {
        let path = case.file.clone();
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            if case.policy {
                load_policy(&path).map(|_| ())
            } else {
                load_as_the_cli_does(&path)
            }
        }));
        match outcome {
            Err(_) => failures.push(format!("{}: the loader panicked", case.name)),
            Ok(Ok(())) => failures.push(format!("{}: accepted", case.name)),
            Ok(Err(e)) => {
                if let Some(wrong) = mismatch(case, &e) {
                    failures.push(format!("{}: {wrong}; it reads:\n{e}", case.name));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} corpus cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

#[test]
fn the_corpus_is_complete() {
    let cases = cases();
    assert!(cases.len() >= 30, "only {} corpus cases", cases.len());
    for case in &cases {
        assert!(
            case.file.is_file(),
            "{}.expected has no {}.toml",
            case.name,
            case.name
        );
        assert!(
            case.expected.len() >= 2,
            "{}.expected should hold at least the location and the message",
            case.name
        );
    }
    // Every other .toml is a policy file that a corpus file names (a
    // scenario, or a wrapping policy naming its base).
    let files: Vec<(PathBuf, String)> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| {
            let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
            (p, text)
        })
        .collect();
    for (path, _) in &files {
        if cases.iter().any(|c| &c.file == path) {
            continue;
        }
        let file = path.file_name().and_then(|f| f.to_str()).unwrap();
        let named = format!("\"{file}\"");
        assert!(
            files
                .iter()
                .any(|(other, text)| other != path && text.contains(&named)),
            "tests/corpus/{file} has no .expected and no corpus file names it"
        );
    }
}

/// `poolsim run` on a few corpus files: exit code 2, nothing on stdout, the
/// expected message on stderr.
#[test]
fn the_binary_refuses_corpus_files_with_exit_code_2() {
    let picks = [
        "syntax-duplicate-key",
        "type-string-for-number",
        "unknown-section",
        "range-min-above-max",
        "count-sum-over-limit",
        "shape-await-in-parallel-for",
        "policy-unknown-name",
        "policy-file-bad-constant",
        "policy-wrap-cycle",
        "non-utf8",
        "empty-file",
    ];
    let cases = cases();
    for name in picks {
        let case = cases
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no corpus case {name}"));
        let output = Command::new(env!("CARGO_BIN_EXE_poolsim"))
            .args(["run", &format!("tests/corpus/{name}.toml")])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("poolsim runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
        assert!(output.stdout.is_empty(), "{name}: output on stdout");
        for fragment in &case.expected {
            assert!(
                stderr.contains(fragment.as_str()),
                "{name}: stderr lacks {fragment:?}:\n{stderr}"
            );
        }
    }
}

/// With the scenario file at hand, an unknown policy name or a missing
/// policy file is placed at the `policy` value: file, line and column.
#[test]
fn a_bad_policy_name_is_placed_in_the_scenario_file() {
    for (name, at) in [
        (
            "policy-unknown-name",
            "policy-unknown-name.toml:5:10: error at `pool.policy`",
        ),
        (
            "policy-missing-file",
            "policy-missing-file.toml:5:10: error at `pool.policy`",
        ),
    ] {
        let path = corpus_dir().join(format!("{name}.toml"));
        let scenario = load_scenario(&path).unwrap_or_else(|e| panic!("{e}"));
        let e = resolve_policy_for_scenario_file(&scenario.pool.policy, &path)
            .err()
            .unwrap_or_else(|| panic!("{name}: the policy resolved"));
        let shown = e.to_string();
        assert!(shown.contains(at), "{name}: expected {at:?} in\n{shown}");
        assert_eq!(e.line(), Some(5), "{shown}");
    }
    // A policy file's own errors keep pointing into the policy file.
    let path = corpus_dir().join("policy-file-bad-constant.toml");
    let scenario = load_scenario(&path).unwrap();
    let e = resolve_policy_for_scenario_file(&scenario.pool.policy, &path).unwrap_err();
    assert!(e.to_string().contains("bad-policy.toml:30:13:"), "{e}");
}

// --- Beside the corpus ------------------------------------------------------
// What a file cannot show: errors about a name or a path that is not a
// file, and the well-formed neighbours of corpus cases, which must load.

/// Errors with no file to place them in: a scenario that is not there, a
/// policy name (as given on the command line) that is not built in.
#[test]
fn names_and_missing_files_are_refused() {
    let e = load_scenario(Path::new("no/such/scenario.toml")).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("no/such/scenario.toml: error: cannot read the file"),
        "{e}"
    );
    let e = resolve_policy("net-clasic").unwrap_err();
    let shown = e.to_string();
    assert!(
        shown.starts_with("error: unknown policy \"net-clasic\""),
        "{shown}"
    );
    assert!(shown.contains("did you mean \"net-classic\"?"), "{shown}");
    assert!(shown.contains("net5"), "{shown}");
    assert_eq!(e.line(), None);
    let e = resolve_policy("java").unwrap_err().to_string();
    assert!(e.contains("built-in policies: net-classic"), "{e}");
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
        assert!(e.contains(name), "{name} not listed: {e}");
    }
    let e = resolve_policy("policies/no-such-policy.toml").unwrap_err();
    assert!(e.to_string().contains("not found"), "{e}");
}

/// A well-formed scenario of one group of ten items: `group` holds the
/// group's extra lines, `body` its steps.
fn scenario(group: &str, body: &str) -> String {
    format!(
        "name = \"base\"\n[machine]\ncores = 4\n[pool]\npolicy = \"net-classic\"\n\
         [[group]]\nname = \"g\"\ncount = 10\n{group}body = {body}\n[[probe]]\nevery_ms = 500\n"
    )
}

/// The neighbours of the `shape-*` and `unknown-submit*` cases that are
/// right: every submission shape by its name, await and yield in the async
/// shapes, any arrival for a shape that is not one call, `max_degree` and a
/// throttle where they belong.
#[test]
fn the_well_formed_neighbours_of_corpus_cases_load() {
    use poolsim::policy::config::ThrottleKind;
    use poolsim::scenario::{Submit, Throttle};
    let load = |text: &str| parse_scenario(text, "s.toml").unwrap_or_else(|e| panic!("{e}"));
    let s = load(&scenario("", "[ { sleep_ms = 4000 } ]"));
    assert_eq!(s.name, "base");
    assert_eq!(s.machine.cores, 4);
    assert_eq!(s.item_count(), 10);
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
        let s = load(&scenario(
            &format!("submit = \"{name}\"\n"),
            "[ { cpu_ms = 1 } ]",
        ));
        assert_eq!(s.groups[0].submit, submit);
    }
    for shape in ["parallel-foreach-async", "task-run", "when-all"] {
        load(&scenario(
            &format!("submit = \"{shape}\"\n"),
            "[ { await_ms = 5 }, \"yield\" ]",
        ));
    }
    load(&scenario(
        "submit = \"when-all\"\narrival = { every_ms = 100 }\n",
        "[ { cpu_ms = 1 } ]",
    ));
    let s = load(&scenario(
        "submit = \"parallel-foreach-async\"\nmax_degree = 4\n\
         throttle = { kind = \"semaphore\", limit = 3 }\n",
        "[ { await_ms = 10 }, \"yield\" ]",
    ));
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

/// `policies/net-classic.toml`, which most `policy-*` cases are cut from,
/// gives the expected values, as the built-in copy does.
#[test]
fn net_classic_file_gives_the_expected_values() {
    use poolsim::policy::config::{
        Comparison, FirstTick, ModelKind, RequestMode, Spread, ThreadCount, TimerDispatch,
    };
    use poolsim::time::SimDuration;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/net-classic.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let p = parse_policy(&text, "policies/net-classic.toml").unwrap();
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

/// The right neighbours of the `policy-wrapper-*` and `policy-*-base`
/// cases: a wrapper takes its base's constants (named in any case) and
/// adds its throttle; names and paths resolve alike.
#[test]
fn wrapping_policies_and_policy_names_resolve() {
    use poolsim::policy::config::{ThreadCount, ThrottleConfig, ThrottleKind};
    let text = "name = \"mine\"\naliases = [\"m\"]\nbase = \"NET5\"\n[throttle]\n\
                kind = \"semaphore\"\nlimit = \"4*cores\"\n";
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
    let dir = env!("CARGO_MANIFEST_DIR");
    assert_eq!(
        resolve_policy(&format!("{dir}/policies/net-classic-throttled.toml")).unwrap(),
        resolve_policy("net5-throttled").unwrap()
    );
    assert_eq!(resolve_policy("NET5").unwrap().name, "net-classic");
    let path = format!("{dir}/policies/net-classic.toml");
    assert_eq!(resolve_policy(&path).unwrap().name, "net-classic");
}
