//! B17 over streamable HTTP: the guard served on a local port to an rmcp HTTP client, in front
//! of a stdio upstream and an HTTP upstream served in this process; the HTTP upstream stops,
//! its tool leaves the offer, the other keeps working.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_circuit_breaker::mcp::rmcp;
use agent_circuit_breaker::mcp::{HttpOptions, serve_http};
use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Map, Value, json};
use tokio::io::AsyncReadExt as _;

use crate::common::{GUARD, Recorder, guard_meta, scratch, text, upstream, wait_for};
use crate::upstream::Upstream;

async fn call(
    client: &rmcp::service::RunningService<rmcp::RoleClient, Recorder>,
    name: &str,
    arguments: Value,
) -> rmcp::model::CallToolResult {
    let arguments: Map<String, Value> = arguments.as_object().cloned().unwrap_or_default();
    let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
    client.call_tool(params).await.expect("tools/call")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_the_guard_serves_http_in_front_of_an_http_upstream_that_stops() {
    let dir = scratch("http");
    let beta_log = dir.join("beta.log");
    let beta = serve_http(
        move || Upstream::new("beta", beta_log.clone()),
        HttpOptions::new(),
    )
    .await
    .expect("beta serves on a free port");
    let config = dir.join("guard.yaml");
    std::fs::write(
        &config,
        format!(
            "upstreams:\n{}  - name: beta\n    url: {}\n    headers: {{ X-Test: \"${{GUARD_TEST_HEADER}}\" }}\n    deadline: 5s\n\
policy:\n  cool_down: 60s\nhealth:\n  check_every: 60s\n  ttl: 60s\n",
            upstream(&dir, "alpha", "alpha"),
            beta.url()
        ),
    )
    .unwrap();
    let mut child = tokio::process::Command::new(GUARD)
        .args([
            "--config",
            config.to_str().unwrap(),
            "--http",
            "127.0.0.1:0",
        ])
        .env("GUARD_TEST_HEADER", "yes")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the guard starts");
    let stderr = Arc::new(Mutex::new(String::new()));
    let mut pipe = child.stderr.take().expect("its stderr");
    let sink = Arc::clone(&stderr);
    tokio::spawn(async move {
        let mut buf = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut buf).await {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let served = wait_for(Duration::from_secs(60), || {
        served_url(&stderr.lock().unwrap()).is_some()
    })
    .await;
    assert!(
        served,
        "the guard never served:\n{}",
        stderr.lock().unwrap()
    );
    let url = served_url(&stderr.lock().unwrap()).expect("checked above");

    // reqwest is built without a crypto provider of its own.
    #[allow(deprecated, reason = "ring builds without cmake; a test needs no more")]
    let _ = rustls::crypto::ring::default_provider().install_default();
    let recorder = Recorder::default();
    let client = recorder
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(url))
        .await
        .expect("the guard's initialize over HTTP");
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name.into_owned())
        .collect();
    assert!(
        names.contains(&"cat".to_owned()) && names.contains(&"read_file".to_owned()),
        "{names:?}"
    );
    let cat = call(&client, "cat", json!({ "path": "b.txt" })).await;
    assert_eq!(text(&cat), "contents of b.txt from beta");
    assert_eq!(guard_meta(&cat)["server"], "beta");

    // beta stops: its next call finds it gone, its tool leaves the offer.
    beta.shutdown().await;
    let failed = call(&client, "cat", json!({ "path": "b.txt" })).await;
    assert_eq!(failed.is_error, Some(true), "{failed:?}");
    let told = wait_for(Duration::from_secs(10), || {
        recorder.count("tools/list_changed") > 0
    })
    .await;
    assert!(
        told,
        "no list_changed over HTTP:\n{}",
        stderr.lock().unwrap()
    );
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name.into_owned())
        .collect();
    assert!(!names.contains(&"cat".to_owned()), "{names:?}");
    let read = call(&client, "read_file", json!({ "path": "a.txt" })).await;
    assert_eq!(text(&read), "contents of a.txt from alpha");
    client.cancel().await.expect("the session closes");
    child.kill().await.expect("the guard stops");
}

/// The URL the guard says it serves, once its whole line is in `stderr`: the pipe is read in
/// chunks, and a line cut after its prefix would give an empty URL.
fn served_url(stderr: &str) -> Option<String> {
    let prefix = "serving streamable HTTP at ";
    let rest = &stderr[stderr.find(prefix)? + prefix.len()..];
    let line = &rest[..rest.find('\n')?];
    Some(line.trim().to_owned())
}
