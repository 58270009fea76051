//! What the fuzz targets run, shared with the stable bounded harness (`fuzz_smoke`).
//!
//! Both functions take arbitrary bytes and must never panic. They check, beyond "no panic":
//!
//! - `snapshot_decode`: a snapshot `restore` refuses leaves the target exactly as it was; one
//!   it accepts leaves an expeditor whose budget never exceeds its limit, whose tools can all
//!   be decided on, recorded, routed around and reported, and whose own snapshot restores.
//! - `map_validate`: `validate`, `Expeditor::new` and the builder agree; errors render and
//!   round-trip through serde; on a valid map every tool opens and its routes end, list each
//!   alternative at most once and never the tool itself; `discover` of a known spec is a no-op.

use agent_circuit_breaker::{AlternativeSpec, CapabilityMap, CircuitState, Decision, Degradation, Expeditor, Failure, FailureCategory, Policy, Route, ToolSpec, capability::MapErrors, clock::{ManualClock, Timestamp}, expeditor::ToolId, policy::ProbeUnit, snapshot::Snapshot};

/// What an input came to, for the harness's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Not JSON of the right shape.
    DecodeError,
    /// Decoded, then refused (`restore` or `validate`).
    Refused,
    /// Decoded and accepted.
    Accepted,
}

/// The fixed map every snapshot is restored into: the seed's tools, with a cycle Grep <-> Read.
pub fn target_map() -> CapabilityMap {
    let alt = |tool: &'static str, severity: Degradation| {
        AlternativeSpec::new(tool)
            .method("instead")
            .degradation(severity)
    };
    CapabilityMap::new()
        .tool(
            ToolSpec::new("Grep")
                .provides("content search across files")
                .alternative(alt("Bash", Degradation::low("no formatting")))
                .alternative(alt("Read", Degradation::high("no broad search")))
                .fallback("ask the user which files to examine"),
        )
        .tool(
            ToolSpec::new("Bash")
                .provides("command execution")
                .fallback("report commands to run manually"),
        )
        .tool(
            ToolSpec::new("Read")
                .provides("file content inspection")
                .alternative(alt("Grep", Degradation::unknown()))
                .alternative(alt("Bash", Degradation::low("no line numbers")))
                .fallback("ask the user to paste file contents"),
        )
        .tool(
            ToolSpec::new("WebSearch")
                .provides("external information retrieval")
                .fallback("ask the user"),
        )
}

/// The policy of the target (and of the seed snapshots).
pub fn target_policy() -> Policy {
    Policy::builder().budget(10).build().expect("valid")
}

fn clock() -> ManualClock {
    ManualClock::new(Timestamp::from_secs(1_796_024_103))
}

/// A fresh target expeditor.
pub fn target() -> Expeditor {
    Expeditor::builder(target_map())
        .policy(target_policy())
        .clock(clock())
        .build()
        .expect("the target map is valid")
}

fn network() -> Failure {
    Failure::with_category("connection refused", FailureCategory::Network)
}

fn fail(expeditor: &Expeditor, tool: &str, failure: Failure) {
    if let Some(id) = expeditor.tool(tool)
        && let Decision::Call(t) | Decision::Probe(t) = expeditor.decide(id)
    {
        let _ = t.failure(failure);
    }
}

fn succeed(expeditor: &Expeditor, tool: &str) {
    if let Some(id) = expeditor.tool(tool)
        && let Decision::Call(t) | Decision::Probe(t) = expeditor.decide(id)
    {
        t.success();
    }
}

/// Real snapshots to start from: a history with an OPEN tool, a pending failure and a tool
/// discovered at run time; and a systemic failure in force.
pub fn seed_snapshots() -> Vec<Vec<u8>> {
    let story = target();
    story.advance_step();
    succeed(&story, "Grep");
    for message in ["permission denied", "command not found", "timed out"] {
        fail(&story, "Bash", Failure::new(message));
    }
    let _ = story.decide(story.tool("Bash").expect("declared"));
    story.advance_step();
    for _ in 0..3 {
        fail(&story, "WebSearch", network());
    }
    if let Ok(Decision::Call(t)) = story.decide_named("mcp_fetch") {
        let _ = t.failure(network());
    }
    story.advance_step();

    let cascade = target();
    cascade.advance_step();
    for tool in ["WebSearch", "Read"] {
        for _ in 0..3 {
            fail(&cascade, tool, network());
        }
    }
    [story.snapshot(), cascade.snapshot()]
        .iter()
        .map(|s| serde_json::to_vec_pretty(s).expect("serializable"))
        .collect()
}

/// Real maps to start from: the target map, and one with every field and a cycle of three.
pub fn seed_maps() -> Vec<Vec<u8>> {
    let cycle = CapabilityMap::new()
        .tool(
            ToolSpec::new("A")
                .provides("a")
                .fallback("ask")
                .threshold(2)
                .probe_every(4)
                .caches(true)
                .alternative(AlternativeSpec::new("B").degradation(Degradation::high("h"))),
        )
        .tool(
            ToolSpec::new("B")
                .provides("b")
                .fallback("ask")
                .alternative(AlternativeSpec::new("C")),
        )
        .tool(
            ToolSpec::new("C")
                .provides("c")
                .fallback("ask")
                .alternative(AlternativeSpec::new("A").method("m")),
        );
    [target_map(), cycle]
        .iter()
        .map(|m| serde_json::to_vec_pretty(m).expect("serializable"))
        .collect()
}

/// Bytes -> `Snapshot` -> `restore` into a fresh target.
pub fn snapshot_decode(data: &[u8]) -> Outcome {
    let Ok(snapshot) = serde_json::from_slice::<Snapshot>(data) else {
        return Outcome::DecodeError;
    };
    let expeditor = target();
    let before = expeditor.snapshot();
    if let Err(error) = expeditor.restore(&snapshot) {
        assert!(!error.to_string().is_empty());
        assert!(
            expeditor.snapshot() == before,
            "a refused snapshot changed the target: {error}"
        );
        return Outcome::Refused;
    }
    drive(&expeditor);
    Outcome::Accepted
}

/// Uses every tool once (success, failure or cancellation in turn), renders what can be
/// rendered, confirms recovery, starts a new cycle and restores its own snapshot. The budget
/// never exceeds its limit.
fn drive(expeditor: &Expeditor) {
    let _ = expeditor.state_table().to_string();
    let tools: Vec<ToolId> = expeditor.tools().collect();
    for (k, tool) in tools.into_iter().enumerate() {
        match expeditor.decide(tool) {
            Decision::Call(ticket) | Decision::Probe(ticket) => match k % 3 {
                0 => ticket.success(),
                1 => {
                    let _ = ticket.failure(network());
                }
                _ => ticket.cancel(),
            },
            Decision::Skip(skip) => {
                let _ = skip.routes().take(1000).count();
                let _ = skip.for_model().to_string();
            }
            Decision::Pause(pause) => {
                let _ = pause.for_model().to_string();
            }
        }
        let budget = expeditor.budget();
        assert!(budget.consumed() <= budget.limit(), "budget exceeded");
    }
    let _ = expeditor.confirm_recovery();
    let _ = expeditor.advance_step();
    let _ = expeditor.new_cycle();
    let own = serde_json::to_vec(&expeditor.snapshot()).expect("serializable");
    let own: Snapshot = serde_json::from_slice(&own).expect("an expeditor's own snapshot decodes");
    expeditor
        .restore(&own)
        .expect("an expeditor's own snapshot restores");
}

/// Bytes -> `CapabilityMap` -> `validate` -> `Expeditor::new`, then routing over every tool.
pub fn map_validate(data: &[u8]) -> Outcome {
    let Ok(map) = serde_json::from_slice::<CapabilityMap>(data) else {
        return Outcome::DecodeError;
    };
    let _ = map.to_string();
    let validated = map.validate();
    let built = Expeditor::builder(map.clone())
        .policy(
            Policy::builder()
                .threshold(1)
                .budget(u32::MAX)
                .probe_unit(ProbeUnit::Steps)
                .cascade_detection(false)
                .build()
                .expect("valid"),
        )
        .clock(clock())
        .build();
    match (validated, built) {
        (Err(errors), Err(also)) => {
            assert!(errors == also, "validate and build disagree");
            assert!(!errors.problems().is_empty());
            let _ = errors.to_string();
            let json = serde_json::to_string(&errors).expect("serializable");
            let back: MapErrors = serde_json::from_str(&json).expect("errors round-trip");
            assert!(back == errors, "errors round-trip");
            assert!(Expeditor::new(map).is_err());
            Outcome::Refused
        }
        (Ok(()), Ok(expeditor)) => {
            route_every_tool(&expeditor, &map);
            Outcome::Accepted
        }
        (validated, built) => panic!(
            "validate says {:?}, build says {:?}",
            validated.is_ok(),
            built.is_ok()
        ),
    }
}

fn route_every_tool(expeditor: &Expeditor, map: &CapabilityMap) {
    let tools: Vec<ToolId> = expeditor.tools().collect();
    assert_eq!(tools.len(), map.tools().len());
    for (spec, &tool) in map.tools().iter().zip(&tools) {
        assert_eq!(expeditor.discover(spec.clone()).ok(), Some(tool));
        // Open it (a per-tool threshold may ask for more than one failure; a huge one is
        // left CLOSED).
        for _ in 0..8 {
            let Decision::Call(ticket) = expeditor.decide(tool) else {
                break;
            };
            let _ = ticket.failure("it broke");
        }
    }
    for &tool in &tools {
        if expeditor.state(tool) != Some(CircuitState::Open) {
            continue;
        }
        let Decision::Skip(skip) = expeditor.decide(tool) else {
            panic!("an OPEN tool is skipped")
        };
        let limit = tools.len() + 3;
        let routes: Vec<Route<'_>> = skip.routes().take(limit + 1).collect();
        assert!(routes.len() <= limit, "routes do not end");
        let mut seen = Vec::new();
        for route in &routes {
            if let Route::Alternative(alt) = route {
                assert!(alt.tool() != tool, "a tool routes to itself");
                assert!(!seen.contains(&alt.tool()), "an alternative listed twice");
                seen.push(alt.tool());
            }
        }
        assert!(routes.last() == Some(&Route::ScopeReduction));
        let _ = skip.for_model().to_string();
    }
    let _ = expeditor.state_table().to_string();
    assert!(expeditor.capability_map() == *map);
}
