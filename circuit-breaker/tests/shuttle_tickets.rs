//! Model check of the ticket path with shuttle (R3.2, R3.6, R7): the runtime's
//! locks and atomics become shuttle's (`--cfg shuttle`), and shuttle explores thread
//! interleavings — randomly and with PCT — of callers racing on one tool. After every
//! interleaving:
//!
//! - at most one PROBE is in flight at any moment (R3.6);
//! - no failure count is lost: the ledger holds every failure the threads recorded;
//! - the budget is never exceeded (R7);
//! - no tool is left HALF-OPEN with its slot taken after a probe ticket was dropped.
//!
//! Run: `RUSTFLAGS="--cfg shuttle" cargo test -p agent-circuit-breaker --test shuttle_tickets --release`
//! (CI does, in its own target directory). The numbers of interleavings explored are the
//! `ITERATIONS` constants below.
#![cfg(shuttle)]

use std::sync::Arc;

use agent_circuit_breaker::{
    CapabilityMap, CircuitState, Decision, Expeditor, Policy, ToolSpec, expeditor::ToolId,
};
use shuttle::sync::atomic::{AtomicUsize, Ordering};
use shuttle::thread;

/// Interleavings explored per scheduler and scenario.
const ITERATIONS: usize = 1_500;

/// The random scheduler's seed: CI explores the same schedules every run (PCT draws its own).
const SEED: u64 = 0x5EED_C1BC_0001;

fn expeditor(budget: u32) -> (Arc<Expeditor>, ToolId) {
    let map = CapabilityMap::new().tool(
        ToolSpec::new("Bash")
            .provides("command execution")
            .fallback("report commands that need to be run manually"),
    );
    let policy = Policy::builder()
        .threshold(2)
        .budget(budget)
        .probe_every(1)
        .build()
        .expect("valid policy");
    let expeditor = Expeditor::builder(map)
        .policy(policy)
        .build()
        .expect("valid map");
    let bash = expeditor.tool("Bash").expect("declared");
    (Arc::new(expeditor), bash)
}

/// What a racing caller does with the ticket it gets.
#[derive(Clone, Copy)]
enum Outcome {
    Succeed,
    Fail,
    Drop,
}

/// Three callers race on a tool that is OPEN with its probe due: each decides, and on a
/// ticket does `outcome`. Returns (failures recorded by the callers, probes granted).
fn race(expeditor: &Arc<Expeditor>, tool: ToolId, outcomes: [Outcome; 3]) -> (usize, usize) {
    let in_flight = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(AtomicUsize::new(0));
    let probes = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = outcomes
        .into_iter()
        .map(|outcome| {
            let expeditor = Arc::clone(expeditor);
            let in_flight = Arc::clone(&in_flight);
            let failures = Arc::clone(&failures);
            let probes = Arc::clone(&probes);
            thread::spawn(move || match expeditor.decide(tool) {
                Decision::Probe(ticket) => {
                    probes.fetch_add(1, Ordering::SeqCst);
                    let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                    assert_eq!(now, 1, "R3.6: two probes in flight at once");
                    // The probe is in flight here; let the others run.
                    thread::yield_now();
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    match outcome {
                        Outcome::Succeed => ticket.success(),
                        Outcome::Fail => {
                            failures.fetch_add(1, Ordering::SeqCst);
                            let _ = ticket.failure("timeout after 120s");
                        }
                        Outcome::Drop => drop(ticket),
                    }
                }
                Decision::Call(ticket) => match outcome {
                    Outcome::Succeed => ticket.success(),
                    Outcome::Fail => {
                        failures.fetch_add(1, Ordering::SeqCst);
                        let _ = ticket.failure("timeout after 120s");
                    }
                    Outcome::Drop => drop(ticket),
                },
                Decision::Skip(_) | Decision::Pause(_) => {}
            })
        })
        .collect();
    for handle in handles {
        handle.join().expect("no caller panics");
    }
    (
        failures.load(Ordering::SeqCst),
        probes.load(Ordering::SeqCst),
    )
}

/// Opens the tool with two failures (threshold 2); its probe is due on the next attempt.
fn open(expeditor: &Expeditor, tool: ToolId) {
    for _ in 0..2 {
        if let Decision::Call(ticket) = expeditor.decide(tool) {
            let _ = ticket.failure("timeout after 120s");
        }
    }
    assert_eq!(expeditor.state(tool), Some(CircuitState::Open));
}

fn scenario(outcomes: [Outcome; 3], budget: u32) {
    let (expeditor, bash) = expeditor(budget);
    open(&expeditor, bash);
    let (failures, probes) = race(&expeditor, bash, outcomes);
    assert!(probes <= 3);
    let budget = expeditor.budget();
    // No lost failure counts: the two that opened it plus every one the callers recorded.
    assert_eq!(budget.ledger().len(), 2 + failures);
    // The budget is never exceeded.
    assert!(budget.consumed() <= budget.limit());
    let breaker = expeditor.breaker(bash).expect("known tool");
    assert!(
        !breaker.probe_in_flight(),
        "every ticket is gone: no probe may be in flight"
    );
    // Not stuck: unless paused, the next caller is not turned away for a probe in flight.
    if expeditor.paused().is_none() {
        let next = expeditor.decide(bash);
        assert!(
            !matches!(&next, Decision::Skip(s) if s.reason() == agent_circuit_breaker::SkipReason::ProbeInFlight),
            "a dropped probe left the tool stuck HALF-OPEN"
        );
    }
}

#[test]
fn r3_6_one_probe_at_a_time_and_nothing_lost_random_schedules() {
    use Outcome::{Drop, Fail, Succeed};
    for outcomes in [
        [Succeed, Fail, Drop],
        [Drop, Drop, Succeed],
        [Fail, Fail, Fail],
        [Drop, Fail, Drop],
    ] {
        shuttle::check_random_with_seed(move || scenario(outcomes, 100), SEED, ITERATIONS);
    }
}

#[test]
fn r3_6_one_probe_at_a_time_and_nothing_lost_pct_schedules() {
    use Outcome::{Drop, Fail, Succeed};
    for outcomes in [[Succeed, Fail, Drop], [Drop, Drop, Fail]] {
        shuttle::check_pct(move || scenario(outcomes, 100), ITERATIONS, 3);
    }
}

#[test]
fn r7_the_budget_is_never_exceeded_when_failures_race() {
    // Budget 3: the two failures that open the tool leave one; three racing failures
    // (calls issued before the budget ran out are still recorded) must not push it over.
    shuttle::check_random_with_seed(
        || {
            let (expeditor, bash) = expeditor(3);
            let failures = Arc::new(AtomicUsize::new(0));
            let handles: Vec<_> = (0..3)
                .map(|_| {
                    let expeditor = Arc::clone(&expeditor);
                    let failures = Arc::clone(&failures);
                    thread::spawn(move || {
                        if let Decision::Call(ticket) | Decision::Probe(ticket) =
                            expeditor.decide(bash)
                        {
                            failures.fetch_add(1, Ordering::SeqCst);
                            let _ = ticket.failure("permission denied");
                        }
                    })
                })
                .collect();
            for handle in handles {
                handle.join().expect("no caller panics");
            }
            let budget = expeditor.budget();
            assert!(budget.consumed() <= 3);
            assert_eq!(budget.ledger().len(), failures.load(Ordering::SeqCst));
        },
        SEED,
        ITERATIONS,
    );
}
