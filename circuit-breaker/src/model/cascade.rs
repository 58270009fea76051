//! Cascading failures (step 9 of the source document, R9): when tools that share infrastructure break
//! together, one systemic event instead of N independent breaker trips.
//!
//! **The rule (R9.2, R9.6).** Only circuits opened by infrastructure failures correlate:
//! every failure of the run that opened the circuit has an infrastructure category —
//! network, filesystem or permission ([`FailureCategory::is_infrastructure`]). A run with a
//! tool-local failure in it (timeout, not found, other: a missing command, a 404, a bad
//! argument, a command's own exit status) never takes part in a systemic event, under either
//! rule below. Among circuits opened by infrastructure failures, a circuit leaving CLOSED
//! starts a systemic event when
//! - **same category:** another circuit is not CLOSED, its run shares the same category,
//!   and it last failed within the cascade window — at most
//!   [`Policy::cascade_window`](crate::Policy::cascade_window) steps before this opening
//!   (a circuit that broke long ago and has not failed since says nothing about now); or
//! - **three at once:** three or more circuits (this one included) opened within the window
//!   and are still not CLOSED, whatever their (infrastructure) categories.
//!
//! Where neither holds, the breakers stay independent (R9.6). Categories come from typed
//! errors first and from messages only conservatively (see [`crate::Failure`]).
//!
//! **Servers (B10).** The tools of one server are one unit under both rules: they never
//! correlate with each other (one server down is its own outage, one event charged once,
//! not a cascade), and a server counts once toward three at once. Two servers, or a server
//! and a tool on no server, failing alike within the window are a systemic event.
//!
//! **The event.**
//! - Every call pauses, not only the broken tools, until the user confirms recovery; no probe
//!   runs meanwhile (R9.3).
//! - The budget is charged once for the event (R9.4): the involved tools' failures are folded
//!   into one ledger line. A failure of a CLOSED tool that may yet join an event — its
//!   category is an infrastructure one shared by a circuit not CLOSED that last failed
//!   within the window — is held uncharged until it is known whether it
//!   belongs to an event; if its tool recovers instead, it is charged then.
//! - After recovery, probes back off exponentially — 3, 6, 12, capped at 20 with the default
//!   interval and cap — and the intervals along a chain of routes add up to at most the cap
//!   (R9.5).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::model::breaker::{BreakerRecord, CircuitState};
use crate::model::clock::Timestamp;
use crate::model::failure::FailureCategory;
use crate::model::group::Groups;
use crate::model::id::ToolId;

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
        cause_of(self.category)
    }
}

/// The suspected cause of failures sharing `category` (one spelling for the reports, the
/// events and the telemetry's `circuit_breaker.systemic.cause`).
pub(crate) const fn cause_of(category: Option<FailureCategory>) -> &'static str {
    match category {
        Some(FailureCategory::Network) => "network",
        Some(FailureCategory::Filesystem) => "filesystem",
        Some(FailureCategory::Permission) => "permissions",
        Some(FailureCategory::Timeout) => "timeout",
        Some(FailureCategory::NotFound) => "missing-resource",
        Some(FailureCategory::InvalidInput | FailureCategory::Other) | None => {
            "shared infrastructure"
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

/// A circuit that opened by infrastructure failures, for the three-at-once rule.
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
/// run shares. A run of mixed categories has none, and cannot be correlated by category
/// (R9.6).
pub(crate) fn category_of(record: &BreakerRecord) -> Option<FailureCategory> {
    record.common_category()
}

/// Whether the current run of `record` is all infrastructure failures: only such a circuit
/// takes part in a systemic event (R9.2).
fn opened_by_infrastructure(record: &BreakerRecord) -> bool {
    !record.recent_failures().is_empty()
        && record
            .recent_failures()
            .iter()
            .all(|f| f.category().is_infrastructure())
}

/// The circuits other than `tool` that correlate with a `category` failure at `step` by
/// the same-category rule: not CLOSED, their run sharing `category` (an infrastructure one),
/// their last failure at most `window` steps before `step`.
fn partners<'a>(
    tool: ToolId,
    category: FailureCategory,
    records: &'a [BreakerRecord],
    groups: &'a Groups,
    step: u64,
    window: u64,
) -> impl Iterator<Item = ToolId> + 'a {
    // A tool-local category has no partner: nothing is looked at.
    let looked_at = if category.is_infrastructure() {
        records.len()
    } else {
        0
    };
    records
        .iter()
        .take(looked_at)
        .enumerate()
        .filter_map(|(i, r)| Some((ToolId::from_index(u32::try_from(i).ok()?), r)))
        .filter(move |&(id, r)| partner(tool, id, r, category, groups, step, window))
        .map(|(id, _)| id)
}

/// Whether a failure of `category` by `tool` at `step` may yet belong to a systemic event
/// by the same-category rule (R9.2): `category` is an infrastructure one, and another
/// circuit not CLOSED shares it and last failed within `window` steps. Such a failure of a
/// CLOSED tool is held uncharged (R9.4) until its tool opens (and the event starts) or
/// recovers (and it is charged).
pub(crate) fn may_correlate(
    tool: ToolId,
    category: FailureCategory,
    records: &[BreakerRecord],
    groups: &Groups,
    step: u64,
    window: u64,
) -> bool {
    // One plain pass, the state tested first (most records are CLOSED): this runs on every
    // failure of a CLOSED tool, `partners`'s adapters cost more than the test itself.
    category.is_infrastructure()
        && records.iter().zip(0..u32::MAX).any(|(r, i)| {
            partner(
                tool,
                ToolId::from_index(i),
                r,
                category,
                groups,
                step,
                window,
            )
        })
}

/// Whether the record `r` of `id` is a partner of a failure of `category` by `tool` at
/// `step` (see [`partners`]): its state first, as most records are CLOSED.
#[inline]
fn partner(
    tool: ToolId,
    id: ToolId,
    r: &BreakerRecord,
    category: FailureCategory,
    groups: &Groups,
    step: u64,
    window: u64,
) -> bool {
    // Tools of one server are one unit: its outage is one event, never a cascade.
    r.state() != CircuitState::Closed
        && !groups.same_unit(id, tool)
        && category_of(r) == Some(category)
        && r.last_failure()
            .is_some_and(|m| m.step.saturating_add(window) >= step)
}

impl Cascade {
    /// Whether an event is in force (detected, recovery not yet confirmed).
    pub(crate) fn active(&self) -> bool {
        self.event.as_ref().is_some_and(|e| !e.recovered)
    }

    /// A circuit just opened (left CLOSED) at `step`: is this a systemic event (R9.2)? Returns
    /// the tools involved. `window` is the policy's cascade window in steps. See the module
    /// documentation for the rule.
    pub(crate) fn on_open(
        &mut self,
        tool: ToolId,
        records: &[BreakerRecord],
        groups: &Groups,
        step: u64,
        window: u64,
    ) -> Option<Vec<ToolId>> {
        self.openings
            .retain(|o| o.step.saturating_add(window) >= step && o.tool != tool);
        let record = records.get(tool.index() as usize)?;
        // A circuit opened by tool-local errors correlates with nothing (R9.6), and does not
        // count toward three at once either.
        if !opened_by_infrastructure(record) {
            return None;
        }
        self.openings.push(Opening { tool, step });
        // A second circuit with the same infrastructure category, failing within the window.
        if let Some(c) = category_of(record) {
            let mut involved: Vec<ToolId> =
                partners(tool, c, records, groups, step, window).collect();
            if !involved.is_empty() {
                involved.push(tool);
                return Some(involved);
            }
        }
        // Three or more circuits opened by infrastructure failures within the window.
        let open = |id: ToolId| {
            records
                .get(id.index() as usize)
                .is_some_and(|r| r.state() != CircuitState::Closed)
        };
        let recent: Vec<ToolId> = self
            .openings
            .iter()
            .map(|o| o.tool)
            .filter(|&id| open(id))
            .collect();
        // Counted by unit: the tools of one server are one.
        let mut units: Vec<(bool, usize)> = recent.iter().map(|&id| groups.unit(id)).collect();
        units.sort_unstable();
        units.dedup();
        (units.len() >= 3).then_some(recent)
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
        // Chain capping is the expeditor's (see tests/state_machine/r9_cascade.rs).
        assert_eq!(backoff_interval(3, 40, 20), 20, "no overflow");
    }
}
