//! R1: the capability map — declared with builders, checked where it is made, critical vs
//! substitutable tools, degradation severities.

#[path = "../common/mod.rs"]
mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};

use agent_circuit_breaker::{
    AlternativeSpec, CapabilityMap, Decision, Degradation, Expeditor, Route, ToolSpec,
    capability::{
        AlternativeSpecBuilder, MapError, MapErrors, Severity, ToolSpecBuilder, UNKNOWN_DEGRADATION,
    },
};
use common::{
    assert_golden, fail_all, id, open3, policy_with_budget, seed_map, seed_map_as_written,
};

fn names<'a>(tools: impl Iterator<Item = &'a ToolSpec>) -> Vec<&'a str> {
    tools.map(ToolSpec::name).collect()
}

/// The names of every alternative in a SKIP's routes, `fallback` and `scope` for the others.
fn route_names(expeditor: &Expeditor, tool: &str) -> Vec<String> {
    let Decision::Skip(skip) = expeditor.decide(id(expeditor, tool)) else {
        panic!("{tool} should be skipped")
    };
    skip.routes()
        .map(|route| match route {
            Route::Alternative(alt) => alt.name().to_owned(),
            Route::Fallback(_) => "fallback".to_owned(),
            Route::ScopeReduction => "scope".to_owned(),
        })
        .collect()
}

#[test]
fn r1_1_map_built_with_builders_keeps_every_declared_field() {
    let map = seed_map();
    assert_eq!(map.validate(), Ok(()));
    assert_eq!(
        names(map.tools().iter()),
        ["Grep", "Bash", "Read", "Write", "Edit", "WebSearch"]
    );
    let grep = map.get("Grep").expect("Grep declared");
    assert_eq!(grep.name(), "Grep");
    assert_eq!(grep.provides(), "content search across files");
    assert_eq!(grep.fallback(), "ask the user which files to examine");
    let alternatives: Vec<(&str, &str, Option<&str>, Severity)> = grep
        .alternatives()
        .iter()
        .map(|a| {
            (
                a.tool(),
                a.method(),
                a.degradation().text(),
                a.degradation().severity(),
            )
        })
        .collect();
    assert_eq!(
        alternatives,
        [
            (
                "Bash",
                "rg or grep command",
                Some("loses Grep's built-in output formatting"),
                Severity::Low
            ),
            (
                "Read",
                "read suspected files directly",
                Some("requires knowing which files to check; no broad search"),
                Severity::High
            ),
        ]
    );
    assert!(map.get("Bash").expect("declared").alternatives().is_empty());
    assert_eq!(map.get("Nope"), None);
}

#[test]
fn r1_1_map_renders_in_the_source_documents_layout_with_critical_and_substitutable_tools() {
    assert_golden("r1_capability_map.txt", &seed_map().to_string());
}

#[test]
fn r1_1_map_loads_from_the_source_documents_shape_through_serde() {
    let json = r#"{"capability_map": [
        {"tool": "Grep", "provides": "content search across files",
         "alternatives": [
            {"tool": "Bash", "method": "rg or grep command",
             "degradation": "loses Grep's built-in output formatting"},
            {"tool": "Read", "method": "read suspected files directly",
             "degradation": "requires knowing which files to check; no broad search",
             "severity": "high"}],
         "fallback": "ask the user which files to examine"},
        {"tool": "Bash", "provides": "command execution, build tools, git operations",
         "alternatives": [], "fallback": "report commands that need to be run manually"}
    ]}"#;
    let map: CapabilityMap =
        serde_json::from_str(json).expect("the source document's shape parses");
    let built = CapabilityMap::new()
        .tool(common::grep_spec())
        .tool(common::bash_spec());
    assert_eq!(map, built);
    let back: CapabilityMap = serde_json::from_str(&serde_json::to_string(&map).unwrap()).unwrap();
    assert_eq!(back, map);
}

#[test]
fn r1_1_spec_getters_read_what_the_builder_set() {
    let spec: ToolSpec = ToolSpec::new("WebFetch")
        .provides("fetch a web page")
        .alternative(
            AlternativeSpec::new("WebSearch")
                .method("search for the page's title")
                .degradation(Degradation::high("a summary, not the page")),
        )
        .alternatives([
            AlternativeSpec::new("Bash").method("curl"),
            AlternativeSpec::new("Read"),
        ])
        .fallback("ask the user to paste the page")
        .threshold(2)
        .probe_every(4)
        .caches(true)
        .build();
    assert_eq!(spec.name(), "WebFetch");
    assert_eq!(spec.provides(), "fetch a web page");
    assert_eq!(spec.fallback(), "ask the user to paste the page");
    assert_eq!(spec.threshold(), Some(2));
    assert_eq!(spec.probe_every(), Some(4));
    assert!(spec.is_caching());
    assert!(!spec.is_critical());
    let alternatives: Vec<(&str, &str, Option<&str>, Severity)> = spec
        .alternatives()
        .iter()
        .map(|a| {
            (
                a.tool(),
                a.method(),
                a.degradation().text(),
                a.degradation().severity(),
            )
        })
        .collect();
    assert_eq!(
        alternatives,
        [
            (
                "WebSearch",
                "search for the page's title",
                Some("a summary, not the page"),
                Severity::High
            ),
            ("Bash", "curl", None, Severity::Unknown),
            ("Read", "", None, Severity::Unknown),
        ],
        "`alternative` and `alternatives` add in order"
    );

    // What the builder leaves unset.
    let bare = ToolSpec::new("Bare").build();
    assert_eq!(bare.name(), "Bare");
    assert_eq!(bare.provides(), "");
    assert_eq!(bare.fallback(), "");
    assert!(bare.alternatives().is_empty());
    assert_eq!(bare.threshold(), None);
    assert_eq!(bare.probe_every(), None);
    assert!(!bare.is_caching());
    assert!(bare.is_critical());
    let alternative = AlternativeSpec::new("Bash").build();
    assert_eq!(alternative.tool(), "Bash");
    assert_eq!(alternative.method(), "");
    assert_eq!(*alternative.degradation(), Degradation::unknown());

    // A builder can start from a spec, to change part of it.
    let changed = ToolSpecBuilder::from(spec.clone()).threshold(5).build();
    assert_eq!(changed.threshold(), Some(5));
    assert_eq!(changed.alternatives(), spec.alternatives());
    assert_eq!(ToolSpecBuilder::from(spec.clone()).build(), spec);
    let first = spec.alternatives()[0].clone();
    assert_eq!(AlternativeSpecBuilder::from(first.clone()).build(), first);
}

#[test]
fn r1_1_a_builder_and_its_spec_are_interchangeable_where_specs_are_taken() {
    let builder = common::grep_spec();
    let spec: ToolSpec = builder.clone().build();
    assert_eq!(spec, ToolSpec::from(builder.clone()));
    let into: ToolSpec = builder.clone().into();
    assert_eq!(into, spec);

    // CapabilityMap::tool takes either.
    let from_builders = CapabilityMap::new()
        .tool(builder.clone())
        .tool(common::bash_spec())
        .tool(common::read_spec());
    let from_specs = CapabilityMap::new()
        .tool(spec.clone())
        .tool(common::bash_spec().build())
        .tool(common::read_spec().build());
    assert_eq!(from_builders, from_specs);
    assert_eq!(from_builders.get("Grep"), Some(&spec));
    assert_eq!(
        serde_json::to_value(&from_builders).unwrap(),
        serde_json::to_value(&from_specs).unwrap()
    );

    // ToolSpecBuilder::alternative and ::alternatives take either.
    let bash = || AlternativeSpec::new("Bash").method("rg or grep command");
    let read = || {
        AlternativeSpec::new("Read")
            .method("read suspected files directly")
            .degradation(Degradation::high("no broad search"))
    };
    let with_builders = ToolSpec::new("Grep")
        .alternative(bash())
        .alternatives([read()])
        .build();
    let with_specs = ToolSpec::new("Grep")
        .alternative(bash().build())
        .alternatives(vec![read().build()])
        .build();
    let with_into = ToolSpec::new("Grep")
        .alternative(AlternativeSpec::from(bash()))
        .alternatives([AlternativeSpec::from(read())])
        .build();
    assert_eq!(with_builders, with_specs);
    assert_eq!(with_builders, with_into);

    // Expeditor::discover takes either, and sees the same spec.
    let expeditor = Expeditor::new(CapabilityMap::new().tool(common::bash_spec())).unwrap();
    let fetch = || {
        ToolSpec::new("WebFetch")
            .provides("fetch a web page")
            .alternative(AlternativeSpec::new("Bash").method("curl"))
            .fallback("ask the user to paste the page")
    };
    let by_builder = expeditor.discover(fetch()).expect("a valid spec");
    let by_spec = expeditor
        .discover(fetch().build())
        .expect("the same spec again");
    assert_eq!(by_builder, by_spec);
    assert_eq!(expeditor.tools().count(), 2);
    // A builder that differs from the registered spec is refused the same way a spec is.
    let other = || fetch().threshold(1);
    assert_eq!(
        expeditor.discover(other()),
        expeditor.discover(other().build())
    );
    assert!(expeditor.discover(other()).is_err());
}

#[test]
fn r1_2_alternative_without_degradation_reads_unknown_and_is_kept() {
    assert_eq!(
        UNKNOWN_DEGRADATION,
        "unknown — test before relying on this route"
    );
    let alternative = AlternativeSpec::new("Bash")
        .method("cat or head command")
        .build();
    assert_eq!(alternative.degradation().text(), None);
    assert_eq!(alternative.degradation().severity(), Severity::Unknown);
    assert_eq!(
        alternative.degradation().to_string(),
        "unknown — test before relying on this route"
    );
    assert_eq!(Degradation::unknown(), *alternative.degradation());

    let map = CapabilityMap::new()
        .tool(
            ToolSpec::new("Read")
                .provides("file content inspection")
                .alternative(alternative)
                .fallback("ask the user to paste file contents"),
        )
        .tool(common::bash_spec());
    assert_eq!(map.validate(), Ok(()));
    assert_eq!(map.get("Read").unwrap().alternatives().len(), 1);
    assert!(
        map.to_string()
            .contains("degradation: \"unknown — test before relying on this route\""),
        "{map}"
    );

    // Through serde: a missing degradation is unknown, and stays unknown on the way back.
    let json = r#"{"tool": "Bash", "method": "cat or head command"}"#;
    let loaded: AlternativeSpec = serde_json::from_str(json).unwrap();
    assert_eq!(loaded.degradation().severity(), Severity::Unknown);
    let again: AlternativeSpec =
        serde_json::from_str(&serde_json::to_string(&loaded).unwrap()).unwrap();
    assert_eq!(again.degradation().severity(), Severity::Unknown);

    // In routing the alternative is offered, with the unknown degradation spelled out.
    let expeditor = Expeditor::new(map).unwrap();
    fail_all(&expeditor, "Read", &["a", "b", "c"]);
    let Decision::Skip(skip) = expeditor.decide(id(&expeditor, "Read")) else {
        panic!("Read should be skipped")
    };
    let Route::Alternative(route) = skip.route() else {
        panic!("the unknown alternative must be kept as a route")
    };
    assert_eq!(route.name(), "Bash");
    assert_eq!(
        route.degradation().to_string(),
        "unknown — test before relying on this route"
    );
}

#[test]
fn r1_2_unknown_severity_with_a_text_survives_a_serde_round_trip() {
    let json =
        r#"{"tool": "Bash", "method": "m", "degradation": "untested", "severity": "unknown"}"#;
    let loaded: AlternativeSpec = serde_json::from_str(json).unwrap();
    assert_eq!(loaded.degradation().severity(), Severity::Unknown);
    let again: AlternativeSpec =
        serde_json::from_str(&serde_json::to_string(&loaded).unwrap()).unwrap();
    assert_eq!(
        again.degradation().severity(),
        Severity::Unknown,
        "an untested route must not become a low-degradation route after save and load"
    );
}

#[test]
fn r1_3_critical_and_substitutable_tools_are_told_apart() {
    let map = seed_map();
    assert_eq!(names(map.critical()), ["Bash", "Edit", "WebSearch"]);
    assert_eq!(names(map.substitutable()), ["Grep", "Read", "Write"]);
    assert!(map.get("Bash").unwrap().is_critical());
    assert!(!map.get("Grep").unwrap().is_critical());

    let expeditor = Expeditor::new(map).unwrap();
    assert_eq!(
        expeditor.is_critical(id(&expeditor, "WebSearch")),
        Some(true)
    );
    assert_eq!(expeditor.is_critical(id(&expeditor, "Write")), Some(false));

    // Edit with an alternative is no longer critical.
    let map = seed_map_as_written().tool(
        common::edit_spec().alternative(
            AlternativeSpec::new("Write")
                .method("rewrite the whole file")
                .degradation(Degradation::high("loses the diff")),
        ),
    );
    assert_eq!(names(map.critical()), ["Bash", "WebSearch"]);
    assert_eq!(
        names(map.substitutable()),
        ["Grep", "Read", "Write", "Edit"]
    );
}

/// A map with one of every problem R1.4 names.
fn broken_map() -> CapabilityMap {
    CapabilityMap::new()
        // 0: no fallback; an alternative with a typo.
        .tool(
            ToolSpec::new("Grep")
                .provides("content search across files")
                .alternative(AlternativeSpec::new("Bsah").method("rg")),
        )
        // 1: nothing provided.
        .tool(ToolSpec::new("Bash").fallback("report commands that need to be run manually"))
        // 2: its own alternative.
        .tool(
            ToolSpec::new("Read")
                .provides("file content inspection")
                .alternative(AlternativeSpec::new("Read"))
                .fallback("ask the user to paste file contents"),
        )
        // 3: the same alternative twice.
        .tool(
            ToolSpec::new("Write")
                .provides("file creation")
                .alternative(AlternativeSpec::new("Bash").method("heredoc"))
                .alternative(AlternativeSpec::new("Bash").method("tee"))
                .fallback("output file contents for the user to save manually"),
        )
        // 4: a second Bash.
        .tool(common::bash_spec())
        // 5: zero threshold and probe interval.
        .tool(common::edit_spec().threshold(0).probe_every(0))
        // 6: no name, no fallback.
        .tool(ToolSpec::new("").provides("something"))
        // 7: an alternative nothing resembles.
        .tool(
            ToolSpec::new("WebSearch")
                .provides("external information retrieval")
                .alternative(AlternativeSpec::new("Carrier pigeon"))
                .fallback("state what information is needed; ask user to provide it"),
        )
}

#[test]
fn r1_4_validation_returns_every_problem_at_once() {
    let expected = vec![
        MapError::DuplicateTool {
            tool: "Bash".into(),
            first: 1,
            index: 4,
        },
        MapError::EmptyName { index: 6 },
        MapError::MissingFallback {
            tool: "Grep".into(),
        },
        MapError::UnknownAlternative {
            tool: "Grep".into(),
            alternative: "Bsah".into(),
            suggestion: Some("Bash".into()),
        },
        MapError::MissingProvides {
            tool: "Bash".into(),
        },
        MapError::SelfAlternative {
            tool: "Read".into(),
        },
        MapError::DuplicateAlternative {
            tool: "Write".into(),
            alternative: "Bash".into(),
        },
        MapError::ZeroThreshold {
            tool: "Edit".into(),
        },
        MapError::ZeroProbeInterval {
            tool: "Edit".into(),
        },
        MapError::MissingFallback { tool: "#7".into() },
        MapError::UnknownAlternative {
            tool: "WebSearch".into(),
            alternative: "Carrier pigeon".into(),
            suggestion: None,
        },
    ];
    let errors = broken_map().validate().expect_err("the map is broken");
    assert_eq!(errors.problems(), expected.as_slice());
    assert_golden("r1_4_map_errors.txt", &errors.to_string());

    // The expeditor refuses the same map with the same errors, as a value.
    let built = Expeditor::new(broken_map()).expect_err("the map is broken");
    assert_eq!(built, errors);
    // The errors are data too.
    let json = serde_json::to_string(&errors).unwrap();
    let back: MapErrors = serde_json::from_str(&json).unwrap();
    assert_eq!(back, errors);
}

#[test]
fn r1_4_did_you_mean_suggests_close_names_only() {
    let map = seed_map().tool(
        ToolSpec::new("Fetch")
            .provides("http requests")
            .alternative(AlternativeSpec::new("websearch"))
            .alternative(AlternativeSpec::new("Grpe"))
            .alternative(AlternativeSpec::new("Curl"))
            .fallback("ask the user to fetch the page"),
    );
    let errors = map.validate().unwrap_err();
    let suggestions: Vec<(&str, Option<&str>)> = errors
        .problems()
        .iter()
        .map(|p| match p {
            MapError::UnknownAlternative {
                alternative,
                suggestion,
                ..
            } => (alternative.as_str(), suggestion.as_deref()),
            other => panic!("unexpected problem {other}"),
        })
        .collect();
    assert_eq!(
        suggestions,
        [
            ("websearch", Some("WebSearch")),
            ("Grpe", Some("Grep")),
            ("Curl", None)
        ]
    );
    assert_eq!(
        errors.problems()[1].to_string(),
        "tool `Fetch` names `Grpe` as an alternative, but the map declares no tool `Grpe`; \
         did you mean `Grep`?"
    );
}

#[test]
fn r1_4_the_source_documents_map_as_written_fails_naming_edit() {
    let errors = seed_map_as_written()
        .validate()
        .expect_err("Write names Edit, which the source document never declares");
    assert_eq!(
        errors.problems(),
        [MapError::UnknownAlternative {
            tool: "Write".into(),
            alternative: "Edit".into(),
            suggestion: None,
        }]
    );
    assert_eq!(
        errors.to_string(),
        "invalid capability map: 1 problem\n  - tool `Write` names `Edit` as an alternative, \
         but the map declares no tool `Edit`"
    );

    // The same map loaded in the source document's shape fails the same way.
    let json = r#"{"capability_map": [
        {"tool": "Write", "provides": "file creation",
         "alternatives": [
            {"tool": "Edit", "method": "create via full-file edit",
             "degradation": "requires file to already exist for Edit"},
            {"tool": "Bash", "method": "echo/cat heredoc",
             "degradation": "loses Write's atomic file creation"}],
         "fallback": "output file contents for the user to save manually"},
        {"tool": "Bash", "provides": "command execution, build tools, git operations",
         "alternatives": [], "fallback": "report commands that need to be run manually"}
    ]}"#;
    let loaded: CapabilityMap = serde_json::from_str(json).unwrap();
    let errors = Expeditor::new(loaded).expect_err("Edit is unknown");
    assert_eq!(errors.problems().len(), 1);
    assert!(matches!(
        &errors.problems()[0],
        MapError::UnknownAlternative { tool, alternative, .. } if tool == "Write" && alternative == "Edit"
    ));
}

#[test]
fn r1_4_validation_never_panics_on_degenerate_maps() {
    let maps = vec![
        CapabilityMap::new(),
        CapabilityMap::new().tool(ToolSpec::new("")),
        CapabilityMap::new().tool(ToolSpec::new("   ").provides(" ").fallback("\t")),
        CapabilityMap::new().tool(
            ToolSpec::new("Grép")
                .provides("é")
                .fallback("ü")
                .alternative(AlternativeSpec::new("ГРЕП"))
                .alternative(AlternativeSpec::new(""))
                .alternative(AlternativeSpec::new("Grép")),
        ),
        CapabilityMap::new().tool(
            ToolSpec::new("x".repeat(10_000))
                .provides("p")
                .fallback("f"),
        ),
        CapabilityMap::new()
            .tool(ToolSpec::new("A").alternative(AlternativeSpec::new("A")))
            .tool(ToolSpec::new("A").alternative(AlternativeSpec::new("B")))
            .tool(ToolSpec::new("").alternative(AlternativeSpec::new(""))),
    ];
    let mut outcomes = Vec::new();
    for map in maps {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            (
                map.validate().map_err(|e| e.problems().len()),
                Expeditor::new(map.clone()).is_ok(),
                map.to_string().is_empty(),
            )
        }))
        .expect("validation must not panic");
        outcomes.push(outcome);
    }
    assert_eq!(outcomes[0], (Ok(()), true, false), "an empty map is valid");
    assert_eq!(outcomes[4], (Ok(()), true, false), "a long name is valid");
    for (i, outcome) in outcomes.iter().enumerate() {
        if ![0, 4].contains(&i) {
            assert!(outcome.0.is_err() && !outcome.1, "map {i}: {outcome:?}");
        }
    }
    // Whitespace-only fields count as missing.
    assert_eq!(outcomes[2].0, Err(3));
}

#[test]
fn r1_4_cycles_are_legal_and_routing_visits_each_tool_once() {
    let map = CapabilityMap::new()
        .tool(
            ToolSpec::new("Grep")
                .provides("content search across files")
                .alternative(
                    AlternativeSpec::new("Read")
                        .method("read suspected files directly")
                        .degradation(Degradation::high("no broad search")),
                )
                .fallback("ask the user which files to examine"),
        )
        .tool(
            ToolSpec::new("Read")
                .provides("file content inspection")
                .alternative(
                    AlternativeSpec::new("Grep")
                        .method("grep for the lines")
                        .degradation(Degradation::low("only matching lines")),
                )
                .fallback("ask the user to paste file contents"),
        );
    assert_eq!(map.validate(), Ok(()));
    let expeditor = Expeditor::builder(map)
        .policy(policy_with_budget(100))
        .build()
        .expect("cycles are legal");
    open3(&expeditor, "Grep");
    assert_eq!(
        route_names(&expeditor, "Grep"),
        ["Read", "fallback", "scope"]
    );
    open3(&expeditor, "Read");
    // Both OPEN: each passes the other over and ends; nothing loops.
    assert_eq!(route_names(&expeditor, "Grep"), ["fallback", "scope"]);
    assert_eq!(route_names(&expeditor, "Read"), ["fallback", "scope"]);
}

#[test]
fn r1_5_severity_low_before_high_and_unknown_counts_as_high() {
    assert!(!Severity::Low.is_high());
    assert!(Severity::High.is_high());
    assert!(Severity::Unknown.is_high());
    assert_eq!(Degradation::low("x").severity(), Severity::Low);
    assert_eq!(Degradation::high("x").severity(), Severity::High);
    assert_eq!(
        serde_json::to_string(&[Severity::Low, Severity::High, Severity::Unknown]).unwrap(),
        r#"["low","high","unknown"]"#
    );

    // Declared high, unknown, low, high: routing offers low first, then the high ones
    // (unknown among them) in declaration order.
    let tool = |name: &str| {
        ToolSpec::new(name.to_owned())
            .provides("p")
            .fallback("ask the user")
    };
    let map = CapabilityMap::new()
        .tool(
            tool("Main")
                .alternative(AlternativeSpec::new("H1").degradation(Degradation::high("h1")))
                .alternative(AlternativeSpec::new("U"))
                .alternative(AlternativeSpec::new("L").degradation(Degradation::low("l")))
                .alternative(AlternativeSpec::new("H2").degradation(Degradation::high("h2"))),
        )
        .tool(tool("H1"))
        .tool(tool("U"))
        .tool(tool("L"))
        .tool(tool("H2"));
    let expeditor = Expeditor::new(map).unwrap();
    open3(&expeditor, "Main");
    assert_eq!(
        route_names(&expeditor, "Main"),
        ["L", "H1", "U", "H2", "fallback", "scope"]
    );

    // The source document's Write declares Edit (high) before Bash (low): Bash comes first.
    let expeditor = Expeditor::builder(seed_map())
        .policy(policy_with_budget(100))
        .build()
        .unwrap();
    open3(&expeditor, "Write");
    assert_eq!(
        route_names(&expeditor, "Write"),
        ["Bash", "Edit", "fallback", "scope"]
    );
}
