//! Suggestions for a misspelt name: the closest of the known names when it
//! is a plausible typo ([`did_you_mean`], by edit distance), and a value
//! chosen from a fixed list ([`choose`]) that lists them when it is unknown.

use super::Problem;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
