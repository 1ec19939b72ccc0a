//! The scenario a command simulates: its file, `--set`, `--seed` and
//! `--workload-seed` (flattened into `run`, `explain` and `compare`), and
//! the one way it is loaded with its policy.

use std::path::{Path, PathBuf};

use clap::Args;

use poolsim::diagnostics::read_text;
use poolsim::policy::PolicyConfig;
use poolsim::policy_file::{resolve_policy, resolve_policy_for_scenario_file};
use poolsim::scenario::Scenario;
use poolsim::scenario::load::load_scenario;
use poolsim::sweep::run::with_settings;

use super::Failure;

#[derive(Args, Debug, Clone, Default)]
pub struct ScenarioArgs {
    /// The scenario file (TOML).
    #[arg(value_name = "SCENARIO")]
    pub file: PathBuf,
    /// Try a change without editing the file: KEY=VALUE, a number at a
    /// TOML path as `sweep --set` takes one (pool.min_threads=16,
    /// group.requests.count=200, policy.gate.period_ms=250). Repeat for
    /// several.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Seed for every random stream, instead of the scenario's `seed`.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Seed of the workload alone (Poisson arrivals, drawn durations),
    /// instead of --seed: with `--seed K --workload-seed S`, the pool of
    /// seed K on the workload of seed S, as `run --runs --fixed-arrivals`
    /// simulates its seed K (every run on the first seed's arrivals).
    #[arg(long, value_name = "S")]
    pub workload_seed: Option<u64>,
}

impl ScenarioArgs {
    /// The file alone, as written (`measure`, `validate`).
    pub fn file(path: &Path) -> ScenarioArgs {
        ScenarioArgs {
            file: path.to_path_buf(),
            ..ScenarioArgs::default()
        }
    }

    /// The scenario and the policy `policy` names (`None`: the scenario's
    /// own `pool.policy`).
    pub fn load(&self, policy: Option<&str>) -> Result<(Scenario, PolicyConfig), Failure> {
        let (scenario, mut policies) = self.load_each(&[policy])?;
        let policy = policies.pop().expect("one policy asked for, one given");
        Ok((scenario, policy))
    }

    /// The scenario and each policy of `policies` (`None`: the scenario's
    /// own). The file is loaded as written first (its own messages, with
    /// lines); with `--set`, then edited, through the checks of a sweep's
    /// grid point; then the seeds are applied. A `--policy` flag is
    /// resolved from the current directory; the policy the scenario names,
    /// beside the scenario file first.
    pub fn load_each(
        &self,
        policies: &[Option<&str>],
    ) -> Result<(Scenario, Vec<PolicyConfig>), Failure> {
        let mut scenario = load_scenario(&self.file)?;
        let mut resolved = Vec::with_capacity(policies.len());
        if !self.set.is_empty() {
            let file = self.file.display().to_string();
            let text = read_text(&self.file, &file)?;
            for &policy in policies {
                let (s, p) = with_settings(&text, &file, policy, &self.set)?;
                scenario = s;
                resolved.push(p);
            }
        }
        if let Some(seed) = self.seed {
            scenario.seed = seed;
        }
        if let Some(seed) = self.workload_seed {
            scenario.workload_seed = Some(seed);
        }
        if self.set.is_empty() {
            for &policy in policies {
                resolved.push(match policy {
                    Some(flag) => resolve_policy(flag)?,
                    None => resolve_policy_for_scenario_file(&scenario.pool.policy, &self.file)?,
                });
            }
        }
        Ok((scenario, resolved))
    }
}
