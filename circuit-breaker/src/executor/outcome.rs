//! What the guarded methods of a [`#[toolbox]`](macro@crate::toolbox) return.
//!
//! A guarded method takes its tool's arguments and answers with more than the tool's value:
//! the route taken, or why nothing was called. For a tool returning `R`, a `Result<T, E>`
//! through any alias (`io::Result<T>`), it returns [`Outcome<R>`](Outcome), which is
//! `Result<Routed<T>, CallError<E>>`.
//!
//! The error side is the tool's own error untouched, the caller's mistake (B14), a timeout, or
//! a refusal (R3.5, R4.2).
//!
//! ```
//! use agent_circuit_breaker::{CallError, outcome::Outcome, toolbox};
//! use std::io;
//!
//! struct Files;
//!
//! #[toolbox]
//! impl Files {
//!     #[tool(provides = "file content", fallback = "ask the user to paste the file")]
//!     fn read(&self, path: &str) -> io::Result<String> {
//!         Ok(format!("the text of {path}"))
//!     }
//! }
//!
//! let files = GuardedFiles::new(Files);
//! let outcome: Outcome<io::Result<String>> = files.read("notes.txt");
//! match outcome {
//!     Ok(routed) => assert_eq!(routed.value, "the text of notes.txt"),
//!     Err(CallError::Refused(refusal)) => panic!("not called: {refusal}"),
//!     Err(error) => panic!("the tool failed: {error}"),
//! }
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

use super::Refusal;
use crate::engine::Recorded;
use crate::model::freshness::Freshness;
use crate::model::route::RouteTaken;

/// A tool's value with the route that produced it (R4.2): `None` when the tool itself
/// answered, the alternative and its degradation otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Routed<T> {
    /// The value.
    pub value: T,
    /// The route taken instead of the tool, if one was (boxed: the healthy path carries only
    /// a null pointer).
    pub route: Option<Box<RouteTaken>>,
    /// How fresh the value is (R6): no label for a live result.
    pub freshness: Freshness,
}

impl<T> Routed<T> {
    /// Whether the value came through an alternative, with some capability lost.
    pub fn is_degraded(&self) -> bool {
        self.route.is_some()
    }

    /// The value, dropping the route.
    pub fn into_value(self) -> T {
        self.value
    }
}

/// What a guarded call returns on the error side: the tool ran and failed (its error is
/// untouched, R3.5), the tool ran and said the call was the caller's mistake (B14), or it was
/// not called.
#[derive(Debug)]
pub enum CallError<E> {
    /// The tool — or the adapter through an alternative — ran and failed.
    Failed {
        /// The tool the failure was recorded against.
        tool: String,
        /// The tool's error, as it returned it.
        error: E,
        /// What recording the failure did (circuit opened? budget left?).
        recorded: Recorded,
        /// The route taken, when the failure came through an alternative.
        route: Option<Box<RouteTaken>>,
    },
    /// The tool — or the adapter through an alternative — ran and answered that the call was
    /// the caller's mistake: its error's [`Classify::blame`](crate::Classify::blame) says so
    /// (B14). Counted as the model's mistake, never charged; no circuit opened.
    Rejected {
        /// The tool that rejected the call.
        tool: String,
        /// The tool's error, as it returned it.
        error: E,
        /// The tool's state after it, and whether every call now pauses (the model's
        /// [`mistake_limit`](crate::Policy::mistake_limit)).
        recorded: Recorded,
        /// The route taken, when the call went through an alternative.
        route: Option<Box<RouteTaken>>,
        /// The failure's category: [`NotFound`](crate::FailureCategory::NotFound) for a
        /// resource the call named that does not exist, usually
        /// [`InvalidInput`](crate::FailureCategory::InvalidInput) otherwise.
        category: crate::FailureCategory,
    },
    /// The tool — or the adapter through an alternative — did not answer within its deadline
    /// (`#[tool(timeout = "..")]`, [`ToolSpec::timeout`](crate::ToolSpec::timeout), B13): the
    /// call was recorded as a failure of category timeout, and its future dropped (a sync
    /// tool that answered late: its value dropped).
    TimedOut {
        /// The tool the timeout was recorded against.
        tool: String,
        /// The deadline it missed.
        after: std::time::Duration,
        /// What recording the failure did (circuit opened? budget left?).
        recorded: Recorded,
        /// The route taken, when the call went through an alternative.
        route: Option<Box<RouteTaken>>,
    },
    /// The call was not made.
    Refused(Refusal),
}

impl<E> CallError<E> {
    /// The refusal, if the call was not made.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            CallError::Refused(r) => Some(r),
            CallError::Failed { .. } | CallError::Rejected { .. } | CallError::TimedOut { .. } => {
                None
            }
        }
    }

    /// The tool's error, if it ran and failed or rejected the call.
    pub fn tool_error(&self) -> Option<&E> {
        match self {
            CallError::Failed { error, .. } | CallError::Rejected { error, .. } => Some(error),
            CallError::TimedOut { .. } | CallError::Refused(_) => None,
        }
    }

    /// The deadline the call missed, if it timed out.
    pub fn timed_out(&self) -> Option<std::time::Duration> {
        match self {
            CallError::TimedOut { after, .. } => Some(*after),
            CallError::Failed { .. } | CallError::Rejected { .. } | CallError::Refused(_) => None,
        }
    }

    /// Whether the tool said the call was the caller's mistake (B14).
    pub fn is_callers_mistake(&self) -> bool {
        matches!(self, CallError::Rejected { .. })
    }
}

impl<E: fmt::Display> fmt::Display for CallError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Failed { tool, error, .. } => write!(f, "{tool} failed: {error}"),
            CallError::Rejected { tool, error, .. } => {
                write!(f, "{tool} rejected the call: {error}")
            }
            CallError::TimedOut { tool, after, .. } => {
                write!(f, "{tool} failed: {}", timed_out_message(*after))
            }
            CallError::Refused(refusal) => fmt::Display::fmt(refusal, f),
        }
    }
}

/// The failure message of a call past its deadline: `timed out after 30s`.
pub(crate) fn timed_out_message(after: std::time::Duration) -> String {
    format!("timed out after {}", humantime::format_duration(after))
}

impl<E: std::error::Error + 'static> std::error::Error for CallError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CallError::Failed { error, .. } | CallError::Rejected { error, .. } => Some(error),
            CallError::TimedOut { .. } => None,
            CallError::Refused(refusal) => Some(refusal),
        }
    }
}

/// What the guarded method of a tool returning `R` returns: the tool's value with the route
/// taken ([`Routed`]), or the tool's own error untouched, or a refusal that says why nothing
/// was called ([`CallError`]). For `R = Result<T, E>`, it is `Result<Routed<T>, CallError<E>>`.
pub type Outcome<R> = Result<Routed<<R as ToolResult>::Ok>, CallError<<R as ToolResult>::Err>>;

/// The return type of a tool: a `Result`, however it is named. Sealed: the breaker records
/// `Ok` as a success and `Err` as a failure, and no other type says which it is.
#[diagnostic::on_unimplemented(
    message = "a #[tool] method must return a `Result<T, E>`, found `{Self}`",
    label = "this is not a `Result`",
    note = "the breaker records `Ok` as a success and `Err` as a failure"
)]
pub trait ToolResult: sealed::Sealed {
    /// The success type, `T`.
    type Ok;
    /// The error type, `E`.
    type Err;
    /// The `Result` itself.
    ///
    /// # Errors
    /// The tool's error, as it returned it.
    fn into_result(self) -> Result<Self::Ok, Self::Err>;
}

impl<T, E> ToolResult for Result<T, E> {
    type Ok = T;
    type Err = E;
    #[inline]
    fn into_result(self) -> Result<T, E> {
        self
    }
}

mod sealed {
    /// Implemented for `Result` alone, so that `ToolResult` is too.
    pub trait Sealed {}

    impl<T, E> Sealed for Result<T, E> {}
}
