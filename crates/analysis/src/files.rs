//! The file system, for callers that have one: scenario and policy files
//! read from the disk. The core reads no file itself; it takes text, and
//! policy files through its [`Files`] trait, which [`StdFiles`] implements
//! over `std::fs`. The functions here keep the names the command line and
//! the tests know (`load_scenario`, `resolve_policy`, ...).

use std::io::Read;
use std::path::Path;

use poolsim_core::diagnostics::{Diagnostic, LoadError, MAX_FILE_BYTES, text_of_bytes};
use poolsim_core::policy::PolicyConfig;
use poolsim_core::policy_file::{
    Files, load_policy_in, parse_policy_in, resolve_policy_for_scenario_in, resolve_policy_in,
};
use poolsim_core::scenario::Scenario;
use poolsim_core::scenario::load::parse_scenario;

/// Reads a UTF-8 text file of at most [`MAX_FILE_BYTES`], turning I/O and
/// encoding failures into a [`LoadError`] naming `file`.
pub fn read_text(path: &Path, file: &str) -> Result<String, LoadError> {
    let cannot_read = |e: std::io::Error| {
        let d = Diagnostic::new(format!("cannot read the file: {e}")).in_file(file);
        if e.kind() == std::io::ErrorKind::NotFound {
            d.with_help("check the path; relative paths start from the current directory")
        } else {
            d
        }
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(cannot_read)?;
    text_of_bytes(bytes, file)
}

/// Reads and validates the scenario file at `path`. A missing or unreadable
/// file is a [`LoadError`] too.
pub fn load_scenario(path: &Path) -> Result<Scenario, LoadError> {
    let file = path.display().to_string();
    let text = read_text(path, &file)?;
    parse_scenario(&text, &file)
}

/// Policy files read from the disk, paths relative to the current directory.
#[derive(Clone, Copy, Debug, Default)]
pub struct StdFiles;

impl Files for StdFiles {
    fn read(&self, path: &Path, shown: &str) -> Result<String, LoadError> {
        read_text(path, shown)
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
    let file = scenario_file.display().to_string();
    match std::fs::read_to_string(scenario_file) {
        Ok(text) => poolsim_core::policy_file::resolve_policy_for_scenario_text_in(
            name_or_path,
            &file,
            &text,
            &StdFiles,
        ),
        Err(_) => resolve_policy_for_scenario(name_or_path, scenario_file.parent()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreadable_file_is_a_load_error() {
        let e = load_scenario(Path::new("/nonexistent/dir/s.toml")).unwrap_err();
        assert_eq!(e.file(), Some("/nonexistent/dir/s.toml"));
        assert!(e.message().starts_with("cannot read the file"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn a_device_is_not_read_forever() {
        let e = load_scenario(Path::new("/dev/zero")).unwrap_err();
        assert!(e.message().contains("larger than 64 MiB"), "{e}");
    }
}
