//! B10 (with R9.4, R10.1): the tools of one server are a group. A call that finds its server
//! unreachable takes every working tool of that server down at once — one event naming the
//! server, charged once — while the other servers' tools go on; one probe brings them all
//! back; only several servers failing alike are the systemic pause of R9.

#[path = "../common/mod.rs"]
mod common;

use agent_circuit_breaker::event::Event;
use agent_circuit_breaker::{
    AlternativeSpec, Availability, CapabilityMap, CircuitState, Decision, Degradation, Expeditor,
    Failure, FailureCategory, Policy, SkipReason, ToolSpec,
};
use common::{EventLog, clock, id, kind, succeed};

/// files: read_file, list_dir, search (→ web_search); web: web_search, fetch; local: on no
/// server.
fn map() -> CapabilityMap {
    CapabilityMap::new()
        .tool(
            ToolSpec::new("read_file")
                .provides("file content")
                .fallback("ask the user to paste the file")
                .server("files"),
        )
        .tool(
            ToolSpec::new("list_dir")
                .provides("directory listing")
                .fallback("ask the user for the listing")
                .server("files"),
        )
        .tool(
            ToolSpec::new("search")
                .provides("content search")
                .alternative(
                    AlternativeSpec::new("web_search")
                        .method("search the published docs")
                        .degradation(Degradation::low("only what is published")),
                )
                .fallback("ask the user where to look")
                .server("files"),
        )
        .tool(
            ToolSpec::new("web_search")
                .provides("web search")
                .fallback("ask the user to search")
                .server("web"),
        )
        .tool(
            ToolSpec::new("fetch")
                .provides("page fetching")
                .fallback("ask the user for the page")
                .server("web"),
        )
        .tool(
            ToolSpec::new("local")
                .provides("local computation")
                .fallback("compute by hand"),
        )
}

fn guarded(log: &EventLog) -> Expeditor {
    Expeditor::builder(map())
        .policy(Policy::builder().budget(5).build().unwrap())
        .clock(clock())
        .observer(log.observer())
        .build()
        .unwrap()
}

fn closed() -> Failure {
    Failure::with_category("connection closed", FailureCategory::Network).server_unreachable()
}

fn fail_with(
    expeditor: &Expeditor,
    tool: &str,
    failure: Failure,
) -> agent_circuit_breaker::expeditor::Recorded {
    match expeditor.decide(id(expeditor, tool)) {
        Decision::Call(t) | Decision::Probe(t) => t.failure(failure),
        other => panic!("{tool}: expected CALL or PROBE, got {}", other.kind()),
    }
}

fn state(expeditor: &Expeditor, tool: &str) -> CircuitState {
    expeditor.state(id(expeditor, tool)).unwrap()
}

fn server_events(log: &EventLog) -> Vec<Event> {
    log.events()
        .into_iter()
        .filter(|e| {
            matches!(
                e,
                Event::ServerDown { .. } | Event::ServerUp { .. } | Event::Systemic { .. }
            )
        })
        .collect()
}

#[test]
fn b10_r9_4_a_dead_server_is_one_event_charged_once_and_other_servers_go_on() {
    let log = EventLog::default();
    let expeditor = guarded(&log);
    let recorded = fail_with(&expeditor, "read_file", closed());
    assert!(recorded.opened);
    assert_eq!(recorded.state, CircuitState::Open);
    assert_eq!(recorded.budget.consumed, 1);
    assert!(!recorded.paused);

    // Every tool of files is OPEN at once; web and local are untouched.
    for tool in ["read_file", "list_dir", "search"] {
        assert_eq!(state(&expeditor, tool), CircuitState::Open, "{tool}");
    }
    for tool in ["web_search", "fetch", "local"] {
        assert_eq!(state(&expeditor, tool), CircuitState::Closed, "{tool}");
        succeed(&expeditor, tool);
    }
    assert_eq!(
        server_events(&log),
        [Event::ServerDown {
            server: "files".into(),
            tools: vec!["read_file".into(), "list_dir".into(), "search".into()],
            message: "connection closed".into(),
        }]
    );
    assert!(
        !log.kinds().contains(&"opened"),
        "one event for the server, not one per tool: {:?}",
        log.kinds()
    );

    // search routes to web_search on the other server; the offer holds web's tools only.
    let Decision::Skip(skip) = expeditor.decide(id(&expeditor, "search")) else {
        panic!("search is down with its server")
    };
    assert_eq!(skip.reason(), SkipReason::Open);
    let route = skip.route().taken("search");
    assert_eq!(route.to.as_deref(), Some("web_search"));
    assert_eq!(expeditor.offer().offered, ["web_search", "fetch", "local"]);

    // The reports name each server.
    let table = expeditor.state_table().to_string();
    assert!(
        table.ends_with(
            "Failure budget: 1 / 5 consumed\n\
             Server files: DOWN since step 0 — connection closed (read_file, list_dir, search OPEN)\n\
             Server web: reachable (web_search, fetch)"
        ),
        "{table}"
    );
    assert_eq!(
        expeditor.budget().ledger().len(),
        1,
        "one line on the ledger"
    );
}

#[test]
fn b10_calls_in_flight_failing_with_the_same_outage_are_not_charged_again() {
    let log = EventLog::default();
    let expeditor = guarded(&log);
    // Two calls sent before anyone knew: both fail with the server's outage.
    let Decision::Call(list) = expeditor.decide(id(&expeditor, "list_dir")) else {
        panic!("CALL")
    };
    let Decision::Call(search) = expeditor.decide(id(&expeditor, "search")) else {
        panic!("CALL")
    };
    fail_with(&expeditor, "read_file", closed());
    let late = list.failure(closed());
    assert_eq!(late.budget.consumed, 1);
    let late = search.failure(closed());
    assert_eq!(late.budget.consumed, 1);
    assert_eq!(server_events(&log).len(), 1);
    assert_eq!(expeditor.budget().status().consumed, 1);
}

#[test]
fn b10_r3_6_one_probe_per_server_and_its_success_brings_every_tool_back() {
    let log = EventLog::default();
    let expeditor = guarded(&log);
    fail_with(&expeditor, "read_file", closed());
    // The default probe comes on the third attempt after opening.
    assert_eq!(kind(expeditor.decide(id(&expeditor, "read_file"))), "SKIP");
    assert_eq!(kind(expeditor.decide(id(&expeditor, "read_file"))), "SKIP");
    let Decision::Probe(probe) = expeditor.decide(id(&expeditor, "read_file")) else {
        panic!("read_file probes its server")
    };
    // list_dir's probe is due too, but the server is being probed already.
    assert_eq!(kind(expeditor.decide(id(&expeditor, "list_dir"))), "SKIP");
    assert_eq!(kind(expeditor.decide(id(&expeditor, "list_dir"))), "SKIP");
    let Decision::Skip(skip) = expeditor.decide(id(&expeditor, "list_dir")) else {
        panic!("one probe per server")
    };
    assert_eq!(skip.reason(), SkipReason::ProbeInFlight);

    probe.success();
    for tool in ["read_file", "list_dir", "search"] {
        assert_eq!(state(&expeditor, tool), CircuitState::Closed, "{tool}");
    }
    assert_eq!(
        server_events(&log)[1],
        Event::ServerUp {
            server: "files".into(),
            tools: vec!["read_file".into(), "list_dir".into(), "search".into()],
        }
    );
    assert!(expeditor.servers().iter().all(|s| s.outage.is_none()));
    assert_eq!(expeditor.offer().offered.len(), 6);
    // Nothing recorded is lost: the outage stays on the ledger.
    assert_eq!(expeditor.budget().ledger().len(), 1);
}

#[test]
fn b10_a_failed_probe_keeps_the_server_down_and_a_dropped_one_frees_the_slot() {
    let log = EventLog::default();
    let expeditor = guarded(&log);
    fail_with(&expeditor, "read_file", closed());
    for _ in 0..2 {
        assert_eq!(kind(expeditor.decide(id(&expeditor, "list_dir"))), "SKIP");
    }
    // A dropped probe (the caller gave up) frees the server's probe for another tool.
    let Decision::Probe(dropped) = expeditor.decide(id(&expeditor, "list_dir")) else {
        panic!("PROBE")
    };
    drop(dropped);
    for _ in 0..2 {
        assert_eq!(kind(expeditor.decide(id(&expeditor, "read_file"))), "SKIP");
    }
    let recorded = fail_with(&expeditor, "read_file", closed());
    assert!(recorded.opened, "re-opened by the failed probe");
    assert_eq!(
        recorded.budget.consumed, 2,
        "a failed probe is charged (R3.2)"
    );
    // Every tool of the outage waits another interval: none probes at once.
    for tool in ["read_file", "list_dir", "search"] {
        assert_eq!(state(&expeditor, tool), CircuitState::Open, "{tool}");
    }
    assert_eq!(kind(expeditor.decide(id(&expeditor, "list_dir"))), "SKIP");
    assert!(expeditor.servers()[0].outage.is_some());
}

#[test]
fn b10_a_probe_failing_on_its_own_means_the_server_is_back() {
    let log = EventLog::default();
    let expeditor = guarded(&log);
    fail_with(&expeditor, "read_file", closed());
    for _ in 0..2 {
        assert_eq!(kind(expeditor.decide(id(&expeditor, "search"))), "SKIP");
    }
    // The server answered the probe with the tool's own error: it is reachable.
    let recorded = fail_with(&expeditor, "search", Failure::new("no such index: docs"));
    assert_eq!(
        recorded.state,
        CircuitState::Open,
        "search re-opens on its own failure"
    );
    assert_eq!(state(&expeditor, "read_file"), CircuitState::Closed);
    assert_eq!(state(&expeditor, "list_dir"), CircuitState::Closed);
    assert!(matches!(server_events(&log)[1], Event::ServerUp { .. }));
}

#[test]
fn b10_r9_2_servers_failing_alike_are_the_systemic_pause_one_server_is_not() {
    // One server's tools failing one by one with network errors are that server's, never a
    // cascade: the same category across tools of one server does not correlate.
    let expeditor = Expeditor::builder(map())
        .policy(Policy::builder().budget(10).build().unwrap())
        .clock(clock())
        .build()
        .unwrap();
    let network = || Failure::with_category("connection reset", FailureCategory::Network);
    for _ in 0..3 {
        fail_with(&expeditor, "read_file", network());
    }
    for _ in 0..3 {
        fail_with(&expeditor, "list_dir", network());
    }
    assert_eq!(expeditor.paused(), None, "one server: no systemic pause");

    // A second server unreachable alike: every call pauses, the report names both.
    let log = EventLog::default();
    let expeditor = guarded(&log);
    fail_with(&expeditor, "read_file", closed());
    assert_eq!(expeditor.paused(), None);
    fail_with(&expeditor, "web_search", closed());
    assert!(
        expeditor.paused().is_some(),
        "two servers failing alike: R9"
    );
    let Some(Event::Systemic { tools, .. }) = server_events(&log)
        .into_iter()
        .find(|e| matches!(e, Event::Systemic { .. }))
    else {
        panic!("a systemic event")
    };
    for tool in ["read_file", "web_search"] {
        assert!(tools.iter().any(|t| t == tool), "{tool} in {tools:?}");
    }
    assert_eq!(kind(expeditor.decide(id(&expeditor, "local"))), "PAUSE");
    // Charged once for the event (R9.4).
    assert_eq!(expeditor.budget().status().consumed, 1);
}

#[test]
fn b10_a_failure_marked_unreachable_on_a_tool_of_no_server_is_its_own() {
    let log = EventLog::default();
    let expeditor = guarded(&log);
    let recorded = fail_with(&expeditor, "local", closed());
    assert!(!recorded.opened, "threshold 3, as any failure");
    assert!(server_events(&log).is_empty());
}

#[test]
fn b10_r10_1_one_health_check_per_server() {
    let log = EventLog::default();
    let expeditor = guarded(&log);
    assert!(expeditor.record_server_check("web", Availability::Unavailable("ping failed".into())));
    assert!(!expeditor.record_server_check("nowhere", Availability::Available));
    for tool in ["web_search", "fetch"] {
        let Decision::Skip(skip) = expeditor.decide(id(&expeditor, tool)) else {
            panic!("{tool} is unavailable")
        };
        assert_eq!(skip.reason(), SkipReason::Unavailable);
    }
    assert_eq!(
        expeditor.budget().status().consumed,
        0,
        "never charged (R10.2)"
    );
    assert!(expeditor.record_server_check("web", Availability::Available));
    succeed(&expeditor, "web_search");
}

#[test]
fn b10_b3_an_outage_survives_a_snapshot_as_open_circuits() {
    let log = EventLog::default();
    let expeditor = guarded(&log);
    fail_with(&expeditor, "read_file", closed());
    let snapshot = expeditor.snapshot();
    let restored = Expeditor::builder(map()).clock(clock()).build().unwrap();
    restored.restore(&snapshot).unwrap();
    for tool in ["read_file", "list_dir", "search"] {
        assert_eq!(state(&restored, tool), CircuitState::Open, "{tool}");
    }
    // Restored, each probes on its own (the outage itself is not in a snapshot).
    for _ in 0..2 {
        assert_eq!(kind(restored.decide(id(&restored, "list_dir"))), "SKIP");
    }
    succeed(&restored, "list_dir");
    assert_eq!(state(&restored, "list_dir"), CircuitState::Closed);
}

#[test]
fn b10_b6_the_server_travels_in_the_yaml_map() {
    let yaml = serde_yaml_ng::to_string(&map()).unwrap();
    assert!(yaml.contains("server: files"), "{yaml}");
    let back: CapabilityMap = serde_yaml_ng::from_str(&yaml).unwrap();
    assert_eq!(back, map());
    assert_eq!(back.tools()[0].server(), Some("files"));
    assert_eq!(back.tools()[5].server(), None);
}

/// The map with a budget of 5, probes every `steps` steps, observed by `log`.
fn probed_every_steps(steps: u32, log: &EventLog) -> Expeditor {
    Expeditor::builder(map())
        .policy(
            Policy::builder()
                .budget(5)
                .probe_every(steps)
                .probe_unit(agent_circuit_breaker::policy::ProbeUnit::Steps)
                .build()
                .unwrap(),
        )
        .clock(clock())
        .observer(log.observer())
        .build()
        .unwrap()
}

/// B10, R10.1: a model-driven agent never calls a tool it is not offered, so a down server
/// is probed by its health check: due after the policy's interval (here in steps), recorded
/// as reached (every tool back at once) or not (another interval, nothing charged).
#[test]
fn b10_a_down_server_is_probed_by_its_health_check_when_due() {
    let log = EventLog::default();
    let expeditor = probed_every_steps(3, &log);
    assert!(!expeditor.server_probe_due("files"), "up: nothing to probe");
    assert!(
        !expeditor.record_server_probe("files", true),
        "up: nothing to record"
    );
    fail_with(&expeditor, "read_file", closed());
    assert!(!expeditor.server_probe_due("files"));
    assert!(!expeditor.server_probe_due("web"));
    for _ in 0..3 {
        expeditor.advance_step();
    }
    assert!(expeditor.server_probe_due("files"));

    // Not reached: another interval, not charged.
    assert!(expeditor.record_server_probe("files", false));
    assert!(!expeditor.server_probe_due("files"));
    assert_eq!(expeditor.budget().status().consumed, 1);
    for tool in ["read_file", "list_dir", "search"] {
        assert_eq!(state(&expeditor, tool), CircuitState::Open, "{tool}");
    }
    for _ in 0..3 {
        expeditor.advance_step();
    }
    assert!(expeditor.server_probe_due("files"));

    // Reached: every tool of the outage CLOSED, one event.
    assert!(expeditor.record_server_probe("files", true));
    for tool in ["read_file", "list_dir", "search"] {
        assert_eq!(state(&expeditor, tool), CircuitState::Closed, "{tool}");
    }
    assert!(matches!(
        server_events(&log).as_slice(),
        [Event::ServerDown { .. }, Event::ServerUp { server, tools }]
            if server == "files" && tools.len() == 3
    ));
    assert_eq!(expeditor.offer().offered.len(), 6);
}

/// R9.3: no probe, by health check either, while every call is paused.
#[test]
fn b10_r9_3_no_server_probe_during_a_systemic_pause() {
    let log = EventLog::default();
    let expeditor = probed_every_steps(1, &log);
    fail_with(&expeditor, "read_file", closed());
    fail_with(&expeditor, "web_search", closed());
    assert!(expeditor.paused().is_some());
    expeditor.advance_step();
    expeditor.advance_step();
    assert!(!expeditor.server_probe_due("files"));
    expeditor.confirm_recovery();
    for _ in 0..30 {
        expeditor.advance_step();
    }
    assert!(
        expeditor.server_probe_due("files"),
        "after recovery, probes resume"
    );
}

/// B10: a client whose callers make no attempts and advance no steps (a proxy) looks at a
/// down server again after a wall-clock interval; a failed look starts the wait again; the
/// tool whose probe was given up waits with the rest (OPEN, not offered).
#[test]
fn b10_a_down_server_is_due_by_wall_time_and_a_given_up_probe_waits_with_the_rest() {
    use std::time::Duration;
    let log = EventLog::default();
    let clock = clock();
    let expeditor = Expeditor::builder(map())
        .policy(Policy::builder().budget(5).build().unwrap())
        .clock(clock.clone())
        .observer(log.observer())
        .build()
        .unwrap();
    let every = Duration::from_secs(10);
    assert!(!expeditor.server_down("files"));
    fail_with(&expeditor, "read_file", closed());
    assert!(expeditor.server_down("files"));
    assert!(!expeditor.server_down("web"));
    assert!(!expeditor.server_probe_due_within("files", every));
    clock.advance(Duration::from_secs(10));
    assert!(expeditor.server_probe_due_within("files", every));
    assert!(!expeditor.server_probe_due("files"), "by attempts, not yet");

    // The first tool's probe is granted, its health check fails, the probe is given up.
    for _ in 0..2 {
        assert_eq!(kind(expeditor.decide(id(&expeditor, "read_file"))), "SKIP");
    }
    let Decision::Probe(probe) = expeditor.decide(id(&expeditor, "read_file")) else {
        panic!("PROBE")
    };
    drop(probe);
    assert!(expeditor.record_server_probe("files", false));
    for tool in ["read_file", "list_dir", "search"] {
        assert_eq!(state(&expeditor, tool), CircuitState::Open, "{tool}");
    }
    assert_eq!(expeditor.offer().offered, ["web_search", "fetch", "local"]);
    assert!(
        !expeditor.server_probe_due_within("files", every),
        "the wait starts again"
    );
    clock.advance(Duration::from_secs(10));
    assert!(expeditor.server_probe_due_within("files", every));
    assert!(expeditor.record_server_probe("files", true));
    assert!(!expeditor.server_down("files"));
    assert_eq!(
        expeditor.budget().status().consumed,
        1,
        "looks are never charged"
    );
}

#[test]
fn b10_b13_under_a_wall_time_policy_a_down_server_says_since_when() {
    use std::time::Duration;
    let log = EventLog::default();
    let clock = clock();
    let expeditor = Expeditor::builder(map())
        .policy(
            Policy::builder()
                .budget(5)
                .cool_down(Duration::from_secs(30))
                .build()
                .unwrap(),
        )
        .clock(clock.clone())
        .observer(log.observer())
        .build()
        .unwrap();
    let down_at = common::T0;
    fail_with(&expeditor, "read_file", closed());
    let line = |e: &Expeditor| {
        e.state_table()
            .to_string()
            .lines()
            .find(|l| l.starts_with("Server files:"))
            .map(str::to_owned)
            .unwrap()
    };
    let expected = format!(
        "Server files: DOWN since {down_at} — connection closed (read_file, list_dir, search OPEN)"
    );
    assert_eq!(line(&expeditor), expected);
    let outage = expeditor.state_table().servers[0].outage.clone().unwrap();
    assert_eq!(outage.at, Some(down_at));

    // A failed health check later keeps the time the server went down.
    clock.advance(Duration::from_secs(45));
    assert!(expeditor.record_server_probe("files", false));
    assert_eq!(line(&expeditor), expected);
}
