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
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

mod retry_after;
pub use retry_after::parse_retry_after;

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
    /// that [classifies](Classify) its connect timeout so).
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
    InvalidInput,
    /// Tool-local: anything else — a command's own non-zero exit status, an error that says
    /// nothing more.
    Other,
}

/// Phrases that name an infrastructure failure unambiguously, matched as whole words.
const NETWORK_PHRASES: &[&str] = &[
    "connection refused",
    "connection reset",
    "connection aborted",
    "connection timed out",
    "econnrefused",
    "econnreset",
    "econnaborted",
    "etimedout",
    "network unreachable",
    "network is unreachable",
    "enetunreach",
    "network is down",
    "enetdown",
    "no route to host",
    "host unreachable",
    "host is unreachable",
    "ehostunreach",
    "dns",
    "name resolution",
    "could not resolve host",
    "broken pipe",
    "epipe",
];
const FILESYSTEM_PHRASES: &[&str] = &[
    "read-only file system",
    "read-only filesystem",
    "erofs",
    "no space left on device",
    "enospc",
    "disk full",
    "disk quota exceeded",
    "edquot",
    "stale file handle",
    "estale",
];
const PERMISSION_PHRASES: &[&str] = &[
    "permission denied",
    "operation not permitted",
    "eacces",
    "eperm",
];
/// Tool-local phrases, matched anywhere (a wrong guess here cannot correlate anything).
const NOT_FOUND_PHRASES: &[&str] = &["not found", "no such", "enoent", "does not exist"];
const TIMEOUT_PHRASES: &[&str] = &["timeout", "timed out", "deadline exceeded"];
const INVALID_INPUT_PHRASES: &[&str] = &[
    "invalid argument",
    "invalid input",
    "invalid param",
    "einval",
];

/// (The tests' oracle.) Whether `needle` occurs in `haystack` with no letter or digit right before or after it.
#[cfg(test)]
fn contains_word(haystack: &str, needle: &str) -> bool {
    let bytes = haystack.as_bytes();
    haystack.match_indices(needle).any(|(at, _)| {
        let before = at.checked_sub(1).and_then(|i| bytes.get(i));
        let after = bytes.get(at + needle.len());
        !before.is_some_and(u8::is_ascii_alphanumeric)
            && !after.is_some_and(u8::is_ascii_alphanumeric)
    })
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

/// The phrase lists in order of precedence: the category, whether a phrase must stand as
/// whole words, and the phrases.
const CLASSES: [(FailureCategory, bool, &[&str]); 6] = [
    (FailureCategory::NotFound, false, NOT_FOUND_PHRASES),
    (FailureCategory::Network, true, NETWORK_PHRASES),
    (FailureCategory::Filesystem, true, FILESYSTEM_PHRASES),
    (FailureCategory::Permission, true, PERMISSION_PHRASES),
    (FailureCategory::Timeout, false, TIMEOUT_PHRASES),
    (FailureCategory::InvalidInput, false, INVALID_INPUT_PHRASES),
];

/// A phrase's bucket in [`PhraseIndex`]: its first two bytes, six bits each (letters,
/// digits and the space each keep their own; a digit shares with a letter, which the full
/// comparison tells apart).
#[inline]
fn bucket(first: u8, second: u8) -> usize {
    (usize::from(first & 63) << 6) | usize::from(second & 63)
}

/// Every phrase with its class (an index into [`CLASSES`]), ordered by bucket, and where each
/// bucket starts: most positions of a message start no phrase at all and are passed at the
/// cost of two loads.
struct PhraseIndex {
    phrases: Vec<(&'static [u8], usize)>,
    starts: Vec<u16>,
}

impl PhraseIndex {
    #[inline]
    fn candidates(&self, first: u8, second: u8) -> &[(&'static [u8], usize)] {
        let b = bucket(first, second);
        let (Some(&from), Some(&to)) = (self.starts.get(b), self.starts.get(b + 1)) else {
            return &[];
        };
        self.phrases
            .get(usize::from(from)..usize::from(to))
            .unwrap_or(&[])
    }
}

/// The phrase index, built once.
fn phrase_index() -> &'static PhraseIndex {
    static INDEX: std::sync::OnceLock<PhraseIndex> = std::sync::OnceLock::new();
    INDEX.get_or_init(|| {
        let mut phrases: Vec<(&'static [u8], usize)> = Vec::new();
        for (class, &(_, _, list)) in CLASSES.iter().enumerate() {
            for &phrase in list {
                if phrase.len() >= 2 {
                    phrases.push((phrase.as_bytes(), class));
                }
            }
        }
        phrases.sort_by_key(|&(p, _)| bucket(p[0], p[1]));
        let mut starts = vec![0u16; 4097];
        for &(p, _) in &phrases {
            starts[bucket(p[0], p[1]) + 1] += 1;
        }
        for b in 1..starts.len() {
            starts[b] += starts[b - 1];
        }
        PhraseIndex { phrases, starts }
    })
}

/// The category an io kind names, or `None` when the kind says nothing (`Other`, and kinds
/// this crate does not know), so that the message may be consulted.
fn io_kind_category(kind: io::ErrorKind) -> Option<FailureCategory> {
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
pub trait Classify {
    /// The category of this error.
    fn category(&self) -> FailureCategory;

    /// How long the tool asked to be left alone, if it said (an HTTP `Retry-After`, a rate
    /// limit's reset): the cool-down of the opening this failure causes, bounded by the
    /// policy (B13). Parse a header with [`parse_retry_after`].
    fn retry_after(&self) -> Option<Duration> {
        None
    }

    /// Whose failure this is (B14): the tool's unless the error says otherwise.
    fn blame(&self) -> Blame {
        Blame::Tool
    }
}

/// Who a failure is charged to (B14; see the [module](self) documentation).
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

impl FailureCategory {
    /// Whether a circuit opened by failures of this category is worth sharing with the
    /// fleet (B11): network and timeout failures say something about the tool, wherever it
    /// is called from; a filesystem or permission failure, a missing resource or another
    /// error may be this worker's own.
    pub fn is_shared(self) -> bool {
        matches!(self, FailureCategory::Network | FailureCategory::Timeout)
    }
}

impl Classify for FailureCategory {
    fn category(&self) -> FailureCategory {
        *self
    }
}

/// A failure's message: a `&'static str` as given, or one shared allocation. Recording a
/// failure keeps it in several places (the breaker's last failure and run, the ledger), each
/// a copy of the pointer, never of the text: one allocation per failure at most.
#[derive(Clone)]
enum Text {
    Static(&'static str),
    Shared(Arc<str>),
}

/// Messages up to this long are formatted on the stack and allocated once.
const STACK_MESSAGE: usize = 256;

impl Text {
    /// `value`'s text in one allocation when it is at most [`STACK_MESSAGE`] bytes long (two
    /// otherwise). A `Display` that fails keeps what it wrote: never a panic.
    fn display(value: &(impl fmt::Display + ?Sized)) -> Self {
        let mut stack = Stack::new();
        if fmt::write(&mut stack, format_args!("{value}")).is_ok()
            && let Some(text) = stack.text()
        {
            return Text::Shared(Arc::from(text));
        }
        let mut long = String::new();
        let _ = fmt::write(&mut long, format_args!("{value}"));
        Text::Shared(Arc::from(long))
    }
}

impl From<Cow<'static, str>> for Text {
    fn from(text: Cow<'static, str>) -> Self {
        match text {
            Cow::Borrowed(text) => Text::Static(text),
            Cow::Owned(text) => Text::Shared(Arc::from(text)),
        }
    }
}

impl std::ops::Deref for Text {
    type Target = str;

    #[inline]
    fn deref(&self) -> &str {
        match self {
            Text::Static(text) => text,
            Text::Shared(text) => text,
        }
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Text {}

impl std::hash::Hash for Text {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (**self).hash(state);
    }
}

impl Serialize for Text {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self)
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <Cow<'de, str>>::deserialize(deserializer)?;
        Ok(Text::Shared(Arc::from(&*text)))
    }
}

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
        let category = FailureCategory::from_message(&message);
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

/// [`FailureCategory::from_message`] of `value`'s text, formatted on the stack when it fits:
/// no allocation for a message of up to [`STACK_MESSAGE`] bytes.
fn guess_from_display(value: &(impl fmt::Display + ?Sized)) -> FailureCategory {
    let mut stack = Stack::new();
    if fmt::write(&mut stack, format_args!("{value}")).is_ok()
        && let Some(text) = stack.text()
    {
        return FailureCategory::from_message(text);
    }
    FailureCategory::from_message(&value.to_string())
}

/// A message formatted on the stack: up to [`STACK_MESSAGE`] bytes, else an error.
struct Stack {
    buf: [u8; STACK_MESSAGE],
    len: usize,
}

impl Stack {
    fn new() -> Self {
        Stack {
            buf: [0; STACK_MESSAGE],
            len: 0,
        }
    }

    fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.buf[..self.len]).ok()
    }
}

impl fmt::Write for Stack {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        let room = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
        room.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
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
    fn from(message: &'static str) -> Self {
        Failure::new(message)
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
    fn infrastructure_phrases_match_whole_words_only() {
        assert!(contains_word("dns lookup failed", "dns"));
        assert!(contains_word("lookup: dns", "dns"));
        assert!(!contains_word("dnsmasq: bad option", "dns"));
        assert!(!contains_word("ednsx", "dns"));
        assert!(!contains_word("", "dns"));
        assert!(contains_word("écrire: broken pipe ✓", "broken pipe"));
        assert_eq!(
            FailureCategory::from_message("✓ connection refused ✓"),
            FailureCategory::Network
        );
        assert_eq!(
            FailureCategory::from_message("Zeitüberschreitung"),
            FailureCategory::Other
        );
    }

    #[test]
    fn b14_blame_is_kept_serialized_only_when_not_the_tools_and_old_data_reads() {
        let tool = Failure::new("boom");
        assert_eq!(tool.blame(), Blame::Tool);
        assert_eq!(
            serde_json::to_string(&tool).unwrap(),
            r#"{"message":"boom","category":"other"}"#
        );
        let caller = Failure::caller("no such file: /tmp/x.txt");
        assert_eq!(caller.category(), FailureCategory::NotFound);
        let json = serde_json::to_string(&caller).unwrap();
        assert!(json.ends_with(r#""blame":"caller"}"#), "{json}");
        assert_eq!(serde_json::from_str::<Failure>(&json).unwrap(), caller);
        // Written when an unreachable server was a flag of its own.
        let old = r#"{"message":"gone","category":"network","server_unreachable":true}"#;
        let read: Failure = serde_json::from_str(old).unwrap();
        assert!(read.is_server_unreachable());
        assert_eq!(read.blame(), Blame::Dependency);
        // An io error is the tool's whatever its kind: only the tool knows whose path it was.
        let missing = Failure::from(io::Error::from(io::ErrorKind::NotFound));
        assert_eq!(missing.blame(), Blame::Tool);
        assert_eq!(
            Failure::from(io::Error::from(io::ErrorKind::InvalidInput)).category(),
            FailureCategory::InvalidInput
        );
        assert_eq!(
            FailureCategory::from_message("Invalid arguments for tool read_text_file"),
            FailureCategory::InvalidInput
        );
        assert_eq!(
            FailureCategory::from_message("connection refused: invalid argument"),
            FailureCategory::Network
        );
    }

    #[test]
    fn exit_codes_and_http_statuses_never_panic() {
        for code in [i32::MIN, -1, 0, 128, 129, 192, 193, 255, 256, i32::MAX] {
            let _ = FailureCategory::from_exit_code(code);
            let _ = FailureCategory::from_signal(code);
        }
        assert_eq!(
            FailureCategory::from_exit_code(137),
            FailureCategory::Timeout
        );
        assert_eq!(FailureCategory::from_exit_code(139), FailureCategory::Other);
        for status in [0, 99, 404, 599, 600, u16::MAX] {
            let _ = FailureCategory::from_http_status(status);
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

    /// The category guess one search per phrase, the simple way, kept as the oracle of the
    /// one-pass guess.
    fn guessed_phrase_by_phrase(message: &str) -> FailureCategory {
        let m = message.to_ascii_lowercase();
        let word = |phrases: &[&str]| phrases.iter().any(|p| contains_word(&m, p));
        let anywhere = |phrases: &[&str]| phrases.iter().any(|p| m.contains(p));
        if anywhere(NOT_FOUND_PHRASES) {
            FailureCategory::NotFound
        } else if word(NETWORK_PHRASES) {
            FailureCategory::Network
        } else if word(FILESYSTEM_PHRASES) {
            FailureCategory::Filesystem
        } else if word(PERMISSION_PHRASES) {
            FailureCategory::Permission
        } else if anywhere(TIMEOUT_PHRASES) {
            FailureCategory::Timeout
        } else if anywhere(INVALID_INPUT_PHRASES) {
            FailureCategory::InvalidInput
        } else {
            FailureCategory::Other
        }
    }

    #[test]
    fn the_one_pass_guess_agrees_with_the_phrase_by_phrase_guess() {
        let phrases: Vec<&str> = CLASSES.iter().flat_map(|c| c.2.iter().copied()).collect();
        let around = [
            "",
            " ",
            "x",
            "1",
            "-",
            "é",
            "error: ",
            " (os error 111)",
            "DNS",
            "✓",
        ];
        let mut checked = 0;
        for &a in &phrases {
            for &b in phrases.iter().step_by(3) {
                for before in around {
                    for after in around {
                        for message in [
                            format!("{before}{a}{after}"),
                            format!("{before}{}{after}", a.to_uppercase()),
                            format!("{before}{a} and {b}{after}"),
                            format!("{b}{before}{a}{after}"),
                        ] {
                            assert_eq!(
                                FailureCategory::from_message(&message),
                                guessed_phrase_by_phrase(&message),
                                "{message:?}"
                            );
                            checked += 1;
                        }
                    }
                }
            }
        }
        let long = format!("{} connection refused", "x".repeat(STACK_MESSAGE));
        assert_eq!(
            FailureCategory::from_message(&long),
            FailureCategory::Network
        );
        assert!(checked > 10_000, "{checked}");
    }

    #[test]
    fn messages_of_any_length_and_failing_displays_are_kept_without_a_panic() {
        struct Long;
        impl fmt::Display for Long {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                for _ in 0..100 {
                    f.write_str("connection refused; ")?;
                }
                Ok(())
            }
        }
        struct Broken;
        impl fmt::Display for Broken {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("half a message")?;
                Err(fmt::Error)
            }
        }
        let long = Failure::from_error(&io::Error::other(Long.to_string()));
        assert_eq!(long.message().len(), 2000);
        assert_eq!(long.category(), FailureCategory::Network);
        let exact = Failure::with_category("x".repeat(STACK_MESSAGE), FailureCategory::Other);
        assert_eq!(
            Failure::classified(&FailureCategory::Other).message(),
            "other"
        );
        assert_eq!(exact.message().len(), STACK_MESSAGE);
        assert_eq!(Text::display(&Broken).to_string(), "half a message");
        assert_eq!(Text::display(&Long).len(), 2000);
        let copy = long.clone();
        assert_eq!(copy, long);
        let json = serde_json::to_string(&long).unwrap();
        let back: Failure = serde_json::from_str(&json).unwrap();
        assert_eq!(back, long);
    }
}
