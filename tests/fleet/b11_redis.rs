//! B11 on a real Redis: several workers in one process (see `redis_fleet.rs`) share what
//! they learn of their tools.
//!
//! Run: `cargo test --features redis --test fleet b11_redis -- --nocapture` prints the measured
//! propagation delays.

#![cfg(feature = "redis")]

use std::time::{Duration, Instant};

use agent_circuit_breaker::event::Event;
use agent_circuit_breaker::{CircuitState, Decision, Failure, FailureCategory};

use crate::redis_fleet::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b11_redis_a_circuit_opened_by_one_worker_is_open_for_the_others_within_the_bound() {
    let redis = RedisServer::start();
    let ns = namespace();
    let workers = fleet_of(&redis.url, &ns, &["w-1", "w-2", "w-3"]).await;
    assert_eq!(
        workers[0].e.fleet_status().unwrap().store,
        format!("redis {}/{ns}", redis.url.trim_start_matches("redis://"))
    );
    tokio::time::sleep(POLL * 2).await;
    open3(&workers[0].e, "search");
    let opened = Instant::now();
    for w in &workers[1..] {
        until(BOUND, &w.name, || {
            state(&w.e, "search") == CircuitState::Open
        })
        .await;
    }
    let delay = opened.elapsed();
    eprintln!("b11_redis: open reached 2 workers in {delay:?} (bound {BOUND:?})");
    let key = format!("{ns}:v2:tool:search");
    let value = redis.get(&key).expect("the tool key");
    assert!(value.contains("\"state\":\"open\""), "{value}");
    assert!(value.contains("\"worker\":\"w-1\""), "{value}");
    let ttl: u64 = String::from_utf8(redis.command(&[b"PTTL", key.as_bytes()]).unwrap())
        .unwrap()
        .parse()
        .unwrap();
    assert!(ttl > 25_000 && ttl <= 30_000, "open TTL {ttl} ms");
    for w in &workers[1..] {
        let e = &w.e;
        let Decision::Skip(skip) = e.decide(id(e, "search")) else {
            panic!("{}: skipped", w.name)
        };
        assert_eq!(skip.route().taken("search").to.as_deref(), Some("fetch"));
        assert_eq!(e.budget().status().consumed, 0, "{}: not charged", w.name);
        assert!(w.log.events().contains(&Event::SharedOpened {
            tool: "search".into(),
            worker: "w-1".into(),
            message: "connection refused".into(),
        }));
        let table = e.state_table().to_string();
        assert!(
            table.ends_with(&format!(
                "Shared with the fleet through redis {}/{ns}: search OPEN (opened by w-1)",
                redis.url.trim_start_matches("redis://")
            )),
            "{table}"
        );
    }
    assert_eq!(workers[0].e.budget().status().consumed, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b11_redis_one_probe_fleet_wide_and_its_success_closes_the_tool_everywhere() {
    let redis = RedisServer::start();
    let ns = namespace();
    let workers = fleet_of(&redis.url, &ns, &["w-1", "w-2", "w-3", "w-4"]).await;
    open3(&workers[0].e, "search");
    for w in &workers[1..] {
        until(BOUND, &w.name, || {
            state(&w.e, "search") == CircuitState::Open
        })
        .await;
    }
    // Every worker is due; over ten poll intervals, exactly one is granted the probe.
    let mut probes = probes_over(&workers, "search", POLL * 10).await;
    assert_eq!(probes.len(), 1, "exactly one probe fleet-wide");
    let (holder, ticket) = probes.remove(0);
    let lease = redis
        .get(&format!("{ns}:v2:probe:search"))
        .expect("the lease");
    assert!(
        lease.starts_with(&format!("{}:", workers[holder].name)),
        "{lease}"
    );
    ticket.success();
    let closed = Instant::now();
    for w in &workers {
        until(BOUND, &w.name, || {
            state(&w.e, "search") == CircuitState::Closed
        })
        .await;
    }
    eprintln!(
        "b11_redis: close reached the fleet in {:?}",
        closed.elapsed()
    );
    until(BOUND, "lease released", || {
        redis.get(&format!("{ns}:v2:probe:search")).is_none()
    })
    .await;
    let closed = redis
        .get(&format!("{ns}:v2:tool:search"))
        .expect("the tool key");
    assert!(closed.contains("\"state\":\"closed\""), "{closed}");
    for (i, w) in workers.iter().enumerate() {
        if i != holder {
            assert!(
                w.log.events().contains(&Event::SharedClosed {
                    tool: "search".into()
                }),
                "{}",
                w.name
            );
        }
        assert_eq!(w.e.decide(id(&w.e, "search")).kind(), "CALL");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b11_redis_a_caller_local_failure_is_not_shared() {
    let redis = RedisServer::start();
    let ns = namespace();
    let workers = fleet_of(&redis.url, &ns, &["w-1", "w-2"]).await;
    for _ in 0..3 {
        fail_with(
            &workers[0].e,
            "lint",
            Failure::with_category("no such file: src/x.rs", FailureCategory::NotFound),
        );
    }
    assert_eq!(state(&workers[0].e, "lint"), CircuitState::Open);
    tokio::time::sleep(BOUND).await;
    assert!(redis.get(&format!("{ns}:v2:tool:lint")).is_none());
    assert_eq!(state(&workers[1].e, "lint"), CircuitState::Closed);
    assert_eq!(
        workers[1].e.decide(id(&workers[1].e, "lint")).kind(),
        "CALL"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b11_redis_killed_or_paused_redis_leaves_local_decisions_and_the_fleet_converges_again() {
    let mut redis = RedisServer::start();
    if !redis.owned() {
        eprintln!("b11_redis: REDIS_URL is not ours to kill; fault test skipped");
        return;
    }
    let ns = namespace();
    let workers = fleet_of(&redis.url, &ns, &["w-1", "w-2"]).await;
    tokio::time::sleep(POLL * 2).await;

    // Killed: both decide locally and say so.
    redis.kill();
    for w in &workers {
        until(BOUND * 2, &w.name, || unreachable(w)).await;
        assert!(w.log.kinds().contains(&"store_unavailable"), "{}", w.name);
        let table = w.e.state_table().to_string();
        assert!(table.contains("deciding on local state alone"), "{table}");
    }
    let started = Instant::now();
    open3(&workers[0].e, "search");
    assert!(
        started.elapsed() < Duration::from_millis(50),
        "decisions never wait on the store"
    );
    assert_eq!(
        workers[0].e.budget().status().consumed,
        3,
        "recorded locally"
    );
    assert_eq!(state(&workers[1].e, "search"), CircuitState::Closed);

    // Back on the same port, empty: they rejoin and what opened meanwhile is shared.
    redis.restart();
    for w in &workers {
        until(BOUND * 4, &w.name, || !unreachable(w)).await;
        assert!(w.log.kinds().contains(&"store_restored"), "{}", w.name);
    }
    until(BOUND * 2, "w-2 sees search", || {
        state(&workers[1].e, "search") == CircuitState::Open
    })
    .await;
    assert_eq!(workers[0].e.budget().status().consumed, 3, "nothing lost");
    assert_eq!(workers[1].e.budget().status().consumed, 0);

    // Paused past the op timeout: the same, then resumed.
    redis.pause();
    for w in &workers {
        until(BOUND * 4, &w.name, || unreachable(w)).await;
    }
    let started = Instant::now();
    open3(&workers[1].e, "fetch");
    assert!(
        started.elapsed() < Duration::from_millis(50),
        "decisions never wait on a paused store"
    );
    let recorded = workers[1].e.budget().status().consumed;
    assert!(recorded >= 1, "recorded locally");
    tokio::time::sleep(OP_TIMEOUT * 2).await;
    redis.resume();
    for w in &workers {
        until(BOUND * 6, &w.name, || !unreachable(w)).await;
    }
    until(BOUND * 2, "w-1 sees fetch", || {
        state(&workers[0].e, "fetch") == CircuitState::Open
    })
    .await;
    assert_eq!(
        workers[1].e.budget().status().consumed,
        recorded,
        "nothing lost"
    );
    assert_eq!(workers[0].e.budget().status().consumed, 3);
    let restored = workers[0]
        .log
        .kinds()
        .iter()
        .filter(|k| **k == "store_restored")
        .count();
    assert_eq!(restored, 2, "one StoreRestored per outage");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b11_redis_a_worker_that_dies_holding_the_lease_does_not_stick_the_tool() {
    let redis = RedisServer::start();
    let ns = namespace();
    let lease = Duration::from_millis(700);
    // The doomed worker runs its store on a runtime of its own, shut down below: its task
    // dies without giving the lease back, as a killed process's would.
    let (url, ns2) = (redis.url.clone(), ns.clone());
    let (runtime, doomed) = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (w, _) = runtime.block_on(worker_with(&url, &ns2, "w-doomed", lease));
        (runtime, w)
    })
    .join()
    .unwrap();
    let (other, _) = worker_with(&redis.url, &ns, "w-2", lease).await;
    open3(&doomed.e, "search");
    until(BOUND, "w-2 sees it", || {
        state(&other.e, "search") == CircuitState::Open
    })
    .await;
    let probes = probes_over(std::slice::from_ref(&doomed), "search", POLL * 4).await;
    assert_eq!(probes.len(), 1, "the doomed worker holds the lease");
    let key = format!("{ns}:v2:probe:search");
    assert!(redis.get(&key).is_some_and(|v| v.starts_with("w-doomed:")));
    runtime.shutdown_background();
    std::mem::forget(probes); // the process died mid-probe
    let died = Instant::now();
    let mut granted = probes_over(std::slice::from_ref(&other), "search", lease + BOUND).await;
    assert_eq!(
        granted.len(),
        1,
        "another worker probes once the lease expired"
    );
    let waited = died.elapsed();
    assert!(
        waited >= lease / 2,
        "not before the lease expired ({waited:?})"
    );
    granted.remove(0).1.success();
    assert_eq!(state(&other.e, "search"), CircuitState::Closed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b11_redis_hostile_store_contents_are_ignored_never_a_panic() {
    let redis = RedisServer::start();
    let ns = namespace();
    let workers = fleet_of(&redis.url, &ns, &["w-1", "w-2"]).await;
    let open = format!("{ns}:v2:tool:search");
    let hostile: Vec<Vec<u8>> = vec![
        vec![0xff, 0x00, 0xfe, b'{', 0x80],
        br#"{"v":2,"worker":"w-9","message":"x","category":"network","at_ms":1}"#.to_vec(),
        br#"{"v":1,"worker":"w-9","message":"x","category":"no such category","at_ms":1}"#.to_vec(),
        br#"{"v":1}"#.to_vec(),
        b"null".to_vec(),
        b"[1,2,3]".to_vec(),
        format!(
            r#"{{"v":1,"worker":"w-9","message":"{}","category":"network","at_ms":1}}"#,
            "x".repeat(2 << 20)
        )
        .into_bytes(),
    ];
    for value in &hostile {
        redis.set(&open, value);
        redis.set(&format!("{ns}:v2:systemic"), value);
        tokio::time::sleep(POLL * 3).await;
        for w in &workers {
            assert_eq!(state(&w.e, "search"), CircuitState::Closed, "{}", w.name);
            assert!(w.e.paused().is_none());
            assert!(!unreachable(w), "{}: still reachable", w.name);
        }
    }
    // Another layout's keys are another fleet's, and a value of another format under ours
    // is not ours.
    let fresh = format!(
        r#"{{"v":1,"state":"open","ver":9,"worker":"w-9","message":"x","category":"network","at_ms":{}}}"#,
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    );
    redis.set(&format!("{ns}:v1:tool:fetch"), fresh.as_bytes());
    redis.set(
        &format!("{ns}:v3:tool:fetch"),
        fresh.replace("\"v\":1", "\"v\":2").as_bytes(),
    );
    redis.set(&format!("{ns}:v2:tool:fetch"), fresh.as_bytes());
    // A key of the wrong type under ours.
    redis.command(&[b"DEL", format!("{ns}:v2:tool:lint").as_bytes()]);
    redis.command(&[b"HSET", format!("{ns}:v2:tool:lint").as_bytes(), b"a", b"b"]);
    tokio::time::sleep(POLL * 3).await;
    for w in &workers {
        assert_eq!(state(&w.e, "fetch"), CircuitState::Closed);
        assert_eq!(state(&w.e, "lint"), CircuitState::Closed);
    }
    // And the fleet still works: a real open overwrites the garbage and is seen; a probe
    // key without an expiry (no lease ever has none) does not stick the tool.
    redis.command(&[
        b"HSET",
        format!("{ns}:v2:probe:search").as_bytes(),
        b"a",
        b"b",
    ]);
    open3(&workers[0].e, "search");
    until(BOUND, "w-2 sees search", || {
        state(&workers[1].e, "search") == CircuitState::Open
    })
    .await;
    let mut probes = probes_over(&workers, "search", POLL * 6).await;
    assert_eq!(probes.len(), 1, "one probe, garbage or not");
    probes.remove(0).1.success();
    for w in &workers {
        until(BOUND, &w.name, || {
            state(&w.e, "search") == CircuitState::Closed
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b11_redis_with_a_quorum_a_tool_opens_fleet_wide_only_once_enough_workers_saw_it() {
    let redis = RedisServer::start();
    let ns = namespace();
    let mut workers = Vec::new();
    for name in ["w-1", "w-2", "w-3"] {
        workers.push(worker_by(&redis.url, &ns, name, |b| b.quorum(2)).await.0);
    }
    open3(&workers[0].e, "search");
    tokio::time::sleep(BOUND).await;
    assert!(
        redis.get(&format!("{ns}:v2:tool:search")).is_none(),
        "one sighting is not a quorum"
    );
    for w in &workers[1..] {
        assert_eq!(state(&w.e, "search"), CircuitState::Closed, "{}", w.name);
    }
    open3(&workers[1].e, "search");
    until(BOUND, "w-3 sees the quorum's open", || {
        state(&workers[2].e, "search") == CircuitState::Open
    })
    .await;
    assert_eq!(workers[2].e.budget().status().consumed, 0);
    let table = workers[2].e.state_table().to_string();
    assert!(table.ends_with("search OPEN (opened by w-2)"), "{table}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b11_redis_r9_a_systemic_event_seen_by_one_worker_pauses_the_fleet_once() {
    let redis = RedisServer::start();
    let ns = namespace();
    let workers = fleet_of(&redis.url, &ns, &["w-1", "w-2", "w-3"]).await;
    open3(&workers[0].e, "search");
    open3(&workers[0].e, "fetch");
    assert!(workers[0].e.paused().is_some(), "systemic here");
    for w in &workers[1..] {
        until(BOUND, &w.name, || w.e.paused().is_some()).await;
        assert_eq!(w.e.decide(id(&w.e, "lint")).kind(), "PAUSE");
        assert_eq!(w.e.budget().status().consumed, 0, "{}", w.name);
    }
    // Read again and again while the key lives: still one event per worker.
    tokio::time::sleep(POLL * 5).await;
    for w in &workers[1..] {
        let systemic = w
            .log
            .events()
            .into_iter()
            .filter(|e| matches!(e, Event::Systemic { .. }))
            .count();
        assert_eq!(systemic, 1, "{}: one event", w.name);
    }
    // One worker confirms the recovery: every worker that paused for the event resumes (B16),
    // and none pauses again for it.
    assert!(workers[1].e.confirm_recovery().is_some());
    for w in &workers {
        until(BOUND, &w.name, || w.e.paused().is_none()).await;
    }
    tokio::time::sleep(POLL * 5).await;
    for w in &workers {
        assert!(
            w.e.paused().is_none(),
            "{}: not paused again by the same event",
            w.name
        );
    }
    for w in [&workers[0], &workers[2]] {
        assert!(
            w.log.events().contains(&Event::SharedRecovery {
                worker: "w-2".into()
            }),
            "{}",
            w.name
        );
    }
}

/// The figures for BENCHMARKS.md: over many rounds, how long an open and a close take to
/// reach another worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b11_redis_propagation_delay() {
    let redis = RedisServer::start();
    let ns = namespace();
    let workers = fleet_of(&redis.url, &ns, &["w-1", "w-2"]).await;
    let rounds: usize = std::env::var("B11_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(10);
    let (mut opens, mut closes) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        // A random phase against the other worker's poll.
        tokio::time::sleep(Duration::from_millis(u64::from(rand_u32() % 50))).await;
        open3(&workers[0].e, "search");
        let t = Instant::now();
        until(BOUND, "open", || {
            state(&workers[1].e, "search") == CircuitState::Open
        })
        .await;
        opens.push(t.elapsed());
        let mut probe = probes_over(&workers[..1], "search", POLL * 4).await;
        assert_eq!(probe.len(), 1);
        probe.remove(0).1.success();
        let t = Instant::now();
        until(BOUND, "close", || {
            state(&workers[1].e, "search") == CircuitState::Closed
        })
        .await;
        closes.push(t.elapsed());
        for w in &workers {
            assert_eq!(w.e.decide(id(&w.e, "search")).kind(), "CALL");
        }
    }
    for (what, mut v) in [("open", opens), ("close", closes)] {
        v.sort();
        eprintln!(
            "b11_redis: {what} propagation over {rounds} rounds (poll {POLL:?}): median {:?}, max {:?}",
            v[v.len() / 2],
            v[v.len() - 1]
        );
    }
}
