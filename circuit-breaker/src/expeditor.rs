//! The expeditor (SPEC R3, R8): before every call it decides — CALL, PROBE, SKIP with a
//! route, or PAUSE — and after it remembers. It never calls a tool, never retries, never
//! changes a call's arguments and never hides an error: the executor (your agent loop, or the
//! dispatcher `#[toolbox]` generates) does the calling and reports back through the
//! [`Ticket`] it was given.
//!
//! Nothing in this module knows a tool's API or error type (R8.1).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock, PoisonError};

use crate::sync::{AtomicBool, AtomicU64, Mutex, MutexGuard, Ordering};

use serde::{Deserialize, Serialize};

use crate::breaker::{
    BreakerRecord, CircuitState, Hot, OpenCheck, Settings, Transition, Verdict, Via,
};
use crate::budget::{Budget, BudgetStatus, LedgerEntry};
use crate::capability::{CapabilityMap, MapError, MapErrors, ToolSpec, check_tool};
use crate::cascade::{Cascade, SystemicEvent, backoff_interval, category_of};
use crate::clock::Timestamp;
use crate::clock::{SystemClock, WallClock};
use crate::event::{Event, Observer};
use crate::failure::Failure;
use crate::failure::FailureCategory;
use crate::freshness::FreshnessTracker;
use crate::policy::Policy;
use crate::precheck::Precheck;
use crate::route::{Route, Routes};

pub use crate::id::ToolId;

/// A registered tool: its spec, its resolved alternatives and settings, and the hot mirror.
#[derive(Debug)]
pub(crate) struct ToolSlot {
    pub(crate) spec: ToolSpec,
    pub(crate) alternatives: Box<[ToolId]>,
    pub(crate) settings: Settings,
    pub(crate) hot: Hot,
}

/// The most tools one expeditor holds.
pub(crate) const MAX_TOOLS: usize = (u32::MAX - 1) as usize;

/// First chunk holds 16 tools, each next chunk twice as many: indices up to `u32::MAX` fit.
const FIRST_CHUNK_BITS: u32 = 4;
const CHUNKS: usize = 29;

/// An append-only table of tool slots readable without a lock: a slot never moves once
/// written, so the healthy path reaches it with two atomic loads.
struct Slots {
    chunks: [OnceLock<Box<[OnceLock<ToolSlot>]>>; CHUNKS],
}

impl Slots {
    fn new() -> Self {
        Slots {
            chunks: [const { OnceLock::new() }; CHUNKS],
        }
    }

    #[inline]
    fn locate(index: u32) -> (usize, usize) {
        let i = u64::from(index) + (1 << FIRST_CHUNK_BITS);
        let bit = i.ilog2();
        let chunk = (bit - FIRST_CHUNK_BITS) as usize;
        #[allow(clippy::cast_possible_truncation)] // offset < 2^32 by construction
        let offset = (i - (1 << bit)) as usize;
        (chunk, offset)
    }

    #[inline]
    fn get(&self, index: u32) -> Option<&ToolSlot> {
        let (chunk, offset) = Self::locate(index);
        self.chunks[chunk].get()?.get(offset)?.get()
    }

    /// Writes slot `index`; called under the core lock, in index order.
    fn insert(&self, index: u32, slot: ToolSlot) {
        let (chunk, offset) = Self::locate(index);
        let cells = self.chunks[chunk].get_or_init(|| {
            (0..(1usize << (chunk + FIRST_CHUNK_BITS as usize)))
                .map(|_| OnceLock::new())
                .collect()
        });
        // The core lock serializes registration and `len` only grows, so the cell is empty.
        let _ = cells[offset].set(slot);
    }
}

/// Why every call is paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PauseReason {
    /// The failure budget of this cycle is spent (R3.4, R7.3).
    BudgetExhausted {
        /// Failures charged.
        consumed: u32,
        /// The budget.
        limit: u32,
    },
    /// Correlated circuits opened: a systemic failure (R9.2). Every call pauses until
    /// [`Expeditor::confirm_recovery`].
    Systemic {
        /// The category the failures share, if they share one.
        category: Option<FailureCategory>,
    },
    /// Every remaining sub-task is deferred (R5.4).
    NothingAchievable,
}

/// The sub-task being worked on, when it is deferred: its tools are refused (R5.3).
pub(crate) struct DeferredWork {
    pub(crate) number: usize,
    pub(crate) tools: Vec<ToolId>,
}

/// State behind the lock: the records, the budget and ledger, the name index.
pub(crate) struct Core {
    pub(crate) names: HashMap<Box<str>, ToolId>,
    pub(crate) records: Vec<BreakerRecord>,
    pub(crate) prechecks: Vec<Precheck>,
    pub(crate) budget: Budget,
    pub(crate) halt: Option<PauseReason>,
    pub(crate) cascade: Cascade,
    pub(crate) freshness: FreshnessTracker,
    pub(crate) cycle_started_at: Timestamp,
    pub(crate) allowed: Option<Vec<String>>,
    pub(crate) deferred: Option<DeferredWork>,
    /// Each tool's share of the backoff cap along its chains of routes (R9.5); `None` when
    /// who is backing off has changed since it was computed.
    pub(crate) shares: Option<Vec<u32>>,
}

impl Core {
    /// Whether every decide must take the slow path.
    pub(crate) fn needs_slow_path(&self) -> bool {
        self.halt.is_some() || self.deferred.is_some()
    }
}

/// Keeps a value on its own cache line, so writes to it do not slow readers of its
/// neighbours.
#[repr(align(64))]
struct CachePadded<T>(T);

/// The decision layer (R3, R8): per-tool breakers, the failure budget, routing, reports.
///
/// `Expeditor` is `Send + Sync`; share it by reference or `Arc`. The healthy path —
/// [`decide`](Self::decide) on a CLOSED tool and [`Ticket::success`] — takes no lock,
/// allocates nothing and writes no shared memory (B5).
///
/// ```
/// use circuit_breaker::{CapabilityMap, Decision, Expeditor, ToolSpec};
///
/// let map = CapabilityMap::new().tool(
///     ToolSpec::new("Bash")
///         .provides("command execution")
///         .fallback("report commands that need to be run manually"),
/// );
/// let expeditor = Expeditor::new(map)?;
/// let bash = expeditor.tool("Bash").expect("declared above");
/// match expeditor.decide(bash) {
///     Decision::Call(ticket) | Decision::Probe(ticket) => ticket.success(),
///     Decision::Skip(skip) => println!("{}", skip.for_model()),
///     Decision::Pause(pause) => println!("{}", pause.for_model()),
/// }
/// # Ok::<(), circuit_breaker::MapErrors>(())
/// ```
pub struct Expeditor {
    slots: Slots,
    halted: AtomicBool,
    step: AtomicU64,
    policy: Policy,
    clock: Arc<dyn WallClock>,
    observers: Box<[Arc<dyn Observer>]>,
    core: CachePadded<Mutex<Core>>,
}

impl fmt::Debug for Expeditor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Expeditor")
            .field("policy", &self.policy)
            .field("step", &self.step())
            .field("tools", &self.lock().records.len())
            .finish_non_exhaustive()
    }
}

/// Builds an [`Expeditor`]: a map, a policy, a wall clock, observers.
pub struct ExpeditorBuilder {
    map: CapabilityMap,
    policy: Policy,
    clock: Arc<dyn WallClock>,
    observers: Vec<Arc<dyn Observer>>,
}

impl fmt::Debug for ExpeditorBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExpeditorBuilder")
            .field("map", &self.map)
            .field("policy", &self.policy)
            .field("observers", &self.observers.len())
            .finish_non_exhaustive()
    }
}

impl ExpeditorBuilder {
    /// Sets the policy (default: [`Policy::default`], the seed's 3 / 5 / 3).
    #[must_use]
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Sets the wall clock (default: [`SystemClock`]).
    #[must_use]
    pub fn clock(mut self, clock: impl WallClock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Adds an observer of every [`Event`] (B4).
    #[must_use]
    pub fn observer(mut self, observer: impl Observer) -> Self {
        self.observers.push(Arc::new(observer));
        self
    }

    /// Validates the map (R1.4) and builds the expeditor; every tool starts CLOSED (R2).
    ///
    /// # Errors
    /// [`MapErrors`] with every problem of the map.
    pub fn build(self) -> Result<Expeditor, MapErrors> {
        self.map.validate()?;
        if self.map.tools().len() >= MAX_TOOLS {
            return Err(MapErrors(vec![MapError::TooManyTools { limit: MAX_TOOLS }]));
        }
        Ok(self.build_checked())
    }

    /// Builds from a map already checked (a `#[toolbox]` map is checked at compile time).
    /// Never panics: an alternative naming no tool is simply not routed to.
    pub(crate) fn build_checked(self) -> Expeditor {
        let cycle_started_at = self.clock.now();
        let expeditor = Expeditor {
            slots: Slots::new(),
            halted: AtomicBool::new(false),
            step: AtomicU64::new(0),
            policy: self.policy,
            clock: self.clock,
            observers: self.observers.into_boxed_slice(),
            core: CachePadded(Mutex::new(Core {
                names: HashMap::new(),
                records: Vec::new(),
                prechecks: Vec::new(),
                budget: Budget::new(self.policy.budget()),
                halt: None,
                cascade: Cascade::default(),
                freshness: FreshnessTracker::default(),
                cycle_started_at,
                allowed: None,
                deferred: None,
                shares: None,
            })),
        };
        {
            let mut core = expeditor.lock();
            let names: HashMap<&str, ToolId> = self
                .map
                .tools()
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    (
                        t.name(),
                        ToolId::from_index(u32::try_from(i).unwrap_or(u32::MAX)),
                    )
                })
                .collect();
            for spec in self.map.tools() {
                let alternatives = spec
                    .alternatives()
                    .iter()
                    .filter_map(|a| names.get(a.tool()).copied())
                    .collect();
                if core.records.len() < MAX_TOOLS {
                    expeditor.push_tool(&mut core, spec.clone(), alternatives);
                }
            }
        }
        expeditor
    }
}

/// What the expeditor says before a call (R3.1): exactly one of CALL, PROBE, SKIP or PAUSE.
#[derive(Debug)]
#[must_use = "a decision must be acted on: call the tool through its ticket, take the route, or pause"]
pub enum Decision<'a> {
    /// The tool is CLOSED: call it and record the outcome through the ticket.
    Call(Ticket<'a>),
    /// The tool is HALF-OPEN and this caller holds its one probe (R3.6): call it once and
    /// record the outcome; success closes the circuit, failure re-opens it.
    Probe(Ticket<'a>),
    /// The tool is OPEN (or being probed by another caller): do not call it; take the route.
    Skip(Skip<'a>),
    /// Every call is paused (budget exhausted): stop and report.
    Pause(Pause<'a>),
}

impl Decision<'_> {
    /// The seed's name of the decision: `CALL`, `PROBE`, `SKIP` or `PAUSE`.
    pub fn kind(&self) -> &'static str {
        match self {
            Decision::Call(_) => "CALL",
            Decision::Probe(_) => "PROBE",
            Decision::Skip(_) => "SKIP",
            Decision::Pause(_) => "PAUSE",
        }
    }
}

/// Permission to call a tool once. Record the outcome with [`success`](Self::success) or
/// [`failure`](Self::failure); a ticket dropped unrecorded is a cancellation, counted as
/// neither, and a dropped probe frees the half-open slot for the next caller. A ticket dropped
/// while its thread panics (the tool panicked) is recorded as a failure ([`PANICKED`]).
#[must_use = "record the call's outcome through the ticket; dropping it counts as a cancellation"]
pub struct Ticket<'a> {
    expeditor: &'a Expeditor,
    slot: &'a ToolSlot,
    tool: ToolId,
    via: Via,
    done: bool,
}

impl fmt::Debug for Ticket<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ticket")
            .field("tool", &self.slot.spec.name())
            .field("probe", &self.is_probe())
            .finish()
    }
}

impl<'a> Ticket<'a> {
    /// The tool this ticket is for.
    pub fn tool(&self) -> ToolId {
        self.tool
    }

    /// The tool's name.
    pub fn tool_name(&self) -> &'a str {
        self.slot.spec.name()
    }

    /// Whether this is the probe of a HALF-OPEN tool.
    pub fn is_probe(&self) -> bool {
        matches!(self.via, Via::Probe(_))
    }

    /// Records a success (R3.3). On a CLOSED tool with no failures this is a few atomic loads.
    #[inline]
    pub fn success(mut self) {
        self.done = true;
        if self.via == Via::Call && self.slot.hot.success_is_noop(self.expeditor.step()) {
            return;
        }
        self.expeditor
            .record_success(self.tool, self.slot, self.via);
    }

    /// Records a failure (R3.3): consecutive failures + 1, last failure kept, budget charged,
    /// threshold checked. The caller keeps its error: the expeditor only needs its message
    /// and category (R3.5: nothing is swallowed, nothing is retried).
    pub fn failure(mut self, failure: impl Into<Failure>) -> Recorded {
        self.done = true;
        self.expeditor
            .record_failure(self.tool, self.slot, self.via, failure.into())
    }

    /// Records a `Result`: `Ok` as a success, `Err` as a failure built by `to_failure`.
    ///
    /// # Errors
    /// Returns `result` untouched, so the tool's error reaches the caller (R3.5).
    pub fn record<T, E>(
        self,
        result: Result<T, E>,
        to_failure: impl FnOnce(&E) -> Failure,
    ) -> Result<T, E> {
        match &result {
            Ok(_) => self.success(),
            Err(e) => {
                let _ = self.failure(to_failure(e));
            }
        }
        result
    }

    /// Gives the ticket back unused: neither success nor failure.
    pub fn cancel(self) {
        drop(self);
    }
}

impl Drop for Ticket<'_> {
    #[inline]
    fn drop(&mut self) {
        // Kept tiny so that the healthy path (a recorded ticket) stays inlined and in registers.
        if !self.done {
            abandon(self.expeditor, self.slot, self.tool, self.via);
        }
    }
}

/// A ticket dropped unrecorded: a cancellation — or, while its thread panics, a failure.
/// Takes the ticket's parts by value, so that the ticket itself never needs an address.
#[cold]
#[inline(never)]
fn abandon(expeditor: &Expeditor, slot: &ToolSlot, tool: ToolId, via: Via) {
    if std::thread::panicking() {
        // The call panicked while holding its ticket: a failure, not a cancellation. The panic
        // goes on to the caller; the breaker has counted it.
        let _ = expeditor.record_failure(
            tool,
            slot,
            via,
            Failure::with_category(PANICKED, FailureCategory::Other),
        );
    } else if matches!(via, Via::Probe(_)) {
        expeditor.release_probe(tool, via);
    }
}

/// The failure recorded for a call that panicked with its ticket in hand.
pub const PANICKED: &str = "the tool panicked";

/// What recording a failure did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recorded {
    /// The tool's state after the failure.
    pub state: CircuitState,
    /// Its consecutive failures after the failure.
    pub consecutive_failures: u32,
    /// Whether this failure opened (or re-opened) the circuit.
    pub opened: bool,
    /// The budget after the failure.
    pub budget: BudgetStatus,
    /// Whether every call now pauses.
    pub paused: bool,
}

/// Why a tool is skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// Its circuit is OPEN and no probe is due.
    Open,
    /// It is HALF-OPEN and another caller holds its one probe (R3.6).
    ProbeInFlight,
    /// The id names no tool of this expeditor.
    UnknownTool,
    /// A pre-call check found it UNAVAILABLE, or it is not in the allowed-tools list (R10.2).
    Unavailable,
    /// The sub-task being worked on is deferred (R5.3).
    Deferred,
}

/// Do not call the tool: here is why, and the routes to take instead (R4).
#[derive(Debug, Clone)]
pub struct Skip<'a> {
    expeditor: &'a Expeditor,
    tool: ToolId,
    slot: Option<&'a ToolSlot>,
    reason: SkipReason,
}

impl<'a> Skip<'a> {
    /// The skipped tool.
    pub fn tool(&self) -> ToolId {
        self.tool
    }

    /// The skipped tool's name (`"?"` for an unknown id).
    pub fn tool_name(&self) -> &'a str {
        self.slot.map_or("?", |s| s.spec.name())
    }

    /// Why it is skipped.
    pub fn reason(&self) -> SkipReason {
        self.reason
    }

    /// The best route (R4.1): never `None`, scope reduction at worst.
    pub fn route(&self) -> Route<'a> {
        self.routes().next().unwrap_or(Route::ScopeReduction)
    }

    /// Every route, best first: usable alternatives by severity, then the fallback, then
    /// scope reduction (R4.1, R4.3).
    pub fn routes(&self) -> Routes<'a> {
        Routes::new(self.expeditor, self.slot)
    }

    /// The short text for a language model (B7): which tool is broken, why, and what to do
    /// instead. It never invites a retry of the broken tool.
    pub fn for_model(&self) -> crate::report::ModelNote {
        crate::report::ModelNote::for_skip(self)
    }

    pub(crate) fn expeditor(&self) -> &'a Expeditor {
        self.expeditor
    }

    /// A skip as it would be decided now, without deciding (for reports).
    pub(crate) fn view(expeditor: &'a Expeditor, tool: ToolId, reason: SkipReason) -> Self {
        Skip {
            expeditor,
            tool,
            slot: expeditor.slot(tool),
            reason,
        }
    }
}

/// Every call is paused; stop and report (R3.4, R9.2, R5.4).
#[derive(Clone, Copy)]
pub struct Pause<'a> {
    expeditor: &'a Expeditor,
    reason: PauseReason,
}

impl fmt::Debug for Pause<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pause")
            .field("reason", &self.reason)
            .finish()
    }
}

impl Pause<'_> {
    /// Why.
    pub fn reason(&self) -> PauseReason {
        self.reason
    }

    /// The systemic failure behind the pause, if that is why (R9.2).
    pub fn systemic(&self) -> Option<SystemicEvent> {
        match self.reason {
            PauseReason::Systemic { .. } => self.expeditor.systemic_event(),
            _ => None,
        }
    }

    /// The short text for a language model (B7).
    pub fn for_model(&self) -> crate::report::ModelNote {
        crate::report::ModelNote::for_pause(self.reason, self.systemic().as_ref())
    }
}

impl Expeditor {
    /// An expeditor over `map` with the default policy and the system clock.
    ///
    /// # Errors
    /// [`MapErrors`] with every problem of the map (R1.4).
    pub fn new(map: CapabilityMap) -> Result<Self, MapErrors> {
        Expeditor::builder(map).build()
    }

    /// A builder over `map`.
    pub fn builder(map: CapabilityMap) -> ExpeditorBuilder {
        ExpeditorBuilder {
            map,
            policy: Policy::default(),
            clock: Arc::new(SystemClock),
            observers: Vec::new(),
        }
    }

    /// The policy in force.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Before a call (R3.1): CALL, PROBE, SKIP with its route, or PAUSE.
    ///
    /// The healthy path (a CLOSED tool, no pause) is small enough to inline into the caller;
    /// everything else goes through a separate, non-inlined function.
    #[inline]
    pub fn decide(&self, tool: impl Into<ToolId>) -> Decision<'_> {
        let tool = tool.into();
        if let Some(slot) = self.slots.get(tool.0)
            && slot.hot.is_callable()
            && !self.halted.load(Ordering::Acquire)
        {
            return Decision::Call(Ticket {
                expeditor: self,
                slot,
                tool,
                via: Via::Call,
                done: false,
            });
        }
        self.decide_rest(tool)
    }

    /// Everything but the healthy path: the lock-free rejection of an OPEN tool whose probe is
    /// not due, then the slow path under the lock.
    #[inline(never)]
    fn decide_rest(&self, tool: ToolId) -> Decision<'_> {
        let Some(slot) = self.slots.get(tool.0) else {
            return self.decide_slow(tool, None);
        };
        if self.halted.load(Ordering::Acquire) {
            return self.decide_slow(tool, None);
        }
        match slot.hot.check_open(slot.settings, self.step()) {
            OpenCheck::Skip => Decision::Skip(Skip {
                expeditor: self,
                tool,
                slot: Some(slot),
                reason: SkipReason::Open,
            }),
            OpenCheck::Slow(counted) => self.decide_slow(tool, counted),
        }
    }

    /// [`decide`](Self::decide) by name; a tool not seen before gets its state now, CLOSED,
    /// with [`ToolSpec::discovered`] as its spec (R2.4).
    ///
    /// # Errors
    /// A [`MapErrors`] when `name` is empty.
    pub fn decide_named(&self, name: &str) -> Result<Decision<'_>, MapErrors> {
        let id = match self.tool(name) {
            Some(id) => id,
            None => self.discover(ToolSpec::discovered(name.to_owned()))?,
        };
        Ok(self.decide(id))
    }

    #[cold]
    fn decide_slow(&self, tool: ToolId, counted: Option<u32>) -> Decision<'_> {
        let Some(slot) = self.slots.get(tool.0) else {
            return Decision::Skip(Skip {
                expeditor: self,
                tool,
                slot: None,
                reason: SkipReason::UnknownTool,
            });
        };
        let step = self.step();
        let mut events = Vec::new();
        let verdict = {
            let mut core = self.lock();
            if let Some(reason) = core.halt {
                return Decision::Pause(Pause {
                    expeditor: self,
                    reason,
                });
            }
            if core
                .deferred
                .as_ref()
                .is_some_and(|d| d.tools.contains(&tool))
            {
                return Decision::Skip(Skip {
                    expeditor: self,
                    tool,
                    slot: Some(slot),
                    reason: SkipReason::Deferred,
                });
            }
            let i = tool.0 as usize;
            let core = &mut *core;
            let interval = self.probe_interval(core, tool);
            let gated = core.prechecks[i].gated();
            let record = &mut core.records[i];
            if gated && record.state == CircuitState::Closed {
                // UNAVAILABLE: routed without a call and without charging the budget; an
                // OPEN tool still reaches HALF-OPEN below when its probe is due.
                return Decision::Skip(Skip {
                    expeditor: self,
                    tool,
                    slot: Some(slot),
                    reason: SkipReason::Unavailable,
                });
            }
            if record.state == CircuitState::Open {
                // The attempt counter lives in the mirror (the rejection path counts there
                // without the lock); this attempt is counted once.
                let n = counted.unwrap_or_else(|| slot.hot.count_attempt());
                record.attempts_since_open = n.saturating_sub(1);
            }
            let (verdict, transition) = record.decide(slot.settings, interval, step);
            slot.hot.sync(record, gated);
            if let Some(t) = transition {
                events.push(Self::transition_event(slot, record, t));
            }
            verdict
        };
        self.emit(&events);
        match verdict {
            Verdict::Call => Decision::Call(Ticket {
                expeditor: self,
                slot,
                tool,
                via: Via::Call,
                done: false,
            }),
            Verdict::Probe(epoch) => Decision::Probe(Ticket {
                expeditor: self,
                slot,
                tool,
                via: Via::Probe(epoch),
                done: false,
            }),
            Verdict::SkipOpen | Verdict::SkipProbeInFlight => Decision::Skip(Skip {
                expeditor: self,
                tool,
                slot: Some(slot),
                reason: if verdict == Verdict::SkipOpen {
                    SkipReason::Open
                } else {
                    SkipReason::ProbeInFlight
                },
            }),
        }
    }

    /// The probe interval in force for `tool`: the policy's, or after a cascade the backed-off
    /// one (R9.5). Along any chain of routes (a tool and the alternatives it routes to, each
    /// visited once) the intervals of the tools backing off add up to at most the cap: each
    /// such tool gets at most an equal share of the cap for the longest chain it is part of
    /// (never less than its base interval). The shares are computed once per change of who is
    /// backing off, not on every decide.
    fn probe_interval(&self, core: &mut Core, tool: ToolId) -> u32 {
        let cap = self.policy.backoff_cap();
        let Some(level) = core.records.get(tool.0 as usize).map(|r| r.backoff) else {
            return Policy::DEFAULT_PROBE_EVERY;
        };
        let base = self
            .slot(tool)
            .map_or(Policy::DEFAULT_PROBE_EVERY, |s| s.settings.probe_every);
        if level == 0 {
            return base;
        }
        if core.shares.is_none() {
            core.shares = Some(self.chain_shares(core, cap));
        }
        let share = core
            .shares
            .as_ref()
            .and_then(|s| s.get(tool.0 as usize).copied())
            .unwrap_or(cap);
        backoff_interval(base, level, cap).min(share.max(base))
    }

    /// For every tool backing off after a cascade, the cap divided by the size of the longest
    /// chain of backing-off tools it belongs to. One walk per backing-off tool, each visiting
    /// every tool at most once.
    fn chain_shares(&self, core: &Core, cap: u32) -> Vec<u32> {
        let n = core.records.len();
        let backing: Vec<bool> = core
            .records
            .iter()
            .map(|r| r.backoff > 0 && r.state != CircuitState::Closed)
            .collect();
        let mut longest = vec![0usize; n];
        let mut seen = vec![usize::MAX; n];
        let mut stack = Vec::new();
        let mut members = Vec::new();
        for head in (0..n).filter(|&h| backing[h]) {
            members.clear();
            stack.push(head);
            seen[head] = head;
            while let Some(x) = stack.pop() {
                if backing[x] {
                    members.push(x);
                }
                let alternatives = u32::try_from(x)
                    .ok()
                    .and_then(|x| self.slot(ToolId(x)))
                    .map_or(&[][..], |s| &s.alternatives);
                for alt in alternatives.iter().map(|a| a.0 as usize) {
                    if alt < n && seen[alt] != head {
                        seen[alt] = head;
                        stack.push(alt);
                    }
                }
            }
            for &m in &members {
                longest[m] = longest[m].max(members.len());
            }
        }
        longest
            .into_iter()
            .map(|len| match u32::try_from(len) {
                Ok(0) => cap,
                Ok(len) => cap / len,
                Err(_) => 1,
            })
            .collect()
    }

    #[cold]
    fn record_success(&self, tool: ToolId, slot: &ToolSlot, via: Via) {
        let step = self.step();
        let mut events = Vec::new();
        {
            let mut core = self.lock();
            let core = &mut *core;
            let i = tool.0 as usize;
            let Some(record) = core.records.get_mut(i) else {
                return;
            };
            let same_step = record.last_success.is_some_and(|s| s.step == step);
            let now = if same_step {
                Timestamp::EPOCH
            } else {
                self.clock.now()
            };
            let transition = record.succeed(via, now, step);
            if let Some(t) = transition {
                // A tool that recovers only shortens the chains it was in: the shares computed
                // before still keep every chain within the cap, so they are kept (R9.5).
                events.push(Self::transition_event(slot, record, t));
                // A tool that recovered is checked again before it is held back (R10.3).
                if t == Transition::Closed && core.prechecks[i].gated() {
                    core.prechecks[i].result = None;
                }
            }
            let recovered =
                record.state == CircuitState::Closed && record.consecutive_failures == 0;
            slot.hot.sync(record, core.prechecks[i].gated());
            // Failures held as possibly systemic were this tool's own after all (R9.4).
            if recovered && core.budget.has_pending(slot.spec.name()) {
                let exhausted = core.budget.settle(slot.spec.name());
                if exhausted {
                    self.exhaust(core, &mut events);
                }
            }
        }
        self.emit(&events);
    }

    /// The budget is spent: pause every call (R3.4), unless a pause is already in force.
    fn exhaust(&self, core: &mut Core, events: &mut Vec<Event>) {
        let status = core.budget.status();
        if core.halt.is_none() && status.is_exhausted() {
            core.halt = Some(PauseReason::BudgetExhausted {
                consumed: status.consumed,
                limit: status.limit,
            });
            self.halted.store(true, Ordering::Release);
            events.push(Event::BudgetExhausted {
                consumed: status.consumed,
                limit: status.limit,
            });
        }
    }

    #[cold]
    fn record_failure(
        &self,
        tool: ToolId,
        slot: &ToolSlot,
        via: Via,
        failure: Failure,
    ) -> Recorded {
        let step = self.step();
        let now = self.clock.now();
        let mut events = Vec::new();
        let recorded = {
            let mut core = self.lock();
            let core = &mut *core;
            let i = tool.0 as usize;
            let name = slot.spec.name();
            let during_event = core.cascade.active();
            let category = failure.category();
            // A failure matching an OPEN circuit's category may be part of a systemic event:
            // it is held uncharged until that is known (R9.4).
            // Only a CLOSED tool's failure can open a circuit that starts an event; a failed
            // probe or a late call on an OPEN tool is charged as usual (R3.2).
            let pending = during_event
                || (self.policy.cascade_detection()
                    && core.records[i].state == CircuitState::Closed
                    && crate::cascade::may_correlate(
                        tool,
                        category,
                        &core.records,
                        step,
                        self.policy.cascade_window(),
                    )
                    && core.records.iter().enumerate().any(|(j, r)| {
                        j != i
                            && r.state != CircuitState::Closed
                            && category_of(r) == Some(category)
                    }));
            let exhausted_now = core
                .budget
                .charge(name, failure.clone(), step, now, pending);
            if during_event {
                core.cascade.join(tool, name);
                core.budget.absorb_last();
            }
            let settings = Settings {
                threshold: core.prechecks[i].threshold(slot.settings.threshold),
                ..slot.settings
            };
            let record = &mut core.records[i];
            let transition = record.fail(via, settings, now, step, failure);
            slot.hot.sync(record, core.prechecks[i].gated());
            if matches!(transition, Some(Transition::Opened | Transition::Reopened)) {
                slot.hot.reset_attempts(record.attempts_since_open);
            }
            if let Some(t) = transition {
                events.push(Self::transition_event(slot, record, t));
            }
            let opened = matches!(transition, Some(Transition::Opened | Transition::Reopened));
            // Only a circuit leaving CLOSED can start a cascade: a failed probe re-opens a
            // tool already counted (and, after a confirmed recovery, is the backoff at work).
            if transition == Some(Transition::Opened)
                && !during_event
                && self.policy.cascade_detection()
            {
                let window = self.policy.cascade_window();
                if let Some(involved) = core.cascade.on_open(tool, &core.records, step, window) {
                    self.start_systemic(core, involved, step, now, &mut events);
                }
            }
            if exhausted_now {
                self.exhaust(core, &mut events);
            }
            let record = &core.records[i];
            Recorded {
                state: record.state,
                consecutive_failures: record.consecutive_failures,
                opened,
                budget: core.budget.status(),
                paused: core.halt.is_some(),
            }
        };
        self.emit(&events);
        recorded
    }

    /// A systemic failure (R9.2): every call pauses, the involved failures are charged once
    /// (R9.4), and every pre-call check is due again (R10.3).
    fn start_systemic(
        &self,
        core: &mut Core,
        involved: Vec<ToolId>,
        step: u64,
        now: Timestamp,
        events: &mut Vec<Event>,
    ) {
        let names = self.names_in_order(core);
        let event = core
            .cascade
            .start(involved, &core.records, &names, step, now)
            .clone();
        let runs: Vec<(&str, u32)> = core
            .cascade
            .involved
            .iter()
            .filter_map(|id| {
                let record = core.records.get(id.0 as usize)?;
                Some((*names.get(id.0 as usize)?, record.consecutive_failures))
            })
            .collect();
        let line = LedgerEntry {
            tool: event.tools.join(", "),
            failure: Failure::with_category(
                event.to_string(),
                event.category.unwrap_or(FailureCategory::Other),
            ),
            step,
            at: now,
            charged: true,
            pending: false,
            systemic: false,
        };
        core.budget.fold(&runs, line);
        // The systemic pause takes over from a budget pause: the fold may have refunded it.
        core.halt = Some(PauseReason::Systemic {
            category: event.category,
        });
        for precheck in &mut core.prechecks {
            precheck.result = None;
        }
        self.sync_all(core);
        events.push(Event::Systemic {
            pattern: event.pattern.clone(),
            cause: event.cause().to_owned(),
            tools: event.tools.clone(),
        });
    }

    /// Copies every record into its hot mirror (after changes that touch many tools).
    pub(crate) fn sync_all(&self, core: &Core) {
        for (i, record) in core.records.iter().enumerate() {
            if let Some(slot) = u32::try_from(i).ok().and_then(|i| self.slots.get(i)) {
                slot.hot.sync(record, core.prechecks[i].gated());
            }
        }
        self.halted.store(core.needs_slow_path(), Ordering::Release);
    }

    /// The user confirms that the infrastructure behind a systemic failure is fixed (R9.3):
    /// calls resume, the tools it opened probe again with exponential backoff (R9.5), and
    /// every pre-call check is due again (R10.3). Returns the event, or `None` when no
    /// systemic failure is in force.
    pub fn confirm_recovery(&self) -> Option<SystemicEvent> {
        let step = self.step();
        let (event, events) = {
            let mut core = self.lock();
            let core = &mut *core;
            if !core.cascade.active() {
                return None;
            }
            let involved = core.cascade.involved.clone();
            for id in involved {
                if let Some(record) = core.records.get_mut(id.0 as usize)
                    && record.state != CircuitState::Closed
                {
                    record.backoff = 1;
                    record.opened_at_step = Some(step);
                    record.attempts_since_open = 0;
                    if let Some(slot) = self.slots.get(id.0) {
                        slot.hot.reset_attempts(0);
                    }
                }
            }
            for precheck in &mut core.prechecks {
                precheck.result = None;
            }
            // The backoff shares (R9.5) of who backs off now, kept until the next recovery.
            core.shares = Some(self.chain_shares(core, self.policy.backoff_cap()));
            let event = core.cascade.event.as_mut().map(|e| {
                e.recovered = true;
                e.clone()
            });
            if matches!(core.halt, Some(PauseReason::Systemic { .. })) {
                core.halt = None;
            }
            let mut events = vec![Event::RecoveryConfirmed];
            self.exhaust(core, &mut events);
            self.sync_all(core);
            (event, events)
        };
        self.emit(&events);
        event
    }

    /// The systemic failure in force, or the last one.
    pub fn systemic_event(&self) -> Option<SystemicEvent> {
        self.lock().cascade.event.clone()
    }

    #[cold]
    fn release_probe(&self, tool: ToolId, via: Via) {
        let Some(slot) = self.slots.get(tool.0) else {
            return;
        };
        let event = {
            let mut core = self.lock();
            let core = &mut *core;
            let i = tool.0 as usize;
            let record = &mut core.records[i];
            let t = record.cancel(via);
            slot.hot.sync(record, core.prechecks[i].gated());
            t.map(|t| Self::transition_event(slot, record, t))
        };
        if let Some(event) = event {
            self.emit(&[event]);
        }
    }

    fn transition_event(slot: &ToolSlot, record: &BreakerRecord, t: Transition) -> Event {
        let tool = slot.spec.name().to_owned();
        let message = || {
            record
                .last_failure
                .as_ref()
                .map(|m| m.failure.message().to_owned())
                .unwrap_or_default()
        };
        match t {
            Transition::Opened => Event::Opened {
                tool,
                consecutive_failures: record.consecutive_failures,
                message: message(),
            },
            Transition::Reopened => Event::Reopened {
                tool,
                consecutive_failures: record.consecutive_failures,
                message: message(),
            },
            Transition::HalfOpened => Event::HalfOpened { tool },
            Transition::Closed => Event::Closed { tool },
            Transition::ProbeReleased => Event::ProbeReleased { tool },
        }
    }

    /// Emits events through `tracing` and the observers; never called with the lock held.
    pub(crate) fn emit(&self, events: &[Event]) {
        for event in events {
            event.trace();
            for observer in &self.observers {
                observer.on_event(event);
            }
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Core> {
        // Nothing panics while holding the lock (observers run after it is released), so a
        // poisoned lock still guards consistent state.
        self.core.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    #[inline]
    pub(crate) fn slot(&self, tool: ToolId) -> Option<&ToolSlot> {
        self.slots.get(tool.0)
    }

    /// Registers a tool under the lock: slot first, then its record, then its name.
    pub(crate) fn push_tool(
        &self,
        core: &mut Core,
        spec: ToolSpec,
        alternatives: Box<[ToolId]>,
    ) -> ToolId {
        let id = ToolId(u32::try_from(core.records.len()).unwrap_or(u32::MAX));
        let settings = Settings {
            threshold: spec.threshold_override().unwrap_or(self.policy.threshold()),
            probe_every: spec
                .probe_every_override()
                .unwrap_or(self.policy.probe_every()),
            probe_unit: self.policy.probe_unit(),
        };
        core.names.insert(spec.name().into(), id);
        core.records.push(BreakerRecord::default());
        core.shares = None;
        let disallowed = core
            .allowed
            .as_ref()
            .is_some_and(|allowed| !allowed.iter().any(|a| a == spec.name()));
        core.prechecks.push(Precheck {
            result: None,
            disallowed,
        });
        if spec.is_caching() {
            core.freshness.set_profile(
                spec.name(),
                crate::freshness::FreshnessProfile {
                    caches: true,
                    source: None,
                },
            );
        }
        self.slots.insert(
            id.0,
            ToolSlot {
                spec,
                alternatives,
                settings,
                hot: Hot::new(),
            },
        );
        // The mirror starts as the record does, gated when the allowed-tools list leaves the
        // tool out (a fresh mirror would let the fast path call it).
        if let Some(slot) = self.slots.get(id.0) {
            slot.hot.sync(&core.records[id.0 as usize], disallowed);
        }
        id
    }

    /// The names of every registered tool, in registration order (so that suggestions are
    /// the same from run to run).
    pub(crate) fn names_in_order(&self, core: &Core) -> Vec<&str> {
        (0..core.records.len())
            .filter_map(|i| u32::try_from(i).ok())
            .filter_map(|i| self.slot(ToolId(i)).map(|s| s.spec.name()))
            .collect()
    }

    /// The id of the tool named `name`, if known.
    pub fn tool(&self, name: &str) -> Option<ToolId> {
        self.lock().names.get(name).copied()
    }

    /// The name of a tool.
    pub fn tool_name(&self, tool: impl Into<ToolId>) -> Option<&str> {
        self.slot(tool.into()).map(|s| s.spec.name())
    }

    /// Registers a tool found at run time (R2.4, B6), checked like a map entry (R1.4): its
    /// alternatives must name known tools. It starts CLOSED. Registering a name already known
    /// returns its id unchanged when the spec is the same.
    ///
    /// # Errors
    /// [`MapErrors`] with every problem of the spec, including a different spec under a
    /// known name.
    pub fn discover(&self, spec: ToolSpec) -> Result<ToolId, MapErrors> {
        let id = {
            let mut core = self.lock();
            if let Some(&id) = core.names.get(spec.name()) {
                let same = self.slot(id).is_some_and(|s| s.spec == spec);
                return if same {
                    Ok(id)
                } else {
                    Err(MapErrors(vec![MapError::DuplicateTool {
                        tool: spec.name().to_owned(),
                        first: id.0 as usize,
                        index: core.records.len(),
                    }]))
                };
            }
            let mut errors = Vec::new();
            let index = core.records.len();
            if spec.name().trim().is_empty() {
                errors.push(MapError::EmptyName { index });
            }
            if index >= MAX_TOOLS {
                errors.push(MapError::TooManyTools { limit: MAX_TOOLS });
            }
            let names = self.names_in_order(&core);
            check_tool(&spec, index, &names, &mut errors);
            if !errors.is_empty() {
                return Err(MapErrors(errors));
            }
            let alternatives = spec
                .alternatives()
                .iter()
                .filter_map(|a| core.names.get(a.tool()).copied())
                .collect();
            self.push_tool(&mut core, spec, alternatives)
        };
        let name = self.tool_name(id).unwrap_or_default().to_owned();
        self.emit(&[Event::ToolDiscovered { tool: name }]);
        Ok(id)
    }

    /// Every registered tool, in registration order.
    pub fn tools(&self) -> impl Iterator<Item = ToolId> + '_ {
        let n = u32::try_from(self.lock().records.len()).unwrap_or(u32::MAX);
        (0..n).map(ToolId)
    }

    /// The capability map as it stands: the declared tools and those discovered since.
    pub fn capability_map(&self) -> CapabilityMap {
        self.tools()
            .filter_map(|id| self.slot(id))
            .fold(CapabilityMap::new(), |map, slot| {
                map.tool(slot.spec.clone())
            })
    }

    /// A copy of one tool's breaker (R2.1).
    pub fn breaker(&self, tool: impl Into<ToolId>) -> Option<BreakerRecord> {
        let tool = tool.into();
        let core = self.lock();
        core.records
            .get(tool.0 as usize)
            .map(|r| self.record_view(tool, r))
    }

    /// A copy of a record with the attempt count the rejection path keeps in the mirror.
    pub(crate) fn record_view(&self, tool: ToolId, record: &BreakerRecord) -> BreakerRecord {
        let mut copy = record.clone();
        if copy.state == CircuitState::Open
            && let Some(slot) = self.slot(tool)
        {
            copy.attempts_since_open = slot.hot.attempts();
        }
        copy
    }

    /// The state of one tool, lock-free.
    pub fn state(&self, tool: impl Into<ToolId>) -> Option<CircuitState> {
        self.slot(tool.into()).map(|s| s.hot.state())
    }

    /// Tools with no alternative (R1.3).
    pub fn is_critical(&self, tool: impl Into<ToolId>) -> Option<bool> {
        self.slot(tool.into()).map(|s| s.spec.is_critical())
    }

    /// The failure budget of this cycle, with its ledger (R7).
    pub fn budget(&self) -> Budget {
        self.lock().budget.clone()
    }

    /// Whether every call is paused, and why.
    pub fn paused(&self) -> Option<PauseReason> {
        self.lock().halt
    }

    /// The wall clock's time now.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Whether `tool` is declared as caching (R6.2).
    pub fn is_caching(&self, tool: impl Into<ToolId>) -> bool {
        self.slot(tool.into()).is_some_and(|s| s.spec.is_caching())
    }

    /// The agent's current step.
    #[inline]
    pub fn step(&self) -> u64 {
        self.step.load(Ordering::Acquire)
    }

    /// Moves to the next step and returns it. Steps count probe intervals in
    /// [`ProbeUnit::Steps`](crate::ProbeUnit::Steps) and date ledger entries.
    pub fn advance_step(&self) -> u64 {
        // Saturating: a counter that wrapped to 0 would never reach a probe's step again.
        let previous = self
            .step
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                Some(s.saturating_add(1))
            })
            .unwrap_or(u64::MAX);
        previous.saturating_add(1)
    }

    /// Starts a new cycle (R7.4): the budget and ledger reset, a budget pause (or a pause for
    /// lack of achievable work) lifts; breaker states are kept, and so is a systemic pause,
    /// which only [`confirm_recovery`](Self::confirm_recovery) lifts. Returns the new cycle's
    /// number.
    pub fn new_cycle(&self) -> u64 {
        let cycle = {
            let mut core = self.lock();
            core.budget.next_cycle();
            core.cycle_started_at = self.clock.now();
            if matches!(
                core.halt,
                Some(PauseReason::BudgetExhausted { .. } | PauseReason::NothingAchievable)
            ) {
                core.halt = None;
            }
            core.deferred = None;
            self.halted.store(core.needs_slow_path(), Ordering::Release);
            core.budget.cycle()
        };
        self.emit(&[Event::CycleStarted { cycle }]);
        cycle
    }

    pub(crate) fn set_step(&self, step: u64) {
        self.step.store(step, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_locate_every_index_once() {
        assert_eq!(Slots::locate(0), (0, 0));
        assert_eq!(Slots::locate(15), (0, 15));
        assert_eq!(Slots::locate(16), (1, 0));
        assert_eq!(Slots::locate(47), (1, 31));
        assert_eq!(Slots::locate(48), (2, 0));
        let (chunk, _) = Slots::locate(u32::MAX);
        assert!(chunk < CHUNKS);
    }

    #[test]
    fn expeditor_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Expeditor>();
        check::<Ticket<'static>>();
    }
}
