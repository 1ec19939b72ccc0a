//! `poolsim serve`: the playground (or any directory of static files) on
//! `http://127.0.0.1:PORT/`, for a browser on this machine. It models no
//! runtime: it is the smallest web server the page needs — GET and HEAD
//! of files under one directory, each with its content type
//! (`application/wasm` for a module), nothing outside the directory, no
//! listing. The playground needs no server at all (it opens from the
//! disk); this is for browsers or hosts that want `http://`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use clap::Args;

use super::Failure;

/// Where `scripts/build-playground.sh` writes the page.
const DEFAULT_DIR: &str = "target/playground";
/// The longest request head read (request line and headers).
const MAX_HEAD: usize = 16 * 1024;
/// How long a connection may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Args, Debug)]
#[command(after_help = "\
Serves the files of a directory (the playground by default) to a browser on this
machine, GET only, each with its content type; nothing outside the directory.
The playground also opens straight from the disk, and the same index.html can be
published on any static host.

Examples:
  scripts/build-playground.sh && poolsim serve
  poolsim serve --port 8080
  poolsim serve --dir target/browser --port 0

Exit codes: 0 never (it serves until stopped, Ctrl-C); 2 bad input: no
index.html in the directory (it says which command builds the playground), or
a port that cannot be opened.")]
pub struct ServeArgs {
    /// The directory to serve; it must hold an index.html.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_DIR)]
    pub dir: PathBuf,
    /// The port on 127.0.0.1 (0: any free port; the URL printed says which).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
}

pub fn run(args: ServeArgs) -> Result<(), Failure> {
    let index = args.dir.join("index.html");
    if !index.is_file() {
        let hint = if args.dir == Path::new(DEFAULT_DIR) {
            "build the playground first: scripts/build-playground.sh".to_string()
        } else {
            format!(
                "give a directory with an index.html (the playground: scripts/build-playground.sh writes {DEFAULT_DIR})"
            )
        };
        return Err(Failure::error(format!(
            "no page to serve: {} is not a file\n  help: {hint}",
            index.display()
        )));
    }
    let root = args
        .dir
        .canonicalize()
        .map_err(|e| Failure::error(format!("cannot open {}: {e}", args.dir.display())))?;
    let listener = TcpListener::bind(("127.0.0.1", args.port)).map_err(|e| {
        Failure::error(format!(
            "cannot listen on 127.0.0.1:{}: {e}\n  help: give another port with --port (0: any free one)",
            args.port
        ))
    })?;
    let port = listener
        .local_addr()
        .map_err(|e| Failure::error(format!("the server's address: {e}")))?
        .port();
    println!(
        "serving {} at http://127.0.0.1:{port}/  (Ctrl-C stops)",
        args.dir.display()
    );
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let root = root.clone();
        // One thread a connection: a slow client holds up no other.
        std::thread::spawn(move || {
            let _ = answer(stream, &root);
        });
    }
    Ok(())
}

/// Reads one request from `stream` and answers it from the files under
/// `root` (canonical), then closes the connection.
fn answer(mut stream: TcpStream, root: &Path) -> std::io::Result<()> {
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    let mut head = Vec::new();
    let mut reader = BufReader::new(stream.try_clone()?).take(MAX_HEAD as u64);
    loop {
        let start = head.len();
        if reader.read_until(b'\n', &mut head)? == 0 {
            break;
        }
        let line = &head[start..];
        if line == b"\r\n" || line == b"\n" {
            break;
        }
    }
    let response = respond(&String::from_utf8_lossy(&head), root);
    stream.write_all(&response)?;
    stream.flush()
}

/// What a request's status is, when it gets no file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    BadRequest,
    NotFound,
    MethodNotAllowed,
}

impl Status {
    fn line(self) -> &'static str {
        match self {
            Status::BadRequest => "400 Bad Request",
            Status::NotFound => "404 Not Found",
            Status::MethodNotAllowed => "405 Method Not Allowed",
        }
    }
}

/// The whole response to a request whose head is `head`.
fn respond(head: &str, root: &Path) -> Vec<u8> {
    let request_line = head.lines().next().unwrap_or("");
    let mut parts = request_line.split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let refuse = |status: Status| {
        let body = format!("{}\n", status.line());
        let allow = if status == Status::MethodNotAllowed {
            "Allow: GET, HEAD\r\n"
        } else {
            ""
        };
        let mut out = format!(
            "HTTP/1.1 {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n{allow}Connection: close\r\n\r\n",
            status.line(),
            body.len()
        )
        .into_bytes();
        if method != "HEAD" {
            out.extend_from_slice(body.as_bytes());
        }
        out
    };
    if method != "GET" && method != "HEAD" {
        return refuse(if method.is_empty() {
            Status::BadRequest
        } else {
            Status::MethodNotAllowed
        });
    }
    let path = match file_of(root, target) {
        Ok(p) => p,
        Err(s) => return refuse(s),
    };
    let Ok(body) = std::fs::read(&path) else {
        return refuse(Status::NotFound);
    };
    let mut out = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n",
        content_type(&path),
        body.len()
    )
    .into_bytes();
    if method == "GET" {
        out.extend_from_slice(&body);
    }
    out
}

/// The file a request target names under `root` (canonical): the path
/// percent-decoded, its query dropped, `/` and directories their
/// index.html. A target with `..`, a backslash, a NUL or a drive, or that
/// leads (through a link) outside `root`, is refused.
fn file_of(root: &Path, target: &str) -> Result<PathBuf, Status> {
    let path = target.split(['?', '#']).next().unwrap_or("");
    if !path.starts_with('/') {
        return Err(Status::BadRequest);
    }
    let decoded = percent_decode(path).ok_or(Status::BadRequest)?;
    if decoded.contains(['\\', '\0']) || decoded.contains(':') {
        return Err(Status::BadRequest);
    }
    let mut file = root.to_path_buf();
    for part in Path::new(decoded.trim_start_matches('/')).components() {
        match part {
            Component::Normal(p) => file.push(p),
            Component::CurDir => {}
            _ => return Err(Status::BadRequest),
        }
    }
    if file.is_dir() {
        file.push("index.html");
    }
    // A link may point anywhere: what is served must lie under the root.
    let real = file.canonicalize().map_err(|_| Status::NotFound)?;
    if !real.starts_with(root) || !real.is_file() {
        return Err(Status::NotFound);
    }
    Ok(real)
}

/// `%XX` escapes decoded; `None` for a bad escape or text that is not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The content type of a file, by its extension.
fn content_type(path: &Path) -> &'static str {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    match ext.as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "wasm" => "application/wasm",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "txt" | "toml" | "csv" | "md" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory with index.html, app.wasm, sub/index.html and a file
    /// beside it (outside it).
    fn site(name: &str) -> (PathBuf, PathBuf) {
        let base =
            std::env::temp_dir().join(format!("poolsim-serve-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("site");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("index.html"), "<p>home</p>").unwrap();
        std::fs::write(root.join("app.wasm"), b"\0asm").unwrap();
        std::fs::write(root.join("sub/index.html"), "<p>sub</p>").unwrap();
        std::fs::write(root.join("a b.txt"), "spaced").unwrap();
        std::fs::write(base.join("secret.txt"), "outside").unwrap();
        (root.canonicalize().unwrap(), base)
    }

    #[test]
    fn paths_map_to_files_under_the_root_only() {
        let (root, _base) = site("paths");
        assert_eq!(file_of(&root, "/"), Ok(root.join("index.html")));
        assert_eq!(
            file_of(&root, "/index.html?x=1#y"),
            Ok(root.join("index.html"))
        );
        assert_eq!(file_of(&root, "/sub/"), Ok(root.join("sub/index.html")));
        assert_eq!(file_of(&root, "/sub"), Ok(root.join("sub/index.html")));
        assert_eq!(file_of(&root, "/a%20b.txt"), Ok(root.join("a b.txt")));
        assert_eq!(file_of(&root, "/./app.wasm"), Ok(root.join("app.wasm")));
        for bad in [
            "/../secret.txt",
            "/sub/../../secret.txt",
            "/%2e%2e/secret.txt",
            "/%2E%2E%2Fsecret.txt",
            "/..%5csecret.txt",
            "/a%00b",
            "/%zz",
            "/C:/x",
            "secret.txt",
            "",
        ] {
            assert_eq!(file_of(&root, bad), Err(Status::BadRequest), "{bad}");
        }
        assert_eq!(file_of(&root, "/missing.js"), Err(Status::NotFound));
    }

    #[cfg(unix)]
    #[test]
    fn a_link_out_of_the_root_is_not_followed() {
        let (root, base) = site("link");
        std::os::unix::fs::symlink(base.join("secret.txt"), root.join("out.txt")).unwrap();
        assert_eq!(file_of(&root, "/out.txt"), Err(Status::NotFound));
    }

    #[test]
    fn responses_carry_the_file_and_its_type() {
        let (root, _base) = site("respond");
        let text = |r: Vec<u8>| String::from_utf8_lossy(&r).into_owned();
        let ok = text(respond("GET /app.wasm HTTP/1.1\r\nHost: x\r\n\r\n", &root));
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.contains("Content-Type: application/wasm\r\n"), "{ok}");
        assert!(
            ok.contains("Content-Length: 4\r\n") && ok.ends_with("\r\n\r\n\0asm"),
            "{ok}"
        );
        let head = text(respond("HEAD / HTTP/1.1\r\n\r\n", &root));
        assert!(
            head.contains("text/html; charset=utf-8") && head.ends_with("\r\n\r\n"),
            "{head}"
        );
        let post = text(respond("POST / HTTP/1.1\r\n\r\n", &root));
        assert!(
            post.starts_with("HTTP/1.1 405") && post.contains("Allow: GET, HEAD"),
            "{post}"
        );
        let up = text(respond("GET /../secret.txt HTTP/1.1\r\n\r\n", &root));
        assert!(
            up.starts_with("HTTP/1.1 400") && !up.contains("outside"),
            "{up}"
        );
        assert!(text(respond("GET /nothing HTTP/1.1\r\n\r\n", &root)).starts_with("HTTP/1.1 404"));
        assert!(text(respond("", &root)).starts_with("HTTP/1.1 400"));
    }

    #[test]
    fn content_types_by_extension() {
        for (file, ty) in [
            ("a.HTML", "text/html; charset=utf-8"),
            ("a.js", "text/javascript; charset=utf-8"),
            ("a.css", "text/css; charset=utf-8"),
            ("a.wasm", "application/wasm"),
            ("a.json", "application/json"),
            ("a.toml", "text/plain; charset=utf-8"),
            ("a.bin", "application/octet-stream"),
            ("noext", "application/octet-stream"),
        ] {
            assert_eq!(content_type(Path::new(file)), ty, "{file}");
        }
    }
}
