//! MCP on rmcp (feature `mcp`): a guarded toolbox served as an MCP server (SPEC B9), and MCP
//! servers' tools guarded as a client (SPEC B10). The rmcp this crate is built against is
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
//!   the client was last told (by a `tools/list` answer or a notification).
//!
//! A call the client cancels (`notifications/cancelled`) is dropped where it waits: its
//! ticket is dropped, which the expeditor records as a cancellation, never as a failure.
//!
//! ```no_run
//! use circuit_breaker::dispatch::ToolDispatch;
//! use circuit_breaker::mcp::McpServer;
//!
//! async fn serve(guarded: impl ToolDispatch + 'static) -> Result<(), circuit_breaker::mcp::rmcp::RmcpError> {
//!     McpServer::new(guarded).serve_stdio().await?;
//!     Ok(())
//! }
//! ```
//!
//! Any other rmcp transport works the same way, since [`McpServer`] is a [`ServerHandler`](rmcp::ServerHandler):
//! `rmcp::ServiceExt::serve(server, transport)`.

mod server;

pub use server::{McpServer, to_call_tool_result, to_tool};

/// The rmcp this crate is built against, for the types of a transport or a client.
pub use rmcp;
