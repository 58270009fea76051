//! B17: a model's arguments checked by the MCP client against a foreign tool's full input
//! schema (JSON Schema 2020-12), before any call — against a real rmcp server in process
//! (over `tokio::io::duplex`) that counts the calls it receives.
//!
//! Asserted: arguments that break `pattern`, `minimum`, `enum`, `oneOf` or a property
//! reached through `$ref`/`$defs` are refused with a note naming the keyword and the path,
//! the server is never called and nothing is charged; arguments that fit (a `format` the
//! value does not meet included: it is not asserted) reach the server; hostile schemas (an
//! invalid regex, a `$ref` to another document, deep nesting, a `$ref` cycle) neither panic
//! nor block: their tools are offered and their arguments left to the server.

#![cfg(feature = "mcp")]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use agent_circuit_breaker::dispatch::{ReplyOutcome, ToolDispatch};
use agent_circuit_breaker::mcp::McpClient;
use agent_circuit_breaker::mcp::rmcp;
use agent_circuit_breaker::report::ModelMistake;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt as _};
use serde_json::{Value, json};

/// How long anything here may take: a schema that blocked would hold a call past it.
const LIMIT: Duration = Duration::from_secs(20);

/// A server whose tools have demanding schemas, counting the calls that reach it.
#[derive(Clone, Default)]
struct Typed {
    calls: Arc<AtomicU32>,
}

fn tool(name: &str, schema: Value) -> Tool {
    let Value::Object(schema) = schema else {
        panic!("an object schema")
    };
    Tool::new_with_raw(name.to_owned(), Some("A tool.".into()), Arc::new(schema))
}

/// `{"type":"object","properties":{"a": ...}}` nested `levels` deep.
fn nested(levels: usize) -> Value {
    (0..levels).fold(
        json!({ "type": "integer" }),
        |inner, _| json!({ "type": "object", "properties": { "a": inner } }),
    )
}

fn tools() -> Vec<Tool> {
    vec![
        tool(
            "book_room",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {
                    "day": { "type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$" },
                    "room": {
                        "type": "object",
                        "properties": {
                            "floor": { "type": "integer", "minimum": 0, "maximum": 9 },
                            "kind": { "enum": ["meeting", "quiet", "lab"] }
                        },
                        "required": ["floor", "kind"]
                    }
                },
                "properties": {
                    "room": { "$ref": "#/$defs/room" },
                    "day": { "$ref": "#/$defs/day" },
                    "contact": {
                        "oneOf": [
                            { "type": "string", "format": "email" },
                            { "type": "integer", "minimum": 1000 }
                        ]
                    }
                },
                "required": ["room", "day"],
                "additionalProperties": false
            }),
        ),
        tool(
            "bad_regex",
            json!({ "type": "object", "properties": { "q": { "type": "string", "pattern": "([a-z" } } }),
        ),
        tool(
            "remote_ref",
            json!({ "type": "object", "properties": { "q": { "$ref": "https://schemas.example.invalid/q.json" } } }),
        ),
        tool("deep", nested(50)),
        tool(
            "ref_cycle",
            json!({
                "type": "object",
                "$defs": { "a": { "$ref": "#/$defs/b" }, "b": { "$ref": "#/$defs/a" } },
                "properties": { "q": { "$ref": "#/$defs/a" } }
            }),
        ),
    ]
}

impl ServerHandler for Typed {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(
            CallToolResult::success(vec![ContentBlock::text(format!("{} done", request.name))])
                .into(),
        )
    }
}

async fn connect(server: &Typed) -> McpClient {
    let server = server.clone();
    let build = McpClient::builder()
        .connect("rooms", move || {
            let server = server.clone();
            async move {
                let (server_end, client_end) = tokio::io::duplex(1 << 20);
                tokio::spawn(async move {
                    if let Ok(running) = server.serve(server_end).await {
                        let _ = running.waiting().await;
                    }
                });
                Ok::<_, std::io::Error>(client_end)
            }
        })
        .build();
    tokio::time::timeout(LIMIT, build)
        .await
        .expect("listing hostile schemas does not block")
        .expect("the client connects")
}

fn consumed(client: &McpClient) -> u32 {
    client.expeditor().budget().status().consumed
}

fn mistake(reply: &agent_circuit_breaker::dispatch::Reply) -> &str {
    match &reply.outcome {
        ReplyOutcome::Mistake(ModelMistake::BadArguments { message, .. }) => message,
        other => panic!("the model's mistake, not {other:?}: {}", reply.text()),
    }
}

#[tokio::test]
async fn b17_arguments_that_break_the_schema_are_refused_before_the_server() {
    let server = Typed::default();
    let client = connect(&server).await;
    let good = json!({
        "room": { "floor": 3, "kind": "quiet" },
        "day": "2026-12-05",
        "contact": "not an address"
    });
    let cases = [
        (
            json!({ "room": { "floor": 3, "kind": "quiet" }, "day": "5 December" }),
            "pattern",
            "/day",
        ),
        (
            json!({ "room": { "floor": -1, "kind": "quiet" }, "day": "2026-12-05" }),
            "minimum",
            "/room/floor",
        ),
        (
            json!({ "room": { "floor": 2, "kind": "party" }, "day": "2026-12-05" }),
            "enum",
            "/room/kind",
        ),
        (
            json!({ "room": { "floor": 2, "kind": "lab" }, "day": "2026-12-05", "contact": 12 }),
            "oneOf",
            "/contact",
        ),
        (
            json!({ "room": { "floor": 2 }, "day": "2026-12-05" }),
            "required",
            "/room",
        ),
    ];
    for (arguments, keyword, path) in cases {
        let reply = tokio::time::timeout(LIMIT, client.call("book_room", arguments.clone()))
            .await
            .expect("no block");
        let message = mistake(&reply);
        assert!(
            message.contains(&format!("(keyword `{keyword}`)"))
                && message.starts_with(&format!("at `{path}`: ")),
            "{keyword} at {path}: {message}"
        );
        assert!(message.chars().count() < 400, "short: {message}");
        assert!(
            reply.text().contains(message),
            "the model reads it: {}",
            reply.text()
        );
    }
    let unknown = client
        .call(
            "book_room",
            json!({ "room": { "floor": 1, "kind": "lab" }, "dya": "2026-12-05" }),
        )
        .await;
    let message = mistake(&unknown);
    assert!(message.contains("did you mean `day`?"), "{message}");
    assert_eq!(server.calls.load(Ordering::SeqCst), 0, "never forwarded");
    assert_eq!(consumed(&client), 0, "never charged");
    let id = client.expeditor().tool("book_room").unwrap();
    assert_eq!(
        client
            .expeditor()
            .breaker(id)
            .unwrap()
            .consecutive_failures(),
        0
    );
    let table = client.expeditor().state_table().to_string();
    assert!(table.contains("Model mistakes: 6"), "{table}");

    // What fits is called, `format` not asserted (an annotation in 2020-12).
    let reply = client.call("book_room", good).await;
    assert!(!reply.is_error(), "{}", reply.text());
    assert_eq!(server.calls.load(Ordering::SeqCst), 1);
    let reply = client
        .call("book_room", json!({ "room": { "floor": 9, "kind": "meeting" }, "day": "2026-01-31", "contact": 4242 }))
        .await;
    assert!(
        !reply.is_error(),
        "the other branch of oneOf: {}",
        reply.text()
    );
    assert_eq!(server.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn b17_hostile_schemas_neither_panic_nor_block() {
    let server = Typed::default();
    let client = connect(&server).await;
    let offered: Vec<String> = client.offered().into_iter().map(|d| d.name).collect();
    for name in ["bad_regex", "remote_ref", "deep", "ref_cycle"] {
        assert!(
            offered.iter().any(|o| o == name),
            "{name} offered: {offered:?}"
        );
    }
    // Their arguments are checked as an object only: the server judges the rest.
    for (name, arguments) in [
        ("bad_regex", json!({ "q": "abc" })),
        ("remote_ref", json!({ "q": 1 })),
        ("deep", json!({ "a": { "a": "not an integer" } })),
        ("ref_cycle", json!({ "q": [1, 2, 3] })),
    ] {
        let reply = tokio::time::timeout(LIMIT, client.call(name, arguments))
            .await
            .unwrap_or_else(|_| panic!("{name} does not block"));
        assert!(!reply.is_error(), "{name}: {}", reply.text());
    }
    assert_eq!(server.calls.load(Ordering::SeqCst), 4);
    for name in ["bad_regex", "remote_ref", "deep", "ref_cycle"] {
        let reply = client.call(name, json!("not an object")).await;
        assert_eq!(
            mistake(&reply),
            "the arguments must be a JSON object, not a string"
        );
    }
    assert_eq!(server.calls.load(Ordering::SeqCst), 4, "not forwarded");
    assert_eq!(consumed(&client), 0);
}
