//! B16 on a real Redis: the fleet under faults. Several workers in one process (see
//! `redis_fleet.rs`) face a paused Redis, transitions written late, probes longer than their
//! lease, junk and future-dated store contents, and an ACL user limited to the namespace.
//!
//! Run: `cargo test --features redis --test fleet b16_redis -- --nocapture` prints the
//! figures.

#![cfg(feature = "redis")]

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agent_circuit_breaker::event::Event;
use agent_circuit_breaker::expeditor::Ticket;
use agent_circuit_breaker::{CircuitState, Decision, Expeditor, Policy};

use crate::redis_fleet::*;

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

/// Decides on `tool` until this worker's own breaker offers its probe.
fn probe_locally<'a>(e: &'a Expeditor, tool: &str) -> Ticket<'a> {
    for _ in 0..20 {
        match e.decide(id(e, tool)) {
            Decision::Probe(t) => return t,
            Decision::Skip(_) => {}
            other => panic!("{tool}: {}", other.kind()),
        }
    }
    panic!("{tool}: no probe of its own")
}

async fn all_unreachable(workers: &[Worker]) {
    for w in workers {
        until(BOUND * 4, &w.name, || unreachable(w)).await;
    }
}

async fn all_reachable(workers: &[Worker]) {
    for w in workers {
        until(BOUND * 4, &w.name, || !unreachable(w)).await;
    }
}

fn consumed(workers: &[Worker]) -> Vec<u32> {
    workers
        .iter()
        .map(|w| w.e.budget().status().consumed)
        .collect()
}

fn count(w: &Worker, what: impl Fn(&Event) -> bool) -> usize {
    w.log.events().iter().filter(|e| what(e)).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b16_a_stale_close_written_after_an_outage_never_erases_newer_openings() {
    let redis = RedisServer::start();
    if !redis.owned() {
        return;
    }
    let ns = namespace();
    let w = fleet_of(&redis.url, &ns, &["w-a", "w-b", "w-c"]).await;
    open3(&w[0].e, "search");
    for x in &w[1..] {
        until(BOUND, &x.name, || {
            state(&x.e, "search") == CircuitState::Open
        })
        .await;
    }
    redis.pause();
    all_unreachable(&w).await;
    // During the outage, w-c's own probe closes the tool first; then w-a's and w-b's fail:
    // the tool is down again, later than w-c's close.
    probe_locally(&w[2].e, "search").success();
    assert_eq!(state(&w[2].e, "search"), CircuitState::Closed);
    tokio::time::sleep(Duration::from_millis(20)).await;
    probe_locally(&w[0].e, "search").failure(refused());
    tokio::time::sleep(Duration::from_millis(20)).await;
    probe_locally(&w[1].e, "search").failure(refused());
    let charged = consumed(&w);
    let paused = Instant::now();
    redis.resume();
    all_reachable(&w).await;
    let converged = until(BOUND * 4, "w-c learns of the newer opening", || {
        state(&w[2].e, "search") == CircuitState::Open
    })
    .await;
    eprintln!(
        "b16: after the outage, the fleet agreed on the newest transition in {converged:?} \
         ({:?} after Redis resumed)",
        paused.elapsed()
    );
    tokio::time::sleep(POLL * 6).await;
    let value = redis
        .get(&format!("{ns}:v2:tool:search"))
        .expect("the tool key");
    assert!(
        value.contains(r#""state":"open""#) && value.contains(r#""worker":"w-b""#),
        "the newest transition is the store's: {value}"
    );
    for x in &w[..2] {
        assert_eq!(state(&x.e, "search"), CircuitState::Open, "{}", x.name);
        let closed = count(x, |e| matches!(e, Event::SharedClosed { .. }));
        assert_eq!(closed, 0, "{}: the stale close never reached it", x.name);
    }
    assert_eq!(
        consumed(&w),
        charged,
        "no failure charged for a stale close"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b16_a_pause_detected_and_lifted_during_an_outage_is_never_replayed() {
    let redis = RedisServer::start();
    if !redis.owned() {
        return;
    }
    let ns = namespace();
    let w = fleet_of(&redis.url, &ns, &["w-1", "w-2", "w-3"]).await;
    redis.pause();
    all_unreachable(&w).await;
    open3(&w[0].e, "search");
    open3(&w[0].e, "fetch");
    assert!(w[0].e.paused().is_some(), "systemic here");
    assert!(w[0].e.confirm_recovery().is_some());
    redis.resume();
    all_reachable(&w).await;
    tokio::time::sleep(POLL * 10).await;
    for x in &w[1..] {
        assert!(x.e.paused().is_none(), "{}: a pause that is over", x.name);
        let replayed = count(x, |e| matches!(e, Event::Systemic { .. }));
        assert_eq!(replayed, 0, "{}: replayed pauses", x.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b16_a_pause_lifted_during_an_outage_resumes_the_fleet_once_it_returns() {
    let redis = RedisServer::start();
    if !redis.owned() {
        return;
    }
    let ns = namespace();
    let w = fleet_of(&redis.url, &ns, &["w-1", "w-2", "w-3"]).await;
    open3(&w[0].e, "search");
    open3(&w[0].e, "fetch");
    for x in &w[1..] {
        until(BOUND, &x.name, || x.e.paused().is_some()).await;
    }
    redis.pause();
    all_unreachable(&w).await;
    assert!(w[0].e.confirm_recovery().is_some());
    let confirmed = Instant::now();
    redis.resume();
    for x in &w[1..] {
        until(BOUND * 6, &x.name, || x.e.paused().is_none()).await;
    }
    eprintln!(
        "b16: a recovery confirmed during an outage resumed the fleet {:?} after the confirmation",
        confirmed.elapsed()
    );
    tokio::time::sleep(POLL * 6).await;
    for x in &w[1..] {
        assert!(x.e.paused().is_none(), "{}: not paused again", x.name);
        let paused = count(x, |e| matches!(e, Event::Systemic { .. }));
        assert_eq!(paused, 1, "{}: one pause, none replayed", x.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b16_a_probe_longer_than_its_lease_stays_the_only_probe() {
    let redis = RedisServer::start();
    let ns = namespace();
    let lease = Duration::from_millis(300);
    let mut w = Vec::new();
    for name in ["w-1", "w-2", "w-3"] {
        w.push(worker_with(&redis.url, &ns, name, lease).await.0);
    }
    open3(&w[0].e, "search");
    for x in &w[1..] {
        until(BOUND, &x.name, || {
            state(&x.e, "search") == CircuitState::Open
        })
        .await;
    }
    let mut probes = probes_over(&w, "search", POLL * 6).await;
    assert_eq!(probes.len(), 1, "one probe");
    let (holder, ticket) = probes.remove(0);
    // The probe runs for three leases while every other worker keeps asking.
    let start = Instant::now();
    let mut asked = 0;
    while start.elapsed() < lease * 3 {
        for (i, x) in w.iter().enumerate() {
            if i != holder {
                let d = x.e.decide(id(&x.e, "search"));
                assert_eq!(d.kind(), "SKIP", "{}: a second probe", x.name);
                asked += 1;
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let token = redis
        .get(&format!("{ns}:v2:probe:search"))
        .expect("the lease, renewed");
    assert!(
        token.starts_with(&format!("{}:", w[holder].name)),
        "{token}"
    );
    eprintln!(
        "b16: a probe of {:?} under a {lease:?} lease: 1 probe, {asked} refused asks",
        start.elapsed()
    );
    ticket.success();
    for x in &w {
        until(BOUND, &x.name, || {
            state(&x.e, "search") == CircuitState::Closed
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b16_a_junk_lease_is_bounded_by_the_lease_ttl() {
    let redis = RedisServer::start();
    let ns = namespace();
    let lease = Duration::from_millis(300);
    let mut w = Vec::new();
    for name in ["w-1", "w-2"] {
        w.push(worker_with(&redis.url, &ns, name, lease).await.0);
    }
    let key = format!("{ns}:v2:probe:search");
    redis.command(&[b"SET", key.as_bytes(), b"junk", b"PX", b"60000"]);
    open3(&w[0].e, "search");
    until(BOUND, "w-2", || {
        state(&w[1].e, "search") == CircuitState::Open
    })
    .await;
    let window = lease + BOUND * 2;
    let mut probes = probes_over(&w, "search", window).await;
    assert_eq!(
        probes.len(),
        1,
        "one probe, once the junk's TTL was cut to the lease's"
    );
    eprintln!("b16: a junk lease of 60 s let the fleet's probe through within {window:?}");
    probes.remove(0).1.success();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b16_future_dated_values_and_unknown_workers_act_on_nothing() {
    let redis = RedisServer::start();
    let ns = namespace();
    let mut w = Vec::new();
    for name in ["w-1", "w-2"] {
        let allowed =
            |b: agent_circuit_breaker::redis::RedisFleetBuilder| b.allowed_workers(["w-1", "w-2"]);
        w.push(worker_by(&redis.url, &ns, name, allowed).await.0);
    }
    let evil = format!(
        r#"{{"v":2,"state":"open","ver":999,"worker":"evil","message":"x","category":"network","at_ms":{}}}"#,
        now_ms()
    );
    let future = format!(
        r#"{{"v":2,"state":"open","ver":1,"worker":"w-1","message":"x","category":"network","at_ms":{}}}"#,
        u64::MAX
    );
    redis.set(&format!("{ns}:v2:tool:search"), evil.as_bytes());
    redis.set(&format!("{ns}:v2:tool:fetch"), future.as_bytes());
    tokio::time::sleep(POLL * 5).await;
    for x in &w {
        assert_eq!(state(&x.e, "search"), CircuitState::Closed, "{}", x.name);
        assert_eq!(state(&x.e, "fetch"), CircuitState::Closed, "{}", x.name);
    }
    // What an allowed worker writes replaces them: the fleet still works.
    open3(&w[0].e, "search");
    open3(&w[0].e, "lint");
    until(BOUND, "w-2", || {
        state(&w[1].e, "search") == CircuitState::Open
    })
    .await;
    let stored = redis.get(&format!("{ns}:v2:tool:search")).unwrap();
    assert!(stored.contains(r#""worker":"w-1""#), "{stored}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b16_with_a_time_based_cool_down_the_fleet_probes_once_per_cool_down() {
    let redis = RedisServer::start();
    let ns = namespace();
    let cool_down = Duration::from_millis(300);
    let policy = || {
        // Probes by time alone: a count of attempts is each worker's own.
        Policy::builder()
            .budget(10_000)
            .probe_every(1_000_000)
            .cool_down(cool_down)
            .jitter(0)
            .build()
            .unwrap()
    };
    let mut w = Vec::new();
    for name in ["w-1", "w-2", "w-3"] {
        let settings = |b: agent_circuit_breaker::redis::RedisFleetBuilder| b;
        w.push(worker_on(&redis.url, &ns, name, policy(), settings).await.0);
    }
    open3(&w[0].e, "search");
    let opened = Instant::now();
    for x in &w[1..] {
        until(BOUND, &x.name, || {
            state(&x.e, "search") == CircuitState::Open
        })
        .await;
    }
    // Every worker asks all the time; every probe fails at once.
    let mut probes: Vec<(Duration, String)> = Vec::new();
    while opened.elapsed() < Duration::from_millis(2500) {
        for x in &w {
            if let Decision::Probe(t) = x.e.decide(id(&x.e, "search")) {
                probes.push((opened.elapsed(), x.name.clone()));
                t.failure(refused());
            }
        }
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    eprintln!("b16: probes over 2.5 s with a 300 ms cool-down, 3 workers: {probes:?}");
    assert!(!probes.is_empty(), "the fleet probed");
    // Due at 0.3 s, then 0.6 s later, then 1.2 s later (the cool-down doubles fleet-wide,
    // whichever worker probed): three probes in 2.5 s; one per worker per cool-down would be
    // nine.
    assert!(probes.len() <= 3, "{probes:?}");
    for (i, pair) in probes.windows(2).enumerate() {
        let doubled = cool_down * 2u32.pow(u32::try_from(i).unwrap() + 1);
        assert!(
            pair[1].0 - pair[0].0 >= doubled - Duration::from_millis(50),
            "the cool-down did not double across the fleet: {probes:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b16_an_acl_user_limited_to_the_namespace_works() {
    let redis = RedisServer::start();
    if !redis.owned() {
        return;
    }
    let ns = namespace();
    let pattern = format!("~{ns}:*");
    let channels = format!("&{ns}:*");
    let answer = redis.command(&[
        b"ACL",
        b"SETUSER",
        b"fleet-worker",
        b"on",
        b">secret",
        b"resetkeys",
        pattern.as_bytes(),
        b"resetchannels",
        channels.as_bytes(),
        b"+@all",
        b"-@dangerous",
    ]);
    assert_eq!(answer.as_deref(), Some(&b"OK"[..]), "ACL SETUSER");
    let url = format!("redis://fleet-worker:secret@127.0.0.1:{}", redis.port());
    let w = fleet_of(&url, &ns, &["w-1", "w-2"]).await;
    open3(&w[0].e, "search");
    until(BOUND, "w-2", || {
        state(&w[1].e, "search") == CircuitState::Open
    })
    .await;
    let mut probes = probes_over(&w, "search", POLL * 6).await;
    assert_eq!(probes.len(), 1);
    probes.remove(0).1.success();
    for x in &w {
        until(BOUND, &x.name, || {
            state(&x.e, "search") == CircuitState::Closed
        })
        .await;
        assert!(!unreachable(x), "{}: every command allowed", x.name);
    }
    // The user reaches nothing outside the namespace.
    let outside = redis.command(&[b"ACL", b"DRYRUN", b"fleet-worker", b"GET", b"other:key"]);
    assert!(
        outside.is_some_and(|a| a != b"OK"),
        "a key outside the namespace is refused"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b16_a_change_notice_carries_an_opening_to_the_fleet_before_the_next_poll() {
    let redis = RedisServer::start();
    let ns = namespace();
    let poll = Duration::from_secs(3);
    let mut w = Vec::new();
    for name in ["w-1", "w-2"] {
        w.push(
            worker_by(&redis.url, &ns, name, |b| b.poll_interval(poll))
                .await
                .0,
        );
    }
    // Both have read once and subscribed; the next poll is seconds away.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut delays = Vec::new();
    for round in 0..3 {
        let opened = Instant::now();
        open3(&w[0].e, "search");
        until(
            poll / 3,
            "w-2 learns of the opening from the notice",
            || state(&w[1].e, "search") == CircuitState::Open,
        )
        .await;
        delays.push(opened.elapsed());
        // The probe's lease is asked for at the next poll: the notices carry what the store
        // holds, not what a worker wants.
        let mut probes = probes_over(&w, "search", poll + BOUND).await;
        assert_eq!(probes.len(), 1, "round {round}");
        probes.remove(0).1.success();
        for x in &w {
            until(poll / 3, &x.name, || {
                state(&x.e, "search") == CircuitState::Closed
            })
            .await;
        }
    }
    eprintln!("b16: with a {poll:?} poll, an opening reached the other worker in {delays:?}");
}
