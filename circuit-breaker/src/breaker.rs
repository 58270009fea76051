//! One tool's circuit breaker (SPEC R2.1, R3.2, R3.3): its state, its consecutive failures,
//! its last failure and last success, and the transitions between CLOSED, OPEN and
//! HALF-OPEN.
//!
//! The record here is plain data changed by plain functions, under the expeditor's lock. A
//! small atomic mirror of it (`Hot`) lets the healthy path (decide + record success on a
//! CLOSED tool) run without taking that lock and without writing shared memory.

use crate::sync::{AtomicU32, AtomicU64, Ordering};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::failure::{Failure, FailureCategory};
use crate::policy::ProbeUnit;

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
    /// The seed's spelling: `CLOSED`, `OPEN`, `HALF-OPEN`.
    pub const fn as_str(self) -> &'static str {
        match self {
            CircuitState::Closed => "CLOSED",
            CircuitState::Open => "OPEN",
            CircuitState::HalfOpen => "HALF-OPEN",
        }
    }

    const fn bits(self) -> u32 {
        match self {
            CircuitState::Closed => 0,
            CircuitState::Open => 1,
            CircuitState::HalfOpen => 2,
        }
    }

    const fn from_bits(bits: u32) -> Self {
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

const STATE_MASK: u32 = 0b11;
/// The hot word's bit for a tool held back by a pre-call check.
const GATED: u32 = 0b100;
/// The hot word's bit for a breaker backing off after a cascade (its interval needs the lock).
const BACKOFF: u32 = 0b1000;
/// The hot word's state bits of an OPEN breaker.
const OPEN_BITS: u32 = 1;

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

/// How many messages of the current run of failures a breaker keeps for its health summary.
pub(crate) const RUN_MEMORY: usize = 16;

/// The full state of one tool's breaker (R2.1). Read it through
/// [`Expeditor::breaker`](crate::Expeditor::breaker); it is also what a snapshot stores.
///
/// Equality compares what a snapshot keeps: the probe in flight and its epoch belong to the
/// process and are left out.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BreakerRecord {
    pub(crate) state: CircuitState,
    pub(crate) consecutive_failures: u32,
    pub(crate) last_failure: Option<FailureMark>,
    pub(crate) last_success: Option<SuccessMark>,
    /// The step at which the circuit last opened (or re-opened after a failed probe).
    pub(crate) opened_at_step: Option<u64>,
    /// Attempts to use the tool since it last opened.
    pub(crate) attempts_since_open: u32,
    /// The failures of the current consecutive run (the last [`RUN_MEMORY`]).
    #[serde(default)]
    pub(crate) recent_failures: Vec<Failure>,
    /// Failures recorded over the breaker's life, across cycles.
    pub(crate) total_failures: u64,
    /// After a systemic failure: how many probes in a row have failed since recovery was
    /// confirmed, plus one (0: no backoff). Probe intervals double with it (R9.5).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) backoff: u32,
    /// The epoch of the probe ticket in flight, if any. Never persisted: a probe belongs to
    /// the process that issued it.
    #[serde(skip)]
    pub(crate) probe: Option<u64>,
    /// Bumped for every probe granted and on restore, so a stale ticket never matches.
    #[serde(skip)]
    pub(crate) epoch: u64,
}

impl PartialEq for BreakerRecord {
    fn eq(&self, other: &Self) -> bool {
        self.state == other.state
            && self.consecutive_failures == other.consecutive_failures
            && self.last_failure == other.last_failure
            && self.last_success == other.last_success
            && self.opened_at_step == other.opened_at_step
            && self.attempts_since_open == other.attempts_since_open
            && self.recent_failures == other.recent_failures
            && self.total_failures == other.total_failures
            && self.backoff == other.backoff
    }
}

impl Eq for BreakerRecord {}

impl Default for BreakerRecord {
    fn default() -> Self {
        BreakerRecord {
            state: CircuitState::Closed,
            consecutive_failures: 0,
            last_failure: None,
            last_success: None,
            opened_at_step: None,
            attempts_since_open: 0,
            recent_failures: Vec::new(),
            total_failures: 0,
            backoff: 0,
            probe: None,
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
        self.last_failure.as_ref()
    }

    /// The last success, if any.
    pub fn last_success(&self) -> Option<&SuccessMark> {
        self.last_success.as_ref()
    }

    /// The step at which the circuit last opened.
    pub fn opened_at_step(&self) -> Option<u64> {
        self.opened_at_step
    }

    /// Failures over the breaker's life.
    pub fn total_failures(&self) -> u64 {
        self.total_failures
    }

    /// Whether a probe is in flight right now.
    pub fn probe_in_flight(&self) -> bool {
        self.probe.is_some()
    }

    /// The failures of the current consecutive run, oldest first (at most 16 kept).
    pub fn recent_failures(&self) -> &[Failure] {
        &self.recent_failures
    }

    /// The categories of the current run, if they all agree.
    pub fn common_category(&self) -> Option<FailureCategory> {
        let first = self.recent_failures.first()?.category();
        self.recent_failures
            .iter()
            .all(|f| f.category() == first)
            .then_some(first)
    }

    /// Checks the invariants a record must hold; used before a snapshot is restored.
    pub(crate) fn check(&self) -> Result<(), &'static str> {
        let open = self.state != CircuitState::Closed;
        if open && self.opened_at_step.is_none() {
            Err("an OPEN or HALF-OPEN circuit must record the step it opened at")
        } else if open && self.consecutive_failures == 0 {
            Err("an OPEN or HALF-OPEN circuit must have at least one consecutive failure")
        } else if self.recent_failures.len() > RUN_MEMORY {
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
    pub(crate) fn decide(
        &mut self,
        settings: Settings,
        interval: u32,
        step: u64,
    ) -> (Verdict, Option<Transition>) {
        match self.state {
            CircuitState::Closed => (Verdict::Call, None),
            CircuitState::Open => {
                self.attempts_since_open = self.attempts_since_open.saturating_add(1);
                let due = match settings.probe_unit {
                    ProbeUnit::Attempts => self.attempts_since_open >= interval,
                    ProbeUnit::Steps => {
                        let opened = self.opened_at_step.unwrap_or(step);
                        step >= opened.saturating_add(u64::from(interval))
                    }
                };
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
            CircuitState::HalfOpen => match self.probe {
                Some(_) => (Verdict::SkipProbeInFlight, None),
                None => (Verdict::Probe(self.grant_probe()), None),
            },
        }
    }

    fn grant_probe(&mut self) -> u64 {
        self.epoch = self.epoch.wrapping_add(1);
        self.probe = Some(self.epoch);
        self.epoch
    }

    fn open(&mut self, step: u64) {
        self.state = CircuitState::Open;
        self.opened_at_step = Some(step);
        self.attempts_since_open = 0;
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
        self.consecutive_failures = self.consecutive_failures.saturating_add(1);
        self.total_failures = self.total_failures.saturating_add(1);
        if self.recent_failures.len() == RUN_MEMORY {
            self.recent_failures.remove(0);
        }
        self.recent_failures.push(failure.clone());
        self.last_failure = Some(FailureMark { at, step, failure });
        match (via, self.state) {
            (Via::Probe(epoch), CircuitState::HalfOpen) if self.probe == Some(epoch) => {
                self.probe = None;
                self.open(step);
                if self.backoff > 0 {
                    self.backoff = self.backoff.saturating_add(1);
                }
                Some(Transition::Reopened)
            }
            (_, CircuitState::Closed) if self.consecutive_failures >= settings.threshold => {
                self.open(step);
                Some(Transition::Opened)
            }
            // A late CALL (issued before the circuit left CLOSED) or a stale probe: the failure
            // counts, but only the live probe moves a HALF-OPEN circuit.
            _ => None,
        }
    }

    /// Records a success (R3.3): consecutive to 0 on a CLOSED tool; a successful probe closes
    /// the circuit (R3.2).
    pub(crate) fn succeed(&mut self, via: Via, at: Timestamp, step: u64) -> Option<Transition> {
        let same_step = self.last_success.is_some_and(|s| s.step == step);
        if !same_step {
            self.last_success = Some(SuccessMark { at, step });
        }
        match (via, self.state) {
            (Via::Probe(epoch), CircuitState::HalfOpen) if self.probe == Some(epoch) => {
                self.probe = None;
                self.state = CircuitState::Closed;
                self.consecutive_failures = 0;
                self.recent_failures.clear();
                self.opened_at_step = None;
                self.attempts_since_open = 0;
                self.backoff = 0;
                Some(Transition::Closed)
            }
            (_, CircuitState::Closed) => {
                self.consecutive_failures = 0;
                self.recent_failures.clear();
                None
            }
            // A late CALL succeeding while the circuit is OPEN or HALF-OPEN: the success is
            // noted, the state waits for its probe.
            _ => None,
        }
    }

    /// A probe ticket dropped unrecorded: a cancellation, neither success nor failure. It
    /// frees the half-open slot so the next attempt can probe.
    pub(crate) fn cancel(&mut self, via: Via) -> Option<Transition> {
        match via {
            Via::Probe(epoch) if self.probe == Some(epoch) => {
                self.probe = None;
                Some(Transition::ProbeReleased)
            }
            _ => None,
        }
    }
}

/// The lock-free mirror of a breaker read by the healthy path: state and consecutive
/// failures packed in one word (0 means CLOSED with no failure), and the latest step with a
/// recorded success.
#[derive(Debug)]
pub(crate) struct Hot {
    word: AtomicU32,
    last_success_step: AtomicU64,
    /// Attempts since the circuit opened: counted here, without the lock, on the rejection
    /// path; the record's `attempts_since_open` is refreshed from it under the lock.
    attempts: AtomicU32,
    /// The step the circuit opened at (for probes counted in steps).
    opened_at: AtomicU64,
}

/// `last_success_step` before any success.
const NEVER: u64 = u64::MAX;

/// What a lock-free look at an OPEN breaker says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpenCheck {
    /// No probe due: skip without the lock.
    Skip,
    /// A probe may be due, or the breaker is not simply OPEN: take the lock. `Some(n)` when
    /// this attempt was already counted as the `n`th.
    Slow(Option<u32>),
}

impl Hot {
    pub(crate) fn new() -> Self {
        Hot {
            word: AtomicU32::new(0),
            last_success_step: AtomicU64::new(NEVER),
            attempts: AtomicU32::new(0),
            opened_at: AtomicU64::new(0),
        }
    }

    #[inline]
    pub(crate) fn state(&self) -> CircuitState {
        CircuitState::from_bits(self.word.load(Ordering::Acquire))
    }

    /// CLOSED and not held back by a pre-call check: a decide may answer CALL at once.
    #[inline]
    pub(crate) fn is_callable(&self) -> bool {
        self.word.load(Ordering::Acquire) & (STATE_MASK | GATED) == 0
    }

    /// Held back by a pre-call check (UNAVAILABLE) or by the allowed-tools list.
    #[inline]
    pub(crate) fn is_gated(&self) -> bool {
        self.word.load(Ordering::Acquire) & GATED != 0
    }

    /// The rejection path (R3.1): an OPEN breaker, not gated, not backing off after a
    /// cascade, whose probe is not due, is skipped without the lock and without allocating.
    #[inline]
    pub(crate) fn check_open(&self, settings: Settings, step: u64) -> OpenCheck {
        if self.word.load(Ordering::Acquire) & (STATE_MASK | GATED | BACKOFF) != OPEN_BITS {
            return OpenCheck::Slow(None);
        }
        match settings.probe_unit {
            ProbeUnit::Attempts => {
                let n = self
                    .attempts
                    .fetch_add(1, Ordering::AcqRel)
                    .saturating_add(1);
                if n < settings.probe_every {
                    OpenCheck::Skip
                } else {
                    OpenCheck::Slow(Some(n))
                }
            }
            ProbeUnit::Steps => {
                let due = self
                    .opened_at
                    .load(Ordering::Acquire)
                    .saturating_add(u64::from(settings.probe_every));
                if step < due {
                    OpenCheck::Skip
                } else {
                    OpenCheck::Slow(None)
                }
            }
        }
    }

    /// Attempts counted since the circuit opened.
    pub(crate) fn attempts(&self) -> u32 {
        self.attempts.load(Ordering::Acquire)
    }

    /// Counts one more attempt on an OPEN breaker; returns the count.
    pub(crate) fn count_attempt(&self) -> u32 {
        self.attempts
            .fetch_add(1, Ordering::AcqRel)
            .saturating_add(1)
    }

    /// CLOSED, no consecutive failure, and a success already recorded in `step`: a success
    /// now changes nothing.
    #[inline]
    pub(crate) fn success_is_noop(&self, step: u64) -> bool {
        self.word.load(Ordering::Acquire) == 0
            && self.last_success_step.load(Ordering::Acquire) == step
    }

    /// Restarts the attempt counter: the circuit just (re)opened, or its record was replaced.
    pub(crate) fn reset_attempts(&self, attempts: u32) {
        self.attempts.store(attempts, Ordering::Release);
    }

    /// Copies the record into the mirror. Called under the expeditor's lock after every
    /// change (the attempt counter is the mirror's own: see `reset_attempts`).
    pub(crate) fn sync(&self, record: &BreakerRecord, gated: bool) {
        let failures = record.consecutive_failures.min(u32::MAX >> 4);
        let gate = if gated { GATED } else { 0 };
        let backoff = if record.backoff > 0 { BACKOFF } else { 0 };
        self.opened_at
            .store(record.opened_at_step.unwrap_or(0), Ordering::Release);
        self.word.store(
            (failures << 4) | backoff | gate | record.state.bits(),
            Ordering::Release,
        );
        let step = record.last_success.map_or(NEVER, |s| s.step);
        self.last_success_step.store(step, Ordering::Release);
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

    fn fail(r: &mut BreakerRecord, via: Via, step: u64) -> Option<Transition> {
        r.fail(via, SETTINGS, Timestamp::EPOCH, step, Failure::new("boom"))
    }

    #[test]
    fn record_walks_the_seed_cycle() {
        let mut r = BreakerRecord::default();
        assert_eq!(fail(&mut r, Via::Call, 1), None);
        assert_eq!(fail(&mut r, Via::Call, 1), None);
        assert_eq!(fail(&mut r, Via::Call, 2), Some(Transition::Opened));
        assert_eq!(r.opened_at_step, Some(2));
        assert_eq!(r.decide(SETTINGS, 3, 2).0, Verdict::SkipOpen);
        assert_eq!(r.decide(SETTINGS, 3, 2).0, Verdict::SkipOpen);
        let (verdict, t) = r.decide(SETTINGS, 3, 2);
        let Verdict::Probe(epoch) = verdict else {
            panic!("third attempt after opening must probe, got {verdict:?}")
        };
        assert_eq!(t, Some(Transition::HalfOpened));
        assert_eq!(r.decide(SETTINGS, 3, 2).0, Verdict::SkipProbeInFlight);
        assert_eq!(
            r.succeed(Via::Probe(epoch), Timestamp::EPOCH, 3),
            Some(Transition::Closed)
        );
        assert_eq!((r.state, r.consecutive_failures), (CircuitState::Closed, 0));
        r.check().unwrap();
    }

    #[test]
    fn hot_mirror_packs_state_and_count() {
        let hot = Hot::new();
        let mut r = BreakerRecord::default();
        hot.sync(&r, false);
        assert!(hot.is_callable() && !hot.success_is_noop(0));
        r.succeed(Via::Call, Timestamp::EPOCH, 0);
        hot.sync(&r, false);
        assert!(hot.success_is_noop(0) && !hot.success_is_noop(1));
        fail(&mut r, Via::Call, 0);
        hot.sync(&r, false);
        assert!(hot.is_callable() && !hot.success_is_noop(0));
        fail(&mut r, Via::Call, 0);
        fail(&mut r, Via::Call, 0);
        hot.sync(&r, false);
        assert_eq!(hot.state(), CircuitState::Open);
    }
}
