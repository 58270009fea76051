//! What a failure points at (R9.1): the categories, and how one is read from an io kind, an
//! exit status, an HTTP status or, as a last resort, the message.

use std::fmt;
use std::io;
use std::process::ExitStatus;

use serde::{Deserialize, Serialize};

use super::phrases::{CLASSES, phrase_index};

/// What a failure points at (R9.1): shared infrastructure, or something local to the call.
///
/// [`Network`](Self::Network), [`Filesystem`](Self::Filesystem) and
/// [`Permission`](Self::Permission) are infrastructure categories: tools failing alike with
/// one of them within the cascade window are one systemic event (R9.2). The others are
/// tool-local and never correlate ([`is_infrastructure`](Self::is_infrastructure)).
///
/// Serialized in snake case (`network`, `not_found`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureCategory {
    /// Infrastructure: connections refused, reset or aborted, unreachable hosts and
    /// networks, DNS, broken pipes; HTTP 502, 503 and 504 (a gateway or server in between).
    /// A timeout that points at the network belongs here (a gateway timeout, or an error type
    /// that [classifies](super::Classify) its connect timeout so).
    Network,
    /// Infrastructure: a read-only or full file system, an exceeded quota, a stale network
    /// file handle. (A bad path — a directory where a file was expected, a file that already
    /// exists — is the call's own: [`Other`](Self::Other).)
    Filesystem,
    /// Infrastructure: permission denied, operation not permitted; exit status 126 (found
    /// but not executable); HTTP 401, 403 and 407.
    Permission,
    /// Tool-local: the call ran out of time, for all the failure says, on its own account (a
    /// slow command, a tool's deadline, a process killed at its deadline, HTTP 408).
    Timeout,
    /// Tool-local: the command, file or resource does not exist (exit status 127, HTTP 404
    /// and 410).
    NotFound,
    /// Tool-local: the call's input was rejected — an invalid argument (`EINVAL`,
    /// `io::ErrorKind::InvalidInput`), invalid params, HTTP 400 and 422, an input the tool's
    /// domain does not accept. Whose mistake that is, is the failure's [`Blame`].
    ///
    /// [`Blame`]: super::Blame
    InvalidInput,
    /// Tool-local: anything else — a command's own non-zero exit status, an error that says
    /// nothing more.
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
            FailureCategory::InvalidInput => "invalid input",
            FailureCategory::Other => "other",
        }
    }

    /// Whether the category points at infrastructure that tools share — network, filesystem,
    /// permission — and so can correlate failures across tools (R9.2). Tool-local categories
    /// (timeout, not found, invalid input, other) never do, under either cascade rule (R9.6).
    ///
    /// ```
    /// use agent_circuit_breaker::FailureCategory;
    /// assert!(FailureCategory::Network.is_infrastructure());
    /// assert!(!FailureCategory::NotFound.is_infrastructure());
    /// ```
    pub const fn is_infrastructure(self) -> bool {
        matches!(
            self,
            FailureCategory::Network | FailureCategory::Filesystem | FailureCategory::Permission
        )
    }

    /// The category of an `std::io::ErrorKind`, exactly: `InvalidInput` and
    /// `InvalidFilename` are [`InvalidInput`](Self::InvalidInput); other kinds about the call
    /// itself (a bad path, an address in use, invalid data) and kinds that say nothing are
    /// [`Other`](Self::Other).
    pub fn from_io_kind(kind: io::ErrorKind) -> Self {
        io_kind_category(kind).unwrap_or(FailureCategory::Other)
    }

    /// The category of a process's exit code, as shells report it: 126 (found but not
    /// executable) is [`Permission`](Self::Permission), 127 (command not found)
    /// [`NotFound`](Self::NotFound), 124 (`timeout(1)`) and 128 + a deadline signal (see
    /// [`from_signal`](Self::from_signal)) [`Timeout`](Self::Timeout); any other code is the
    /// command's own answer, [`Other`](Self::Other).
    ///
    /// ```
    /// use agent_circuit_breaker::FailureCategory;
    /// assert_eq!(FailureCategory::from_exit_code(127), FailureCategory::NotFound);
    /// assert_eq!(FailureCategory::from_exit_code(1), FailureCategory::Other);
    /// ```
    pub const fn from_exit_code(code: i32) -> Self {
        match code {
            126 => FailureCategory::Permission,
            127 => FailureCategory::NotFound,
            124 => FailureCategory::Timeout,
            129..=192 => FailureCategory::from_signal(code - 128),
            _ => FailureCategory::Other,
        }
    }

    /// The category of a process killed by `signal`: the signals a deadline sends (SIGKILL 9,
    /// SIGALRM 14, SIGTERM 15, SIGXCPU 24) are [`Timeout`](Self::Timeout), others (a crash)
    /// [`Other`](Self::Other). Both are tool-local.
    pub const fn from_signal(signal: i32) -> Self {
        match signal {
            9 | 14 | 15 | 24 => FailureCategory::Timeout,
            _ => FailureCategory::Other,
        }
    }

    /// The category of a finished process's status: its exit code
    /// ([`from_exit_code`](Self::from_exit_code)), or on Unix the signal that killed it
    /// ([`from_signal`](Self::from_signal)).
    pub fn from_exit_status(status: ExitStatus) -> Self {
        if let Some(code) = status.code() {
            return FailureCategory::from_exit_code(code);
        }
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            if let Some(signal) = status.signal() {
                return FailureCategory::from_signal(signal);
            }
        }
        FailureCategory::Other
    }

    /// The category of an HTTP status a tool reports: 502, 503 and 504 are
    /// [`Network`](Self::Network) (a gateway or server in between); 401, 403 and 407
    /// [`Permission`](Self::Permission); 408 [`Timeout`](Self::Timeout); 404 and 410
    /// [`NotFound`](Self::NotFound); 400 and 422 (the request was rejected)
    /// [`InvalidInput`](Self::InvalidInput); anything else — 429, 500 — [`Other`](Self::Other).
    ///
    /// ```
    /// use agent_circuit_breaker::FailureCategory;
    /// assert_eq!(FailureCategory::from_http_status(503), FailureCategory::Network);
    /// assert_eq!(FailureCategory::from_http_status(404), FailureCategory::NotFound);
    /// assert_eq!(FailureCategory::from_http_status(422), FailureCategory::InvalidInput);
    /// assert_eq!(FailureCategory::from_http_status(500), FailureCategory::Other);
    /// ```
    pub const fn from_http_status(status: u16) -> Self {
        match status {
            502..=504 => FailureCategory::Network,
            401 | 403 | 407 => FailureCategory::Permission,
            408 => FailureCategory::Timeout,
            404 | 410 => FailureCategory::NotFound,
            400 | 422 => FailureCategory::InvalidInput,
            _ => FailureCategory::Other,
        }
    }

    /// A conservative guess from a message, for errors that carry nothing else. Only
    /// unambiguous infrastructure phrases, as whole words, give an infrastructure category
    /// (`connection refused`, `connection reset`, `network is unreachable`, `no route to
    /// host`, `dns`, `broken pipe`, `read-only file system`, `no space left on device`,
    /// `permission denied`, `EACCES`, ...). A message that also names something missing
    /// (`not found`, `no such ...`) is [`NotFound`](Self::NotFound) whatever else it says;
    /// `timeout` and `timed out` are [`Timeout`](Self::Timeout); `invalid argument`,
    /// `invalid input`, `invalid params`, `EINVAL` are [`InvalidInput`](Self::InvalidInput);
    /// anything else is [`Other`](Self::Other).
    ///
    /// ```
    /// use agent_circuit_breaker::FailureCategory;
    /// assert_eq!(FailureCategory::from_message("connection refused"), FailureCategory::Network);
    /// assert_eq!(FailureCategory::from_message("timeout after 120s"), FailureCategory::Timeout);
    /// assert_eq!(FailureCategory::from_message("command not found"), FailureCategory::NotFound);
    /// assert_eq!(FailureCategory::from_message("DNS name not found"), FailureCategory::NotFound);
    /// assert_eq!(FailureCategory::from_message("network error"), FailureCategory::Other);
    /// ```
    pub fn from_message(message: &str) -> Self {
        // Compared without case, byte by byte (the phrases are lower-case ASCII): nothing is
        // copied and nothing allocated.
        let bytes = message.as_bytes();
        let index = phrase_index();
        let mut found = [false; CLASSES.len()];
        for (at, pair) in bytes.windows(2).enumerate() {
            let candidates =
                index.candidates(pair[0].to_ascii_lowercase(), pair[1].to_ascii_lowercase());
            if candidates.is_empty() {
                continue;
            }
            let rest = &bytes[at..];
            let word_start = at == 0 || !bytes[at - 1].is_ascii_alphanumeric();
            for &(p, class) in candidates {
                let whole_words = CLASSES[class].1;
                // A word phrase only where a word starts; then the last byte (phrases that
                // share a bucket share their start: "connection refused", "connection
                // reset"); then the rest, by hand (phrases are a few bytes long).
                if (whole_words && !word_start)
                    || p.last().copied()
                        != rest
                            .get(p.len().wrapping_sub(1))
                            .map(u8::to_ascii_lowercase)
                    || !p
                        .iter()
                        .zip(rest)
                        .all(|(x, y)| *x == y.to_ascii_lowercase())
                {
                    continue;
                }
                if !whole_words || !rest.get(p.len()).is_some_and(u8::is_ascii_alphanumeric) {
                    found[class] = true;
                }
            }
        }
        // In order of precedence: a missing resource whatever else is said, then the
        // infrastructure categories, then a timeout, then rejected input.
        CLASSES
            .iter()
            .zip(found)
            .find_map(|(&(category, _, _), hit)| hit.then_some(category))
            .unwrap_or(FailureCategory::Other)
    }
}

/// The category an io kind names, or `None` when the kind says nothing (`Other`, and kinds
/// this crate does not know), so that the message may be consulted.
pub(super) fn io_kind_category(kind: io::ErrorKind) -> Option<FailureCategory> {
    use io::ErrorKind as K;
    Some(match kind {
        K::ConnectionRefused
        | K::ConnectionReset
        | K::ConnectionAborted
        | K::NotConnected
        | K::BrokenPipe
        | K::HostUnreachable
        | K::NetworkUnreachable
        | K::NetworkDown => FailureCategory::Network,
        K::ReadOnlyFilesystem | K::StorageFull | K::QuotaExceeded | K::StaleNetworkFileHandle => {
            FailureCategory::Filesystem
        }
        K::PermissionDenied => FailureCategory::Permission,
        // On Unix a socket's read timeout reports `WouldBlock`.
        K::TimedOut | K::WouldBlock => FailureCategory::Timeout,
        K::NotFound => FailureCategory::NotFound,
        K::InvalidInput | K::InvalidFilename => FailureCategory::InvalidInput,
        // The call's own: its paths, its data, its address.
        K::InvalidData
        | K::IsADirectory
        | K::NotADirectory
        | K::DirectoryNotEmpty
        | K::AlreadyExists
        | K::FileTooLarge
        | K::CrossesDevices
        | K::TooManyLinks
        | K::ArgumentListTooLong
        | K::AddrInUse
        | K::AddrNotAvailable
        | K::ResourceBusy
        | K::ExecutableFileBusy
        | K::Deadlock
        | K::Interrupted
        | K::Unsupported
        | K::UnexpectedEof
        | K::WriteZero
        | K::OutOfMemory => FailureCategory::Other,
        _ => return None,
    })
}

impl fmt::Display for FailureCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FailureCategory {
    /// Whether a circuit opened by failures of this category is worth sharing with the
    /// fleet (B11): network and timeout failures say something about the tool, wherever it
    /// is called from; a filesystem or permission failure, a missing resource or another
    /// error may be this worker's own.
    pub fn is_shared(self) -> bool {
        matches!(self, FailureCategory::Network | FailureCategory::Timeout)
    }
}
