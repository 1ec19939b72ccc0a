//! `poolsim import` beyond the timeline, one file per behaviour:
//! the work items of a .NET 8 trace ([`items`]), the charts of a trace
//! ([`charts`]), its HTML page ([`html`]), the drafted scenario
//! ([`scenario`]) and bad input ([`bad_input`]). The fixtures are real
//! traces of .NET 8.0.4 in tests/fixtures/nettrace (see its README for how
//! they were recorded).

mod bad_input;
mod charts;
mod html;
mod infer;
mod items;
mod scenario;

use std::fs;
use std::path::PathBuf;

use poolsim::nettrace::PoolTimeline;

use super::common::repo_path;

/// The bytes of `tests/fixtures/nettrace/<stem>.nettrace`.
pub fn fixture(stem: &str) -> Vec<u8> {
    fs::read(repo_path(&format!(
        "tests/fixtures/nettrace/{stem}.nettrace"
    )))
    .unwrap()
}

/// The repository-relative path of a fixture.
pub fn fixture_path(stem: &str) -> String {
    format!("tests/fixtures/nettrace/{stem}.nettrace")
}

/// A fixture's timeline.
pub fn timeline(stem: &str) -> PoolTimeline {
    PoolTimeline::read(&fixture(stem)[..]).unwrap()
}

/// A fresh path in the temp dir (removed if it exists).
pub fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("poolsim-import-{}-{name}", std::process::id()));
    let _ = fs::remove_file(&p);
    p
}

/// One `item i=.. thread=.. start_ms=.. end_ms=..` line of burst.cs.
pub struct ProgramItem {
    pub thread: i64,
    pub start_ms: i64,
    pub end_ms: i64,
}

/// The items burst.cs printed in the run a fixture recorded.
pub fn program_items(stem: &str) -> Vec<ProgramItem> {
    let text =
        fs::read_to_string(repo_path(&format!("tests/fixtures/nettrace/{stem}.txt"))).unwrap();
    text.lines()
        .filter(|l| l.starts_with("item "))
        .map(|l| {
            let get = |key: &str| -> i64 {
                l.split_whitespace()
                    .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
                    .unwrap()
                    .parse()
                    .unwrap()
            };
            ProgramItem {
                thread: get("thread"),
                start_ms: get("start_ms"),
                end_ms: get("end_ms"),
            }
        })
        .collect()
}
