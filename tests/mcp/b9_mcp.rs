//! B9: a guarded toolbox served over MCP, as a client sees it.
//!
//! - in process: rmcp's client against `McpServer` over `tokio::io::duplex`;
//! - the example (`examples/mcp_server`) as a child process over stdio: rmcp's client, and
//!   JSON-RPC lines written by hand, as any other MCP client would send them.
//!
//! What the client receives is asserted: `initialize` (tools with `listChanged`),
//! `tools/list` (names, descriptions, schemas), each call's value, `isError`, the note and
//! `_meta`; the list shrinking and `notifications/tools/list_changed` arriving when a circuit
//! opens, and the tool coming back when a probe closes it.

#![cfg(feature = "mcp")]

#[path = "../common/examples.rs"]
mod examples;
#[path = "../common/mcp_client.rs"]
#[allow(
    dead_code,
    reason = "shared by the MCP tests; not every helper is used in each"
)]
mod mcp_client;
#[path = "../../examples/mcp_server/notes.rs"]
#[allow(
    dead_code,
    reason = "the example's toolbox, shared; not every item is used here"
)]
mod notes;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, mpsc};

use agent_circuit_breaker::CircuitState;
use agent_circuit_breaker::clock::{ManualClock, Timestamp};
use agent_circuit_breaker::mcp::McpServer;
use agent_circuit_breaker::mcp::rmcp;
use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use examples::example_binary;
use mcp_client::{Client, WAIT, Watcher, args, call, list_changed, listed, meta, text};
use notes::{GuardedNotebook, Notebook};

/// The client connected to the notebook served in process; the notebook kept to break and
/// mend its tools.
async fn in_process() -> (Client, UnboundedReceiver<()>, Arc<GuardedNotebook>) {
    // A clock that stands still: a probe is due here by the count alone (the time-based
    // cool-down a server runs with is tested on a moving clock in `b13_time`).
    let clock = ManualClock::new(Timestamp::from_secs(1_796_024_103));
    let guarded = Arc::new(GuardedNotebook::with_expeditor(Notebook::default(), |b| {
        b.clock(clock)
    }));
    let server = McpServer::shared(Arc::clone(&guarded))
        .name("notebook")
        .version("9.9.9");
    let (server_end, client_end) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_end).await {
            let _ = running.waiting().await;
        }
    });
    let (tx, rx) = unbounded_channel();
    let client = Watcher(tx).serve(client_end).await.expect("initialize");
    (client, rx, guarded)
}

fn no_list_changed(changes: &mut UnboundedReceiver<()>) {
    assert!(
        changes.try_recv().is_err(),
        "no list_changed: the offer did not change"
    );
}

#[tokio::test]
async fn initialize_advertises_tools_with_list_changed_and_the_server_name() {
    let (client, _changes, _) = in_process().await;
    let info = client.peer_info().expect("initialized");
    let tools = info.capabilities.tools.as_ref().expect("tools capability");
    assert_eq!(tools.list_changed, Some(true));
    let server = info.server_info.as_ref().expect("serverInfo");
    assert_eq!(
        (server.name.as_str(), server.version.as_str()),
        ("notebook", "9.9.9")
    );
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn tools_list_is_the_offer_with_descriptions_and_schemas() {
    let (client, _changes, _) = in_process().await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["grep", "read", "count_words"]);
    let grep = &tools[0];
    assert_eq!(
        grep.description.as_deref(),
        Some(
            "content search across notes\n\nAnswers the paths of the notes whose text contains `pattern`."
        )
    );
    assert_eq!(
        Value::Object((*grep.input_schema).clone()),
        json!({
            "type": "object",
            "properties": { "pattern": { "type": "string", "description": "the text to look for" } },
            "required": ["pattern"],
            "additionalProperties": false,
        })
    );
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_call_answers_its_value_with_meta() {
    let (client, mut changes, _) = in_process().await;
    let result = call(
        &client,
        "count_words",
        json!({ "text": "three little words" }),
    )
    .await;
    assert_eq!(result.is_error, Some(false));
    assert_eq!(text(&result), "3");
    assert_eq!(meta(&result, "outcome"), Some("answered"));
    assert_eq!(meta(&result, "circuit_state"), Some("CLOSED"));
    assert_eq!(meta(&result, "route"), None);

    let result = call(&client, "grep", json!({ "pattern": "Deploy" })).await;
    assert_eq!(result.is_error, Some(false));
    assert_eq!(text(&result), r#"["notes/deploy.md","notes/release.md"]"#);
    no_list_changed(&mut changes);
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_circuit_opening_shrinks_the_list_and_a_probe_brings_the_tool_back() {
    let (client, mut changes, guarded) = in_process().await;
    assert_eq!(listed(&client).await, ["grep", "read", "count_words"]);
    guarded.toolbox().faults.break_tool("grep", None);

    // Two failures: isError results with the note; the circuit is still CLOSED.
    for _ in 0..2 {
        let result = call(&client, "grep", json!({ "pattern": "Deploy" })).await;
        assert_eq!(result.is_error, Some(true));
        assert_eq!(
            text(&result),
            "grep failed: grep: the index service refused the connection. Do not repeat the \
             same call now; the failure is recorded."
        );
        assert_eq!(meta(&result, "outcome"), Some("failed"));
        assert_eq!(
            meta(&result, "error"),
            Some("grep: the index service refused the connection"),
            "the tool's own message, apart from the note"
        );
        assert_eq!(meta(&result, "circuit_state"), Some("CLOSED"));
    }
    no_list_changed(&mut changes);

    // The third opens it: the note says so, grep leaves the list, the client is told.
    let result = call(&client, "grep", json!({ "pattern": "Deploy" })).await;
    assert_eq!(result.is_error, Some(true));
    // A server heals with time (B15): the note says until when grep is left alone, and what
    // to use instead.
    let note = text(&result);
    assert!(
        note.contains("Its circuit is now OPEN: do not call grep before ")
            && note.contains(", when it is offered again on probation. Instead, use read — read every note and look for the pattern (degradation: loses the index: every note is read in full)."),
        "{note}"
    );
    assert_eq!(meta(&result, "circuit_state"), Some("OPEN"));
    list_changed(&mut changes).await;
    assert_eq!(listed(&client).await, ["read", "count_words"]);

    // Called anyway (a client with an old list): answered through Read, and it says so.
    let result = call(&client, "grep", json!({ "pattern": "Deploy" })).await;
    assert_eq!(result.is_error, Some(false));
    assert_eq!(
        text(&result),
        "[\"notes/deploy.md\",\"notes/release.md\"]\n\n\
         grep is unavailable; answered by read (read every note and look for the pattern) — \
         degradation: loses the index: every note is read in full. Say so where the result is \
         used."
    );
    assert_eq!(meta(&result, "outcome"), Some("answered"));
    assert_eq!(meta(&result, "route"), Some("alternative"));
    assert_eq!(meta(&result, "routed_to"), Some("read"));
    assert_eq!(
        meta(&result, "degradation"),
        Some("loses the index: every note is read in full")
    );
    assert_eq!(meta(&result, "circuit_state"), Some("OPEN"));
    no_list_changed(&mut changes);

    // Mended: the third attempt since opening is the probe; it closes the circuit, grep is
    // offered again and the client is told.
    guarded.toolbox().faults.heal("grep");
    let routed = call(&client, "grep", json!({ "pattern": "Deploy" })).await;
    assert_eq!(meta(&routed, "route"), Some("alternative"));
    no_list_changed(&mut changes);
    let probed = call(&client, "grep", json!({ "pattern": "Deploy" })).await;
    assert_eq!(probed.is_error, Some(false));
    assert_eq!(text(&probed), r#"["notes/deploy.md","notes/release.md"]"#);
    assert_eq!(meta(&probed, "route"), None);
    assert_eq!(meta(&probed, "circuit_state"), Some("CLOSED"));
    list_changed(&mut changes).await;
    assert_eq!(listed(&client).await, ["grep", "read", "count_words"]);
    assert_eq!(
        guarded.expeditor().state(notes::NotebookTool::Grep),
        Some(CircuitState::Closed)
    );
    client.cancel().await.expect("close");
}

/// B9: the offer changed by something other than this client — the toolbox's typed methods
/// in the same process — is announced all the same, with no call from the client.
#[tokio::test]
async fn a_change_made_outside_the_server_is_announced_without_a_call() {
    let (client, mut changes, guarded) = in_process().await;
    assert_eq!(listed(&client).await, ["grep", "read", "count_words"]);
    guarded.toolbox().faults.break_tool("grep", None);
    for _ in 0..3 {
        assert!(guarded.grep("Deploy").is_err());
    }
    list_changed(&mut changes).await;
    assert_eq!(listed(&client).await, ["read", "count_words"]);

    // Brought back outside the server too: a new cycle does not close a circuit, a probe does.
    guarded.toolbox().faults.heal("grep");
    for _ in 0..3 {
        assert!(guarded.grep("Deploy").is_ok(), "routed, then probed");
    }
    assert_eq!(
        guarded.expeditor().state(notes::NotebookTool::Grep),
        Some(CircuitState::Closed)
    );
    list_changed(&mut changes).await;
    assert_eq!(listed(&client).await, ["grep", "read", "count_words"]);
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn a_pause_empties_the_list_and_refusals_are_results() {
    let (client, mut changes, guarded) = in_process().await;
    guarded.toolbox().faults.break_tool("read", None);
    for _ in 0..3 {
        call(&client, "read", json!({ "path": "notes/deploy.md" })).await;
    }
    list_changed(&mut changes).await;
    assert_eq!(listed(&client).await, ["grep", "count_words"]);

    // A second tool failing alike (the same refused connection) opens too: one systemic
    // event, every tool paused, none listed.
    guarded.toolbox().faults.break_tool("count_words", None);
    for _ in 0..3 {
        call(&client, "count_words", json!({ "text": "a" })).await;
    }
    assert!(guarded.expeditor().paused().is_some(), "paused");
    list_changed(&mut changes).await;
    assert_eq!(listed(&client).await, Vec::<String>::new());

    // A call now is refused: an isError result with the pause note, not a JSON-RPC error.
    let refused = call(&client, "grep", json!({ "pattern": "x" })).await;
    assert_eq!(refused.is_error, Some(true));
    assert_eq!(meta(&refused, "outcome"), Some("refused"));
    assert_eq!(meta(&refused, "refusal"), Some("paused"));
    assert!(
        text(&refused).contains("all tools are paused: multiple tools failing with network errors"),
        "{}",
        text(&refused)
    );
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn model_mistakes_are_answered_with_did_you_mean_and_never_charged() {
    let (client, mut changes, guarded) = in_process().await;
    // A tool that does not exist: the spec's protocol error (-32602), the note as message.
    let unknown = client
        .call_tool(
            CallToolRequestParams::new("grpe").with_arguments(args(json!({ "pattern": "x" }))),
        )
        .await
        .expect_err("an unknown tool is a JSON-RPC error");
    let rmcp::ServiceError::McpError(error) = unknown else {
        panic!("a JSON-RPC error, not {unknown:?}");
    };
    assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    assert_eq!(
        error.message,
        "There is no tool named \"grpe\". Did you mean \"grep\"? Tools you may call: grep, \
         read, count_words."
    );
    assert_eq!(
        error.data.as_ref().and_then(|d| d["outcome"].as_str()),
        Some("model_mistake")
    );

    // Arguments that do not fit the schema: a tool execution error (isError), for the model.
    let bad = call(&client, "read", json!({ "file": "notes/deploy.md" })).await;
    assert_eq!(bad.is_error, Some(true));
    assert_eq!(meta(&bad, "outcome"), Some("model_mistake"));
    assert!(text(&bad).starts_with("The arguments for read do not fit its schema"));

    let expeditor = guarded.expeditor();
    assert_eq!(expeditor.budget().consumed(), 0);
    let read = expeditor.tool("read").expect("a tool");
    assert_eq!(
        expeditor
            .breaker(read)
            .expect("a breaker")
            .consecutive_failures(),
        0
    );
    no_list_changed(&mut changes);
    client.cancel().await.expect("close");
}

// ---------------------------------------------------------------------------------------
// The example as a child process.

#[tokio::test]
async fn the_example_over_stdio_with_rmcps_client() {
    let mut command = tokio::process::Command::new(example_binary("mcp_server"));
    command.args(["--break", "grep", "--fail-calls", "3"]);
    let transport = TokioChildProcess::new(command).expect("spawn the example");
    let (tx, mut changes) = unbounded_channel();
    let client = Watcher(tx).serve(transport).await.expect("initialize");
    let info = client.peer_info().expect("initialized");
    assert_eq!(
        info.server_info.as_ref().map(|s| s.name.as_str()),
        Some("notebook")
    );
    assert_eq!(listed(&client).await, ["grep", "read", "count_words"]);

    let result = call(&client, "count_words", json!({ "text": "one two" })).await;
    assert_eq!((result.is_error, text(&result)), (Some(false), "2"));

    for _ in 0..3 {
        let failed = call(&client, "grep", json!({ "pattern": "staging" })).await;
        assert_eq!(failed.is_error, Some(true));
        assert_eq!(meta(&failed, "outcome"), Some("failed"));
    }
    list_changed(&mut changes).await;
    assert_eq!(listed(&client).await, ["read", "count_words"]);

    // grep mended itself after its three failures: routed twice, then probed and closed.
    for _ in 0..2 {
        let routed = call(&client, "grep", json!({ "pattern": "staging" })).await;
        assert_eq!(routed.is_error, Some(false));
        assert_eq!(meta(&routed, "route"), Some("alternative"));
    }
    let probed = call(&client, "grep", json!({ "pattern": "staging" })).await;
    assert_eq!(meta(&probed, "circuit_state"), Some("CLOSED"));
    assert_eq!(text(&probed), r#"["notes/deploy.md","notes/release.md"]"#);
    list_changed(&mut changes).await;
    assert_eq!(listed(&client).await, ["grep", "read", "count_words"]);
    client.cancel().await.expect("close");
}

/// The example driven by hand-written JSON-RPC lines, as any MCP client sends them.
struct RawClient {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
    /// Notifications seen while waiting for responses.
    notifications: Vec<String>,
    next_id: u64,
}

impl RawClient {
    fn spawn(args: &[&str]) -> Self {
        let mut child = Command::new(example_binary("mcp_server"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the example");
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line}"));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        RawClient {
            child,
            stdin,
            lines,
            notifications: Vec::new(),
            next_id: 1,
        }
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").expect("write a line");
        self.stdin.flush().expect("flush");
    }

    fn notify(&mut self, method: &str) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method }));
    }

    /// Sends a request and answers its response, noting the notifications on the way.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        loop {
            let message = self
                .lines
                .recv_timeout(WAIT)
                .unwrap_or_else(|e| panic!("no response to {method} ({e})"));
            if message.get("id") == Some(&json!(id)) {
                assert_eq!(message["jsonrpc"], "2.0");
                return message;
            }
            let notification = message["method"].as_str().expect("a notification");
            self.notifications.push(notification.to_owned());
        }
    }

    /// Waits for a notification, if it has not come already.
    fn expect_notification(&mut self, method: &str) {
        while !self.notifications.iter().any(|n| n == method) {
            let message = self
                .lines
                .recv_timeout(WAIT)
                .unwrap_or_else(|e| panic!("no {method} ({e})"));
            if let Some(n) = message["method"].as_str() {
                self.notifications.push(n.to_owned());
            }
        }
        self.notifications.retain(|n| n != method);
    }

    fn tool_names(&mut self) -> Vec<String> {
        let list = self.request("tools/list", json!({}));
        list["result"]["tools"]
            .as_array()
            .expect("result.tools")
            .iter()
            .map(|t| t["name"].as_str().expect("name").to_owned())
            .collect()
    }
}

impl Drop for RawClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_example_over_stdio_with_hand_written_json_rpc() {
    let mut client = RawClient::spawn(&["--break", "grep"]);
    let init = client.request(
        "initialize",
        json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": { "name": "by-hand", "version": "0.0.1" },
        }),
    );
    let result = &init["result"];
    assert_eq!(result["protocolVersion"], "2025-06-18");
    assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(result["serverInfo"]["name"], "notebook");
    client.notify("notifications/initialized");

    let list = client.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 3);
    assert_eq!(tools[1]["name"], "read");
    assert_eq!(
        tools[1]["description"],
        "note content inspection\n\nAnswers the text of the note at `path`."
    );
    assert_eq!(tools[1]["inputSchema"]["type"], "object");
    assert_eq!(tools[1]["inputSchema"]["required"], json!(["path"]));

    let answered = client.request(
        "tools/call",
        json!({ "name": "read", "arguments": { "path": "notes/oncall.md" } }),
    );
    let result = &answered["result"];
    assert_eq!(result["isError"], false);
    assert_eq!(result["content"][0]["type"], "text");
    assert_eq!(
        result["content"][0]["text"],
        "The on-call rota is in the team calendar. Page via the incident channel."
    );
    assert_eq!(result["_meta"]["outcome"], "answered");
    assert_eq!(result["_meta"]["circuit_state"], "CLOSED");

    for attempt in 1..=3 {
        let failed = client.request(
            "tools/call",
            json!({ "name": "grep", "arguments": { "pattern": "Deploy" } }),
        );
        assert!(
            failed.get("error").is_none(),
            "a result, not an error: {failed}"
        );
        let result = &failed["result"];
        assert_eq!(result["isError"], true);
        assert_eq!(result["_meta"]["outcome"], "failed");
        let note = result["content"][0]["text"].as_str().expect("text");
        assert!(note.starts_with("grep failed: "), "{note}");
        let state = if attempt == 3 { "OPEN" } else { "CLOSED" };
        assert_eq!(result["_meta"]["circuit_state"], state);
    }
    client.expect_notification("notifications/tools/list_changed");
    assert_eq!(client.tool_names(), ["read", "count_words"]);

    let routed = client.request(
        "tools/call",
        json!({ "name": "grep", "arguments": { "pattern": "Deploy" } }),
    );
    let result = &routed["result"];
    assert_eq!(result["isError"], false);
    assert_eq!(result["_meta"]["route"], "alternative");
    assert_eq!(result["_meta"]["routed_to"], "read");
    assert_eq!(
        result["_meta"]["degradation"],
        "loses the index: every note is read in full"
    );
    let text = result["content"][0]["text"].as_str().expect("text");
    assert!(text.contains("degradation: loses the index"), "{text}");

    // Protocol misuse is a JSON-RPC error: a method that does not exist.
    let misuse = client.request("tools/frobnicate", json!({}));
    assert!(misuse.get("error").is_some(), "{misuse}");
}
