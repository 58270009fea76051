//! A guarded call that keeps the server's result as it came (B17): what a proxy in front of
//! the servers hands its own client — every content block, the structured content and the
//! server's `_meta` untouched — beside what the guard decided and recorded; and the live
//! connection to a server, for what the client does not guard (resources, prompts, ...).

use rmcp::model::{CallToolResult, RequestMetaObject};
use rmcp::{Peer, RoleClient};
use serde_json::Value;

use super::McpClient;
use crate::dispatch::Reply;

/// A guarded call's outcome with the server's own result: [`McpClient::call_tool`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GuardedResult {
    /// What the guard decided and recorded: the outcome, the note for the model, the route,
    /// the circuit state after the call ([`Reply::meta`] gives them as `_meta`). Its `value`
    /// is left empty for a tool that caches nothing: the value is the result below.
    pub reply: Reply,
    /// The server's result exactly as the transport delivered it, when the tool was called
    /// and answered with a result (a success, or an `isError` result). `None` when nothing
    /// was called — a refusal, the model's mistake caught before the call — or when the call
    /// ended without a result: its deadline, the server unreachable, a JSON-RPC error, a
    /// cancellation. Then [`reply`](Self::reply) is all there is.
    pub result: Option<CallToolResult>,
    /// The server the tool lives on (`None` for a name that is no tool).
    pub server: Option<String>,
}

/// What the guarded path of [`McpClient::call_tool`] takes to the call and brings back.
#[derive(Debug, Default)]
pub(super) struct Keep {
    /// The request's `_meta` to send the server (a progress token, say).
    pub(super) meta: Option<RequestMetaObject>,
    /// The server's result, untouched.
    pub(super) result: Option<CallToolResult>,
}

impl McpClient {
    /// Calls `name` through the guarded path, as [`call`](Self::call) does, and keeps the
    /// server's `CallToolResult` as it came: content blocks of every type, structured content,
    /// the server's `_meta`. Nothing of it is parsed into the reply's place; the
    /// [`Reply`] beside it says what the guard decided and recorded.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> GuardedResult {
        self.call_tool_with_meta(name, arguments, None).await
    }

    /// [`call_tool`](Self::call_tool), sending the server the request's `_meta` (the
    /// progress token of the caller's own request, so that the server's progress
    /// notifications name it).
    pub async fn call_tool_with_meta(
        &self,
        name: &str,
        arguments: Value,
        meta: Option<RequestMetaObject>,
    ) -> GuardedResult {
        let mut keep = Keep { meta, result: None };
        let reply = self
            .inner
            .dispatch_keeping(name, arguments, Some(&mut keep))
            .await;
        GuardedResult {
            reply,
            result: keep.result,
            server: self.server_of(name).map(str::to_owned),
        }
    }

    /// The live connection to `server`, for what the client does not guard: resources,
    /// prompts, completion, logging. `None` for no such server, or while it is not
    /// connected. A request on it is not guarded, charged or recorded.
    pub fn peer(&self, server: &str) -> Option<Peer<RoleClient>> {
        let server = self.inner.server(server)?;
        if server.needs_reconnect() {
            return None;
        }
        server.peer().map(|(peer, _)| peer)
    }
}
