//! What a server sends its client besides its tools changing — sampling, elicitation and
//! roots requests, log messages, progress, resource and prompt changes — handed to a
//! [`Relay`] when the client was given one (the guard proxy hands them to its own client),
//! else answered as a client that supports none of it answers.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientResult, ErrorData, ServerNotification, ServerRequest,
};
use rmcp::service::{NotificationContext, RequestContext, Service};
use rmcp::{ClientHandler, RoleClient};

use super::connect::Handler;

/// The answer a [`Relay`] gives to a server's request.
pub type RelayFuture = Pin<Box<dyn Future<Output = Result<ClientResult, ErrorData>> + Send>>;

/// Where an [`McpClient`](super::McpClient) hands what its servers send besides tool
/// changes: the hook of a proxy whose own client is to see them
/// ([`McpClientBuilder::relay`](super::McpClientBuilder::relay)).
#[doc(hidden)]
pub trait Relay: Send + Sync + 'static {
    /// What the client tells each server it supports in `initialize`, besides what the
    /// client itself supports: sampling, elicitation, roots.
    fn capabilities(&self) -> ClientCapabilities;

    /// A request `server` sent (its `ping` is answered by the client itself).
    fn request(&self, server: &str, request: ServerRequest) -> RelayFuture;

    /// A notification `server` sent. The client has already acted on its tool list
    /// changing; it is handed on all the same.
    fn notify(&self, server: &str, notification: ServerNotification);
}

/// One connection's client side: the client's own [`Handler`], and the relay.
pub(crate) struct Relayed {
    handler: Handler,
    relay: Option<(String, Arc<dyn Relay>)>,
}

impl Relayed {
    pub(super) fn new(handler: Handler, relay: Option<(String, Arc<dyn Relay>)>) -> Self {
        Relayed { handler, relay }
    }

    /// Whether the connection starts with discovery (2026-07-28).
    pub(super) fn modern(&self) -> bool {
        self.handler.modern
    }
}

impl Service<RoleClient> for Relayed {
    async fn handle_request(
        &self,
        request: ServerRequest,
        context: RequestContext<RoleClient>,
    ) -> Result<ClientResult, ErrorData> {
        match (&self.relay, request) {
            (Some((server, relay)), request)
                if !matches!(request, ServerRequest::PingRequest(_)) =>
            {
                // Dropped with the request when the server cancels it: the relay's future
                // (the downstream request) goes with it.
                let answer = relay.request(server, request);
                tokio::select! {
                    answer = answer => answer,
                    () = context.ct.cancelled() => Err(ErrorData::internal_error(
                        "the request was cancelled by the server",
                        None,
                    )),
                }
            }
            (_, request) => Service::handle_request(&self.handler, request, context).await,
        }
    }

    async fn handle_notification(
        &self,
        notification: ServerNotification,
        context: NotificationContext<RoleClient>,
    ) -> Result<(), ErrorData> {
        let relayed = self.relay.as_ref().map(|(server, relay)| {
            let copy = matches!(
                notification,
                ServerNotification::ToolListChangedNotification(_)
            )
            .then(|| notification.clone());
            (server, relay, copy)
        });
        match relayed {
            Some((server, relay, Some(copy))) => {
                Service::handle_notification(&self.handler, copy, context).await?;
                relay.notify(server, notification);
                Ok(())
            }
            Some((server, relay, None)) => {
                relay.notify(server, notification);
                Ok(())
            }
            None => Service::handle_notification(&self.handler, notification, context).await,
        }
    }

    fn get_info(&self) -> ClientConfig {
        let mut info = ClientHandler::get_info(&self.handler);
        if let Some((_, relay)) = &self.relay {
            let wanted = relay.capabilities();
            let own = &mut info.capabilities;
            own.sampling = own.sampling.take().or(wanted.sampling);
            own.elicitation = own.elicitation.take().or(wanted.elicitation);
            own.roots = own.roots.take().or(wanted.roots);
        }
        info
    }
}
