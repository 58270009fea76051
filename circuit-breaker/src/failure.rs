//! What a failed call leaves behind: its message and a category (SPEC R9.1), the signature
//! that cascade detection compares.
//!
//! The expeditor never interprets a tool's error type (R8.1); the executor turns it into a
//! [`Failure`]. `std::io::Error` kinds map exactly; other errors can say their category by
//! implementing [`Classify`]; messages are the last resort ([`FailureCategory::from_message`]).

use std::borrow::Cow;
use std::fmt;
use std::io;

use serde::{Deserialize, Serialize};

/// The kind of infrastructure a failure points at (R9.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureCategory {
    /// Connections refused or reset, unreachable hosts, DNS.
    Network,
    /// Read-only or full file systems, bad paths.
    Filesystem,
    /// Permission denied, forbidden, not allowed.
    Permission,
    /// The call ran out of time.
    Timeout,
    /// The command, file or resource does not exist.
    NotFound,
    /// Anything else.
    Other,
}

impl FailureCategory {
    /// The category's name as the reports print it (`network`, `permission`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            FailureCategory::Network => "network",
            FailureCategory::Filesystem => "filesystem",
            FailureCategory::Permission => "permission",
            FailureCategory::Timeout => "timeout",
            FailureCategory::NotFound => "not found",
            FailureCategory::Other => "other",
        }
    }

    /// The category of an `std::io::ErrorKind`, exactly.
    pub fn from_io_kind(kind: io::ErrorKind) -> Self {
        use io::ErrorKind as K;
        match kind {
            K::ConnectionRefused
            | K::ConnectionReset
            | K::ConnectionAborted
            | K::NotConnected
            | K::AddrInUse
            | K::AddrNotAvailable
            | K::BrokenPipe
            | K::HostUnreachable
            | K::NetworkUnreachable
            | K::NetworkDown => FailureCategory::Network,
            K::PermissionDenied => FailureCategory::Permission,
            K::TimedOut | K::WouldBlock => FailureCategory::Timeout,
            K::NotFound => FailureCategory::NotFound,
            K::ReadOnlyFilesystem
            | K::StorageFull
            | K::IsADirectory
            | K::NotADirectory
            | K::DirectoryNotEmpty
            | K::AlreadyExists
            | K::FileTooLarge
            | K::CrossesDevices
            | K::TooManyLinks
            | K::InvalidFilename
            | K::StaleNetworkFileHandle
            | K::ResourceBusy
            | K::ExecutableFileBusy
            | K::QuotaExceeded
            | K::Deadlock => FailureCategory::Filesystem,
            _ => FailureCategory::Other,
        }
    }

    /// A best guess from a message, for errors that carry nothing else.
    ///
    /// ```
    /// use circuit_breaker::FailureCategory;
    /// assert_eq!(FailureCategory::from_message("connection refused"), FailureCategory::Network);
    /// assert_eq!(FailureCategory::from_message("timeout after 120s"), FailureCategory::Timeout);
    /// assert_eq!(FailureCategory::from_message("command not found"), FailureCategory::NotFound);
    /// ```
    pub fn from_message(message: &str) -> Self {
        let m = message.to_ascii_lowercase();
        let has = |needles: &[&str]| needles.iter().any(|n| m.contains(n));
        if has(&[
            "permission denied",
            "access denied",
            "forbidden",
            "not permitted",
            "eacces",
            "eperm",
            "unauthorized",
        ]) {
            FailureCategory::Permission
        } else if has(&[
            "read-only file system",
            "erofs",
            "no space left",
            "disk full",
            "enospc",
            "file system",
            "filesystem",
            "is a directory",
            "not a directory",
        ]) {
            FailureCategory::Filesystem
        } else if has(&["timeout", "timed out", "deadline exceeded", "etimedout"]) {
            FailureCategory::Timeout
        } else if has(&[
            "connection refused",
            "connection reset",
            "econnrefused",
            "econnreset",
            "unreachable",
            "dns",
            "name resolution",
            "network",
            "broken pipe",
            "connection closed",
        ]) {
            FailureCategory::Network
        } else if has(&["not found", "no such", "enoent", "does not exist"]) {
            FailureCategory::NotFound
        } else {
            FailureCategory::Other
        }
    }
}

impl fmt::Display for FailureCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error that knows its [`FailureCategory`]. Implement it for a tool's error type to make
/// cascade detection exact instead of guessed from messages.
pub trait Classify {
    /// The category of this error.
    fn category(&self) -> FailureCategory;
}

impl Classify for io::Error {
    fn category(&self) -> FailureCategory {
        match FailureCategory::from_io_kind(self.kind()) {
            FailureCategory::Other => FailureCategory::from_message(&self.to_string()),
            category => category,
        }
    }
}

impl Classify for FailureCategory {
    fn category(&self) -> FailureCategory {
        *self
    }
}

/// One failed call: its message and category (R9.1).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Failure {
    message: Cow<'static, str>,
    category: FailureCategory,
}

impl Failure {
    /// A failure whose category is guessed from its message.
    pub fn new(message: impl Into<Cow<'static, str>>) -> Self {
        let message = message.into();
        let category = FailureCategory::from_message(&message);
        Failure { message, category }
    }

    /// A failure with a known category.
    pub fn with_category(message: impl Into<Cow<'static, str>>, category: FailureCategory) -> Self {
        Failure {
            message: message.into(),
            category,
        }
    }

    /// A failure from any error: the first `std::io::Error` in its source chain decides the
    /// category; otherwise the message does.
    pub fn from_error(error: &(dyn std::error::Error + 'static)) -> Self {
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
        while let Some(e) = cause {
            if let Some(io) = e.downcast_ref::<io::Error>() {
                return Failure::with_category(error.to_string(), io.category());
            }
            cause = e.source();
        }
        Failure::new(error.to_string())
    }

    /// A failure from an error that classifies itself.
    pub fn classified<E: Classify + fmt::Display + ?Sized>(error: &E) -> Self {
        Failure::with_category(error.to_string(), error.category())
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
            Cow::Borrowed(&self.message)
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
    fn from(error: &io::Error) -> Self {
        Failure::classified(error)
    }
}

impl From<io::Error> for Failure {
    fn from(error: io::Error) -> Self {
        Failure::classified(&error)
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Self {
        Failure::new(message.to_owned())
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure::new(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Wrapper(io::Error);
    impl fmt::Display for Wrapper {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "search failed")
        }
    }
    impl std::error::Error for Wrapper {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn io_kinds_map_exactly_and_messages_are_the_last_resort() {
        let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
        assert_eq!(Failure::from(&refused).category(), FailureCategory::Network);
        let ro = io::Error::from(io::ErrorKind::ReadOnlyFilesystem);
        assert_eq!(Failure::from(ro).category(), FailureCategory::Filesystem);
        let other = io::Error::other("permission denied by policy");
        assert_eq!(Failure::from(other).category(), FailureCategory::Permission);
        assert_eq!(Failure::new("boom").category(), FailureCategory::Other);
        let wrapped = Wrapper(io::Error::from(io::ErrorKind::TimedOut));
        let failure = Failure::from_error(&wrapped);
        assert_eq!(failure.category(), FailureCategory::Timeout);
        assert_eq!(failure.message(), "search failed");
    }
}
