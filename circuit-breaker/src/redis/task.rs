//! The store's task: it writes the queued transitions, reads what the other workers wrote
//! and applies it through the link, takes and gives back probe leases, and says when Redis
//! cannot be reached.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, SystemTime};

use ::redis::aio::MultiplexedConnection;
use ::redis::{AsyncConnectionConfig, Client, ErrorKind, RedisError, ServerErrorKind};
use tokio::sync::mpsc;
use tokio::time::{Instant, timeout};

use super::keys::{
    CLOSE_SCRIPT, ClosedValue, Keys, LEASE_SCRIPT, OPEN_SCRIPT, OpenValue, RELEASE_SCRIPT,
    SystemicValue, json, parse,
};
use super::store::{Config, random};
use crate::expeditor::FleetLink;
use crate::model::clock::Timestamp;
use crate::model::fleet::{SharedOpen, SharedTransition};

/// How many systemic event ids a worker remembers (each is applied once).
const SEEN_EVENTS: usize = 32;

fn now_ms() -> u64 {
    Timestamp::from_system_time(SystemTime::now()).as_millis()
}

fn millis(d: Duration) -> u64 {
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

/// What is queued for one tool: the latest of its opened / closed, and whether our lease
/// of it is to be given back.
#[derive(Debug, Default)]
struct Pending {
    state: Option<SharedTransition>,
    release: bool,
}

/// A failed Redis operation: the store is unreachable, or it refused this one (its content).
enum Fault {
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
    keys: Keys,
    config: Config,
    client: Client,
    conn: Option<MultiplexedConnection>,
    link: FleetLink,
    rx: mpsc::UnboundedReceiver<SharedTransition>,
    pending: BTreeMap<String, Pending>,
    systemic: Option<SharedTransition>,
    /// Whether `link.unreachable` was said (and `reachable` not since).
    unreachable: bool,
    /// Per tool, the open key last read (any worker's, ours included).
    seen_open: HashMap<String, OpenValue>,
    /// The systemic event ids already applied (or ours).
    seen_events: VecDeque<String>,
    /// The probe leases this worker holds: tool → token.
    leases: HashMap<String, String>,
    /// The keys whose value is not ours, with why: logged once per distinct reason.
    hostile: HashMap<String, String>,
}

impl Task {
    /// The task of a store just attached: nothing queued, nothing read yet.
    pub(super) fn new(
        keys: Keys,
        config: Config,
        client: Client,
        conn: Option<MultiplexedConnection>,
        link: FleetLink,
        rx: mpsc::UnboundedReceiver<SharedTransition>,
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
            unreachable: false,
            seen_open: HashMap::new(),
            seen_events: VecDeque::new(),
            leases: HashMap::new(),
            hostile: HashMap::new(),
        }
    }

    pub(super) async fn run(mut self) {
        let mut next = Instant::now();
        loop {
            let queued = tokio::select! {
                () = tokio::time::sleep_until(next) => false,
                t = self.rx.recv() => match t {
                    Some(t) => { self.queue(t); true }
                    None => false,
                },
            };
            while let Ok(t) = self.rx.try_recv() {
                self.queue(t);
            }
            if !self.link.is_attached() {
                self.give_back().await;
                return;
            }
            let due = Instant::now() >= next;
            // While unreachable, reconnecting waits for the interval, however much is queued.
            if due || (queued && !self.unreachable) {
                self.cycle().await;
            }
            if due {
                next = Instant::now() + self.config.poll;
            }
        }
    }

    fn queue(&mut self, t: SharedTransition) {
        match t {
            SharedTransition::Opened { ref tool, .. } => {
                let tool = tool.clone();
                self.pending.entry(tool).or_default().state = Some(t);
            }
            SharedTransition::Closed { ref tool } => {
                let p = self.pending.entry(tool.clone()).or_default();
                p.state = Some(t);
                p.release = true;
            }
            SharedTransition::ProbeEnded { tool } => {
                self.pending.entry(tool).or_default().release = true;
            }
            SharedTransition::Systemic { .. } => self.systemic = Some(t),
        }
    }

    /// One operation on the connection, under the op timeout.
    async fn query<T: ::redis::FromRedisValue>(&mut self, cmd: &::redis::Cmd) -> Result<T, Fault> {
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
            let held: Vec<(String, String)> = self.leases.drain().collect();
            for (tool, token) in held {
                let _ = self.release(&tool, &token).await;
            }
            self.link.reachable();
            while let Ok(t) = self.rx.try_recv() {
                self.queue(t);
            }
        }
        if let Err(why) = self.write().await {
            return self.lost(&why);
        }
        if let Err(why) = self.read().await {
            return self.lost(&why);
        }
        if let Err(why) = self.lease().await {
            self.lost(&why);
        }
    }

    async fn write(&mut self) -> Result<(), String> {
        let tools: Vec<String> = self.pending.keys().cloned().collect();
        for tool in tools {
            let Some(p) = self.pending.get(&tool) else {
                continue;
            };
            let cmd = match &p.state {
                Some(SharedTransition::Opened {
                    message, category, ..
                }) => {
                    let value = OpenValue {
                        v: 1,
                        worker: self.config.worker.clone(),
                        message: message.clone(),
                        category: *category,
                        at_ms: now_ms(),
                    };
                    let mut cmd = ::redis::cmd("EVAL");
                    cmd.arg(OPEN_SCRIPT)
                        .arg(3)
                        .arg(self.keys.open(&tool))
                        .arg(self.keys.closed(&tool))
                        .arg(self.keys.seen(&tool))
                        .arg(json(&value))
                        .arg(millis(self.config.open_ttl))
                        .arg(&self.config.worker)
                        .arg(self.config.quorum);
                    Some(cmd)
                }
                Some(SharedTransition::Closed { .. }) => {
                    let marker = ClosedValue {
                        v: 1,
                        worker: self.config.worker.clone(),
                        at_ms: now_ms(),
                    };
                    let token = self.leases.get(&tool).cloned().unwrap_or_default();
                    let mut cmd = ::redis::cmd("EVAL");
                    cmd.arg(CLOSE_SCRIPT)
                        .arg(4)
                        .arg(self.keys.open(&tool))
                        .arg(self.keys.closed(&tool))
                        .arg(self.keys.seen(&tool))
                        .arg(self.keys.probe(&tool))
                        .arg(json(&marker))
                        .arg(millis(self.config.poll * 3))
                        .arg(token);
                    Some(cmd)
                }
                _ => None,
            };
            let release = p.release;
            if let Some(cmd) = cmd {
                match self.query::<i64>(&cmd).await {
                    Ok(_) => {}
                    Err(Fault::Unreachable(why)) => return Err(why),
                    Err(Fault::Refused(why)) => {
                        tracing::warn!(tool, %why, "redis fleet: a write was refused; dropped");
                    }
                }
            }
            if release && let Some(token) = self.leases.get(&tool).cloned() {
                self.release(&tool, &token).await?;
            }
            self.pending.remove(&tool);
        }
        if let Some(SharedTransition::Systemic {
            pattern,
            cause,
            tools,
            category,
        }) = self.systemic.clone()
        {
            let id = format!("{}-{:016x}", self.config.worker, random());
            let value = SystemicValue {
                v: 1,
                id: id.clone(),
                worker: self.config.worker.clone(),
                pattern,
                cause,
                tools,
                category,
            };
            let mut cmd = ::redis::cmd("SET");
            cmd.arg(self.keys.systemic())
                .arg(json(&value))
                .arg("PX")
                .arg(millis(self.config.open_ttl));
            match self.query::<()>(&cmd).await {
                Ok(()) => self.remember_event(id),
                Err(Fault::Unreachable(why)) => return Err(why),
                Err(Fault::Refused(why)) => {
                    tracing::warn!(%why, "redis fleet: the systemic event was refused; dropped");
                }
            }
            self.systemic = None;
        }
        Ok(())
    }

    async fn release(&mut self, tool: &str, token: &str) -> Result<(), String> {
        let mut cmd = ::redis::cmd("EVAL");
        cmd.arg(RELEASE_SCRIPT)
            .arg(1)
            .arg(self.keys.probe(tool))
            .arg(token);
        match self.query::<i64>(&cmd).await {
            Ok(_) | Err(Fault::Refused(_)) => {
                self.leases.remove(tool);
                Ok(())
            }
            Err(Fault::Unreachable(why)) => Err(why),
        }
    }

    /// A value read under `key`, or `None` (absent, or not ours: logged once per reason).
    fn decode<T: serde::de::DeserializeOwned>(
        &mut self,
        key: String,
        raw: Option<Vec<u8>>,
    ) -> Option<T> {
        match parse(raw) {
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

    fn remember_event(&mut self, id: String) {
        if self.seen_events.len() >= SEEN_EVENTS {
            self.seen_events.pop_front();
        }
        self.seen_events.push_back(id);
    }

    async fn read(&mut self) -> Result<(), String> {
        let tools = self.link.tools();
        let mut cmd = ::redis::cmd("MGET");
        for tool in &tools {
            cmd.arg(self.keys.open(tool));
        }
        for tool in &tools {
            cmd.arg(self.keys.closed(tool));
        }
        cmd.arg(self.keys.systemic());
        let values: Vec<Option<Vec<u8>>> = match self.query(&cmd).await {
            Ok(v) => v,
            Err(Fault::Unreachable(why) | Fault::Refused(why)) => return Err(why),
        };
        if values.len() != tools.len() * 2 + 1 {
            return Err(format!(
                "MGET answered {} values for {} keys",
                values.len(),
                tools.len() * 2 + 1
            ));
        }
        let mut values = values.into_iter();
        let opens: Vec<Option<Vec<u8>>> = values.by_ref().take(tools.len()).collect();
        let closeds: Vec<Option<Vec<u8>>> = values.by_ref().take(tools.len()).collect();
        let systemic = values.next().flatten();
        for ((tool, open), closed) in tools.iter().zip(opens).zip(closeds) {
            let open: Option<OpenValue> = self.decode(self.keys.open(tool), open);
            if let Some(open) = open {
                let new = self.seen_open.get(tool) != Some(&open);
                if new && open.worker != self.config.worker {
                    self.link.open(
                        tool,
                        SharedOpen {
                            worker: open.worker.clone(),
                            message: open.message.clone(),
                            category: open.category,
                            at: Timestamp::from_millis(open.at_ms),
                        },
                    );
                }
                self.seen_open.insert(tool.clone(), open);
                continue;
            }
            let Some(gone) = self.seen_open.remove(tool) else {
                continue;
            };
            let closed: Option<ClosedValue> = self.decode(self.keys.closed(tool), closed);
            match closed {
                // Closed by another worker's probe: closed here too.
                Some(c) if c.worker != self.config.worker => {
                    self.link.cleared(tool, true);
                }
                // Expired (or lost with a restarted Redis): another worker's ends here.
                None if gone.worker != self.config.worker => {
                    self.link.cleared(tool, false);
                }
                // Closed by our own probe, or our own key expired: our breaker goes on.
                _ => {}
            }
        }
        let systemic: Option<SystemicValue> = self.decode(self.keys.systemic(), systemic);
        if let Some(s) = systemic
            && !self.seen_events.contains(&s.id)
        {
            let theirs = s.worker != self.config.worker;
            self.remember_event(s.id);
            if theirs {
                self.link.systemic(s.pattern, s.tools, s.category);
            }
        }
        Ok(())
    }

    async fn lease(&mut self) -> Result<(), String> {
        for tool in self.link.probes_wanted() {
            if let Some(token) = self.leases.get(&tool).cloned() {
                // Still ours from an earlier grant the engine let go of: grant it again.
                if !self.link.grant_probe(&tool) {
                    self.release(&tool, &token).await?;
                }
                continue;
            }
            let token = format!("{}:{:016x}", self.config.worker, random());
            let mut cmd = ::redis::cmd("EVAL");
            cmd.arg(LEASE_SCRIPT)
                .arg(1)
                .arg(self.keys.probe(&tool))
                .arg(&token)
                .arg(millis(self.config.lease_ttl));
            let won: i64 = match self.query(&cmd).await {
                Ok(v) => v,
                Err(Fault::Unreachable(why)) => return Err(why),
                Err(Fault::Refused(why)) => {
                    tracing::warn!(tool, %why, "redis fleet: the lease was refused");
                    0
                }
            };
            if won == 1 {
                self.leases.insert(tool.clone(), token.clone());
                if !self.link.grant_probe(&tool) {
                    self.release(&tool, &token).await?;
                }
            }
        }
        Ok(())
    }

    /// The expeditor is gone: give back the leases it held (best effort) and end.
    async fn give_back(&mut self) {
        if self.conn.is_none() {
            return;
        }
        let held: Vec<(String, String)> = self.leases.drain().collect();
        for (tool, token) in held {
            if self.release(&tool, &token).await.is_err() {
                return;
            }
        }
    }
}
