//! The MCP client: connected MCP servers whose tools are guarded by one expeditor (B10).
//! Documented in the [module](super) that re-exports it.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt::{self, Write as _};
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, RwLock, Weak};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ClientRequest,
    ContentBlock, ErrorCode, Implementation, PingRequest, Tool,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::transport::{IntoTransport, TokioChildProcess};
use rmcp::{ClientCacheConfig, ClientHandler, Peer, RoleClient, ServiceError, ServiceExt as _};
use serde_json::{Map, Value};

use crate::Availability;
use crate::capability::{CapabilityMap, MapErrors, ServerSpec, ToolSpec, did_you_mean};
use crate::dispatch::{Reply, ReplyFuture, ReplyOutcome, ToolDefinition, ToolDispatch};
use crate::expeditor::{Decision, Expeditor, ExpeditorBuilder, SkipReason, Ticket, ToolId};
use crate::freshness::{Freshness, Observation};
use crate::report::ModelNote;
use crate::{CallError, CircuitState, Failure, FailureCategory, Policy, Refusal, Routed};

/// The per-call deadline unless told otherwise: 30 s.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(30);
/// How long a server's health check is trusted unless told otherwise: 10 s.
pub const DEFAULT_HEALTH_TTL: Duration = Duration::from_secs(10);
/// How long a `ping` may take unless told otherwise: 5 s (never more than the deadline).
pub const DEFAULT_PING_TIMEOUT: Duration = Duration::from_secs(5);
/// How long connecting (a child's start, `initialize`, `tools/list`) may take unless told
/// otherwise: 30 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

// ----- errors ------------------------------------------------------------------------------

/// Why an [`McpClient`] could not be built, or a server reconnected.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpClientError {
    /// The builder was given something that cannot work: no server, a server name empty or
    /// given twice, a deadline for a server not given.
    Config(String),
    /// A server could not be connected: its process did not start, `initialize` failed or
    /// timed out, or `tools/list` failed.
    Connect {
        /// The server.
        server: String,
        /// What went wrong.
        message: String,
    },
    /// Servers list tools of the same name; [`McpClientBuilder::qualify_names`] names every
    /// tool `server.tool` instead.
    DuplicateTools(Vec<DuplicateTool>),
    /// The overlay names tools that no server lists, or puts a tool on another server.
    Overlay(Vec<OverlayProblem>),
    /// The run-time map, overlay applied, is not valid (R1.4): an alternative naming no
    /// listed tool, a threshold of zero, ...
    Map(MapErrors),
    /// No server of this name.
    UnknownServer(String),
}

/// A tool name listed by more than one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateTool {
    /// The name.
    pub tool: String,
    /// The servers that list it, in the builder's order.
    pub servers: Vec<String>,
}

/// One problem of an overlay.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OverlayProblem {
    /// The overlay names a tool that no server lists.
    UnknownTool {
        /// The name in the overlay.
        tool: String,
        /// A listed tool with a close name, if any.
        suggestion: Option<String>,
    },
    /// The overlay says something of a server the client was not given (B14).
    UnknownServer {
        /// The name in the overlay.
        server: String,
        /// A given server with a close name, if any.
        suggestion: Option<String>,
    },
    /// The overlay puts a tool on another server than the one listing it.
    WrongServer {
        /// The tool.
        tool: String,
        /// The server that lists it.
        listed_by: String,
        /// The server the overlay names.
        overlay: String,
    },
}

impl fmt::Display for OverlayProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OverlayProblem::UnknownTool { tool, suggestion } => {
                write!(
                    f,
                    "the overlay names `{tool}`, but no server lists a tool `{tool}`"
                )?;
                match suggestion {
                    Some(s) => write!(f, "; did you mean `{s}`?"),
                    None => Ok(()),
                }
            }
            OverlayProblem::UnknownServer { server, suggestion } => {
                write!(f, "the overlay names server `{server}`, which is no server")?;
                match suggestion {
                    Some(s) => write!(f, "; did you mean `{s}`?"),
                    None => Ok(()),
                }
            }
            OverlayProblem::WrongServer {
                tool,
                listed_by,
                overlay,
            } => write!(
                f,
                "the overlay puts `{tool}` on server `{overlay}`, but server `{listed_by}` lists it"
            ),
        }
    }
}

impl fmt::Display for McpClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpClientError::Config(message) => write!(f, "MCP client: {message}"),
            McpClientError::Connect { server, message } => {
                write!(f, "MCP server `{server}` could not be connected: {message}")
            }
            McpClientError::DuplicateTools(duplicates) => {
                f.write_str("MCP servers list tools of the same name")?;
                for d in duplicates {
                    write!(f, "\n  - `{}`: {}", d.tool, d.servers.join(", "))?;
                }
                f.write_str(
                    "\nqualify the names (McpClientBuilder::qualify_names) to call them server.tool",
                )
            }
            McpClientError::Overlay(problems) => {
                let n = problems.len();
                write!(
                    f,
                    "the capability overlay has {n} problem{}",
                    if n == 1 { "" } else { "s" }
                )?;
                for p in problems {
                    write!(f, "\n  - {p}")?;
                }
                Ok(())
            }
            McpClientError::Map(errors) => fmt::Display::fmt(errors, f),
            McpClientError::UnknownServer(server) => write!(f, "no MCP server `{server}`"),
        }
    }
}

impl std::error::Error for McpClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            McpClientError::Map(errors) => Some(errors),
            _ => None,
        }
    }
}

// ----- connections ---------------------------------------------------------------------------

/// A new connection made: the running service and, for a child process, its pid.
struct Connected {
    running: RunningService<RoleClient, Handler>,
    pid: Option<u32>,
}

type ConnectFuture = Pin<Box<dyn Future<Output = Result<Connected, String>> + Send>>;
/// Makes a new connection to one server, each time it is called (reconnects too).
type Connector = Arc<dyn Fn(Handler) -> ConnectFuture + Send + Sync>;

/// A command a server is started with ([`McpClientBuilder::child`]): a
/// `std::process::Command` or a `tokio::process::Command`, by value or by reference — `&mut`
/// too, as `Command::new(..).arg(..)` gives it. Its program, arguments, environment changes
/// and working directory are kept, so that a reconnect starts it again.
pub trait ServerCommand {
    /// The command, as the standard library's.
    fn as_std_command(&self) -> &std::process::Command;
}

impl ServerCommand for std::process::Command {
    fn as_std_command(&self) -> &std::process::Command {
        self
    }
}

impl ServerCommand for tokio::process::Command {
    fn as_std_command(&self) -> &std::process::Command {
        self.as_std()
    }
}

impl<C: ServerCommand + ?Sized> ServerCommand for &C {
    fn as_std_command(&self) -> &std::process::Command {
        (**self).as_std_command()
    }
}

impl<C: ServerCommand + ?Sized> ServerCommand for &mut C {
    fn as_std_command(&self) -> &std::process::Command {
        (**self).as_std_command()
    }
}

/// A command to spawn, kept as its parts so that it can be spawned again.
#[derive(Debug, Clone)]
struct Spawn {
    program: OsString,
    args: Vec<OsString>,
    envs: Vec<(OsString, Option<OsString>)>,
    dir: Option<PathBuf>,
}

impl Spawn {
    fn of(command: &std::process::Command) -> Self {
        Spawn {
            program: command.get_program().to_owned(),
            args: command.get_args().map(ToOwned::to_owned).collect(),
            envs: command
                .get_envs()
                .map(|(k, v)| (k.to_owned(), v.map(ToOwned::to_owned)))
                .collect(),
            dir: command.get_current_dir().map(ToOwned::to_owned),
        }
    }

    fn command(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.program);
        command.args(&self.args);
        for (key, value) in &self.envs {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        if let Some(dir) = &self.dir {
            command.current_dir(dir);
        }
        command
    }
}

/// The client side of one connection: answers the server's notifications.
struct Handler {
    server: Weak<Server>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        // Tools listed later are discovered (R2.4); a tool no longer listed leaves the
        // definitions shown to the model.
        let Some(server) = self.server.upgrade() else {
            return;
        };
        let Some(client) = server.client.get().and_then(Weak::upgrade) else {
            return;
        };
        match tokio::time::timeout(server.deadline, context.peer.list_all_tools()).await {
            Ok(Ok(tools)) => client.adopt(&server, &tools),
            Ok(Err(error)) => {
                tracing::warn!(server = %server.name, %error, "tools/list after list_changed failed");
            }
            Err(_) => {
                tracing::warn!(server = %server.name, "tools/list after list_changed timed out");
            }
        }
    }
}

/// The live connection to a server.
struct Link {
    /// Owned here: dropping it ends the connection (and kills a child process).
    running: RunningService<RoleClient, Handler>,
    peer: Peer<RoleClient>,
    pid: Option<u32>,
    generation: u64,
    /// A call or ping failed to reach the server on this connection.
    broken: bool,
}

/// The last health check of a server: when, and why it failed (`None`: it passed).
#[derive(Debug, Clone)]
struct Health {
    at: Instant,
    failed: Option<String>,
}

/// One connected server.
struct Server {
    name: String,
    index: usize,
    deadline: Duration,
    connector: Connector,
    /// `network.transport` (B12), when known.
    transport: Option<&'static str>,
    link: Mutex<Option<Link>>,
    /// One reconnect at a time.
    reconnecting: tokio::sync::Mutex<()>,
    health: Mutex<Option<Health>>,
    connections: AtomicU64,
    /// The client, once built (the notifications of a connection made before it are not
    /// needed: the tools are listed right after connecting).
    client: OnceLock<Weak<Inner>>,
    /// The categories of its tools' `isError` results that are the caller's mistake, unless
    /// a tool's overlay says otherwise (B14).
    caller_errors: Vec<FailureCategory>,
}

/// The categories of a foreign server's `isError` results that are the caller's mistake
/// unless the overlay says otherwise (B14): a resource the call named that does not exist,
/// and an input the tool rejected.
pub const DEFAULT_CALLER_ERRORS: [FailureCategory; 2] =
    [FailureCategory::NotFound, FailureCategory::InvalidInput];

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A `ping` that found no server.
enum PingError {
    /// The transport is closed or a send failed: the server is not there.
    Unreachable(String),
    /// It did not answer in time (or answered nonsense).
    NoAnswer(String),
}

impl PingError {
    fn into_reason(self) -> String {
        match self {
            PingError::Unreachable(r) | PingError::NoAnswer(r) => r,
        }
    }
}

/// What a call came back with.
enum Outcome {
    Answered(Value),
    Failed(Failure),
    /// The tool's own `isError` result: whose it is, the overlay says (B14).
    Reported(Failure),
    /// The server says the arguments (or the name) are the model's mistake: -32602.
    Mistake(String),
    /// The call was cancelled before it answered.
    Cancelled(String),
}

fn human(d: Duration) -> humantime::FormattedDuration {
    humantime::format_duration(d)
}

impl Server {
    /// The peer to call now and its connection's generation.
    fn peer(&self) -> Option<(Peer<RoleClient>, u64)> {
        lock(&self.link)
            .as_ref()
            .map(|l| (l.peer.clone(), l.generation))
    }

    fn generation(&self) -> u64 {
        lock(&self.link).as_ref().map_or(0, |l| l.generation)
    }

    /// Whether a probe must reconnect first: no connection, its transport closed, or a call
    /// on it could not reach the server.
    fn needs_reconnect(&self) -> bool {
        lock(&self.link)
            .as_ref()
            .is_none_or(|l| l.broken || l.peer.is_transport_closed())
    }

    fn mark_broken(&self, generation: u64) {
        if let Some(link) = lock(&self.link).as_mut()
            && link.generation == generation
        {
            link.broken = true;
        }
    }

    fn health_stale(&self, ttl: Duration) -> bool {
        lock(&self.health)
            .as_ref()
            .is_none_or(|h| h.at.elapsed() >= ttl)
    }

    /// The reason of a failed check younger than `ttl`.
    fn recent_failure(&self, ttl: Duration) -> Option<String> {
        lock(&self.health)
            .as_ref()
            .filter(|h| h.at.elapsed() < ttl)
            .and_then(|h| h.failed.clone())
    }

    fn set_health(&self, failed: Option<String>) {
        *lock(&self.health) = Some(Health {
            at: Instant::now(),
            failed,
        });
    }

    /// Makes a new connection through the connector, disables rmcp's response cache (a
    /// health check must not be answered from it), lists the tools and makes it the live
    /// one. The old connection, if any, is dropped.
    async fn connect(self: &Arc<Self>, timeout: Duration) -> Result<Vec<Tool>, String> {
        let handler = Handler {
            server: Arc::downgrade(self),
        };
        let connected = tokio::time::timeout(timeout, (self.connector)(handler))
            .await
            .map_err(|_| format!("no answer to initialize within {}", human(timeout)))??;
        let peer = connected.running.peer().clone();
        peer.set_response_cache_config(ClientCacheConfig::disabled())
            .await;
        let has_tools = peer
            .peer_info()
            .is_none_or(|info| info.capabilities.tools.is_some());
        let tools = if has_tools {
            match tokio::time::timeout(self.deadline, peer.list_all_tools()).await {
                Ok(Ok(tools)) => tools,
                Ok(Err(error)) => return Err(format!("tools/list failed: {error}")),
                Err(_) => {
                    return Err(format!(
                        "no answer to tools/list within {}",
                        human(self.deadline)
                    ));
                }
            }
        } else {
            Vec::new()
        };
        let generation = self.connections.fetch_add(1, Ordering::AcqRel) + 1;
        let old = lock(&self.link).replace(Link {
            running: connected.running,
            peer,
            pid: connected.pid,
            generation,
            broken: false,
        });
        drop(old);
        Ok(tools)
    }

    /// One MCP `ping`, bounded by `timeout`. Any answer, an error answer too, means the
    /// server is there.
    async fn ping(&self, timeout: Duration) -> Result<(), PingError> {
        let Some((peer, generation)) = self.peer() else {
            return Err(PingError::Unreachable("not connected".to_owned()));
        };
        let request = ClientRequest::PingRequest(PingRequest::default());
        let sent = peer
            .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
            .await;
        let answer = match sent {
            Ok(handle) => handle.await_response().await,
            Err(error) => Err(error),
        };
        match answer {
            Ok(_) | Err(ServiceError::McpError(_)) => Ok(()),
            Err(error @ (ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                self.mark_broken(generation);
                Err(PingError::Unreachable(error.to_string()))
            }
            Err(ServiceError::Timeout { .. }) => Err(PingError::NoAnswer(format!(
                "no answer to ping within {}",
                human(timeout)
            ))),
            Err(error) => Err(PingError::NoAnswer(format!("ping failed: {error}"))),
        }
    }

    /// Calls `tool` (the server's own name for it) with the deadline — the tool's own
    /// `timeout` when its spec has one (B13), else the server's — and classifies what comes
    /// back.
    async fn call_tool(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        own_deadline: Option<Duration>,
    ) -> Outcome {
        let Some((peer, generation)) = self.peer() else {
            return Outcome::Failed(self.unreachable("not connected"));
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        // The typed helper: dropping its future (the deadline, or this call dropped) tells
        // the server the request is abandoned.
        let (deadline, whose) = match own_deadline {
            Some(deadline) => (deadline, "the tool's deadline"),
            None => (self.deadline, "the call's deadline"),
        };
        match tokio::time::timeout(deadline, peer.call_tool(params)).await {
            Err(_) => Outcome::Failed(Failure::with_category(
                format!(
                    "{tool} on MCP server {} did not answer within {} ({whose})",
                    self.name,
                    human(deadline)
                ),
                FailureCategory::Timeout,
            )),
            Ok(Ok(result)) => classify_result(result),
            Ok(Err(error)) => match error {
                ServiceError::TransportClosed | ServiceError::TransportSend(_)
                    if self.generation() != generation =>
                {
                    // Cut by a reconnect made while it was in flight: not this server's
                    // outage (the new connection is up), and not the tool's failure.
                    Outcome::Cancelled(
                        "the connection was replaced while the call was in flight".to_owned(),
                    )
                }
                ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                    self.mark_broken(generation);
                    Outcome::Failed(self.unreachable(&error.to_string()))
                }
                ServiceError::Timeout { .. } => Outcome::Failed(Failure::with_category(
                    format!("{tool} on MCP server {}: {error}", self.name),
                    FailureCategory::Timeout,
                )),
                ServiceError::McpError(data) if data.code == ErrorCode::INVALID_PARAMS => {
                    Outcome::Mistake(data.message.into_owned())
                }
                ServiceError::McpError(data) => {
                    let failure = Failure::with_category(
                        format!("{} (JSON-RPC error {})", data.message, data.code.0),
                        FailureCategory::Other,
                    );
                    Outcome::Failed(with_hint(failure, data.data.as_ref()))
                }
                ServiceError::Cancelled { reason } => Outcome::Cancelled(
                    reason.unwrap_or_else(|| "the request was cancelled".to_owned()),
                ),
                other => Outcome::Failed(Failure::with_category(
                    other.to_string(),
                    FailureCategory::Other,
                )),
            },
        }
    }

    fn unreachable(&self, why: &str) -> Failure {
        Failure::with_category(
            format!("MCP server {} cannot be reached: {why}", self.name),
            FailureCategory::Network,
        )
        .server_unreachable()
    }
}

/// The text contents of a result, one per line.
fn texts(content: &[ContentBlock]) -> Option<String> {
    let mut parts = content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()));
    let first = parts.next()?;
    let mut text = first.to_owned();
    for part in parts {
        text.push('\n');
        text.push_str(part);
    }
    Some(text)
}

/// A successful result's value: its structured content, else its text (JSON when it parses,
/// else a string), else (images, resources) its content blocks as JSON.
fn value_of(result: CallToolResult) -> Value {
    if let Some(value) = result.structured_content {
        return value;
    }
    let only_text = result.content.iter().all(|c| c.as_text().is_some());
    match texts(&result.content) {
        Some(text) if only_text => serde_json::from_str(&text).unwrap_or(Value::String(text)),
        _ if result.content.is_empty() => Value::Null,
        _ => serde_json::to_value(&result.content).unwrap_or(Value::Null),
    }
}

fn classify_result(result: CallToolResult) -> Outcome {
    if result.is_error != Some(true) {
        return Outcome::Answered(value_of(result));
    }
    let meta = |key: &str| {
        result
            .meta
            .as_ref()
            .and_then(|m| m.0.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    // A server built with this crate gives the tool's own message apart from its note
    // (`_meta.error`), and says when the arguments were the model's mistake.
    let message = meta("error")
        .filter(|m| !m.trim().is_empty())
        .or_else(|| texts(&result.content).filter(|t| !t.trim().is_empty()))
        .or_else(|| result.structured_content.as_ref().map(Value::to_string))
        .unwrap_or_else(|| "the tool reported an error without a message".to_owned());
    let mistake = meta("outcome").as_deref() == Some("model_mistake");
    if mistake {
        Outcome::Mistake(message)
    } else {
        let hint = result
            .meta
            .as_ref()
            .map(|m| Value::Object(m.0.clone()))
            .or_else(|| result.structured_content.clone());
        Outcome::Reported(with_hint(Failure::new(message), hint.as_ref()))
    }
}

/// `failure` with the retry-after hint an MCP server gave, if it gave one (B13). MCP has no
/// standard field for it; these are read from an error's `data` or a result's `_meta` (or
/// structured content): `retryAfter` / `retry_after` in seconds (a number, or the text of an
/// HTTP `Retry-After`: seconds or an HTTP-date), `retryAfterMs` / `retry_after_ms` in
/// milliseconds. Anything negative, not finite or unreadable is no hint; a huge one is bounded
/// by the policy's cool-down cap where it is used.
fn with_hint(failure: Failure, data: Option<&Value>) -> Failure {
    match data.and_then(retry_hint) {
        Some(hint) => failure.with_retry_after(hint),
        None => failure,
    }
}

fn retry_hint(data: &Value) -> Option<Duration> {
    let object = data.as_object()?;
    let number = |value: &Value, unit: f64| {
        let n = value.as_f64()? * unit;
        // Up to a year: beyond that it is no hint a policy would take anyway.
        (n.is_finite() && n >= 0.0).then(|| Duration::from_secs_f64(n.min(3.2e10)))
    };
    for key in ["retryAfterMs", "retry_after_ms"] {
        if let Some(value) = object.get(key) {
            return number(value, 0.001);
        }
    }
    for key in ["retryAfter", "retry_after"] {
        match object.get(key) {
            Some(Value::String(text)) => {
                let now = crate::clock::Timestamp::from_system_time(std::time::SystemTime::now());
                return crate::failure::parse_retry_after(text, now);
            }
            Some(value) => return number(value, 1.0),
            None => {}
        }
    }
    None
}

// ----- the run-time map ------------------------------------------------------------------------

/// One tool as the client knows it.
#[derive(Debug, Clone)]
struct Entry {
    id: ToolId,
    server: usize,
    /// The server's own name for it.
    remote: String,
    definition: ToolDefinition,
    /// Listed in the server's last `tools/list`.
    listed: bool,
}

#[derive(Debug, Default)]
struct Tools {
    /// Shared with the calls in flight; changed copy-on-write.
    entries: Vec<Arc<Entry>>,
    by_name: HashMap<String, usize>,
}

/// A listed tool before it has an id.
#[derive(Debug, Clone)]
struct Listed {
    name: String,
    remote: String,
    definition: ToolDefinition,
}

/// The schema shown to a model: always an object schema (a schema of another type is
/// replaced, one with no type gets `"type": "object"`).
fn object_schema(server: &str, tool: &str, schema: &Map<String, Value>) -> Map<String, Value> {
    let is_object = |t: &Value| match t {
        Value::String(s) => s == "object",
        Value::Array(types) => types.iter().any(|t| t == "object"),
        _ => false,
    };
    match schema.get("type") {
        Some(t) if is_object(t) => schema.clone(),
        None => {
            let mut schema = schema.clone();
            schema.insert("type".into(), "object".into());
            schema
        }
        Some(other) => {
            tracing::warn!(server, tool, schema_type = %other, "an input schema that is no object schema, replaced");
            let mut schema = Map::new();
            schema.insert("type".into(), "object".into());
            schema
        }
    }
}

/// The first line of a description, at most 160 characters.
fn first_line(description: &str) -> Option<String> {
    let line = description.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut out: String = line.chars().take(160).collect();
    if line.chars().count() > 160 {
        out.push('…');
    }
    Some(out)
}

/// The spec a listed tool gets when the overlay says nothing of it (R2.4, B6).
fn default_spec(name: &str, server: &str, description: &str) -> ToolSpec {
    ToolSpec::new(name.to_owned())
        .provides(first_line(description).unwrap_or_else(|| format!("capability of server {server}")))
        .fallback(format!(
            "tell the user that {name} of the MCP server {server} could not be used, and what it was needed for"
        ))
        .server(server.to_owned())
        .build()
}

/// `base` with what the overlay gives: provides, alternatives, fallback, threshold,
/// probe interval, caches, caller errors, timeout. An empty text or list of alternatives in
/// the overlay keeps the base's; an empty list of caller errors is kept (everything is the
/// tool's).
fn merge(base: &ToolSpec, overlay: &ToolSpec) -> ToolSpec {
    let text = |o: &str, b: &str| {
        if o.trim().is_empty() {
            b.to_owned()
        } else {
            o.to_owned()
        }
    };
    let alternatives = if overlay.alternatives().is_empty() {
        base.alternatives()
    } else {
        overlay.alternatives()
    };
    let mut spec = ToolSpec::new(base.name().to_owned())
        .provides(text(overlay.provides(), base.provides()))
        .fallback(text(overlay.fallback(), base.fallback()))
        .alternatives(alternatives.iter().cloned())
        .caches(overlay.is_caching() || base.is_caching());
    if let Some(server) = base.server() {
        spec = spec.server(server.to_owned());
    }
    if let Some(threshold) = overlay.threshold().or(base.threshold()) {
        spec = spec.threshold(threshold);
    }
    if let Some(every) = overlay.probe_every().or(base.probe_every()) {
        spec = spec.probe_every(every);
    }
    if let Some(categories) = overlay.caller_errors().or(base.caller_errors()) {
        spec = spec.caller_errors(categories.iter().copied());
    }
    // A timeout the overlay could not read is kept as written, so that the map's validation
    // reports it by the tool's name instead of dropping it.
    let timed = if overlay.declares_timeout() {
        overlay
    } else {
        base
    };
    spec = spec.timeout_of(timed);
    spec.build()
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Whether `arguments` fit the plain parts of a tool's schema: every `required` property
/// given, no unknown one where `additionalProperties` is false, and each property of the
/// simple `type` it declares. Anything else is left to the server.
fn fits(schema: &Map<String, Value>, arguments: &Map<String, Value>) -> Result<(), String> {
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        let missing: Vec<&str> = required
            .iter()
            .filter_map(Value::as_str)
            .filter(|k| !arguments.contains_key(*k))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "missing required argument{} {}",
                if missing.len() == 1 { "" } else { "s" },
                missing
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    if let Some(properties) = properties {
        if schema.get("additionalProperties") == Some(&Value::Bool(false))
            && let Some(unknown) = arguments.keys().find(|k| !properties.contains_key(*k))
        {
            let mut message = format!("unknown argument `{unknown}`");
            if let Some(s) = did_you_mean(unknown, properties.keys().map(String::as_str)) {
                let _ = write!(message, "; did you mean `{s}`?");
            }
            return Err(message);
        }
        for (key, value) in arguments {
            let Some(wanted) = properties
                .get(key)
                .and_then(|p| p.get("type"))
                .and_then(Value::as_str)
            else {
                continue;
            };
            let fits = match wanted {
                "string" => value.is_string(),
                "boolean" => value.is_boolean(),
                "array" => value.is_array(),
                "object" => value.is_object(),
                "null" => value.is_null(),
                "number" => value.is_number(),
                "integer" => {
                    value.is_i64()
                        || value.is_u64()
                        || value.as_f64().is_some_and(|f| f.fract() == 0.0)
                }
                _ => true,
            };
            if !fits {
                return Err(format!(
                    "argument `{key}` must be of type {wanted}, not {}",
                    kind_of(value)
                ));
            }
        }
    }
    Ok(())
}

fn digest(value: &impl Hash) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

// ----- the client ---------------------------------------------------------------------------------

struct Inner {
    expeditor: Expeditor,
    servers: Box<[Arc<Server>]>,
    tools: RwLock<Tools>,
    qualify: Option<String>,
    health_ttl: Duration,
    ping_timeout: Duration,
    connect_timeout: Duration,
}

impl Inner {
    fn tools(&self) -> std::sync::RwLockReadGuard<'_, Tools> {
        self.tools.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn server(&self, name: &str) -> Option<&Arc<Server>> {
        self.servers.iter().find(|s| s.name == name)
    }

    fn entry(&self, name: &str) -> Option<Arc<Entry>> {
        let tools = self.tools();
        tools
            .by_name
            .get(name)
            .map(|&i| Arc::clone(&tools.entries[i]))
    }

    fn ping_timeout(&self, server: &Server) -> Duration {
        self.ping_timeout.min(server.deadline)
    }

    /// A server's tools, listed again (after `list_changed` or a reconnect): new names are
    /// discovered (R2.4) with the default spec; those no longer listed leave the
    /// definitions, but a call to one still reaches the server.
    fn adopt(&self, server: &Server, tools: &[Tool]) {
        let listed = listing(self, server, tools);
        let fresh: Vec<&Listed> = {
            let known = self.tools();
            listed
                .iter()
                .filter(|l| !known.by_name.contains_key(&l.name))
                .collect()
        };
        // Discovered outside the table's lock: an observer may read the definitions.
        let mut ids = HashMap::new();
        for tool in fresh {
            let spec = default_spec(&tool.name, &server.name, &tool.definition.description);
            match self.expeditor.discover(spec) {
                Ok(id) => {
                    ids.insert(tool.name.clone(), id);
                }
                Err(error) => {
                    tracing::warn!(server = %server.name, tool = %tool.name, %error, "a tool listed later could not be added");
                }
            }
        }
        let mut table = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        for entry in &mut table.entries {
            if entry.server == server.index {
                Arc::make_mut(entry).listed = false;
            }
        }
        for tool in listed {
            match table.by_name.get(&tool.name).copied() {
                Some(i) if table.entries[i].server == server.index => {
                    let entry = Arc::make_mut(&mut table.entries[i]);
                    entry.definition = tool.definition;
                    entry.remote = tool.remote;
                    entry.listed = true;
                }
                Some(i) => {
                    let other = &self.servers[table.entries[i].server].name;
                    tracing::warn!(server = %server.name, tool = %tool.name, other = %other, "a tool of the same name is another server's: not added");
                }
                None => {
                    if let Some(&id) = ids.get(&tool.name) {
                        let i = table.entries.len();
                        table.by_name.insert(tool.name.clone(), i);
                        table.entries.push(Arc::new(Entry {
                            id,
                            server: server.index,
                            remote: tool.remote,
                            definition: tool.definition,
                            listed: true,
                        }));
                    }
                }
            }
        }
    }

    /// Reconnects `server` through its connector and lists its tools again; nothing is
    /// recorded in the breakers. Another task's reconnect in the meantime is enough.
    async fn reconnect(&self, server: &Arc<Server>) -> Result<(), String> {
        let seen = server.generation();
        let _one = server.reconnecting.lock().await;
        if server.generation() != seen && !server.needs_reconnect() {
            return Ok(());
        }
        let tools = server.connect(self.connect_timeout).await?;
        self.adopt(server, &tools);
        Ok(())
    }

    /// Before a probe (R10.1): a check that failed within the health TTL stands; otherwise
    /// reconnect when the connection is gone, then a fresh `ping` (one more reconnect and
    /// ping when it fails on the old connection). A pass is recorded as AVAILABLE.
    async fn ready_for_probe(&self, server: &Arc<Server>) -> Result<(), String> {
        if let Some(reason) = server.recent_failure(self.health_ttl) {
            return Err(reason);
        }
        let result = self.reach(server).await;
        match &result {
            Ok(()) => {
                server.set_health(None);
                self.expeditor
                    .record_server_check(&server.name, Availability::Available);
            }
            Err(reason) => server.set_health(Some(reason.clone())),
        }
        result
    }

    async fn reach(&self, server: &Arc<Server>) -> Result<(), String> {
        let mut reconnected = false;
        if server.needs_reconnect() {
            self.reconnect(server)
                .await
                .map_err(|e| format!("reconnecting failed: {e}"))?;
            reconnected = true;
        }
        match server.ping(self.ping_timeout(server)).await {
            Ok(()) => Ok(()),
            Err(error) if reconnected => Err(error.into_reason()),
            Err(_) => {
                self.reconnect(server)
                    .await
                    .map_err(|e| format!("reconnecting failed: {e}"))?;
                server
                    .ping(self.ping_timeout(server))
                    .await
                    .map_err(PingError::into_reason)
            }
        }
    }

    /// The health check of a server that is up (R10.1), when its last one is older than the
    /// TTL. A server that answers is AVAILABLE; one that does not answer in time is
    /// UNAVAILABLE (its calls would wait out their deadlines). A closed transport is not
    /// recorded: the next call finds it, and the server goes down as one event, charged
    /// once.
    async fn check_up(&self, server: &Server) {
        if server.needs_reconnect() {
            return;
        }
        match server.ping(self.ping_timeout(server)).await {
            Ok(()) => {
                server.set_health(None);
                self.expeditor
                    .record_server_check(&server.name, Availability::Available);
            }
            Err(PingError::Unreachable(_)) => {}
            Err(PingError::NoAnswer(reason)) => {
                server.set_health(Some(reason.clone()));
                self.expeditor
                    .record_server_check(&server.name, Availability::Unavailable(reason));
            }
        }
    }

    fn is_down(&self, server: &str) -> bool {
        self.expeditor.server_down(server)
    }

    async fn check(&self) -> Vec<String> {
        let mut up = Vec::new();
        for server in &self.servers {
            let name = server.name.as_str();
            if self.is_down(name) {
                // Due by the policy (steps, refused attempts), and at least once per health
                // TTL whatever the callers do (a proxy's make neither).
                if !self
                    .expeditor
                    .server_probe_due_within(name, self.health_ttl)
                {
                    continue;
                }
                match self.ready_for_probe(server).await {
                    Ok(()) => {
                        if self.expeditor.record_server_probe(name, true) {
                            up.push(name.to_owned());
                        }
                    }
                    Err(reason) => {
                        self.expeditor
                            .record_server_check(name, Availability::Unavailable(reason));
                        self.expeditor.record_server_probe(name, false);
                    }
                }
            } else if server.health_stale(self.health_ttl) && self.expeditor.health_checks_wanted()
            {
                self.check_up(server).await;
            }
        }
        up
    }

    /// A call in its `execute_tool` span (B12), with the MCP attributes: `gen_ai.tool.type`
    /// `extension`, `mcp.method.name` `tools/call`, the server and its transport.
    async fn dispatch(&self, name: &str, arguments: Value) -> Reply {
        let entry = self.entry(name);
        let server = entry.as_ref().map(|entry| &self.servers[entry.server]);
        let span = crate::telemetry::mcp_client_span(
            name,
            server.map_or("", |s| s.name.as_str()),
            server.and_then(|s| s.transport),
        );
        tracing::Instrument::instrument(self.dispatch_guarded(entry, name, arguments), span).await
    }

    async fn dispatch_guarded(
        &self,
        entry: Option<Arc<Entry>>,
        name: &str,
        arguments: Value,
    ) -> Reply {
        let expeditor = &self.expeditor;
        let Some(entry) = entry else {
            return Reply::unknown_tool(expeditor, name);
        };
        let arguments = match arguments {
            Value::Object(arguments) => arguments,
            Value::Null => Map::new(),
            other => {
                let message = format!(
                    "the arguments must be a JSON object, not {}",
                    kind_of(&other)
                );
                return Reply::bad_arguments(expeditor, name, &message);
            }
        };
        if let Err(message) = fits(&entry.definition.input_schema, &arguments) {
            return Reply::bad_arguments(expeditor, name, &message);
        }
        let server = &self.servers[entry.server];
        if expeditor.state(entry.id) == Some(CircuitState::Closed)
            && server.health_stale(self.health_ttl)
            && expeditor.paused().is_none()
        {
            self.check_up(server).await;
        }
        match expeditor.decide(entry.id) {
            Decision::Call(ticket) => self.call(ticket, name, &entry, server, arguments).await,
            Decision::Probe(ticket) => match self.ready_for_probe(server).await {
                Ok(()) => self.call(ticket, name, &entry, server, arguments).await,
                Err(reason) => self.probe_not_made(ticket, name, server, reason),
            },
            Decision::Skip(skip) => {
                let refusal = Refusal::new(
                    name,
                    skip.reason(),
                    Some(skip.route().taken(name)),
                    skip.for_model(),
                );
                refused(expeditor, name, refusal)
            }
            Decision::Pause(pause) => {
                let refusal = Refusal::new(
                    name,
                    SkipReason::Paused {
                        pause: pause.reason(),
                    },
                    None,
                    pause.for_model(),
                );
                refused(expeditor, name, refusal)
            }
        }
    }

    async fn call(
        &self,
        ticket: Ticket<'_>,
        name: &str,
        entry: &Entry,
        server: &Server,
        arguments: Map<String, Value>,
    ) -> Reply {
        let expeditor = &self.expeditor;
        let caching = expeditor.is_caching(entry.id);
        let args = caching.then(|| digest(&Value::Object(arguments.clone()).to_string()));
        let own_deadline = expeditor.spec(entry.id).and_then(ToolSpec::timeout);
        let outcome = server
            .call_tool(&entry.remote, arguments, own_deadline)
            .await;
        match outcome {
            Outcome::Answered(value) => {
                ticket.success();
                let freshness = match args {
                    Some(args) => expeditor.observe(
                        entry.id,
                        Observation {
                            args,
                            output: digest(&value.to_string()),
                            data_time: None,
                            live: true,
                        },
                    ),
                    None => Freshness::Fresh,
                };
                let routed = Routed {
                    value,
                    route: None,
                    freshness,
                };
                Reply::from_call::<Value, String>(expeditor, name, Ok(routed))
            }
            Outcome::Failed(failure) => self.failed(ticket, name, failure),
            Outcome::Reported(failure) => {
                let failure = if self.blames_caller(entry, server, failure.category()) {
                    failure.blame_caller()
                } else {
                    failure
                };
                self.failed(ticket, name, failure)
            }
            Outcome::Mistake(message) => {
                // The model's mistake: never charged (B8); a probe answered so is a success.
                let _ = ticket.mistake_of(crate::engine::MistakeKind::BadArguments);
                crate::telemetry::mistake(
                    name,
                    crate::telemetry::ErrorType::InvalidArguments,
                    &message,
                );
                let mistake = crate::report::ModelMistake::BadArguments {
                    tool: name.to_owned(),
                    message,
                };
                Reply::mistake_reply(expeditor, name, mistake, expeditor.state(entry.id))
            }
            Outcome::Cancelled(reason) => {
                ticket.cancel();
                Reply {
                    tool: name.to_owned(),
                    outcome: ReplyOutcome::Failed {
                        message: format!("cancelled: {reason}"),
                    },
                    value: None,
                    note: Some(format!(
                        "The call to {name} was cancelled before it answered ({reason}); nothing was \
                         recorded against {name}."
                    )),
                    route: None,
                    freshness: Freshness::Fresh,
                    state: expeditor.state(entry.id),
                }
            }
        }
    }

    /// A failure recorded through the ticket: the tool's, its server's, or — blamed on the
    /// caller — the model's mistake, never charged (B14).
    fn failed(&self, ticket: Ticket<'_>, name: &str, failure: Failure) -> Reply {
        let error = failure.message().to_owned();
        let result = crate::executor::failed(ticket, None, error, move |_| failure);
        Reply::from_call::<Value, String>(&self.expeditor, name, Err(result))
    }

    /// Whether an `isError` result of `category` is the caller's mistake (B14): as the
    /// tool's overlay says, else its server's, else [`DEFAULT_CALLER_ERRORS`].
    fn blames_caller(&self, entry: &Entry, server: &Server, category: FailureCategory) -> bool {
        match self
            .expeditor
            .spec(entry.id)
            .and_then(|s| s.caller_errors())
        {
            Some(categories) => categories.contains(&category),
            None => server.caller_errors.contains(&category),
        }
    }

    /// A probe whose server could not be reached by its health check: not made (R10.1). The
    /// ticket is dropped (nothing charged), the check recorded as UNAVAILABLE, and the
    /// server's outage waits another interval; the model is told the route.
    fn probe_not_made(
        &self,
        ticket: Ticket<'_>,
        name: &str,
        server: &Server,
        reason: String,
    ) -> Reply {
        let expeditor = &self.expeditor;
        let why = format!(
            "its MCP server {} cannot be reached ({reason})",
            server.name
        );
        // While this probe is held, deciding again is a SKIP with the tool's routes; it
        // counts nothing.
        let (route, note) = match expeditor.decide(ticket.tool()) {
            Decision::Skip(skip) => {
                let mut note = skip.for_model();
                note.why.clone_from(&why);
                (Some(skip.route().taken(name)), note)
            }
            _ => (
                None,
                ModelNote {
                    tool: Some(name.to_owned()),
                    asked_for: None,
                    why: why.clone(),
                    instead: format!(
                        "tell the user that the MCP server {} is down and what {name} was needed for.",
                        server.name
                    ),
                },
            ),
        };
        ticket.cancel();
        expeditor.record_server_check(&server.name, Availability::Unavailable(reason));
        expeditor.record_server_probe(&server.name, false);
        refused(
            expeditor,
            name,
            Refusal::new(name, SkipReason::Unavailable, route, note),
        )
    }
}

fn refused(expeditor: &Expeditor, name: &str, refusal: Refusal) -> Reply {
    let state = expeditor.tool(name).and_then(|id| expeditor.state(id));
    crate::telemetry::refused(refusal.reason(), state, || refusal.route());
    Reply::from_call::<Value, String>(expeditor, name, Err(CallError::Refused(refusal)))
}

/// The tools of one listing as the client names them: empty names and repeats dropped.
fn listing(inner: &Inner, server: &Server, tools: &[Tool]) -> Vec<Listed> {
    listed_tools(inner.qualify.as_deref(), &server.name, tools)
}

fn listed_tools(qualify: Option<&str>, server: &str, tools: &[Tool]) -> Vec<Listed> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(tools.len());
    for tool in tools {
        let remote = tool.name.as_ref();
        if remote.trim().is_empty() {
            tracing::warn!(server, "a tool with an empty name, left out");
            continue;
        }
        if !seen.insert(remote) {
            tracing::warn!(
                server,
                tool = remote,
                "a tool listed twice, the repeat left out"
            );
            continue;
        }
        let name = match qualify {
            Some(separator) => format!("{server}{separator}{remote}"),
            None => remote.to_owned(),
        };
        let description = tool.description.as_deref().unwrap_or("").to_owned();
        out.push(Listed {
            definition: ToolDefinition {
                name: name.clone(),
                description,
                input_schema: object_schema(server, remote, &tool.input_schema),
            },
            name,
            remote: remote.to_owned(),
        });
    }
    out
}

/// A set of MCP servers the agent connects to, their tools guarded by one [`Expeditor`]
/// (B10). See the [module](super) for what every call does.
///
/// It is a [`ToolDispatch`]: give it to [`McpServer`](super::McpServer) (a guarded proxy) or
/// to the rig adapter as it is. Cloning it is cheap and shares everything; the connections
/// (and child processes) end when the last clone is dropped.
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<Inner>,
}

impl fmt::Debug for McpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClient")
            .field("servers", &self.servers())
            .field("tools", &self.inner.tools().entries.len())
            .finish_non_exhaustive()
    }
}

impl McpClient {
    /// A builder: add servers with [`child`](McpClientBuilder::child) or
    /// [`connect`](McpClientBuilder::connect), then [`build`](McpClientBuilder::build).
    pub fn builder() -> McpClientBuilder {
        McpClientBuilder::default()
    }

    /// The expeditor guarding every server's tools: the state table (a line per server),
    /// the budget, the offer, events.
    pub fn expeditor(&self) -> &Expeditor {
        &self.inner.expeditor
    }

    /// The servers' names, in the builder's order.
    pub fn servers(&self) -> Vec<&str> {
        self.inner.servers.iter().map(|s| s.name.as_str()).collect()
    }

    /// The server a tool (by the name the model calls it) lives on.
    pub fn server_of(&self, tool: &str) -> Option<&str> {
        let index = self.inner.entry(tool)?.server;
        Some(self.inner.servers[index].name.as_str())
    }

    /// The process id of a server started as a child process
    /// ([`child`](McpClientBuilder::child)), for its current connection.
    pub fn process_id(&self, server: &str) -> Option<u32> {
        lock(&self.inner.server(server)?.link)
            .as_ref()
            .and_then(|l| l.pid)
    }

    /// Whether the server's current connection is open (`None` for no such server). A
    /// closed one is made again by the next probe of one of its tools (or
    /// [`check`](Self::check), [`reconnect`](Self::reconnect)).
    pub fn is_connected(&self, server: &str) -> Option<bool> {
        Some(!self.inner.server(server)?.needs_reconnect())
    }

    /// How many connections to the server were made so far: 1 after
    /// [`build`](McpClientBuilder::build), one more per reconnect.
    pub fn connections(&self, server: &str) -> Option<u64> {
        Some(
            self.inner
                .server(server)?
                .connections
                .load(Ordering::Acquire),
        )
    }

    /// Calls `name` with `arguments` through the guarded path (see the [module](super)):
    /// the same as [`ToolDispatch::dispatch`].
    pub async fn call(&self, name: &str, arguments: Value) -> Reply {
        self.inner.dispatch(name, arguments).await
    }

    /// One health pass over every server (R10.1, B10), for agents that call only the tools
    /// they are offered and so never probe a down server by a call: a server that is down
    /// and due for its probe ([`Expeditor::server_probe_due`]) is reconnected when its
    /// connection is gone, pinged, and the result recorded
    /// ([`Expeditor::record_server_probe`]: reached, its tools are CLOSED at once); a
    /// server that is up and whose last check is older than the health TTL is pinged.
    /// Nothing here is charged to the budget. Returns the servers brought back up.
    ///
    /// Run it between the agent's steps, or let the client run it in the background
    /// ([`check_every`](McpClientBuilder::check_every)). A down server is due by the
    /// policy — with [`ProbeUnit::Steps`](crate::policy::ProbeUnit::Steps) after that many
    /// steps ([`Expeditor::advance_step`]), with the default
    /// [`ProbeUnit::Attempts`](crate::policy::ProbeUnit::Attempts) after that many refused
    /// calls of its tools — and in any case once per health TTL
    /// ([`Expeditor::server_probe_due_within`]), so that a client whose callers call only
    /// what they are offered and advance no step (an `McpServer` proxy) still brings it back.
    pub async fn check(&self) -> Vec<String> {
        self.inner.check().await
    }

    /// Makes a new connection to `server` now (a child process is spawned again) and lists
    /// its tools again; the breakers are not touched (a probe, or [`check`](Self::check),
    /// brings a down server's tools back).
    ///
    /// # Errors
    /// [`McpClientError::UnknownServer`], or [`McpClientError::Connect`] when connecting
    /// failed (the old connection is kept).
    pub async fn reconnect(&self, server: &str) -> Result<(), McpClientError> {
        let found = self
            .inner
            .server(server)
            .ok_or_else(|| McpClientError::UnknownServer(server.to_owned()))?;
        let tools = {
            let _one = found.reconnecting.lock().await;
            found.connect(self.inner.connect_timeout).await
        };
        let tools = tools.map_err(|message| McpClientError::Connect {
            server: server.to_owned(),
            message,
        })?;
        self.inner.adopt(found, &tools);
        Ok(())
    }

    /// Closes every connection (child processes are asked to exit, then killed). Calls
    /// made after it find the servers unreachable.
    pub async fn shutdown(&self) {
        for server in &self.inner.servers {
            let link = lock(&server.link).take();
            if let Some(mut link) = link {
                let _ = link.running.close().await;
            }
        }
    }
}

impl ToolDispatch for McpClient {
    /// Every tool the servers list now, as their `tools/list` gave them (name, description,
    /// input schema), in the builder's order of servers.
    fn definitions(&self) -> Vec<ToolDefinition> {
        let tools = self.inner.tools();
        let mut entries: Vec<&Arc<Entry>> = tools.entries.iter().filter(|e| e.listed).collect();
        entries.sort_by_key(|e| e.server);
        entries.into_iter().map(|e| e.definition.clone()).collect()
    }

    fn expeditor(&self) -> &Expeditor {
        &self.inner.expeditor
    }

    fn dispatch<'a>(&'a self, name: &'a str, arguments: Value) -> ReplyFuture<'a> {
        Box::pin(self.inner.dispatch(name, arguments))
    }
}

// ----- the builder ----------------------------------------------------------------------------------

struct ServerConfig {
    name: String,
    connector: Connector,
    /// `network.transport` of the conventions (B12): `pipe` for a child's stdio.
    transport: Option<&'static str>,
}

type Configure = Box<dyn FnOnce(ExpeditorBuilder) -> ExpeditorBuilder + Send>;

/// Builds an [`McpClient`]: the servers, the overlay, the policy, deadlines. Made by
/// [`McpClient::builder`].
#[must_use = "a builder does nothing until it is built"]
pub struct McpClientBuilder {
    servers: Vec<ServerConfig>,
    overlay: Option<CapabilityMap>,
    policy: Option<Policy>,
    configure: Vec<Configure>,
    deadline: Duration,
    deadlines: Vec<(String, Duration)>,
    health_ttl: Duration,
    ping_timeout: Duration,
    connect_timeout: Duration,
    qualify: Option<String>,
    check_every: Option<Duration>,
}

impl Default for McpClientBuilder {
    fn default() -> Self {
        McpClientBuilder {
            servers: Vec::new(),
            overlay: None,
            policy: None,
            configure: Vec::new(),
            deadline: DEFAULT_DEADLINE,
            deadlines: Vec::new(),
            health_ttl: DEFAULT_HEALTH_TTL,
            ping_timeout: DEFAULT_PING_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            qualify: None,
            check_every: None,
        }
    }
}

impl fmt::Debug for McpClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClientBuilder")
            .field(
                "servers",
                &self.servers.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .field("overlay", &self.overlay)
            .field("policy", &self.policy)
            .field("deadline", &self.deadline)
            .field("deadlines", &self.deadlines)
            .field("health_ttl", &self.health_ttl)
            .field("qualify", &self.qualify)
            .finish_non_exhaustive()
    }
}

impl McpClientBuilder {
    /// A server started as a child process and spoken to over its stdin and stdout (its
    /// stderr is inherited; the command's own stdio settings are not used). The command's
    /// program, arguments, environment changes and working directory are kept, so that a
    /// reconnect spawns it again. [`McpClient::process_id`] gives its pid.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), agent_circuit_breaker::mcp::McpClientError> {
    /// use agent_circuit_breaker::mcp::McpClient;
    /// use std::process::Command;
    ///
    /// let tools = McpClient::builder()
    ///     .child("files", Command::new("mcp-files").args(["--root", "."]))
    ///     .build()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn child(mut self, name: impl Into<String>, command: impl ServerCommand) -> Self {
        let command = Spawn::of(command.as_std_command());
        let connector: Connector = Arc::new(move |handler: Handler| {
            let command = command.clone();
            Box::pin(async move {
                let transport = TokioChildProcess::new(command.command())
                    .map_err(|e| format!("could not start {}: {e}", command.program.display()))?;
                let pid = transport.id();
                let running = handler
                    .serve(transport)
                    .await
                    .map_err(|e| format!("initialize failed: {e}"))?;
                Ok(Connected { running, pid })
            }) as ConnectFuture
        });
        self.servers.push(ServerConfig {
            name: name.into(),
            connector,
            transport: Some("pipe"),
        });
        self
    }

    /// A server reached through any rmcp transport: `factory` makes a new one each time it
    /// is called — when the client is built, and again on every reconnect. Anything rmcp
    /// takes as a client transport will do: a `TokioChildProcess`, a TCP or Unix stream, one
    /// end of `tokio::io::duplex` (an in-process server), a streamable-HTTP client.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), agent_circuit_breaker::mcp::McpClientError> {
    /// use agent_circuit_breaker::mcp::McpClient;
    ///
    /// let tools = McpClient::builder()
    ///     .connect("search", || async {
    ///         tokio::net::TcpStream::connect("127.0.0.1:7001").await
    ///     })
    ///     .build()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn connect<F, Fut, T, E, A, X>(mut self, name: impl Into<String>, factory: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, X>> + Send + 'static,
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
        X: fmt::Display,
        A: 'static,
    {
        let connector: Connector = Arc::new(move |handler: Handler| {
            let transport = factory();
            Box::pin(async move {
                let transport = transport
                    .await
                    .map_err(|e| format!("the transport could not be made: {e}"))?;
                let running = handler
                    .serve(transport)
                    .await
                    .map_err(|e| format!("initialize failed: {e}"))?;
                Ok(Connected { running, pid: None })
            }) as ConnectFuture
        });
        self.servers.push(ServerConfig {
            name: name.into(),
            connector,
            transport: None,
        });
        self
    }

    /// What the servers' listings do not say (B6): per tool, by the name the model calls it,
    /// what it provides, its alternatives (tools on other servers too), their degradations,
    /// its fallback, threshold, probe interval, and whether it caches. An empty `provides`
    /// or `fallback` and an empty list of alternatives keep what the listing gave. Load it
    /// from the source document's YAML shape with any serde format. A tool the overlay names that no
    /// server lists is an error of [`build`](Self::build), with "did you mean".
    pub fn overlay(mut self, map: CapabilityMap) -> Self {
        self.overlay = Some(map);
        self
    }

    /// The policy (default: [`Policy::default`]).
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Anything else of the expeditor: its clock, its observers.
    ///
    /// ```no_run
    /// # fn demo(builder: agent_circuit_breaker::mcp::McpClientBuilder) {
    /// let builder = builder.expeditor(|b| b.observer(|event: &agent_circuit_breaker::event::Event| {
    ///     eprintln!("{event}");
    /// }));
    /// # }
    /// ```
    pub fn expeditor(
        mut self,
        configure: impl FnOnce(ExpeditorBuilder) -> ExpeditorBuilder + Send + 'static,
    ) -> Self {
        self.configure.push(Box::new(configure));
        self
    }

    /// The deadline of every call (default [`DEFAULT_DEADLINE`], 30 s): a call that has not
    /// answered by then fails with the category timeout, a failure of the tool (the server
    /// is told the request is abandoned).
    ///
    /// A tool's own `timeout` in the overlay (`timeout: 2s`, B13) takes precedence over this
    /// and over [`deadline_for`](Self::deadline_for): the tool knows best how long it may
    /// take. These deadlines run on tokio's timer, the client's runtime, not on the
    /// expeditor's clock.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// The deadline of the calls to one server's tools, instead of [`deadline`](Self::deadline).
    pub fn deadline_for(mut self, server: impl Into<String>, deadline: Duration) -> Self {
        self.deadlines.push((server.into(), deadline));
        self
    }

    /// How long a server's health check (`ping`) is trusted (default
    /// [`DEFAULT_HEALTH_TTL`], 10 s): a call after that checks again first. A check that
    /// failed also stands this long: within it the server's probes are refused without
    /// connecting again, so a dead server is not respawned on every call.
    pub fn health_ttl(mut self, ttl: Duration) -> Self {
        self.health_ttl = ttl;
        self
    }

    /// How long a `ping` may take (default [`DEFAULT_PING_TIMEOUT`], 5 s; never more than
    /// the server's deadline).
    pub fn ping_timeout(mut self, timeout: Duration) -> Self {
        self.ping_timeout = timeout;
        self
    }

    /// How long connecting to a server may take: starting it, `initialize` (default
    /// [`DEFAULT_CONNECT_TIMEOUT`], 30 s). Listing its tools has the call deadline.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Names every tool `<server><separator><tool>` (`files.read_file` with `"."`), so that
    /// servers listing the same tool name can be used together; without it, such names are
    /// an error of [`build`](Self::build). The overlay uses these names too; a call sends
    /// the server its own name. Model APIs that allow only `[a-zA-Z0-9_-]` in tool names
    /// want `"__"` or `"_"` rather than `"."`.
    pub fn qualify_names(mut self, separator: impl Into<String>) -> Self {
        self.qualify = Some(separator.into());
        self
    }

    /// Runs [`McpClient::check`] in the background every `interval` while the client lives
    /// (off by default): down servers are probed by their health check when due, so their
    /// tools come back to the offer without a call (an [`McpServer`](super::McpServer)
    /// proxy's clients are then told `list_changed`). Needs a Tokio runtime at
    /// [`build`](Self::build).
    pub fn check_every(mut self, interval: Duration) -> Self {
        self.check_every = Some(interval);
        self
    }

    fn check_config(&self) -> Result<(), McpClientError> {
        if self.servers.is_empty() {
            return Err(McpClientError::Config(
                "no MCP server: add one with child(..) or connect(..)".to_owned(),
            ));
        }
        let mut problems = Vec::new();
        for (i, server) in self.servers.iter().enumerate() {
            if server.name.trim().is_empty() {
                problems.push(format!("server #{} has an empty name", i + 1));
            } else if self.servers[..i].iter().any(|s| s.name == server.name) {
                problems.push(format!("server `{}` is given twice", server.name));
            }
        }
        for (server, _) in &self.deadlines {
            if !self.servers.iter().any(|s| s.name == *server) {
                let names = self.servers.iter().map(|s| s.name.as_str());
                let mut problem = format!("deadline_for names `{server}`, which is no server");
                if let Some(s) = did_you_mean(server, names) {
                    let _ = write!(problem, "; did you mean `{s}`?");
                }
                problems.push(problem);
            }
        }
        if self.deadline.is_zero() || self.deadlines.iter().any(|(_, d)| d.is_zero()) {
            problems.push("a deadline of zero".to_owned());
        }
        let unknown: Vec<OverlayProblem> = self
            .overlay
            .iter()
            .flat_map(CapabilityMap::servers)
            .filter(|s| !self.servers.iter().any(|c| c.name == s.name()))
            .map(|s| OverlayProblem::UnknownServer {
                server: s.name().to_owned(),
                suggestion: did_you_mean(s.name(), self.servers.iter().map(|c| c.name.as_str()))
                    .map(str::to_owned),
            })
            .collect();
        if problems.is_empty() && !unknown.is_empty() {
            return Err(McpClientError::Overlay(unknown));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(McpClientError::Config(problems.join("; ")))
        }
    }

    /// Connects every server (at once), lists their tools, applies the overlay and builds
    /// the expeditor over the run-time map: every listed tool on its server, what it
    /// provides from the first line of its description (or "capability of server X"), a
    /// fallback naming the server; then what the overlay says.
    ///
    /// # Errors
    /// [`McpClientError`]: the configuration, a server that could not be connected (every
    /// connection made is closed again), tool names listed by two servers, the overlay's
    /// problems (all of them), or the map's (R1.4).
    pub async fn build(self) -> Result<McpClient, McpClientError> {
        self.check_config()?;
        let servers: Vec<Arc<Server>> = self
            .servers
            .into_iter()
            .enumerate()
            .map(|(index, config)| {
                let deadline = self
                    .deadlines
                    .iter()
                    .rev()
                    .find(|(s, _)| *s == config.name)
                    .map_or(self.deadline, |(_, d)| *d);
                let caller_errors = self
                    .overlay
                    .as_ref()
                    .and_then(|o| o.servers().iter().rfind(|s| s.name() == config.name))
                    .and_then(ServerSpec::caller_categories)
                    .map_or_else(|| DEFAULT_CALLER_ERRORS.to_vec(), <[_]>::to_vec);
                Arc::new(Server {
                    name: config.name,
                    index,
                    deadline,
                    connector: config.connector,
                    transport: config.transport,
                    link: Mutex::new(None),
                    reconnecting: tokio::sync::Mutex::new(()),
                    health: Mutex::new(None),
                    connections: AtomicU64::new(0),
                    client: OnceLock::new(),
                    caller_errors,
                })
            })
            .collect();
        let listings = connect_all(&servers, self.connect_timeout, self.qualify.as_deref()).await?;
        let mut specs = run_time_map(&servers, listings, self.overlay.as_ref())?;
        let map = specs
            .iter()
            .fold(CapabilityMap::new(), |map, (_, _, spec)| {
                map.tool(spec.clone())
            });
        let mut builder = Expeditor::builder(map);
        if let Some(policy) = self.policy {
            builder = builder.policy(policy);
        }
        for configure in self.configure {
            builder = configure(builder);
        }
        let expeditor = builder.build().map_err(McpClientError::Map)?;

        let mut table = Tools::default();
        for (server, tool, _) in specs.drain(..) {
            let Some(id) = expeditor.tool(&tool.name) else {
                continue;
            };
            table.by_name.insert(tool.name.clone(), table.entries.len());
            table.entries.push(Arc::new(Entry {
                id,
                server,
                remote: tool.remote,
                definition: tool.definition,
                listed: true,
            }));
        }
        let inner = Arc::new(Inner {
            expeditor,
            servers: servers.into_boxed_slice(),
            tools: RwLock::new(table),
            qualify: self.qualify,
            health_ttl: self.health_ttl,
            ping_timeout: self.ping_timeout,
            connect_timeout: self.connect_timeout,
        });
        for server in &inner.servers {
            let _ = server.client.set(Arc::downgrade(&inner));
            // Connected, initialized and listed: the server's first health check passed.
            server.set_health(None);
            inner
                .expeditor
                .record_server_check(&server.name, Availability::Available);
        }
        if let Some(interval) = self.check_every {
            // Checked in the background: a long-running client, healing by time (B15).
            inner.expeditor.run_as_service();
            spawn_checks(Arc::downgrade(&inner), interval);
        }
        Ok(McpClient { inner })
    }
}

/// Connects every server at once; their listings, in the builder's order.
async fn connect_all(
    servers: &[Arc<Server>],
    timeout: Duration,
    qualify: Option<&str>,
) -> Result<Vec<Vec<Listed>>, McpClientError> {
    let tasks: Vec<_> = servers
        .iter()
        .map(|server| {
            let server = Arc::clone(server);
            tokio::spawn(async move { server.connect(timeout).await })
        })
        .collect();
    let mut listings = Vec::with_capacity(servers.len());
    let mut failed = None;
    for (server, task) in servers.iter().zip(tasks) {
        let result = task
            .await
            .unwrap_or_else(|e| Err(format!("connecting panicked: {e}")));
        match result {
            Ok(tools) => listings.push(listed_tools(qualify, &server.name, &tools)),
            Err(message) => {
                failed.get_or_insert(McpClientError::Connect {
                    server: server.name.clone(),
                    message,
                });
            }
        }
    }
    match failed {
        Some(error) => Err(error),
        None => Ok(listings),
    }
}

/// The run-time map (B6): every listed tool with its default spec, then the overlay.
fn run_time_map(
    servers: &[Arc<Server>],
    listings: Vec<Vec<Listed>>,
    overlay: Option<&CapabilityMap>,
) -> Result<Vec<(usize, Listed, ToolSpec)>, McpClientError> {
    let mut owners: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut order = Vec::new();
    for (index, listing) in listings.iter().enumerate() {
        for tool in listing {
            let owners = owners.entry(tool.name.as_str()).or_default();
            if owners.is_empty() {
                order.push(tool.name.as_str());
            }
            owners.push(index);
        }
    }
    let duplicates: Vec<DuplicateTool> = order
        .iter()
        .filter(|name| owners[**name].len() > 1)
        .map(|name| DuplicateTool {
            tool: (*name).to_owned(),
            servers: owners[*name]
                .iter()
                .map(|&i| servers[i].name.clone())
                .collect(),
        })
        .collect();
    if !duplicates.is_empty() {
        return Err(McpClientError::DuplicateTools(duplicates));
    }
    let names: Vec<String> = order.iter().map(|n| (*n).to_owned()).collect();
    let mut specs: Vec<(usize, Listed, ToolSpec)> = listings
        .into_iter()
        .enumerate()
        .flat_map(|(index, listing)| {
            let server = servers[index].name.clone();
            listing.into_iter().map(move |tool| {
                let spec = default_spec(&tool.name, &server, &tool.definition.description);
                (index, tool, spec)
            })
        })
        .collect();
    let Some(overlay) = overlay else {
        return Ok(specs);
    };
    let mut problems = Vec::new();
    for wanted in overlay.tools() {
        let Some((index, _, spec)) = specs.iter_mut().find(|(_, t, _)| t.name == wanted.name())
        else {
            problems.push(OverlayProblem::UnknownTool {
                tool: wanted.name().to_owned(),
                suggestion: did_you_mean(wanted.name(), names.iter().map(String::as_str))
                    .map(str::to_owned),
            });
            continue;
        };
        let listed_by = &servers[*index].name;
        if let Some(overlay_server) = wanted.server()
            && overlay_server != listed_by
        {
            problems.push(OverlayProblem::WrongServer {
                tool: wanted.name().to_owned(),
                listed_by: listed_by.clone(),
                overlay: overlay_server.to_owned(),
            });
            continue;
        }
        *spec = merge(spec, wanted);
    }
    if problems.is_empty() {
        Ok(specs)
    } else {
        Err(McpClientError::Overlay(problems))
    }
}

/// The background health pass of [`McpClientBuilder::check_every`]: ends with the client.
fn spawn_checks(client: Weak<Inner>, interval: Duration) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(interval).await;
            let Some(inner) = client.upgrade() else {
                break;
            };
            inner.check().await;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn retry_hints_are_read_bounded_and_never_trusted_raw() {
        let hint = |data: Value| retry_hint(&data);
        assert_eq!(
            hint(json!({ "retryAfter": 120 })),
            Some(Duration::from_mins(2))
        );
        assert_eq!(
            hint(json!({ "retry_after": "30" })),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            hint(json!({ "retryAfterMs": 1500 })),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            hint(json!({ "retryAfter": 2.5 })),
            Some(Duration::from_millis(2500))
        );
        for junk in [
            json!({ "retryAfter": -5 }),
            json!({ "retryAfter": "soon" }),
            json!({ "retryAfter": "-1" }),
            json!({ "retryAfter": null }),
            json!({ "retryAfter": [1] }),
            json!({ "retry_after_ms": "1e400" }),
            json!("retryAfter"),
            json!(42),
        ] {
            assert_eq!(hint(junk.clone()), None, "{junk}");
        }
        // Absurd but readable: kept as a hint, bounded (here to a year; the policy's cap
        // bounds it far below).
        let huge = hint(json!({ "retryAfter": 1e300 })).unwrap();
        assert!(huge <= Duration::from_secs(32_000_000_000));
        let failure = with_hint(
            Failure::new("rate limited"),
            Some(&json!({ "retryAfter": 1e300 })),
        );
        assert!(failure.retry_after().is_some());
    }

    /// B13: the overlay's `timeout` reaches the run-time map (the call then uses it instead
    /// of the server's deadline); one it could not read is kept, for validation to report.
    #[test]
    fn b13_the_overlays_timeout_wins_and_a_bad_one_is_reported() {
        let base = default_spec("search", "docs", "Searches the docs.");
        let overlay_with = |timeout: &str| -> CapabilityMap {
            serde_json::from_str(&format!(
                r#"{{"capability_map": [{{"tool": "search", "timeout": "{timeout}"}}]}}"#
            ))
            .unwrap()
        };
        let overlay = overlay_with("2s");
        let merged = merge(&base, &overlay.tools()[0]);
        assert_eq!(merged.timeout(), Some(Duration::from_secs(2)));
        assert_eq!(merged.server(), Some("docs"));
        assert_eq!(
            merge(&base, &ToolSpec::new("search").build()).timeout(),
            None
        );

        let overlay = overlay_with("soon");
        let merged = merge(&base, &overlay.tools()[0]);
        let errors = CapabilityMap::new().tool(merged).validate().unwrap_err();
        assert!(errors.to_string().contains("timeout `soon`"), "{errors}");
    }
}
