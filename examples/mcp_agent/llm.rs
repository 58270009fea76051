//! A real model in the loop: any OpenAI-compatible chat-completions endpoint (OpenAI, Ollama,
//! vLLM, llama.cpp's server), given with `--model-url URL --model NAME`; the key, if the
//! endpoint needs one, from `OPENAI_API_KEY`.
//!
//! The loop works the goals one at a time. For each, the model gets the goal and this turn's
//! offer as its tools; every tool call it makes goes through the guarded client (never to a
//! server directly), and the reply's text — the value and our note — is its tool result. A
//! goal ends when the model answers without a call (`DONE: …` or `CANNOT: …`), or after
//! [`ROUNDS`] rounds of calls, whatever the model does: it may ignore a note, send arguments
//! that are not JSON, name a tool that was never offered, or never stop calling tools, and
//! the loop still ends with every goal accounted for. A pause (the failure budget spent, a
//! systemic failure) ends the run. The HTTP client is `ureq`: blocking, small, rustls; the
//! model's turns are the slow part, and each one runs on a blocking thread.

use std::time::Duration;

use serde_json::{Value, json};

use agent_circuit_breaker::PauseReason;
use agent_circuit_breaker::dispatch::{ModelApi, Reply, ReplyOutcome, ToolCall, ToolDispatch};
use agent_circuit_breaker::mcp::McpClient;

/// The API the endpoint speaks.
const API: ModelApi = ModelApi::OpenAiChat;

/// Rounds of tool calls one goal may take before it is given up.
pub const ROUNDS: usize = 6;

/// The endpoint and the model.
pub struct Endpoint {
    /// The API's base URL (`http://127.0.0.1:11434/v1`): `/chat/completions` is appended.
    pub url: String,
    pub model: String,
    /// `OPENAI_API_KEY`, when set.
    pub key: Option<String>,
}

/// What became of one goal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GoalOutcome {
    /// The model said it reached it (`DONE: …`).
    Done(String),
    /// The model said it could not (`CANNOT: …`), or answered nothing usable.
    NotReached(String),
    /// The model was still calling tools after [`ROUNDS`] rounds.
    GaveUp,
    /// A pause stopped the run before the goal was worked.
    NotAttempted(String),
}

/// What the loop counted: every call the model asked for, by what became of it.
#[derive(Debug, Default)]
pub struct Tally {
    pub calls: usize,
    pub answered: usize,
    pub failed: usize,
    pub refused: usize,
    pub mistakes: usize,
}

const SYSTEM: &str = "You are an agent working a task with tools, one goal at a time. Use only \
the tools offered; a tool result may end with a note from the tool guard: follow it (it says \
when a tool is down and what to use instead). When the goal is reached, answer without calling \
a tool, starting with `DONE:` and one line of what you found. When it cannot be reached with the \
tools offered, answer starting with `CANNOT:` and why.";

/// Works every goal with the model behind `endpoint`, through `tools`.
pub async fn run(
    endpoint: &Endpoint,
    tools: &McpClient,
    goals: &[&str],
) -> Result<(Vec<GoalOutcome>, Tally), String> {
    let mut messages = vec![json!({"role": "system", "content": SYSTEM})];
    let mut outcomes = Vec::new();
    let mut tally = Tally::default();
    for (i, goal) in goals.iter().enumerate() {
        if let Some(pause) = tools.expeditor().paused() {
            outcomes.push(GoalOutcome::NotAttempted(paused(pause)));
            continue;
        }
        println!("[goal {}] {goal}", i + 1);
        messages.push(json!({"role": "user", "content": format!("Goal {}: {goal}", i + 1)}));
        let outcome = work_goal(endpoint, tools, &mut messages, &mut tally).await?;
        println!("[goal {}] {}", i + 1, describe(&outcome));
        outcomes.push(outcome);
    }
    Ok((outcomes, tally))
}

/// One goal: rounds of the model's calls, each through the guard, until it answers.
async fn work_goal(
    endpoint: &Endpoint,
    tools: &McpClient,
    messages: &mut Vec<Value>,
    tally: &mut Tally,
) -> Result<GoalOutcome, String> {
    for _ in 0..ROUNDS {
        tools.expeditor().advance_step();
        tools.check().await;
        // This turn's offer, as chat-completions tools (strict where the schema allows).
        let offered = tools.offered_for(API);
        let names: Vec<&str> = offered
            .iter()
            .filter_map(|t| t.pointer("/function/name").and_then(Value::as_str))
            .collect();
        let message = complete(endpoint, messages, &offered).await?;
        let calls = message
            .get("tool_calls")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        messages.push(assistant(&message, &calls));
        if calls.is_empty() {
            let text = message
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .trim()
                .to_owned();
            return Ok(match text.strip_prefix("DONE:") {
                Some(found) => GoalOutcome::Done(found.trim().to_owned()),
                None => GoalOutcome::NotReached(
                    text.strip_prefix("CANNOT:")
                        .unwrap_or(&text)
                        .trim()
                        .to_owned(),
                ),
            });
        }
        for raw in &calls {
            let Some(call) = ToolCall::from_api(API, raw) else {
                continue;
            };
            let shown = match &call.arguments {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            println!(
                "  offered: {}\n  model → {} {shown}",
                names.join(", "),
                call.name
            );
            // Arguments that are not JSON came as a string: the dispatcher answers them as
            // the model's mistake, never sent to a tool, never charged.
            let reply = tools.dispatch_call(call).await;
            count(tally, &reply);
            let mark = if reply.is_error() { "✗" } else { "✓" };
            for (i, line) in reply
                .text()
                .lines()
                .filter(|l| !l.is_empty())
                .take(3)
                .enumerate()
            {
                let line: String = line.chars().take(110).collect();
                println!("  {} {line}", if i == 0 { mark } else { " " });
            }
            // Our reply, as the tool result under the id the model gave.
            messages.push(reply.to_message(API));
        }
        if let Some(pause) = tools.expeditor().paused() {
            return Ok(GoalOutcome::NotReached(paused(pause)));
        }
    }
    Ok(GoalOutcome::GaveUp)
}

/// Why the run paused, in a few words.
fn paused(pause: PauseReason) -> String {
    match pause {
        PauseReason::BudgetExhausted { consumed, limit } => {
            format!("paused: the failure budget is spent ({consumed} / {limit})")
        }
        PauseReason::Systemic { .. } => "paused: a systemic failure".to_owned(),
        PauseReason::MistakeLimit { count, limit } => {
            format!("paused: {count} of the model's calls were mistakes (limit {limit})")
        }
        _ => "paused".to_owned(),
    }
}

fn count(tally: &mut Tally, reply: &Reply) {
    tally.calls += 1;
    match reply.outcome {
        ReplyOutcome::Answered => tally.answered += 1,
        ReplyOutcome::Failed { .. } => tally.failed += 1,
        ReplyOutcome::Refused { .. } => tally.refused += 1,
        ReplyOutcome::Mistake(_) => tally.mistakes += 1,
    }
}

/// The assistant's message as the conversation keeps it: its text and its calls.
fn assistant(message: &Value, calls: &[Value]) -> Value {
    let mut kept = json!({"role": "assistant", "content": message.get("content").cloned().unwrap_or(Value::Null)});
    if !calls.is_empty() {
        kept["tool_calls"] = Value::Array(calls.to_vec());
    }
    kept
}

/// One turn of the model: the conversation and the offer in, its message out.
async fn complete(
    endpoint: &Endpoint,
    messages: &[Value],
    tools: &[Value],
) -> Result<Value, String> {
    let url = format!("{}/chat/completions", endpoint.url.trim_end_matches('/'));
    let mut body = json!({"model": endpoint.model, "messages": messages});
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools.to_vec());
    }
    let key = endpoint.key.clone();
    let answer = tokio::task::spawn_blocking(move || -> Result<Value, String> {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(300)))
            .http_status_as_error(false)
            .build()
            .new_agent();
        let mut request = agent.post(&url);
        if let Some(key) = &key {
            request = request.header("Authorization", &format!("Bearer {key}"));
        }
        let mut response = request
            .send_json(&body)
            .map_err(|e| format!("POST {url}: {e}"))?;
        let status = response.status();
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| format!("POST {url}: reading the answer: {e}"))?;
        if !status.is_success() {
            return Err(format!("POST {url}: {status}: {}", clip(&text, 300)));
        }
        serde_json::from_str(&text)
            .map_err(|e| format!("POST {url}: not JSON ({e}): {}", clip(&text, 300)))
    })
    .await
    .map_err(|e| format!("the model's turn: {e}"))??;
    answer
        .pointer("/choices/0/message")
        .cloned()
        .ok_or_else(|| {
            format!(
                "no choices[0].message in the answer: {}",
                clip(&answer.to_string(), 300)
            )
        })
}

fn clip(text: &str, n: usize) -> String {
    text.chars().take(n).collect()
}

pub fn describe(outcome: &GoalOutcome) -> String {
    match outcome {
        GoalOutcome::Done(found) => format!("done: {found}"),
        GoalOutcome::NotReached(why) => format!("not reached: {why}"),
        GoalOutcome::GaveUp => {
            format!("given up: the model was still calling tools after {ROUNDS} rounds")
        }
        GoalOutcome::NotAttempted(why) => format!("not attempted: {why}"),
    }
}
