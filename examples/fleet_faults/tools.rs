//! The worker's toolbox: `ping` (always healthy), `fetch` (its health read from a file on
//! every call), the `cache` that `fetch` falls back to, and three pairs of infrastructure
//! tools that fail together on demand so that one worker detects a systemic failure (R9).

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_circuit_breaker::expeditor::WeakExpeditor;
use agent_circuit_breaker::{CircuitState, toolbox};

use crate::Out;

/// What `fetch`'s upstream does, as the health file says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    Up,
    /// Refuses connections: a network failure, shared with the fleet.
    Down,
    /// Answers after this many milliseconds.
    Slow(u64),
}

impl Health {
    /// The file's first line: `up`, `down` or `slow MS`. A missing or unreadable file is
    /// `up`, so that a worker started before the test writes it works normally.
    pub fn read(path: &PathBuf) -> Health {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let mut words = text.split_whitespace();
        match (words.next(), words.next().map(str::parse::<u64>)) {
            (Some("down"), _) => Health::Down,
            (Some("slow"), Some(Ok(ms))) => Health::Slow(ms),
            _ => Health::Up,
        }
    }
}

/// What the toolbox and the observer share.
pub struct Shared {
    pub out: Out,
    /// The pair of infrastructure tools failing now (1 to 3), or 0: set only while the
    /// `systemic` command runs, so that a systemic event seen while it is set is this
    /// worker's own.
    pub infra_down: AtomicU8,
}

pub struct Faults {
    pub health: PathBuf,
    pub shared: Arc<Shared>,
    /// The expeditor guarding this toolbox, to tell a probe from a plain call: `fetch`'s
    /// body runs while its circuit is HALF-OPEN only as its one probe (R3.6).
    pub expeditor: OnceLock<WeakExpeditor>,
    /// Set by `fetch`'s body when it runs as a probe; taken by the caller when it returns.
    pub probing: AtomicBool,
    /// How many times `fetch`'s body ran.
    pub fetch_calls: AtomicU64,
}

impl Faults {
    fn fetch_state(&self) -> Option<CircuitState> {
        self.expeditor.get()?.upgrade()?.state(FaultsTool::Fetch)
    }

    fn infra(&self, pair: u8) -> io::Result<()> {
        if self.shared.infra_down.load(Ordering::Acquire) == pair {
            Err(io::Error::new(
                io::ErrorKind::ConnectionRefused,
                "the internal network refused the connection",
            ))
        } else {
            Ok(())
        }
    }
}

// No probe by count: calls come every 20 ms, so probes are due by the cool-down alone.
#[toolbox(policy(budget = 100, probe_every = 100000))]
impl Faults {
    #[tool(provides = "liveness", fallback = "report the worker as unhealthy")]
    async fn ping(&self) -> io::Result<()> {
        Ok(())
    }

    #[tool(
        provides = "pages from the upstream site",
        alternatives(cache(
            method = "read the cached copy of the page",
            degradation = "the cached copy may be old",
            via = fetch_cached,
        )),
        fallback = "skip the page and say so"
    )]
    async fn fetch(&self, page: u64) -> io::Result<String> {
        self.fetch_calls.fetch_add(1, Ordering::Relaxed);
        if self.fetch_state() == Some(CircuitState::HalfOpen) {
            self.probing.store(true, Ordering::Release);
            self.shared.out.emit("probe_start", serde_json::json!({}));
        }
        match Health::read(&self.health) {
            Health::Up => Ok(format!("page {page}")),
            Health::Down => Err(io::Error::new(
                io::ErrorKind::ConnectionRefused,
                "the upstream refused the connection",
            )),
            Health::Slow(ms) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(format!("page {page}, slowly"))
            }
        }
    }

    async fn fetch_cached(&self, page: u64) -> io::Result<String> {
        self.cache(page).await
    }

    #[tool(provides = "cached pages", fallback = "skip the page and say so")]
    async fn cache(&self, page: u64) -> io::Result<String> {
        Ok(format!("cached page {page}"))
    }

    #[tool(provides = "the message bus (1)", fallback = "hold the messages")]
    async fn bus_1(&self) -> io::Result<()> {
        self.infra(1)
    }

    #[tool(provides = "the database (1)", fallback = "hold the writes")]
    async fn db_1(&self) -> io::Result<()> {
        self.infra(1)
    }

    #[tool(provides = "the message bus (2)", fallback = "hold the messages")]
    async fn bus_2(&self) -> io::Result<()> {
        self.infra(2)
    }

    #[tool(provides = "the database (2)", fallback = "hold the writes")]
    async fn db_2(&self) -> io::Result<()> {
        self.infra(2)
    }

    #[tool(provides = "the message bus (3)", fallback = "hold the messages")]
    async fn bus_3(&self) -> io::Result<()> {
        self.infra(3)
    }

    #[tool(provides = "the database (3)", fallback = "hold the writes")]
    async fn db_3(&self) -> io::Result<()> {
        self.infra(3)
    }
}

/// Makes this worker detect a systemic failure (R9.2): the next unused pair of
/// infrastructure tools fails with one network error until both circuits are open (the
/// second opening of the same infrastructure category within the cascade window), then
/// works again. Each pair serves once: its circuits stay open afterwards. Whether a pause
/// followed.
pub async fn raise_systemic(guarded: &GuardedFaults, pair: u8) -> bool {
    guarded
        .toolbox()
        .shared
        .infra_down
        .store(pair, Ordering::Release);
    for _ in 0..4 {
        let _ = match pair {
            1 => (guarded.bus_1().await.is_ok(), guarded.db_1().await.is_ok()),
            2 => (guarded.bus_2().await.is_ok(), guarded.db_2().await.is_ok()),
            _ => (guarded.bus_3().await.is_ok(), guarded.db_3().await.is_ok()),
        };
        if guarded.expeditor().paused().is_some() {
            break;
        }
    }
    guarded
        .toolbox()
        .shared
        .infra_down
        .store(0, Ordering::Release);
    guarded.expeditor().paused().is_some()
}
