//! A tool's deadline as a map declares it (B13): its bounds, and its serde form, which keeps
//! text that is no duration for validation to report with the tool's name.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Text;

/// The shortest per-tool timeout: the clocks count whole milliseconds.
pub const MIN_TIMEOUT: Duration = Duration::from_millis(1);

/// The longest per-tool timeout, one day: a deadline longer than that is a mistake (a unit
/// misread, `"900 years"`), not a deadline. `#[tool(timeout = "..")]` has the same bounds.
pub const MAX_TIMEOUT: Duration = Duration::from_hours(24);

/// Why a duration is no per-tool timeout: zero, under [`MIN_TIMEOUT`] or over
/// [`MAX_TIMEOUT`]. `None` for one in range.
pub fn timeout_problem(timeout: Duration) -> Option<String> {
    if timeout < MIN_TIMEOUT {
        Some(format!(
            "a timeout of {} is no deadline; the shortest is 1ms",
            humantime::format_duration(timeout)
        ))
    } else if timeout > MAX_TIMEOUT {
        Some(format!(
            "a timeout of {} is longer than the longest, 1day",
            humantime::format_duration(timeout)
        ))
    } else {
        None
    }
}

/// A tool's timeout as declared: a duration, or text that is none (kept as written, so that
/// validation reports it with the tool's name instead of failing the whole document).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum TimeoutSpec {
    Set(Duration),
    /// Boxed: a rare mistake, kept out of every tool's spec (B5's heap per tool).
    Unreadable(Box<Unreadable>),
}

/// A timeout that is no duration: what the document said, and why it is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Unreadable {
    pub(super) text: Text,
    pub(super) why: Text,
}

impl Serialize for TimeoutSpec {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            TimeoutSpec::Set(d) => {
                serializer.serialize_str(&humantime::format_duration(*d).to_string())
            }
            TimeoutSpec::Unreadable(unreadable) => serializer.serialize_str(&unreadable.text),
        }
    }
}

impl<'de> Deserialize<'de> for TimeoutSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = TimeoutSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration such as \"30s\"")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<TimeoutSpec, E> {
                Ok(match humantime::parse_duration(text.trim()) {
                    Ok(d) => TimeoutSpec::Set(d),
                    Err(e) => TimeoutSpec::Unreadable(Box::new(Unreadable {
                        text: clip_text(text),
                        why: Cow::Owned(e.to_string()),
                    })),
                })
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<TimeoutSpec, E> {
                Ok(bare_number(n.to_string()))
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<TimeoutSpec, E> {
                Ok(bare_number(n.to_string()))
            }
            fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<TimeoutSpec, E> {
                Ok(bare_number(n.to_string()))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// A number without a unit: `30` could be seconds or milliseconds, so it is not guessed.
fn bare_number(text: String) -> TimeoutSpec {
    TimeoutSpec::Unreadable(Box::new(Unreadable {
        text: Cow::Owned(text),
        why: Cow::Borrowed("a number without a unit"),
    }))
}

/// At most 64 characters of what a document said, for an error message.
fn clip_text(text: &str) -> Text {
    Cow::Owned(text.chars().take(64).collect())
}
