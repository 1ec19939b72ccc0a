//! The policy functions of a caller with a file system: [`Files`] over
//! `std::fs`, and the resolving functions the command line calls with it.

use std::path::Path;

use super::resolve::{
    Files, load_policy_in, parse_policy_in, resolve_policy_for_scenario_in, resolve_policy_in,
};
use crate::diagnostics::LoadError;
use crate::policy::config::PolicyConfig;

/// Policy files read from the disk, paths relative to the current directory.
#[derive(Clone, Copy, Debug, Default)]
pub struct StdFiles;

impl Files for StdFiles {
    fn read(&self, path: &Path, shown: &str) -> Result<String, LoadError> {
        crate::diagnostics::read_text(path, shown)
    }
    fn is_file(&self, path: &Path) -> bool {
        path.is_file()
    }
    fn identity(&self, path: &Path) -> Option<String> {
        std::fs::canonicalize(path)
            .ok()
            .map(|p| p.display().to_string())
    }
}

/// Parses and validates policy TOML `text`; `file` names it in messages, its
/// stem is the default `name`, and its directory is where a relative `base`
/// path is looked up first.
pub fn parse_policy(text: &str, file: &str) -> Result<PolicyConfig, LoadError> {
    parse_policy_in(text, file, &StdFiles)
}

/// Reads and validates the policy file at `path`.
pub fn load_policy(path: &Path) -> Result<PolicyConfig, LoadError> {
    load_policy_in(path, &StdFiles)
}

/// A built-in policy by name or alias (case-insensitive); else, if
/// `name_or_path` looks like a path (contains `/` or `\`, or ends in
/// `.toml`), the policy file there; else an error listing the known names.
pub fn resolve_policy(name_or_path: &str) -> Result<PolicyConfig, LoadError> {
    resolve_policy_in(name_or_path, &StdFiles)
}

/// Like [`resolve_policy`], but a relative policy path written in a scenario
/// file is looked up beside that file first (`scenario_dir`), and an error
/// about the name itself (unknown, file not found) names the scenario key
/// it came from, `pool.policy`.
pub fn resolve_policy_for_scenario(
    name_or_path: &str,
    scenario_dir: Option<&Path>,
) -> Result<PolicyConfig, LoadError> {
    resolve_policy_for_scenario_in(name_or_path, scenario_dir, &StdFiles)
}

/// Like [`resolve_policy_for_scenario`] for the scenario file at
/// `scenario_file` (as the CLI has it): an error about the `policy` value
/// itself also gives the scenario file, line and column of that value.
pub fn resolve_policy_for_scenario_file(
    name_or_path: &str,
    scenario_file: &Path,
) -> Result<PolicyConfig, LoadError> {
    resolve_policy_for_scenario(name_or_path, scenario_file.parent()).map_err(|e| {
        if e.file().is_some() {
            return e;
        }
        let file = scenario_file.display().to_string();
        let Ok(text) = std::fs::read_to_string(scenario_file) else {
            return e;
        };
        match crate::diagnostics::value_span(&text, &["pool", "policy"]) {
            Some(span) => e.placed_in(&file, &text, span.start),
            None => e,
        }
    })
}
