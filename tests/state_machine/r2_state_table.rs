//! R2: the state table — per-tool breaker state, the declared policy and its per-tool
//! overrides, the source document's table layout, tools discovered at run time.

#[path = "../common/mod.rs"]
mod common;

use std::time::Duration;

use agent_circuit_breaker::{
    AlternativeSpec, CapabilityMap, CircuitState, Decision, Degradation, Expeditor, Policy, Route,
    ToolSpec,
    capability::MapError,
    event::Event,
    policy::{PolicyError, PolicyProblem, ProbeUnit},
    report::StateTable,
};
use common::{
    EventLog, SEED_TOOLS, T0, assert_golden, clock, expeditor_with, fail, fail_all, id, kind,
    seed_expeditor, seed_map, succeed,
};

/// The source document's story up to the budget block: two healthy tools, Bash opened by three
/// failures, one WebSearch failure. Wall time moves with the steps.
fn seed_story() -> (Expeditor, agent_circuit_breaker::clock::ManualClock) {
    let (expeditor, clock) = seed_expeditor();
    expeditor.advance_step(); // 1
    succeed(&expeditor, "Grep");
    clock.advance(Duration::from_secs(10));
    expeditor.advance_step(); // 2
    succeed(&expeditor, "Read");
    expeditor.advance_step(); // 3
    clock.advance(Duration::from_secs(7));
    fail(&expeditor, "Bash", "permission denied");
    clock.advance(Duration::from_secs(5));
    fail(&expeditor, "Bash", "command not found");
    expeditor.advance_step(); // 4
    clock.advance(Duration::from_secs(120));
    fail(&expeditor, "Bash", "timeout after 120s");
    expeditor.advance_step(); // 5
    clock.advance(Duration::from_secs(35));
    fail(&expeditor, "WebSearch", "connection refused");
    (expeditor, clock)
}

#[test]
fn r2_1_breaker_records_state_failures_last_failure_and_last_success() {
    let (expeditor, _clock) = seed_story();
    let bash = expeditor.breaker(id(&expeditor, "Bash")).unwrap();
    assert_eq!(bash.state(), CircuitState::Open);
    assert_eq!(bash.consecutive_failures(), 3);
    let last = bash.last_failure().expect("Bash failed");
    assert_eq!(last.at.to_string(), "2026-11-30T07:37:25Z");
    assert_eq!(last.step, 4);
    assert_eq!(last.failure.message(), "timeout after 120s");
    assert_eq!(bash.last_success(), None);
    assert_eq!(bash.opened_at_step(), Some(4));
    assert_eq!(bash.total_failures(), 3);
    let messages: Vec<&str> = bash.recent_failures().iter().map(|f| f.message()).collect();
    assert_eq!(
        messages,
        [
            "permission denied",
            "command not found",
            "timeout after 120s"
        ]
    );

    let grep = expeditor.breaker(id(&expeditor, "Grep")).unwrap();
    assert_eq!(grep.state(), CircuitState::Closed);
    assert_eq!(grep.consecutive_failures(), 0);
    assert_eq!(grep.last_failure(), None);
    let success = grep.last_success().expect("Grep succeeded");
    assert_eq!((success.at, success.step), (T0, 1));

    let web = expeditor.breaker(id(&expeditor, "WebSearch")).unwrap();
    assert_eq!(
        (web.state(), web.consecutive_failures()),
        (CircuitState::Closed, 1)
    );
    assert_eq!(
        expeditor.state(id(&expeditor, "Bash")),
        Some(CircuitState::Open)
    );
}

#[test]
fn r2_1_last_success_is_timed_at_the_first_success_of_each_step() {
    let (expeditor, clock) = seed_expeditor();
    let grep = id(&expeditor, "Grep");
    succeed(&expeditor, "Grep");
    clock.advance(Duration::from_secs(30));
    succeed(&expeditor, "Grep");
    let mark = *expeditor.breaker(grep).unwrap().last_success().unwrap();
    assert_eq!(
        (mark.at, mark.step),
        (T0, 0),
        "same step: first success kept"
    );
    expeditor.advance_step();
    succeed(&expeditor, "Grep");
    let mark = *expeditor.breaker(grep).unwrap().last_success().unwrap();
    assert_eq!(
        (mark.at, mark.step),
        (T0.plus(Duration::from_secs(30)), 1),
        "a new step re-times the success"
    );
}

#[test]
fn r2_2_policy_defaults_are_the_source_documents_3_5_3() {
    let policy = Policy::default();
    assert_eq!(
        (policy.threshold(), policy.budget(), policy.probe_every()),
        (3, 5, 3)
    );
    assert_eq!(policy.probe_unit(), ProbeUnit::Attempts);
    assert_eq!(
        (
            Policy::DEFAULT_THRESHOLD,
            Policy::DEFAULT_BUDGET,
            Policy::DEFAULT_PROBE_EVERY
        ),
        (3, 5, 3)
    );
    assert_eq!(Policy::builder().build(), Ok(policy));
    let (expeditor, _clock) = seed_expeditor();
    assert_eq!(expeditor.policy(), policy);
    assert_eq!(expeditor.budget().limit(), 5);
}

#[test]
fn r2_2_zero_values_are_errors_listing_every_problem() {
    let error = Policy::builder()
        .threshold(0)
        .budget(0)
        .probe_every(0)
        .build()
        .expect_err("all three are zero");
    assert_eq!(
        error,
        PolicyError(vec![
            PolicyProblem::ZeroThreshold,
            PolicyProblem::ZeroBudget,
            PolicyProblem::ZeroProbeInterval
        ])
    );
    assert_eq!(
        error.to_string(),
        "invalid policy: threshold must be at least 1 consecutive failure; budget must be at \
         least 1 failure per cycle; probe_every must be at least 1"
    );
    assert_eq!(
        Policy::builder().budget(0).build(),
        Err(PolicyError(vec![PolicyProblem::ZeroBudget]))
    );
    let ok = Policy::builder()
        .threshold(1)
        .budget(1)
        .probe_every(1)
        .probe_unit(ProbeUnit::Steps)
        .build()
        .expect("ones are valid");
    assert_eq!((ok.threshold(), ok.budget(), ok.probe_every()), (1, 1, 1));
    assert_eq!(ok.probe_unit(), ProbeUnit::Steps);
}

#[test]
fn r2_2_policy_serde_rejects_invalid_values() {
    let error = serde_json::from_str::<Policy>(r#"{"threshold": 0, "budget": 0}"#)
        .expect_err("zero threshold and budget");
    let message = error.to_string();
    assert!(
        message.contains("threshold must be at least 1") && message.contains("budget must be"),
        "{message}"
    );
    assert!(serde_json::from_str::<Policy>(r#"{"probe_every": 0}"#).is_err());
    assert!(serde_json::from_str::<Policy>(r#"{"treshold": 2}"#).is_err());

    let partial: Policy = serde_json::from_str(r#"{"threshold": 2, "probe_unit": "steps"}"#)
        .expect("missing fields take the defaults");
    assert_eq!(
        (partial.threshold(), partial.budget(), partial.probe_every()),
        (2, 5, 3)
    );
    assert_eq!(partial.probe_unit(), ProbeUnit::Steps);
    assert_eq!(
        serde_json::to_string(&Policy::default()).unwrap(),
        r#"{"threshold":3,"budget":5,"probe_every":3,"probe_unit":"attempts","cascade_window":2,"backoff_cap":20,"cascade_detection":true,"jitter":20}"#
    );
}

#[test]
fn r2_2_policy_threshold_applies_to_every_tool() {
    let clock = clock();
    let policy = Policy::builder().threshold(2).build().unwrap();
    let expeditor = expeditor_with(seed_map(), policy, &clock);
    assert!(!fail(&expeditor, "Grep", "a").opened);
    assert!(fail(&expeditor, "Grep", "b").opened);
    assert!(!fail(&expeditor, "Read", "a").opened);
    assert!(fail(&expeditor, "Read", "b").opened);
}

#[test]
fn r2_2_per_tool_threshold_override_takes_effect() {
    let clock = clock();
    let map = common::seed_map_as_written()
        .tool(common::edit_spec().threshold(5))
        .tool(
            ToolSpec::new("Fetch")
                .provides("http requests")
                .fallback("ask the user to fetch the page")
                .threshold(1),
        );
    let expeditor = expeditor_with(map, Policy::builder().budget(50).build().unwrap(), &clock);
    let recorded = fail(&expeditor, "Fetch", "connection refused");
    assert!(recorded.opened, "threshold 1: one failure opens");
    assert_eq!(recorded.state, CircuitState::Open);
    for n in 1..5 {
        assert!(!fail(&expeditor, "Edit", "disk full").opened, "failure {n}");
    }
    assert!(fail(&expeditor, "Edit", "disk full").opened, "threshold 5");
    // Tools without an override keep the policy's 3.
    let recorded = fail_all(&expeditor, "Grep", &["a", "b", "c"]);
    assert!(recorded.opened);
}

#[test]
fn r2_2_per_tool_probe_every_override_takes_effect() {
    let clock = clock();
    let map = CapabilityMap::new()
        .tool(common::bash_spec().probe_every(1))
        .tool(common::websearch_spec().probe_every(5));
    let expeditor = expeditor_with(map, Policy::builder().budget(50).build().unwrap(), &clock);
    let bash = id(&expeditor, "Bash");
    let web = id(&expeditor, "WebSearch");
    fail_all(&expeditor, "Bash", &["a", "b", "c"]);
    fail_all(&expeditor, "WebSearch", &["a", "b", "c"]);
    assert_eq!(kind(expeditor.decide(bash)), "PROBE", "probe_every 1");
    let kinds: Vec<&str> = (0..5).map(|_| kind(expeditor.decide(web))).collect();
    assert_eq!(
        kinds,
        ["SKIP", "SKIP", "SKIP", "SKIP", "PROBE"],
        "probe_every 5"
    );
}

#[test]
fn r2_3_initial_state_table_is_the_source_documents_exactly() {
    let (expeditor, _clock) = seed_expeditor();
    let table = expeditor.state_table();
    let names: Vec<&str> = table.rows.iter().map(|r| r.tool.as_str()).collect();
    assert_eq!(names, SEED_TOOLS);
    assert_golden("seed_state_table.txt", &table.to_string());
}

#[test]
fn r2_3_state_table_after_failures() {
    let (expeditor, _clock) = seed_story();
    let table = expeditor.state_table();
    assert_eq!(table.budget.consumed, 4);
    assert_golden("r2_3_state_table_after_failures.txt", &table.to_string());
}

#[test]
fn r2_3_state_table_shows_half_open() {
    let (expeditor, _clock) = seed_story();
    let bash = id(&expeditor, "Bash");
    assert_eq!(kind(expeditor.decide(bash)), "SKIP");
    assert_eq!(kind(expeditor.decide(bash)), "SKIP");
    let Decision::Probe(probe) = expeditor.decide(bash) else {
        panic!("third attempt probes")
    };
    let text = expeditor.state_table().to_string();
    assert!(
        text.contains("| Bash       | HALF-OPEN | 3                 |"),
        "{text}"
    );
    probe.success();
    let text = expeditor.state_table().to_string();
    assert!(
        text.contains("| Bash       | CLOSED | 0                 |"),
        "{text}"
    );
}

#[test]
fn r2_3_state_table_is_data_too() {
    let (expeditor, _clock) = seed_story();
    let table = expeditor.state_table();
    let json = serde_json::to_string(&table).unwrap();
    let back: StateTable = serde_json::from_str(&json).unwrap();
    assert_eq!(back, table);
    assert_eq!(back.to_string(), table.to_string());
    let bash = &back.rows[1];
    assert_eq!(bash.state, CircuitState::Open);
    assert!(json.contains(r#""state":"OPEN""#), "{json}");
}

#[test]
fn r2_3_multiline_error_message_keeps_the_table_rectangular() {
    let (expeditor, _clock) = seed_expeditor();
    fail(
        &expeditor,
        "Bash",
        "error[E0425]: cannot find value `x`\n --> src/main.rs:2:5",
    );
    let text = expeditor.state_table().to_string();
    let lines: Vec<&str> = text.lines().skip(1).take_while(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 10, "3 rules, a header and 6 rows:\n{text}");
    let width = lines[0].chars().count();
    for line in &lines {
        assert!(
            (line.starts_with('|') || line.starts_with('+')) && line.chars().count() == width,
            "ragged table line {line:?} in\n{text}"
        );
    }
}

#[test]
fn r2_4_decide_named_registers_an_unknown_tool_closed() {
    let log = EventLog::default();
    let clock = clock();
    let expeditor = Expeditor::builder(seed_map())
        .clock(clock.clone())
        .observer(log.observer())
        .build()
        .unwrap();
    assert_eq!(expeditor.tool("mcp__github__search_code"), None);
    let decision = expeditor
        .decide_named("mcp__github__search_code")
        .expect("a new name is registered");
    assert_eq!(kind(decision), "CALL");
    let found = expeditor
        .tool("mcp__github__search_code")
        .expect("registered");
    assert_eq!(found.index(), 6);
    assert_eq!(expeditor.state(found), Some(CircuitState::Closed));
    assert_eq!(
        log.events(),
        [Event::ToolDiscovered {
            tool: "mcp__github__search_code".into()
        }]
    );
    // The second use finds it: no second registration.
    assert_eq!(
        kind(expeditor.decide_named("mcp__github__search_code").unwrap()),
        "CALL"
    );
    assert_eq!(log.events().len(), 1);
    assert_eq!(expeditor.tools().count(), 7);
    let map = expeditor.capability_map();
    assert_eq!(map.tools().len(), 7);
    assert_eq!(
        map.get("mcp__github__search_code"),
        Some(&ToolSpec::discovered("mcp__github__search_code"))
    );
    // The table grows by a row; its tool column widens to fit.
    fail(&expeditor, "mcp__github__search_code", "connection refused");
    assert_golden(
        "r2_4_state_table_with_discovered_tool.txt",
        &expeditor.state_table().to_string(),
    );
}

#[test]
fn r2_4_decide_named_with_an_empty_name_is_an_error() {
    let (expeditor, _clock) = seed_expeditor();
    let error = expeditor.decide_named("").expect_err("empty name");
    assert_eq!(error.problems(), [MapError::EmptyName { index: 6 }]);
    assert_eq!(expeditor.tools().count(), 6);
}

#[test]
fn r2_4_discover_validates_the_spec() {
    let log = EventLog::default();
    let expeditor = Expeditor::builder(seed_map())
        .observer(log.observer())
        .build()
        .unwrap();
    let bad = ToolSpec::new("Fetch")
        .provides("http requests")
        .alternative(AlternativeSpec::new("WebSerch").method("search for the page"))
        .fallback("ask the user to fetch the page");
    let error = expeditor.discover(bad).expect_err("unknown alternative");
    assert_eq!(
        error.problems(),
        [MapError::UnknownAlternative {
            tool: "Fetch".into(),
            alternative: "WebSerch".into(),
            suggestion: Some("WebSearch".into()),
        }]
    );
    assert_eq!(expeditor.tool("Fetch"), None, "nothing registered");
    assert_eq!(expeditor.state_table().rows.len(), 6);
    assert!(log.events().is_empty());

    let no_fallback = ToolSpec::new("Fetch").provides("http requests");
    assert_eq!(
        expeditor.discover(no_fallback).unwrap_err().problems(),
        [MapError::MissingFallback {
            tool: "Fetch".into()
        }]
    );

    let good = ToolSpec::new("Fetch")
        .provides("http requests")
        .alternative(
            AlternativeSpec::new("WebSearch")
                .method("search for the page")
                .degradation(Degradation::high("snippets only")),
        )
        .fallback("ask the user to fetch the page");
    let fetch = expeditor.discover(good.clone()).expect("valid spec");
    assert_eq!(
        expeditor.discover(good).unwrap(),
        fetch,
        "same spec, same id"
    );
    assert_eq!(log.kinds(), ["tool_discovered"]);
    // A different spec under a known name is refused.
    let error = expeditor
        .discover(ToolSpec::discovered("Bash"))
        .expect_err("Bash is declared with another spec");
    assert_eq!(
        error.problems(),
        [MapError::DuplicateTool {
            tool: "Bash".into(),
            first: 1,
            index: 7
        }]
    );
    // The discovered tool routes to its alternative like a declared one.
    fail_all(&expeditor, "Fetch", &["a", "b", "c"]);
    let Decision::Skip(skip) = expeditor.decide(fetch) else {
        panic!("Fetch is OPEN")
    };
    let Route::Alternative(route) = skip.route() else {
        panic!("WebSearch is CLOSED")
    };
    assert_eq!(route.tool(), id(&expeditor, "WebSearch"));
}

#[test]
fn r2_4_discovered_tool_has_a_fallback_and_routes_to_it() {
    let (expeditor, _clock) = seed_expeditor();
    for message in ["a", "b", "c"] {
        match expeditor.decide_named("lint").unwrap() {
            Decision::Call(ticket) => {
                let _ = ticket.failure(message);
            }
            other => panic!("expected CALL, got {}", other.kind()),
        }
    }
    let Decision::Skip(skip) = expeditor.decide_named("lint").unwrap() else {
        panic!("lint is OPEN")
    };
    assert_eq!(
        skip.route(),
        Route::Fallback("report that this tool could not be used and what it was needed for")
    );
}

#[test]
fn r2_4_discover_suggests_the_same_name_every_time() {
    let map = || {
        CapabilityMap::new()
            .tool(ToolSpec::new("Grep").provides("search").fallback("ask"))
            .tool(ToolSpec::new("Greg").provides("greeting").fallback("wave"))
    };
    let spec = ToolSpec::new("Find")
        .provides("find")
        .alternative(AlternativeSpec::new("Gre"))
        .fallback("ask");
    let by_map = map()
        .tool(spec.clone())
        .validate()
        .expect_err("Gre is unknown");
    let mut suggestions = std::collections::BTreeSet::new();
    for _ in 0..64 {
        let expeditor = Expeditor::new(map()).unwrap();
        let error = expeditor
            .discover(spec.clone())
            .expect_err("Gre is unknown");
        assert_eq!(error.problems().len(), 1);
        suggestions.insert(error.problems()[0].to_string());
    }
    assert_eq!(
        suggestions.into_iter().collect::<Vec<_>>(),
        [by_map.problems()[0].to_string()],
        "the same mistake must get the same suggestion"
    );
}

#[test]
fn r2_3_golden_diff_marks_changed_lines_and_trailing_spaces() {
    let diff = common::line_diff("Tool\nCLOSED\nbudget\n", "Tool\nOPEN \nbudget");
    assert_eq!(
        diff,
        "    1 | Tool\n\
         -   2 | CLOSED\n\
         -   3 | budget\n\
         +   2 | OPEN·\n\
         +   3 | budget⏎\n"
    );
}
