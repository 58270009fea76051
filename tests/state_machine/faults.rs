//! Faults in tools: a tool that panics (the panic is counted as a failure and still
//! reaches the caller; the breaker stays consistent), a tool future dropped mid-call (a
//! cancellation, not a failure), a tool that never returns (the caller's timeout cancels it;
//! the breaker is not stuck). A panic is the tool's own failure: panics in several tools at
//! once are no systemic event (R9.6).

use std::future::Future;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Waker};

use agent_circuit_breaker::{
    CapabilityMap, CircuitState, Decision, Expeditor, FailureCategory, Policy, ToolSpec,
    expeditor::PANICKED, toolbox,
};

fn expeditor() -> Expeditor {
    let map = CapabilityMap::new().tool(
        ToolSpec::new("Bash")
            .provides("command execution")
            .fallback("report commands that need to be run manually"),
    );
    let policy = Policy::builder()
        .threshold(2)
        .budget(10)
        .probe_every(1)
        .build()
        .unwrap();
    Expeditor::builder(map).policy(policy).build().unwrap()
}

#[test]
fn r3_3_a_panic_holding_a_ticket_is_a_failure_and_reaches_the_caller() {
    let expeditor = expeditor();
    let bash = expeditor.tool("Bash").unwrap();
    let caught = catch_unwind(AssertUnwindSafe(|| {
        let Decision::Call(_ticket) = expeditor.decide(bash) else {
            unreachable!("a fresh tool is CLOSED")
        };
        panic!("segfault in the shell wrapper");
    }));
    assert!(caught.is_err(), "the panic surfaces to the caller");
    let breaker = expeditor.breaker(bash).unwrap();
    assert_eq!(breaker.consecutive_failures(), 1);
    assert_eq!(breaker.last_failure().unwrap().failure.message(), PANICKED);
    let budget = expeditor.budget();
    assert_eq!((budget.consumed(), budget.ledger().len()), (1, 1));
    // The state stays usable: the next call goes through and closes the run of failures.
    let Decision::Call(ticket) = expeditor.decide(bash) else {
        panic!("still CLOSED after one failure")
    };
    ticket.success();
    assert_eq!(expeditor.breaker(bash).unwrap().consecutive_failures(), 0);
}

#[test]
fn r3_2_a_panicking_probe_reopens_the_circuit() {
    let expeditor = expeditor();
    let bash = expeditor.tool("Bash").unwrap();
    for _ in 0..2 {
        if let Decision::Call(t) = expeditor.decide(bash) {
            let _ = t.failure("command not found");
        }
    }
    let caught = catch_unwind(AssertUnwindSafe(|| {
        let Decision::Probe(_ticket) = expeditor.decide(bash) else {
            unreachable!("probe every attempt")
        };
        panic!("probe panicked");
    }));
    assert!(caught.is_err());
    let breaker = expeditor.breaker(bash).unwrap();
    assert_eq!(
        breaker.state(),
        CircuitState::Open,
        "a failed probe re-opens"
    );
    assert!(!breaker.probe_in_flight());
    assert_eq!(breaker.consecutive_failures(), 3);
}

#[test]
fn r9_6_panics_in_three_tools_in_one_step_are_no_systemic_event() {
    let map = ["Bash", "Grep", "Read"]
        .into_iter()
        .fold(CapabilityMap::new(), |map, name| {
            map.tool(ToolSpec::new(name).provides(name).fallback("ask the user"))
        });
    let policy = Policy::builder().threshold(1).budget(10).build().unwrap();
    let expeditor = Expeditor::builder(map).policy(policy).build().unwrap();
    expeditor.advance_step();
    for name in ["Bash", "Grep", "Read"] {
        let tool = expeditor.tool(name).unwrap();
        let caught = catch_unwind(AssertUnwindSafe(|| {
            let Decision::Call(_ticket) = expeditor.decide(tool) else {
                unreachable!("a fresh tool is CLOSED")
            };
            panic!("{name} crashed");
        }));
        assert!(caught.is_err());
        let breaker = expeditor.breaker(tool).unwrap();
        assert_eq!(breaker.state(), CircuitState::Open, "{name}");
        assert_eq!(breaker.common_category(), Some(FailureCategory::Other));
    }
    assert_eq!(
        expeditor.systemic_event(),
        None,
        "three circuits, all tool-local"
    );
    assert_eq!(expeditor.paused(), None);
    assert_eq!(expeditor.budget().consumed(), 3);
}

struct Shell {
    panics: AtomicBool,
}

#[toolbox(policy(threshold = 2, budget = 10))]
impl Shell {
    #[tool(
        provides = "command execution",
        fallback = "report commands that need to be run manually"
    )]
    fn bash(&self, command: &str) -> io::Result<String> {
        assert!(
            !self.panics.load(Ordering::SeqCst),
            "the shell wrapper crashed on {command}"
        );
        Ok(command.to_owned())
    }

    #[tool(provides = "remote execution", fallback = "run it by hand")]
    async fn remote(&self, command: String) -> io::Result<String> {
        std::future::pending::<()>().await;
        Ok(command)
    }
}

#[test]
fn r3_3_a_generated_method_whose_tool_panics_records_a_failure_and_rethrows() {
    let shell = GuardedShell::new(Shell {
        panics: AtomicBool::new(true),
    });
    for _ in 0..2 {
        let caught = catch_unwind(AssertUnwindSafe(|| shell.bash("make")));
        assert!(caught.is_err(), "the tool's panic reaches the caller");
    }
    assert_eq!(
        shell.expeditor().state(ShellTool::Bash),
        Some(CircuitState::Open)
    );
    let refused = shell.bash("make").unwrap_err();
    assert!(
        refused.refusal().is_some(),
        "OPEN after two panics: not called again"
    );
    assert_eq!(shell.expeditor().budget().consumed(), 2);
}

#[test]
fn r3_6_a_tool_that_never_returns_is_cancelled_by_the_callers_timeout() {
    let shell = GuardedShell::new(Shell {
        panics: AtomicBool::new(false),
    });
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..5 {
        // The caller gives the call three polls, then gives up: the future is dropped.
        let mut call = pin!(shell.remote("deploy".into()));
        for _ in 0..3 {
            assert!(call.as_mut().poll(&mut cx).is_pending());
        }
    }
    let breaker = shell.expeditor().breaker(ShellTool::Remote).unwrap();
    assert_eq!(
        breaker.state(),
        CircuitState::Closed,
        "cancellations are not failures"
    );
    assert_eq!(breaker.consecutive_failures(), 0);
    assert_eq!(shell.expeditor().budget().consumed(), 0);
    // And the tool is not stuck: the next call is made (and is pending again).
    let mut call = pin!(shell.remote("deploy".into()));
    assert!(matches!(call.as_mut().poll(&mut cx), Poll::Pending));
}
