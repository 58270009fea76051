//! R3: decide, call, record — the four decisions, the state machine, bookkeeping, the pause,
//! no immediate retry, one probe under races, tickets as the only way to report.

#[path = "../common/mod.rs"]
mod common;

use std::sync::Barrier;
use std::thread;

use agent_circuit_breaker::{
    CircuitState, Decision, Expeditor, Failure, PauseReason, Policy, SkipReason, event::Event,
    expeditor::Recorded, policy::ProbeUnit, report::BudgetStatus,
};
use common::{
    EventLog, SEED_TOOLS, T0, clock, expeditor_with, fail, fail_all, id, kind, open3,
    policy_with_budget, seed_expeditor, seed_map, succeed,
};

fn logged_expeditor(policy: Policy) -> (Expeditor, EventLog) {
    let log = EventLog::default();
    let expeditor = Expeditor::builder(seed_map())
        .policy(policy)
        .clock(clock())
        .observer(log.observer())
        .build()
        .unwrap();
    (expeditor, log)
}

/// The visible state of an expeditor, to compare before and after.
fn visible(expeditor: &Expeditor) -> (serde_json::Value, String) {
    (
        serde_json::to_value(expeditor.snapshot()).unwrap(),
        expeditor.state_table().to_string(),
    )
}

#[test]
fn r3_1_every_decision_is_exactly_one_of_call_probe_skip_pause() {
    let (expeditor, _clock) = seed_expeditor();
    let grep = id(&expeditor, "Grep");
    let bash = id(&expeditor, "Bash");
    let mut seen = Vec::new();
    seen.push(kind(expeditor.decide(grep)));
    open3(&expeditor, "Bash");
    for _ in 0..3 {
        seen.push(kind(expeditor.decide(bash))); // the probe ticket is dropped: released
    }
    fail(&expeditor, "Bash", "still broken"); // the probe fails: 4 / 5
    fail(&expeditor, "WebSearch", "connection refused"); // 5 / 5: pause
    seen.push(kind(expeditor.decide(grep)));
    seen.push(kind(expeditor.decide(bash)));
    assert_eq!(seen, ["CALL", "SKIP", "SKIP", "PROBE", "PAUSE", "PAUSE"]);
}

#[test]
fn r3_2_closed_opens_when_consecutive_failures_reach_the_threshold() {
    let (expeditor, _clock) = seed_expeditor();
    let first = fail(&expeditor, "Bash", "permission denied");
    assert_eq!(
        first,
        Recorded {
            state: CircuitState::Closed,
            consecutive_failures: 1,
            opened: false,
            budget: BudgetStatus {
                consumed: 1,
                limit: 5
            },
            paused: false,
        }
    );
    assert!(!fail(&expeditor, "Bash", "command not found").opened);
    let third = fail(&expeditor, "Bash", "timeout after 120s");
    assert_eq!(
        third,
        Recorded {
            state: CircuitState::Open,
            consecutive_failures: 3,
            opened: true,
            budget: BudgetStatus {
                consumed: 3,
                limit: 5
            },
            paused: false,
        }
    );
    assert_eq!(
        expeditor.state(id(&expeditor, "Bash")),
        Some(CircuitState::Open)
    );
    // Other tools are independent.
    assert_eq!(
        expeditor.state(id(&expeditor, "Grep")),
        Some(CircuitState::Closed)
    );
}

#[test]
fn r3_2_open_turns_half_open_on_the_third_attempt_after_opening() {
    let (expeditor, log) = logged_expeditor(Policy::default());
    let bash = id(&expeditor, "Bash");
    open3(&expeditor, "Bash");
    log.take();
    let mut states = Vec::new();
    let mut kinds = Vec::new();
    let mut probe = None;
    for _ in 0..3 {
        let decision = expeditor.decide(bash);
        kinds.push(decision.kind());
        states.push(expeditor.state(bash).unwrap());
        if let Decision::Probe(ticket) = decision {
            assert!(ticket.is_probe());
            assert_eq!(ticket.tool_name(), "Bash");
            probe = Some(ticket);
        }
    }
    assert_eq!(kinds, ["SKIP", "SKIP", "PROBE"]);
    assert_eq!(
        states,
        [
            CircuitState::Open,
            CircuitState::Open,
            CircuitState::HalfOpen
        ]
    );
    assert_eq!(
        log.events(),
        [Event::HalfOpened {
            tool: "Bash".into()
        }]
    );
    assert!(expeditor.breaker(bash).unwrap().probe_in_flight());
    probe.expect("probe granted").success();
}

#[test]
fn r3_2_with_probe_unit_steps_the_probe_is_due_probe_every_steps_after_opening() {
    let clock = clock();
    let policy = Policy::builder()
        .probe_unit(ProbeUnit::Steps)
        .build()
        .unwrap();
    let expeditor = expeditor_with(seed_map(), policy, &clock);
    let bash = id(&expeditor, "Bash");
    for _ in 0..4 {
        expeditor.advance_step();
    }
    open3(&expeditor, "Bash");
    assert_eq!(expeditor.breaker(bash).unwrap().opened_at_step(), Some(4));
    let mut kinds = Vec::new();
    // Attempts do not count in this unit: many in step 4, then one per step.
    for _ in 0..5 {
        kinds.push(kind(expeditor.decide(bash)));
    }
    for _ in 5..=7 {
        expeditor.advance_step();
        kinds.push(kind(expeditor.decide(bash)));
    }
    assert_eq!(
        kinds,
        [
            "SKIP", "SKIP", "SKIP", "SKIP", "SKIP", "SKIP", "SKIP", "PROBE"
        ]
    );
    assert_eq!(expeditor.step(), 7);
    assert_eq!(expeditor.state(bash), Some(CircuitState::HalfOpen));
}

#[test]
fn r3_2_half_open_closes_on_a_successful_probe() {
    let (expeditor, log) = logged_expeditor(Policy::default());
    let bash = id(&expeditor, "Bash");
    open3(&expeditor, "Bash");
    let _ = expeditor.decide(bash);
    let _ = expeditor.decide(bash);
    let Decision::Probe(probe) = expeditor.decide(bash) else {
        panic!("third attempt probes")
    };
    log.take();
    probe.success();
    let record = expeditor.breaker(bash).unwrap();
    assert_eq!(record.state(), CircuitState::Closed);
    assert_eq!(record.consecutive_failures(), 0);
    assert_eq!(record.opened_at_step(), None);
    assert!(record.last_success().is_some());
    assert!(!record.probe_in_flight());
    assert_eq!(
        log.events(),
        [Event::Closed {
            tool: "Bash".into()
        }]
    );
    assert_eq!(kind(expeditor.decide(bash)), "CALL");
    // Closed again means the full threshold again: two failures do not reopen it.
    assert!(!fail_all(&expeditor, "Bash", &["a", "b"]).opened);
}

#[test]
fn r3_2_half_open_reopens_on_a_failed_probe_and_charges_the_budget() {
    let (expeditor, log) = logged_expeditor(policy_with_budget(10));
    let bash = id(&expeditor, "Bash");
    open3(&expeditor, "Bash");
    expeditor.advance_step();
    expeditor.advance_step();
    let _ = expeditor.decide(bash);
    let _ = expeditor.decide(bash);
    let Decision::Probe(probe) = expeditor.decide(bash) else {
        panic!("third attempt probes")
    };
    log.take();
    let recorded = probe.failure("still broken");
    assert_eq!(
        recorded,
        Recorded {
            state: CircuitState::Open,
            consecutive_failures: 4,
            opened: true,
            budget: BudgetStatus {
                consumed: 4,
                limit: 10
            },
            paused: false,
        }
    );
    let budget = expeditor.budget();
    let last = budget.ledger().last().unwrap();
    assert_eq!(
        (last.tool.as_str(), last.failure.message(), last.step),
        ("Bash", "still broken", 2)
    );
    assert_eq!(
        log.events(),
        [Event::Reopened {
            tool: "Bash".into(),
            consecutive_failures: 4,
            message: "still broken".into()
        }]
    );
    assert_eq!(
        log.events()[0].to_string(),
        "Circuit OPENED for Bash: probe failed, 4 consecutive failures"
    );
    // Re-opened at step 2: the probe interval starts over.
    assert_eq!(expeditor.breaker(bash).unwrap().opened_at_step(), Some(2));
    let kinds: Vec<&str> = (0..3).map(|_| kind(expeditor.decide(bash))).collect();
    assert_eq!(kinds, ["SKIP", "SKIP", "PROBE"]);
}

#[test]
fn r3_2_late_call_outcomes_do_not_move_an_open_circuit() {
    let (expeditor, _clock) = seed_expeditor();
    let bash = id(&expeditor, "Bash");
    let Decision::Call(late_success) = expeditor.decide(bash) else {
        panic!("CLOSED")
    };
    let Decision::Call(late_failure) = expeditor.decide(bash) else {
        panic!("CLOSED")
    };
    open3(&expeditor, "Bash");
    late_success.success();
    let record = expeditor.breaker(bash).unwrap();
    assert_eq!(
        (record.state(), record.consecutive_failures()),
        (CircuitState::Open, 3),
        "only a probe closes a circuit"
    );
    let recorded = late_failure.failure("late");
    assert_eq!(
        (
            recorded.state,
            recorded.consecutive_failures,
            recorded.opened
        ),
        (CircuitState::Open, 4, false)
    );
    assert_eq!(
        recorded.budget.consumed, 4,
        "a real failure is still charged"
    );
}

#[test]
fn r3_3_success_resets_consecutive_failures_and_records_the_success() {
    let (expeditor, clock) = seed_expeditor();
    let grep = id(&expeditor, "Grep");
    fail_all(&expeditor, "Grep", &["a", "b"]);
    expeditor.advance_step();
    clock.advance(std::time::Duration::from_secs(60));
    succeed(&expeditor, "Grep");
    let record = expeditor.breaker(grep).unwrap();
    assert_eq!(record.consecutive_failures(), 0);
    let success = record.last_success().expect("recorded");
    assert_eq!(success.step, 1);
    assert_eq!(success.at.to_string(), "2026-11-30T07:36:03Z");
    assert_eq!(
        record.last_failure().unwrap().failure.message(),
        "b",
        "the last failure is kept"
    );
    // Two more failures: 2 consecutive, not 4 — the circuit stays CLOSED.
    let recorded = fail_all(&expeditor, "Grep", &["c", "d"]);
    assert_eq!(
        (recorded.state, recorded.consecutive_failures),
        (CircuitState::Closed, 2)
    );
    assert_eq!(expeditor.budget().consumed(), 4, "every failure is charged");
}

#[test]
fn r3_3_failure_bookkeeping_and_the_opened_event() {
    let (expeditor, log) = logged_expeditor(Policy::default());
    let bash = id(&expeditor, "Bash");
    expeditor.advance_step();
    expeditor.advance_step();
    expeditor.advance_step();
    fail(&expeditor, "Bash", "permission denied");
    let record = expeditor.breaker(bash).unwrap();
    let mark = record.last_failure().unwrap();
    assert_eq!((mark.at, mark.step), (T0, 3));
    assert_eq!(mark.failure.message(), "permission denied");
    let budget = expeditor.budget();
    assert_eq!(budget.consumed(), 1);
    let entry = &budget.ledger()[0];
    assert_eq!(
        (
            entry.tool.as_str(),
            entry.failure.message(),
            entry.step,
            entry.at,
            entry.charged
        ),
        ("Bash", "permission denied", 3, T0, true)
    );
    assert!(log.events().is_empty(), "no transition yet");
    fail_all(
        &expeditor,
        "Bash",
        &["command not found", "timeout after 120s"],
    );
    let events = log.events();
    assert_eq!(
        events,
        [Event::Opened {
            tool: "Bash".into(),
            consecutive_failures: 3,
            message: "timeout after 120s".into()
        }]
    );
    assert_eq!(
        events[0].to_string(),
        "Circuit OPENED for Bash: 3 consecutive failures"
    );
}

#[test]
fn r3_4_budget_exhausted_pauses_every_tool_until_a_new_cycle() {
    let (expeditor, log) = logged_expeditor(Policy::default());
    open3(&expeditor, "Bash");
    assert!(!fail(&expeditor, "WebSearch", "connection refused").paused);
    let last = fail(&expeditor, "WebSearch", "connection refused");
    assert!(last.paused);
    assert!(last.budget.is_exhausted());
    let reason = PauseReason::BudgetExhausted {
        consumed: 5,
        limit: 5,
    };
    assert_eq!(expeditor.paused(), Some(reason));
    assert_eq!(
        log.events().last(),
        Some(&Event::BudgetExhausted {
            consumed: 5,
            limit: 5
        })
    );
    for name in SEED_TOOLS {
        match expeditor.decide(id(&expeditor, name)) {
            Decision::Pause(pause) => assert_eq!(pause.reason(), reason),
            other => panic!("{name}: expected PAUSE, got {}", other.kind()),
        }
    }
    // Pausing is not attempting: many pauses later, Bash still needs its 3 attempts.
    for _ in 0..10 {
        assert_eq!(kind(expeditor.decide(id(&expeditor, "Bash"))), "PAUSE");
    }
    assert_eq!(
        kind(expeditor.decide_named("brand_new_tool").unwrap()),
        "PAUSE",
        "a tool discovered during the pause is paused too"
    );
    assert_eq!(expeditor.new_cycle(), 2);
    assert_eq!(expeditor.paused(), None);
    assert_eq!(kind(expeditor.decide(id(&expeditor, "Grep"))), "CALL");
    assert_eq!(kind(expeditor.decide(id(&expeditor, "Bash"))), "SKIP");
}

#[test]
fn r3_4_failures_of_calls_in_flight_at_the_pause_are_written_down_not_charged() {
    let (expeditor, _clock) = seed_expeditor();
    fail_all(&expeditor, "Bash", &["a", "b", "c"]);
    fail(&expeditor, "Read", "d");
    let grep = id(&expeditor, "Grep");
    let (Decision::Call(first), Decision::Call(second)) =
        (expeditor.decide(grep), expeditor.decide(grep))
    else {
        panic!("Grep is CLOSED")
    };
    assert!(first.failure("e").paused);
    let recorded = second.failure("f");
    assert_eq!(recorded.budget.consumed, 5, "the budget is never exceeded");
    let budget = expeditor.budget();
    assert_eq!(budget.ledger().len(), 6);
    assert!(!budget.ledger()[5].charged);
    assert!(
        budget
            .to_string()
            .contains("  Failure 6: Grep — \"f\" (step 0) [after pause, not charged]"),
        "{budget}"
    );
}

#[test]
fn r3_5_after_opening_the_next_attempts_are_skipped_not_called() {
    let (expeditor, _clock) = seed_expeditor();
    let bash = id(&expeditor, "Bash");
    open3(&expeditor, "Bash");
    for attempt in 1..=2 {
        match expeditor.decide(bash) {
            Decision::Skip(skip) => {
                assert_eq!(skip.reason(), SkipReason::Open);
                assert_eq!(skip.tool(), bash);
                assert_eq!(skip.tool_name(), "Bash");
            }
            other => panic!("attempt {attempt} after opening: {}", other.kind()),
        }
    }
    assert_eq!(expeditor.budget().consumed(), 3, "a skip charges nothing");
}

#[derive(Debug, PartialEq)]
struct ToolError {
    code: i32,
    detail: Box<str>,
}

#[test]
fn r3_5_a_recorded_failure_returns_the_error_untouched() {
    let (expeditor, _clock) = seed_expeditor();
    let bash = id(&expeditor, "Bash");
    let error = ToolError {
        code: 127,
        detail: "sh: rg: command not found".into(),
    };
    let address = error.detail.as_ptr();
    let Decision::Call(ticket) = expeditor.decide(bash) else {
        panic!("CLOSED")
    };
    let result: Result<String, ToolError> = Err(error);
    let returned = ticket.record(result, |e| {
        Failure::new(format!("exit {}: {}", e.code, e.detail))
    });
    let error = returned.expect_err("the error comes back");
    assert_eq!(error.code, 127);
    assert_eq!(
        error.detail.as_ptr(),
        address,
        "the very same error value, not a copy"
    );
    let budget = expeditor.budget();
    assert_eq!(
        budget.ledger()[0].failure.message(),
        "exit 127: sh: rg: command not found"
    );

    let Decision::Call(ticket) = expeditor.decide(bash) else {
        panic!("CLOSED")
    };
    let ok: Result<String, ToolError> = Ok("output".into());
    assert_eq!(
        ticket.record(ok, |_| unreachable!("no failure on Ok")),
        Ok("output".into())
    );
    assert_eq!(
        expeditor.breaker(bash).unwrap().consecutive_failures(),
        0,
        "Ok is a success"
    );
}

/// Races `threads` callers at `tool` once; returns each caller's decision kind and skip reason.
/// Tickets are held until every caller has decided, so a probe cannot be released mid-race.
fn race(
    expeditor: &Expeditor,
    tool: &str,
    threads: usize,
) -> Vec<(&'static str, Option<SkipReason>)> {
    let tool = id(expeditor, tool);
    let start = Barrier::new(threads);
    let decided = Barrier::new(threads);
    thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    start.wait();
                    let decision = expeditor.decide(tool);
                    let seen = match &decision {
                        Decision::Skip(skip) => (decision.kind(), Some(skip.reason())),
                        other => (other.kind(), None),
                    };
                    decided.wait();
                    if let Decision::Probe(ticket) = decision {
                        ticket.success();
                    }
                    seen
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn assert_exactly_one_probe(outcomes: &[(&str, Option<SkipReason>)], round: usize) {
    let probes = outcomes.iter().filter(|(k, _)| *k == "PROBE").count();
    assert_eq!(probes, 1, "round {round}: {outcomes:?}");
    for outcome in outcomes.iter().filter(|(k, _)| *k != "PROBE") {
        assert_eq!(
            *outcome,
            ("SKIP", Some(SkipReason::ProbeInFlight)),
            "round {round}: {outcomes:?}"
        );
    }
}

#[test]
fn r3_6_exactly_one_probe_when_threads_race_at_a_probe_due_tool() {
    let policy = Policy::builder()
        .probe_unit(ProbeUnit::Steps)
        .probe_every(1)
        .build()
        .unwrap();
    for round in 0..200 {
        let clock = clock();
        let expeditor = expeditor_with(seed_map(), policy, &clock);
        open3(&expeditor, "Bash");
        expeditor.advance_step(); // the probe is due now
        let outcomes = race(&expeditor, "Bash", 8);
        assert_exactly_one_probe(&outcomes, round);
        assert_eq!(
            expeditor.state(id(&expeditor, "Bash")),
            Some(CircuitState::Closed),
            "round {round}: the one probe succeeded"
        );
    }
}

#[test]
fn r3_6_exactly_one_probe_when_threads_race_for_a_released_half_open_slot() {
    for round in 0..200 {
        let (expeditor, _clock) = seed_expeditor();
        let bash = id(&expeditor, "Bash");
        open3(&expeditor, "Bash");
        let kinds: Vec<&str> = (0..3).map(|_| kind(expeditor.decide(bash))).collect();
        assert_eq!(kinds, ["SKIP", "SKIP", "PROBE"]);
        // The probe was dropped: HALF-OPEN with its slot free.
        assert_eq!(expeditor.state(bash), Some(CircuitState::HalfOpen));
        let outcomes = race(&expeditor, "Bash", 8);
        assert_exactly_one_probe(&outcomes, round);
    }
}

#[test]
fn r3_6_a_dropped_probe_ticket_is_a_cancellation() {
    let (expeditor, log) = logged_expeditor(Policy::default());
    let bash = id(&expeditor, "Bash");
    open3(&expeditor, "Bash");
    let _ = expeditor.decide(bash);
    let _ = expeditor.decide(bash);
    let Decision::Probe(probe) = expeditor.decide(bash) else {
        panic!("third attempt probes")
    };
    let Decision::Skip(skip) = expeditor.decide(bash) else {
        panic!("the slot is taken")
    };
    assert_eq!(skip.reason(), SkipReason::ProbeInFlight);
    log.take();
    let before = expeditor.budget();
    drop(probe);
    assert_eq!(
        log.events(),
        [Event::ProbeReleased {
            tool: "Bash".into()
        }]
    );
    let record = expeditor.breaker(bash).unwrap();
    assert_eq!(record.state(), CircuitState::HalfOpen);
    assert!(!record.probe_in_flight(), "the slot is free");
    assert_eq!(record.consecutive_failures(), 3, "not a failure");
    assert_eq!(record.last_success(), None, "not a success");
    assert_eq!(expeditor.budget(), before, "not charged");
    // The next caller gets the probe; cancel() is the same as dropping.
    let Decision::Probe(probe) = expeditor.decide(bash) else {
        panic!("the freed slot goes to the next caller")
    };
    probe.cancel();
    assert_eq!(log.kinds(), ["probe_released", "probe_released"]);
    assert_eq!(kind(expeditor.decide(bash)), "PROBE");
}

/// R3.6, B13: a call ticket dropped unrecorded charges nothing and changes no breaker; it is
/// counted as a cancellation by the caller (shown under the table). One given back with
/// `cancel` (no call made) is not even counted.
#[test]
fn r3_6_a_dropped_call_ticket_changes_nothing() {
    let (expeditor, log) = logged_expeditor(Policy::default());
    fail(&expeditor, "Grep", "a");
    succeed(&expeditor, "Read");
    let (before_snapshot, before_table) = visible(&expeditor);
    for name in SEED_TOOLS {
        let Decision::Call(ticket) = expeditor.decide(id(&expeditor, name)) else {
            panic!("{name} is CLOSED")
        };
        drop(ticket);
        let Decision::Call(ticket) = expeditor.decide(id(&expeditor, name)) else {
            panic!("{name} is CLOSED")
        };
        ticket.cancel();
    }
    let (mut snapshot, table) = visible(&expeditor);
    for tool in snapshot["tools"].as_array_mut().unwrap() {
        let breaker = tool["breaker"].as_object_mut().unwrap();
        assert_eq!(breaker.remove("cancelled"), Some(1.into()), "{breaker:?}");
    }
    assert_eq!(snapshot, before_snapshot);
    let counted: Vec<String> = SEED_TOOLS.iter().map(|t| format!("{t} 1")).collect();
    assert_eq!(
        table,
        format!(
            "{before_table}\nCancelled by caller (not charged): {}",
            counted.join(", ")
        )
    );
    assert!(log.events().is_empty());
}
