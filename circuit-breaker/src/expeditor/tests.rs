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
