//! Tool health shared with a fleet of workers (B11): the store the expeditor shares its
//! transitions through, and the link through which the store applies what the others
//! learned.

use std::fmt;

use super::{Expeditor, Inner};
use crate::model::failure::FailureCategory;
use crate::model::fleet::{SharedOpen, SharedTransition, StoreStatus};

/// A store the fleet shares tool health through (B11). Implemented by the feature `redis`
/// store; implement it for another.
pub trait FleetStore: Send + Sync + 'static {
    /// The store's name, as the reports show it (`redis 127.0.0.1:6379/agents`).
    fn name(&self) -> String;

    /// Called once, when the expeditor is built: the link through which the store applies
    /// what it reads. The link does not keep the expeditor alive.
    fn attach(&self, link: FleetLink);

    /// Called after every command that has something to share, outside the expeditor's
    /// lock, on the thread that made the change, as the transitions happen. It must not
    /// block: queue and return. A store stamps them with the time now, so that one written
    /// late (after an outage) is ordered by when it happened, not by when it was written
    /// (B16).
    fn share(&self, transitions: &[SharedTransition]);
}

/// What a [`FleetStore`] applies to the expeditor it is attached to (B11). Weak: it does not
/// keep the expeditor alive; every method does nothing (and says so) once it is dropped.
#[derive(Clone)]
pub struct FleetLink {
    pub(super) inner: std::sync::Weak<Inner>,
}

impl fmt::Debug for FleetLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetLink")
            .field("attached", &self.is_attached())
            .finish()
    }
}

impl FleetLink {
    fn expeditor(&self) -> Option<Expeditor> {
        self.inner.upgrade().map(|inner| Expeditor { inner })
    }

    /// Whether the expeditor still exists: a store's task ends when it is gone.
    pub fn is_attached(&self) -> bool {
        self.inner.strong_count() > 0
    }

    /// The names of every tool, in map order: what the store reads for.
    pub fn tools(&self) -> Vec<String> {
        self.expeditor()
            .map(|e| e.lock().tool_names())
            .unwrap_or_default()
    }

    /// Another worker opened `tool`: OPEN here too, routed around, never charged to this
    /// worker's budget. Returns `false` for a name that is no tool here.
    pub fn open(&self, tool: &str, open: SharedOpen) -> bool {
        self.expeditor().is_some_and(|e| {
            let now = e.now();
            e.command(|engine, changes, step| engine.fleet_open(tool, open, step, now, changes))
        })
    }

    /// `tool`'s shared OPEN state ended in the store: `closed` by another worker's probe
    /// (CLOSED here too), or expired (this worker's own breaker goes on; its probe is
    /// still one per fleet).
    pub fn cleared(&self, tool: &str, closed: bool) -> bool {
        self.expeditor().is_some_and(|e| {
            e.command(|engine, changes, _| engine.fleet_cleared(tool, closed, changes))
        })
    }

    /// The shared circuits whose probe is due here and waits for the store's grant.
    pub fn probes_wanted(&self) -> Vec<String> {
        self.expeditor()
            .map(|e| e.lock().fleet_wanted())
            .unwrap_or_default()
    }

    /// Whether this worker still holds the fleet's probe of `tool`: granted and not ended
    /// (B16). A store renews the probe's lease while it does, however long the probe lasts.
    pub fn holds_probe(&self, tool: &str) -> bool {
        self.expeditor().is_some_and(|e| e.lock().fleet_holds(tool))
    }

    /// The store lost `tool`'s probe lease, or its grant lapsed unused (B16): unless the probe
    /// is already under way, it waits for a new grant. Returns `false` when nothing was held.
    pub fn revoke_probe(&self, tool: &str) -> bool {
        self.expeditor()
            .is_some_and(|e| e.command(|engine, _, _| engine.fleet_revoke(tool)))
    }

    /// Another worker (`worker`) confirmed the recovery from the systemic failure this worker
    /// paused for (B16): calls resume here too. Returns `false` when no such pause is in force.
    pub fn recovered(&self, worker: &str) -> bool {
        self.expeditor().is_some_and(|e| {
            e.command(|engine, changes, step| {
                engine.fleet_recovered(worker.to_owned(), step, changes)
            })
        })
    }

    /// The store grants this worker the probe of `tool` (it holds the fleet's lease).
    /// Returns `false` when the probe is no longer wanted here: give the lease back.
    pub fn grant_probe(&self, tool: &str) -> bool {
        self.expeditor()
            .is_some_and(|e| e.command(|engine, _, _| engine.fleet_grant(tool)))
    }

    /// Another worker detected a systemic failure (R9): every call pauses here too, as the
    /// same event. Returns `false` when one is already in force here.
    pub fn systemic(
        &self,
        pattern: String,
        tools: Vec<String>,
        category: Option<FailureCategory>,
    ) -> bool {
        self.expeditor().is_some_and(|e| {
            let now = e.now();
            e.command(|engine, changes, step| {
                engine.fleet_systemic(pattern, tools, category, step, now, changes)
            })
        })
    }

    /// The store cannot be reached (`why`): this worker decides on its own state alone
    /// until [`reachable`](Self::reachable); an event and the reports say so.
    pub fn unreachable(&self, why: &str) {
        if let Some(e) = self.expeditor() {
            let now = e.now();
            e.command(|engine, changes, _| engine.fleet_unreachable(why.to_owned(), now, changes));
        }
    }

    /// The store answers again: what opened here meanwhile is published again.
    pub fn reachable(&self) {
        if let Some(e) = self.expeditor() {
            e.command(|engine, changes, _| engine.fleet_reachable(changes));
        }
    }
}

impl Expeditor {
    /// The fleet's store and what it says, when one is attached (B11): reachable or not,
    /// and the circuits OPEN here because another worker opened them.
    pub fn fleet_status(&self) -> Option<StoreStatus> {
        self.lock().fleet_status()
    }
}
