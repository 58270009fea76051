//! The ticket of a CALL or a PROBE (R3.2, R3.6): the only way to report the call's outcome,
//! and a cancellation when dropped unrecorded, so that a probe's slot is never left taken.

use std::fmt;

use super::Expeditor;
use super::mirror::Slot;
use crate::engine::Recorded;
use crate::model::breaker::Via;
use crate::model::failure::{Failure, FailureCategory};
use crate::model::id::ToolId;

/// Permission to call a tool once. Record the outcome with [`success`](Self::success) or
/// [`failure`](Self::failure); a ticket dropped unrecorded is a cancellation by the caller
/// (its future dropped by a timeout of its own, say): charged as neither, but counted
/// ([`BreakerRecord::cancelled`], the state table's `Cancelled by caller` line, B13), and a
/// dropped probe frees the half-open slot for the next caller. A call not made at all is
/// given back with [`cancel`](Self::cancel), which counts nothing. A ticket dropped
/// while its thread panics (the tool panicked) is recorded as a failure ([`PANICKED`]).
///
/// [`BreakerRecord::cancelled`]: crate::report::BreakerRecord::cancelled
#[must_use = "record the call's outcome through the ticket; dropping it counts as a cancellation"]
pub struct Ticket<'a> {
    pub(super) expeditor: &'a Expeditor,
    pub(super) slot: &'a Slot,
    pub(super) tool: ToolId,
    pub(super) via: Via,
    pub(super) done: bool,
}

impl fmt::Debug for Ticket<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ticket")
            .field("tool", &self.slot.def.spec.name())
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
        self.slot.def.spec.name()
    }

    /// Whether this is the probe of a HALF-OPEN tool.
    pub fn is_probe(&self) -> bool {
        matches!(self.via, Via::Probe(_))
    }

    /// Records a success (R3.3). On a CLOSED tool with no failures this takes no lock (see
    /// [`Expeditor`] for exactly what it reads and writes).
    // Always inlined: called out of line, the ticket was copied out of the decision with
    // 16-byte loads over fields `decide` had just stored 8 bytes at a time, a stalled
    // store-forward on every healthy call (perf); inlined, its fields stay in registers.
    #[inline(always)]
    #[allow(clippy::inline_always)]
    pub fn success(mut self) {
        self.done = true;
        let expeditor = self.expeditor;
        let step = expeditor.step();
        if self.via == Via::Call && self.slot.hot.absorb_success(step, || expeditor.now()) {
            return;
        }
        expeditor.record_success(self.tool, self.slot, self.via);
    }

    /// Records a failure (R3.3): consecutive failures + 1, last failure kept, budget charged,
    /// threshold checked. The caller keeps its error: the expeditor only needs its message
    /// and category (R3.5: nothing is swallowed, nothing is retried).
    ///
    /// A failure whose [`blame`](Failure::blame) is the caller's is recorded as
    /// [`mistake`](Self::mistake) records it: never charged (B14).
    pub fn failure(mut self, failure: impl Into<Failure>) -> Recorded {
        self.done = true;
        self.expeditor
            .record_failure(self.tool, Some(self.slot), self.via, failure.into())
    }

    /// Records that the tool answered the call as the caller's mistake (B14): a resource the
    /// call named that does not exist, an input it does not accept. It is the model's
    /// mistake: counted with its other mistakes (the policy's
    /// [`mistake_limit`](crate::Policy::mistake_limit) pauses every call when reached), never
    /// charged to the tool's breaker or the budget, never seen by cascade detection. The
    /// tool's run of failures is left as it was; a probe answered so is a successful probe
    /// (the tool was reached and answered coherently). The tool's message is the caller's to
    /// show the model; the expeditor keeps only the count.
    pub fn mistake(self) -> Recorded {
        self.mistake_of(crate::engine::MistakeKind::Rejected)
    }

    /// [`mistake`](Self::mistake), counted as `kind`.
    pub(crate) fn mistake_of(mut self, kind: crate::engine::MistakeKind) -> Recorded {
        self.done = true;
        self.expeditor
            .record_caller_mistake(self.tool, self.via, kind)
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

    /// Gives the ticket back unused, the call not made (the arguments were wrong, the
    /// server could not be reached first): neither success nor failure, and not counted as
    /// a cancellation. A held probe slot is freed.
    pub fn cancel(mut self) {
        self.done = true;
        release(self.expeditor, self.tool, self.via);
    }
}

impl Drop for Ticket<'_> {
    #[inline]
    fn drop(&mut self) {
        // Kept tiny so that the healthy path (a recorded ticket) stays inlined and in registers.
        if !self.done {
            abandon(self.expeditor, self.tool, self.via);
        }
    }
}

/// A ticket dropped unrecorded: a cancellation by the caller, counted on the tool's own
/// cell without a lock (B13) and said on the call's span — or, while its thread panics, a
/// failure. Takes the ticket's parts by value, so that the ticket itself never needs an
/// address.
#[cold]
#[inline(never)]
fn abandon(expeditor: &Expeditor, tool: ToolId, via: Via) {
    if std::thread::panicking() {
        // The call panicked while holding its ticket: a failure, not a cancellation. The panic
        // goes on to the caller; the breaker has counted it.
        let _ = expeditor.record_failure(
            tool,
            None,
            via,
            Failure::with_category(PANICKED, FailureCategory::Other),
        );
        return;
    }
    if let Some(slot) = expeditor.inner.mirror.get(tool) {
        slot.hot.count_cancellation();
    }
    crate::telemetry::cancelled();
    release(expeditor, tool, via);
}

/// A ticket given back: a probe's slot is freed for the next caller; a call's holds nothing.
fn release(expeditor: &Expeditor, tool: ToolId, via: Via) {
    if matches!(via, Via::Probe(_)) {
        expeditor.command(|engine, changes, _| engine.cancel(tool, via, changes));
    }
}

/// The failure recorded for a call that panicked with its ticket in hand.
pub const PANICKED: &str = "the tool panicked";
