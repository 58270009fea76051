//! Servers that did not answer when the client was built ([`optional`] ones): down from the
//! start, tried again by the health pass with a backoff, and once connected, their tools join
//! the offer with what the overlay says of them.
//!
//! [`optional`]: super::McpClientBuilder::optional

use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use super::connect::Server;
use super::overlay::{default_spec, merge};
use super::{Inner, OverlayProblem, lock};
use crate::Availability;
use crate::capability::{ToolSpec, did_you_mean};

/// A server not connected since the client was built.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    /// Why its last attempt failed.
    pub(super) reason: String,
    /// How long to wait after this attempt: doubled by each failure, up to a cap.
    wait: Duration,
    next: Instant,
}

impl Pending {
    /// A first attempt that failed for `reason`; the next after `wait`.
    pub(super) fn new(reason: String, wait: Duration) -> Self {
        Pending {
            reason,
            wait,
            next: Instant::now() + wait,
        }
    }
}

impl Server {
    /// Why it has not been connected since the client was built, if it has not.
    pub(super) fn pending_reason(&self) -> Option<String> {
        lock(&self.pending).as_ref().map(|p| p.reason.clone())
    }

    fn pending_due(&self) -> bool {
        lock(&self.pending)
            .as_ref()
            .is_some_and(|p| Instant::now() >= p.next)
    }
}

impl Inner {
    /// The first wait before trying a server that did not answer again: the background
    /// health pass's interval, else the health TTL (a pass run by hand).
    pub(super) fn first_retry(&self) -> Duration {
        self.check_every.unwrap_or(self.health_ttl)
    }

    /// One attempt, when due, to connect a server not connected since the client was built.
    /// Connected: its tools join the offer (discovered, the overlay's entries for them
    /// applied) and it counts as checked. Not: the wait doubles, up to the policy's cap on
    /// cool-downs. Returns whether it was connected.
    pub(super) async fn connect_late(&self, server: &Arc<Server>) -> bool {
        if !server.pending_due() {
            return false;
        }
        match self.reconnect(server).await {
            Ok(()) => {
                server.set_health(None);
                // After the tools are in the table: the offer's watchers see them.
                self.expeditor
                    .record_server_check(&server.name, Availability::Available);
                tracing::info!(server = %server.name, "MCP server connected: its tools join the offer");
                self.warn_unapplied(server);
                true
            }
            Err(reason) => {
                let cap = self
                    .expeditor
                    .policy()
                    .cool_down_cap()
                    .max(self.first_retry());
                let mut pending = lock(&server.pending);
                let wait = pending
                    .as_ref()
                    .map_or(self.first_retry(), |p| p.wait.saturating_mul(2).min(cap));
                tracing::debug!(server = %server.name, %reason, retry_in = %super::human(wait), "MCP server still not connected");
                *pending = Some(Pending::new(reason, wait));
                false
            }
        }
    }

    /// The spec a tool listed after the client was built gets: the default, with the
    /// overlay's entry for it when one waits (taken out: it is applied once).
    pub(super) fn late_spec(&self, server: &Server, name: &str, description: &str) -> ToolSpec {
        let base = default_spec(name, &server.name, description);
        let wanted = {
            let mut deferred = self.deferred.lock().unwrap_or_else(PoisonError::into_inner);
            let at = deferred.iter().position(|s| s.name() == name);
            at.map(|i| deferred.remove(i))
        };
        let Some(wanted) = wanted else {
            return base;
        };
        if let Some(other) = wanted.server()
            && other != server.name
        {
            let problem = OverlayProblem::WrongServer {
                tool: name.to_owned(),
                listed_by: server.name.clone(),
                overlay: other.to_owned(),
            };
            tracing::warn!(server = %server.name, "{problem}: its entry is not applied");
            return base;
        }
        merge(&base, &wanted)
    }

    /// After `server` came up: the overlay's entries that name a tool of it but were not
    /// applied, and, once every server has been connected, those no server lists.
    fn warn_unapplied(&self, server: &Server) {
        let all_up = self.servers.iter().all(|s| s.pending_reason().is_none());
        let unapplied: Vec<ToolSpec> = {
            let mut deferred = self.deferred.lock().unwrap_or_else(PoisonError::into_inner);
            let (now, later): (Vec<_>, Vec<_>) = deferred
                .drain(..)
                .partition(|s| all_up || s.server() == Some(server.name.as_str()));
            *deferred = later;
            now
        };
        if unapplied.is_empty() {
            return;
        }
        let names: Vec<String> = self.tools().by_name.keys().cloned().collect();
        for wanted in unapplied {
            let problem = OverlayProblem::UnknownTool {
                tool: wanted.name().to_owned(),
                suggestion: did_you_mean(wanted.name(), names.iter().map(String::as_str))
                    .map(str::to_owned),
            };
            tracing::warn!(server = %server.name, "{problem}: its entry is not applied");
        }
    }
}
