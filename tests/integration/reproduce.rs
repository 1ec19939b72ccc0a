//! `poolsim reproduce`: every row of docs/reference.md, published vs simulated.
//!
//! Every row must pass, except the misses listed below: each is a row the
//! current models do not meet, with the reason; the test also fails if one
//! of them starts passing, so the list stays true. Tolerances are
//! docs/reference.md's and are not changed here.

use poolsim::reproduce::{KNOWN_MISSES, Row, reproduce};

fn known_miss(r: &Row) -> bool {
    poolsim::reproduce::known_miss(r).is_some()
}

#[test]
fn every_reference_row_passes_except_the_documented_misses() {
    let rows = reproduce(None);
    for seed in ["000", "001", "002", "003", "004"] {
        assert!(
            rows.iter().any(|r| r.seed == seed),
            "no row for seed {seed}"
        );
    }
    let mut problems = Vec::new();
    for r in &rows {
        match (r.pass, known_miss(r)) {
            (false, false) => problems.push(format!(
                "FAIL seed {} {} [{}]: published {} simulated {} error {} (tolerance {})",
                r.seed, r.case, r.policy, r.published, r.simulated, r.error, r.tolerance
            )),
            (true, true) => problems.push(format!(
                "seed {} {} [{}] now passes: remove it from KNOWN_MISSES",
                r.seed, r.case, r.policy
            )),
            _ => {}
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert_eq!(
        rows.iter().filter(|r| known_miss(r)).count(),
        KNOWN_MISSES.len(),
        "every known miss names an existing row"
    );
}

#[test]
fn seed_000_net6_is_about_three_times_faster_than_net5_except_plinq() {
    let rows = reproduce(Some("000"));
    let secs = |case: &str, policy: &str| -> f64 {
        let r = rows
            .iter()
            .find(|r| r.case == case && r.policy == policy)
            .unwrap_or_else(|| panic!("no row {case} {policy}"));
        r.simulated.trim_end_matches(" s").parse().unwrap()
    };
    for case in [
        "Task.Run x100 + WhenAll",
        "Parallel.Invoke in Task.Run",
        "Parallel.For in Task.Run",
    ] {
        let ratio = secs(case, "net5") / secs(case, "net6");
        assert!(ratio > 2.0, "{case}: net5/net6 = {ratio:.2}");
    }
    let plinq = secs("PLINQ in Task.Run", "net5") / secs("PLINQ in Task.Run", "net6");
    assert!(
        (plinq - 1.0).abs() < 0.1,
        "PLINQ gains nothing from net6: {plinq:.2}"
    );
}

#[test]
fn reproduce_is_deterministic() {
    let a = serde_json::to_string(&reproduce(Some("004"))).unwrap();
    let b = serde_json::to_string(&reproduce(Some("004"))).unwrap();
    assert_eq!(a, b);
}
