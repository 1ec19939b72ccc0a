//! The edges a newcomer meets first: the starter template's claims, how
//! durations read, messages for mistaken input, exit codes of a known miss,
//! and `--help` examples. Each test states the behaviour a first-time user
//! relies on.

use poolsim::scenario::load::parse_scenario;

use crate::common::poolsim;

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `poolsim new`'s template marks exactly the keys a scenario cannot do
/// without: dropping a key marked `required` is refused with "missing key",
/// dropping any other key still loads.
#[test]
fn the_starter_template_marks_exactly_the_required_keys() {
    let o = poolsim(&["new", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let starter = stdout(&o);
    parse_scenario(&starter, "starter.toml").expect("the starter loads as it is");
    let lines: Vec<&str> = starter.lines().collect();
    let mut required = Vec::new();
    let mut optional = 0;
    for (k, line) in lines.iter().enumerate() {
        let code = line.split('#').next().unwrap_or("");
        let Some((key, _)) = code.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if key.is_empty() || key.starts_with('[') {
            continue;
        }
        let without: String = lines
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != k)
            .map(|(_, l)| format!("{l}\n"))
            .collect();
        let marked = line.contains("required");
        match parse_scenario(&without, "starter.toml") {
            Ok(_) => assert!(!marked, "`{key}` is marked required but loads without it"),
            Err(e) => {
                assert!(marked, "`{key}` is not marked required, yet: {e}");
                assert!(e.to_string().contains("missing key"), "{e}");
                required.push(key.to_string());
            }
        }
        if !marked {
            optional += 1;
        }
    }
    assert_eq!(required, ["cores", "policy", "count", "body"]);
    assert!(optional >= 5, "{optional} optional keys shown");
    // The header names the same four.
    let header: String = lines.iter().take(8).map(|l| format!("{l}\n")).collect();
    for key in &required {
        assert!(
            header.contains(key.as_str()),
            "header omits {key}: {header}"
        );
    }
}

/// A listed known miss is printed as one, with its reason, and does not fail
/// a user's run; `--strict` fails on it (for a CI that wants every row).
#[test]
fn reproduce_exits_0_on_a_listed_known_miss_and_1_with_strict() {
    let o = poolsim(&["reproduce", "003"]);
    let out = stdout(&o);
    assert!(out.contains("known miss: "), "{out}");
    assert!(!out.contains("FAIL"), "{out}");
    assert!(out.contains("1 known miss"), "{out}");
    assert_eq!(o.status.code(), Some(0), "{out}");
    let strict = poolsim(&["reproduce", "003", "--strict"]);
    assert_eq!(strict.status.code(), Some(1));
    assert_eq!(stdout(&strict), out, "--strict changes only the exit code");
    // A seed with no miss passes either way.
    let clean = poolsim(&["reproduce", "001", "--strict"]);
    assert_eq!(clean.status.code(), Some(0), "{}", stdout(&clean));
}

/// `Cargo.toml` states the oldest Rust that builds poolsim, and the README
/// names the same one (`.ci/run` builds with that toolchain).
#[test]
fn the_minimum_rust_is_stated_once_and_the_readme_agrees() {
    let manifest = std::fs::read_to_string(crate::common::repo_path("Cargo.toml")).unwrap();
    let version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .map(|v| v.trim_matches('"').to_string())
        .expect("Cargo.toml states rust-version");
    let parts: Vec<u32> = version.split('.').map(|p| p.parse().unwrap()).collect();
    assert!(
        parts.len() >= 2 && parts[0] == 1 && parts[1] >= 85,
        "{version}: edition 2024 needs 1.85+"
    );
    let readme = std::fs::read_to_string(crate::common::repo_path("README.md")).unwrap();
    assert!(
        readme.contains(&format!("Rust {version} or newer")),
        "the README names the minimum Rust ({version})"
    );
    let ci = std::fs::read_to_string(crate::common::repo_path(".ci/run")).unwrap();
    assert!(
        ci.contains("rust-version"),
        ".ci/run checks the stated minimum"
    );
}

/// Writes `text` to a fresh temporary scenario file.
fn scenario_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("poolsim-newcomer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Summaries read in people's units: a starving stream's time starved never
/// shows `60.0 s`, probe latencies are humanised like everything else, and
/// `compare` lists quantiles in the order p50, p95, p99, max.
#[test]
fn summaries_read_durations_in_units_and_quantiles_in_order() {
    // Seed 003's unthrottled burst: probes answered after seconds.
    let o = poolsim(&[
        "run",
        "scenarios/seed-003-sync-unthrottled.toml",
        "--items",
        "0",
    ]);
    let out = stdout(&o);
    let probes = out
        .lines()
        .find(|l| l.starts_with("probes"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        !probes.contains(".000 ms") && (probes.contains(" s ") || probes.ends_with(" s")),
        "{probes}"
    );
    for line in out.lines() {
        assert!(!line.contains(" 60.0 s"), "{line}");
    }
    let o = poolsim(&[
        "compare",
        "scenarios/seed-001-burst.toml",
        "--policy",
        "net5",
        "--policy",
        "net6",
    ]);
    let out = stdout(&o);
    for measure in ["start delay", "latency"] {
        let order: Vec<usize> = ["p50", "p95", "p99", "max"]
            .iter()
            .map(|q| {
                out.find(&format!("{measure} {q}"))
                    .unwrap_or_else(|| panic!("no `{measure} {q}`: {out}"))
            })
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{measure}: {out}");
    }
}

/// A negative duration on the command line is named as such (not clap's
/// tip to write `-- -5`); a deadlocked run with nothing finished claims no
/// latency and counts its one thread in words.
#[test]
fn mistaken_input_and_an_empty_result_get_plain_messages() {
    for flag in ["--until-ms", "--from-ms", "--to-ms"] {
        let o = poolsim(&["run", "scenarios/seed-001-burst.toml", flag, "-5"]);
        assert_eq!(o.status.code(), Some(2), "{flag}");
        let err = stderr(&o);
        assert!(err.contains("must not be negative"), "{flag}: {err}");
        assert!(!err.contains("-- -5"), "{flag}: {err}");
    }
    let o = poolsim(&[
        "explain",
        "scenarios/seed-001-burst.toml",
        "--from-ms",
        "-1",
    ]);
    assert!(
        stderr(&o).contains("must not be negative"),
        "{}",
        stderr(&o)
    );

    let path = scenario_file(
        "one-thread-deadlock.toml",
        "[machine]\ncores = 1\n[pool]\npolicy = \"net5\"\nmax_threads = 1\n\
         [[group]]\ncount = 3\nbody = [ { wait_ms = 100 } ]\n",
    );
    let o = poolsim(&["run", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3));
    let out = stdout(&o);
    assert!(out.contains("latency       - (no item finished)"), "{out}");
    assert!(out.contains("no item finished)"), "{out}");
    assert!(!out.contains("p50 0.0 ms   p95 0.0 ms"), "{out}");
    assert!(out.contains("the pool's one thread is blocked"), "{out}");
    assert!(!out.contains("all 1 threads"), "{out}");
}

/// Every command's `--help` ends with examples and its exit codes.
#[test]
fn every_command_help_has_examples_and_exit_codes() {
    let o = poolsim(&["--help"]);
    let top = stdout(&o);
    let commands: Vec<&str> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 11, "{top}");
    for cmd in commands {
        let o = poolsim(&[cmd, "--help"]);
        assert!(o.status.success(), "{cmd}");
        let out = stdout(&o);
        assert!(
            out.contains("Examples:"),
            "{cmd} --help has no examples: {out}"
        );
        assert!(
            out.contains("Exit codes:"),
            "{cmd} --help has no exit codes: {out}"
        );
        // Each example line names a real command.
        let examples = out.split("Examples:").nth(1).unwrap();
        assert!(examples.contains(&format!("poolsim {cmd}")), "{cmd}: {out}");
    }
}
