//! Tool health shared by a fleet of workers (B11). What one worker learns — a circuit
//! opened by an infrastructure failure, a probe that closed it, a systemic event — is
//! shared through a store; what the others learned is applied here. Decisions stay local:
//! the healthy path never waits on the store, and a store that is down or slow leaves every
//! worker deciding on its own state, losing nothing it recorded.
//!
//! The store is any [`FleetStore`](crate::expeditor::FleetStore), attached with one builder
//! call ([`ExpeditorBuilder::fleet`](crate::expeditor::ExpeditorBuilder::fleet)); feature
//! `redis` has one on Redis. The expeditor hands the store, after every command and outside its
//! lock, the [`SharedTransition`]s worth sharing: only circuits opened by an
//! infrastructure failure ([`FailureCategory::is_shared`]: network, timeout, a server found
//! unreachable), never a caller-local one (bad arguments, a missing file, a permission of
//! this machine's). The store applies what it reads through the
//! [`FleetLink`](crate::expeditor::FleetLink) it is given:
//! a tool opened elsewhere is OPEN here too (routed around, never charged to this worker's
//! budget), a probe that closed it elsewhere closes it here, and a probe of a shared circuit
//! is made by one worker of the fleet at a time — the one the store grants it to.
//!
//! Every transition is handed to the store as it happens ([`FleetStore::share`]), so that the
//! store can stamp it and order it: a transition older than what the fleet already knows of a
//! tool never overrides it, however late it reaches the store (B16).
//!
//! [`FleetStore::share`]: crate::expeditor::FleetStore::share

use serde::{Deserialize, Serialize};

use crate::model::clock::Timestamp;
use crate::model::failure::FailureCategory;

/// A circuit another worker opened, as the store read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedOpen {
    /// The worker that opened it.
    pub worker: String,
    /// Its failure, as that worker recorded it.
    pub message: String,
    /// Its category.
    pub category: FailureCategory,
    /// When it opened there.
    pub at: Timestamp,
    /// When the fleet's probe of it is due, with a time-based cool-down (B13): every worker
    /// waits for the same instant, so that the fleet probes once per cool-down, not once per
    /// worker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due: Option<Timestamp>,
    /// The probes that failed since it opened, fleet-wide: each doubles the cool-down, on
    /// every worker.
    #[serde(default)]
    pub failed_probes: u32,
}

/// What this worker has to tell the fleet, handed to
/// [`FleetStore::share`](crate::expeditor::FleetStore::share).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "transition", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SharedTransition {
    /// A circuit opened here by an infrastructure failure (or its probe failed again: the
    /// shared OPEN state is renewed).
    Opened {
        /// The tool.
        tool: String,
        /// The failure that opened it.
        message: String,
        /// Its category.
        category: FailureCategory,
        /// When its probe is due, with a time-based cool-down: the fleet's probe waits for it.
        due: Option<Timestamp>,
        /// The probes that failed since it opened.
        failed_probes: u32,
    },
    /// A probe here closed a shared circuit: closed for the whole fleet.
    Closed {
        /// The tool.
        tool: String,
    },
    /// The probe the store granted this worker ended without closing the circuit (it failed,
    /// or it was dropped): the store may grant it to another worker.
    ProbeEnded {
        /// The tool.
        tool: String,
    },
    /// A systemic failure detected here (R9): every worker pauses, as one event.
    Systemic {
        /// The shared error.
        pattern: String,
        /// The suspected cause.
        cause: String,
        /// The tools involved.
        tools: Vec<String>,
        /// The category the failures share, if they share one.
        category: Option<FailureCategory>,
    },
    /// The systemic pause in force here was lifted by a confirmed recovery (a person's, or a
    /// health check's in a service, B15): every worker that paused for the same event resumes.
    Recovered,
}

/// The store's state, as this worker sees it: reachable, or not since when and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreStatus {
    /// The store's name, as the reports show it (`redis 127.0.0.1:6379`).
    pub store: String,
    /// When it was found unreachable, and what was said; `None` while it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreachable: Option<(Timestamp, String)>,
    /// The tools OPEN here because another worker opened them, with who did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub opened_elsewhere: Vec<(String, String)>,
}

impl std::fmt::Display for StoreStatus {
    /// `Shared with the fleet through redis 127.0.0.1:6379: read_file OPEN (opened by
    /// worker-2)`, or `… unreachable since <time> (<why>): deciding on local state alone`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Shared with the fleet through {}", self.store)?;
        if let Some((since, why)) = &self.unreachable {
            return write!(
                f,
                ": unreachable since {since} ({why}) — deciding on local state alone"
            );
        }
        if self.opened_elsewhere.is_empty() {
            return f.write_str(": no circuit opened by another worker");
        }
        let opened: Vec<String> = self
            .opened_elsewhere
            .iter()
            .map(|(tool, worker)| format!("{tool} OPEN (opened by {worker})"))
            .collect();
        write!(f, ": {}", opened.join(", "))
    }
}
