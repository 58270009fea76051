//! The capability map (step 1 of the source document, R1): what each tool provides, which other tools can
//! stand in for it (with the method used and the degradation accepted), and the manual
//! fallback when none can.
//!
//! A map is plain data. It can be written as a `static` (the `#[toolbox]` macro does that),
//! built at run time with [`ToolSpec::new`] (a builder), or loaded with serde in the source document's YAML shape
//! (`capability_map: [ { tool, provides, alternatives: [ { tool, method, degradation } ],
//! fallback } ]`). [`CapabilityMap::validate`] checks it (R1.4) and returns every problem at
//! once as an error value; nothing here panics on bad input.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Text that is `'static` in a generated map and owned in a map built or loaded at run time.
pub type Text = Cow<'static, str>;

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
    text: Option<Text>,
    severity: Severity,
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

/// One alternative of a tool: the other tool, how it is used, and what is lost (R1.1).
///
/// Made with [`AlternativeSpec::new`], which returns an [`AlternativeSpecBuilder`]; every API
/// that takes an alternative takes `impl Into<AlternativeSpec>`, so the builder can be passed
/// as it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "AlternativeWire", into = "AlternativeWire")]
pub struct AlternativeSpec {
    tool: Text,
    method: Text,
    degradation: Degradation,
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
    /// `__private`).
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

/// One tool of the map (R1.1): name, what it provides, alternatives, fallback, and optional
/// per-tool policy overrides (R2.2).
///
/// Made with [`ToolSpec::new`], which returns a [`ToolSpecBuilder`]; every API that takes a
/// spec ([`CapabilityMap::tool`], [`Expeditor::discover`](crate::Expeditor::discover)) takes
/// `impl Into<ToolSpec>`, so the builder can be passed as it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    #[serde(rename = "tool")]
    name: Text,
    #[serde(default)]
    provides: Text,
    #[serde(default)]
    alternatives: Cow<'static, [AlternativeSpec]>,
    #[serde(default)]
    fallback: Text,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    threshold: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    probe_every: Option<u32>,
    /// The tool's documentation says it caches: its results are labelled UNVERIFIED (R6.2).
    #[serde(default, skip_serializing_if = "is_false")]
    caches: bool,
    /// The server the tool lives on (an MCP server, say): its tools are one group, down
    /// together when the server cannot be reached (B10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    server: Option<Text>,
    /// The categories of the tool's reported errors that are the caller's mistake (B14), for
    /// tools whose errors are untyped (a foreign MCP server's); `None` keeps the server's or
    /// the client's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    caller_errors: Option<Vec<crate::model::failure::FailureCategory>>,
    /// The deadline of one call (B13), as a humantime string (`"30s"`, `"1m 30s"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timeout: Option<TimeoutSpec>,
}

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
enum TimeoutSpec {
    Set(Duration),
    Unreadable { text: Text, why: Text },
}

impl Serialize for TimeoutSpec {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            TimeoutSpec::Set(d) => {
                serializer.serialize_str(&humantime::format_duration(*d).to_string())
            }
            TimeoutSpec::Unreadable { text, .. } => serializer.serialize_str(text),
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
                    Err(e) => TimeoutSpec::Unreadable {
                        text: clip_text(text),
                        why: Cow::Owned(e.to_string()),
                    },
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
    TimeoutSpec::Unreadable {
        text: Cow::Owned(text),
        why: Cow::Borrowed("a number without a unit"),
    }
}

/// At most 64 characters of what a document said, for an error message.
fn clip_text(text: &str) -> Text {
    Cow::Owned(text.chars().take(64).collect())
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_false(b: &bool) -> bool {
    !*b
}

impl ToolSpec {
    /// A tool named `name`; set the rest with the [`ToolSpecBuilder`] it returns. Until
    /// [`provides`](ToolSpecBuilder::provides) and [`fallback`](ToolSpecBuilder::fallback)
    /// are set, validation reports them missing.
    #[allow(clippy::new_ret_no_self)] // `new` starts the chain users write; the builder ends as `Self`
    pub fn new(name: impl Into<Text>) -> ToolSpecBuilder {
        ToolSpecBuilder {
            spec: ToolSpec {
                name: name.into(),
                provides: Cow::Borrowed(""),
                alternatives: Cow::Borrowed(&[]),
                fallback: Cow::Borrowed(""),
                threshold: None,
                probe_every: None,
                caches: false,
                server: None,
                caller_errors: None,
                timeout: None,
            },
        }
    }

    /// A tool from `'static` parts, in a `const` context (for generated maps, through
    /// `__private`).
    #[allow(clippy::too_many_arguments)] // the fields of `StaticTool`, one by one
    pub(crate) const fn borrowed(
        name: &'static str,
        provides: &'static str,
        alternatives: &'static [AlternativeSpec],
        fallback: &'static str,
        threshold: Option<u32>,
        probe_every: Option<u32>,
        caches: bool,
        timeout: Option<Duration>,
    ) -> Self {
        ToolSpec {
            name: Cow::Borrowed(name),
            provides: Cow::Borrowed(provides),
            alternatives: Cow::Borrowed(alternatives),
            fallback: Cow::Borrowed(fallback),
            threshold,
            probe_every,
            caches,
            server: None,
            caller_errors: None,
            timeout: match timeout {
                Some(d) => Some(TimeoutSpec::Set(d)),
                None => None,
            },
        }
    }

    /// The spec given to a tool met for the first time at run time (R2.4): it provides an
    /// unknown capability, has no alternatives and falls back to reporting the gap.
    pub fn discovered(name: impl Into<Text>) -> Self {
        ToolSpec::new(name)
            .provides("capability discovered at run time")
            .fallback("report that this tool could not be used and what it was needed for")
            .build()
    }

    /// The categories of the tool's reported errors that are the caller's mistake, if the
    /// map says ([`ToolSpecBuilder::caller_errors`]).
    pub fn caller_errors(&self) -> Option<&[crate::model::failure::FailureCategory]> {
        self.caller_errors.as_deref()
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the tool provides (one line).
    pub fn provides(&self) -> &str {
        &self.provides
    }

    /// The tool's alternatives, in declaration order (the order routing tries them in
    /// within one severity, R1.5).
    pub fn alternatives(&self) -> &[AlternativeSpec] {
        &self.alternatives
    }

    /// The manual fallback: what to do when the tool and its alternatives are unavailable.
    pub fn fallback(&self) -> &str {
        &self.fallback
    }

    /// The tool's own failure threshold, when it overrides the policy's (R2.2).
    pub fn threshold(&self) -> Option<u32> {
        self.threshold
    }

    /// The tool's own probe interval, when it overrides the policy's (R2.2).
    pub fn probe_every(&self) -> Option<u32> {
        self.probe_every
    }

    /// Whether the tool is declared as caching: its results are labelled UNVERIFIED (R6.2).
    pub fn is_caching(&self) -> bool {
        self.caches
    }

    /// The server the tool lives on, if it is one of a group (B10): when a call finds the
    /// server unreachable, every tool of the same server goes down with it, as one event.
    pub fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    /// The deadline of one call to the tool (B13), if it has one: a call still running then
    /// is a timeout failure of the tool. `None` also for a timeout that could not be read
    /// (validation reports it).
    pub fn timeout(&self) -> Option<Duration> {
        match self.timeout {
            Some(TimeoutSpec::Set(d)) => Some(d),
            _ => None,
        }
    }

    /// Whether a timeout was given, readable or not.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn declares_timeout(&self) -> bool {
        self.timeout.is_some()
    }

    /// Critical: no tool alternative exists (R1.3).
    pub fn is_critical(&self) -> bool {
        self.alternatives.is_empty()
    }
}

/// Builds a [`ToolSpec`]; made by [`ToolSpec::new`].
///
/// Turn it into the spec with [`build`](Self::build) or `.into()`, or hand it to anything
/// taking `impl Into<ToolSpec>` (such as [`CapabilityMap::tool`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a builder does nothing until it is built or given where a spec is taken"]
pub struct ToolSpecBuilder {
    spec: ToolSpec,
}

impl ToolSpecBuilder {
    /// Sets what the tool provides (one line).
    pub fn provides(mut self, provides: impl Into<Text>) -> Self {
        self.spec.provides = provides.into();
        self
    }

    /// Adds an alternative, after those already added.
    pub fn alternative(mut self, alternative: impl Into<AlternativeSpec>) -> Self {
        self.spec.alternatives.to_mut().push(alternative.into());
        self
    }

    /// Adds alternatives, in order, after those already added.
    pub fn alternatives<A: Into<AlternativeSpec>>(
        mut self,
        alternatives: impl IntoIterator<Item = A>,
    ) -> Self {
        self.spec
            .alternatives
            .to_mut()
            .extend(alternatives.into_iter().map(Into::into));
        self
    }

    /// Sets the manual fallback.
    pub fn fallback(mut self, fallback: impl Into<Text>) -> Self {
        self.spec.fallback = fallback.into();
        self
    }

    /// Overrides the policy's failure threshold for this tool.
    pub fn threshold(mut self, threshold: u32) -> Self {
        self.spec.threshold = Some(threshold);
        self
    }

    /// Overrides the policy's probe interval for this tool.
    pub fn probe_every(mut self, probe_every: u32) -> Self {
        self.spec.probe_every = Some(probe_every);
        self
    }

    /// Declares that the tool caches (its documentation says so): every result is labelled
    /// UNVERIFIED with its date (R6.2).
    pub fn caches(mut self, caches: bool) -> Self {
        self.spec.caches = caches;
        self
    }

    /// Puts the tool on `server` (an MCP server's name, say): the tools of one server are a
    /// group, taken down together, as one event charged once, when a call finds the server
    /// unreachable ([`Failure::server_unreachable`](crate::Failure::server_unreachable)), and
    /// brought back together by one successful probe (B10).
    pub fn server(mut self, server: impl Into<Text>) -> Self {
        self.spec.server = Some(server.into());
        self
    }

    /// Says which categories of the tool's reported errors are the caller's mistake (B14):
    /// answered and counted as the model's, never charged to the tool. Read by the MCP
    /// client for a foreign server's `isError` results (an empty list charges every error to
    /// the tool); a typed tool says it through [`Classify::blame`](crate::Classify::blame).
    pub fn caller_errors(
        mut self,
        categories: impl IntoIterator<Item = crate::model::failure::FailureCategory>,
    ) -> Self {
        self.spec.caller_errors = Some(categories.into_iter().collect());
        self
    }

    /// Gives each call of the tool a deadline (B13): a call that has not answered `timeout`
    /// after it started is recorded as a failure of category timeout. From
    /// [`MIN_TIMEOUT`] to [`MAX_TIMEOUT`]; validation reports any other.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.spec.timeout = Some(TimeoutSpec::Set(timeout));
        self
    }

    /// The timeout of `other`, as it was given (readable or not).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn timeout_of(mut self, other: &ToolSpec) -> Self {
        self.spec.timeout.clone_from(&other.timeout);
        self
    }

    /// The spec. It is not validated here: [`CapabilityMap::validate`] (or the expeditor's
    /// build) checks it with the rest of the map.
    pub fn build(self) -> ToolSpec {
        self.spec
    }
}

impl From<ToolSpecBuilder> for ToolSpec {
    fn from(builder: ToolSpecBuilder) -> Self {
        builder.spec
    }
}

impl From<ToolSpec> for ToolSpecBuilder {
    /// A builder starting from an existing spec, to change some of it.
    fn from(spec: ToolSpec) -> Self {
        ToolSpecBuilder { spec }
    }
}

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
    /// through `__private`).
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
        self.tools.iter().find(|t| t.name == name)
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
            if tool.name.trim().is_empty() {
                errors.push(MapError::EmptyName { index });
            } else if let Some(&first) = seen.get(&*tool.name) {
                errors.push(MapError::DuplicateTool {
                    tool: tool.name.to_string(),
                    first,
                    index,
                });
            } else {
                seen.insert(&tool.name, index);
            }
        }
        let names: Vec<&str> = self.tools.iter().map(|t| &*t.name).collect();
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

/// Checks one tool against the names of the map it belongs to; pushes every problem.
pub(crate) fn check_tool(
    tool: &ToolSpec,
    index: usize,
    names: &[&str],
    errors: &mut Vec<MapError>,
) {
    let label = || {
        if tool.name.trim().is_empty() {
            format!("#{}", index + 1)
        } else {
            tool.name.to_string()
        }
    };
    if tool.provides.trim().is_empty() {
        errors.push(MapError::MissingProvides { tool: label() });
    }
    if tool.fallback.trim().is_empty() {
        errors.push(MapError::MissingFallback { tool: label() });
    }
    if tool.threshold == Some(0) {
        errors.push(MapError::ZeroThreshold { tool: label() });
    }
    if tool.probe_every == Some(0) {
        errors.push(MapError::ZeroProbeInterval { tool: label() });
    }
    match &tool.timeout {
        None => {}
        Some(TimeoutSpec::Set(d)) => {
            if let Some(problem) = timeout_problem(*d) {
                errors.push(MapError::InvalidTimeout {
                    tool: label(),
                    timeout: humantime::format_duration(*d).to_string(),
                    why: problem,
                });
            }
        }
        Some(TimeoutSpec::Unreadable { text, why }) => errors.push(MapError::InvalidTimeout {
            tool: label(),
            timeout: text.to_string(),
            why: format!(
                "it is not a duration ({why}); write one with its unit, e.g. \"30s\", \"2m\" or \"1m 30s\""
            ),
        }),
    }
    let mut listed: Vec<&str> = Vec::new();
    for alternative in tool.alternatives.iter() {
        let alt = &*alternative.tool;
        if alt == &*tool.name {
            errors.push(MapError::SelfAlternative { tool: label() });
        } else if !names.contains(&alt) {
            errors.push(MapError::UnknownAlternative {
                tool: label(),
                alternative: alt.to_string(),
                suggestion: did_you_mean(alt, names.iter().copied()).map(str::to_string),
            });
        } else if listed.contains(&alt) {
            errors.push(MapError::DuplicateAlternative {
                tool: label(),
                alternative: alt.to_string(),
            });
        }
        listed.push(alt);
    }
}

/// One problem in a capability map (R1.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum MapError {
    /// The tool at `index` (0-based) has an empty name.
    EmptyName {
        /// Position in the map, 0-based.
        index: usize,
    },
    /// Two tools share a name.
    DuplicateTool {
        /// The repeated name.
        tool: String,
        /// Position of the first tool with this name, 0-based.
        first: usize,
        /// Position of the repeat, 0-based.
        index: usize,
    },
    /// The tool says nothing about what it provides.
    MissingProvides {
        /// The tool.
        tool: String,
    },
    /// The tool has no manual fallback (R1.2: mandatory).
    MissingFallback {
        /// The tool.
        tool: String,
    },
    /// An alternative names no tool of the map.
    UnknownAlternative {
        /// The tool whose alternative it is.
        tool: String,
        /// The name that matches no tool.
        alternative: String,
        /// A tool of the map with a close name, if any.
        suggestion: Option<String>,
    },
    /// A tool lists itself as its own alternative.
    SelfAlternative {
        /// The tool.
        tool: String,
    },
    /// A tool lists the same alternative twice.
    DuplicateAlternative {
        /// The tool.
        tool: String,
        /// The repeated alternative.
        alternative: String,
    },
    /// A per-tool failure threshold of zero.
    ZeroThreshold {
        /// The tool.
        tool: String,
    },
    /// A per-tool probe interval of zero.
    ZeroProbeInterval {
        /// The tool.
        tool: String,
    },
    /// A per-tool timeout that is not a duration, or out of range ([`MIN_TIMEOUT`] to
    /// [`MAX_TIMEOUT`]).
    InvalidTimeout {
        /// The tool.
        tool: String,
        /// The timeout as written.
        timeout: String,
        /// What is wrong with it.
        why: String,
    },
    /// More tools than one expeditor can hold.
    TooManyTools {
        /// The most tools an expeditor holds.
        limit: usize,
    },
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MapError::EmptyName { index } => write!(f, "tool #{} has an empty name", index + 1),
            MapError::DuplicateTool { tool, first, index } => write!(
                f,
                "tool `{tool}` is declared twice (#{} and #{})",
                first + 1,
                index + 1
            ),
            MapError::MissingProvides { tool } => {
                write!(f, "tool `{tool}` does not say what it provides")
            }
            MapError::MissingFallback { tool } => write!(
                f,
                "tool `{tool}` has no fallback: every tool needs a manual fallback for when it and its alternatives are unavailable"
            ),
            MapError::UnknownAlternative {
                tool,
                alternative,
                suggestion,
            } => {
                write!(
                    f,
                    "tool `{tool}` names `{alternative}` as an alternative, but the map declares no tool `{alternative}`"
                )?;
                match suggestion {
                    Some(s) => write!(f, "; did you mean `{s}`?"),
                    None => Ok(()),
                }
            }
            MapError::SelfAlternative { tool } => {
                write!(f, "tool `{tool}` lists itself as its own alternative")
            }
            MapError::DuplicateAlternative { tool, alternative } => {
                write!(f, "tool `{tool}` lists alternative `{alternative}` twice")
            }
            MapError::ZeroThreshold { tool } => write!(
                f,
                "tool `{tool}` has a failure threshold of 0; the smallest is 1"
            ),
            MapError::ZeroProbeInterval { tool } => write!(
                f,
                "tool `{tool}` has a probe interval of 0; the smallest is 1"
            ),
            MapError::InvalidTimeout { tool, timeout, why } => {
                write!(f, "tool `{tool}` has timeout `{timeout}`: {why}")
            }
            MapError::TooManyTools { limit } => {
                write!(f, "more than {limit} tools in one expeditor")
            }
        }
    }
}

impl std::error::Error for MapError {}

/// Every problem found in a capability map, in map order (R1.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapErrors(pub Vec<MapError>);

impl MapErrors {
    /// The problems.
    pub fn problems(&self) -> &[MapError] {
        &self.0
    }
}

impl fmt::Display for MapErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.len();
        write!(
            f,
            "invalid capability map: {n} problem{}",
            if n == 1 { "" } else { "s" }
        )?;
        for problem in &self.0 {
            write!(f, "\n  - {problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for MapErrors {}

/// The closest of `candidates` to `name`, if one is close enough to be a likely typo
/// (case-insensitive edit distance at most a third of the longer name, and at most 3).
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    // A typo is a few edits away: names that long, or that far apart in length, are not
    // compared (edit distance is quadratic in the length; maps may come from anywhere).
    const LONGEST: usize = 256;
    let wanted = name.to_lowercase();
    let wanted_len = wanted.chars().count();
    if wanted_len > LONGEST {
        return None;
    }
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        let candidate_len = candidate.chars().count();
        if candidate_len > LONGEST || candidate_len.abs_diff(wanted_len) > 3 {
            continue;
        }
        let distance = edit_distance(&wanted, &candidate.to_lowercase());
        let longest = wanted_len.max(candidate_len);
        let limit = (longest / 3).clamp(1, 3);
        if distance <= limit && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// Edit distance over chars where swapping two neighbours counts as one edit (optimal string
/// alignment), so `Grpe` is one edit from `Grep`.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for (i, cell) in d.iter_mut().step_by(width).enumerate() {
        *cell = i;
    }
    for (j, cell) in d.iter_mut().take(width).enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = best;
        }
    }
    d[a.len() * width + b.len()]
}

impl fmt::Display for CapabilityMap {
    /// The source document's layout (step 1), followed by the critical and substitutable tools (R1.3).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "capability_map:")?;
        for (i, tool) in self.tools.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            writeln!(f, "  - tool: {}", tool.name)?;
            writeln!(f, "    provides: {}", tool.provides)?;
            if tool.alternatives.is_empty() {
                writeln!(f, "    alternatives: []")?;
            } else {
                writeln!(f, "    alternatives:")?;
                for alt in tool.alternatives.iter() {
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
            writeln!(f, "    fallback: \"{}\"", tool.fallback)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_find_near_names_only() {
        let names = ["Grep", "Bash", "Read", "Write", "WebSearch"];
        assert_eq!(did_you_mean("Grpe", names), Some("Grep"));
        assert_eq!(did_you_mean("bash", names), Some("Bash"));
        assert_eq!(did_you_mean("WebSerch", names), Some("WebSearch"));
        assert_eq!(did_you_mean("Edit", names), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("grpe", "grep"), 1);
    }
}
