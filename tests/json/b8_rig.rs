//! B8 through rig (feature `rig`): a guarded toolbox's tools as rig tools. What a rig model
//! receives: the definitions from `#[tool]`, the value, the note on a refusal or a failure
//! (never rig's generic "the tool failed", never an invitation to retry), and the offer —
//! the tools listed to the model shrink the turn after a circuit opens.
//!
//! Through rig's own types (`DynamicTool::definition`, `DynamicTool::execute`, rig-agent's
//! `ToolSet::execute` with a JSON string), and an agent run against rig's scripted model
//! (`MockCompletionModel`), whose recorded requests are what a provider would be sent.

#![cfg(feature = "rig")]

#[path = "../common/mod.rs"]
mod common;

use std::future::IntoFuture as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agent_circuit_breaker::dispatch::ToolDispatch;
use agent_circuit_breaker::rig::RigTools;
use agent_circuit_breaker::rig::rig_core::completion::Message;
use agent_circuit_breaker::rig::rig_core::message::{ToolResult, UserContent};
use agent_circuit_breaker::rig::rig_core::tool::{ToolContext, ToolErrorKind};
use agent_circuit_breaker::{Policy, toolbox};
use common::{assert_no_retry_invitation, block_on};
use rig_agent::tool::ToolSet;
use rig_agent::{Agent, AgentBuilder};
use rig_core::test_utils::{MockCompletionModel, MockTurn};
use serde_json::json;

/// `search` opens after one failure and advises a fallback; `read` always answers.
#[derive(Default)]
pub struct Workspace {
    search_broken: AtomicBool,
}

#[toolbox(json, policy(threshold = 1, budget = 10))]
impl Workspace {
    #[tool(
        provides = "content search across files",
        fallback = "ask the user which files to read"
    )]
    fn search(
        &self,
        /// What to look for.
        query: &str,
    ) -> Result<String, String> {
        if self.search_broken.load(Ordering::SeqCst) {
            return Err("connection refused".to_owned());
        }
        Ok(format!("3 matches for {query}"))
    }

    #[tool(
        provides = "file content inspection",
        fallback = "ask the user to paste the file"
    )]
    fn read(
        &self,
        /// The file to read.
        path: &str,
    ) -> Result<String, String> {
        Ok(format!("contents of {path}"))
    }
}

fn workspace() -> Arc<GuardedWorkspace> {
    let clock = common::clock();
    Arc::new(GuardedWorkspace::with_expeditor(
        Workspace::default(),
        |b| b.clock(clock),
    ))
}

/// A budget of one: the first failure spends it and pauses every tool.
fn workspace_with_budget_one() -> Arc<GuardedWorkspace> {
    let clock = common::clock();
    Arc::new(GuardedWorkspace::with_expeditor(
        Workspace::default(),
        |b| {
            b.clock(clock)
                .policy(Policy::builder().threshold(1).budget(1).build().unwrap())
        },
    ))
}

fn broken(workspace: &GuardedWorkspace) {
    workspace
        .toolbox()
        .search_broken
        .store(true, Ordering::SeqCst);
}

fn names(
    definitions: &[agent_circuit_breaker::rig::rig_core::completion::ToolDefinition],
) -> Vec<String> {
    definitions.iter().map(|d| d.name.to_string()).collect()
}

#[test]
fn b8_rig_definitions_come_from_the_toolbox() {
    let workspace = workspace();
    let tools = RigTools::shared(Arc::clone(&workspace)).tools();
    let definitions: Vec<_> = tools.iter().map(|t| t.definition()).collect();
    assert_eq!(names(&definitions), ["search", "read"]);
    // Declared once, in `#[tool]`: the provides line and the parameter's doc comment.
    assert_eq!(
        definitions[0].description,
        workspace.definitions()[0].description
    );
    assert!(
        definitions[0]
            .description
            .starts_with("content search across files"),
        "{}",
        definitions[0].description
    );
    assert_eq!(
        definitions[0].parameters,
        serde_json::Value::Object(workspace.definitions()[0].input_schema.clone())
    );
    assert_eq!(
        definitions[0].parameters["properties"]["query"]["description"],
        "What to look for."
    );
}

#[test]
fn b8_rig_a_call_answers_with_the_value() {
    let workspace = workspace();
    let tools = RigTools::shared(Arc::clone(&workspace)).tools();
    let output = block_on(tools[0].execute(json!({"query": "TODO"}))).unwrap();
    assert_eq!(output.as_text(), Some("3 matches for TODO"));
}

#[test]
fn b8_rig_a_failure_and_a_refusal_show_the_note_not_rigs_generic_text() {
    let workspace = workspace();
    broken(&workspace);
    let tools = RigTools::shared(Arc::clone(&workspace)).tools();

    // The failure opens the circuit (threshold 1): the model reads what failed and not to
    // call it again.
    let failed = block_on(tools[0].execute(json!({"query": "TODO"}))).unwrap_err();
    let text = failed.model_feedback().unwrap();
    assert!(
        text.starts_with("search failed: connection refused."),
        "{text}"
    );
    assert!(text.contains("do not call search again"), "{text}");
    assert_ne!(text, "the tool failed");
    assert_eq!(failed.message(), "connection refused");
    assert_eq!(failed.kind(), ToolErrorKind::Other);
    assert_eq!(failed.retryable(), Some(false));
    assert_eq!(failed.code(), Some("failed"));
    assert_no_retry_invitation(text);

    // Now OPEN: refused, nothing called, the B7 note with the fallback.
    let refused = block_on(tools[0].execute(json!({"query": "TODO"}))).unwrap_err();
    let note = refused.model_feedback().unwrap();
    assert!(refused.is_refusal());
    assert_eq!(refused.retryable(), Some(false));
    assert_eq!(refused.code(), Some("open"));
    assert!(note.starts_with("search is unavailable"), "{note}");
    assert!(note.contains("ask the user which files to read"), "{note}");
    assert_no_retry_invitation(note);
}

#[test]
fn b8_rig_the_model_reads_the_note_through_rigs_own_tool_result() {
    // rig-agent's ToolSet executes a tool with a JSON string and shapes the ToolResult the
    // agent turns into the model's message (`rig_core::transcript::tool_result_output`).
    let workspace = workspace();
    broken(&workspace);
    let set = ToolSet::from_dynamic_tools(RigTools::shared(Arc::clone(&workspace)).tools());
    let mut context = ToolContext::new();
    let _ = block_on(set.execute("search", r#"{"query":"TODO"}"#, &mut context));
    let result = block_on(set.execute("search", r#"{"query":"TODO"}"#, &mut context));
    assert!(result.is_refused());
    let shown = result.output().as_text().unwrap();
    assert!(shown.starts_with("search is unavailable"), "{shown}");

    // A model's own mistake: said, and charged to nothing.
    let result = block_on(set.execute("read", r#"{"file":"a.rs"}"#, &mut context));
    assert!(result.is_error_kind(ToolErrorKind::InvalidArgs));
    assert!(
        result
            .output()
            .as_text()
            .unwrap()
            .contains("unknown field `file`"),
        "{:?}",
        result.output().as_text()
    );
    assert_eq!(workspace.expeditor().budget().consumed(), 1);
}

#[test]
fn b8_rig_the_offer_lists_only_tools_the_model_may_call() {
    let workspace = workspace();
    let tools = RigTools::shared(Arc::clone(&workspace));
    assert_eq!(tools.len(), 2);
    assert_eq!(tools.offered().len(), 2);
    broken(&workspace);
    let _ = block_on(tools.tools()[0].execute(json!({"query": "x"})));
    let offered: Vec<_> = tools.offered().iter().map(|t| t.definition()).collect();
    assert_eq!(names(&offered), ["read"]);
}

fn tool_result(message: &Message) -> Option<&ToolResult> {
    match message {
        Message::User { content } => content.iter().find_map(|c| match c {
            UserContent::ToolResult(result) => Some(result),
            _ => None,
        }),
        _ => None,
    }
}

fn result_text(result: &ToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .collect::<Vec<_>>()
        .join("")
}

/// A rig agent on the scripted `model` whose tools are `tools`, listed as the offer says (the
/// two lines of glue `docs/guide.md` shows).
fn agent_over<D: ToolDispatch + 'static>(
    tools: &RigTools<D>,
    model: &MockCompletionModel,
) -> Agent {
    AgentBuilder::new(model.clone())
        .retrieved_tools(
            tools.len(),
            tools.index(),
            ToolSet::from_dynamic_tools(tools.tools()),
        )
        .build()
}

/// An agent turn against rig's scripted model: it calls `search`, reads the result, and
/// answers; the requests it was sent are what a provider would be sent.
#[test]
fn b8_rig_agent_the_model_receives_the_value_and_the_offer() {
    let workspace = workspace();
    let tools = RigTools::shared(Arc::clone(&workspace));
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("call-1", "search", json!({"query": "TODO"})),
        MockTurn::text("found them"),
    ]);
    let agent = agent_over(&tools, &model);
    let response = block_on(agent.prompt("find the TODOs").max_turns(3).into_future()).unwrap();
    assert_eq!(response.output(), "found them");

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(names(&requests[0].tools), ["search", "read"]);
    let result = requests[1]
        .chat_history
        .iter()
        .find_map(tool_result)
        .expect("the second request carries the tool result");
    assert!(!result.is_error);
    assert_eq!(result_text(result), "3 matches for TODO");
}

#[test]
fn b8_rig_agent_on_refusal_the_model_reads_the_note_and_the_offer_shrinks() {
    let workspace = workspace();
    broken(&workspace);
    let tools = RigTools::shared(Arc::clone(&workspace));
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("call-1", "search", json!({"query": "TODO"})),
        MockTurn::text("search is down; which files should I read?"),
    ]);
    let agent = agent_over(&tools, &model);
    block_on(agent.prompt("find the TODOs").max_turns(3).into_future()).unwrap();

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    // Offered before the call; the failure opened it, so the next request lists only read.
    assert_eq!(names(&requests[0].tools), ["search", "read"]);
    assert_eq!(names(&requests[1].tools), ["read"]);
    let result = requests[1]
        .chat_history
        .iter()
        .find_map(tool_result)
        .unwrap();
    assert!(result.is_error);
    let text = result_text(result);
    assert!(
        text.starts_with("search failed: connection refused."),
        "{text}"
    );
    assert!(text.contains("do not call search again"), "{text}");
    assert_no_retry_invitation(&text);

    // A model that calls the withheld tool anyway (a stale list) is refused with the note:
    // listed or not, there is no unguarded path.
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("call-2", "search", json!({"query": "TODO"})),
        MockTurn::text("ok"),
    ]);
    let agent = AgentBuilder::new(model.clone())
        .dynamic_tools(tools.tools())
        .build();
    block_on(agent.prompt("find the TODOs").max_turns(3).into_future()).unwrap();
    let requests = model.requests();
    let result = requests[1]
        .chat_history
        .iter()
        .find_map(tool_result)
        .unwrap();
    assert!(result.is_error);
    let note = result_text(result);
    assert!(note.starts_with("search is unavailable"), "{note}");
    assert!(note.contains("ask the user which files to read"), "{note}");
    assert_no_retry_invitation(&note);
}

#[test]
fn b8_rig_agent_while_paused_no_guarded_tool_is_listed() {
    // A budget of one: the first failure spends it and pauses every tool.
    let workspace = workspace_with_budget_one();
    broken(&workspace);
    let tools = RigTools::shared(Arc::clone(&workspace));
    let _ = block_on(tools.tools()[0].execute(json!({"query": "x"})));
    assert!(workspace.expeditor().paused().is_some());
    let model = MockCompletionModel::from_turns([MockTurn::text("stopping")]);
    let agent = agent_over(&tools, &model);
    block_on(agent.prompt("find the TODOs").into_future()).unwrap();
    assert!(model.requests()[0].tools.is_empty());
}
