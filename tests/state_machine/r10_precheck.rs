//! R10: pre-call checks — AVAILABLE, DEGRADED (threshold lowered by one, never below 1) or
//! UNAVAILABLE (routed without a call and without charging the budget); advisory, cached,
//! checked again after a systemic event; the allowed-tools list; the tools offered to a model.

#[path = "../common/mod.rs"]
mod common;

use agent_circuit_breaker::{
    Availability, CapabilityMap, CircuitState, Decision, Expeditor, Policy, Route, SkipReason,
    ToolSpec, event::Event, expeditor::ToolId, policy::ProbeUnit, report::ToolOffer,
};
use common::{
    EventLog, assert_no_retry_invitation, clock, expeditor_with, fail, fail_all, id, kind, open3,
    seed_map, succeed,
};

const DOWN: &str = "MCP server not responding";

fn unavailable() -> Availability {
    Availability::Unavailable(DOWN.into())
}

/// The source document's map; probes counted in steps so that asking about an OPEN tool never
/// probes it unless a step passes; cascade detection off (R9 is tested on its own).
fn expeditor() -> Expeditor {
    let policy = Policy::builder()
        .budget(100)
        .probe_unit(ProbeUnit::Steps)
        .cascade_detection(false)
        .build()
        .unwrap();
    expeditor_with(seed_map(), policy, &clock())
}

fn logged() -> (Expeditor, EventLog) {
    let log = EventLog::default();
    let expeditor = Expeditor::builder(seed_map())
        .clock(clock())
        .observer(log.observer())
        .build()
        .unwrap();
    (expeditor, log)
}

fn skip_reason(expeditor: &Expeditor, tool: &str) -> SkipReason {
    match expeditor.decide(id(expeditor, tool)) {
        Decision::Skip(skip) => skip.reason(),
        other => panic!("{tool}: expected SKIP, got {}", other.kind()),
    }
}

fn routes(expeditor: &Expeditor, tool: &str) -> Vec<String> {
    let Decision::Skip(skip) = expeditor.decide(id(expeditor, tool)) else {
        panic!("{tool} should be skipped")
    };
    skip.routes()
        .map(|route| match route {
            Route::Alternative(alt) => format!("alternative:{}", alt.name()),
            Route::Fallback(_) => "fallback".to_owned(),
            Route::ScopeReduction => "scope".to_owned(),
        })
        .collect()
}

#[test]
fn r10_1_a_check_says_available_degraded_or_unavailable() {
    let degraded = Availability::Degraded("high latency".into());
    assert_eq!(Availability::Available.to_string(), "AVAILABLE");
    assert_eq!(degraded.to_string(), "DEGRADED — high latency");
    assert_eq!(
        unavailable().to_string(),
        "UNAVAILABLE — MCP server not responding"
    );
    assert_eq!(
        Availability::Unavailable(String::new()).to_string(),
        "UNAVAILABLE"
    );
    assert_eq!(
        (
            Availability::Available.as_str(),
            degraded.as_str(),
            unavailable().as_str()
        ),
        ("AVAILABLE", "DEGRADED", "UNAVAILABLE")
    );
    assert_eq!(Availability::Available.reason(), None);
    assert_eq!(degraded.reason(), Some("high latency"));
    for a in [Availability::Available, degraded, unavailable()] {
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<Availability>(&json).unwrap(), a);
    }
    assert_eq!(
        serde_json::to_string(&unavailable()).unwrap(),
        r#"{"availability":"UNAVAILABLE","reason":"MCP server not responding"}"#
    );
}

#[test]
fn r10_1_a_tool_is_available_until_checked_and_a_check_is_kept() {
    let expeditor = expeditor();
    let grep = id(&expeditor, "Grep");
    assert!(expeditor.precheck_due(grep));
    assert_eq!(expeditor.availability(grep), Some(Availability::Available));
    assert!(expeditor.record_precheck(grep, Availability::Available));
    assert!(!expeditor.precheck_due(grep), "cached (R10.3)");
    assert!(expeditor.precheck_due(id(&expeditor, "Bash")), "per tool");

    let nobody = ToolId::from_index(99);
    assert!(!expeditor.record_precheck(nobody, Availability::Available));
    assert_eq!(expeditor.availability(nobody), None);
    assert!(!expeditor.precheck_due(nobody));
}

#[test]
fn r10_1_a_tool_left_out_of_the_allowed_tools_is_unavailable_without_a_check() {
    let expeditor = expeditor();
    expeditor.allow_only(["Grep", "Read"]);
    let bash = id(&expeditor, "Bash");
    let not_allowed = Availability::Unavailable("not in the allowed-tools list".into());
    assert_eq!(expeditor.availability(bash), Some(not_allowed.clone()));
    assert!(
        !expeditor.precheck_due(bash),
        "nothing to check: not allowed"
    );
    assert!(expeditor.precheck_due(id(&expeditor, "Grep")));
    assert_eq!(skip_reason(&expeditor, "Bash"), SkipReason::Unavailable);
    let Decision::Skip(skip) = expeditor.decide(bash) else {
        panic!("Bash is not allowed")
    };
    let note = skip.for_model().to_string();
    assert_eq!(
        note,
        "Bash is unavailable: the pre-call check says UNAVAILABLE — not in the allowed-tools \
         list. Do not call Bash. Instead: no other tool can do this — report commands that \
         need to be run manually."
    );
    assert_no_retry_invitation(&note);
    // A check cannot allow it; being called is never an option.
    expeditor.record_precheck(bash, Availability::Available);
    assert_eq!(expeditor.availability(bash), Some(not_allowed.clone()));
    assert_eq!(skip_reason(&expeditor, "Bash"), SkipReason::Unavailable);
    assert_eq!(kind(expeditor.decide(id(&expeditor, "Read"))), "CALL");
    assert_eq!(expeditor.budget().consumed(), 0);

    expeditor.allow_only(["Grep", "Read", "Bash"]);
    assert_eq!(expeditor.availability(bash), Some(Availability::Available));
    assert_eq!(kind(expeditor.decide(bash)), "CALL");
}

#[test]
fn r10_1_a_tool_discovered_after_the_allowed_tools_list_is_not_called() {
    let expeditor = expeditor();
    expeditor.allow_only(["Grep", "Read"]);
    let not_allowed = Availability::Unavailable("not in the allowed-tools list".into());
    let lint = expeditor
        .discover(
            ToolSpec::new("Lint")
                .provides("static checks")
                .fallback("ask"),
        )
        .unwrap();
    assert_eq!(expeditor.availability(lint), Some(not_allowed.clone()));
    assert_eq!(kind(expeditor.decide(lint)), "SKIP");
    // The same through a tool named at run time for the first time.
    let decision = expeditor.decide_named("Format").unwrap();
    assert_eq!(decision.kind(), "SKIP");
    drop(decision);
    assert_eq!(
        expeditor.availability(id(&expeditor, "Format")),
        Some(not_allowed)
    );
    assert_eq!(expeditor.offer().offered, ["Grep", "Read"]);
}

#[test]
fn r10_1_checks_are_advisory_a_degraded_tool_is_still_called() {
    let expeditor = expeditor();
    let grep = id(&expeditor, "Grep");
    expeditor.record_precheck(grep, Availability::Degraded("slow index".into()));
    assert_eq!(kind(expeditor.decide(grep)), "CALL");
    succeed(&expeditor, "Grep");
}

#[test]
fn r10_2_degraded_lowers_that_tools_threshold_by_one() {
    let expeditor = expeditor();
    let grep = id(&expeditor, "Grep");
    expeditor.record_precheck(grep, Availability::Degraded("slow index".into()));
    assert!(!fail(&expeditor, "Grep", "timeout").opened);
    let recorded = fail(&expeditor, "Grep", "timeout");
    assert!(
        recorded.opened,
        "2 failures open a DEGRADED tool (threshold 3 - 1)"
    );
    assert_eq!(recorded.consecutive_failures, 2);
    // Only that tool's: Read still takes 3.
    assert!(!fail_all(&expeditor, "Read", &["no such file", "no such file"]).opened);
    assert!(fail(&expeditor, "Read", "no such file").opened);
}

#[test]
fn r10_2_degraded_never_lowers_a_threshold_below_one() {
    let map = CapabilityMap::new()
        .tool(common::websearch_spec().threshold(1))
        .tool(common::bash_spec().threshold(2));
    let expeditor = expeditor_with(map, Policy::default(), &clock());
    let web = id(&expeditor, "WebSearch");
    let bash = id(&expeditor, "Bash");
    expeditor.record_precheck(web, Availability::Degraded("rate limited".into()));
    expeditor.record_precheck(bash, Availability::Degraded("slow disk".into()));
    // Threshold 1 stays 1: the tool is still called, and opens on its first failure.
    assert_eq!(kind(expeditor.decide(web)), "CALL");
    let recorded = fail(&expeditor, "WebSearch", "connection refused");
    assert!(recorded.opened);
    assert_eq!(recorded.consecutive_failures, 1);
    // Threshold 2 becomes 1.
    assert!(fail(&expeditor, "Bash", "permission denied").opened);
}

#[test]
fn r10_2_unavailable_routes_to_an_alternative_without_a_call_or_a_charge() {
    let expeditor = expeditor();
    let grep = id(&expeditor, "Grep");
    expeditor.record_precheck(grep, unavailable());
    for _ in 0..10 {
        let Decision::Skip(skip) = expeditor.decide(grep) else {
            panic!("an UNAVAILABLE tool is not called")
        };
        assert_eq!(skip.reason(), SkipReason::Unavailable);
        let Route::Alternative(alt) = skip.route() else {
            panic!("Grep's work goes to its alternative")
        };
        assert_eq!(alt.name(), "Bash");
    }
    let Decision::Skip(skip) = expeditor.decide(grep) else {
        unreachable!()
    };
    let note = skip.for_model().to_string();
    assert_eq!(
        note,
        "Grep is unavailable: the pre-call check says UNAVAILABLE — MCP server not responding. \
         Do not call Grep. Instead: use Bash — rg or grep command (degradation: loses Grep's \
         built-in output formatting)."
    );
    assert_no_retry_invitation(&note);
    let budget = expeditor.budget();
    assert_eq!(budget.consumed(), 0, "no budget charged");
    assert!(budget.ledger().is_empty());
    let breaker = expeditor.breaker(grep).unwrap();
    assert_eq!(
        (breaker.state(), breaker.consecutive_failures()),
        (CircuitState::Closed, 0),
        "the breaker is untouched"
    );
    // Available again: called again.
    expeditor.record_precheck(grep, Availability::Available);
    assert_eq!(kind(expeditor.decide(grep)), "CALL");
}

#[test]
fn r10_2_routing_passes_over_an_unavailable_alternative() {
    let expeditor = expeditor();
    open3(&expeditor, "Grep");
    assert_eq!(
        routes(&expeditor, "Grep"),
        ["alternative:Bash", "alternative:Read", "fallback", "scope"]
    );
    expeditor.record_precheck(id(&expeditor, "Bash"), unavailable());
    assert_eq!(
        routes(&expeditor, "Grep"),
        ["alternative:Read", "fallback", "scope"]
    );
    expeditor.record_precheck(id(&expeditor, "Read"), unavailable());
    assert_eq!(routes(&expeditor, "Grep"), ["fallback", "scope"]);
}

#[test]
fn r10_2_a_check_never_stops_an_open_tool_from_reaching_half_open() {
    let expeditor = expeditor();
    let bash = id(&expeditor, "Bash");
    open3(&expeditor, "Bash");
    expeditor.record_precheck(bash, unavailable());
    assert_eq!(skip_reason(&expeditor, "Bash"), SkipReason::Open);
    for _ in 0..3 {
        expeditor.advance_step();
    }
    let Decision::Probe(probe) = expeditor.decide(bash) else {
        panic!("the probe is due 3 steps after opening, UNAVAILABLE or not")
    };
    assert_eq!(expeditor.state(bash), Some(CircuitState::HalfOpen));
    probe.success();
    assert_eq!(expeditor.state(bash), Some(CircuitState::Closed));
    // It answered: the old check no longer holds it back; it is checked again.
    assert!(expeditor.precheck_due(bash));
    assert_eq!(expeditor.availability(bash), Some(Availability::Available));
    assert_eq!(kind(expeditor.decide(bash)), "CALL");
}

#[test]
fn r10_3_checks_are_cached_and_checked_again_after_a_systemic_event_and_after_recovery() {
    let map = CapabilityMap::new()
        .tool(common::websearch_spec())
        .tool(
            ToolSpec::new("WebFetch")
                .provides("fetch a page")
                .fallback("ask the user to paste the page"),
        )
        .tool(common::read_spec())
        .tool(common::bash_spec());
    let expeditor = expeditor_with(map, Policy::default(), &clock());
    let tools: Vec<ToolId> = expeditor.tools().collect();
    let read = id(&expeditor, "Read");
    for &tool in &tools {
        expeditor.record_precheck(tool, Availability::Available);
    }
    expeditor.record_precheck(read, Availability::Degraded("slow disk".into()));
    assert!(tools.iter().all(|&t| !expeditor.precheck_due(t)));

    for tool in ["WebSearch", "WebFetch"] {
        fail_all(
            &expeditor,
            tool,
            &[
                "connection refused",
                "connection refused",
                "connection refused",
            ],
        );
    }
    assert!(expeditor.systemic_event().is_some());
    assert!(
        tools.iter().all(|&t| expeditor.precheck_due(t)),
        "every check is due again after a systemic event"
    );
    assert_eq!(
        expeditor.availability(read),
        Some(Availability::Available),
        "the DEGRADED result is forgotten"
    );
    for &tool in &tools {
        expeditor.record_precheck(tool, Availability::Available);
    }
    expeditor.confirm_recovery();
    assert!(
        tools.iter().all(|&t| expeditor.precheck_due(t)),
        "and again once recovery is confirmed"
    );

    for &tool in &tools {
        expeditor.record_precheck(tool, Availability::Available);
    }
    expeditor.invalidate_prechecks();
    assert!(tools.iter().all(|&t| expeditor.precheck_due(t)));
}

#[test]
fn r10_3_a_change_of_availability_is_an_event_a_repeat_is_not() {
    let (expeditor, log) = logged();
    let grep = id(&expeditor, "Grep");
    expeditor.record_precheck(grep, Availability::Available);
    assert!(log.events().is_empty(), "AVAILABLE was assumed already");
    expeditor.record_precheck(grep, unavailable());
    expeditor.record_precheck(grep, unavailable());
    expeditor.record_precheck(grep, Availability::Available);
    let events = log.events();
    assert_eq!(
        events,
        [
            Event::AvailabilityChanged {
                tool: "Grep".into(),
                availability: "UNAVAILABLE — MCP server not responding".into(),
            },
            Event::AvailabilityChanged {
                tool: "Grep".into(),
                availability: "AVAILABLE".into(),
            },
        ]
    );
    assert_eq!(
        events[0].to_string(),
        "Pre-call check for Grep: UNAVAILABLE — MCP server not responding"
    );
}

#[test]
fn r10_the_tools_offered_to_a_model_leave_out_open_and_unavailable_ones_with_why() {
    let expeditor = expeditor();
    open3(&expeditor, "Grep");
    expeditor.record_precheck(id(&expeditor, "Bash"), unavailable());
    // WebSearch is HALF-OPEN: it may be called (its probe).
    open3(&expeditor, "WebSearch");
    for _ in 0..3 {
        expeditor.advance_step();
    }
    let Decision::Probe(probe) = expeditor.decide(id(&expeditor, "WebSearch")) else {
        panic!("probe due")
    };
    drop(probe);
    assert_eq!(
        expeditor.state(id(&expeditor, "WebSearch")),
        Some(CircuitState::HalfOpen)
    );

    let offer = expeditor.offer();
    assert_eq!(offer.offered, ["Read", "Write", "Edit", "WebSearch"]);
    assert_eq!(
        offer
            .withheld
            .iter()
            .map(|n| n.tool.as_deref().unwrap())
            .collect::<Vec<_>>(),
        ["Grep", "Bash"]
    );
    let text = offer.to_string();
    assert_eq!(
        text,
        "Tools you may call: Read, Write, Edit, WebSearch\n\
         Do not call:\n  \
         - Grep is unavailable: circuit OPEN after 3 consecutive failures (last error: \
         \"timeout after 120s\"). Do not call Grep. Instead: use Read — read suspected files \
         directly (degradation: requires knowing which files to check; no broad search).\n  \
         - Bash is unavailable: the pre-call check says UNAVAILABLE — MCP server not \
         responding. Do not call Bash. Instead: no other tool can do this — report commands \
         that need to be run manually."
    );
    assert_no_retry_invitation(&text);
    let json = serde_json::to_string(&offer).unwrap();
    assert_eq!(serde_json::from_str::<ToolOffer>(&json).unwrap(), offer);

    // Not on the allowed-tools list: not offered either.
    expeditor.allow_only(["Read", "Grep", "Bash", "WebSearch"]);
    let offer = expeditor.offer();
    assert_eq!(offer.offered, ["Read", "WebSearch"]);
    assert_eq!(offer.withheld.len(), 4);
}

#[test]
fn r10_while_paused_no_tool_is_offered() {
    let expeditor = expeditor_with(seed_map(), common::policy_with_budget(3), &clock());
    open3(&expeditor, "Bash");
    let offer = expeditor.offer();
    assert!(offer.offered.is_empty());
    assert_eq!(
        offer.to_string(),
        "Tools you may call: none\nDo not call:\n  - All tools are paused: failure budget \
         exhausted (3 / 3 failures this cycle). Do not call any tool. Instead: stop and report \
         the completed and incomplete work to the user."
    );
}
