//! Measures, from the calibration recordings, how long the first call of
//! each parallel API in a process takes before its first body runs: the
//! `[library.first_call_ms]` quantiles of the Linux policies
//! (`policies/coreclr3-linux.toml`, `net8.toml`, `mono.toml`).
//!
//! ```sh
//! cargo run --release --example first_call_from_fixtures
//! ```
//!
//! Sources: `tests/fixtures/calibration/first-API/RUNTIME-K.txt`, the runs of
//! `scenarios/calibration/first-API.toml` (two calls of 8 × `Thread.Sleep(50)`
//! bodies, 500 ms apart, 2 cores, tiered compilation on), 10 runs a runtime.
//! Each recording gives every item's `queued` and `started` times (µs): a
//! call's cost is its first item's `started` less its `queued` (the call's
//! instant). Printed per API and runtime: the first call's costs, sorted
//! (the quantiles at 0, 1/9, ..., 1 of ten runs), and the second call's
//! median, which the model leaves at zero.

use std::collections::BTreeMap;
use std::path::Path;

const APIS: [&str; 4] = [
    "parallel-for",
    "parallel-foreach",
    "parallel-invoke",
    "plinq",
];
const RUNTIMES: [&str; 3] = ["coreclr3", "net8", "mono"];

/// Each group's first item's `started - queued` in ms, by group.
fn costs(file: &Path) -> BTreeMap<u32, f64> {
    let text = std::fs::read_to_string(file).expect("a recording");
    let mut first: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.first() != Some(&"item") || f.len() < 7 {
            continue;
        }
        let group: u32 = f[1].parse().expect("a group");
        let queued: u64 = f[4].parse().expect("queued µs");
        let started: u64 = f[5].parse().expect("started µs");
        let e = first.entry(group).or_insert((queued, started));
        e.0 = e.0.min(queued);
        e.1 = e.1.min(started);
    }
    first
        .into_iter()
        .map(|(g, (q, s))| (g, s.saturating_sub(q) as f64 / 1000.0))
        .collect()
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/calibration");
    for api in APIS {
        println!("{api}");
        for rt in RUNTIMES {
            let dir = root.join(format!("first-{api}"));
            let mut firsts = Vec::new();
            let mut seconds = Vec::new();
            for k in 1.. {
                let file = dir.join(format!("{rt}-{k}.txt"));
                if !file.exists() {
                    break;
                }
                let c = costs(&file);
                firsts.extend(c.get(&0));
                seconds.extend(c.get(&1));
            }
            if firsts.is_empty() {
                continue;
            }
            firsts.sort_by(f64::total_cmp);
            seconds.sort_by(f64::total_cmp);
            let list: Vec<String> = firsts.iter().map(|v| format!("{v:.2}")).collect();
            println!(
                "  {rt:9} first call ({} runs): [{}]   second call, median: {:.2} ms",
                firsts.len(),
                list.join(", "),
                seconds[seconds.len() / 2]
            );
        }
    }
}
