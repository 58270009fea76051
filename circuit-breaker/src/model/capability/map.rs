//! The capability map itself (R1): the tools in declaration order, what it says of whole
//! servers, its validation (R1.4), and its rendering in the source document's layout (R1.3).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::check::check_tool;
use super::{MapError, MapErrors, Severity, ToolSpec};

/// The capability map: every tool the agent depends on (R1).
///
/// Serializes in the source document's shape, `{ "capability_map": [ ... ] }`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapabilityMap {
    #[serde(rename = "capability_map")]
    tools: Cow<'static, [ToolSpec]>,
    /// What the map says of whole servers (an MCP client's overlay, B14).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    servers: Vec<ServerSpec>,
}

/// What a capability map says of a whole server (an MCP server the client connects): which
/// categories of its tools' reported errors are the caller's mistake (B14), unless a tool
/// says otherwise ([`ToolSpecBuilder::caller_errors`]).
///
/// In YAML, beside the tools: `servers: [{ server: files, caller_errors: [not_found] }]`.
///
/// [`ToolSpecBuilder::caller_errors`]: super::ToolSpecBuilder::caller_errors
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    #[serde(rename = "server")]
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    caller_errors: Option<Vec<crate::model::failure::FailureCategory>>,
}

impl ServerSpec {
    /// What the map says of server `name`: nothing yet.
    pub fn new(name: impl Into<String>) -> Self {
        ServerSpec {
            name: name.into(),
            caller_errors: None,
        }
    }

    /// The categories of its tools' reported errors that are the caller's mistake; an empty
    /// list charges every error to the tool.
    #[must_use]
    pub fn caller_errors(
        mut self,
        categories: impl IntoIterator<Item = crate::model::failure::FailureCategory>,
    ) -> Self {
        self.caller_errors = Some(categories.into_iter().collect());
        self
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The categories of its tools' reported errors that are the caller's mistake, if said.
    pub fn caller_categories(&self) -> Option<&[crate::model::failure::FailureCategory]> {
        self.caller_errors.as_deref()
    }
}

impl CapabilityMap {
    /// A map over a `static` slice of tools, in a `const` context (for generated maps,
    /// through `__private_v0_1`).
    pub(crate) const fn borrowed(tools: &'static [ToolSpec]) -> Self {
        CapabilityMap {
            tools: Cow::Borrowed(tools),
            servers: Vec::new(),
        }
    }

    /// An empty map, to be filled with [`tool`](Self::tool) or at run time (R2.4).
    pub fn new() -> Self {
        CapabilityMap::default()
    }

    /// Adds a tool: a [`ToolSpec`] or the [`ToolSpecBuilder`] that makes one.
    ///
    /// [`ToolSpecBuilder`]: super::ToolSpecBuilder
    #[must_use]
    pub fn tool(mut self, spec: impl Into<ToolSpec>) -> Self {
        self.tools.to_mut().push(spec.into());
        self
    }

    /// Adds what the map says of a whole server ([`ServerSpec`]), after those already added.
    #[must_use]
    pub fn server(mut self, server: ServerSpec) -> Self {
        self.servers.push(server);
        self
    }

    /// What the map says of whole servers, in declaration order.
    pub fn servers(&self) -> &[ServerSpec] {
        &self.servers
    }

    /// The tools, in declaration order.
    pub fn tools(&self) -> &[ToolSpec] {
        &self.tools
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|t| t.name() == name)
    }

    /// Tools with no tool alternative (R1.3): when they break, only the fallback is left.
    pub fn critical(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.iter().filter(|t| t.is_critical())
    }

    /// Tools that another tool can stand in for (R1.3).
    pub fn substitutable(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.iter().filter(|t| !t.is_critical())
    }

    /// Checks the map (R1.4) and returns every problem found, in map order.
    ///
    /// # Errors
    /// [`MapErrors`] lists each [`MapError`]: a missing name, `provides` or `fallback`; a
    /// duplicate tool; an alternative that names no tool of the map (with a suggestion where a
    /// name is close), names its own tool, or repeats; a per-tool threshold or probe interval
    /// of zero.
    pub fn validate(&self) -> Result<(), MapErrors> {
        let mut errors = Vec::new();
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (index, tool) in self.tools.iter().enumerate() {
            if tool.name().trim().is_empty() {
                errors.push(MapError::EmptyName { index });
            } else if let Some(&first) = seen.get(tool.name()) {
                errors.push(MapError::DuplicateTool {
                    tool: tool.name().to_string(),
                    first,
                    index,
                });
            } else {
                seen.insert(tool.name(), index);
            }
        }
        let names: Vec<&str> = self.tools.iter().map(ToolSpec::name).collect();
        for (index, tool) in self.tools.iter().enumerate() {
            check_tool(tool, index, &names, &mut errors);
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(MapErrors(errors))
        }
    }
}

impl fmt::Display for CapabilityMap {
    /// The source document's layout (step 1), followed by the critical and substitutable tools (R1.3).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "capability_map:")?;
        for (i, tool) in self.tools.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            writeln!(f, "  - tool: {}", tool.name())?;
            writeln!(f, "    provides: {}", tool.provides())?;
            if tool.alternatives().is_empty() {
                writeln!(f, "    alternatives: []")?;
            } else {
                writeln!(f, "    alternatives:")?;
                for alt in tool.alternatives() {
                    writeln!(f, "      - tool: {}", alt.tool)?;
                    writeln!(f, "        method: \"{}\"", alt.method)?;
                    match alt.degradation.severity {
                        Severity::High => {
                            writeln!(f, "        degradation: high(\"{}\")", alt.degradation)?;
                        }
                        Severity::Low | Severity::Unknown => {
                            writeln!(f, "        degradation: \"{}\"", alt.degradation)?;
                        }
                    }
                }
            }
            writeln!(f, "    fallback: \"{}\"", tool.fallback())?;
        }
        let list = |f: &mut fmt::Formatter<'_>, tools: Vec<&str>| {
            if tools.is_empty() {
                f.write_str("none")
            } else {
                f.write_str(&tools.join(", "))
            }
        };
        write!(f, "\nCritical tools (no alternative): ")?;
        list(f, self.critical().map(ToolSpec::name).collect())?;
        write!(f, "\nSubstitutable tools: ")?;
        list(f, self.substitutable().map(ToolSpec::name).collect())
    }
}
