//! A model only the tests know, to show what a new model takes: this file
//! (the [`Policy`] and [`Model`] impls), a policy TOML naming it (`model =
//! "fixed-for-tests"`, in the test) and one line in the model registry.
//!
//! It keeps the pool at its minimum: a thread request adds a worker while
//! fewer than `min_threads` work, and nothing ever raises the goal (no gate
//! thread, no hill climbing).

use crate::policy::config::PolicyConfig;
use crate::policy::{
    Model, Policy, PolicyBase, PoolControl, RequestCause, maybe_add_working_worker,
};
use crate::scenario::Scenario;
use crate::trace::{GoalReason, ThreadId, ThreadReason};

#[derive(Debug)]
pub struct Fixed {
    base: PolicyBase,
}

impl Model for Fixed {
    fn new(config: &PolicyConfig, scenario: &Scenario) -> Fixed {
        Fixed {
            base: PolicyBase::new(config, scenario),
        }
    }
}

impl Policy for Fixed {
    fn base(&self) -> &PolicyBase {
        &self.base
    }
    fn goal(&self) -> Option<u32> {
        Some(self.base.min)
    }
    fn start(&mut self, pool: &mut dyn PoolControl) {
        pool.goal_changed(self.base.min, GoalReason::MinThreads);
    }
    fn thread_requested(&mut self, pool: &mut dyn PoolControl, _cause: RequestCause) {
        maybe_add_working_worker(pool, self.base.min, ThreadReason::Demand);
    }
    fn work_completed(&mut self, _pool: &mut dyn PoolControl, _thread: ThreadId) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::{self, SimOptions};
    use crate::policy::{ModelKind, build};
    use crate::policy_file::{BUILTIN, NoFiles, parse_policy_in};
    use crate::scenario::load::parse_scenario;
    use crate::trace::NullSink;

    #[test]
    fn a_model_registered_in_one_line_runs_from_its_policy_file() {
        // Its policy TOML: the classic pool's constants under the new model.
        let (_, classic) = BUILTIN
            .iter()
            .find(|(file, _)| *file == "net-classic.toml")
            .unwrap();
        let text = classic
            .replace("model = \"classic\"", "model = \"fixed-for-tests\"")
            .replace("name = \"net-classic\"", "name = \"fixed\"");
        assert_ne!(&text, classic);
        let config = parse_policy_in(&text, "fixed.toml", &NoFiles).unwrap();
        assert_eq!(config.model, ModelKind::FixedForTests);
        assert!(ModelKind::ALL.contains(&ModelKind::FixedForTests));

        // Ten 4 s sleepers on 4 cores: four at a time, never a fifth thread.
        let scenario = parse_scenario(
            "[machine]\ncores = 4\n[pool]\npolicy = \"fixed.toml\"\n\
             [[group]]\ncount = 10\nbody = [ { sleep_ms = 4000 } ]\n",
            "s.toml",
        )
        .unwrap();
        let run = engine::simulate(&scenario, &config, &mut NullSink, &SimOptions::default());
        assert!(run.outcome.is_completed());
        assert_eq!(run.trace.threads.len(), 4);
        let last = run.trace.items.iter().map(|i| i.finished).max().unwrap();
        assert!((last.as_ms_f64() - 12_000.0).abs() < 5.0, "{last:?}");
        // The same model behind `dyn Policy` gives the same run.
        let boxed = engine::simulate_with_policy(
            &scenario,
            &config,
            build(&config, &scenario),
            &mut NullSink,
            &SimOptions::default(),
        );
        assert_eq!(boxed.trace.items, run.trace.items);
    }
}
