//! B17: the guarded tools behind the proxy — a dead upstream leaves the offer and its tool
//! routes to the alternative on the other server; arguments that do not fit a tool's schema
//! never reach the upstream; a client leaving mid-call is a cancellation, not a failure.

use std::time::Duration;

use serde_json::json;

use crate::common::{guard_meta, scratch, start, text, two_upstreams, wait_for};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_a_dead_upstream_leaves_the_offer_and_its_tool_routes_to_the_other_server() {
    let dir = scratch("dead");
    let guard = start(&dir, &two_upstreams(&dir)).await;
    let before = guard.tool_names().await;
    for name in ["read_file", "rich", "strict", "cat"] {
        assert!(
            before.contains(&name.to_owned()),
            "{name} offered: {before:?}"
        );
    }
    let answer = guard.call("read_file", json!({ "path": "a.txt" })).await;
    assert_eq!(text(&answer), "contents of a.txt from alpha");

    // alpha dies without a word.
    let alpha = guard.upstream_pid("alpha");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &alpha.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());

    // The next call finds it gone: every tool of alpha opens at once, the model is told
    // where to go instead, and the client is told the offer changed.
    let failed = guard.call("read_file", json!({ "path": "a.txt" })).await;
    assert_eq!(failed.is_error, Some(true), "{failed:?}");
    let meta = guard_meta(&failed);
    assert_eq!(meta["outcome"], "failed", "{meta:?}");
    assert_eq!(meta["server"], "alpha");
    assert!(
        text(&failed).contains("cat"),
        "the note names the alternative: {}",
        text(&failed)
    );
    let told = wait_for(Duration::from_secs(10), || {
        guard.recorder.count("tools/list_changed") > 0
    })
    .await;
    assert!(told, "list_changed never came; stderr:\n{}", guard.stderr());
    let after = guard.tool_names().await;
    for gone in ["read_file", "rich", "strict", "hang"] {
        assert!(
            !after.contains(&gone.to_owned()),
            "{gone} still offered: {after:?}"
        );
    }
    assert!(
        after.contains(&"cat".to_owned()),
        "beta's tool stays: {after:?}"
    );

    // Asked again anyway: refused without a call, routed to beta's cat.
    let refused = guard.call("read_file", json!({ "path": "a.txt" })).await;
    assert_eq!(refused.is_error, Some(true));
    let meta = guard_meta(&refused);
    assert_eq!(meta["outcome"], "refused", "{meta:?}");
    assert_eq!(meta["route"], "alternative");
    assert_eq!(meta["routed_to"], "cat");
    assert!(text(&refused).contains("cat"), "{}", text(&refused));

    // The rest keeps working.
    let cat = guard.call("cat", json!({ "path": "a.txt" })).await;
    assert_eq!(cat.is_error, Some(false), "{cat:?}");
    assert_eq!(text(&cat), "contents of a.txt from beta");
    assert_eq!(guard_meta(&cat)["outcome"], "answered");
    guard.client.cancel().await.expect("the session closes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_arguments_that_do_not_fit_the_schema_never_reach_the_upstream() {
    let dir = scratch("schema");
    let guard = start(&dir, &two_upstreams(&dir)).await;
    for bad in [
        json!({ "n": "seven" }),
        json!({}),
        json!({ "n": 2, "extra": true }),
        // Only the full JSON Schema says so: `minimum`.
        json!({ "n": 0 }),
    ] {
        let answer = guard.call("strict", bad.clone()).await;
        assert_eq!(answer.is_error, Some(true), "{bad}: {answer:?}");
        let meta = guard_meta(&answer);
        assert_eq!(meta["outcome"], "model_mistake", "{bad}: {meta:?}");
        // The model's mistake: the circuit is untouched.
        assert_eq!(meta["circuit_state"], "CLOSED", "{bad}: {meta:?}");
    }
    assert!(
        !guard.upstream_log("alpha").contains("call strict"),
        "a call that did not fit reached alpha:\n{}",
        guard.upstream_log("alpha")
    );
    let fits = guard.call("strict", json!({ "n": 2 })).await;
    assert_eq!(fits.is_error, Some(false), "{fits:?}");
    assert!(
        guard
            .upstream_log("alpha")
            .contains("call strict {\"n\":2}")
    );
    guard.client.cancel().await.expect("the session closes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_a_client_leaving_mid_call_is_recorded_as_a_cancellation() {
    let dir = scratch("leave");
    let guard = start(&dir, &two_upstreams(&dir)).await;
    let peer = guard.client.peer().clone();
    let call = tokio::spawn(async move {
        let params = agent_circuit_breaker::mcp::rmcp::model::CallToolRequestParams::new("hang");
        peer.call_tool(params).await
    });
    let started = wait_for(Duration::from_secs(10), || {
        guard.upstream_log("alpha").contains("call hang")
    })
    .await;
    assert!(started, "hang never reached alpha");
    // The client goes away with the call in flight: the guard's stdin closes.
    let crate::common::Session {
        client,
        stderr,
        mut child,
        ..
    } = guard;
    client.cancel().await.expect("the client closes its end");
    call.abort();
    let exit = tokio::time::timeout(Duration::from_secs(20), child.wait()).await;
    // Its stderr is read to its end once it has exited.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let stderr = stderr.lock().unwrap().clone();
    let status = exit
        .unwrap_or_else(|_| panic!("the guard did not exit when its client left:\n{stderr}"))
        .expect("its status");
    assert!(status.success(), "{status}\n{stderr}");
    // The state table printed at exit: hang was never charged, nothing failed.
    let row = stderr
        .lines()
        .find(|l| l.starts_with("| hang "))
        .unwrap_or_else(|| panic!("no state table at exit:\n{stderr}"));
    assert!(row.contains("| CLOSED ") && row.contains("| 0 "), "{row}");
    assert!(
        stderr.contains("Failure budget: 0 / 5 consumed"),
        "{stderr}"
    );
    // The upstream was told the call was abandoned.
    let told = wait_for(Duration::from_secs(5), || {
        alpha_log(&dir).contains("hang cancelled")
    })
    .await;
    assert!(told, "alpha was not told:\n{}", alpha_log(&dir));
}

fn alpha_log(dir: &std::path::Path) -> String {
    std::fs::read_to_string(dir.join("alpha.log")).unwrap_or_default()
}

/// A name that is no tool is the model's mistake, answered as the reference servers answer
/// it: a tool result with `isError` the model reads (naming the tool it likely meant), not
/// a JSON-RPC error, which clients take for a broken connection. Nothing reaches an upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_a_call_to_a_name_that_is_no_tool_is_an_is_error_result() {
    let dir = scratch("no-tool");
    let guard = start(&dir, &two_upstreams(&dir)).await;
    let params = agent_circuit_breaker::mcp::rmcp::model::CallToolRequestParams::new("read_fil")
        .with_arguments(serde_json::Map::new());
    let answer = guard.client.call_tool(params).await;
    let result = match answer {
        Ok(result) => result,
        Err(error) => panic!("a JSON-RPC error instead of a tool result: {error}"),
    };
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert!(text(&result).contains("read_file"), "{result:?}");
    assert_eq!(
        guard_meta(&result)["outcome"],
        "model_mistake",
        "{result:?}"
    );
    assert!(
        !alpha_log(&dir).contains("read_fil "),
        "{}",
        alpha_log(&dir)
    );
    // The session is still good for the next call.
    let read = guard.call("read_file", json!({ "path": "a.txt" })).await;
    assert_eq!(text(&read), "contents of a.txt from alpha");
}
