//! Health checks of servers (R10.1, B10): one `ping` per server (`server/discover` on
//! 2026-07-28, which has no `ping`), trusted for the health TTL;
//! before a probe, a fresh check (after reconnecting when the connection is gone); and the
//! health pass that brings a down server's tools back without a call.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use rmcp::ServiceError;
use rmcp::service::PeerRequestOptions;

use super::connect::Server;
use super::lifecycle::health_request;
use super::{Inner, human, lock};
use crate::Availability;

/// The last health check of a server: when, and why it failed (`None`: it passed).
#[derive(Debug, Clone)]
pub(super) struct Health {
    at: Instant,
    failed: Option<String>,
}

/// A `ping` that found no server.
enum PingError {
    /// The transport is closed or a send failed: the server is not there.
    Unreachable(String),
    /// It did not answer in time (or answered nonsense).
    NoAnswer(String),
}

impl PingError {
    fn into_reason(self) -> String {
        match self {
            PingError::Unreachable(r) | PingError::NoAnswer(r) => r,
        }
    }
}

impl Server {
    pub(super) fn health_stale(&self, ttl: Duration) -> bool {
        lock(&self.health)
            .as_ref()
            .is_none_or(|h| h.at.elapsed() >= ttl)
    }

    /// The reason of a failed check younger than `ttl`.
    fn recent_failure(&self, ttl: Duration) -> Option<String> {
        lock(&self.health)
            .as_ref()
            .filter(|h| h.at.elapsed() < ttl)
            .and_then(|h| h.failed.clone())
    }

    pub(super) fn set_health(&self, failed: Option<String>) {
        *lock(&self.health) = Some(Health {
            at: Instant::now(),
            failed,
        });
    }

    /// One MCP `ping` (or `server/discover`), bounded by `timeout`. Any answer, an error
    /// answer too, means the server is there.
    async fn ping(&self, timeout: Duration) -> Result<(), PingError> {
        let Some((peer, generation)) = self.peer() else {
            return Err(PingError::Unreachable("not connected".to_owned()));
        };
        let request = health_request(&peer);
        let sent = peer
            .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
            .await;
        let answer = match sent {
            Ok(handle) => handle.await_response().await,
            Err(error) => Err(error),
        };
        match answer {
            Ok(_) | Err(ServiceError::McpError(_)) => Ok(()),
            Err(error @ (ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                self.mark_broken(generation);
                Err(PingError::Unreachable(error.to_string()))
            }
            Err(ServiceError::Timeout { .. }) => Err(PingError::NoAnswer(format!(
                "no answer to ping within {}",
                human(timeout)
            ))),
            Err(error) => Err(PingError::NoAnswer(format!("ping failed: {error}"))),
        }
    }
}

impl Inner {
    /// Before a probe (R10.1): a check that failed within the health TTL stands; otherwise
    /// reconnect when the connection is gone, then a fresh `ping` (one more reconnect and
    /// ping when it fails on the old connection). A pass is recorded as AVAILABLE.
    pub(super) async fn ready_for_probe(&self, server: &Arc<Server>) -> Result<(), String> {
        if let Some(reason) = server.recent_failure(self.health_ttl) {
            return Err(reason);
        }
        let result = self.reach(server).await;
        match &result {
            Ok(()) => {
                server.set_health(None);
                self.expeditor
                    .record_server_check(&server.name, Availability::Available);
            }
            Err(reason) => server.set_health(Some(reason.clone())),
        }
        result
    }

    async fn reach(&self, server: &Arc<Server>) -> Result<(), String> {
        let mut reconnected = false;
        if server.needs_reconnect() {
            self.reconnect(server)
                .await
                .map_err(|e| format!("reconnecting failed: {e}"))?;
            reconnected = true;
        }
        match server.ping(self.ping_timeout(server)).await {
            Ok(()) => Ok(()),
            Err(error) if reconnected => Err(error.into_reason()),
            Err(_) => {
                self.reconnect(server)
                    .await
                    .map_err(|e| format!("reconnecting failed: {e}"))?;
                server
                    .ping(self.ping_timeout(server))
                    .await
                    .map_err(PingError::into_reason)
            }
        }
    }

    /// The health check of a server that is up (R10.1), when its last one is older than the
    /// TTL. A server that answers is AVAILABLE; one that does not answer in time is
    /// UNAVAILABLE (its calls would wait out their deadlines). A closed transport is not
    /// recorded: the next call finds it, and the server goes down as one event, charged
    /// once.
    pub(super) async fn check_up(&self, server: &Server) {
        if server.needs_reconnect() {
            return;
        }
        match server.ping(self.ping_timeout(server)).await {
            Ok(()) => {
                server.set_health(None);
                self.expeditor
                    .record_server_check(&server.name, Availability::Available);
            }
            Err(PingError::Unreachable(_)) => {}
            Err(PingError::NoAnswer(reason)) => {
                server.set_health(Some(reason.clone()));
                self.expeditor
                    .record_server_check(&server.name, Availability::Unavailable(reason));
            }
        }
    }

    fn is_down(&self, server: &str) -> bool {
        self.expeditor.server_down(server)
    }

    pub(super) async fn check(&self) -> Vec<String> {
        // Between turns: the next offer is made from fresh lists (R6).
        self.refresh_stale(None).await;
        let mut up = Vec::new();
        for server in &self.servers {
            let name = server.name.as_str();
            if server.pending_reason().is_some() {
                if self.connect_late(server).await {
                    up.push(name.to_owned());
                }
            } else if self.is_down(name) {
                // Due by the policy (steps, refused attempts), and at least once per health
                // TTL whatever the callers do (a proxy's make neither).
                if !self
                    .expeditor
                    .server_probe_due_within(name, self.health_ttl)
                {
                    continue;
                }
                match self.ready_for_probe(server).await {
                    Ok(()) => {
                        if self.expeditor.record_server_probe(name, true) {
                            up.push(name.to_owned());
                        }
                    }
                    Err(reason) => {
                        self.expeditor
                            .record_server_check(name, Availability::Unavailable(reason));
                        self.expeditor.record_server_probe(name, false);
                    }
                }
            } else if server.health_stale(self.health_ttl) && self.expeditor.health_checks_wanted()
            {
                self.check_up(server).await;
            }
        }
        up
    }
}

/// The background health pass of [`McpClientBuilder::check_every`](super::McpClientBuilder::check_every): ends with the client.
pub(super) fn spawn_checks(client: Weak<Inner>, interval: Duration) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(interval).await;
            let Some(inner) = client.upgrade() else {
                break;
            };
            inner.check().await;
        }
    });
}
