//! A [`ToolSpec`]'s serde form, its `Debug` and its equality: field by field, as a map
//! writes a tool (`tool`, `provides`, `alternatives`, `fallback`, then the optional keys),
//! whatever the spec keeps behind its pointer.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::timeout::TimeoutSpec;
use super::tool::{Extra, Name, Rare};
use super::{AlternativeSpec, Text, ToolSpec};
use crate::model::failure::FailureCategory;
use crate::model::id::ToolName;

/// A tool as a document writes it, read.
#[derive(Deserialize)]
#[serde(rename = "ToolSpec", deny_unknown_fields)]
pub(super) struct ToolWire {
    tool: ToolName,
    #[serde(default)]
    provides: Text,
    #[serde(default)]
    alternatives: Vec<AlternativeSpec>,
    #[serde(default)]
    fallback: Text,
    #[serde(default)]
    threshold: Option<u32>,
    #[serde(default)]
    probe_every: Option<u32>,
    #[serde(default)]
    caches: bool,
    #[serde(default)]
    server: Option<Text>,
    #[serde(default)]
    caller_errors: Option<Vec<FailureCategory>>,
    #[serde(default)]
    timeout: Option<TimeoutSpec>,
}

impl From<ToolWire> for ToolSpec {
    fn from(wire: ToolWire) -> Self {
        ToolSpec {
            name: Name::Shared(wire.tool),
            provides: wire.provides,
            fallback: wire.fallback,
            extra: Extra::new(
                wire.caches,
                Rare {
                    alternatives: Cow::Owned(wire.alternatives),
                    threshold: wire.threshold,
                    probe_every: wire.probe_every,
                    server: wire.server,
                    caller_errors: wire.caller_errors,
                    timeout: wire.timeout,
                },
            ),
        }
    }
}

impl<'de> Deserialize<'de> for ToolSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        ToolWire::deserialize(deserializer).map(ToolSpec::from)
    }
}

/// A tool as a document writes it, borrowed from the spec.
#[derive(Serialize)]
#[serde(rename = "ToolSpec")]
struct ToolWireRef<'a> {
    tool: &'a str,
    provides: &'a str,
    alternatives: &'a [AlternativeSpec],
    fallback: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    threshold: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    probe_every: Option<u32>,
    #[serde(skip_serializing_if = "is_false")]
    caches: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    server: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    caller_errors: Option<&'a [FailureCategory]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout: Option<Cow<'a, TimeoutSpec>>,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_false(b: &bool) -> bool {
    !*b
}

impl<'a> From<&'a ToolSpec> for ToolWireRef<'a> {
    fn from(spec: &'a ToolSpec) -> Self {
        ToolWireRef {
            tool: spec.name(),
            provides: spec.provides(),
            alternatives: spec.alternatives(),
            fallback: spec.fallback(),
            threshold: spec.threshold(),
            probe_every: spec.probe_every(),
            caches: spec.is_caching(),
            server: spec.server(),
            caller_errors: spec.caller_errors(),
            timeout: spec.declared_timeout(),
        }
    }
}

impl Serialize for ToolSpec {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ToolWireRef::from(self).serialize(serializer)
    }
}

impl fmt::Debug for ToolSpec {
    /// The fields as a map names them, whatever the spec keeps behind its pointer.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let wire = ToolWireRef::from(self);
        f.debug_struct("ToolSpec")
            .field("name", &wire.tool)
            .field("provides", &wire.provides)
            .field("alternatives", &wire.alternatives)
            .field("fallback", &wire.fallback)
            .field("threshold", &wire.threshold)
            .field("probe_every", &wire.probe_every)
            .field("caches", &wire.caches)
            .field("server", &wire.server)
            .field("caller_errors", &wire.caller_errors)
            .field("timeout", &wire.timeout)
            .finish()
    }
}

impl PartialEq for ToolSpec {
    /// Equal when they say the same, however each keeps it (`'static` or owned).
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (ToolWireRef::from(self), ToolWireRef::from(other));
        a.tool == b.tool
            && a.provides == b.provides
            && a.alternatives == b.alternatives
            && a.fallback == b.fallback
            && a.threshold == b.threshold
            && a.probe_every == b.probe_every
            && a.caches == b.caches
            && a.server == b.server
            && a.caller_errors == b.caller_errors
            && a.timeout == b.timeout
    }
}

impl Eq for ToolSpec {}
