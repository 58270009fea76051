//! The lock-free mirror of the engine, read by the healthy path and the rejection path (B5).
//!
//! Per tool, one word packs the state, the pre-call gate, the backoff flag and the
//! consecutive failures (0 means CLOSED with no failure: callable, and a success changes
//! nothing). The word and the opening step are written only by [`Mirror::publish`] (or, for
//! a command that changed one tool's record alone, [`Slot::publish`]), under the engine's
//! lock, from the engine's state; nothing else writes them.
//!
//! Two more cells per tool are the lock-free paths' own, because they change on paths that
//! take no lock:
//! - the attempt counter of an OPEN tool, counted by the rejection path (an increment) and
//!   set by `publish` only when the engine says so (the circuit opened, a record was
//!   restored);
//! - the last success (step and wall time), written by `Ticket::success` the first time a
//!   tool succeeds in a step, and by `publish` only on restore. The engine never keeps it.
//! - the cancellations (B13): calls dropped by their caller, counted where a dropped ticket
//!   lands (no lock: a caller's timeout must not wait on the engine), set by `publish` only
//!   on restore. The engine never keeps them either.
//!
//! A tool's cells and the pointer to its definition fill one cache line, and no two tools
//! share one: a tool written on (a success stamped once per step, an attempt counted) never
//! slows the healthy path of another tool, and a tool costs the mirror 64 bytes.
//!
//! The report layer's view joins the engine's record with these cells ([`Mirrored`]): reports
//! and snapshots read a tool through it.

use std::sync::{Arc, OnceLock};

use super::sync::{AtomicBool, AtomicU32, AtomicU64, CachePadded, Ordering};
use crate::engine::{Changes, Dirty, Engine};
use crate::model::breaker::{BreakerRecord, CircuitState, STATE_MASK, Settings, SuccessMark};
use crate::model::clock::Timestamp;
use crate::model::id::ToolId;
use crate::model::policy::ProbeUnit;
use crate::model::registry::ToolDef;
use crate::model::route::ToolView;
use crate::report::{Cells, Mirrored};

/// The word's bit for a tool held back by a pre-call check.
const GATED: u32 = 0b100;
/// The word's bit for a breaker backing off after a cascade (its interval needs the lock).
const BACKOFF: u32 = 0b1000;
/// The word's state bits of an OPEN breaker.
const OPEN_BITS: u32 = 1;
/// The success step before any success.
const NEVER: u64 = u64::MAX;

/// One tool's cells.
#[derive(Debug)]
pub(crate) struct Hot {
    word: AtomicU32,
    /// The step the circuit opened at (for probes counted in steps).
    opened_at: AtomicU64,
    /// Attempts since the circuit opened (see the module documentation).
    attempts: AtomicU32,
    /// When an OPEN circuit's probe is due by time, in milliseconds since the epoch; 0 for
    /// never (no cool-down). The rejection path reads the clock only when it is set.
    due_at: AtomicU64,
    /// The last success: written once per step, on the tool's own line (its word is read by
    /// the same calls that write it).
    success: SuccessCell,
    /// Calls dropped by their caller (B13); written only on that cold path.
    cancelled: AtomicU64,
}

/// The latest step with a success, and the wall time of the first success in it.
#[derive(Debug)]
struct SuccessCell {
    step: AtomicU64,
    at: AtomicU64,
}

/// What a lock-free look at an OPEN breaker says (the model test's driver reads it whole).
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpenCheck {
    /// No probe due: skip without the lock.
    Skip,
    /// A probe may be due, or the breaker is not simply OPEN: take the lock. `Some(n)` when
    /// this attempt was already counted as the `n`th.
    Slow(Option<u32>),
}

/// [`OpenCheck`] before the clock is read: `Timed` when only the time can say whether the
/// probe is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UntimedCheck {
    /// As [`OpenCheck::Skip`].
    Skip,
    /// As [`OpenCheck::Slow`].
    Slow(Option<u32>),
    /// Skip if the clock reads before `due_at` (ms), else as [`OpenCheck::Slow`]`(counted)`.
    Timed { counted: Option<u32>, due_at: u64 },
}

impl Hot {
    fn new() -> Self {
        Hot {
            word: AtomicU32::new(0),
            opened_at: AtomicU64::new(0),
            attempts: AtomicU32::new(0),
            due_at: AtomicU64::new(0),
            success: SuccessCell {
                step: AtomicU64::new(NEVER),
                at: AtomicU64::new(0),
            },
            cancelled: AtomicU64::new(0),
        }
    }

    /// Counts a call dropped by its caller (B13).
    pub(crate) fn count_cancellation(&self) {
        self.cancelled.fetch_add(1, Ordering::AcqRel);
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
    fn is_gated(&self) -> bool {
        self.word.load(Ordering::Acquire) & GATED != 0
    }

    /// The rejection path (R3.1): an OPEN breaker, not gated, not backing off after a
    /// cascade, whose probe is due neither by count nor by time, is skipped without the lock
    /// and without allocating. `now` is read only for a breaker with a cool-down.
    #[cfg(test)]
    pub(crate) fn check_open(
        &self,
        settings: Settings,
        step: u64,
        now: impl FnOnce() -> Timestamp,
    ) -> OpenCheck {
        match self.check_open_untimed(settings, step) {
            UntimedCheck::Skip => OpenCheck::Skip,
            UntimedCheck::Slow(counted) => OpenCheck::Slow(counted),
            UntimedCheck::Timed { counted, due_at } => {
                if now().as_millis() < due_at {
                    OpenCheck::Skip
                } else {
                    OpenCheck::Slow(counted)
                }
            }
        }
    }

    /// [`check_open`](Self::check_open) up to the clock: a caller that reads the clock out
    /// of line keeps the skip itself a leaf (no call, so no registers saved).
    #[inline]
    pub(crate) fn check_open_untimed(&self, settings: Settings, step: u64) -> UntimedCheck {
        if self.word.load(Ordering::Acquire) & (STATE_MASK | GATED | BACKOFF) != OPEN_BITS {
            return UntimedCheck::Slow(None);
        }
        let (skip, counted) = match settings.probe_unit {
            ProbeUnit::Attempts => {
                let n = self.count_attempt();
                (n < settings.probe_every, Some(n))
            }
            ProbeUnit::Steps => {
                let due = self
                    .opened_at
                    .load(Ordering::Acquire)
                    .saturating_add(u64::from(settings.probe_every));
                (step < due, None)
            }
        };
        let due_at = self.due_at.load(Ordering::Acquire);
        if !skip {
            UntimedCheck::Slow(counted)
        } else if due_at == 0 {
            UntimedCheck::Skip
        } else {
            UntimedCheck::Timed { counted, due_at }
        }
    }

    /// The attempts counted on an OPEN breaker since it opened.
    pub(crate) fn attempts(&self) -> u32 {
        self.attempts.load(Ordering::Acquire)
    }

    /// Counts one more attempt on an OPEN breaker; returns the count.
    pub(crate) fn count_attempt(&self) -> u32 {
        self.attempts
            .fetch_add(1, Ordering::AcqRel)
            .saturating_add(1)
    }

    /// The healthy success (B5): on a CLOSED tool with no failure, a success changes only
    /// the last-success cell, once per step. Returns `false` when the engine must record it
    /// (failures to reset, or not CLOSED). `now` is read only when the step is new.
    #[inline]
    pub(crate) fn absorb_success(&self, step: u64, now: impl FnOnce() -> Timestamp) -> bool {
        if self.word.load(Ordering::Acquire) != 0 {
            return false;
        }
        self.stamp_success(step, now);
        true
    }

    /// Writes the last success, the first time a tool succeeds in `step`.
    #[inline]
    pub(crate) fn stamp_success(&self, step: u64, now: impl FnOnce() -> Timestamp) {
        if self.success.step.load(Ordering::Acquire) != step {
            self.stamp_success_slow(step, now());
        }
    }

    #[cold]
    #[inline(never)]
    fn stamp_success_slow(&self, step: u64, now: Timestamp) {
        self.success.at.store(now.as_millis(), Ordering::Release);
        self.success.step.store(step, Ordering::Release);
    }

    fn last_success(&self) -> Option<SuccessMark> {
        let step = self.success.step.load(Ordering::Acquire);
        (step != NEVER).then(|| SuccessMark {
            at: Timestamp::from_millis(self.success.at.load(Ordering::Acquire)),
            step,
        })
    }

    fn publish(&self, record: &BreakerRecord, gated: bool) {
        let failures = record.consecutive_failures.min(u32::MAX >> 4);
        let gate = if gated { GATED } else { 0 };
        let backoff = if record.backoff > 0 { BACKOFF } else { 0 };
        self.opened_at
            .store(record.opened_at_step().unwrap_or(0), Ordering::Release);
        let due = record
            .probe_due_at()
            .filter(|_| record.state == CircuitState::Open)
            .map_or(0, |t| t.as_millis().max(1));
        self.due_at.store(due, Ordering::Release);
        self.word.store(
            (failures << 4) | backoff | gate | record.state.bits(),
            Ordering::Release,
        );
    }
}

/// A registered tool as the lock-free paths see it.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) def: Arc<ToolDef>,
    pub(crate) hot: Hot,
}

impl Slot {
    /// [`Mirror::publish_tool`], for a caller that holds the slot of `tool` already.
    #[inline]
    pub(crate) fn publish(&self, engine: &Engine, tool: ToolId) {
        if let Some(record) = engine.record(tool) {
            self.hot.publish(record, engine.gated(tool));
        }
    }
}

/// One tool's cache line: its slot, once registered.
#[derive(Debug)]
#[repr(align(64))]
struct Line(OnceLock<Slot>);

// A slot and its `OnceLock` fit one line: a tool never straddles two, nor shares one. (Not
// under the model check, whose atomics are shuttle's, larger.)
#[cfg(not(shuttle))]
const _: () = assert!(std::mem::size_of::<Line>() == 64);

/// First chunk holds 16 tools, each next chunk twice as many: indices up to `u32::MAX` fit.
const FIRST_CHUNK_BITS: u32 = 4;
const CHUNKS: usize = 29;

/// The mirror: an append-only table of slots readable without a lock (a slot never moves
/// once written, so the healthy path reaches it with two atomic loads), and the pause flag.
pub(crate) struct Mirror {
    chunks: [OnceLock<Box<[Line]>>; CHUNKS],
    /// A pause or a deferred sub-task is in force: every decide takes the slow path. Read by
    /// every `decide`, written only by `publish`: on a line of its own.
    halted: CachePadded<AtomicBool>,
}

impl std::fmt::Debug for Mirror {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mirror").finish_non_exhaustive()
    }
}

impl Mirror {
    pub(crate) fn new() -> Self {
        Mirror {
            chunks: [const { OnceLock::new() }; CHUNKS],
            halted: CachePadded(AtomicBool::new(false)),
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
    pub(crate) fn get(&self, tool: ToolId) -> Option<&Slot> {
        let (chunk, offset) = Self::locate(tool.index());
        self.chunks[chunk].get()?.get(offset)?.0.get()
    }

    #[inline]
    pub(crate) fn halted(&self) -> bool {
        self.halted.load(Ordering::Acquire)
    }

    /// Publishes what a command changed. Called under the engine's lock, after the command:
    /// the one writer of the mirror.
    pub(crate) fn publish(&self, engine: &Engine, changes: &Changes) {
        if let Some(rare) = changes.rare_ref() {
            for (id, def) in &rare.registered {
                self.insert(*id, Arc::clone(def));
            }
            // The cells first: a rejection that sees a freshly OPEN word counts on a fresh
            // counter.
            for &(tool, attempts) in &rare.attempts {
                if let Some(slot) = self.get(tool) {
                    slot.hot.attempts.store(attempts, Ordering::Release);
                }
            }
            for &(tool, success) in &rare.successes {
                if let Some(slot) = self.get(tool) {
                    let (step, at) = success.map_or((NEVER, 0), |s| (s.step, s.at.as_millis()));
                    slot.hot.success.at.store(at, Ordering::Release);
                    slot.hot.success.step.store(step, Ordering::Release);
                }
            }
            for &(tool, cancelled) in &rare.cancellations {
                if let Some(slot) = self.get(tool) {
                    slot.hot.cancelled.store(cancelled, Ordering::Release);
                }
            }
        }
        match changes.dirty {
            Dirty::None => {}
            Dirty::One(tool) => self.publish_tool(engine, tool),
            Dirty::All => (0..engine.len())
                .filter_map(|i| u32::try_from(i).ok())
                .for_each(|i| self.publish_tool(engine, ToolId::from_index(i))),
        }
        self.halted
            .store(engine.needs_slow_path(), Ordering::Release);
    }

    /// Publishes one tool's record, for a command that changed that record alone (the pause
    /// flag and the lock-free paths' own cells as they were). Called under the engine's lock.
    pub(crate) fn publish_tool(&self, engine: &Engine, tool: ToolId) {
        if let Some(slot) = self.get(tool) {
            slot.publish(engine, tool);
        }
    }

    /// Writes slot `tool`; called under the engine's lock, in id order.
    fn insert(&self, tool: ToolId, def: Arc<ToolDef>) {
        let (chunk, offset) = Self::locate(tool.index());
        let cells = self.chunks[chunk].get_or_init(|| {
            (0..(1usize << (chunk + FIRST_CHUNK_BITS as usize)))
                .map(|_| Line(OnceLock::new()))
                .collect()
        });
        // Ids are handed out once, under the lock, so the cell is empty.
        let _ = cells[offset].0.set(Slot {
            def,
            hot: Hot::new(),
        });
    }
}

impl ToolView for Mirror {
    fn usable(&self, tool: ToolId) -> bool {
        self.get(tool)
            .is_some_and(|s| s.hot.state() != CircuitState::Open && !s.hot.is_gated())
    }
}

impl Mirrored for Mirror {
    fn cells(&self, tool: ToolId) -> Option<Cells> {
        let slot = self.get(tool)?;
        Some(Cells {
            attempts: slot.hot.attempts.load(Ordering::Acquire),
            last_success: slot.hot.last_success(),
            cancelled: slot.hot.cancelled.load(Ordering::Acquire),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_locate_every_index_once() {
        assert_eq!(Mirror::locate(0), (0, 0));
        assert_eq!(Mirror::locate(15), (0, 15));
        assert_eq!(Mirror::locate(16), (1, 0));
        assert_eq!(Mirror::locate(47), (1, 31));
        assert_eq!(Mirror::locate(48), (2, 0));
        let (chunk, _) = Mirror::locate(u32::MAX);
        assert!(chunk < CHUNKS);
    }

    #[test]
    fn hot_word_packs_state_and_count() {
        let hot = Hot::new();
        let mut r = BreakerRecord::default();
        hot.publish(&r, false);
        assert!(hot.is_callable());
        assert!(hot.absorb_success(0, || Timestamp::from_secs(1)));
        assert_eq!(hot.last_success().map(|s| s.step), Some(0));
        r.consecutive_failures = 1;
        hot.publish(&r, false);
        assert!(hot.is_callable() && !hot.absorb_success(0, || Timestamp::EPOCH));
        r.state = CircuitState::Open;
        hot.publish(&r, true);
        assert_eq!(hot.state(), CircuitState::Open);
        assert!(hot.is_gated() && !hot.is_callable());
    }
}
