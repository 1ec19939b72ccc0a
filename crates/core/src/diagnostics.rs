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
//!
//! This file holds the error type; its parts are beside it: `locate` (the
//! line, column and TOML path of a span), `report` (the collector),
//! `parse` (stage one and its syntax errors), `humanize` (serde's messages
//! in a TOML file's words), `suggest` (the names a typo was meant to be)
//! and `text` (a file's bytes as text).

mod humanize;
mod locate;
mod parse;
mod report;
mod suggest;
mod text;

pub use locate::{line_col, value_span};
pub(crate) use parse::parse_document;
pub(crate) use report::{Problem, Report};
pub(crate) use suggest::choose;
pub use suggest::did_you_mean;
pub use text::{MAX_FILE_BYTES, text_of_bytes};

use std::fmt;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
