//! The corpus of bad scenario files, `tests/corpus/`: every `NAME.toml`
//! with a `NAME.expected` beside it must be refused — by the scenario loader
//! or, when the file parses, by resolving its policy as the CLI does —
//! without a panic, and the error must contain every line of
//! `NAME.expected` (the `file:line:col` prefix, the TOML path, the gist of
//! the message and of the help). The other `.toml` files there are policy
//! files that corpus scenarios name.
//!
//! To add a case: write `NAME.toml` and `NAME.expected`; `poolsim run
//! tests/corpus/NAME.toml` shows the message to take the fragments from.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::process::Command;

use poolsim::diagnostics::LoadError;
use poolsim::policy_file::{resolve_policy_for_scenario, resolve_policy_for_scenario_file};
use poolsim::scenario::load::load_scenario;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

/// One case: its name, its scenario file and the fragments its error must hold.
struct Case {
    name: String,
    scenario: PathBuf,
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
            let expected = text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_string)
                .collect();
            Case {
                scenario: dir.join(format!("{name}.toml")),
                name,
                expected,
            }
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

#[test]
fn every_corpus_file_is_refused_with_its_expected_message() {
    let cases = cases();
    let mut failures = Vec::new();
    for case in &cases {
        let path = case.scenario.clone();
        let outcome = catch_unwind(AssertUnwindSafe(|| load_as_the_cli_does(&path)));
        match outcome {
            Err(_) => failures.push(format!("{}: the loader panicked", case.name)),
            Ok(Ok(())) => failures.push(format!("{}: accepted", case.name)),
            Ok(Err(e)) => {
                let shown = e.to_string();
                let missing: Vec<&String> = case
                    .expected
                    .iter()
                    .filter(|f| !shown.contains(f.as_str()))
                    .collect();
                if !missing.is_empty() {
                    failures.push(format!(
                        "{}: the error lacks {missing:?}; it reads:\n{shown}",
                        case.name
                    ));
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
            case.scenario.is_file(),
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
        if cases.iter().any(|c| &c.scenario == path) {
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
