//! B17: an upstream's own requests to its client — sampling (its model), elicitation (its
//! user) and roots — reach the client behind the guard and come back with its answer, in the middle of a tool call; a
//! client that does not answer them gives the upstream a clear error, not a hang.

#![allow(deprecated)] // sampling and roots: what protocol 2025-06-18 servers still use

use std::path::Path;
use std::time::Duration;

use agent_circuit_breaker::mcp::rmcp;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientInfo, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationAction, Implementation,
    ListRootsResult, ProtocolVersion, Root, SamplingMessage,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt as _};
use serde_json::{Value, json};

use crate::common::{Spawned, scratch, spawn_guard, text, upstream};

/// A client with a model and roots: it answers the upstreams' requests the guard relays.
#[derive(Clone)]
struct Desk;

impl ClientHandler for Desk {
    fn get_info(&self) -> ClientInfo {
        let capabilities: ClientCapabilities = serde_json::from_value(json!({
            "sampling": {},
            "elicitation": {},
            "roots": { "listChanged": false }
        }))
        .expect("capabilities");
        ClientInfo::new(capabilities, Implementation::new("desk", "1.0.0"))
            .with_protocol_version(ProtocolVersion::V_2025_06_18)
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let asked = serde_json::to_value(&params.messages).unwrap_or_default();
        let question = asked[0]["content"]["text"]
            .as_str()
            .unwrap_or("?")
            .to_owned();
        Ok(CreateMessageResult::new(
            SamplingMessage::assistant_text(format!("42, to {question:?}")),
            "desk-model".to_owned(),
        ))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let asked = serde_json::to_value(&request).unwrap_or_default();
        // The user answers the form the upstream sent, as the upstream sent it.
        let fields = asked["requestedSchema"]["required"].clone();
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({
            "answer": format!("yes, to {:?} (fields {fields})", asked["message"].as_str().unwrap_or("?"))
        })))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Ok(ListRootsResult::new(vec![Root::new(
            "file:///work/project",
        )]))
    }
}

/// A client with neither a model nor roots to give.
#[derive(Clone)]
struct Bare;

impl ClientHandler for Bare {
    fn get_info(&self) -> ClientInfo {
        ClientInfo::new(
            ClientCapabilities::default(),
            Implementation::new("bare", "1.0.0"),
        )
        .with_protocol_version(ProtocolVersion::V_2025_06_18)
    }
}

fn config(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("guard.yaml");
    std::fs::write(
        &path,
        format!(
            "upstreams:\n{}    lifecycle: initialize\n",
            upstream(dir, "asker", "asker")
        ),
    )
    .expect("the config written");
    path
}

async fn call<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    name: &str,
    arguments: Value,
    stderr: &std::sync::Mutex<String>,
) -> rmcp::model::CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object")
    };
    let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
    match tokio::time::timeout(Duration::from_secs(20), client.call_tool(params)).await {
        Ok(Ok(result)) => result,
        Ok(Err(error)) => panic!("{name}: {error}\n{}", stderr.lock().unwrap()),
        Err(_) => panic!("{name} never answered\n{}", stderr.lock().unwrap()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_sampling_elicitation_and_roots_asked_by_an_upstream_reach_the_client_behind_the_guard()
{
    let dir = scratch("relay");
    let Spawned {
        mut child,
        stderr,
        io,
        ..
    } = spawn_guard(&config(&dir));
    let client = Desk.serve(io).await.expect("the guard's initialize");
    let asked = call(
        &client,
        "ask",
        json!({ "question": "what is six times seven?" }),
        &stderr,
    )
    .await;
    assert_ne!(asked.is_error, Some(true), "{asked:?}");
    assert!(
        text(&asked).contains(r#"42, to \"what is six times seven?\""#),
        "{}",
        text(&asked)
    );
    let roots = call(&client, "roots", json!({}), &stderr).await;
    assert_eq!(text(&roots), "roots: file:///work/project");
    let confirmed = call(
        &client,
        "confirm",
        json!({ "question": "delete the branch?" }),
        &stderr,
    )
    .await;
    assert_ne!(confirmed.is_error, Some(true), "{confirmed:?}");
    let said = text(&confirmed);
    assert!(said.starts_with("the user said "), "{said}");
    let answer: Value = serde_json::from_str(&said["the user said ".len()..]).expect("the answer");
    assert_eq!(answer["action"], "accept", "{said}");
    assert_eq!(
        answer["content"]["answer"], r#"yes, to "delete the branch?" (fields ["answer"])"#,
        "{said}"
    );
    // Relayed requests are the upstream's business, not failures of its tools.
    client.cancel().await.expect("the session closes");
    let _ = tokio::time::timeout(Duration::from_secs(20), child.wait()).await;
    let log = stderr.lock().unwrap().clone();
    assert!(log.contains("Failure budget: 0 / 5 consumed"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_a_client_without_a_model_gives_the_upstream_a_clear_error() {
    let dir = scratch("relay-bare");
    // The child is held: dropping it kills the guard.
    let Spawned {
        child: _child,
        stderr,
        io,
        ..
    } = spawn_guard(&config(&dir));
    let client = Bare.serve(io).await.expect("the guard's initialize");
    let asked = call(&client, "ask", json!({ "question": "anyone?" }), &stderr).await;
    // The upstream's own answer to a refused request, passed through as it sent it.
    assert!(
        text(&asked).starts_with("sampling failed:"),
        "{}",
        text(&asked)
    );
    assert!(
        text(&asked).contains("does not support"),
        "{}",
        text(&asked)
    );
    let confirmed = call(
        &client,
        "confirm",
        json!({ "question": "anyone?" }),
        &stderr,
    )
    .await;
    assert!(
        text(&confirmed).starts_with("elicitation failed:")
            && text(&confirmed).contains("does not support elicitation"),
        "{}",
        text(&confirmed)
    );
    let _ = client.cancel().await;
}
