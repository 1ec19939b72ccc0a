//! `run --set KEY=VALUE`: a change tried without editing the file gives
//! the same run as the file edited by hand.

use crate::common::{poolsim, repo_path};

#[test]
fn run_set_equals_the_file_edited_by_hand() {
    let original = std::fs::read_to_string(repo_path("scenarios/seed-001-burst.toml")).unwrap();
    assert!(
        !original.contains("min_threads"),
        "the seed sets no minimum"
    );
    let edited = original.replacen("[pool]\n", "[pool]\nmin_threads = 10\n", 1);
    assert_ne!(edited, original);
    let dir = std::env::temp_dir().join(format!("poolsim-settings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The same file name, so that a default name would agree too.
    let path = dir.join("seed-001-burst.toml");
    std::fs::write(&path, edited).unwrap();

    let by_hand = poolsim(&["run", path.to_str().unwrap(), "--json"]);
    let by_set = poolsim(&[
        "run",
        "scenarios/seed-001-burst.toml",
        "--set",
        "pool.min_threads=10",
        "--json",
    ]);
    assert!(
        by_set.status.success(),
        "{}",
        String::from_utf8_lossy(&by_set.stderr)
    );
    let mut a: serde_json::Value = serde_json::from_slice(&by_hand.stdout).unwrap();
    let mut b: serde_json::Value = serde_json::from_slice(&by_set.stdout).unwrap();
    assert_eq!(b["changed"], serde_json::json!(["pool.min_threads=10"]));
    b.as_object_mut().unwrap().remove("changed");
    a.as_object_mut().unwrap().remove("changed");
    assert_eq!(a, b);
    // And it changed the run: the tenth item no longer starts seconds late.
    assert!(b["start_delay_ms"]["max"].as_f64().unwrap() < 100.0, "{b}");

    let table = poolsim(&[
        "run",
        "scenarios/seed-001-burst.toml",
        "--set",
        "pool.min_threads=10",
    ]);
    let out = String::from_utf8_lossy(&table.stdout);
    assert!(out.contains("changed       pool.min_threads=10"), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn run_set_refuses_a_range_a_typo_and_a_value_out_of_range() {
    for (set, says) in [
        ("pool.min_threads=1..4", "give one value here"),
        ("pool.min_thread=4", "did you mean `min_threads`"),
        ("pool.min_threads=0", "must be between 1"),
        ("min_threads", "expected KEY=VALUES"),
    ] {
        let o = poolsim(&["run", "scenarios/seed-001-burst.toml", "--set", set]);
        assert_eq!(o.status.code(), Some(2), "{set}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{set}: {err}");
        assert!(!err.contains("grid point"), "{set}: {err}");
    }
}

/// A `policy.` key changes the policy, not the scenario: a gate that ticks
/// every 250 ms injects the seed's late threads every 750 ms instead of
/// every second (the starvation delay is still 500 ms), so the items wait
/// less on average (the tenth still waits for the first thread to free).
#[test]
fn run_set_changes_a_policy_constant() {
    let json = |extra: &[&str]| {
        let mut args = vec!["run", "scenarios/seed-001-burst.toml", "--json"];
        args.extend_from_slice(extra);
        let o = poolsim(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let written = json(&[]);
    let faster = json(&["--set", "policy.gate.period_ms=250"]);
    let mean_delay = |v: &serde_json::Value| v["start_delay_ms"]["mean"].as_f64().unwrap();
    // Items 5-8 start at 1380, 2130, 2880, 3630 ms instead of 1630, 2630,
    // 3630 and 4000 (a freed thread): 1,870 ms less over ten items.
    let saved = mean_delay(&written) - mean_delay(&faster);
    assert!((saved - 187.0).abs() < 1.0, "{saved}");
    assert_eq!(faster["threads_created"].as_u64(), Some(9));
    assert_eq!(written["threads_created"].as_u64(), Some(8));
}

/// `explain` and `compare` take the same `--set` as `run`, and it changes
/// what they report.
#[test]
fn explain_and_compare_take_set_like_run() {
    let explain = |extra: &[&str]| {
        let mut args = vec!["explain", "scenarios/seed-001-burst.toml"];
        args.extend_from_slice(extra);
        let o = poolsim(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let written = explain(&[]);
    let raised = explain(&["--set", "pool.min_threads=10"]);
    assert!(written.contains("goal starts at 4 threads"), "{written}");
    assert!(raised.contains("goal starts at 10 threads"), "{raised}");

    let compare = |extra: &[&str]| {
        let mut args = vec![
            "compare",
            "scenarios/seed-001-burst.toml",
            "--policy",
            "net5",
            "--policy",
            "net6",
            "--json",
        ];
        args.extend_from_slice(extra);
        let o = poolsim(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert_ne!(compare(&[]), compare(&["--set", "pool.min_threads=10"]));
    let o = poolsim(&[
        "compare",
        "scenarios/seed-001-burst.toml",
        "--policy",
        "net5",
        "--set",
        "pool.min_thread=10",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("did you mean `min_threads`"));
}
