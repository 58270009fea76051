//! R3.7 and B3: the whole state saved and restored through serde; every report is data.

#[path = "../common/mod.rs"]
mod common;

use std::time::Duration;

use agent_circuit_breaker::{
    CapabilityMap, CircuitState, Decision, Expeditor, PauseReason, Policy,
    clock::ManualClock,
    event::Event,
    report::{Budget, ModelNote, StateTable},
    snapshot::{RestoreError, SNAPSHOT_FORMAT, SNAPSHOT_VERSION, Snapshot},
};
use common::{
    EventLog, assert_golden, clock, expeditor_with, fail, id, kind, open3, seed_expeditor,
    seed_map, succeed,
};
use serde_json::{Value, json};

/// Some history: two successes, Bash OPEN with two skipped attempts, a WebSearch failure, a
/// tool discovered at run time, the agent at step 5.
fn story() -> (Expeditor, ManualClock) {
    let (expeditor, clock) = seed_expeditor();
    expeditor.advance_step();
    succeed(&expeditor, "Grep");
    clock.advance(Duration::from_secs(10));
    expeditor.advance_step();
    succeed(&expeditor, "Read");
    expeditor.advance_step();
    open3(&expeditor, "Bash");
    let bash = id(&expeditor, "Bash");
    assert_eq!(kind(expeditor.decide(bash)), "SKIP");
    assert_eq!(kind(expeditor.decide(bash)), "SKIP");
    expeditor.advance_step();
    clock.advance(Duration::from_secs(90));
    fail(&expeditor, "WebSearch", "connection refused");
    let Decision::Call(ticket) = expeditor.decide_named("mcp_fetch").unwrap() else {
        panic!("a new tool is CLOSED")
    };
    ticket.success();
    expeditor.advance_step();
    (expeditor, clock)
}

fn fresh() -> Expeditor {
    expeditor_with(seed_map(), Policy::default(), &clock())
}

fn through_json(snapshot: &Snapshot) -> Snapshot {
    let text = serde_json::to_string(snapshot).unwrap();
    serde_json::from_str(&text).expect("a snapshot reads back")
}

/// The visible state of an expeditor, to compare before and after.
fn visible(expeditor: &Expeditor) -> (Value, String, Budget, u64) {
    (
        serde_json::to_value(expeditor.snapshot()).unwrap(),
        expeditor.state_table().to_string(),
        expeditor.budget(),
        expeditor.step(),
    )
}

#[test]
fn r3_7_snapshot_through_json_restores_an_identical_state() {
    let (original, _clock) = story();
    let snapshot = through_json(&original.snapshot());
    let log = EventLog::default();
    let restored = Expeditor::builder(seed_map())
        .clock(clock())
        .observer(log.observer())
        .build()
        .unwrap();
    restored.restore(&snapshot).expect("a valid snapshot");
    assert_eq!(
        restored.state_table().to_string(),
        original.state_table().to_string()
    );
    assert_eq!(restored.state_table(), original.state_table());
    assert_eq!(restored.budget(), original.budget());
    assert_eq!(restored.budget().ledger().len(), 4);
    assert_eq!(restored.step(), 5);
    assert_eq!(visible(&restored), visible(&original));
    assert_eq!(
        log.events(),
        [Event::Restored { tools: 7, step: 5 }],
        "six declared tools and one discovered"
    );
    // The restored expeditor goes on where the original left off: Bash's third attempt
    // since opening is its probe, on both.
    let bash = id(&restored, "Bash");
    assert_eq!(kind(original.decide(id(&original, "Bash"))), "PROBE");
    assert_eq!(kind(restored.decide(bash)), "PROBE");
}

#[test]
fn r3_7_restore_registers_tools_discovered_at_run_time() {
    let (original, _clock) = story();
    let restored = fresh();
    assert_eq!(restored.tool("mcp_fetch"), None);
    restored
        .restore(&through_json(&original.snapshot()))
        .unwrap();
    let fetch = restored
        .tool("mcp_fetch")
        .expect("registered by the restore");
    assert_eq!(restored.state(fetch), Some(CircuitState::Closed));
    assert!(restored.breaker(fetch).unwrap().last_success().is_some());
    assert_eq!(restored.capability_map(), original.capability_map());
}

#[test]
fn r3_7_a_half_open_tool_with_a_probe_in_flight_restores_with_its_slot_free() {
    let (original, _clock) = story();
    let bash = id(&original, "Bash");
    let Decision::Probe(probe) = original.decide(bash) else {
        panic!("third attempt probes")
    };
    let Decision::Skip(_) = original.decide(bash) else {
        panic!("the slot is taken here")
    };
    let snapshot = original.snapshot();
    let json = serde_json::to_value(&snapshot).unwrap();
    assert_eq!(json["tools"][1]["breaker"]["state"], "HALF-OPEN");
    assert!(
        json["tools"][1]["breaker"].get("probe").is_none(),
        "a probe in flight is never saved: {json}"
    );
    let restored = fresh();
    restored.restore(&through_json(&snapshot)).unwrap();
    let bash_restored = id(&restored, "Bash");
    assert_eq!(restored.state(bash_restored), Some(CircuitState::HalfOpen));
    assert!(!restored.breaker(bash_restored).unwrap().probe_in_flight());
    let Decision::Probe(second) = restored.decide(bash_restored) else {
        panic!("the restored HALF-OPEN tool lets one probe through")
    };
    second.success();
    assert_eq!(restored.state(bash_restored), Some(CircuitState::Closed));
    probe.success();
}

#[test]
fn r3_7_a_ticket_issued_before_a_restore_cannot_move_the_restored_state() {
    let (expeditor, _clock) = story();
    let bash = id(&expeditor, "Bash");
    let saved = expeditor.snapshot();
    let Decision::Probe(stale) = expeditor.decide(bash) else {
        panic!("third attempt probes")
    };
    expeditor.restore(&saved).unwrap();
    // Restored: OPEN with two attempts since opening.
    assert_eq!(expeditor.state(bash), Some(CircuitState::Open));
    stale.success();
    assert_eq!(
        expeditor.state(bash),
        Some(CircuitState::Open),
        "a probe from before the restore does not close the restored circuit"
    );
    assert_eq!(kind(expeditor.decide(bash)), "PROBE");
}

#[test]
fn r3_7_a_snapshot_of_a_paused_expeditor_restores_paused() {
    let (original, _clock) = seed_expeditor();
    open3(&original, "Bash");
    fail(&original, "Grep", "a");
    assert!(fail(&original, "Grep", "b").paused);
    let restored = fresh();
    restored
        .restore(&through_json(&original.snapshot()))
        .unwrap();
    let reason = PauseReason::BudgetExhausted {
        consumed: 5,
        limit: 5,
    };
    assert_eq!(restored.paused(), Some(reason));
    assert_eq!(kind(restored.decide(id(&restored, "Read"))), "PAUSE");
    // Under a larger budget the same ledger leaves room: no pause.
    let roomy = expeditor_with(seed_map(), common::policy_with_budget(10), &clock());
    roomy.restore(&original.snapshot()).unwrap();
    assert_eq!(roomy.paused(), None);
    assert_eq!(
        roomy.budget().status().to_string(),
        "5 failures remaining before mandatory pause"
    );
    assert_eq!(kind(roomy.decide(id(&roomy, "Read"))), "CALL");
}

/// A target with its own history, and a source whose snapshot differs from it everywhere.
fn target_and_source() -> (Expeditor, Value) {
    let target = fresh();
    target.advance_step();
    fail(&target, "Grep", "regex parse error");
    succeed(&target, "Read");
    let (source, _clock) = story();
    (target, serde_json::to_value(source.snapshot()).unwrap())
}

fn assert_refused(edit: impl FnOnce(&mut Value), check: impl FnOnce(&RestoreError)) {
    let (target, mut json) = target_and_source();
    edit(&mut json);
    let snapshot: Snapshot = serde_json::from_value(json).expect("well-formed JSON");
    let before = visible(&target);
    let error = target.restore(&snapshot).expect_err("an invalid snapshot");
    check(&error);
    assert!(
        error
            .to_string()
            .starts_with("snapshot not restored (state unchanged): "),
        "{error}"
    );
    assert_eq!(visible(&target), before, "{error}: the target changed");
}

#[test]
fn r3_7_a_snapshot_in_another_format_is_refused() {
    assert_refused(
        |json| json["format"] = json!("someone-else/state"),
        |error| {
            assert_eq!(
                *error,
                RestoreError::Format {
                    found: "someone-else/state".into()
                }
            );
        },
    );
}

#[test]
fn r3_7_a_snapshot_of_another_version_is_refused() {
    assert_refused(
        |json| json["version"] = json!(SNAPSHOT_VERSION + 1),
        |error| {
            assert_eq!(
                *error,
                RestoreError::Version {
                    found: 2,
                    supported: 1
                }
            );
            assert_eq!(
                error.to_string(),
                "snapshot not restored (state unchanged): version 2 is not supported (this \
                 crate reads 1)"
            );
        },
    );
}

#[test]
fn r3_7_a_snapshot_with_a_tool_twice_is_refused() {
    assert_refused(
        |json| {
            let first = json["tools"][0].clone();
            json["tools"].as_array_mut().unwrap().push(first);
        },
        |error| {
            assert_eq!(
                *error,
                RestoreError::DuplicateTool {
                    tool: "Grep".into()
                }
            );
        },
    );
}

#[test]
fn r3_7_an_open_breaker_without_consecutive_failures_is_refused() {
    assert_refused(
        |json| {
            assert_eq!(json["tools"][1]["breaker"]["state"], "OPEN");
            json["tools"][1]["breaker"]["consecutive_failures"] = json!(0);
        },
        |error| {
            assert!(
                matches!(error, RestoreError::Breaker { tool, problem }
                    if tool == "Bash" && problem.contains("consecutive failure")),
                "{error:?}"
            );
        },
    );
}

#[test]
fn r3_7_a_budget_that_does_not_match_its_ledger_is_refused() {
    assert_refused(
        |json| {
            assert_eq!(json["budget"]["consumed"], 4);
            json["budget"]["consumed"] = json!(3);
        },
        |error| {
            assert!(
                matches!(error, RestoreError::Budget { problem } if problem.contains("ledger")),
                "{error:?}"
            );
        },
    );
}

#[test]
fn r3_7_a_snapshot_with_unknown_fields_does_not_parse() {
    let (source, _clock) = story();
    let mut json = serde_json::to_value(source.snapshot()).unwrap();
    json["tools"][1]["breaker"]["probe"] = json!(1);
    assert!(serde_json::from_value::<Snapshot>(json).is_err());
}

#[test]
fn b3_the_snapshot_format_is_pinned() {
    let (expeditor, _clock) = story();
    let snapshot = expeditor.snapshot();
    assert_eq!(snapshot.format, SNAPSHOT_FORMAT);
    assert_eq!(SNAPSHOT_FORMAT, "agent-circuit-breaker/snapshot");
    assert_eq!(snapshot.version, 1);
    let pretty = serde_json::to_string_pretty(&snapshot).unwrap();
    assert_golden("b3_snapshot.json", &pretty);
}

#[test]
fn b3_a_snapshot_equals_itself_after_a_serde_round_trip() {
    let (expeditor, _clock) = story();
    let bash = id(&expeditor, "Bash");
    let Decision::Probe(probe) = expeditor.decide(bash) else {
        panic!("third attempt probes")
    };
    probe.failure("still broken");
    let snapshot = expeditor.snapshot();
    assert_eq!(through_json(&snapshot), snapshot);
}

#[test]
fn b3_reports_and_events_are_data() {
    let (expeditor, _clock) = story();
    let table = expeditor.state_table();
    let back: StateTable = serde_json::from_str(&serde_json::to_string(&table).unwrap()).unwrap();
    assert_eq!(back, table);

    let budget = expeditor.budget();
    let back: Budget = serde_json::from_str(&serde_json::to_string(&budget).unwrap()).unwrap();
    assert_eq!(back, budget);
    assert_eq!(back.to_string(), budget.to_string());
    let entry = serde_json::to_value(&budget.ledger()[0]).unwrap();
    assert_eq!(
        entry,
        json!({
            "tool": "Bash",
            "failure": {"message": "permission denied", "category": "permission"},
            "step": 3,
            "at": "2026-11-30T07:35:13.000Z",
            "charged": true
        })
    );

    let map = expeditor.capability_map();
    let back: CapabilityMap = serde_json::from_str(&serde_json::to_string(&map).unwrap()).unwrap();
    assert_eq!(back, map);

    let events = [
        Event::Opened {
            tool: "Bash".into(),
            consecutive_failures: 3,
            message: "timeout after 120s".into(),
        },
        Event::HalfOpened {
            tool: "Bash".into(),
        },
        Event::Closed {
            tool: "Bash".into(),
        },
        Event::Reopened {
            tool: "Bash".into(),
            consecutive_failures: 4,
            message: "x".into(),
        },
        Event::ProbeReleased {
            tool: "Bash".into(),
        },
        Event::BudgetExhausted {
            consumed: 5,
            limit: 5,
        },
        Event::CycleStarted { cycle: 2 },
        Event::ToolDiscovered {
            tool: "mcp_fetch".into(),
        },
        Event::Restored { tools: 7, step: 5 },
    ];
    for event in &events {
        let json = serde_json::to_value(event).unwrap();
        assert_eq!(json["event"], event.kind(), "{json}");
        let back: Event = serde_json::from_value(json).unwrap();
        assert_eq!(&back, event);
    }

    let (expeditor, _clock) = seed_expeditor();
    open3(&expeditor, "Grep");
    let Decision::Skip(skip) = expeditor.decide(id(&expeditor, "Grep")) else {
        panic!("Grep is OPEN")
    };
    let note = skip.for_model();
    let back: ModelNote = serde_json::from_str(&serde_json::to_string(&note).unwrap()).unwrap();
    assert_eq!(back, note);
}
