//! Names, paths and `base` chains: which policy a name or path means.
//!
//! A policy file is read through [`Files`], which the caller gives: the
//! command line reads the disk (the analysis crate's `StdFiles`); a caller with no files
//! ([`NoFiles`], the browser) resolves the built-in policies only. Nothing
//! here touches the file system itself.
//!
//! A name is a built-in's name or alias (case-insensitive); a path is a
//! policy file, read here and checked by [`super::build`]. A wrapping
//! policy's `base` is looked up the same way (a built-in wraps built-ins
//! only; a file's relative `base` is looked up beside it first), with a
//! cycle check and at most [`MAX_WRAP_DEPTH`] wrappers in a chain.

use std::path::{Path, PathBuf};

use toml::Spanned;

use super::build::{build_policy, build_wrapper, wrapper_keys};
use super::raw::RawPolicy;
use super::registry::{BUILTIN, builtin_name_table, builtin_named, known_builtins};
use crate::diagnostics::{Diagnostic, LoadError, Problem, Report, did_you_mean};
use crate::policy::config::PolicyConfig;

/// Where policy files come from.
pub trait Files {
    /// The text of the file at `path` (`shown` names it in messages).
    fn read(&self, path: &Path, shown: &str) -> Result<String, LoadError>;
    /// Whether `path` is a file that can be read.
    fn is_file(&self, path: &Path) -> bool;
    /// A name unique to the file at `path` (its canonical path), for the
    /// wrapping-cycle check; `None` when it has none.
    fn identity(&self, path: &Path) -> Option<String>;
}

/// No files: only built-in policies resolve, and a path is "not found".
#[derive(Clone, Copy, Debug, Default)]
pub struct NoFiles;

impl Files for NoFiles {
    fn read(&self, path: &Path, shown: &str) -> Result<String, LoadError> {
        Err(Diagnostic::new(format!(
            "cannot read {}: no files here, only the built-in policies",
            path.display()
        ))
        .in_file(shown)
        .into())
    }
    fn is_file(&self, _path: &Path) -> bool {
        false
    }
    fn identity(&self, _path: &Path) -> Option<String> {
        None
    }
}

/// Most wrapping policies in one chain (`a` wraps `b` wraps `c` ...).
const MAX_WRAP_DEPTH: usize = 8;

/// Where the base of a wrapping policy is looked up.
#[derive(Clone, Debug)]
enum Lookup {
    /// A built-in policy: bases are built-in names only (no file access).
    Builtin,
    /// A file: built-in names, then paths relative to `dir` (the wrapper
    /// file's directory), then to the current directory.
    Files { dir: PathBuf },
}

/// One policy being loaded, for the cycle check and messages.
#[derive(Clone, Debug)]
struct Link {
    /// Identity: `builtin:FILE` or the canonical path.
    id: String,
    /// As shown in messages.
    shown: String,
}

impl Link {
    fn builtin(file: &str) -> Link {
        Link {
            id: format!("builtin:{file}"),
            shown: format!("policies/{file}"),
        }
    }

    fn file(path: &Path, shown: &str, files: &dyn Files) -> Link {
        let id = files
            .identity(path)
            .unwrap_or_else(|| format!("file:{}", path.display()));
        Link {
            id,
            shown: shown.to_string(),
        }
    }
}

fn chain_text(chain: &[Link], last: &Link) -> String {
    chain
        .iter()
        .chain(std::iter::once(last))
        .map(|l| l.shown.as_str())
        .collect::<Vec<_>>()
        .join(" -> ")
}

/// Parses and validates policy TOML `text`; `file` names it in messages, its
/// stem is the default `name`, and its directory is where a relative `base`
/// path is looked up first.
pub fn parse_policy_in(
    text: &str,
    file: &str,
    files: &dyn Files,
) -> Result<PolicyConfig, LoadError> {
    let dir = Path::new(file)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let me = Link::file(Path::new(file), file, files);
    parse_in(
        text,
        file,
        &Lookup::Files { dir },
        &me,
        &mut Vec::new(),
        files,
    )
}

/// Reads (through `files`) and validates the policy file at `path`.
pub fn load_policy_in(path: &Path, files: &dyn Files) -> Result<PolicyConfig, LoadError> {
    load_in(path, &mut Vec::new(), files)
}

fn load_in(
    path: &Path,
    chain: &mut Vec<Link>,
    files: &dyn Files,
) -> Result<PolicyConfig, LoadError> {
    let file = path.display().to_string();
    let text = files.read(path, &file)?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let me = Link::file(path, &file, files);
    parse_in(&text, &file, &Lookup::Files { dir }, &me, chain, files)
}

fn parse_builtin(file: &str, text: &str, chain: &mut Vec<Link>) -> Result<PolicyConfig, LoadError> {
    let shown = format!("policies/{file}");
    parse_in(
        text,
        &shown,
        &Lookup::Builtin,
        &Link::builtin(file),
        chain,
        &NoFiles,
    )
}

/// Stage one and two of one file; `chain` holds the wrapping policies whose
/// bases are being loaded (outermost first).
fn parse_in(
    text: &str,
    file: &str,
    lookup: &Lookup,
    me: &Link,
    chain: &mut Vec<Link>,
    files: &dyn Files,
) -> Result<PolicyConfig, LoadError> {
    let raw: RawPolicy = crate::diagnostics::parse_document(text, file)?;
    let mut report = Report::new(file, text);
    let mut base_error = None;
    let policy = match &raw.base {
        Some(base) => {
            chain.push(me.clone());
            let p = load_wrapper(
                &raw,
                base,
                file,
                lookup,
                chain,
                &mut report,
                &mut base_error,
                files,
            );
            chain.pop();
            p
        }
        None => Some(build_policy(&raw, file, &mut report)),
    };
    match report.finish(policy) {
        Ok(Some(p)) => Ok(p),
        // Every path that gives no policy records an error first.
        Ok(None) => Err(Diagnostic::new("the policy could not be built")
            .in_file(file)
            .into()),
        Err(e) => Err(match base_error {
            Some(b) => e.followed_by(b),
            None => e,
        }),
    }
}

/// A wrapping policy: its own keys checked, its base found and loaded (at
/// most [`MAX_WRAP_DEPTH`] deep), the two joined.
#[allow(clippy::too_many_arguments)]
fn load_wrapper(
    raw: &RawPolicy,
    base: &Spanned<String>,
    file: &str,
    lookup: &Lookup,
    chain: &mut Vec<Link>,
    r: &mut Report<'_>,
    base_error: &mut Option<LoadError>,
    files: &dyn Files,
) -> Option<PolicyConfig> {
    let keys = wrapper_keys(raw, base, file, r);
    let base_name = keys.base_name.as_str();
    if chain.len() > MAX_WRAP_DEPTH {
        let (last, rest) = chain.split_last()?;
        r.error(
            base.span(),
            "base",
            Problem::new(format!(
                "more than {MAX_WRAP_DEPTH} wrapping policies in a chain: {}",
                chain_text(rest, last)
            ))
            .help("let this policy wrap a policy with a `model` directly"),
        );
        return None;
    }
    let base_policy = match resolve_base(base_name, lookup, chain, files) {
        Ok(p) => p,
        Err(BaseFailure::Here(problem)) => {
            r.error(base.span(), "base", problem);
            return None;
        }
        Err(BaseFailure::There(shown, e)) => {
            r.error(
                base.span(),
                "base",
                Problem::new(if shown == base_name {
                    format!("the base policy \"{base_name}\" does not load")
                } else {
                    format!("the base policy \"{base_name}\" ({shown}) does not load")
                })
                .help("its errors follow"),
            );
            *base_error = Some(e);
            return None;
        }
    };
    build_wrapper(raw, keys, base_policy, r)
}

/// Every built-in policy, in [`BUILTIN`] order.
pub fn builtin_policies() -> Vec<PolicyConfig> {
    builtin_results()
        .into_iter()
        .filter_map(Result::ok)
        .collect()
}

fn builtin_results() -> Vec<Result<PolicyConfig, LoadError>> {
    BUILTIN
        .iter()
        .map(|(file, text)| parse_builtin(file, text, &mut Vec::new()))
        .collect()
}

/// Like [`resolve_policy_in`], but a relative policy path written in a scenario
/// file is looked up beside that file first (`scenario_dir`), and an error
/// about the name itself (unknown, file not found) names the scenario key
/// it came from, `pool.policy`.
pub fn resolve_policy_for_scenario_in(
    name_or_path: &str,
    scenario_dir: Option<&Path>,
    files: &dyn Files,
) -> Result<PolicyConfig, LoadError> {
    let wanted = Path::new(name_or_path.trim());
    if let Some(dir) = scenario_dir
        && wanted.is_relative()
        && wanted
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("toml"))
    {
        let beside = dir.join(wanted);
        if files.is_file(&beside) {
            return load_policy_in(&beside, files);
        }
    }
    resolve_in(name_or_path, scenario_dir.or(Some(Path::new(""))), files).map_err(|e| {
        if e.file().is_none() && e.path().is_none() {
            e.at_path("pool.policy")
        } else {
            e
        }
    })
}

/// [`resolve_policy_for_scenario_in`] for the scenario file `file` whose
/// text is `text`: an error about the `policy` value itself also gives
/// the file, line and column of that value.
pub fn resolve_policy_for_scenario_text_in(
    name_or_path: &str,
    file: &str,
    text: &str,
    files: &dyn Files,
) -> Result<PolicyConfig, LoadError> {
    resolve_policy_for_scenario_in(name_or_path, Path::new(file).parent(), files).map_err(|e| {
        if e.file().is_some() {
            return e;
        }
        match crate::diagnostics::value_span(text, &["pool", "policy"]) {
            Some(span) => e.placed_in(file, text, span.start),
            None => e,
        }
    })
}

/// A built-in policy by name or alias (case-insensitive); else, if
/// `name_or_path` looks like a path (contains `/` or `\`, or ends in
/// `.toml`), the policy file there, read through `files`; else an error
/// listing the known names.
pub fn resolve_policy_in(name_or_path: &str, files: &dyn Files) -> Result<PolicyConfig, LoadError> {
    resolve_in(name_or_path, None, files)
}

/// [`resolve_policy_in`]; `scenario_dir` is `Some` when the name was written
/// in a scenario file in that directory (for the help of a missing file).
fn resolve_in(
    name_or_path: &str,
    scenario_dir: Option<&Path>,
    files: &dyn Files,
) -> Result<PolicyConfig, LoadError> {
    let wanted = name_or_path.trim();
    let builtins = builtin_results();
    for (result, (file, _)) in builtins.iter().zip(BUILTIN) {
        match result {
            Ok(p) => {
                if p.name.eq_ignore_ascii_case(wanted)
                    || p.aliases.iter().any(|a| a.eq_ignore_ascii_case(wanted))
                {
                    return Ok(p.clone());
                }
            }
            Err(e) => {
                let stem = file.strip_suffix(".toml").unwrap_or(file);
                if stem.eq_ignore_ascii_case(wanted) {
                    return Err(e.clone());
                }
            }
        }
    }
    let policies: Vec<&PolicyConfig> = builtins.iter().filter_map(|r| r.as_ref().ok()).collect();
    let known = policies
        .iter()
        .map(|p| {
            if p.aliases.is_empty() {
                p.name.clone()
            } else {
                format!("{} (also {})", p.name, p.aliases.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    if looks_like_path(wanted) {
        let path = Path::new(wanted);
        if files.is_file(path) {
            return load_policy_in(path, files);
        }
        let places = match scenario_dir {
            Some(dir) if !dir.as_os_str().is_empty() && path.is_relative() => format!(
                "a relative path is looked up beside the scenario file, in {}, then in the current directory",
                dir.display()
            ),
            Some(_) if path.is_relative() => {
                "a relative path is looked up beside the scenario file, then in the current directory".to_string()
            }
            _ => "relative paths start from the current directory".to_string(),
        };
        return Err(
            Diagnostic::new(format!("policy file \"{wanted}\" not found"))
                .with_help(format!(
                    "check the path: {places}; or use a built-in policy: {known}"
                ))
                .into(),
        );
    }
    let names = policies
        .iter()
        .flat_map(|p| std::iter::once(p.name.as_str()).chain(p.aliases.iter().map(String::as_str)));
    let help = match did_you_mean(wanted, names) {
        Some(s) => format!("did you mean \"{s}\"? Built-in policies: {known}"),
        None => format!(
            "built-in policies: {known}; or give the path of a policy file (ending in .toml)"
        ),
    };
    Err(Diagnostic::new(format!("unknown policy \"{wanted}\""))
        .with_help(help)
        .into())
}

fn looks_like_path(s: &str) -> bool {
    s.contains('/') || s.contains('\\') || s.to_ascii_lowercase().ends_with(".toml")
}

/// Why a base could not be had.
enum BaseFailure {
    /// A problem with the `base` value itself (unknown, cycle, too deep).
    Here(Problem),
    /// The base was found but does not load: its own diagnostics.
    There(String, LoadError),
}

/// Finds and loads the base `wanted` of the wrapping policy at the end of
/// `chain`.
fn resolve_base(
    wanted: &str,
    lookup: &Lookup,
    chain: &mut Vec<Link>,
    files: &dyn Files,
) -> Result<PolicyConfig, BaseFailure> {
    let wanted = wanted.trim();
    if wanted.is_empty() {
        return Err(BaseFailure::Here(Problem::new("must not be empty").help(
            format!(
                "name the policy this one wraps; built-in policies: {}",
                known_builtins()
            ),
        )));
    }
    let cycle = |chain: &[Link], link: &Link| {
        if chain.iter().any(|l| l.id == link.id) {
            let message = if chain.last().is_some_and(|l| l.id == link.id) && chain.len() == 1 {
                format!("a policy cannot wrap itself: {}", chain_text(chain, link))
            } else {
                format!("wrapping cycle: {}", chain_text(chain, link))
            };
            Some(BaseFailure::Here(Problem::new(message).help(
                "the chain of `base` names must end at a policy with a `model`",
            )))
        } else {
            None
        }
    };
    if let Some((file, text)) = builtin_named(wanted) {
        let link = Link::builtin(file);
        if let Some(f) = cycle(chain, &link) {
            return Err(f);
        }
        return parse_builtin(file, text, chain)
            .map_err(|e| BaseFailure::There(link.shown.clone(), e));
    }
    let known = known_builtins();
    let dir = match lookup {
        Lookup::Files { dir } => dir,
        Lookup::Builtin => {
            return Err(BaseFailure::Here(
                Problem::new(format!("unknown base policy \"{wanted}\"")).help(format!(
                    "a built-in policy wraps built-in policies only: {known}"
                )),
            ));
        }
    };
    let beside = dir.join(wanted);
    let candidates = [beside.clone(), PathBuf::from(wanted)];
    if let Some(path) = candidates.iter().find(|p| files.is_file(p)) {
        let shown = path.display().to_string();
        let link = Link::file(path, &shown, files);
        if let Some(f) = cycle(chain, &link) {
            return Err(f);
        }
        return load_in(path, chain, files).map_err(|e| BaseFailure::There(shown, e));
    }
    if looks_like_path(wanted) {
        let places = if dir.as_os_str().is_empty() || beside == Path::new(wanted) {
            "relative paths start from the current directory".to_string()
        } else {
            format!(
                "a relative path is looked up in {} (the wrapping file's directory), then in the current directory",
                dir.display()
            )
        };
        return Err(BaseFailure::Here(
            Problem::new(format!("base policy file \"{wanted}\" not found"))
                .help(format!("{places}; built-in policies: {known}")),
        ));
    }
    let names = builtin_name_table().iter().flatten().map(String::as_str);
    let problem = Problem::new(format!("unknown base policy \"{wanted}\""));
    Err(BaseFailure::Here(match did_you_mean(wanted, names) {
        Some(s) => problem.help(format!("did you mean \"{s}\"? Built-in policies: {known}")),
        None => problem.help(format!(
            "built-in policies: {known}; or give the path of a policy file (ending in .toml)"
        )),
    }))
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::policy::config::{ModelKind, ThreadCount, ThrottleConfig};
    use crate::policy_file::build::MODELS;
    use crate::policy_file::test_support::{builtin, net_classic};
    use crate::scenario::model::ThrottleKind;
    use crate::time::SimDuration;

    /// Files held in memory: the resolver reads nothing else.
    #[derive(Default)]
    struct MemFiles(std::cell::RefCell<std::collections::BTreeMap<PathBuf, String>>);

    impl MemFiles {
        fn write(&self, path: PathBuf, text: impl Into<String>) {
            self.0.borrow_mut().insert(path, text.into());
        }
    }

    impl Files for MemFiles {
        fn read(&self, path: &Path, shown: &str) -> Result<String, LoadError> {
            self.0.borrow().get(path).cloned().ok_or_else(|| {
                Diagnostic::new("cannot read the file: not found")
                    .in_file(shown)
                    .into()
            })
        }
        fn is_file(&self, path: &Path) -> bool {
            self.0.borrow().contains_key(path)
        }
        fn identity(&self, path: &Path) -> Option<String> {
            self.is_file(path).then(|| path.display().to_string())
        }
    }

    #[test]
    fn every_builtin_parses_and_names_are_unique() {
        for (file, text) in BUILTIN {
            if let Err(e) = parse_builtin(file, text, &mut Vec::new()) {
                panic!("built-in {file} does not parse:\n{e}");
            }
            // The same text read as a user's file gives the same policy.
            let shown = format!("policies/{file}");
            assert_eq!(
                parse_policy_in(text, &shown, &NoFiles).unwrap(),
                parse_builtin(file, text, &mut Vec::new()).unwrap(),
                "{file}"
            );
        }
        let all = builtin_policies();
        assert_eq!(all.len(), BUILTIN.len());
        let mut seen = HashSet::new();
        for p in &all {
            for n in std::iter::once(&p.name).chain(&p.aliases) {
                assert!(seen.insert(n.to_ascii_lowercase()), "{n} is used twice");
            }
            assert!(!p.description.is_empty(), "{} has no description", p.name);
        }
        // Every model the binary ships has a built-in (the tests' own model
        // is run from a policy text of its test).
        for m in MODELS.iter().filter(|m| **m != ModelKind::FixedForTests) {
            assert!(all.iter().any(|p| p.model == *m), "no built-in for {m:?}");
        }
    }

    #[test]
    fn a_wrapper_may_wrap_an_unthrottled_wrapper_up_to_the_depth_limit() {
        let files = MemFiles::default();
        let dir = PathBuf::from("/mem/depth");
        // w0 wraps net6 with no throttle (a rename); w1..wN wrap the previous one.
        files.write(dir.join("w0.toml"), "base = \"net6\"\n");
        for k in 1..=MAX_WRAP_DEPTH {
            files.write(
                dir.join(format!("w{k}.toml")),
                format!("base = \"w{}.toml\"\n", k - 1),
            );
        }
        let load = |name: &str| load_policy_in(&dir.join(name), &files);
        let ok = load(&format!("w{}.toml", MAX_WRAP_DEPTH - 1)).unwrap();
        assert_eq!(ok.name, format!("w{}", MAX_WRAP_DEPTH - 1));
        assert_eq!(ok.model, ModelKind::Portable);
        assert_eq!(ok.blocking, builtin("net6").blocking);
        assert_eq!(ok.description, builtin("net6").description);
        let e = load(&format!("w{MAX_WRAP_DEPTH}.toml")).unwrap_err();
        assert!(
            e.to_string()
                .contains("more than 8 wrapping policies in a chain"),
            "{e}"
        );
        // A throttle over the rename chain is fine: none of them has one.
        files.write(
            dir.join("t.toml"),
            "base = \"w2.toml\"\n[throttle]\nkind = \"semaphore\"\nlimit = 3\n",
        );
        let t = load("t.toml").unwrap();
        assert_eq!(
            t.throttle,
            Some(ThrottleConfig {
                kind: ThrottleKind::Semaphore,
                limit: ThreadCount::Fixed(3)
            })
        );
        assert_eq!(t.description, "w2 behind a throttle (semaphore, limit 3)");
    }

    #[test]
    fn a_wrapper_base_is_looked_up_beside_it_first() {
        let files = MemFiles::default();
        let sub = PathBuf::from("/mem/beside/sub");
        let edited = net_classic().replace("period_ms = 500", "period_ms = 250");
        files.write(sub.join("mine.toml"), edited);
        // A file of the same name in the current directory is not taken.
        files.write(PathBuf::from("mine.toml"), net_classic());
        files.write(
            sub.join("wrap.toml"),
            "name = \"wrapped\"\nbase = \"mine.toml\"\n[throttle]\nkind = \"semaphore\"\nlimit = \"cores\"\n",
        );
        let p = load_policy_in(&sub.join("wrap.toml"), &files).unwrap();
        assert_eq!(p.name, "wrapped");
        assert_eq!(p.gate.period, SimDuration::from_ms(250));
    }

    #[test]
    fn without_files_only_the_builtins_resolve() {
        // A path is looked up through the caller's files: with none, it is
        // not found, and nothing is read.
        let e = resolve_policy_in("mine.toml", &NoFiles).unwrap_err();
        assert!(
            e.message().contains("policy file \"mine.toml\" not found"),
            "{e}"
        );
        let e = load_policy_in(Path::new("mine.toml"), &NoFiles).unwrap_err();
        assert!(e.message().contains("no files here"), "{e}");
        // A policy text that wraps a file cannot load its base either.
        let e = parse_policy_in("base = \"other.toml\"\n", "w.toml", &NoFiles).unwrap_err();
        assert!(e.to_string().contains("other.toml"), "{e}");
        // Built-ins need no file.
        assert_eq!(resolve_policy_in("net8", &NoFiles).unwrap().name, "net8");
    }

    #[test]
    fn every_registered_model_is_named_by_policy_files_as_the_registry_says() {
        let mut names = HashSet::new();
        for kind in ModelKind::ALL {
            assert!(names.insert(kind.name()), "{} twice", kind.name());
            let text = net_classic().replace(
                "model = \"classic\"",
                &format!("model = \"{}\"", kind.name()),
            );
            // A model table the kind needs may be missing: then the error
            // names that table, never the model.
            match parse_policy_in(&text, "p.toml", &NoFiles) {
                Ok(p) => assert_eq!(p.model, *kind),
                Err(e) => assert!(
                    !e.to_string().contains("unknown model"),
                    "{}: {e}",
                    kind.name()
                ),
            }
        }
    }

    #[test]
    fn resolve_finds_names_and_aliases_in_any_case() {
        let resolve = |name: &str| resolve_policy_in(name, &NoFiles);
        assert_eq!(resolve("net-classic").unwrap().name, "net-classic");
        assert_eq!(resolve("NET5").unwrap().name, "net-classic");
        assert_eq!(resolve(" coreclr3 ").unwrap().name, "coreclr3-linux");
        assert_eq!(resolve("Portable").unwrap().name, "net6");
        let e = resolve("./no/such/policy.toml").unwrap_err();
        assert!(e.message().contains("not found"), "{e}");
    }
}
