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
