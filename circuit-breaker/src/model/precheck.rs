//! Pre-call checks (step 10 of the source document, R10): before the loop, a tool can be checked — it is
//! allowed, its server is healthy, its resource exists. The check is run by the executor (the
//! expeditor never calls anything); the expeditor keeps its result and acts on it:
//!
//! - AVAILABLE: the breaker loop as usual.
//! - DEGRADED: the tool's failure threshold is lowered by one, never below 1 (R10.2).
//! - UNAVAILABLE: calls route to an alternative without being made and without charging the
//!   budget (R10.2). It never stops an OPEN tool from reaching HALF-OPEN: a due probe still
//!   goes through.
//!
//! Results are cached until a systemic event, when every tool is checked again (R10.3). A tool
//! left out of the allowed-tools list is UNAVAILABLE without a check.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The result of a pre-call check (R10.1).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(
    tag = "availability",
    content = "reason",
    rename_all = "SCREAMING_SNAKE_CASE"
)]
pub enum Availability {
    /// Proceed to the breaker loop.
    Available,
    /// Proceed with caution: the failure threshold is lowered by one.
    Degraded(String),
    /// Do not call: route to an alternative without charging the budget.
    Unavailable(String),
}

impl Availability {
    /// `AVAILABLE`, `DEGRADED` or `UNAVAILABLE`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Availability::Available => "AVAILABLE",
            Availability::Degraded(_) => "DEGRADED",
            Availability::Unavailable(_) => "UNAVAILABLE",
        }
    }

    /// The reason given with a DEGRADED or UNAVAILABLE result.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Availability::Available => None,
            Availability::Degraded(r) | Availability::Unavailable(r) => Some(r),
        }
    }
}

impl fmt::Display for Availability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())?;
        match self.reason() {
            Some(reason) if !reason.is_empty() => write!(f, " — {reason}"),
            _ => Ok(()),
        }
    }
}

/// What the expeditor keeps of a tool's checks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Precheck {
    /// The cached result; `None` until checked, and again after a systemic event. Boxed:
    /// most tools are never checked, and each keeps one of these.
    pub(crate) result: Option<Box<Availability>>,
    /// Left out of the allowed-tools list.
    pub(crate) disallowed: bool,
}

/// The reason given to a tool left out of the allowed-tools list.
pub(crate) const NOT_ALLOWED: &str = "not in the allowed-tools list";

impl Precheck {
    /// What the tool counts as now.
    pub(crate) fn availability(&self) -> Availability {
        if self.disallowed {
            Availability::Unavailable(NOT_ALLOWED.to_owned())
        } else {
            self.result
                .as_deref()
                .cloned()
                .unwrap_or(Availability::Available)
        }
    }

    /// Held back from calls (UNAVAILABLE or not allowed).
    pub(crate) fn gated(&self) -> bool {
        self.disallowed || matches!(self.result.as_deref(), Some(Availability::Unavailable(_)))
    }

    /// The threshold after a DEGRADED result (R10.2).
    pub(crate) fn threshold(&self, threshold: u32) -> u32 {
        match self.result.as_deref() {
            Some(Availability::Degraded(_)) => threshold.saturating_sub(1).max(1),
            _ => threshold,
        }
    }
}
