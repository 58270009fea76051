//! [`McpClientBuilder`]: the servers (child processes or any rmcp transport), the overlay,
//! the policy and the deadlines; `build` connects every server and builds the expeditor
//! over the run-time map.

use std::fmt::{self, Write as _};
use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::transport::{IntoTransport, TokioChildProcess};

use super::connect::{
    ConnectFuture, Connected, Connector, Server, ServerCommand, Spawn, connect_all,
};
use super::health::spawn_checks;
use super::late::Pending;
use super::lifecycle::Listing;
use super::overlay::run_time_map;
use super::relay::{Relay, Relayed};
use super::tools::{Entry, Listed, Tools};
use super::{
    DEFAULT_CALLER_ERRORS, DEFAULT_CONNECT_TIMEOUT, DEFAULT_DEADLINE, DEFAULT_HEALTH_TTL,
    DEFAULT_PING_TIMEOUT, Inner, McpClient, McpClientError, OverlayProblem, lock,
};
use crate::Availability;
use crate::Policy;
use crate::capability::{CapabilityMap, MapError, MapErrors, ServerSpec, did_you_mean};
use crate::expeditor::{Expeditor, ExpeditorBuilder};

struct ServerConfig {
    name: String,
    connector: Connector,
    /// `network.transport` of the conventions (B12): `pipe` for a child's stdio.
    transport: Option<&'static str>,
    /// What is wrong with how the server was given (a URL that is none), reported by `build`.
    problem: Option<String>,
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
    relay: Option<Arc<dyn Relay>>,
    initialize_only: Vec<String>,
    optional: Vec<String>,
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
            relay: None,
            initialize_only: Vec::new(),
            optional: Vec::new(),
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
        let connector: Connector = Arc::new(move |handler: Relayed| {
            let command = command.clone();
            Box::pin(async move {
                let transport = TokioChildProcess::new(command.command())
                    .map_err(|e| format!("could not start {}: {e}", command.program.display()))?;
                let pid = transport.id();
                let running = handler
                    .start(transport)
                    .await
                    .map_err(|e| format!("initialize failed: {e}"))?;
                Ok(Connected { running, pid })
            }) as ConnectFuture
        });
        self.servers.push(ServerConfig {
            name: name.into(),
            connector,
            transport: Some("pipe"),
            problem: None,
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
        let connector: Connector = Arc::new(move |handler: Relayed| {
            let transport = factory();
            Box::pin(async move {
                let transport = transport
                    .await
                    .map_err(|e| format!("the transport could not be made: {e}"))?;
                let running = handler
                    .start(transport)
                    .await
                    .map_err(|e| format!("initialize failed: {e}"))?;
                Ok(Connected { running, pid: None })
            }) as ConnectFuture
        });
        self.servers.push(ServerConfig {
            name: name.into(),
            connector,
            transport: None,
            problem: None,
        });
        self
    }

    /// A remote server reached over streamable HTTP at `url` (feature `mcp-http`), as
    /// [`url_with`](Self::url_with) with no header of its own.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), agent_circuit_breaker::mcp::McpClientError> {
    /// use agent_circuit_breaker::mcp::McpClient;
    ///
    /// let tools = McpClient::builder()
    ///     .url("search", "https://search.example.com/mcp")
    ///     .build()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "mcp-http")]
    pub fn url(self, name: impl Into<String>, url: impl Into<String>) -> Self {
        self.url_with(name, url, std::iter::empty::<(String, String)>())
    }

    /// A remote server reached over streamable HTTP at `url` (`http://` or `https://`;
    /// feature `mcp-http`), with `headers` sent on every request — `Authorization: Bearer
    /// ...`, an API key. Its calls, deadlines, health checks and outages are those of any
    /// other server: a connection refused or cut is the server unreachable (its tools open
    /// as one `ServerDown`), and a reconnect opens a new MCP session. TLS is rustls with the
    /// platform's certificate verifier.
    ///
    /// A URL that is none, or a header that is no HTTP header or one the transport sets
    /// itself (`Accept`, `Content-Type`, `Mcp-Session-Id`, ...), is an error of
    /// [`build`](Self::build).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), agent_circuit_breaker::mcp::McpClientError> {
    /// use agent_circuit_breaker::mcp::McpClient;
    ///
    /// let token = std::env::var("SEARCH_TOKEN").unwrap_or_default();
    /// let tools = McpClient::builder()
    ///     .url_with(
    ///         "search",
    ///         "https://search.example.com/mcp",
    ///         [("Authorization", format!("Bearer {token}"))],
    ///     )
    ///     .build()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "mcp-http")]
    pub fn url_with<K, V>(
        mut self,
        name: impl Into<String>,
        url: impl Into<String>,
        headers: impl IntoIterator<Item = (K, V)>,
    ) -> Self
    where
        K: Into<String>,
        V: Into<String>,
    {
        let headers = headers
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        let (connector, problem) = match super::remote::connector(&url.into(), headers) {
            Ok(connector) => (connector, None),
            Err(problem) => {
                let never: Connector = Arc::new(|_| {
                    Box::pin(async { Err("not configured".to_owned()) }) as ConnectFuture
                });
                (never, Some(problem))
            }
        };
        self.servers.push(ServerConfig {
            name: name.into(),
            connector,
            transport: Some("tcp"),
            problem,
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

    /// Connections to `server` start with `initialize` (protocol 2025-11-25 and older), never
    /// with `server/discover`. For a server whose tools ask their client for sampling,
    /// elicitation or roots in the middle of a call: 2026-07-28 forbids a server's requests
    /// to its client, so on that revision those tools would fail.
    pub fn initialize_only(mut self, server: impl Into<String>) -> Self {
        self.initialize_only.push(server.into());
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
    /// tools come back to the offer without a call (an [`McpServer`](crate::mcp::McpServer)
    /// proxy's clients are then told `list_changed`). Needs a Tokio runtime at
    /// [`build`](Self::build).
    pub fn check_every(mut self, interval: Duration) -> Self {
        self.check_every = Some(interval);
        self
    }

    /// Lets `server` be down when the client is built: if it cannot be started or connected
    /// (a command not found, a process that exits or speaks no MCP, no answer to
    /// `initialize`, a URL refusing connections), [`build`](Self::build) succeeds with the
    /// other servers and this one is down from the start ([`McpClient::unconnected`]). The
    /// health pass ([`check`](McpClient::check), [`check_every`](Self::check_every)) tries it
    /// again with a backoff; once it answers, its tools join the definitions (an
    /// [`McpServer`](crate::mcp::McpServer) proxy's clients are told `list_changed`), with
    /// what the overlay says of them. Overlay entries naming tools no server lists are then
    /// no error of `build`: they wait for a server to list them, and are logged as warnings
    /// once every server has been connected. An alternative naming a tool of such a server
    /// is not routed to (its tool was unknown when the map was made).
    ///
    /// Every server is required unless made optional: one that fails makes `build` fail.
    pub fn optional(mut self, server: impl Into<String>) -> Self {
        self.optional.push(server.into());
        self
    }

    /// Hands what the servers send besides tool changes (sampling, elicitation and roots
    /// requests, log messages, progress, resource and prompt changes) to `relay`, and tells
    /// the servers the client supports what the relay's capabilities say. Without one,
    /// requests other than `ping` are answered "method not found" and notifications dropped.
    #[doc(hidden)]
    pub fn relay(mut self, relay: Arc<dyn Relay>) -> Self {
        self.relay = Some(relay);
        self
    }

    fn check_config(&self) -> Result<(), McpClientError> {
        if self.servers.is_empty() {
            return Err(McpClientError::Config(
                "no MCP server: add one with child(..), url(..) or connect(..)".to_owned(),
            ));
        }
        let mut problems = Vec::new();
        for (i, server) in self.servers.iter().enumerate() {
            if server.name.trim().is_empty() {
                problems.push(format!("server #{} has an empty name", i + 1));
            } else if self.servers[..i].iter().any(|s| s.name == server.name) {
                problems.push(format!("server `{}` is given twice", server.name));
            }
            if let Some(problem) = &server.problem {
                problems.push(format!("server `{}`: {problem}", server.name));
            }
        }
        let settings = self.deadlines.iter().map(|(s, _)| ("deadline_for", s));
        let settings = settings.chain(self.optional.iter().map(|s| ("optional", s)));
        let settings = settings.chain(self.initialize_only.iter().map(|s| ("initialize_only", s)));
        for (setting, server) in settings {
            if !self.servers.iter().any(|s| s.name == *server) {
                let names = self.servers.iter().map(|s| s.name.as_str());
                let mut problem = format!("{setting} names `{server}`, which is no server");
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
                let listing = Listing::starting(!self.initialize_only.contains(&config.name));
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
                    relay: self.relay.clone(),
                    listing,
                    pending: Mutex::new(None),
                })
            })
            .collect();
        let first_retry = self.check_every.unwrap_or(self.health_ttl);
        let qualify = self.qualify.as_deref();
        let results = connect_all(&servers, self.connect_timeout, qualify).await;
        let listings = first_listings(&servers, results, &self.optional, first_retry)?;
        let deferring = servers.iter().any(|s| lock(&s.pending).is_some());
        let (mut specs, deferred) =
            run_time_map(&servers, listings, self.overlay.as_ref(), deferring)?;
        let map = specs
            .iter()
            .fold(CapabilityMap::new(), |map, (_, _, spec)| {
                map.tool(spec.clone())
            });
        // While a server is not connected, alternatives may name its tools.
        let checked = deferring && unresolved_alternatives(&map)?;
        let mut builder = Expeditor::builder(map);
        if let Some(policy) = self.policy {
            builder = builder.policy(policy);
        }
        for configure in self.configure {
            builder = configure(builder);
        }
        let expeditor = if checked {
            builder.build_checked()
        } else {
            builder.build().map_err(McpClientError::Map)?
        };

        let mut table = Tools::default();
        for (server, tool, _) in specs.drain(..) {
            let Some(id) = expeditor.tool(&tool.name) else {
                continue;
            };
            table.by_name.insert(tool.name.clone(), table.entries.len());
            let entry = Entry::new(id, &servers[server], tool.remote, tool.definition);
            table.entries.push(Arc::new(entry));
        }
        let inner = Arc::new(Inner {
            expeditor,
            servers: servers.into_boxed_slice(),
            tools: RwLock::new(table),
            qualify: self.qualify,
            health_ttl: self.health_ttl,
            ping_timeout: self.ping_timeout,
            connect_timeout: self.connect_timeout,
            check_every: self.check_every,
            deferred: Mutex::new(deferred),
        });
        for server in &inner.servers {
            let _ = server.client.set(Arc::downgrade(&inner));
            if lock(&server.pending).is_some() {
                continue;
            }
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

/// While a server is not connected: whether the map's only problems are alternatives naming
/// tools no server lists (they may be that server's), each logged; they keep their place
/// and are not routed to. Any other problem is the error.
fn unresolved_alternatives(map: &CapabilityMap) -> Result<bool, McpClientError> {
    let Err(MapErrors(errors)) = map.validate() else {
        return Ok(false);
    };
    let (unknown, other): (Vec<MapError>, Vec<MapError>) = errors
        .into_iter()
        .partition(|e| matches!(e, MapError::UnknownAlternative { .. }));
    if !other.is_empty() {
        return Err(McpClientError::Map(MapErrors(other)));
    }
    for error in unknown {
        tracing::warn!(%error, "an alternative naming no tool of the servers connected: not routed to");
    }
    Ok(true)
}

/// The listings of the first connections. An optional server that failed is not connected
/// yet (listed as nothing, tried again by the health pass after `first_retry`); any other's
/// failure is the error.
fn first_listings(
    servers: &[Arc<Server>],
    results: Vec<Result<Vec<Listed>, String>>,
    optional: &[String],
    first_retry: Duration,
) -> Result<Vec<Vec<Listed>>, McpClientError> {
    let mut listings = Vec::with_capacity(servers.len());
    for (server, result) in servers.iter().zip(results) {
        match result {
            Ok(listing) => listings.push(listing),
            Err(message) if optional.contains(&server.name) => {
                tracing::debug!(server = %server.name, %message, "MCP server not connected: down until it answers");
                *lock(&server.pending) = Some(Pending::new(message, first_retry));
                listings.push(Vec::new());
            }
            Err(message) => {
                return Err(McpClientError::Connect {
                    server: server.name.clone(),
                    message,
                });
            }
        }
    }
    Ok(listings)
}
