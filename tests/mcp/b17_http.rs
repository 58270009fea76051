//! B17: MCP over streamable HTTP, every byte through a real socket on 127.0.0.1.
//!
//! - server: the example's notebook served by `McpServer::serve_http`; rmcp's own
//!   streamable-HTTP client lists and calls its tools and hears `list_changed` when a circuit
//!   opens; two sessions are two `Mcp-Session-Id`s, one ending leaves the other; the Origin
//!   and Host checks against DNS rebinding answer 403, by raw HTTP requests;
//! - client: `McpClient` with `.url(..)` against a toolbox served the same way; the server
//!   shut down is one `ServerDown`, started again on the same port `check()` opens a new
//!   session and brings the tools back; a deadline over HTTP is the tool's timeout;
//! - the official Python SDK's streamable-HTTP client against our server.

#![cfg(feature = "mcp-http")]

#[path = "../common/mcp_client.rs"]
#[allow(
    dead_code,
    reason = "shared by the MCP tests; not every helper is used in each"
)]
mod mcp_client;
#[path = "../../examples/mcp_server/notes.rs"]
#[allow(
    dead_code,
    reason = "the example's toolbox, shared; not every item is used here"
)]
mod notes;

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use agent_circuit_breaker::clock::{ManualClock, Timestamp};
use agent_circuit_breaker::dispatch::{ReplyOutcome, ToolDispatch};
use agent_circuit_breaker::event::Event;
use agent_circuit_breaker::mcp::rmcp;
use agent_circuit_breaker::mcp::{HttpOptions, HttpServer, McpClient, McpServer};
use agent_circuit_breaker::policy::ProbeUnit;
use agent_circuit_breaker::{CircuitState, FailureCategory, Policy, toolbox};
use rmcp::ServiceExt as _;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};
use tokio::sync::mpsc::unbounded_channel;

use mcp_client::{Client, Log, Watcher, call, list_changed, listed, meta, state, text};
use notes::{GuardedNotebook, Notebook};

/// rmcp's client transport on reqwest. reqwest is built without a crypto provider of its own
/// (the runtime's TLS sets one per client); rmcp's default client takes the process's.
fn http_transport(url: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    static PROVIDER: std::sync::Once = std::sync::Once::new();
    PROVIDER.call_once(|| {
        #[allow(deprecated, reason = "ring builds without cmake; a test needs no more")]
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    StreamableHttpClientTransport::from_uri(url)
}

/// The notebook served over HTTP on a clock that stands still (a probe is due by the count).
async fn notebook_over_http() -> (HttpServer, Arc<GuardedNotebook>) {
    let clock = ManualClock::new(Timestamp::from_secs(1_796_024_103));
    let guarded = Arc::new(GuardedNotebook::with_expeditor(Notebook::default(), |b| {
        b.clock(clock)
    }));
    let server = McpServer::shared(Arc::clone(&guarded))
        .name("notebook")
        .serve_http(HttpOptions::new())
        .await
        .expect("served");
    (server, guarded)
}

async fn connect(url: &str) -> (Client, tokio::sync::mpsc::UnboundedReceiver<()>) {
    let (tx, rx) = unbounded_channel();
    let client = Watcher(tx)
        .serve(http_transport(url))
        .await
        .expect("initialize over HTTP");
    (client, rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_rmcps_http_client_lists_calls_and_hears_list_changed() {
    let (server, guarded) = notebook_over_http().await;
    assert_eq!(
        server.local_addr().ip(),
        std::net::Ipv4Addr::LOCALHOST,
        "loopback by default"
    );
    assert_ne!(server.local_addr().port(), 0);
    assert_eq!(
        server.url(),
        format!("http://127.0.0.1:{}/mcp", server.local_addr().port())
    );
    let (client, mut changes) = connect(&server.url()).await;
    let info = client.peer_info().expect("initialized");
    assert_eq!(
        info.server_info.as_ref().map(|s| s.name.as_str()),
        Some("notebook")
    );
    assert_eq!(
        info.capabilities
            .tools
            .as_ref()
            .and_then(|t| t.list_changed),
        Some(true)
    );
    assert_eq!(listed(&client).await, ["grep", "read", "count_words"]);
    let result = call(&client, "grep", json!({ "pattern": "Deploy" })).await;
    assert_eq!(result.is_error, Some(false));
    assert_eq!(text(&result), r#"["notes/deploy.md","notes/release.md"]"#);
    assert_eq!(meta(&result, "outcome"), Some("answered"));

    // Three failures open grep's circuit: the session's event stream carries the notice.
    guarded.toolbox().faults.break_tool("grep", None);
    for _ in 0..3 {
        let result = call(&client, "grep", json!({ "pattern": "Deploy" })).await;
        assert_eq!(result.is_error, Some(true));
    }
    list_changed(&mut changes).await;
    assert_eq!(listed(&client).await, ["read", "count_words"]);
    // A change made outside any session reaches it too.
    guarded.toolbox().faults.heal("grep");
    for _ in 0..3 {
        assert!(guarded.grep("Deploy").is_ok(), "routed, then probed");
    }
    list_changed(&mut changes).await;
    assert_eq!(listed(&client).await, ["grep", "read", "count_words"]);
    client.cancel().await.expect("close");
    server.shutdown().await;
}

// ---------------------------------------------------------------------------------------
// Raw HTTP: what a browser, or any other client, sends.

/// One raw HTTP/1.1 request; the status, the headers (names lower-cased) and the body.
/// `Connection: close`, so the body is what comes before the server closes; a chunked body
/// (an event stream) is left chunked, which is enough to find the JSON in it.
fn raw(addr: SocketAddr, request: &str) -> (u16, Vec<(String, String)>, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    stream.write_all(request.as_bytes()).expect("send");
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    let answer = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {answer:?}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status, headers, body.to_owned())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// A POST to `/mcp` with `extra` header lines (each ending in `\r\n`).
fn post(addr: SocketAddr, extra: &str, body: &str) -> (u16, Vec<(String, String)>, String) {
    let host = format!("127.0.0.1:{}", addr.port());
    post_as(addr, &host, extra, body)
}

fn post_as(
    addr: SocketAddr,
    host: &str,
    extra: &str,
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    raw(
        addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
             Connection: close\r\n{extra}\r\n{body}",
            body.len()
        ),
    )
}

/// Opens a session by hand: `initialize`, then `notifications/initialized`; its id.
fn open_session(addr: SocketAddr) -> String {
    let (status, headers, body) = post(addr, "", INITIALIZE);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""serverInfo""#), "{body}");
    let id = header(&headers, "mcp-session-id")
        .expect("Mcp-Session-Id")
        .to_owned();
    let (status, _, body) = post(
        addr,
        &format!("Mcp-Session-Id: {id}\r\n"),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!(status, 202, "{body}");
    id
}

fn list_in(addr: SocketAddr, session: &str) -> (u16, String) {
    let (status, _, body) = post(
        addr,
        &format!("Mcp-Session-Id: {session}\r\n"),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    );
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_two_sessions_are_two_session_ids_and_one_ending_leaves_the_other() {
    let (server, _) = notebook_over_http().await;
    let addr = server.local_addr();
    let (first, second) = tokio::task::spawn_blocking(move || {
        let first = open_session(addr);
        let second = open_session(addr);
        (first, second)
    })
    .await
    .unwrap();
    assert_ne!(first, second, "each session its own id");

    // An rmcp client alongside: a third session, unaffected by the others ending.
    let (client, _changes) = connect(&server.url()).await;
    let ended = tokio::task::spawn_blocking(move || {
        let (status, body) = list_in(addr, &first);
        assert_eq!(status, 200, "{body}");
        assert!(body.contains(r#""name":"grep""#), "{body}");
        let (status, _, body) = raw(
            addr,
            &format!(
                "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nMcp-Session-Id: {first}\r\n\
                 Connection: close\r\n\r\n",
                addr.port()
            ),
        );
        assert!((200..300).contains(&status), "DELETE: {status} {body}");
        // The ended session is gone; the other goes on.
        let (status, _) = list_in(addr, &first);
        assert_eq!(status, 404, "an ended session is unknown");
        let (status, body) = list_in(addr, &second);
        assert_eq!(status, 200, "{body}");
        assert!(body.contains(r#""name":"grep""#), "{body}");
        second
    })
    .await
    .unwrap();
    assert_eq!(listed(&client).await, ["grep", "read", "count_words"]);
    client.cancel().await.expect("close");
    // The rmcp client's session ended with it; the hand-made one did not.
    let (status, body) = tokio::task::spawn_blocking(move || list_in(addr, &ended))
        .await
        .unwrap();
    assert_eq!(status, 200, "{body}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_foreign_origins_and_rebound_hosts_are_refused_with_403() {
    let clock = ManualClock::new(Timestamp::from_secs(1_796_024_103));
    let guarded = Arc::new(GuardedNotebook::with_expeditor(Notebook::default(), |b| {
        b.clock(clock)
    }));
    let server = McpServer::shared(guarded)
        .serve_http(HttpOptions::new().allow_origin("https://app.example.com:443"))
        .await
        .expect("served");
    let addr = server.local_addr();
    assert!(addr.ip().is_loopback());
    tokio::task::spawn_blocking(move || {
        let port = addr.port();
        // A page of another site (DNS rebinding, or any cross-site request): refused.
        for origin in [
            "http://evil.example".to_owned(),
            format!("http://evil.example:{port}"),
            "https://app.example.com:8443".to_owned(),
            "null".to_owned(),
        ] {
            let (status, _, body) = post(addr, &format!("Origin: {origin}\r\n"), INITIALIZE);
            assert_eq!(status, 403, "{origin}: {body}");
            assert!(body.contains("Origin"), "{origin}: {body}");
        }
        // This machine's pages, an allowed origin, and clients that send none: served.
        for origin in [
            Some(format!("http://localhost:{port}")),
            Some(format!("http://127.0.0.1:{port}")),
            Some("http://[::1]:3000".to_owned()),
            Some("https://app.example.com".to_owned()),
            None,
        ] {
            let extra = origin
                .as_ref()
                .map_or_else(String::new, |o| format!("Origin: {o}\r\n"));
            let (status, headers, body) = post(addr, &extra, INITIALIZE);
            assert_eq!(status, 200, "{origin:?}: {body}");
            assert!(header(&headers, "mcp-session-id").is_some(), "{origin:?}");
        }
        // A rebound name reaches the loopback port with its own Host: refused.
        let (status, _, body) = post_as(addr, &format!("evil.example:{port}"), "", INITIALIZE);
        assert_eq!(status, 403, "{body}");
        assert!(body.contains("Host"), "{body}");
        let (status, _, _) = post_as(addr, &format!("localhost:{port}"), "", INITIALIZE);
        assert_eq!(status, 200);
        // Only the endpoint is served.
        let (status, _, body) = raw(
            addr,
            &format!("GET /other HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"),
        );
        assert_eq!(status, 404, "{body}");
        assert!(body.contains("the MCP endpoint is /mcp"), "{body}");
    })
    .await
    .unwrap();
    server.shutdown().await;
    // Shut down: the port is free again, nothing answers.
    assert!(TcpStream::connect(addr).is_err(), "still listening");
}

#[tokio::test]
async fn b17_a_bad_path_or_a_taken_port_is_an_error_value() {
    let error = McpServer::new(GuardedRemote::new(Remote::default()))
        .serve_http(HttpOptions::new().path("mcp"))
        .await
        .expect_err("no path");
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let error = McpServer::new(GuardedRemote::new(Remote::default()))
        .serve_http(HttpOptions::new().bind(taken.local_addr().unwrap()))
        .await
        .expect_err("taken");
    assert_eq!(error.kind(), std::io::ErrorKind::AddrInUse);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_stateless_serves_each_request_on_its_own() {
    let toolbox = Arc::new(GuardedRemote::new(Remote::default()));
    let server = serve_remote(&toolbox, HttpOptions::new().stateless(true).path("/rpc")).await;
    assert!(server.url().ends_with("/rpc"), "{}", server.url());
    let addr = server.local_addr();
    let (status, headers, body) = tokio::task::spawn_blocking(move || {
        raw(
            addr,
            &format!(
                "POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{INITIALIZE}",
                addr.port(),
                INITIALIZE.len()
            ),
        )
    })
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(header(&headers, "mcp-session-id"), None, "no session");
    let (client, _changes) = connect(&server.url()).await;
    assert_eq!(listed(&client).await, ["lookup", "slow"]);
    let result = call(&client, "lookup", json!({ "word": "plain" })).await;
    assert_eq!(text(&result), "plain: a word");
    client.cancel().await.expect("close");
    server.shutdown().await;
}

// ---------------------------------------------------------------------------------------
// McpClient against a remote server.

/// A remote server's tools. Its own breakers are set far off, so that what is asserted is
/// the client's.
#[derive(Default)]
pub struct Remote {
    calls: AtomicU32,
}

#[toolbox(json, policy(threshold = 100, budget = 1000))]
impl Remote {
    /// Looks a word up.
    #[tool(provides = "word lookup", fallback = "ask the user")]
    fn lookup(
        &self,
        /// the word
        word: &str,
    ) -> std::io::Result<String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(format!("{word}: a word"))
    }

    /// Answers after `ms` milliseconds.
    #[tool(provides = "slow answers", fallback = "wait")]
    async fn slow(
        &self,
        /// how long to take
        ms: u64,
    ) -> std::io::Result<u64> {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok(ms)
    }
}

async fn serve_remote(toolbox: &Arc<GuardedRemote>, options: HttpOptions) -> HttpServer {
    McpServer::shared(Arc::clone(toolbox))
        .serve_http(options)
        .await
        .expect("served")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_a_url_server_down_is_one_event_and_check_reconnects_when_it_is_back() {
    let toolbox = Arc::new(GuardedRemote::new(Remote::default()));
    let server = serve_remote(&toolbox, HttpOptions::new()).await;
    let addr = server.local_addr();
    let log = Log::default();
    let policy = Policy::builder()
        .probe_unit(ProbeUnit::Steps)
        .probe_every(2)
        .build()
        .unwrap();
    let client = log
        .attach(McpClient::builder())
        .url_with(
            "remote",
            server.url(),
            [("Authorization", "Bearer not-checked-here")],
        )
        .policy(policy)
        .health_ttl(Duration::from_millis(100))
        .connect_timeout(Duration::from_secs(5))
        .build()
        .await
        .expect("connected over HTTP");
    let names: Vec<String> = client.definitions().into_iter().map(|d| d.name).collect();
    assert_eq!(names, ["lookup", "slow"]);
    assert_eq!(client.server_of("lookup"), Some("remote"));
    let reply = client.call("lookup", json!({ "word": "rebind" })).await;
    assert_eq!(reply.value, Some(json!("rebind: a word")), "{reply:?}");
    assert_eq!(client.connections("remote"), Some(1));

    // The server goes away (its session open, the client's event stream with it): the next
    // call finds it unreachable, one event for both tools.
    let started = Instant::now();
    server.shutdown().await;
    let shut = started.elapsed();
    eprintln!("HTTP: shutdown with a session open in {shut:?}");
    assert!(
        shut < Duration::from_secs(2),
        "sessions closed, not waited out: {shut:?}"
    );
    let started = Instant::now();
    let reply = client.call("lookup", json!({ "word": "gone" })).await;
    let down_after = started.elapsed();
    eprintln!("HTTP: server shut down → ServerDown (first call) in {down_after:?}");
    assert!(reply.is_error(), "{reply:?}");
    let downs = log.server_events();
    let [
        Event::ServerDown {
            server: name,
            tools,
            message,
        },
    ] = &downs[..]
    else {
        panic!("{downs:?}");
    };
    assert_eq!(name, "remote");
    assert_eq!(tools, &["lookup", "slow"]);
    assert!(
        message.contains("MCP server remote cannot be reached"),
        "{message}"
    );
    for tool in ["lookup", "slow"] {
        assert_eq!(state(&client, tool), CircuitState::Open, "{tool}");
    }
    assert!(client.offered().is_empty());
    let ledger = client.expeditor().budget().ledger().to_vec();
    assert_eq!(ledger.len(), 1, "charged once: {ledger:?}");
    assert_eq!(ledger[0].failure.category(), FailureCategory::Network);

    // Due while the server is still gone: not reached, nothing charged.
    client.expeditor().advance_step();
    client.expeditor().advance_step();
    assert!(client.check().await.is_empty());
    assert_eq!(client.expeditor().budget().status().consumed, 1);

    // Back on the same port: the next due check opens a new session and brings both back.
    let server = serve_remote(&toolbox, HttpOptions::new().bind(addr)).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    client.expeditor().advance_step();
    client.expeditor().advance_step();
    let started = Instant::now();
    assert_eq!(client.check().await, ["remote"]);
    eprintln!(
        "HTTP: check() reconnect → ServerUp in {:?}",
        started.elapsed()
    );
    assert_eq!(client.connections("remote"), Some(2), "one new session");
    assert_eq!(client.is_connected("remote"), Some(true));
    let events = log.server_events();
    assert!(
        matches!(&events[..], [Event::ServerDown { .. }, Event::ServerUp { server, tools }]
            if server == "remote" && tools.len() == 2),
        "{events:?}"
    );
    let reply = client.call("lookup", json!({ "word": "back" })).await;
    assert_eq!(reply.value, Some(json!("back: a word")), "{reply:?}");
    assert_eq!(toolbox.toolbox().calls.load(Ordering::SeqCst), 2);
    client.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_a_deadline_over_http_is_the_tools_timeout_not_an_outage() {
    let toolbox = Arc::new(GuardedRemote::new(Remote::default()));
    let server = serve_remote(&toolbox, HttpOptions::new()).await;
    let log = Log::default();
    let client = log
        .attach(McpClient::builder())
        .url("remote", server.url())
        .deadline_for("remote", Duration::from_millis(200))
        .build()
        .await
        .expect("connected over HTTP");
    let started = Instant::now();
    let reply = client.call("slow", json!({ "ms": 3000 })).await;
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "answered at the deadline: {took:?}"
    );
    let ReplyOutcome::Failed { message } = &reply.outcome else {
        panic!("{reply:?}");
    };
    assert!(message.contains("did not answer within 200ms"), "{message}");
    let e = client.expeditor();
    let record = e.breaker(e.tool("slow").unwrap()).unwrap();
    let last = record.last_failure().expect("recorded");
    assert_eq!(last.failure.category(), FailureCategory::Timeout);
    assert!(!last.failure.is_server_unreachable());
    assert!(log.server_events().is_empty());
    assert_eq!(client.is_connected("remote"), Some(true));
    let reply = client.call("slow", json!({ "ms": 10 })).await;
    assert_eq!(reply.value, Some(json!(10)), "{reply:?}");
    client.shutdown().await;
    server.shutdown().await;
}

#[tokio::test]
async fn b17_a_url_that_is_none_or_a_server_not_there_is_an_error_value() {
    let error = McpClient::builder()
        .url("remote", "127.0.0.1:9/mcp")
        .build()
        .await
        .expect_err("no URL");
    assert!(error.to_string().contains("server `remote`"), "{error}");
    // Nothing listens on a port just freed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let error = McpClient::builder()
        .url("remote", format!("http://127.0.0.1:{port}/mcp"))
        .connect_timeout(Duration::from_secs(5))
        .build()
        .await
        .expect_err("nothing there");
    assert!(error.to_string().contains("remote"), "{error}");
}

/// `url_with`'s headers are sent: a listener that is no MCP server reads the first request's
/// head and answers 401, which `build` reports as the server's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_url_with_sends_its_headers_on_every_request() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let head = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("a request");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut bytes = Vec::new();
        let mut buf = [0u8; 4096];
        while !bytes.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => bytes.extend_from_slice(&buf[..n]),
            }
        }
        let _ = stream.write_all(
            b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
        String::from_utf8_lossy(&bytes).to_ascii_lowercase()
    });
    let error = McpClient::builder()
        .url_with(
            "remote",
            format!("http://{addr}/mcp"),
            [("Authorization", "Bearer s3cret"), ("X-Team", "blue")],
        )
        .connect_timeout(Duration::from_secs(5))
        .build()
        .await
        .expect_err("401");
    assert!(error.to_string().contains("remote"), "{error}");
    let head = head.join().unwrap();
    assert!(head.starts_with("post /mcp http/1.1"), "{head}");
    assert!(head.contains("authorization: bearer s3cret"), "{head}");
    assert!(head.contains("x-team: blue"), "{head}");
}

// ---------------------------------------------------------------------------------------
// Another SDK's client.

const PYTHON_HTTP_CLIENT: &str = r#"
import json, sys
import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

def field(value, snake, camel):
    # mcp 2.x names fields in snake case, 1.x as the protocol does.
    return getattr(value, snake) if hasattr(value, snake) else getattr(value, camel)

async def main(url):
    async with streamable_http_client(url) as (read, write, *_):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            result = await session.call_tool("grep", {"pattern": "Deploy"})
            print(json.dumps({
                "server": field(init, "server_info", "serverInfo").name,
                "tools": [t.name for t in tools.tools],
                "is_error": field(result, "is_error", "isError"),
                "text": result.content[0].text,
            }), flush=True)

anyio.run(main, sys.argv[1])
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_the_python_sdks_http_client_lists_and_calls() {
    let (server, _) = notebook_over_http().await;
    let url = server.url();
    let outcome = tokio::task::spawn_blocking(move || {
        let python = crate::b9_python_client::venv_python();
        crate::b9_python_client::run(
            std::process::Command::new(python)
                .arg("-c")
                .arg(PYTHON_HTTP_CLIENT)
                .arg(url)
                .env("PYTHONDONTWRITEBYTECODE", "1"),
            Duration::from_secs(60),
        )
    })
    .await
    .unwrap();
    let what = "the Python SDK's streamable_http_client";
    assert!(
        outcome.0.status.success() && !outcome.1,
        "{}",
        crate::b9_python_client::report(what, &outcome)
    );
    let stdout = String::from_utf8_lossy(&outcome.0.stdout);
    let seen: Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
    assert_eq!(
        seen,
        json!({
            "server": "notebook",
            "tools": ["grep", "read", "count_words"],
            "is_error": false,
            "text": "[\"notes/deploy.md\",\"notes/release.md\"]",
        })
    );
    server.shutdown().await;
}

/// A call in flight when the server shuts down: its event stream ends; rmcp's client waits
/// the retry interval the server gave (3 s) and tries to resume it, which finds no server,
/// and the call comes back as the server unreachable, before its deadline, not as the tool's
/// timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_a_call_in_flight_when_the_server_stops_is_the_server_unreachable() {
    let toolbox = Arc::new(GuardedRemote::new(Remote::default()));
    let server = serve_remote(&toolbox, HttpOptions::new()).await;
    let log = Log::default();
    let client = log
        .attach(McpClient::builder())
        .url("remote", server.url())
        .deadline(Duration::from_secs(20))
        .build()
        .await
        .expect("connected over HTTP");
    let in_flight = {
        let client = client.clone();
        tokio::spawn(async move { client.call("slow", json!({ "ms": 30_000 })).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    server.shutdown().await;
    let reply = in_flight.await.unwrap();
    let took = started.elapsed();
    eprintln!("HTTP: a call in flight at shutdown → ServerDown in {took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    let ReplyOutcome::Failed { message } = &reply.outcome else {
        panic!("{reply:?}");
    };
    assert!(
        message.contains("MCP server remote cannot be reached"),
        "{message}"
    );
    let downs = log.server_events();
    assert!(
        matches!(&downs[..], [Event::ServerDown { server, tools, .. }]
            if server == "remote" && tools.len() == 2),
        "{downs:?}"
    );
}
