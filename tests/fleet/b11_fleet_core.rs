//! B11, the expeditor's side: what a fleet store is handed and what it applies, through an
//! in-memory store shared by several workers (expeditors) in one process, synced by hand so
//! that every step is deterministic. The Redis store (feature `redis`) is tested against a
//! real `redis-server` elsewhere; this pins the semantics it relies on.

#[path = "../common/mod.rs"]
mod common;

use std::sync::{Arc, Mutex};

use agent_circuit_breaker::event::Event;
use agent_circuit_breaker::expeditor::{FleetLink, FleetStore};
use agent_circuit_breaker::fleet::{SharedOpen, SharedTransition};
use agent_circuit_breaker::{
    CircuitState, Decision, Expeditor, Failure, FailureCategory, Policy, SkipReason,
};
use common::{EventLog, T0, clock, fleet_map, id, kind, succeed};

/// The bus every worker's store writes to, and the one probe lease per tool.
#[derive(Default)]
struct Bus {
    /// (worker, transition), in publish order.
    published: Vec<(String, SharedTransition)>,
    /// Per tool, the worker holding its probe lease.
    leases: Vec<(String, String)>,
}

/// One worker's store on the shared bus.
struct MemoryStore {
    worker: String,
    bus: Arc<Mutex<Bus>>,
    link: Arc<Mutex<Option<FleetLink>>>,
}

impl FleetStore for MemoryStore {
    fn name(&self) -> String {
        "memory".to_owned()
    }

    fn attach(&self, link: FleetLink) {
        *self.link.lock().unwrap() = Some(link);
    }

    fn share(&self, transitions: &[SharedTransition]) {
        let mut bus = self.bus.lock().unwrap();
        for t in transitions {
            match t {
                SharedTransition::Closed { tool } | SharedTransition::ProbeEnded { tool } => {
                    bus.leases
                        .retain(|(l, w)| !(l == tool && *w == self.worker));
                }
                _ => {}
            }
            bus.published.push((self.worker.clone(), t.clone()));
        }
    }
}

struct Worker {
    name: String,
    expeditor: Expeditor,
    link: Arc<Mutex<Option<FleetLink>>>,
    log: EventLog,
    /// How far into the bus this worker has read.
    read: usize,
}

fn fleet(names: &[&str]) -> (Arc<Mutex<Bus>>, Vec<Worker>) {
    let bus: Arc<Mutex<Bus>> = Arc::default();
    let workers = names
        .iter()
        .map(|name| {
            let link: Arc<Mutex<Option<FleetLink>>> = Arc::default();
            let log = EventLog::default();
            let expeditor = Expeditor::builder(fleet_map())
                .policy(Policy::builder().budget(5).build().unwrap())
                .clock(clock())
                .observer(log.observer())
                .fleet(MemoryStore {
                    worker: (*name).to_owned(),
                    bus: Arc::clone(&bus),
                    link: Arc::clone(&link),
                })
                .build()
                .unwrap();
            Worker {
                name: (*name).to_owned(),
                expeditor,
                link,
                log,
                read: 0,
            }
        })
        .collect();
    (bus, workers)
}

/// One poll of `worker`'s store: what the others published since, then the leases.
fn sync(bus: &Mutex<Bus>, worker: &mut Worker) {
    let link = worker.link.lock().unwrap().clone().expect("attached");
    let news: Vec<(String, SharedTransition)> = {
        let bus = bus.lock().unwrap();
        bus.published[worker.read..].to_vec()
    };
    worker.read += news.len();
    for (from, transition) in news {
        if from == worker.name {
            continue;
        }
        match transition {
            SharedTransition::Opened {
                tool,
                message,
                category,
                due,
                failed_probes,
            } => {
                link.open(
                    &tool,
                    SharedOpen {
                        worker: from,
                        message,
                        category,
                        at: T0,
                        due,
                        failed_probes,
                    },
                );
            }
            SharedTransition::Closed { tool } => {
                link.cleared(&tool, true);
            }
            SharedTransition::Systemic {
                pattern,
                tools,
                category,
                ..
            } => {
                link.systemic(pattern, tools, category);
            }
            _ => {}
        }
    }
    for tool in link.probes_wanted() {
        let mut bus = bus.lock().unwrap();
        if bus.leases.iter().any(|(t, _)| *t == tool) {
            continue;
        }
        if link.grant_probe(&tool) {
            bus.leases.push((tool, worker.name.clone()));
        }
    }
}

fn refused() -> Failure {
    Failure::with_category("connection refused", FailureCategory::Network)
}

fn fail_with(expeditor: &Expeditor, tool: &str, failure: Failure) {
    match expeditor.decide(id(expeditor, tool)) {
        Decision::Call(t) | Decision::Probe(t) => {
            t.failure(failure);
        }
        other => panic!("{tool}: expected CALL or PROBE, got {}", other.kind()),
    }
}

fn state(expeditor: &Expeditor, tool: &str) -> CircuitState {
    expeditor.state(id(expeditor, tool)).unwrap()
}

#[test]
fn b11_a_circuit_opened_by_one_worker_is_open_for_the_others_uncharged() {
    let (bus, mut workers) = fleet(&["w1", "w2", "w3"]);
    for _ in 0..3 {
        fail_with(&workers[0].expeditor, "search", refused());
    }
    assert_eq!(state(&workers[0].expeditor, "search"), CircuitState::Open);
    for worker in &mut workers[1..] {
        sync(&bus, worker);
        let e = &worker.expeditor;
        assert_eq!(state(e, "search"), CircuitState::Open, "{}", worker.name);
        // Routed around without a call, and nothing charged here.
        let Decision::Skip(skip) = e.decide(id(e, "search")) else {
            panic!("skipped")
        };
        assert_eq!(skip.route().taken("search").to.as_deref(), Some("fetch"));
        assert_eq!(e.budget().status().consumed, 0);
        assert!(worker.log.events().contains(&Event::SharedOpened {
            tool: "search".into(),
            worker: "w1".into(),
            message: "connection refused".into(),
        }));
        let table = e.state_table().to_string();
        assert!(
            table.ends_with("Shared with the fleet through memory: search OPEN (opened by w1)"),
            "{table}"
        );
        assert_eq!(e.offer().offered, ["fetch", "lint"]);
        let task = agent_circuit_breaker::Task::new().subtask("Search the web", ["search"]);
        let report = e.pause_report(&task).to_string();
        assert!(
            report.contains("\nShared with the fleet through memory: search OPEN (opened by w1)\n"),
            "the pause report says so too: {report}"
        );
    }
    assert_eq!(
        workers[0]
            .expeditor
            .state_table()
            .to_string()
            .lines()
            .last(),
        Some("Shared with the fleet through memory: no circuit opened by another worker")
    );
}

#[test]
fn b11_a_caller_local_failure_is_never_shared() {
    let (bus, mut workers) = fleet(&["w1", "w2"]);
    for _ in 0..3 {
        fail_with(
            &workers[0].expeditor,
            "lint",
            Failure::with_category("no such file: src/x.rs", FailureCategory::NotFound),
        );
    }
    assert_eq!(state(&workers[0].expeditor, "lint"), CircuitState::Open);
    assert!(bus.lock().unwrap().published.is_empty(), "nothing shared");
    sync(&bus, &mut workers[1]);
    assert_eq!(state(&workers[1].expeditor, "lint"), CircuitState::Closed);
}

#[test]
fn b11_one_probe_fleet_wide_and_its_success_closes_the_tool_everywhere() {
    let (bus, mut workers) = fleet(&["w1", "w2", "w3"]);
    for _ in 0..3 {
        fail_with(&workers[0].expeditor, "search", refused());
    }
    for worker in &mut workers[1..] {
        sync(&bus, worker);
    }
    // Every worker reaches its probe: none probes without the lease.
    for worker in &workers {
        let e = &worker.expeditor;
        assert_eq!(kind(e.decide(id(e, "search"))), "SKIP");
        assert_eq!(kind(e.decide(id(e, "search"))), "SKIP");
        let Decision::Skip(skip) = e.decide(id(e, "search")) else {
            panic!("{}: the probe waits for the fleet's lease", worker.name)
        };
        assert_eq!(skip.reason(), SkipReason::ProbeInFlight);
    }
    for worker in &mut workers {
        sync(&bus, worker);
    }
    // Exactly one worker holds the lease; only its next attempt probes.
    let leases = bus.lock().unwrap().leases.clone();
    assert_eq!(leases.len(), 1, "{leases:?}");
    let holder = workers.iter().position(|w| w.name == leases[0].1).unwrap();
    let mut probes = 0;
    for (i, worker) in workers.iter().enumerate() {
        let e = &worker.expeditor;
        match e.decide(id(e, "search")) {
            Decision::Probe(ticket) => {
                assert_eq!(i, holder);
                probes += 1;
                ticket.success();
            }
            other => assert_eq!(other.kind(), "SKIP", "{}", worker.name),
        }
    }
    assert_eq!(probes, 1);
    assert!(bus.lock().unwrap().leases.is_empty(), "lease released");
    for worker in &mut workers {
        sync(&bus, worker);
        assert_eq!(
            state(&worker.expeditor, "search"),
            CircuitState::Closed,
            "{}",
            worker.name
        );
        succeed(&worker.expeditor, "search");
    }
    let others: Vec<&Worker> = workers
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != holder)
        .map(|(_, w)| w)
        .collect();
    for worker in others {
        assert!(
            worker.log.events().contains(&Event::SharedClosed {
                tool: "search".into()
            }),
            "{}",
            worker.name
        );
    }
}

#[test]
fn b11_a_failed_or_dropped_probe_gives_the_lease_back() {
    let (bus, mut workers) = fleet(&["w1", "w2"]);
    for _ in 0..3 {
        fail_with(&workers[0].expeditor, "search", refused());
    }
    sync(&bus, &mut workers[1]);
    for _ in 0..3 {
        let e = &workers[0].expeditor;
        let _ = e.decide(id(e, "search"));
    }
    sync(&bus, &mut workers[0]);
    assert_eq!(bus.lock().unwrap().leases.len(), 1);
    let e = &workers[0].expeditor;
    let Decision::Probe(ticket) = e.decide(id(e, "search")) else {
        panic!("granted")
    };
    drop(ticket);
    assert!(
        bus.lock().unwrap().leases.is_empty(),
        "a dropped probe ends the lease"
    );

    for _ in 0..3 {
        let e = &workers[1].expeditor;
        let _ = e.decide(id(e, "search"));
    }
    sync(&bus, &mut workers[1]);
    let e = &workers[1].expeditor;
    let Decision::Probe(ticket) = e.decide(id(e, "search")) else {
        panic!("w2 granted")
    };
    ticket.failure(refused());
    assert!(
        bus.lock().unwrap().leases.is_empty(),
        "a failed probe ends the lease"
    );
    // A failed probe renews the shared OPEN state.
    let renewed = bus
        .lock()
        .unwrap()
        .published
        .iter()
        .filter(|(w, t)| w == "w2" && matches!(t, SharedTransition::Opened { .. }))
        .count();
    assert_eq!(renewed, 1);
}

#[test]
fn b11_a_store_that_cannot_be_reached_leaves_local_decisions_and_loses_nothing() {
    let (bus, mut workers) = fleet(&["w1", "w2"]);
    let link = workers[0].link.lock().unwrap().clone().unwrap();
    link.unreachable("connection refused (127.0.0.1:6379)");
    let e = &workers[0].expeditor;
    let table = e.state_table().to_string();
    assert!(
        table
            .lines()
            .last()
            .unwrap()
            .starts_with("Shared with the fleet through memory: unreachable since 2026-")
            && table
                .ends_with("(connection refused (127.0.0.1:6379)) — deciding on local state alone"),
        "{table}"
    );
    assert!(workers[0].log.kinds().contains(&"store_unavailable"));
    // Local decisions: the circuit opens and probes on this worker's own breaker, and
    // what happens is handed to the store as it happens, for it to queue and order.
    let before = bus.lock().unwrap().published.len();
    for _ in 0..3 {
        fail_with(e, "search", refused());
    }
    assert_eq!(e.budget().status().consumed, 3, "recorded locally");
    for _ in 0..2 {
        assert_eq!(kind(e.decide(id(e, "search"))), "SKIP");
    }
    let Decision::Probe(probe) = e.decide(id(e, "search")) else {
        panic!("a local probe while the store is down")
    };
    probe.failure(refused());
    let during = bus.lock().unwrap().published.len();
    assert!(
        during > before,
        "handed to the store while it was unreachable"
    );
    // Back: nothing is handed over again (the store's queue holds it, with when it
    // happened); the others learn it.
    link.reachable();
    assert!(workers[0].log.kinds().contains(&"store_restored"));
    assert_eq!(
        bus.lock().unwrap().published.len(),
        during,
        "nothing replayed"
    );
    assert_eq!(e.budget().status().consumed, 4, "nothing recorded was lost");
    sync(&bus, &mut workers[1]);
    assert_eq!(state(&workers[1].expeditor, "search"), CircuitState::Open);
}

#[test]
fn b11_r9_a_systemic_event_seen_by_one_worker_pauses_the_fleet_once() {
    let (bus, mut workers) = fleet(&["w1", "w2"]);
    for _ in 0..3 {
        fail_with(&workers[0].expeditor, "search", refused());
    }
    for _ in 0..3 {
        fail_with(&workers[0].expeditor, "fetch", refused());
    }
    assert!(workers[0].expeditor.paused().is_some());
    sync(&bus, &mut workers[1]);
    let e = &workers[1].expeditor;
    assert!(e.paused().is_some(), "paused by the other worker's event");
    assert_eq!(kind(e.decide(id(e, "lint"))), "PAUSE");
    assert_eq!(
        e.budget().status().consumed,
        0,
        "charged to the worker that saw it"
    );
    let systemic = workers[1]
        .log
        .events()
        .into_iter()
        .filter(|e| matches!(e, Event::Systemic { .. }))
        .count();
    assert_eq!(systemic, 1, "one event");
    assert!(e.confirm_recovery().is_some());
}

#[test]
fn b11_the_link_does_not_keep_the_expeditor_alive() {
    let (_bus, mut workers) = fleet(&["w1"]);
    let worker = workers.remove(0);
    let link = worker.link.lock().unwrap().clone().unwrap();
    assert!(link.is_attached());
    assert_eq!(link.tools(), ["search", "fetch", "lint"]);
    drop(worker);
    assert!(!link.is_attached());
    assert!(!link.open(
        "search",
        SharedOpen {
            worker: "w9".into(),
            message: "x".into(),
            category: FailureCategory::Network,
            at: T0,
            due: None,
            failed_probes: 0,
        }
    ));
    assert!(link.tools().is_empty());
}
