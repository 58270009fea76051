//! MCP over streamable HTTP, the server side (B17): any rmcp `ServerHandler` served on a local
//! port by rmcp's `StreamableHttpService` on hyper. Documented in the [module](super) that
//! re-exports it.

use std::convert::Infallible;
use std::fmt;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use super::McpServer;
use crate::dispatch::ToolDispatch;

/// How long [`HttpServer::shutdown`] lets open connections finish the answer they are writing
/// before it cuts them.
const GRACE: Duration = Duration::from_secs(5);

/// The origins a page on this machine has: any port of `localhost`, `127.0.0.1` and `[::1]`.
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// Where and how [`serve_http`] serves: the address (127.0.0.1 on a free port by default),
/// the endpoint's path (`/mcp`), the browser origins allowed besides this machine's, and
/// whether sessions are kept.
#[derive(Debug, Clone)]
#[must_use = "options do nothing until they are served"]
pub struct HttpOptions {
    bind: SocketAddr,
    path: String,
    allowed_origins: Vec<String>,
    stateless: bool,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            bind: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            path: "/mcp".to_owned(),
            allowed_origins: Vec::new(),
            stateless: false,
        }
    }
}

impl HttpOptions {
    /// 127.0.0.1 on a free port, at `/mcp`, with sessions, only this machine's origins.
    pub fn new() -> Self {
        Self::default()
    }

    /// The address to listen on (default `127.0.0.1:0`: loopback, a free port, which
    /// [`HttpServer::local_addr`] tells). Another interface, `0.0.0.0` say, serves other
    /// machines: then the `Host` header is not checked (they name this one as they know
    /// it), the `Origin` header still is.
    pub fn bind(mut self, addr: SocketAddr) -> Self {
        self.bind = addr;
        self
    }

    /// A browser origin allowed besides this machine's (`http://localhost:*` and the like
    /// are always allowed), as `scheme://host:port`; `:*` for any port. A request whose
    /// `Origin` header is neither is refused with HTTP 403; a request without one (any
    /// client that is no browser) passes.
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }

    /// The endpoint's path (default `/mcp`); any other path is answered 404.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// No sessions (default: off): every request is served by a handler of its own and
    /// answered at once, so nothing is kept between requests, and nothing can be sent
    /// unasked (no `notifications/tools/list_changed`). For servers behind a load balancer.
    pub fn stateless(mut self, yes: bool) -> Self {
        self.stateless = yes;
        self
    }
}

/// A running streamable-HTTP server ([`serve_http`]). Dropping it stops it, as
/// [`shutdown`](Self::shutdown) does, without waiting.
pub struct HttpServer {
    addr: SocketAddr,
    path: String,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpServer")
            .field("url", &self.url())
            .finish_non_exhaustive()
    }
}

impl HttpServer {
    /// The address it listens on, with the port it was given.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The endpoint's URL, `http://127.0.0.1:PORT/mcp`, as a client is given it.
    pub fn url(&self) -> String {
        format!("http://{}{}", self.addr, self.path)
    }

    /// Stops it: no new connection is accepted, every session is closed (their handlers
    /// are dropped, their event streams end), and open connections have a few seconds to
    /// finish what they are answering. Returns when the port is free again.
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }

    /// Serves until the server's task ends. It does not end on its own (a failed `accept` is
    /// logged and retried), so this is for a program whose work is serving: it returns when
    /// the process ends it.
    ///
    /// # Errors
    ///
    /// The server's task panicked or was cancelled by its runtime shutting down.
    pub async fn wait(mut self) -> Result<(), io::Error> {
        match self.task.take() {
            Some(task) => task.await.map_err(io::Error::other),
            None => Ok(()),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Serves an MCP server over streamable HTTP: `make` is called for each session (each client's
/// `initialize`), and that handler serves it until the client ends the session (HTTP
/// `DELETE`), it expires (five idle minutes), or the server stops. Sessions are told apart by
/// their `Mcp-Session-Id`.
///
/// Bound to `options`' address, 127.0.0.1 on a free port by default. Against DNS rebinding
/// (the MCP transport spec asks servers to check it): a request whose `Origin` header is not
/// this machine's (`http://localhost[:port]`, `http://127.0.0.1[:port]`, `http://[::1][:port]`)
/// nor one [allowed](HttpOptions::allow_origin) is refused with HTTP 403 before any handler
/// sees it; on a loopback address, so is one whose `Host` header names another host (a
/// rebound name). A request without `Origin` (no browser) passes.
///
/// ```no_run
/// use agent_circuit_breaker::mcp::rmcp::ServerHandler;
/// use agent_circuit_breaker::mcp::{HttpOptions, serve_http};
///
/// #[derive(Clone)]
/// struct Hello;
/// impl ServerHandler for Hello {}
///
/// # async fn demo() -> std::io::Result<()> {
/// let server = serve_http(|| Hello, HttpOptions::new()).await?;
/// println!("serving at {}", server.url());
/// server.wait().await
/// # }
/// ```
///
/// # Errors
///
/// The address could not be bound (in use, not this machine's), or the path does not begin
/// with `/`.
pub async fn serve_http<S, F>(make: F, options: HttpOptions) -> Result<HttpServer, io::Error>
where
    F: Fn() -> S + Send + Sync + 'static,
    S: ServerHandler,
{
    if !options.path.starts_with('/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the MCP endpoint's path must begin with `/`: `{}`",
                options.path
            ),
        ));
    }
    let listener = TcpListener::bind(options.bind).await?;
    let addr = listener.local_addr()?;
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(!options.stateless)
        .with_json_response(options.stateless)
        .with_allowed_origins(
            LOOPBACK_ORIGINS
                .iter()
                .map(|&o| o.to_owned())
                .chain(options.allowed_origins),
        )
        .enforce_origin_validation();
    // rmcp's default Host list is the loopback names (any port): right for a loopback bind,
    // where a foreign Host is a rebound name. Other machines name this one as they know it.
    if !addr.ip().is_loopback() {
        config = config.disable_allowed_hosts();
    }
    let stop = config.cancellation_token.clone();
    let service = StreamableHttpService::new(
        move || Ok(make()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let endpoint: Arc<str> = options.path.clone().into();
    let task = tokio::spawn(accept(listener, service, endpoint, stop.clone()));
    Ok(HttpServer {
        addr,
        path: options.path,
        stop,
        task: Some(task),
    })
}

type Service<S> = StreamableHttpService<S, LocalSessionManager>;
/// Accepts connections until `stop`, then lets the open ones finish for [`GRACE`].
async fn accept<S: ServerHandler>(
    listener: TcpListener,
    service: Service<S>,
    endpoint: Arc<str>,
    stop: CancellationToken,
) {
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        match accepted {
            Ok((stream, _)) => {
                connections.spawn(serve_connection(
                    stream,
                    service.clone(),
                    Arc::clone(&endpoint),
                    stop.clone(),
                ));
            }
            Err(error) => {
                // Out of file descriptors, a connection reset before it was accepted: the
                // listener is still good; wait a moment rather than spin.
                tracing::warn!(%error, "accepting an MCP connection failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        connections.shutdown().await;
    }
}

async fn serve_connection<S: ServerHandler>(
    stream: tokio::net::TcpStream,
    service: Service<S>,
    endpoint: Arc<str>,
    stop: CancellationToken,
) {
    let handler = hyper::service::service_fn(move |request: Request<Incoming>| {
        let service = service.clone();
        let endpoint = Arc::clone(&endpoint);
        async move {
            if request.uri().path() != &*endpoint {
                return Ok::<_, Infallible>(not_found(&endpoint));
            }
            Ok(service.handle(request).await)
        }
    });
    let connection =
        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), handler);
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        result = connection.as_mut() => {
            if let Err(error) = result {
                tracing::debug!(%error, "MCP HTTP connection ended");
            }
        }
        () = stop.cancelled() => {
            connection.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(GRACE, connection).await;
        }
    }
}

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

fn not_found(endpoint: &str) -> Response<Body> {
    let mut response = Response::new(
        Full::new(Bytes::from(format!(
            "Not Found: the MCP endpoint is {endpoint}"
        )))
        .boxed(),
    );
    *response.status_mut() = StatusCode::NOT_FOUND;
    response
}

impl<D: ToolDispatch + 'static> McpServer<D> {
    /// Serves the toolbox over streamable HTTP ([`serve_http`]): a clone of this server per
    /// session, so that each client is told of the offer's changes on its own (and, with
    /// [`cycle_per_session`](Self::cycle_per_session), begins its own cycle).
    ///
    /// ```no_run
    /// use agent_circuit_breaker::dispatch::ToolDispatch;
    /// use agent_circuit_breaker::mcp::{HttpOptions, McpServer};
    ///
    /// async fn serve(guarded: impl ToolDispatch + 'static) -> std::io::Result<()> {
    ///     let server = McpServer::new(guarded).serve_http(HttpOptions::new()).await?;
    ///     eprintln!("MCP at {}", server.url());
    ///     server.wait().await
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`serve_http`]: the address could not be bound, or the path is no path.
    pub async fn serve_http(self, options: HttpOptions) -> Result<HttpServer, io::Error> {
        serve_http(move || self.clone(), options).await
    }
}
