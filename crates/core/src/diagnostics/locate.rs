//! Locating a problem in a file: the line and column of a byte offset
//! ([`line_col`], and [`Lines`] for many look-ups), the span of a value
//! named by its keys ([`value_span`]), and the TOML path of the key or value
//! a span falls in, from the nodes of the parsed tree ([`path_at`]).

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

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
pub(super) struct Lines<'t> {
    pub(super) text: &'t str,
    pub(super) starts: Vec<usize>,
}

impl<'t> Lines<'t> {
    pub(super) fn new(text: &'t str) -> Lines<'t> {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Lines { text, starts }
    }

    /// Same as [`line_col`], in logarithmic time.
    pub(super) fn line_col(&self, offset: usize) -> (usize, usize) {
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
pub(super) struct Node {
    pub(super) path: String,
    pub(super) span: Range<usize>,
    pub(super) is_key: bool,
    pub(super) is_header: bool,
}

pub(super) fn collect_nodes(table: &DeTable<'_>, prefix: &str, text: &str, out: &mut Vec<Node>) {
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
pub(super) enum Tree {
    /// The document parsed: every span is right.
    Whole,
    /// Partial tree after a syntax error: only key spans are reliable.
    Partial,
}

/// The TOML path of the smallest key or value whose span holds `span`;
/// failing that, the key just before it on the same line, or (in a whole
/// tree) the last table header before it.
pub(super) fn path_at(
    nodes: &[Node],
    span: Range<usize>,
    lines: &Lines<'_>,
    kind: Tree,
) -> Option<String> {
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
    fn key_segments_are_quoted_when_needed() {
        assert_eq!(key_segment("sleep_ms"), "sleep_ms");
        assert_eq!(key_segment("a b"), "\"a b\"");
        assert_eq!(key_segment(""), "\"\"");
    }
}
