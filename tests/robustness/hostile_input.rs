//! Hostile input (R1.4, R3.7, B3, B6): capability maps built or loaded at run time
//! and snapshots read back from disk are untrusted. Each bad one must come back as a clear
//! error value — never a panic — and a snapshot that is refused must leave the target
//! expeditor exactly as it was (its `snapshot()` before and after compared). Alternatives
//! that form cycles are legal maps; routing over them ends and lists each tool at most once.
//!
//! Every input is fed inside `catch_unwind`, so a panic names the input that caused it.
//! Inputs tried in one run (each test prints its own figures with `--nocapture`):
//!
//! - maps: 27 hand-made bad maps (unknown, self and repeated alternatives, empty and blank
//!   names, duplicates, missing fields, zero overrides), each a `MapErrors` listing every one
//!   of its problems (46 in all); 13 unicode maps (6 accepted, 7 refused), 6 maps with 1 MB
//!   strings (3 accepted, 3 refused; plus 1 MB failure messages through real failures, a
//!   systemic event and a snapshot), 2 maps of 10,000 tools (one valid, every tool's
//!   alternative the next tool, one cycle through all of them, 203 tools opened and routed
//!   over; one with 20,010 problems, all reported in map order), 4 cycle shapes up to a
//!   complete graph of 6 tools (routed over with each of their 112 sets of OPEN tools), 9 bad
//!   `discover` specs (and 2 blank names to `decide_named`), 20 JSON maps (19 that do not
//!   decode, one that decodes and is refused);
//! - snapshots, from two real ones (a story over two cycles with a confirmed systemic event,
//!   two tools met at run time and a failure held pending; one taken during a systemic
//!   event): 12,787 truncations (every byte boundary of their compact JSON, every 7th of their
//!   pretty JSON): all decode errors; 31,119 corruptions (every byte of their compact JSON,
//!   each replaced by 3 of 8 values in turn): 24,748 decode errors, 142 refused by `restore`
//!   with the target unchanged, 6,229 accepted and then driven (every tool decided and
//!   recorded, reports rendered, recovery confirmed, a new cycle, the expeditor's own
//!   snapshot restored); 12 wrong formats and versions (5 decode errors, 7 refused); 22 huge,
//!   negative or ill-typed numbers (13 decode errors, 9 accepted); 22 inconsistent or odd
//!   records (18 refused, 3 of them already by the decoder; 4 accepted). No panic, and every
//!   accepted snapshot leaves a budget within its limit and equal to its charged ledger lines.
//!
//! Nothing is sampled: the whole file runs in about 4.5 s in debug on 2 cores (the
//! corruptions take 4.3 s of it).
//!
//! The bugs this file found — `Budget::rebase` charging folded and pending ledger lines
//! again, `restore` accepting a line both charged and pending, "did you mean" comparing names
//! of any length, the chain shares of R9.5 recomputed on every decide, the step counter
//! wrapping at `u64::MAX` — are fixed; their tests are kept below as regression tests. One
//! found since, every recovery after a large cascade recomputing those shares, is kept as an
//! ignored test at the end of the file.

#[path = "../common/mod.rs"]
mod common;

use std::any::Any;
use std::borrow::Cow;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use agent_circuit_breaker::{
    AlternativeSpec, CapabilityMap, CircuitState, Decision, Degradation, Expeditor, Failure,
    FailureCategory, Policy, Route, ToolSpec,
    capability::{AlternativeSpecBuilder, MapError, MapErrors, ToolSpecBuilder},
    expeditor::ToolId,
    policy::ProbeUnit,
    snapshot::{RestoreError, Snapshot},
};
use common::{clock, expeditor_with, fail, id, kind, open3, seed_map, seed_task, succeed};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Feeding inputs
// ---------------------------------------------------------------------------------------------

/// What an input came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Not JSON of the right shape.
    ParseError,
    /// Decoded, then refused (`restore`, `validate`, `discover`).
    Refused,
    /// Decoded and accepted.
    Accepted,
}

/// How many inputs of a test came to each [`Outcome`]; printed with `--nocapture`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Tally {
    parse_errors: usize,
    refused: usize,
    accepted: usize,
}

impl Tally {
    fn add(&mut self, outcome: Outcome) -> Outcome {
        match outcome {
            Outcome::ParseError => self.parse_errors += 1,
            Outcome::Refused => self.refused += 1,
            Outcome::Accepted => self.accepted += 1,
        }
        outcome
    }

    fn total(&self) -> usize {
        self.parse_errors + self.refused + self.accepted
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(not a string)")
}

/// Runs `f` under `catch_unwind`: a panic (in the runtime or in a check) fails the test with
/// the name of the input that caused it.
fn guarded<T>(what: &str, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => value,
        Err(payload) => panic!("input `{what}` panicked: {}", panic_message(&*payload)),
    }
}

/// The policy of the target and of the real snapshots: the defaults with a budget of 10.
fn policy() -> Policy {
    Policy::builder().budget(10).build().unwrap()
}

/// The expeditor every snapshot is restored into: the source document's map, [`policy`], a manual
/// clock.
fn target() -> Expeditor {
    expeditor_with(seed_map(), policy(), &clock())
}

/// A tool the story discovers at run time; unknown to [`target`].
fn webfetch_spec() -> ToolSpecBuilder {
    ToolSpec::new("WebFetch")
        .provides("fetch a web page")
        .alternative(alt("WebSearch"))
        .fallback("ask the user to paste the page")
}

/// A network failure: correlates with other network failures (R9).
fn refused_conn() -> Failure {
    Failure::with_category("connection refused", FailureCategory::Network)
}

/// A complete tool named `name`, without alternatives.
fn spec(name: impl Into<Cow<'static, str>>) -> ToolSpecBuilder {
    ToolSpec::new(name)
        .provides("something")
        .fallback("ask the user")
}

/// An alternative through `tool`, with a low degradation.
fn alt(tool: impl Into<Cow<'static, str>>) -> AlternativeSpecBuilder {
    AlternativeSpec::new(tool)
        .method("instead")
        .degradation(Degradation::low("a little less"))
}

/// A real history, snapshotted: Grep used; Bash OPEN after three mixed failures (and skipped
/// once); WebSearch OPEN on network failures; `mcp_fetch`, met at run time, failing the same
/// way — held pending, then one systemic event with WebSearch, charged once and confirmed
/// recovered; a new cycle; a Grep failure and a Read failure charged; WebFetch discovered and
/// its network failure held pending (the last ledger line). Cycle 2, step 4, 2 of 10 spent.
fn story_snapshot() -> Snapshot {
    let clock = clock();
    let story = expeditor_with(seed_map(), policy(), &clock);
    story.advance_step();
    succeed(&story, "Grep");
    open3(&story, "Bash");
    assert_eq!(kind(story.decide(id(&story, "Bash"))), "SKIP");
    story.advance_step();
    clock.advance(Duration::from_secs(30));
    for _ in 0..3 {
        fail(&story, "WebSearch", refused_conn());
    }
    for _ in 0..3 {
        let Ok(Decision::Call(ticket)) = story.decide_named("mcp_fetch") else {
            panic!("mcp_fetch is CLOSED until its third failure")
        };
        let _ = ticket.failure(refused_conn());
    }
    assert!(story.systemic_event().is_some_and(|e| !e.recovered));
    clock.advance(Duration::from_secs(60));
    story.confirm_recovery().expect("an event in force");
    story.advance_step();
    assert_eq!(story.new_cycle(), 2);
    fail(&story, "Grep", "permission denied");
    fail(
        &story,
        "Read",
        Failure::with_category("no such file", FailureCategory::NotFound),
    );
    story.discover(webfetch_spec()).expect("a valid spec");
    fail(&story, "WebFetch", refused_conn());
    story.advance_step();
    let snapshot = story.snapshot();
    let ledger = snapshot.budget.ledger();
    assert_eq!(ledger.len(), 3);
    assert!(
        ledger[2].pending && !ledger[2].charged,
        "WebFetch's failure is held"
    );
    assert_eq!(snapshot.budget.consumed(), 2);
    snapshot
}

/// A snapshot taken during a systemic event: WebSearch OPEN on network failures, Read's
/// network failure held pending, WebFetch's three folded with WebSearch's into the event's
/// line, charged once. Every call paused.
fn cascade_snapshot() -> Snapshot {
    let cascade = expeditor_with(seed_map().tool(webfetch_spec()), policy(), &clock());
    cascade.advance_step();
    for _ in 0..3 {
        fail(&cascade, "WebSearch", refused_conn());
    }
    fail(&cascade, "Read", refused_conn());
    for _ in 0..3 {
        fail(&cascade, "WebFetch", refused_conn());
    }
    let snapshot = cascade.snapshot();
    assert!(snapshot.systemic.as_ref().is_some_and(|e| !e.recovered));
    let flags = |e: &agent_circuit_breaker::report::LedgerEntry| (e.charged, e.pending, e.systemic);
    let ledger: Vec<_> = snapshot.budget.ledger().iter().map(flags).collect();
    assert!(
        ledger.contains(&(false, true, false)),
        "a pending line: {ledger:?}"
    );
    assert!(
        ledger.contains(&(false, false, true)),
        "folded lines: {ledger:?}"
    );
    snapshot
}

/// The breaker of the tool `name` in a snapshot's JSON.
fn breaker<'a>(snapshot: &'a mut Value, name: &str) -> &'a mut Value {
    snapshot["tools"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|t| t["spec"]["tool"] == name)
        .map(|t| &mut t["breaker"])
        .unwrap_or_else(|| panic!("{name} in the snapshot"))
}

/// Checks the budget against its ledger: never above its limit, equal to the charged lines.
fn check_budget(expeditor: &Expeditor) {
    let budget = expeditor.budget();
    let charged = budget.ledger().iter().filter(|e| e.charged).count();
    assert!(
        budget.consumed() <= budget.limit(),
        "budget exceeded: {budget:?}"
    );
    assert_eq!(
        usize::try_from(budget.consumed()).unwrap(),
        charged,
        "consumed vs charged ledger lines"
    );
    assert!(
        !budget
            .ledger()
            .iter()
            .any(|e| e.charged && (e.pending || e.systemic)),
        "a line charged and held or folded"
    );
}

/// Drives an expeditor that accepted a snapshot: every tool decided, its ticket recorded as a
/// success, a failure or a cancellation in turn, SKIP routes walked and PAUSE and SKIP notes
/// rendered; the state table, scope, pause report and tool offer rendered; recovery confirmed,
/// a step, a new cycle; and the expeditor's own snapshot, through JSON, restored.
fn drive(expeditor: &Expeditor) {
    check_budget(expeditor);
    let task = seed_task();
    let _ = expeditor.state_table().to_string();
    let _ = expeditor.offer().to_string();
    let tools: Vec<ToolId> = expeditor.tools().collect();
    for (k, &tool) in tools.iter().enumerate() {
        match expeditor.decide(tool) {
            Decision::Call(ticket) | Decision::Probe(ticket) => match k % 3 {
                0 => ticket.success(),
                1 => {
                    let _ = ticket.failure(refused_conn());
                }
                _ => ticket.cancel(),
            },
            Decision::Skip(skip) => {
                let routes = skip.routes().take(tools.len() + 3).count();
                assert!(routes <= tools.len() + 2, "routes do not end");
                let _ = skip.for_model().to_string();
            }
            Decision::Pause(pause) => {
                let _ = pause.for_model().to_string();
            }
        }
        check_budget(expeditor);
    }
    let _ = expeditor.pause_report(&task).to_string();
    let _ = expeditor.scope(&task).to_string();
    let _ = expeditor.confirm_recovery();
    let _ = expeditor.advance_step();
    let _ = expeditor.new_cycle();
    check_budget(expeditor);
    let own = expeditor.snapshot();
    let bytes = serde_json::to_vec(&own).unwrap();
    let back: Snapshot = serde_json::from_slice(&bytes).expect("its own snapshot decodes");
    assert_eq!(back, own, "its own snapshot through JSON");
    expeditor.restore(&back).expect("its own snapshot restores");
    assert_eq!(expeditor.snapshot(), own, "its own snapshot, restored");
}

/// Bytes -> `Snapshot` -> `restore` into a fresh [`target`] (refused: the target unchanged;
/// accepted: [`drive`]n), under `catch_unwind`.
fn fed(what: &str, bytes: &[u8], tally: &mut Tally) -> Outcome {
    let outcome = guarded(what, || {
        let Ok(snapshot) = serde_json::from_slice::<Snapshot>(bytes) else {
            return Outcome::ParseError;
        };
        let target = target();
        let before = target.snapshot();
        match target.restore(&snapshot) {
            Err(error) => {
                assert!(!error.to_string().is_empty());
                assert!(
                    target.snapshot() == before,
                    "refused ({error}), yet the target changed"
                );
                Outcome::Refused
            }
            Ok(()) => {
                drive(&target);
                Outcome::Accepted
            }
        }
    });
    tally.add(outcome)
}

/// The story's snapshot as JSON, edited by `edit`, then [`fed`].
fn edited(what: &str, edit: impl FnOnce(&mut Value), tally: &mut Tally) -> Outcome {
    let mut value = serde_json::to_value(story_snapshot()).unwrap();
    edit(&mut value);
    let bytes = serde_json::to_vec(&value).unwrap();
    fed(what, &bytes, tally)
}

/// The policy maps are built with when they are routed over: one failure opens a circuit,
/// an OPEN circuit stays OPEN (probes count steps, which never move), no pause.
fn routing_policy() -> Policy {
    Policy::builder()
        .threshold(1)
        .budget(u32::MAX)
        .probe_unit(ProbeUnit::Steps)
        .cascade_detection(false)
        .build()
        .unwrap()
}

/// The routes of the OPEN tool `tool` are exactly its alternatives that are not OPEN, low
/// degradations before high, each once, never itself; then its fallback, then scope reduction.
fn check_routes(expeditor: &Expeditor, map: &CapabilityMap, tool: ToolId) {
    let spec = &map.tools()[tool.index() as usize];
    let usable = |a: &&AlternativeSpec| {
        expeditor.tool(a.tool()).and_then(|t| expeditor.state(t)) != Some(CircuitState::Open)
    };
    let low = spec
        .alternatives()
        .iter()
        .filter(usable)
        .filter(|a| !a.degradation().severity().is_high());
    let high = spec
        .alternatives()
        .iter()
        .filter(usable)
        .filter(|a| a.degradation().severity().is_high());
    let wanted: Vec<&str> = low.chain(high).map(AlternativeSpec::tool).collect();
    let Decision::Skip(skip) = expeditor.decide(tool) else {
        panic!("an OPEN tool is skipped")
    };
    let limit = spec.alternatives().len() + 2;
    let routes: Vec<Route<'_>> = skip.routes().take(limit + 1).collect();
    assert!(routes.len() <= limit, "routes do not end");
    let mut listed: Vec<ToolId> = Vec::new();
    let mut names = Vec::new();
    for route in &routes {
        if let Route::Alternative(alternative) = route {
            assert_ne!(alternative.tool(), tool, "a tool routes to itself");
            assert!(
                !listed.contains(&alternative.tool()),
                "an alternative listed twice"
            );
            listed.push(alternative.tool());
            names.push(alternative.name());
        }
    }
    assert_eq!(names, wanted);
    let mut tail = routes[names.len()..].iter();
    if !spec.fallback().trim().is_empty() {
        assert_eq!(tail.next(), Some(&Route::Fallback(spec.fallback())));
    }
    assert_eq!(tail.next(), Some(&Route::ScopeReduction));
    assert_eq!(tail.next(), None);
    let _ = skip.for_model().to_string();
}

/// An expeditor over a valid `map` with the tools at `open` (indices) OPEN.
fn opened(map: &CapabilityMap, open: impl IntoIterator<Item = usize>) -> Expeditor {
    let expeditor = expeditor_with(map.clone(), routing_policy(), &clock());
    for i in open {
        let tool = ToolId::from_index(u32::try_from(i).unwrap());
        let Decision::Call(ticket) = expeditor.decide(tool) else {
            panic!("tool #{i} is CLOSED")
        };
        let recorded = ticket.failure("it broke");
        assert!(recorded.opened, "threshold 1");
    }
    expeditor
}

/// Every problem of a map, checked the same way everywhere: `validate` and the builder agree,
/// the error renders a line per problem and goes through serde unchanged.
fn check_errors(map: &CapabilityMap, errors: &MapErrors) {
    let built = Expeditor::builder(map.clone())
        .policy(routing_policy())
        .clock(clock())
        .build();
    assert_eq!(
        built.err().as_ref(),
        Some(errors),
        "validate and build agree"
    );
    let n = errors.problems().len();
    assert!(n > 0);
    let mut wanted = format!(
        "invalid capability map: {n} problem{}",
        if n == 1 { "" } else { "s" }
    );
    for problem in errors.problems() {
        wanted.push_str("\n  - ");
        wanted.push_str(&problem.to_string());
    }
    assert_eq!(errors.to_string(), wanted, "every problem listed");
    let json = serde_json::to_string(errors).unwrap();
    let back: MapErrors = serde_json::from_str(&json).unwrap();
    assert_eq!(&back, errors, "errors through serde");
}

/// A map that must be refused: its problems, checked by [`check_errors`].
fn refused(what: &str, map: &CapabilityMap) -> Vec<MapError> {
    guarded(what, || {
        let errors = map.validate().expect_err("a bad map");
        check_errors(map, &errors);
        errors.0
    })
}

/// A map under `catch_unwind`: refused ([`check_errors`]) or accepted (built; every other
/// tool opened and [`check_routes`] from each; the state table and the map rendered; the map
/// through JSON unchanged).
fn map_fed(what: &str, map: &CapabilityMap, tally: &mut Tally) -> Result<(), Vec<MapError>> {
    let result = guarded(what, || {
        let json = serde_json::to_vec(map).unwrap();
        let back: CapabilityMap = serde_json::from_slice(&json).expect("a map decodes");
        assert_eq!(&back, map, "the map through JSON");
        let _ = map.to_string();
        match map.validate() {
            Err(errors) => {
                check_errors(map, &errors);
                Err(errors.0)
            }
            Ok(()) => {
                let n = map.tools().len();
                let expeditor = opened(map, (0..n).step_by(2));
                for i in (0..n).step_by(2) {
                    check_routes(
                        &expeditor,
                        map,
                        ToolId::from_index(u32::try_from(i).unwrap()),
                    );
                }
                let _ = expeditor.state_table().to_string();
                assert_eq!(&expeditor.capability_map(), map);
                Ok(())
            }
        }
    });
    tally.add(if result.is_ok() {
        Outcome::Accepted
    } else {
        Outcome::Refused
    });
    result
}

// ---------------------------------------------------------------------------------------------
// Capability maps
// ---------------------------------------------------------------------------------------------

fn unknown(tool: &str, alternative: &str, suggestion: Option<&str>) -> MapError {
    MapError::UnknownAlternative {
        tool: tool.into(),
        alternative: alternative.into(),
        suggestion: suggestion.map(Into::into),
    }
}

fn self_alt(tool: &str) -> MapError {
    MapError::SelfAlternative { tool: tool.into() }
}

fn repeated(tool: &str, alternative: &str) -> MapError {
    MapError::DuplicateAlternative {
        tool: tool.into(),
        alternative: alternative.into(),
    }
}

fn twice(tool: &str, first: usize, index: usize) -> MapError {
    MapError::DuplicateTool {
        tool: tool.into(),
        first,
        index,
    }
}

fn no_provides(tool: &str) -> MapError {
    MapError::MissingProvides { tool: tool.into() }
}

fn no_fallback(tool: &str) -> MapError {
    MapError::MissingFallback { tool: tool.into() }
}

fn zero_threshold(tool: &str) -> MapError {
    MapError::ZeroThreshold { tool: tool.into() }
}

fn zero_probe(tool: &str) -> MapError {
    MapError::ZeroProbeInterval { tool: tool.into() }
}

fn empty(index: usize) -> MapError {
    MapError::EmptyName { index }
}

#[test]
fn hand_made_bad_maps_list_every_problem() {
    let grep = || spec("Grep");
    let read = || spec("Read");
    let cases: Vec<(&str, CapabilityMap, Vec<MapError>)> = vec![
        (
            "an alternative with a typo",
            CapabilityMap::new()
                .tool(grep())
                .tool(read().alternative(alt("Grpe"))),
            vec![unknown("Read", "Grpe", Some("Grep"))],
        ),
        (
            "an alternative in the wrong case",
            CapabilityMap::new()
                .tool(grep())
                .tool(read().alternative(alt("grep"))),
            vec![unknown("Read", "grep", Some("Grep"))],
        ),
        (
            "an alternative with a trailing space",
            CapabilityMap::new()
                .tool(grep())
                .tool(read().alternative(alt("Grep "))),
            vec![unknown("Read", "Grep ", Some("Grep"))],
        ),
        (
            "an alternative naming nothing close",
            CapabilityMap::new()
                .tool(grep())
                .tool(read().alternative(alt("Nobody"))),
            vec![unknown("Read", "Nobody", None)],
        ),
        (
            "an alternative with an empty name",
            CapabilityMap::new()
                .tool(grep())
                .tool(read().alternative(alt(""))),
            vec![unknown("Read", "", None)],
        ),
        (
            "the source document's map as written (Edit never declared)",
            common::seed_map_as_written(),
            vec![unknown("Write", "Edit", None)],
        ),
        (
            "two tools naming each other misspelt",
            CapabilityMap::new()
                .tool(grep().alternative(alt("Raed")))
                .tool(read().alternative(alt("Gerp"))),
            vec![
                unknown("Grep", "Raed", Some("Read")),
                unknown("Read", "Gerp", Some("Grep")),
            ],
        ),
        (
            "a tool naming itself",
            CapabilityMap::new().tool(grep().alternative(alt("Grep"))),
            vec![self_alt("Grep")],
        ),
        (
            "a tool naming itself among others",
            CapabilityMap::new()
                .tool(grep().alternative(alt("Read")).alternative(alt("Grep")))
                .tool(read()),
            vec![self_alt("Grep")],
        ),
        (
            "an alternative repeated",
            CapabilityMap::new()
                .tool(grep().alternative(alt("Read")).alternative(alt("Read")))
                .tool(read()),
            vec![repeated("Grep", "Read")],
        ),
        (
            "an alternative three times",
            CapabilityMap::new()
                .tool(
                    grep()
                        .alternative(alt("Read"))
                        .alternative(alt("Read").degradation(Degradation::high("other")))
                        .alternative(alt("Read")),
                )
                .tool(read()),
            vec![repeated("Grep", "Read"), repeated("Grep", "Read")],
        ),
        (
            "an empty name",
            CapabilityMap::new().tool(grep()).tool(spec("")),
            vec![empty(1)],
        ),
        (
            "a blank name",
            CapabilityMap::new().tool(spec("   ")).tool(grep()),
            vec![empty(0)],
        ),
        (
            "a name of tabs and newlines",
            CapabilityMap::new().tool(spec("\t\n\r")),
            vec![empty(0)],
        ),
        (
            "two blank names (blank, not duplicates)",
            CapabilityMap::new().tool(spec(" ")).tool(spec(" ")),
            vec![empty(0), empty(1)],
        ),
        (
            "an empty-named tool naming itself",
            CapabilityMap::new().tool(spec("").alternative(alt(""))),
            vec![empty(0), self_alt("#1")],
        ),
        (
            "a tool declared twice",
            CapabilityMap::new().tool(grep()).tool(read()).tool(grep()),
            vec![twice("Grep", 0, 2)],
        ),
        (
            "a tool declared three times, the repeats different",
            CapabilityMap::new()
                .tool(grep())
                .tool(grep().alternative(alt("Read")))
                .tool(read())
                .tool(spec("Grep").provides("another thing")),
            vec![twice("Grep", 0, 1), twice("Grep", 0, 3)],
        ),
        (
            "names differing only in case (both kept, no duplicate)",
            CapabilityMap::new()
                .tool(grep())
                .tool(spec("grep").alternative(alt("GREP"))),
            vec![unknown("grep", "GREP", Some("Grep"))],
        ),
        (
            "no provides",
            CapabilityMap::new().tool(ToolSpec::new("Grep").fallback("ask")),
            vec![no_provides("Grep")],
        ),
        (
            "a blank provides",
            CapabilityMap::new().tool(grep().provides(" \t ")),
            vec![no_provides("Grep")],
        ),
        (
            "no fallback",
            CapabilityMap::new().tool(ToolSpec::new("Grep").provides("search")),
            vec![no_fallback("Grep")],
        ),
        (
            "a bare tool (neither provides nor fallback)",
            CapabilityMap::new().tool(ToolSpec::new("Grep")),
            vec![no_provides("Grep"), no_fallback("Grep")],
        ),
        (
            "a threshold of 0",
            CapabilityMap::new().tool(grep().threshold(0)),
            vec![zero_threshold("Grep")],
        ),
        (
            "a probe interval of 0",
            CapabilityMap::new().tool(grep().probe_every(0)),
            vec![zero_probe("Grep")],
        ),
        (
            "every problem of a tool at once",
            CapabilityMap::new().tool(read()).tool(
                ToolSpec::new(" ")
                    .threshold(0)
                    .probe_every(0)
                    .alternative(alt(" "))
                    .alternative(alt("Read"))
                    .alternative(alt("Read"))
                    .alternative(alt("Raed")),
            ),
            vec![
                empty(1),
                no_provides("#2"),
                no_fallback("#2"),
                zero_threshold("#2"),
                zero_probe("#2"),
                self_alt("#2"),
                repeated("#2", "Read"),
                unknown("#2", "Raed", Some("Read")),
            ],
        ),
        (
            "problems across tools, in map order",
            CapabilityMap::new()
                .tool(grep().alternative(alt("Nobody")))
                .tool(spec(""))
                .tool(read().threshold(0))
                .tool(grep())
                .tool(ToolSpec::new("Bash").alternative(alt("Bash"))),
            vec![
                empty(1),
                twice("Grep", 0, 3),
                unknown("Grep", "Nobody", None),
                zero_threshold("Read"),
                no_provides("Bash"),
                no_fallback("Bash"),
                self_alt("Bash"),
            ],
        ),
    ];
    let count = cases.len();
    let mut problems = 0;
    for (what, map, wanted) in cases {
        let found = refused(what, &map);
        assert_eq!(found, wanted, "{what}");
        problems += found.len();
    }
    eprintln!("hand_made_bad_maps_list_every_problem: {count} maps, {problems} problems");
}

#[test]
fn unicode_maps() {
    let mut tally = Tally::default();
    let pair = |a: &'static str, b: &'static str| {
        CapabilityMap::new()
            .tool(spec(a).alternative(alt(b)))
            .tool(spec(b).alternative(alt(a)))
    };
    let cases: Vec<(&str, CapabilityMap, Option<Vec<MapError>>)> = vec![
        ("CJK names", pair("検索", "読み取り"), None),
        ("emoji names", pair("🔍", "📖👀"), None),
        ("right-to-left names", pair("بحث", "קריאה"), None),
        (
            "unicode everywhere else: provides, method, degradation, fallback",
            CapabilityMap::new()
                .tool(
                    ToolSpec::new("Grep")
                        .provides("поиск по файлам — 搜索 🔍")
                        .alternative(
                            AlternativeSpec::new("Read")
                                .method("\u{202E}esrever\u{202C} 逆")
                                .degradation(Degradation::high("pérdida\nde formato\t🙈")),
                        )
                        .fallback("demander à l'utilisateur ✋"),
                )
                .tool(spec("Read")),
            None,
        ),
        (
            "a zero-width space for a name (not blank to `trim`: accepted)",
            pair("\u{200B}", "Read"),
            None,
        ),
        (
            "control characters in names",
            pair("Null\0Name", "Bell\u{7}"),
            None,
        ),
        (
            "a no-break space for a name",
            CapabilityMap::new().tool(spec("\u{A0}")).tool(spec("Read")),
            Some(vec![empty(0)]),
        ),
        (
            "an ideographic space for a name",
            CapabilityMap::new()
                .tool(spec("Read"))
                .tool(spec("\u{3000}\u{2003}")),
            Some(vec![empty(1)]),
        ),
        (
            "a Cyrillic e in an alternative (a homoglyph)",
            CapabilityMap::new()
                .tool(spec("Grep"))
                .tool(spec("Read").alternative(alt("Gr\u{435}p"))),
            Some(vec![unknown("Read", "Gr\u{435}p", Some("Grep"))]),
        ),
        (
            "an alternative in another normal form (é composed vs decomposed)",
            CapabilityMap::new()
                .tool(spec("e\u{301}dit"))
                .tool(spec("Read").alternative(alt("\u{e9}dit"))),
            Some(vec![unknown("Read", "\u{e9}dit", None)]),
        ),
        (
            "a right-to-left mark after an alternative",
            CapabilityMap::new()
                .tool(spec("Read"))
                .tool(spec("Grep").alternative(alt("Read\u{200F}"))),
            Some(vec![unknown("Grep", "Read\u{200F}", Some("Read"))]),
        ),
        (
            "case folding that changes length (ß, İ)",
            CapabilityMap::new()
                .tool(spec("Straße"))
                .tool(spec("İndex").alternative(alt("STRASSE")))
                .tool(spec("Other").alternative(alt("index"))),
            Some(vec![
                unknown("İndex", "STRASSE", Some("Straße")),
                unknown("Other", "index", Some("İndex")),
            ]),
        ),
        (
            "300 CJK characters, one off (too long for a suggestion)",
            CapabilityMap::new()
                .tool(spec("語".repeat(300)))
                .tool(spec("Read").alternative(alt(format!("{}誤", "語".repeat(299))))),
            Some(vec![unknown(
                "Read",
                &format!("{}誤", "語".repeat(299)),
                None,
            )]),
        ),
    ];
    let count = cases.len();
    for (what, map, wanted) in cases {
        let found = map_fed(what, &map, &mut tally).err();
        assert_eq!(found, wanted, "{what}");
    }
    eprintln!("unicode_maps: {count} maps: {tally:?}");
}

#[test]
fn maps_with_one_megabyte_strings() {
    const MB: usize = 1 << 20;
    let started = Instant::now();
    let mut tally = Tally::default();
    let huge = |c: char| c.to_string().repeat(MB);
    let cases: Vec<(&str, CapabilityMap, Option<Vec<MapError>>)> = vec![
        (
            "a 1 MB tool name, in a cycle with Read",
            CapabilityMap::new()
                .tool(spec(huge('g')).alternative(alt("Read")))
                .tool(spec("Read").alternative(alt(huge('g')))),
            None,
        ),
        (
            "1 MB provides and fallback",
            CapabilityMap::new().tool(
                ToolSpec::new("Grep")
                    .provides(huge('p'))
                    .fallback(huge('f')),
            ),
            None,
        ),
        (
            "1 MB method and degradation",
            CapabilityMap::new()
                .tool(
                    spec("Grep").alternative(
                        AlternativeSpec::new("Read")
                            .method(huge('m'))
                            .degradation(Degradation::high(huge('d'))),
                    ),
                )
                .tool(spec("Read")),
            None,
        ),
        (
            "a 1 MB unknown alternative next to a 1 MB name one letter off",
            CapabilityMap::new()
                .tool(spec(huge('x')))
                .tool(spec("Read").alternative(alt(format!("{}y", huge('x'))))),
            Some(vec![unknown("Read", &format!("{}y", huge('x')), None)]),
        ),
        (
            "a 1 MB name declared twice",
            CapabilityMap::new()
                .tool(spec(huge('z')))
                .tool(spec(huge('z'))),
            Some(vec![twice(&huge('z'), 0, 1)]),
        ),
        (
            "a 1 MB blank name",
            CapabilityMap::new().tool(spec(huge(' '))),
            Some(vec![empty(0)]),
        ),
    ];
    let count = cases.len();
    for (what, map, wanted) in cases {
        let found = map_fed(what, &map, &mut tally).err();
        assert!(found == wanted, "{what}");
    }

    // 1 MB failure messages through real failures: a tool opened by them, a systemic event
    // whose pattern is one of them, the reports, and a snapshot through JSON and back.
    guarded("1 MB failure messages", || {
        let message = "e".repeat(MB);
        let expeditor = target();
        for _ in 0..3 {
            fail(&expeditor, "Bash", Failure::new(message.clone()));
        }
        assert_eq!(
            expeditor.state(id(&expeditor, "Bash")),
            Some(CircuitState::Open)
        );
        let Decision::Skip(skip) = expeditor.decide(id(&expeditor, "Bash")) else {
            panic!("Bash is OPEN")
        };
        let _ = skip.for_model().to_string();
        let network = Failure::with_category(message.clone(), FailureCategory::Network);
        for tool in ["WebSearch", "Read"] {
            for _ in 0..3 {
                fail(&expeditor, tool, network.clone());
            }
        }
        let event = expeditor.systemic_event().expect("a systemic event");
        assert_eq!(event.pattern.len(), MB);
        let _ = event.to_string();
        let _ = expeditor.state_table().to_string();
        let _ = expeditor.pause_report(&seed_task()).to_string();
        let bytes = serde_json::to_vec(&expeditor.snapshot()).unwrap();
        assert!(bytes.len() > 6 * MB);
        let mut tally = Tally::default();
        assert_eq!(
            fed("a snapshot with 1 MB messages", &bytes, &mut tally),
            Outcome::Accepted
        );
    });
    eprintln!(
        "maps_with_one_megabyte_strings: {count} maps and 1 MB failure messages in {:?}: {tally:?}",
        started.elapsed()
    );
}

const MANY: usize = 10_000;

#[test]
fn ten_thousand_tools_in_one_cycle() {
    let started = Instant::now();
    let names: Vec<String> = (0..MANY).map(|i| format!("tool-{i}")).collect();
    // Every tool's alternative is the next one: one cycle through all of them.
    let map = (0..MANY).fold(CapabilityMap::new(), |m, i| {
        m.tool(spec(names[i].clone()).alternative(alt(names[(i + 1) % MANY].clone())))
    });
    guarded("10,000 tools in one cycle", || {
        assert_eq!(map.validate(), Ok(()));
        // Open a run of 100 and every 97th: the tool before an OPEN one routes to nothing.
        let open: Vec<usize> = (0..100).chain((100..MANY).step_by(97)).collect();
        let expeditor = opened(&map, open.iter().copied());
        for &i in &open {
            check_routes(
                &expeditor,
                &map,
                ToolId::from_index(u32::try_from(i).unwrap()),
            );
        }
        let _ = expeditor.state_table().to_string();
        eprintln!(
            "ten_thousand_tools_in_one_cycle: {MANY} tools, {} opened and routed over, in {:?}",
            open.len(),
            started.elapsed()
        );
    });
}

#[test]
fn ten_thousand_tools_full_of_problems() {
    let started = Instant::now();
    let name = |i: usize| format!("tool-{}", if i >= MANY - 10 { i - (MANY - 10) } else { i });
    let mut map = CapabilityMap::new();
    let mut wanted = Vec::new();
    // The last 10 repeat the names of the first 10.
    for i in MANY - 10..MANY {
        wanted.push(twice(&name(i), i - (MANY - 10), i));
    }
    // Two problems each, in turn: no provides and a threshold of 0; no fallback and itself
    // as an alternative; a probe interval of 0 and an alternative repeated; a blank provides
    // and a blank fallback — or, for 10 of them, a blank provides and an unknown alternative
    // one letter off a name (with its suggestion).
    for i in 0..MANY {
        let n = name(i);
        let tool = match i % 4 {
            0 => {
                wanted.extend([no_provides(&n), zero_threshold(&n)]);
                ToolSpec::new(n).fallback("ask").threshold(0)
            }
            1 => {
                wanted.extend([no_fallback(&n), self_alt(&n)]);
                ToolSpec::new(n.clone()).provides("p").alternative(alt(n))
            }
            2 => {
                wanted.extend([zero_probe(&n), repeated(&n, "tool-1")]);
                spec(n)
                    .probe_every(0)
                    .alternative(alt("tool-1"))
                    .alternative(alt("tool-1"))
            }
            _ if i % 1000 == 3 => {
                wanted.extend([no_provides(&n), unknown(&n, "tool-3x", Some("tool-3"))]);
                spec(n).provides(" ").alternative(alt("tool-3x"))
            }
            _ => {
                wanted.extend([no_provides(&n), no_fallback(&n)]);
                ToolSpec::new(n).provides(" ").fallback("\n")
            }
        };
        map = map.tool(tool);
    }
    // Map order: the duplicates first (the name pass), then each tool's own problems.
    let problems = refused("10,000 tools full of problems", &map);
    assert_eq!(problems.len(), 2 * MANY + 10);
    assert!(problems == wanted, "every problem, in map order");
    eprintln!(
        "ten_thousand_tools_full_of_problems: {MANY} tools, {} problems, in {:?}",
        problems.len(),
        started.elapsed()
    );
}

#[test]
fn cycle_shapes_route_and_end() {
    let mut tally = Tally::default();
    let ring = |n: usize| {
        (0..n).fold(CapabilityMap::new(), |m, i| {
            m.tool(spec(format!("r{i}")).alternative(alt(format!("r{}", (i + 1) % n))))
        })
    };
    // Two rings sharing a tool: a -> b -> a and a -> c -> d -> a.
    let eight = CapabilityMap::new()
        .tool(
            spec("a")
                .alternative(alt("b"))
                .alternative(alt("c").degradation(Degradation::high("worse"))),
        )
        .tool(spec("b").alternative(alt("a")))
        .tool(spec("c").alternative(alt("d")))
        .tool(spec("d").alternative(alt("a").degradation(Degradation::unknown())));
    // Every tool names every other: high and low degradations mixed.
    let complete = |n: usize| {
        (0..n).fold(CapabilityMap::new(), |m, i| {
            let tool = (0..n)
                .filter(|&j| j != i)
                .fold(spec(format!("k{i}")), |t, j| {
                    let a = alt(format!("k{j}"));
                    t.alternative(if (i + j) % 2 == 0 {
                        a
                    } else {
                        a.degradation(Degradation::high("worse"))
                    })
                });
            m.tool(tool)
        })
    };
    let shapes = [
        ("two tools naming each other", ring(2)),
        ("a ring of 5", ring(5)),
        ("two rings sharing a tool", eight),
        ("a complete graph of 6 tools", complete(6)),
    ];
    let count = shapes.len();
    let mut subsets = 0;
    for (what, map) in shapes {
        let n = map.tools().len();
        assert_eq!(map_fed(what, &map, &mut tally), Ok(()));
        // Every set of OPEN tools; routes from each OPEN tool.
        for mask in 1..1_u32 << n {
            let open: Vec<usize> = (0..n).filter(|&i| mask & (1 << i) != 0).collect();
            guarded(&format!("{what}, tools {open:?} OPEN"), || {
                let expeditor = opened(&map, open.iter().copied());
                for &i in &open {
                    check_routes(
                        &expeditor,
                        &map,
                        ToolId::from_index(u32::try_from(i).unwrap()),
                    );
                }
            });
            subsets += 1;
        }
    }
    eprintln!(
        "cycle_shapes_route_and_end: {count} shapes, {subsets} sets of OPEN tools: {tally:?}"
    );
}

#[test]
fn bad_discover_specs_are_refused_and_change_nothing() {
    let huge = "q".repeat(1 << 20);
    let cases: Vec<(&str, ToolSpecBuilder, Vec<MapError>)> = vec![
        ("an empty name", spec(""), vec![empty(6)]),
        ("a blank name", spec(" \t "), vec![empty(6)]),
        (
            "a known name with another spec",
            spec("Grep"),
            vec![twice("Grep", 0, 6)],
        ),
        (
            "an alternative with a typo",
            spec("Find").alternative(alt("Grpe")),
            vec![unknown("Find", "Grpe", Some("Grep"))],
        ),
        (
            "itself as its alternative",
            spec("Find").alternative(alt("Find")),
            vec![self_alt("Find")],
        ),
        (
            "an alternative repeated",
            spec("Find")
                .alternative(alt("Bash"))
                .alternative(alt("Bash")),
            vec![repeated("Find", "Bash")],
        ),
        (
            "neither provides nor fallback",
            ToolSpec::new("Find"),
            vec![no_provides("Find"), no_fallback("Find")],
        ),
        (
            "a threshold and a probe interval of 0",
            spec("Find").threshold(0).probe_every(0),
            vec![zero_threshold("Find"), zero_probe("Find")],
        ),
        (
            "a 1 MB name with a 1 MB unknown alternative",
            spec(huge.clone()).alternative(alt(format!("{huge}!"))),
            vec![unknown(&huge, &format!("{huge}!"), None)],
        ),
    ];
    let count = cases.len();
    let expeditor = target();
    let before = expeditor.snapshot();
    for (what, spec, wanted) in cases {
        guarded(what, || {
            let errors = expeditor.discover(spec).expect_err("a bad spec");
            assert!(errors.problems() == wanted, "{what}");
            assert!(!errors.to_string().is_empty());
            assert_eq!(expeditor.tools().count(), 6, "nothing registered");
            assert!(expeditor.snapshot() == before, "nothing changed");
        });
    }
    for name in ["", "  "] {
        guarded(&format!("decide_named({name:?})"), || {
            let Err(errors) = expeditor.decide_named(name) else {
                panic!("a blank name is refused")
            };
            assert_eq!(errors.problems(), [empty(6)]);
            assert!(expeditor.snapshot() == before, "nothing changed");
        });
    }
    // The same spec again is no problem.
    assert_eq!(
        expeditor.discover(common::grep_spec()),
        Ok(id(&expeditor, "Grep"))
    );
    eprintln!(
        "bad_discover_specs_are_refused_and_change_nothing: {count} specs and 2 blank names \
         to decide_named, all refused"
    );
}

#[test]
fn json_maps_that_do_not_decode_or_are_refused() {
    let mut tally = Tally::default();
    let deep = format!(
        "{{\"capability_map\": {}{}}}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let tool = r#"{"tool": "A", "provides": "p", "fallback": "f""#;
    let texts: Vec<(&str, Vec<u8>)> = vec![
        ("nothing", b"".to_vec()),
        ("not JSON", b"capability_map: []".to_vec()),
        ("an array", b"[]".to_vec()),
        ("no capability_map", b"{}".to_vec()),
        ("capability_map null", br#"{"capability_map": null}"#.to_vec()),
        ("capability_map an object", br#"{"capability_map": {}}"#.to_vec()),
        (
            "an unknown top-level field",
            br#"{"capability_map": [], "tools": []}"#.to_vec(),
        ),
        (
            "a tool without its name",
            br#"{"capability_map": [{"provides": "p", "fallback": "f"}]}"#.to_vec(),
        ),
        (
            "an unknown tool field",
            format!(r#"{{"capability_map": [{tool}, "colour": "red"}}]}}"#).into_bytes(),
        ),
        (
            "the name twice",
            format!(r#"{{"capability_map": [{tool}, "tool": "B"}}]}}"#).into_bytes(),
        ),
        (
            "alternatives as a string",
            format!(r#"{{"capability_map": [{tool}, "alternatives": "B"}}]}}"#).into_bytes(),
        ),
        (
            "an alternative without its tool",
            format!(r#"{{"capability_map": [{tool}, "alternatives": [{{"method": "m"}}]}}]}}"#)
                .into_bytes(),
        ),
        (
            "a severity that does not exist",
            format!(
                r#"{{"capability_map": [{tool}, "alternatives": [{{"tool": "A", "degradation": "d", "severity": "medium"}}]}}]}}"#
            )
            .into_bytes(),
        ),
        (
            "a threshold of -1",
            format!(r#"{{"capability_map": [{tool}, "threshold": -1}}]}}"#).into_bytes(),
        ),
        (
            "a threshold of 2^32",
            format!(r#"{{"capability_map": [{tool}, "threshold": 4294967296}}]}}"#).into_bytes(),
        ),
        (
            "a probe interval as a string",
            format!(r#"{{"capability_map": [{tool}, "probe_every": "3"}}]}}"#).into_bytes(),
        ),
        (
            "a lone surrogate in a name",
            br#"{"capability_map": [{"tool": "\ud800", "provides": "p", "fallback": "f"}]}"#
                .to_vec(),
        ),
        (
            "invalid UTF-8 in a name",
            [
                &br#"{"capability_map": [{"tool": ""#[..],
                &[0xFF, 0xFE],
                &br#"", "provides": "p", "fallback": "f"}]}"#[..],
            ]
            .concat(),
        ),
        ("10,000 nested arrays", deep.into_bytes()),
    ];
    let count = texts.len();
    for (what, bytes) in &texts {
        guarded(what, || {
            let decoded = serde_json::from_slice::<CapabilityMap>(bytes);
            assert!(decoded.is_err(), "{what}: decoded");
        });
        tally.add(Outcome::ParseError);
    }
    // Decodes, and is refused with every problem.
    let text =
        br#"{"capability_map": [{"tool": "A", "alternatives": [{"tool": "A"}, {"tool": "a"}]}]}"#;
    let map: CapabilityMap = serde_json::from_slice(text).unwrap();
    let found = map_fed("a decoded map full of problems", &map, &mut tally).err();
    assert_eq!(
        found,
        Some(vec![
            no_provides("A"),
            no_fallback("A"),
            self_alt("A"),
            unknown("A", "a", Some("A")),
        ])
    );
    eprintln!(
        "json_maps_that_do_not_decode_or_are_refused: {} inputs: {tally:?}",
        count + 1
    );
    assert_eq!(tally.parse_errors, count);
    assert_eq!(tally.refused, 1);
}

// ---------------------------------------------------------------------------------------------
// Snapshots
// ---------------------------------------------------------------------------------------------

/// The two real snapshots, compact and pretty.
fn real_snapshots() -> [(&'static str, Vec<u8>, Vec<u8>); 2] {
    [("story", story_snapshot()), ("cascade", cascade_snapshot())].map(|(name, snapshot)| {
        (
            name,
            serde_json::to_vec(&snapshot).unwrap(),
            serde_json::to_vec_pretty(&snapshot).unwrap(),
        )
    })
}

#[test]
fn the_real_snapshots_are_accepted_and_driven() {
    let mut tally = Tally::default();
    for (name, compact, pretty) in real_snapshots() {
        assert_eq!(fed(name, &compact, &mut tally), Outcome::Accepted);
        assert_eq!(fed(name, &pretty, &mut tally), Outcome::Accepted);
    }
}

#[test]
fn truncated_snapshots_never_decode() {
    let started = Instant::now();
    let mut tally = Tally::default();
    for (name, compact, pretty) in real_snapshots() {
        for (form, bytes, every) in [("compact", &compact, 1), ("pretty", &pretty, 7)] {
            for end in (0..bytes.len()).step_by(every) {
                let what = format!("{name} {form} JSON cut at byte {end} of {}", bytes.len());
                let outcome = fed(&what, &bytes[..end], &mut tally);
                assert_eq!(outcome, Outcome::ParseError, "{what}");
            }
        }
    }
    eprintln!(
        "truncated_snapshots_never_decode: {} inputs in {:?}: {tally:?}",
        tally.total(),
        started.elapsed()
    );
}

/// What a corrupted byte is replaced by: 3 of these in turn for each byte.
const REPLACEMENTS: [u8; 8] = [b'0', b'9', b'-', b'"', b'}', b'x', b'\\', 0xFF];

#[test]
fn every_corrupted_byte_is_an_error_or_a_working_state() {
    let started = Instant::now();
    let mut tally = Tally::default();
    for (name, compact, _) in real_snapshots() {
        let mut bytes = compact.clone();
        for at in 0..bytes.len() {
            for k in 0..3 {
                let value = REPLACEMENTS[(3 * at + k) % REPLACEMENTS.len()];
                bytes[at] = value;
                let what = format!(
                    "{name} with byte {at} ({:?}) replaced by {:?}",
                    char::from(compact[at]),
                    char::from(value)
                );
                fed(&what, &bytes, &mut tally);
            }
            bytes[at] = compact[at];
        }
    }
    eprintln!(
        "every_corrupted_byte_is_an_error_or_a_working_state: {} inputs in {:?}: {tally:?}",
        tally.total(),
        started.elapsed()
    );
    assert!(tally.parse_errors > 0 && tally.refused > 0 && tally.accepted > 0);
}

#[test]
fn wrong_format_or_version_is_refused() {
    let mut tally = Tally::default();
    let formats = [
        json!(""),
        json!("agent-circuit-breaker/snapshot "),
        json!("CIRCUIT-BREAKER/SNAPSHOT"),
        json!("x".repeat(1 << 20)),
    ];
    for format in formats {
        edited("format", |v| v["format"] = format, &mut tally);
    }
    for version in [json!(0), json!(2), json!(u32::MAX)] {
        let mut value = serde_json::to_value(story_snapshot()).unwrap();
        value["version"] = version.clone();
        let snapshot: Snapshot = serde_json::from_value(value).unwrap();
        let target = target();
        let before = target.snapshot();
        let error = target.restore(&snapshot).unwrap_err();
        assert!(
            matches!(error, RestoreError::Version { supported: 1, .. }),
            "{error}"
        );
        assert_eq!(target.snapshot(), before);
        tally.refused += 1;
    }
    for version in [
        json!(-1),
        json!(4_294_967_296_u64),
        json!(1.0),
        json!("1"),
        json!(null),
    ] {
        edited("version", |v| v["version"] = version, &mut tally);
    }
    let target = target();
    let mut value = serde_json::to_value(story_snapshot()).unwrap();
    value["format"] = json!("another/format");
    let error = target
        .restore(&serde_json::from_value(value).unwrap())
        .unwrap_err();
    assert!(matches!(error, RestoreError::Format { .. }), "{error}");
    assert!(
        error.to_string().len() < 200,
        "a long format is cut short in the message"
    );
    eprintln!("wrong_format_or_version_is_refused: 12 inputs: {tally:?}");
    assert_eq!(tally.accepted, 0);
    assert_eq!(tally.refused + tally.parse_errors, 12);
}

#[test]
fn huge_negative_and_ill_typed_numbers() {
    let mut tally = Tally::default();
    type Edit = Box<dyn FnOnce(&mut Value)>;
    let edits: Vec<(&str, Edit)> = vec![
        ("step -1", Box::new(|v| v["step"] = json!(-1))),
        (
            "step 2^64",
            Box::new(|v| {
                v["step"] = serde_json::from_str("18446744073709551616").unwrap();
            }),
        ),
        ("step 1e300", Box::new(|v| v["step"] = json!(1e300))),
        ("step u64::MAX", Box::new(|v| v["step"] = json!(u64::MAX))),
        (
            "cycle u64::MAX",
            Box::new(|v| v["budget"]["cycle"] = json!(u64::MAX)),
        ),
        ("cycle -3", Box::new(|v| v["budget"]["cycle"] = json!(-3))),
        (
            "limit u32::MAX",
            Box::new(|v| v["budget"]["limit"] = json!(u32::MAX)),
        ),
        (
            "limit 2^32",
            Box::new(|v| v["budget"]["limit"] = json!(1_u64 << 32)),
        ),
        (
            "consumed -1",
            Box::new(|v| v["budget"]["consumed"] = json!(-1)),
        ),
        (
            "consecutive u32::MAX, total u64::MAX",
            Box::new(|v| {
                let b = breaker(v, "Bash");
                b["consecutive_failures"] = json!(u32::MAX);
                b["total_failures"] = json!(u64::MAX);
            }),
        ),
        (
            "attempts u32::MAX",
            Box::new(|v| breaker(v, "Bash")["attempts_since_open"] = json!(u32::MAX)),
        ),
        (
            "backoff u32::MAX",
            Box::new(|v| breaker(v, "Bash")["backoff"] = json!(u32::MAX)),
        ),
        (
            "opened at u64::MAX",
            Box::new(|v| breaker(v, "Bash")["opened_at_step"] = json!(u64::MAX)),
        ),
        (
            "total -5",
            Box::new(|v| breaker(v, "Bash")["total_failures"] = json!(-5)),
        ),
        (
            "consecutive 2.5",
            Box::new(|v| breaker(v, "Bash")["consecutive_failures"] = json!(2.5)),
        ),
        (
            "consecutive \"3\"",
            Box::new(|v| breaker(v, "Bash")["consecutive_failures"] = json!("3")),
        ),
        (
            "ledger step u64::MAX",
            Box::new(|v| v["budget"]["ledger"][0]["step"] = json!(u64::MAX)),
        ),
        (
            "timestamp in year 99999",
            Box::new(|v| v["budget"]["ledger"][0]["at"] = json!("99999-01-01T00:00:00Z")),
        ),
        (
            "timestamp before the epoch",
            Box::new(|v| v["budget"]["ledger"][0]["at"] = json!("1500-01-01T00:00:00Z")),
        ),
        (
            "timestamp as a number",
            Box::new(|v| v["budget"]["ledger"][0]["at"] = json!(1_796_024_103)),
        ),
        (
            "tool threshold u32::MAX",
            Box::new(|v| {
                let tools = v["tools"].as_array_mut().unwrap();
                let mut new = tools[0].clone();
                new["spec"]["tool"] = json!("huge-threshold");
                new["spec"]["alternatives"] = json!([]);
                new["spec"]["threshold"] = json!(u32::MAX);
                new["spec"]["probe_every"] = json!(u32::MAX);
                tools.push(new);
            }),
        ),
        (
            "tool threshold -1",
            Box::new(|v| {
                let tools = v["tools"].as_array_mut().unwrap();
                tools[0]["spec"]["threshold"] = json!(-1);
            }),
        ),
    ];
    let count = edits.len();
    for (what, edit) in edits {
        edited(what, edit, &mut tally);
    }
    eprintln!("huge_negative_and_ill_typed_numbers: {count} inputs: {tally:?}");
    assert_eq!(
        tally.parse_errors + tally.refused + tally.accepted,
        count,
        "every input fed"
    );
}

#[test]
fn inconsistent_records_are_refused_and_change_nothing() {
    let mut tally = Tally::default();
    type Edit = Box<dyn FnOnce(&mut Value)>;
    let refusals: Vec<(&str, Edit)> = vec![
        (
            "OPEN without the step it opened at",
            Box::new(|v| breaker(v, "Bash")["opened_at_step"] = json!(null)),
        ),
        (
            "OPEN without consecutive failures",
            Box::new(|v| breaker(v, "Bash")["consecutive_failures"] = json!(0)),
        ),
        (
            "HALF-OPEN without consecutive failures",
            Box::new(|v| {
                let b = breaker(v, "Bash");
                b["state"] = json!("HALF-OPEN");
                b["consecutive_failures"] = json!(0);
            }),
        ),
        (
            "more consecutive failures than in total",
            Box::new(|v| breaker(v, "Bash")["total_failures"] = json!(1)),
        ),
        (
            "dropped ledger lines charged beyond what was dropped (R7.1)",
            Box::new(|v| {
                v["budget"]["dropped"] = json!({"lines": 1, "charged": 2, "systemic": 0});
            }),
        ),
        (
            "dropped charged lines the budget does not count (R7.1)",
            Box::new(|v| {
                v["budget"]["dropped"] = json!({"lines": 3, "charged": 3, "systemic": 0});
            }),
        ),
        (
            "dropped pending lines of a tool beyond what was dropped (R7.1)",
            Box::new(|v| {
                v["budget"]["dropped"] =
                    json!({"lines": 1, "charged": 0, "systemic": 0, "pending": [["Bash", 2]]});
            }),
        ),
        (
            "17 recent failures",
            Box::new(|v| {
                let b = breaker(v, "Bash");
                let one = b["recent_failures"][0].clone();
                b["recent_failures"] = Value::Array(vec![one; 17]);
                b["consecutive_failures"] = json!(17);
                b["total_failures"] = json!(17);
            }),
        ),
        (
            "a state that does not exist",
            Box::new(|v| breaker(v, "Bash")["state"] = json!("AJAR")),
        ),
        (
            "an unknown breaker field",
            Box::new(|v| breaker(v, "Bash")["probe"] = json!(3)),
        ),
        (
            "the same tool twice",
            Box::new(|v| {
                let tools = v["tools"].as_array_mut().unwrap();
                let first = tools[0].clone();
                tools.push(first);
            }),
        ),
        (
            "more budget consumed than the limit",
            Box::new(|v| v["budget"]["consumed"] = json!(11)),
        ),
        (
            "consumed not matching the charged lines",
            Box::new(|v| v["budget"]["consumed"] = json!(0)),
        ),
        (
            "a budget of 0",
            Box::new(|v| v["budget"]["limit"] = json!(0)),
        ),
        ("cycle 0", Box::new(|v| v["budget"]["cycle"] = json!(0))),
        (
            "a ledger line without its tool",
            Box::new(|v| {
                v["budget"]["ledger"][0]
                    .as_object_mut()
                    .unwrap()
                    .remove("tool");
            }),
        ),
        (
            "a new tool naming itself",
            Box::new(|v| {
                let tools = v["tools"].as_array_mut().unwrap();
                let mut new = tools[0].clone();
                new["spec"]["tool"] = json!("Ouroboros");
                new["spec"]["alternatives"] = json!([{"tool": "Ouroboros"}]);
                tools.push(new);
            }),
        ),
        (
            "a new tool naming no tool",
            Box::new(|v| {
                let tools = v["tools"].as_array_mut().unwrap();
                let mut new = tools[0].clone();
                new["spec"]["tool"] = json!("Lonely");
                new["spec"]["alternatives"] = json!([{"tool": "Nobody"}]);
                tools.push(new);
            }),
        ),
        (
            "a new tool with an empty name",
            Box::new(|v| {
                let tools = v["tools"].as_array_mut().unwrap();
                let mut new = tools[0].clone();
                new["spec"]["tool"] = json!(" ");
                new["spec"]["alternatives"] = json!([]);
                tools.push(new);
            }),
        ),
        (
            "a new tool with no fallback",
            Box::new(|v| {
                let tools = v["tools"].as_array_mut().unwrap();
                let mut new = tools[0].clone();
                new["spec"]["tool"] = json!("NoFallback");
                new["spec"]["alternatives"] = json!([]);
                new["spec"]["fallback"] = json!("");
                tools.push(new);
            }),
        ),
        (
            "a CLOSED tool with more consecutive failures than in total",
            Box::new(|v| {
                breaker(v, "Grep")["consecutive_failures"] = json!(9);
            }),
        ),
    ];
    let count = refusals.len();
    for (what, edit) in refusals {
        let before = tally.parse_errors + tally.refused;
        edited(what, edit, &mut tally);
        assert_eq!(
            tally.parse_errors + tally.refused,
            before + 1,
            "{what}: should be refused"
        );
    }
    // Odd but harmless: accepted, and the expeditor works afterwards.
    type Accept = Box<dyn FnOnce(&mut Value)>;
    let accepted: Vec<(&str, Accept)> = vec![
        (
            "a systemic event naming unknown tools",
            Box::new(|v| {
                v["systemic"] = json!({
                    "category": "network", "pattern": "p", "tools": ["Nobody", "Nothing"],
                    "step": 1, "at": "2026-11-30T07:35:03Z", "recovered": false
                });
            }),
        ),
        (
            "a systemic event naming no tool",
            Box::new(|v| {
                v["systemic"] = json!({
                    "category": null, "pattern": "", "tools": [],
                    "step": 0, "at": "2026-11-30T07:35:03Z", "recovered": false
                });
            }),
        ),
        (
            "HALF-OPEN (its probe slot comes back free)",
            Box::new(|v| breaker(v, "Bash")["state"] = json!("HALF-OPEN")),
        ),
        (
            "a known tool with another spec (the target keeps its own)",
            Box::new(|v| {
                let tools = v["tools"].as_array_mut().unwrap();
                tools[0]["spec"]["alternatives"] = json!([{"tool": "Nobody"}]);
            }),
        ),
    ];
    let accepted_count = accepted.len();
    for (what, edit) in accepted {
        let before = tally.accepted;
        edited(what, edit, &mut tally);
        assert_eq!(tally.accepted, before + 1, "{what}: should be accepted");
    }
    eprintln!(
        "inconsistent_records_are_refused_and_change_nothing: {} inputs: {tally:?}",
        count + accepted_count
    );
}

#[test]
fn a_refused_snapshot_leaves_a_busy_target_unchanged() {
    // The target has a history of its own: OPEN tools, a ledger, a pause.
    let target = target();
    target.advance_step();
    open3(&target, "Bash");
    let _ = fail(&target, "Grep", "permission denied");
    let _ = fail(&target, "Grep", "permission denied");
    let before = target.snapshot();
    let table = target.state_table().to_string();
    let mut value = serde_json::to_value(story_snapshot()).unwrap();
    // Valid up to its last tool, which is broken.
    let tools = value["tools"].as_array_mut().unwrap();
    let last = tools.len() - 1;
    tools[last]["breaker"]["consecutive_failures"] = json!(1000);
    let snapshot: Snapshot = serde_json::from_value(value).unwrap();
    assert!(target.restore(&snapshot).is_err());
    assert_eq!(target.snapshot(), before);
    assert_eq!(target.state_table().to_string(), table);
    assert_eq!(target.tool("mcp_fetch"), None, "no tool half-registered");
    assert_eq!(target.tool("WebFetch"), None, "no tool half-registered");
}

// ---------------------------------------------------------------------------------------------
// Regressions: bugs this file found, since fixed
// ---------------------------------------------------------------------------------------------

/// R9.4 across a restore: a snapshot taken during a systemic event, restored into an expeditor
/// with another budget, must still count the event once. `Budget::rebase` used to charge every
/// ledger line again, the folded (`systemic`) and held (`pending`) ones included; it now skips
/// them.
#[test]
fn restoring_under_another_budget_keeps_the_event_charged_once() {
    let snapshot = cascade_snapshot();
    assert_eq!(snapshot.budget.consumed(), 1, "the event, once");
    let other = expeditor_with(
        seed_map().tool(webfetch_spec()),
        Policy::default(),
        &clock(),
    );
    other.restore(&snapshot).unwrap();
    let budget = other.budget();
    let flags: Vec<(bool, bool, bool)> = budget
        .ledger()
        .iter()
        .map(|e| (e.charged, e.pending, e.systemic))
        .collect();
    assert_eq!(
        budget.consumed(),
        1,
        "(charged, pending, systemic): {flags:?}"
    );
}

/// A held (`pending`) failure charged again when its tool recovers: the restored budget then
/// no longer matches its ledger. Restore used to accept a ledger line that is both `charged`
/// and `pending` (it checked only the count of charged lines), and `Budget::rebase` produced
/// such lines from a valid snapshot; `Budget::check` now refuses them.
#[test]
fn a_ledger_line_charged_and_pending_is_refused() {
    let mut value = serde_json::to_value(story_snapshot()).unwrap();
    let ledger = value["budget"]["ledger"].as_array_mut().unwrap();
    let last = ledger.len() - 1;
    assert_eq!(ledger[last]["pending"], json!(true));
    ledger[last]["charged"] = json!(true);
    let consumed = value["budget"]["consumed"].as_u64().unwrap();
    value["budget"]["consumed"] = json!(consumed + 1);
    let snapshot: Snapshot = serde_json::from_value(value).unwrap();
    let target = expeditor_with(seed_map().tool(webfetch_spec()), policy(), &clock());
    let accepted = target.restore(&snapshot).is_ok();
    if accepted {
        // WebFetch recovers: its held failure is charged (again).
        succeed(&target, "WebFetch");
        let budget = target.budget();
        let charged = budget.ledger().iter().filter(|e| e.charged).count();
        assert_eq!(
            usize::try_from(budget.consumed()).unwrap(),
            charged,
            "consumed {} vs {charged} charged lines",
            budget.consumed()
        );
    }
    assert!(!accepted, "a line both charged and pending is inconsistent");
}

/// "Did you mean" used to run a full edit-distance table between an unknown alternative and
/// every tool name: O(len × len) time and memory, for every unknown alternative and every
/// name. Two 8,000-character names took ~3 s and 512 MB (debug); two 1 MB names asked for 8 TB
/// and aborted the process; 10,000 tools each naming an unknown alternative took ~10 minutes.
/// The same check runs in `discover` and `restore`, on untrusted input. It now compares only
/// names of at most 256 characters whose lengths are within 3 of each other.
#[test]
fn did_you_mean_is_bounded_for_huge_names() {
    let started = Instant::now();
    // 8,000 characters each: a 64M-cell table (512 MB). 1 MB each would ask for 8 TB.
    let n = 8_000;
    let map = CapabilityMap::new()
        .tool(spec("x".repeat(n)).alternative(alt("y".repeat(n))))
        .tool(spec("Read"));
    let problems = refused("8 kB unknown alternative next to an 8 kB name", &map);
    assert!(matches!(problems[0], MapError::UnknownAlternative { .. }));
    assert!(
        started.elapsed().as_millis() < 500,
        "validation took {:?}",
        started.elapsed()
    );
}

/// After a systemic event over many tools is confirmed, every decide on a tool backing off
/// used to compute its probe interval from the chains of every backing-off tool: O(n³) under
/// the expeditor's lock (600 tools: 0.3 s per decide in debug; 2,000: ~12 s). The chain shares
/// are now computed once per change of who is backing off, O(n²): the first decide pays it
/// (~0.3 s in debug for 2,000 tools in one cycle), the others do not.
#[test]
fn deciding_after_a_large_cascade_stays_fast() {
    let n = 2000;
    let names: Vec<String> = (0..n).map(|i| format!("mcp-{i}")).collect();
    let map = (0..n).fold(CapabilityMap::new(), |m, i| {
        m.tool(spec(names[i].clone()).alternative(alt(names[(i + 1) % n].clone())))
    });
    let policy = Policy::builder().threshold(1).budget(100).build().unwrap();
    let expeditor = expeditor_with(map, policy, &clock());
    // Every tool called at once, every call failing with the same network error: one event.
    let tickets: Vec<_> = expeditor
        .tools()
        .map(|t| match expeditor.decide(t) {
            Decision::Call(ticket) => ticket,
            other => panic!("{}", other.kind()),
        })
        .collect();
    for ticket in tickets {
        let _ = ticket.failure(refused_conn());
    }
    assert_eq!(expeditor.systemic_event().unwrap().tools.len(), n);
    expeditor.confirm_recovery().unwrap();
    let started = Instant::now();
    let _ = expeditor.decide(ToolId::from_index(0));
    let first = started.elapsed();
    for i in 1..n {
        let _ = expeditor.decide(ToolId::from_index(u32::try_from(i).unwrap()));
    }
    let all = started.elapsed();
    eprintln!("deciding_after_a_large_cascade_stays_fast: first decide {first:?}, all {n} {all:?}");
    assert!(all.as_millis() < 2_000, "{n} decides took {all:?}");
}

/// A snapshot at step u64::MAX used to be accepted; the next `advance_step` returned u64::MAX
/// while the counter wrapped to 0, so steps ran backwards and a circuit counting probes in
/// steps never probed again. A step beyond `MAX_STEP` (2^62, 146 years of a step a
/// nanosecond) is now refused, with nothing changed, and from `MAX_STEP` the counter, one
/// plain increment, is 2^62 steps from wrapping.
#[test]
fn the_step_counter_does_not_wrap() {
    use agent_circuit_breaker::snapshot::{MAX_STEP, RestoreError};
    let target = target();
    let before = target.snapshot();
    for step in [u64::MAX, MAX_STEP + 1] {
        let mut value = serde_json::to_value(story_snapshot()).unwrap();
        value["step"] = json!(step);
        let error = target
            .restore(&serde_json::from_value(value).unwrap())
            .unwrap_err();
        assert_eq!(error, RestoreError::Step { found: step });
        assert!(
            error.to_string().contains("beyond the last step"),
            "{error}"
        );
        assert_eq!(target.snapshot(), before, "nothing changed");
    }
    let mut value = serde_json::to_value(story_snapshot()).unwrap();
    value["step"] = json!(MAX_STEP);
    target
        .restore(&serde_json::from_value(value).unwrap())
        .unwrap();
    let returned = target.advance_step();
    assert_eq!(returned, MAX_STEP + 1);
    assert_eq!(target.step(), returned);
}

// ---------------------------------------------------------------------------------------------
// Bugs found, not fixed
// ---------------------------------------------------------------------------------------------

/// The chain shares (R9.5) were computed again, O(n²) under the expeditor's lock, after every
/// tool that recovered: after a systemic event over 2,000 tools, each decide that followed a
/// recovery cost ~0.26 s in debug, all 2,000 recoveries about 9 minutes. A tool leaving the
/// backoff only shortens chains, so the shares in force stay within the cap: since the fix
/// they are kept until the next confirmed recovery.
#[test]
fn recovering_after_a_large_cascade_stays_fast() {
    let n = 2000;
    let names: Vec<String> = (0..n).map(|i| format!("mcp-{i}")).collect();
    let map = (0..n).fold(CapabilityMap::new(), |m, i| {
        m.tool(spec(names[i].clone()).alternative(alt(names[(i + 1) % n].clone())))
    });
    let policy = Policy::builder()
        .threshold(1)
        .budget(100)
        .probe_unit(ProbeUnit::Steps)
        .build()
        .unwrap();
    let expeditor = expeditor_with(map, policy, &clock());
    let tickets: Vec<_> = expeditor
        .tools()
        .map(|t| match expeditor.decide(t) {
            Decision::Call(ticket) => ticket,
            other => panic!("{}", other.kind()),
        })
        .collect();
    for ticket in tickets {
        let _ = ticket.failure(refused_conn());
    }
    expeditor.confirm_recovery().unwrap();
    for _ in 0..10 {
        expeditor.advance_step();
    }
    // Every probe is due: 50 tools probed and recovered, one after another.
    let started = Instant::now();
    for i in 0..50 {
        let Decision::Probe(ticket) = expeditor.decide(ToolId::from_index(i)) else {
            panic!("mcp-{i}: a probe is due")
        };
        ticket.success();
    }
    assert!(
        started.elapsed().as_millis() < 1_000,
        "50 probes and recoveries took {:?}",
        started.elapsed()
    );
}
