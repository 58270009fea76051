//! B17: what passes through the guard — a tool's result as the upstream sent it (every
//! content type, structured content, the upstream's `_meta`) with the guard's data beside it;
//! resources, templates, prompts, completion, logging and progress from several upstreams.

#![allow(deprecated)] // logging: what desktop clients still use

use std::time::Duration;

use agent_circuit_breaker::mcp::rmcp;
use rmcp::model::{
    CallToolRequestParams, CompleteRequestParams, GetPromptRequestParams, LoggingLevel,
    ReadResourceRequestParams, RequestMetaObject, SetLevelRequestParams,
};
use serde_json::{Value, json};

use crate::common::{META_KEY, guard_meta, scratch, start, text, two_upstreams, wait_for};
use crate::upstream::rich_result;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_results_pass_through_untouched_with_the_guards_meta_beside_them() {
    let dir = scratch("rich");
    let guard = start(&dir, &two_upstreams(&dir)).await;
    let result = guard.call("rich", json!({})).await;
    let meta = guard_meta(&result);
    assert_eq!(meta["outcome"], "answered");
    assert_eq!(meta["server"], "alpha");
    assert_eq!(meta["circuit_state"], "CLOSED");
    let mut seen = serde_json::to_value(&result).expect("a result serialises");
    seen["_meta"]
        .as_object_mut()
        .expect("_meta")
        .remove(META_KEY);
    assert_eq!(seen, rich_result(), "the upstream's result, changed");

    // An upstream's own error passes through too, the guard's note after it.
    let failed = guard.call("fail", json!({})).await;
    assert_eq!(failed.is_error, Some(true));
    let first = failed
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.as_str());
    assert_eq!(first, Some("the disk is on fire"));
    assert_eq!(guard_meta(&failed)["outcome"], "failed");
    guard.client.cancel().await.expect("the session closes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_resources_prompts_completion_logging_and_progress_pass_through() {
    let dir = scratch("pass");
    let guard = start(&dir, &two_upstreams(&dir)).await;
    let client = &guard.client;
    let info = client.peer_info().expect("the guard's initialize result");
    let caps = &info.capabilities;
    assert!(
        caps.resources.is_some() && caps.prompts.is_some(),
        "{caps:?}"
    );
    assert!(
        caps.completions.is_some() && caps.logging.is_some(),
        "{caps:?}"
    );
    assert!(caps.tools.as_ref().and_then(|t| t.list_changed) == Some(true));

    let resources = client.list_all_resources().await.expect("resources/list");
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["mem://alpha/readme", "mem://beta/notes"]);
    for (uri, from) in [
        ("mem://alpha/readme", "alpha"),
        ("mem://beta/notes", "beta"),
    ] {
        let read = client
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .expect("resources/read");
        let body = serde_json::to_value(&read.contents).expect("contents");
        assert_eq!(body[0]["text"], format!("{uri} of {from}"), "{body}");
    }
    assert!(
        !guard.upstream_log("beta").contains("read mem://alpha"),
        "a read sent to the wrong upstream"
    );
    let templates = client
        .list_all_resource_templates()
        .await
        .expect("templates/list");
    assert_eq!(templates.len(), 1);
    let item = client
        .read_resource(ReadResourceRequestParams::new("mem://alpha/items/7"))
        .await
        .expect("a read through the template");
    assert_eq!(
        serde_json::to_value(&item.contents).unwrap()[0]["text"],
        "mem://alpha/items/7 of alpha"
    );

    let prompts = client.list_all_prompts().await.expect("prompts/list");
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["greet", "summarize"]);
    let prompt = client
        .get_prompt(GetPromptRequestParams::new("summarize"))
        .await
        .expect("prompts/get");
    assert_eq!(prompt.description.as_deref(), Some("summarize from beta"));

    let completion: CompleteRequestParams = serde_json::from_value(json!({
        "ref": { "type": "ref/prompt", "name": "greet" },
        "argument": { "name": "who", "value": "al" }
    }))
    .expect("params");
    let completed = client
        .complete(completion)
        .await
        .expect("completion/complete");
    assert_eq!(completed.completion.values, ["alpha-1", "alpha-2"]);

    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Debug))
        .await
        .expect("logging/setLevel");
    assert!(
        wait_for(Duration::from_secs(5), || guard
            .upstream_log("alpha")
            .contains("level Debug"))
        .await
    );
    let logged = guard.call("log", json!({})).await;
    assert_eq!(text(&logged), "logged");
    let heard = wait_for(Duration::from_secs(5), || {
        guard.recorder.count("log alpha") > 0
    })
    .await;
    assert!(
        heard,
        "no log message relayed: {:?}",
        guard.recorder.events.lock().unwrap()
    );

    let mut params = CallToolRequestParams::new("progress");
    let mut meta = RequestMetaObject::default();
    meta.0.insert("progressToken".into(), Value::from("tok-1"));
    params.meta = Some(meta);
    let done = client
        .call_tool(params)
        .await
        .expect("tools/call with a progress token");
    assert_eq!(text(&done), "done");
    let relayed = wait_for(Duration::from_secs(5), || {
        guard.recorder.count("progress") >= 2
    })
    .await;
    assert!(
        relayed,
        "progress not relayed: {:?}",
        guard.recorder.events.lock().unwrap()
    );
    guard.client.cancel().await.expect("the session closes");
}
