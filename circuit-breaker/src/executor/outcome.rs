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

/// A tool's value with the route that produced it (R4.2) and how fresh it is (R6).
///
/// The tool answering live is the common case, and it carries nothing beside the value: the
/// route and the label live behind one pointer, null until there is one, so a `Routed` of a
/// scalar moves in two registers.
#[derive(Clone, PartialEq, Eq)]
pub struct Routed<T> {
    /// The value.
    pub value: T,
    provenance: Option<Box<Provenance>>,
}

/// What a value went through besides a live call of its tool.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Provenance {
    route: Option<RouteTaken>,
    freshness: Freshness,
}

/// The label of a value nothing was said about.
static FRESH: Freshness = Freshness::Fresh;

impl<T> Routed<T> {
    /// A value from the tool itself, live: no route, no label.
    pub const fn direct(value: T) -> Self {
        Self {
            value,
            provenance: None,
        }
    }

    /// A value with the route taken instead of the tool (`None` when the tool answered) and
    /// its freshness.
    pub fn new(value: T, route: Option<RouteTaken>, freshness: Freshness) -> Self {
        let provenance = match (route, freshness) {
            (None, Freshness::Fresh) => None,
            (route, freshness) => Some(Box::new(Provenance { route, freshness })),
        };
        Self { value, provenance }
    }

    /// The route taken instead of the tool, if one was.
    pub fn route(&self) -> Option<&RouteTaken> {
        self.provenance.as_ref().and_then(|p| p.route.as_ref())
    }

    /// [`Routed::new`] for the executor, whose routes come boxed: a live answer from the tool
    /// itself allocates nothing.
    #[inline]
    pub(crate) fn taken(value: T, route: Option<Box<RouteTaken>>, freshness: Freshness) -> Self {
        match (route, freshness) {
            (None, Freshness::Fresh) => Self::direct(value),
            (route, freshness) => Self::new(value, route.map(|r| *r), freshness),
        }
    }

    /// How fresh the value is: [`Freshness::Fresh`], which prints no label, for a live result.
    pub fn freshness(&self) -> &Freshness {
        self.provenance.as_ref().map_or(&FRESH, |p| &p.freshness)
    }

    /// Gives the value a freshness label (R6).
    pub fn set_freshness(&mut self, freshness: Freshness) {
        match &mut self.provenance {
            Some(provenance) => provenance.freshness = freshness,
            None if freshness == Freshness::Fresh => {}
            None => {
                self.provenance = Some(Box::new(Provenance {
                    route: None,
                    freshness,
                }));
            }
        }
    }

    /// Whether the value came through an alternative, with some capability lost.
    pub fn is_degraded(&self) -> bool {
        self.route().is_some()
    }

    /// The value, dropping the route.
    pub fn into_value(self) -> T {
        self.value
    }

    /// The value, the route and the freshness, taken apart.
    pub fn into_parts(self) -> (T, Option<RouteTaken>, Freshness) {
        match self.provenance {
            Some(provenance) => {
                let Provenance { route, freshness } = *provenance;
                (self.value, route, freshness)
            }
            None => (self.value, None, Freshness::Fresh),
        }
    }

    /// The same route and label on another value.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Routed<U> {
        Routed {
            value: f(self.value),
            provenance: self.provenance,
        }
    }
}

// The provenance is shown as what it holds, the route and the label, as when they were fields.
#[allow(clippy::missing_fields_in_debug)]
impl<T: fmt::Debug> fmt::Debug for Routed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Routed")
            .field("value", &self.value)
            .field("route", &self.route())
            .field("freshness", self.freshness())
            .finish()
    }
}

/// The serde form: the value, the route and the freshness side by side.
#[derive(Serialize)]
struct RoutedRef<'a, T> {
    value: &'a T,
    route: Option<&'a RouteTaken>,
    freshness: &'a Freshness,
}

#[derive(Deserialize)]
struct RoutedOwned<T> {
    value: T,
    route: Option<RouteTaken>,
    freshness: Freshness,
}

impl<T: Serialize> Serialize for Routed<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        RoutedRef {
            value: &self.value,
            route: self.route(),
            freshness: self.freshness(),
        }
        .serialize(serializer)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Routed<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let RoutedOwned {
            value,
            route,
            freshness,
        } = RoutedOwned::deserialize(deserializer)?;
        Ok(Self::new(value, route, freshness))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::capability::Severity;
    use crate::model::clock::Timestamp;
    use crate::model::route::RouteKind;

    fn fallback() -> RouteTaken {
        RouteTaken {
            from: "grep".into(),
            kind: RouteKind::Fallback,
            to: None,
            method: None,
            degradation: None,
            severity: Severity::High,
            fallback: Some("ask the user".into()),
        }
    }

    #[test]
    fn r4_a_live_value_is_the_value_and_a_null_pointer() {
        // What the generated method's healthy path relies on: the answer moves in registers.
        assert_eq!(
            std::mem::size_of::<Routed<u64>>(),
            2 * std::mem::size_of::<usize>()
        );
        let live = Routed::direct(7_u64);
        assert!(live.provenance.is_none());
        assert_eq!(live, Routed::new(7, None, Freshness::Fresh));
        assert_eq!(live.route(), None);
        assert_eq!(*live.freshness(), Freshness::Fresh);
        assert!(!live.is_degraded());
    }

    #[test]
    fn r6_a_label_sets_provenance_and_fresh_adds_none() {
        let mut routed = Routed::direct("text");
        routed.set_freshness(Freshness::Unknown);
        assert_eq!(*routed.freshness(), Freshness::Unknown);
        assert_ne!(routed, Routed::direct("text"));
        // A fresh label on a value without provenance stays without one.
        let mut live = Routed::direct("text");
        live.set_freshness(Freshness::Fresh);
        assert!(live.provenance.is_none());
    }

    #[test]
    fn r4_the_serde_form_keeps_value_route_and_freshness_side_by_side() {
        let at = Timestamp::from_secs(1_700_000_000);
        let routed = Routed::new(
            3_u32,
            Some(fallback()),
            Freshness::Stale { retrieved_at: at },
        );
        let json = serde_json::to_value(&routed).unwrap();
        assert_eq!(json["value"], 3);
        assert_eq!(
            json["route"]["kind"],
            serde_json::to_value(RouteKind::Fallback).unwrap()
        );
        assert_eq!(json["freshness"]["freshness"], "stale");
        let back: Routed<u32> = serde_json::from_value(json).unwrap();
        assert_eq!(back, routed);
        let (value, route, freshness) = back.into_parts();
        assert_eq!((value, route), (3, Some(fallback())));
        assert_eq!(freshness, Freshness::Stale { retrieved_at: at });

        let live: Routed<u32> =
            serde_json::from_str(r#"{"value":1,"route":null,"freshness":{"freshness":"fresh"}}"#)
                .unwrap();
        assert!(live.provenance.is_none());
        assert_eq!(
            serde_json::to_value(&live).unwrap()["route"],
            serde_json::Value::Null
        );
    }
}
