//! A fleet store on Redis (B11, feature `redis`): tool health shared by every worker
//! that attaches a [`RedisFleet`] on the same namespace.
//!
//! ```no_run
//! # async fn run(map: agent_circuit_breaker::CapabilityMap) -> Result<(), Box<dyn std::error::Error>> {
//! use agent_circuit_breaker::Expeditor;
//! use agent_circuit_breaker::redis::RedisFleet;
//!
//! let fleet = RedisFleet::connect("redis://127.0.0.1:6379", "agents")
//!     .worker("w-1")
//!     .await?;
//! let expeditor = Expeditor::builder(map).fleet(fleet).build()?;
//! # drop(expeditor); Ok(()) }
//! ```
//!
//! For a `#[toolbox]`: `Guarded::with_expeditor(toolbox, |b| b.fleet(fleet))`.
//!
//! # What it does
//! The store owns one tokio task (spawned on the runtime [`RedisFleet::connect`] was awaited
//! on). Decisions never wait on it: [`FleetStore::share`] only pushes the transitions into an
//! unbounded channel. The task, every poll interval and whenever transitions are queued:
//!
//! 1. writes the queued transitions (one Lua script per transition, atomic in Redis);
//! 2. reads, in one round trip (one `MGET`), the open key and the closed marker of every
//!    tool of the map and the systemic key, and applies what changed through the
//!    [`FleetLink`]: a new open key written by another worker → the tool is OPEN here
//!    ([`FleetLink::open`]); an open key gone, with a closed marker of another worker → closed
//!    by that worker's probe ([`FleetLink::cleared`] with `true`); gone without one → expired
//!    (`false`); a systemic event not seen before → paused here too, once per event id;
//! 3. for every shared circuit whose probe is due here ([`FleetLink::probes_wanted`]), tries
//!    to take the fleet's probe lease (`SET NX PX`, a random token; a value there without
//!    an expiry is no lease and is removed first); the worker that wins it
//!    probes, the others keep skipping. The lease is released by compare-and-delete (only if
//!    it still holds our token) when the probe ends or closes the circuit; a lease whose
//!    holder died expires after the lease TTL, and another worker probes then.
//!
//! One `RedisFleet` (and its clones) serves one expeditor: a second
//! [`attach`](FleetStore::attach) is ignored, with a warning in the log. Connect once per
//! expeditor. The task ends when the expeditor is dropped (within one poll interval), giving
//! back any probe lease it holds.
//!
//! # Key layout
//! Every key is under `{namespace}:v1:`, so that a fleet on another layout version (`v2`)
//! never reads ours, and we never read theirs:
//!
//! | key | value | expiry |
//! |---|---|---|
//! | `open:{tool}` | JSON `{"v":1,"worker","message","category","at_ms"}` | open TTL (default 30 s), renewed when the circuit opens again (a failed probe) |
//! | `closed:{tool}` | JSON `{"v":1,"worker","at_ms"}`: a probe closed it (the open key is deleted) | 3 × poll interval |
//! | `probe:{tool}` | the lease holder's token | probe lease TTL (default 10 s) |
//! | `seen:{tool}` | set of the workers that saw it open (quorum only) | open TTL |
//! | `systemic` | JSON `{"v":1,"id","worker","pattern","cause","tools","category"}` | open TTL |
//!
//! The expiry of the open key ends the shared OPEN state: a worker that opened a circuit and
//! then died does not keep the fleet off the tool for longer than the open TTL. With a
//! quorum of N ([`RedisFleetBuilder::quorum`]), a worker that opens a circuit adds itself to
//! `seen:{tool}` and the open key is written only once N distinct workers are in it.
//!
//! Store contents are never trusted: a value that is not our JSON, of another version, or
//! larger than 64 KiB is logged (`tracing`, warn) and ignored as if absent; nothing in the
//! store can make a worker panic.
//!
//! # Consistency
//! Decisions are local and the store is eventually consistent: a transition reaches every
//! other worker within **poll interval + op timeout + one round trip** (default
//! 1 s + 250 ms + RTT) while Redis answers. Between two polls a worker may still call a tool
//! another worker just opened (at most what it calls in one interval). The probe is single
//! fleet-wide while Redis answers and a probe lasts less than the lease TTL; while Redis is
//! unreachable every worker probes on its own breaker.
//!
//! # Store faults
//! Every Redis operation runs under the op timeout (default 250 ms). An error or timeout
//! makes the worker decide on local state alone ([`FleetLink::unreachable`]: a
//! `StoreUnavailable` event, a line of the state table), keeps the queued transitions (the
//! latest per tool: bounded by the map) and tries again every poll interval; when Redis
//! answers again, [`FleetLink::reachable`] (`StoreRestored`; what opened here meanwhile is
//! published again) and the queue is written. Nothing recorded locally is lost: the local
//! breakers and budget never depend on the store.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ::redis::aio::MultiplexedConnection;
use ::redis::{AsyncConnectionConfig, Client, ErrorKind, RedisError, ServerErrorKind};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio::time::{Instant, timeout};

use crate::expeditor::{FleetLink, FleetStore};
use crate::model::clock::Timestamp;
use crate::model::failure::FailureCategory;
use crate::model::fleet::{SharedOpen, SharedTransition};

/// The `redis` crate this store is built on, for a program's own Redis commands (a task
/// queue, say) on the same version.
pub use ::redis;

/// The layout version of every key (`{namespace}:v1:…`).
pub const LAYOUT: &str = "v1";

/// Values longer than this are ignored unread (logged).
const MAX_VALUE: usize = 64 * 1024;

/// How many systemic event ids a worker remembers (each is applied once).
const SEEN_EVENTS: usize = 32;

/// Why a [`RedisFleet`] could not be made.
#[derive(Debug)]
#[non_exhaustive]
pub enum RedisFleetError {
    /// The URL is not a Redis URL.
    Url(String),
    /// A setting out of range (an empty namespace or worker id, a zero interval or TTL).
    Config(String),
    /// Not awaited inside a tokio runtime (the store's task needs one).
    NoRuntime,
}

impl fmt::Display for RedisFleetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RedisFleetError::Url(why) => write!(f, "not a Redis URL: {why}"),
            RedisFleetError::Config(why) => write!(f, "redis fleet: {why}"),
            RedisFleetError::NoRuntime => {
                f.write_str("redis fleet: RedisFleet::connect must be awaited on a tokio runtime")
            }
        }
    }
}

impl std::error::Error for RedisFleetError {}

/// The settings of a [`RedisFleet`], as built.
#[derive(Debug, Clone)]
struct Config {
    namespace: String,
    worker: String,
    poll: Duration,
    open_ttl: Duration,
    lease_ttl: Duration,
    op_timeout: Duration,
    quorum: u32,
}

/// Builds a [`RedisFleet`]; made by [`RedisFleet::connect`], awaited to connect.
#[derive(Debug)]
#[must_use = "await it to connect"]
pub struct RedisFleetBuilder {
    url: String,
    config: Config,
}

impl RedisFleetBuilder {
    /// This worker's id, as the other workers' reports name it (default
    /// `{hostname}-{pid}-{random}`). Distinct per worker of the fleet.
    pub fn worker(mut self, id: impl Into<String>) -> Self {
        self.config.worker = id.into();
        self
    }

    /// How often the store is read (default 1 s): with the op timeout, the staleness bound.
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.config.poll = every;
        self
    }

    /// How long a shared OPEN state lasts unless renewed (default 30 s): the open key's expiry.
    pub fn open_ttl(mut self, ttl: Duration) -> Self {
        self.config.open_ttl = ttl;
        self
    }

    /// How long a probe lease is held at most (default 10 s): a worker that dies holding it
    /// keeps the fleet's probe for no longer.
    pub fn probe_lease_ttl(mut self, ttl: Duration) -> Self {
        self.config.lease_ttl = ttl;
        self
    }

    /// The deadline of every Redis operation (default 250 ms); past it the store counts as
    /// unreachable.
    pub fn op_timeout(mut self, deadline: Duration) -> Self {
        self.config.op_timeout = deadline;
        self
    }

    /// Opens a tool fleet-wide only when at least `n` distinct workers saw it open
    /// (default 1: the first worker's).
    pub fn quorum(mut self, n: u32) -> Self {
        self.config.quorum = n.max(1);
        self
    }

    async fn build(self) -> Result<RedisFleet, RedisFleetError> {
        let c = &self.config;
        if c.namespace.is_empty() || c.worker.is_empty() {
            return Err(RedisFleetError::Config(
                "the namespace and the worker id must not be empty".into(),
            ));
        }
        if [c.poll, c.open_ttl, c.lease_ttl, c.op_timeout].contains(&Duration::ZERO) {
            return Err(RedisFleetError::Config(
                "the poll interval, TTLs and op timeout must be positive".into(),
            ));
        }
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| RedisFleetError::NoRuntime)?;
        let client =
            Client::open(self.url.as_str()).map_err(|e| RedisFleetError::Url(e.to_string()))?;
        let name = format!("redis {}/{}", address(&self.url), c.namespace);
        // One connection attempt now; a Redis that does not answer is no error (the fleet
        // starts unreachable: local decisions, retried every interval).
        let conn = connect(&client, c.op_timeout).await.ok();
        let (tx, rx) = mpsc::unbounded_channel();
        Ok(RedisFleet {
            shared: Arc::new(Shared {
                name,
                config: self.config,
                client,
                runtime,
                tx,
                start: Mutex::new(Some((rx, conn))),
                attached: AtomicBool::new(false),
            }),
        })
    }
}

impl std::future::IntoFuture for RedisFleetBuilder {
    type Output = Result<RedisFleet, RedisFleetError>;
    type IntoFuture =
        std::pin::Pin<Box<dyn std::future::Future<Output = Self::Output> + Send + 'static>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.build())
    }
}

/// A [`FleetStore`] on Redis; see the [module docs](self). Cheap to clone (one store).
#[derive(Clone)]
pub struct RedisFleet {
    shared: Arc<Shared>,
}

struct Shared {
    name: String,
    config: Config,
    client: Client,
    runtime: tokio::runtime::Handle,
    tx: mpsc::UnboundedSender<SharedTransition>,
    /// Taken by the one attach: the task's queue and its first connection.
    #[allow(clippy::type_complexity)]
    start: Mutex<
        Option<(
            mpsc::UnboundedReceiver<SharedTransition>,
            Option<MultiplexedConnection>,
        )>,
    >,
    attached: AtomicBool,
}

impl fmt::Debug for RedisFleet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisFleet")
            .field("store", &self.shared.name)
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

impl RedisFleet {
    /// A store on the Redis at `url` (`redis://host:port[/db]`), under `namespace`: set
    /// the worker id and the timings on the builder, then await it. Awaited on a tokio
    /// runtime, which runs the store's task.
    ///
    /// # Errors
    /// (When awaited) [`RedisFleetError`] for a URL that is no Redis URL, a setting out of
    /// range or no runtime. A Redis that does not answer is **not** an error: the worker
    /// starts deciding alone and joins the fleet when Redis answers.
    pub fn connect(url: impl Into<String>, namespace: impl Into<String>) -> RedisFleetBuilder {
        RedisFleetBuilder {
            url: url.into(),
            config: Config {
                namespace: namespace.into(),
                worker: default_worker(),
                poll: Duration::from_secs(1),
                open_ttl: Duration::from_secs(30),
                lease_ttl: Duration::from_secs(10),
                op_timeout: Duration::from_millis(250),
                quorum: 1,
            },
        }
    }

    /// This worker's id.
    pub fn worker(&self) -> &str {
        &self.shared.config.worker
    }

    /// The namespace's prefix of every key: `{namespace}:v1:`.
    pub fn prefix(&self) -> String {
        format!("{}:{LAYOUT}:", self.shared.config.namespace)
    }

    /// The staleness bound: poll interval + op timeout (plus one round trip).
    pub fn staleness_bound(&self) -> Duration {
        self.shared.config.poll + self.shared.config.op_timeout
    }
}

impl FleetStore for RedisFleet {
    fn name(&self) -> String {
        self.shared.name.clone()
    }

    fn attach(&self, link: FleetLink) {
        let taken = self.shared.start.lock().ok().and_then(|mut s| s.take());
        let Some((rx, conn)) = taken else {
            tracing::warn!(
                store = %self.shared.name,
                "a RedisFleet serves one expeditor: this second attach is ignored (connect one per expeditor)"
            );
            return;
        };
        self.shared.attached.store(true, Ordering::Release);
        let task = Task {
            keys: Keys {
                prefix: format!("{}:{LAYOUT}:", self.shared.config.namespace),
            },
            config: self.shared.config.clone(),
            client: self.shared.client.clone(),
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
        };
        self.shared.runtime.spawn(task.run());
    }

    fn share(&self, transitions: &[SharedTransition]) {
        for t in transitions {
            // Fails only once the task has ended (its expeditor is gone): nothing to tell.
            let _ = self.shared.tx.send(t.clone());
        }
    }
}

/// `host:port` of a Redis URL, without its credentials.
fn address(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let host = rest.split(['/', '?']).next().unwrap_or(rest);
    if host.is_empty() {
        "127.0.0.1:6379".to_owned()
    } else if host.contains(':') {
        host.to_owned()
    } else {
        format!("{host}:6379")
    }
}

fn random() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

fn default_worker() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
                .filter(|h| !h.is_empty())
        })
        .unwrap_or_else(|| "host".to_owned());
    format!("{host}-{}-{:06x}", std::process::id(), random() & 0xff_ffff)
}

fn now_ms() -> u64 {
    Timestamp::from_system_time(SystemTime::now()).as_millis()
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

async fn connect(client: &Client, deadline: Duration) -> Result<MultiplexedConnection, String> {
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

/// The open key's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct OpenValue {
    v: u32,
    worker: String,
    message: String,
    category: FailureCategory,
    at_ms: u64,
}

/// The closed marker's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ClosedValue {
    v: u32,
    worker: String,
    at_ms: u64,
}

/// The systemic key's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct SystemicValue {
    v: u32,
    id: String,
    worker: String,
    pattern: String,
    cause: String,
    tools: Vec<String>,
    category: Option<FailureCategory>,
}

/// A value read from the store: ours (version 1, our JSON), absent, or why it is not ours.
fn parse<T: serde::de::DeserializeOwned>(raw: Option<Vec<u8>>) -> Result<Option<T>, String> {
    #[derive(Deserialize)]
    struct Version {
        v: Option<u64>,
    }
    let Some(raw) = raw else {
        return Ok(None);
    };
    if raw.len() > MAX_VALUE {
        return Err(format!(
            "{} bytes, over the {MAX_VALUE} a value may have",
            raw.len()
        ));
    }
    match serde_json::from_slice::<Version>(&raw) {
        Ok(Version { v: Some(1) }) => serde_json::from_slice::<T>(&raw)
            .map(Some)
            .map_err(|e| e.to_string()),
        Ok(Version { v }) => Err(format!("layout version {v:?}, not 1")),
        Err(e) => Err(e.to_string()),
    }
}

struct Keys {
    prefix: String,
}

impl Keys {
    fn open(&self, tool: &str) -> String {
        format!("{}open:{tool}", self.prefix)
    }
    fn closed(&self, tool: &str) -> String {
        format!("{}closed:{tool}", self.prefix)
    }
    fn probe(&self, tool: &str) -> String {
        format!("{}probe:{tool}", self.prefix)
    }
    fn seen(&self, tool: &str) -> String {
        format!("{}seen:{tool}", self.prefix)
    }
    fn systemic(&self) -> String {
        format!("{}systemic", self.prefix)
    }
}

/// Publishes an open key (with a quorum, once enough workers saw it); drops the closed marker.
/// KEYS: open, closed, seen. ARGV: value, ttl ms, worker, quorum.
const OPEN_SCRIPT: &str = r"
local quorum = tonumber(ARGV[4])
if quorum > 1 then
  if redis.call('TYPE', KEYS[3]).ok ~= 'set' then redis.call('DEL', KEYS[3]) end
  redis.call('SADD', KEYS[3], ARGV[3])
  redis.call('PEXPIRE', KEYS[3], ARGV[2])
  if redis.call('SCARD', KEYS[3]) < quorum then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('DEL', KEYS[2])
return 1
";

/// A probe closed the tool: the open key and the sightings go, the marker is set, our lease
/// (if it is still ours) is released. KEYS: open, closed, seen, probe. ARGV: marker, marker
/// ttl ms, token ('' for none).
const CLOSE_SCRIPT: &str = r"
redis.call('DEL', KEYS[1], KEYS[3])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
if ARGV[3] ~= '' and redis.pcall('GET', KEYS[4]) == ARGV[3] then redis.call('DEL', KEYS[4]) end
return 1
";

/// Takes the lease if it is free (`SET NX PX`). A value without an expiry is no lease (every
/// lease has one): garbage, removed, so that it cannot stick the tool. KEYS: probe. ARGV:
/// token, ttl ms.
const LEASE_SCRIPT: &str = r"
if redis.call('PTTL', KEYS[1]) == -1 then redis.call('DEL', KEYS[1]) end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
";

/// Compare-and-delete: the lease goes only if it still holds our token. KEYS: probe. ARGV: token.
const RELEASE_SCRIPT: &str = r"
if redis.pcall('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
";

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

struct Task {
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
    async fn run(mut self) {
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

fn json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}
