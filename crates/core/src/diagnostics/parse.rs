//! Stage one of loading: TOML text into the raw serde structs. Syntax
//! errors become diagnostics in a file's words: a duplicate key or table
//! named with the line it was first written on, a value left unquoted or
//! missing, a bad escape, an unclosed string, table or inline table.

use std::ops::Range;

use serde::de::DeserializeOwned;
use toml::de::DeTable;

use super::LoadError;
use super::humanize::serde_diagnostic;
use super::locate::{Lines, Node, Tree, collect_nodes, path_at};
use super::report::{Found, MAX_DIAGNOSTICS, Problem, place};
use super::text::control_characters;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
