//! `[machine] processors`: the runtime sizes its pool by the processors it
//! sees (`DOTNET_PROCESSOR_COUNT`), the work runs on the cores.

use crate::common::{poolsim, temp_dir};

fn run_json(path: &std::path::Path) -> serde_json::Value {
    let out = poolsim(&["run", path.to_str().unwrap(), "--json", "--items", "0"]);
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).expect("JSON")
}

const EIGHT_ON_TWO: &str = r#"
name = "8 x 100 ms of CPU on 2 cores that the runtime sees as 8 processors"
[machine]
cores = 2
processors = 8
[pool]
policy = "net8"
[[group]]
name = "compute"
count = 8
body = [ { cpu_ms = 100 } ]
"#;

#[test]
fn the_pool_sizes_by_processors_and_the_work_runs_on_cores() {
    let dir = temp_dir("processors");
    let eight = dir.join("eight.toml");
    std::fs::write(&eight, EIGHT_ON_TWO).unwrap();
    let two = dir.join("two.toml");
    std::fs::write(&two, EIGHT_ON_TWO.replace("processors = 8\n", "")).unwrap();

    let seen_as_eight = run_json(&eight);
    let plain = run_json(&two);
    // Eight processors: eight threads at once (the default minimum), all
    // eight items start at once and share two cores: 8 x 100 ms / 2, at
    // the run's CPU rate (net8's cpu_second_ms: up to 7.3 % slow) plus the
    // threads' starts.
    assert_eq!(seen_as_eight["threads_peak"], 8, "{seen_as_eight}");
    assert_eq!(seen_as_eight["processors"], 8);
    let makespan = seen_as_eight["makespan_ms"].as_f64().unwrap();
    assert!((400.0..450.0).contains(&makespan), "{makespan}");
    // Two processors: two threads, four rounds of two; the same CPU time.
    assert!(plain["threads_peak"].as_u64().unwrap() <= 3, "{plain}");
    assert!(plain.get("processors").is_none());
    let makespan = plain["makespan_ms"].as_f64().unwrap();
    assert!((400.0..450.0).contains(&makespan), "{makespan}");

    // The text summary names the runtime's count beside the cores.
    let out = poolsim(&["run", eight.to_str().unwrap(), "--items", "0"]);
    let out = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.contains("cores 2   processors 8 (the runtime's count)"),
        "{out}"
    );
}
