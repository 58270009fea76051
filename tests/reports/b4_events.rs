//! B4: an event for every transition, handed to observers outside the expeditor's lock.

#[path = "../common/mod.rs"]
mod common;

use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread;
use std::time::Duration;

use agent_circuit_breaker::{CircuitState, Decision, Expeditor, Policy, event::Event};
use common::{EventLog, clock, fail, id, kind, open3, seed_map, succeed};

/// Drives every kind of event once, in a known order.
fn every_event(expeditor: &Expeditor) {
    let bash = id(expeditor, "Bash");
    open3(expeditor, "Bash"); // opened
    assert_eq!(kind(expeditor.decide(bash)), "SKIP");
    assert_eq!(kind(expeditor.decide(bash)), "SKIP");
    assert_eq!(kind(expeditor.decide(bash)), "PROBE"); // half_opened, then probe_released
    fail(expeditor, "Bash", "still broken"); // reopened
    assert_eq!(kind(expeditor.decide(bash)), "SKIP");
    assert_eq!(kind(expeditor.decide(bash)), "SKIP");
    succeed(expeditor, "Bash"); // half_opened, closed
    let _ = expeditor.decide_named("mcp_fetch").unwrap(); // tool_discovered
    fail(expeditor, "WebSearch", "connection refused"); // budget_exhausted
    expeditor.new_cycle(); // cycle_started
    expeditor.restore(&expeditor.snapshot()).unwrap(); // restored
}

fn expected_events() -> Vec<Event> {
    vec![
        Event::Opened {
            tool: "Bash".into(),
            consecutive_failures: 3,
            message: "timeout after 120s".into(),
        },
        Event::HalfOpened {
            tool: "Bash".into(),
        },
        Event::ProbeReleased {
            tool: "Bash".into(),
        },
        Event::Reopened {
            tool: "Bash".into(),
            consecutive_failures: 4,
            message: "still broken".into(),
        },
        Event::HalfOpened {
            tool: "Bash".into(),
        },
        Event::Closed {
            tool: "Bash".into(),
        },
        Event::ToolDiscovered {
            tool: "mcp_fetch".into(),
        },
        Event::BudgetExhausted {
            consumed: 5,
            limit: 5,
        },
        Event::CycleStarted { cycle: 2 },
        Event::Restored { tools: 7, step: 0 },
    ]
}

#[test]
fn b4_observers_receive_every_transition_in_order() {
    let first = EventLog::default();
    let second = EventLog::default();
    let expeditor = Expeditor::builder(seed_map())
        .clock(clock())
        .observer(first.observer())
        .observer(second.observer())
        .build()
        .unwrap();
    every_event(&expeditor);
    assert_eq!(first.events(), expected_events());
    assert_eq!(
        second.events(),
        first.events(),
        "every observer sees every event"
    );
}

#[test]
fn b4_events_render_as_log_lines() {
    let lines: Vec<String> = expected_events().iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "Circuit OPENED for Bash: 3 consecutive failures",
            "Circuit HALF-OPEN for Bash: one probe call allowed",
            "Probe of Bash cancelled before it finished: half-open slot released",
            "Circuit OPENED for Bash: probe failed, 4 consecutive failures",
            "Circuit HALF-OPEN for Bash: one probe call allowed",
            "Circuit CLOSED for Bash: probe succeeded",
            "Tool mcp_fetch discovered at run time: state initialized CLOSED",
            "FAILURE BUDGET EXHAUSTED — PAUSING (5 / 5 consumed)",
            "Cycle 2 started: failure budget reset, breaker states kept",
            "State restored: 7 tools at step 0",
        ]
    );
    let one = Event::Opened {
        tool: "WebSearch".into(),
        consecutive_failures: 1,
        message: "connection refused".into(),
    };
    assert_eq!(
        one.to_string(),
        "Circuit OPENED for WebSearch: 1 consecutive failure"
    );
    assert_eq!(one.tool(), Some("WebSearch"));
    assert_eq!(Event::CycleStarted { cycle: 2 }.tool(), None);
}

/// What the observer saw when it called back into the expeditor during an event.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    event: &'static str,
    bash: CircuitState,
    consumed: u32,
    paused: bool,
    table_rows: usize,
}

#[test]
fn b4_an_observer_can_call_back_into_the_expeditor_without_deadlock() {
    let (done, finished) = mpsc::channel();
    // A deadlock would hang this thread, not the test: the test waits with a timeout.
    thread::spawn(move || {
        let cell: Arc<OnceLock<Weak<Expeditor>>> = Arc::new(OnceLock::new());
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let observer = {
            let cell = Arc::clone(&cell);
            let seen = Arc::clone(&seen);
            move |event: &Event| {
                let Some(expeditor) = cell.get().and_then(Weak::upgrade) else {
                    return;
                };
                // Each of these takes the expeditor's lock.
                let table = expeditor.state_table();
                let snapshot = expeditor.snapshot();
                let bash = expeditor.tool("Bash").unwrap();
                let record = expeditor.breaker(bash).unwrap();
                assert_eq!(snapshot.tools.len(), table.rows.len());
                // A decision from inside the observer.
                let grep = expeditor.tool("Grep").unwrap();
                if let Decision::Call(ticket) = expeditor.decide(grep) {
                    ticket.cancel();
                }
                seen.lock().unwrap().push(Seen {
                    event: event.kind(),
                    bash: record.state(),
                    consumed: expeditor.budget().consumed(),
                    paused: expeditor.paused().is_some(),
                    table_rows: table.rows.len(),
                });
            }
        };
        let expeditor = Arc::new(
            Expeditor::builder(seed_map())
                .policy(Policy::default())
                .clock(clock())
                .observer(observer)
                .build()
                .unwrap(),
        );
        cell.set(Arc::downgrade(&expeditor)).unwrap();
        every_event(&expeditor);
        let seen = seen.lock().unwrap().clone();
        done.send(seen).unwrap();
    });
    let seen = finished
        .recv_timeout(Duration::from_secs(20))
        .expect("the observer deadlocked: it must run outside the expeditor's lock");
    let row = |event, bash, consumed, paused, table_rows| Seen {
        event,
        bash,
        consumed,
        paused,
        table_rows,
    };
    use CircuitState::{Closed, HalfOpen, Open};
    // The observer sees the state after the transition it is told about.
    assert_eq!(
        seen,
        [
            row("opened", Open, 3, false, 6),
            row("half_opened", HalfOpen, 3, false, 6),
            row("probe_released", HalfOpen, 3, false, 6),
            row("reopened", Open, 4, false, 6),
            row("half_opened", HalfOpen, 4, false, 6),
            row("closed", Closed, 4, false, 6),
            row("tool_discovered", Closed, 4, false, 7),
            row("budget_exhausted", Closed, 5, true, 7),
            row("cycle_started", Closed, 0, false, 7),
            row("restored", Closed, 0, false, 7),
        ]
    );
}

/// Wakes the thread that waits on a future.
struct Unpark(thread::Thread);

impl std::task::Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// B4: a watch resolves once a command changed something, woken by the thread that made the
/// change (no runtime, no polling loop); the healthy path and steps leave it pending; changes
/// made while no one waited are seen at once, together.
#[test]
fn b4_watch_is_woken_by_a_change_and_not_by_the_healthy_path() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};

    let expeditor = Arc::new(
        Expeditor::builder(seed_map())
            .clock(clock())
            .build()
            .unwrap(),
    );
    let mut watch = expeditor.watch();
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);

    // A success on a CLOSED tool and a step change nothing a watch sees.
    succeed(&expeditor, "Grep");
    expeditor.advance_step();
    assert!(!watch.has_changed());
    {
        let mut changed = std::pin::pin!(watch.changed());
        assert!(changed.as_mut().poll(&mut cx).is_pending());

        // Another thread fails a tool: this thread is woken, and the future is ready.
        let other = Arc::clone(&expeditor);
        let failing = thread::spawn(move || fail(&other, "Bash", "permission denied"));
        loop {
            if let Poll::Ready(()) = changed.as_mut().poll(&mut cx) {
                break;
            }
            thread::park_timeout(Duration::from_secs(10));
        }
        failing.join().unwrap();
    }
    assert!(!watch.has_changed());

    // Changes while no one waits: seen at once, as one.
    fail(&expeditor, "Bash", "permission denied");
    fail(&expeditor, "Bash", "permission denied"); // opened
    assert!(watch.has_changed());
    let mut changed = std::pin::pin!(watch.changed());
    assert!(changed.as_mut().poll(&mut cx).is_ready());
    assert_eq!(
        expeditor.state(id(&expeditor, "Bash")),
        Some(CircuitState::Open)
    );
}
