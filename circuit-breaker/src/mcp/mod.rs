//! MCP on rmcp (feature `mcp`): a guarded toolbox served as an MCP server (B9), and MCP
//! servers' tools guarded as a client (B10). The rmcp this crate is built against is
//! re-exported as [`rmcp`](mod@rmcp).
//!
//! # Server
//!
//! [`McpServer`] wraps any [`ToolDispatch`](crate::dispatch::ToolDispatch) — the guarded handle `#[toolbox(json)]`
//! generates, or your own — and implements rmcp's [`ServerHandler`](rmcp::ServerHandler), so the toolbox is an MCP
//! server with no per-tool glue: names, descriptions and schemas are declared once, in
//! `#[tool]`.
//!
//! - `initialize` advertises tools with `listChanged: true`, and the server's name and
//!   version ([`McpServer::name`], [`McpServer::version`]; the crate's by default).
//! - `tools/list` answers the *offer*: the definitions of the tools a model may call now
//!   ([`ToolDispatch::offered`](crate::dispatch::ToolDispatch::offered)); an OPEN or UNAVAILABLE tool is not listed, and while every
//!   tool is paused the list is empty.
//! - `tools/call` goes through [`ToolDispatch::dispatch`](crate::dispatch::ToolDispatch::dispatch), the guarded path: decide, call or
//!   route, record. The [`Reply`](crate::dispatch::Reply) becomes a `CallToolResult`: `isError` is
//!   [`Reply::is_error`](crate::dispatch::Reply::is_error), the one text content is [`Reply::text`](crate::dispatch::Reply::text) (the value, then the note
//!   for the model), and `_meta` is [`Reply::meta`](crate::dispatch::Reply::meta) (outcome, circuit state, route,
//!   degradation, freshness). A failure, a refusal, or arguments that do not fit the tool's
//!   schema are an `isError` result the model reads (the spec's tool execution errors, input
//!   validation among them). A name that is no tool is the spec's protocol error: JSON-RPC
//!   `-32602` (invalid params) whose message is the same note ("did you mean", what is
//!   offered) and whose `data` is the reply's `_meta`; it is counted as the model's mistake
//!   and charged to nothing, like any other.
//! - `notifications/tools/list_changed` is sent when a tool leaves or re-enters the offer,
//!   whatever changed it: a call through this server, a call through another session or the
//!   typed methods of the same toolbox, a precheck, a new cycle. After every call, and
//!   whenever the expeditor's state changes ([`Expeditor::watch`](crate::Expeditor::watch);
//!   a task per session, ended with the session), the offered names are compared with those
//!   the client was last told (by a `tools/list` answer or a notification) — unless nothing
//!   changed in the expeditor and the definitions are the same
//!   ([`ToolDispatch::definitions_version`](crate::dispatch::ToolDispatch::definitions_version)),
//!   so that a call costs the same with 3 tools or 1,000.
//! - Revisions: 2024-11-05 to 2025-11-25 over `initialize`, and 2026-07-28, stateless (each
//!   request names its revision; no `ping`; `server/discover`). A session begins — its own
//!   cycle — with `initialize` or, on 2026-07-28, its first request. `tools/list` carries
//!   `ttlMs: 0` and `cacheScope: private` on 2026-07-28 only (the offer may change at any
//!   moment; older revisions do not define the fields); there `list_changed` goes on the
//!   client's `subscriptions/listen` stream. What rmcp supports of each revision is in
//!   `docs/mcp.md`.
//!
//! A call the client cancels (`notifications/cancelled`) is dropped where it waits: its
//! ticket is dropped, which the expeditor records as a cancellation, never as a failure.
//!
//! ```no_run
//! use agent_circuit_breaker::dispatch::ToolDispatch;
//! use agent_circuit_breaker::mcp::McpServer;
//!
//! async fn serve(guarded: impl ToolDispatch + 'static) -> Result<(), agent_circuit_breaker::mcp::rmcp::RmcpError> {
//!     McpServer::new(guarded).serve_stdio().await?;
//!     Ok(())
//! }
//! ```
//!
//! Any other rmcp transport works the same way, since [`McpServer`] is a [`ServerHandler`](rmcp::ServerHandler):
//! `rmcp::ServiceExt::serve(server, transport)`.
//!
//! # Client
//!
//! [`McpClient`] connects the agent to MCP servers and guards all their tools with one
//! [`Expeditor`](crate::Expeditor) (B10). It is a
//! [`ToolDispatch`](crate::dispatch::ToolDispatch), so the model is shown every listed tool
//! and calls it by name, and it can be handed as it is to [`McpServer`] (a guarded proxy) or
//! to the rig adapter. The glue:
//!
//! ```no_run
//! # async fn demo() -> Result<(), agent_circuit_breaker::mcp::McpClientError> {
//! use agent_circuit_breaker::dispatch::ToolDispatch;
//! use agent_circuit_breaker::mcp::McpClient;
//! use std::process::Command;
//!
//! let tools = McpClient::builder()
//!     .child("files", Command::new("mcp-files").args(["--root", "."]))
//!     .child("web", Command::new("mcp-web"))
//!     .build()
//!     .await?;
//! let reply = tools.call("read_file", serde_json::json!({ "path": "README.md" })).await;
//! println!("{}", reply.text());
//! println!("{}", tools.expeditor().state_table());
//! # Ok(()) }
//! ```
//!
//! **The run-time map** (R2.4, B6). Every tool a server lists is a tool of the map, on that
//! server ([`ToolSpec::server`](crate::capability::ToolSpecBuilder::server)): it provides
//! the first line of its description (or "capability of server X"), and its fallback tells
//! the user the server's tool could not be used. An overlay
//! ([`McpClientBuilder::overlay`], a [`CapabilityMap`](crate::CapabilityMap), in the source document's
//! YAML shape through any serde format) adds or overrides, by tool name, what a tool
//! provides, its alternatives — tools on other servers too — with their degradations, its
//! fallback, threshold, probe interval and whether it caches. An overlay naming a tool no
//! server lists is an error listing every such name with "did you mean"; so are tools of
//! the same name on two servers, unless [`McpClientBuilder::qualify_names`] names every tool
//! `server.tool`. Tools listed later (`notifications/tools/list_changed`, a reconnect) are
//! discovered then; a tool no longer listed leaves the definitions. The state table names
//! each server, up or down.
//!
//! **Every call** goes decide → call → record:
//!
//! - CALL or PROBE: `tools/call` on the tool's server, with the per-call deadline
//!   ([`McpClientBuilder::deadline`], 30 s by default, per server with
//!   [`deadline_for`](McpClientBuilder::deadline_for)). What comes back is classified:
//!   - a result → success; the reply's value is its structured content, else its text
//!     (JSON when the text parses), else its content blocks as JSON;
//!   - a result with `isError` → the tool's own failure, categorised from its text
//!     ([`Failure::new`](crate::Failure::new): conservatively) — from `_meta.error` when
//!     the server gives the tool's message apart from its note (a server built with this
//!     crate does); the model reads the text. Unless its category is the caller's (B14): by
//!     default [`DEFAULT_CALLER_ERRORS`], not found (`ENOENT: no such file or directory`,
//!     `... does not exist`) and invalid input (`invalid arguments`, `EINVAL`) — the
//!     server's answers about what the call named or sent, which say nothing of the server's
//!     health. Then it is the model's mistake: answered with the tool's message and what to
//!     do next, counted, never charged, no circuit opened (a probe answered so closes it).
//!     The overlay changes the default per server (its `servers:` list,
//!     [`ServerSpec`](crate::ServerSpec)) and per tool (its entry's `caller_errors`, which
//!     wins); `caller_errors: []` charges every error to the tool:
//!
//!     ```yaml
//!     capability_map:
//!       - tool: write_file
//!         caller_errors: []            # a missing directory is the tool's problem here
//!     servers:
//!       - server: files
//!         caller_errors: [not_found]   # the default for the server's other tools
//!     ```
//!   - the transport closed, or a send failed → the server is unreachable
//!     ([`Failure::server_unreachable`](crate::Failure::server_unreachable), category
//!     network): every working tool of that server opens at once, as one `ServerDown`
//!     event charged once; calls of the same outage still in flight are absorbed, and the
//!     other servers' tools go on;
//!   - no answer by the deadline → the tool's failure with the category timeout (the
//!     server is told the request is abandoned), not a server outage;
//!   - JSON-RPC `-32602` (invalid params), or an `isError` result whose `_meta` says
//!     `model_mistake` (a server built with this crate) → the model's mistake: answered,
//!     counted, never charged; any other JSON-RPC error → the tool's failure;
//!   - cancelled → nothing recorded.
//! - SKIP: nothing is called; the reply is a refusal whose note names the route (an
//!   alternative, on another server too, or the fallback). The model calls the alternative
//!   itself: the client never calls another tool with the same arguments.
//! - PAUSE: refused, with the pause note.
//!
//! Before any of that, a name that is no listed tool, arguments that are no JSON object, and
//! arguments that do not fit the tool's input schema are the model's mistakes: answered
//! without a call, counted, never charged. The schema is checked in full — JSON Schema
//! 2020-12, or the draft its `$schema` names (`pattern`, `minimum`, `enum`, `oneOf`,
//! `$ref`/`$defs`, ...; `format` is an annotation, not asserted) — by a validator compiled
//! once when the tool is listed, and the note names the keyword that failed and where
//! (`at `/limit`: 0 is less than the minimum of 1 (keyword `minimum`)`). A `$ref` to another
//! document is never fetched: a schema that needs one, or that does not compile (an invalid
//! `pattern`), or nests deeper than 64 levels, leaves its tool offered with its arguments
//! checked only as an object, and the server to judge them (logged when listed).
//!
//! **Revisions** (B17): a connection asks for 2026-07-28 first (`server/discover`) and falls
//! back to `initialize` where the server does not know it ([`McpClient::protocol_version`]).
//! On 2026-07-28 a listen stream brings `list_changed`. A tool list's `ttlMs` is its
//! freshness (R6): a stale list is listed again before a call to that server's tools, by
//! [`McpClient::check`], and in the background when the definitions are read — unless the
//! connection pushes `list_changed`, which keeps it fresh.
//!
//! **Health checks** (R10.1): one MCP `ping` per server (`server/discover` on 2026-07-28,
//! which has no `ping`), not per tool, recorded for all its
//! tools ([`Expeditor::record_server_check`](crate::Expeditor::record_server_check)) and
//! trusted for the health TTL ([`McpClientBuilder::health_ttl`]). A call after that pings
//! first: an answer is AVAILABLE, no answer within the ping timeout UNAVAILABLE (its tools
//! are refused, uncharged, until a later check passes). A closed transport is never recorded
//! by a check: the next call finds it in a few milliseconds and the server goes down as one
//! event, charged once. Before a PROBE the check is made afresh, after reconnecting when the
//! connection is gone (the connector is called again: a child process is spawned again, its
//! tools listed again); if the server cannot be reached the probe is not made (nothing is
//! charged), the check is recorded UNAVAILABLE, the outage waits another interval, and a
//! failed check stands for the health TTL, so a dead server is not respawned on every call.
//! A probe that reaches the server closes all the tools its outage took down (`ServerUp`).
//!
//! A model-driven agent calls only the tools it is offered, so it never probes a down
//! server by a call: [`McpClient::check`] (between steps, or in the background with
//! [`McpClientBuilder::check_every`]) probes a down server by its health check when the
//! expeditor says the probe is due, and brings its tools back when it answers. When it is
//! due is the policy's: such an agent wants
//! [`ProbeUnit::Steps`](crate::policy::ProbeUnit::Steps) (and advances the step each turn),
//! since the default counts refused calls it never makes.
//!
//! **Keeping the server's result** (B17): [`McpClient::call_tool`] makes the same guarded call
//! and keeps the server's `CallToolResult` as it came — every content block, the structured
//! content, the server's `_meta` — in a [`GuardedResult`] beside the [`Reply`](crate::dispatch::Reply);
//! [`McpClient::peer`] is a server's live connection, for what the client does not guard
//! (resources, prompts, completion). The guard proxy, crate `agent-circuit-breaker-guard`, is
//! built on them.
//!
//! Nothing here panics on what a server or a model sends: a schema that is no object schema
//! is shown as an empty object schema, tools with empty or repeated names are left out, a
//! server that closes during `initialize` is an error value of
//! [`build`](McpClientBuilder::build).
//!
//! # Remote servers (streamable HTTP)
//!
//! With feature `mcp-http`, both sides speak MCP's remote transport (B17).
//! [`McpServer::serve_http`] serves a toolbox on a local port, a clone of the server per
//! session; [`serve_http`] serves any rmcp [`ServerHandler`](rmcp::ServerHandler), `make`
//! called per session. Bound to 127.0.0.1 on a free port unless
//! [`HttpOptions::bind`] says otherwise, at `/mcp`, with sessions told apart by their
//! `Mcp-Session-Id`. Against DNS rebinding (the transport spec's requirement) a request whose
//! `Origin` is not this machine's nor [allowed](HttpOptions::allow_origin), or, on a loopback
//! address, whose `Host` names another host, is answered HTTP 403; one without `Origin` (no
//! browser) passes.
//!
//! ```no_run
//! # #[cfg(feature = "mcp-http")]
//! # async fn serve(guarded: impl agent_circuit_breaker::dispatch::ToolDispatch + 'static) -> std::io::Result<()> {
//! use agent_circuit_breaker::mcp::{HttpOptions, McpServer};
//!
//! let server = McpServer::new(guarded).serve_http(HttpOptions::new()).await?;
//! eprintln!("MCP at {}", server.url()); // http://127.0.0.1:PORT/mcp
//! server.wait().await
//! # }
//! ```
//!
//! [`McpClientBuilder::url`] (and [`url_with`](McpClientBuilder::url_with), for headers such
//! as `Authorization`) adds a remote server, guarded as any other: the per-call deadline, the
//! health checks, a connection refused or cut is the server unreachable (one `ServerDown`),
//! and a probe or [`McpClient::check`] reconnects with a new session. TLS is rustls with the
//! platform's verifier, on the program's crypto provider if it installed one, else `ring`'s.
//! reqwest is built with no provider of its own (its default needs cmake), so rmcp's own
//! `StreamableHttpClientTransport::from_uri`, which makes reqwest's default client, wants one
//! installed first (`rustls::crypto::ring::default_provider().install_default()`).
//!
//! ```no_run
//! # #[cfg(feature = "mcp-http")]
//! # async fn demo() -> Result<(), agent_circuit_breaker::mcp::McpClientError> {
//! use agent_circuit_breaker::mcp::McpClient;
//!
//! let tools = McpClient::builder()
//!     .url_with("search", "https://search.example.com/mcp", [("Authorization", "Bearer …")])
//!     .build()
//!     .await?;
//! # Ok(()) }
//! ```

mod client;
#[cfg(feature = "mcp-http")]
mod http;
mod server;

pub use client::{
    DEFAULT_CALLER_ERRORS, DEFAULT_CONNECT_TIMEOUT, DEFAULT_DEADLINE, DEFAULT_HEALTH_TTL,
    DEFAULT_PING_TIMEOUT, DuplicateTool, GuardedResult, McpClient, McpClientBuilder,
    McpClientError, OverlayProblem, ServerCommand,
};
#[doc(hidden)]
pub use client::{Relay, RelayFuture};
#[cfg(feature = "mcp-http")]
pub use http::{HttpOptions, HttpServer, serve_http};
pub use server::{McpServer, to_call_tool_result, to_tool};

/// The rmcp this crate is built against, for the types of a transport or a client.
pub use rmcp;
