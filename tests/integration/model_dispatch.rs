//! `engine::simulate` compiles the engine once per model (the policy's
//! decision points inline into the event loop); `simulate_with_policy`
//! runs the same model through a `dyn Policy`. Both must give the same
//! run, event for event, under every built-in policy.

use poolsim::engine::{self, SimOptions};
use poolsim::policy;
use poolsim::policy_file::builtin_policies;
use poolsim::trace::EventLog;

use crate::common::scenario;

#[test]
fn the_per_model_engine_and_the_dyn_policy_engine_agree() {
    let options = SimOptions::default();
    let mut models = std::collections::BTreeSet::new();
    for name in [
        "example-mixed.toml",
        "seed-001-burst.toml",
        "seed-003-async-throttled.toml",
        "seed-000-plinq.toml",
        "seed-004-test2-short-sleeps.toml",
    ] {
        let s = scenario(name);
        for config in builtin_policies() {
            models.insert(format!("{:?}", config.model));
            let mut direct = EventLog::default();
            let a = engine::simulate(&s, &config, &mut direct, &options);
            let mut through_dyn = EventLog::default();
            let b = engine::simulate_with_policy(
                &s,
                &config,
                policy::build(&config, &s),
                &mut through_dyn,
                &options,
            );
            let what = format!("{name} under {}", config.name);
            assert_eq!(a.outcome, b.outcome, "{what}: outcome");
            assert_eq!(a.events, b.events, "{what}: event count");
            assert_eq!(
                format!("{:?}", a.trace),
                format!("{:?}", b.trace),
                "{what}: trace"
            );
            assert_eq!(
                format!("{:?}", direct.events),
                format!("{:?}", through_dyn.events),
                "{what}: detail events"
            );
        }
    }
    // Every kind of model went through both paths.
    assert_eq!(models.len(), 5, "models covered: {models:?}");
}
