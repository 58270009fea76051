//! What a failed call leaves behind: its message and a category (R9.1), the signature
//! that cascade detection compares.
//!
//! The expeditor never interprets a tool's error type (R8.1); the executor turns it into a
//! [`Failure`]. The category comes from typed information first, and from the message only
//! as a conservative last resort:
//!
//! 1. an error type that says its own category ([`Classify`], [`Failure::classified`]);
//! 2. a `std::io::Error`'s kind, exactly ([`FailureCategory::from_io_kind`]; also found in an
//!    error's source chain by [`Failure::from_error`]);
//! 3. a process exit status ([`FailureCategory::from_exit_status`],
//!    [`Failure::with_exit_status`]) or an HTTP status a tool reports
//!    ([`FailureCategory::from_http_status`], [`Failure::with_http_status`]);
//! 4. the message ([`FailureCategory::from_message`]): only unambiguous infrastructure
//!    phrases (`connection refused`, `no route to host`, `read-only file system`,
//!    `permission denied`, ...) give an infrastructure category; when in doubt, a tool-local
//!    one.
//!
//! A category is either **infrastructure** (network, filesystem, permission: something many
//! tools share, so several tools failing alike point at one cause) or **tool-local** (timeout,
//! not found, invalid input, other: about this call, its arguments or its target). Only
//! infrastructure categories correlate across tools ([`FailureCategory::is_infrastructure`],
//! R9.2, R9.6).
//!
//! # Whose failure it is (B14)
//!
//! A failure also says who is to blame ([`Blame`]), and that decides what it costs:
//!
//! - **the tool** ([`Blame::Tool`], the default): it counts toward the tool's breaker and the
//!   failure budget;
//! - **its dependency** ([`Blame::Dependency`], [`Failure::server_unreachable`]): the server
//!   (or store) behind the tool could not be reached; every tool of that server goes down as
//!   one event, charged once (B10);
//! - **the caller** ([`Blame::Caller`], [`Failure::caller`], [`Failure::blame_caller`]): the
//!   model's mistake — invalid arguments, a resource the call named that does not exist, an
//!   input the tool's domain rejects. The tool answered as it should: nothing opens, nothing
//!   is charged, cascade detection never sees it. The mistake is answered (the tool's message
//!   and what to do next), counted with the model's other mistakes, and a model that keeps
//!   making them is paused at the policy's
//!   [`mistake_limit`](crate::Policy::mistake_limit).
//!
//! A typed error says whose it is through [`Classify::blame`]. No error is the caller's
//! unless something says so: an `std::io::Error` is the tool's whatever its kind — a file not
//! found may be a path the model named or the tool's own configuration, and only the tool
//! knows which (it marks the first kind with [`Failure::blame_caller`]). For a foreign MCP
//! server the client decides by category, per server and per tool (see the `mcp` module).

use std::borrow::Cow;
use std::fmt;
use std::io;
use std::process::ExitStatus;
use std::time::Duration;

use serde::{Deserialize, Serialize};

mod category;
mod classify;
mod phrases;
mod retry_after;
#[cfg(test)]
mod tests;
mod text;

pub use category::FailureCategory;
pub use classify::{Blame, Classify};
pub use retry_after::parse_retry_after;

use category::io_kind_category;
use text::Text;

/// One failed call: its message and category (R9.1).
///
/// Cloning one copies a pointer: a failure made from a `&'static str`
/// ([`new`](Self::new), [`with_category`](Self::with_category)) never allocates, and one made
/// from an error or a borrowed message allocates its text once.
///
/// Serialized as `message`, `category` and, unless the tool is to blame, `blame`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "FailureData")]
pub struct Failure {
    message: Text,
    category: FailureCategory,
    /// Whose failure it is (B14): [`Blame::Dependency`] when the tool's server could not be
    /// reached (B10) — its whole group is down.
    #[serde(default, skip_serializing_if = "Blame::is_tool")]
    blame: Blame,
    /// The retry-after hint in milliseconds, 0 for none (B13). Four bytes, in what was
    /// padding: a failure stays the size it was.
    #[serde(default, skip_serializing_if = "is_zero", rename = "retry_after_ms")]
    retry_after: u32,
}

/// A failure as data is read: also as written before blame had three parties, when an
/// unreachable server was a flag of its own.
#[derive(Deserialize)]
struct FailureData {
    message: Text,
    category: FailureCategory,
    #[serde(default)]
    blame: Blame,
    #[serde(default)]
    server_unreachable: bool,
    #[serde(default, rename = "retry_after_ms")]
    retry_after: u32,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The longest retry-after hint kept, in milliseconds (about 49 days): the policy bounds it
/// far below that anyway.
const MAX_HINT_MS: u64 = u32::MAX as u64;

impl From<FailureData> for Failure {
    fn from(data: FailureData) -> Self {
        Failure {
            message: data.message,
            category: data.category,
            blame: if data.server_unreachable {
                Blame::Dependency
            } else {
                data.blame
            },
            retry_after: data.retry_after,
        }
    }
}

impl Failure {
    /// A failure whose category is guessed from its message, conservatively
    /// ([`FailureCategory::from_message`]). Prefer a typed constructor when the tool knows
    /// more: [`with_category`](Self::with_category), [`with_exit_status`](Self::with_exit_status),
    /// [`with_http_status`](Self::with_http_status), [`classified`](Self::classified),
    /// [`from_error`](Self::from_error) or `From<io::Error>`.
    pub fn new(message: impl Into<Cow<'static, str>>) -> Self {
        let message = Text::from(message.into());
        let category = match message {
            Text::Static(text) => text::static_category(text),
            Text::Shared(ref text) => FailureCategory::from_message(text),
        };
        Failure {
            message,
            category,
            blame: Blame::Tool,
            retry_after: 0,
        }
    }

    /// A failure with a known category.
    pub fn with_category(message: impl Into<Cow<'static, str>>, category: FailureCategory) -> Self {
        Failure {
            message: Text::from(message.into()),
            category,
            blame: Blame::Tool,
            retry_after: 0,
        }
    }

    fn of_text(message: Text, category: FailureCategory) -> Self {
        Failure {
            message,
            category,
            blame: Blame::Tool,
            retry_after: 0,
        }
    }

    /// A failure of a process that finished with `status` (see
    /// [`FailureCategory::from_exit_status`]: 126 permission, 127 not found, killed at a
    /// deadline timeout, any other code the command's own).
    ///
    /// ```
    /// use agent_circuit_breaker::{Failure, FailureCategory};
    /// # #[cfg(unix)] {
    /// let status = std::process::Command::new("sh").args(["-c", "exit 127"]).status().unwrap();
    /// let failure = Failure::with_exit_status("bash: rgx: command not found", status);
    /// assert_eq!(failure.category(), FailureCategory::NotFound);
    /// # }
    /// ```
    pub fn with_exit_status(message: impl Into<Cow<'static, str>>, status: ExitStatus) -> Self {
        Failure::with_category(message, FailureCategory::from_exit_status(status))
    }

    /// A failure of a process that exited with `code`, as a shell reports it (see
    /// [`FailureCategory::from_exit_code`]).
    pub fn with_exit_code(message: impl Into<Cow<'static, str>>, code: i32) -> Self {
        Failure::with_category(message, FailureCategory::from_exit_code(code))
    }

    /// A failure of a call that got an HTTP `status` back (see
    /// [`FailureCategory::from_http_status`]: 502/503/504 network, 401/403 permission, 408
    /// timeout, 404 not found, 400/422 and the rest other).
    ///
    /// ```
    /// use agent_circuit_breaker::{Failure, FailureCategory};
    /// let failure = Failure::with_http_status("GET /search: 404 Not Found", 404);
    /// assert_eq!(failure.category(), FailureCategory::NotFound);
    /// assert!(!failure.category().is_infrastructure());
    /// ```
    pub fn with_http_status(message: impl Into<Cow<'static, str>>, status: u16) -> Self {
        Failure::with_category(message, FailureCategory::from_http_status(status))
    }

    /// A failure from any error: the first `std::io::Error` in its source chain decides the
    /// category (see [`Classify`] for `io::Error`); otherwise the message does, conservatively.
    pub fn from_error(error: &(dyn std::error::Error + 'static)) -> Self {
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
        while let Some(e) = cause {
            if let Some(io) = e.downcast_ref::<io::Error>() {
                return Failure::of_text(Text::display(error), io.category());
            }
            cause = e.source();
        }
        let message = Text::display(error);
        let category = FailureCategory::from_message(&message);
        Failure::of_text(message, category)
    }

    /// A failure from an error that classifies itself: its category and its
    /// [`blame`](Classify::blame).
    pub fn classified<E: Classify + fmt::Display + ?Sized>(error: &E) -> Self {
        let failure =
            Failure::of_text(Text::display(error), error.category()).with_blame(error.blame());
        match error.retry_after() {
            Some(hint) => failure.with_retry_after(hint),
            None => failure,
        }
    }

    /// The tool asked to be left alone for `hint` (B13): if this failure opens its circuit,
    /// the probe waits that long, bounded by one second and the policy's cool-down cap.
    /// Anything past about 49 days is kept as 49 days (and bounded far below that anyway).
    #[must_use]
    pub fn with_retry_after(mut self, hint: Duration) -> Self {
        let millis = u64::try_from(hint.as_millis())
            .unwrap_or(u64::MAX)
            .min(MAX_HINT_MS);
        // At least a millisecond, so that a hint of zero is still a hint (bounded up to 1 s).
        self.retry_after = u32::try_from(millis.max(1)).unwrap_or(u32::MAX);
        self
    }

    /// The retry-after hint, if the tool gave one ([`with_retry_after`](Self::with_retry_after)).
    pub fn retry_after(&self) -> Option<Duration> {
        (self.retry_after != 0).then(|| Duration::from_millis(u64::from(self.retry_after)))
    }

    /// The caller's mistake (B14), its category guessed from the message like
    /// [`new`](Self::new)'s: answered and counted as the model's mistake, never charged to
    /// the tool or the budget.
    ///
    /// ```
    /// use agent_circuit_breaker::{Blame, Failure, FailureCategory};
    /// let failure = Failure::caller("/tmp/x.txt was not found");
    /// assert_eq!(failure.blame(), Blame::Caller);
    /// assert_eq!(failure.category(), FailureCategory::NotFound);
    /// ```
    pub fn caller(message: impl Into<Cow<'static, str>>) -> Self {
        Failure::new(message).blame_caller()
    }

    /// Marks the failure as the caller's mistake (B14): see [`caller`](Self::caller).
    #[must_use]
    pub fn blame_caller(self) -> Self {
        self.with_blame(Blame::Caller)
    }

    /// The failure with `blame` ([`Blame::Dependency`] is
    /// [`server_unreachable`](Self::server_unreachable)).
    #[must_use]
    pub fn with_blame(mut self, blame: Blame) -> Self {
        self.blame = blame;
        self
    }

    /// Whose failure it is (B14).
    pub fn blame(&self) -> Blame {
        self.blame
    }

    /// Marks the failure as the server's, not the tool's (B10): the tool's server could not
    /// be reached — its transport closed, a send failed, its health check failed. For a
    /// tool on a server ([`ToolSpecBuilder::server`](crate::capability::ToolSpecBuilder::server)),
    /// every tool of that server goes down with it, as one event charged once; for a tool on
    /// no server it is an ordinary failure.
    ///
    /// The blame is then the dependency's ([`Blame::Dependency`]).
    #[must_use]
    pub fn server_unreachable(self) -> Self {
        self.with_blame(Blame::Dependency)
    }

    /// Whether the tool's server could not be reached ([`server_unreachable`](Self::server_unreachable)).
    pub fn is_server_unreachable(&self) -> bool {
        self.blame == Blame::Dependency
    }

    /// The error message, as the tool gave it.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The category.
    pub fn category(&self) -> FailureCategory {
        self.category
    }

    /// The message on one line, for tables and one-line reports: its first non-empty line,
    /// with ` …` when more followed.
    pub fn summary(&self) -> Cow<'_, str> {
        let mut lines = self
            .message
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty());
        let first = lines.next().unwrap_or("");
        if lines.next().is_some() {
            Cow::Owned(format!("{first} …"))
        } else if first.len() == self.message.len() {
            Cow::Borrowed(&*self.message)
        } else {
            Cow::Borrowed(first)
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<&io::Error> for Failure {
    /// One allocation, the message; the category from the kind, or from the message when the
    /// kind says nothing.
    fn from(error: &io::Error) -> Self {
        let message = Text::display(error);
        let category = io_kind_category(error.kind())
            .unwrap_or_else(|| FailureCategory::from_message(&message));
        Failure::of_text(message, category)
    }
}

impl From<io::Error> for Failure {
    fn from(error: io::Error) -> Self {
        Failure::classified(&error)
    }
}

impl From<&'static str> for Failure {
    /// A literal message, kept as it is: no allocation, and recording it copies a pointer.
    /// (A borrowed message that is not `'static` goes through [`Failure::new`] with an owned
    /// `String`, or [`Failure::from_error`] for an error.)
    #[inline]
    fn from(message: &'static str) -> Self {
        Failure::of_text(Text::Static(message), text::static_category(message))
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure::new(message)
    }
}
