//! What the engine answers: why a call is paused or skipped, the verdict before a call, and
//! what recording a failure did. The public enums are re-exported by the expeditor.

use serde::{Deserialize, Serialize};

use crate::failure::FailureCategory;
use crate::model::breaker::CircuitState;
use crate::model::budget::BudgetStatus;

/// Why every call is paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PauseReason {
    /// The failure budget of this cycle is spent (R3.4, R7.3).
    BudgetExhausted {
        /// Failures charged.
        consumed: u32,
        /// The budget.
        limit: u32,
    },
    /// Correlated circuits opened: a systemic failure (R9.2). Every call pauses until
    /// [`Expeditor::confirm_recovery`](crate::Expeditor::confirm_recovery).
    Systemic {
        /// The category the failures share, if they share one.
        category: Option<FailureCategory>,
    },
    /// Every remaining sub-task is deferred (R5.4).
    NothingAchievable,
    /// The model made as many mistakes this cycle as the policy allows (B14): it is stuck,
    /// so every call pauses until a new cycle.
    MistakeLimit {
        /// Mistakes made this cycle.
        count: u32,
        /// The policy's [`mistake_limit`](crate::Policy::mistake_limit).
        limit: u32,
    },
}

/// Why a tool is not called: the reason of a [`Skip`](crate::expeditor::Skip) and of a
/// [`Refusal`](crate::Refusal) (one enum for both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum SkipReason {
    /// Its circuit is OPEN and no probe is due.
    Open,
    /// It is HALF-OPEN and another caller holds its one probe (R3.6).
    ProbeInFlight,
    /// The id or name is not a tool of this expeditor.
    UnknownTool,
    /// A pre-call check found it UNAVAILABLE, or it is not in the allowed-tools list (R10.2).
    Unavailable,
    /// The sub-task being worked on is deferred (R5.3).
    Deferred,
    /// Every call is paused. Never the reason of a `Skip` (a pause is a
    /// [`Decision::Pause`](crate::Decision::Pause)); a refusal of a guarded call gives it.
    Paused {
        /// Why.
        pause: PauseReason,
    },
}

/// What the engine says before a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Call,
    Probe(u64),
    Skip(SkipReason),
    Pause(PauseReason),
}

/// What recording a failure did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recorded {
    /// The tool's state after the failure.
    pub state: CircuitState,
    /// Its consecutive failures after the failure.
    pub consecutive_failures: u32,
    /// Whether this failure opened (or re-opened) the circuit.
    pub opened: bool,
    /// The budget after the failure.
    pub budget: BudgetStatus,
    /// Whether every call now pauses.
    pub paused: bool,
}
