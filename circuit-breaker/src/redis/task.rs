//! The store's task: it writes the queued transitions, reads what the other workers wrote
//! and applies it through the link, takes, renews and gives back probe leases, and says when
//! Redis cannot be reached. What it writes is in `write.rs`, what it reads in `read.rs`, the
//! leases in `lease.rs`.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use ::redis::aio::MultiplexedConnection;
use ::redis::{AsyncConnectionConfig, Client, ErrorKind, RedisError, ServerErrorKind};
use tokio::sync::{Notify, mpsc};
use tokio::time::{Instant, timeout};

use super::keys::{Keys, SystemicValue, ToolValue};
use super::store::Config;
use crate::expeditor::FleetLink;
use crate::model::clock::Timestamp;
use crate::model::fleet::SharedTransition;

/// How many systemic event ids a worker remembers (each is applied once).
const SEEN_EVENTS: usize = 32;

pub(super) fn now_ms() -> u64 {
    Timestamp::from_system_time(SystemTime::now()).as_millis()
}

pub(super) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

pub(super) async fn connect(
    client: &Client,
    deadline: Duration,
) -> Result<MultiplexedConnection, String> {
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(deadline))
        .set_response_timeout(Some(deadline));
    match timeout(
        deadline,
        client.get_multiplexed_async_connection_with_config(&config),
    )
    .await
    {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {deadline:?}")),
    }
}

/// Whether a value written by `worker` at `at_ms` may act here: from an allowed worker,
/// not from further in the future than the skew bound, not older than the open TTL (a
/// key that outlived it, from a Redis restarted from its files, acts on nothing).
pub(super) fn admissible(config: &Config, worker: &str, at_ms: u64) -> Result<(), String> {
    if let Some(allowed) = &config.allowed
        && !allowed.contains(worker)
    {
        return Err(format!("written by {worker:?}, not an allowed worker"));
    }
    // Stable reasons, without the figures: each is logged once per key.
    let now = now_ms();
    if at_ms > now.saturating_add(millis(config.max_skew)) {
        return Err(format!(
            "dated in the future, beyond the {:?} clock skew allowed",
            config.max_skew
        ));
    }
    if at_ms.saturating_add(millis(config.open_ttl)) < now {
        return Err(format!(
            "dated before the open TTL ({:?}): stale",
            config.open_ttl
        ));
    }
    Ok(())
}

/// What is queued for one tool: its latest transition here, and whether our lease of it is
/// to be given back.
#[derive(Debug, Default)]
pub(super) struct Pending {
    pub(super) state: Option<ToolValue>,
    pub(super) release: bool,
}

/// A probe lease this worker holds.
#[derive(Debug)]
pub(super) struct Lease {
    pub(super) token: String,
    /// When it was taken: a grant no call has used within the lease TTL lapses.
    pub(super) taken: Instant,
}

/// A failed Redis operation: the store is unreachable, or it refused this one (its content).
pub(super) enum Fault {
    Unreachable(String),
    Refused(String),
}

fn fault(e: &RedisError) -> Fault {
    match e.kind() {
        ErrorKind::Server(ServerErrorKind::ResponseError) | ErrorKind::Extension => {
            Fault::Refused(e.to_string())
        }
        _ => Fault::Unreachable(e.to_string()),
    }
}

pub(super) struct Task {
    pub(super) keys: Keys,
    pub(super) config: Config,
    client: Client,
    conn: Option<MultiplexedConnection>,
    pub(super) link: FleetLink,
    rx: mpsc::UnboundedReceiver<(Timestamp, SharedTransition)>,
    pub(super) pending: BTreeMap<String, Pending>,
    /// A systemic event detected here, not yet written.
    pub(super) systemic: Option<SystemicValue>,
    /// The systemic event this worker paused for (its own or another's), while in force.
    pub(super) paused_for: Option<SystemicValue>,
    /// A recovery confirmed here, not yet written: the event marked recovered.
    pub(super) recovery: Option<SystemicValue>,
    /// Whether `link.unreachable` was said (and `reachable` not since).
    unreachable: bool,
    /// Per tool, the latest transition this worker knows: read, or made here.
    pub(super) known: HashMap<String, ToolValue>,
    /// The systemic event ids already applied (or ours).
    pub(super) seen_events: VecDeque<String>,
    /// The probe leases this worker holds, by tool.
    pub(super) leases: HashMap<String, Lease>,
    /// When the leases are next renewed.
    pub(super) renew_at: Option<Instant>,
    /// The keys whose value is not ours, with why: logged once per distinct reason.
    hostile: HashMap<String, String>,
    /// The lease holders that are no token of ours, logged once each.
    pub(super) foreign_leases: HashSet<String>,
    /// Woken by a change notice of the fleet (`notice.rs`): read now.
    wake: Arc<Notify>,
    /// Whether a write changed the store since the last notice was published.
    pub(super) changed: bool,
    /// Whether publishing a notice was refused (said once).
    pub(super) notices_refused: bool,
}

impl Task {
    /// The task of a store just attached: nothing queued, nothing read yet.
    pub(super) fn new(
        keys: Keys,
        config: Config,
        client: Client,
        conn: Option<MultiplexedConnection>,
        link: FleetLink,
        rx: mpsc::UnboundedReceiver<(Timestamp, SharedTransition)>,
        wake: Arc<Notify>,
    ) -> Self {
        Task {
            keys,
            config,
            client,
            conn,
            link,
            rx,
            pending: BTreeMap::new(),
            systemic: None,
            paused_for: None,
            recovery: None,
            unreachable: false,
            known: HashMap::new(),
            seen_events: VecDeque::new(),
            leases: HashMap::new(),
            renew_at: None,
            hostile: HashMap::new(),
            foreign_leases: HashSet::new(),
            wake,
            changed: false,
            notices_refused: false,
        }
    }

    pub(super) async fn run(mut self) {
        let mut next = Instant::now();
        loop {
            let wake = self.renew_at.map_or(next, |r| r.min(next));
            let notice = Arc::clone(&self.wake);
            let queued = tokio::select! {
                () = tokio::time::sleep_until(wake) => false,
                // Another worker changed the store: read now, as if something were queued.
                () = notice.notified() => true,
                t = self.rx.recv() => match t {
                    Some((at, t)) => { self.queue(at, t); true }
                    None => false,
                },
            };
            while let Ok((at, t)) = self.rx.try_recv() {
                self.queue(at, t);
            }
            if !self.link.is_attached() {
                self.give_back().await;
                return;
            }
            let due = Instant::now() >= next;
            // While unreachable, reconnecting waits for the interval, however much is queued.
            if due || (queued && !self.unreachable) {
                self.cycle().await;
            } else if !self.unreachable
                && self.renew_at.is_some_and(|r| Instant::now() >= r)
                && let Err(why) = self.renew().await
            {
                self.lost(&why);
            }
            if due {
                next = Instant::now() + self.config.poll;
            }
        }
    }

    /// One operation on the connection, under the op timeout.
    pub(super) async fn query<T: ::redis::FromRedisValue>(
        &mut self,
        cmd: &::redis::Cmd,
    ) -> Result<T, Fault> {
        let Some(conn) = self.conn.as_mut() else {
            return Err(Fault::Unreachable("not connected".into()));
        };
        match timeout(self.config.op_timeout, cmd.query_async::<T>(conn)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(fault(&e)),
            Err(_) => Err(Fault::Unreachable(format!(
                "no answer within {:?}",
                self.config.op_timeout
            ))),
        }
    }

    fn lost(&mut self, why: &str) {
        self.conn = None;
        if !self.unreachable {
            self.unreachable = true;
            tracing::warn!(why, "redis fleet: store unreachable, deciding locally");
            self.link.unreachable(why);
        }
    }

    /// Write, read, lease: one poll.
    async fn cycle(&mut self) {
        if self.conn.is_none() {
            match connect(&self.client, self.config.op_timeout).await {
                Ok(conn) => self.conn = Some(conn),
                Err(why) => return self.lost(&why),
            }
        }
        if self.unreachable {
            // Prove it answers before saying so.
            if let Err(Fault::Unreachable(why) | Fault::Refused(why)) =
                self.query::<String>(&::redis::cmd("PING")).await
            {
                return self.lost(&why);
            }
            self.unreachable = false;
            // Leases held before are expired or about to: start over.
            let held: Vec<(String, Lease)> = self.leases.drain().collect();
            for (tool, lease) in held {
                let _ = self.release(&tool, &lease.token).await;
            }
            self.renew_at = None;
            self.link.reachable();
            while let Ok((at, t)) = self.rx.try_recv() {
                self.queue(at, t);
            }
        }
        if let Err(why) = self.write().await {
            return self.lost(&why);
        }
        if let Err(why) = self.read().await {
            return self.lost(&why);
        }
        if let Err(why) = self.renew().await {
            return self.lost(&why);
        }
        if let Err(why) = self.lease().await {
            self.lost(&why);
        }
    }

    /// What was read under `key`: the value, or `None` (absent, or not ours: logged once per
    /// reason).
    pub(super) fn logged<T>(&mut self, key: String, read: Result<Option<T>, String>) -> Option<T> {
        match read {
            Ok(value) => {
                self.hostile.remove(&key);
                value
            }
            Err(why) => {
                if self.hostile.get(&key) != Some(&why) {
                    tracing::warn!(key, %why, "redis fleet: ignoring a value that is not ours");
                    self.hostile.insert(key, why);
                }
                None
            }
        }
    }

    pub(super) fn remember_event(&mut self, id: String) {
        if self.seen_events.len() >= SEEN_EVENTS {
            self.seen_events.pop_front();
        }
        self.seen_events.push_back(id);
    }

    /// The expeditor is gone: give back the leases it held (best effort) and end.
    async fn give_back(&mut self) {
        if self.conn.is_none() {
            return;
        }
        let held: Vec<(String, Lease)> = self.leases.drain().collect();
        for (tool, lease) in held {
            if self.release(&tool, &lease.token).await.is_err() {
                return;
            }
        }
    }
}
