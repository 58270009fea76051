//! B7: the short text for a language model — which tool is broken, why, what to do instead —
//! that never invites a retry of the broken tool.

#[path = "../common/mod.rs"]
mod common;

use agent_circuit_breaker::{
    AlternativeSpec, CapabilityMap, Decision, Expeditor, Policy, expeditor::ToolId,
    policy::ProbeUnit, report::ModelNote,
};
use common::{assert_no_retry_invitation, clock, expeditor_with, fail, id, open3, seed_map};

/// The source document's map, WebSearch opening after one failure; probes counted in steps, so
/// asking about an OPEN tool repeatedly never turns it into a probe.
fn expeditor() -> Expeditor {
    let map = CapabilityMap::new()
        .tool(common::grep_spec())
        .tool(common::bash_spec())
        .tool(common::read_spec())
        .tool(common::write_spec())
        .tool(common::edit_spec())
        .tool(common::websearch_spec().threshold(1));
    let policy = Policy::builder()
        .budget(100)
        .probe_unit(ProbeUnit::Steps)
        .build()
        .unwrap();
    expeditor_with(map, policy, &clock())
}

fn skip_note(expeditor: &Expeditor, tool: &str) -> ModelNote {
    match expeditor.decide(id(expeditor, tool)) {
        Decision::Skip(skip) => skip.for_model(),
        other => panic!("{tool}: expected SKIP, got {}", other.kind()),
    }
}

#[track_caller]
fn assert_note(note: &ModelNote, expected: &str) {
    let text = note.to_string();
    assert_eq!(text, expected);
    assert_no_retry_invitation(&text);
}

#[test]
fn b7_skip_to_a_low_alternative() {
    let expeditor = expeditor();
    open3(&expeditor, "Grep");
    let note = skip_note(&expeditor, "Grep");
    assert_eq!(note.tool.as_deref(), Some("Grep"));
    assert_eq!(
        note.why,
        "circuit OPEN after 3 consecutive failures (last error: \"timeout after 120s\")"
    );
    assert_note(
        &note,
        "Grep is unavailable: circuit OPEN after 3 consecutive failures (last error: \
         \"timeout after 120s\"). Do not call Grep. Instead: use Bash — rg or grep command \
         (degradation: loses Grep's built-in output formatting).",
    );
}

#[test]
fn b7_skip_to_a_high_alternative_when_the_low_one_is_open() {
    let expeditor = expeditor();
    open3(&expeditor, "Bash");
    open3(&expeditor, "Grep");
    assert_note(
        &skip_note(&expeditor, "Grep"),
        "Grep is unavailable: circuit OPEN after 3 consecutive failures (last error: \
         \"timeout after 120s\"). Do not call Grep. Instead: use Read — read suspected files \
         directly (degradation: requires knowing which files to check; no broad search).",
    );
}

#[test]
fn b7_skip_to_an_alternative_of_unknown_degradation() {
    let map = CapabilityMap::new()
        .tool(
            agent_circuit_breaker::ToolSpec::new("Read")
                .provides("file content inspection")
                .alternative(AlternativeSpec::new("Bash").method("cat or head command"))
                .fallback("ask the user to paste file contents"),
        )
        .tool(common::bash_spec());
    let expeditor = Expeditor::builder(map).clock(clock()).build().unwrap();
    open3(&expeditor, "Read");
    assert_note(
        &skip_note(&expeditor, "Read"),
        "Read is unavailable: circuit OPEN after 3 consecutive failures (last error: \
         \"timeout after 120s\"). Do not call Read. Instead: use Bash — cat or head command \
         (degradation: unknown — test before relying on this route).",
    );
}

#[test]
fn b7_skip_to_the_manual_fallback() {
    let expeditor = expeditor();
    open3(&expeditor, "Bash");
    assert_note(
        &skip_note(&expeditor, "Bash"),
        "Bash is unavailable: circuit OPEN after 3 consecutive failures (last error: \
         \"timeout after 120s\"). Do not call Bash. Instead: no other tool can do this — \
         report commands that need to be run manually.",
    );
    // One failure, in the singular.
    fail(&expeditor, "WebSearch", "connection refused");
    assert_note(
        &skip_note(&expeditor, "WebSearch"),
        "WebSearch is unavailable: circuit OPEN after 1 consecutive failure (last error: \
         \"connection refused\"). Do not call WebSearch. Instead: no other tool can do this — \
         state what information is needed; ask user to provide it.",
    );
}

#[test]
fn b7_skip_to_scope_reduction() {
    let expeditor = expeditor();
    let Decision::Skip(skip) = expeditor.decide(ToolId::from_index(99)) else {
        panic!("an unknown id is skipped")
    };
    assert_note(
        &skip.for_model(),
        "Tool #99 is unavailable: it is not a tool of this agent. Do not call Tool #99. Instead: \
         no tool or manual fallback can do this — leave this work out and report it as skipped.",
    );
}

#[test]
fn b7_skip_while_a_probe_is_in_flight() {
    let clock = clock();
    let expeditor = expeditor_with(seed_map(), Policy::default(), &clock);
    let bash = id(&expeditor, "Bash");
    open3(&expeditor, "Bash");
    let _ = expeditor.decide(bash);
    let _ = expeditor.decide(bash);
    let Decision::Probe(probe) = expeditor.decide(bash) else {
        panic!("third attempt probes")
    };
    assert_note(
        &skip_note(&expeditor, "Bash"),
        "Bash is unavailable: circuit HALF-OPEN, a recovery check is already running (last \
         error: \"timeout after 120s\"). Do not call Bash. Instead: no other tool can do this \
         — report commands that need to be run manually.",
    );
    probe.success();
}

#[test]
fn b7_pause_names_the_tool_asked_for() {
    let clock = clock();
    let expeditor = expeditor_with(seed_map(), Policy::default(), &clock);
    open3(&expeditor, "Bash");
    fail(&expeditor, "Read", "no such file");
    fail(&expeditor, "Read", "no such file");
    let Decision::Pause(pause) = expeditor.decide(id(&expeditor, "Grep")) else {
        panic!("the budget is spent")
    };
    let note = pause.for_model();
    assert_eq!(note.tool, None);
    assert_eq!(note.asked_for.as_deref(), Some("Grep"));
    assert_note(
        &note,
        "Grep was not called: all tools are paused: failure budget exhausted (5 / 5 failures \
         this cycle). Do not call Grep or any other tool. Instead: stop and report the \
         completed and incomplete work to the user.",
    );
    // The offer is no answer to a call: it names no tool asked for.
    let offer = expeditor.offer();
    assert_eq!(offer.withheld[0].asked_for, None);
    assert!(
        offer
            .to_string()
            .contains("All tools are paused: failure budget exhausted"),
        "{offer}"
    );
}

#[test]
fn b7_a_quoted_error_message_never_invites_a_retry() {
    let expeditor = expeditor();
    fail(
        &expeditor,
        "WebSearch",
        "503 Service Unavailable: please try again later",
    );
    let text = skip_note(&expeditor, "WebSearch").to_string();
    assert!(text.contains("WebSearch"), "{text}");
    assert_no_retry_invitation(&text);
}
