//! The TOML diagnostics engine: errors from loading scenario and policy
//! files, and the machinery that makes them precise. The text comes from
//! the caller ([`text_of_bytes`] checks its size and encoding; the analysis
//! crate's `files::read_text` reads it from the disk).
//!
//! A [`LoadError`] holds one or more [`Diagnostic`]s. Each names the file, the
//! line and column (1-based) and the TOML path of the offending value, says
//! what is wrong and, where it helps, how to fix it:
//!
//! ```text
//! scenarios/x.toml:5:9: error at `machine.cores`: must be between 1 and 4096, found 0
//!   help: `cores` is the number of processors of the simulated machine
//! ```
//!
//! Loading is two stages. `parse_document` turns TOML text into the raw
//! serde structs (syntax errors, unknown keys, wrong types); the validators
//! then check values and cross-field rules, collecting every problem in a
//! `Report` instead of stopping at the first.

use std::fmt;
use std::ops::Range;

use serde::de::DeserializeOwned;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// At most this many diagnostics are kept; the rest are counted.
const MAX_DIAGNOSTICS: usize = 20;

/// One problem in one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file (as given by the caller); `None` when there is no file, as
    /// when a policy name given on the command line is unknown.
    pub file: Option<String>,
    /// 1-based line of the offending text.
    pub line: Option<usize>,
    /// 1-based column (in characters) of the offending text.
    pub column: Option<usize>,
    /// TOML path of the offending value, like `group[1].body[0].sleep_ms`.
    pub path: Option<String>,
    /// What is wrong.
    pub message: String,
    /// How to fix it, when there is something useful to say.
    pub help: Option<String>,
}

impl Diagnostic {
    /// A diagnostic with only a message.
    pub fn new(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            file: None,
            line: None,
            column: None,
            path: None,
            message: message.into(),
            help: None,
        }
    }

    /// Sets the file.
    pub fn in_file(mut self, file: impl Into<String>) -> Diagnostic {
        self.file = Some(file.into());
        self
    }

    /// Sets line and column from a byte offset into `text`.
    pub fn at_offset(mut self, text: &str, offset: usize) -> Diagnostic {
        let (line, column) = line_col(text, offset);
        self.line = Some(line);
        self.column = Some(column);
        self
    }

    /// Sets the TOML path.
    pub fn at_path(mut self, path: impl Into<String>) -> Diagnostic {
        self.path = Some(path.into());
        self
    }

    /// Sets the help line.
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut location = String::new();
        if let Some(file) = &self.file {
            location.push_str(file);
        }
        if let Some(line) = self.line {
            if !location.is_empty() {
                location.push(':');
            }
            location.push_str(&line.to_string());
            if let Some(column) = self.column {
                location.push(':');
                location.push_str(&column.to_string());
            }
        }
        if !location.is_empty() {
            write!(f, "{location}: ")?;
        }
        write!(f, "error")?;
        if let Some(path) = &self.path {
            write!(f, " at `{path}`")?;
        }
        write!(f, ": {}", self.message)?;
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}

/// A scenario or policy file could not be loaded: one or more diagnostics,
/// in the order of their position in the file.
///
/// `Display` prints each diagnostic as `FILE:LINE:COL: error at `PATH`: MESSAGE`
/// (parts that are unknown are left out), each followed by its help line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", render(.first, .more))]
pub struct LoadError {
    // Boxed to keep `Result<_, LoadError>` small.
    first: Box<Diagnostic>,
    more: Vec<Diagnostic>,
}

fn render(first: &Diagnostic, more: &[Diagnostic]) -> String {
    let mut out = first.to_string();
    for d in more {
        out.push('\n');
        out.push_str(&d.to_string());
    }
    out
}

impl LoadError {
    /// An error of one diagnostic.
    pub fn new(diagnostic: Diagnostic) -> LoadError {
        LoadError {
            first: Box::new(diagnostic),
            more: Vec::new(),
        }
    }

    /// An error of several diagnostics; `None` if there are none.
    pub fn from_diagnostics(diagnostics: Vec<Diagnostic>) -> Option<LoadError> {
        let mut it = diagnostics.into_iter();
        let first = it.next()?;
        Some(LoadError {
            first: Box::new(first),
            more: it.collect(),
        })
    }

    /// Every diagnostic, the first (by position in the file) first.
    pub fn diagnostics(&self) -> impl Iterator<Item = &Diagnostic> {
        std::iter::once(&*self.first).chain(self.more.iter())
    }

    /// Number of diagnostics (at least 1).
    pub fn len(&self) -> usize {
        1 + self.more.len()
    }

    /// Always `false`: a `LoadError` holds at least one diagnostic.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The first diagnostic.
    pub fn first(&self) -> &Diagnostic {
        &self.first
    }

    /// File of the first diagnostic.
    pub fn file(&self) -> Option<&str> {
        self.first.file.as_deref()
    }

    /// Line (1-based) of the first diagnostic.
    pub fn line(&self) -> Option<usize> {
        self.first.line
    }

    /// Column (1-based) of the first diagnostic.
    pub fn column(&self) -> Option<usize> {
        self.first.column
    }

    /// TOML path of the first diagnostic.
    pub fn path(&self) -> Option<&str> {
        self.first.path.as_deref()
    }

    /// Message of the first diagnostic.
    pub fn message(&self) -> &str {
        &self.first.message
    }

    /// Help line of the first diagnostic.
    pub fn help(&self) -> Option<&str> {
        self.first.help.as_deref()
    }

    /// The first diagnostic with TOML path `path`.
    pub(crate) fn at_path(mut self, path: &str) -> LoadError {
        self.first.path = Some(path.to_string());
        self
    }

    /// The first diagnostic placed in `file` at byte `offset` of its `text`.
    pub fn placed_in(mut self, file: &str, text: &str, offset: usize) -> LoadError {
        let (line, column) = line_col(text, offset);
        self.first.file = Some(file.to_string());
        self.first.line = Some(line);
        self.first.column = Some(column);
        self
    }

    /// This error's diagnostics, then `other`'s (another file's errors that
    /// explain this one, as a wrapping policy's base that does not load).
    pub fn followed_by(mut self, other: LoadError) -> LoadError {
        self.more.push(*other.first);
        self.more.extend(other.more);
        self
    }
}

impl From<Diagnostic> for LoadError {
    fn from(d: Diagnostic) -> LoadError {
        LoadError::new(d)
    }
}

/// The 1-based line and column (counted in characters) of byte `offset` in
/// `text`. An offset past the end or inside a character is clamped; never panics.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = text.get(..offset).unwrap_or("");
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    (line, column)
}

/// What is wrong with one value, before it is placed in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Problem {
    pub message: String,
    pub help: Option<String>,
}

impl Problem {
    pub fn new(message: impl Into<String>) -> Problem {
        Problem {
            message: message.into(),
            help: None,
        }
    }

    pub fn help(mut self, help: impl Into<String>) -> Problem {
        self.help = Some(help.into());
        self
    }
}

impl From<String> for Problem {
    fn from(message: String) -> Problem {
        Problem::new(message)
    }
}

/// The byte span of the value at `keys` (a key of the top-level table,
/// then of the table it holds, ...) in TOML `text`; `None` if the text does
/// not parse or has no such value.
pub fn value_span(text: &str, keys: &[&str]) -> Option<Range<usize>> {
    let tree = DeTable::parse(text).ok()?;
    let (last, tables) = keys.split_last()?;
    let mut table = tree.get_ref();
    for key in tables {
        let (_, value) = table.iter().find(|(k, _)| k.get_ref() == key)?;
        match value.get_ref() {
            DeValue::Table(t) => table = t,
            _ => return None,
        }
    }
    table
        .iter()
        .find(|(k, _)| k.get_ref() == last)
        .map(|(_, v)| v.span())
}

/// Line starts of a text, for many offset → line/column look-ups.
struct Lines<'t> {
    text: &'t str,
    starts: Vec<usize>,
}

impl<'t> Lines<'t> {
    fn new(text: &'t str) -> Lines<'t> {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Lines { text, starts }
    }

    /// Same as [`line_col`], in logarithmic time.
    fn line_col(&self, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(self.text.len());
        while offset > 0 && !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let index = self.starts.partition_point(|&s| s <= offset).max(1) - 1;
        let start = self.starts.get(index).copied().unwrap_or(0);
        let column = self
            .text
            .get(start..offset)
            .map_or(0, |s| s.chars().count())
            + 1;
        (index + 1, column)
    }
}

/// A problem found, before it is placed (line and column are computed only
/// for the problems that are shown).
struct Found {
    at: usize,
    path: Option<String>,
    problem: Problem,
}

/// Collects the diagnostics of one file during validation.
pub(crate) struct Report<'a> {
    file: &'a str,
    lines: Lines<'a>,
    found: Vec<Found>,
}

impl<'a> Report<'a> {
    pub fn new(file: &'a str, text: &'a str) -> Report<'a> {
        Report {
            file,
            lines: Lines::new(text),
            found: Vec::new(),
        }
    }

    /// Records a problem at byte span `span`, TOML path `path`.
    pub fn error(&mut self, span: Range<usize>, path: &str, problem: impl Into<Problem>) {
        self.found.push(Found {
            at: span.start,
            path: Some(path.to_string()),
            problem: problem.into(),
        });
    }

    /// Checks one spanned value with `check`, recording its problem if any.
    pub fn check<T, U>(
        &mut self,
        value: &Spanned<T>,
        path: &str,
        check: impl FnOnce(&T) -> Result<U, Problem>,
    ) -> Option<U> {
        match check(value.get_ref()) {
            Ok(v) => Some(v),
            Err(p) => {
                self.error(value.span(), path, p);
                None
            }
        }
    }

    /// The 1-based line of byte `offset` in the file.
    pub fn line_of(&self, offset: usize) -> usize {
        self.lines.line_col(offset).0
    }

    /// `Ok(value)` if no problem was found, else every problem in file order.
    pub fn finish<T>(self, value: T) -> Result<T, LoadError> {
        match place(self.found, self.file, &self.lines) {
            None => Ok(value),
            Some(e) => Err(e),
        }
    }
}

/// Sorts problems by position, keeps the first [`MAX_DIAGNOSTICS`] and turns
/// them into diagnostics; `None` if there are none.
fn place(mut found: Vec<Found>, file: &str, lines: &Lines<'_>) -> Option<LoadError> {
    found.sort_by_key(|f| f.at);
    let total = found.len();
    let mut list: Vec<Diagnostic> = found
        .into_iter()
        .take(MAX_DIAGNOSTICS)
        .map(|f| {
            let (line, column) = lines.line_col(f.at);
            Diagnostic {
                file: Some(file.to_string()),
                line: Some(line),
                column: Some(column),
                path: f.path,
                message: f.problem.message,
                help: f.problem.help,
            }
        })
        .collect();
    if total > MAX_DIAGNOSTICS {
        list.push(
            Diagnostic::new(format!(
                "{} more errors not shown; fix the ones above first",
                total - MAX_DIAGNOSTICS
            ))
            .in_file(file),
        );
    }
    LoadError::from_diagnostics(list)
}

/// Parses TOML `text` into the raw structs `T`: syntax errors (all of them
/// that the parser can recover from), unknown keys and wrong value types
/// become diagnostics with line, column and TOML path.
pub(crate) fn parse_document<T: DeserializeOwned>(text: &str, file: &str) -> Result<T, LoadError> {
    control_characters(text, file)?;
    let (tree, mut syntax_errors) = DeTable::parse_recoverable(text);
    let lines = Lines::new(text);
    if !syntax_errors.is_empty() {
        syntax_errors.sort_by_key(|e| e.span().map_or(0, |s| s.start));
        let total = syntax_errors.len();
        let mut nodes = Vec::new();
        collect_nodes(tree.get_ref(), "", text, &mut nodes);
        let mut found: Vec<Found> = syntax_errors
            .iter()
            .take(MAX_DIAGNOSTICS)
            .map(|e| syntax_problem(e, &nodes, &lines))
            .collect();
        // Placeholders, so that `place` counts the ones not shown.
        found.extend((MAX_DIAGNOSTICS..total).map(|_| Found {
            at: usize::MAX,
            path: None,
            problem: Problem::new(""),
        }));
        if let Some(err) = place(found, file, &lines) {
            return Err(err);
        }
    }
    let deserializer = toml::de::Deserializer::from(tree.clone());
    T::deserialize(deserializer).map_err(|e| {
        let mut nodes = Vec::new();
        collect_nodes(tree.get_ref(), "", text, &mut nodes);
        LoadError::new(serde_diagnostic(&e, &nodes, &lines, file))
    })
}

fn syntax_problem(e: &toml::de::Error, nodes: &[Node], lines: &Lines<'_>) -> Found {
    let message = e.message().trim().to_string();
    let at = e.span().map_or(0, |s| s.start);
    let path = e
        .span()
        .and_then(|span| path_at(nodes, span, lines, Tree::Partial));
    let line_text = {
        let (line, _) = lines.line_col(at);
        let start = lines.starts.get(line - 1).copied().unwrap_or(0);
        lines
            .text
            .get(start..)
            .and_then(|t| t.lines().next())
            .unwrap_or("")
    };
    if message.starts_with("duplicate key")
        && let Some(span) = e.span()
    {
        return duplicate_problem(span, nodes, lines, line_text, path);
    }
    let problem = if let Some((message, help)) = explain_value_syntax(line_text) {
        Problem::new(message).help(help)
    } else if message.contains("escape") || message.contains("unicode") {
        Problem::new(format!("invalid TOML: {message}")).help(
            "in \"...\" a backslash starts an escape (\\n, \\t, \\\\, \\\", \\uXXXX): double it, or use a literal string in single quotes: 'C:\\temp'",
        )
    } else if message.contains("basic string") || message.contains("literal string") {
        Problem::new(format!("invalid TOML: {message}")).help(
            "close the string on the same line; text over several lines goes in \"\"\"triple quotes\"\"\"",
        )
    } else if message.starts_with("unclosed table") {
        Problem::new(format!("invalid TOML: {message}"))
            .help("a table header is written on one line: [pool], or [[group]] for one of several")
    } else if message.starts_with("missing comma")
        && line_text
            .get(..(lines.line_col(at).1 - 1))
            .is_some_and(|s| s.trim().is_empty())
    {
        // The parser is still inside an inline table or array of an
        // earlier line: that one is not closed.
        Problem::new(format!("invalid TOML: {message}")).help(
            "an inline table { ... } or array [ ... ] before this line is not closed: add its `}` or `]`",
        )
    } else {
        Problem::new(format!("invalid TOML: {message}"))
    };
    Found { at, path, problem }
}

/// A key or table written twice: name it, its path and where it was first
/// written (the parser says only "duplicate key").
fn duplicate_problem(
    span: Range<usize>,
    nodes: &[Node],
    lines: &Lines<'_>,
    line_text: &str,
    path: Option<String>,
) -> Found {
    let at = span.start;
    let written = lines.text.get(span).unwrap_or("").trim();
    let key = written.trim_matches(|c| c == '"' || c == '\'');
    let is_table = line_text.trim_start().starts_with('[');
    // The first one: the closest key of that name before this one.
    let first = nodes
        .iter()
        .filter(|n| n.is_key && n.span.start < at)
        .filter(|n| {
            lines
                .text
                .get(n.span.clone())
                .is_some_and(|k| k.trim().trim_matches(|c| c == '"' || c == '\'') == key)
        })
        .max_by_key(|n| n.span.start);
    let path = path.or_else(|| first.map(|n| n.path.clone()));
    let header = line_text.split('#').next().unwrap_or("").trim();
    let first_line = if is_table {
        // The tree keeps the later header's span: look for the earlier one.
        let squeeze = |s: &str| {
            s.split('#')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .collect::<String>()
        };
        let this_line = lines.line_col(at).0;
        lines
            .text
            .lines()
            .take(this_line.saturating_sub(1))
            .position(|l| squeeze(l) == squeeze(header))
            .map(|i| i + 1)
    } else {
        first.map(|n| lines.line_col(n.span.start).0)
    };
    let since = first_line.map_or(String::new(), |l| format!(", first written on line {l}"));
    let problem = if is_table && !key.is_empty() {
        Problem::new(format!("invalid TOML: duplicate table `{header}`{since}")).help(
            "a table may appear only once: merge the two; for several of a kind write [[name]] (an array of tables), as [[group]]",
        )
    } else if !key.is_empty() {
        Problem::new(format!("invalid TOML: duplicate key `{key}`{since}"))
            .help("a key may appear only once in a table: remove one of them")
    } else {
        Problem::new("invalid TOML: duplicate key")
            .help("each key and each [table] may appear only once")
    };
    Found { at, path, problem }
}

/// For a `key = value` line whose value is missing or is unquoted text,
/// a clearer message than the parser's ("invalid float, expected `nan`").
fn explain_value_syntax(line: &str) -> Option<(String, String)> {
    let (key, value) = line.split_once('=')?;
    let key = key.trim();
    if key.is_empty() || key.starts_with('[') || key.contains(['"', '\'', '{']) {
        return None;
    }
    let value = value.split('#').next().unwrap_or("").trim();
    if value.is_empty() {
        return Some((
            format!("invalid TOML: `{key} =` has no value"),
            format!("write a value after `=`, e.g. `{key} = 1` or `{key} = \"text\"`"),
        ));
    }
    let bare_word = value.chars().next().is_some_and(char::is_alphabetic)
        && !["true", "false", "inf", "nan"].contains(&value)
        && value
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '*' | '/' | ' '));
    if bare_word {
        return Some((
            "invalid TOML: text must be in quotes".to_string(),
            format!("write `{key} = \"{value}\"`"),
        ));
    }
    None
}

fn serde_diagnostic(
    e: &toml::de::Error,
    nodes: &[Node],
    lines: &Lines<'_>,
    file: &str,
) -> Diagnostic {
    let mut d = Diagnostic::new(e.message().trim()).in_file(file);
    if let Some(span) = e.span() {
        let (line, column) = lines.line_col(span.start);
        d.line = Some(line);
        d.column = Some(column);
        d.path = path_at(nodes, span, lines, Tree::Whole);
    }
    let (mut message, mut help) = humanize_serde_message(e.message().trim(), d.path.as_deref());
    // An unknown key written as a table header is an unknown table.
    if message.starts_with("unknown key `")
        && let Some(span) = e.span()
    {
        let (line, _) = lines.line_col(span.start);
        let start = lines.starts.get(line - 1).copied().unwrap_or(0);
        let header = lines
            .text
            .get(start..)
            .and_then(|t| t.lines().next())
            .map(|l| l.split('#').next().unwrap_or("").trim())
            .unwrap_or("");
        if header.starts_with('[') {
            message = format!("unknown table `{header}`");
            help = help.map(|h| {
                h.replace("The keys allowed", "The keys and tables allowed")
                    .replace("the keys allowed", "the keys and tables allowed")
            });
        }
    }
    d.message = message;
    d.help = help;
    d
}

/// Rewrites serde's wording ("unknown field", "invalid type: map, expected
/// a sequence") in the words of a TOML file, with a help line.
fn humanize_serde_message(message: &str, path: Option<&str>) -> (String, Option<String>) {
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let (key, expected) = match rest.find('`') {
            Some(i) => (rest.get(..i).unwrap_or(""), rest.get(i + 1..).unwrap_or("")),
            None => (rest, ""),
        };
        let allowed = backticked(expected);
        let message = format!("unknown key `{key}`");
        if allowed.is_empty() {
            return (message, Some("no keys are allowed here".into()));
        }
        let list = allowed
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let help = match did_you_mean(key, allowed.iter().map(String::as_str)) {
            Some(s) => format!("did you mean `{s}`? The keys allowed here are {list}"),
            None => format!("the keys allowed here are {list}"),
        };
        return (message, Some(help));
    }
    if let Some(rest) = message.strip_prefix("invalid length ")
        && let Some(i) = rest.find(", expected ")
    {
        // A table was wanted and an array (of that length) written.
        let expected = describe_expected(rest.get(i + ", expected ".len()..).unwrap_or(""));
        return (
            format!("expected {expected}, found an array"),
            Some("a table is written { key = value, ... }, an array [ ... ]".to_string()),
        );
    }
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = message.strip_prefix(prefix)
            && let Some(i) = rest.rfind(", expected ")
        {
            let found = describe_unexpected(rest.get(..i).unwrap_or(""));
            let expected = describe_expected(rest.get(i + ", expected ".len()..).unwrap_or(""));
            if let Some(n) = found.strip_prefix("the integer ")
                && n.parse::<i64>().is_err()
                && n.trim_start_matches('-')
                    .chars()
                    .all(|c| c.is_ascii_digit())
            {
                return (
                    format!(
                        "the integer {n} is out of range: TOML integers are 64-bit, from -9223372036854775808 to 9223372036854775807"
                    ),
                    Some("write a number in the range the key allows".to_string()),
                );
            }
            let message = format!("expected {expected}, found {found}");
            let last = path.and_then(|p| p.rsplit('.').next()).unwrap_or("");
            let help = if (last == "group" || last == "probe") && found == "a table" {
                Some(format!(
                    "write the table header with double brackets, [[{last}]]: a scenario may have several"
                ))
            } else if found.starts_with("the string") && expected.contains("number") {
                Some("write the number without quotes".to_string())
            } else if expected == "a string" {
                Some("put the value in quotes".to_string())
            } else if expected == "an array" && last.starts_with("body") {
                Some("a body is a list of steps: body = [ { sleep_ms = 100 }, \"yield\" ]".into())
            } else if expected.starts_with("\"yield\" or a step table") {
                Some("a step is one of { cpu_ms = N }, { spin_ms = N }, { busy_ms = N }, { sleep_ms = N }, { wait_ms = N }, { await_ms = N } or \"yield\"".into())
            } else {
                None
            };
            return (message, help);
        }
    }
    if message.ends_with("number overflowed") {
        return (
            "the number is too large for TOML: integers are 64-bit (at most 9223372036854775807), floats at most about 1.8e308".to_string(),
            Some("write a number in the range the key allows".to_string()),
        );
    }
    if let Some(rest) = message.strip_prefix("missing field ") {
        return (format!("missing key {rest}"), None);
    }
    (message.to_string(), None)
}

fn backticked(s: &str) -> Vec<String> {
    s.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, k)| k.to_string())
        .collect()
}

fn describe_unexpected(s: &str) -> String {
    let s = s.trim();
    if s == "map" {
        return "a table".into();
    }
    if s == "sequence" {
        return "an array".into();
    }
    for (serde_word, toml_word) in [
        ("string ", "the string "),
        ("integer ", "the integer "),
        ("floating point ", "the float "),
        ("boolean ", "the boolean "),
    ] {
        if let Some(rest) = s.strip_prefix(serde_word) {
            // `integer `18446744073709551616` as i128`: the number only.
            let rest = rest.strip_suffix(" as i128").unwrap_or(rest);
            return format!("{toml_word}{}", rest.trim_matches('`'));
        }
    }
    s.to_string()
}

fn describe_expected(s: &str) -> String {
    match s.trim() {
        "a sequence" => "an array".into(),
        "a map" => "a table".into(),
        "a boolean" => "true or false".into(),
        other => other.to_string(),
    }
}

/// The value named `value` among `choices`, or a problem listing them.
pub(crate) fn choose<T: Copy>(
    value: &str,
    choices: &[(&str, T)],
    what: &str,
) -> Result<T, Problem> {
    if let Some((_, v)) = choices.iter().find(|(name, _)| *name == value) {
        return Ok(*v);
    }
    let list = choices
        .iter()
        .map(|(n, _)| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let problem = Problem::new(format!("unknown {what} \"{value}\""));
    Err(match did_you_mean(value, choices.iter().map(|(n, _)| *n)) {
        Some(s) => problem.help(format!("did you mean \"{s}\"? Known values: {list}")),
        None => problem.help(format!("known values: {list}")),
    })
}

/// The candidate closest to `word` (case-insensitive edit distance), if it is
/// close enough to be a plausible typo.
pub fn did_you_mean<'c>(word: &str, candidates: impl Iterator<Item = &'c str>) -> Option<&'c str> {
    let word_l = word.to_lowercase();
    let limit = (word_l.chars().count() / 3).max(1);
    candidates
        .map(|c| {
            let c_l = c.to_lowercase();
            // `sleep` for `sleep_ms`: a forgotten unit suffix counts as a typo.
            let forgot_suffix = !word_l.is_empty()
                && c_l
                    .strip_prefix(word_l.as_str())
                    .is_some_and(|rest| rest.starts_with('_'));
            let distance = if forgot_suffix {
                1
            } else {
                edit_distance(&word_l, &c_l)
            };
            (distance, c)
        })
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Edit distance counting an insertion, deletion, substitution or swap of
/// two neighbours as one edit (optimal string alignment).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    // d[i * width + j]: distance between a[..i] and b[..j].
    let mut d: Vec<usize> = vec![0; (a.len() + 1) * width];
    let at = |d: &Vec<usize>, i: usize, j: usize| {
        d.get(i * width + j).copied().unwrap_or(usize::MAX / 2)
    };
    for i in 0..=a.len() {
        for j in 0..=b.len() {
            let value = if i == 0 || j == 0 {
                i + j
            } else {
                let ca = a.get(i - 1);
                let cb = b.get(j - 1);
                let cost = usize::from(ca != cb);
                let mut best = (at(&d, i - 1, j) + 1)
                    .min(at(&d, i, j - 1) + 1)
                    .min(at(&d, i - 1, j - 1) + cost);
                if i > 1 && j > 1 && ca == b.get(j - 2) && a.get(i - 2) == cb {
                    best = best.min(at(&d, i - 2, j - 2) + 1);
                }
                best
            };
            if let Some(cell) = d.get_mut(i * width + j) {
                *cell = value;
            }
        }
    }
    at(&d, a.len(), b.len())
}

/// Formats one key of a TOML path: bare if it can be, quoted otherwise.
pub(crate) fn key_segment(key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        key.to_string()
    } else {
        format!("{key:?}")
    }
}

/// A node of the parsed document: its TOML path and span.
struct Node {
    path: String,
    span: Range<usize>,
    is_key: bool,
    is_header: bool,
}

fn collect_nodes(table: &DeTable<'_>, prefix: &str, text: &str, out: &mut Vec<Node>) {
    for (key, value) in table.iter() {
        let seg = key_segment(key.get_ref());
        let path = if prefix.is_empty() {
            seg
        } else {
            format!("{prefix}.{seg}")
        };
        out.push(Node {
            path: path.clone(),
            span: key.span(),
            is_key: true,
            is_header: false,
        });
        collect_value(value, path, text, out);
    }
}

fn collect_value(value: &Spanned<DeValue<'_>>, path: String, text: &str, out: &mut Vec<Node>) {
    let span = value.span();
    match value.get_ref() {
        DeValue::Table(t) => {
            collect_nodes(t, &path, text, out);
            let is_header = text.get(span.clone()).is_some_and(|s| s.starts_with('['));
            out.push(Node {
                path,
                span,
                is_key: false,
                is_header,
            });
        }
        DeValue::Array(a) => {
            for (i, item) in a.iter().enumerate() {
                collect_value(item, format!("{path}[{i}]"), text, out);
            }
            out.push(Node {
                path,
                span,
                is_key: false,
                is_header: false,
            });
        }
        _ => out.push(Node {
            path,
            span,
            is_key: false,
            is_header: false,
        }),
    }
}

/// How far the parsed tree can be trusted when looking up a path.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tree {
    /// The document parsed: every span is right.
    Whole,
    /// Partial tree after a syntax error: only key spans are reliable.
    Partial,
}

/// The TOML path of the smallest key or value whose span holds `span`;
/// failing that, the key just before it on the same line, or (in a whole
/// tree) the last table header before it.
fn path_at(nodes: &[Node], span: Range<usize>, lines: &Lines<'_>, kind: Tree) -> Option<String> {
    let usable = |n: &&Node| kind == Tree::Whole || n.is_key;
    let start = span.start;
    let end = span.end.max(start + 1);
    let holding = nodes
        .iter()
        .filter(usable)
        .filter(|n| n.span.start <= start && end <= n.span.end.max(n.span.start + 1))
        .min_by_key(|n| n.span.end.saturating_sub(n.span.start));
    if let Some(n) = holding {
        return Some(n.path.clone());
    }
    let line_of = |offset: usize| lines.line_col(offset).0;
    let line = line_of(start);
    let key_before = nodes
        .iter()
        .filter(|n| n.is_key && n.span.end <= start && line_of(n.span.start) == line)
        .max_by_key(|n| n.span.end);
    if let Some(n) = key_before {
        return Some(n.path.clone());
    }
    nodes
        .iter()
        .filter(|n| kind == Tree::Whole && n.is_header && n.span.end <= start)
        .max_by_key(|n| n.span.start)
        .map(|n| n.path.clone())
}

/// TOML allows no control character but tab, line feed and carriage return
/// anywhere, not even in a string; the parser's own message for one (a NUL
/// from a binary file, a stray escape) reads as an unclosed string. This
/// names the character and where it is instead.
fn control_characters(text: &str, file: &str) -> Result<(), LoadError> {
    let Some((at, c)) = text
        .char_indices()
        .find(|&(_, c)| (c.is_control() && !matches!(c, '\t' | '\n' | '\r')) && (c as u32) < 0x80)
    else {
        return Ok(());
    };
    let what = match c {
        '\0' => "a NUL byte (0x00)".to_string(),
        c => format!("the control character 0x{:02X}", c as u32),
    };
    let (line, column) = line_col(text, at);
    let mut d = Diagnostic::new(format!(
        "the file holds {what}: not plain text, which a TOML file must be"
    ))
    .in_file(file);
    d.line = Some(line);
    d.column = Some(column);
    Err(LoadError::new(d.with_help(
        "remove it (a binary file, or text saved by a tool that pads with NULs?); scenario and policy files are plain UTF-8 text",
    )))
}

/// Largest scenario or policy file read, in bytes: far above any real
/// file, and a bound when the path is a device like `/dev/zero`.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// The text of a scenario or policy file from its bytes: at most
/// [`MAX_FILE_BYTES`] (a reader takes one byte more, to tell), valid UTF-8;
/// else a [`LoadError`] naming `file`. Reading the bytes is the caller's.
pub fn text_of_bytes(bytes: Vec<u8>, file: &str) -> Result<String, LoadError> {
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(Diagnostic::new(format!(
            "the file is larger than {} MiB: not a scenario or policy file",
            MAX_FILE_BYTES >> 20
        ))
        .in_file(file)
        .into());
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let prefix = String::from_utf8_lossy(e.as_bytes().get(..valid).unwrap_or(&[])).into_owned();
        let (line, column) = line_col(&prefix, prefix.len());
        let byte = e.as_bytes().get(valid).copied().unwrap_or(0);
        let mut d = Diagnostic::new(format!(
            "the file is not valid UTF-8 text: byte 0x{byte:02X} is not part of a UTF-8 character"
        ))
        .in_file(file);
        d.line = Some(line);
        d.column = Some(column);
        LoadError::new(d.with_help(
            "save the file as UTF-8 (a byte like 0xE9 is a Latin-1/Windows-1252 character)",
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one_and_never_panics() {
        let text = "a = 1\nbé = 2\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 4), (1, 5));
        assert_eq!(line_col(text, 6), (2, 1));
        // 'é' is two bytes: the '=' after it (byte 10) is column 4 in characters.
        assert_eq!(line_col(text, 10), (2, 4));
        // inside 'é': clamped to its start
        assert_eq!(line_col(text, 8), (2, 2));
        assert_eq!(line_col(text, 1000), (3, 1));
        assert_eq!(line_col("", 5), (1, 1));
    }

    #[test]
    fn display_leaves_out_absent_parts() {
        let d = Diagnostic::new("boom");
        assert_eq!(d.to_string(), "error: boom");
        let d = Diagnostic::new("boom").in_file("f.toml");
        assert_eq!(d.to_string(), "f.toml: error: boom");
        let d = Diagnostic::new("boom")
            .in_file("f.toml")
            .at_offset("x\ny = 1", 2)
            .at_path("y")
            .with_help("do this");
        assert_eq!(
            d.to_string(),
            "f.toml:2:1: error at `y`: boom\n  help: do this"
        );
    }

    #[test]
    fn several_diagnostics_print_one_per_line() {
        let e = LoadError::from_diagnostics(vec![
            Diagnostic::new("one").in_file("f"),
            Diagnostic::new("two").in_file("f"),
        ])
        .unwrap();
        assert_eq!(e.to_string(), "f: error: one\nf: error: two");
        assert_eq!(e.len(), 2);
        assert!(LoadError::from_diagnostics(Vec::new()).is_none());
    }

    #[test]
    fn suggestions_catch_typos_only() {
        let keys = ["cores", "name", "count"];
        assert_eq!(did_you_mean("cors", keys.iter().copied()), Some("cores"));
        assert_eq!(did_you_mean("Cores", keys.iter().copied()), Some("cores"));
        assert_eq!(
            did_you_mean("bais", ["bias", "gain"].into_iter()),
            Some("bias")
        );
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(did_you_mean("threads", keys.iter().copied()), None);
        let steps = ["cpu_ms", "sleep_ms", "at_ms"];
        assert_eq!(
            did_you_mean("sleep", steps.iter().copied()),
            Some("sleep_ms")
        );
        assert_eq!(did_you_mean("at", steps.iter().copied()), Some("at_ms"));
    }

    #[test]
    fn key_segments_are_quoted_when_needed() {
        assert_eq!(key_segment("sleep_ms"), "sleep_ms");
        assert_eq!(key_segment("a b"), "\"a b\"");
        assert_eq!(key_segment(""), "\"\"");
    }

    #[test]
    fn common_value_mistakes_are_explained() {
        let (m, h) = explain_value_syntax("policy = net-classic  # the pool").unwrap();
        assert_eq!(m, "invalid TOML: text must be in quotes");
        assert_eq!(h, "write `policy = \"net-classic\"`");
        let (m, _) = explain_value_syntax("cores =").unwrap();
        assert_eq!(m, "invalid TOML: `cores =` has no value");
        assert!(explain_value_syntax("cores = 4").is_none());
        assert!(explain_value_syntax("[pool").is_none());
        assert!(explain_value_syntax("enabled = true").is_none());
    }

    #[test]
    fn duplicates_are_named_with_their_first_line() {
        let text = "[machine]\ncores = 4\ncores = 8\n[pool]\n[machine]\n";
        let e = parse_document::<toml::Table>(text, "d.toml").unwrap_err();
        let shown = e.to_string();
        assert!(
            shown.contains("d.toml:3:1: error at `machine.cores`: invalid TOML: duplicate key `cores`, first written on line 2"),
            "{shown}"
        );
        assert!(
            shown.contains("d.toml:5:2: error at `machine`: invalid TOML: duplicate table `[machine]`, first written on line 1"),
            "{shown}"
        );
    }

    #[test]
    fn serde_messages_are_rewritten() {
        let (m, h) = humanize_serde_message(
            "unknown field `cors`, expected `cores`",
            Some("machine.cors"),
        );
        assert_eq!(m, "unknown key `cors`");
        assert_eq!(
            h.unwrap(),
            "did you mean `cores`? The keys allowed here are `cores`"
        );
        let (m, h) = humanize_serde_message(
            "invalid type: string \"four\", expected a number",
            Some("machine.cores"),
        );
        assert_eq!(m, "expected a number, found the string \"four\"");
        assert_eq!(h.unwrap(), "write the number without quotes");
        let (m, _) =
            humanize_serde_message("invalid type: map, expected a sequence", Some("group"));
        assert_eq!(m, "expected an array, found a table");
        let (m, _) = humanize_serde_message(
            "invalid type: integer `18446744073709551616` as i128, expected a number",
            Some("group[0].count"),
        );
        assert!(
            m.starts_with("the integer 18446744073709551616 is out of range"),
            "{m}"
        );
        let (m, _) = humanize_serde_message(
            "invalid length 1, expected a table like { at_ms = 0 }",
            Some("group[0].arrival"),
        );
        assert_eq!(m, "expected a table like { at_ms = 0 }, found an array");
    }
}
