//! The MCP server: a guarded toolbox behind rmcp's `ServerHandler` (B9). Documented in
//! the [module](super) that re-exports it.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Poll;

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
    Implementation, InitializeRequestParams, InitializeResult, ListToolsResult, MetaObject,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, SubscriptionFilter,
    Tool,
};
use rmcp::service::{
    NotificationContext, Peer, QuitReason, RequestContext, RoleServer, SubscriptionContext,
    SubscriptionSink,
};
use rmcp::{ErrorData, RmcpError, ServerHandler, ServiceExt as _};
use serde_json::Value;

use crate::CircuitState;
use crate::dispatch::{ModelMistake, Reply, ReplyOutcome, ToolDefinition, ToolDispatch};

/// The newest MCP revision served. 2026-07-28 is stateless: no `initialize`, no `ping`,
/// list results with `ttlMs` and `cacheScope`, `list_changed` only on a
/// `subscriptions/listen` stream.
const NEWEST: ProtocolVersion = ProtocolVersion::V_2026_07_28;

/// A guarded toolbox as an MCP server: `tools/list` is the offer, `tools/call` the guarded
/// path, `list_changed` when the offer changes (see the [module](super)).
///
/// One value serves one connection: it remembers which tools that client was last told of.
/// A clone shares the toolbox and the server's name, and starts with no such memory, so
/// clone it once per session where a transport serves several.
pub struct McpServer<D> {
    dispatch: Arc<D>,
    /// Shared by every session: the tools by name, while the definitions stay the same.
    defined: Arc<Defined>,
    implementation: Implementation,
    instructions: Option<String>,
    /// This connection's own: what its client was told, and the end of its watcher.
    session: Arc<Session>,
    /// Whether each session begins a cycle of its own (B13).
    cycle_per_session: bool,
}

/// Numbers sessions, for their cycles.
static SESSIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// One connection's memory: the offered names its client was last told of, the revision
/// it speaks, the subscription a 2026-07-28 client listens on, and the signal that ends its
/// watcher when the server value is dropped.
#[derive(Default)]
struct Session {
    /// This session's number, for its cycle; set when the session starts.
    number: std::sync::OnceLock<u64>,
    told: Mutex<Told>,
    /// The revision negotiated: by `initialize`, or named by a stateless request's `_meta`.
    protocol: Mutex<Option<ProtocolVersion>>,
    /// Where `list_changed` goes on 2026-07-28, which sends it only on a listen stream.
    sink: Mutex<Option<SubscriptionSink>>,
    closed: tokio::sync::Notify,
}

/// What a session's client was told of the offer.
#[derive(Default)]
struct Told {
    /// The offered names, sorted (`None` before it was told any).
    names: Option<Vec<String>>,
    /// The expeditor's change count and the definitions' version when those names were
    /// read: while both are the same, so is the offer, and nothing need be read again.
    stamp: Option<(u64, u64)>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Session {
    /// Remembers `names` as told; whether they differ from what the client was told before
    /// (never, before it was told anything).
    fn tell(&self, names: Vec<String>, stamp: Option<(u64, u64)>) -> bool {
        let mut told = lock(&self.told);
        let changed = told.names.as_ref().is_some_and(|was| *was != names);
        told.names = Some(names);
        told.stamp = stamp;
        changed
    }

    /// Whether the offer is known unchanged since the client was told: nothing changed in
    /// the expeditor, and the definitions are the same.
    fn unchanged(&self, stamp: Option<(u64, u64)>) -> bool {
        stamp.is_some() && lock(&self.told).stamp == stamp
    }

    fn protocol(&self) -> Option<ProtocolVersion> {
        lock(&self.protocol).clone()
    }

    /// Whether the session speaks a revision without `initialize` (2026-07-28 on).
    fn stateless(&self) -> bool {
        self.protocol().is_some_and(|v| !v.has_initialize())
    }
}

/// The toolbox's tools by name, kept while [`ToolDispatch::definitions_version`] stays the
/// same: the offer is filtered and a tool found by a hash lookup, without copying every
/// definition on every call.
#[derive(Default)]
struct Defined {
    cached: Mutex<Option<(u64, ByName)>>,
}

/// The definitions by tool name.
type ByName = Arc<HashMap<String, ToolDefinition>>;

impl Defined {
    fn get(&self, dispatch: &impl ToolDispatch) -> ByName {
        let version = dispatch.definitions_version();
        if let Some(version) = version
            && let Some((at, map)) = &*lock(&self.cached)
            && *at == version
        {
            return Arc::clone(map);
        }
        let map: ByName = Arc::new(
            dispatch
                .definitions()
                .into_iter()
                .map(|d| (d.name.clone(), d))
                .collect(),
        );
        if let Some(version) = version {
            *lock(&self.cached) = Some((version, Arc::clone(&map)));
        }
        map
    }
}

/// The expeditor's change count and the definitions' version; `None` when the definitions
/// may change unseen.
fn stamp(dispatch: &impl ToolDispatch) -> Option<(u64, u64)> {
    let definitions = dispatch.definitions_version()?;
    Some((dispatch.expeditor().change_count(), definitions))
}

/// Whether `version` defines the caching hints of list results (`ttlMs`, `cacheScope`).
fn has_cache_hints(version: Option<&ProtocolVersion>) -> bool {
    version.is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

impl<D> Drop for McpServer<D> {
    fn drop(&mut self) {
        // A permit for the watcher, should it not be waiting yet.
        self.session.closed.notify_one();
    }
}

impl<D: ToolDispatch + 'static> McpServer<D> {
    /// Serves `dispatch`; the server is named after this crate, with its version.
    pub fn new(dispatch: D) -> Self {
        Self::shared(Arc::new(dispatch))
    }

    /// Serves a toolbox you keep a handle on (to read its state table, say).
    ///
    /// A server is a long-running service: its expeditor runs as one
    /// ([`Expeditor::run_as_service`](crate::Expeditor::run_as_service)), so that a circuit
    /// comes back on probation after its cool-down and a budget pause lifts when the window
    /// frees room, with `notifications/tools/list_changed` sent by a timer, no call needed.
    pub fn shared(dispatch: Arc<D>) -> Self {
        dispatch.expeditor().run_as_service();
        McpServer {
            cycle_per_session: true,
            dispatch,
            defined: Arc::default(),
            implementation: Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
            instructions: None,
            session: Arc::default(),
        }
    }

    /// The name the server gives in `initialize` (`serverInfo.name`).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.implementation.name = name.into();
        self
    }

    /// The version the server gives in `initialize` (`serverInfo.version`).
    #[must_use]
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.implementation.version = version.into();
        self
    }

    /// Instructions for the client, sent in `initialize`.
    #[must_use]
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Whether each MCP session begins a cycle of its own (default: yes): a new client starts
    /// with the whole failure budget and no mistakes counted; breaker states are kept (R7.4).
    /// Turn it off where sessions share one budget.
    #[must_use]
    pub fn cycle_per_session(mut self, on: bool) -> Self {
        self.cycle_per_session = on;
        self
    }

    /// The toolbox served.
    pub fn dispatch(&self) -> &D {
        &self.dispatch
    }

    /// The tools offered now, as `tools/list` answers them.
    pub fn tools(&self) -> Vec<Tool> {
        self.dispatch.offered().iter().map(to_tool).collect()
    }

    /// Calls `name` through the guarded path, as `tools/call` does, and gives the result the
    /// client receives. Sends no notification.
    pub async fn call(&self, name: &str, arguments: Value) -> CallToolResult {
        to_call_tool_result(&self.dispatch.dispatch(name, arguments).await)
    }

    /// Serves over this process's standard input and output until the client closes them.
    ///
    /// # Errors
    ///
    /// The client's `initialize` (on 2026-07-28, its first request) failed, or the
    /// service's task panicked.
    pub async fn serve_stdio(self) -> Result<QuitReason, RmcpError> {
        let running = self.serve(rmcp::transport::stdio()).await?;
        Ok(running.waiting().await?)
    }

    /// The names offered now, remembered as told to the client.
    fn announce(&self) {
        let stamp = stamp(&*self.dispatch);
        let names = offered_names(&*self.dispatch, &self.defined);
        self.session.tell(names, stamp);
    }

    /// Tells the client, if the offer changed since it was last told.
    async fn notify_if_changed(&self, peer: &Peer<RoleServer>) {
        notify_if_changed(&*self.dispatch, &self.defined, &self.session, peer).await;
    }

    /// The session begins (its cycle, B13) with the first request that opens it:
    /// `initialize`, or on 2026-07-28, which has none, any request naming its revision.
    fn start_session(&self, protocol: Option<ProtocolVersion>) {
        if let Some(protocol) = protocol {
            lock(&self.session.protocol).get_or_insert(protocol);
        }
        let mut first = false;
        let number = *self.session.number.get_or_init(|| {
            first = true;
            SESSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        });
        if first && self.cycle_per_session {
            self.dispatch
                .expeditor()
                .begin_conversation(&format!("mcp-session-{number}"));
        }
    }

    /// Watches the expeditor for this session until the server value is dropped or the
    /// transport closes: a change of the offer made anywhere is announced, and so is one made
    /// by time (a tool back on probation, a pause lifted), at the instant it is due.
    fn spawn_watcher(&self, peer: Peer<RoleServer>) {
        let (dispatch, defined, session) = (
            Arc::clone(&self.dispatch),
            Arc::clone(&self.defined),
            Arc::clone(&self.session),
        );
        tokio::spawn(async move {
            let mut watch = dispatch.expeditor().watch();
            loop {
                let next = dispatch.expeditor().tick();
                tokio::select! {
                    () = watch.changed() => {}
                    () = session.closed.notified() => break,
                    () = wait_until(dispatch.expeditor(), next) => {}
                }
                if peer.is_transport_closed() {
                    break;
                }
                notify_if_changed(&*dispatch, &defined, &session, &peer).await;
            }
        });
    }
}

/// Waits until the expeditor's clock reaches `at` (forever for `None`), on that clock: real
/// time on the system clock, the moment it is moved on a clock moved by hand.
async fn wait_until(expeditor: &crate::Expeditor, at: Option<crate::clock::Timestamp>) {
    match at {
        Some(at) => expeditor.sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The names offered now as [`announced`] names them, sorted: the expeditor's offer, less
/// the names the toolbox does not define, each found by a hash lookup.
fn offered_names(dispatch: &impl ToolDispatch, defined: &Defined) -> Vec<String> {
    let expeditor = dispatch.expeditor();
    let offer = expeditor.offer();
    let tools = defined.get(dispatch);
    let mut names: Vec<String> = offer
        .offered
        .into_iter()
        .filter(|name| tools.contains_key(name))
        .map(|name| {
            let state = expeditor.tool(&name).and_then(|id| expeditor.state(id));
            if state == Some(CircuitState::HalfOpen) {
                format!("{name} (on probation)")
            } else {
                name
            }
        })
        .collect();
    names.sort_unstable();
    names
}

/// What a client is told of a tool: its name, and whether it is on probation (its
/// description says so, B15), so that a tool coming off probation is announced too.
fn announced(definition: &ToolDefinition) -> String {
    if definition
        .description
        .starts_with(crate::dispatch::PROBATION)
    {
        format!("{} (on probation)", definition.name)
    } else {
        definition.name.clone()
    }
}

/// Whether the offer changed since the session's client was last told, remembering it as
/// told. While nothing changed in the expeditor and the definitions are the same, this
/// reads nothing else: a call's cost does not grow with the number of tools.
fn offer_changed(dispatch: &impl ToolDispatch, defined: &Defined, session: &Session) -> bool {
    // A change due by time (a cool-down ended) is made now, and moves the change count.
    dispatch.expeditor().tick();
    let stamp = stamp(dispatch);
    if session.unchanged(stamp) {
        return false;
    }
    session.tell(offered_names(dispatch, defined), stamp)
}

async fn notify_if_changed(
    dispatch: &impl ToolDispatch,
    defined: &Defined,
    session: &Session,
    peer: &Peer<RoleServer>,
) {
    if !offer_changed(dispatch, defined, session) {
        return;
    }
    if session.stateless() {
        // 2026-07-28 sends notifications only on the client's listen stream; a client not
        // listening learns of the change when its list goes stale (`ttlMs`).
        let sink = lock(&session.sink).clone();
        if let Some(sink) = sink
            && let Err(error) = sink.notify_tool_list_changed().await
        {
            tracing::debug!(%error, "tools/list_changed not delivered");
        }
    } else if let Err(error) = peer.notify_tool_list_changed().await {
        tracing::debug!(%error, "tools/list_changed not delivered");
    }
}

impl<D> Clone for McpServer<D> {
    fn clone(&self) -> Self {
        McpServer {
            dispatch: Arc::clone(&self.dispatch),
            defined: Arc::clone(&self.defined),
            implementation: self.implementation.clone(),
            instructions: self.instructions.clone(),
            session: Arc::default(),
            cycle_per_session: self.cycle_per_session,
        }
    }
}

impl<D> fmt::Debug for McpServer<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.implementation.name)
            .field("version", &self.implementation.version)
            .finish_non_exhaustive()
    }
}

impl<D: ToolDispatch + 'static> ServerHandler for McpServer<D> {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let config = ServerConfig::new(capabilities).with_server_info(self.implementation.clone());
        match &self.instructions {
            Some(text) => config.with_instructions(text.clone()),
            None => config,
        }
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        // Named, not rmcp's list of every revision it knows: a newer rmcp's next revision is
        // served only once this server is checked against it.
        Cow::Borrowed(ProtocolVersion::known_up_to(&NEWEST))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let result = self.negotiate_initialize(&request)?;
        self.start_session(Some(result.protocol_version.clone()));
        // What the client may call from the start; a change from here on is announced.
        self.announce();
        Ok(result)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.notify_if_changed(&context.peer).await;
        self.spawn_watcher(context.peer);
    }

    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    /// 2026-07-28's `subscriptions/listen`: the stream `list_changed` is sent on, watched
    /// as the watcher of an `initialize`d session watches, until the client ends it.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let peer = context.request_context().peer.clone();
        self.start_session(context.request_context().protocol_version());
        if context.accepted().tools_list_changed != Some(true) {
            context.cancelled().await;
            return Ok(());
        }
        *lock(&self.session.sink) = Some(context.sink().clone());
        let expeditor = self.dispatch.expeditor();
        let mut watch = expeditor.watch();
        loop {
            let next = expeditor.tick();
            tokio::select! {
                () = watch.changed() => {}
                () = context.cancelled() => break,
                () = self.session.closed.notified() => break,
                () = wait_until(expeditor, next) => {}
            }
            self.notify_if_changed(&peer).await;
        }
        *lock(&self.session.sink) = None;
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let protocol = context.protocol_version();
        self.start_session(protocol.clone());
        // Read before the offer: a change in between is seen by the next check.
        let stamp = stamp(&*self.dispatch);
        let offered = self.dispatch.offered();
        let mut names: Vec<String> = offered.iter().map(announced).collect();
        names.sort_unstable();
        self.session.tell(names, stamp);
        let result = ListToolsResult::with_all_items(offered.iter().map(to_tool).collect());
        if has_cache_hints(protocol.as_ref()) {
            // The offer changes as circuits open and close: stale at once, and this
            // process's own. Older revisions do not define the hints: none is sent.
            Ok(result.with_ttl_ms(0).with_cache_scope(CacheScope::Private))
        } else {
            Ok(result)
        }
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        // Every tool, offered or not: a call to a withheld one is answered with its refusal.
        self.defined.get(&*self.dispatch).get(name).map(to_tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let protocol = context.protocol_version();
        self.start_session(protocol.clone());
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        // The request's id is the only id the server knows for the call (B18): its span, the
        // ledger line of its failure and its reply carry it.
        let request_id = context.id.to_string();
        let call_id = crate::telemetry::call_id(&request_id);
        // The call's `execute_tool` span, with the MCP attributes on it (B12): the guarded
        // call inside records into it rather than opening a second one.
        let span = crate::telemetry::in_call(call_id.clone(), || {
            crate::telemetry::execute_tool(&request.name)
        });
        if !span.is_disabled() {
            let protocol = protocol.as_ref().map(ProtocolVersion::as_str);
            crate::telemetry::record_mcp(&span, protocol, &request_id);
        }
        let reply = {
            let call = span.in_scope(|| {
                crate::telemetry::in_call(call_id.clone(), || {
                    self.dispatch.dispatch(&request.name, arguments)
                })
            });
            let call = crate::telemetry::WithCallId::new(call_id, call);
            let mut call = pin!(tracing::Instrument::instrument(call, span));
            let mut cancelled = pin!(context.ct.cancelled());
            poll_fn(|cx| match call.as_mut().poll(cx) {
                Poll::Ready(reply) => Poll::Ready(Some(reply)),
                // Dropping the call drops its ticket: a cancellation, never a failure.
                Poll::Pending => cancelled.as_mut().poll(cx).map(|()| None),
            })
            .await
        };
        self.notify_if_changed(&context.peer).await;
        match reply {
            // The spec's protocol error for a tool that does not exist.
            Some(
                reply @ Reply {
                    outcome: ReplyOutcome::Mistake(ModelMistake::UnknownTool { .. }),
                    ..
                },
            ) => Err(ErrorData::invalid_params(
                reply.text(),
                Some(Value::Object(reply.meta())),
            )),
            Some(reply) => Ok(to_call_tool_result(&reply).into()),
            None => Err(ErrorData::internal_error(
                format!("the call to {} was cancelled", request.name),
                None,
            )),
        }
    }
}

/// A tool definition as rmcp's [`Tool`]: name, description (omitted when empty), input
/// schema.
pub fn to_tool(definition: &ToolDefinition) -> Tool {
    let description =
        (!definition.description.is_empty()).then(|| Cow::Owned(definition.description.clone()));
    Tool::new_with_raw(
        definition.name.clone(),
        description,
        Arc::new(definition.input_schema.clone()),
    )
}

/// A reply as the `CallToolResult` a client receives: `isError` = [`Reply::is_error`], one
/// text content [`Reply::text`], `_meta` = [`Reply::meta`].
pub fn to_call_tool_result(reply: &Reply) -> CallToolResult {
    let content = vec![ContentBlock::text(reply.text())];
    let mut result = if reply.is_error() {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.meta = Some(MetaObject(reply.meta()));
    result
}
