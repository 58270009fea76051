//! B17 with B12: the guard's spans and metrics reach an OpenTelemetry collector over
//! OTLP/HTTP — here one this test runs on 127.0.0.1, which keeps every request it is sent —
//! in JSON and in protobuf, and what is still batched when the client leaves is not lost.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};

use crate::common::{Session, scratch, start, two_upstreams};

/// One request the collector received.
#[derive(Debug, Clone)]
struct Export {
    path: String,
    content_type: String,
    body: Vec<u8>,
}

/// An OTLP/HTTP collector: answers every export with 200 and keeps it.
async fn collector() -> (String, Arc<Mutex<Vec<Export>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a local port");
    let address = format!("http://{}", listener.local_addr().expect("its address"));
    let kept = Arc::new(Mutex::new(Vec::new()));
    let store = Arc::clone(&kept);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut read = BufReader::new(read);
                // Requests one after another on a kept-alive connection.
                loop {
                    let mut line = String::new();
                    if read.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
                    let (mut length, mut content_type) = (0usize, String::new());
                    loop {
                        let mut header = String::new();
                        if read.read_line(&mut header).await.unwrap_or(0) == 0 {
                            return;
                        }
                        let header = header.trim_end();
                        if header.is_empty() {
                            break;
                        }
                        if let Some((name, value)) = header.split_once(':') {
                            match name.trim().to_ascii_lowercase().as_str() {
                                "content-length" => length = value.trim().parse().unwrap_or(0),
                                "content-type" => content_type = value.trim().to_owned(),
                                _ => {}
                            }
                        }
                    }
                    let mut body = vec![0; length];
                    if read.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    let answer = if content_type.contains("json") {
                        "{}"
                    } else {
                        ""
                    };
                    store.lock().unwrap().push(Export {
                        path,
                        content_type: content_type.clone(),
                        body,
                    });
                    let response = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n{answer}",
                        answer.len()
                    );
                    if write.write_all(response.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (address, kept)
}

/// The guard in front of alpha and beta, exporting to `endpoint`: three good calls and
/// three failures that open `fail`, then the client leaves and the guard exits.
async fn session(label: &str, endpoint: &str, protocol: &str) -> String {
    let stderr = session_to(label, endpoint, protocol).await;
    assert!(
        !stderr.contains("telemetry.otlp"),
        "an export failed:\n{stderr}"
    );
    stderr
}

/// [`session`], whatever became of the exports: the guard's stderr.
async fn session_to(label: &str, endpoint: &str, protocol: &str) -> String {
    let dir = scratch(label);
    let config = two_upstreams(&dir);
    let mut text = std::fs::read_to_string(&config).expect("the config");
    text.push_str(&format!(
        "telemetry:\n  otlp:\n    endpoint: {endpoint}\n    protocol: {protocol}\n    export_every: 300ms\n    service_name: guard-under-test\n    headers: {{ x-api-key: secret }}\n"
    ));
    std::fs::write(&config, text).expect("the config written");
    let guard = start(&dir, &config).await;
    for _ in 0..3 {
        let result = guard.call("read_file", json!({ "path": "a.txt" })).await;
        assert_ne!(result.is_error, Some(true), "{result:?}");
    }
    for _ in 0..3 {
        guard.call("fail", json!({})).await;
    }
    // Long enough for one periodic export of the metrics while the guard runs.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let Session {
        client,
        stderr,
        mut child,
        ..
    } = guard;
    client.cancel().await.expect("the client closes its end");
    let exit = tokio::time::timeout(Duration::from_secs(20), child.wait()).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let stderr = stderr.lock().unwrap().clone();
    let status = exit
        .unwrap_or_else(|_| panic!("the guard did not exit:\n{stderr}"))
        .expect("its status");
    assert!(status.success(), "{status}\n{stderr}");
    stderr
}

/// The JSON exports sent to `path`, parsed.
fn documents(exports: &[Export], path: &str) -> Vec<Value> {
    exports
        .iter()
        .filter(|e| e.path == path)
        .map(|e| serde_json::from_slice(&e.body).expect("OTLP JSON"))
        .collect()
}

fn spans(docs: &[Value]) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for doc in docs {
        for resource in doc["resourceSpans"].as_array().into_iter().flatten() {
            for scope in resource["scopeSpans"].as_array().into_iter().flatten() {
                for span in scope["spans"].as_array().into_iter().flatten() {
                    out.push((
                        span["name"].as_str().unwrap_or_default().to_owned(),
                        span["attributes"].clone(),
                    ));
                }
            }
        }
    }
    out
}

fn metric_names(docs: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for doc in docs {
        for resource in doc["resourceMetrics"].as_array().into_iter().flatten() {
            for scope in resource["scopeMetrics"].as_array().into_iter().flatten() {
                for metric in scope["metrics"].as_array().into_iter().flatten() {
                    out.push(metric["name"].as_str().unwrap_or_default().to_owned());
                }
            }
        }
    }
    out
}

fn attribute<'a>(attributes: &'a Value, key: &str) -> Option<&'a Value> {
    attributes
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_b12_the_guard_exports_spans_and_metrics_over_otlp_json() {
    let (endpoint, kept) = collector().await;
    session("otel-json", &endpoint, "http/json").await;
    let exports = kept.lock().unwrap().clone();
    assert!(
        exports
            .iter()
            .all(|e| e.content_type.contains("application/json")),
        "{exports:?}"
    );

    let traces = documents(&exports, "/v1/traces");
    let spans = spans(&traces);
    let calls: Vec<&Value> = spans
        .iter()
        .filter(|(name, _)| name == "execute_tool read_file")
        .map(|(_, attributes)| attributes)
        .collect();
    assert_eq!(calls.len(), 3, "one span per call: {spans:?}");
    assert_eq!(
        attribute(calls[0], "gen_ai.tool.name"),
        Some(&json!({ "stringValue": "read_file" }))
    );
    assert_eq!(
        attribute(calls[0], "circuit_breaker.server"),
        Some(&json!({ "stringValue": "alpha" }))
    );
    let failed = spans
        .iter()
        .filter(|(name, _)| name == "execute_tool fail")
        .count();
    assert_eq!(failed, 3, "{spans:?}");
    let service = traces[0]["resourceSpans"][0]["resource"]["attributes"].clone();
    assert_eq!(
        attribute(&service, "service.name"),
        Some(&json!({ "stringValue": "guard-under-test" }))
    );

    let metrics = metric_names(&documents(&exports, "/v1/metrics"));
    for name in [
        "gen_ai.execute_tool.duration",
        "circuit_breaker.transitions",
        "circuit_breaker.circuit.state",
        "circuit_breaker.budget.consumed",
    ] {
        assert!(
            metrics.iter().any(|m| m == name),
            "{name} not in {metrics:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_b12_the_guard_exports_over_otlp_protobuf_by_default_encoding() {
    let (endpoint, kept) = collector().await;
    session("otel-proto", &endpoint, "http/protobuf").await;
    let exports = kept.lock().unwrap().clone();
    let contains = |path: &str, needle: &str| {
        exports.iter().any(|e| {
            e.path == path
                && e.content_type == "application/x-protobuf"
                && e.body.windows(needle.len()).any(|w| w == needle.as_bytes())
        })
    };
    // Protobuf keeps strings as their bytes: the names are found in the encoded exports.
    assert!(
        contains("/v1/traces", "execute_tool read_file"),
        "{exports:?}"
    );
    assert!(contains("/v1/traces", "guard-under-test"));
    assert!(contains("/v1/metrics", "gen_ai.execute_tool.duration"));
    assert!(contains("/v1/metrics", "circuit_breaker.transitions"));
}

#[test]
fn b17_check_reads_the_collector_and_names_what_is_wrong_with_it() {
    use crate::common::run_guard;
    let dir = scratch("otel-check");
    let good = dir.join("good.yaml");
    std::fs::write(
        &good,
        "upstreams:\n  - name: files\n    command: npx\ntelemetry:\n  otlp:\n    endpoint: http://127.0.0.1:4318\n    protocol: http/json\n",
    )
    .unwrap();
    let (code, out, err) = run_guard(
        &["--config", good.to_str().unwrap(), "--check"],
        Duration::from_secs(20),
    );
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains("telemetry: spans and metrics over OTLP (http/json) to http://127.0.0.1:4318, metrics every 10s"),
        "{out}"
    );

    let bad = dir.join("bad.yaml");
    std::fs::write(
        &bad,
        "upstreams:\n  - name: files\n    command: npx\ntelemetry:\n  otlp:\n    endpoint: 127.0.0.1:4318\n    protocl: http/json\n",
    )
    .unwrap();
    let (code, out, err) = run_guard(
        &["--config", bad.to_str().unwrap(), "--check"],
        Duration::from_secs(20),
    );
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert!(
        err.contains(
            "line 7: telemetry.otlp.protocl: unknown key `protocl`; did you mean `protocol`?"
        ),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_b12_a_collector_that_cannot_be_reached_costs_no_call() {
    // A port that was free a moment ago: every export is refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let started = std::time::Instant::now();
    // `session_to` asserts every call answered and a clean exit.
    let stderr = session_to(
        "otel-gone",
        &format!("http://127.0.0.1:{port}"),
        "http/json",
    )
    .await;
    assert!(
        stderr.contains(&format!("could not be exported to http://127.0.0.1:{port}")),
        "{stderr}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the guard took {:?} to run and exit",
        started.elapsed()
    );
}
