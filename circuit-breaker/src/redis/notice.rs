//! Change notices: after a write that changed the store, the writer publishes on the
//! namespace's channel (`{namespace}:v2:changed`), and every worker's listener wakes its task
//! to read at once, so that a transition reaches the fleet in about one round trip instead of
//! one poll. The notice carries nothing: what changed is read from the keys, checked as
//! always. The poll stays, for a notice lost with a connection, and where pub/sub is not
//! allowed (an ACL user without the channel, `&{namespace}:*`): then the worker polls, and
//! says so once.

use std::sync::Arc;
use std::time::Duration;

use ::redis::Client;
use futures_util::StreamExt;
use tokio::sync::Notify;
use tokio::time::timeout;

use crate::expeditor::FleetLink;

/// Listens for the fleet's change notices on `channel` until the expeditor is gone, waking
/// `wake` on each; subscribes again every `retry` while it cannot.
pub(super) async fn listen(
    client: Client,
    channel: String,
    wake: Arc<Notify>,
    link: FleetLink,
    retry: Duration,
    deadline: Duration,
) {
    let mut said = false;
    while link.is_attached() {
        match subscribe(&client, &channel, deadline).await {
            Ok(mut notices) => {
                said = false;
                // What was published while nobody listened is read now.
                wake.notify_one();
                loop {
                    tokio::select! {
                        notice = notices.next() => match notice {
                            Some(_) => wake.notify_one(),
                            None => break,
                        },
                        () = tokio::time::sleep(retry) => {
                            if !link.is_attached() {
                                return;
                            }
                        }
                    }
                }
            }
            Err(why) => {
                if !said {
                    tracing::info!(
                        channel,
                        %why,
                        "redis fleet: no change notices (pub/sub); reading every poll interval"
                    );
                    said = true;
                }
            }
        }
        tokio::time::sleep(retry).await;
    }
}

async fn subscribe(
    client: &Client,
    channel: &str,
    deadline: Duration,
) -> Result<::redis::aio::PubSubStream, String> {
    let mut pubsub = timeout(deadline, client.get_async_pubsub())
        .await
        .map_err(|_| format!("no answer within {deadline:?}"))?
        .map_err(|e| e.to_string())?;
    timeout(deadline, pubsub.subscribe(channel))
        .await
        .map_err(|_| format!("no answer within {deadline:?}"))?
        .map_err(|e| e.to_string())?;
    Ok(pubsub.into_on_message())
}
