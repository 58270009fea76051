//! The failure budget of a cycle and its ledger (R7): every failure is written down
//! (tool, message, step); the budget counts them, and once it is spent the expeditor pauses
//! every tool until a new cycle. A new cycle resets the budget and keeps breaker states
//! (R7.4).
//!
//! The ledger is bounded: it keeps the first [`LEDGER_HEAD`] lines of a cycle and
//! its latest lines, at most [`LEDGER_LINES`] in all. Lines in between are counted, never
//! forgotten: how many, how many were charged, folded into a systemic event or held pending
//! (by tool, so that a tool that recovers is charged for them). With the default budget of 5
//! no cycle comes near the bound; a budget of a million keeps 256 lines, not a million.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::model::clock::Timestamp;
use crate::model::failure::Failure;
use crate::model::id::ToolName;
use crate::model::ledger::Lines;

/// One line of the ledger (R7.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(clippy::struct_excessive_bools)] // four independent flags of one line, as data
pub struct LedgerEntry {
    /// The tool that failed (for a systemic event's line, every tool it took down, joined
    /// with `, `).
    pub tool: ToolName,
    /// Its error message and category.
    pub failure: Failure,
    /// The agent's step.
    pub step: u64,
    /// Wall time.
    pub at: Timestamp,
    /// Whether this failure consumed budget. Failures of calls still in flight when the
    /// budget ran out are written down but not charged: the budget is never exceeded.
    pub charged: bool,
    /// Held uncharged: its category matches an OPEN circuit's, so it may belong to a
    /// systemic event (R9.4). Charged if its tool recovers instead.
    #[serde(default, skip_serializing_if = "is_false")]
    pub pending: bool,
    /// Folded into a systemic event, which is charged once for all its failures (R9.4).
    #[serde(default, skip_serializing_if = "is_false")]
    pub systemic: bool,
    /// The line of a systemic event itself (its tools joined in `tool`), charged once for the
    /// failures folded into it (R9.4).
    #[serde(default, skip_serializing_if = "is_false")]
    pub event: bool,
    /// Charged once, then left the budget's rolling window (B13): written down, no longer
    /// counted.
    #[serde(default, skip_serializing_if = "is_false")]
    pub expired: bool,
    /// The model's id for the call that failed, when its caller gave one (B18:
    /// `telemetry::with_call_id`, `ToolDispatch::dispatch_call`, an MCP request's id): the
    /// line can be matched with the model's transcript and the call's span.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_false(b: &bool) -> bool {
    !*b
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The most ledger lines a cycle keeps.
pub const LEDGER_LINES: usize = 256;
/// The first lines of a cycle, always kept: how it began.
pub const LEDGER_HEAD: usize = 32;
/// How many lines go at once when the ledger is full (after the head, the oldest), so that
/// the cost of dropping is spread over as many failures.
const LEDGER_DROP: usize = 64;

/// The ledger lines of a cycle that were not kept (see the module documentation): counted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dropped {
    /// Lines not kept.
    pub lines: u64,
    /// Of them, charged.
    pub charged: u64,
    /// Of them, folded into a systemic event.
    pub systemic: u64,
    /// Of them, lines of a systemic event itself.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub events: u64,
    /// Of them, held pending, by tool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<(ToolName, u64)>,
    /// Of them, charged and then out of the budget's rolling window (B13).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub expired: u64,
    /// When the latest of them was written down: the window forgets the charged ones once
    /// it has passed that (they are counted, not dated one by one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest: Option<Timestamp>,
}

impl Dropped {
    /// No line was dropped.
    pub fn is_empty(&self) -> bool {
        self.lines == 0
    }

    fn pending_total(&self) -> u64 {
        self.pending.iter().map(|(_, n)| *n).sum()
    }

    /// Counts `lines`, dropped. The flags are summed without a branch a line: a batch is
    /// counted on every [`LEDGER_DROP`] failures of a full ledger.
    fn count(&mut self, lines: &[LedgerEntry]) {
        let (mut charged, mut systemic, mut events, mut expired) = (0u64, 0u64, 0u64, 0u64);
        let mut latest = self.latest;
        for line in lines {
            latest = latest.max(Some(line.at));
            expired += u64::from(line.expired);
            events += u64::from(line.event);
            charged += u64::from(line.charged);
            systemic += u64::from(!line.charged && line.systemic);
            if !line.charged && !line.systemic && line.pending {
                match self.pending.iter_mut().find(|(t, _)| *t == line.tool) {
                    Some((_, n)) => *n = n.saturating_add(1),
                    None => self.pending.push((line.tool.clone(), 1)),
                }
            }
        }
        let n = u64::try_from(lines.len()).unwrap_or(u64::MAX);
        self.lines = self.lines.saturating_add(n);
        self.latest = latest;
        self.charged = self.charged.saturating_add(charged);
        self.systemic = self.systemic.saturating_add(systemic);
        self.events = self.events.saturating_add(events);
        self.expired = self.expired.saturating_add(expired);
    }

    fn take_pending(&mut self, tool: &str) -> u64 {
        match self.pending.iter().position(|(t, _)| t.as_str() == tool) {
            Some(i) => self.pending.swap_remove(i).1,
            None => 0,
        }
    }
}

/// The budget of the current cycle with its ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    pub(crate) cycle: u64,
    pub(crate) limit: u32,
    pub(crate) consumed: u32,
    pub(crate) ledger: Lines,
    /// The lines not kept, counted.
    #[serde(default, skip_serializing_if = "Dropped::is_empty")]
    pub(crate) dropped: Dropped,
}

impl Budget {
    pub(crate) fn new(limit: u32) -> Self {
        Budget {
            cycle: 1,
            limit,
            consumed: 0,
            ledger: Lines::default(),
            dropped: Dropped::default(),
        }
    }

    /// Writes `line` down, dropping the oldest lines after the head first when the ledger
    /// is full.
    #[inline]
    fn write(&mut self, line: LedgerEntry) {
        if self.ledger.len() >= LEDGER_LINES {
            self.drop_lines();
        }
        self.ledger.push(line);
    }

    /// Drops [`LEDGER_DROP`] lines after the head (fewer when the ledger is shorter), counting
    /// them.
    #[cold]
    #[inline(never)]
    fn drop_lines(&mut self) {
        let dropped = &mut self.dropped;
        self.ledger
            .drop_after(LEDGER_HEAD, LEDGER_DROP, |lines| dropped.count(lines));
    }

    /// Brings a restored ledger within [`LEDGER_LINES`].
    pub(crate) fn compact(&mut self) {
        while self.ledger.len() > LEDGER_LINES {
            self.drop_lines();
        }
    }

    /// Writes a failure down (of the call `call_id`, when known) and charges it if budget is
    /// left — unless it is `pending` (it may belong to a systemic event). Returns whether this
    /// charge spent the last of the budget.
    #[inline]
    pub(crate) fn charge(
        &mut self,
        tool: ToolName,
        failure: Failure,
        step: u64,
        at: Timestamp,
        pending: bool,
        call_id: Option<String>,
    ) -> bool {
        let charged = !pending && self.take_one();
        self.write(LedgerEntry {
            tool,
            failure,
            step,
            at,
            charged,
            pending,
            systemic: false,
            event: false,
            expired: false,
            call_id,
        });
        charged && self.consumed == self.limit
    }

    /// Forgets, for the budget, every charged failure written down `window` or longer before
    /// `now` (B13): the lines stay in the ledger, marked expired. Returns whether any did.
    pub(crate) fn expire(&mut self, now: Timestamp, window: std::time::Duration) -> bool {
        let old = |at: Timestamp| at.plus(window) <= now;
        let mut any = false;
        for entry in self.ledger.iter_mut() {
            if entry.charged && old(entry.at) {
                entry.charged = false;
                entry.expired = true;
                self.consumed -= 1;
                any = true;
            }
        }
        if self.dropped.charged > 0 && self.dropped.latest.is_some_and(old) {
            // At most `consumed`, so it fits in a u32.
            self.consumed -= u32::try_from(self.dropped.charged).unwrap_or(0);
            self.dropped.expired = self.dropped.expired.saturating_add(self.dropped.charged);
            self.dropped.charged = 0;
            any = true;
        }
        any
    }

    /// When the next charged failure leaves a rolling `window`, if any is charged.
    pub(crate) fn next_expiry(&self, window: std::time::Duration) -> Option<Timestamp> {
        let kept = self.ledger.iter().filter(|e| e.charged).map(|e| e.at).min();
        let dropped = self.dropped.latest.filter(|_| self.dropped.charged > 0);
        kept.into_iter()
            .chain(dropped)
            .min()
            .map(|at| at.plus(window))
    }

    fn take_one(&mut self) -> bool {
        let charged = self.consumed < self.limit;
        if charged {
            self.consumed += 1;
        }
        charged
    }

    /// `tool` recovered: its pending failures were not part of an event after all, and are
    /// charged now. Returns whether that spent the last of the budget.
    pub(crate) fn settle(&mut self, tool: &str) -> bool {
        let mut exhausted = false;
        for i in 0..self.ledger.len() {
            if self.ledger[i].tool == tool && self.ledger[i].pending {
                self.ledger[i].pending = false;
                let charged = self.take_one();
                self.ledger[i].charged = charged;
                exhausted |= charged && self.consumed == self.limit;
            }
        }
        for _ in 0..self.dropped.take_pending(tool) {
            if self.take_one() {
                self.dropped.charged = self.dropped.charged.saturating_add(1);
                exhausted |= self.consumed == self.limit;
            }
        }
        exhausted
    }

    /// The failure just written down belongs to the systemic event in force: not charged.
    pub(crate) fn absorb_last(&mut self) {
        if let Some(entry) = self.ledger.last_mut() {
            if entry.charged {
                self.consumed -= 1;
            }
            entry.charged = false;
            entry.pending = false;
            entry.systemic = true;
        }
    }

    /// Whether `tool` has failures held pending.
    pub(crate) fn has_pending(&self, tool: &str) -> bool {
        self.ledger.iter().any(|e| e.pending && e.tool == tool)
            || self.dropped.pending.iter().any(|(t, _)| *t == tool)
    }

    /// Folds the last `runs[i].1` failures of each tool `runs[i].0` into one systemic event,
    /// written down as one line and charged once (R9.4). Returns whether the budget is spent
    /// after the fold. A run longer than the lines kept folds the tool's dropped pending
    /// lines too; dropped charged lines stay charged (they are counted, not named). `line` is
    /// the event's own line ([`LedgerEntry::event`]); whether it is charged is the fold's.
    pub(crate) fn fold(&mut self, runs: &[(&str, u32)], line: LedgerEntry) -> bool {
        for &(tool, count) in runs {
            let mut left = count;
            for entry in self.ledger.iter_mut().rev() {
                if left == 0 {
                    break;
                }
                if entry.tool == tool && !entry.systemic && !entry.expired {
                    left -= 1;
                    if entry.charged {
                        self.consumed -= 1;
                    }
                    entry.charged = false;
                    entry.pending = false;
                    entry.systemic = true;
                }
            }
            if left > 0
                && let Some((_, n)) = self.dropped.pending.iter_mut().find(|(t, _)| *t == tool)
            {
                let folded = (*n).min(u64::from(left));
                *n -= folded;
                self.dropped.systemic = self.dropped.systemic.saturating_add(folded);
                self.dropped.pending.retain(|(_, n)| *n > 0);
            }
        }
        let charged = self.take_one();
        self.write(LedgerEntry { charged, ..line });
        self.consumed >= self.limit
    }

    /// Starts the next cycle: budget and ledger reset.
    pub(crate) fn next_cycle(&mut self) {
        self.cycle = self.cycle.saturating_add(1);
        self.consumed = 0;
        self.ledger.clear();
        self.dropped = Dropped::default();
    }

    /// Charges the ledger again against a new limit (a snapshot restored under another
    /// policy): the first `limit` failures are charged, the rest written down only.
    pub(crate) fn rebase(&mut self, limit: u32) {
        if self.limit == limit {
            return;
        }
        self.limit = limit;
        self.consumed = 0;
        // In the order of the cycle: the head, the dropped lines, the rest.
        let head = LEDGER_HEAD.min(self.ledger.len());
        let charge = |entry: &mut LedgerEntry, consumed: &mut u32| {
            // Failures folded into a systemic event, or held pending one, stay uncharged: the
            // event's own line carries the charge (R9.4).
            entry.charged =
                !entry.systemic && !entry.pending && !entry.expired && *consumed < limit;
            if entry.charged {
                *consumed += 1;
            }
        };
        for entry in &mut self.ledger[..head] {
            charge(entry, &mut self.consumed);
        }
        let chargeable = self
            .dropped
            .lines
            .saturating_sub(self.dropped.systemic)
            .saturating_sub(self.dropped.pending_total())
            .saturating_sub(self.dropped.expired);
        let room = u64::from(limit - self.consumed);
        self.dropped.charged = chargeable.min(room);
        // At most `room`, so it fits in a u32.
        self.consumed += u32::try_from(self.dropped.charged).unwrap_or(0);
        for entry in &mut self.ledger[head..] {
            charge(entry, &mut self.consumed);
        }
    }

    /// Checks a restored budget against the invariants the expeditor keeps.
    pub(crate) fn check(&self) -> Result<(), &'static str> {
        let kept = self.ledger.iter().filter(|e| e.charged).count();
        let charged = u64::try_from(kept)
            .unwrap_or(u64::MAX)
            .saturating_add(self.dropped.charged);
        let accounted = self
            .dropped
            .charged
            .saturating_add(self.dropped.systemic)
            .saturating_add(self.dropped.pending_total())
            .saturating_add(self.dropped.expired);
        if self.limit == 0 {
            Err("a budget of 0")
        } else if self.consumed > self.limit {
            Err("more budget consumed than the limit")
        } else if accounted > self.dropped.lines || self.dropped.events > self.dropped.lines {
            Err("more dropped ledger lines accounted for than were dropped")
        } else if u64::from(self.consumed) != charged {
            Err("consumed budget does not match the charged ledger entries")
        } else if self.cycle == 0 {
            Err("cycle 0 (cycles count from 1)")
        } else if self
            .ledger
            .iter()
            .any(|e| e.charged && (e.pending || e.systemic))
        {
            Err("a ledger line both charged and held for, or folded into, a systemic event")
        } else if self
            .ledger
            .iter()
            .any(|e| e.expired && (e.charged || e.pending))
        {
            Err("a ledger line both expired and charged or held pending")
        } else if self.ledger.iter().any(|e| e.pending && e.systemic) {
            Err("a ledger line both held for and folded into a systemic event")
        } else {
            Ok(())
        }
    }

    /// The current cycle, counting from 1.
    pub fn cycle(&self) -> u64 {
        self.cycle
    }

    /// Failures allowed per cycle.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Failures charged in this cycle.
    pub fn consumed(&self) -> u32 {
        self.consumed
    }

    /// The failures of this cycle, in order (R7.1): every one, unless the cycle had more than
    /// [`LEDGER_LINES`]; then the first [`LEDGER_HEAD`] and the latest, the others counted in
    /// [`dropped`](Self::dropped).
    pub fn ledger(&self) -> &[LedgerEntry] {
        &self.ledger
    }

    /// The lines of this cycle the ledger did not keep, counted.
    pub fn dropped(&self) -> &Dropped {
        &self.dropped
    }

    /// Every failure written down this cycle, kept or not.
    pub fn failures(&self) -> u64 {
        u64::try_from(self.ledger.len())
            .unwrap_or(u64::MAX)
            .saturating_add(self.dropped.lines)
    }

    /// The budget's status line (R7.2).
    pub fn status(&self) -> BudgetStatus {
        BudgetStatus {
            consumed: self.consumed,
            limit: self.limit,
        }
    }
}

/// How much of the budget is spent. Renders the source document's status line (R7.2):
/// `1 failure remaining before mandatory pause`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BudgetStatus {
    /// Failures charged this cycle.
    pub consumed: u32,
    /// Failures allowed per cycle.
    pub limit: u32,
}

impl BudgetStatus {
    /// Failures left before the mandatory pause.
    pub const fn remaining(&self) -> u32 {
        self.limit.saturating_sub(self.consumed)
    }

    /// Whether the budget is spent: the agent must pause.
    pub const fn is_exhausted(&self) -> bool {
        self.consumed >= self.limit
    }
}

impl fmt::Display for BudgetStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_exhausted() {
            return f.write_str("FAILURE BUDGET EXHAUSTED — PAUSING");
        }
        let n = self.remaining();
        write!(
            f,
            "{n} failure{} remaining before mandatory pause",
            if n == 1 { "" } else { "s" }
        )
    }
}

impl fmt::Display for Budget {
    /// The source document's "Failure Budget Enforcement" block (R7.1, R7.2).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Budget: {} failures per cycle", self.limit)?;
        writeln!(f, "Current: {} / {} consumed", self.consumed, self.limit)?;
        if !self.ledger.is_empty() {
            writeln!(f)?;
        }
        let head = LEDGER_HEAD.min(self.ledger.len());
        for (i, entry) in self.ledger.iter().enumerate() {
            if i == head && !self.dropped.is_empty() {
                writeln!(
                    f,
                    "  … {} more failures not kept here ({} charged)",
                    self.dropped.lines, self.dropped.charged
                )?;
            }
            let index = u64::try_from(i).unwrap_or(u64::MAX).saturating_add(1);
            let number = if i < head {
                index
            } else {
                index.saturating_add(self.dropped.lines)
            };
            write!(
                f,
                "  Failure {}: {} — \"{}\" (step {})",
                number,
                entry.tool,
                entry.failure.summary(),
                entry.step
            )?;
            if entry.systemic {
                f.write_str(" [part of a systemic event, charged once]")?;
            } else if entry.pending {
                f.write_str(" [correlated with an open circuit, not charged yet]")?;
            } else if !entry.charged {
                f.write_str(" [after pause, not charged]")?;
            }
            writeln!(f)?;
        }
        writeln!(f)?;
        let status = self.status();
        if status.is_exhausted() {
            write!(f, "Status: {status}")
        } else {
            write!(f, "Status: {status}")?;
            if status.remaining() == 1 {
                write!(
                    f,
                    "\n\n→ Next tool call proceeds with heightened caution\n→ If it fails: PAUSE and generate status report"
                )?;
            }
            Ok(())
        }
    }
}
