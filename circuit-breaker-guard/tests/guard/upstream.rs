//! The upstream MCP servers the guard is tested against: this test binary run again as a
//! child of the guard (`upstream::upstream_server --exact`), serving rmcp on its stdio when
//! `GUARD_TEST_UPSTREAM` says which server to be. What each one is asked is appended to the
//! file `GUARD_TEST_LOG` names, so that a test can tell what reached it.
//!
//! - `alpha`: tools `read_file`, `rich` (every content type, structured content, `_meta`),
//!   `fail`, `hang`, `strict` (a schema that rejects), `progress`, `log`; a resource, a
//!   template, a prompt; completion and logging.
//! - `beta`: tool `cat` (the overlay's alternative of `read_file`), a resource, a prompt.
//! - `asker`: on protocol 2025-06-18 (later revisions forbid a server's requests to its
//!   client), tools `ask` (asks its client's model: sampling), `roots` (asks its client's
//!   roots) and `confirm` (asks its client's user: elicitation), each answering with what its
//!   client answered.
//! - `garbage`: prints lines that are no JSON-RPC, then exits.
//! - `silent`: reads its input and never answers.

#![allow(deprecated)] // logging: the tests use what desktop clients still use

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_circuit_breaker::mcp::rmcp;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    LoggingMessageNotificationParam, PaginatedRequestParams, ProgressNotificationParam,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ServerCapabilities,
    ServerConfig, SetLevelRequestParams, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt as _};
use serde_json::{Value, json};

/// What `rich` answers: every content type, structured content and the server's `_meta`.
pub fn rich_result() -> Value {
    json!({
        "content": [
            { "type": "text", "text": "{\"n\": 1,   \"spaced\": true}" },
            { "type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png" },
            { "type": "audio", "data": "UklGRg==", "mimeType": "audio/wav" },
            { "type": "resource_link", "uri": "mem://alpha/readme", "name": "readme", "mimeType": "text/plain" },
            { "type": "resource", "resource": { "uri": "mem://alpha/blob", "mimeType": "application/octet-stream", "blob": "AAEC" } },
            { "type": "text", "text": "annotated", "annotations": { "audience": ["user"], "priority": 0.5 } }
        ],
        "structuredContent": { "n": 1, "nested": { "list": [1, 2.5, "three", null] } },
        "isError": false,
        "_meta": { "example.com/trace": "abc-123", "progressTotal": 3 }
    })
}

fn tool(name: &str, description: &str, schema: Value) -> Tool {
    let Value::Object(schema) = schema else {
        unreachable!("the schemas below are objects")
    };
    Tool::new_with_raw(
        name.to_owned(),
        Some(description.to_owned().into()),
        Arc::new(schema),
    )
}

fn path_schema() -> Value {
    json!({ "type": "object", "properties": { "path": { "type": "string" } }, "required": ["path"] })
}

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("a result the spec allows")
}

#[derive(Clone)]
pub struct Upstream {
    flavor: String,
    log: Option<PathBuf>,
}

impl Upstream {
    /// The server `flavor` in this process, its requests noted in `log`.
    pub fn new(flavor: &str, log: PathBuf) -> Self {
        Upstream {
            flavor: flavor.to_owned(),
            log: Some(log),
        }
    }
}

impl Upstream {
    fn note(&self, line: &str) {
        if let Some(path) = &self.log
            && let Ok(mut file) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
        {
            let _ = writeln!(file, "{line}");
        }
    }

    fn alpha(&self) -> bool {
        self.flavor == "alpha"
    }
}

impl ServerHandler for Upstream {
    fn get_info(&self) -> ServerConfig {
        let mut caps = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_prompts()
            .build();
        if self.alpha() {
            caps.logging = Some(Default::default());
            caps.completions = Some(Default::default());
        }
        let config = ServerConfig::new(caps)
            .with_server_info(Implementation::new(self.flavor.clone(), "1.0.0"))
            .with_instructions(format!("the {} test server", self.flavor));
        if self.flavor == "asker" {
            config.with_protocol_version(rmcp::model::ProtocolVersion::V_2025_06_18)
        } else {
            config
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = if self.alpha() {
            vec![
                tool("read_file", "Reads a file.", path_schema()),
                tool(
                    "rich",
                    "Answers with every content type.",
                    json!({ "type": "object" }),
                ),
                tool("fail", "Always fails.", json!({ "type": "object" })),
                tool("hang", "Never answers.", json!({ "type": "object" })),
                tool(
                    "strict",
                    "Takes a positive integer.",
                    json!({
                        "type": "object",
                        "properties": { "n": { "type": "integer", "minimum": 1 } },
                        "required": ["n"],
                        "additionalProperties": false
                    }),
                ),
                tool(
                    "progress",
                    "Reports progress twice.",
                    json!({ "type": "object" }),
                ),
                tool("log", "Logs a message.", json!({ "type": "object" })),
            ]
        } else if self.flavor == "asker" {
            vec![
                tool(
                    "ask",
                    "Asks the client's model.",
                    json!({ "type": "object", "properties": { "question": { "type": "string" } } }),
                ),
                tool(
                    "roots",
                    "Lists the client's roots.",
                    json!({ "type": "object" }),
                ),
                tool(
                    "confirm",
                    "Asks the client's user.",
                    json!({ "type": "object", "properties": { "question": { "type": "string" } } }),
                ),
            ]
        } else {
            vec![tool("cat", "Prints a file (beta's copy).", path_schema())]
        };
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        self.note(&format!("call {} {args}", request.name));
        let path = args.get("path").and_then(Value::as_str).unwrap_or("?");
        let result: CallToolResult = match request.name.as_ref() {
            "read_file" | "cat" => CallToolResult::success(vec![rmcp::model::ContentBlock::text(
                format!("contents of {path} from {}", self.flavor),
            )]),
            "rich" => from(rich_result()),
            "ask" => {
                let question = args.get("question").and_then(Value::as_str).unwrap_or("?");
                let params = rmcp::model::CreateMessageRequestParams::new(
                    vec![rmcp::model::SamplingMessage::user_text(question)],
                    64,
                );
                match context.peer.create_message(params).await {
                    Ok(answer) => {
                        let text = serde_json::to_value(&answer.message.content)
                            .unwrap_or_default()
                            .to_string();
                        CallToolResult::success(vec![rmcp::model::ContentBlock::text(format!(
                            "the model said {text}"
                        ))])
                    }
                    Err(error) => CallToolResult::error(vec![rmcp::model::ContentBlock::text(
                        format!("sampling failed: {error}"),
                    )]),
                }
            }
            "confirm" => {
                let question = args.get("question").and_then(Value::as_str).unwrap_or("?");
                // Sent as a plain request: the peer's own method needs rmcp's `elicitation`
                // feature, which only this test would turn on.
                let request: rmcp::model::ServerRequest = from(json!({
                    "method": "elicitation/create",
                    "params": {
                        "mode": "form",
                        "message": question,
                        "requestedSchema": {
                            "type": "object",
                            "properties": { "answer": { "type": "string" } },
                            "required": ["answer"]
                        }
                    }
                }));
                match context.peer.send_request(request).await {
                    Ok(answer) => {
                        CallToolResult::success(vec![rmcp::model::ContentBlock::text(format!(
                            "the user said {}",
                            serde_json::to_value(&answer).unwrap_or_default()
                        ))])
                    }
                    Err(error) => CallToolResult::error(vec![rmcp::model::ContentBlock::text(
                        format!("elicitation failed: {error}"),
                    )]),
                }
            }
            "roots" => match context.peer.list_roots().await {
                Ok(roots) => {
                    let uris: Vec<String> = roots.roots.iter().map(|r| r.uri.clone()).collect();
                    CallToolResult::success(vec![rmcp::model::ContentBlock::text(format!(
                        "roots: {}",
                        uris.join(", ")
                    ))])
                }
                Err(error) => CallToolResult::error(vec![rmcp::model::ContentBlock::text(
                    format!("roots failed: {error}"),
                )]),
            },
            "fail" => {
                CallToolResult::error(vec![rmcp::model::ContentBlock::text("the disk is on fire")])
            }
            "hang" => {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(3600)) => {}
                    () = context.ct.cancelled() => self.note("hang cancelled"),
                }
                CallToolResult::success(vec![])
            }
            "strict" => CallToolResult::success(vec![rmcp::model::ContentBlock::text("ok")]),
            "progress" => {
                if let Some(token) = context.meta.get_progress_token() {
                    for step in 1..=2 {
                        let param: ProgressNotificationParam = from(json!({
                            "progressToken": token, "progress": step, "total": 2
                        }));
                        let _ = context.peer.notify_progress(param).await;
                    }
                }
                CallToolResult::success(vec![rmcp::model::ContentBlock::text("done")])
            }
            "log" => {
                let param: LoggingMessageNotificationParam =
                    from(json!({ "level": "warning", "data": "alpha says hello" }));
                let _ = context.peer.notify_logging_message(param).await;
                CallToolResult::success(vec![rmcp::model::ContentBlock::text("logged")])
            }
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let uri = if self.alpha() {
            "mem://alpha/readme"
        } else {
            "mem://beta/notes"
        };
        Ok(from(
            json!({ "resources": [{ "uri": uri, "name": uri, "mimeType": "text/plain" }] }),
        ))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let templates = if self.alpha() {
            json!([{ "uriTemplate": "mem://alpha/items/{id}", "name": "item" }])
        } else {
            json!([])
        };
        Ok(from(json!({ "resourceTemplates": templates })))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.note(&format!("read {}", request.uri));
        let prefix = format!("mem://{}/", self.flavor);
        if !request.uri.starts_with(&prefix) {
            return Err(ErrorData::resource_not_found(
                format!("no {}", request.uri),
                None,
            ));
        }
        let result: ReadResourceResult = from(json!({
            "contents": [{ "uri": request.uri, "mimeType": "text/plain", "text": format!("{} of {}", request.uri, self.flavor) }]
        }));
        Ok(result.into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let name = if self.alpha() { "greet" } else { "summarize" };
        Ok(from(
            json!({ "prompts": [{ "name": name, "description": format!("{name} of {}", self.flavor) }] }),
        ))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let result: GetPromptResult = from(json!({
            "description": format!("{} from {}", request.name, self.flavor),
            "messages": [{ "role": "user", "content": { "type": "text", "text": format!("{} please", request.name) } }]
        }));
        Ok(result.into())
    }

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        Ok(from(
            json!({ "completion": { "values": ["alpha-1", "alpha-2"], "hasMore": false } }),
        ))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.note(&format!("level {:?}", request.level));
        Ok(())
    }
}

/// Not a test of its own: the upstream server, when the guard runs this binary as one.
#[test]
fn upstream_server() {
    let Ok(flavor) = std::env::var("GUARD_TEST_UPSTREAM") else {
        return;
    };
    let log = std::env::var_os("GUARD_TEST_LOG").map(PathBuf::from);
    let upstream = Upstream { flavor, log };
    upstream.note(&format!("pid {}", std::process::id()));
    // The guard's end of the pipe (`common::upstream`): the harness's own stdout is not.
    let Ok(mut out) = std::fs::OpenOptions::new().write(true).open("/dev/fd/3") else {
        panic!("an upstream is started with the guard's pipe as descriptor 3");
    };
    match upstream.flavor.as_str() {
        "garbage" => {
            for _ in 0..3 {
                let _ = writeln!(out, "hello, I am not JSON-RPC {{[");
            }
            let _ = out.flush();
            return;
        }
        "silent" => {
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            return;
        }
        _ => {}
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async move {
        let transport = (tokio::io::stdin(), tokio::fs::File::from_std(out));
        let running = upstream
            .serve(transport)
            .await
            .expect("the guard's initialize");
        let _ = running.waiting().await;
    });
}
