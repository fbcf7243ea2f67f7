//! A small static file server on 127.0.0.1, so the browser loads the book over HTTP the way a
//! reader does (`file://` pages behave differently: fetches and some scripts are refused).
//!
//! Written on `std::net` rather than with `tiny_http`: under Chromium's burst of parallel
//! keep-alive connections, tiny_http 0.12's worker pool can leave a new connection queued
//! behind idle ones, and a page then never finishes loading (seen here about one run in
//! six). One thread per connection and `Connection: close` after each reply cannot stall.

use anyhow::{Context, Result};
use percent_encoding::percent_decode_str;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// Serves a folder until dropped.
#[derive(Debug)]
pub struct StaticServer {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl StaticServer {
    /// Starts serving `root` on a free port of 127.0.0.1, on a thread of its own.
    pub fn start(root: &Path) -> Result<StaticServer> {
        let listener = TcpListener::bind("127.0.0.1:0").context("cannot listen on 127.0.0.1")?;
        let port = listener.local_addr()?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let root = root.to_path_buf();
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let root = root.clone();
                // A connection that fails means the browser went away: nothing to do.
                std::thread::spawn(move || {
                    let _ = reply(&root, stream);
                });
            }
        });
        Ok(StaticServer {
            port,
            stop,
            thread: Some(thread),
        })
    }

    /// The address of `page` (a path relative to the served folder), percent-encoded the way
    /// the browser will report it back in `location.href`.
    pub fn url(&self, page: &str) -> String {
        let path: Vec<String> = page
            .split('/')
            .map(|s| percent_encoding::utf8_percent_encode(s, PATH_SEGMENT).to_string())
            .collect();
        format!("http://127.0.0.1:{}/{}", self.port, path.join("/"))
    }
}

/// Characters escaped in a path segment: all but letters, digits and `-._~`.
const PATH_SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

impl Drop for StaticServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads one request from `stream` and answers it, then closes the connection.
fn reply(root: &Path, stream: TcpStream) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // Skip the headers: nothing in them changes the answer.
    let mut header = String::new();
    while reader.read_line(&mut header)? > 2 {
        header.clear();
    }
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (status, mime, body) = match (method, file_for(root, target)) {
        ("GET" | "HEAD", Some(file)) => match std::fs::read(&file) {
            Ok(bytes) => ("200 OK", content_type(&file), bytes),
            Err(_) => ("404 Not Found", "text/plain", b"not found".to_vec()),
        },
        ("GET" | "HEAD", None) => ("404 Not Found", "text/plain", b"not found".to_vec()),
        _ => ("405 Method Not Allowed", "text/plain", b"GET only".to_vec()),
    };
    let mut out = stream;
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: {mime}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    if method != "HEAD" {
        out.write_all(&body)?;
    }
    out.flush()
}

/// The file a request path names under `root`: percent-decoded, query dropped, a folder
/// meaning its `index.html`; `None` for anything that would climb out of `root`.
fn file_for(root: &Path, url: &str) -> Option<PathBuf> {
    let path = url.split(['?', '#']).next().unwrap_or("");
    let decoded = percent_decode_str(path).decode_utf8().ok()?;
    let mut file = root.to_path_buf();
    for part in decoded.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            p if p.contains('\\') => return None,
            p => file.push(p),
        }
    }
    if file.is_dir() {
        file.push("index.html");
    }
    file.is_file().then_some(file)
}

/// The `Content-Type` browsers need to render a file (SVG in `<img>` must be `image/svg+xml`).
fn content_type(path: &Path) -> &'static str {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    match ext.to_ascii_lowercase().as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "woff" => "font/woff",
        "woff2" => "font/woff2",
        "ttf" => "font/ttf",
        "otf" => "font/otf",
        "wasm" => "application/wasm",
        "txt" | "md" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn get(server: &StaticServer, path: &str) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        write!(stream, "GET /{path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        reply
    }

    #[test]
    fn serves_files_with_their_type_and_refuses_the_rest() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/links");
        let server = StaticServer::start(&root).unwrap();
        let svg = get(&server, "img/ok.svg");
        assert!(svg.starts_with("HTTP/1.1 200 OK"), "{svg}");
        assert!(svg.contains("Content-Type: image/svg+xml"), "{svg}");
        assert!(get(&server, "sub/").contains("deep.html"));
        assert!(get(&server, "sub/deep.html?x=1").contains("x y"));
        assert!(get(&server, "nope.html").starts_with("HTTP/1.1 404"));
        assert!(get(&server, "sub/../../Cargo.toml").starts_with("HTTP/1.1 404"));
    }

    #[test]
    fn urls_are_percent_encoded_like_the_browser_does() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/links");
        let server = StaticServer::start(&root).unwrap();
        let url = server.url("a b/c.html");
        assert!(url.ends_with("/a%20b/c.html"), "{url}");
    }
}
