//! One alternative of a tool (R1.1): the other tool, how it is used, what is lost; its
//! builder, and its serde shape.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::{Degradation, Severity, Text};

/// One alternative of a tool: the other tool, how it is used, and what is lost (R1.1).
///
/// Made with [`AlternativeSpec::new`], which returns an [`AlternativeSpecBuilder`]; every API
/// that takes an alternative takes `impl Into<AlternativeSpec>`, so the builder can be passed
/// as it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "AlternativeWire", into = "AlternativeWire")]
pub struct AlternativeSpec {
    pub(super) tool: Text,
    pub(super) method: Text,
    pub(super) degradation: Degradation,
}

impl AlternativeSpec {
    /// An alternative through `tool`, with no method and an unknown degradation until the
    /// builder sets them ([`method`](AlternativeSpecBuilder::method),
    /// [`degradation`](AlternativeSpecBuilder::degradation)).
    #[allow(clippy::new_ret_no_self)] // `new` starts the chain users write; the builder ends as `Self`
    pub fn new(tool: impl Into<Text>) -> AlternativeSpecBuilder {
        AlternativeSpecBuilder {
            spec: AlternativeSpec {
                tool: tool.into(),
                method: Cow::Borrowed(""),
                degradation: Degradation::unknown(),
            },
        }
    }

    /// An alternative from `'static` parts, in a `const` context (for generated maps, through
    /// `__private_v0_1`).
    pub(crate) const fn borrowed(
        tool: &'static str,
        method: &'static str,
        degradation: Degradation,
    ) -> Self {
        AlternativeSpec {
            tool: Cow::Borrowed(tool),
            method: Cow::Borrowed(method),
            degradation,
        }
    }

    /// The alternative tool's name.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// How the alternative tool is used to reach the goal (empty when not given).
    pub fn method(&self) -> &str {
        &self.method
    }

    /// What this route loses.
    pub fn degradation(&self) -> &Degradation {
        &self.degradation
    }
}

/// Builds an [`AlternativeSpec`]; made by [`AlternativeSpec::new`].
///
/// Turn it into the spec with [`build`](Self::build) or `.into()`, or hand it to anything
/// taking `impl Into<AlternativeSpec>` (such as [`ToolSpecBuilder::alternative`]).
///
/// [`ToolSpecBuilder::alternative`]: super::ToolSpecBuilder::alternative
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a builder does nothing until it is built or given where an alternative is taken"]
pub struct AlternativeSpecBuilder {
    spec: AlternativeSpec,
}

impl AlternativeSpecBuilder {
    /// Sets how the alternative tool is used to reach the goal.
    pub fn method(mut self, method: impl Into<Text>) -> Self {
        self.spec.method = method.into();
        self
    }

    /// Sets what is lost by taking this route (unknown until set, R1.2).
    pub fn degradation(mut self, degradation: Degradation) -> Self {
        self.spec.degradation = degradation;
        self
    }

    /// The alternative.
    pub fn build(self) -> AlternativeSpec {
        self.spec
    }
}

impl From<AlternativeSpecBuilder> for AlternativeSpec {
    fn from(builder: AlternativeSpecBuilder) -> Self {
        builder.spec
    }
}

impl From<AlternativeSpec> for AlternativeSpecBuilder {
    /// A builder starting from an existing alternative, to change some of it.
    fn from(spec: AlternativeSpec) -> Self {
        AlternativeSpecBuilder { spec }
    }
}

/// The serde shape of an alternative: the source document's `{ tool, method, degradation }`, plus an
/// optional `severity` (absent means `low` when a degradation is given, `unknown` otherwise).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AlternativeWire {
    tool: Text,
    #[serde(default)]
    method: Text,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    degradation: Option<Text>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    severity: Option<Severity>,
}

impl From<AlternativeWire> for AlternativeSpec {
    fn from(wire: AlternativeWire) -> Self {
        let severity = match (&wire.degradation, wire.severity) {
            (None, _) => Severity::Unknown,
            (Some(_), Some(severity)) => severity,
            (Some(_), None) => Severity::Low,
        };
        AlternativeSpec {
            tool: wire.tool,
            method: wire.method,
            degradation: Degradation {
                text: wire.degradation,
                severity,
            },
        }
    }
}

impl From<AlternativeSpec> for AlternativeWire {
    fn from(spec: AlternativeSpec) -> Self {
        // `severity` is written only where the reader could not infer it: high, or unknown
        // despite a text (absent text already reads as unknown, absent severity as low).
        let severity = match (spec.degradation.severity, &spec.degradation.text) {
            (Severity::Low, _) | (Severity::Unknown, None) => None,
            (Severity::High, _) => Some(Severity::High),
            (Severity::Unknown, Some(_)) => Some(Severity::Unknown),
        };
        AlternativeWire {
            tool: spec.tool,
            method: spec.method,
            degradation: spec.degradation.text,
            severity,
        }
    }
}
