//! B12 on MCP: a `tools/call` served by `McpServer` runs in ONE `execute_tool` span carrying
//! the MCP attributes (the guarded call inside records into it); a tool of an `McpClient`
//! runs in a span of type `extension` naming its server and transport; a client served as a
//! proxy (`McpServer::new(client)`) still gives one span per call.

#![cfg(feature = "mcp")]

#[path = "../common/examples.rs"]
mod examples;
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
#[path = "../common/spans.rs"]
mod spans;

use std::process::Command;
use std::sync::Arc;

use agent_circuit_breaker::mcp::{McpClient, McpServer};
use rmcp::ServiceExt as _;
use serde_json::json;
use tokio::sync::mpsc::unbounded_channel;

use examples::example_binary;
use mcp_client::{Client, Watcher, call, text};
use notes::{GuardedNotebook, Notebook};
use spans::{Capture, field};

/// An rmcp client connected in process to `server`.
async fn connect<D: agent_circuit_breaker::dispatch::ToolDispatch + 'static>(
    server: McpServer<D>,
) -> Client {
    let (server_end, client_end) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_end).await {
            let _ = running.waiting().await;
        }
    });
    let (tx, _rx) = unbounded_channel();
    Watcher(tx).serve(client_end).await.expect("initialize")
}

#[tokio::test]
async fn b12_a_tools_call_is_one_execute_tool_span_with_the_mcp_attributes() {
    let capture = Capture::default();
    let _guard = capture.set_default();
    let guarded = Arc::new(GuardedNotebook::new(Notebook::default()));
    let client = connect(McpServer::shared(guarded)).await;
    let result = call(
        &client,
        "count_words",
        json!({ "text": "three little words" }),
    )
    .await;
    assert_eq!(text(&result), "3");
    let unknown = client
        .call_tool(rmcp::model::CallToolRequestParams::new("nope"))
        .await;
    assert!(unknown.is_err(), "the spec's protocol error");
    client.cancel().await.expect("close");

    let calls = capture.calls();
    assert_eq!(calls.len(), 2, "one span per tools/call: {calls:#?}");
    let span = &calls[0];
    assert_eq!(field(span, "otel.name"), Some("execute_tool count_words"));
    assert_eq!(field(span, "gen_ai.tool.name"), Some("count_words"));
    assert_eq!(field(span, "mcp.method.name"), Some("tools/call"));
    assert!(field(span, "jsonrpc.request.id").is_some(), "{span:#?}");
    assert!(
        field(span, "mcp.protocol.version").is_some_and(|v| v.starts_with("20")),
        "{span:#?}"
    );
    assert_eq!(field(span, "error.type"), None);
    // The request's id is the only id the server knows for the call (B18).
    assert_eq!(
        field(span, "gen_ai.tool.call.id"),
        field(span, "jsonrpc.request.id"),
        "{span:#?}"
    );
    let unknown = &calls[1];
    assert_eq!(field(unknown, "gen_ai.tool.name"), Some("nope"));
    assert_eq!(field(unknown, "error.type"), Some("unknown_tool"));
    assert_eq!(field(unknown, "mcp.method.name"), Some("tools/call"));
    assert_eq!(
        field(unknown, "gen_ai.tool.call.id"),
        field(unknown, "jsonrpc.request.id")
    );
}

#[tokio::test]
async fn b12_an_mcp_clients_tool_is_an_extension_on_its_server_over_a_pipe() {
    let binary = example_binary("mcp_server");
    let capture = Capture::default();
    let _guard = capture.set_default();
    let client = McpClient::builder()
        .child("notes", Command::new(&binary))
        .build()
        .await
        .expect("the client");
    let reply = client.call("count_words", json!({ "text": "a b" })).await;
    assert!(!reply.is_error(), "{reply:?}");
    let mistake = client.call("count_words", json!({ "text": 7 })).await;
    assert!(mistake.is_error());

    let calls = capture.calls();
    assert_eq!(calls.len(), 2, "{calls:#?}");
    let span = &calls[0];
    assert_eq!(field(span, "gen_ai.tool.name"), Some("count_words"));
    assert_eq!(field(span, "gen_ai.tool.type"), Some("extension"));
    assert_eq!(field(span, "circuit_breaker.server"), Some("notes"));
    assert_eq!(field(span, "network.transport"), Some("pipe"));
    assert_eq!(field(span, "mcp.method.name"), Some("tools/call"));
    assert_eq!(field(span, "error.type"), None);
    assert_eq!(
        field(&calls[1], "error.type"),
        Some("invalid_arguments"),
        "the mistake is recorded on the call's own span: {calls:#?}"
    );

    // Served as a proxy: the server's span is the client's, one per call.
    let proxy = connect(McpServer::new(client)).await;
    let result = call(&proxy, "count_words", json!({ "text": "x y z" })).await;
    assert_eq!(text(&result), "3");
    proxy.cancel().await.expect("close");
    let calls = capture.calls();
    assert_eq!(
        calls.len(),
        3,
        "no second span for the proxied call: {calls:#?}"
    );
    let proxied = &calls[2];
    assert_eq!(field(proxied, "gen_ai.tool.type"), Some("extension"));
    assert_eq!(field(proxied, "circuit_breaker.server"), Some("notes"));
    assert!(
        field(proxied, "jsonrpc.request.id").is_some(),
        "{proxied:#?}"
    );
}
