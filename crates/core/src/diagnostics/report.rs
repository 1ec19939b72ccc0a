//! The report collector: validators record each [`Problem`] with its span
//! and TOML path in a [`Report`], which places them (file, line, column) in
//! file order, keeps the first [`MAX_DIAGNOSTICS`] and counts the rest.

use std::ops::Range;

use toml::Spanned;

use super::locate::Lines;
use super::{Diagnostic, LoadError};

/// At most this many diagnostics are kept; the rest are counted.
pub(super) const MAX_DIAGNOSTICS: usize = 20;

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

/// A problem found, before it is placed (line and column are computed only
/// for the problems that are shown).
pub(super) struct Found {
    pub(super) at: usize,
    pub(super) path: Option<String>,
    pub(super) problem: Problem,
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
pub(super) fn place(mut found: Vec<Found>, file: &str, lines: &Lines<'_>) -> Option<LoadError> {
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
