//! An rmcp client for the tests that drive our MCP servers: it reports every
//! `notifications/tools/list_changed`, and helpers read a `tools/call` result's text and
//! `_meta`; for the tests that drive our `McpClient`, the log of its expeditor's events (a
//! server going down and coming back) and a tool's state. Included by path:
//! `#[path = "common/mcp_client.rs"] mod mcp_client;`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_circuit_breaker::CircuitState;
use agent_circuit_breaker::event::Event;
use agent_circuit_breaker::mcp::rmcp;
use agent_circuit_breaker::mcp::{McpClient, McpClientBuilder};
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use rmcp::service::{MaybeSendFuture, NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Map, Value};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// How long a test waits for a notification.
pub const WAIT: Duration = Duration::from_secs(10);

/// A client that reports every `notifications/tools/list_changed`.
#[derive(Clone)]
pub struct Watcher(pub UnboundedSender<()>);

impl ClientHandler for Watcher {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        let _ = self.0.send(());
        std::future::ready(())
    }
}

/// A connected client.
pub type Client = RunningService<RoleClient, Watcher>;

/// `value` as a call's arguments (an object).
pub fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("arguments must be an object, not {other}"),
    }
}

/// `tools/call`: a result, never a JSON-RPC error.
pub async fn call(client: &Client, tool: &'static str, arguments: Value) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(args(arguments)))
        .await
        .unwrap_or_else(|e| panic!("tools/call {tool} is a result, never a JSON-RPC error: {e}"))
}

/// The result's one text content.
pub fn text(result: &CallToolResult) -> &str {
    assert_eq!(result.content.len(), 1, "one text content: {result:?}");
    match &result.content[0] {
        ContentBlock::Text(text) => &text.text,
        other => panic!("not text: {other:?}"),
    }
}

/// One string of the result's `_meta`.
pub fn meta<'a>(result: &'a CallToolResult, key: &str) -> Option<&'a str> {
    result
        .meta
        .as_ref()
        .expect("_meta on every result")
        .0
        .get(key)
        .and_then(Value::as_str)
}

/// The names `tools/list` answers.
pub async fn listed(client: &Client) -> Vec<String> {
    client
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name.into_owned())
        .collect()
}

/// Waits for a `notifications/tools/list_changed`.
pub async fn list_changed(changes: &mut UnboundedReceiver<()>) {
    tokio::time::timeout(WAIT, changes.recv())
        .await
        .expect("notifications/tools/list_changed within 10 s")
        .expect("the client is still connected");
}

/// Every event an `McpClient`'s expeditor emits, once [`attach`](Log::attach)ed to its
/// builder.
#[derive(Clone, Default)]
pub struct Log(pub Arc<Mutex<Vec<Event>>>);

impl Log {
    pub fn events(&self) -> Vec<Event> {
        self.0.lock().unwrap().clone()
    }

    /// The servers going down and coming back, in order.
    pub fn server_events(&self) -> Vec<Event> {
        self.events()
            .into_iter()
            .filter(|e| matches!(e, Event::ServerDown { .. } | Event::ServerUp { .. }))
            .collect()
    }

    /// `builder`, its expeditor observed by this log.
    pub fn attach(&self, builder: McpClientBuilder) -> McpClientBuilder {
        let log = Arc::clone(&self.0);
        builder.expeditor(move |b| b.observer(move |e: &Event| log.lock().unwrap().push(e.clone())))
    }
}

/// The circuit state of `tool` of `client`.
pub fn state(client: &McpClient, tool: &str) -> CircuitState {
    let e = client.expeditor();
    e.state(e.tool(tool).expect("a tool")).expect("a state")
}
