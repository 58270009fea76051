//! R9: cascading failures — failure signatures, one systemic event instead of N breaker
//! trips, every call paused until recovery is confirmed, the budget charged once, probes
//! backing off exponentially afterwards (capped, also along a chain of routes), and
//! uncorrelated failures leaving breakers independent.

mod common;

use std::io;

use circuit_breaker::{
    CapabilityMap, CircuitState, Decision, Event, Expeditor, Failure, FailureCategory, PauseReason,
    Policy, ProbeUnit, Snapshot, SystemicEvent, Task, ToolSpec,
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

fn webfetch_spec() -> ToolSpec {
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
fn refuse3(expeditor: &Expeditor, tool: &str) -> circuit_breaker::Recorded {
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

/// The seed's cascade: WebSearch and WebFetch both fail with "connection refused".
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
        serde_json::from_str::<circuit_breaker::PauseReport>(&json).unwrap(),
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
    let unasked = circuit_breaker::ModelNote {
        asked_for: None,
        ..note
    };
    assert_eq!(offer.withheld, [unasked]);
}

#[test]
fn r9_2_three_circuits_opening_in_one_step_are_a_systemic_event_whatever_their_errors() {
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
    assert!(!fail(&expeditor, "Bash", "timeout after 120s").paused);
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
                    "timeout after 120s",
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
        0,
        "default: the same step"
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
                    circuit_breaker::AlternativeSpec::new("Bash")
                        .method("rg or grep command")
                        .degradation(circuit_breaker::Degradation::low(
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
    fail(&expeditor, "Bash", "timeout after 120s");
    fail(&expeditor, "WebSearch", "connection refused");
    assert!(expeditor.systemic_event().is_some());
    expeditor
}

fn chain_failure(tool: &str) -> Failure {
    match tool {
        "Grep" => Failure::new("permission denied"),
        _ => Failure::new("timeout after 120s"),
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
    // `other` failures cannot be correlated. (One circuit opens per step: three in one step
    // would be a cascade by timing, R9.2.)
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
