//! R9: cascading failures — failure signatures from typed errors first, one systemic event
//! instead of N breaker trips when tools sharing infrastructure fail together within the
//! cascade window, every call paused until recovery is confirmed, the budget charged once,
//! probes backing off exponentially afterwards (capped, also along a chain of routes), and
//! uncorrelated failures — tool-local ones ("not found", bad arguments), or infrastructure
//! ones far apart — leaving breakers independent.

#[path = "../common/mod.rs"]
mod common;

use std::io;

use agent_circuit_breaker::{
    CapabilityMap, CircuitState, Decision, Expeditor, Failure, FailureCategory, PauseReason,
    Policy, Task, ToolSpec, capability::ToolSpecBuilder, event::Event, policy::ProbeUnit,
    report::SystemicEvent, snapshot::Snapshot,
};
use common::{
    EventLog, T0, assert_golden, assert_no_retry_invitation, clock, expeditor_with, fail, fail_all,
    id, kind, succeed,
};

fn io_failure(kind: io::ErrorKind) -> Failure {
    Failure::from(io::Error::from(kind))
}

fn refused() -> Failure {
    io_failure(io::ErrorKind::ConnectionRefused)
}

fn webfetch_spec() -> ToolSpecBuilder {
    ToolSpec::new("WebFetch")
        .provides("fetch a web page")
        .fallback("ask the user to paste the page")
}

/// Two network tools (WebSearch, WebFetch) among local ones.
fn network_map() -> CapabilityMap {
    CapabilityMap::new()
        .tool(common::read_spec())
        .tool(common::bash_spec())
        .tool(common::edit_spec())
        .tool(common::websearch_spec())
        .tool(webfetch_spec())
}

fn logged(map: CapabilityMap, policy: Policy) -> (Expeditor, EventLog) {
    let log = EventLog::default();
    let expeditor = Expeditor::builder(map)
        .policy(policy)
        .clock(clock())
        .observer(log.observer())
        .build()
        .unwrap();
    (expeditor, log)
}

fn steps_policy() -> Policy {
    Policy::builder()
        .budget(100)
        .probe_unit(ProbeUnit::Steps)
        .build()
        .unwrap()
}

/// Fails `tool` three times with an io `ConnectionRefused` (threshold 3: it opens).
fn refuse3(expeditor: &Expeditor, tool: &str) -> agent_circuit_breaker::expeditor::Recorded {
    let mut last = None;
    for _ in 0..3 {
        last = Some(fail(expeditor, tool, refused()));
    }
    last.unwrap()
}

fn the_task() -> Task {
    Task::new()
        .subtask("Read configuration files", ["Read"])
        .subtask("Look up the API changes", ["WebSearch"])
        .subtask("Fetch the changelog", ["WebFetch"])
        .subtask("Update documentation", ["Edit"])
}

/// The source document's cascade: WebSearch and WebFetch both fail with "connection refused".
/// Step 1 reads the configuration; step 2 WebSearch opens; step 3 WebFetch's failures are
/// held uncharged (they match an OPEN circuit's category) and its opening is the event.
fn connection_refused_story() -> (Expeditor, Task, EventLog) {
    let (expeditor, log) = logged(network_map(), Policy::default());
    let mut task = the_task();
    expeditor.advance_step();
    succeed(&expeditor, "Read");
    task.done(1).unwrap();

    expeditor.advance_step();
    let recorded = refuse3(&expeditor, "WebSearch");
    assert!(recorded.opened && !recorded.paused);
    assert_eq!(recorded.budget.consumed, 3);
    task.failed(2, "WebSearch circuit OPEN").unwrap();

    expeditor.advance_step();
    let first = fail(&expeditor, "WebFetch", refused());
    assert_eq!(
        first.budget.consumed, 3,
        "a failure matching an OPEN circuit's category is held, not charged"
    );
    assert!(expeditor.budget().ledger().last().unwrap().pending);
    fail(&expeditor, "WebFetch", refused());
    let last = fail(&expeditor, "WebFetch", refused());
    assert!(last.opened && last.paused);
    assert_eq!(last.budget.consumed, 1, "one charge for the whole event");
    task.failed(3, "connection refused").unwrap();
    (expeditor, task, log)
}

#[test]
fn r9_1_every_failure_carries_a_category_and_its_message() {
    let policy = Policy::builder()
        .budget(100)
        .cascade_detection(false)
        .build()
        .unwrap();
    let expeditor = expeditor_with(network_map(), policy, &clock());
    let failures = [
        (io::ErrorKind::ConnectionRefused, FailureCategory::Network),
        (io::ErrorKind::PermissionDenied, FailureCategory::Permission),
        (io::ErrorKind::TimedOut, FailureCategory::Timeout),
        (io::ErrorKind::NotFound, FailureCategory::NotFound),
        (
            io::ErrorKind::ReadOnlyFilesystem,
            FailureCategory::Filesystem,
        ),
        (io::ErrorKind::InvalidData, FailureCategory::Other),
    ];
    for (kind, _) in failures {
        fail(&expeditor, "Bash", io_failure(kind));
        succeed(&expeditor, "Bash");
    }
    fail(&expeditor, "Bash", "timeout after 120s");
    let ledger = expeditor.budget();
    let signatures: Vec<(FailureCategory, &str)> = ledger
        .ledger()
        .iter()
        .map(|e| (e.failure.category(), e.failure.message()))
        .collect();
    let mut expected: Vec<(FailureCategory, String)> = failures
        .iter()
        .map(|(kind, category)| (*category, io::Error::from(*kind).to_string()))
        .collect();
    expected.push((FailureCategory::Timeout, "timeout after 120s".into()));
    assert_eq!(
        signatures,
        expected
            .iter()
            .map(|(c, m)| (*c, m.as_str()))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        signatures[0],
        (FailureCategory::Network, "connection refused")
    );
    let bash = expeditor.breaker(id(&expeditor, "Bash")).unwrap();
    assert_eq!(bash.common_category(), Some(FailureCategory::Timeout));
}

#[test]
fn r9_2_a_second_circuit_opening_with_an_open_ones_category_is_one_systemic_event() {
    let (expeditor, task, log) = connection_refused_story();
    let event = expeditor.systemic_event().expect("a systemic event");
    assert_eq!(
        event.to_string(),
        "Multiple tools failing with connection refused — likely network issue"
    );
    assert_eq!(
        (event.category, event.pattern.as_str(), event.cause()),
        (
            Some(FailureCategory::Network),
            "connection refused",
            "network"
        )
    );
    assert_eq!(event.tools, ["WebSearch", "WebFetch"]);
    assert_eq!((event.step, event.at, event.recovered), (3, T0, false));
    let pause = PauseReason::Systemic {
        category: Some(FailureCategory::Network),
    };
    assert_eq!(expeditor.paused(), Some(pause));
    assert!(log.events().contains(&Event::Systemic {
        pattern: "connection refused".into(),
        cause: "network".into(),
        tools: vec!["WebSearch".into(), "WebFetch".into()],
    }));

    // Every call pauses, not only the broken tools.
    for tool in ["Read", "Bash", "Edit", "WebSearch", "WebFetch"] {
        let Decision::Pause(p) = expeditor.decide(id(&expeditor, tool)) else {
            panic!("{tool}: every call pauses during a systemic failure")
        };
        assert_eq!(p.reason(), pause);
        assert_eq!(p.systemic().as_ref(), Some(&event));
    }

    let report = expeditor.pause_report(&task);
    assert_eq!(report.systemic.as_ref(), Some(&event));
    assert_golden(
        "r9_2_pause_report_connection_refused.txt",
        &report.to_string(),
    );
    let json = serde_json::to_string(&report).unwrap();
    assert_eq!(
        serde_json::from_str::<agent_circuit_breaker::report::PauseReport>(&json).unwrap(),
        report
    );
}

#[test]
fn r9_2_the_systemic_pause_tells_the_model_to_stop_not_to_retry() {
    let (expeditor, _task, _log) = connection_refused_story();
    let Decision::Pause(pause) = expeditor.decide(id(&expeditor, "Read")) else {
        panic!("paused")
    };
    let note = pause.for_model();
    assert_eq!(note.tool, None);
    let text = note.to_string();
    assert_golden("r9_2_systemic_pause_model_note_read.txt", &text);
    assert_no_retry_invitation(&text);
    let offer = expeditor.offer();
    assert!(offer.offered.is_empty());
    // The offer answers no call: the same note, naming no tool asked for (B7).
    let unasked = agent_circuit_breaker::report::ModelNote {
        asked_for: None,
        ..note
    };
    assert_eq!(offer.withheld, [unasked]);
}

#[test]
fn r9_2_three_circuits_opening_in_one_step_are_a_systemic_event_whatever_their_infrastructure_errors()
 {
    let policy = Policy::builder().threshold(1).budget(10).build().unwrap();
    let (expeditor, log) = logged(network_map(), policy);
    expeditor.advance_step();
    assert!(
        !fail(
            &expeditor,
            "Read",
            io_failure(io::ErrorKind::PermissionDenied)
        )
        .paused
    );
    assert!(!fail(&expeditor, "Bash", "connection reset by peer").paused);
    let third = fail(&expeditor, "Edit", "disk full");
    assert!(third.opened && third.paused);
    let event = expeditor.systemic_event().unwrap();
    assert_eq!(event.category, None);
    assert_eq!(event.tools, ["Read", "Bash", "Edit"]);
    assert_eq!(
        event.to_string(),
        "Multiple tools failing with different errors at once — likely shared infrastructure \
         issue"
    );
    assert_eq!(
        expeditor.paused(),
        Some(PauseReason::Systemic { category: None })
    );
    assert_eq!(expeditor.budget().consumed(), 1, "charged once");
    assert_eq!(log.kinds().last(), Some(&"systemic"));
    assert_eq!(kind(expeditor.decide(id(&expeditor, "WebSearch"))), "PAUSE");
}

#[test]
fn r9_2_three_circuits_opening_within_the_configured_window_are_a_systemic_event() {
    let run = |window: u64, steps: [u64; 3]| -> Option<SystemicEvent> {
        let policy = Policy::builder()
            .threshold(1)
            .budget(10)
            .cascade_window(window)
            .build()
            .unwrap();
        let expeditor = expeditor_with(network_map(), policy, &clock());
        for (tool, (step, message)) in
            ["Read", "Bash", "Edit"]
                .into_iter()
                .zip(steps.into_iter().zip([
                    "permission denied",
                    "connection reset by peer",
                    "disk full",
                ]))
        {
            while expeditor.step() < step {
                expeditor.advance_step();
            }
            fail(&expeditor, tool, message);
        }
        expeditor.systemic_event()
    };
    assert_eq!(
        Policy::default().cascade_window(),
        2,
        "default: the same step or up to two apart"
    );
    assert!(run(0, [1, 1, 1]).is_some());
    assert!(run(0, [1, 2, 3]).is_none(), "different steps, no window");
    let event = run(2, [1, 2, 3]).expect("within a window of 2 steps");
    assert_eq!(event.tools, ["Read", "Bash", "Edit"]);
    assert_eq!(event.step, 3);
    assert!(
        run(2, [1, 2, 4]).is_none(),
        "the first opened 3 steps before the last"
    );
    assert!(run(3, [1, 2, 4]).is_some());
}

#[test]
fn r9_2_the_report_names_the_suspected_cause() {
    let event = |category| SystemicEvent {
        category,
        pattern: "the same error".into(),
        tools: vec!["A".into(), "B".into()],
        step: 1,
        at: T0,
        recovered: false,
    };
    let causes = [
        (Some(FailureCategory::Network), "network"),
        (Some(FailureCategory::Filesystem), "filesystem"),
        (Some(FailureCategory::Permission), "permissions"),
        (Some(FailureCategory::Timeout), "timeout"),
        (Some(FailureCategory::NotFound), "missing-resource"),
        (Some(FailureCategory::Other), "shared infrastructure"),
        (None, "shared infrastructure"),
    ];
    for (category, cause) in causes {
        assert_eq!(
            event(category).to_string(),
            format!("Multiple tools failing with the same error — likely {cause} issue")
        );
    }
}

#[test]
fn r9_2_permission_errors_shared_by_two_tools_point_at_permissions() {
    let (expeditor, _log) = logged(network_map(), Policy::builder().budget(10).build().unwrap());
    fail_all(
        &expeditor,
        "Bash",
        &[
            "permission denied",
            "permission denied",
            "permission denied",
        ],
    );
    let last = fail_all(
        &expeditor,
        "Edit",
        &[
            "permission denied",
            "permission denied",
            "EACCES: permission denied",
        ],
    );
    assert!(last.paused);
    let event = expeditor.systemic_event().unwrap();
    assert_eq!(event.category, Some(FailureCategory::Permission));
    assert_eq!(
        event.to_string(),
        "Multiple tools failing with permission errors — likely permissions issue",
        "different messages: the shared category is the pattern"
    );
}

#[test]
fn r9_3_no_probe_runs_during_a_systemic_failure_and_a_new_cycle_does_not_lift_it() {
    let (expeditor, _task, _log) = connection_refused_story();
    let web = id(&expeditor, "WebSearch");
    for _ in 0..40 {
        expeditor.advance_step();
        assert_eq!(kind(expeditor.decide(web)), "PAUSE");
        assert_eq!(kind(expeditor.decide(id(&expeditor, "WebFetch"))), "PAUSE");
    }
    assert_eq!(expeditor.state(web), Some(CircuitState::Open));
    assert_eq!(
        expeditor.state(id(&expeditor, "WebFetch")),
        Some(CircuitState::Open)
    );
    expeditor.new_cycle();
    assert!(matches!(
        expeditor.paused(),
        Some(PauseReason::Systemic { .. })
    ));
    assert_eq!(kind(expeditor.decide(id(&expeditor, "Read"))), "PAUSE");
}

#[test]
fn r9_3_confirming_recovery_resumes_calls_and_probing_starts_over() {
    let (expeditor, task, log) = connection_refused_story();
    log.take();
    // Asked about many times while paused: no attempt counts toward a probe.
    for _ in 0..5 {
        assert_eq!(kind(expeditor.decide(id(&expeditor, "WebSearch"))), "PAUSE");
    }
    let event = expeditor.confirm_recovery().expect("an event was in force");
    assert!(event.recovered);
    assert_eq!(log.events(), [Event::RecoveryConfirmed]);
    assert_eq!(expeditor.paused(), None);
    assert_eq!(
        expeditor.systemic_event(),
        Some(event),
        "kept, as recovered"
    );
    assert_eq!(
        expeditor.confirm_recovery(),
        None,
        "nothing left to confirm"
    );

    assert_eq!(kind(expeditor.decide(id(&expeditor, "Read"))), "CALL");
    // The involved tools probe with the base interval first: the 3rd attempt from now.
    let web = id(&expeditor, "WebSearch");
    assert_eq!(kind(expeditor.decide(web)), "SKIP");
    assert_eq!(kind(expeditor.decide(web)), "SKIP");
    let Decision::Probe(probe) = expeditor.decide(web) else {
        panic!("the 3rd attempt after recovery probes")
    };
    probe.success();
    assert_eq!(expeditor.state(web), Some(CircuitState::Closed));

    let report = expeditor.pause_report(&task);
    assert_eq!(report.paused, None);
    assert_eq!(report.systemic, None, "a status report after recovery");
    assert!(report.to_string().starts_with("STATUS REPORT — "));
}

#[test]
fn r9_3_a_failure_during_the_event_joins_it_uncharged() {
    let (expeditor, log) = logged(network_map(), Policy::default());
    // A Bash call is already in flight when the event starts.
    let Decision::Call(in_flight) = expeditor.decide(id(&expeditor, "Bash")) else {
        panic!("Bash is CLOSED")
    };
    refuse3(&expeditor, "WebSearch");
    refuse3(&expeditor, "WebFetch");
    let consumed = expeditor.budget().consumed();
    assert_eq!(consumed, 1);
    let recorded = in_flight.failure(refused());
    assert!(recorded.paused);
    assert_eq!(recorded.budget.consumed, consumed, "not charged again");
    let entry = expeditor.budget().ledger().last().unwrap().clone();
    assert_eq!(entry.tool, "Bash");
    assert!(entry.systemic && !entry.charged && !entry.pending);
    assert_eq!(
        expeditor.systemic_event().unwrap().tools,
        ["WebSearch", "WebFetch", "Bash"]
    );
    assert_eq!(log.kinds().iter().filter(|k| **k == "systemic").count(), 1);
}

#[test]
fn r9_4_the_budget_counts_the_event_once() {
    let (expeditor, _task, _log) = connection_refused_story();
    let budget = expeditor.budget();
    assert_eq!((budget.consumed(), budget.limit()), (1, 5));
    let charged: Vec<&str> = budget
        .ledger()
        .iter()
        .filter(|e| e.charged)
        .map(|e| e.tool.as_str())
        .collect();
    assert_eq!(charged, ["WebSearch, WebFetch"]);
    assert_eq!(
        budget.ledger().iter().filter(|e| e.systemic).count(),
        6,
        "the six failures are written down, folded into the event"
    );
    assert_golden("r9_4_ledger_connection_refused.txt", &budget.to_string());
}

#[test]
fn r9_4_a_held_failure_is_charged_when_its_tool_recovers_instead() {
    let (expeditor, _log) = logged(network_map(), Policy::default());
    for step in [3, 3, 4] {
        while expeditor.step() < step {
            expeditor.advance_step();
        }
        fail(&expeditor, "WebSearch", refused());
    }
    expeditor.advance_step();
    let held = fail(&expeditor, "WebFetch", refused());
    assert_eq!(held.budget.consumed, 3);
    let budget = expeditor.budget();
    assert!(budget.ledger()[3].pending && !budget.ledger()[3].charged);
    assert_golden("r9_4_budget_block_held_failure.txt", &budget.to_string());

    // WebFetch answers: its failure was its own after all, and is charged now.
    succeed(&expeditor, "WebFetch");
    let budget = expeditor.budget();
    assert_eq!(budget.consumed(), 4);
    assert!(budget.ledger()[3].charged && !budget.ledger()[3].pending);
    assert_eq!(expeditor.paused(), None);
    assert_golden("r9_4_budget_block_4_of_5.txt", &budget.to_string());
}

/// The steps (counted from recovery) at which `tools` probe over `horizon` steps; each probe
/// fails with `failure`, except for the tools in `heal`, whose probes succeed. A systemic
/// pause that recurs is confirmed at once, as a user would.
fn probe_steps(
    expeditor: &Expeditor,
    tools: &[&str],
    heal: &[&str],
    failure: fn(&str) -> Failure,
    horizon: u64,
) -> Vec<Vec<u64>> {
    let start = expeditor.step();
    expeditor
        .confirm_recovery()
        .expect("a systemic event to recover from");
    let mut probes = vec![Vec::new(); tools.len()];
    for _ in 0..horizon {
        let step = expeditor.advance_step();
        for (i, tool) in tools.iter().enumerate() {
            match expeditor.decide(id(expeditor, tool)) {
                Decision::Probe(ticket) => {
                    probes[i].push(step - start);
                    if heal.contains(tool) {
                        ticket.success();
                    } else {
                        ticket.failure(failure(tool));
                    }
                }
                Decision::Pause(_) => {
                    expeditor.confirm_recovery();
                }
                Decision::Call(ticket) => drop(ticket),
                Decision::Skip(_) => {}
            }
        }
    }
    probes
}

fn intervals(steps: &[u64]) -> Vec<u64> {
    let mut last = 0;
    steps
        .iter()
        .map(|&s| {
            let interval = s - last;
            last = s;
            interval
        })
        .collect()
}

/// WebSearch and WebFetch in a "connection refused" event, probes counted in steps.
fn network_event(policy: Policy) -> Expeditor {
    let expeditor = expeditor_with(network_map(), policy, &clock());
    expeditor.advance_step();
    refuse3(&expeditor, "WebSearch");
    refuse3(&expeditor, "WebFetch");
    assert!(expeditor.systemic_event().is_some());
    expeditor
}

#[test]
fn r9_5_after_a_cascade_probes_back_off_3_6_12_capped_at_20() {
    let expeditor = network_event(steps_policy());
    // WebFetch is back; WebSearch is not.
    let probes = probe_steps(
        &expeditor,
        &["WebFetch", "WebSearch"],
        &["WebFetch"],
        |_| refused(),
        90,
    );
    assert_eq!(probes[0], [3], "WebFetch closes on its first probe");
    assert_eq!(intervals(&probes[1]), [3, 6, 12, 20, 20, 20]);
    assert_eq!(expeditor.paused(), None, "one broken tool is no cascade");
    assert_eq!(
        expeditor
            .breaker(id(&expeditor, "WebSearch"))
            .unwrap()
            .state(),
        CircuitState::Open
    );
}

#[test]
fn r9_5_the_backoff_follows_the_policys_interval_and_cap() {
    let policy = Policy::builder()
        .budget(100)
        .probe_unit(ProbeUnit::Steps)
        .probe_every(2)
        .backoff_cap(10)
        .build()
        .unwrap();
    assert_eq!(Policy::default().backoff_cap(), 20);
    let expeditor = network_event(policy);
    let probes = probe_steps(
        &expeditor,
        &["WebFetch", "WebSearch"],
        &["WebFetch"],
        |_| refused(),
        40,
    );
    assert_eq!(intervals(&probes[1]), [2, 4, 8, 10, 10]);
}

#[test]
fn r9_5_the_pause_report_announces_the_backoff() {
    let (expeditor, task, _log) = connection_refused_story();
    let report = expeditor.pause_report(&task);
    assert_eq!(
        report.recommendations[0],
        "Fix the network issue, then confirm recovery: probes resume after 3, 6, 12, then every 20 \
         attempts"
    );
}

/// Grep's routes go through Bash; WebSearch is unrelated. The three open in one step with
/// different errors (a systemic event); after recovery WebSearch is back, Grep and Bash are
/// not. Their errors differ, so their failed probes start no new event.
fn chain_event() -> Expeditor {
    let map = CapabilityMap::new()
        .tool(
            ToolSpec::new("Grep")
                .provides("content search across files")
                .alternative(
                    agent_circuit_breaker::AlternativeSpec::new("Bash")
                        .method("rg or grep command")
                        .degradation(agent_circuit_breaker::Degradation::low(
                            "loses Grep's built-in output formatting",
                        )),
                )
                .fallback("ask the user which files to examine"),
        )
        .tool(common::bash_spec())
        .tool(common::websearch_spec());
    let policy = Policy::builder()
        .threshold(1)
        .budget(100)
        .probe_unit(ProbeUnit::Steps)
        .build()
        .unwrap();
    let expeditor = expeditor_with(map, policy, &clock());
    expeditor.advance_step();
    fail(&expeditor, "Grep", "permission denied");
    fail(&expeditor, "Bash", "no space left on device");
    fail(&expeditor, "WebSearch", "connection refused");
    assert!(expeditor.systemic_event().is_some());
    expeditor
}

fn chain_failure(tool: &str) -> Failure {
    match tool {
        "Grep" => Failure::new("permission denied"),
        _ => Failure::new("no space left on device"),
    }
}

#[test]
fn r9_5_along_a_chain_of_routes_the_intervals_add_up_to_at_most_the_cap() {
    let expeditor = chain_event();
    let probes = probe_steps(
        &expeditor,
        &["Grep", "Bash", "WebSearch"],
        &["WebSearch"],
        chain_failure,
        30,
    );
    let (grep, bash) = (intervals(&probes[0]), intervals(&probes[1]));
    // Both back off (3, 6, ...) until each reaches its share of the cap for the longest chain
    // it is in: Grep -> Bash holds two tools backing off, so 20 / 2 = 10 each, and the
    // chain's total never passes 20 however long the outage lasts.
    assert_eq!(bash[..4], [3, 6, 10, 10]);
    assert_eq!(grep[..4], [3, 6, 10, 10]);
    for (g, b) in grep.iter().zip(&bash) {
        assert!(g + b <= 20, "Grep {g} + Bash {b} exceeds the cap");
    }
    assert_eq!(expeditor.paused(), None);
}

#[test]
fn r9_5_a_failing_probe_never_shortens_the_next_interval() {
    let expeditor = chain_event();
    let probes = probe_steps(
        &expeditor,
        &["Grep", "Bash", "WebSearch"],
        &["WebSearch"],
        chain_failure,
        80,
    );
    for (tool, steps) in ["Grep", "Bash"].iter().zip(&probes) {
        let intervals = intervals(steps);
        assert!(
            intervals.windows(2).all(|w| w[0] <= w[1]),
            "{tool}'s probe intervals after a cascade must not shrink: {intervals:?}"
        );
    }
}

#[test]
fn r9_5_probes_back_off_even_when_every_tool_of_the_event_is_still_down() {
    let expeditor = network_event(steps_policy());
    let probes = probe_steps(&expeditor, &["WebSearch"], &[], |_| refused(), 50);
    assert_eq!(intervals(&probes[0])[..4], [3, 6, 12, 20]);
}

#[test]
fn r9_6_failures_that_do_not_correlate_leave_breakers_independent() {
    let (expeditor, log) = logged(network_map(), Policy::builder().budget(20).build().unwrap());
    // `other` failures cannot be correlated: they are tool-local. (One circuit opens per step
    // all the same, here.)
    expeditor.advance_step();
    fail_all(
        &expeditor,
        "Bash",
        &["exit status 2", "exit status 2", "exit status 2"],
    );
    expeditor.advance_step();
    let edit = fail_all(
        &expeditor,
        "Edit",
        &["exit status 2", "exit status 2", "exit status 2"],
    );
    assert!(edit.opened && !edit.paused);
    // A run of mixed categories has no category to share.
    expeditor.advance_step();
    fail_all(
        &expeditor,
        "WebSearch",
        &[
            "connection refused",
            "timeout after 120s",
            "connection refused",
        ],
    );
    expeditor.advance_step();
    let fetch = refuse3(&expeditor, "WebFetch");
    assert!(fetch.opened && !fetch.paused);
    assert_eq!(expeditor.systemic_event(), None);
    assert_eq!(expeditor.paused(), None);
    assert!(!log.kinds().contains(&"systemic"));
    let budget = expeditor.budget();
    assert_eq!(budget.consumed(), 12, "each failure charged on its own");
    assert!(budget.ledger().iter().all(|e| e.charged && !e.pending));
    assert_eq!(kind(expeditor.decide(id(&expeditor, "Read"))), "CALL");
}

#[test]
fn r9_6_with_cascade_detection_off_even_shared_errors_stay_independent() {
    let policy = Policy::builder()
        .budget(10)
        .cascade_detection(false)
        .build()
        .unwrap();
    assert!(!policy.cascade_detection());
    assert!(Policy::default().cascade_detection());
    let (expeditor, log) = logged(network_map(), policy);
    refuse3(&expeditor, "WebSearch");
    let fetch = fail(&expeditor, "WebFetch", refused());
    assert_eq!(fetch.budget.consumed, 4, "not held: charged at once");
    fail(&expeditor, "WebFetch", refused());
    let fetch = fail(&expeditor, "WebFetch", refused());
    assert!(fetch.opened && !fetch.paused);
    assert_eq!(expeditor.systemic_event(), None);
    assert_eq!(expeditor.budget().consumed(), 6);
    assert!(!log.kinds().contains(&"systemic"));
    // Three in one step do not cascade either.
    let policy = Policy::builder()
        .threshold(1)
        .budget(10)
        .cascade_detection(false)
        .build()
        .unwrap();
    let expeditor = expeditor_with(network_map(), policy, &clock());
    for tool in ["Read", "Bash", "Edit"] {
        fail(&expeditor, tool, refused());
    }
    assert_eq!(expeditor.paused(), None);
}

#[test]
fn r9_snapshots_keep_the_systemic_event() {
    let (expeditor, _task, _log) = connection_refused_story();
    let snapshot = expeditor.snapshot();
    let event = expeditor.systemic_event().unwrap();
    assert_eq!(snapshot.systemic.as_ref(), Some(&event));
    let json = serde_json::to_string(&snapshot).unwrap();
    let back: Snapshot = serde_json::from_str(&json).unwrap();
    assert_eq!(back, snapshot);

    // Another process: still paused, and recovery can be confirmed there.
    let restored = expeditor_with(network_map(), Policy::default(), &clock());
    restored.restore(&back).unwrap();
    assert_eq!(restored.systemic_event(), Some(event));
    assert_eq!(
        restored.paused(),
        Some(PauseReason::Systemic {
            category: Some(FailureCategory::Network)
        })
    );
    assert_eq!(kind(restored.decide(id(&restored, "Read"))), "PAUSE");
    assert_eq!(restored.budget(), expeditor.budget());
    assert!(restored.confirm_recovery().is_some());
    assert_eq!(kind(restored.decide(id(&restored, "Read"))), "CALL");
    assert_eq!(kind(restored.decide(id(&restored, "WebSearch"))), "SKIP");

    // A recovered event is kept too, and does not pause.
    let snapshot = restored.snapshot();
    assert!(snapshot.systemic.as_ref().unwrap().recovered);
    let again = expeditor_with(network_map(), Policy::default(), &clock());
    again.restore(&snapshot).unwrap();
    assert_eq!(again.paused(), None);
    assert!(again.systemic_event().unwrap().recovered);
}

// ---------------------------------------------------------------------------------------------
// Correlation only where infrastructure is shared (R9.1, R9.2, R9.6)
// ---------------------------------------------------------------------------------------------

/// An error from a client library that says nothing itself; an io error is its cause.
#[derive(Debug)]
struct RequestError(io::Error);

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("error sending request for url (https://api.example.com/search)")
    }
}

impl std::error::Error for RequestError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// Budget enough that no test here is paused by it; the default threshold (3) and window.
fn roomy() -> Policy {
    Policy::builder().budget(100).build().unwrap()
}

/// Fails `tool` three times with `failure` (threshold 3: it opens).
fn fail3(
    expeditor: &Expeditor,
    tool: &str,
    failure: &Failure,
) -> agent_circuit_breaker::expeditor::Recorded {
    let mut last = None;
    for _ in 0..3 {
        last = Some(fail(expeditor, tool, failure.clone()));
    }
    last.unwrap()
}

/// No event, no pause, every failure charged on its own (none held).
fn assert_independent(expeditor: &Expeditor, log: &EventLog, failures: u32) {
    assert_eq!(expeditor.systemic_event(), None);
    assert_eq!(expeditor.paused(), None);
    assert!(!log.kinds().contains(&"systemic"));
    let budget = expeditor.budget();
    assert_eq!(
        budget.consumed(),
        failures,
        "each failure charged on its own"
    );
    assert!(budget.ledger().iter().all(|e| e.charged && !e.pending));
}

#[test]
fn r9_1_categories_come_from_typed_errors_first() {
    use FailureCategory::{
        Filesystem, InvalidInput, Network, NotFound, Other, Permission, Timeout,
    };
    // Exit statuses as shells report them.
    for (code, category) in [
        (126, Permission),
        (127, NotFound),
        (124, Timeout),
        (137, Timeout),
        (143, Timeout),
        (139, Other),
        (1, Other),
        (2, Other),
    ] {
        assert_eq!(
            FailureCategory::from_exit_code(code),
            category,
            "exit {code}"
        );
        let failure = Failure::with_exit_code(format!("exit status {code}"), code);
        assert_eq!(failure.category(), category, "exit {code}");
    }
    // HTTP statuses a tool reports.
    for (status, category) in [
        (502, Network),
        (503, Network),
        (504, Network),
        (401, Permission),
        (403, Permission),
        (407, Permission),
        (408, Timeout),
        (404, NotFound),
        (410, NotFound),
        (400, InvalidInput),
        (422, InvalidInput),
        (429, Other),
        (500, Other),
        (200, Other),
        (0, Other),
        (u16::MAX, Other),
    ] {
        assert_eq!(
            FailureCategory::from_http_status(status),
            category,
            "HTTP {status}"
        );
        let failure = Failure::with_http_status("the server answered", status);
        assert_eq!(failure.category(), category, "HTTP {status}");
    }
    // A typed cause wins over a message that says nothing.
    let wrapped = RequestError(io::Error::from(io::ErrorKind::ConnectionRefused));
    assert_eq!(Failure::from_error(&wrapped).category(), Network);
    // A kind that names the call's own problem is not overridden by its message.
    let bad = io::Error::new(
        io::ErrorKind::InvalidInput,
        "connection refused is not a path",
    );
    assert_eq!(Failure::from(bad).category(), InvalidInput);
    // `ErrorKind::Other` says nothing: the message is the last resort.
    assert_eq!(
        Failure::from(io::Error::other("no route to host")).category(),
        Network
    );
    for (kind, category) in [
        (io::ErrorKind::HostUnreachable, Network),
        (io::ErrorKind::BrokenPipe, Network),
        (io::ErrorKind::StorageFull, Filesystem),
        (io::ErrorKind::IsADirectory, Other),
        (io::ErrorKind::AlreadyExists, Other),
        (io::ErrorKind::InvalidInput, InvalidInput),
    ] {
        assert_eq!(FailureCategory::from_io_kind(kind), category, "{kind:?}");
    }
}

#[cfg(unix)]
#[test]
fn r9_1_a_process_exit_status_gives_the_category() {
    let status = |script: &str| {
        std::process::Command::new("sh")
            .args(["-c", script])
            .status()
            .expect("sh runs")
    };
    let not_found = status("exit 127");
    assert_eq!(
        FailureCategory::from_exit_status(not_found),
        FailureCategory::NotFound
    );
    let failure = Failure::with_exit_status("bash: rgx: command not found", not_found);
    assert_eq!(failure.category(), FailureCategory::NotFound);
    assert_eq!(
        FailureCategory::from_exit_status(status("exit 126")),
        FailureCategory::Permission
    );
    assert_eq!(
        FailureCategory::from_exit_status(status("exit 3")),
        FailureCategory::Other
    );
    // Killed by a signal (no exit code): SIGKILL is what a deadline sends.
    let killed = status("kill -9 $$");
    assert_eq!(killed.code(), None);
    assert_eq!(
        FailureCategory::from_exit_status(killed),
        FailureCategory::Timeout
    );
    assert_eq!(
        agent_circuit_breaker::Classify::category(&killed),
        FailureCategory::Timeout
    );
}

#[test]
fn r9_1_messages_are_matched_conservatively() {
    use FailureCategory::{
        Filesystem, InvalidInput, Network, NotFound, Other, Permission, Timeout,
    };
    for (message, category) in [
        // Unambiguous infrastructure phrases.
        (
            "dial tcp 10.0.0.7:443: connect: connection refused",
            Network,
        ),
        ("Connection reset by peer (os error 104)", Network),
        ("Network is unreachable (os error 101)", Network),
        (
            "ssh: connect to host git.internal port 22: No route to host",
            Network,
        ),
        ("DNS lookup failed", Network),
        ("Temporary failure in name resolution", Network),
        ("write: broken pipe", Network),
        ("Read-only file system (os error 30)", Filesystem),
        ("No space left on device", Filesystem),
        ("EACCES: permission denied, open '/etc/hosts'", Permission),
        // Tool-local: whatever else the message says.
        ("command not found", NotFound),
        ("bash: rgx: command not found", NotFound),
        ("404 not found", NotFound),
        ("HTTP 404 Not Found: https://example.com/docs", NotFound),
        ("DNS name not found", NotFound),
        ("No such file or directory (os error 2)", NotFound),
        ("timeout after 120s", Timeout),
        // When in doubt, other.
        ("network error", Other),
        ("403 Forbidden", Other),
        ("401 Unauthorized", Other),
        ("is a directory", Other),
        ("filesystem error", Other),
        // Rejected input, tool-local (B14): whose mistake it is, is the failure's blame.
        ("invalid argument: --frobnicate", InvalidInput),
        ("exit status 2", Other),
        ("dnsmasq: bad option", Other),
        ("", Other),
    ] {
        assert_eq!(
            FailureCategory::from_message(message),
            category,
            "{message:?}"
        );
        assert_eq!(Failure::new(message).category(), category, "{message:?}");
    }
}

#[test]
fn r9_1_only_network_filesystem_and_permission_are_infrastructure() {
    use FailureCategory::{Filesystem, Network, NotFound, Other, Permission, Timeout};
    let infrastructure: Vec<FailureCategory> =
        [Network, Filesystem, Permission, Timeout, NotFound, Other]
            .into_iter()
            .filter(|c| c.is_infrastructure())
            .collect();
    assert_eq!(infrastructure, [Network, Filesystem, Permission]);
    // The names in existing snapshots still deserialize, and serialize as before.
    for (name, category) in [
        ("network", Network),
        ("filesystem", Filesystem),
        ("permission", Permission),
        ("timeout", Timeout),
        ("not_found", NotFound),
        ("other", Other),
    ] {
        let json = format!("\"{name}\"");
        assert_eq!(
            serde_json::from_str::<FailureCategory>(&json).unwrap(),
            category
        );
        assert_eq!(serde_json::to_string(&category).unwrap(), json);
    }
}

#[test]
fn r9_6_command_not_found_and_much_later_a_404_stay_independent() {
    // The measured false positive: Bash cannot find a command; much later WebSearch gets a
    // 404. Both are "not found", and neither says anything about shared infrastructure.
    for typed in [true, false] {
        let (expeditor, log) = logged(network_map(), roomy());
        let (bash, search) = if typed {
            (
                Failure::with_exit_code("bash: rgx: command not found", 127),
                Failure::with_http_status("404 not found", 404),
            )
        } else {
            (
                Failure::new("command not found"),
                Failure::new("404 not found"),
            )
        };
        assert_eq!(bash.category(), FailureCategory::NotFound);
        assert_eq!(search.category(), FailureCategory::NotFound);
        expeditor.advance_step();
        assert!(fail3(&expeditor, "Bash", &bash).opened);
        for _ in 0..30 {
            expeditor.advance_step();
        }
        let first = fail(&expeditor, "WebSearch", search.clone());
        assert_eq!(first.budget.consumed, 4, "charged at once, not held");
        fail(&expeditor, "WebSearch", search.clone());
        let last = fail(&expeditor, "WebSearch", search.clone());
        assert!(last.opened && !last.paused, "typed: {typed}");
        assert_independent(&expeditor, &log, 6);
        assert_eq!(
            expeditor.state(id(&expeditor, "Bash")),
            Some(CircuitState::Open)
        );
        assert_eq!(
            expeditor.state(id(&expeditor, "WebSearch")),
            Some(CircuitState::Open)
        );
    }
}

#[test]
fn r9_6_not_found_and_bad_argument_errors_in_one_step_stay_independent() {
    // Five circuits open in one step, every one on a tool-local error: neither the
    // same-category rule nor three-at-once applies.
    let (expeditor, log) = logged(network_map(), roomy());
    expeditor.advance_step();
    let failures = [
        ("Read", io_failure(io::ErrorKind::NotFound)),
        (
            "Edit",
            Failure::from(io::Error::new(
                io::ErrorKind::InvalidInput,
                "old_string is not unique in the file",
            )),
        ),
        (
            "Bash",
            Failure::with_exit_code("bash: rgx: command not found", 127),
        ),
        ("WebSearch", Failure::with_http_status("404 not found", 404)),
        (
            "WebFetch",
            Failure::with_http_status("422 Unprocessable Entity: bad url", 422),
        ),
    ];
    for (tool, failure) in &failures {
        assert!(!failure.category().is_infrastructure(), "{tool}");
        let recorded = fail3(&expeditor, tool, failure);
        assert!(recorded.opened && !recorded.paused, "{tool}");
    }
    // Two not-found tools in the same step share a category, and still do not correlate.
    assert_eq!(
        expeditor
            .breaker(id(&expeditor, "Read"))
            .unwrap()
            .common_category(),
        Some(FailureCategory::NotFound)
    );
    assert_eq!(
        expeditor
            .breaker(id(&expeditor, "Bash"))
            .unwrap()
            .common_category(),
        Some(FailureCategory::NotFound)
    );
    assert_eq!(expeditor.systemic_event(), None);
    assert_eq!(expeditor.paused(), None);
    assert!(!log.kinds().contains(&"systemic"));
    let budget = expeditor.budget();
    assert_eq!(budget.consumed(), 15);
    assert!(budget.ledger().iter().all(|e| e.charged && !e.pending));
}

#[test]
fn r9_6_tool_local_openings_do_not_count_toward_three_at_once() {
    // Two infrastructure openings and one tool-local one in the same step: not three.
    let policy = Policy::builder().threshold(1).budget(10).build().unwrap();
    let (expeditor, log) = logged(network_map(), policy);
    expeditor.advance_step();
    fail(
        &expeditor,
        "Read",
        io_failure(io::ErrorKind::PermissionDenied),
    );
    fail(
        &expeditor,
        "Bash",
        Failure::with_exit_code("command not found", 127),
    );
    let third = fail(&expeditor, "Edit", "disk full");
    assert!(third.opened && !third.paused);
    // A timeout says nothing about shared infrastructure either, nor does a mixed run.
    fail(&expeditor, "WebSearch", "timeout after 120s");
    assert_independent(&expeditor, &log, 4);
    // A third infrastructure opening makes three.
    let fetch = fail(&expeditor, "WebFetch", refused());
    assert!(fetch.paused);
    let event = expeditor.systemic_event().unwrap();
    assert_eq!(event.tools, ["Read", "Edit", "WebFetch"]);
    assert_eq!(event.category, None);
}

#[test]
fn r9_6_a_same_category_pair_outside_the_window_stays_independent() {
    // WebSearch opens on "connection refused"; WebFetch opens on it `gap` steps later.
    let run = |window: Option<u64>, gap: u64| -> (Expeditor, EventLog) {
        let mut policy = Policy::builder().budget(100);
        if let Some(w) = window {
            policy = policy.cascade_window(w);
        }
        let (expeditor, log) = logged(network_map(), policy.build().unwrap());
        expeditor.advance_step();
        refuse3(&expeditor, "WebSearch");
        for _ in 0..gap {
            expeditor.advance_step();
        }
        refuse3(&expeditor, "WebFetch");
        (expeditor, log)
    };
    // The default window is 2 steps.
    for gap in [0, 1, 2] {
        let (expeditor, _) = run(None, gap);
        let event = expeditor.systemic_event().expect("within the window");
        assert_eq!(event.tools, ["WebSearch", "WebFetch"], "gap {gap}");
        assert_eq!(expeditor.budget().consumed(), 1);
    }
    for gap in [3, 50] {
        let (expeditor, log) = run(None, gap);
        assert_independent(&expeditor, &log, 6);
    }
    // Window 0: the same step only.
    assert!(run(Some(0), 0).0.systemic_event().is_some());
    let (expeditor, log) = run(Some(0), 1);
    assert_independent(&expeditor, &log, 6);
    // A wide window correlates far-apart failures.
    assert!(run(Some(60), 50).0.systemic_event().is_some());
}

#[test]
fn r9_2_an_open_circuit_failing_again_is_back_in_the_window() {
    // WebSearch opened long ago, but its probe fails with "connection refused" now: the
    // network is down now, and WebFetch failing alike is one event.
    let (expeditor, _log) = logged(network_map(), roomy());
    expeditor.advance_step();
    refuse3(&expeditor, "WebSearch");
    for _ in 0..20 {
        expeditor.advance_step();
    }
    let web = id(&expeditor, "WebSearch");
    let probe = loop {
        if let Decision::Probe(probe) = expeditor.decide(web) {
            break probe;
        }
    };
    probe.failure(refused());
    let held = fail(&expeditor, "WebFetch", refused());
    assert!(
        expeditor.budget().ledger().last().unwrap().pending,
        "within the window of WebSearch's last failure: held"
    );
    assert!(!held.paused);
    fail(&expeditor, "WebFetch", refused());
    let last = fail(&expeditor, "WebFetch", refused());
    assert!(last.opened && last.paused);
    assert_eq!(
        expeditor.systemic_event().unwrap().tools,
        ["WebSearch", "WebFetch"]
    );
}

#[test]
fn r9_2_two_tools_with_connection_refused_within_the_window_are_one_event() {
    // Messages only, worded differently: the category they share is the signature.
    let (expeditor, log) = logged(network_map(), roomy());
    expeditor.advance_step();
    let search = Failure::new("dial tcp 10.0.0.7:443: connect: connection refused");
    assert!(fail3(&expeditor, "WebSearch", &search).opened);
    expeditor.advance_step();
    let fetch = Failure::new("Connection refused (os error 111)");
    let first = fail(&expeditor, "WebFetch", fetch.clone());
    assert_eq!(first.budget.consumed, 3, "held: it may belong to an event");
    fail(&expeditor, "WebFetch", fetch.clone());
    let last = fail(&expeditor, "WebFetch", fetch);
    assert!(last.opened && last.paused);
    let event = expeditor.systemic_event().unwrap();
    assert_eq!(event.category, Some(FailureCategory::Network));
    assert_eq!(
        event.to_string(),
        "Multiple tools failing with network errors — likely network issue"
    );
    assert_eq!(expeditor.budget().consumed(), 1);
    assert_eq!(log.kinds().iter().filter(|k| **k == "systemic").count(), 1);
}

#[test]
fn r9_2_typed_connection_refused_correlates_whatever_the_messages_say() {
    // A client library's error that names no cause in its message; the io error beneath it
    // is `ConnectionRefused`. And a gateway's 503, reported as an HTTP status.
    let (expeditor, _log) = logged(network_map(), roomy());
    expeditor.advance_step();
    let wrapped = RequestError(io::Error::from(io::ErrorKind::ConnectionRefused));
    let search = Failure::from_error(&wrapped);
    assert_eq!(search.category(), FailureCategory::Network);
    assert_eq!(
        Failure::new(search.message().to_owned()).category(),
        FailureCategory::Other,
        "the message alone would say nothing"
    );
    fail3(&expeditor, "WebSearch", &search);
    let fetch = Failure::with_http_status("upstream answered 503 Service Unavailable", 503);
    let last = fail3(&expeditor, "WebFetch", &fetch);
    assert!(last.opened && last.paused);
    let event = expeditor.systemic_event().unwrap();
    assert_eq!(event.category, Some(FailureCategory::Network));
    assert_eq!(event.cause(), "network");
    assert_eq!(event.tools, ["WebSearch", "WebFetch"]);
}
