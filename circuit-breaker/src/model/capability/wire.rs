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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::static_tool::StaticTool;
    use super::super::{AlternativeSpec, Degradation, ToolSpec};

    static ALTERNATIVES: [AlternativeSpec; 1] = [AlternativeSpec::borrowed(
        "b",
        "by hand",
        Degradation::unknown(),
    )];
    static TOOL: StaticTool = StaticTool {
        name: "a",
        provides: "p",
        alternatives: &ALTERNATIVES,
        fallback: "f",
        threshold: Some(3),
        probe_every: None,
        caches: true,
    };

    /// A generated map's spec points at its `static` tool, a built one boxes its rare
    /// parts: both say the same, so they compare, print and serialize the same.
    #[test]
    fn a_generated_spec_and_a_built_one_are_the_same_spec() {
        let generated = TOOL.timed(1_500);
        let built = ToolSpec::new("a".to_owned())
            .provides("p")
            .alternative(AlternativeSpec::new("b").method("by hand"))
            .fallback("f")
            .threshold(3)
            .caches(true)
            .timeout(Duration::from_millis(1_500))
            .build();
        assert_eq!(generated, built);
        assert_eq!(format!("{generated:?}"), format!("{built:?}"));
        let json = serde_json::to_string(&built).expect("a spec serializes");
        assert_eq!(
            serde_json::to_string(&generated).expect("a spec serializes"),
            json
        );
        let alternative = serde_json::to_string(&ALTERNATIVES[0]).expect("serializes");
        assert_eq!(
            json,
            format!(
                r#"{{"tool":"a","provides":"p","alternatives":[{alternative}],"fallback":"f","threshold":3,"caches":true,"timeout":"1s 500ms"}}"#
            )
        );
        let read: ToolSpec = serde_json::from_str(&json).expect("reads back");
        assert_eq!(read, built);
    }

    /// Changing a generated spec keeps what its `static` tool said.
    #[test]
    fn a_generated_spec_changed_keeps_the_rest() {
        let changed = crate::capability::ToolSpecBuilder::from(TOOL.timed(1_500))
            .probe_every(7)
            .build();
        assert_eq!(changed.threshold(), Some(3));
        assert_eq!(changed.probe_every(), Some(7));
        assert_eq!(changed.alternatives(), &ALTERNATIVES);
        assert_eq!(changed.timeout(), Some(Duration::from_millis(1_500)));
        assert!(changed.is_caching());
    }

    /// A spec that says nothing rare reads as one: no alternatives, no overrides.
    #[test]
    fn a_plain_spec_says_nothing_rare() {
        let plain = ToolSpec::new("c").provides("p").fallback("f").build();
        assert!(plain.is_critical());
        assert_eq!((plain.threshold(), plain.probe_every()), (None, None));
        assert_eq!((plain.server(), plain.caller_errors()), (None, None));
        assert_eq!(plain.timeout(), None);
        assert!(!plain.declares_timeout());
        let json = serde_json::to_string(&plain).expect("a spec serializes");
        assert_eq!(
            json,
            r#"{"tool":"c","provides":"p","alternatives":[],"fallback":"f"}"#
        );
    }
}
