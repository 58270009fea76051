//! B17: the MCP revisions, server and client — rmcp 3.11's 2026-07-28 (stateless: no
//! `initialize`, no `ping`, `server/discover`, list results with `ttlMs` and `cacheScope`,
//! `list_changed` on a `subscriptions/listen` stream) beside 2025-11-25 and older, all in
//! process over `tokio::io::duplex`.
//!
//! Asserted: `McpServer` answers `tools/list` with `ttlMs: 0` and `cacheScope: private` on
//! 2026-07-28 and with neither on 2025-11-25; its `list_changed` reaches a 2026-07-28
//! client on its listen stream when a circuit opens. `McpClient` negotiates 2026-07-28 with
//! a server that has it and 2025-11-25 with one that does not; its health checks are
//! `server/discover` on the one and `ping` on the other; a tool list past its `ttlMs` is
//! listed again before a call (R6), so a tool added without `list_changed` is found.

#![cfg(feature = "mcp")]

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_circuit_breaker::dispatch::ToolDispatch;
use agent_circuit_breaker::mcp::rmcp;
use agent_circuit_breaker::mcp::{McpClient, McpServer};
use agent_circuit_breaker::toolbox;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ClientRequest,
    ContentBlock, DiscoverResult, ListToolsResult, PaginatedRequestParams, PingRequest,
    ProtocolVersion, ServerCapabilities, ServerConfig, ServerNotification, SubscriptionFilter,
    Tool,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _, RequestContext, RoleServer};
use rmcp::{ClientCacheConfig, ErrorData, ServerHandler, ServiceExt as _};
use serde_json::{Value, json};
use tokio::io::DuplexStream;

const WAIT: Duration = Duration::from_secs(10);

#[derive(Default)]
pub struct Echo {
    broken: AtomicBool,
}

#[toolbox(json, policy(threshold = 1, budget = 100))]
impl Echo {
    /// Answers `text`.
    #[tool(provides = "echo", fallback = "say it yourself")]
    fn echo(
        &self,
        /// what to answer
        text: &str,
    ) -> std::io::Result<String> {
        if self.broken.load(Ordering::SeqCst) {
            return Err(std::io::Error::other("the echo chamber is flooded"));
        }
        Ok(text.to_owned())
    }

    /// Counts to one.
    #[tool(provides = "counting", fallback = "count by hand")]
    fn one(&self) -> std::io::Result<u32> {
        Ok(1)
    }
}

/// `server` served on one end of a duplex; the other end.
fn serve(server: impl ServerHandler) -> DuplexStream {
    let (server_end, client_end) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_end).await {
            let _ = running.waiting().await;
        }
    });
    client_end
}

fn modern() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    }
}

fn arguments(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

#[tokio::test]
async fn b17_server_sends_ttl_only_to_a_revision_that_defines_it() {
    let echo = Arc::new(GuardedEcho::new(Echo::default()));

    let legacy = ().serve(serve(McpServer::shared(Arc::clone(&echo)))).await.expect("initialize");
    legacy
        .set_response_cache_config(ClientCacheConfig::disabled())
        .await;
    assert_eq!(
        legacy.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2025_11_25
    );
    let listed = legacy.list_tools(None).await.expect("tools/list");
    assert_eq!(listed.tools.len(), 2);
    assert_eq!((listed.ttl_ms, listed.cache_scope), (None, None));

    let stateless =
        ().serve_with_lifecycle(serve(McpServer::shared(Arc::clone(&echo))), modern())
            .await
            .expect("server/discover");
    stateless
        .set_response_cache_config(ClientCacheConfig::disabled())
        .await;
    assert_eq!(
        stateless.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2026_07_28
    );
    let listed = stateless.list_tools(None).await.expect("tools/list");
    assert_eq!(listed.tools.len(), 2);
    assert_eq!(
        (listed.ttl_ms, listed.cache_scope),
        (Some(0), Some(CacheScope::Private))
    );
    let result = stateless
        .call_tool(
            CallToolRequestParams::new("echo").with_arguments(arguments(json!({ "text": "hi" }))),
        )
        .await
        .expect("tools/call");
    assert_eq!(result.is_error, Some(false));
    let ping = stateless
        .send_request(ClientRequest::PingRequest(PingRequest::default()))
        .await;
    assert!(ping.is_err(), "2026-07-28 has no ping: {ping:?}");
}

#[tokio::test]
async fn b17_server_sends_list_changed_on_the_listen_stream() {
    let echo = Arc::new(GuardedEcho::new(Echo::default()));
    let client =
        ().serve_with_lifecycle(serve(McpServer::shared(Arc::clone(&echo))), modern())
            .await
            .expect("server/discover");
    client
        .set_response_cache_config(ClientCacheConfig::disabled())
        .await;
    let mut subscription = client
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .expect("subscriptions/listen acknowledged");
    assert_eq!(client.list_tools(None).await.unwrap().tools.len(), 2);
    echo.toolbox().broken.store(true, Ordering::SeqCst);
    let result = client
        .call_tool(
            CallToolRequestParams::new("echo").with_arguments(arguments(json!({ "text": "hi" }))),
        )
        .await
        .expect("tools/call");
    assert_eq!(result.is_error, Some(true));
    let notification = tokio::time::timeout(WAIT, subscription.next())
        .await
        .expect("list_changed in time")
        .expect("a notification");
    assert!(
        matches!(
            notification,
            Some(ServerNotification::ToolListChangedNotification(_))
        ),
        "{notification:?}"
    );
    let listed = client.list_tools(None).await.unwrap();
    let names: Vec<&str> = listed.tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["one"], "the open tool is no longer offered");
}

/// A server counting its `server/discover`, `ping` and `tools/list` requests, with a
/// `ttlMs` of its choice and tools that may change without `list_changed`.
#[derive(Clone)]
struct Counting {
    newest: ProtocolVersion,
    ttl_ms: Option<u64>,
    tools: Arc<Mutex<Vec<&'static str>>>,
    discovers: Arc<AtomicU32>,
    pings: Arc<AtomicU32>,
    lists: Arc<AtomicU32>,
    calls: Arc<AtomicU32>,
}

impl Counting {
    fn new(newest: ProtocolVersion, ttl_ms: Option<u64>) -> Self {
        Counting {
            newest,
            ttl_ms,
            tools: Arc::new(Mutex::new(vec!["first"])),
            discovers: Arc::default(),
            pings: Arc::default(),
            lists: Arc::default(),
            calls: Arc::default(),
        }
    }

    async fn client(&self) -> McpClient {
        let server = self.clone();
        McpClient::builder()
            .connect("counting", move || {
                let server = server.clone();
                async move { Ok::<_, std::io::Error>(serve(server)) }
            })
            .health_ttl(Duration::ZERO)
            .build()
            .await
            .expect("connected")
    }
}

impl ServerHandler for Counting {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&self.newest))
    }

    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        self.discovers.fetch_add(1, Ordering::SeqCst);
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    async fn ping(&self, _context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.pings.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        let tools = self.tools.lock().unwrap().clone();
        let schema = Arc::new(arguments(json!({ "type": "object" })));
        let result = ListToolsResult::with_all_items(
            tools
                .into_iter()
                .map(|name| Tool::new_with_raw(name, Some("A tool.".into()), Arc::clone(&schema)))
                .collect(),
        );
        Ok(match self.ttl_ms {
            Some(ms) => result.with_ttl_ms(ms),
            None => result,
        })
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(CallToolResult::success(vec![ContentBlock::text(request.name.to_string())]).into())
    }
}

#[tokio::test]
async fn b17_client_negotiates_2026_and_checks_health_by_discover() {
    let server = Counting::new(ProtocolVersion::V_2026_07_28, None);
    let client = server.client().await;
    assert_eq!(
        client.protocol_version("counting").as_deref(),
        Some("2026-07-28")
    );
    let discovers = server.discovers.load(Ordering::SeqCst);
    assert!(discovers >= 1, "the connection began with server/discover");
    // The health TTL is zero: every call checks the server first.
    for n in 1..=2 {
        let reply = client.call("first", json!({})).await;
        assert!(!reply.is_error(), "{}", reply.text());
        assert_eq!(server.discovers.load(Ordering::SeqCst), discovers + n);
    }
    assert_eq!(
        server.pings.load(Ordering::SeqCst),
        0,
        "no ping on 2026-07-28"
    );
    assert_eq!(server.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn b17_client_falls_back_to_initialize_and_pings() {
    let server = Counting::new(ProtocolVersion::V_2025_11_25, None);
    let client = server.client().await;
    assert_eq!(
        client.protocol_version("counting").as_deref(),
        Some("2025-11-25")
    );
    assert_eq!(client.connections("counting"), Some(1));
    let reply = client.call("first", json!({})).await;
    assert!(!reply.is_error(), "{}", reply.text());
    assert_eq!(server.pings.load(Ordering::SeqCst), 1, "the health check");
    assert_eq!(server.calls.load(Ordering::SeqCst), 1);
    // Reconnecting starts with `initialize` at once.
    client.reconnect("counting").await.expect("reconnected");
    assert_eq!(
        client.protocol_version("counting").as_deref(),
        Some("2025-11-25")
    );
}

#[tokio::test]
async fn b17_client_lists_again_a_list_past_its_ttl() {
    let server = Counting::new(ProtocolVersion::V_2026_07_28, Some(1_000));
    let client = server.client().await;
    assert_eq!(server.lists.load(Ordering::SeqCst), 1);
    assert!(!client.call("first", json!({})).await.is_error());
    assert_eq!(
        server.lists.load(Ordering::SeqCst),
        1,
        "fresh: not listed again"
    );

    // A tool added without `list_changed`: found once the list is stale.
    server.tools.lock().unwrap().push("late");
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let reply = client.call("late", json!({})).await;
    assert!(!reply.is_error(), "{}", reply.text());
    assert_eq!(server.lists.load(Ordering::SeqCst), 2, "listed again first");
    assert_eq!(server.calls.load(Ordering::SeqCst), 2);
    let names: Vec<String> = client.definitions().into_iter().map(|d| d.name).collect();
    assert_eq!(names, ["first", "late"]);

    // Without `ttlMs` a list stays fresh until `list_changed`. (Only before 2026-07-28:
    // there, rmcp gives a list answered without one `ttlMs: 0`.)
    let server = Counting::new(ProtocolVersion::V_2025_11_25, None);
    let client = server.client().await;
    server.tools.lock().unwrap().push("late");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        client.call("late", json!({})).await.is_error(),
        "no such tool yet"
    );
    assert_eq!(server.lists.load(Ordering::SeqCst), 1);
}

/// `McpServer` counting its `tools/list` answers.
#[derive(Clone)]
struct CountLists {
    server: McpServer<GuardedEcho>,
    lists: Arc<AtomicU32>,
}

impl ServerHandler for CountLists {
    fn get_info(&self) -> ServerConfig {
        self.server.get_info()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.server.supported_protocol_versions()
    }

    async fn initialize(
        &self,
        request: rmcp::model::InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::InitializeResult, ErrorData> {
        self.server.initialize(request, context).await
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        self.server.on_initialized(context).await;
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.server.accepted_subscription_filter(requested)
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        self.server.listen(context).await
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        self.server.list_tools(request, context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.server.call_tool(request, context).await
    }
}

#[tokio::test]
async fn b17_client_hears_list_changed_on_its_listen_stream() {
    let echo = Arc::new(GuardedEcho::new(Echo::default()));
    let lists = Arc::new(AtomicU32::new(0));
    let (upstream, counted) = (Arc::clone(&echo), Arc::clone(&lists));
    let client = McpClient::builder()
        .connect("echo", move || {
            let server = CountLists {
                server: McpServer::shared(Arc::clone(&upstream)),
                lists: Arc::clone(&counted),
            };
            async move { Ok::<_, std::io::Error>(serve(server)) }
        })
        .build()
        .await
        .expect("connected");
    assert_eq!(
        client.protocol_version("echo").as_deref(),
        Some("2026-07-28")
    );
    let names = |client: &McpClient| -> Vec<String> {
        client.definitions().into_iter().map(|d| d.name).collect()
    };
    assert_eq!(names(&client), ["echo", "one"]);
    // Its lists say `ttlMs: 0`, but it pushes its changes on the listen stream: the list is
    // not listed again before every call.
    tokio::time::sleep(Duration::from_millis(200)).await;
    for _ in 0..3 {
        assert!(!client.call("one", json!({})).await.is_error());
    }
    assert_eq!(names(&client), ["echo", "one"]);
    assert_eq!(
        lists.load(Ordering::SeqCst),
        1,
        "listed once, when connected"
    );
    // The upstream server's own circuit opens: it withdraws `echo` and says so on the
    // client's listen stream, and the client lists its tools again.
    echo.toolbox().broken.store(true, Ordering::SeqCst);
    let reply = client.call("echo", json!({ "text": "hi" })).await;
    assert!(reply.is_error(), "{}", reply.text());
    let deadline = tokio::time::Instant::now() + WAIT;
    while names(&client) != ["one"] {
        assert!(
            tokio::time::Instant::now() < deadline,
            "list_changed heard: {:?}",
            names(&client)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(lists.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn b17_client_starts_with_initialize_where_told_to() {
    let server = Counting::new(ProtocolVersion::V_2026_07_28, None);
    let for_client = server.clone();
    let client = McpClient::builder()
        .connect("counting", move || {
            let server = for_client.clone();
            async move { Ok::<_, std::io::Error>(serve(server)) }
        })
        .initialize_only("counting")
        .health_ttl(Duration::ZERO)
        .build()
        .await
        .expect("connected");
    assert_eq!(
        client.protocol_version("counting").as_deref(),
        Some("2025-11-25")
    );
    assert_eq!(server.discovers.load(Ordering::SeqCst), 0, "no discovery");
    let reply = client.call("first", json!({})).await;
    assert!(!reply.is_error(), "{}", reply.text());
    assert_eq!(server.pings.load(Ordering::SeqCst), 1, "health by ping");

    // A name that is no server is the builder's error, with the name meant.
    let error = McpClient::builder()
        .connect("counting", move || {
            let server = server.clone();
            async move { Ok::<_, std::io::Error>(serve(server)) }
        })
        .initialize_only("countin")
        .build()
        .await
        .expect_err("no server countin");
    assert_eq!(
        error.to_string(),
        "MCP client: initialize_only names `countin`, which is no server; did you mean `counting`?"
    );
}

#[tokio::test]
async fn b17_client_trusts_a_list_of_ttl_zero_for_a_second_not_one_call() {
    let server = Counting::new(ProtocolVersion::V_2026_07_28, Some(0));
    let client = server.client().await;
    for _ in 0..5 {
        assert!(!client.call("first", json!({})).await.is_error());
    }
    assert_eq!(
        server.lists.load(Ordering::SeqCst),
        1,
        "not listed again before every call"
    );
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert!(!client.call("first", json!({})).await.is_error());
    assert_eq!(
        server.lists.load(Ordering::SeqCst),
        2,
        "listed again after a second"
    );
}
