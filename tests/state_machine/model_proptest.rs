//! Model-based property tests: random sequences of operations — decide, then
//! record a success, record a failure with a category, drop the ticket (a cancellation) or
//! hold it for later; advance the step; start a new cycle; confirm recovery — over 3 to 5 tools
//! with alternatives (always the cycle Grep <-> Read), run against the expeditor, against the
//! engine driven directly (`agent_circuit_breaker::__engine::EngineDriver`, the state
//! machine as a plain value with no lock, its commands given the step and the time, and the
//! expeditor's lock-free paths emulated on it — see below) and against a small reference model
//! written from the requirements (`docs/requirements.md`):
//!
//! - R3: CLOSED -> OPEN at the threshold of consecutive failures; a probe is due every N
//!   attempts (or steps) after opening, OPEN -> HALF-OPEN; exactly one probe at a time, and a
//!   dropped probe frees the slot; HALF-OPEN -> CLOSED on a successful probe, -> OPEN on a
//!   failed one. A late CALL (issued before the circuit left CLOSED) counts its failure but only
//!   the live probe moves a HALF-OPEN circuit.
//! - R4: a SKIP's routes are the alternatives with low degradation, then high (unknown counts
//!   as high), passing over OPEN ones, then the fallback, then scope reduction; each listed
//!   once, also when tools are each other's alternatives.
//! - R7: each failure is written down and charged while budget is left; at the budget every
//!   call pauses until a new cycle; the budget is never exceeded; the ledger keeps every
//!   failure (uncharged ones too).
//! - R9: only circuits whose whole current run is infrastructure failures (network,
//!   filesystem, permission) correlate; among them a second circuit opening with the category
//!   of one not CLOSED that last failed within the cascade window, or 3 circuits opening
//!   within the window, is one systemic event (tool-local categories — timeout, not found,
//!   other — never correlate, R9.6): every call pauses until
//!   `confirm_recovery`, the involved tools' runs are folded into one ledger line charged once
//!   (R9.4), failures during the event join it uncharged, and afterwards probes back off
//!   (R9.5: base, 2 base, 4 base, ... capped, and along a chain of tools routing to each other
//!   the intervals share the cap). Where the requirements leave the charging of a failure
//!   that *may* belong to an event open, the model follows the crate's documented rule
//!   (`cascade` module): a failure of a CLOSED tool whose infrastructure category matches that
//!   of a circuit not CLOSED (the category its current run shares) which last failed within the
//!   window is held uncharged ("pending") and charged if its tool recovers instead.
//!
//! After every operation the decision (kind, skip reason, routes, pause reason, probe or call),
//! the recorded outcome, every breaker (state, consecutive and total failures, run of
//! categories, step opened, attempts, probe in flight), the budget (consumed, limit, every
//! ledger line and its flags), the pause and the systemic event are compared with the model,
//! for the expeditor and for the engine alike (one comparison, `Case::check_party`), and the
//! invariants are checked: consumed <= limit and equal to the charged lines; at most one live
//! probe ticket per tool, matching the breaker's probe in flight. The engine and the expeditor
//! are also compared with each other where the model says nothing: whole records (last failure
//! and success, backoff, attempts also when counted in steps), the whole `Recorded`, the
//! recovered systemic event, and every event the expeditor's observer saw, in order. At the
//! end every held ticket is dropped, and then every tool is asked once more: a HALF-OPEN tool
//! with no live probe must give the probe (never stuck). The engine's snapshot must equal the
//! expeditor's, and a snapshot restored into a fresh expeditor must give the same snapshot.
//!
//! The engine driver makes the expeditor's decisions one to one, reading the engine's state
//! where the expeditor reads its mirror: CALL on the healthy path without the engine; on an
//! OPEN tool, not gated and not backing off after a cascade, the lock-free rejection path
//! counts the attempt and skips without the engine until a probe is due; a backing-off or
//! gated OPEN tool, a pause and a deferred sub-task go to the engine. It keeps the mirror's
//! two cells (the attempts of an OPEN tool, reset when the engine says so, and the last
//! success). Both properties check that the rejection path and the backing-off case are
//! reached.
//!
//! Two properties: `model_uncorrelated` gives each tool its own failure category (or `other`),
//! so categories never correlate and only the window rule of R9 can fire, and only for the
//! tools whose own category is an infrastructure one (3000 cases); `model_cascades` draws
//! categories from {network, filesystem, not found, other} so that circuits correlate, failures
//! are held pending, and shared tool-local categories are seen not to correlate (2000 cases). `PROPTEST_CASES` overrides both; the
//! cases are seeded (the same in every CI run) and `PROPTEST_SEED=<n>` explores others.
//! `model_uncorrelated` found one difference between the expeditor and the model (backoff
//! shares computed after a held probe closed, instead of at the confirmed recovery), fixed in
//! the crate and pinned as `regression_shares_are_fixed_at_the_confirmed_recovery`. A
//! deviation from the requirements that the model once shared with the crate (failed probes
//! held "pending" instead of charged) was fixed in both and is pinned as
//! `failed_probes_after_a_confirmed_recovery_are_charged`.

#[path = "../common/mod.rs"]
mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use agent_circuit_breaker::__engine::{
    BreakerRecord, Budget, EngineDriver, Path, Recorded, SystemicEvent, Verdict,
};
use agent_circuit_breaker::{
    AlternativeSpec, CapabilityMap, CircuitState, Decision, Degradation, Expeditor, Failure,
    FailureCategory, PauseReason, Policy, Route, SkipReason, ToolSpec,
    capability::Severity,
    expeditor::{Ticket, ToolId},
    policy::ProbeUnit,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

const NAMES: [&str; 5] = ["Grep", "Read", "Bash", "Write", "Edit"];

/// Each tool's own category in `model_uncorrelated`: no two tools share one.
const OWN_CATEGORY: [FailureCategory; 5] = [
    FailureCategory::Network,
    FailureCategory::Filesystem,
    FailureCategory::Permission,
    FailureCategory::Timeout,
    FailureCategory::NotFound,
];

/// The categories of `model_cascades`: shared between tools, so circuits correlate (the
/// infrastructure ones) or must not (the tool-local ones).
const SHARED_CATEGORY: [FailureCategory; 4] = [
    FailureCategory::Network,
    FailureCategory::Filesystem,
    FailureCategory::NotFound,
    FailureCategory::Other,
];

const RUN_MEMORY: usize = 16;

// ---------------------------------------------------------------------------------------------
// What is generated
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct ToolSetup {
    /// Alternatives as (tool index, severity 0 low / 1 high / 2 unknown); entries naming the
    /// tool itself, a tool beyond the map or an earlier entry are dropped when the map is built.
    alternatives: Vec<(usize, u8)>,
    threshold: Option<u32>,
    probe_every: Option<u32>,
}

#[derive(Debug, Clone)]
struct Setup {
    tools: usize,
    threshold: u32,
    budget: u32,
    probe_every: u32,
    steps: bool,
    window: u64,
    cap: u32,
    /// Cascade detection on (R9.2) or off (every breaker independent, R9.6).
    detection: bool,
    per_tool: Vec<ToolSetup>,
}

#[derive(Debug, Clone, Copy)]
enum Outcome {
    Success,
    /// A failure; the byte picks its category.
    Failure(u8),
    Cancel,
}

#[derive(Debug, Clone, Copy)]
enum Op {
    /// Decide for a tool (the byte picks it; 15 mod 16 is an id no tool has), then act on a
    /// CALL or PROBE at once, or hold the ticket.
    Decide {
        tool: u8,
        then: Option<Outcome>,
    },
    /// Act on a held ticket (the byte picks which).
    Resolve {
        slot: u8,
        outcome: Outcome,
    },
    Advance,
    NewCycle,
    Confirm,
}

fn tool_setup() -> impl Strategy<Value = ToolSetup> {
    (
        prop::collection::vec((0..5usize, 0..3u8), 0..=3),
        prop::option::weighted(0.3, 1..=3u32),
        prop::option::weighted(0.3, 1..=4u32),
    )
        .prop_map(|(alternatives, threshold, probe_every)| ToolSetup {
            alternatives,
            threshold,
            probe_every,
        })
}

fn setup() -> impl Strategy<Value = Setup> {
    (
        3..=5usize,
        1..=3u32,
        1..=12u32,
        1..=3u32,
        any::<bool>(),
        0..=3u64,
        1..=20u32,
        prop::bool::weighted(0.85),
        prop::collection::vec(tool_setup(), 5),
    )
        .prop_map(
            |(tools, threshold, budget, probe_every, steps, window, cap, detection, per_tool)| {
                Setup {
                    tools,
                    threshold,
                    budget,
                    probe_every,
                    steps,
                    window,
                    cap,
                    detection,
                    per_tool,
                }
            },
        )
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        3 => Just(Outcome::Success),
        5 => any::<u8>().prop_map(Outcome::Failure),
        1 => Just(Outcome::Cancel),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        16 => (any::<u8>(), outcome()).prop_map(|(tool, o)| Op::Decide { tool, then: Some(o) }),
        3 => any::<u8>().prop_map(|tool| Op::Decide { tool, then: None }),
        3 => (any::<u8>(), outcome()).prop_map(|(slot, outcome)| Op::Resolve { slot, outcome }),
        4 => Just(Op::Advance),
        1 => Just(Op::NewCycle),
        1 => Just(Op::Confirm),
    ]
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 1..100)
}

// ---------------------------------------------------------------------------------------------
// The map and policy a setup describes
// ---------------------------------------------------------------------------------------------

fn severity(code: u8) -> Severity {
    match code {
        0 => Severity::Low,
        1 => Severity::High,
        _ => Severity::Unknown,
    }
}

impl Setup {
    /// The resolved alternatives of tool `i`: Grep and Read always name each other first (a
    /// cycle), then the generated ones that are legal.
    fn alternatives(&self, i: usize) -> Vec<(usize, Severity)> {
        let mut alts: Vec<(usize, Severity)> = Vec::new();
        let first = self.per_tool[i].alternatives.first().map_or(0, |a| a.1);
        match i {
            0 => alts.push((1, severity(first))),
            1 => alts.push((0, severity(first))),
            _ => {}
        }
        for &(to, sev) in &self.per_tool[i].alternatives {
            if to != i && to < self.tools && !alts.iter().any(|a| a.0 == to) {
                alts.push((to, severity(sev)));
            }
        }
        alts
    }

    fn map(&self) -> CapabilityMap {
        (0..self.tools).fold(CapabilityMap::new(), |map, i| {
            let mut spec = ToolSpec::new(NAMES[i])
                .provides(format!("what {} does", NAMES[i]))
                .fallback(format!("ask the user to do what {} does", NAMES[i]));
            for (to, sev) in self.alternatives(i) {
                let degradation = match sev {
                    Severity::Low => Degradation::low("a little"),
                    Severity::High => Degradation::high("a lot"),
                    Severity::Unknown => Degradation::unknown(),
                };
                spec = spec.alternative(
                    AlternativeSpec::new(NAMES[to])
                        .method("instead")
                        .degradation(degradation),
                );
            }
            if let Some(t) = self.per_tool[i].threshold {
                spec = spec.threshold(t);
            }
            if let Some(p) = self.per_tool[i].probe_every {
                spec = spec.probe_every(p);
            }
            map.tool(spec)
        })
    }

    fn policy(&self) -> Policy {
        Policy::builder()
            .threshold(self.threshold)
            .budget(self.budget)
            .probe_every(self.probe_every)
            .probe_unit(if self.steps {
                ProbeUnit::Steps
            } else {
                ProbeUnit::Attempts
            })
            .cascade_window(self.window)
            .backoff_cap(self.cap)
            .cascade_detection(self.detection)
            .build()
            .expect("a valid policy")
    }

    fn expeditor(&self) -> Expeditor {
        Expeditor::builder(self.map())
            .policy(self.policy())
            .clock(common::clock())
            .build()
            .expect("a valid map")
    }

    /// The expeditor, every event of it written to `log`.
    fn expeditor_observed(&self, log: &common::EventLog) -> Expeditor {
        Expeditor::builder(self.map())
            .policy(self.policy())
            .clock(common::clock())
            .observer(log.observer())
            .build()
            .expect("a valid map")
    }

    /// The engine, driven directly, over the same map and policy, its cycle starting when
    /// the expeditor's does.
    fn engine(&self) -> EngineDriver {
        EngineDriver::new(&self.map(), self.policy(), common::T0).expect("a valid map")
    }
}

fn message(category: FailureCategory) -> &'static str {
    match category {
        FailureCategory::Network => "connection refused",
        FailureCategory::Filesystem => "read-only file system",
        FailureCategory::Permission => "permission denied",
        FailureCategory::Timeout => "timed out",
        FailureCategory::NotFound => "no such file",
        FailureCategory::Other => "it broke",
        FailureCategory::InvalidInput => "invalid argument",
    }
}

// ---------------------------------------------------------------------------------------------
// The reference model
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct MTool {
    name: &'static str,
    alternatives: Vec<(usize, Severity)>,
    threshold: u32,
    probe_every: u32,
    state: CircuitState,
    consecutive: u32,
    total: u64,
    /// The categories of the current run of failures (the last 16).
    run: Vec<FailureCategory>,
    last_category: Option<FailureCategory>,
    /// The step of the last failure.
    last_failed: Option<u64>,
    opened_at: Option<u64>,
    attempts: u32,
    probe: bool,
    /// 0: no backoff; after a confirmed recovery 1, + 1 per failed probe (R9.5).
    backoff: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct MEntry {
    tool: String,
    charged: bool,
    pending: bool,
    systemic: bool,
}

#[derive(Debug, Clone)]
struct MEvent {
    involved: Vec<usize>,
    recovered: bool,
}

#[derive(Debug, Clone)]
struct Model {
    tools: Vec<MTool>,
    limit: u32,
    ledger: Vec<MEntry>,
    halt: Option<PauseReason>,
    event: Option<MEvent>,
    /// Circuits that opened (CLOSED -> OPEN) by infrastructure failures since the last event,
    /// with their step.
    openings: Vec<(usize, u64)>,
    step: u64,
    steps: bool,
    window: u64,
    cap: u32,
    detection: bool,
    /// Per tool, the longest chain of backing-off tools it belongs to, as of the last
    /// confirmed recovery: a tool that recovers afterwards only shortens chains, so the shares
    /// in force are kept until the next confirmation (R9.5).
    longest: Option<Vec<usize>>,
}

/// What the model says a decision is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Expect {
    Call,
    Probe,
    Skip(SkipReason, Vec<String>),
    Pause(PauseReason),
}

/// What the model says recording a failure returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MRecorded {
    state: CircuitState,
    consecutive: u32,
    opened: bool,
    consumed: u32,
    paused: bool,
}

impl Model {
    fn new(setup: &Setup) -> Self {
        let tools = (0..setup.tools)
            .map(|i| MTool {
                name: NAMES[i],
                alternatives: setup.alternatives(i),
                threshold: setup.per_tool[i].threshold.unwrap_or(setup.threshold),
                probe_every: setup.per_tool[i].probe_every.unwrap_or(setup.probe_every),
                state: CircuitState::Closed,
                consecutive: 0,
                total: 0,
                run: Vec::new(),
                last_category: None,
                last_failed: None,
                opened_at: None,
                attempts: 0,
                probe: false,
                backoff: 0,
            })
            .collect();
        Model {
            tools,
            limit: setup.budget,
            ledger: Vec::new(),
            halt: None,
            event: None,
            openings: Vec::new(),
            step: 0,
            steps: setup.steps,
            window: setup.window,
            cap: setup.cap,
            longest: None,
            detection: setup.detection,
        }
    }

    fn consumed(&self) -> u32 {
        u32::try_from(self.ledger.iter().filter(|e| e.charged).count()).unwrap()
    }

    fn event_active(&self) -> bool {
        self.event.as_ref().is_some_and(|e| !e.recovered)
    }

    /// The category an OPEN circuit shows: the one its whole current run shares (R9.1).
    fn category_of(&self, i: usize) -> Option<FailureCategory> {
        let run = &self.tools[i].run;
        let first = *run.first()?;
        run.iter().all(|c| *c == first).then_some(first)
    }

    /// Whether tool `i`'s whole current run is infrastructure failures: only such a circuit
    /// takes part in a systemic event (R9.2, R9.6).
    fn infrastructure_run(&self, i: usize) -> bool {
        let run = &self.tools[i].run;
        !run.is_empty() && run.iter().all(|c| c.is_infrastructure())
    }

    /// R9.2, same-category rule: the tools other than `i` not CLOSED whose run shares
    /// `category`, an infrastructure one, and that last failed within the window.
    fn partners(&self, i: usize, category: FailureCategory) -> Vec<usize> {
        if !category.is_infrastructure() {
            return Vec::new();
        }
        (0..self.tools.len())
            .filter(|&j| {
                j != i
                    && self.tools[j].state != CircuitState::Closed
                    && self.category_of(j) == Some(category)
                    && self.tools[j]
                        .last_failed
                        .is_some_and(|s| s + self.window >= self.step)
            })
            .collect()
    }

    /// R4.1: low alternatives, then high (unknown counts as high), passing over OPEN ones;
    /// then the fallback; then scope reduction.
    fn routes(&self, i: usize) -> Vec<String> {
        let tool = &self.tools[i];
        let mut routes = Vec::new();
        for high in [false, true] {
            for &(to, sev) in &tool.alternatives {
                if sev.is_high() == high && self.tools[to].state != CircuitState::Open {
                    routes.push(format!("alternative:{}", self.tools[to].name));
                }
            }
        }
        routes.push("fallback".to_owned());
        routes.push("scope".to_owned());
        routes
    }

    /// R9.5: after a confirmed recovery the interval doubles with each failed probe, capped;
    /// along a chain of tools that route to each other (each reached once) and are all backing
    /// off, each gets an equal share of the cap; never less than the tool's own interval.
    fn interval(&self, i: usize) -> u32 {
        let tool = &self.tools[i];
        let base = tool.probe_every;
        if tool.backoff == 0 {
            return base;
        }
        let own =
            (u64::from(base) << (tool.backoff - 1).min(40)).min(u64::from(self.cap.max(base)));
        let longest = self
            .longest
            .as_ref()
            .and_then(|l| l.get(i).copied())
            .filter(|&l| l > 0)
            .unwrap_or(1);
        let share = self.cap / u32::try_from(longest).unwrap();
        u32::try_from(own).unwrap().min(share.max(base))
    }

    /// For every tool, the size of the longest chain of backing-off tools it is part of.
    fn chain_lengths(&self) -> Vec<usize> {
        let backing_off =
            |j: usize| self.tools[j].backoff > 0 && self.tools[j].state != CircuitState::Closed;
        let chain = |head: usize| -> Vec<usize> {
            let mut seen = vec![head];
            let mut next = 0;
            while next < seen.len() {
                let at = seen[next];
                next += 1;
                for &(to, _) in &self.tools[at].alternatives {
                    if !seen.contains(&to) {
                        seen.push(to);
                    }
                }
            }
            seen.retain(|&j| backing_off(j));
            seen
        };
        let mut longest = vec![0; self.tools.len()];
        for c in (0..self.tools.len()).filter(|&h| backing_off(h)).map(chain) {
            for &j in &c {
                longest[j] = longest[j].max(c.len());
            }
        }
        longest
    }

    fn decide(&mut self, tool: Option<usize>) -> Expect {
        let Some(i) = tool else {
            return Expect::Skip(SkipReason::UnknownTool, vec!["scope".to_owned()]);
        };
        if let Some(reason) = self.halt {
            return Expect::Pause(reason);
        }
        let interval = self.interval(i);
        let step = self.step;
        let steps = self.steps;
        let t = &mut self.tools[i];
        match t.state {
            CircuitState::Closed => Expect::Call,
            CircuitState::Open => {
                t.attempts = t.attempts.saturating_add(1);
                let due = if steps {
                    step >= t.opened_at.unwrap_or(step) + u64::from(interval)
                } else {
                    t.attempts >= interval
                };
                if due {
                    t.state = CircuitState::HalfOpen;
                    t.probe = true;
                    Expect::Probe
                } else {
                    Expect::Skip(SkipReason::Open, self.routes(i))
                }
            }
            CircuitState::HalfOpen => {
                if t.probe {
                    Expect::Skip(SkipReason::ProbeInFlight, self.routes(i))
                } else {
                    t.probe = true;
                    Expect::Probe
                }
            }
        }
    }

    fn open(&mut self, i: usize) {
        let step = self.step;
        let t = &mut self.tools[i];
        t.state = CircuitState::Open;
        t.opened_at = Some(step);
        t.attempts = 0;
    }

    /// R7: the budget is spent: every call pauses (unless a pause is in force already).
    fn exhaust(&mut self) {
        let consumed = self.consumed();
        if self.halt.is_none() && consumed >= self.limit {
            self.halt = Some(PauseReason::BudgetExhausted {
                consumed,
                limit: self.limit,
            });
        }
    }

    fn fail(&mut self, i: usize, probe: bool, category: FailureCategory) -> MRecorded {
        let during = self.event_active();
        // Only a CLOSED tool's failure can open a circuit that starts an event; a failed probe
        // or a late call on an OPEN tool is charged as usual (R3.2). Held: a failure that may
        // yet correlate by category (R9.2).
        let pending = during
            || (self.detection
                && self.tools[i].state == CircuitState::Closed
                && !self.partners(i, category).is_empty());
        let charged = !pending && self.consumed() < self.limit;
        self.ledger.push(MEntry {
            tool: self.tools[i].name.to_owned(),
            charged,
            pending,
            systemic: false,
        });
        let exhausted_now = charged && self.consumed() == self.limit;
        if during {
            let event = self.event.as_mut().expect("active");
            if !event.involved.contains(&i) {
                event.involved.push(i);
            }
            let last = self.ledger.last_mut().expect("just pushed");
            *last = MEntry {
                systemic: true,
                pending: false,
                charged: false,
                ..last.clone()
            };
        }
        let t = &mut self.tools[i];
        t.consecutive += 1;
        t.total += 1;
        t.run.push(category);
        if t.run.len() > RUN_MEMORY {
            t.run.remove(0);
        }
        t.last_category = Some(category);
        t.last_failed = Some(self.step);
        let mut opened = false;
        if probe && t.state == CircuitState::HalfOpen {
            t.probe = false;
            if t.backoff > 0 {
                t.backoff += 1;
            }
            self.open(i);
            opened = true;
        } else if t.state == CircuitState::Closed && t.consecutive >= t.threshold {
            self.open(i);
            opened = true;
            if !during
                && self.detection
                && let Some(involved) = self.correlated(i)
            {
                self.start_event(involved);
            }
        }
        if exhausted_now {
            self.exhaust();
        }
        MRecorded {
            state: self.tools[i].state,
            consecutive: self.tools[i].consecutive,
            opened,
            consumed: self.consumed(),
            paused: self.halt.is_some(),
        }
    }

    /// R9.2: tool `i` just opened. Only a run of infrastructure failures correlates (R9.6):
    /// then a circuit not CLOSED with its category that last failed within the window, or 3
    /// such circuits opened within the window and still not CLOSED, is a systemic event.
    fn correlated(&mut self, i: usize) -> Option<Vec<usize>> {
        let (step, window) = (self.step, self.window);
        self.openings.retain(|&(t, s)| s + window >= step && t != i);
        if !self.infrastructure_run(i) {
            return None;
        }
        self.openings.push((i, step));
        if let Some(c) = self.category_of(i) {
            let mut involved = self.partners(i, c);
            if !involved.is_empty() {
                involved.push(i);
                return Some(involved);
            }
        }
        let recent: Vec<usize> = self
            .openings
            .iter()
            .map(|o| o.0)
            .filter(|&j| self.tools[j].state != CircuitState::Closed)
            .collect();
        (recent.len() >= 3).then_some(recent)
    }

    /// R9.2, R9.4: every call pauses; the involved tools' current runs are folded into one
    /// line, charged once.
    fn start_event(&mut self, involved: Vec<usize>) {
        for &j in &involved {
            let name = self.tools[j].name;
            let mut left = self.tools[j].consecutive;
            for entry in self.ledger.iter_mut().rev() {
                if left == 0 {
                    break;
                }
                if entry.tool == name && !entry.systemic {
                    left -= 1;
                    entry.charged = false;
                    entry.pending = false;
                    entry.systemic = true;
                }
            }
        }
        let names: Vec<&str> = involved.iter().map(|&j| self.tools[j].name).collect();
        let charged = self.consumed() < self.limit;
        self.ledger.push(MEntry {
            tool: names.join(", "),
            charged,
            pending: false,
            systemic: false,
        });
        let first = self.tools[involved[0]].last_category;
        let category = first.filter(|c| {
            involved
                .iter()
                .all(|&j| self.tools[j].last_category == Some(*c))
        });
        self.halt = Some(PauseReason::Systemic { category });
        self.openings.clear();
        self.event = Some(MEvent {
            involved,
            recovered: false,
        });
    }

    fn succeed(&mut self, i: usize, probe: bool) {
        let t = &mut self.tools[i];
        if probe && t.state == CircuitState::HalfOpen {
            t.probe = false;
            t.state = CircuitState::Closed;
            t.consecutive = 0;
            t.run.clear();
            t.opened_at = None;
            t.attempts = 0;
            t.backoff = 0;
        } else if t.state == CircuitState::Closed {
            t.consecutive = 0;
            t.run.clear();
        }
        let name = t.name;
        if t.state == CircuitState::Closed && t.consecutive == 0 {
            // Its held failures were its own after all: charged now.
            let mut exhausted = false;
            for k in 0..self.ledger.len() {
                if self.ledger[k].pending && self.ledger[k].tool == name {
                    self.ledger[k].pending = false;
                    let charged = self.consumed() < self.limit;
                    self.ledger[k].charged = charged;
                    exhausted |= charged && self.consumed() == self.limit;
                }
            }
            if exhausted {
                self.exhaust();
            }
        }
    }

    fn cancel(&mut self, i: usize, probe: bool) {
        if probe {
            self.tools[i].probe = false;
        }
    }

    fn new_cycle(&mut self) {
        self.ledger.clear();
        if matches!(self.halt, Some(PauseReason::BudgetExhausted { .. })) {
            self.halt = None;
        }
    }

    fn confirm(&mut self) -> bool {
        if !self.event_active() {
            return false;
        }
        let step = self.step;
        let involved = self.event.as_ref().expect("active").involved.clone();
        for j in involved {
            let t = &mut self.tools[j];
            if t.state != CircuitState::Closed {
                t.backoff = 1;
                t.opened_at = Some(step);
                t.attempts = 0;
            }
        }
        self.event.as_mut().expect("active").recovered = true;
        self.longest = Some(self.chain_lengths());
        if matches!(self.halt, Some(PauseReason::Systemic { .. })) {
            self.halt = None;
        }
        self.exhaust();
        true
    }
}

// ---------------------------------------------------------------------------------------------
// Running a case
// ---------------------------------------------------------------------------------------------

/// How often the interesting things happened, over all cases of a property.
#[derive(Default)]
struct Coverage {
    probes: AtomicUsize,
    closed_by_probe: AtomicUsize,
    reopened: AtomicUsize,
    budget_pauses: AtomicUsize,
    systemic: AtomicUsize,
    recoveries: AtomicUsize,
    pending: AtomicUsize,
    probe_in_flight_skips: AtomicUsize,
    late_failures: AtomicUsize,
    backoff_probes: AtomicUsize,
    operations: AtomicUsize,
    /// Decisions the engine driver made without the engine (the lock-free rejection path).
    lock_free_rejections: AtomicUsize,
    /// Decisions on an OPEN tool backing off after a cascade, which the rejection path
    /// leaves to the engine.
    backing_off_decides: AtomicUsize,
}

impl Coverage {
    fn bump(counter: &AtomicUsize) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    fn get(counter: &AtomicUsize) -> usize {
        counter.load(Ordering::Relaxed)
    }
}

fn describe(route: Route<'_>) -> String {
    match route {
        Route::Alternative(alt) => format!("alternative:{}", alt.name()),
        Route::Fallback(_) => "fallback".to_owned(),
        Route::ScopeReduction => "scope".to_owned(),
    }
}

struct Held<'a> {
    ticket: Ticket<'a>,
    tool: usize,
    /// The epoch of the engine driver's probe, when this is a probe.
    epoch: Option<u64>,
}

impl Held<'_> {
    fn probe(&self) -> bool {
        self.epoch.is_some()
    }
}

/// A party the model is compared with: the expeditor, or the engine driven directly.
trait Party {
    const NAME: &'static str;
    fn breaker(&self, tool: ToolId) -> Option<BreakerRecord>;
    fn budget(&self) -> Budget;
    fn paused(&self) -> Option<PauseReason>;
    fn systemic_event(&self) -> Option<SystemicEvent>;
    /// The attempts `record` (this party's record of `tool`) shows since its circuit opened.
    fn attempts(&self, tool: ToolId, record: &BreakerRecord) -> Option<u64>;
}

impl Party for Expeditor {
    const NAME: &'static str = "expeditor";
    fn breaker(&self, tool: ToolId) -> Option<BreakerRecord> {
        Expeditor::breaker(self, tool)
    }
    fn budget(&self) -> Budget {
        Expeditor::budget(self)
    }
    fn paused(&self) -> Option<PauseReason> {
        Expeditor::paused(self)
    }
    fn systemic_event(&self) -> Option<SystemicEvent> {
        Expeditor::systemic_event(self)
    }
    fn attempts(&self, _: ToolId, record: &BreakerRecord) -> Option<u64> {
        // The record has no getter for it: read it as a snapshot stores it.
        let json = serde_json::to_value(record).expect("serializable");
        json["attempts_since_open"].as_u64()
    }
}

impl Party for EngineDriver {
    const NAME: &'static str = "engine";
    fn breaker(&self, tool: ToolId) -> Option<BreakerRecord> {
        EngineDriver::breaker(self, tool)
    }
    fn budget(&self) -> Budget {
        EngineDriver::budget(self).clone()
    }
    fn paused(&self) -> Option<PauseReason> {
        EngineDriver::paused(self)
    }
    fn systemic_event(&self) -> Option<SystemicEvent> {
        EngineDriver::systemic_event(self).cloned()
    }
    fn attempts(&self, tool: ToolId, _: &BreakerRecord) -> Option<u64> {
        EngineDriver::attempts(self, tool).map(u64::from)
    }
}

struct Case<'a> {
    setup: &'a Setup,
    expeditor: &'a Expeditor,
    /// Every event the expeditor's observer saw since the last check.
    events: &'a common::EventLog,
    /// The engine, driven directly with the same operations.
    engine: EngineDriver,
    model: Model,
    held: Vec<Held<'a>>,
    correlated: bool,
    coverage: &'a Coverage,
}

/// At most this many tickets held at once; a hold beyond it is a cancellation.
const MAX_HELD: usize = 4;

/// What recording a failure returned, as the model sees it.
fn seen_recorded(got: &Recorded) -> MRecorded {
    MRecorded {
        state: got.state,
        consecutive: got.consecutive_failures,
        opened: got.opened,
        consumed: got.budget.consumed,
        paused: got.paused,
    }
}

impl<'a> Case<'a> {
    fn category(&self, tool: usize, byte: u8) -> FailureCategory {
        if self.correlated {
            SHARED_CATEGORY[usize::from(byte) % SHARED_CATEGORY.len()]
        } else if byte.is_multiple_of(2) {
            FailureCategory::Other
        } else {
            OWN_CATEGORY[tool]
        }
    }

    fn id(tool: usize) -> ToolId {
        ToolId::from_index(u32::try_from(tool).unwrap())
    }

    fn act(&mut self, held: Held<'a>, outcome: Outcome) -> Result<(), TestCaseError> {
        let (tool, probe, epoch) = (held.tool, held.probe(), held.epoch);
        let ticket = held.ticket;
        let id = Self::id(tool);
        let (step, now) = (self.model.step, self.expeditor.now());
        prop_assert_eq!(ticket.is_probe(), probe);
        prop_assert_eq!(ticket.tool(), id);
        match outcome {
            Outcome::Success => {
                if probe && self.model.tools[tool].state == CircuitState::HalfOpen {
                    Coverage::bump(&self.coverage.closed_by_probe);
                }
                self.model.succeed(tool, probe);
                ticket.success();
                self.engine.succeed(id, epoch, step, now);
            }
            Outcome::Failure(byte) => {
                let category = self.category(tool, byte);
                if !probe && self.model.tools[tool].state != CircuitState::Closed {
                    Coverage::bump(&self.coverage.late_failures);
                }
                let expected = self.model.fail(tool, probe, category);
                if probe && expected.opened {
                    Coverage::bump(&self.coverage.reopened);
                }
                if self.model.ledger.last().is_some_and(|e| e.pending) {
                    Coverage::bump(&self.coverage.pending);
                }
                let failure = Failure::with_category(message(category), category);
                let got = ticket.failure(failure.clone());
                let engine = self.engine.fail(id, epoch, failure, step, now);
                prop_assert_eq!(seen_recorded(&got), expected, "recorded failure: expeditor");
                prop_assert_eq!(seen_recorded(&engine), expected, "recorded failure: engine");
                prop_assert_eq!(engine, got, "recorded failure: engine and expeditor");
            }
            Outcome::Cancel => {
                self.model.cancel(tool, probe);
                ticket.cancel();
                self.engine.cancel(id, epoch);
            }
        }
        Ok(())
    }

    fn decide(&mut self, byte: u8, then: Option<Outcome>) -> Result<(), TestCaseError> {
        let n = self.setup.tools;
        let (tool, id) = if byte % 16 == 15 {
            (None, ToolId::from_index(u32::try_from(n).unwrap() + 7))
        } else {
            let i = usize::from(byte) % n;
            (Some(i), Self::id(i))
        };
        let backing_off = tool.is_some_and(|i| {
            self.model.tools[i].state == CircuitState::Open && self.model.tools[i].backoff > 0
        });
        let expected = self.model.decide(tool);
        let decision = self.expeditor.decide(id);
        let verdict = self.engine.decide(id, self.model.step);
        match self.engine.last_path() {
            Path::Rejected => Coverage::bump(&self.coverage.lock_free_rejections),
            Path::Engine if backing_off && self.model.halt.is_none() => {
                Coverage::bump(&self.coverage.backing_off_decides);
            }
            _ => {}
        }
        // Both parties' decisions, in the model's terms.
        let (seen, ticket) = match decision {
            Decision::Call(ticket) => (Expect::Call, Some(ticket)),
            Decision::Probe(ticket) => (Expect::Probe, Some(ticket)),
            Decision::Skip(skip) => {
                prop_assert_eq!(skip.tool(), id);
                // Bounded: the routes must end on their own, each alternative listed once.
                let routes: Vec<String> = skip.routes().take(16).map(describe).collect();
                prop_assert_eq!(Some(&describe(skip.route())), routes.first());
                (Expect::Skip(skip.reason(), routes), None)
            }
            Decision::Pause(pause) => {
                prop_assert_eq!(pause.tool(), id);
                (Expect::Pause(pause.reason()), None)
            }
        };
        let (engine_seen, epoch) = match verdict {
            Verdict::Call => (Expect::Call, None),
            Verdict::Probe(epoch) => (Expect::Probe, Some(epoch)),
            Verdict::Skip(reason) => {
                let routes = self.engine.routes(id).take(16).map(describe).collect();
                (Expect::Skip(reason, routes), None)
            }
            Verdict::Pause(reason) => (Expect::Pause(reason), None),
        };
        prop_assert_eq!(&seen, &expected, "decide({:?}): expeditor", tool);
        prop_assert_eq!(&engine_seen, &expected, "decide({:?}): engine", tool);
        match &expected {
            Expect::Probe => {
                Coverage::bump(&self.coverage.probes);
                if tool.is_some_and(|i| self.model.tools[i].backoff >= 2) {
                    Coverage::bump(&self.coverage.backoff_probes);
                }
            }
            Expect::Skip(SkipReason::ProbeInFlight, _) => {
                Coverage::bump(&self.coverage.probe_in_flight_skips);
            }
            _ => {}
        }
        match ticket {
            Some(ticket) => {
                let tool = tool.expect("only known tools get tickets");
                let held = Held {
                    ticket,
                    tool,
                    epoch,
                };
                match then {
                    Some(outcome) => self.act(held, outcome),
                    None if self.held.len() < MAX_HELD => {
                        self.held.push(held);
                        Ok(())
                    }
                    None => self.act(held, Outcome::Cancel),
                }
            }
            None => Ok(()),
        }
    }

    fn apply(&mut self, op: Op) -> Result<(), TestCaseError> {
        Coverage::bump(&self.coverage.operations);
        match op {
            Op::Decide { tool, then } => self.decide(tool, then)?,
            Op::Resolve { slot, outcome } => {
                if !self.held.is_empty() {
                    let held = self.held.remove(usize::from(slot) % self.held.len());
                    self.act(held, outcome)?;
                }
            }
            Op::Advance => {
                self.model.step += 1;
                prop_assert_eq!(self.expeditor.advance_step(), self.model.step);
            }
            Op::NewCycle => {
                self.model.new_cycle();
                let cycle = self.expeditor.new_cycle();
                prop_assert_eq!(self.engine.new_cycle(self.expeditor.now()), cycle);
            }
            Op::Confirm => {
                let expected = self.model.confirm();
                if expected {
                    Coverage::bump(&self.coverage.recoveries);
                }
                let got = self.expeditor.confirm_recovery();
                prop_assert_eq!(got.is_some(), expected, "confirm_recovery");
                let engine = self.engine.confirm_recovery(self.model.step);
                prop_assert_eq!(engine, got, "confirm_recovery: engine");
            }
        }
        self.check()
    }

    /// Everything the model knows, compared with both parties; the events of both compared
    /// with each other; and the invariants.
    fn check(&mut self) -> Result<(), TestCaseError> {
        let (expeditor, model) = (self.expeditor, &self.model);
        prop_assert_eq!(expeditor.step(), model.step);
        self.check_party(expeditor)?;
        self.check_party(&self.engine)?;
        for (i, t) in model.tools.iter().enumerate() {
            let id = Self::id(i);
            prop_assert_eq!(expeditor.state(id), Some(t.state), "mirror of {}", t.name);
            // The rest of the record too (last failure and success, backoff, attempts).
            prop_assert_eq!(
                self.engine.breaker(id),
                expeditor.breaker(id),
                "engine's record of {}",
                t.name
            );
            // One probe at a time: the live probe tickets of a tool are its probe in flight.
            let live = self
                .held
                .iter()
                .filter(|h| h.tool == i && h.probe())
                .count();
            prop_assert!(live <= 1, "{} live probes of {}", live, t.name);
            prop_assert_eq!(live == 1, t.probe, "live probe ticket of {}", t.name);
            if t.probe {
                prop_assert_eq!(t.state, CircuitState::HalfOpen);
            }
        }
        prop_assert_eq!(self.engine.take_events(), self.events.take(), "events");
        Ok(())
    }

    /// Everything the model knows, compared with one party.
    fn check_party<P: Party>(&self, party: &P) -> Result<(), TestCaseError> {
        let model = &self.model;
        let who = P::NAME;
        for (i, t) in model.tools.iter().enumerate() {
            let id = Self::id(i);
            let record = party.breaker(id).expect("a known tool");
            prop_assert_eq!(record.state(), t.state, "{}: state of {}", who, t.name);
            prop_assert_eq!(
                record.consecutive_failures(),
                t.consecutive,
                "{}: {}",
                who,
                t.name
            );
            prop_assert_eq!(record.total_failures(), t.total, "{}: {}", who, t.name);
            let run: Vec<FailureCategory> = record
                .recent_failures()
                .iter()
                .map(Failure::category)
                .collect();
            prop_assert_eq!(&run, &t.run, "{}: run of {}", who, t.name);
            prop_assert_eq!(record.opened_at_step(), t.opened_at, "{}: {}", who, t.name);
            prop_assert_eq!(
                record.probe_in_flight(),
                t.probe,
                "{}: probe of {}",
                who,
                t.name
            );
            // Attempts are counted in attempts, not in steps (where the count is not kept).
            if !self.setup.steps && t.state == CircuitState::Open {
                prop_assert_eq!(
                    party.attempts(id, &record),
                    Some(u64::from(t.attempts)),
                    "{}: attempts of {}",
                    who,
                    t.name
                );
            }
        }
        let budget = party.budget();
        let charged = budget.ledger().iter().filter(|e| e.charged).count();
        prop_assert!(
            budget.consumed() <= budget.limit(),
            "{who}: budget exceeded"
        );
        prop_assert_eq!(usize::try_from(budget.consumed()).unwrap(), charged);
        prop_assert_eq!(budget.limit(), model.limit);
        prop_assert_eq!(budget.consumed(), model.consumed(), "{}: consumed", who);
        let ledger: Vec<MEntry> = budget
            .ledger()
            .iter()
            .map(|e| MEntry {
                tool: e.tool.to_string(),
                charged: e.charged,
                pending: e.pending,
                systemic: e.systemic,
            })
            .collect();
        prop_assert_eq!(&ledger, &model.ledger, "{}: ledger", who);
        prop_assert_eq!(party.paused(), model.halt, "{}: pause", who);
        let event = party.systemic_event();
        prop_assert_eq!(
            event.is_some(),
            model.event.is_some(),
            "{}: systemic event",
            who
        );
        if let (Some(event), Some(m)) = (event, &model.event) {
            let tools: Vec<&str> = m.involved.iter().map(|&j| model.tools[j].name).collect();
            prop_assert_eq!(&event.tools, &tools, "{}: systemic event", who);
            prop_assert_eq!(event.recovered, m.recovered, "{}: systemic event", who);
        }
        Ok(())
    }

    /// Drops every held ticket, then asks every tool once more: a HALF-OPEN tool is never
    /// left without a probe to give.
    fn finish(&mut self) -> Result<(), TestCaseError> {
        while let Some(held) = self.held.pop() {
            self.act(held, Outcome::Cancel)?;
            self.check()?;
        }
        for i in 0..self.setup.tools {
            let half_open = self.model.tools[i].state == CircuitState::HalfOpen;
            let paused = self.model.halt.is_some();
            if half_open && !paused {
                prop_assert!(!self.model.tools[i].probe);
            }
            let byte = u8::try_from(i).unwrap();
            self.decide(byte, Some(Outcome::Cancel))?;
            self.check()?;
        }
        Ok(())
    }
}

fn run_case(
    setup: &Setup,
    ops: &[Op],
    correlated: bool,
    coverage: &Coverage,
) -> Result<(), TestCaseError> {
    let events = common::EventLog::default();
    let expeditor = setup.expeditor_observed(&events);
    let mut case = Case {
        setup,
        expeditor: &expeditor,
        events: &events,
        engine: setup.engine(),
        model: Model::new(setup),
        held: Vec::new(),
        correlated,
        coverage,
    };
    case.check()?;
    for &op in ops {
        let was_paused = case.model.halt;
        let was_event = case.model.event_active();
        case.apply(op)?;
        if was_paused.is_none()
            && matches!(case.model.halt, Some(PauseReason::BudgetExhausted { .. }))
        {
            Coverage::bump(&coverage.budget_pauses);
        }
        if !was_event && case.model.event_active() {
            Coverage::bump(&coverage.systemic);
        }
    }
    case.finish()?;
    // The engine driven directly ends in the expeditor's state, to the last timestamp.
    let snapshot = expeditor.snapshot();
    prop_assert_eq!(case.engine.snapshot(expeditor.step()), snapshot.clone());
    // The whole state survives a snapshot restored into a fresh expeditor.
    let restored = setup.expeditor();
    restored
        .restore(&snapshot)
        .map_err(|e| TestCaseError::fail(format!("restore: {e}")))?;
    prop_assert_eq!(restored.snapshot(), snapshot);
    Ok(())
}

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn run_property(name: &str, default_cases: u32, correlated: bool) -> Coverage {
    let coverage = Coverage::default();
    let config = Config {
        cases: cases(default_cases),
        failure_persistence: None,
        ..Config::default()
    };
    // Seeded, so that CI runs the same cases every time; `PROPTEST_SEED=<n>` explores others.
    let seed: u64 = std::env::var("PROPTEST_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x00C1_2C01_7B2E_A4E2);
    let mut bytes = [0u8; 32];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(
            &(seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_le_bytes(),
        );
    }
    let rng = proptest::test_runner::TestRng::from_seed(
        proptest::test_runner::RngAlgorithm::ChaCha,
        &bytes,
    );
    let mut runner = TestRunner::new_with_rng(config, rng);
    let result = runner.run(&(setup(), ops()), |(setup, ops)| {
        run_case(&setup, &ops, correlated, &coverage)
    });
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
    let c = &coverage;
    eprintln!(
        "{name}: {} operations; {} probes ({} closed, {} re-opened), {} probe-in-flight skips, \
         {} late CALL failures, {} budget pauses, {} systemic events, {} recoveries, \
         {} probes backed off twice or more, {} pending failures; engine driver: {} lock-free \
         rejections, {} backing-off OPEN tools left to the engine",
        Coverage::get(&c.operations),
        Coverage::get(&c.probes),
        Coverage::get(&c.closed_by_probe),
        Coverage::get(&c.reopened),
        Coverage::get(&c.probe_in_flight_skips),
        Coverage::get(&c.late_failures),
        Coverage::get(&c.budget_pauses),
        Coverage::get(&c.systemic),
        Coverage::get(&c.recoveries),
        Coverage::get(&c.backoff_probes),
        Coverage::get(&c.pending),
        Coverage::get(&c.lock_free_rejections),
        Coverage::get(&c.backing_off_decides),
    );
    coverage
}

#[test]
fn model_uncorrelated() {
    let c = run_property("model_uncorrelated", 3000, false);
    // The generator reaches every part of the state machine (with a wide margin).
    for (what, counter) in [
        ("probes", &c.probes),
        ("closing probes", &c.closed_by_probe),
        ("failed probes", &c.reopened),
        ("probe-in-flight skips", &c.probe_in_flight_skips),
        ("budget pauses", &c.budget_pauses),
        ("systemic events", &c.systemic),
        ("recoveries", &c.recoveries),
        ("backed-off probes", &c.backoff_probes),
        ("lock-free rejections", &c.lock_free_rejections),
        ("backing-off decides", &c.backing_off_decides),
    ] {
        assert!(Coverage::get(counter) > 0, "no {what} generated");
    }
    assert_eq!(Coverage::get(&c.pending), 0, "categories never correlate");
}

#[test]
fn model_cascades() {
    let c = run_property("model_cascades", 2000, true);
    for (what, counter) in [
        ("systemic events", &c.systemic),
        ("recoveries", &c.recoveries),
        ("backed-off probes", &c.backoff_probes),
        ("pending failures", &c.pending),
        ("lock-free rejections", &c.lock_free_rejections),
        ("backing-off decides", &c.backing_off_decides),
    ] {
        assert!(Coverage::get(counter) > 0, "no {what} generated");
    }
}

// ---------------------------------------------------------------------------------------------
// Regressions and findings
// ---------------------------------------------------------------------------------------------

/// Two tools that share infrastructure stay down after a confirmed recovery. Their failed
/// probes must be charged (R3.2: "HALF-OPEN -> OPEN on a failed probe (and the budget is
/// charged)"; R7: the budget counts failures and pauses at its limit). A failed probe only
/// re-opens a circuit, which never starts a systemic event, so holding it "pending" waits for
/// an event that cannot come from it.
#[test]
fn failed_probes_after_a_confirmed_recovery_are_charged() {
    let policy = Policy::builder().budget(5).build().unwrap();
    let map = CapabilityMap::new()
        .tool(
            ToolSpec::new("WebSearch")
                .provides("search")
                .fallback("ask the user"),
        )
        .tool(
            ToolSpec::new("WebFetch")
                .provides("fetch")
                .fallback("ask the user"),
        );
    let expeditor = Expeditor::builder(map)
        .policy(policy)
        .clock(common::clock())
        .build()
        .unwrap();
    let refused = || Failure::with_category("connection refused", FailureCategory::Network);
    for tool in ["WebSearch", "WebFetch"] {
        for _ in 0..3 {
            let _ = common::fail(&expeditor, tool, refused());
        }
    }
    assert!(matches!(
        expeditor.paused(),
        Some(PauseReason::Systemic { .. })
    ));
    assert_eq!(expeditor.budget().consumed(), 1, "one charge for the event");
    expeditor.confirm_recovery().expect("an event in force");
    // Both tools are still down: each probe fails. Ten failed probes, a budget of 5.
    let mut failed_probes = 0;
    for _ in 0..200 {
        if failed_probes == 10 || expeditor.paused().is_some() {
            break;
        }
        for tool in ["WebSearch", "WebFetch"] {
            if let Decision::Probe(ticket) = expeditor.decide(common::id(&expeditor, tool)) {
                let _ = ticket.failure(refused());
                failed_probes += 1;
            }
        }
        expeditor.advance_step();
    }
    let budget = expeditor.budget();
    let held = budget.ledger().iter().filter(|e| e.pending).count();
    assert!(
        matches!(
            expeditor.paused(),
            Some(PauseReason::BudgetExhausted { .. })
        ),
        "{failed_probes} failed probes, budget {} / {}, {held} ledger lines held pending, \
         pause: {:?}",
        budget.consumed(),
        budget.limit(),
        expeditor.paused()
    );
}

/// Found by `model_uncorrelated`: a probe held across a confirmed recovery and resolved after
/// it must not change the backoff shares computed at the recovery (the crate computed them
/// lazily, at the next decide, after that tool had closed).
#[test]
fn regression_shares_are_fixed_at_the_confirmed_recovery() {
    let tool = || ToolSetup {
        alternatives: vec![],
        threshold: None,
        probe_every: None,
    };
    let setup = Setup {
        tools: 3,
        threshold: 1,
        budget: 7,
        probe_every: 2,
        steps: false,
        window: 1,
        cap: 4,
        detection: true,
        per_tool: vec![tool(), tool(), tool(), tool(), tool()],
    };
    let decide = |tool: u8, then: Option<Outcome>| Op::Decide { tool, then };
    let ops = vec![
        decide(4, Some(Outcome::Failure(0))),
        decide(25, Some(Outcome::Success)),
        decide(91, None),
        Op::Resolve {
            slot: 0,
            outcome: Outcome::Success,
        },
        decide(9, Some(Outcome::Failure(0))),
        decide(11, Some(Outcome::Failure(0))),
        decide(9, Some(Outcome::Success)),
        decide(24, None),
        decide(235, Some(Outcome::Failure(0))),
        Op::Confirm,
        Op::Resolve {
            slot: 0,
            outcome: Outcome::Success,
        },
        decide(22, Some(Outcome::Success)),
        decide(235, Some(Outcome::Failure(0))),
        decide(121, Some(Outcome::Success)),
    ];
    run_case(&setup, &ops, false, &Coverage::default()).unwrap();
}
