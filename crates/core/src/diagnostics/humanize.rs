//! Serde's messages in the words of a TOML file: an unknown field becomes
//! an unknown key or table with the keys allowed and a likely typo, an
//! invalid type says what was expected and what was found (an array, a
//! table, the string "four"), each with a help line where one helps.

use super::Diagnostic;
use super::locate::{Lines, Node, Tree, path_at};
use super::suggest::did_you_mean;

pub(super) fn serde_diagnostic(
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
                Some(format!(
                    "a step is one of {}",
                    crate::scenario::model::STEP_FORMS
                ))
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

#[cfg(test)]
mod tests {
    use super::*;

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
