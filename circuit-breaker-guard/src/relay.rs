//! The upstreams' own messages to their client, handed to the guard's client: sampling,
//! elicitation and roots requests (when that client supports them; else JSON-RPC -32601),
//! log messages, progress, resource and prompt changes, in the order they came.

use std::sync::{Arc, Mutex, PoisonError};

use agent_circuit_breaker::mcp::rmcp;
use agent_circuit_breaker::mcp::{Relay, RelayFuture};
use rmcp::model::{ClientCapabilities, ErrorCode, ServerNotification, ServerRequest};
use rmcp::service::RoleServer;
use rmcp::{ErrorData, Peer, ServiceError};
use tokio::sync::mpsc;

/// The guard's client as the upstreams reach it: the latest session's peer.
pub struct Downstream {
    peer: Mutex<Option<Peer<RoleServer>>>,
    notifications: mpsc::UnboundedSender<(String, ServerNotification)>,
}

impl Downstream {
    /// A downstream with no client yet, and the task that hands notifications on in order
    /// (needs a Tokio runtime).
    pub fn new() -> Arc<Self> {
        let (tx, mut rx) = mpsc::unbounded_channel::<(String, ServerNotification)>();
        let downstream = Arc::new(Downstream {
            peer: Mutex::new(None),
            notifications: tx,
        });
        let weak = Arc::downgrade(&downstream);
        tokio::spawn(async move {
            while let Some((server, notification)) = rx.recv().await {
                let Some(downstream) = weak.upgrade() else {
                    break;
                };
                let Some(peer) = downstream.peer() else {
                    continue;
                };
                if let Err(error) = peer.send_notification(notification).await {
                    tracing::debug!(%server, %error, "a notification was not delivered to the client");
                }
            }
        });
        downstream
    }

    /// The client the upstreams' requests and notifications go to from now on.
    pub fn attach(&self, peer: Peer<RoleServer>) {
        *self.peer.lock().unwrap_or_else(PoisonError::into_inner) = Some(peer);
    }

    fn peer(&self) -> Option<Peer<RoleServer>> {
        self.peer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .filter(|p| !p.is_transport_closed())
    }
}

fn not_supported(what: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("the client behind the guard does not support {what}"),
        None,
    )
}

impl Relay for Downstream {
    fn capabilities(&self) -> ClientCapabilities {
        // What the guard passes on; a request its client turns out not to support is
        // answered -32601 then.
        serde_json::from_value(serde_json::json!({
            "sampling": {},
            "elicitation": {},
            "roots": { "listChanged": true }
        }))
        .unwrap_or_default()
    }

    fn request(&self, server: &str, request: ServerRequest) -> RelayFuture {
        let peer = self.peer();
        let server = server.to_owned();
        Box::pin(async move {
            let Some(peer) = peer else {
                return Err(not_supported(
                    "requests from servers (no client is connected)",
                ));
            };
            let caps = peer.peer_info().map(|info| info.capabilities.clone());
            let (what, supported) = match &request {
                ServerRequest::CreateMessageRequest(_) => (
                    "sampling",
                    caps.as_ref().is_some_and(|c| c.sampling.is_some()),
                ),
                ServerRequest::ElicitRequest(_) => (
                    "elicitation",
                    caps.as_ref().is_some_and(|c| c.elicitation.is_some()),
                ),
                ServerRequest::ListRootsRequest(_) => {
                    ("roots", caps.as_ref().is_some_and(|c| c.roots.is_some()))
                }
                _ => ("this request", true),
            };
            if !supported {
                return Err(not_supported(what));
            }
            peer.send_request(request)
                .await
                .map_err(|error| match error {
                    ServiceError::McpError(data) => data,
                    other => ErrorData::internal_error(
                        format!("{what} for upstream {server} failed at the client: {other}"),
                        None,
                    ),
                })
        })
    }

    #[allow(deprecated)] // log messages: the clients the guard serves still use them
    fn notify(&self, server: &str, notification: ServerNotification) {
        let notification = match notification {
            // The guard announces its own offer; a request's cancellation names the
            // upstream's ids, not the client's.
            ServerNotification::ToolListChangedNotification(_)
            | ServerNotification::CancelledNotification(_)
            | ServerNotification::SubscriptionsAcknowledgedNotification(_)
            | ServerNotification::TaskStatusNotification(_) => return,
            ServerNotification::LoggingMessageNotification(mut log) => {
                // Which upstream said it, where it did not say.
                log.params.logger.get_or_insert_with(|| server.to_owned());
                ServerNotification::LoggingMessageNotification(log)
            }
            other => other,
        };
        let _ = self.notifications.send((server.to_owned(), notification));
    }
}
