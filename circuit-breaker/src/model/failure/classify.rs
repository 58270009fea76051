//! What an error type may say of itself (its category, its retry-after hint, whose failure it
//! is), and who a failure is charged to (B14).

use std::io;
use std::process::ExitStatus;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::FailureCategory;
use super::category::io_kind_category;
use super::text::guess_from_display;

/// An error that knows its [`FailureCategory`]. Implement it for a tool's error type to make
/// cascade detection exact instead of guessed from messages; [`Failure::classified`] and the
/// `#[tool]` macro use it before anything else.
///
/// ```
/// use agent_circuit_breaker::{Classify, Failure, FailureCategory};
///
/// struct ApiError { status: u16 }
/// impl std::fmt::Display for ApiError {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         write!(f, "API answered {}", self.status)
///     }
/// }
/// impl Classify for ApiError {
///     fn category(&self) -> FailureCategory {
///         FailureCategory::from_http_status(self.status)
///     }
/// }
/// let failure = Failure::classified(&ApiError { status: 503 });
/// assert_eq!(failure.category(), FailureCategory::Network);
/// ```
///
/// An error that knows it is the caller's mistake says so with [`blame`](Self::blame): such
/// a failure is answered and counted as the model's mistake, never charged to the tool (B14).
///
/// ```
/// use agent_circuit_breaker::{Blame, Classify, Failure, FailureCategory};
///
/// #[derive(Debug)]
/// enum CalcError { DivisionByZero, Overflow }
/// impl std::fmt::Display for CalcError {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         f.write_str(match self {
///             CalcError::DivisionByZero => "division by zero",
///             CalcError::Overflow => "the result overflowed",
///         })
///     }
/// }
/// impl Classify for CalcError {
///     fn category(&self) -> FailureCategory {
///         FailureCategory::InvalidInput
///     }
///     fn blame(&self) -> Blame {
///         match self {
///             // The input is outside the tool's domain: the call's mistake.
///             CalcError::DivisionByZero => Blame::Caller,
///             CalcError::Overflow => Blame::Tool,
///         }
///     }
/// }
/// assert_eq!(Failure::classified(&CalcError::DivisionByZero).blame(), Blame::Caller);
/// ```
///
/// [`Failure::classified`]: super::Failure::classified
pub trait Classify {
    /// The category of this error.
    fn category(&self) -> FailureCategory;

    /// How long the tool asked to be left alone, if it said (an HTTP `Retry-After`, a rate
    /// limit's reset): the cool-down of the opening this failure causes, bounded by the
    /// policy (B13). Parse a header with [`parse_retry_after`].
    ///
    /// [`parse_retry_after`]: super::parse_retry_after
    fn retry_after(&self) -> Option<Duration> {
        None
    }

    /// Whose failure this is (B14): the tool's unless the error says otherwise.
    fn blame(&self) -> Blame {
        Blame::Tool
    }
}

/// Who a failure is charged to (B14; see the [module](super) documentation).
///
/// Serialized in snake case (`tool`, `dependency`, `caller`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Blame {
    /// The tool itself: its breaker counts the failure and the budget is charged.
    #[default]
    Tool,
    /// What the tool depends on — its server — could not be reached: one event for all the
    /// server's tools, charged once (B10). [`Failure::server_unreachable`] marks it.
    ///
    /// [`Failure::server_unreachable`]: super::Failure::server_unreachable
    Dependency,
    /// The caller — the model — made a mistake: invalid arguments, a resource the call named
    /// that does not exist, an input the tool's domain rejects. Answered and counted, never
    /// charged; no circuit opens.
    Caller,
}

impl Blame {
    /// Whether the tool is to blame (the default).
    #[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
    pub fn is_tool(&self) -> bool {
        *self == Blame::Tool
    }
}

impl Classify for io::Error {
    /// The kind's category; the message only when the kind says nothing (`ErrorKind::Other`).
    ///
    /// Its [`blame`](Classify::blame) is the tool's whatever the kind: `NotFound` may be a
    /// path the caller named or a file the tool needs, and only the tool knows which.
    fn category(&self) -> FailureCategory {
        io_kind_category(self.kind()).unwrap_or_else(|| guess_from_display(self))
    }
}

impl Classify for ExitStatus {
    /// [`FailureCategory::from_exit_status`].
    fn category(&self) -> FailureCategory {
        FailureCategory::from_exit_status(*self)
    }
}

impl Classify for FailureCategory {
    fn category(&self) -> FailureCategory {
        *self
    }
}
