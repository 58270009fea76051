//! B17 at startup: an upstream that fails when the guard starts (a command not found, one
//! that exits at once, speaks garbage, never answers `initialize`, a URL refusing
//! connections) is down, not fatal; it joins the offer when it answers, the client told
//! `list_changed`. `required: true` makes such a failure fatal; every upstream failing is
//! an empty offer, said loudly.

use std::time::Duration;

use agent_circuit_breaker::mcp::{HttpOptions, serve_http};
use serde_json::json;

use crate::common::{Session, run_config, scratch, start, text, upstream, wait_for};
use crate::upstream::Upstream;

/// An upstream entry that fails at start in the way `how` says.
fn failing(dir: &std::path::Path, name: &str, how: &str) -> String {
    match how {
        "not found" => {
            format!("  - name: {name}\n    command: /nonexistent/mcp-server-{name}\n")
        }
        "exits" => format!("  - name: {name}\n    command: sh\n    args: [\"-c\", \"exit 3\"]\n"),
        flavor => upstream(dir, name, flavor),
    }
}

/// Closes the client and waits for the guard to exit: what it wrote on stderr, the state
/// table at exit included.
async fn stop(session: Session) -> String {
    let Session {
        client,
        stderr,
        mut child,
        ..
    } = session;
    let _ = client.cancel().await;
    let _ = tokio::time::timeout(Duration::from_secs(20), child.wait()).await;
    let _ = wait_for(Duration::from_secs(2), || {
        stderr.lock().unwrap().contains("Server ")
    })
    .await;
    stderr.lock().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_an_upstream_failing_at_start_is_down_and_the_others_are_served() {
    for how in ["not found", "exits", "garbage", "silent"] {
        let dir = scratch("start-fails");
        let config = dir.join("guard.yaml");
        let text_of = format!(
            "upstreams:\n{}{}health:\n  connect_timeout: 2s\n  check_every: 60s\n",
            upstream(&dir, "beta", "beta"),
            failing(&dir, "junk", how),
        );
        std::fs::write(&config, text_of).unwrap();
        let session = start(&dir, &config).await;
        assert_eq!(session.tool_names().await, ["cat"], "{how}");
        let cat = session.call("cat", json!({ "path": "b.txt" })).await;
        assert_eq!(text(&cat), "contents of b.txt from beta", "{how}");
        let err = stop(session).await;
        assert!(
            err.contains("upstream junk is down at start"),
            "{how}: {err}"
        );
        assert!(
            err.contains("Server junk: DOWN since start"),
            "{how}: {err}"
        );
        assert!(!err.contains("panicked"), "{how}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_an_upstream_down_at_start_joins_the_offer_when_it_answers() {
    let dir = scratch("late");
    // A port nothing listens on yet: the guard's first connection is refused.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    let config = dir.join("guard.yaml");
    std::fs::write(
        &config,
        format!(
            "upstreams:\n{}  - name: beta\n    url: http://{addr}/mcp\n\
overlay:\n  capability_map:\n    - tool: catt\n      server: beta\n      fallback: \"ask for the file\"\n\
health:\n  check_every: 200ms\n  connect_timeout: 5s\n",
            upstream(&dir, "alpha", "alpha"),
        ),
    )
    .unwrap();
    let session = start(&dir, &config).await;
    let names = session.tool_names().await;
    assert!(
        names.contains(&"read_file".to_owned()) && !names.contains(&"cat".to_owned()),
        "{names:?}"
    );
    assert!(
        session.stderr().contains("upstream beta is down at start"),
        "{}",
        session.stderr()
    );

    let beta_log = dir.join("beta.log");
    let beta = serve_http(
        move || Upstream::new("beta", beta_log.clone()),
        HttpOptions::new().bind(addr),
    )
    .await
    .expect("beta serves on the port the guard was given");
    let told = wait_for(Duration::from_secs(20), || {
        session.recorder.count("tools/list_changed") > 0
    })
    .await;
    assert!(told, "no list_changed:\n{}", session.stderr());
    let names = session.tool_names().await;
    assert!(names.contains(&"cat".to_owned()), "{names:?}");
    let cat = session.call("cat", json!({ "path": "b.txt" })).await;
    assert_eq!(text(&cat), "contents of b.txt from beta");
    // The overlay's entry naming its tools is checked when it comes up: a warning, with
    // the name it likely meant.
    let warned = wait_for(Duration::from_secs(5), || {
        session.stderr().contains("did you mean `cat`?")
    })
    .await;
    assert!(warned, "{}", session.stderr());
    let err = stop(session).await;
    assert!(!err.contains("DOWN since start"), "{err}");
    beta.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_every_upstream_failing_is_an_empty_offer_said_loudly() {
    let dir = scratch("all-fail");
    let config = dir.join("guard.yaml");
    std::fs::write(
        &config,
        format!(
            "upstreams:\n{}{}health:\n  check_every: 60s\n",
            failing(&dir, "one", "not found"),
            failing(&dir, "two", "exits"),
        ),
    )
    .unwrap();
    let session = start(&dir, &config).await;
    assert!(session.tool_names().await.is_empty());
    let err = stop(session).await;
    assert!(err.contains("NO upstream answered at start"), "{err}");
    assert!(err.contains("Server one: DOWN since start"), "{err}");
    assert!(err.contains("Server two: DOWN since start"), "{err}");
}

#[test]
fn b17_a_required_upstream_failing_at_start_is_fatal_and_a_misspelt_key_is_named() {
    let dir = scratch("required");
    let path = dir.join("guard.yaml");
    let junk = failing(&dir, "junk", "not found");
    let beta = upstream(&dir, "beta", "beta");
    let text = format!("upstreams:\n{beta}{junk}    required: true\n");
    let (code, _, err) = run_config(&path, &text, &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("upstream junk is `required: true` and could not be started"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let (code, out, err) = run_config(&path, &text, &["--check"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("  junk: stdio: /nonexistent/mcp-server-junk, required\n"),
        "{out}"
    );

    let text = format!("upstreams:\n{junk}    requird: true\n");
    let (code, _, err) = run_config(&path, &text, &["--check"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("unknown key `requird`; did you mean `required`?"),
        "{err}"
    );
}
