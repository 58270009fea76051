//! Stress: many threads × many calls on one shared expeditor, each call a seeded
//! random success, failure (with a category) or cancellation, then the invariants the model
//! test checks one operation at a time, checked here after the run and, where they can be
//! read consistently, all along it:
//!
//! - the budget is never above its limit and equals the charged ledger lines (a monitor thread
//!   reads it over and over during the run; R7);
//! - at most one PROBE ticket alive per tool at any moment (R3.6): each thread counts the probe
//!   tickets it holds in a per-tool atomic, incremented after the grant and decremented before
//!   the outcome is recorded, so a second grant while one is alive shows as a count of 2;
//! - nothing lost: every failure a thread reported is in its tool's `total_failures`, and in
//!   the ledger of its cycle (the rounds test closes each cycle between two barriers, so the
//!   ledger lines of the round can be counted exactly: one per failure, plus one line per
//!   systemic event);
//! - after every ticket is dropped no tool is left HALF-OPEN with a probe in flight, and the
//!   next decide on a HALF-OPEN tool gets the probe.
//!
//! Figures (debug build, 2 cores): `stress_rounds_nothing_lost` runs 8 threads × 50 rounds ×
//! 2000 calls = 800,000 decisions; `stress_with_concurrent_cycles_and_recoveries` runs
//! 8 threads × 50,000 operations = 400,000, about 1 in 16 of them a new cycle, a confirmed
//! recovery or a step. Each prints its figures with `--nocapture`.

#[path = "../common/mod.rs"]
mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;

use agent_circuit_breaker::{
    CircuitState, Decision, Expeditor, Failure, FailureCategory, PauseReason, Policy, SkipReason,
    event::Event, expeditor::ToolId,
};
use common::{SEED_TOOLS, clock, seed_map};

/// xorshift64*: a seeded, per-thread source of choices.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        (self.next() >> 33) % n
    }
}

const TOOLS: usize = SEED_TOOLS.len();

/// What the threads report, summed.
#[derive(Default)]
struct Tally {
    failures: [AtomicU64; TOOLS],
    successes: AtomicU64,
    cancels: AtomicU64,
    calls: AtomicU64,
    probes: AtomicU64,
    skips: AtomicU64,
    /// Skips because another caller held the probe: racing callers met a live probe.
    probe_in_flight_skips: AtomicU64,
    pauses: AtomicU64,
    /// Probe tickets alive now, per tool.
    live_probes: [AtomicUsize; TOOLS],
    /// The most probe tickets ever alive at once for one tool.
    max_live_probes: AtomicUsize,
    /// Ledger lines counted between rounds: failures, systemic events.
    failure_lines: AtomicU64,
    event_lines: AtomicU64,
    violations: Mutex<Vec<String>>,
}

impl Tally {
    fn violation(&self, what: String) {
        let mut v = self.violations.lock().unwrap();
        if v.len() < 20 {
            v.push(what);
        }
    }

    fn total_failures(&self) -> u64 {
        self.failures.iter().map(|f| f.load(Ordering::SeqCst)).sum()
    }
}

fn category(rng: &mut Rng, shared: bool) -> FailureCategory {
    if shared {
        [
            FailureCategory::Network,
            FailureCategory::Timeout,
            FailureCategory::Other,
        ][usize::try_from(rng.below(3)).unwrap()]
    } else {
        FailureCategory::Other
    }
}

/// What one call came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Came {
    Failed,
    Other,
    Paused(PauseReason),
}

/// One call the way an executor makes it: decide, then (for a ticket) a random outcome.
fn one_call(
    expeditor: &Expeditor,
    rng: &mut Rng,
    tally: &Tally,
    fail_percent: u64,
    shared_categories: bool,
) -> Came {
    let tool = usize::try_from(rng.below(TOOLS as u64)).unwrap();
    let id = ToolId::from_index(u32::try_from(tool).unwrap());
    let (ticket, probe) = match expeditor.decide(id) {
        Decision::Call(ticket) => (ticket, false),
        Decision::Probe(ticket) => (ticket, true),
        Decision::Skip(skip) => {
            tally.skips.fetch_add(1, Ordering::Relaxed);
            if skip.reason() == SkipReason::ProbeInFlight {
                tally.probe_in_flight_skips.fetch_add(1, Ordering::Relaxed);
            }
            return Came::Other;
        }
        Decision::Pause(pause) => {
            tally.pauses.fetch_add(1, Ordering::Relaxed);
            return Came::Paused(pause.reason());
        }
    };
    tally.calls.fetch_add(1, Ordering::Relaxed);
    if probe {
        tally.probes.fetch_add(1, Ordering::Relaxed);
        let live = tally.live_probes[tool].fetch_add(1, Ordering::SeqCst) + 1;
        tally.max_live_probes.fetch_max(live, Ordering::SeqCst);
        if live > 1 {
            tally.violation(format!("{live} probe tickets alive at once for {tool}"));
        }
        // Hold the probe a little, so that racing callers meet it.
        for _ in 0..rng.below(64) {
            std::hint::spin_loop();
        }
        if rng.below(4) == 0 {
            thread::yield_now();
        }
        tally.live_probes[tool].fetch_sub(1, Ordering::SeqCst);
    }
    let roll = rng.below(100);
    if roll < fail_percent {
        let category = category(rng, shared_categories);
        let failure = Failure::with_category("stress failure", category);
        let _ = ticket.failure(failure);
        tally.failures[tool].fetch_add(1, Ordering::SeqCst);
        Came::Failed
    } else if roll < 90 {
        ticket.success();
        tally.successes.fetch_add(1, Ordering::Relaxed);
        Came::Other
    } else {
        ticket.cancel();
        tally.cancels.fetch_add(1, Ordering::Relaxed);
        Came::Other
    }
}

/// The budget's invariants, read under one lock.
fn check_budget(expeditor: &Expeditor, tally: &Tally) {
    let budget = expeditor.budget();
    // The ledger keeps at most `LEDGER_LINES` lines; the rest are counted (R7.1).
    let charged = budget.ledger().iter().filter(|e| e.charged).count()
        + usize::try_from(budget.dropped().charged).unwrap();
    if budget.consumed() > budget.limit() {
        tally.violation(format!(
            "budget exceeded: {} / {}",
            budget.consumed(),
            budget.limit()
        ));
    }
    if usize::try_from(budget.consumed()).unwrap() != charged {
        tally.violation(format!(
            "consumed {} but {charged} charged ledger lines",
            budget.consumed()
        ));
    }
}

/// Reads the budget until `done`, checking its invariants; returns how many reads.
fn monitor(expeditor: &Expeditor, tally: &Tally, done: &AtomicBool) -> u64 {
    let mut reads = 0;
    while !done.load(Ordering::SeqCst) {
        check_budget(expeditor, tally);
        reads += 1;
        thread::yield_now();
    }
    reads
}

/// With no ticket alive: no probe in flight anywhere, every tool's failures all counted, and
/// (once calls are allowed again) every HALF-OPEN tool gives its probe to the next decide.
fn check_quiescent(expeditor: &Expeditor, tally: &Tally) {
    for (tool, name) in SEED_TOOLS.iter().enumerate() {
        let id = ToolId::from_index(u32::try_from(tool).unwrap());
        let record = expeditor.breaker(id).unwrap();
        if record.probe_in_flight() {
            tally.violation(format!("{name} has a probe in flight with no ticket alive"));
        }
        let reported = tally.failures[tool].load(Ordering::SeqCst);
        if record.total_failures() != reported {
            tally.violation(format!(
                "{name}: {} failures recorded, {reported} reported",
                record.total_failures()
            ));
        }
    }
    expeditor.confirm_recovery();
    expeditor.new_cycle();
    for (tool, name) in SEED_TOOLS.iter().enumerate() {
        let id = ToolId::from_index(u32::try_from(tool).unwrap());
        if expeditor.state(id) == Some(CircuitState::HalfOpen) {
            match expeditor.decide(id) {
                Decision::Probe(ticket) => ticket.cancel(),
                other => tally.violation(format!(
                    "{name} HALF-OPEN with no ticket alive, but decide gives {}",
                    other.kind()
                )),
            }
        }
    }
}

fn stress_policy(budget: u32) -> Policy {
    Policy::builder()
        .threshold(3)
        .budget(budget)
        .probe_every(2)
        .build()
        .unwrap()
}

fn report(name: &str, tally: &Tally, extra: &str, started: std::time::Instant) {
    eprintln!(
        "{name}: {} tickets ({} probes, max {} alive per tool, {} callers skipped while \
         one was alive), {} failures, {} successes, {} cancels, {} skips, {} pauses; {extra}; \
         {:?}",
        tally.calls.load(Ordering::SeqCst),
        tally.probes.load(Ordering::SeqCst),
        tally.max_live_probes.load(Ordering::SeqCst),
        tally.probe_in_flight_skips.load(Ordering::SeqCst),
        tally.total_failures(),
        tally.successes.load(Ordering::SeqCst),
        tally.cancels.load(Ordering::SeqCst),
        tally.skips.load(Ordering::SeqCst),
        tally.pauses.load(Ordering::SeqCst),
        started.elapsed()
    );
    let violations = tally.violations.lock().unwrap();
    assert!(violations.is_empty(), "{name}: {violations:#?}");
}

/// Rounds closed by barriers: within a round 8 threads race; between rounds, with no ticket
/// alive, the round's ledger is counted line by line against what the threads reported, then
/// recovery is confirmed and a new cycle starts.
#[test]
fn stress_rounds_nothing_lost() {
    const THREADS: usize = 8;
    const ROUNDS: usize = 50;
    const CALLS: usize = 2000;
    let started = std::time::Instant::now();
    let systemic = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&systemic);
    let expeditor = Expeditor::builder(seed_map())
        .policy(stress_policy(1000))
        .clock(clock())
        .observer(move |event: &Event| {
            if matches!(event, Event::Systemic { .. }) {
                seen.fetch_add(1, Ordering::SeqCst);
            }
        })
        .build()
        .unwrap();
    let tally = Tally::default();
    let round_failures = AtomicU64::new(0);
    let barrier = Barrier::new(THREADS);
    let done = AtomicBool::new(false);
    let reads = thread::scope(|s| {
        let monitor = s.spawn(|| monitor(&expeditor, &tally, &done));
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (expeditor, tally, barrier) = (&expeditor, &tally, &barrier);
                let (round_failures, systemic) = (&round_failures, &*systemic);
                s.spawn(move || {
                    let mut rng = Rng::new(0x5EED_0000 + t as u64);
                    for _ in 0..ROUNDS {
                        let mut failures = 0;
                        for call in 0..CALLS {
                            match one_call(expeditor, &mut rng, tally, 30, t % 2 == 0) {
                                Came::Failed => failures += 1,
                                // Someone confirms recovery now and then; the ledger of the
                                // cycle stays whole (only a new cycle resets it).
                                Came::Paused(PauseReason::Systemic { .. })
                                    if rng.below(16) == 0 =>
                                {
                                    expeditor.confirm_recovery();
                                }
                                _ => {}
                            }
                            if t == 0 && call % 16 == 15 {
                                expeditor.advance_step();
                            }
                        }
                        round_failures.fetch_add(failures, Ordering::SeqCst);
                        if barrier.wait().is_leader() {
                            check_round(expeditor, tally, round_failures, systemic);
                            check_quiescent(expeditor, tally);
                        }
                        barrier.wait();
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
        done.store(true, Ordering::SeqCst);
        monitor.join().unwrap()
    });
    check_budget(&expeditor, &tally);
    report(
        "stress_rounds_nothing_lost",
        &tally,
        &format!(
            "{reads} budget reads by the monitor; ledger lines counted between rounds: {} \
             failures, {} systemic events",
            tally.failure_lines.load(Ordering::SeqCst),
            tally.event_lines.load(Ordering::SeqCst)
        ),
        started,
    );
    assert_eq!(
        tally.failure_lines.load(Ordering::SeqCst),
        tally.total_failures(),
        "every reported failure has its ledger line"
    );
}

/// Counts the round's ledger: one line per reported failure, one per systemic event. Resets
/// the counters for the next round.
fn check_round(
    expeditor: &Expeditor,
    tally: &Tally,
    round_failures: &AtomicU64,
    systemic: &AtomicUsize,
) {
    check_budget(expeditor, tally);
    let budget = expeditor.budget();
    // Kept lines and the lines the bounded ledger only counted (R7.1).
    let dropped = budget.dropped();
    let failure_lines = budget
        .ledger()
        .iter()
        .filter(|e| SEED_TOOLS.contains(&e.tool.as_str()))
        .count()
        + usize::try_from(dropped.lines - dropped.events).unwrap();
    let event_lines = budget.ledger().iter().filter(|e| e.event).count()
        + usize::try_from(dropped.events).unwrap();
    assert_eq!(
        u64::try_from(budget.ledger().len()).unwrap() + dropped.lines,
        budget.failures()
    );
    let reported = round_failures.swap(0, Ordering::SeqCst);
    if failure_lines as u64 != reported {
        tally.violation(format!(
            "{failure_lines} failure lines in the ledger, {reported} failures reported"
        ));
    }
    let events = systemic.swap(0, Ordering::SeqCst);
    if event_lines != events {
        tally.violation(format!(
            "{event_lines} event lines in the ledger, {events} systemic events"
        ));
    }
    tally
        .failure_lines
        .fetch_add(failure_lines as u64, Ordering::SeqCst);
    tally
        .event_lines
        .fetch_add(event_lines as u64, Ordering::SeqCst);
}

/// No barriers: 8 threads call, and now and then start a new cycle, confirm recovery or
/// advance the step themselves, with a small budget and shared failure categories (pending
/// failures, systemic events, budget pauses, new cycles all racing). Nothing lost is checked
/// on the breakers' lifetime counts; the budget all along by the monitor.
#[test]
fn stress_with_concurrent_cycles_and_recoveries() {
    const THREADS: usize = 8;
    const CALLS: usize = 50_000;
    let started = std::time::Instant::now();
    let expeditor = Expeditor::builder(seed_map())
        .policy(stress_policy(5))
        .clock(clock())
        .build()
        .unwrap();
    let tally = Tally::default();
    let done = AtomicBool::new(false);
    let moves = AtomicU64::new(0);
    let reads = thread::scope(|s| {
        let monitor = s.spawn(|| monitor(&expeditor, &tally, &done));
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (expeditor, tally, moves) = (&expeditor, &tally, &moves);
                s.spawn(move || {
                    let mut rng = Rng::new(0xFACE_0000 + t as u64);
                    for _ in 0..CALLS {
                        match rng.below(64) {
                            0 => {
                                expeditor.new_cycle();
                                moves.fetch_add(1, Ordering::Relaxed);
                            }
                            1 => {
                                expeditor.confirm_recovery();
                                moves.fetch_add(1, Ordering::Relaxed);
                            }
                            2 | 3 => {
                                expeditor.advance_step();
                                moves.fetch_add(1, Ordering::Relaxed);
                            }
                            _ => {
                                one_call(expeditor, &mut rng, tally, 40, true);
                            }
                        }
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
        done.store(true, Ordering::SeqCst);
        monitor.join().unwrap()
    });
    check_budget(&expeditor, &tally);
    check_quiescent(&expeditor, &tally);
    report(
        "stress_with_concurrent_cycles_and_recoveries",
        &tally,
        &format!(
            "{reads} budget reads by the monitor, {} cycle/recovery/step moves",
            moves.load(Ordering::SeqCst)
        ),
        started,
    );
}
