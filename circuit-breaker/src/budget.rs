//! The failure budget of a cycle and its ledger (SPEC R7): every failure is written down
//! (tool, message, step); the budget counts them, and once it is spent the expeditor pauses
//! every tool until a new cycle. A new cycle resets the budget and keeps breaker states
//! (R7.4).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::failure::Failure;

/// One line of the ledger (R7.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerEntry {
    /// The tool that failed.
    pub tool: String,
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
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_false(b: &bool) -> bool {
    !*b
}

/// The budget of the current cycle with its ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    pub(crate) cycle: u64,
    pub(crate) limit: u32,
    pub(crate) consumed: u32,
    pub(crate) ledger: Vec<LedgerEntry>,
}

impl Budget {
    pub(crate) fn new(limit: u32) -> Self {
        Budget {
            cycle: 1,
            limit,
            consumed: 0,
            ledger: Vec::new(),
        }
    }

    /// Writes a failure down and charges it if budget is left — unless it is `pending`
    /// (it may belong to a systemic event). Returns whether this charge spent the last of
    /// the budget.
    pub(crate) fn charge(
        &mut self,
        tool: &str,
        failure: Failure,
        step: u64,
        at: Timestamp,
        pending: bool,
    ) -> bool {
        let charged = !pending && self.take_one();
        self.ledger.push(LedgerEntry {
            tool: tool.to_owned(),
            failure,
            step,
            at,
            charged,
            pending,
            systemic: false,
        });
        charged && self.consumed == self.limit
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
    }

    /// Folds the last `runs[i].1` failures of each tool `runs[i].0` into one systemic event,
    /// written down as one line and charged once (R9.4). Returns whether the budget is spent
    /// after the fold.
    pub(crate) fn fold(&mut self, runs: &[(&str, u32)], line: LedgerEntry) -> bool {
        for &(tool, count) in runs {
            let mut left = count;
            for entry in self.ledger.iter_mut().rev() {
                if left == 0 {
                    break;
                }
                if entry.tool == tool && !entry.systemic {
                    left -= 1;
                    if entry.charged {
                        self.consumed -= 1;
                    }
                    entry.charged = false;
                    entry.pending = false;
                    entry.systemic = true;
                }
            }
        }
        let charged = self.take_one();
        self.ledger.push(LedgerEntry { charged, ..line });
        self.consumed >= self.limit
    }

    /// Starts the next cycle: budget and ledger reset.
    pub(crate) fn next_cycle(&mut self) {
        self.cycle = self.cycle.saturating_add(1);
        self.consumed = 0;
        self.ledger.clear();
    }

    /// Charges the ledger again against a new limit (a snapshot restored under another
    /// policy): the first `limit` failures are charged, the rest written down only.
    pub(crate) fn rebase(&mut self, limit: u32) {
        if self.limit == limit {
            return;
        }
        self.limit = limit;
        self.consumed = 0;
        for entry in &mut self.ledger {
            // Failures folded into a systemic event, or held pending one, stay uncharged: the
            // event's own line carries the charge (R9.4).
            entry.charged = !entry.systemic && !entry.pending && self.consumed < limit;
            if entry.charged {
                self.consumed += 1;
            }
        }
    }

    /// Checks a restored budget against the invariants the expeditor keeps.
    pub(crate) fn check(&self) -> Result<(), &'static str> {
        let charged = self.ledger.iter().filter(|e| e.charged).count();
        if self.limit == 0 {
            Err("a budget of 0")
        } else if self.consumed > self.limit {
            Err("more budget consumed than the limit")
        } else if usize::try_from(self.consumed).ok() != Some(charged) {
            Err("consumed budget does not match the charged ledger entries")
        } else if self.cycle == 0 {
            Err("cycle 0 (cycles count from 1)")
        } else if self
            .ledger
            .iter()
            .any(|e| e.charged && (e.pending || e.systemic))
        {
            Err("a ledger line both charged and held for, or folded into, a systemic event")
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

    /// Every failure of this cycle, in order (R7.1).
    pub fn ledger(&self) -> &[LedgerEntry] {
        &self.ledger
    }

    /// The budget's status line (R7.2).
    pub fn status(&self) -> BudgetStatus {
        BudgetStatus {
            consumed: self.consumed,
            limit: self.limit,
        }
    }
}

/// How much of the budget is spent. Renders the seed's status line (R7.2):
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
    /// The seed's "Failure Budget Enforcement" block (R7.1, R7.2).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Budget: {} failures per cycle", self.limit)?;
        writeln!(f, "Current: {} / {} consumed", self.consumed, self.limit)?;
        if !self.ledger.is_empty() {
            writeln!(f)?;
        }
        for (i, entry) in self.ledger.iter().enumerate() {
            write!(
                f,
                "  Failure {}: {} — \"{}\" (step {})",
                i + 1,
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
