//! Model-based property tests of the state machine: random sequences of operations —
//! decide, then record a success, record a failure with a category, give the ticket back (a
//! cancellation) or hold it for later; advance the step; start a new cycle; confirm recovery
//! — over 3 to 5 tools with alternatives (always the cycle Grep <-> Read), run against the
//! expeditor, against the engine driven directly (`driver`: the state machine as a plain
//! value with no lock, its commands given the step and the time) and against a small
//! reference model written from the requirements (`docs/requirements.md`, `model`):
//!
//! - R3: CLOSED -> OPEN at the threshold of consecutive failures; a probe is due every N
//!   attempts (or steps) after opening, OPEN -> HALF-OPEN; exactly one probe at a time, and a
//!   dropped probe frees the slot; HALF-OPEN -> CLOSED on a successful probe, -> OPEN on a
//!   failed one. A late CALL (issued before the circuit left CLOSED) counts its failure but
//!   only the live probe moves a HALF-OPEN circuit.
//! - R4: a SKIP's routes are the alternatives with low degradation, then high (unknown counts
//!   as high), passing over OPEN ones, then the fallback, then scope reduction; each listed
//!   once, also when tools are each other's alternatives.
//! - R7: each failure is written down and charged while budget is left; at the budget every
//!   call pauses until a new cycle; the budget is never exceeded; the ledger keeps every
//!   failure (uncharged ones too).
//! - R9: only circuits whose whole current run is infrastructure failures (network,
//!   filesystem, permission) correlate; among them a second circuit opening with the category
//!   of one not CLOSED that last failed within the cascade window, or 3 circuits opening
//!   within the window, is one systemic event (tool-local categories — timeout, not found,
//!   other — never correlate, R9.6): every call pauses until `confirm_recovery`, the involved
//!   tools' runs are folded into one ledger line charged once (R9.4), failures during the
//!   event join it uncharged, and afterwards probes back off (R9.5: base, 2 base, 4 base, ...
//!   capped, and along a chain of tools routing to each other the intervals share the cap).
//!   Where the requirements leave the charging of a failure that *may* belong to an event
//!   open, the model follows the crate's documented rule (`cascade` module): a failure of a
//!   CLOSED tool whose infrastructure category matches that of a circuit not CLOSED (the
//!   category its current run shares) which last failed within the window is held uncharged
//!   ("pending") and charged if its tool recovers instead.
//!
//! After every operation (`case`) the decision (kind, skip reason, routes, pause reason,
//! probe or call), the recorded outcome, every breaker (state, consecutive and total
//! failures, run of categories, step opened, attempts, probe in flight), the budget
//! (consumed, limit, every ledger line and its flags), the pause and the systemic event are
//! compared with the model, for the expeditor and for the engine alike (one comparison,
//! `Case::check_party`), and the invariants are checked: consumed <= limit and equal to the
//! charged lines; at most one live probe ticket per tool, matching the breaker's probe in
//! flight. The engine and the expeditor are also compared with each other where the model
//! says nothing: whole records (last failure and success, backoff, attempts also when
//! counted in steps), the whole `Recorded`, the recovered systemic event, and every event
//! the expeditor's observer saw, in order. At the end every held ticket is given back, and
//! then every tool is asked once more: a HALF-OPEN tool with no live probe must give the
//! probe (never stuck). The engine's snapshot must equal the expeditor's, and a snapshot
//! restored into a fresh expeditor must give the same snapshot.
//!
//! The engine is driven as the expeditor drives it, with a lock-free mirror of its own
//! (`crate::expeditor::mirror`): a decision asks the mirror's healthy path and rejection path first and
//! the engine only when they leave it the decision, a success on a healthy tool is absorbed
//! by the mirror, and the mirror is published after every command. The two cells the engine
//! leaves to the mirror (the attempts of an OPEN tool, the last success) are read from it.
//! Both properties check that the rejection path and the backing-off case (an OPEN tool the
//! rejection path leaves to the engine) are reached.
//!
//! Two properties: `model_uncorrelated` gives each tool its own failure category (or
//! `other`), so categories never correlate and only the window rule of R9 can fire, and only
//! for the tools whose own category is an infrastructure one (3000 cases); `model_cascades`
//! draws categories from {network, filesystem, not found, other} so that circuits correlate,
//! failures are held pending, and shared tool-local categories are seen not to correlate
//! (2000 cases). `PROPTEST_CASES` overrides both; the cases are fixed (the same in every
//! run) and `PROPTEST_SEED=<n>` explores others. Two cases are pinned as tests of their
//! own: backoff shares are fixed at the confirmed recovery
//! (`regression_shares_are_fixed_at_the_confirmed_recovery`), and failed probes after a
//! confirmed recovery are charged, not held pending
//! (`failed_probes_after_a_confirmed_recovery_are_charged`).

mod case;
mod driver;
mod model;
mod setup;

use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::test_runner::{Config, TestRunner};

use crate::{
    CapabilityMap, Decision, Expeditor, Failure, FailureCategory, PauseReason, Policy, ToolSpec,
};
use case::run_case;
use setup::{Op, Outcome, Setup, ToolSetup};

/// How often the interesting things happened, over all cases of a property.
#[derive(Default)]
struct Coverage {
    probes: AtomicUsize,
    closed_by_probe: AtomicUsize,
    reopened: AtomicUsize,
    budget_pauses: AtomicUsize,
    systemic: AtomicUsize,
    recoveries: AtomicUsize,
    pending: AtomicUsize,
    probe_in_flight_skips: AtomicUsize,
    late_failures: AtomicUsize,
    backoff_probes: AtomicUsize,
    operations: AtomicUsize,
    /// Decisions the engine driver made without the engine (the lock-free rejection path).
    lock_free_rejections: AtomicUsize,
    /// Decisions on an OPEN tool backing off after a cascade, which the rejection path
    /// leaves to the engine.
    backing_off_decides: AtomicUsize,
}

impl Coverage {
    fn bump(counter: &AtomicUsize) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    fn get(counter: &AtomicUsize) -> usize {
        counter.load(Ordering::Relaxed)
    }
}

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn run_property(name: &str, default_cases: u32, correlated: bool) -> Coverage {
    let coverage = Coverage::default();
    let config = Config {
        cases: cases(default_cases),
        failure_persistence: None,
        ..Config::default()
    };
    // Fixed, so that CI runs the same cases every time; `PROPTEST_SEED=<n>` explores others.
    let seed: u64 = std::env::var("PROPTEST_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x00C1_2C01_7B2E_A4E2);
    let mut bytes = [0u8; 32];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(
            &(seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_le_bytes(),
        );
    }
    let rng = proptest::test_runner::TestRng::from_seed(
        proptest::test_runner::RngAlgorithm::ChaCha,
        &bytes,
    );
    let mut runner = TestRunner::new_with_rng(config, rng);
    let result = runner.run(&(setup::setup(), setup::ops()), |(setup, ops)| {
        run_case(&setup, &ops, correlated, &coverage)
    });
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
    let c = &coverage;
    eprintln!(
        "{name}: {} operations; {} probes ({} closed, {} re-opened), {} probe-in-flight skips, \
         {} late CALL failures, {} budget pauses, {} systemic events, {} recoveries, \
         {} probes backed off twice or more, {} pending failures; engine driver: {} lock-free \
         rejections, {} backing-off OPEN tools left to the engine",
        Coverage::get(&c.operations),
        Coverage::get(&c.probes),
        Coverage::get(&c.closed_by_probe),
        Coverage::get(&c.reopened),
        Coverage::get(&c.probe_in_flight_skips),
        Coverage::get(&c.late_failures),
        Coverage::get(&c.budget_pauses),
        Coverage::get(&c.systemic),
        Coverage::get(&c.recoveries),
        Coverage::get(&c.backoff_probes),
        Coverage::get(&c.pending),
        Coverage::get(&c.lock_free_rejections),
        Coverage::get(&c.backing_off_decides),
    );
    coverage
}

#[test]
fn model_uncorrelated() {
    let c = run_property("model_uncorrelated", 3000, false);
    // The generator reaches every part of the state machine (with a wide margin).
    for (what, counter) in [
        ("probes", &c.probes),
        ("closing probes", &c.closed_by_probe),
        ("failed probes", &c.reopened),
        ("probe-in-flight skips", &c.probe_in_flight_skips),
        ("budget pauses", &c.budget_pauses),
        ("systemic events", &c.systemic),
        ("recoveries", &c.recoveries),
        ("backed-off probes", &c.backoff_probes),
        ("lock-free rejections", &c.lock_free_rejections),
        ("backing-off decides", &c.backing_off_decides),
    ] {
        assert!(Coverage::get(counter) > 0, "no {what} generated");
    }
    assert_eq!(Coverage::get(&c.pending), 0, "categories never correlate");
}

#[test]
fn model_cascades() {
    let c = run_property("model_cascades", 2000, true);
    for (what, counter) in [
        ("systemic events", &c.systemic),
        ("recoveries", &c.recoveries),
        ("backed-off probes", &c.backoff_probes),
        ("pending failures", &c.pending),
        ("lock-free rejections", &c.lock_free_rejections),
        ("backing-off decides", &c.backing_off_decides),
    ] {
        assert!(Coverage::get(counter) > 0, "no {what} generated");
    }
}

/// The id of the tool named `name`.
fn id(expeditor: &Expeditor, name: &str) -> crate::expeditor::ToolId {
    expeditor
        .tool(name)
        .unwrap_or_else(|| panic!("tool {name} is not registered"))
}

/// Asks the expeditor and, given a CALL or PROBE, records a failure through the ticket.
fn fail(expeditor: &Expeditor, name: &str, failure: Failure) -> crate::expeditor::Recorded {
    match expeditor.decide(id(expeditor, name)) {
        Decision::Call(ticket) | Decision::Probe(ticket) => ticket.failure(failure),
        other => panic!("expected CALL or PROBE for {name}, got {}", other.kind()),
    }
}

/// Two tools that share infrastructure stay down after a confirmed recovery. Their failed
/// probes must be charged (R3.2: "HALF-OPEN -> OPEN on a failed probe (and the budget is
/// charged)"; R7: the budget counts failures and pauses at its limit). A failed probe only
/// re-opens a circuit, which never starts a systemic event, so holding it "pending" waits for
/// an event that cannot come from it.
#[test]
fn failed_probes_after_a_confirmed_recovery_are_charged() {
    let policy = Policy::builder().budget(5).build().unwrap();
    let map = CapabilityMap::new()
        .tool(
            ToolSpec::new("WebSearch")
                .provides("search")
                .fallback("ask the user"),
        )
        .tool(
            ToolSpec::new("WebFetch")
                .provides("fetch")
                .fallback("ask the user"),
        );
    let expeditor = Expeditor::builder(map)
        .policy(policy)
        .clock(setup::clock())
        .build()
        .unwrap();
    let refused = || Failure::with_category("connection refused", FailureCategory::Network);
    for tool in ["WebSearch", "WebFetch"] {
        for _ in 0..3 {
            let _ = fail(&expeditor, tool, refused());
        }
    }
    assert!(matches!(
        expeditor.paused(),
        Some(PauseReason::Systemic { .. })
    ));
    assert_eq!(expeditor.budget().consumed(), 1, "one charge for the event");
    expeditor.confirm_recovery().expect("an event in force");
    // Both tools are still down: each probe fails. Ten failed probes, a budget of 5.
    let mut failed_probes = 0;
    for _ in 0..200 {
        if failed_probes == 10 || expeditor.paused().is_some() {
            break;
        }
        for tool in ["WebSearch", "WebFetch"] {
            if let Decision::Probe(ticket) = expeditor.decide(id(&expeditor, tool)) {
                let _ = ticket.failure(refused());
                failed_probes += 1;
            }
        }
        expeditor.advance_step();
    }
    let budget = expeditor.budget();
    let held = budget.ledger().iter().filter(|e| e.pending).count();
    assert!(
        matches!(
            expeditor.paused(),
            Some(PauseReason::BudgetExhausted { .. })
        ),
        "{failed_probes} failed probes, budget {} / {}, {held} ledger lines held pending, \
         pause: {:?}",
        budget.consumed(),
        budget.limit(),
        expeditor.paused()
    );
}

/// A probe held across a confirmed recovery and resolved after it must not change the backoff
/// shares computed at the recovery: shares computed lazily, at the next decide, would already
/// leave out the tool that probe closed, and give the others a larger share than R9.5 allows.
#[test]
fn regression_shares_are_fixed_at_the_confirmed_recovery() {
    let tool = || ToolSetup {
        alternatives: vec![],
        threshold: None,
        probe_every: None,
    };
    let setup = Setup {
        tools: 3,
        threshold: 1,
        budget: 7,
        probe_every: 2,
        steps: false,
        window: 1,
        cap: 4,
        detection: true,
        per_tool: vec![tool(), tool(), tool(), tool(), tool()],
    };
    let decide = |tool: u8, then: Option<Outcome>| Op::Decide { tool, then };
    let ops = vec![
        decide(4, Some(Outcome::Failure(0))),
        decide(25, Some(Outcome::Success)),
        decide(91, None),
        Op::Resolve {
            slot: 0,
            outcome: Outcome::Success,
        },
        decide(9, Some(Outcome::Failure(0))),
        decide(11, Some(Outcome::Failure(0))),
        decide(9, Some(Outcome::Success)),
        decide(24, None),
        decide(235, Some(Outcome::Failure(0))),
        Op::Confirm,
        Op::Resolve {
            slot: 0,
            outcome: Outcome::Success,
        },
        decide(22, Some(Outcome::Success)),
        decide(235, Some(Outcome::Failure(0))),
        decide(121, Some(Outcome::Success)),
    ];
    run_case(&setup, &ops, false, &Coverage::default()).unwrap();
}
