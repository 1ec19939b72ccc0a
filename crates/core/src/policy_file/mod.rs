//! Policy files: TOML in, a validated [`PolicyConfig`] out, and the
//! registry of the policies compiled into the binary.
//!
//! A policy file names a model (code, in [`crate::policy`]) and gives every
//! one of its constants, in the units its key says (`_ms`, `_us`,
//! `_percent`). The core tables (`[threads]`, `[gate]`, `[hill_climbing]`,
//! `[dispatch]`, `[timers]`) are required in every file; `[blocking]`,
//! `[mono]` and `[net20]` are required exactly when the model is `portable`,
//! `mono` or `net20`, and refused otherwise.
//!
//! A *wrapping* policy names another policy with `base = "NAME-OR-PATH"`
//! instead of a model, and has only `name`, `aliases`, `description`, `base`
//! and a `[throttle]` table: it is its base with a throttle over every group.
//!
//! Where the files live: the files in `policies/` are built in (see
//! [`BUILTIN`]), so `poolsim` works from any directory; a user copies one,
//! edits a constant and passes its path (a relative path written in a
//! scenario is looked up beside the scenario first). Errors have the same
//! form as scenario errors: file, line, column, TOML path, message, help.
//!
//! Four parts, split as the scenario loader is:
//! - `registry`: the built-in files and their names and aliases;
//! - `raw`: stage one, serde types mirroring the TOML;
//! - `build`: stage two, every value checked, raw types to [`PolicyConfig`];
//! - `resolve`: names, paths and `base` chains, reading files only through
//!   the [`Files`] its caller gives (the analysis crate's `files` module
//!   reads the disk; [`NoFiles`] resolves built-ins only).
//!
//! [`PolicyConfig`]: crate::policy::PolicyConfig

mod build;
mod raw;
mod registry;
mod resolve;

pub use registry::BUILTIN;
pub use resolve::{
    Files, NoFiles, builtin_policies, load_policy_in, parse_policy_in,
    resolve_policy_for_scenario_in, resolve_policy_for_scenario_text_in, resolve_policy_in,
};

/// Helpers the unit tests of the four parts share.
#[cfg(test)]
mod test_support {
    use super::{BUILTIN, NoFiles, resolve_policy_in};
    use crate::policy::PolicyConfig;

    /// The text of the built-in file `file`.
    pub(super) fn builtin_text(file: &str) -> &'static str {
        BUILTIN
            .iter()
            .find(|(f, _)| *f == file)
            .map(|(_, t)| *t)
            .unwrap()
    }

    pub(super) fn net_classic() -> &'static str {
        builtin_text("net-classic.toml")
    }

    /// A built-in policy by name or alias.
    pub(super) fn builtin(name: &str) -> PolicyConfig {
        resolve_policy_in(name, &NoFiles).unwrap_or_else(|e| panic!("{e}"))
    }
}
