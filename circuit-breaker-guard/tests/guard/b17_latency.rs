//! B17: what the guard adds to a call — the same tool called straight on its upstream and
//! through the guard, over stdio, the medians compared (and printed: `--nocapture`).

use std::time::{Duration, Instant};

use agent_circuit_breaker::mcp::rmcp;
use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;

use crate::common::{scratch, start, two_upstreams};

const CALLS: usize = 200;

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn params() -> CallToolRequestParams {
    let arguments = json!({ "path": "a.txt" })
        .as_object()
        .cloned()
        .unwrap_or_default();
    CallToolRequestParams::new("read_file").with_arguments(arguments)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b17_the_guard_adds_little_to_a_call() {
    let dir = scratch("latency");
    // alpha straight, as the guard starts it.
    let exe = std::env::current_exe().expect("the test binary");
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg("exec \"$0\" upstream::upstream_server --exact --nocapture --test-threads=1 3>&1 1>&2")
        .arg(&exe)
        .env("GUARD_TEST_UPSTREAM", "alpha")
        .stderr(std::process::Stdio::null());
    let direct =
        ().serve(TokioChildProcess::new(command).expect("alpha starts"))
            .await
            .expect("alpha's initialize");
    let guard = start(&dir, &two_upstreams(&dir)).await;

    let mut straight = Vec::with_capacity(CALLS);
    let mut through = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let t = Instant::now();
        direct.call_tool(params()).await.expect("a straight call");
        straight.push(t.elapsed());
        let t = Instant::now();
        guard
            .client
            .call_tool(params())
            .await
            .expect("a call through the guard");
        through.push(t.elapsed());
    }
    let (straight, through) = (median(straight), median(through));
    let added = through.saturating_sub(straight);
    println!(
        "B17 latency over {CALLS} calls: straight {straight:?}, through the guard {through:?}, added {added:?} (medians)"
    );
    // One more stdio hop and the guarded path: well under what a model's turn takes.
    assert!(
        added < Duration::from_millis(50),
        "the guard adds {added:?} per call"
    );
    direct.cancel().await.expect("alpha closes");
    guard.client.cancel().await.expect("the session closes");
}
