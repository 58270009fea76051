//! The store a program builds and attaches: its settings, its builder, and the handle the
//! expeditor shares transitions through, which starts the store's task on attach.

use std::collections::BTreeSet;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ::redis::Client;
use ::redis::aio::MultiplexedConnection;
use tokio::sync::{Notify, mpsc};

use super::LAYOUT;
use super::keys::Keys;
use super::notice;
use super::task::{Task, connect};
use crate::expeditor::{FleetLink, FleetStore};
use crate::model::clock::Timestamp;
use crate::model::fleet::SharedTransition;

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
pub(super) struct Config {
    pub(super) namespace: String,
    pub(super) worker: String,
    pub(super) poll: Duration,
    pub(super) open_ttl: Duration,
    pub(super) lease_ttl: Duration,
    pub(super) op_timeout: Duration,
    pub(super) quorum: u32,
    /// How far in the future a timestamp in the store may be: further is refused.
    pub(super) max_skew: Duration,
    /// The workers whose values are read (`None`: any); the others' are ignored, logged.
    pub(super) allowed: Option<BTreeSet<String>>,
}

/// Builds a [`RedisFleet`]; made by [`RedisFleet::connect`], awaited to connect.
#[derive(Debug)]
#[must_use = "await it to connect"]
pub struct RedisFleetBuilder {
    url: String,
    config: Config,
    /// The root certificate (PEM) a `rediss://` server's is checked against.
    #[cfg(feature = "redis-tls")]
    root_certificate: Option<Vec<u8>>,
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

    /// How far ahead of this worker's clock (and of Redis's) a time in the store may be
    /// (default 10 s): a value from further in the future is refused, logged, and acts on
    /// nothing. Set it above the clock skew of the fleet's machines.
    pub fn max_clock_skew(mut self, skew: Duration) -> Self {
        self.config.max_skew = skew;
        self
    }

    /// The only workers whose values this worker reads (default: any). A value written by
    /// another id (a stray process, a worker of another deployment sharing the namespace) is
    /// ignored and logged once. This worker's own id must be among them.
    pub fn allowed_workers<I, S>(mut self, workers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.config.allowed = Some(workers.into_iter().map(Into::into).collect());
        self
    }

    /// The root certificate (PEM) that a `rediss://` server's certificate is checked against,
    /// for a server whose certificate the system's roots do not vouch for (a private CA).
    /// Without one, the system's roots are used.
    #[cfg(feature = "redis-tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "redis-tls")))]
    pub fn tls_root_certificate(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.root_certificate = Some(pem.into());
        self
    }

    /// The client for the URL: over TLS for `rediss://`, with feature `redis-tls`.
    fn client(&self) -> Result<Client, RedisFleetError> {
        let tls = self.url.starts_with("rediss://");
        #[cfg(feature = "redis-tls")]
        if tls {
            // The `redis` crate builds rustls without a crypto provider: the program's, if it
            // installed one (aws-lc-rs's, for post-quantum key exchange), else ring's, which
            // builds without cmake. rustls marks ring's deprecated for lacking post-quantum
            // algorithms; that is the program's choice to make, by installing another.
            if rustls::crypto::CryptoProvider::get_default().is_none() {
                #[allow(deprecated)]
                let ring = rustls::crypto::ring::default_provider();
                // Refused only if another thread installed one meanwhile: that one serves.
                let _ = ring.install_default();
            }
            let certificates = ::redis::TlsCertificates {
                client_tls: None,
                root_cert: self.root_certificate.clone(),
            };
            return Client::build_with_tls(self.url.as_str(), certificates)
                .map_err(|e| RedisFleetError::Url(e.to_string()));
        }
        #[cfg(not(feature = "redis-tls"))]
        if tls {
            return Err(RedisFleetError::Url(
                "a rediss:// URL (TLS) needs the feature `redis-tls`".into(),
            ));
        }
        Client::open(self.url.as_str()).map_err(|e| RedisFleetError::Url(e.to_string()))
    }

    async fn build(self) -> Result<RedisFleet, RedisFleetError> {
        let c = &self.config;
        if c.namespace.is_empty() || c.worker.is_empty() {
            return Err(RedisFleetError::Config(
                "the namespace and the worker id must not be empty".into(),
            ));
        }
        if c.worker.contains(':') {
            return Err(RedisFleetError::Config(format!(
                "the worker id {:?} must not contain ':' (it is part of the lease token)",
                c.worker
            )));
        }
        if let Some(allowed) = &c.allowed
            && !allowed.contains(&c.worker)
        {
            return Err(RedisFleetError::Config(format!(
                "this worker ({}) is not among the allowed workers",
                c.worker
            )));
        }
        if [c.poll, c.open_ttl, c.lease_ttl, c.op_timeout].contains(&Duration::ZERO) {
            return Err(RedisFleetError::Config(
                "the poll interval, TTLs and op timeout must be positive".into(),
            ));
        }
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| RedisFleetError::NoRuntime)?;
        let client = self.client()?;
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

/// A [`FleetStore`] on Redis; see the [module docs](super). Cheap to clone (one store).
#[derive(Clone)]
pub struct RedisFleet {
    shared: Arc<Shared>,
}

struct Shared {
    name: String,
    config: Config,
    client: Client,
    runtime: tokio::runtime::Handle,
    tx: mpsc::UnboundedSender<(Timestamp, SharedTransition)>,
    /// Taken by the one attach: the task's queue and its first connection.
    #[allow(clippy::type_complexity)]
    start: Mutex<
        Option<(
            mpsc::UnboundedReceiver<(Timestamp, SharedTransition)>,
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
    /// A store on the Redis at `url` (`redis://[user:password@]host:port[/db]`, or
    /// `rediss://…` over TLS with feature `redis-tls`), under `namespace`: set
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
                max_skew: Duration::from_secs(10),
                allowed: None,
            },
            #[cfg(feature = "redis-tls")]
            root_certificate: None,
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

    /// The staleness bound when a change notice is lost (or pub/sub is not allowed): poll
    /// interval + op timeout (plus one round trip). With the notices, a transition takes
    /// about one round trip.
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
        let keys = Keys {
            prefix: format!("{}:{LAYOUT}:", self.shared.config.namespace),
        };
        let wake = Arc::new(Notify::new());
        let config = &self.shared.config;
        self.shared.runtime.spawn(notice::listen(
            self.shared.client.clone(),
            keys.channel(),
            Arc::clone(&wake),
            link.clone(),
            config.poll.max(Duration::from_secs(1)),
            config.op_timeout,
        ));
        let task = Task::new(
            keys,
            config.clone(),
            self.shared.client.clone(),
            conn,
            link,
            rx,
            wake,
        );
        self.shared.runtime.spawn(task.run());
    }

    fn share(&self, transitions: &[SharedTransition]) {
        // Stamped now, on the system clock every worker of the fleet shares: when they
        // happened, however long they wait in the queue for Redis.
        let at = Timestamp::from_system_time(SystemTime::now());
        for t in transitions {
            // Fails only once the task has ended (its expeditor is gone): nothing to tell.
            let _ = self.shared.tx.send((at, t.clone()));
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

pub(super) fn random() -> u64 {
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
