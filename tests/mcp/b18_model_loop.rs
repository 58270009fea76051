//! B18: the agent on MCP driven by a real model loop (`mcp_agent --model-url URL --model NAME`),
//! against an OpenAI-compatible endpoint on 127.0.0.1 that replays recorded turns. The turns are
//! a model at its worst: it ignores a note and calls the broken tool again, sends arguments
//! that are not JSON, names a tool that was never offered, and never stops calling tools. The
//! loop ends, accounts for every goal, and every call goes through the guard.

#![cfg(feature = "mcp")]

#[path = "../common/examples.rs"]
mod examples;
#[path = "../common/model_server.rs"]
mod model_server;

use std::process::Command;

use serde_json::Value;

use model_server::{ModelServer, answer, call, calls};

/// The goals of `examples/mcp_agent/model.rs`'s task, in order.
const GOALS: usize = 8;

fn turns() -> Vec<Value> {
    let mut turns = vec![
        // Goal 1: a plain answer.
        calls(vec![call("c1", "list_dir", r#"{"path":"docs"}"#)]),
        answer("DONE: docs/ has the deploy runbook and the changelog"),
        // Goal 2: the broken tool, again and again, whatever the notes say.
        calls(vec![call("c2", "search_files", r#"{"pattern":"staging"}"#)]),
        calls(vec![call("c3", "search_files", r#"{"pattern":"staging"}"#)]),
        calls(vec![call("c4", "search_files", r#"{"pattern":"staging"}"#)]),
        calls(vec![call("c5", "search_files", r#"{"pattern":"staging"}"#)]),
        answer("CANNOT: the search tool is down"),
        // Goal 3: arguments that are not JSON, then a tool nobody offered.
        calls(vec![call("c6", "web_search", r#"{"query": "roll"#)]),
        calls(vec![call("c7", "delete_everything", "{}")]),
        answer("CANNOT: nothing found"),
    ];
    // Goal 4: a model that never stops calling tools (the recording ends with the loop's
    // rounds: the goals after it get the recording's end).
    for i in 0..6 {
        turns.push(calls(vec![call(
            &format!("loop{i}"),
            "read_file",
            r#"{"path":"docs/deploy.md"}"#,
        )]));
    }
    turns
}

#[test]
fn b18_a_model_at_its_worst_cannot_make_the_loop_call_a_tool_unguarded_or_run_forever() {
    let server = ModelServer::start(turns());
    let output = Command::new(examples::example_binary("mcp_agent"))
        .args(["--break", "search_files", "--model-url", &server.url])
        .args(["--model", "replay"])
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("run the MCP agent");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");

    // Every goal accounted for, in order.
    let goals: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("  Goal "))
        .collect();
    assert_eq!(goals.len(), GOALS, "{stdout}");
    assert!(goals[0].starts_with("  Goal 1: done:"), "{stdout}");
    assert!(goals[1].starts_with("  Goal 2: not reached:"), "{stdout}");
    assert!(goals[2].starts_with("  Goal 3: not reached:"), "{stdout}");
    assert!(
        goals[3]
            .starts_with("  Goal 4: given up: the model was still calling tools after 6 rounds"),
        "{stdout}"
    );
    // The broken tool failed three times, then the guard refused it; the bad arguments and
    // the unknown tool were the model's mistakes, never sent on.
    assert!(
        stdout.contains("The model's calls: 13 — 7 answered, 3 failed, 1 refused by the guard, 2 its own mistakes"),
        "{stdout}"
    );
    assert!(stdout.contains("search_files"), "{stdout}");
    assert!(
        stdout.contains("STATUS REPORT") || stdout.contains("PAUSING"),
        "the run ends with the status or pause report: {stdout}"
    );

    // What the model was sent: the offer as its tools, our replies as its tool results under
    // the ids it gave; once search_files is OPEN, it is no longer offered.
    let requests = server.requests();
    assert!(requests.len() >= 19, "{} requests", requests.len());
    let offered = |request: &Value| -> Vec<String> {
        request["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert!(offered(&requests[0]).contains(&"search_files".to_owned()));
    assert!(
        !offered(&requests[6]).contains(&"search_files".to_owned()),
        "{:?}",
        offered(&requests[6])
    );
    let last = requests.last().unwrap();
    let results: Vec<(&str, &str)> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or_default(),
                m["content"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    let ids: Vec<&str> = results.iter().map(|(id, _)| *id).collect();
    assert_eq!(&ids[..7], ["c1", "c2", "c3", "c4", "c5", "c6", "c7"]);
    let note = |id: &str| results.iter().find(|(i, _)| *i == id).unwrap().1;
    assert!(
        note("c5").contains("OPEN") || note("c5").contains("not called"),
        "{}",
        note("c5")
    );
    assert!(
        note("c6").to_lowercase().contains("argument"),
        "{}",
        note("c6")
    );
    assert!(note("c7").contains("delete_everything"), "{}", note("c7"));
    eprintln!(
        "b18: {} model turns replayed; the goals:\n{}",
        requests.len(),
        goals.join("\n")
    );
}
