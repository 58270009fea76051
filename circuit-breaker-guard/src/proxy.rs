//! The guard's MCP server: tools through the guarded path, their results as the upstream
//! sent them with the guard's data beside them under [`META_KEY`]; resources, prompts,
//! completion and logging passed to the upstream that owns them.

// Logging and legacy subscriptions are deprecated by the newest protocol version, but the
// clients the guard serves still speak the versions that have them.
#![allow(deprecated)]

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_circuit_breaker::mcp::rmcp;
use agent_circuit_breaker::mcp::{GuardedResult, McpClient, McpServer};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    ContentBlock, ErrorCode, GetPromptRequestParams, GetPromptResponse, Implementation,
    InitializeRequestParams, InitializeResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, MetaObject, PaginatedRequestParams, PromptsCapability,
    ReadResourceRequestParams, ReadResourceResponse, Reference, ResourcesCapability,
    ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscribeRequestParams, Tool,
    ToolsCapability, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::{ErrorData, Peer, RoleClient, ServerHandler, ServiceError};
use serde_json::{Map, Value};

use crate::relay::Downstream;

/// The `_meta` key of the guard's own data in a tool result: reverse-DNS prefixed, as the
/// MCP spec asks of keys that are not the protocol's.
pub const META_KEY: &str = "io.github.agent-circuit-breaker/guard";

/// How long a passed-through request may take when the upstream has no deadline of its own.
const PASS_DEADLINE: Duration = Duration::from_secs(60);

/// What every session of the guard shares.
pub struct Shared {
    pub client: McpClient,
    pub implementation: Implementation,
    pub downstream: Arc<Downstream>,
    owners: Mutex<Owners>,
    /// Per upstream, how long a passed-through request may take.
    deadlines: HashMap<String, Duration>,
    /// Set when the guard stops serving: calls still in flight are dropped, which records
    /// them as cancelled and tells their upstreams.
    closing: tokio::sync::watch::Sender<bool>,
}

/// Which upstream listed what, for routing reads and gets.
#[derive(Default)]
struct Owners {
    resources: HashMap<String, String>,
    /// (server, the template's text before its first `{`).
    templates: Vec<(String, String)>,
    prompts: HashMap<String, String>,
}

impl Shared {
    pub fn new(
        client: McpClient,
        name: String,
        downstream: Arc<Downstream>,
        deadlines: HashMap<String, Duration>,
    ) -> Self {
        Shared {
            implementation: Implementation::new(name, env!("CARGO_PKG_VERSION")),
            client,
            downstream,
            owners: Mutex::default(),
            deadlines,
            closing: tokio::sync::watch::Sender::new(false),
        }
    }

    /// Drops every call still in flight (the client left): each is recorded as cancelled,
    /// never as its tool's failure, and its upstream is sent `notifications/cancelled`.
    pub fn close(&self) {
        self.closing.send_replace(true);
    }

    fn owners(&self) -> std::sync::MutexGuard<'_, Owners> {
        self.owners.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The upstreams whose capabilities pass `has`, with their connections, in config order.
    fn upstreams(
        &self,
        has: impl Fn(&ServerCapabilities) -> bool,
    ) -> Vec<(String, Peer<RoleClient>)> {
        self.client
            .servers()
            .into_iter()
            .filter_map(|server| {
                let peer = self.client.peer(server)?;
                let info = peer.peer_info()?;
                has(&info.capabilities).then(|| (server.to_owned(), peer))
            })
            .collect()
    }

    fn deadline(&self, server: &str) -> Duration {
        self.deadlines.get(server).copied().unwrap_or(PASS_DEADLINE)
    }

    /// `request` on `server`'s connection, within its deadline; an upstream's error as it
    /// gave it.
    async fn pass<T, F>(&self, server: &str, request: F) -> Result<T, ErrorData>
    where
        F: Future<Output = Result<T, ServiceError>>,
    {
        match tokio::time::timeout(self.deadline(server), request).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(upstream_error(server, error)),
            Err(_) => Err(ErrorData::internal_error(
                format!(
                    "upstream {server} did not answer within {}",
                    humantime::format_duration(self.deadline(server))
                ),
                None,
            )),
        }
    }

    /// `request` to each upstream of `route` in turn until one answers: its answer, else the
    /// last one's error (`what` is not supported, for an empty route). With `cancel`, the
    /// client cancelling its request ends the wait.
    async fn first_answer<T, F, Fut>(
        &self,
        route: Vec<(String, Peer<RoleClient>)>,
        what: &str,
        cancel: Option<&RequestContext<RoleServer>>,
        request: F,
    ) -> Result<T, ErrorData>
    where
        F: Fn(Peer<RoleClient>) -> Fut,
        Fut: Future<Output = Result<T, ServiceError>>,
    {
        let mut last = None;
        for (server, peer) in route {
            let answer = self.pass(&server, request(peer));
            let answer = match cancel {
                Some(context) => tokio::select! {
                    answer = answer => answer,
                    () = context.ct.cancelled() => return Err(ErrorData::internal_error("cancelled", None)),
                },
                None => answer.await,
            };
            match answer {
                Ok(value) => return Ok(value),
                Err(error) => last = Some(error),
            }
        }
        Err(last.unwrap_or_else(|| method_not_found(what)))
    }

    /// The upstreams to ask for `uri`: its owner when one listed it (or a template
    /// covering it), else every upstream with resources, in order.
    fn resource_route(&self, uri: &str) -> Vec<(String, Peer<RoleClient>)> {
        let all = self.upstreams(|c| c.resources.is_some());
        let owner = {
            let owners = self.owners();
            owners.resources.get(uri).cloned().or_else(|| {
                owners
                    .templates
                    .iter()
                    .filter(|(_, prefix)| !prefix.is_empty() && uri.starts_with(prefix.as_str()))
                    .max_by_key(|(_, prefix)| prefix.len())
                    .map(|(server, _)| server.clone())
            })
        };
        match owner {
            Some(owner) => all.into_iter().filter(|(s, _)| *s == owner).collect(),
            None => all,
        }
    }
}

/// One session of the guard: the guarded tools of [`McpServer`] (the offer, `list_changed`)
/// and the pass-through.
pub struct Guard {
    tools: McpServer<McpClient>,
    shared: Arc<Shared>,
}

impl Guard {
    pub fn new(shared: Arc<Shared>) -> Self {
        let tools = McpServer::new(shared.client.clone())
            .name(shared.implementation.name.clone())
            .version(shared.implementation.version.clone());
        Guard { tools, shared }
    }
}

impl Clone for Guard {
    /// A new session: it starts with no memory of what its client was told.
    fn clone(&self) -> Self {
        Guard {
            tools: self.tools.clone(),
            shared: Arc::clone(&self.shared),
        }
    }
}

/// The union of what the upstreams advertise, and tools with `listChanged`.
fn union(client: &McpClient) -> ServerCapabilities {
    let mut caps = ServerCapabilities::default();
    let mut tools = ToolsCapability::default();
    tools.list_changed = Some(true);
    caps.tools = Some(tools);
    let either =
        |a: Option<bool>, b: Option<bool>| (a == Some(true) || b == Some(true)).then_some(true);
    for server in client.servers() {
        let Some(info) = client.peer(server).and_then(|p| p.peer_info()) else {
            continue;
        };
        let theirs = &info.capabilities;
        if let Some(r) = &theirs.resources {
            let ours = caps
                .resources
                .get_or_insert_with(ResourcesCapability::default);
            ours.subscribe = either(ours.subscribe, r.subscribe);
            ours.list_changed = either(ours.list_changed, r.list_changed);
        }
        if let Some(p) = &theirs.prompts {
            let ours = caps.prompts.get_or_insert_with(PromptsCapability::default);
            ours.list_changed = either(ours.list_changed, p.list_changed);
        }
        if theirs.completions.is_some() {
            caps.completions.get_or_insert_with(Map::new);
        }
        if theirs.logging.is_some() {
            caps.logging.get_or_insert_with(Map::new);
        }
    }
    caps
}

/// The upstreams' instructions, each under its name.
fn instructions(client: &McpClient) -> Option<String> {
    let parts: Vec<String> = client
        .servers()
        .into_iter()
        .filter_map(|server| {
            let info = client.peer(server)?.peer_info()?;
            let text = info.instructions.as_deref()?.trim().to_owned();
            (!text.is_empty()).then(|| format!("{server}: {text}"))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

fn upstream_error(server: &str, error: ServiceError) -> ErrorData {
    match error {
        ServiceError::McpError(data) => data,
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
            ErrorData::internal_error(
                format!("upstream {server} cannot be reached: {error}"),
                None,
            )
        }
        other => ErrorData::internal_error(format!("upstream {server}: {other}"), None),
    }
}

/// The guard's data for one call: the reply's `_meta` (outcome, circuit state, route,
/// degradation), the server, and the note for the model.
fn guard_meta(guarded: &mut GuardedResult) -> Value {
    let mut meta = guarded.reply.meta();
    if let Some(server) = guarded.server.take() {
        meta.insert("server".into(), server.into());
    }
    if let Some(note) = &guarded.reply.note {
        meta.insert("note".into(), note.clone().into());
    }
    Value::Object(meta)
}

/// What the client receives: the upstream's result as it came with the guard's data under
/// [`META_KEY`] (and, on an error, the note for the model as one more text block after the
/// upstream's own); without one, the guard's reply.
pub fn to_result(mut guarded: GuardedResult) -> CallToolResult {
    let ours = guard_meta(&mut guarded);
    match guarded.result {
        Some(mut result) => {
            if result.is_error == Some(true)
                && let Some(note) = &guarded.reply.note
            {
                result.content.push(ContentBlock::text(note.clone()));
            }
            result
                .meta
                .get_or_insert_with(MetaObject::default)
                .0
                .insert(META_KEY.to_owned(), ours);
            result
        }
        None => {
            let content = vec![ContentBlock::text(guarded.reply.text())];
            let mut result = if guarded.reply.is_error() {
                CallToolResult::error(content)
            } else {
                CallToolResult::success(content)
            };
            let mut meta = Map::new();
            meta.insert(META_KEY.to_owned(), ours);
            result.meta = Some(MetaObject(meta));
            result
        }
    }
}

fn method_not_found(what: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("no upstream of the guard supports {what}"),
        None,
    )
}

// Each request's body is boxed: rmcp spawns every request as one future the size of the
// largest handler's, and moves it several times on the way; boxed, the guard's is about the
// size of a plain forwarder's (some 70 kB of copies a call less).
impl ServerHandler for Guard {
    fn get_info(&self) -> ServerConfig {
        let config = ServerConfig::new(union(&self.shared.client))
            .with_server_info(self.shared.implementation.clone());
        match instructions(&self.shared.client) {
            Some(text) => config.with_instructions(text),
            None => config,
        }
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        Box::pin(async move {
            let peer = context.peer.clone();
            let mut result = ServerHandler::initialize(&self.tools, request, context).await?;
            // Made at each start of a session: an upstream that came up since adds its own.
            result.capabilities = union(&self.shared.client);
            result.server_info = self.shared.implementation.clone();
            result.instructions = instructions(&self.shared.client);
            // The latest client is the one the upstreams' own requests go to.
            self.shared.downstream.attach(peer);
            Ok(result)
        })
        .await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        ServerHandler::on_initialized(&self.tools, context).await;
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Box::pin(async move { ServerHandler::list_tools(&self.tools, request, context).await })
            .await
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        ServerHandler::get_tool(&self.tools, name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Box::pin(async move {
            let arguments = Value::Object(request.arguments.unwrap_or_default());
            // The client's `_meta` goes upstream with the call: its progress token above all,
            // so that the upstream's progress notifications name the client's request.
            // Taken rather than copied: the context's `_meta` is not read again.
            let mut context = context;
            let meta = request.meta.or_else(|| {
                (!context.meta.0.is_empty()).then(|| std::mem::take(&mut context.meta))
            });
            let call = self
                .shared
                .client
                .call_tool_with_meta(&request.name, arguments, meta);
            // Dropping the call when the client cancels (or leaves) drops its ticket: recorded
            // as a cancellation, never as the tool's failure; the upstream is told too.
            let mut closing = self.shared.closing.subscribe();
            let guarded = tokio::select! {
                guarded = call => Some(guarded),
                () = context.ct.cancelled() => None,
                _ = closing.wait_for(|closing| *closing) => None,
            };
            let Some(guarded) = guarded else {
                return Err(ErrorData::internal_error(
                    format!("the call to {} was cancelled", request.name),
                    None,
                ));
            };
            // A name that is no tool is answered as a tool error the model reads (the note says
            // what it may call), as reference servers answer it: clients written against them
            // treat a JSON-RPC error on `tools/call` as a broken connection, not a mistake.
            Ok(to_result(guarded).into())
        })
        .await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Box::pin(async move {
            let mut all = Vec::new();
            for (server, peer) in self.shared.upstreams(|c| c.resources.is_some()) {
                match self.shared.pass(&server, peer.list_all_resources()).await {
                    Ok(resources) => {
                        let mut owners = self.shared.owners();
                        for resource in resources {
                            owners
                                .resources
                                .insert(resource.uri.clone(), server.clone());
                            all.push(resource);
                        }
                    }
                    Err(error) => tracing::warn!(%server, %error.message, "resources/list failed"),
                }
            }
            Ok(ListResourcesResult::with_all_items(all))
        })
        .await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Box::pin(async move {
            let mut all = Vec::new();
            for (server, peer) in self.shared.upstreams(|c| c.resources.is_some()) {
                match self
                    .shared
                    .pass(&server, peer.list_all_resource_templates())
                    .await
                {
                    Ok(templates) => {
                        let mut owners = self.shared.owners();
                        for template in templates {
                            let prefix = template
                                .uri_template
                                .split('{')
                                .next()
                                .unwrap_or_default()
                                .to_owned();
                            owners
                                .templates
                                .retain(|(s, p)| !(*s == server && *p == prefix));
                            owners.templates.push((server.clone(), prefix));
                            all.push(template);
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%server, %error.message, "resources/templates/list failed");
                    }
                }
            }
            Ok(ListResourceTemplatesResult::with_all_items(all))
        })
        .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        Box::pin(async move {
            let route = self.shared.resource_route(&request.uri);
            self.shared
                .first_answer(route, "resources", Some(&context), |peer| {
                    let request = request.clone();
                    async move { peer.read_resource_once(request).await }
                })
                .await
        })
        .await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Box::pin(async move {
            let route = self.shared.resource_route(&request.uri);
            self.shared
                .first_answer(route, "resources/subscribe", None, |peer| {
                    let request = request.clone();
                    async move { peer.subscribe(request).await }
                })
                .await
        })
        .await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Box::pin(async move {
            let route = self.shared.resource_route(&request.uri);
            self.shared
                .first_answer(route, "resources/unsubscribe", None, |peer| {
                    let request = request.clone();
                    async move { peer.unsubscribe(request).await }
                })
                .await
        })
        .await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Box::pin(async move {
            let mut all = Vec::new();
            for (server, peer) in self.shared.upstreams(|c| c.prompts.is_some()) {
                match self.shared.pass(&server, peer.list_all_prompts()).await {
                    Ok(prompts) => {
                        let mut owners = self.shared.owners();
                        for prompt in prompts {
                            owners.prompts.insert(prompt.name.clone(), server.clone());
                            all.push(prompt);
                        }
                    }
                    Err(error) => tracing::warn!(%server, %error.message, "prompts/list failed"),
                }
            }
            Ok(ListPromptsResult::with_all_items(all))
        })
        .await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        Box::pin(async move {
            let owner = self.shared.owners().prompts.get(&request.name).cloned();
            let route: Vec<_> = self
                .shared
                .upstreams(|c| c.prompts.is_some())
                .into_iter()
                .filter(|(s, _)| owner.as_ref().is_none_or(|o| o == s))
                .collect();
            self.shared
                .first_answer(route, "prompts", Some(&context), |peer| {
                    let request = request.clone();
                    async move { peer.get_prompt_once(request).await }
                })
                .await
        })
        .await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        Box::pin(async move {
            let owner = match &request.r#ref {
                Reference::Prompt(prompt) => {
                    self.shared.owners().prompts.get(&prompt.name).cloned()
                }
                Reference::Resource(resource) => self
                    .shared
                    .resource_route(&resource.uri)
                    .first()
                    .map(|(s, _)| s.clone()),
                _ => None,
            };
            let route: Vec<_> = self
                .shared
                .upstreams(|c| c.completions.is_some())
                .into_iter()
                .filter(|(s, _)| owner.as_ref().is_none_or(|o| o == s))
                .collect();
            self.shared
                .first_answer(route, "completion", None, |peer| {
                    let request = request.clone();
                    async move { peer.complete(request).await }
                })
                .await
        })
        .await
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Box::pin(async move {
            let upstreams = self.shared.upstreams(|c| c.logging.is_some());
            if upstreams.is_empty() {
                return Err(method_not_found("logging"));
            }
            for (server, peer) in upstreams {
                if let Err(error) = self
                    .shared
                    .pass(&server, peer.set_level(request.clone()))
                    .await
                {
                    tracing::warn!(%server, %error.message, "logging/setLevel failed");
                }
            }
            Ok(())
        })
        .await
    }

    async fn on_roots_list_changed(&self, _context: NotificationContext<RoleServer>) {
        for (server, peer) in self.shared.upstreams(|_| true) {
            if let Err(error) = peer.notify_roots_list_changed().await {
                tracing::debug!(%server, %error, "roots/list_changed not delivered");
            }
        }
    }
}
