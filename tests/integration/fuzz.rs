//! A smoke run of the fuzzer (`poolsim::fuzz`, driven at length by
//! `cargo run --release --example fuzz_scenarios`): a few hundred mutated
//! scenario and policy files, each loaded and, if it loads, simulated under
//! small limits. Nothing may panic, and enough inputs must load and run for
//! the run to mean something.

use std::path::Path;

use poolsim::engine::SimOptions;
#[path = "../../examples/fuzz_scenarios/fuzzer.rs"]
mod fuzzer;

use fuzzer::{Generator, Limits, Stats, Verdict, check, load_seeds};
use poolsim::time::SimDuration;

#[test]
fn a_few_hundred_mutated_inputs_load_or_are_refused_without_a_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dirs = [
        root.join("scenarios"),
        root.join("tests/corpus"),
        root.join("policies"),
    ];
    let dirs: Vec<&Path> = dirs.iter().map(|d| d.as_path()).collect();
    let seeds = load_seeds(&dirs).expect("the seed files are readable");
    assert!(seeds.len() > 100, "only {} seed files", seeds.len());
    // Small limits: the test runs unoptimised.
    let limits = Limits {
        options: SimOptions {
            until: Some(SimDuration::from_ms(5_000)),
            max_events: 100_000,
        },
        max_items: 20_000,
    };
    let mut generator = Generator::new(&seeds, 2024);
    let mut stats = Stats::default();
    let mut crashes = Vec::new();
    for i in 0..400 {
        let input = generator.next_input().expect("seeds");
        let seed = generator.seed(input.seed);
        let verdict = check(&input.bytes, seed.kind, &seed.dir, &limits);
        if let Verdict::Panicked(message) = &verdict {
            crashes.push(format!(
                "input {i} (from {}, {:?}) panicked: {message}\n{}",
                seed.name,
                input.mutations,
                String::from_utf8_lossy(&input.bytes)
            ));
        }
        stats.add(&verdict);
        generator.record(&input, &verdict);
    }
    assert!(crashes.is_empty(), "{}", crashes.join("\n\n"));
    assert_eq!(stats.tried, 400);
    assert!(
        stats.parsed >= 40,
        "only {} of 400 inputs loaded",
        stats.parsed
    );
    assert!(
        stats.simulated >= 30,
        "only {} of 400 inputs simulated",
        stats.simulated
    );
}
