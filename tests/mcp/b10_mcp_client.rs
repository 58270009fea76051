//! B10: MCP servers' tools guarded as a client — `agent_circuit_breaker::mcp::McpClient` against
//! real rmcp servers.
//!
//! - in process: two guarded toolboxes (`docs`, `wiki`) served by `McpServer` over
//!   `tokio::io::duplex`, connected through `.connect(..)` factories that can be "killed"
//!   (the server's task aborted: its end of the duplex closes) and refused (the next connect
//!   fails), and a hand-written rmcp server (`strict`) that answers `-32602`, lists garbage
//!   and adds a tool later;
//! - child processes: the example servers `mcp_files` and `mcp_web` spawned by
//!   `.child(..)`, `files` killed with `kill -9` mid-run and spawned again by the probe.
//!
//! Asserted: `tools/list` becomes the run-time map with the overlay (alternatives across
//! servers) and the state table names the servers; an `isError` result is charged to its
//! tool only; a dead server is one `ServerDown` charged once, its tools OPEN and not
//! offered, the other server answering, a refusal naming the alternative on the other
//! server; the probe (a call, or `check()`) reconnects, pings and closes them all with one
//! `ServerUp`, the ledger intact; the per-call deadline is a tool's timeout, not an outage;
//! `-32602` and arguments that do not fit are the model's mistakes, never charged; an
//! overlay naming no listed tool, and tool names two servers share, are error values.

#![cfg(feature = "mcp")]

#[path = "../common/examples.rs"]
mod examples;
#[path = "../common/mcp_client.rs"]
#[allow(
    dead_code,
    reason = "shared by the MCP tests; not every helper is used in each"
)]
mod mcp_client;

use std::path::PathBuf;

use examples::example_binary;
use mcp_client::{Log, state};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_circuit_breaker::capability::MapError;
use agent_circuit_breaker::dispatch::{ReplyOutcome, ToolDispatch};
use agent_circuit_breaker::event::Event;
use agent_circuit_breaker::mcp::rmcp;
use agent_circuit_breaker::mcp::{
    McpClient, McpClientBuilder, McpClientError, McpServer, OverlayProblem,
};
use agent_circuit_breaker::policy::ProbeUnit;
use agent_circuit_breaker::report::ModelMistake;
use agent_circuit_breaker::{
    Availability, CapabilityMap, CircuitState, FailureCategory, PauseReason, Policy, SkipReason,
    toolbox,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt as _};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

// ---------------------------------------------------------------------------------------
// Two toolboxes, served in process.

/// The docs server's tools. Its own breakers are set far off, so that what is asserted is
/// the client's.
#[derive(Default)]
pub struct Docs {
    broken: AtomicBool,
    calls: AtomicU32,
}

#[toolbox(json, policy(threshold = 100, budget = 1000))]
impl Docs {
    /// Searches the docs for `query`.
    ///
    /// Answers the matching paths.
    #[tool(provides = "docs search", fallback = "ask the user")]
    fn search_docs(
        &self,
        /// the words to look for
        query: &str,
    ) -> std::io::Result<Vec<String>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(vec![format!("docs/{query}.md")])
    }

    /// Reads a doc.
    #[tool(provides = "doc reading", fallback = "ask the user")]
    fn read_doc(
        &self,
        /// the doc's path
        path: &str,
    ) -> std::io::Result<String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.broken.load(Ordering::SeqCst) {
            return Err(std::io::Error::other(format!(
                "{path}: the docs index is corrupt"
            )));
        }
        Ok(format!("the text of {path}"))
    }

    /// Answers after `ms` milliseconds.
    #[tool(provides = "slow answers", fallback = "wait")]
    async fn slow_doc(
        &self,
        /// how long to take
        ms: u64,
    ) -> std::io::Result<u64> {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok(ms)
    }
}

/// The wiki server's tools.
#[derive(Default)]
pub struct Wiki {
    calls: AtomicU32,
}

#[toolbox(json, policy(threshold = 100, budget = 1000))]
impl Wiki {
    /// Searches the wiki.
    #[tool(provides = "wiki search", fallback = "ask the user")]
    fn search_wiki(
        &self,
        /// the words to look for
        query: &str,
    ) -> std::io::Result<Vec<String>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(vec![format!("wiki/{query}")])
    }

    /// Reads a wiki page.
    #[tool(provides = "wiki reading", fallback = "ask the user")]
    fn read_page(
        &self,
        /// the page's title
        title: &str,
    ) -> std::io::Result<String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(format!("the page {title}"))
    }
}

/// A server served in process: each connect makes a new duplex and serves the toolbox on
/// it; `kill` cuts every connection made (the client sees its transport close), `down`
/// makes the next connects fail.
struct InProcess {
    tasks: Mutex<Vec<JoinHandle<()>>>,
    down: AtomicBool,
    connects: AtomicU32,
}

impl InProcess {
    fn new() -> Arc<Self> {
        Arc::new(InProcess {
            tasks: Mutex::new(Vec::new()),
            down: AtomicBool::new(false),
            connects: AtomicU32::new(0),
        })
    }

    fn kill(&self) {
        for task in self.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}

fn serve_in_process<D: ToolDispatch + 'static>(
    builder: McpClientBuilder,
    name: &str,
    toolbox: Arc<D>,
    control: &Arc<InProcess>,
) -> McpClientBuilder {
    let control = Arc::clone(control);
    let server_name = name.to_owned();
    builder.connect(name, move || {
        let control = Arc::clone(&control);
        let server = McpServer::shared(Arc::clone(&toolbox)).name(server_name.clone());
        let refusal = format!("{server_name} refuses connections");
        async move {
            if control.down.load(Ordering::SeqCst) {
                return Err(refusal);
            }
            control.connects.fetch_add(1, Ordering::SeqCst);
            // client ⇄ wire ⇄ server: aborting the wire cuts both ends at once, as `kill -9`
            // does (the server gets no chance to answer what is in flight).
            let (client_end, mut near) = tokio::io::duplex(1 << 16);
            let (mut far, server_end) = tokio::io::duplex(1 << 16);
            let wire = tokio::spawn(async move {
                let _ = tokio::io::copy_bidirectional(&mut near, &mut far).await;
            });
            control.tasks.lock().unwrap().push(wire);
            tokio::spawn(async move {
                if let Ok(running) = server.serve(server_end).await {
                    let _ = running.waiting().await;
                }
            });
            Ok(client_end)
        }
    })
}

/// The overlay, in the YAML shape of the source document's capability map: alternatives across the
/// two servers.
const OVERLAY: &str = r#"
capability_map:
  - tool: search_docs
    provides: search of the product documentation
    alternatives:
      - tool: search_wiki
        method: "search the team wiki instead"
        degradation: "finds wiki pages, which may be out of date"
    fallback: "ask the user where the documentation says it"
  - tool: read_doc
    alternatives:
      - tool: read_page
        method: "read the wiki page of the same name"
        degradation: "the wiki copy, not the docs"
        severity: high
    threshold: 2
"#;

struct Setup {
    client: McpClient,
    docs: Arc<GuardedDocs>,
    wiki: Arc<GuardedWiki>,
    docs_server: Arc<InProcess>,
    wiki_server: Arc<InProcess>,
    log: Log,
}

async fn setup(configure: impl FnOnce(McpClientBuilder) -> McpClientBuilder) -> Setup {
    let docs = Arc::new(GuardedDocs::new(Docs::default()));
    let wiki = Arc::new(GuardedWiki::new(Wiki::default()));
    let docs_server = InProcess::new();
    let wiki_server = InProcess::new();
    let log = Log::default();
    let overlay: CapabilityMap = serde_yaml_ng::from_str(OVERLAY).expect("the overlay's YAML");
    let builder = McpClient::builder().overlay(overlay);
    let builder = serve_in_process(builder, "docs", Arc::clone(&docs), &docs_server);
    let builder = serve_in_process(builder, "wiki", Arc::clone(&wiki), &wiki_server);
    let client = configure(log.attach(builder))
        .build()
        .await
        .expect("the client");
    Setup {
        client,
        docs,
        wiki,
        docs_server,
        wiki_server,
        log,
    }
}

fn failures(client: &McpClient, tool: &str) -> u32 {
    let e = client.expeditor();
    e.breaker(e.tool(tool).unwrap())
        .unwrap()
        .consecutive_failures()
}

fn consumed(client: &McpClient) -> u32 {
    client.expeditor().budget().status().consumed
}

fn offered(client: &McpClient) -> Vec<String> {
    client.offered().into_iter().map(|d| d.name).collect()
}

// ---------------------------------------------------------------------------------------
// The run-time map.

#[tokio::test]
async fn tools_list_becomes_the_run_time_map_with_the_overlay() {
    let Setup { client, .. } = setup(|b| b).await;
    assert_eq!(client.servers(), ["docs", "wiki"]);
    let names: Vec<String> = client.definitions().into_iter().map(|d| d.name).collect();
    assert_eq!(
        names,
        [
            "search_docs",
            "read_doc",
            "slow_doc",
            "search_wiki",
            "read_page"
        ]
    );
    let search = &client.definitions()[0];
    assert_eq!(
        search.description,
        "docs search\n\nSearches the docs for `query`.\n\nAnswers the matching paths."
    );
    assert_eq!(
        Value::Object(search.input_schema.clone()),
        json!({
            "type": "object",
            "properties": { "query": { "type": "string", "description": "the words to look for" } },
            "required": ["query"],
            "additionalProperties": false,
        })
    );
    assert_eq!(client.server_of("read_page"), Some("wiki"));

    let map = client.expeditor().capability_map();
    for tool in map.tools() {
        let server = client.server_of(tool.name()).unwrap();
        assert_eq!(tool.server(), Some(server), "{}", tool.name());
    }
    // The overlay's provides and alternatives; the listing's first line where it is silent.
    let search = map.get("search_docs").unwrap();
    assert_eq!(search.provides(), "search of the product documentation");
    assert_eq!(search.alternatives()[0].tool(), "search_wiki");
    assert_eq!(
        search.fallback(),
        "ask the user where the documentation says it"
    );
    let read = map.get("read_doc").unwrap();
    assert_eq!(read.provides(), "doc reading");
    assert_eq!(read.alternatives()[0].tool(), "read_page");
    assert_eq!(read.threshold(), Some(2));
    assert_eq!(
        read.fallback(),
        "tell the user that read_doc of the MCP server docs could not be used, and what it was needed for"
    );
    assert!(map.get("read_page").unwrap().is_critical());

    let table = client.expeditor().state_table().to_string();
    assert!(
        table.contains("Server docs: reachable (search_docs, read_doc, slow_doc)"),
        "{table}"
    );
    assert!(
        table.contains("Server wiki: reachable (search_wiki, read_page)"),
        "{table}"
    );
    // One health check per server, recorded for all its tools.
    let e = client.expeditor();
    assert_eq!(
        e.availability(e.tool("read_page").unwrap()),
        Some(Availability::Available)
    );
}

#[tokio::test]
async fn a_call_answers_the_servers_value() {
    let Setup { client, docs, .. } = setup(|b| b).await;
    let reply = client
        .call("search_docs", json!({ "query": "deploy" }))
        .await;
    assert_eq!(reply.outcome, ReplyOutcome::Answered);
    assert_eq!(reply.value, Some(json!(["docs/deploy.md"])));
    assert_eq!(reply.state, Some(CircuitState::Closed));
    let reply = client.call("read_doc", json!({ "path": "a.md" })).await;
    assert_eq!(reply.value, Some(json!("the text of a.md")));
    assert_eq!(reply.text(), "the text of a.md");
    assert_eq!(docs.toolbox().calls.load(Ordering::SeqCst), 2);
    // Through the trait too, as an adapter calls it.
    let reply = ToolDispatch::dispatch(&client, "read_page", json!({ "title": "Home" })).await;
    assert_eq!(reply.text(), "the page Home");
    assert_eq!(consumed(&client), 0);
}

#[tokio::test]
async fn an_is_error_result_is_charged_to_that_tool_only() {
    let Setup {
        client, docs, log, ..
    } = setup(|b| b).await;
    docs.toolbox().broken.store(true, Ordering::SeqCst);
    let reply = client.call("read_doc", json!({ "path": "a.md" })).await;
    let ReplyOutcome::Failed { message } = &reply.outcome else {
        panic!("a failure: {reply:?}");
    };
    // The tool's own message (the upstream's `_meta.error`), not the upstream's note.
    assert_eq!(message, "a.md: the docs index is corrupt");
    assert!(
        reply
            .text()
            .starts_with("read_doc failed: a.md: the docs index is corrupt."),
        "{}",
        reply.text()
    );
    assert_eq!(failures(&client, "read_doc"), 1);
    for other in ["search_docs", "slow_doc", "search_wiki", "read_page"] {
        assert_eq!(failures(&client, other), 0, "{other}");
    }
    assert_eq!(consumed(&client), 1);
    let ledger = client.expeditor().budget().ledger().to_vec();
    assert_eq!(ledger.len(), 1);
    assert_eq!(ledger[0].tool, "read_doc");
    // The overlay's threshold 2: the second failure opens read_doc, and only read_doc.
    let reply = client.call("read_doc", json!({ "path": "b.md" })).await;
    assert!(
        reply.text().contains("Its circuit is now OPEN"),
        "{}",
        reply.text()
    );
    assert_eq!(state(&client, "read_doc"), CircuitState::Open);
    assert_eq!(state(&client, "search_docs"), CircuitState::Closed);
    assert!(
        log.server_events().is_empty(),
        "a tool's failure, not the server's"
    );
    assert_eq!(
        offered(&client),
        ["search_docs", "slow_doc", "search_wiki", "read_page"]
    );
    // OPEN: refused, the note names the alternative on the other server; nothing called.
    let calls = docs.toolbox().calls.load(Ordering::SeqCst);
    let reply = client.call("read_doc", json!({ "path": "c.md" })).await;
    assert!(matches!(
        reply.outcome,
        ReplyOutcome::Refused {
            reason: SkipReason::Open
        }
    ));
    assert!(reply.text().contains("use read_page"), "{}", reply.text());
    assert_eq!(docs.toolbox().calls.load(Ordering::SeqCst), calls);
}

/// The client is a `ToolDispatch`: served by `McpServer` it is a guarded proxy of both
/// servers; its clients see the offer, and a dead server's tools leave the list.
#[tokio::test]
async fn the_client_behind_mcp_server_is_a_guarded_proxy() {
    let Setup {
        client,
        docs_server,
        ..
    } = setup(|b| b).await;
    let proxy = McpServer::new(client.clone()).name("proxy");
    let (server_end, client_end) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(running) = proxy.serve(server_end).await {
            let _ = running.waiting().await;
        }
    });
    let user = ().serve(client_end).await.expect("initialize");
    let listed = |tools: Vec<Tool>| -> Vec<String> {
        tools.into_iter().map(|t| t.name.into_owned()).collect()
    };
    assert_eq!(
        listed(user.list_all_tools().await.unwrap()),
        [
            "search_docs",
            "read_doc",
            "slow_doc",
            "search_wiki",
            "read_page"
        ]
    );
    let mut arguments = serde_json::Map::new();
    arguments.insert("path".into(), json!("a.md"));
    let call = CallToolRequestParams::new("read_doc").with_arguments(arguments);
    let result = user.call_tool(call.clone()).await.unwrap();
    assert_eq!(result.is_error, Some(false));
    assert_eq!(
        result.content[0].as_text().unwrap().text,
        "the text of a.md"
    );

    docs_server.kill();
    let result = user.call_tool(call).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(
        result.content[0]
            .as_text()
            .unwrap()
            .text
            .contains("MCP server docs cannot be reached"),
        "{result:?}"
    );
    assert_eq!(
        listed(user.list_all_tools().await.unwrap()),
        ["search_wiki", "read_page"]
    );
    user.cancel().await.unwrap();
}

// ---------------------------------------------------------------------------------------
// A dead server, in process: one event, charged once; back through check().

#[tokio::test]
async fn a_dead_server_is_one_event_charged_once_and_check_brings_it_back() {
    let policy = Policy::builder()
        .probe_unit(ProbeUnit::Steps)
        .probe_every(2)
        .build()
        .unwrap();
    let Setup {
        client,
        docs_server,
        wiki,
        log,
        ..
    } = setup(|b| b.policy(policy).health_ttl(Duration::from_millis(100))).await;
    assert_eq!(
        client
            .call("read_doc", json!({ "path": "a.md" }))
            .await
            .outcome,
        ReplyOutcome::Answered
    );

    // A slow call in flight when the server dies, and a second call after.
    let in_flight = {
        let client = client.clone();
        tokio::spawn(async move { client.call("slow_doc", json!({ "ms": 5000 })).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    docs_server.kill();
    let first = in_flight.await.unwrap();
    let second = client.call("search_docs", json!({ "query": "x" })).await;
    for reply in [&first, &second] {
        assert!(reply.is_error(), "{reply:?}");
    }
    let downs: Vec<Event> = log.server_events();
    assert_eq!(downs.len(), 1, "{downs:?}");
    let Event::ServerDown {
        server,
        tools,
        message,
    } = &downs[0]
    else {
        panic!("{downs:?}");
    };
    assert_eq!(server, "docs");
    assert_eq!(tools, &["search_docs", "read_doc", "slow_doc"]);
    assert!(
        message.contains("MCP server docs cannot be reached"),
        "{message}"
    );
    assert_eq!(consumed(&client), 1, "one outage, charged once");
    for tool in ["search_docs", "read_doc", "slow_doc"] {
        assert_eq!(state(&client, tool), CircuitState::Open, "{tool}");
    }
    assert_eq!(offered(&client), ["search_wiki", "read_page"]);
    assert_eq!(client.is_connected("docs"), Some(false));
    // The other server goes on.
    let reply = client.call("search_wiki", json!({ "query": "x" })).await;
    assert_eq!(reply.value, Some(json!(["wiki/x"])));
    assert_eq!(wiki.toolbox().calls.load(Ordering::SeqCst), 1);
    // An OPEN tool's refusal names the alternative on the other server.
    let reply = client.call("search_docs", json!({ "query": "y" })).await;
    assert!(
        matches!(reply.outcome, ReplyOutcome::Refused { .. }),
        "{reply:?}"
    );
    assert!(
        reply
            .text()
            .contains("use search_wiki — search the team wiki instead"),
        "{}",
        reply.text()
    );
    let table = client.expeditor().state_table().to_string();
    assert!(table.contains("Server docs: DOWN since step 0"), "{table}");

    // Not due yet: check() does nothing.
    assert!(client.check().await.is_empty());
    assert_eq!(docs_server.connects.load(Ordering::SeqCst), 1);

    // Due, but the server refuses connections: not reached, nothing charged, another wait.
    docs_server.down.store(true, Ordering::SeqCst);
    client.expeditor().advance_step();
    client.expeditor().advance_step();
    assert!(client.expeditor().server_probe_due("docs"));
    assert!(client.check().await.is_empty());
    assert!(!client.expeditor().server_probe_due("docs"));
    assert_eq!(consumed(&client), 1);
    let e = client.expeditor();
    assert!(matches!(
        e.availability(e.tool("read_doc").unwrap()),
        Some(Availability::Unavailable(reason)) if reason.contains("docs refuses connections")
    ));

    // Up again: the next due check reconnects, pings, and brings every tool back at once.
    docs_server.down.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(120)).await;
    client.expeditor().advance_step();
    client.expeditor().advance_step();
    let started = Instant::now();
    assert_eq!(client.check().await, ["docs"]);
    eprintln!(
        "in process: check() reconnect → ServerUp in {:?}",
        started.elapsed()
    );
    assert_eq!(docs_server.connects.load(Ordering::SeqCst), 2);
    assert_eq!(client.connections("docs"), Some(2));
    let events = log.server_events();
    assert!(
        matches!(&events[..], [Event::ServerDown { .. }, Event::ServerUp { server, tools }]
            if server == "docs" && tools.len() == 3),
        "{events:?}"
    );
    for tool in ["search_docs", "read_doc", "slow_doc"] {
        assert_eq!(state(&client, tool), CircuitState::Closed, "{tool}");
    }
    assert_eq!(offered(&client).len(), 5);
    let reply = client.call("read_doc", json!({ "path": "z.md" })).await;
    assert_eq!(reply.value, Some(json!("the text of z.md")));
    // Nothing lost: the outage's one line is still on the ledger.
    let ledger = client.expeditor().budget().ledger().to_vec();
    assert_eq!(ledger.len(), 1, "{ledger:?}");
    assert!(
        ledger[0]
            .failure
            .message()
            .contains("docs cannot be reached")
    );
    assert_eq!(ledger[0].failure.category(), FailureCategory::Network);
    assert_eq!(consumed(&client), 1);
}

/// `check_every`: the client probes a down server in the background when it is due, so its
/// tools come back to the offer without anyone calling them (a proxy's clients, an agent
/// that calls only what it is offered).
/// B15: in a service, a systemic pause (two servers down alike) lifts as soon as a health
/// check reaches their servers again, long before its cool-down; no tool is probed meanwhile
/// (R9.3), the health check is no tool call.
#[tokio::test]
async fn b15_a_systemic_pause_lifts_when_a_health_check_reaches_its_servers() {
    let policy = Policy::builder()
        .cool_down(Duration::from_secs(600))
        .build()
        .unwrap()
        .for_service();
    let Setup {
        client,
        docs_server,
        wiki_server,
        log,
        ..
    } = setup(|b| b.policy(policy).health_ttl(Duration::from_millis(10))).await;
    docs_server.down.store(true, Ordering::SeqCst);
    wiki_server.down.store(true, Ordering::SeqCst);
    docs_server.kill();
    wiki_server.kill();
    for tool in ["search_docs", "search_wiki"] {
        let reply = client.call(tool, json!({ "query": "x" })).await;
        assert!(reply.is_error(), "{reply:?}");
    }
    assert!(
        matches!(
            client.expeditor().paused(),
            Some(PauseReason::Systemic { .. })
        ),
        "two servers down alike: {:?}",
        client.expeditor().paused()
    );
    assert!(
        client.expeditor().pause_lifts_at().is_some(),
        "a service's pause lifts by itself"
    );
    // Still down: the check fails and costs nothing; the pause holds.
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(client.check().await.is_empty());
    assert!(client.expeditor().paused().is_some());
    // Back: the next check reaches them, and that is the recovery of the cause.
    docs_server.down.store(false, Ordering::SeqCst);
    wiki_server.down.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let up = client.check().await;
    assert!(!up.is_empty(), "a server reached");
    assert_eq!(client.expeditor().paused(), None);
    assert!(
        log.events().contains(&Event::RecoveryConfirmed),
        "{:?}",
        log.events()
    );
    let reply = client.call("search_docs", json!({ "query": "x" })).await;
    assert_eq!(reply.outcome, ReplyOutcome::Answered, "{reply:?}");
}

#[tokio::test]
async fn check_every_brings_a_down_server_back_without_a_call() {
    let policy = Policy::builder()
        .probe_unit(ProbeUnit::Steps)
        .probe_every(2)
        .build()
        .unwrap();
    let Setup {
        client,
        docs_server,
        log,
        ..
    } = setup(|b| b.policy(policy).check_every(Duration::from_millis(20))).await;
    docs_server.kill();
    let _ = client.call("read_doc", json!({ "path": "a.md" })).await;
    assert_eq!(offered(&client), ["search_wiki", "read_page"]);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(log.server_events().len(), 1, "not due: still down");
    client.expeditor().advance_step();
    client.expeditor().advance_step();
    let deadline = Instant::now() + Duration::from_secs(10);
    while log.server_events().len() < 2 {
        assert!(Instant::now() < deadline, "never brought back");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(matches!(&log.server_events()[1], Event::ServerUp { server, .. } if server == "docs"));
    assert_eq!(offered(&client).len(), 5);
    assert_eq!(docs_server.connects.load(Ordering::SeqCst), 2);
    assert_eq!(consumed(&client), 1);
    // The background task ends with the client.
    drop(client);
}

/// A probe (a call of a down tool when its probe is due) whose server cannot be reached is
/// not made: refused with the route, nothing charged, another interval for the outage; and
/// one that reaches it closes all the tools of the outage.
#[tokio::test]
async fn a_probe_reconnects_first_and_is_not_made_when_the_server_is_gone() {
    let Setup {
        client,
        docs_server,
        log,
        ..
    } = setup(|b| b.health_ttl(Duration::from_millis(100))).await;
    docs_server.kill();
    docs_server.down.store(true, Ordering::SeqCst);
    let reply = client.call("search_docs", json!({ "query": "a" })).await;
    assert!(
        reply.text().contains("Its circuit is now OPEN"),
        "{}",
        reply.text()
    );
    assert_eq!(consumed(&client), 1);
    // Attempts 1 and 2 are refused; the third is the probe (the default: every 3rd).
    for _ in 0..2 {
        let reply = client.call("read_doc", json!({ "path": "q.md" })).await;
        assert!(matches!(
            reply.outcome,
            ReplyOutcome::Refused {
                reason: SkipReason::Open
            }
        ));
    }
    let reply = client.call("read_doc", json!({ "path": "q.md" })).await;
    assert!(
        matches!(
            reply.outcome,
            ReplyOutcome::Refused {
                reason: SkipReason::Unavailable
            }
        ),
        "{reply:?}"
    );
    assert!(
        reply
            .text()
            .contains("its MCP server docs cannot be reached"),
        "{}",
        reply.text()
    );
    assert!(reply.text().contains("use read_page"), "{}", reply.text());
    assert_eq!(consumed(&client), 1, "a probe not made is not charged");
    for tool in ["search_docs", "read_doc", "slow_doc"] {
        assert_eq!(
            state(&client, tool),
            CircuitState::Open,
            "{tool}: another interval"
        );
    }
    // Within the health TTL the failed check stands: no new connection is tried.
    for _ in 0..3 {
        let _ = client.call("read_doc", json!({ "path": "q.md" })).await;
    }
    assert_eq!(docs_server.connects.load(Ordering::SeqCst), 1);

    docs_server.down.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(120)).await;
    let mut answered = None;
    for _ in 0..4 {
        let reply = client.call("read_doc", json!({ "path": "q.md" })).await;
        if reply.outcome == ReplyOutcome::Answered {
            answered = Some(reply);
            break;
        }
    }
    let reply = answered.expect("the probe answers within an interval");
    assert_eq!(reply.value, Some(json!("the text of q.md")));
    assert_eq!(docs_server.connects.load(Ordering::SeqCst), 2);
    for tool in ["search_docs", "read_doc", "slow_doc"] {
        assert_eq!(state(&client, tool), CircuitState::Closed, "{tool}");
    }
    let events = log.server_events();
    assert!(
        matches!(&events[..], [Event::ServerDown { .. }, Event::ServerUp { server, .. }] if server == "docs"),
        "{events:?}"
    );
    assert_eq!(consumed(&client), 1);
}

// ---------------------------------------------------------------------------------------
// Deadlines and the model's mistakes.

#[tokio::test]
async fn the_deadline_is_a_tools_timeout_not_a_server_outage() {
    let Setup { client, log, .. } =
        setup(|b| b.deadline_for("docs", Duration::from_millis(200))).await;
    let started = Instant::now();
    let reply = client.call("slow_doc", json!({ "ms": 3000 })).await;
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
    let record = e.breaker(e.tool("slow_doc").unwrap()).unwrap();
    let last = record.last_failure().expect("recorded");
    assert_eq!(last.failure.category(), FailureCategory::Timeout);
    assert!(!last.failure.is_server_unreachable());
    assert!(log.server_events().is_empty());
    assert_eq!(client.is_connected("docs"), Some(true));
    // The server still answers, within the deadline.
    let reply = client.call("slow_doc", json!({ "ms": 10 })).await;
    assert_eq!(reply.value, Some(json!(10)));
    assert_eq!(consumed(&client), 1);
}

#[tokio::test]
async fn arguments_that_do_not_fit_are_the_models_mistakes_never_charged() {
    let Setup { client, docs, .. } = setup(|b| b).await;
    for (arguments, wanted) in [
        (
            json!({}),
            "\"query\" is a required property (keyword `required`)",
        ),
        (
            json!({ "query": 3 }),
            "at `/query`: 3 is not of type \"string\" (keyword `type`)",
        ),
        (
            json!({ "query": "x", "qurey": "y" }),
            "Additional properties are not allowed ('qurey' was unexpected) (keyword \
             `additionalProperties`); did you mean `query`?",
        ),
        (
            json!(["x"]),
            "the arguments must be a JSON object, not an array",
        ),
    ] {
        let reply = client.call("search_docs", arguments).await;
        let ReplyOutcome::Mistake(ModelMistake::BadArguments { message, .. }) = &reply.outcome
        else {
            panic!("a mistake: {reply:?}");
        };
        assert_eq!(message, wanted);
    }
    let reply = client.call("serch_docs", json!({ "query": "x" })).await;
    assert!(
        reply.text().contains("Did you mean \"search_docs\"?"),
        "{}",
        reply.text()
    );
    assert_eq!(
        docs.toolbox().calls.load(Ordering::SeqCst),
        0,
        "nothing called"
    );
    assert_eq!(consumed(&client), 0);
    assert_eq!(failures(&client, "search_docs"), 0);
    let table = client.expeditor().state_table().to_string();
    assert!(table.contains("Model mistakes: 5"), "{table}");
}

// ---------------------------------------------------------------------------------------
// A hand-written server: -32602, garbage listings, a tool listed later.

#[derive(Clone, Default)]
struct Strict {
    tools: Arc<Mutex<Vec<Tool>>>,
    peer: Arc<Mutex<Option<Peer<RoleServer>>>>,
}

fn tool(name: &str, schema: Value) -> Tool {
    let Value::Object(schema) = schema else {
        panic!("an object")
    };
    Tool::new_with_raw(
        name.to_owned(),
        Some("A strict tool.".into()),
        Arc::new(schema),
    )
}

impl Strict {
    fn new() -> Self {
        let strict = Strict::default();
        *strict.tools.lock().unwrap() = vec![
            tool(
                "strict_add",
                json!({ "type": "object", "properties": { "a": {}, "b": {} } }),
            ),
            tool("odd_schema", json!({ "type": "string" })),
            tool("", json!({ "type": "object" })),
            tool("strict_add", json!({ "type": "object" })),
            tool(
                "no_type",
                json!({ "properties": { "x": { "type": "integer" } } }),
            ),
        ];
        strict
    }
}

impl ServerHandler for Strict {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        *self.peer.lock().unwrap() = Some(context.peer.clone());
        Ok(ListToolsResult::with_all_items(self.tools.lock().unwrap().clone()).with_ttl_ms(0))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        let number = |key: &str| arguments.get(key).and_then(Value::as_i64);
        match request.name.as_ref() {
            "strict_add" => match (number("a"), number("b")) {
                (Some(a), Some(b)) => Ok(CallToolResult::success(vec![ContentBlock::text(
                    (a + b).to_string(),
                )])
                .into()),
                _ => Err(ErrorData::invalid_params("a and b must be integers", None)),
            },
            "late_tool" => Ok(CallToolResult::success(vec![ContentBlock::text("late")]).into()),
            _ => Ok(CallToolResult::success(vec![ContentBlock::text("ok")]).into()),
        }
    }
}

fn serve_strict(builder: McpClientBuilder, strict: &Strict) -> McpClientBuilder {
    let strict = strict.clone();
    builder.connect("strict", move || {
        let strict = strict.clone();
        async move {
            let (server_end, client_end) = tokio::io::duplex(1 << 16);
            tokio::spawn(async move {
                if let Ok(running) = strict.serve(server_end).await {
                    let _ = running.waiting().await;
                }
            });
            Ok::<_, std::io::Error>(client_end)
        }
    })
}

#[tokio::test]
async fn a_server_s_invalid_params_is_the_models_mistake_and_garbage_is_left_out() {
    let strict = Strict::new();
    let client = serve_strict(McpClient::builder(), &strict)
        .build()
        .await
        .expect("garbage in a listing is left out, not an error");
    let names: Vec<String> = client.definitions().into_iter().map(|d| d.name).collect();
    assert_eq!(names, ["strict_add", "odd_schema", "no_type"]);
    let definitions = client.definitions();
    assert_eq!(
        Value::Object(definitions[1].input_schema.clone()),
        json!({ "type": "object" })
    );
    assert_eq!(definitions[2].input_schema["type"], "object");
    assert_eq!(
        client
            .expeditor()
            .capability_map()
            .get("odd_schema")
            .unwrap()
            .provides(),
        "A strict tool."
    );

    let reply = client.call("strict_add", json!({ "a": 2, "b": 3 })).await;
    assert_eq!(reply.value, Some(json!(5)));
    let reply = client
        .call("strict_add", json!({ "a": "two", "b": 3 }))
        .await;
    let ReplyOutcome::Mistake(ModelMistake::BadArguments { message, .. }) = &reply.outcome else {
        panic!("the model's mistake: {reply:?}");
    };
    assert_eq!(message, "a and b must be integers");
    assert_eq!(consumed(&client), 0);
    assert_eq!(failures(&client, "strict_add"), 0);
    // A schema's integer is checked before the call.
    let reply = client.call("no_type", json!({ "x": 1.5 })).await;
    assert!(
        matches!(reply.outcome, ReplyOutcome::Mistake(_)),
        "{reply:?}"
    );
    assert_eq!(client.call("no_type", json!({ "x": 2 })).await.text(), "ok");

    // A tool listed later: notifications/tools/list_changed, then it is discovered.
    strict
        .tools
        .lock()
        .unwrap()
        .push(tool("late_tool", json!({ "type": "object" })));
    let peer = strict.peer.lock().unwrap().clone().expect("listed once");
    peer.notify_tool_list_changed().await.expect("notified");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !client.definitions().iter().any(|d| d.name == "late_tool") {
        assert!(Instant::now() < deadline, "late_tool never discovered");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(client.call("late_tool", json!({})).await.text(), "late");
    let map = client.expeditor().capability_map();
    assert_eq!(map.get("late_tool").unwrap().server(), Some("strict"));
    assert!(
        client
            .expeditor()
            .state_table()
            .to_string()
            .contains("Server strict: reachable (strict_add, odd_schema, no_type, late_tool)")
    );
}

#[tokio::test]
async fn a_server_that_closes_during_initialize_is_an_error_value() {
    let error = McpClient::builder()
        .connect("gone", || async {
            let (server_end, client_end) = tokio::io::duplex(1024);
            drop(server_end);
            Ok::<_, std::io::Error>(client_end)
        })
        .build()
        .await
        .expect_err("nothing to connect to");
    let McpClientError::Connect { server, message } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(server, "gone");
    assert!(message.contains("initialize"), "{message}");
    let error = McpClient::builder()
        .child("missing", Command::new("/nonexistent/mcp-server"))
        .build()
        .await
        .expect_err("no such program");
    assert!(error.to_string().contains("could not start"), "{error}");
}

// ---------------------------------------------------------------------------------------
// The map's error values.

#[tokio::test]
async fn an_overlay_naming_no_listed_tool_is_an_error_with_did_you_mean() {
    let docs = Arc::new(GuardedDocs::new(Docs::default()));
    let control = InProcess::new();
    let overlay: CapabilityMap = serde_yaml_ng::from_str(
        r#"
capability_map:
  - tool: serch_docs
    provides: docs search
  - tool: translate
    provides: translation
  - tool: read_doc
    alternatives:
      - tool: read_pge
        method: "the wiki"
"#,
    )
    .unwrap();
    let error = serve_in_process(McpClient::builder(), "docs", docs, &control)
        .overlay(overlay)
        .build()
        .await
        .expect_err("the overlay names tools no server lists");
    assert_eq!(
        error,
        McpClientError::Overlay(vec![
            OverlayProblem::UnknownTool {
                tool: "serch_docs".into(),
                suggestion: Some("search_docs".into()),
            },
            OverlayProblem::UnknownTool {
                tool: "translate".into(),
                suggestion: None,
            },
        ])
    );
    assert_eq!(
        error.to_string(),
        "the capability overlay has 2 problems\n  \
         - the overlay names `serch_docs`, but no server lists a tool `serch_docs`; did you mean `search_docs`?\n  \
         - the overlay names `translate`, but no server lists a tool `translate`"
    );

    // An alternative naming no listed tool: the map's own check (R1.4).
    let docs = Arc::new(GuardedDocs::new(Docs::default()));
    let overlay: CapabilityMap = serde_yaml_ng::from_str(
        "capability_map:\n  - tool: read_doc\n    alternatives:\n      - tool: read_dok\n",
    )
    .unwrap();
    let error = serve_in_process(McpClient::builder(), "docs", docs, &control)
        .overlay(overlay)
        .build()
        .await
        .expect_err("read_dok is no tool");
    let McpClientError::Map(errors) = error else {
        panic!("{error:?}");
    };
    assert!(matches!(
        errors.problems(),
        [MapError::UnknownAlternative { suggestion: Some(s), .. }] if s == "read_doc"
    ));
}

#[tokio::test]
async fn tool_names_two_servers_list_are_an_error_unless_qualified() {
    let control = InProcess::new();
    let both = |b: McpClientBuilder| {
        let b = serve_in_process(
            b,
            "docs",
            Arc::new(GuardedDocs::new(Docs::default())),
            &control,
        );
        serve_in_process(
            b,
            "mirror",
            Arc::new(GuardedDocs::new(Docs::default())),
            &control,
        )
    };
    let error = both(McpClient::builder())
        .build()
        .await
        .expect_err("duplicates");
    let McpClientError::DuplicateTools(duplicates) = &error else {
        panic!("{error:?}");
    };
    assert_eq!(duplicates.len(), 3);
    assert_eq!(duplicates[0].tool, "search_docs");
    assert_eq!(duplicates[0].servers, ["docs", "mirror"]);
    assert!(error.to_string().contains("qualify_names"), "{error}");

    let client = both(McpClient::builder().qualify_names("."))
        .build()
        .await
        .expect("qualified");
    let names: Vec<String> = client.definitions().into_iter().map(|d| d.name).collect();
    assert_eq!(
        names,
        [
            "docs.search_docs",
            "docs.read_doc",
            "docs.slow_doc",
            "mirror.search_docs",
            "mirror.read_doc",
            "mirror.slow_doc"
        ]
    );
    let reply = client
        .call("mirror.read_doc", json!({ "path": "m.md" }))
        .await;
    assert_eq!(reply.value, Some(json!("the text of m.md")));
    assert_eq!(client.server_of("mirror.read_doc"), Some("mirror"));
}

// ---------------------------------------------------------------------------------------
// Child processes: the example servers, one killed mid-run.

/// A directory of files for the `files` server.
fn files_root() -> PathBuf {
    let root = std::env::temp_dir().join(format!("b10-mcp-client-{}", std::process::id()));
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::write(
        root.join("docs/deploy.md"),
        "Deploy with ./deploy.sh staging.\nRoll back with ./deploy.sh --undo.\n",
    )
    .unwrap();
    std::fs::write(
        root.join("notes.txt"),
        "rate limits: 100 requests a minute\n",
    )
    .unwrap();
    root
}

const CHILD_OVERLAY: &str = r#"
capability_map:
  - tool: search_files
    alternatives:
      - tool: web_search
        method: "search the inventory-api site instead"
        degradation: "finds the site's pages, not the local files"
        severity: high
  - tool: read_file
    alternatives:
      - tool: fetch_page
        method: "fetch the published copy of the page"
        degradation: "the published copy, which may lag the files"
"#;

fn kill_9(pid: u32) {
    let status = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
}

#[tokio::test]
async fn killing_a_child_server_is_one_server_down_and_the_probe_spawns_it_again() {
    let root = files_root();
    let mut files = Command::new(example_binary("mcp_files"));
    files.arg("--root").arg(&root);
    let web = Command::new(example_binary("mcp_web"));
    let log = Log::default();
    let overlay: CapabilityMap = serde_yaml_ng::from_str(CHILD_OVERLAY).unwrap();
    let builder = McpClient::builder()
        .child("files", files)
        .child("web", web)
        .overlay(overlay);
    let client = log.attach(builder).build().await.expect("both servers");

    assert_eq!(
        offered(&client),
        [
            "read_file",
            "list_dir",
            "search_files",
            "web_search",
            "fetch_page"
        ]
    );
    let table = client.expeditor().state_table().to_string();
    assert!(
        table.contains("Server files: reachable (read_file, list_dir, search_files)"),
        "{table}"
    );
    assert!(
        table.contains("Server web: reachable (web_search, fetch_page)"),
        "{table}"
    );
    let reply = client
        .call("read_file", json!({ "path": "docs/deploy.md" }))
        .await;
    assert!(
        reply.text().starts_with("Deploy with ./deploy.sh staging."),
        "{}",
        reply.text()
    );
    let reply = client
        .call("search_files", json!({ "pattern": "rate limits" }))
        .await;
    assert_eq!(
        reply.value,
        Some(json!(["notes.txt:1: rate limits: 100 requests a minute"]))
    );

    // Mid-run, files dies.
    let pid = client.process_id("files").expect("a child");
    let killed = Instant::now();
    kill_9(pid);
    let reply = client.call("list_dir", json!({ "path": "." })).await;
    let down_after = killed.elapsed();
    eprintln!("child: kill -9 → ServerDown (first call) in {down_after:?}");
    assert!(
        reply.text().contains("Its circuit is now OPEN"),
        "{}",
        reply.text()
    );
    let downs = log.server_events();
    assert!(
        matches!(&downs[..], [Event::ServerDown { server, tools, .. }]
            if server == "files" && tools == &["read_file", "list_dir", "search_files"]),
        "{downs:?}"
    );
    assert_eq!(consumed(&client), 1);
    for tool in ["read_file", "list_dir", "search_files"] {
        assert_eq!(state(&client, tool), CircuitState::Open, "{tool}");
    }
    assert_eq!(offered(&client), ["web_search", "fetch_page"]);
    let table = client.expeditor().state_table().to_string();
    assert!(table.contains("Server files: DOWN since step 0"), "{table}");
    assert!(table.contains("Server web: reachable"), "{table}");
    // web goes on.
    let reply = client
        .call("web_search", json!({ "query": "rate limits" }))
        .await;
    assert_eq!(reply.outcome, ReplyOutcome::Answered, "{reply:?}");
    // A refusal names the alternative on the other server.
    let reply = client
        .call("search_files", json!({ "pattern": "Deploy" }))
        .await;
    assert!(
        reply
            .text()
            .contains("use web_search — search the inventory-api site instead"),
        "{}",
        reply.text()
    );

    // The probe: read_file's third attempt since the outage spawns files again, pings it,
    // calls it, and every tool of the outage is CLOSED.
    for _ in 0..2 {
        let reply = client
            .call("read_file", json!({ "path": "notes.txt" }))
            .await;
        assert!(
            matches!(reply.outcome, ReplyOutcome::Refused { .. }),
            "{reply:?}"
        );
    }
    let probing = Instant::now();
    let reply = client
        .call("read_file", json!({ "path": "notes.txt" }))
        .await;
    let up_after = probing.elapsed();
    eprintln!(
        "child: probe (respawn, initialize, tools/list, ping, call) → ServerUp in {up_after:?}"
    );
    assert_eq!(
        reply.value,
        Some(json!("rate limits: 100 requests a minute\n")),
        "{reply:?}"
    );
    let new_pid = client.process_id("files").expect("spawned again");
    assert_ne!(new_pid, pid);
    assert_eq!(client.connections("files"), Some(2));
    let events = log.server_events();
    assert!(
        matches!(&events[..], [Event::ServerDown { .. }, Event::ServerUp { server, tools }]
            if server == "files" && tools.len() == 3),
        "{events:?}"
    );
    for tool in ["read_file", "list_dir", "search_files"] {
        assert_eq!(state(&client, tool), CircuitState::Closed, "{tool}");
    }
    assert_eq!(offered(&client).len(), 5);
    let reply = client.call("list_dir", json!({ "path": "." })).await;
    assert_eq!(reply.value, Some(json!(["docs/", "notes.txt"])));
    // Nothing lost: the outage is on the ledger, once.
    let ledger = client.expeditor().budget().ledger().to_vec();
    assert_eq!(ledger.len(), 1, "{ledger:?}");
    assert_eq!(ledger[0].tool, "list_dir");
    assert!(
        ledger[0]
            .failure
            .message()
            .contains("MCP server files cannot be reached")
    );
    assert_eq!(consumed(&client), 1);

    client.shutdown().await;
    let _ = std::fs::remove_dir_all(&root);
}

// ---------------------------------------------------------------------------------------
// A server that does not answer when the client is built.

/// An overlay with an entry for a tool of `wiki`, which is down when the client is built.
const LATE_OVERLAY: &str = r#"
capability_map:
  - tool: search_wiki
    provides: search of the team wiki
    alternatives:
      - tool: search_docs
        method: "search the documentation instead"
        degradation: "the documentation, not the wiki"
    fallback: "ask the user what the wiki says"
  - tool: read_doc
    provides: doc reading
    threshold: 1
    alternatives:
      - tool: read_page
        method: "read the wiki's page instead"
        degradation: "the wiki's page, not the doc"
    fallback: "ask the user"
"#;

/// A server made `optional` that refuses at build: the client starts with the other, names
/// it `unconnected`, and the health pass connects it once it answers; its tools then join the
/// definitions with the overlay's entry for them. Not optional, it makes `build` fail; an
/// `optional` naming no server is a configuration error with "did you mean".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_an_optional_server_down_at_build_joins_when_the_health_pass_reaches_it() {
    let docs = Arc::new(GuardedDocs::new(Docs::default()));
    let wiki = Arc::new(GuardedWiki::new(Wiki::default()));
    let (docs_server, wiki_server) = (InProcess::new(), InProcess::new());
    wiki_server.down.store(true, Ordering::SeqCst);
    let builder = || {
        let overlay: CapabilityMap = serde_yaml_ng::from_str(LATE_OVERLAY).expect("YAML");
        let builder = McpClient::builder().overlay(overlay);
        let builder = serve_in_process(builder, "docs", Arc::clone(&docs), &docs_server);
        serve_in_process(builder, "wiki", Arc::clone(&wiki), &wiki_server)
    };

    let error = builder().build().await.expect_err("wiki is required");
    assert!(
        matches!(&error, McpClientError::Connect { server, .. } if server == "wiki"),
        "{error}"
    );
    let error = builder()
        .optional("wik")
        .build()
        .await
        .expect_err("no such server");
    assert!(
        error.to_string().contains("did you mean `wiki`?"),
        "{error}"
    );

    let client = builder()
        .optional("wiki")
        .check_every(Duration::from_millis(20))
        .build()
        .await
        .expect("built without wiki");
    assert_eq!(
        client.unconnected(),
        [(
            "wiki".to_owned(),
            "the transport could not be made: wiki refuses connections".to_owned()
        )]
    );
    assert_eq!(client.is_connected("wiki"), Some(false));
    let names = |client: &McpClient| -> Vec<String> {
        client.definitions().into_iter().map(|d| d.name).collect()
    };
    assert_eq!(names(&client), ["search_docs", "read_doc", "slow_doc"]);
    let reply = client
        .call("search_docs", json!({ "query": "deploy" }))
        .await;
    assert!(!reply.is_error(), "{reply:?}");

    wiki_server.down.store(false, Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !names(&client).contains(&"search_wiki".to_owned()) {
        assert!(Instant::now() < deadline, "wiki never joined");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(client.unconnected().is_empty());
    assert_eq!(client.is_connected("wiki"), Some(true));
    let e = client.expeditor();
    let map = e.capability_map();
    let spec = map
        .tools()
        .iter()
        .find(|s| s.name() == "search_wiki")
        .expect("search_wiki in the map");
    assert_eq!(spec.provides(), "search of the team wiki");
    assert_eq!(spec.fallback(), "ask the user what the wiki says");
    assert_eq!(spec.alternatives()[0].tool(), "search_docs");
    let reply = client
        .call("search_wiki", json!({ "query": "deploy" }))
        .await;
    assert!(!reply.is_error(), "{reply:?}");

    // An alternative on the server that was up, naming a tool of the late one: routed to
    // once that tool joined, without a restart.
    docs.toolbox().broken.store(true, Ordering::SeqCst);
    let reply = client.call("read_doc", json!({ "path": "a.md" })).await;
    assert!(reply.is_error(), "{reply:?}");
    assert_eq!(state(&client, "read_doc"), CircuitState::Open);
    let reply = client.call("read_doc", json!({ "path": "b.md" })).await;
    assert!(
        matches!(
            reply.outcome,
            ReplyOutcome::Refused {
                reason: SkipReason::Open
            }
        ),
        "{reply:?}"
    );
    assert!(reply.text().contains("use read_page"), "{}", reply.text());
    let route = reply.route.as_ref().expect("a route");
    assert_eq!(route.to.as_deref(), Some("read_page"), "{route:?}");
}
