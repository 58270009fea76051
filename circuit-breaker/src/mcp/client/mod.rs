//! The MCP client: connected MCP servers whose tools are guarded by one expeditor (B10).
//! Documented in the [module](super) that re-exports it.
//!
//! This file holds the public [`McpClient`] and the state its clones share; the rest is
//! one concern a file: `builder` (the servers and settings, and `build`), `connect`
//! (connections, made again on reconnect), `health` (health checks and the health pass),
//! `late` (servers that did not answer when the client was built),
//! `call` (a guarded call by name), `arguments` (a model's arguments against a tool's schema), `classify` (what a call came back with), `tools` (the
//! listed tools as the client shows them), `overlay` (the run-time map and its overlay) and
//! `error`.

mod arguments;
mod builder;
mod call;
mod classify;
mod connect;
mod error;
mod health;
mod late;
mod lifecycle;
mod overlay;
mod passthrough;
mod relay;
#[cfg(feature = "mcp-http")]
mod remote;
mod tools;

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Duration;

use serde_json::Value;

use crate::FailureCategory;
use crate::dispatch::{Reply, ReplyFuture, ToolDefinition, ToolDispatch};
use crate::expeditor::Expeditor;

pub use builder::McpClientBuilder;
pub use connect::ServerCommand;
pub use error::{DuplicateTool, McpClientError, OverlayProblem};
pub use passthrough::GuardedResult;
#[doc(hidden)]
pub use relay::{Relay, RelayFuture};

use connect::Server;
use tools::{Entry, Tools};

/// The per-call deadline unless told otherwise: 30 s.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(30);
/// How long a server's health check is trusted unless told otherwise: 10 s.
pub const DEFAULT_HEALTH_TTL: Duration = Duration::from_secs(10);
/// How long a health check (`ping`, or `server/discover` on 2026-07-28) may take unless told
/// otherwise: 5 s (never more than the deadline).
pub const DEFAULT_PING_TIMEOUT: Duration = Duration::from_secs(5);
/// How long connecting (a child's start, `initialize`, `tools/list`) may take unless told
/// otherwise: 30 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The categories of a foreign server's `isError` results that are the caller's mistake
/// unless the overlay says otherwise (B14): a resource the call named that does not exist,
/// and an input the tool rejected.
pub const DEFAULT_CALLER_ERRORS: [FailureCategory; 2] =
    [FailureCategory::NotFound, FailureCategory::InvalidInput];

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn human(d: Duration) -> humantime::FormattedDuration {
    humantime::format_duration(d)
}

struct Inner {
    expeditor: Expeditor,
    servers: Box<[Arc<Server>]>,
    tools: RwLock<Tools>,
    qualify: Option<String>,
    health_ttl: Duration,
    ping_timeout: Duration,
    connect_timeout: Duration,
    /// The background health pass's interval, if it runs.
    check_every: Option<Duration>,
    /// The overlay's entries naming a tool no server listed when the client was built, while
    /// a server was not connected: applied when a server lists the tool.
    deferred: Mutex<Vec<crate::capability::ToolSpec>>,
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
    /// A builder: add servers with [`child`](McpClientBuilder::child),
    /// [`connect`](McpClientBuilder::connect) or (feature `mcp-http`) `url`, then
    /// [`build`](McpClientBuilder::build).
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

    /// The MCP revision the server's current connection speaks (`"2026-07-28"`, or
    /// `"2025-11-25"` and older with `initialize`; see the [module](super)).
    pub fn protocol_version(&self, server: &str) -> Option<String> {
        let (peer, _) = self.inner.server(server)?.peer()?;
        Some(peer.peer_info()?.protocol_version.to_string())
    }

    /// Whether the server's current connection is open (`None` for no such server). A
    /// closed one is made again by the next probe of one of its tools (or
    /// [`check`](Self::check), [`reconnect`](Self::reconnect)).
    pub fn is_connected(&self, server: &str) -> Option<bool> {
        Some(!self.inner.server(server)?.needs_reconnect())
    }

    /// The servers not connected since [`build`](McpClientBuilder::build) — an
    /// [`optional`](McpClientBuilder::optional) one that did not answer, and has not since —
    /// each with why its last attempt failed, in the builder's order. The health pass tries
    /// them again ([`check`](Self::check), [`check_every`](McpClientBuilder::check_every));
    /// once one answers, its tools join the definitions.
    pub fn unconnected(&self) -> Vec<(String, String)> {
        self.inner
            .servers
            .iter()
            .filter_map(|s| Some((s.name.clone(), s.pending_reason()?)))
            .collect()
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
    /// Nothing here is charged to the budget. A server not connected since the client was
    /// built ([`unconnected`](Self::unconnected)) is connected when its retry is due: the
    /// first after the pass's interval, each next one twice as late, up to the policy's
    /// [`cool_down_cap`](crate::policy::Policy::cool_down_cap). Returns the servers brought
    /// back up (or up for the first time).
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
        lifecycle::refresh_in_background(&self.inner);
        let tools = self.inner.tools();
        let mut entries: Vec<&Arc<Entry>> = tools.entries.iter().filter(|e| e.listed).collect();
        entries.sort_by_key(|e| e.server);
        entries.into_iter().map(|e| e.definition.clone()).collect()
    }

    fn definitions_version(&self) -> Option<u64> {
        Some(self.inner.tools().version)
    }

    fn expeditor(&self) -> &Expeditor {
        &self.inner.expeditor
    }

    fn dispatch<'a>(&'a self, name: &'a str, arguments: Value) -> ReplyFuture<'a> {
        Box::pin(self.inner.dispatch(name, arguments))
    }
}
