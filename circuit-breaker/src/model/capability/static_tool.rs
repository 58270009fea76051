//! A tool of a generated map, by named fields, and the [`ToolSpec`] made of it: what a
//! generated map's string is read into (`encoded`).

use super::{AlternativeSpec, ToolSpec};

/// One tool of a generated map, by named fields: [`spec`](Self::spec) makes the
/// [`ToolSpec`].
///
/// The spec points at the tool rather than copying its rare parts (alternatives,
/// overrides), so every method takes `&'static self`: the tools live as long as the map's
/// `static` (see `encoded`).
#[derive(Debug, Clone, Copy)]
pub struct StaticTool {
    /// The tool's name.
    pub name: &'static str,
    /// What it provides.
    pub provides: &'static str,
    /// Its alternatives, in declaration order.
    pub alternatives: &'static [AlternativeSpec],
    /// Its manual fallback.
    pub fallback: &'static str,
    /// Its own failure threshold, if it overrides the policy's.
    pub threshold: Option<u32>,
    /// Its own probe interval, if it overrides the policy's.
    pub probe_every: Option<u32>,
    /// Whether it is declared as caching.
    pub caches: bool,
}

impl StaticTool {
    /// The spec.
    pub const fn spec(&'static self) -> ToolSpec {
        ToolSpec::borrowed(self, None)
    }

    /// The spec of a tool with a deadline of `millis` (`#[tool(timeout = "..")]`, B13). A
    /// method of its own, so that the map of a tool without one names no duration.
    pub const fn timed(&'static self, millis: u64) -> ToolSpec {
        ToolSpec::borrowed(self, Some(millis))
    }
}
