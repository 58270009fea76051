//! Time in the policy and services that heal by themselves (B13, B15): cool-downs that
//! back off and jitter, retry-after hints within bounds, budgets that renew in a rolling
//! window, systemic pauses that lift on a health check or at the end of their cool-down, and
//! a simulated service running for hours with faults that start and heal at random. Every
//! clock here is a `ManualClock`: nothing sleeps.

#[path = "../common/mod.rs"]
mod common;

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use agent_circuit_breaker::clock::{ManualClock, Timestamp, WallClock};
use agent_circuit_breaker::event::Event;
use agent_circuit_breaker::failure::parse_retry_after;
use agent_circuit_breaker::policy::PolicyProblem;
use agent_circuit_breaker::{
    Availability, CapabilityMap, CircuitState, Decision, Expeditor, Failure, FailureCategory,
    PauseReason, Policy, ToolSpec,
};
use common::{EventLog, T0, clock, fail, id, seed_map, succeed};

const SECOND: Duration = Duration::from_secs(1);

fn timed(cool_down: u64, cap: u64) -> agent_circuit_breaker::policy::PolicyBuilder {
    Policy::builder()
        .cool_down(Duration::from_secs(cool_down))
        .cool_down_cap(Duration::from_secs(cap))
        .jitter(0)
}

fn build(map: CapabilityMap, policy: Policy, clock: &ManualClock, log: &EventLog) -> Expeditor {
    Expeditor::builder(map)
        .policy(policy)
        .clock(clock.clone())
        .observer(log.observer())
        .jitter_seed(7)
        .build()
        .expect("valid map")
}

fn open(expeditor: &Expeditor, tool: &str) {
    for _ in 0..3 {
        fail(
            expeditor,
            tool,
            Failure::with_category("refused", FailureCategory::Other),
        );
    }
    assert_eq!(
        expeditor.state(id(expeditor, tool)),
        Some(CircuitState::Open)
    );
}

fn due(expeditor: &Expeditor, tool: &str) -> Option<Timestamp> {
    expeditor.breaker(id(expeditor, tool))?.probe_due_at()
}

#[test]
fn b13_an_open_circuit_is_due_for_its_probe_after_its_cool_down_doubling_after_failed_probes() {
    let (clock, log) = (clock(), EventLog::default());
    let policy = timed(10, 30).budget(20).build().unwrap();
    let expeditor = build(seed_map(), policy, &clock, &log);
    let bash = id(&expeditor, "Bash");
    open(&expeditor, "Bash");
    assert_eq!(due(&expeditor, "Bash"), Some(T0.plus(10 * SECOND)));

    // Before the cool-down: refused, whatever the count (attempts go on being counted).
    clock.advance(9 * SECOND);
    assert_eq!(expeditor.decide(bash).kind(), "SKIP");
    assert_eq!(expeditor.tick(), Some(T0.plus(10 * SECOND)));
    assert!(!expeditor.offer().offered.contains(&"Bash".to_owned()));

    // At the cool-down: HALF-OPEN on probation without a call, offered again.
    clock.advance(SECOND);
    assert_eq!(expeditor.tick(), None, "nothing else timed is pending");
    assert_eq!(expeditor.state(bash), Some(CircuitState::HalfOpen));
    assert!(expeditor.offer().offered.contains(&"Bash".to_owned()));
    assert!(log.kinds().contains(&"half_opened"));

    // The next call is the one probe (R3.6); it fails: OPEN, cool-down doubled.
    let Decision::Probe(probe) = expeditor.decide(bash) else {
        panic!("the call after the cool-down is the probe")
    };
    assert_eq!(expeditor.decide(bash).kind(), "SKIP", "one probe at a time");
    probe.failure("still refused");
    let now = T0.plus(10 * SECOND);
    assert_eq!(due(&expeditor, "Bash"), Some(now.plus(20 * SECOND)));
    assert_eq!(expeditor.breaker(bash).unwrap().failed_probes(), 1);

    // Doubled again, then capped at 30 s.
    clock.advance(20 * SECOND);
    fail(&expeditor, "Bash", "still refused");
    assert_eq!(
        due(&expeditor, "Bash"),
        Some(now.plus(20 * SECOND).plus(30 * SECOND))
    );
    clock.advance(30 * SECOND);
    fail(&expeditor, "Bash", "still refused");
    assert_eq!(due(&expeditor, "Bash"), Some(now.plus(80 * SECOND)));

    // Mended: the probe closes it, and the backoff is forgotten.
    clock.advance(30 * SECOND);
    succeed(&expeditor, "Bash");
    let record = expeditor.breaker(bash).unwrap();
    assert_eq!(record.state(), CircuitState::Closed);
    assert_eq!((record.failed_probes(), record.probe_due_at()), (0, None));
}

#[test]
fn b13_counting_and_time_combine_whichever_comes_first() {
    let (clock, log) = (clock(), EventLog::default());
    let expeditor = build(seed_map(), timed(60, 60).build().unwrap(), &clock, &log);
    let bash = id(&expeditor, "Bash");
    open(&expeditor, "Bash");
    // The source document's count: the third attempt after opening probes, long before the
    // cool-down is over.
    assert_eq!(expeditor.decide(bash).kind(), "SKIP");
    assert_eq!(expeditor.decide(bash).kind(), "SKIP");
    assert_eq!(expeditor.decide(bash).kind(), "PROBE");
}

#[test]
fn b13_the_healthy_path_reads_no_clock_under_a_timed_policy() {
    #[derive(Clone, Default)]
    struct Counting(Arc<AtomicU64>);
    impl WallClock for Counting {
        fn now(&self) -> Timestamp {
            self.0.fetch_add(1, Ordering::Relaxed);
            T0
        }
    }
    let clock = Counting::default();
    let policy = Policy::builder()
        .cool_down(Duration::from_secs(5))
        .budget_window(Duration::from_secs(60))
        .build()
        .unwrap();
    let expeditor = Expeditor::builder(seed_map())
        .policy(policy)
        .clock(clock.clone())
        .build()
        .unwrap();
    let grep = id(&expeditor, "Grep");
    succeed(&expeditor, "Grep"); // the first success of a step is timed, once
    let before = clock.0.load(Ordering::Relaxed);
    for _ in 0..1000 {
        match expeditor.decide(grep) {
            Decision::Call(ticket) => ticket.success(),
            other => panic!("healthy tool refused: {}", other.kind()),
        }
    }
    assert_eq!(clock.0.load(Ordering::Relaxed), before, "no clock read");
}

#[test]
fn b13_jitter_shortens_a_cool_down_never_lengthens_it_and_spreads_a_fleet() {
    let clock = clock();
    let policy = Policy::builder()
        .cool_down(Duration::from_secs(10))
        .jitter(20)
        .build()
        .unwrap();
    let mut dues = Vec::new();
    for seed in 0..32 {
        let expeditor = Expeditor::builder(seed_map())
            .policy(policy)
            .clock(clock.clone())
            .jitter_seed(seed)
            .build()
            .unwrap();
        open(&expeditor, "Bash");
        let at = due(&expeditor, "Bash").unwrap().as_millis() - T0.as_millis();
        assert!((8_000..=10_000).contains(&at), "{at} ms");
        dues.push(at);
    }
    dues.sort_unstable();
    dues.dedup();
    assert!(
        dues.len() > 16,
        "32 workers, {} distinct probe times",
        dues.len()
    );
}

#[test]
fn b13_a_retry_after_hint_sets_the_cool_down_within_bounds() {
    let (clock, log) = (clock(), EventLog::default());
    let expeditor = build(seed_map(), timed(10, 300).build().unwrap(), &clock, &log);
    let hinted = |hint: Duration| {
        Failure::with_category("429 Too Many Requests", FailureCategory::Network)
            .with_retry_after(hint)
    };
    for _ in 0..3 {
        fail(&expeditor, "Bash", hinted(Duration::from_secs(120)));
    }
    assert_eq!(
        due(&expeditor, "Bash"),
        Some(T0.plus(120 * SECOND)),
        "the tool's word"
    );

    // Absurd hints are bounded: years to the cap, zero to one second.
    for (hint, expected) in [
        (Duration::from_secs(10 * 365 * 24 * 3600), 300 * SECOND),
        (Duration::MAX, 300 * SECOND),
        (Duration::ZERO, SECOND),
    ] {
        let (clock, log) = (common::clock(), EventLog::default());
        let expeditor = build(seed_map(), timed(10, 300).build().unwrap(), &clock, &log);
        for _ in 0..3 {
            fail(&expeditor, "Read", hinted(hint));
        }
        assert_eq!(due(&expeditor, "Read"), Some(T0.plus(expected)), "{hint:?}");
    }

    // Parsed from a header: garbage and negative values are no hint, never a panic.
    let now = Timestamp::parse("2026-12-04T10:00:00Z").unwrap();
    assert_eq!(parse_retry_after("120", now), Some(120 * SECOND));
    assert_eq!(
        parse_retry_after("Fri, 04 Dec 2026 10:01:00 GMT", now),
        Some(60 * SECOND)
    );
    for junk in [
        "",
        "-1",
        "1.5",
        "soon",
        "Fri, 04 Dec 2026 09:00:00 GMT",
        "Fri, 99 Foo 2026 10:01:00 GMT",
        "99999999999999999999999999999999",
        "\u{0}\u{ff}",
        "Fri, 04 Dec 2026 25:00:00 GMT",
    ] {
        let parsed = parse_retry_after(junk, now);
        assert!(
            parsed.is_none() || junk.starts_with('9'),
            "{junk:?} gave {parsed:?}"
        );
    }
    // A huge number of seconds is kept as a hint and bounded where it is used.
    let huge = parse_retry_after("99999999999999999999999999999999", now).unwrap();
    let failure = Failure::new("rate limited").with_retry_after(huge);
    assert!(failure.retry_after().unwrap() <= Duration::from_secs(50 * 24 * 3600));
}

#[test]
fn b13_bad_time_values_in_a_policy_are_errors_never_panics() {
    let problems = |b: agent_circuit_breaker::policy::PolicyBuilder| b.build().unwrap_err().0;
    assert_eq!(
        problems(Policy::builder().cool_down(Duration::ZERO)),
        [PolicyProblem::ZeroCoolDown]
    );
    assert_eq!(
        problems(timed(60, 30)),
        [PolicyProblem::CoolDownCapBelowCoolDown]
    );
    assert_eq!(
        problems(Policy::builder().budget_window(Duration::from_micros(10))),
        [PolicyProblem::ZeroBudgetWindow]
    );
    assert_eq!(
        problems(Policy::builder().jitter(200)),
        [PolicyProblem::JitterTooLarge]
    );
    assert!(
        problems(Policy::builder().budget_window(Duration::MAX))
            .contains(&PolicyProblem::DurationTooLong)
    );
    // From text, as a config file gives it.
    let policy: Policy = serde_json::from_str(
        r#"{"cool_down": "10s", "cool_down_cap": "2m", "budget_window": "1h"}"#,
    )
    .unwrap();
    assert_eq!(policy.cool_down(), Some(10 * SECOND));
    assert_eq!(policy.cool_down_cap(), 120 * SECOND);
    assert_eq!(policy.budget_window(), Some(3600 * SECOND));
    let back: Policy = serde_json::from_str(&serde_json::to_string(&policy).unwrap()).unwrap();
    assert_eq!(back, policy);
    for junk in [
        r#"{"cool_down": "10 parsecs"}"#,
        r#"{"cool_down": -1}"#,
        r#"{"budget_window": "999999999999999999999999h"}"#,
        r#"{"cool_down": "0s"}"#,
    ] {
        let error = serde_json::from_str::<Policy>(junk)
            .unwrap_err()
            .to_string();
        assert!(!error.is_empty(), "{junk}");
    }
}

#[test]
fn b13_a_budget_window_forgets_old_failures_and_lifts_its_pause() {
    let (clock, log) = (clock(), EventLog::default());
    let policy = Policy::builder()
        .budget(3)
        .budget_window(Duration::from_secs(60))
        .build()
        .unwrap();
    let expeditor = build(seed_map(), policy, &clock, &log);
    // Three scattered failures on three tools: no circuit opens, the budget is spent.
    for tool in ["Grep", "Read", "Edit"] {
        fail(&expeditor, tool, "flaked");
        clock.advance(10 * SECOND);
    }
    clock.set(T0.plus(20 * SECOND));
    assert!(matches!(
        expeditor.paused(),
        Some(PauseReason::BudgetExhausted {
            consumed: 3,
            limit: 3
        })
    ));
    // The pause says when it lifts: when the first failure leaves the window.
    assert_eq!(expeditor.pause_lifts_at(), Some(T0.plus(60 * SECOND)));
    let note = match expeditor.decide(id(&expeditor, "Bash")) {
        Decision::Pause(pause) => pause.for_model().to_string(),
        other => panic!("paused, got {}", other.kind()),
    };
    assert!(
        note.contains("do not call tools until 2026-11-30T07:36:03Z")
            && !note.contains("user confirms"),
        "{note}"
    );
    assert_eq!(expeditor.tick(), Some(T0.plus(60 * SECOND)));

    clock.set(T0.plus(60 * SECOND));
    assert_eq!(expeditor.tick(), None);
    assert_eq!(expeditor.paused(), None);
    assert_eq!(
        expeditor.budget().consumed(),
        2,
        "two failures still in the window"
    );
    assert!(log.events().contains(&Event::BudgetRenewed {
        consumed: 2,
        limit: 3
    }));
    assert_eq!(expeditor.decide(id(&expeditor, "Bash")).kind(), "CALL");
    // Nothing recorded is lost: the ledger keeps all three, the first marked expired.
    let ledger = expeditor.budget().ledger().to_vec();
    assert_eq!(ledger.len(), 3);
    assert!(ledger[0].expired && !ledger[0].charged);
}

#[test]
fn b15_a_systemic_pause_lifts_on_a_health_check_or_on_trial_after_its_cool_down() {
    let network = |m: &'static str| Failure::with_category(m, FailureCategory::Network);
    for health_check in [true, false] {
        let (clock, log) = (clock(), EventLog::default());
        let policy = timed(20, 120).budget(10).build().unwrap();
        let expeditor = build(seed_map(), policy, &clock, &log);
        for tool in ["WebSearch", "Bash"] {
            for _ in 0..3 {
                fail(&expeditor, tool, network("connection refused"));
            }
        }
        assert!(matches!(
            expeditor.paused(),
            Some(PauseReason::Systemic { .. })
        ));
        assert_eq!(expeditor.pause_lifts_at(), Some(T0.plus(20 * SECOND)));
        let note = expeditor.offer().to_string();
        assert!(
            note.contains("do not call tools until 2026-11-30T07:35:23Z")
                && note.contains("sooner if a health check finds the network issue resolved")
                && !note.contains("user confirms"),
            "{note}"
        );
        // No probe during the pause (R9.3), even past a tool's cool-down.
        clock.advance(10 * SECOND);
        expeditor.tick();
        assert_eq!(
            expeditor.state(id(&expeditor, "Bash")),
            Some(CircuitState::Open)
        );
        if health_check {
            expeditor.record_precheck(id(&expeditor, "WebSearch"), Availability::Available);
            assert!(log.kinds().contains(&"recovery_confirmed"));
        } else {
            clock.advance(10 * SECOND);
            expeditor.tick();
            assert!(log.kinds().contains(&"recovery_on_trial"));
        }
        assert_eq!(expeditor.paused(), None, "health check: {health_check}");
        // Its tools probe with backoff after a cool-down from the recovery.
        let recovered_at = clock.now();
        assert_eq!(
            due(&expeditor, "Bash"),
            Some(recovered_at.plus(20 * SECOND))
        );
        clock.advance(20 * SECOND);
        expeditor.tick();
        assert_eq!(
            expeditor.state(id(&expeditor, "Bash")),
            Some(CircuitState::HalfOpen)
        );
    }
}

#[test]
fn b15_a_person_can_lift_a_typed_agents_pause_and_the_note_says_so() {
    // No time in the policy: the source document's agent, whose user confirms recovery.
    let (expeditor, _clock) = common::seed_expeditor();
    let network = |m: &'static str| Failure::with_category(m, FailureCategory::Network);
    for tool in ["WebSearch", "Bash"] {
        for _ in 0..3 {
            fail(&expeditor, tool, network("connection refused"));
        }
    }
    assert_eq!(expeditor.pause_lifts_at(), None);
    assert!(
        expeditor
            .offer()
            .to_string()
            .contains("once the user confirms")
    );
}

#[test]
fn b15_in_a_service_a_pause_for_the_models_mistakes_lasts_one_budget_window() {
    use agent_circuit_breaker::report::ModelMistake;
    let (clock, log) = (clock(), EventLog::default());
    let policy = Policy::builder()
        .mistake_limit(3)
        .build()
        .unwrap()
        .for_service();
    let expeditor = build(seed_map(), policy, &clock, &log);
    for _ in 0..3 {
        expeditor.record_mistake(&ModelMistake::UnknownTool {
            name: "gerp".into(),
            suggestion: None,
            offered: Vec::new(),
        });
    }
    assert!(matches!(
        expeditor.paused(),
        Some(PauseReason::MistakeLimit { .. })
    ));
    assert_eq!(expeditor.pause_lifts_at(), Some(T0.plus(60 * SECOND)));
    let note = expeditor.offer().to_string();
    assert!(
        note.contains("do not call tools until 2026-11-30T07:36:03Z")
            && !note.contains("new cycle"),
        "{note}"
    );
    clock.advance(60 * SECOND);
    expeditor.tick();
    assert_eq!(expeditor.paused(), None);
    assert!(log.kinds().contains(&"mistakes_forgiven"));
    assert_eq!(expeditor.decide(id(&expeditor, "Grep")).kind(), "CALL");
}

#[test]
fn b13_a_restored_due_time_is_never_trusted_raw() {
    let (clock, log) = (clock(), EventLog::default());
    let expeditor = build(seed_map(), timed(10, 30).build().unwrap(), &clock, &log);
    open(&expeditor, "Bash");
    let mut json = serde_json::to_value(expeditor.snapshot()).unwrap();
    let text = json.to_string();
    assert!(
        text.contains("probe_due_at"),
        "the due time is saved: {text}"
    );
    // A hostile (or very old) snapshot: Bash due in the year 9999.
    fn set_due(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                if map.contains_key("probe_due_at") {
                    map.insert("probe_due_at".into(), "9999-12-31T00:00:00Z".into());
                }
                map.values_mut().for_each(set_due);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(set_due),
            _ => {}
        }
    }
    set_due(&mut json);
    let snapshot = serde_json::from_value(json).unwrap();
    clock.advance(3600 * SECOND);
    let restored = build(seed_map(), timed(10, 30).build().unwrap(), &clock, &log);
    restored.restore(&snapshot).unwrap();
    assert_eq!(
        restored.state(id(&restored, "Bash")),
        Some(CircuitState::Open)
    );
    assert_eq!(due(&restored, "Bash"), Some(clock.now().plus(10 * SECOND)));
}

struct Declared;

#[agent_circuit_breaker::toolbox(policy(
    threshold = 2,
    cool_down = "10s",
    cool_down_cap = "2m",
    budget_window = "1h",
    mistake_limit = 7
))]
impl Declared {
    #[tool(provides = "a search", fallback = "ask the user")]
    fn search(&self, pattern: &str) -> std::io::Result<String> {
        Ok(pattern.to_owned())
    }
}

#[test]
fn b13_a_toolbox_declares_its_time_and_mistake_limit() {
    let policy = GuardedDeclared::new(Declared).expeditor().policy();
    assert_eq!(policy.threshold(), 2);
    assert_eq!(policy.cool_down(), Some(10 * SECOND));
    assert_eq!(policy.cool_down_cap(), 120 * SECOND);
    assert_eq!(policy.budget_window(), Some(3600 * SECOND));
    assert_eq!(policy.mistake_limit(), 7);
    // What a service fills in is only what the toolbox left out.
    assert_eq!(policy.for_service(), policy);
}

#[test]
fn b13_a_conversation_begins_a_cycle_of_its_own() {
    let (expeditor, _clock) = common::seed_expeditor();
    assert_eq!(
        expeditor.begin_conversation("a"),
        1,
        "the first takes the cycle in progress"
    );
    fail(&expeditor, "Grep", "flaked");
    assert_eq!(expeditor.begin_conversation("a"), 1);
    assert_eq!(expeditor.budget().consumed(), 1);
    assert_eq!(expeditor.begin_conversation("b"), 2);
    assert_eq!(expeditor.budget().consumed(), 0);
    assert_eq!(
        expeditor
            .breaker(id(&expeditor, "Grep"))
            .unwrap()
            .consecutive_failures(),
        1,
        "breaker states are kept (R7.4)"
    );
}

/// A small deterministic generator for the simulation (xorshift).
struct Rng(Cell<u64>);

impl Rng {
    fn below(&self, n: u64) -> u64 {
        let mut x = self.0.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0.set(x);
        x % n
    }
}

/// A service runs for six simulated hours: a model that calls only what it is offered, one
/// call per offered tool every few seconds, and faults that start and heal at random.
#[test]
fn b15_a_service_running_for_hours_heals_by_itself() {
    const TOOLS: [&str; 5] = ["search", "fetch", "files", "shell", "notes"];
    let cap = Duration::from_secs(30);
    let window = Duration::from_secs(60);
    for seed in [1_u64, 42, 2026] {
        let map = TOOLS.iter().fold(CapabilityMap::new(), |map, tool| {
            map.tool(
                ToolSpec::new(*tool)
                    .provides("a remote service")
                    .fallback("tell the user")
                    .build(),
            )
        });
        let clock = clock();
        let log = EventLog::default();
        let policy = Policy::builder()
            .budget(8)
            .cascade_detection(false)
            .build()
            .unwrap()
            .for_service();
        let expeditor = build(map, policy, &clock, &log);
        let rng = Rng(Cell::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1));
        // When each tool's current fault ends (None: healthy) and when it healed.
        let mut broken_until: [Option<Timestamp>; 5] = [None; 5];
        let mut healed_at: [Option<Timestamp>; 5] = [Some(T0); 5];
        let mut paused_since: Option<Timestamp> = None;
        let (mut failures, mut calls) = (0_u64, 0_u64);
        let end = T0.plus(Duration::from_secs(6 * 3600));
        while clock.now() < end {
            let now = clock.now();
            // Faults start and heal at random.
            for (i, until) in broken_until.iter_mut().enumerate() {
                if until.is_some_and(|u| now >= u) {
                    *until = None;
                    healed_at[i] = Some(now);
                } else if until.is_none() && rng.below(400) == 0 {
                    *until = Some(now.plus(Duration::from_secs(5 + rng.below(600))));
                    healed_at[i] = None;
                }
            }
            let offer = expeditor.offer();
            for (i, tool) in TOOLS.iter().enumerate() {
                let offered = offer.offered.iter().any(|o| o == tool);
                // No tool that healed stays unoffered longer than its cool-down (capped)
                // plus one turn of the model, unless a budget pause holds every tool.
                if let Some(healed) = healed_at[i]
                    && !offered
                    && expeditor.paused().is_none()
                {
                    let waited = now.as_millis() - healed.as_millis();
                    assert!(
                        u128::from(waited) <= cap.as_millis() + 10_000,
                        "seed {seed}: {tool} healed {waited} ms ago and is not offered"
                    );
                }
                if !offered {
                    continue;
                }
                let decision = expeditor.decide(id(&expeditor, tool));
                match decision {
                    Decision::Call(ticket) | Decision::Probe(ticket) => {
                        calls += 1;
                        if broken_until[i].is_some() {
                            failures += 1;
                            ticket.failure(Failure::with_category(
                                "connection reset",
                                FailureCategory::Network,
                            ));
                        } else {
                            ticket.success();
                        }
                    }
                    Decision::Skip(_) | Decision::Pause(_) => {}
                }
            }
            // No budget pause outlives its window.
            match (expeditor.paused(), paused_since) {
                (Some(PauseReason::BudgetExhausted { .. }), None) => paused_since = Some(now),
                (Some(PauseReason::BudgetExhausted { .. }), Some(since)) => {
                    assert!(
                        now.as_millis() - since.as_millis() <= window.as_millis() as u64 + 10_000,
                        "seed {seed}: a budget pause outlived its window"
                    );
                }
                (None, _) => paused_since = None,
                (Some(other), _) => panic!("seed {seed}: unexpected pause {other:?}"),
            }
            clock.advance(Duration::from_secs(1 + rng.below(8)));
        }
        // Every failure is in the ledger or counted as dropped.
        assert_eq!(expeditor.budget().failures(), failures, "seed {seed}");
        assert!(calls > 10_000, "seed {seed}: {calls} calls");
        let kinds = log.kinds();
        for kind in [
            "opened",
            "half_opened",
            "closed",
            "budget_exhausted",
            "budget_renewed",
        ] {
            assert!(kinds.contains(&kind), "seed {seed}: no {kind} in six hours");
        }
    }
}

/// A real session of the example server's toolbox as a service runs it (its defaults: 5 s
/// cool-down, 60 s budget window), on a manual clock: what the model is told, what it is
/// offered, and the events, minute by minute. Pinned by a golden file, and shown in
/// `docs/transcripts.md`'s section "A service that heals by itself" word for word.
#[cfg(feature = "mcp")]
#[test]
fn b15_transcript_of_a_service_that_heals_by_itself() {
    use agent_circuit_breaker::dispatch::ToolDispatch;
    use notes::{GuardedNotebook, Notebook};
    use serde_json::json;
    use std::sync::Mutex;

    let clock = ManualClock::new(Timestamp::parse("2026-12-04T09:00:00Z").unwrap());
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let stamp = {
        let clock = clock.clone();
        move || {
            let t = clock.now().as_millis() / 1000 - 1_796_374_800;
            format!("{:02}:{:02}", t / 60, t % 60)
        }
    };
    let (observer_lines, observer_stamp) = (Arc::clone(&lines), stamp.clone());
    let handle = clock.clone();
    let guarded = GuardedNotebook::with_expeditor(Notebook::default(), move |b| {
        b.clock(handle)
            .jitter_seed(2026)
            .observer(move |event: &Event| {
                observer_lines
                    .lock()
                    .unwrap()
                    .push(format!("{}  event: {event}", observer_stamp()));
            })
    });
    let expeditor = guarded.expeditor().clone();
    expeditor.run_as_service();
    let say = |line: String| lines.lock().unwrap().push(format!("{}  {line}", stamp()));
    let offer = |say: &dyn Fn(String)| {
        let offered: Vec<String> = guarded
            .offered()
            .iter()
            .map(|d| {
                if d.description.starts_with("[ON PROBATION") {
                    format!("{} (on probation)", d.name)
                } else {
                    d.name.clone()
                }
            })
            .collect();
        say(format!("tools/list: [{}]", offered.join(", ")));
    };
    let call = |say: &dyn Fn(String), tool: &str, args: serde_json::Value| {
        let reply = common::block_on(guarded.dispatch(tool, args));
        say(format!(
            "call {tool} -> {}",
            if reply.is_error() { "isError" } else { "ok" }
        ));
        say(format!("  text: {}", reply.text().replace('\n', " / ")));
    };
    let grep = || json!({ "pattern": "Deploy" });
    let advance = |secs: u64| clock.advance(Duration::from_secs(secs));

    offer(&say);
    guarded.toolbox().faults.break_tool("grep", Some(3));
    for _ in 0..3 {
        call(&say, "grep", grep());
    }
    offer(&say);
    advance(3);
    expeditor.tick();
    offer(&say);
    advance(2);
    expeditor.tick();
    offer(&say);
    call(&say, "grep", grep());
    offer(&say);
    // Scattered failures of three tools, none opening a circuit, spend the budget.
    for tool in ["grep", "read", "count_words"] {
        guarded.toolbox().faults.break_tool(tool, Some(2));
    }
    let args = |tool: &str| match tool {
        "read" => json!({ "path": "notes/deploy.md" }),
        "count_words" => json!({ "text": "one two" }),
        _ => grep(),
    };
    advance(60);
    for tool in ["grep", "read", "count_words"] {
        for _ in 0..2 {
            call(&say, tool, args(tool));
            advance(1);
        }
    }
    offer(&say);
    // The instant the pause said, as the server's timer would tick.
    advance(54);
    expeditor.tick();
    offer(&say);
    let transcript = lines.lock().unwrap().join("\n");
    common::assert_golden("b15_service_transcript.txt", &transcript);
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/transcripts.md"))
        .expect("docs/transcripts.md");
    assert!(
        page.contains(&format!("```text\n{transcript}\n```")),
        "docs/transcripts.md's \"A service that heals by itself\" shows \
         tests/golden/b15_service_transcript.txt word for word: paste it in again"
    );
}

#[cfg(feature = "mcp")]
#[path = "../../examples/mcp_server/notes.rs"]
#[allow(
    dead_code,
    reason = "the example's toolbox, shared; not every item is used here"
)]
mod notes;

#[cfg(feature = "mcp")]
mod mcp {
    //! Over MCP: a tool that opened and then mended comes back to a client that never calls
    //! what it is not offered, with `list_changed`, sent by the server's timer.

    use std::sync::Arc;
    use std::time::Duration;

    use super::notes::{GuardedNotebook, Notebook};
    use agent_circuit_breaker::clock::{ManualClock, Timestamp};
    use agent_circuit_breaker::mcp::{McpServer, rmcp};
    use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig};
    use rmcp::service::{NotificationContext, RoleClient, RunningService};
    use rmcp::{ClientHandler, ServiceExt as _};
    use serde_json::json;
    use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

    #[derive(Clone)]
    struct Watcher(UnboundedSender<()>);

    impl ClientHandler for Watcher {
        fn get_info(&self) -> ClientConfig {
            ClientConfig::default()
        }

        async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
            let _ = self.0.send(());
        }
    }

    type Client = RunningService<RoleClient, Watcher>;

    async fn listed(client: &Client) -> Vec<(String, String)> {
        let tools = client.list_all_tools().await.expect("tools/list");
        tools
            .into_iter()
            .map(|t| {
                (
                    t.name.to_string(),
                    t.description.unwrap_or_default().to_string(),
                )
            })
            .collect()
    }

    async fn call(client: &Client, tool: &str) -> CallToolResult {
        call_with(client, tool, json!({ "pattern": "Deploy" })).await
    }

    fn args(tool: &str) -> serde_json::Value {
        match tool {
            "read" => json!({ "path": "notes/deploy.md" }),
            "count_words" => json!({ "text": "one two" }),
            _ => json!({ "pattern": "Deploy" }),
        }
    }

    async fn call_with(
        client: &Client,
        tool: &str,
        arguments: serde_json::Value,
    ) -> CallToolResult {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = arguments.as_object().cloned();
        client.call_tool(params).await.expect("tools/call")
    }

    async fn told(changes: &mut UnboundedReceiver<()>) {
        tokio::time::timeout(Duration::from_secs(10), changes.recv())
            .await
            .expect("list_changed within 10 s")
            .expect("open channel");
    }

    /// The example's toolbox served in process on a manual clock, and a client that counts
    /// `list_changed`.
    async fn serve() -> (
        ManualClock,
        Arc<GuardedNotebook>,
        Client,
        UnboundedReceiver<()>,
    ) {
        let clock = ManualClock::new(Timestamp::from_secs(1_796_024_103));
        let handle = clock.clone();
        let guarded = Arc::new(GuardedNotebook::with_expeditor(Notebook::default(), |b| {
            b.clock(handle).jitter_seed(1)
        }));
        let server = McpServer::shared(Arc::clone(&guarded)).name("notebook");
        let (server_end, client_end) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            if let Ok(running) = server.serve(server_end).await {
                let _ = running.waiting().await;
            }
        });
        let (tx, changes) = unbounded_channel();
        let client = Watcher(tx).serve(client_end).await.expect("initialize");
        (clock, guarded, client, changes)
    }

    #[tokio::test]
    async fn b15_a_mended_tool_comes_back_on_probation_with_list_changed_and_no_call() {
        let (clock, guarded, client, mut changes) = serve().await;

        guarded.toolbox().faults.break_tool("grep", None);
        for _ in 0..3 {
            assert_eq!(call(&client, "grep").await.is_error, Some(true));
        }
        told(&mut changes).await;
        let names: Vec<String> = listed(&client).await.into_iter().map(|t| t.0).collect();
        assert_eq!(names, ["read", "count_words"]);

        // Mended; the client calls nothing. The server's cool-down (5 s by default, shortened
        // by jitter) passes: grep is offered again on probation, and the client is told.
        guarded.toolbox().faults.heal("grep");
        clock.advance(Duration::from_secs(5));
        told(&mut changes).await;
        let tools = listed(&client).await;
        let grep = tools
            .iter()
            .find(|t| t.0 == "grep")
            .expect("grep offered again");
        assert!(grep.1.starts_with("[ON PROBATION"), "{}", grep.1);

        // The model's next call is the probe: it succeeds, grep is CLOSED and plain again.
        let result = call(&client, "grep").await;
        assert_eq!(result.is_error, Some(false));
        told(&mut changes).await;
        let tools = listed(&client).await;
        let grep = tools.iter().find(|t| t.0 == "grep").expect("grep offered");
        assert!(!grep.1.contains("PROBATION"), "{}", grep.1);
        client.cancel().await.expect("close");
    }

    #[tokio::test]
    async fn b15_scattered_failures_no_longer_darken_a_server_for_good() {
        let (clock, guarded, client, mut changes) = serve().await;
        // Three tools each fail twice and then work again: no circuit opens, but the fifth
        // failure spends the budget of 5.
        for tool in ["grep", "read", "count_words"] {
            guarded.toolbox().faults.break_tool(tool, Some(2));
        }
        for tool in ["grep", "read", "count_words"] {
            for _ in 0..2 {
                let result = call_with(&client, tool, args(tool)).await;
                assert_eq!(result.is_error, Some(true), "{tool} is broken");
                clock.advance(Duration::from_secs(1));
            }
        }
        told(&mut changes).await;
        assert!(listed(&client).await.is_empty(), "paused: nothing offered");
        // The window (60 s by default) frees room: offered again, the client told.
        clock.advance(Duration::from_secs(60));
        told(&mut changes).await;
        assert_eq!(listed(&client).await.len(), 3);
        assert_eq!(call(&client, "grep").await.is_error, Some(false));
        client.cancel().await.expect("close");
    }
}
