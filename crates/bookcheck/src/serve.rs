//! A small static file server on 127.0.0.1, so the browser loads the book over HTTP the way a
//! reader does (`file://` pages behave differently: fetches and some scripts are refused).

use anyhow::{Result, anyhow};
use percent_encoding::percent_decode_str;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use tiny_http::{Header, Response, Server};

/// Serves a folder until dropped.
pub struct StaticServer {
    server: Arc<Server>,
    port: u16,
    thread: Option<JoinHandle<()>>,
}

impl StaticServer {
    /// Starts serving `root` on a free port of 127.0.0.1, on a thread of its own.
    pub fn start(root: &Path) -> Result<StaticServer> {
        let server =
            Server::http("127.0.0.1:0").map_err(|e| anyhow!("cannot listen on 127.0.0.1: {e}"))?;
        let port = server
            .server_addr()
            .to_ip()
            .map(|a| a.port())
            .ok_or_else(|| anyhow!("the server has no TCP address"))?;
        let server = Arc::new(server);
        let root = root.to_path_buf();
        let serving = Arc::clone(&server);
        let thread = std::thread::spawn(move || {
            for request in serving.incoming_requests() {
                let file = file_for(&root, request.url());
                // A reply that cannot be sent means the browser went away: nothing to do.
                let _ = match file.and_then(|p| std::fs::File::open(&p).ok().map(|f| (p, f))) {
                    Some((path, f)) => {
                        request.respond(Response::from_file(f).with_header(content_type(&path)))
                    }
                    None => {
                        request.respond(Response::from_string("not found").with_status_code(404))
                    }
                };
            }
        });
        Ok(StaticServer {
            server,
            port,
            thread: Some(thread),
        })
    }

    /// The address of `page` (a path relative to the served folder).
    pub fn url(&self, page: &str) -> String {
        format!("http://127.0.0.1:{}/{page}", self.port)
    }
}

impl Drop for StaticServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
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
fn content_type(path: &Path) -> Header {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let mime = match ext.to_ascii_lowercase().as_str() {
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
        "txt" | "md" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    };
    Header::from_bytes("Content-Type", mime).expect("a static ASCII header is valid")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn get(server: &StaticServer, path: &str) -> String {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        write!(stream, "GET /{path} HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        reply
    }

    #[test]
    fn serves_files_with_their_type_and_refuses_the_rest() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/links");
        let server = StaticServer::start(&root).unwrap();
        let svg = get(&server, "img/ok.svg");
        assert!(
            svg.starts_with("HTTP/1.0 200") || svg.starts_with("HTTP/1.1 200"),
            "{svg}"
        );
        assert!(svg.contains("image/svg+xml"), "{svg}");
        assert!(get(&server, "sub/").contains("deep.html"));
        assert!(get(&server, "sub/deep.html?x=1").contains("x y"));
        assert!(get(&server, "nope.html").contains(" 404 "));
        assert!(get(&server, "sub/../../Cargo.toml").contains(" 404 "));
    }
}
