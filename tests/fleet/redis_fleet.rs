//! Workers of a fleet in one process, on a real Redis: each an expeditor with its own
//! `RedisFleet` and worker id, on one namespace of a `redis-server` the test starts itself on
//! a free 127.0.0.1 port (or the one `REDIS_URL` names; the fault tests then skip the faults
//! they would inflict on it). Poll interval 50 ms, so the staleness bound is 50 ms + the op
//! timeout.

#[path = "../common/mod.rs"]
pub mod common;
#[path = "../common/redis.rs"]
pub mod redis_server;

use std::time::{Duration, Instant};

use agent_circuit_breaker::redis::{RedisFleet, RedisFleetBuilder};
use agent_circuit_breaker::{CircuitState, Decision, Expeditor, Failure, FailureCategory, Policy};
pub use common::{EventLog, fleet_map, id};
pub use redis_server::RedisServer;

pub const POLL: Duration = Duration::from_millis(50);
pub const OP_TIMEOUT: Duration = Duration::from_millis(150);
/// The published bound (poll + op timeout + a round trip) with room for a loaded CI machine.
pub const BOUND: Duration = Duration::from_millis(50 + 150 + 300);

pub struct Worker {
    pub name: String,
    pub e: Expeditor,
    pub log: EventLog,
}

pub fn namespace() -> String {
    format!(
        "t{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos() ^ u128::from(rand_u32())
    )
}

pub fn rand_u32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u8(0);
    h.finish() as u32
}

pub async fn worker_with(url: &str, ns: &str, name: &str, lease: Duration) -> (Worker, RedisFleet) {
    worker_by(url, ns, name, |b| b.probe_lease_ttl(lease)).await
}

pub async fn worker_by(
    url: &str,
    ns: &str,
    name: &str,
    settings: impl FnOnce(RedisFleetBuilder) -> RedisFleetBuilder,
) -> (Worker, RedisFleet) {
    let policy = Policy::builder().budget(10_000).build().unwrap();
    worker_on(url, ns, name, policy, settings).await
}

/// A worker with its own policy and store settings.
pub async fn worker_on(
    url: &str,
    ns: &str,
    name: &str,
    policy: Policy,
    settings: impl FnOnce(RedisFleetBuilder) -> RedisFleetBuilder,
) -> (Worker, RedisFleet) {
    let fleet = settings(
        RedisFleet::connect(url, ns)
            .worker(name)
            .poll_interval(POLL)
            .op_timeout(OP_TIMEOUT),
    )
    .await
    .expect("a fleet store");
    let log = EventLog::default();
    let e = Expeditor::builder(fleet_map())
        .policy(policy)
        .observer(log.observer())
        .fleet(fleet.clone())
        .build()
        .unwrap();
    (
        Worker {
            name: name.to_owned(),
            e,
            log,
        },
        fleet,
    )
}

pub async fn fleet_of(url: &str, ns: &str, names: &[&str]) -> Vec<Worker> {
    let mut workers = Vec::new();
    for name in names {
        workers.push(worker_with(url, ns, name, Duration::from_secs(10)).await.0);
    }
    workers
}

pub fn refused() -> Failure {
    Failure::with_category("connection refused", FailureCategory::Network)
}

pub fn fail_with(e: &Expeditor, tool: &str, failure: Failure) {
    match e.decide(id(e, tool)) {
        Decision::Call(t) | Decision::Probe(t) => {
            t.failure(failure);
        }
        other => panic!("{tool}: expected CALL or PROBE, got {}", other.kind()),
    }
}

pub fn open3(e: &Expeditor, tool: &str) {
    for _ in 0..3 {
        fail_with(e, tool, refused());
    }
    assert_eq!(state(e, tool), CircuitState::Open);
}

pub fn state(e: &Expeditor, tool: &str) -> CircuitState {
    e.state(id(e, tool)).unwrap()
}

/// Waits (polling every 2 ms) until `cond` holds, up to `limit`; how long it took.
pub async fn until(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    loop {
        if cond() {
            return start.elapsed();
        }
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

pub fn unreachable(w: &Worker) -> bool {
    w.e.fleet_status().is_some_and(|s| s.unreachable.is_some())
}

/// Makes every worker reach its probe of `tool` (two SKIPs of the cool-down, then due), then
/// decides on every worker, over `window`, keeping each PROBE ticket unrecorded: how many.
pub async fn probes_over<'a>(
    workers: &'a [Worker],
    tool: &str,
    window: Duration,
) -> Vec<(usize, agent_circuit_breaker::expeditor::Ticket<'a>)> {
    for w in workers {
        for _ in 0..3 {
            let d = w.e.decide(id(&w.e, tool));
            assert_eq!(d.kind(), "SKIP", "{}: no probe without the lease", w.name);
        }
    }
    let mut probes = Vec::new();
    let start = Instant::now();
    while start.elapsed() < window {
        for (i, w) in workers.iter().enumerate() {
            if probes.iter().any(|(j, _)| *j == i) {
                continue;
            }
            match w.e.decide(id(&w.e, tool)) {
                Decision::Probe(t) => probes.push((i, t)),
                Decision::Skip(_) => {}
                other => panic!("{}: {}", w.name, other.kind()),
            }
        }
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    probes
}
