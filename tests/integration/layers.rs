//! The top-level modules of `src/` form layers: no import cycle between
//! them (issue 16). Reads every library file as text, takes each
//! `crate::NAME` path (outside `//` comments) as an edge from the file's
//! top-level module to NAME, and looks for a cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::common::repo_path;

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).expect("src is readable") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Top-level names after `crate::` (plain paths and `crate::{a, b::c}`).
fn imports(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                names.push(name);
            }
        }
    }
    // Grouped imports: `use crate::{a::X, b};` may span lines.
    let mut rest = text;
    while let Some(i) = rest.find("crate::{") {
        rest = &rest[i + "crate::{".len()..];
        let (mut depth, mut start) = (1, true);
        for (j, c) in rest.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                ',' if depth == 1 => start = true,
                c if depth == 1 && start && (c.is_ascii_alphanumeric() || c == '_') => {
                    let name: String = rest[j..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    names.push(name);
                    start = false;
                }
                _ => {}
            }
        }
    }
    names
}

#[test]
fn no_import_cycle_between_top_level_modules() {
    let src = repo_path("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &all {
        let rel = f.strip_prefix(&src).expect("under src");
        let top = rel
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .unwrap_or("")
            .trim_end_matches(".rs")
            .to_string();
        // The binary's CLI sits above everything.
        if top == "cli" || top == "main" || top == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(f).expect("readable");
        for n in imports(&text) {
            if n != top && n != "self" {
                edges.entry(top.clone()).or_default().insert(n);
            }
        }
    }
    // Depth-first search for a back edge.
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(n) {
            Some(2) => return None,
            Some(1) => {
                let at = path.iter().position(|p| p == n).unwrap_or(0);
                let mut cycle = path[at..].to_vec();
                cycle.push(n.to_string());
                return Some(cycle);
            }
            _ => {}
        }
        state.insert(n.to_string(), 1);
        path.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, edges, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    assert!(edges.len() > 10, "the scan found the modules: {edges:?}");
    for n in edges.keys() {
        let cycle = visit(n, &edges, &mut state, &mut Vec::new());
        assert!(
            cycle.is_none(),
            "import cycle: {}",
            cycle.unwrap_or_default().join(" -> ")
        );
    }
}
