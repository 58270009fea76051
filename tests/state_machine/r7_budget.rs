//! R7: the failure budget — the ledger, the status line, the pause report, cycles.

#[path = "../common/mod.rs"]
mod common;

use std::time::Duration;

use agent_circuit_breaker::{
    CircuitState, Decision, Expeditor, FailureCategory, PauseReason, Policy, Task,
    clock::ManualClock,
    event::Event,
    report::{BudgetStatus, MistakeCount, PauseReport, ToolHealth, WorkLine},
    scope::WorkStatus,
};
use common::{
    EventLog, assert_golden, clock, fail, fail_all, id, kind, seed_expeditor, seed_map, seed_task,
    succeed,
};

/// The source document's budget story: four failures at steps 3, 3, 4 and 5.
fn seed_failures(expeditor: &Expeditor, clock: &ManualClock) {
    while expeditor.step() < 3 {
        expeditor.advance_step();
    }
    fail(expeditor, "Bash", "permission denied");
    fail(expeditor, "Bash", "command not found");
    expeditor.advance_step();
    clock.advance(Duration::from_secs(120));
    fail(expeditor, "Bash", "timeout after 120s");
    expeditor.advance_step();
    fail(expeditor, "WebSearch", "connection refused");
}

#[test]
fn r7_1_the_ledger_writes_down_tool_message_and_step() {
    let (expeditor, clock) = seed_expeditor();
    seed_failures(&expeditor, &clock);
    let budget = expeditor.budget();
    let ledger: Vec<(&str, &str, u64, bool)> = budget
        .ledger()
        .iter()
        .map(|e| (e.tool.as_str(), e.failure.message(), e.step, e.charged))
        .collect();
    assert_eq!(
        ledger,
        [
            ("Bash", "permission denied", 3, true),
            ("Bash", "command not found", 3, true),
            ("Bash", "timeout after 120s", 4, true),
            ("WebSearch", "connection refused", 5, true),
        ]
    );
    assert_eq!(
        budget.ledger()[3].failure.category(),
        FailureCategory::Network
    );
    assert_eq!(
        (budget.consumed(), budget.limit(), budget.cycle()),
        (4, 5, 1)
    );
}

#[test]
fn r7_2_the_budget_block_is_the_source_documents_exactly() {
    let (expeditor, clock) = seed_expeditor();
    seed_failures(&expeditor, &clock);
    assert_golden("seed_budget_block.txt", &expeditor.budget().to_string());
}

#[test]
fn r7_2_status_line_singular_plural_and_exhausted() {
    let status = |consumed| BudgetStatus { consumed, limit: 5 };
    assert_eq!(
        status(4).to_string(),
        "1 failure remaining before mandatory pause"
    );
    assert_eq!(
        status(3).to_string(),
        "2 failures remaining before mandatory pause"
    );
    assert_eq!(
        status(0).to_string(),
        "5 failures remaining before mandatory pause"
    );
    assert_eq!(status(5).to_string(), "FAILURE BUDGET EXHAUSTED — PAUSING");
    assert_eq!((status(3).remaining(), status(5).remaining()), (2, 0));
    assert!(status(5).is_exhausted() && !status(4).is_exhausted());

    let (expeditor, _clock) = seed_expeditor();
    assert_golden(
        "r7_2_budget_block_empty.txt",
        &expeditor.budget().to_string(),
    );
    fail_all(
        &expeditor,
        "Read",
        &["no such file", "no such file", "no such file"],
    );
    assert_eq!(
        expeditor.budget().status().to_string(),
        "2 failures remaining before mandatory pause"
    );
    // Two left: no "heightened caution" lines yet.
    assert_golden(
        "r7_2_budget_block_two_remaining.txt",
        &expeditor.budget().to_string(),
    );
}

/// The source document's story to the pause: sub-tasks 1 and 2 done (the first search failed, the
/// next succeeded), sub-task 3 failed on Bash, then a WebSearch lookup spends the budget. WebSearch
/// opens after one failure (threshold 1), as the source document's report shows.
fn pause_story() -> (Expeditor, Task, EventLog) {
    let log = EventLog::default();
    let clock = clock();
    let map = agent_circuit_breaker::CapabilityMap::new()
        .tool(common::grep_spec())
        .tool(common::bash_spec())
        .tool(common::read_spec())
        .tool(common::write_spec())
        .tool(common::edit_spec())
        .tool(common::websearch_spec().threshold(1));
    let expeditor = Expeditor::builder(map)
        .clock(clock.clone())
        .observer(log.observer())
        .build()
        .unwrap();
    let mut task = seed_task();

    expeditor.advance_step(); // 1: read the configuration
    succeed(&expeditor, "Read");
    task.done(1).unwrap();

    expeditor.advance_step(); // 2: search; the first pattern fails, the next one works
    fail(&expeditor, "Grep", "regex parse error");
    succeed(&expeditor, "Grep");
    task.done(2).unwrap();

    expeditor.advance_step(); // 3 and 4: the test suite, three Bash failures
    fail(&expeditor, "Bash", "permission denied");
    fail(&expeditor, "Bash", "command not found");
    expeditor.advance_step();
    clock.advance(Duration::from_secs(120));
    assert!(fail(&expeditor, "Bash", "timeout after 120s").opened);
    let Decision::Skip(_) = expeditor.decide(id(&expeditor, "Bash")) else {
        panic!("Bash is OPEN")
    };
    task.failed(3, "Bash circuit OPEN").unwrap();

    expeditor.advance_step(); // 5: a lookup fails and spends the budget
    let recorded = fail(&expeditor, "WebSearch", "connection refused");
    assert!(recorded.opened && recorded.paused);
    (expeditor, task, log)
}

/// The source document's pause report as data (R7.3).
fn seed_pause_report() -> PauseReport {
    let line = |number, title: &str, status| WorkLine {
        number,
        title: title.into(),
        status,
    };
    let health =
        |tool: &str, state, consecutive_failures, errors: Option<&str>, category| ToolHealth {
            tool: tool.into(),
            state,
            consecutive_failures,
            errors: errors.map(Into::into),
            category,
        };
    PauseReport {
        mistakes: MistakeCount::default(),
        servers: Vec::new(),
        fleet: None,
        systemic: None,
        paused: Some(PauseReason::BudgetExhausted {
            consumed: 5,
            limit: 5,
        }),
        completed: vec![
            line(1, "Read configuration files", WorkStatus::Done),
            line(2, "Search for deprecated patterns", WorkStatus::Done),
        ],
        incomplete: vec![
            line(
                3,
                "Run test suite",
                WorkStatus::Failed {
                    reason: "Bash circuit OPEN".into(),
                },
            ),
            line(4, "Update documentation", WorkStatus::NotAttempted),
            line(5, "Deploy to staging", WorkStatus::NotAttempted),
        ],
        tool_health: vec![
            health("Grep", CircuitState::Closed, 0, None, None),
            health("Read", CircuitState::Closed, 0, None, None),
            health("Edit", CircuitState::Closed, 0, None, None),
            health(
                "Bash",
                CircuitState::Open,
                3,
                Some("permission/command/timeout"),
                None,
            ),
            health(
                "WebSearch",
                CircuitState::Open,
                1,
                Some("connection refused"),
                Some(FailureCategory::Network),
            ),
        ],
        budget: BudgetStatus {
            consumed: 5,
            limit: 5,
        },
        recommendations: vec![
            "Investigate Bash failures — likely environment issue".into(),
            "Check network connectivity for WebSearch".into(),
            "Resume from sub-task 4 after resolution".into(),
        ],
    }
}

#[test]
fn r7_3_a_pause_report_built_by_hand_renders_the_source_documents_text_exactly() {
    assert_golden("seed_pause_report.txt", &seed_pause_report().to_string());
}

#[test]
fn r7_3_pause_report_from_a_real_scenario() {
    let (expeditor, task, log) = pause_story();
    assert_eq!(
        log.events().last(),
        Some(&Event::BudgetExhausted {
            consumed: 5,
            limit: 5
        })
    );
    let report = expeditor.pause_report(&task);
    assert_golden("r7_3_pause_report_scenario.txt", &report.to_string());
    // The state machine reaches the source document's report exactly, as data and as text.
    assert_eq!(report, seed_pause_report());
    assert_golden("seed_pause_report.txt", &report.to_string());
    // Every tool is paused now; the deferred sub-tasks are not attempted.
    for sub in task.subtasks() {
        for tool in &sub.needs {
            assert_eq!(kind(expeditor.decide(id(&expeditor, tool))), "PAUSE");
        }
    }
}

#[test]
fn r7_3_status_report_while_running() {
    let (expeditor, clock) = seed_expeditor();
    let mut task = seed_task();
    succeed(&expeditor, "Read");
    task.done(1).unwrap();
    seed_failures(&expeditor, &clock);
    task.failed(3, "Bash circuit OPEN").unwrap();
    let report = expeditor.pause_report(&task);
    assert_eq!(report.paused, None);
    assert_golden("r7_3_status_report_running.txt", &report.to_string());
}

#[test]
fn r7_3_pause_report_round_trips_through_serde() {
    let (expeditor, task, _log) = pause_story();
    let report = expeditor.pause_report(&task);
    let json = serde_json::to_string(&report).unwrap();
    let back: PauseReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back, report);
    assert!(
        json.contains(r#""paused":{"reason":"budget_exhausted","consumed":5,"limit":5}"#),
        "{json}"
    );
}

#[test]
fn r7_4_a_new_cycle_resets_budget_and_ledger_lifts_the_pause_and_keeps_breaker_states() {
    let (expeditor, _task, log) = pause_story();
    let bash = id(&expeditor, "Bash");
    let bash_before = expeditor.breaker(bash).unwrap();
    let web_before = expeditor.breaker(id(&expeditor, "WebSearch")).unwrap();
    log.take();

    assert_eq!(expeditor.new_cycle(), 2);
    assert_eq!(log.events(), [Event::CycleStarted { cycle: 2 }]);
    let budget = expeditor.budget();
    assert_eq!(
        (budget.cycle(), budget.consumed(), budget.limit()),
        (2, 0, 5)
    );
    assert!(budget.ledger().is_empty());
    assert_eq!(expeditor.paused(), None);

    // Breakers persist: Bash and WebSearch stay OPEN with their history.
    assert_eq!(expeditor.breaker(bash).unwrap(), bash_before);
    assert_eq!(
        expeditor.breaker(id(&expeditor, "WebSearch")).unwrap(),
        web_before
    );
    assert_eq!(kind(expeditor.decide(bash)), "SKIP");
    assert_eq!(expeditor.state(bash), Some(CircuitState::Open));
    assert_eq!(kind(expeditor.decide(id(&expeditor, "Edit"))), "CALL");
    let table = expeditor.state_table().to_string();
    assert!(table.ends_with("Failure budget: 0 / 5 consumed"), "{table}");
    assert!(table.contains("| Bash       | OPEN   | 3 "), "{table}");

    // The new cycle has the whole budget again.
    let recorded = fail(&expeditor, "Edit", "disk full");
    assert_eq!(
        recorded.budget,
        BudgetStatus {
            consumed: 1,
            limit: 5
        }
    );
}

#[test]
fn r7_4_a_new_cycle_without_a_pause_only_resets_the_budget() {
    let clock = clock();
    let expeditor = common::expeditor_with(seed_map(), Policy::default(), &clock);
    fail(&expeditor, "Grep", "a");
    assert_eq!(expeditor.new_cycle(), 2);
    assert_eq!(expeditor.budget().consumed(), 0);
    let grep = expeditor.breaker(id(&expeditor, "Grep")).unwrap();
    assert_eq!(
        grep.consecutive_failures(),
        1,
        "breaker counts are not budget"
    );
}

/// R7.1: the ledger is bounded. A cycle of 100,000 failures under a budget of a
/// million keeps the first `LEDGER_HEAD` lines and the latest, at most `LEDGER_LINES`; the
/// others are counted (lines, charged), so the budget, the block's numbering and a restored
/// snapshot stay exact.
#[test]
fn r7_1_the_ledger_is_bounded_and_counts_the_lines_it_does_not_keep() {
    use agent_circuit_breaker::report::{LEDGER_HEAD, LEDGER_LINES};
    let clock = clock();
    let policy = Policy::builder()
        .threshold(1_000_000)
        .budget(1_000_000)
        .build()
        .unwrap();
    let expeditor = common::expeditor_with(seed_map(), policy, &clock);
    let n = 100_000u64;
    for i in 0..n {
        fail(&expeditor, "Bash", format!("failure {i}"));
    }
    let budget = expeditor.budget();
    let ledger = budget.ledger();
    assert!(ledger.len() <= LEDGER_LINES, "{} lines kept", ledger.len());
    assert!(
        ledger.len() > LEDGER_LINES / 2,
        "{} lines kept",
        ledger.len()
    );
    assert_eq!(budget.failures(), n);
    assert_eq!(budget.consumed(), 100_000);
    let dropped = budget.dropped();
    assert_eq!(dropped.lines + ledger.len() as u64, n);
    assert_eq!(dropped.charged, dropped.lines);
    assert_eq!(ledger[0].failure.message(), "failure 0");
    assert_eq!(
        ledger[LEDGER_HEAD - 1].failure.message(),
        format!("failure {}", LEDGER_HEAD - 1)
    );
    assert_eq!(
        ledger[LEDGER_HEAD].failure.message(),
        format!("failure {}", LEDGER_HEAD as u64 + dropped.lines)
    );
    assert_eq!(
        ledger.last().unwrap().failure.message(),
        format!("failure {}", n - 1)
    );
    let block = budget.to_string();
    assert!(
        block.contains("  Failure 1: Bash — \"failure 0\""),
        "{block}"
    );
    assert!(
        block.contains(&format!(
            "  … {} more failures not kept here ({} charged)",
            dropped.lines, dropped.charged
        )),
        "{block}"
    );
    assert!(
        block.contains(&format!("  Failure {n}: Bash — \"failure {}\"", n - 1)),
        "{block}"
    );
    // A snapshot keeps the count; restored under the same policy it is the same budget,
    // under a smaller one the first failures are charged, the dropped ones among them.
    let snapshot = expeditor.snapshot();
    let json = serde_json::to_string(&snapshot).unwrap();
    assert!(json.contains("\"dropped\""), "the count is saved");
    let same = common::expeditor_with(
        seed_map(),
        Policy::builder()
            .threshold(1_000_000)
            .budget(1_000_000)
            .build()
            .unwrap(),
        &clock,
    );
    same.restore(&serde_json::from_str(&json).unwrap()).unwrap();
    assert_eq!(same.budget(), budget);
    let small = common::expeditor_with(
        seed_map(),
        Policy::builder()
            .threshold(1_000_000)
            .budget(40)
            .build()
            .unwrap(),
        &clock,
    );
    small
        .restore(&serde_json::from_str(&json).unwrap())
        .unwrap();
    let rebased = small.budget();
    assert_eq!(rebased.consumed(), 40);
    assert_eq!(rebased.dropped().charged, 40 - LEDGER_HEAD as u64);
    assert!(rebased.ledger()[LEDGER_HEAD..].iter().all(|e| !e.charged));
    // A new cycle starts an empty ledger.
    expeditor.new_cycle();
    assert!(expeditor.budget().dropped().is_empty());
    assert_eq!(expeditor.budget().failures(), 0);
}
