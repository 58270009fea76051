//! The expeditor's lock-free paths, checked while another thread holds the engine's lock.

use super::*;
use crate::model::capability::{CapabilityMap, ToolSpec};
use crate::model::policy::Policy;
// Only the lock-free paths' tests use these: they run on std's locks (shuttle's work only
// inside its checker).
#[cfg(not(shuttle))]
use crate::model::{breaker::CircuitState, route::Route};

fn one_tool(policy: Policy) -> Expeditor {
    let map = CapabilityMap::new().tool(
        ToolSpec::new("Grep")
            .provides("content search")
            .fallback("ask the user"),
    );
    Expeditor::builder(map)
        .policy(policy)
        .build()
        .expect("a valid map")
}

/// Runs `work` on another thread while this one holds the engine's lock; returns what it
/// returned, or `None` when it did not finish within 20 s (it waited for the lock).
fn finishes_while_locked<T: Send + 'static>(
    expeditor: &Arc<Expeditor>,
    work: impl FnOnce(&Expeditor) -> T + Send + 'static,
) -> Option<T> {
    let held = expeditor.lock();
    let (done, finished) = std::sync::mpsc::channel();
    let worker = {
        let expeditor = Arc::clone(expeditor);
        std::thread::spawn(move || {
            let _ = done.send(work(&expeditor));
        })
    };
    let out = finished
        .recv_timeout(std::time::Duration::from_secs(20))
        .ok();
    drop(held);
    worker.join().expect("the worker ran");
    out
}

/// B5: the healthy path takes no lock, with a step before every call too. The
/// engine's lock is held for the whole run; a healthy path that took it would not finish.
#[cfg(not(shuttle))]
#[test]
fn b5_the_healthy_path_takes_no_lock_also_with_a_step_per_call() {
    let expeditor = Arc::new(one_tool(Policy::default()));
    let grep = expeditor.tool("Grep").expect("declared");
    let steps = finishes_while_locked(&expeditor, move |expeditor| {
        for _ in 0..10_000 {
            expeditor.advance_step();
            match expeditor.decide(grep) {
                Decision::Call(ticket) => ticket.success(),
                other => panic!("Grep is CLOSED, got {}", other.kind()),
            }
            let _ = expeditor.state(grep);
        }
        expeditor.step()
    });
    assert_eq!(
        steps,
        Some(10_000),
        "the healthy path waited for the engine's lock"
    );
    let mark = expeditor
        .breaker(grep)
        .and_then(|b| b.last_success().copied());
    assert_eq!(mark.map(|m| m.step), Some(10_000));
}

/// The lock-free rejection path, likewise: an OPEN tool whose probe is not due is skipped,
/// with its route, while the engine's lock is held elsewhere.
#[cfg(not(shuttle))]
#[test]
fn b5_the_rejection_path_takes_no_lock() {
    let policy = Policy::builder()
        .probe_unit(crate::model::policy::ProbeUnit::Steps)
        .build()
        .expect("a valid policy");
    let expeditor = Arc::new(one_tool(policy));
    let grep = expeditor.tool("Grep").expect("declared");
    for _ in 0..3 {
        if let Decision::Call(ticket) = expeditor.decide(grep) {
            let _ = ticket.failure("boom");
        }
    }
    assert_eq!(expeditor.state(grep), Some(CircuitState::Open));
    let skips = finishes_while_locked(&expeditor, move |expeditor| {
        (0..10_000)
            .filter(|_| match expeditor.decide(grep) {
                Decision::Skip(skip) => matches!(skip.route(), Route::Fallback(_)),
                _ => false,
            })
            .count()
    });
    assert_eq!(
        skips,
        Some(10_000),
        "the rejection path waited for the engine's lock"
    );
}

#[test]
fn expeditor_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Expeditor>();
    check::<Ticket<'static>>();
}

/// A failure below the threshold is recorded under the lock without a command: everything a
/// command would record is there (the run, the last failure, the ledger line with the call's
/// id, the budget), a watch sees it, observers see no event, and the failure that reaches
/// the threshold still opens the circuit with its event.
#[cfg(not(shuttle))]
#[test]
fn a_quiet_failure_records_what_a_command_records() {
    use crate::model::failure::FailureCategory;
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let map = CapabilityMap::new().tool(
        ToolSpec::new("Grep")
            .provides("content search")
            .fallback("ask the user"),
    );
    let expeditor = Expeditor::builder(map)
        .policy(
            Policy::builder()
                .threshold(3)
                .budget(5)
                .build()
                .expect("valid"),
        )
        .observer({
            let seen = Arc::clone(&seen);
            move |event: &crate::event::Event| seen.lock().unwrap().push(event.clone())
        })
        .build()
        .expect("a valid map");
    let grep = expeditor.tool("Grep").expect("declared");
    let fail = |message: &'static str| {
        let Decision::Call(ticket) = expeditor.decide(grep) else {
            panic!("Grep takes calls")
        };
        crate::telemetry::with_call_id("call_7", || ticket.failure(message))
    };
    let watch = expeditor.watch();
    let recorded = fail("connection refused");
    assert!(watch.has_changed(), "a watch sees a quiet failure");
    assert_eq!(
        (
            recorded.state,
            recorded.consecutive_failures,
            recorded.opened
        ),
        (CircuitState::Closed, 1, false)
    );
    assert_eq!(recorded.budget.consumed, 1);
    let _ = fail("no route to host");
    assert!(
        seen.lock().unwrap().is_empty(),
        "no event below the threshold"
    );
    let record = expeditor.breaker(grep).expect("registered");
    assert_eq!(record.consecutive_failures(), 2);
    assert_eq!(record.recent_failures().len(), 2);
    let last = record.last_failure().expect("a failure");
    assert_eq!(last.failure.message(), "no route to host");
    assert_eq!(last.failure.category(), FailureCategory::Network);
    let budget = expeditor.budget();
    let lines: Vec<_> = budget
        .ledger()
        .iter()
        .map(|l| (l.failure.message(), l.call_id.as_deref(), l.charged))
        .collect();
    assert_eq!(
        lines,
        [
            ("connection refused", Some("call_7"), true),
            ("no route to host", Some("call_7"), true)
        ]
    );
    // The decide after a quiet failure still answers CALL, from the published word.
    let recorded = fail("connection refused");
    assert!(recorded.opened);
    assert_eq!(expeditor.state(grep), Some(CircuitState::Open));
    assert_eq!(seen.lock().unwrap().len(), 1, "the opening's event");
}
