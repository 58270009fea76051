//! What an alternative route loses: its text and its [`Severity`], the order routing tries
//! alternatives in (R1.2, R1.5).

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::Text;

/// The text shown for an alternative whose degradation was not given (R1.2).
pub const UNKNOWN_DEGRADATION: &str = "unknown — test before relying on this route";

/// How much of a tool's capability an alternative loses (R1.5). Routing tries `Low` before
/// `High`; `Unknown` counts as `High`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// A similar capability: note the degradation and go on.
    Low,
    /// A significant loss: say explicitly what the result lacks.
    High,
    /// Not known: treated as `High` until tested.
    Unknown,
}

impl Severity {
    /// Whether routing ranks this severity with the high ones (`High` and `Unknown`).
    pub const fn is_high(self) -> bool {
        !matches!(self, Severity::Low)
    }

    /// The severity's name: `low`, `high` or `unknown`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::High => "high",
            Severity::Unknown => "unknown",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an alternative route loses, with its [`Severity`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Degradation {
    pub(super) text: Option<Text>,
    pub(super) severity: Severity,
}

impl Degradation {
    /// A low degradation: a similar capability with `text` lost.
    pub const fn low_static(text: &'static str) -> Self {
        Degradation {
            text: Some(Cow::Borrowed(text)),
            severity: Severity::Low,
        }
    }

    /// A high degradation: a significant loss of capability.
    pub const fn high_static(text: &'static str) -> Self {
        Degradation {
            text: Some(Cow::Borrowed(text)),
            severity: Severity::High,
        }
    }

    /// A low degradation from any text.
    pub fn low(text: impl Into<Text>) -> Self {
        Degradation {
            text: Some(text.into()),
            severity: Severity::Low,
        }
    }

    /// A high degradation from any text.
    pub fn high(text: impl Into<Text>) -> Self {
        Degradation {
            text: Some(text.into()),
            severity: Severity::High,
        }
    }

    /// A degradation nobody has measured yet (R1.2): rendered as
    /// [`UNKNOWN_DEGRADATION`], ranked as high.
    pub const fn unknown() -> Self {
        Degradation {
            text: None,
            severity: Severity::Unknown,
        }
    }

    /// The severity routing uses.
    pub const fn severity(&self) -> Severity {
        self.severity
    }

    /// The declared text, if any.
    pub fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }
}

impl fmt::Display for Degradation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text.as_deref().unwrap_or(UNKNOWN_DEGRADATION))
    }
}
