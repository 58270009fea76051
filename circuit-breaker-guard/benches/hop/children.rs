//! The children the hop bench runs itself as (`HOP_BENCH_ROLE`): the upstream, and the plain
//! rmcp forwarder the guard is measured against.

use std::io::Write as _;
use std::sync::Arc;

use agent_circuit_breaker::mcp::rmcp;
use agent_circuit_breaker::mcp::{HttpOptions, serve_http};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ErrorData, Peer, RoleClient, ServerHandler, ServiceExt as _};
use serde_json::{Value, json};

use super::{
    FORWARDER_THREADS, SERVE, TOOLS, UPSTREAM_URL, UPSTREAM_WRAP, self_command, spawn_stdio,
    wrapped,
};

pub(super) fn child_main(forwarder: bool) {
    let tools: usize = std::env::var(TOOLS)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3);
    // The forwarder's runtime: by default the guard's (one thread), so that the two differ
    // only in what they do per call; `HOP_FORWARDER_THREADS=2` puts it on 2 workers, to
    // compare with the guard on `--threads 2` (`HOP_GUARD_ARGS`).
    let threads = if forwarder {
        std::env::var(FORWARDER_THREADS)
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(1)
    } else {
        1
    };
    let runtime = if threads > 1 {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    };
    let runtime = runtime.expect("a runtime");
    let http = std::env::var(SERVE).as_deref() == Ok("http");
    runtime.block_on(async move {
        if forwarder {
            #[allow(
                deprecated,
                reason = "ring builds without cmake; a bench needs no more"
            )]
            let _ = rustls::crypto::ring::default_provider().install_default();
            let upstream = match std::env::var(UPSTREAM_URL) {
                Ok(url) => {
                    ().serve(StreamableHttpClientTransport::from_uri(url))
                        .await
                        .expect("the upstream over HTTP")
                }
                Err(_) => ()
                    .serve(spawn_stdio(wrapped(
                        UPSTREAM_WRAP,
                        self_command("upstream", tools),
                    )))
                    .await
                    .expect("the upstream over stdio"),
            };
            let handler = Forwarder {
                upstream: upstream.peer().clone(),
            };
            serve(handler, http).await;
            drop(upstream);
        } else {
            serve(Upstream::new(tools), http).await;
        }
    });
}

/// Serves `handler` on stdio until the client leaves, or on HTTP (the URL printed on stdout)
/// until stdin closes.
async fn serve<H: ServerHandler + Clone + Send + Sync + 'static>(handler: H, http: bool) {
    if http {
        let server = serve_http(move || handler.clone(), HttpOptions::new())
            .await
            .expect("serving HTTP");
        println!("{}", server.url());
        let _ = std::io::stdout().flush();
        let _ = tokio::io::copy(&mut tokio::io::stdin(), &mut tokio::io::sink()).await;
        server.shutdown().await;
    } else if let Ok(running) = handler.serve(rmcp::transport::stdio()).await {
        let _ = running.waiting().await;
    }
}

#[derive(Clone)]
struct Upstream {
    tools: Arc<Vec<Tool>>,
}

impl Upstream {
    /// `n` tools in the shape of a code host's: a few typed properties, two required.
    fn new(n: usize) -> Self {
        let tools = (0..n)
            .map(|i| {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "path": { "type": "string", "description": "A file or folder, relative to the repository root." },
                        "query": { "type": "string", "description": "What to look for." },
                        "limit": { "type": "integer", "minimum": 1, "maximum": 500, "description": "At most this many results." },
                        "case_sensitive": { "type": "boolean", "default": false },
                        "kinds": { "type": "array", "items": { "type": "string", "enum": ["file", "symbol", "text"] } }
                    },
                    "required": ["path", "query"],
                    "additionalProperties": false
                });
                let Value::Object(schema) = schema else {
                    unreachable!("an object literal")
                };
                Tool::new_with_raw(
                    format!("search_{i:03}"),
                    Some(format!("Searches the repository's files, index {i}: names, symbols or text.").into()),
                    Arc::new(schema),
                )
            })
            .collect();
        Upstream {
            tools: Arc::new(tools),
        }
    }
}

impl ServerHandler for Upstream {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("hop-upstream", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = format!("3 matches for {} in src/", request.name);
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

/// The plain forwarder: what any rmcp proxy does, and no more.
#[derive(Clone)]
struct Forwarder {
    upstream: Peer<RoleClient>,
}

fn internal(error: rmcp::ServiceError) -> ErrorData {
    ErrorData::internal_error(error.to_string(), None)
}

impl ServerHandler for Forwarder {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("hop-forwarder", "1.0.0"))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.upstream.list_tools(request).await.map_err(internal)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.upstream
            .call_tool_once(request)
            .await
            .map_err(internal)
    }
}
