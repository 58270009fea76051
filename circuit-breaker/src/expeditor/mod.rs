//! The expeditor (R3, R8): before every call it decides — CALL, PROBE, SKIP with a
//! route, or PAUSE — and after it remembers. It never calls a tool, never retries, never
//! changes a call's arguments and never hides an error: the executor (your agent loop, or the
//! dispatcher `#[toolbox]` generates) does the calling and reports back through the
//! [`Ticket`] it was given.
//!
//! This module is the expeditor's whole public API, one file per concern: building it,
//! deciding, the tickets and what they record, time, its tools, state and reports, the
//! watch, scope, pre-call checks, freshness, snapshots and the fleet. It is a thin shell
//! around the engine (the state machine as a plain value): one mutex around the one engine,
//! one `command` through which every change goes — the engine changes, the mirror is
//! published (its only writer), the lock is released, and then the hook sees every event:
//! `tracing` and each [`Observer`]. Queries read one consistent view under one lock. The one
//! exception is the commonest failure, a CLOSED tool's below its threshold: it changes one
//! record and the budget and makes no event, so it is written under the same lock without a
//! command, and only its tool's word is published (`record.rs`).
//!
//! Nothing in this module knows a tool's API or error type (R8.1).

use std::fmt;
use std::sync::{Arc, PoisonError};

use crate::engine::{Changes, Dirty, Engine};
use crate::model::clock::WallClock;
use crate::model::event::Observer;
use crate::report::View;

// The public API, one concern per file, in the order the documentation lists them.
// Building an expeditor over a map.
mod builder;
// Deciding before a call: the decision, and what a SKIP or a PAUSE carries.
mod decide;
// The ticket of a CALL or a PROBE.
mod ticket;
// What a ticket records through, and a model's mistakes.
mod record;
// Steps, cycles and wall time.
mod time;
// The tools, by name and id; tools discovered at run time.
mod tools;
// State and reports.
mod reports;
// A watch that resolves when the state changed.
mod watch;
// Scope: the sub-tasks that can be done.
mod scope;
// Pre-call checks and the health of servers.
mod checks;
// Freshness labels.
mod freshness;
// Snapshots, and saving them to files.
mod persistence;
// The fleet's store and the link it applies what it reads through.
mod fleet;

// The lock-free parts: the mirror the healthy path reads, the signal the watches wait on,
// and the locks and atomics (std's, or shuttle's under the model check).
pub(crate) mod mirror;
mod signal;
mod sync;

#[cfg(test)]
mod tests;

pub use crate::engine::{PauseReason, Recorded, SkipReason};
pub use crate::model::id::{ToolId, ToolName};
pub use builder::ExpeditorBuilder;
pub use decide::{Decision, Pause, Skip};
pub use fleet::{FleetLink, FleetStore};
pub use ticket::{PANICKED, Ticket};
pub use watch::Watch;

use mirror::Mirror;
use signal::Signal;
use sync::{AtomicU64, CachePadded, Mutex, MutexGuard, Ordering};

/// The decision layer (R3, R8): per-tool breakers, the failure budget, routing, reports.
///
/// `Expeditor` is `Send + Sync`; share it by reference or `Arc`.
///
/// **The healthy path** — [`decide`](Self::decide) on a CLOSED tool with no failure and
/// [`Ticket::success`] — takes no lock and allocates nothing, on every call, whether or not
/// the step advances between calls (B5). It reads the tool's state word and the pause flag.
/// It writes shared memory once per tool and step: the first success of a tool in a step
/// stores that step and the wall clock's time (the state table's "Last Success"); later
/// successes in the same step write nothing. A success after failures, a probe, a failure and
/// every transition take the lock.
///
/// ```
/// use agent_circuit_breaker::{CapabilityMap, Decision, Expeditor, ToolSpec};
///
/// let map = CapabilityMap::new().tool(
///     ToolSpec::new("Bash")
///         .provides("command execution")
///         .fallback("report commands that need to be run manually"),
/// );
/// let expeditor = Expeditor::new(map)?;
/// let bash = expeditor.tool("Bash").expect("declared above");
/// match expeditor.decide(bash) {
///     Decision::Call(ticket) | Decision::Probe(ticket) => ticket.success(),
///     Decision::Skip(skip) => println!("{}", skip.for_model()),
///     Decision::Pause(pause) => println!("{}", pause.for_model()),
/// }
/// # Ok::<(), agent_circuit_breaker::capability::MapErrors>(())
/// ```
///
/// A clone is the same expeditor (one state, shared): clone it to hand it to another task.
#[derive(Clone)]
pub struct Expeditor {
    inner: Arc<Inner>,
}

/// A handle on an [`Expeditor`] that does not keep it alive ([`Expeditor::downgrade`]): for
/// whoever only reads it while someone else uses it (the gauges of feature `otel`).
#[derive(Clone)]
pub struct WeakExpeditor {
    inner: std::sync::Weak<Inner>,
}

impl WeakExpeditor {
    /// The expeditor, while any [`Expeditor`] handle on it is alive.
    pub fn upgrade(&self) -> Option<Expeditor> {
        self.inner.upgrade().map(|inner| Expeditor { inner })
    }
}

impl fmt::Debug for WeakExpeditor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WeakExpeditor")
            .field("alive", &(self.inner.strong_count() > 0))
            .finish()
    }
}

/// The expeditor's state: an [`Expeditor`] holds it, a [`FleetLink`] holds it weakly.
pub(crate) struct Inner {
    mirror: Mirror,
    /// The agent's step: written by every `advance_step`, so on a line of its own, apart from
    /// the pause flag and the tools' words that every `decide` reads.
    step: CachePadded<AtomicU64>,
    clock: Arc<dyn WallClock>,
    observers: Box<[Arc<dyn Observer>]>,
    /// Moved after every command that changed something, for [`Watch`]es.
    changed: Signal,
    /// The fleet's store, when one is attached (B11).
    fleet: Option<Arc<dyn FleetStore>>,
    engine: CachePadded<Mutex<Engine>>,
}

impl fmt::Debug for Expeditor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Expeditor")
            .field("policy", &self.policy())
            .field("step", &self.step())
            .field("tools", &self.lock().len())
            .finish_non_exhaustive()
    }
}

impl Expeditor {
    /// Runs one engine command: under the lock, the command, then [`Mirror::publish`] (the
    /// only writer of the mirror); after the lock is released, the hook: every event to
    /// `tracing` and to each observer, in order.
    fn command<T>(&self, command: impl FnOnce(&mut Engine, &mut Changes, u64) -> T) -> T {
        self.command_in(self.lock(), command)
    }

    /// [`command`](Self::command), under a lock already taken.
    fn command_in<T>(
        &self,
        mut engine: MutexGuard<'_, Engine>,
        command: impl FnOnce(&mut Engine, &mut Changes, u64) -> T,
    ) -> T {
        let mut changes = Changes::default();
        let out = command(&mut engine, &mut changes, self.step());
        if engine.policy().cool_down().is_some() && changes.dirty != Dirty::None {
            engine.arm_timers(self.now(), &changes);
        }
        if !changes.shared().is_empty() {
            engine.fleet_dues(&mut changes);
        }
        self.inner.mirror.publish(&engine, &changes);
        if let Some(step) = changes.rare_ref().and_then(|r| r.step) {
            self.inner.step.store(step, Ordering::Release);
        }
        drop(engine);
        self.notify(&changes);
        if let Some(store) = &self.inner.fleet
            && !changes.shared().is_empty()
        {
            store.share(changes.shared());
        }
        out
    }

    /// The hook: sees every event after the lock is released, then wakes the watches when
    /// anything changed.
    fn notify(&self, changes: &Changes) {
        for event in &changes.events {
            event.trace();
            for observer in &self.inner.observers {
                observer.on_event(event);
            }
        }
        if changes.changed_anything() {
            self.inner.changed.bump();
        }
    }

    fn lock(&self) -> MutexGuard<'_, Engine> {
        // Nothing panics while holding the lock (observers run after it is released), so a
        // poisoned lock still guards consistent state.
        self.inner
            .engine
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn view<'a>(&'a self, engine: &'a Engine) -> View<'a> {
        View {
            engine,
            mirror: &self.inner.mirror,
        }
    }
}
