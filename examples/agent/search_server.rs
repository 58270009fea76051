//! The search server WebSearch talks to: a small HTTP/1.1 server on 127.0.0.1 (a port the OS
//! picks), in a thread, answering `GET /search?q=..` with JSON over a few local documents —
//! and the client side, plain HTTP/1.1 over a `TcpStream`.
//!
//! `--outage network` stops it before the agent starts: the port is closed, connections are
//! refused by the kernel.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

/// One document the server can find.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    pub title: &'static str,
    pub url: &'static str,
    pub text: &'static str,
}

/// The documents of the local search index: the upstream library's migration notes.
pub const DOCUMENTS: [Document; 4] = [
    Document {
        title: "Migrating from legacy_connect() to connect()",
        url: "http://docs.inventory.local/migrate/connect",
        text: "legacy_connect() was deprecated in 2.0 and is removed in 3.0. Replace \
               legacy_connect(url) with connect(url): connect() pools connections and \
               verifies TLS certificates.",
    },
    Document {
        title: "fetch_all() pages through results",
        url: "http://docs.inventory.local/migrate/fetch-all",
        text: "fetch_all_v1() loads every row at once and is removed in 3.0. Use fetch_all(), \
               which pages through the results; the arguments are the same.",
    },
    Document {
        title: "Authentication headers",
        url: "http://docs.inventory.local/auth/headers",
        text: "The X-Old-Auth header is no longer accepted from 3.0 on. Send the token in the \
               standard Authorization header instead: Authorization: Bearer <token>.",
    },
    Document {
        title: "Release notes 3.0",
        url: "http://docs.inventory.local/releases/3.0",
        text: "3.0 removes legacy_connect(), fetch_all_v1() and the X-Old-Auth header, all \
               deprecated since 2.0. See the migration guides.",
    },
];

/// A running search server.
pub struct SearchServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl SearchServer {
    /// Binds 127.0.0.1 on a port the OS chooses and serves `documents` in a thread.
    pub fn start(documents: &'static [Document]) -> io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("search-server".to_owned())
            .spawn(move || {
                for stream in listener.incoming() {
                    if flag.load(Ordering::Acquire) {
                        break;
                    }
                    if let Ok(stream) = stream {
                        // A client that misbehaves costs one connection, never the server.
                        let _ = serve(stream, documents);
                    }
                }
                // The listener is dropped here: the port is closed.
            })?;
        Ok(SearchServer {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the server and waits until its port is closed. No sleeping: a connection of our
    /// own wakes the accepting thread, which sees the flag and drops the listener.
    pub fn stop(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        self.stop.store(true, Ordering::Release);
        if let Ok(wake) = TcpStream::connect(self.addr) {
            let _ = wake.shutdown(Shutdown::Both);
        }
        let _ = thread.join();
    }
}

impl Drop for SearchServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Answers one connection: `GET /search?q=..` with the matching documents as JSON.
fn serve(stream: TcpStream, documents: &[Document]) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // The rest of the head: headers up to the empty line.
    let mut header = String::new();
    while reader.read_line(&mut header)? > 2 {
        header.clear();
    }
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (status, body) = match (method, target.split_once('?')) {
        ("GET", Some(("/search", query))) => {
            let q = query
                .split('&')
                .find_map(|pair| pair.strip_prefix("q="))
                .map(percent_decode)
                .unwrap_or_default();
            ("200 OK", search(documents, &q))
        }
        ("GET", _) => ("404 Not Found", json!({ "error": "not found" })),
        _ => (
            "405 Method Not Allowed",
            json!({ "error": "method not allowed" }),
        ),
    };
    let body = body.to_string();
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

/// The documents sharing words with the query, best first (ties in index order), at most 3.
fn search(documents: &[Document], query: &str) -> Value {
    let terms = words(query);
    let mut scored: Vec<(usize, usize)> = documents
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let text = words(&format!("{} {}", d.title, d.text));
            let score = terms
                .iter()
                .map(|t| text.iter().filter(|w| *w == t).count())
                .sum();
            (i, score)
        })
        .filter(|&(_, score)| score > 0)
        .collect();
    scored.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let results: Vec<Value> = scored
        .iter()
        .take(3)
        .map(|&(i, score)| {
            let d = &documents[i];
            json!({ "title": d.title, "url": d.url, "snippet": d.text, "score": score })
        })
        .collect();
    json!({ "query": query, "results": results })
}

/// Lower-case words of letters, digits, `_` and `-`.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// `%XX` and `+` decoded; anything malformed is kept as it is.
fn percent_decode(text: &str) -> String {
    let hex = |b: u8| char::from(b).to_digit(16);
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = match bytes.get(i..i + 3) {
            Some([b'%', hi, lo]) => hex(*hi).zip(hex(*lo)),
            _ => None,
        };
        match (bytes[i], escaped) {
            (_, Some((hi, lo))) => {
                out.push(u8::try_from(hi * 16 + lo).unwrap_or(b'?'));
                i += 3;
            }
            (b'+', None) => {
                out.push(b' ');
                i += 1;
            }
            (byte, None) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Every byte but unreserved ones as `%XX`.
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// One search result as the server sends it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct SearchHit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// `GET /search?q=<query>` over HTTP/1.1 on a fresh connection: the results, or the error as
/// the network gave it (connection refused when the server is down).
pub fn query(addr: SocketAddr, query: &str) -> io::Result<Vec<SearchHit>> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        stream,
        "GET /search?q={} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json\r\nConnection: close\r\n\r\n",
        percent_encode(query)
    )?;
    stream.flush()?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let response = String::from_utf8_lossy(&response);
    let (head, body) = response
        .split_once("\r\n\r\n")
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "malformed HTTP response"))?;
    let status = head.lines().next().unwrap_or("");
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(io::Error::other(format!("search server answered {status}")));
    }
    let value: Value =
        serde_json::from_str(body).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    let field = |hit: &Value, key: &str| hit[key].as_str().unwrap_or("").to_owned();
    Ok(value["results"]
        .as_array()
        .map(|hits| {
            hits.iter()
                .map(|hit| SearchHit {
                    title: field(hit, "title"),
                    url: field(hit, "url"),
                    snippet: field(hit, "snippet"),
                })
                .collect()
        })
        .unwrap_or_default())
}
