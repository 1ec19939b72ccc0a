//! The repository stands on its own: no text file in it cites a location
//! outside a clone. That means the notes the project started from
//! (the `shared` folder one level up, or their bare names such as
//! `REFERENCE.md` when no such file is in the repository) and absolute
//! paths of one machine (under `/work`, `/home`, `C:\Users`). A clone has none of them, and
//! the policy and scenario files are compiled into the binary, so such a
//! path would ship in it. Cite `docs/reference.md` (e.g. "seed 001
//! (docs/reference.md)"), `docs/research/...`, or an upstream source by
//! repository and file ("dotnet/coreclr v3.1 src/vm/win32threadpool.cpp").
//!
//! Legitimate absolute paths (`/dev/null`, `/proc/...`, `/usr/bin/env`, a
//! `/tmp` given to `mktemp` or in temp-dir code) are not flagged.

use std::path::{Path, PathBuf};
use std::process::Command;

/// This file names the patterns it looks for, so it is not scanned; it
/// writes them with a `|` inside (`unmark` takes it out), so that the file
/// itself cites no path either.
const THIS_FILE: &str = "tests/integration/standalone.rs";

/// A pattern or sample as written here, without its `|` markers.
fn unmark(s: &str) -> String {
    s.replace('|', "")
}

/// Absolute directories that only exist on some machine: a path starting
/// with one of them is a source location nobody else has.
const MACHINE_DIRS: &[&str] = &[
    "/wo|rk/", "/ho|me/", "/ro|ot/", "/Us|ers/", "/tm|p/", "/mn|t/", "/med|ia/",
];

/// Names of the notes outside the repository that files used to cite.
const OUTSIDE_NOTES: &[&str] = &["REFERENCE.md", "MODELS.md", "RUNTIMES.md", "DESIGN.md"];

/// Lines that match a pattern but cite nothing: (file, text on the line, why).
const ALLOWED: &[(&str, &str, &str)] = &[(
    "tests/corpus/syntax-bad-escape.toml",
    r#"name = "C:\Users\q""#,
    "a deliberately invalid TOML escape (`\\U`), an input of the error corpus",
)];

/// Words on a line that make a path under `/tmp` legitimate there.
const TEMP_CODE: &[&str] = &["mktemp", "TMPDIR", "temp_dir", "tempdir", "tempfile"];

/// A character that can be part of a path or a word, so that a pattern
/// preceded by it is the middle of something else (`docs/workshop/`,
/// a URL whose path has `home` in it, `POOLSIM_RUNTIMES.md`).
fn is_path_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '\\' | '~' | '$' | '%' | '@')
}

/// Byte offsets where `pat` occurs in `line` not preceded by a path character.
fn starts_of<'a>(line: &'a str, pat: &'a str) -> impl Iterator<Item = usize> + 'a {
    line.match_indices(pat)
        .map(|(i, _)| i)
        .filter(move |&i| !line[..i].chars().next_back().is_some_and(is_path_char))
}

/// A Windows absolute path with at least two components (`C:\Users\me`,
/// `D:\\src\\coreclr`, `C:/src/x`). One component (`'C:\temp'` as an
/// example in a message) is not a source location and is not flagged.
fn has_windows_path(line: &str) -> bool {
    let b = line.as_bytes();
    for i in 1..b.len() {
        if b[i] != b':' || !b[i - 1].is_ascii_alphabetic() {
            continue;
        }
        if i >= 2 && (b[i - 2].is_ascii_alphanumeric() || b[i - 2] == b'_') {
            continue;
        }
        let sep = |j: usize| b.get(j).is_some_and(|&c| c == b'\\' || c == b'/');
        let mut j = i + 1;
        if !sep(j) {
            continue;
        }
        while sep(j) {
            j += 1;
        }
        let name_start = j;
        while b
            .get(j)
            .is_some_and(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b' '))
        {
            j += 1;
        }
        if j > name_start && sep(j) {
            return true;
        }
    }
    false
}

/// Why `line` cites a location outside a clone, if it does. `notes_here`
/// lists the outside notes' names that do exist in the repository.
fn offence(line: &str, notes_here: &[&str]) -> Option<String> {
    if line.contains(&unmark("..|/shared")) {
        return Some("cites the shared notes one level up (not in the repository)".into());
    }
    for (i, _) in line.match_indices("seeds/") {
        let rest = &line.as_bytes()[i + 6..];
        if rest.len() > 3 && rest[..3].iter().all(u8::is_ascii_digit) && rest[3] == b'_' {
            return Some("cites a seed file outside the repository".into());
        }
    }
    for dir in MACHINE_DIRS.iter().map(|d| unmark(d)) {
        if starts_of(line, &dir).next().is_some() {
            if dir == unmark("/tm|p/") && TEMP_CODE.iter().any(|w| line.contains(w)) {
                continue;
            }
            return Some(format!("absolute machine path {dir}..."));
        }
    }
    if has_windows_path(line) {
        return Some("absolute Windows path".into());
    }
    for note in OUTSIDE_NOTES {
        if !notes_here.contains(note) && starts_of(line, note).next().is_some() {
            return Some(format!("cites {note}, which is not in the repository"));
        }
    }
    None
}

/// The repository's text files, relative to `root`: tracked and new
/// (not ignored) files from git, or, without git, a walk of the tree that
/// skips `.git`, `target` and `runtimes`.
fn repo_files(root: &Path) -> Vec<PathBuf> {
    let git = Command::new("git")
        .arg("-C")
        .arg(root)
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output();
    if let Ok(out) = git
        && out.status.success()
        && !out.stdout.is_empty()
    {
        let mut files: Vec<PathBuf> = out
            .stdout
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
            .collect();
        files.sort();
        files.dedup();
        return files;
    }
    let mut files = Vec::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let rel = dir.join(entry.file_name());
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                let name = entry.file_name();
                if dir.as_os_str().is_empty() && (name == "target" || name == "runtimes") {
                    continue;
                }
                if name != ".git" {
                    dirs.push(rel);
                }
            } else if kind.is_file() {
                files.push(rel);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn no_file_cites_a_location_outside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = repo_files(root);
    assert!(
        files.iter().any(|f| f == Path::new("Cargo.toml")),
        "the file list of {} looks wrong ({} files)",
        root.display(),
        files.len()
    );
    let notes_here: Vec<&str> = OUTSIDE_NOTES
        .iter()
        .copied()
        .filter(|n| files.iter().any(|f| f.file_name().is_some_and(|b| b == *n)))
        .collect();
    let mut offenders = Vec::new();
    for rel in &files {
        let name = rel.to_string_lossy().replace('\\', "/");
        if name == THIS_FILE {
            continue;
        }
        // Deleted but still tracked, or not readable: nothing to check.
        let Ok(bytes) = std::fs::read(root.join(rel)) else {
            continue;
        };
        if bytes.iter().take(8000).any(|&b| b == 0) {
            continue; // binary (images)
        }
        let text = String::from_utf8_lossy(&bytes);
        for (n, line) in text.lines().enumerate() {
            let allowed = ALLOWED
                .iter()
                .any(|(file, text, _)| name == *file && line.contains(text));
            if allowed {
                continue;
            }
            if let Some(why) = offence(line, &notes_here) {
                let shown: String = line.trim().chars().take(120).collect();
                offenders.push(format!("{name}:{}: {why}: {shown}", n + 1));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "{} line(s) cite a location a clone does not have; cite docs/reference.md \
         (\"seed 001 (docs/reference.md)\"), docs/research/..., or the upstream source \
         by repository and file instead:\n{}",
        offenders.len(),
        offenders.join("\n")
    );
}

#[test]
fn the_patterns_catch_the_offenders_and_spare_the_rest() {
    let flagged = [
        "//! One row per row of `..|/shared/REFERENCE.md`: the seed",
        "# Source: ..|/shared/seeds/000 (a Japanese forum post, 2022)",
        "see shared/seeds/004_a4d2270d31e64e01.txt",
        "# runtime (/wo|rk/shared/RUNTIMES.md: .NET Core 3.1.23).",
        "read at /ho|me/alice/src/coreclr/win32threadpool.cpp",
        "cp /ro|ot/notes.txt .",
        "(`/Us|ers/bob/dotnet/runtime`)",
        "> \"/tm|p/live-$stem-$rt.txt\" 2>&1",
        "built in C:\\Users\\me\\src",
        "\"D:\\\\src\\\\coreclr\\\\vm\"",
        "the phase (REFERENCE.md, seed 001)",
        "see MODELS.md's note",
    ];
    for line in flagged.map(unmark) {
        assert!(offence(&line, &[]).is_some(), "not flagged: {line}");
    }
    let spared = [
        "#!/usr/bin/env bash",
        "cmd > /dev/null 2>&1",
        "read /proc/self/status",
        "tmp=$(mktemp -d -t poolsim-live.XXXXXX)",
        "dir=$(mktemp -d /tm|p/poolsim.XXXXXX)",
        "let dir = std::env::temp_dir().join(\"/tm|p/x\");",
        "out=\"${TMPDIR:-/tm|p}/run.txt\"",
        "use a literal string in single quotes: 'C:\\\\temp'",
        "see docs/reference.md#seed-001 and docs/research/mono-and-tpl.md",
        "https://github.com/dotnet/runtime/blob/main/ho|me/x",
        "$POOLSIM_RUNTIMES (default: ./runtimes)",
        "cargo run -- reproduce",
        "compiled into ~/.cache/poolsim",
        "src/wo|rk/ho|me/ is relative",
        "POOLSIM_RUNTIMES.md is a different name",
        "time 12:30/45 is not a path",
    ];
    for line in spared.map(unmark) {
        assert_eq!(offence(&line, &[]), None, "flagged: {line}");
    }
    // A note that exists in the repository may be cited by name.
    assert_eq!(offence("see DESIGN.md", &["DESIGN.md"]), None);
}
