//! R4: routing when a circuit is OPEN — low alternative, high alternative, manual fallback,
//! scope reduction; OPEN alternatives passed over; the route taken travels with the result.

#[path = "../common/mod.rs"]
mod common;

use agent_circuit_breaker::{
    AlternativeSpec, CapabilityMap, Decision, Degradation, Expeditor, Policy, Route, SkipReason,
    ToolSpec,
    capability::Severity,
    expeditor::ToolId,
    policy::ProbeUnit,
    route::{RouteKind, RouteTaken},
};
use common::{SEED_TOOLS, clock, expeditor_with, id, kind, open3, seed_map};

/// The source document's map with room in the budget to open several tools. Probes are counted in
/// steps and no step passes, so asking about an OPEN tool again and again never probes it. Several
/// circuits open in one step here on purpose, so cascade detection (R9) is off: routing alone is
/// under test.
fn roomy() -> Expeditor {
    let policy = Policy::builder()
        .budget(100)
        .probe_unit(ProbeUnit::Steps)
        .cascade_detection(false)
        .build()
        .unwrap();
    expeditor_with(seed_map(), policy, &clock())
}

/// Each route of a skipped tool as `alternative:<name>`, `fallback:<text>` or `scope`.
fn describe(expeditor: &Expeditor, tool: &str) -> Vec<String> {
    let Decision::Skip(skip) = expeditor.decide(id(expeditor, tool)) else {
        panic!("{tool} should be skipped")
    };
    assert_eq!(
        skip.route(),
        skip.routes().next().unwrap(),
        "route() is the best"
    );
    skip.routes()
        .map(|route| match route {
            Route::Alternative(alt) => format!("alternative:{}", alt.name()),
            Route::Fallback(text) => format!("fallback:{text}"),
            Route::ScopeReduction => "scope".to_owned(),
        })
        .collect()
}

#[test]
fn r4_1_routes_come_low_alternative_high_alternative_fallback_scope_reduction() {
    let expeditor = roomy();
    open3(&expeditor, "Grep");
    let Decision::Skip(skip) = expeditor.decide(id(&expeditor, "Grep")) else {
        panic!("Grep is OPEN")
    };
    let routes: Vec<Route<'_>> = skip.routes().collect();
    assert_eq!(routes.len(), 4, "{routes:?}");
    let Route::Alternative(low) = routes[0] else {
        panic!("{routes:?}")
    };
    assert_eq!(low.name(), "Bash");
    assert_eq!(low.tool(), id(&expeditor, "Bash"));
    assert_eq!(low.method(), "rg or grep command");
    assert_eq!(
        low.degradation().to_string(),
        "loses Grep's built-in output formatting"
    );
    let Route::Alternative(high) = routes[1] else {
        panic!("{routes:?}")
    };
    assert_eq!(high.name(), "Read");
    assert_eq!(high.method(), "read suspected files directly");
    assert_eq!(
        routes[2],
        Route::Fallback("ask the user which files to examine")
    );
    assert_eq!(routes[3], Route::ScopeReduction);
    let severities: Vec<Severity> = routes.iter().map(Route::severity).collect();
    assert_eq!(
        severities,
        [
            Severity::Low,
            Severity::High,
            Severity::High,
            Severity::High
        ]
    );
}

#[test]
fn r4_1_open_alternatives_are_passed_over_so_routes_chain() {
    let expeditor = roomy();
    open3(&expeditor, "Grep");
    assert_eq!(
        describe(&expeditor, "Grep"),
        [
            "alternative:Bash",
            "alternative:Read",
            "fallback:ask the user which files to examine",
            "scope"
        ]
    );
    open3(&expeditor, "Bash");
    assert_eq!(
        describe(&expeditor, "Grep"),
        [
            "alternative:Read",
            "fallback:ask the user which files to examine",
            "scope"
        ]
    );
    open3(&expeditor, "Read");
    assert_eq!(
        describe(&expeditor, "Grep"),
        ["fallback:ask the user which files to examine", "scope"]
    );
}

#[test]
fn r4_1_the_executor_follows_an_alternative_by_asking_about_it() {
    let expeditor = roomy();
    open3(&expeditor, "Read");
    let Decision::Skip(skip) = expeditor.decide(id(&expeditor, "Read")) else {
        panic!("Read is OPEN")
    };
    let Route::Alternative(route) = skip.route() else {
        panic!("Bash is CLOSED")
    };
    // The route names a tool; the alternative's own breaker decides its call.
    let Decision::Call(ticket) = expeditor.decide(route.tool()) else {
        panic!("Bash is CLOSED")
    };
    assert_eq!(ticket.tool_name(), "Bash");
    ticket.success();
}

#[test]
fn r4_2_the_route_taken_carries_its_degradation_and_round_trips_through_serde() {
    let expeditor = roomy();
    open3(&expeditor, "Grep");
    let Decision::Skip(skip) = expeditor.decide(id(&expeditor, "Grep")) else {
        panic!("Grep is OPEN")
    };
    let taken: Vec<RouteTaken> = skip.routes().map(|r| r.taken(skip.tool_name())).collect();
    assert_eq!(
        taken[0],
        RouteTaken {
            from: "Grep".into(),
            kind: RouteKind::Alternative,
            to: Some("Bash".into()),
            method: Some("rg or grep command".into()),
            degradation: Some("loses Grep's built-in output formatting".into()),
            severity: Severity::Low,
            fallback: None,
        }
    );
    assert_eq!(
        serde_json::to_string(&taken[0]).unwrap(),
        r#"{"from":"Grep","kind":"alternative","to":"Bash","method":"rg or grep command","degradation":"loses Grep's built-in output formatting","severity":"low","fallback":null}"#
    );
    assert_eq!(
        (taken[1].kind, taken[1].severity),
        (RouteKind::Alternative, Severity::High)
    );
    assert_eq!(
        taken[2],
        RouteTaken {
            from: "Grep".into(),
            kind: RouteKind::Fallback,
            to: None,
            method: None,
            degradation: None,
            severity: Severity::High,
            fallback: Some("ask the user which files to examine".into()),
        }
    );
    assert_eq!(taken[3].kind, RouteKind::ScopeReduction);
    for route in &taken {
        let json = serde_json::to_string(route).unwrap();
        let back: RouteTaken = serde_json::from_str(&json).unwrap();
        assert_eq!(&back, route);
    }
    // Rendered the way the source document's routing example reads (step 4).
    let rendered: Vec<String> = taken.iter().map(ToString::to_string).collect();
    assert_eq!(
        rendered,
        [
            "Grep circuit OPEN → Bash (rg or grep command)\n  \
             → Degradation: loses Grep's built-in output formatting\n  → Decision: ACCEPTABLE",
            "Grep circuit OPEN → Read (read suspected files directly)\n  \
             → Degradation: requires knowing which files to check; no broad search\n  \
             → Decision: PARTIAL",
            "Grep circuit OPEN → manual fallback: ask the user which files to examine\n  \
             → Decision: FALLBACK",
            "Grep circuit OPEN → scope reduction\n  \
             → SKIPPED: work that needs Grep — no tools available",
        ]
    );
}

#[test]
fn r4_3_a_tool_without_alternatives_routes_to_its_fallback_then_scope_reduction() {
    let expeditor = roomy();
    open3(&expeditor, "Bash");
    assert_eq!(
        describe(&expeditor, "Bash"),
        [
            "fallback:report commands that need to be run manually",
            "scope"
        ]
    );
    open3(&expeditor, "WebSearch");
    assert_eq!(
        describe(&expeditor, "WebSearch"),
        [
            "fallback:state what information is needed; ask user to provide it",
            "scope"
        ]
    );
}

#[test]
fn r4_3_an_unknown_tool_id_is_skipped_to_scope_reduction_never_silently() {
    let expeditor = roomy();
    let nobody = ToolId::from_index(42);
    assert_eq!(expeditor.tool_name(nobody), None);
    let Decision::Skip(skip) = expeditor.decide(nobody) else {
        panic!("an unknown id is skipped")
    };
    assert_eq!(skip.reason(), SkipReason::UnknownTool);
    assert_eq!(skip.tool(), nobody);
    assert_eq!(skip.route(), Route::ScopeReduction);
    assert_eq!(skip.routes().collect::<Vec<_>>(), [Route::ScopeReduction]);
}

#[test]
fn r4_3_every_skip_names_a_route() {
    let expeditor = roomy();
    for name in SEED_TOOLS {
        open3(&expeditor, name);
    }
    for name in SEED_TOOLS {
        let Decision::Skip(skip) = expeditor.decide(id(&expeditor, name)) else {
            panic!("{name} is OPEN")
        };
        let routes: Vec<Route<'_>> = skip.routes().collect();
        // With everything OPEN only the manual routes are left, and they always are.
        assert_eq!(routes.len(), 2, "{name}: {routes:?}");
        assert!(matches!(routes[0], Route::Fallback(text) if !text.is_empty()));
        assert_eq!(routes[1], Route::ScopeReduction);
    }
    assert_eq!(kind(expeditor.decide(id(&expeditor, "Grep"))), "SKIP");
}

/// R4.1, R1.4: a map that was not checked at run time — the generated maps, checked
/// at compile time, are built this way — may still hold an alternative naming no tool. It keeps
/// its place and is never routed to; the alternatives after it are routed to the tools they
/// name, never shifted onto another alternative's tool, and nothing panics.
#[test]
fn r4_1_an_alternative_naming_no_tool_can_not_misroute() {
    let map = CapabilityMap::new()
        .tool(
            ToolSpec::new("Grep")
                .provides("content search")
                .alternative(
                    AlternativeSpec::new("Ghost")
                        .method("a tool that was never registered")
                        .degradation(Degradation::low("none")),
                )
                .alternative(
                    AlternativeSpec::new("Read")
                        .method("read suspected files directly")
                        .degradation(Degradation::low("no broad search")),
                )
                .alternative(
                    AlternativeSpec::new("Bash")
                        .method("rg")
                        .degradation(Degradation::high("loses formatting")),
                )
                .fallback("ask the user"),
        )
        .tool(
            ToolSpec::new("Read")
                .provides("file content")
                .fallback("ask the user to paste it"),
        )
        .tool(
            ToolSpec::new("Bash")
                .provides("commands")
                .fallback("report the commands"),
        );
    assert!(map.validate().is_err(), "a run-time map is checked");
    let expeditor = agent_circuit_breaker::__private_v0_1::expeditor(
        Expeditor::builder(map).policy(Policy::default()),
    );
    let grep = id(&expeditor, "Grep");
    open3(&expeditor, "Grep");
    let Decision::Skip(skip) = expeditor.decide(grep) else {
        panic!("Grep is OPEN")
    };
    let routes: Vec<(String, Option<String>)> = skip
        .routes()
        .map(|r| match r {
            Route::Alternative(alt) => (
                alt.name().to_owned(),
                expeditor.tool_name(alt.tool()).map(str::to_owned),
            ),
            Route::Fallback(text) => (format!("fallback: {text}"), None),
            Route::ScopeReduction => ("scope reduction".to_owned(), None),
        })
        .collect();
    assert_eq!(
        routes,
        [
            ("Read".to_owned(), Some("Read".to_owned())),
            ("Bash".to_owned(), Some("Bash".to_owned())),
            ("fallback: ask the user".to_owned(), None),
            ("scope reduction".to_owned(), None),
        ],
        "each alternative routes to the tool it names; the unknown one is passed over"
    );
    // Its note and the offer name the right tool too.
    assert!(skip.for_model().to_string().contains("use Read"));
}
