//! The MCP server: a guarded toolbox behind rmcp's `ServerHandler` (B9). Documented in
//! the [module](super) that re-exports it.

use std::borrow::Cow;
use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeRequestParams, InitializeResult, ListToolsResult, MetaObject, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, Peer, QuitReason, RequestContext, RoleServer};
use rmcp::{ErrorData, RmcpError, ServerHandler, ServiceExt as _};
use serde_json::Value;

use crate::dispatch::{ModelMistake, Reply, ReplyOutcome, ToolDefinition, ToolDispatch};

/// A guarded toolbox as an MCP server: `tools/list` is the offer, `tools/call` the guarded
/// path, `list_changed` when the offer changes (see the [module](super)).
///
/// One value serves one connection: it remembers which tools that client was last told of.
/// A clone shares the toolbox and the server's name, and starts with no such memory, so
/// clone it once per session where a transport serves several.
pub struct McpServer<D> {
    dispatch: Arc<D>,
    implementation: Implementation,
    instructions: Option<String>,
    /// This connection's own: what its client was told, and the end of its watcher.
    session: Arc<Session>,
    /// Whether each session begins a cycle of its own (B13).
    cycle_per_session: bool,
}

/// Numbers sessions, for their cycles.
static SESSIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// One connection's memory: the offered names its client was last told of (`None` before it
/// was told any), and the signal that ends its watcher when the server value is dropped.
#[derive(Default)]
struct Session {
    /// This session's number, for its cycle.
    number: std::sync::OnceLock<u64>,
    announced: Mutex<Option<Vec<String>>>,
    closed: tokio::sync::Notify,
}

impl Session {
    fn announced(&self) -> std::sync::MutexGuard<'_, Option<Vec<String>>> {
        self.announced
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Remembers `names` as told; whether they differ from what the client was told before
    /// (never, before it was told anything).
    fn tell(&self, names: Vec<String>) -> bool {
        let mut announced = self.announced();
        let changed = announced.as_ref().is_some_and(|told| *told != names);
        *announced = Some(names);
        changed
    }
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
    /// The client's `initialize` failed, or the service's task panicked.
    pub async fn serve_stdio(self) -> Result<QuitReason, RmcpError> {
        let running = self.serve(rmcp::transport::stdio()).await?;
        Ok(running.waiting().await?)
    }

    /// The names offered now, remembered as told to the client.
    fn announce(&self) {
        self.session.tell(offered_names(&*self.dispatch));
    }

    /// Tells the client, if the offer changed since it was last told.
    async fn notify_if_changed(&self, peer: &Peer<RoleServer>) {
        notify_if_changed(&*self.dispatch, &self.session, peer).await;
    }

    /// Watches the expeditor for this session until the server value is dropped or the
    /// transport closes: a change of the offer made anywhere is announced, and so is one made
    /// by time (a tool back on probation, a pause lifted), at the instant it is due.
    fn spawn_watcher(&self, peer: Peer<RoleServer>) {
        let (dispatch, session) = (Arc::clone(&self.dispatch), Arc::clone(&self.session));
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
                notify_if_changed(&*dispatch, &session, &peer).await;
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

fn offered_names(dispatch: &impl ToolDispatch) -> Vec<String> {
    dispatch.offered().iter().map(announced).collect()
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

async fn notify_if_changed(
    dispatch: &impl ToolDispatch,
    session: &Session,
    peer: &Peer<RoleServer>,
) {
    if session.tell(offered_names(dispatch))
        && let Err(error) = peer.notify_tool_list_changed().await
    {
        tracing::debug!(%error, "tools/list_changed not delivered");
    }
}

impl<D> Clone for McpServer<D> {
    fn clone(&self) -> Self {
        McpServer {
            dispatch: Arc::clone(&self.dispatch),
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

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        if self.cycle_per_session {
            let session = self
                .session
                .number
                .get_or_init(|| SESSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
            self.dispatch
                .expeditor()
                .begin_conversation(&format!("mcp-session-{session}"));
        }
        // What the client may call from the start; a change from here on is announced.
        self.announce();
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.notify_if_changed(&context.peer).await;
        self.spawn_watcher(context.peer);
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let offered = self.dispatch.offered();
        self.session.tell(offered.iter().map(announced).collect());
        // The offer changes as circuits open and close: never cache it.
        Ok(ListToolsResult::with_all_items(offered.iter().map(to_tool).collect()).with_ttl_ms(0))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        // Every tool, offered or not: a call to a withheld one is answered with its refusal.
        self.dispatch
            .definitions()
            .iter()
            .find(|d| d.name == name)
            .map(to_tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
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
            let protocol = context
                .peer
                .peer_info()
                .map(|info| info.protocol_version.to_string());
            crate::telemetry::record_mcp(&span, protocol.as_deref(), &request_id);
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
