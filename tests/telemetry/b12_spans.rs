//! B12: the `execute_tool` span every guarded call runs in, as `tracing` sees it (no
//! OpenTelemetry here: `tests/telemetry/b12_otel.rs` checks the export). A capturing layer records every
//! span with its fields and parent, and every event with the span it is in.
//!
//! Each test installs its own subscriber for its thread only (`with_default`), so tests run in
//! parallel without seeing each other's spans.

#[path = "../common/spans.rs"]
mod spans;

use std::io;

use agent_circuit_breaker::toolbox;

use spans::{Capture, field};

struct Workspace {
    broken: bool,
}

#[toolbox(policy(threshold = 3, budget = 10))]
impl Workspace {
    #[tool(
        provides = "content search",
        alternatives(bash(method = "grep through the shell", degradation = "no formatting", via = grep_with_bash)),
        fallback = "ask the user which files to examine"
    )]
    fn grep(&self, pattern: &str) -> io::Result<String> {
        if self.broken {
            Err(io::Error::new(
                io::ErrorKind::ConnectionRefused,
                "connection refused",
            ))
        } else {
            Ok(format!("hit for {pattern}"))
        }
    }

    fn grep_with_bash(&self, pattern: &str) -> io::Result<String> {
        Ok(format!("bash hit for {pattern}"))
    }

    #[tool(
        provides = "command execution",
        fallback = "report the commands to run"
    )]
    fn bash(&self, command: &str) -> io::Result<String> {
        Ok(format!("ran {command}"))
    }

    #[tool(
        provides = "reading files",
        fallback = "ask the user to paste the file"
    )]
    async fn read(&self, path: String) -> io::Result<String> {
        if self.broken {
            Err(io::Error::new(io::ErrorKind::TimedOut, "read timed out"))
        } else {
            Ok(format!("contents of {path}"))
        }
    }
}

#[test]
fn b12_a_healthy_call_runs_in_one_execute_tool_span_with_the_genai_fields() {
    let capture = Capture::default();
    let guarded = GuardedWorkspace::new(Workspace { broken: false });
    let answer = capture.run(|| guarded.bash("ls"));
    assert_eq!(answer.unwrap().value, "ran ls");
    let calls = capture.calls();
    assert_eq!(calls.len(), 1, "{calls:#?}");
    let span = &calls[0];
    assert!(span.closed, "the span ends with the call");
    assert_eq!(field(span, "otel.name"), Some("execute_tool bash"));
    assert_eq!(field(span, "otel.kind"), Some("internal"));
    assert_eq!(field(span, "gen_ai.operation.name"), Some("execute_tool"));
    assert_eq!(field(span, "gen_ai.tool.name"), Some("bash"));
    assert_eq!(field(span, "gen_ai.tool.type"), Some("function"));
    assert_eq!(
        field(span, "error.type"),
        None,
        "a call that answered has no error.type"
    );
    assert_eq!(field(span, "otel.status_code"), None);
    assert!(
        capture.events_in(span).is_empty(),
        "nothing happened to the breaker"
    );
}

#[test]
fn b12_failures_set_error_type_state_and_budget_and_the_opening_is_a_span_event() {
    let capture = Capture::default();
    let guarded = GuardedWorkspace::new(Workspace { broken: true });
    capture.run(|| {
        for _ in 0..3 {
            assert!(guarded.grep("x").is_err());
        }
    });
    let calls = capture.calls();
    assert_eq!(calls.len(), 3);
    let first = &calls[0];
    assert_eq!(field(first, "error.type"), Some("network"), "{first:#?}");
    assert_eq!(field(first, "otel.status_code"), Some("error"));
    assert_eq!(
        field(first, "otel.status_description"),
        Some("connection refused")
    );
    assert_eq!(field(first, "circuit_breaker.state"), Some("closed"));
    assert_eq!(field(first, "circuit_breaker.budget.remaining"), Some("9"));
    let third = &calls[2];
    assert_eq!(field(third, "circuit_breaker.state"), Some("open"));
    assert_eq!(field(third, "circuit_breaker.budget.remaining"), Some("7"));
    assert_eq!(capture.events_in(first), Vec::<String>::new());
    assert_eq!(capture.events_in(third), ["opened"]);
    let opened = capture.event(third, "opened");
    assert_eq!(
        opened.get("circuit_breaker.tool").map(String::as_str),
        Some("grep")
    );
    assert_eq!(
        opened.get("circuit_breaker.state").map(String::as_str),
        Some("open")
    );
    assert_eq!(
        opened.get("message").map(String::as_str),
        Some("Circuit OPENED for grep: 3 consecutive failures")
    );
}

#[test]
fn b12_a_route_taken_is_recorded_on_the_span_of_the_tool_asked_for() {
    let capture = Capture::default();
    let guarded = GuardedWorkspace::new(Workspace { broken: true });
    for _ in 0..3 {
        let _ = guarded.grep("x");
    }
    let answer = capture.run(|| guarded.grep("needle")).unwrap();
    assert_eq!(answer.value, "bash hit for needle");
    let calls = capture.calls();
    assert_eq!(
        calls.len(),
        1,
        "the adapter's call is inside the one span: {calls:#?}"
    );
    let span = &calls[0];
    assert_eq!(field(span, "gen_ai.tool.name"), Some("grep"));
    assert_eq!(field(span, "error.type"), None, "the goal was reached");
    assert_eq!(field(span, "circuit_breaker.route"), Some("alternative"));
    assert_eq!(field(span, "circuit_breaker.route.tool"), Some("bash"));
    assert_eq!(
        field(span, "circuit_breaker.degradation"),
        Some("no formatting")
    );
    let routed = capture.event(span, "routed");
    assert_eq!(
        routed.get("circuit_breaker.route.tool").map(String::as_str),
        Some("bash")
    );
    assert_eq!(
        routed.get("circuit_breaker.severity").map(String::as_str),
        Some("low")
    );
}

#[test]
fn b12_a_refusal_is_error_type_circuit_open_with_the_route_advised() {
    let capture = Capture::default();
    let guarded = GuardedWorkspace::new(Workspace { broken: true });
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    for _ in 0..3 {
        let _ = rt.block_on(guarded.read("a".into()));
    }
    let refused = capture.run(|| rt.block_on(guarded.read("b".into())));
    assert!(refused.unwrap_err().refusal().is_some());
    let calls = capture.calls();
    assert_eq!(calls.len(), 1, "{calls:#?}");
    let span = &calls[0];
    assert!(span.closed);
    assert_eq!(field(span, "gen_ai.tool.name"), Some("read"));
    assert_eq!(field(span, "error.type"), Some("circuit_open"));
    assert_eq!(field(span, "otel.status_code"), Some("error"));
    assert_eq!(field(span, "circuit_breaker.state"), Some("open"));
    let event = capture.event(span, "refused");
    assert_eq!(
        event.get("error.type").map(String::as_str),
        Some("circuit_open")
    );
    assert_eq!(
        event.get("circuit_breaker.route").map(String::as_str),
        Some("fallback")
    );
    assert_eq!(
        event.get("circuit_breaker.fallback").map(String::as_str),
        Some("ask the user to paste the file")
    );
}

#[test]
fn b12_an_async_tool_runs_in_its_span_across_await() {
    let capture = Capture::default();
    let guarded = GuardedWorkspace::new(Workspace { broken: true });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let failed = capture.run(|| rt.block_on(guarded.read("a".into())));
    assert!(failed.is_err());
    let calls = capture.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(field(&calls[0], "error.type"), Some("timeout"));
    assert_eq!(
        field(&calls[0], "otel.status_description"),
        Some("read timed out")
    );
}

#[test]
fn b12_an_outer_span_is_used_by_the_call_inside_it_and_not_by_the_next() {
    let capture = Capture::default();
    let guarded = GuardedWorkspace::new(Workspace { broken: false });
    capture.run(|| {
        let span = agent_circuit_breaker::telemetry::execute_tool("bash");
        span.record("gen_ai.tool.call.id", "call_42");
        span.in_scope(|| {
            guarded.bash("ls").unwrap();
            // A second guarded call inside the same span is its own call: a child span.
            guarded.bash("pwd").unwrap();
        });
    });
    let calls = capture.calls();
    assert_eq!(calls.len(), 2, "one outer span, one child: {calls:#?}");
    assert_eq!(field(&calls[0], "gen_ai.tool.call.id"), Some("call_42"));
    assert_eq!(calls[0].parent, None);
    assert_eq!(
        calls[1].parent,
        Some(calls[0].id),
        "the second call is a child"
    );
    assert_eq!(field(&calls[1], "gen_ai.tool.call.id"), None);
}

#[test]
fn b12_a_span_not_entered_is_not_taken_by_a_later_call() {
    let capture = Capture::default();
    let guarded = GuardedWorkspace::new(Workspace { broken: false });
    capture.run(|| {
        let _unused = agent_circuit_breaker::telemetry::execute_tool("bash");
        guarded.bash("ls").unwrap();
    });
    let calls = capture.calls();
    assert_eq!(calls.len(), 2, "{calls:#?}");
    assert_eq!(
        calls[1].parent, None,
        "not a child of the span never entered"
    );
}

#[test]
fn b12_the_pauses_are_their_own_error_types_and_span_events() {
    let capture = Capture::default();
    // A budget of one failure: the first failure spends it, the next call pauses.
    struct Tight;
    #[toolbox(policy(threshold = 1, budget = 1))]
    impl Tight {
        #[tool(provides = "a", fallback = "do it by hand")]
        fn a(&self) -> io::Result<u8> {
            Err(io::Error::other("bad input"))
        }
        #[tool(provides = "b", fallback = "do it by hand")]
        fn b(&self) -> io::Result<u8> {
            Ok(1)
        }
    }
    let guarded = GuardedTight::new(Tight);
    capture.run(|| {
        assert!(guarded.a().is_err());
        assert!(guarded.b().unwrap_err().refusal().is_some());
    });
    let calls = capture.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(field(&calls[0], "error.type"), Some("other"));
    assert_eq!(
        capture.events_in(&calls[0]),
        ["opened", "budget_exhausted"],
        "the failure that spent the budget"
    );
    assert_eq!(field(&calls[1], "error.type"), Some("budget_exhausted"));
    let pause = capture.event(&calls[1], "budget_pause");
    assert_eq!(
        pause
            .get("circuit_breaker.budget.consumed")
            .map(String::as_str),
        Some("1")
    );
    assert_eq!(
        pause
            .get("circuit_breaker.budget.limit")
            .map(String::as_str),
        Some("1")
    );
    assert_eq!(
        pause
            .get("circuit_breaker.budget.remaining")
            .map(String::as_str),
        Some("0")
    );
}

#[test]
fn b12_error_type_vocabulary_is_small_and_documented() {
    use agent_circuit_breaker::telemetry::ErrorType;
    let all = ErrorType::ALL;
    let mut sorted = all.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), all.len(), "no value twice");
    assert!(
        all.iter()
            .all(|v| v.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
    );
    assert!(ErrorType::CircuitOpen.is_refusal());
    assert!(!ErrorType::UnknownTool.is_refusal());
    assert_eq!(
        ErrorType::Failed(agent_circuit_breaker::FailureCategory::NotFound).as_str(),
        "not_found"
    );
}
