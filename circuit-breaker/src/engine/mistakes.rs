//! The model's own mistakes (B8, B14): counted apart from every breaker and the failure
//! budget, and pausing every call at the policy's limit.

use serde::{Deserialize, Serialize};

use super::{Changes, Engine, PauseReason, Recorded};
use crate::clock::Timestamp;
use crate::event::Event;
use crate::model::breaker::Via;
use crate::model::id::ToolId;

/// The model's own mistakes in this cycle (B8, B14): a tool name that is no tool, arguments
/// that do not parse, a call the tool rejected as the caller's. Counted on a line of their
/// own in the reports, never charged to a tool's breaker or the failure budget; at the
/// policy's [`mistake_limit`](crate::Policy::mistake_limit) every call pauses. A new cycle
/// starts the count again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MistakeCount {
    /// Calls of a name that is no tool.
    pub unknown_tool: u32,
    /// Calls whose arguments did not fit the tool's schema.
    pub bad_arguments: u32,
    /// Calls the tool answered as the caller's mistake (B14): a resource the call named that
    /// does not exist, an input it does not accept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rejected: u32,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Which of the model's mistakes (B8, B14).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MistakeKind {
    UnknownTool,
    BadArguments,
    Rejected,
}

impl MistakeCount {
    /// Every mistake counted.
    pub fn total(&self) -> u32 {
        self.unknown_tool
            .saturating_add(self.bad_arguments)
            .saturating_add(self.rejected)
    }

    /// Whether none was made.
    #[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
    pub fn is_none(&self) -> bool {
        self.total() == 0
    }
}

impl std::fmt::Display for MistakeCount {
    /// `Model mistakes: 3 (2 unknown tools, 1 with bad arguments) — not charged`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        match self.unknown_tool {
            0 => {}
            1 => parts.push("1 unknown tool".to_owned()),
            n => parts.push(format!("{n} unknown tools")),
        }
        if self.bad_arguments > 0 {
            parts.push(format!("{} with bad arguments", self.bad_arguments));
        }
        if self.rejected > 0 {
            parts.push(format!("{} rejected by the tool", self.rejected));
        }
        write!(
            f,
            "Model mistakes: {} ({}) — not charged to any tool or the budget",
            self.total(),
            parts.join(", ")
        )
    }
}

impl Engine {
    pub(crate) fn mistakes(&self) -> MistakeCount {
        self.mistakes
    }

    /// Counts a model's mistake (B8): no breaker and no budget changes. The mistake that
    /// reaches the policy's limit pauses every call (B14), unless a pause is in force.
    pub(crate) fn record_mistake(
        &mut self,
        kind: MistakeKind,
        now: Timestamp,
        changes: &mut Changes,
    ) {
        let count = match kind {
            MistakeKind::UnknownTool => &mut self.mistakes.unknown_tool,
            MistakeKind::BadArguments => &mut self.mistakes.bad_arguments,
            MistakeKind::Rejected => &mut self.mistakes.rejected,
        };
        *count = count.saturating_add(1);
        let (count, limit) = (self.mistakes.total(), self.policy.mistake_limit());
        if self.halt.is_none() && count >= limit {
            self.halt = Some(PauseReason::MistakeLimit { count, limit });
            changes.touch_all();
            changes.events.push(Event::MistakeLimit { count, limit });
            // A service has no one to start a new cycle: the pause lasts one budget window
            // (B15), the count then starts again.
            if let Some(window) = self.policy.budget_window() {
                let lifts = now.plus(window);
                self.timers.mistakes_lift = Some(lifts);
                self.timers.next = Some(self.timers.next.map_or(lifts, |n| n.min(lifts)));
            }
        }
    }

    /// A call the tool answered as the caller's mistake (B14): counted with the model's
    /// mistakes, never charged, and the tool's run of failures is left as it was. A probe
    /// answered so is a successful probe: the tool was reached and answered coherently, which
    /// is all a probe asks (releasing it instead would keep a working tool HALF-OPEN for as
    /// long as the model errs).
    pub(crate) fn caller_mistake(
        &mut self,
        tool: ToolId,
        via: Via,
        kind: MistakeKind,
        now: Timestamp,
        changes: &mut Changes,
    ) -> Option<Recorded> {
        let i = tool.index() as usize;
        if i >= self.records.len() {
            return None;
        }
        if matches!(via, Via::Probe(_)) {
            self.succeed(tool, via, changes);
        }
        self.record_mistake(kind, now, changes);
        Some(self.recorded(i))
    }
}
