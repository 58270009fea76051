//! B14: three parties to blame. A failure is the tool's (its breaker, the budget), its
//! dependency's (one event, charged once: B10's tests) or the caller's: the model's mistake,
//! answered with the tool's own message and what to do next, counted, never charged, never
//! opening a circuit, and stopped at the policy's mistake limit with a report.
//!
//! - typed tools whose error type says whose it is (`Classify::blame`): a file not found,
//!   a division by zero;
//! - a probe answered by the caller's mistake;
//! - a scripted model repeating the same bad call (an agent once retried a failing tool 754
//!   times), stopped at the limit (golden `b14_mistake_limit.txt`);
//! - with the `mcp` feature: the MCP client's overlay (`caller_errors` per server and per
//!   tool) against an in-process server, and the reference filesystem server
//!   (`npx -y @modelcontextprotocol/server-filesystem@2026.8.31`) as a child process.

#[path = "../common/mod.rs"]
mod common;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use agent_circuit_breaker::dispatch::{Reply, ReplyOutcome, ToolDispatch};
use agent_circuit_breaker::report::ModelMistake;
use agent_circuit_breaker::{
    Blame, CallError, CircuitState, Classify, FailureCategory, PauseReason, Policy, SkipReason,
    Task, toolbox,
};
use common::{assert_golden, block_on, clock};
use serde_json::{Value, json};

/// A file tool's error: a path the caller named that does not exist is the caller's; a disk
/// that fails is the tool's.
#[derive(Debug)]
pub enum FileError {
    Missing(String),
    Disk(String),
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileError::Missing(path) => write!(f, "{path} was not found"),
            FileError::Disk(why) => write!(f, "disk error: {why}"),
        }
    }
}

impl Classify for FileError {
    fn category(&self) -> FailureCategory {
        match self {
            FileError::Missing(_) => FailureCategory::NotFound,
            FileError::Disk(_) => FailureCategory::Other,
        }
    }

    fn blame(&self) -> Blame {
        match self {
            FileError::Missing(_) => Blame::Caller,
            FileError::Disk(_) => Blame::Tool,
        }
    }
}

/// A calculator's error: the input is outside its domain.
#[derive(Debug)]
pub struct DivisionByZero;

impl std::fmt::Display for DivisionByZero {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("division by zero")
    }
}

impl Classify for DivisionByZero {
    fn category(&self) -> FailureCategory {
        FailureCategory::InvalidInput
    }

    fn blame(&self) -> Blame {
        Blame::Caller
    }
}

#[derive(Default)]
pub struct Desk {
    reads: AtomicU32,
    disk_broken: AtomicBool,
    fetch_broken: AtomicBool,
}

#[toolbox(json, policy(threshold = 2, budget = 5, probe_every = 1))]
impl Desk {
    /// Reads a text file.
    #[tool(
        provides = "file reading",
        fallback = "ask the user for the file's contents"
    )]
    fn read_text_file(
        &self,
        /// The file's path.
        path: &str,
    ) -> Result<String, FileError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        if self.disk_broken.load(Ordering::SeqCst) {
            return Err(FileError::Disk("input/output error".to_owned()));
        }
        if path.starts_with("/data/") {
            Ok(format!("the text of {path}"))
        } else {
            Err(FileError::Missing(path.to_owned()))
        }
    }

    /// Divides `a` by `b`.
    #[tool(provides = "arithmetic", fallback = "do the arithmetic by hand")]
    fn divide(&self, a: f64, b: f64) -> Result<f64, DivisionByZero> {
        if b == 0.0 {
            Err(DivisionByZero)
        } else {
            Ok(a / b)
        }
    }

    /// Fetches a web page.
    #[tool(provides = "web fetching", fallback = "ask the user to fetch the page")]
    fn fetch(&self, url: &str) -> Result<String, std::io::Error> {
        if self.fetch_broken.load(Ordering::SeqCst) {
            return Err(std::io::Error::other("upstream answered 500"));
        }
        Ok(format!("the page at {url}"))
    }
}

fn desk() -> GuardedDesk {
    let clock = clock();
    GuardedDesk::with_expeditor(Desk::default(), |b| b.clock(clock))
}

fn call(agent: &impl ToolDispatch, name: &str, arguments: Value) -> Reply {
    block_on(agent.dispatch(name, arguments))
}

#[test]
fn b14_a_typed_callers_mistake_never_opens_a_circuit_and_is_never_charged() {
    let desk = desk();
    let expeditor = desk.expeditor().clone();
    let read = expeditor.tool("read_text_file").unwrap();
    for path in ["/tmp/a.txt", "/tmp/b.txt", "/tmp/c.txt", "/tmp/d.txt"] {
        let reply = call(&desk, "read_text_file", json!({ "path": path }));
        assert!(reply.is_error());
        let ReplyOutcome::Mistake(ModelMistake::Rejected {
            tool,
            message,
            category,
        }) = &reply.outcome
        else {
            panic!("the caller's mistake: {reply:?}");
        };
        assert_eq!(tool, "read_text_file");
        assert_eq!(message, &format!("{path} was not found"));
        assert_eq!(*category, FailureCategory::NotFound);
        assert_eq!(
            reply.text(),
            format!(
                "read_text_file rejected the call: {path} was not found. This is a problem with \
                 the call, not the tool: check that what the call names exists (list or search \
                 first) and call again with corrected arguments."
            )
        );
        assert_eq!(reply.state, Some(CircuitState::Closed));
        assert_eq!(reply.meta()["outcome"], "model_mistake");
        assert_eq!(reply.meta()["error"], json!(message));
    }
    // The typed method: the tool's error untouched, told apart from a failure.
    let outcome = desk.read_text_file("/tmp/e.txt");
    let Err(error @ CallError::Rejected { .. }) = outcome else {
        panic!("rejected: {outcome:?}");
    };
    assert!(error.is_callers_mistake());
    assert!(matches!(error.tool_error(), Some(FileError::Missing(p)) if p == "/tmp/e.txt"));
    assert_eq!(
        error.to_string(),
        "read_text_file rejected the call: /tmp/e.txt was not found"
    );

    assert_eq!(expeditor.state(read), Some(CircuitState::Closed));
    assert_eq!(expeditor.breaker(read).unwrap().consecutive_failures(), 0);
    assert_eq!(expeditor.budget().status().consumed, 0);
    assert!(expeditor.budget().ledger().is_empty());
    assert_eq!(expeditor.paused(), None);
    let mistakes = expeditor.state_table().mistakes;
    assert_eq!((mistakes.rejected, mistakes.total()), (5, 5));
    assert!(
        expeditor.state_table().to_string().ends_with(
            "Model mistakes: 5 (5 rejected by the tool) — not charged to any tool or the budget"
        ),
        "{}",
        expeditor.state_table()
    );
    assert_eq!(desk.toolbox().reads.load(Ordering::SeqCst), 5);

    // The same tool's own failures still count.
    desk.toolbox().disk_broken.store(true, Ordering::SeqCst);
    for _ in 0..2 {
        let reply = call(&desk, "read_text_file", json!({ "path": "/data/x" }));
        assert!(
            matches!(reply.outcome, ReplyOutcome::Failed { .. }),
            "{reply:?}"
        );
    }
    assert_eq!(expeditor.state(read), Some(CircuitState::Open));
    assert_eq!(expeditor.budget().status().consumed, 2);
}

#[test]
fn b14_division_by_zero_and_a_failed_probe_elsewhere_are_no_systemic_failure() {
    let desk = desk();
    let expeditor = desk.expeditor().clone();
    for _ in 0..2 {
        let reply = call(&desk, "divide", json!({ "a": 1.0, "b": 0.0 }));
        let ReplyOutcome::Mistake(ModelMistake::Rejected { category, .. }) = &reply.outcome else {
            panic!("the caller's mistake: {reply:?}");
        };
        assert_eq!(*category, FailureCategory::InvalidInput);
        assert!(
            reply
                .text()
                .ends_with("check the arguments against what divide accepts and call again with corrected arguments."),
            "{}",
            reply.text()
        );
    }
    // Another tool breaks, opens, and its probe fails.
    desk.toolbox().fetch_broken.store(true, Ordering::SeqCst);
    for _ in 0..3 {
        let _ = call(&desk, "fetch", json!({ "url": "https://example.com" }));
    }
    let fetch = expeditor.tool("fetch").unwrap();
    assert_eq!(expeditor.state(fetch), Some(CircuitState::Open));
    assert_eq!(
        expeditor.breaker(fetch).unwrap().consecutive_failures(),
        3,
        "opened, probed, re-opened"
    );

    assert_eq!(expeditor.paused(), None, "no systemic pause");
    assert_eq!(expeditor.systemic_event(), None);
    let divide = expeditor.tool("divide").unwrap();
    assert_eq!(expeditor.state(divide), Some(CircuitState::Closed));
    assert_eq!(
        expeditor.budget().status().consumed,
        3,
        "fetch's failures only"
    );
    let report = expeditor.pause_report(&Task::new()).to_string();
    assert!(!report.contains("divide failures"), "{report}");
    assert!(report.contains("divide: CLOSED (healthy)"), "{report}");
    assert!(
        report.contains("Model mistakes: 2 (2 rejected by the tool)"),
        "{report}"
    );
    assert!(call(&desk, "divide", json!({ "a": 6.0, "b": 3.0 })).value == Some(json!(2.0)));
}

#[test]
fn b14_a_probe_answered_by_the_callers_mistake_is_a_successful_probe() {
    let desk = desk();
    let expeditor = desk.expeditor().clone();
    let read = expeditor.tool("read_text_file").unwrap();
    desk.toolbox().disk_broken.store(true, Ordering::SeqCst);
    for _ in 0..2 {
        let _ = call(&desk, "read_text_file", json!({ "path": "/data/x" }));
    }
    assert_eq!(expeditor.state(read), Some(CircuitState::Open));
    desk.toolbox().disk_broken.store(false, Ordering::SeqCst);
    // The next call is the probe (probe_every = 1): the tool answers, coherently, that the
    // path the model named does not exist. It was reached and it works.
    let reply = call(&desk, "read_text_file", json!({ "path": "/tmp/nope.txt" }));
    assert!(matches!(
        reply.outcome,
        ReplyOutcome::Mistake(ModelMistake::Rejected { .. })
    ));
    assert_eq!(expeditor.state(read), Some(CircuitState::Closed));
    assert_eq!(expeditor.breaker(read).unwrap().consecutive_failures(), 0);
    assert!(expeditor.breaker(read).unwrap().last_success().is_some());
    assert_eq!(
        expeditor.budget().status().consumed,
        2,
        "the probe is not charged"
    );
    assert_eq!(expeditor.state_table().mistakes.rejected, 1);
}

#[test]
fn b14_a_model_repeating_a_bad_call_is_stopped_at_the_mistake_limit_with_a_report() {
    let desk = desk();
    let expeditor = desk.expeditor().clone();
    assert_eq!(
        expeditor.policy().mistake_limit(),
        Policy::DEFAULT_MISTAKE_LIMIT
    );
    // A scripted model that repeats the same bad call whatever it is told, as the agent that
    // retried a failing tool 754 times did.
    let mut last_mistake = None;
    let mut stopped = None;
    for turn in 1..=754 {
        let reply = call(
            &desk,
            "read_text_file",
            json!({ "path": "/tmp/report.txt" }),
        );
        match reply.outcome {
            ReplyOutcome::Mistake(_) => last_mistake = Some(reply),
            ReplyOutcome::Refused { .. } => {
                stopped = Some((turn, reply));
                break;
            }
            _ => panic!("{reply:?}"),
        }
    }
    let (turn, refused) = stopped.expect("the model is stopped");
    let last_mistake = last_mistake.unwrap();
    assert_eq!(turn, 21, "20 mistakes made, the 21st call refused");
    assert_eq!(desk.toolbox().reads.load(Ordering::SeqCst), 20);
    let limit = PauseReason::MistakeLimit {
        count: 20,
        limit: 20,
    };
    assert_eq!(expeditor.paused(), Some(limit));
    assert_eq!(
        refused.outcome,
        ReplyOutcome::Refused {
            reason: SkipReason::Paused { pause: limit }
        }
    );
    assert_eq!(expeditor.budget().status().consumed, 0);
    let read = expeditor.tool("read_text_file").unwrap();
    assert_eq!(expeditor.state(read), Some(CircuitState::Closed));
    assert!(desk.offered().is_empty(), "nothing is offered while paused");
    // Any tool, mistakes or not: every call pauses.
    assert!(matches!(
        call(&desk, "divide", json!({ "a": 1.0, "b": 2.0 })).outcome,
        ReplyOutcome::Refused { .. }
    ));

    let task = Task::new()
        .subtask("read the report", ["read_text_file"])
        .subtask("summarise it", ["divide"]);
    let report = expeditor.pause_report(&task);
    assert_eq!(report.paused, Some(limit));
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(
        json["paused"],
        json!({ "reason": "mistake_limit", "count": 20, "limit": 20 })
    );
    assert_eq!(json["mistakes"]["rejected"], 20);
    let text = format!(
        "The 20th mistake, as the model read it:\n{}\n\nThe 21st call, as the model read it:\n{}\n\n{report}",
        last_mistake.text(),
        refused.text()
    );
    assert_golden("b14_mistake_limit.txt", &text);
    // Never an invitation to call again while paused.
    assert!(!refused.text().contains("call again"), "{}", refused.text());

    // A new cycle lifts it; the count starts again.
    expeditor.new_cycle();
    assert_eq!(expeditor.paused(), None);
    assert!(expeditor.state_table().mistakes.is_none());
    assert!(matches!(
        call(&desk, "read_text_file", json!({ "path": "/data/r" })).outcome,
        ReplyOutcome::Answered
    ));
}

#[test]
fn b14_the_mistake_limit_counts_every_kind_of_mistake_and_zero_is_refused() {
    assert!(Policy::builder().mistake_limit(0).build().is_err());
    let policy = Policy::builder().mistake_limit(3).build().unwrap();
    let clock = clock();
    let desk = GuardedDesk::with_expeditor(Desk::default(), |b| b.clock(clock).policy(policy));
    let _ = call(&desk, "read_txt_file", json!({}));
    let _ = call(&desk, "divide", json!({ "a": "one" }));
    assert_eq!(desk.expeditor().paused(), None);
    let third = call(&desk, "divide", json!({ "a": 1.0, "b": 0.0 }));
    assert_eq!(
        desk.expeditor().paused(),
        Some(PauseReason::MistakeLimit { count: 3, limit: 3 })
    );
    let mistakes = desk.expeditor().state_table().mistakes;
    assert_eq!(
        (
            mistakes.unknown_tool,
            mistakes.bad_arguments,
            mistakes.rejected
        ),
        (1, 1, 1)
    );
    assert!(
        third.text().ends_with(
            "All tools are paused: too many calls were mistakes (3 / 3 this cycle: unknown \
             tools, bad arguments, or inputs the tools rejected). Do not call any tool. Instead: \
             stop and report the completed and incomplete work to the user, with the calls that \
             were rejected; calls resume in a new cycle."
        ),
        "{}",
        third.text()
    );
    // A policy written before the limit existed reads with the default.
    let old: Policy = serde_json::from_value(json!({ "threshold": 3, "budget": 5 })).unwrap();
    assert_eq!(old.mistake_limit(), Policy::DEFAULT_MISTAKE_LIMIT);
    assert!(
        serde_json::to_value(Policy::default())
            .unwrap()
            .get("mistake_limit")
            .is_none()
    );
}

#[cfg(feature = "mcp")]
mod mcp {
    //! The MCP client: `isError` results of the overlay's caller categories are the caller's.

    use std::sync::Arc;
    use std::time::Duration;

    use agent_circuit_breaker::dispatch::ReplyOutcome;
    use agent_circuit_breaker::mcp::{
        DEFAULT_CALLER_ERRORS, McpClient, McpClientBuilder, McpClientError, McpServer,
        OverlayProblem,
    };
    use agent_circuit_breaker::report::ModelMistake;
    use agent_circuit_breaker::{CapabilityMap, CircuitState, FailureCategory, toolbox};
    use serde_json::json;

    /// A disk whose every file is missing: a foreign server's tools, as far as the client
    /// knows (it reads only `isError` and the text).
    #[derive(Default)]
    pub struct Disk;

    #[toolbox(json, policy(threshold = 100, budget = 1000))]
    impl Disk {
        /// Looks a file up.
        #[tool(provides = "file lookup", fallback = "ask the user")]
        fn lookup(
            &self,
            /// the path
            path: &str,
        ) -> std::io::Result<String> {
            Err(std::io::Error::other(format!(
                "ENOENT: no such file or directory, open '{path}'"
            )))
        }

        /// Stores a file.
        #[tool(provides = "file storage", fallback = "ask the user")]
        fn store(
            &self,
            /// the path
            path: &str,
        ) -> std::io::Result<String> {
            Err(std::io::Error::other(format!(
                "ENOENT: no such file or directory, open '{path}'"
            )))
        }
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    }

    fn in_process(builder: McpClientBuilder, name: &str) -> McpClientBuilder {
        let toolbox = Arc::new(GuardedDisk::new(Disk));
        builder.connect(name, move || {
            let server = McpServer::shared(Arc::clone(&toolbox));
            async move {
                let (client_end, server_end) = tokio::io::duplex(1 << 16);
                tokio::spawn(async move {
                    if let Ok(running) = rmcp::ServiceExt::serve(server, server_end).await {
                        let _ = running.waiting().await;
                    }
                });
                Ok::<_, String>(client_end)
            }
        })
    }

    /// Whether each tool's `isError` was the caller's (`true`) or charged to the tool.
    async fn blamed(overlay: Option<&str>) -> (bool, bool) {
        let mut builder = in_process(McpClient::builder(), "disk");
        if let Some(yaml) = overlay {
            let map: CapabilityMap = serde_yaml_ng::from_str(yaml).unwrap();
            builder = builder.overlay(map);
        }
        let client = builder.build().await.unwrap();
        let mut out = [false; 2];
        for (i, tool) in ["lookup", "store"].into_iter().enumerate() {
            let reply = client.call(tool, json!({ "path": "/srv/x" })).await;
            assert!(reply.is_error());
            out[i] = match &reply.outcome {
                ReplyOutcome::Mistake(ModelMistake::Rejected {
                    category, message, ..
                }) => {
                    assert_eq!(*category, FailureCategory::NotFound);
                    assert_eq!(message, "ENOENT: no such file or directory, open '/srv/x'");
                    true
                }
                ReplyOutcome::Failed { .. } => false,
                other => panic!("{other:?}"),
            };
        }
        let budget = client.expeditor().budget().status().consumed;
        let mistakes = client.expeditor().state_table().mistakes.rejected;
        let callers = u32::from(out[0]) + u32::from(out[1]);
        assert_eq!((budget, mistakes), (2 - callers, callers));
        client.shutdown().await;
        (out[0], out[1])
    }

    #[test]
    fn b14_the_overlay_says_per_server_and_per_tool_which_errors_are_the_callers() {
        assert_eq!(
            DEFAULT_CALLER_ERRORS,
            [FailureCategory::NotFound, FailureCategory::InvalidInput]
        );
        runtime().block_on(async {
            // The default: not found and invalid input are the caller's.
            assert_eq!(blamed(None).await, (true, true));
            // The server's default kept, one tool charging everything to itself.
            let tool_override = r"
capability_map:
  - tool: store
    caller_errors: []
servers:
  - server: disk
    caller_errors: [not_found]
";
            assert_eq!(blamed(Some(tool_override)).await, (true, false));
            // Everything the tool's on this server, but for one tool.
            let server_override = r"
capability_map:
  - tool: lookup
    caller_errors: [not_found]
servers:
  - server: disk
    caller_errors: []
";
            assert_eq!(blamed(Some(server_override)).await, (true, false));
            let all_tools = "capability_map: []\nservers:\n  - server: disk\n    caller_errors: []\n";
            assert_eq!(blamed(Some(all_tools)).await, (false, false));
            let only_input = "capability_map: []\nservers:\n  - server: disk\n    caller_errors: [invalid_input]\n";
            assert_eq!(blamed(Some(only_input)).await, (false, false));

            // A server the client was not given.
            let map: CapabilityMap =
                serde_yaml_ng::from_str("capability_map: []\nservers:\n  - server: dsik\n    caller_errors: []\n")
                    .unwrap();
            let error = in_process(McpClient::builder(), "disk")
                .overlay(map)
                .build()
                .await
                .unwrap_err();
            assert_eq!(
                error,
                McpClientError::Overlay(vec![OverlayProblem::UnknownServer {
                    server: "dsik".to_owned(),
                    suggestion: Some("disk".to_owned()),
                }])
            );
        });
        // An unknown category is a parse error, not a silent default.
        assert!(
            serde_yaml_ng::from_str::<CapabilityMap>(
                "capability_map:\n  - tool: x\n    caller_errors: [missing]\n"
            )
            .is_err()
        );
        // Nothing said, nothing written: the map's YAML is unchanged.
        let written = serde_yaml_ng::to_string(&CapabilityMap::new()).unwrap();
        assert!(!written.contains("servers"), "{written}");
    }

    /// The reference filesystem MCP server (npm `@modelcontextprotocol/server-filesystem`),
    /// started by `npx` as a child process: three different missing files are three of the
    /// model's mistakes, nothing opens and nothing is charged.
    #[test]
    fn b14_the_reference_filesystem_servers_file_not_found_is_the_callers() {
        // Never skipped: without Node.js this test fails, and says what it needs.
        let npx = std::process::Command::new("npx").arg("--version").output();
        assert!(
            npx.is_ok_and(|o| o.status.success()),
            "B14's reference-server test needs npx (Node.js and npm) on PATH"
        );
        let dir = std::env::temp_dir().join(format!("b14-fs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("present.txt"), "here").unwrap();
        let dir = std::fs::canonicalize(&dir).unwrap();
        runtime().block_on(async {
            let mut command = std::process::Command::new("npx");
            command
                .args(["-y", "@modelcontextprotocol/server-filesystem@2026.8.31"])
                .arg(&dir);
            let client = McpClient::builder()
                .child("fs", command)
                // The first run downloads the package.
                .connect_timeout(Duration::from_secs(180))
                .build()
                .await
                .expect("the reference filesystem server starts (npx, Node.js)");
            let expeditor = client.expeditor().clone();
            let present = dir.join("present.txt");
            let reply = client
                .call("read_text_file", json!({ "path": present }))
                .await;
            assert_eq!(reply.value, Some(json!({ "content": "here" })), "{reply:?}");
            for name in ["a.txt", "b.txt", "c.txt"] {
                let path = dir.join(name);
                let reply = client.call("read_text_file", json!({ "path": path })).await;
                let ReplyOutcome::Mistake(ModelMistake::Rejected {
                    category, message, ..
                }) = &reply.outcome
                else {
                    panic!("the caller's mistake: {reply:?}");
                };
                assert_eq!(*category, FailureCategory::NotFound);
                assert!(message.contains("ENOENT"), "{message}");
                assert!(
                    reply.text().starts_with(&format!(
                        "read_text_file rejected the call: ENOENT: no such file or directory, \
                         open '{}'. This is a problem with the call, not the tool: check that \
                         what the call names exists",
                        path.display()
                    )),
                    "{}",
                    reply.text()
                );
                assert_eq!(reply.state, Some(CircuitState::Closed));
            }
            let read = expeditor.tool("read_text_file").unwrap();
            assert_eq!(expeditor.state(read), Some(CircuitState::Closed));
            assert_eq!(expeditor.budget().status().consumed, 0);
            assert_eq!(expeditor.state_table().mistakes.rejected, 3);
            assert_eq!(expeditor.paused(), None);
            client.shutdown().await;
        });
        let _ = std::fs::remove_dir_all(&dir);
    }
}
