//! Connections to servers: a connector per server, called again on every reconnect (a child
//! process spawned again, or any rmcp transport made again), the live link it gives, and
//! the notifications a server sends on it.

use std::ffi::OsString;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, Tool};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientCacheConfig, ClientHandler, Peer, RoleClient};

use super::health::Health;
use super::late::Pending;
use super::lifecycle::{Listing, listen_for_changes};
use super::relay::{Relay, Relayed};
use super::tools::{Listed, listed_tools};
use super::{Inner, human, lock};
use crate::{Failure, FailureCategory};

/// A new connection made: the running service and, for a child process, its pid.
pub(super) struct Connected {
    pub(super) running: RunningService<RoleClient, Relayed>,
    pub(super) pid: Option<u32>,
}

pub(super) type ConnectFuture = Pin<Box<dyn Future<Output = Result<Connected, String>> + Send>>;
/// Makes a new connection to one server, each time it is called (reconnects too).
pub(super) type Connector = Arc<dyn Fn(Relayed) -> ConnectFuture + Send + Sync>;

/// A command a server is started with ([`McpClientBuilder::child`](super::McpClientBuilder::child)): a
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
pub(super) struct Spawn {
    pub(super) program: OsString,
    args: Vec<OsString>,
    envs: Vec<(OsString, Option<OsString>)>,
    dir: Option<PathBuf>,
}

impl Spawn {
    pub(super) fn of(command: &std::process::Command) -> Self {
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

    pub(super) fn command(&self) -> tokio::process::Command {
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
pub(super) struct Handler {
    server: Weak<Server>,
    /// Start with discovery (2026-07-28), else with `initialize`.
    pub(super) modern: bool,
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
        client.relist(&server, &context.peer).await;
    }
}

/// The live connection to a server.
pub(super) struct Link {
    /// Owned here: dropping it ends the connection (and kills a child process).
    pub(super) running: RunningService<RoleClient, Relayed>,
    peer: Peer<RoleClient>,
    pub(super) pid: Option<u32>,
    generation: u64,
    /// A call or ping failed to reach the server on this connection.
    broken: bool,
}

/// One connected server.
pub(super) struct Server {
    pub(super) name: String,
    pub(super) index: usize,
    pub(super) deadline: Duration,
    pub(super) connector: Connector,
    /// `network.transport` (B12), when known.
    pub(super) transport: Option<&'static str>,
    pub(super) link: Mutex<Option<Link>>,
    /// One reconnect at a time.
    pub(super) reconnecting: tokio::sync::Mutex<()>,
    pub(super) health: Mutex<Option<Health>>,
    pub(super) connections: AtomicU64,
    /// The client, once built (the notifications of a connection made before it are not
    /// needed: the tools are listed right after connecting).
    pub(super) client: OnceLock<Weak<Inner>>,
    /// The categories of its tools' `isError` results that are the caller's mistake, unless
    /// a tool's overlay says otherwise (B14).
    pub(super) caller_errors: Vec<FailureCategory>,
    /// Where what the server sends besides tool changes goes, if anywhere.
    pub(super) relay: Option<Arc<dyn Relay>>,
    /// How its connections start, and until when its tool list is fresh (B17, R6).
    pub(super) listing: Listing,
    /// Not connected since the client was built (an optional server that did not answer):
    /// why, and when to try again.
    pub(super) pending: Mutex<Option<Pending>>,
}

impl Server {
    /// The peer to call now and its connection's generation.
    pub(super) fn peer(&self) -> Option<(Peer<RoleClient>, u64)> {
        lock(&self.link)
            .as_ref()
            .map(|l| (l.peer.clone(), l.generation))
    }

    pub(super) fn generation(&self) -> u64 {
        lock(&self.link).as_ref().map_or(0, |l| l.generation)
    }

    /// Whether a probe must reconnect first: no connection, its transport closed, or a call
    /// on it could not reach the server.
    pub(super) fn needs_reconnect(&self) -> bool {
        lock(&self.link)
            .as_ref()
            .is_none_or(|l| l.broken || l.peer.is_transport_closed())
    }

    pub(super) fn mark_broken(&self, generation: u64) {
        if let Some(link) = lock(&self.link).as_mut()
            && link.generation == generation
        {
            link.broken = true;
        }
    }

    /// Makes a new connection through the connector, disables rmcp's response cache (a
    /// health check must not be answered from it), lists the tools and makes it the live
    /// one. The old connection, if any, is dropped.
    pub(super) async fn connect(self: &Arc<Self>, timeout: Duration) -> Result<Vec<Tool>, String> {
        let start = |modern| {
            let handler = Relayed::new(
                Handler {
                    server: Arc::downgrade(self),
                    modern,
                },
                self.relay.clone().map(|relay| (self.name.clone(), relay)),
            );
            tokio::time::timeout(timeout, (self.connector)(handler))
        };
        let modern = self.starts_modern();
        let connected = match start(modern).await {
            Err(_) => return Err(format!("no answer to initialize within {}", human(timeout))),
            Ok(Ok(connected)) => connected,
            // A server that closed a connection begun with discovery: once more with
            // `initialize`, the only start older servers know.
            Ok(Err(error)) if modern => match start(false).await {
                Ok(Ok(connected)) => {
                    tracing::debug!(server = %self.name, %error, "started with initialize after discovery failed");
                    self.start_legacy();
                    connected
                }
                Ok(Err(_)) => return Err(error),
                Err(_) => {
                    return Err(format!("no answer to initialize within {}", human(timeout)));
                }
            },
            Ok(Err(error)) => return Err(error),
        };
        let peer = connected.running.peer().clone();
        peer.set_response_cache_config(ClientCacheConfig::disabled())
            .await;
        let has_tools = peer
            .peer_info()
            .is_none_or(|info| info.capabilities.tools.is_some());
        let tools = if has_tools {
            self.list_tools_on(&peer, self.deadline).await?
        } else {
            Vec::new()
        };
        let generation = self.connections.fetch_add(1, Ordering::AcqRel) + 1;
        let old = lock(&self.link).replace(Link {
            running: connected.running,
            peer: peer.clone(),
            pid: connected.pid,
            generation,
            broken: false,
        });
        drop(old);
        *lock(&self.pending) = None;
        listen_for_changes(self, &peer, generation);
        Ok(tools)
    }

    pub(super) fn unreachable(&self, why: &str) -> Failure {
        Failure::with_category(
            format!("MCP server {} cannot be reached: {why}", self.name),
            FailureCategory::Network,
        )
        .server_unreachable()
    }
}

impl Inner {
    /// Reconnects `server` through its connector and lists its tools again; nothing is
    /// recorded in the breakers. Another task's reconnect in the meantime is enough.
    pub(super) async fn reconnect(&self, server: &Arc<Server>) -> Result<(), String> {
        let seen = server.generation();
        let _one = server.reconnecting.lock().await;
        if server.generation() != seen && !server.needs_reconnect() {
            return Ok(());
        }
        let tools = server.connect(self.connect_timeout).await?;
        self.adopt(server, &tools);
        Ok(())
    }
}

/// Connects every server at once; each one's listing or why it could not be connected, in
/// the builder's order.
pub(super) async fn connect_all(
    servers: &[Arc<Server>],
    timeout: Duration,
    qualify: Option<&str>,
) -> Vec<Result<Vec<Listed>, String>> {
    let tasks: Vec<_> = servers
        .iter()
        .map(|server| {
            let server = Arc::clone(server);
            tokio::spawn(async move { server.connect(timeout).await })
        })
        .collect();
    let mut listings = Vec::with_capacity(servers.len());
    for (server, task) in servers.iter().zip(tasks) {
        let result = task
            .await
            .unwrap_or_else(|e| Err(format!("connecting panicked: {e}")));
        listings.push(result.map(|tools| listed_tools(qualify, &server.name, &tools)));
    }
    listings
}
