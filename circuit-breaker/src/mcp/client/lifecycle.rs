//! The protocol revision of a connection and the freshness of a server's tool list (B17,
//! R6).
//!
//! A connection asks for 2026-07-28 first (`server/discover`, rmcp's `Auto` lifecycle),
//! and falls back to `initialize` (2025-11-25 and older) on the same connection when the
//! server answers that it does not know discovery; a server that closes the connection
//! instead is connected again with `initialize` alone, and remembered as one to start so.
//!
//! On 2026-07-28 there is no `ping` (a health check sends `server/discover`), and
//! `list_changed` comes only on a `subscriptions/listen` stream, which the client opens
//! when the server offers it. A `tools/list` answer's `ttlMs` is how long the list is fresh:
//! a stale list is listed again before a call and by the health pass; without `ttlMs` it
//! stays fresh until `list_changed` says otherwise.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use rmcp::model::{ClientRequest, ServerNotification, SubscriptionFilter, Tool};
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, ClientServiceExt as _};
use rmcp::transport::IntoTransport;
use rmcp::{Peer, RoleClient, ServiceExt as _, model::ProtocolVersion, service::RunningService};

use super::connect::Server;
use super::relay::Relayed;
use super::{Inner, human, lock};

/// The least a `tools/list` answer is trusted: rmcp answers every 2026-07-28 list without a
/// `ttlMs` of its own with `ttlMs: 0`, and a client that took that at its word would list all
/// of a server's tools again before each call — at a thousand tools, far more work than the
/// call.
const MIN_FRESHNESS: Duration = Duration::from_secs(1);

/// The revisions asked for by `server/discover`, newest first.
const MODERN: [ProtocolVersion; 1] = [ProtocolVersion::V_2026_07_28];

/// A server's listing state: how to start its connections, and until when its tool list
/// is fresh.
#[derive(Default)]
pub(crate) struct Listing {
    /// The server closed a connection that began with `server/discover`: start with
    /// `initialize` from now on.
    legacy_only: AtomicBool,
    /// Until when the last `tools/list` is fresh, by its `ttlMs`; `None`: no `ttlMs`, fresh
    /// until `list_changed`.
    fresh_until: Mutex<Option<Instant>>,
    /// One listing at a time.
    relisting: tokio::sync::Mutex<()>,
    /// A listing in the background is under way.
    background: AtomicBool,
    /// The current connection pushes `list_changed`: the capability on 2025-11-25 and
    /// older, an acknowledged listen stream on 2026-07-28.
    pushes: AtomicBool,
}

impl Relayed {
    /// Starts the connection: discovery first (2026-07-28), `initialize` where the server
    /// does not know it; `initialize` alone for a server that closed a discovery.
    pub(super) async fn start<T, E, A>(
        self,
        transport: T,
    ) -> Result<RunningService<RoleClient, Relayed>, ClientInitializeError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        if self.modern() {
            let lifecycle = ClientLifecycleMode::Auto {
                preferred_versions: MODERN.to_vec(),
                legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
            };
            self.serve_with_lifecycle(transport, lifecycle).await
        } else {
            self.serve(transport).await
        }
    }
}

/// Whether the connection speaks a revision without `initialize` (2026-07-28 on).
pub(super) fn stateless(peer: &Peer<RoleClient>) -> bool {
    peer.peer_info()
        .is_some_and(|info| !info.protocol_version.has_initialize())
}

/// The request a health check sends: `ping`, or where the revision has none,
/// `server/discover`.
pub(super) fn health_request(peer: &Peer<RoleClient>) -> ClientRequest {
    if stateless(peer) {
        ClientRequest::DiscoverRequest(rmcp::model::DiscoverRequest::new(
            rmcp::model::DiscoverRequestParams {},
        ))
    } else {
        ClientRequest::PingRequest(rmcp::model::PingRequest::default())
    }
}

impl Listing {
    /// A listing whose connections start with discovery (`modern`) or with `initialize`.
    pub(super) fn starting(modern: bool) -> Self {
        Listing {
            legacy_only: AtomicBool::new(!modern),
            ..Listing::default()
        }
    }
}

impl Server {
    /// Whether connections to it start with discovery.
    pub(super) fn starts_modern(&self) -> bool {
        !self.listing.legacy_only.load(Ordering::Acquire)
    }

    /// Remembers that it closed a connection started with discovery.
    pub(super) fn start_legacy(&self) {
        self.listing.legacy_only.store(true, Ordering::Release);
    }

    /// Lists every tool on `peer` within `timeout`, and remembers until when the list is
    /// fresh.
    pub(super) async fn list_tools_on(
        &self,
        peer: &Peer<RoleClient>,
        timeout: Duration,
    ) -> Result<Vec<Tool>, String> {
        let listed = tokio::time::timeout(timeout, peer.list_all_tools_with_cache_hint())
            .await
            .map_err(|_| format!("no answer to tools/list within {}", human(timeout)))?
            .map_err(|error| format!("tools/list failed: {error}"))?;
        *lock(&self.listing.fresh_until) = listed
            .ttl_ms
            .map(|ms| Instant::now() + Duration::from_millis(ms).max(MIN_FRESHNESS));
        Ok(listed.items)
    }

    /// Whether its tool list is past its `ttlMs`, on a connection that does not push
    /// `list_changed`. Where it does, the pushes keep the list fresh: rmcp answers every
    /// 2026-07-28 list without a `ttlMs` of its own with `ttlMs: 0`, and a server that
    /// pushes its changes would otherwise be listed again before every call.
    pub(super) fn list_stale(&self) -> bool {
        !self.listing.pushes.load(Ordering::Acquire)
            && lock(&self.listing.fresh_until).is_some_and(|until| Instant::now() >= until)
    }
}

impl Inner {
    /// Lists `server`'s tools again and adopts them: after `list_changed`, or when the list
    /// went stale. A failure leaves the list as it was (logged): the next call finds out
    /// what is wrong with the server.
    pub(super) async fn relist(&self, server: &Arc<Server>, peer: &Peer<RoleClient>) {
        let _one = server.listing.relisting.lock().await;
        match server.list_tools_on(peer, server.deadline).await {
            Ok(tools) => self.adopt(server, &tools),
            Err(error) => {
                tracing::warn!(server = %server.name, %error, "listing the tools again failed");
            }
        }
    }

    /// Lists again the tools of the servers whose list is stale (all, or the one of index
    /// `only`), each within its ping timeout: a server that does not answer is not waited
    /// for longer than a health check.
    pub(super) async fn refresh_stale(&self, only: Option<usize>) {
        for server in &self.servers {
            if only.is_some_and(|i| i != server.index) || !server.list_stale() {
                continue;
            }
            if server.needs_reconnect() {
                continue;
            }
            let Some((peer, _)) = server.peer() else {
                continue;
            };
            let _one = server.listing.relisting.lock().await;
            // Another task may have listed it while this one waited.
            if !server.list_stale() {
                continue;
            }
            match server.list_tools_on(&peer, self.ping_timeout(server)).await {
                Ok(tools) => self.adopt(server, &tools),
                Err(error) => {
                    tracing::debug!(server = %server.name, %error, "a stale tool list could not be listed again");
                }
            }
        }
    }
}

/// Lists again, in the background, the stale lists of `client`'s servers: the definitions
/// shown next are fresh (what is shown now cannot wait for a server). One listing per
/// server at a time; nothing without a Tokio runtime.
pub(super) fn refresh_in_background(client: &Arc<Inner>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    for server in &client.servers {
        if !server.list_stale() || server.listing.background.swap(true, Ordering::AcqRel) {
            continue;
        }
        let (client, index) = (Arc::clone(client), server.index);
        runtime.spawn(async move {
            client.refresh_stale(Some(index)).await;
            client.servers[index]
                .listing
                .background
                .store(false, Ordering::Release);
        });
    }
}

/// On 2026-07-28, `list_changed` comes only on a `subscriptions/listen` stream: opened for
/// a connection whose server offers it, read until the connection ends.
/// On 2025-11-25 and older, a server with the capability pushes `list_changed` itself.
pub(super) fn listen_for_changes(server: &Arc<Server>, peer: &Peer<RoleClient>, generation: u64) {
    let offers = peer.peer_info().is_some_and(|info| {
        info.capabilities
            .tools
            .as_ref()
            .is_some_and(|tools| tools.list_changed == Some(true))
    });
    let pushes = &server.listing.pushes;
    if !stateless(peer) {
        pushes.store(offers, Ordering::Release);
        return;
    }
    pushes.store(false, Ordering::Release);
    if !offers {
        return;
    }
    let (server, peer): (Weak<Server>, _) = (Arc::downgrade(server), peer.clone());
    tokio::spawn(async move {
        let filter = SubscriptionFilter::builder().tools_list_changed().build();
        let mut subscription = match peer.listen(filter).await {
            Ok(subscription) => subscription,
            Err(error) => {
                tracing::debug!(%error, "subscriptions/listen refused");
                return;
            }
        };
        let acknowledged = subscription.acknowledged().tools_list_changed == Some(true);
        let set = |on: bool| {
            if let Some(server) = server.upgrade()
                && server.generation() == generation
            {
                server.listing.pushes.store(on, Ordering::Release);
            }
        };
        set(acknowledged);
        while let Ok(Some(notification)) = subscription.next().await {
            if !matches!(
                notification,
                ServerNotification::ToolListChangedNotification(_)
            ) {
                continue;
            }
            let Some(server) = server.upgrade() else {
                break;
            };
            let Some(client) = server.client.get().and_then(Weak::upgrade) else {
                continue;
            };
            client.relist(&server, &peer).await;
        }
        // The stream ended: the list's `ttlMs` holds again.
        set(false);
    });
}
