//! One tool's circuit breaker (R2.1, R3.2, R3.3): its state, its consecutive failures,
//! its last failure and last success, and the transitions between CLOSED, OPEN and
//! HALF-OPEN.
//!
//! The record here is plain data changed by plain functions: no locks, no atomics. The engine
//! owns every record; the expeditor publishes a small atomic mirror of it for the healthy
//! path (`expeditor/mirror.rs`).

use std::fmt;
use std::num::NonZeroU64;

use serde::{Deserialize, Serialize};

use crate::model::clock::Timestamp;
use crate::model::failure::{Failure, FailureCategory};
use crate::model::policy::ProbeUnit;

/// The state of one tool's circuit (R2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CircuitState {
    /// Healthy: call it normally, count consecutive failures.
    #[serde(rename = "CLOSED")]
    Closed,
    /// Known broken: do not call it; route to an alternative or reduce scope.
    #[serde(rename = "OPEN")]
    Open,
    /// Was broken, may have recovered: exactly one probe call goes through.
    #[serde(rename = "HALF-OPEN")]
    HalfOpen,
}

impl CircuitState {
    /// The source document's spelling: `CLOSED`, `OPEN`, `HALF-OPEN`.
    pub const fn as_str(self) -> &'static str {
        match self {
            CircuitState::Closed => "CLOSED",
            CircuitState::Open => "OPEN",
            CircuitState::HalfOpen => "HALF-OPEN",
        }
    }

    /// The spelling of spans and metrics (B12): `closed`, `open`, `half_open`.
    pub(crate) const fn snake_name(self) -> &'static str {
        match self {
            CircuitState::Closed => "closed",
            CircuitState::Open => "open",
            CircuitState::HalfOpen => "half_open",
        }
    }

    pub(crate) const fn bits(self) -> u32 {
        match self {
            CircuitState::Closed => 0,
            CircuitState::Open => 1,
            CircuitState::HalfOpen => 2,
        }
    }

    pub(crate) const fn from_bits(bits: u32) -> Self {
        match bits & STATE_MASK {
            0 => CircuitState::Closed,
            1 => CircuitState::Open,
            _ => CircuitState::HalfOpen,
        }
    }
}

impl fmt::Display for CircuitState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

pub(crate) const STATE_MASK: u32 = 0b11;

/// The last failure of a tool: when, at which step, and what it said (R2.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureMark {
    /// Wall time of the failure.
    pub at: Timestamp,
    /// The agent's step when it failed.
    pub step: u64,
    /// The error message and its category.
    pub failure: Failure,
}

/// The last success of a tool (R2.1).
///
/// The healthy path does not read the wall clock: a tool's success is timed once per step,
/// when it first succeeds in that step. `step` is the latest step in which it succeeded and
/// `at` the first moment it was seen succeeding in that step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuccessMark {
    /// Wall time of the first success in `step`.
    pub at: Timestamp,
    /// The latest step in which the tool succeeded.
    pub step: u64,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// How many messages of the current run of failures a breaker keeps for its health summary.
pub(crate) const RUN_MEMORY: usize = 16;

/// How many failures of the run a breaker holds before it drops all but the last
/// [`RUN_MEMORY`]: 2 KiB for a tool that keeps failing.
const RUN_HELD: usize = 4 * RUN_MEMORY;

/// The full state of one tool's breaker (R2.1). Read it through
/// [`Expeditor::breaker`](crate::Expeditor::breaker); it is also what a snapshot stores.
///
/// Equality compares what a snapshot keeps: the probe in flight and its epoch belong to the
/// process and are left out.
///
/// What a tool that never failed does not need (its last failure, its run of failures, its
/// last success as a report reads it) is kept behind one pointer, allocated at its first
/// failure: a healthy tool's breaker is 56 bytes.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(into = "RecordWire", from = "RecordWire")]
pub struct BreakerRecord {
    pub(crate) state: CircuitState,
    pub(crate) consecutive_failures: u32,
    /// Attempts to use the tool since it last opened.
    pub(crate) attempts_since_open: u32,
    /// The last failure, the run and the last success; `None` until there is one.
    pub(crate) history: Option<Box<History>>,
    /// The step at which the circuit last opened (or re-opened after a failed probe), plus
    /// one: a niche for `None`, eight bytes less for every tool's record.
    pub(crate) opened_at: Option<NonZeroU64>,
    /// Failures recorded over the breaker's life, across cycles.
    pub(crate) total_failures: u64,
    /// After a systemic failure: how many probes in a row have failed since recovery was
    /// confirmed, plus one (0: no backoff). Probe intervals double with it (R9.5).
    pub(crate) backoff: u32,
    /// Whether a probe ticket is in flight: the ticket of the current [`epoch`](Self::epoch)
    /// (a probe is granted with a new epoch, and a restore moves the epoch on with no probe
    /// in flight). A flag, not the epoch again: 16 bytes less for every tool's record. Never
    /// persisted: a probe belongs to the process that issued it.
    pub(crate) probe: bool,
    /// Bumped for every probe granted and on restore, so a stale ticket never matches.
    pub(crate) epoch: u64,
}

// What the documentation above says, on 64-bit targets.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<BreakerRecord>() <= 48);

/// The part of a record a tool that never failed does without.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct History {
    last_failure: Option<FailureMark>,
    last_success: Option<SuccessMark>,
    /// The failures of the current consecutive run: the last [`RUN_MEMORY`] of it are the
    /// run as read ([`History::run`]). Up to [`RUN_HELD`] are held, and all but the run go
    /// at once, so that a failure moves a third of an earlier failure on average, not fifteen.
    recent_failures: Vec<Failure>,
    /// When an OPEN circuit's probe is due by time (B13), if the policy has a cool-down.
    due_at: Option<Timestamp>,
    /// Probes failed since the circuit opened: each doubles the cool-down.
    failed_probes: u32,
    /// Calls dropped by their caller before they answered (B13): counted, never charged.
    /// Kept by the mirror's cell, like the last success; here when a report reads it.
    cancelled: u64,
}

/// A copy holds the run as read, no more (a snapshot, a report).
impl Clone for History {
    fn clone(&self) -> Self {
        History {
            last_failure: self.last_failure.clone(),
            last_success: self.last_success,
            recent_failures: self.run().to_vec(),
            due_at: self.due_at,
            failed_probes: self.failed_probes,
            cancelled: self.cancelled,
        }
    }
}

impl History {
    /// The run as read: its last [`RUN_MEMORY`] failures, oldest first.
    fn run(&self) -> &[Failure] {
        let held = &self.recent_failures;
        &held[held.len().saturating_sub(RUN_MEMORY)..]
    }

    /// Drops the failures held before the run as read (see `recent_failures`).
    #[cold]
    #[inline(never)]
    fn drop_older(&mut self) {
        let older = self.recent_failures.len().saturating_sub(RUN_MEMORY);
        self.recent_failures.drain(..older);
    }

    /// [`run`](Self::run), owned: what a snapshot keeps.
    fn take_run(&mut self) -> Vec<Failure> {
        self.drop_older();
        std::mem::take(&mut self.recent_failures)
    }
}

/// A record as snapshots write and read it (the format of every version so far).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordWire {
    state: CircuitState,
    consecutive_failures: u32,
    last_failure: Option<FailureMark>,
    last_success: Option<SuccessMark>,
    opened_at_step: Option<u64>,
    attempts_since_open: u32,
    #[serde(default)]
    recent_failures: Vec<Failure>,
    total_failures: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    backoff: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    probe_due_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "is_zero")]
    failed_probes: u32,
    /// Calls dropped by their caller (B13); left out while there are none, so snapshots
    /// without cancellations read and write as before.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    cancelled: u64,
}

impl From<BreakerRecord> for RecordWire {
    fn from(record: BreakerRecord) -> Self {
        let opened_at_step = record.opened_at_step();
        let mut history = record.history.map(|h| *h).unwrap_or_default();
        let recent_failures = history.take_run();
        RecordWire {
            state: record.state,
            consecutive_failures: record.consecutive_failures,
            last_failure: history.last_failure,
            last_success: history.last_success,
            opened_at_step,
            attempts_since_open: record.attempts_since_open,
            recent_failures,
            total_failures: record.total_failures,
            backoff: record.backoff,
            probe_due_at: history.due_at,
            failed_probes: history.failed_probes,
            cancelled: history.cancelled,
        }
    }
}

impl From<RecordWire> for BreakerRecord {
    fn from(wire: RecordWire) -> Self {
        let history = History {
            last_failure: wire.last_failure,
            last_success: wire.last_success,
            recent_failures: wire.recent_failures,
            due_at: wire.probe_due_at,
            failed_probes: wire.failed_probes,
            cancelled: wire.cancelled,
        };
        BreakerRecord {
            state: wire.state,
            consecutive_failures: wire.consecutive_failures,
            attempts_since_open: wire.attempts_since_open,
            history: (history != History::default()).then(|| Box::new(history)),
            opened_at: opened_at(wire.opened_at_step),
            total_failures: wire.total_failures,
            backoff: wire.backoff,
            probe: false,
            epoch: 0,
        }
    }
}

/// A step as [`BreakerRecord::opened_at`] keeps it (the last step there is, never reached,
/// reads one less).
fn opened_at(step: Option<u64>) -> Option<NonZeroU64> {
    step.and_then(|s| NonZeroU64::new(s.saturating_add(1)))
}

impl PartialEq for BreakerRecord {
    fn eq(&self, other: &Self) -> bool {
        self.state == other.state
            && self.consecutive_failures == other.consecutive_failures
            && self.last_failure() == other.last_failure()
            && self.last_success() == other.last_success()
            && self.opened_at == other.opened_at
            && self.attempts_since_open == other.attempts_since_open
            && self.recent_failures() == other.recent_failures()
            && self.total_failures == other.total_failures
            && self.backoff == other.backoff
            && self.probe_due_at() == other.probe_due_at()
            && self.failed_probes() == other.failed_probes()
            && self.cancelled() == other.cancelled()
    }
}

impl Eq for BreakerRecord {}

impl Default for BreakerRecord {
    fn default() -> Self {
        BreakerRecord {
            state: CircuitState::Closed,
            consecutive_failures: 0,
            attempts_since_open: 0,
            history: None,
            opened_at: None,
            total_failures: 0,
            backoff: 0,
            probe: false,
            epoch: 0,
        }
    }
}

impl BreakerRecord {
    /// The circuit's state.
    pub fn state(&self) -> CircuitState {
        self.state
    }

    /// Consecutive failures (reset to 0 by a success on a CLOSED tool or a successful probe).
    pub fn consecutive_failures(&self) -> u32 {
        self.consecutive_failures
    }

    /// The last failure, if any.
    pub fn last_failure(&self) -> Option<&FailureMark> {
        self.history.as_ref()?.last_failure.as_ref()
    }

    /// The last success, if any.
    pub fn last_success(&self) -> Option<&SuccessMark> {
        self.history.as_ref()?.last_success.as_ref()
    }

    /// Sets the last success (the engine does not keep it: the mirror's cell does).
    pub(crate) fn set_last_success(&mut self, success: Option<SuccessMark>) {
        match (&mut self.history, success) {
            (Some(history), success) => history.last_success = success,
            (None, None) => {}
            (None, Some(_)) => {
                self.history = Some(Box::new(History {
                    last_success: success,
                    ..History::default()
                }));
            }
        }
    }

    /// When this OPEN circuit's probe is due by time (B13): `None` when the policy has no
    /// cool-down, or the circuit is not OPEN.
    pub fn probe_due_at(&self) -> Option<Timestamp> {
        self.history.as_ref()?.due_at
    }

    /// Probes failed since the circuit last opened from CLOSED: each doubles the cool-down.
    pub fn failed_probes(&self) -> u32 {
        self.history.as_ref().map_or(0, |h| h.failed_probes)
    }

    /// Sets when the probe is due by time (the engine's, which knows the policy and jitter).
    pub(crate) fn set_due(&mut self, due: Option<Timestamp>) {
        if let Some(history) = &mut self.history {
            history.due_at = due;
        } else if due.is_some() {
            self.history = Some(Box::new(History {
                due_at: due,
                ..History::default()
            }));
        }
    }

    /// Counts at least `n` failed probes since the circuit opened: the fleet's, when another
    /// worker's probe failed, so that the cool-down doubles across the fleet (B16).
    pub(crate) fn at_least_failed_probes(&mut self, n: u32) {
        if let Some(history) = &mut self.history {
            history.failed_probes = history.failed_probes.max(n);
        } else if n > 0 {
            self.history = Some(Box::new(History {
                failed_probes: n,
                ..History::default()
            }));
        }
    }

    /// Whether the probe is due by time at `now`.
    fn due_by_time(&self, now: Timestamp) -> bool {
        self.probe_due_at().is_some_and(|due| now >= due)
    }

    /// Calls of the tool dropped by their caller before they answered (B13): a ticket
    /// dropped unrecorded, e.g. by the caller's own timeout around the call. Counted over the
    /// breaker's life, never charged: a cancellation is neither a success nor a failure.
    pub fn cancelled(&self) -> u64 {
        self.history.as_ref().map_or(0, |h| h.cancelled)
    }

    /// Sets the cancellations (the engine does not count them: the mirror's cell does).
    pub(crate) fn set_cancelled(&mut self, cancelled: u64) {
        match (&mut self.history, cancelled) {
            (Some(history), n) => history.cancelled = n,
            (None, 0) => {}
            (None, n) => {
                self.history = Some(Box::new(History {
                    cancelled: n,
                    ..History::default()
                }));
            }
        }
    }

    /// The step at which the circuit last opened.
    pub fn opened_at_step(&self) -> Option<u64> {
        self.opened_at.map(|s| s.get() - 1)
    }

    /// Sets the step at which the circuit last opened.
    pub(crate) fn set_opened_at_step(&mut self, step: Option<u64>) {
        self.opened_at = opened_at(step);
    }

    /// Failures over the breaker's life.
    pub fn total_failures(&self) -> u64 {
        self.total_failures
    }

    /// Whether a probe is in flight right now.
    pub fn probe_in_flight(&self) -> bool {
        self.probe
    }

    /// The failures of the current consecutive run, oldest first (at most 16 kept).
    pub fn recent_failures(&self) -> &[Failure] {
        self.history.as_ref().map_or(&[], |h| h.run())
    }

    /// The categories of the current run, if they all agree.
    pub fn common_category(&self) -> Option<FailureCategory> {
        let run = self.recent_failures();
        let first = run.first()?.category();
        run.iter().all(|f| f.category() == first).then_some(first)
    }

    /// Checks the invariants a record must hold; used before a snapshot is restored.
    pub(crate) fn check(&self) -> Result<(), &'static str> {
        let open = self.state != CircuitState::Closed;
        if open && self.opened_at.is_none() {
            Err("an OPEN or HALF-OPEN circuit must record the step it opened at")
        } else if open && self.consecutive_failures == 0 {
            Err("an OPEN or HALF-OPEN circuit must have at least one consecutive failure")
        } else if self
            .history
            .as_ref()
            .is_some_and(|h| h.recent_failures.len() > RUN_MEMORY)
        {
            Err("more recent failures than a breaker keeps")
        } else if u64::from(self.consecutive_failures) > self.total_failures {
            Err("more consecutive failures than failures in total")
        } else {
            Ok(())
        }
    }
}

/// Which ticket an outcome is recorded through: a CALL, or the PROBE of a given epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    Call,
    Probe(u64),
}

/// The per-tool settings a breaker runs with (policy resolved with the tool's overrides).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Settings {
    pub(crate) threshold: u32,
    pub(crate) probe_every: u32,
    pub(crate) probe_unit: ProbeUnit,
}

/// What a transition did, for events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transition {
    Opened,
    HalfOpened,
    Closed,
    Reopened,
    ProbeReleased,
}

/// What the breaker says before a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Call,
    Probe(u64),
    SkipOpen,
    SkipProbeInFlight,
}

impl BreakerRecord {
    /// Decides for one attempt (R3.2: OPEN -> HALF-OPEN when a probe is due; R3.6: one probe).
    /// `interval` is the probe interval now in force: the policy's, or a longer one while
    /// backing off after a cascade (R9.5).
    /// A probe is due by the count or by time, whichever comes first (B13).
    pub(crate) fn decide(
        &mut self,
        settings: Settings,
        interval: u32,
        step: u64,
        now: Timestamp,
    ) -> (Verdict, Option<Transition>) {
        match self.state {
            CircuitState::Closed => (Verdict::Call, None),
            CircuitState::Open => {
                self.attempts_since_open = self.attempts_since_open.saturating_add(1);
                let due = match settings.probe_unit {
                    ProbeUnit::Attempts => self.attempts_since_open >= interval,
                    ProbeUnit::Steps => {
                        let opened = self.opened_at_step().unwrap_or(step);
                        step >= opened.saturating_add(u64::from(interval))
                    }
                } || self.due_by_time(now);
                if due {
                    self.state = CircuitState::HalfOpen;
                    (
                        Verdict::Probe(self.grant_probe()),
                        Some(Transition::HalfOpened),
                    )
                } else {
                    (Verdict::SkipOpen, None)
                }
            }
            CircuitState::HalfOpen => {
                if self.probe {
                    (Verdict::SkipProbeInFlight, None)
                } else {
                    (Verdict::Probe(self.grant_probe()), None)
                }
            }
        }
    }

    /// Whether the next attempt on this OPEN circuit would be its probe (what
    /// [`decide`](Self::decide) would answer, without changing anything).
    pub(crate) fn probe_due(
        &self,
        settings: Settings,
        interval: u32,
        step: u64,
        now: Timestamp,
    ) -> bool {
        self.state == CircuitState::Open
            && (match settings.probe_unit {
                ProbeUnit::Attempts => self.attempts_since_open.saturating_add(1) >= interval,
                ProbeUnit::Steps => {
                    let opened = self.opened_at_step().unwrap_or(step);
                    step >= opened.saturating_add(u64::from(interval))
                }
            } || self.due_by_time(now))
    }

    /// The probe is due by time: HALF-OPEN on probation, with no probe granted yet, so that
    /// a service offers the tool again and the next call is its one probe (B15).
    pub(crate) fn put_on_probation(&mut self) -> Option<Transition> {
        (self.state == CircuitState::Open).then(|| {
            self.state = CircuitState::HalfOpen;
            self.set_due(None);
            Transition::HalfOpened
        })
    }

    fn grant_probe(&mut self) -> u64 {
        self.epoch = self.epoch.wrapping_add(1);
        self.probe = true;
        self.epoch
    }

    /// OPEN from `step`; when its probe is due by time is the engine's to set (it knows the
    /// policy's cool-down and the jitter).
    fn open(&mut self, step: u64) {
        self.state = CircuitState::Open;
        self.set_opened_at_step(Some(step));
        self.attempts_since_open = 0;
        self.set_due(None);
    }

    /// Records a failure (R3.3): consecutive + 1, last failure kept, threshold checked; a
    /// failed probe re-opens (R3.2). Budget charging is the caller's.
    pub(crate) fn fail(
        &mut self,
        via: Via,
        settings: Settings,
        at: Timestamp,
        step: u64,
        failure: Failure,
    ) -> Option<Transition> {
        self.write_down(at, step, failure);
        match (via, self.state) {
            (Via::Probe(epoch), CircuitState::HalfOpen) if self.probe && self.epoch == epoch => {
                self.probe = false;
                self.open(step);
                if self.backoff > 0 {
                    self.backoff = self.backoff.saturating_add(1);
                }
                if let Some(history) = &mut self.history {
                    history.failed_probes = history.failed_probes.saturating_add(1);
                }
                Some(Transition::Reopened)
            }
            (_, CircuitState::Closed) if self.consecutive_failures >= settings.threshold => {
                self.open(step);
                if let Some(history) = &mut self.history {
                    history.failed_probes = 0;
                }
                Some(Transition::Opened)
            }
            // A late CALL (issued before the circuit left CLOSED) or a stale probe: the failure
            // counts, but only the live probe moves a HALF-OPEN circuit.
            _ => None,
        }
    }

    /// Records a success (R3.3): consecutive to 0 on a CLOSED tool; a successful probe closes
    /// the circuit (R3.2). The last success is not the engine's: the mirror's cell keeps it
    /// (the healthy path writes it without the lock).
    pub(crate) fn succeed(&mut self, via: Via) -> Option<Transition> {
        match (via, self.state) {
            (Via::Probe(epoch), CircuitState::HalfOpen) if self.probe && self.epoch == epoch => {
                self.come_up();
                Some(Transition::Closed)
            }
            (_, CircuitState::Closed) => {
                self.consecutive_failures = 0;
                self.forget_run();
                None
            }
            // A late CALL succeeding while the circuit is OPEN or HALF-OPEN: the success is
            // noted, the state waits for its probe.
            _ => None,
        }
    }

    /// Its server was found unreachable (B10): the failure is written down and the circuit
    /// opens at `step`, whatever its state (a probe in flight is void: its server is down).
    pub(crate) fn go_down(&mut self, at: Timestamp, step: u64, failure: Failure) {
        self.write_down(at, step, failure);
        self.rearm(step);
    }

    /// The run of failures is over (its messages go; the last failure stays).
    fn forget_run(&mut self) {
        if let Some(history) = &mut self.history {
            history.recent_failures.clear();
        }
    }

    /// One more failure in the run: counted, kept among the recent ones, the last.
    // Always inlined, its rare parts (the first failure's history, the run's older failures
    // dropped) out of line: called, it cost a failure more in moving its arguments and
    // saving registers than in writing.
    #[inline(always)]
    #[allow(clippy::inline_always)]
    fn write_down(&mut self, at: Timestamp, step: u64, failure: Failure) {
        self.consecutive_failures = self.consecutive_failures.saturating_add(1);
        self.total_failures = self.total_failures.saturating_add(1);
        let history = match &mut self.history {
            Some(history) => history,
            None => self.history.insert(Box::default()),
        };
        if history.recent_failures.len() >= RUN_HELD {
            history.drop_older();
        }
        history.recent_failures.push(failure.clone());
        history.last_failure = Some(FailureMark { at, step, failure });
    }

    /// OPEN from `step` on, whatever it was: a probe in flight is void, the next waits a
    /// whole interval (its server found unreachable, or a probe of it by another tool
    /// failed: B10).
    pub(crate) fn rearm(&mut self, step: u64) {
        self.probe = false;
        self.open(step);
    }

    /// CLOSED, the run forgotten: a successful probe of its own, or its server reached
    /// again by another tool's probe or another worker's (B10, B11).
    pub(crate) fn come_up(&mut self) {
        self.probe = false;
        self.state = CircuitState::Closed;
        self.consecutive_failures = 0;
        self.forget_run();
        self.opened_at = None;
        self.attempts_since_open = 0;
        self.backoff = 0;
        if let Some(history) = &mut self.history {
            history.due_at = None;
            history.failed_probes = 0;
        }
    }

    /// A probe ticket dropped unrecorded: a cancellation, neither success nor failure. It
    /// frees the half-open slot so the next attempt can probe.
    pub(crate) fn cancel(&mut self, via: Via) -> Option<Transition> {
        match via {
            Via::Probe(epoch) if self.probe && self.epoch == epoch => {
                self.probe = false;
                Some(Transition::ProbeReleased)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETTINGS: Settings = Settings {
        threshold: 3,
        probe_every: 3,
        probe_unit: ProbeUnit::Attempts,
    };

    const T0: Timestamp = Timestamp::EPOCH;

    fn fail(r: &mut BreakerRecord, via: Via, step: u64) -> Option<Transition> {
        r.fail(via, SETTINGS, Timestamp::EPOCH, step, Failure::new("boom"))
    }

    #[test]
    fn record_walks_the_seed_cycle() {
        let mut r = BreakerRecord::default();
        assert_eq!(fail(&mut r, Via::Call, 1), None);
        assert_eq!(fail(&mut r, Via::Call, 1), None);
        assert_eq!(fail(&mut r, Via::Call, 2), Some(Transition::Opened));
        assert_eq!(r.opened_at_step(), Some(2));
        assert_eq!(r.decide(SETTINGS, 3, 2, T0).0, Verdict::SkipOpen);
        assert_eq!(r.decide(SETTINGS, 3, 2, T0).0, Verdict::SkipOpen);
        let (verdict, t) = r.decide(SETTINGS, 3, 2, T0);
        let Verdict::Probe(epoch) = verdict else {
            panic!("third attempt after opening must probe, got {verdict:?}")
        };
        assert_eq!(t, Some(Transition::HalfOpened));
        assert_eq!(r.decide(SETTINGS, 3, 2, T0).0, Verdict::SkipProbeInFlight);
        assert_eq!(r.succeed(Via::Probe(epoch)), Some(Transition::Closed));
        assert_eq!((r.state, r.consecutive_failures), (CircuitState::Closed, 0));
        r.check().unwrap();
    }
}
