//! Applying `--set KEY=VALUE` to a scenario or policy file: the key is a
//! TOML path into the document, the value replaces (or adds) the number
//! there, and the edited document goes back through the ordinary loader,
//! so every range check and message of a hand-written file applies.
//!
//! A key is dotted: `machine.cores`, `pool.min_threads`,
//! `group.NAME.count` (the `[[group]]` whose `name` is NAME),
//! `group[0].count` (by index), `group.work.throttle.limit`,
//! `group.work.body[0].sleep_ms`, `probe[0].every_ms`. A key starting with
//! `policy.` edits the policy file instead: `policy.hill_climbing.max_change_per_second`,
//! `policy.gate.period_ms`, `policy.throttle.limit` (a wrapping policy's).
//! The last part may be a key the document does not write yet (the loader
//! then says whether it is allowed); every part before it must exist.

use std::path::Path;

use toml::{Table, Value as TomlValue};

use crate::policy_file::{BUILTIN, resolve_policy};

/// Which document a key edits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Scenario,
    Policy,
}

/// One step of a resolved key path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// A `--set` key resolved against the documents it edits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPath {
    /// As written on the command line.
    pub key: String,
    pub target: Target,
    /// The path with array elements by index (`group[1].throttle.limit`).
    pub segs: Vec<Seg>,
}

impl KeyPath {
    /// The path with indices: `group[1].count`, `policy.gate.period_ms`.
    /// Two keys naming the same value have the same canonical form.
    pub fn canonical(&self) -> String {
        let path = path_text(&self.segs);
        match self.target {
            Target::Scenario => path,
            Target::Policy => format!("policy.{path}"),
        }
    }
}

/// `group[1].body[0].sleep_ms` from segments.
pub fn path_text(segs: &[Seg]) -> String {
    let mut out = String::new();
    for s in segs {
        match s {
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Key(String),
    Index(usize),
}

/// Splits `group.work.body[0].sleep_ms` into keys and indices.
fn tokenize(key: &str) -> Result<Vec<Token>, String> {
    let form = "write a dotted TOML path like pool.min_threads, group.NAME.count or group[0].body[1].sleep_ms";
    let mut out = Vec::new();
    for part in key.split('.') {
        let (name, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        let name = name.trim();
        if name.is_empty() {
            return Err(format!("`{key}` has an empty part: {form}"));
        }
        out.push(Token::Key(name.to_string()));
        while !rest.is_empty() {
            let Some(end) = rest.find(']') else {
                return Err(format!("`{key}` has an unclosed `[`: {form}"));
            };
            let index = rest[1..end].trim();
            let i: usize = index
                .parse()
                .map_err(|_| format!("`{key}`: `[{index}]` is not an index; {form}"))?;
            out.push(Token::Index(i));
            rest = &rest[end + 1..];
            if !rest.is_empty() && !rest.starts_with('[') {
                return Err(format!("`{key}`: unexpected `{rest}`; {form}"));
            }
        }
    }
    Ok(out)
}

/// Splits a key into its target and the path inside that document.
pub fn split_target(key: &str) -> (Target, &str) {
    match key.trim().strip_prefix("policy.") {
        Some(rest) => (Target::Policy, rest),
        None => (Target::Scenario, key.trim()),
    }
}

/// What the document is, for messages: "the scenario", "policy net6
/// (policies/net6.toml)".
pub struct DocName<'a> {
    pub what: &'a str,
    /// `base = ...` of a wrapping policy.
    pub base: Option<&'a str>,
}

fn keys_of(t: &Table) -> String {
    let keys: Vec<&str> = t.keys().map(String::as_str).collect();
    if keys.is_empty() {
        "none".to_string()
    } else {
        keys.join(", ")
    }
}

fn kind_of(v: &TomlValue) -> &'static str {
    match v {
        TomlValue::String(_) => "a string",
        TomlValue::Integer(_) => "an integer",
        TomlValue::Float(_) => "a number",
        TomlValue::Boolean(_) => "a switch (true or false)",
        TomlValue::Datetime(_) => "a date",
        TomlValue::Array(_) => "a list",
        TomlValue::Table(_) => "a table",
    }
}

/// The name of an element of an array of tables (`name = ...`).
fn element_name(v: &TomlValue) -> Option<&str> {
    v.as_table()?.get("name")?.as_str()
}

/// Resolves `path` (the key less any `policy.` prefix) in `doc`.
pub fn resolve(
    key: &str,
    path: &str,
    target: Target,
    doc: &Table,
    name: &DocName<'_>,
) -> Result<KeyPath, String> {
    let tokens = tokenize(path)?;
    let mut segs: Vec<Seg> = Vec::new();
    let mut table: Option<&Table> = Some(doc);
    let mut value: Option<&TomlValue> = None;
    let shown = |segs: &[Seg]| match target {
        Target::Scenario => path_text(segs),
        Target::Policy => format!("policy.{}", path_text(segs)),
    };
    for (i, token) in tokens.iter().enumerate() {
        let last = i + 1 == tokens.len();
        let here = shown(&segs);
        if let Some(t) = table {
            let Token::Key(k) = token else {
                return Err(format!(
                    "`{here}` is a table, not a list: its keys are {}",
                    keys_of(t)
                ));
            };
            match t.get(k) {
                Some(v) => {
                    segs.push(Seg::Key(k.clone()));
                    value = Some(v);
                    table = v.as_table();
                }
                None if last => {
                    segs.push(Seg::Key(k.clone()));
                    value = None;
                    table = None;
                }
                None => {
                    let whose = if here.is_empty() {
                        name.what.to_string()
                    } else {
                        format!("`{here}` in {}", name.what)
                    };
                    let mut msg = format!(
                        "{whose} has no `{k}`; keys there: {}. A key inside a table that is not written cannot be swept: write the table first",
                        keys_of(t)
                    );
                    if let (Some(base), true) = (name.base, segs.is_empty()) {
                        msg = format!(
                            "{} wraps `{base}` (base = \"{base}\"): it has only its [throttle]; sweep policy.throttle.limit, or pass --policy {base} to sweep {base}'s constants",
                            name.what
                        );
                    }
                    return Err(msg);
                }
            }
            continue;
        }
        let Some(v) = value else {
            // Only reachable after a new last key, which ends the loop.
            return Err(format!("`{here}` is not in {}", name.what));
        };
        match (v, token) {
            (TomlValue::Array(items), Token::Index(n)) => {
                let Some(item) = items.get(*n) else {
                    return Err(format!(
                        "`{here}` has {} element(s): index {n} is out of range",
                        items.len()
                    ));
                };
                segs.push(Seg::Index(*n));
                value = Some(item);
                table = item.as_table();
            }
            (TomlValue::Array(items), Token::Key(k)) => {
                let found = items.iter().position(|it| element_name(it) == Some(k));
                let Some(n) = found else {
                    let named: Vec<String> = items
                        .iter()
                        .enumerate()
                        .filter_map(|(j, it)| {
                            element_name(it).map(|nm| format!("{nm} ({here}[{j}])"))
                        })
                        .collect();
                    return Err(if named.is_empty() {
                        format!(
                            "`{here}` has no element named `{k}`: its elements have no names; select one by index, like {here}[0]"
                        )
                    } else {
                        format!(
                            "{} has no `{here}` named `{k}`; there are: {}",
                            name.what,
                            named.join(", ")
                        )
                    });
                };
                segs.push(Seg::Index(n));
                value = Some(&items[n]);
                table = items[n].as_table();
            }
            (other, token) => {
                let what = match token {
                    Token::Key(k) => format!("`{k}`"),
                    Token::Index(n) => format!("element [{n}]"),
                };
                return Err(format!("`{here}` is {}: it has no {what}", kind_of(other)));
            }
        }
    }
    let here = shown(&segs);
    match value {
        None | Some(TomlValue::Integer(_) | TomlValue::Float(_) | TomlValue::String(_)) => {}
        Some(TomlValue::Table(t)) => {
            return Err(format!(
                "`{here}` is a table, not a number: sweep one of its keys ({})",
                keys_of(t)
            ));
        }
        Some(TomlValue::Array(items)) => {
            let example = if items.iter().any(|it| element_name(it).is_some()) {
                format!("{here}.NAME.KEY or {here}[0].KEY")
            } else {
                format!("{here}[0]")
            };
            return Err(format!(
                "`{here}` is a list, not a number: pick an element, like {example}"
            ));
        }
        Some(other) => {
            return Err(format!(
                "`{here}` is {}, not a number: only numbers can be swept",
                kind_of(other)
            ));
        }
    }
    Ok(KeyPath {
        key: key.to_string(),
        target,
        segs,
    })
}

/// Writes `value` at `segs` in `doc` (a path from [`resolve`] on the same
/// document). `false` if the path does not lead to a table slot.
pub fn set(doc: &mut Table, segs: &[Seg], value: TomlValue) -> bool {
    let Some((Seg::Key(last), parents)) = segs.split_last() else {
        return false;
    };
    let mut table = doc;
    let mut i = 0;
    while i < parents.len() {
        let Seg::Key(k) = &parents[i] else {
            return false;
        };
        let Some(mut node) = table.get_mut(k) else {
            return false;
        };
        i += 1;
        while let Some(Seg::Index(n)) = parents.get(i) {
            let Some(item) = node.as_array_mut().and_then(|a| a.get_mut(*n)) else {
                return false;
            };
            node = item;
            i += 1;
        }
        let Some(t) = node.as_table_mut() else {
            return false;
        };
        table = t;
    }
    table.insert(last.clone(), value);
    true
}

/// A policy file's text, as the sweep edits it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicySource {
    /// The `--policy` argument (or the scenario's `pool.policy`) as given.
    pub label: String,
    /// The file, for messages and for looking up a relative `base`
    /// (`policies/net6.toml` for a built-in).
    pub file: String,
    pub text: String,
}

fn looks_like_path(s: &str) -> bool {
    s.contains('/') || s.contains('\\') || s.to_ascii_lowercase().ends_with(".toml")
}

/// Finds the text of a policy the way `poolsim run` resolves it: a
/// relative `.toml` path beside the scenario first (when `scenario_dir` is
/// given), then a built-in by name or alias, then a file path.
pub fn policy_source(name: &str, scenario_dir: Option<&Path>) -> Result<PolicySource, String> {
    let wanted = name.trim();
    let read = |path: &Path| {
        std::fs::read_to_string(path)
            .map(|text| PolicySource {
                label: wanted.to_string(),
                file: path.display().to_string(),
                text,
            })
            .map_err(|e| format!("{}: cannot read the policy file: {e}", path.display()))
    };
    let as_path = Path::new(wanted);
    if let Some(dir) = scenario_dir
        && as_path.is_relative()
        && wanted.to_ascii_lowercase().ends_with(".toml")
    {
        let beside = dir.join(as_path);
        if beside.is_file() {
            return read(&beside);
        }
    }
    for (file, text) in BUILTIN {
        if builtin_names(file, text)
            .iter()
            .any(|n| n.trim().eq_ignore_ascii_case(wanted))
        {
            return Ok(PolicySource {
                label: wanted.to_string(),
                file: format!("policies/{file}"),
                text: text.to_string(),
            });
        }
    }
    if looks_like_path(wanted) && as_path.is_file() {
        return read(as_path);
    }
    match resolve_policy(wanted) {
        Err(e) => Err(e.to_string()),
        Ok(p) => Err(format!(
            "policy \"{wanted}\" ({}) was found, but not its file text to edit",
            p.name
        )),
    }
}

/// The name and aliases a built-in file declares (its stem when unnamed).
fn builtin_names(file: &str, text: &str) -> Vec<String> {
    let stem = file.strip_suffix(".toml").unwrap_or(file).to_string();
    let Ok(doc) = text.parse::<Table>() else {
        return vec![stem];
    };
    let name = doc
        .get("name")
        .and_then(TomlValue::as_str)
        .map_or(stem, str::to_string);
    let aliases = doc
        .get("aliases")
        .and_then(TomlValue::as_array)
        .into_iter()
        .flatten()
        .filter_map(TomlValue::as_str)
        .map(str::to_string);
    std::iter::once(name).chain(aliases).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCENARIO: &str = r#"
        [machine]
        cores = 4
        [pool]
        policy = "net-classic"
        [[group]]
        name = "warm"
        count = 10
        body = [ { sleep_ms = 100 } ]
        [[group]]
        name = "work"
        count = 20
        body = [ { spin_ms = 40 }, "yield" ]
        throttle = { kind = "semaphore", limit = 8 }
        [[probe]]
        every_ms = 500
    "#;

    fn doc() -> Table {
        SCENARIO.parse().unwrap()
    }

    fn scenario_key(key: &str) -> Result<KeyPath, String> {
        let name = DocName {
            what: "the scenario",
            base: None,
        };
        resolve(key, key, Target::Scenario, &doc(), &name)
    }

    #[test]
    fn keys_resolve_by_name_and_by_index_to_one_canonical_path() {
        let by_name = scenario_key("group.work.throttle.limit").unwrap();
        let by_index = scenario_key("group[1].throttle.limit").unwrap();
        assert_eq!(by_name.canonical(), "group[1].throttle.limit");
        assert_eq!(by_name.segs, by_index.segs);
        assert_eq!(
            scenario_key("group.work.body[0].spin_ms")
                .unwrap()
                .canonical(),
            "group[1].body[0].spin_ms"
        );
        assert_eq!(
            scenario_key("probe[0].every_ms").unwrap().canonical(),
            "probe[0].every_ms"
        );
        // A key the document does not write yet is accepted (the loader
        // checks its name).
        assert_eq!(
            scenario_key("pool.min_threads").unwrap().canonical(),
            "pool.min_threads"
        );
    }

    #[test]
    fn bad_keys_say_what_is_there() {
        let e = scenario_key("group.nosuch.count").unwrap_err();
        assert!(e.contains("warm (group[0]), work (group[1])"), "{e}");
        let e = scenario_key("group[5].count").unwrap_err();
        assert!(e.contains("2 element(s)"), "{e}");
        let e = scenario_key("group.warm.throttle.limit").unwrap_err();
        assert!(e.contains("has no `throttle`"), "{e}");
        let e = scenario_key("machine").unwrap_err();
        assert!(e.contains("is a table") && e.contains("cores"), "{e}");
        let e = scenario_key("group.work.body").unwrap_err();
        assert!(e.contains("is a list"), "{e}");
        let e = scenario_key("machine.cores.x").unwrap_err();
        assert!(e.contains("is an integer"), "{e}");
        let e = scenario_key("probe.first.every_ms").unwrap_err();
        assert!(e.contains("probe[0]"), "{e}");
        assert!(scenario_key("group..count").is_err());
        assert!(scenario_key("group[x].count").is_err());
    }

    #[test]
    fn set_writes_through_arrays_and_adds_new_keys() {
        let mut d = doc();
        let k = scenario_key("group.work.throttle.limit").unwrap();
        assert!(set(&mut d, &k.segs, TomlValue::Integer(3)));
        assert_eq!(d["group"][1]["throttle"]["limit"].as_integer(), Some(3));
        let k = scenario_key("pool.min_threads").unwrap();
        assert!(set(&mut d, &k.segs, TomlValue::Integer(7)));
        assert_eq!(d["pool"]["min_threads"].as_integer(), Some(7));
    }

    #[test]
    fn wrapping_policies_point_to_their_base() {
        let src = policy_source("net6-throttled", None).unwrap();
        let d: Table = src.text.parse().unwrap();
        let name = DocName {
            what: "policy net6-throttled",
            base: Some("net6"),
        };
        let e = resolve(
            "policy.hill_climbing.bias",
            "hill_climbing.bias",
            Target::Policy,
            &d,
            &name,
        )
        .unwrap_err();
        assert!(e.contains("--policy net6"), "{e}");
        let ok = resolve(
            "policy.throttle.limit",
            "throttle.limit",
            Target::Policy,
            &d,
            &name,
        )
        .unwrap();
        assert_eq!(ok.canonical(), "policy.throttle.limit");
    }

    #[test]
    fn policy_sources_by_name_alias_and_error() {
        assert_eq!(
            policy_source("net5", None).unwrap().file,
            "policies/net-classic.toml"
        );
        assert_eq!(policy_source("NET6", None).unwrap().label, "NET6");
        let e = policy_source("net7x", None).unwrap_err();
        assert!(e.contains("unknown policy"), "{e}");
    }
}
