//! Engine speed benchmark (release build): simulates a scenario several
//! times and prints the median wall time and events per second. The engine
//! alone: `trace::Discard` keeps no event and no item record, as in
//! `--example bench`.
//!
//! cargo run --release --example bench_engine -- [SCENARIO] [RUNS]

use std::time::Instant;

use poolsim::engine::{SimOptions, simulate};
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::load::load_scenario;
use poolsim::trace::Discard;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .unwrap_or_else(|| "scenarios/bench-100k-cpu.toml".into());
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(7);
    let scenario = match load_scenario(std::path::Path::new(&path)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let policy = match resolve_policy(&scenario.pool.policy) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let mut times = Vec::new();
    let mut events = 0;
    for _ in 0..runs {
        let start = Instant::now();
        let result = simulate(&scenario, &policy, &mut Discard, &SimOptions::default());
        times.push(start.elapsed().as_secs_f64() * 1000.0);
        events = result.events;
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    println!(
        "{}: {} items, {} events; median of {} runs {:.1} ms (min {:.1}, max {:.1}); {:.1} M events/s",
        scenario.name,
        scenario.item_count(),
        events,
        runs,
        median,
        times[0],
        times[times.len() - 1],
        events as f64 / median / 1000.0
    );
}
