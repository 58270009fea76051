//! R8: the expeditor decides, the executor calls. The decision layer needs no tool's API or
//! error type, and it never retries, alters a call or hides an error.

#[path = "../common/mod.rs"]
mod common;

use agent_circuit_breaker::{
    CapabilityMap, CircuitState, Decision, Expeditor, Failure, FailureCategory, clock::ManualClock,
};
use common::T0;

/// Everything this test knows about tools is their names (strings) and what failed
/// (`Failure` values): there is no tool function, client or error type anywhere.
#[test]
fn r8_1_the_expeditor_works_with_no_tool_type_at_all() {
    let expeditor = Expeditor::builder(CapabilityMap::new())
        .clock(ManualClock::new(T0))
        .build()
        .expect("an empty map is valid");
    // What an agent loop sees: a tool name from the model, and whether the call worked.
    let transcript: [(&str, Option<Failure>); 6] = [
        ("search_docs", None),
        (
            "fetch_url",
            Some(Failure::with_category("HTTP 503", FailureCategory::Network)),
        ),
        ("fetch_url", Some(Failure::new("connection reset by peer"))),
        ("fetch_url", Some(Failure::new("connection refused"))),
        ("search_docs", None),
        (
            "run_sql",
            Some(Failure::new("permission denied for table users")),
        ),
    ];
    let mut decisions = Vec::new();
    for (name, outcome) in transcript {
        expeditor.advance_step();
        let decision = expeditor.decide_named(name).expect("a non-empty name");
        decisions.push(decision.kind());
        if let Decision::Call(ticket) = decision {
            match outcome {
                None => ticket.success(),
                Some(failure) => {
                    let _ = ticket.failure(failure);
                }
            }
        }
    }
    assert_eq!(decisions, ["CALL"; 6]);
    let fetch = expeditor.tool("fetch_url").unwrap();
    assert_eq!(expeditor.state(fetch), Some(CircuitState::Open));
    assert_eq!(
        expeditor.decide_named("fetch_url").unwrap().kind(),
        "SKIP",
        "the fourth ask after three failures is not a call"
    );
    let names: Vec<String> = expeditor
        .state_table()
        .rows
        .into_iter()
        .map(|r| r.tool)
        .collect();
    assert_eq!(names, ["search_docs", "fetch_url", "run_sql"]);
    let budget = expeditor.budget();
    assert_eq!(budget.consumed(), 4);
    assert_eq!(
        budget.ledger()[0].failure.category(),
        FailureCategory::Network
    );
    assert_eq!(
        budget.ledger()[3].failure.category(),
        FailureCategory::Permission
    );
}

/// An error type with no traits at all: no `Debug`, `Display`, `Error` or `PartialEq`.
struct Opaque(u8);

#[test]
fn r8_1_tickets_accept_any_error_type_and_hand_it_back() {
    let expeditor = Expeditor::new(CapabilityMap::new()).unwrap();
    let Decision::Call(ticket) = expeditor.decide_named("anything").unwrap() else {
        panic!("a new tool is CLOSED")
    };
    let result: Result<(), Opaque> = Err(Opaque(7));
    let returned = ticket.record(result, |Opaque(code)| {
        Failure::new(format!("exit status {code}"))
    });
    let Err(Opaque(7)) = returned else {
        panic!("the executor gets its own error back")
    };
    assert_eq!(
        expeditor.budget().ledger()[0].failure.message(),
        "exit status 7"
    );
}

/// A tool that records every call it receives, and always fails.
#[derive(Default)]
struct BrokenTool {
    calls: Vec<String>,
}

impl BrokenTool {
    fn call(&mut self, command: &str) -> Result<String, String> {
        self.calls.push(command.to_owned());
        Err(format!("{command}: permission denied"))
    }
}

#[test]
fn r8_2_the_executor_calls_only_on_call_or_probe_and_every_error_reaches_it() {
    let expeditor = Expeditor::builder(common::seed_map())
        .clock(ManualClock::new(T0))
        .build()
        .unwrap();
    let bash = expeditor.tool("Bash").unwrap();
    let mut tool = BrokenTool::default();
    let mut decisions = Vec::new();
    let mut errors_seen = Vec::new();
    for attempt in 1..=10 {
        let command = format!("cargo test --attempt {attempt}");
        let decision = expeditor.decide(bash);
        decisions.push(decision.kind());
        match decision {
            Decision::Call(ticket) | Decision::Probe(ticket) => {
                let result = tool.call(&command);
                let result = ticket.record(result, |e| Failure::new(e.clone()));
                errors_seen.push(result.expect_err("the tool is broken"));
            }
            Decision::Skip(_) | Decision::Pause(_) => {}
        }
    }
    assert_eq!(
        decisions,
        [
            "CALL", "CALL", "CALL", // three failures open the circuit
            "SKIP", "SKIP", "PROBE", // the third attempt after opening probes, and fails
            "SKIP", "SKIP", "PROBE", // again: the fifth failure spends the budget
            "PAUSE"
        ]
    );
    // Called exactly once per CALL or PROBE, with the executor's own arguments.
    assert_eq!(
        tool.calls,
        [
            "cargo test --attempt 1",
            "cargo test --attempt 2",
            "cargo test --attempt 3",
            "cargo test --attempt 6",
            "cargo test --attempt 9"
        ]
    );
    // Every error reached the executor, and each is written down once.
    assert_eq!(errors_seen.len(), 5);
    let ledger: Vec<String> = expeditor
        .budget()
        .ledger()
        .iter()
        .map(|e| e.failure.message().to_owned())
        .collect();
    assert_eq!(ledger, errors_seen);
}
