//! Cascading failures (seed step 9, SPEC R9): when tools that share infrastructure break
//! together, one systemic event instead of N independent breaker trips.
//!
//! - A second circuit opening with the failure category of one already open, or three
//!   circuits opening within one step (or a configured window of steps), is a systemic event
//!   (R9.2). Failures whose category cannot be correlated (`other`) leave breakers
//!   independent (R9.6).
//! - Every call pauses, not only the broken tools, until the user confirms recovery; no probe
//!   runs meanwhile (R9.3).
//! - The budget is charged once for the event (R9.4): the involved tools' failures are folded
//!   into one ledger line. A failure that matches the category of an OPEN circuit is held
//!   uncharged until it is known whether it belongs to an event; if its tool recovers instead,
//!   it is charged then.
//! - After recovery, probes back off exponentially — 3, 6, 12, capped at 20 with the default
//!   interval and cap — and the intervals along a chain of routes add up to at most the cap
//!   (R9.5).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::breaker::{BreakerRecord, CircuitState};
use crate::clock::Timestamp;
use crate::failure::FailureCategory;
use crate::id::ToolId;

/// One systemic failure: the tools it took down, their shared signature, the suspected cause.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemicEvent {
    /// The category the failures share; `None` when three circuits opened together with
    /// different ones.
    pub category: Option<FailureCategory>,
    /// The shared error: the message itself when all agree (`connection refused`), else a
    /// description (`network errors`).
    pub pattern: String,
    /// The tools involved, in the order they joined.
    pub tools: Vec<String>,
    /// The step it was detected at.
    pub step: u64,
    /// When it was detected.
    pub at: Timestamp,
    /// Whether the user has confirmed recovery.
    pub recovered: bool,
}

impl SystemicEvent {
    /// The suspected cause: `network`, `filesystem`, `permissions`, ...
    pub fn cause(&self) -> &'static str {
        match self.category {
            Some(FailureCategory::Network) => "network",
            Some(FailureCategory::Filesystem) => "filesystem",
            Some(FailureCategory::Permission) => "permissions",
            Some(FailureCategory::Timeout) => "timeout",
            Some(FailureCategory::NotFound) => "missing-resource",
            Some(FailureCategory::Other) | None => "shared infrastructure",
        }
    }
}

impl fmt::Display for SystemicEvent {
    /// `Multiple tools failing with connection refused — likely network issue` (R9.2).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Multiple tools failing with {} — likely {} issue",
            self.pattern,
            self.cause()
        )
    }
}

/// A circuit that opened, for the window rule.
#[derive(Debug, Clone, Copy)]
struct Opening {
    tool: ToolId,
    step: u64,
}

/// Cascade bookkeeping behind the expeditor's lock.
#[derive(Debug, Default)]
pub(crate) struct Cascade {
    /// The current or last systemic event.
    pub(crate) event: Option<SystemicEvent>,
    /// The tools of that event, by id.
    pub(crate) involved: Vec<ToolId>,
    openings: Vec<Opening>,
}

/// The failure category a tool's breaker shows now: the one every failure of its current
/// run shares. A run of mixed categories has none, and cannot be correlated (R9.6).
pub(crate) fn category_of(record: &BreakerRecord) -> Option<FailureCategory> {
    record.common_category()
}

impl Cascade {
    /// Whether an event is in force (detected, recovery not yet confirmed).
    pub(crate) fn active(&self) -> bool {
        self.event.as_ref().is_some_and(|e| !e.recovered)
    }

    /// A circuit just opened: is this a systemic event (R9.2)? Returns the tools involved.
    pub(crate) fn on_open(
        &mut self,
        tool: ToolId,
        records: &[BreakerRecord],
        step: u64,
        window: u64,
    ) -> Option<Vec<ToolId>> {
        self.openings
            .retain(|o| o.step.saturating_add(window) >= step && o.tool != tool);
        self.openings.push(Opening { tool, step });
        let record = records.get(tool.index() as usize)?;
        let category = category_of(record);
        let open = |id: ToolId| {
            records
                .get(id.index() as usize)
                .is_some_and(|r| r.state() != CircuitState::Closed)
        };
        // A second circuit with the same (correlatable) category as one already open.
        if let Some(c) = category.filter(|c| *c != FailureCategory::Other) {
            let mut involved: Vec<ToolId> = (0..records.len())
                .filter_map(|i| u32::try_from(i).ok().map(ToolId::from_index))
                .filter(|&id| {
                    id != tool
                        && open(id)
                        && records.get(id.index() as usize).and_then(category_of) == Some(c)
                })
                .collect();
            if !involved.is_empty() {
                involved.push(tool);
                return Some(involved);
            }
        }
        // Three or more circuits opened within the window.
        let recent: Vec<ToolId> = self
            .openings
            .iter()
            .map(|o| o.tool)
            .filter(|&id| open(id))
            .collect();
        (recent.len() >= 3).then_some(recent)
    }

    /// Starts an event over `involved`.
    pub(crate) fn start(
        &mut self,
        involved: Vec<ToolId>,
        records: &[BreakerRecord],
        names: &[&str],
        step: u64,
        at: Timestamp,
    ) -> &SystemicEvent {
        let marks: Vec<_> = involved
            .iter()
            .filter_map(|id| records.get(id.index() as usize))
            .filter_map(|r| r.last_failure())
            .collect();
        let first_category = marks.first().map(|m| m.failure.category());
        let category = first_category.filter(|c| marks.iter().all(|m| m.failure.category() == *c));
        let first_message = marks.first().map(|m| m.failure.summary().into_owned());
        let same_message = first_message
            .as_ref()
            .filter(|first| marks.iter().all(|m| m.failure.summary() == first.as_str()));
        let pattern = match (same_message, category) {
            (Some(message), _) => message.clone(),
            (None, Some(c)) => format!("{c} errors"),
            (None, None) => "different errors at once".to_owned(),
        };
        self.openings.clear();
        self.involved = involved;
        let tools = self
            .involved
            .iter()
            .map(|id| {
                names
                    .get(id.index() as usize)
                    .copied()
                    .unwrap_or("?")
                    .to_owned()
            })
            .collect();
        self.event.insert(SystemicEvent {
            category,
            pattern,
            tools,
            step,
            at,
            recovered: false,
        })
    }

    /// A tool failing during an event joins it.
    pub(crate) fn join(&mut self, tool: ToolId, name: &str) {
        if let Some(event) = self.event.as_mut().filter(|e| !e.recovered)
            && !self.involved.contains(&tool)
        {
            self.involved.push(tool);
            event.tools.push(name.to_owned());
        }
    }
}

/// The probe interval for a tool backing off after a cascade (R9.5): the base interval
/// doubled for each failed probe since recovery, capped. (Along a chain of routes the
/// expeditor further limits it to the tool's share of the cap.)
pub(crate) fn backoff_interval(base: u32, level: u32, cap: u32) -> u32 {
    if level == 0 {
        return base;
    }
    base.checked_shl(level - 1)
        .filter(|v| *v >> (level - 1) == base)
        .unwrap_or(u32::MAX)
        .min(cap.max(base))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r9_5_backoff_doubles_to_the_cap() {
        let schedule: Vec<u32> = (1..=6)
            .map(|level| backoff_interval(3, level, 20))
            .collect();
        assert_eq!(schedule, [3, 6, 12, 20, 20, 20]);
        assert_eq!(backoff_interval(3, 0, 20), 3);
        // Chain capping is the expeditor's (see tests/r9_cascade.rs).
        assert_eq!(backoff_interval(3, 40, 20), 20, "no overflow");
    }
}
