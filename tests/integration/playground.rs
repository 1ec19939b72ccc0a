//! The playground's calls (`crates/wasm`, the same Rust the browser runs as
//! WebAssembly) say what the command line says: each seed scenario's
//! summary lines are lines of `poolsim run`'s output, its explanation is
//! `poolsim explain`'s, and a refused scenario of the error corpus gets
//! `poolsim run`'s message byte for byte. And `poolsim serve`: the page's
//! directory over HTTP on 127.0.0.1, GET only, nothing outside it. (The
//! page itself is tested in a real browser by scripts/playground-test.sh.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::common::{poolsim, repo_path};

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The playground's answer for the scenario file `rel` (its text as the
/// page sends it, named as the page names a preset).
fn playground_run(rel: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(repo_path(rel)).unwrap();
    playground_run_text(rel, &text)
}

fn playground_run_text(rel: &str, text: &str) -> serde_json::Value {
    let request = serde_json::json!({ "scenario": text, "file": rel }).to_string();
    serde_json::from_str(&poolsim_wasm::run_json(&request)).unwrap()
}

/// `dir`'s files with extension `ext`, as paths relative to the repository.
fn files(dir: &str, prefix: &str, ext: &str) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(repo_path(dir))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix) && n.ends_with(ext))
        .map(|n| format!("{dir}/{n}"))
        .collect();
    out.sort();
    out
}

#[test]
fn each_seed_scenario_reads_as_run_and_explain_print_it() {
    let seeds = files("scenarios", "seed-", ".toml");
    assert!(seeds.len() >= 20, "{seeds:?}");
    for rel in &seeds {
        let v = playground_run(rel);
        assert_eq!(v["ok"], true, "{rel}: {v}");
        let run = &v["runs"][0];
        let o = poolsim(&["run", rel, "--items", "0"]);
        assert!(o.status.success(), "{rel}: {}", stderr(&o));
        let printed = stdout(&o);
        let lines: Vec<&str> = printed.lines().collect();
        let summary = run["summary_text"].as_str().unwrap();
        assert!(summary.lines().count() >= 8, "{rel}: {summary}");
        for line in summary.lines() {
            assert!(
                lines.contains(&line),
                "{rel}: the playground says\n{line}\nwhich poolsim run does not:\n{printed}"
            );
        }
        let o = poolsim(&["explain", rel]);
        assert_eq!(
            run["explanation"].as_str().unwrap(),
            stdout(&o),
            "{rel}: the explanation differs from poolsim explain's"
        );
        // The chart's items are the run's.
        assert_eq!(v["report"]["panels"][0]["items"], run["summary"]["items"]);
    }
}

#[test]
fn the_error_corpus_gets_the_command_line_s_messages() {
    let cases = files("tests/corpus", "", ".toml");
    let (mut same, mut files_only) = (0, 0);
    for rel in &cases {
        // The editor holds text: a file that is not UTF-8 (a case of the
        // loader's encoding check) cannot be typed.
        let Ok(text) = std::fs::read_to_string(repo_path(rel)) else {
            continue;
        };
        let o = poolsim(&["run", rel, "--items", "0"]);
        let v = playground_run_text(rel, &text);
        if o.status.code() != Some(2) {
            // A case the loader takes (its error comes later, in a run).
            continue;
        }
        let error = v["error"].as_str().unwrap_or_default();
        assert_eq!(
            v["ok"], false,
            "{rel}: the playground takes what poolsim run refuses"
        );
        if names_a_policy_file(&text) {
            // A policy file beside the scenario: the browser has none.
            files_only += 1;
            continue;
        }
        assert_eq!(error, stderr(&o).trim_end(), "{rel}");
        // The first problem's place, as numbers for the editor.
        let d = &v["diagnostics"][0];
        if let Some(line) = d["line"].as_u64() {
            let column = d["column"].as_u64().unwrap();
            assert!(
                error.starts_with(&format!("{rel}:{line}:{column}: error")),
                "{rel}: {error}"
            );
        }
        same += 1;
    }
    assert!(
        same >= 100,
        "{same} cases compared, {files_only} need files"
    );
}

/// Whether a scenario's `pool.policy` names a policy file (`*.toml`).
fn names_a_policy_file(text: &str) -> bool {
    toml::from_str::<toml::Value>(text).is_ok_and(|v| {
        v.get("pool")
            .and_then(|p| p.get("policy"))
            .and_then(|p| p.as_str())
            .is_some_and(|p| p.trim().ends_with(".toml"))
    })
}

/// A directory to serve: index.html, m.wasm, and beside it (outside) a
/// secret.
fn site(name: &str) -> PathBuf {
    let base = std::env::temp_dir().join(format!("poolsim-serve-it-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let root = base.join("site");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("index.html"), "<!DOCTYPE html><p>the page</p>").unwrap();
    std::fs::write(root.join("m.wasm"), b"\0asm\x01\0\0\0").unwrap();
    std::fs::write(base.join("secret.txt"), "not to be served").unwrap();
    root
}

/// `poolsim serve ARGS` running, and the URL its first line gives.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_poolsim"))
            .arg("serve")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(out).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_default();
        let Some(at) = line.find("http://127.0.0.1:") else {
            let _ = child.kill();
            panic!("poolsim serve said {line:?}");
        };
        let url = line[at..].split_whitespace().next().unwrap().to_string();
        Server { child, url }
    }

    fn addr(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string()
    }

    /// The raw response to `request_line` (a whole request is sent).
    fn ask(&self, request_line: &str) -> (String, Vec<u8>) {
        let mut s = TcpStream::connect(self.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(s, "{request_line}\r\nHost: {}\r\n\r\n", self.addr()).unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).unwrap();
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("a response head");
        (
            String::from_utf8_lossy(&raw[..split]).into_owned(),
            raw[split + 4..].to_vec(),
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn serve_answers_with_the_directory_s_files_and_nothing_else() {
    let root = site("files");
    let server = Server::start(&["--dir", root.to_str().unwrap(), "--port", "0"]);
    let (head, body) = server.ask("GET / HTTP/1.1");
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(
        head.contains("Content-Type: text/html; charset=utf-8"),
        "{head}"
    );
    assert_eq!(body, b"<!DOCTYPE html><p>the page</p>");
    let (head, body) = server.ask("GET /m.wasm HTTP/1.1");
    assert!(head.contains("Content-Type: application/wasm"), "{head}");
    assert_eq!(body, b"\0asm\x01\0\0\0");
    for up in ["/../secret.txt", "/%2e%2e/secret.txt", "/..%2fsecret.txt"] {
        let (head, body) = server.ask(&format!("GET {up} HTTP/1.1"));
        assert!(head.starts_with("HTTP/1.1 400"), "{up}: {head}");
        assert!(!String::from_utf8_lossy(&body).contains("not to be served"));
    }
    let (head, _) = server.ask("GET /nothing.js HTTP/1.1");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    let (head, body) = server.ask("POST / HTTP/1.1");
    assert!(
        head.starts_with("HTTP/1.1 405") && head.contains("Allow: GET, HEAD"),
        "{head}"
    );
    assert!(!String::from_utf8_lossy(&body).contains("the page"));
    let (head, body) = server.ask("HEAD /m.wasm HTTP/1.1");
    assert!(
        head.contains("Content-Length: 8") && body.is_empty(),
        "{head}"
    );
}

#[test]
fn serve_without_a_page_says_how_to_build_it() {
    let empty = site("empty").parent().unwrap().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let o = poolsim(&["serve", "--dir", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.starts_with("error: no page to serve"), "{err}");
    assert!(err.contains("scripts/build-playground.sh"), "{err}");
    assert!(Path::new(&repo_path("scripts/build-playground.sh")).is_file());
}

#[test]
fn serve_on_a_port_in_use_is_refused() {
    let taken = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let root = site("busy");
    let o = poolsim(&["serve", "--dir", root.to_str().unwrap(), "--port", &port]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{}",
        stderr(&o)
    );
}
