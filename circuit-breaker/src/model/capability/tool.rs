//! One tool of the map (R1.1, R2.2): its spec and the builder that makes one.

use std::borrow::Cow;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::timeout::TimeoutSpec;
use super::{AlternativeSpec, Text};

/// One tool of the map (R1.1): name, what it provides, alternatives, fallback, and optional
/// per-tool policy overrides (R2.2).
///
/// Made with [`ToolSpec::new`], which returns a [`ToolSpecBuilder`]; every API that takes a
/// spec ([`CapabilityMap::tool`], [`Expeditor::discover`](crate::Expeditor::discover)) takes
/// `impl Into<ToolSpec>`, so the builder can be passed as it is.
///
/// [`CapabilityMap::tool`]: super::CapabilityMap::tool
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    #[serde(rename = "tool")]
    pub(super) name: Text,
    #[serde(default)]
    pub(super) provides: Text,
    #[serde(default)]
    pub(super) alternatives: Cow<'static, [AlternativeSpec]>,
    #[serde(default)]
    pub(super) fallback: Text,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) threshold: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) probe_every: Option<u32>,
    /// The tool's documentation says it caches: its results are labelled UNVERIFIED (R6.2).
    #[serde(default, skip_serializing_if = "is_false")]
    caches: bool,
    /// The server the tool lives on (an MCP server, say): its tools are one group, down
    /// together when the server cannot be reached (B10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ///
    /// Boxed, like the caller's errors below: most tools are on no server and say nothing of
    /// their errors, and every tool's spec is kept for as long as its expeditor (B5's heap
    /// per tool).
    server: Option<Box<Text>>,
    /// The categories of the tool's reported errors that are the caller's mistake (B14), for
    /// tools whose errors are untyped (a foreign MCP server's); `None` keeps the server's or
    /// the client's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[allow(clippy::box_collection)] // one pointer, not a `Vec`'s three, in every tool's spec
    caller_errors: Option<Box<Vec<crate::model::failure::FailureCategory>>>,
    /// The deadline of one call (B13), as a humantime string (`"30s"`, `"1m 30s"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) timeout: Option<TimeoutSpec>,
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
    /// `__private_v0_1`).
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
        self.caller_errors.as_deref().map(Vec::as_slice)
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
        self.server.as_deref().map(|server| &**server)
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
///
/// [`CapabilityMap::tool`]: super::CapabilityMap::tool
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
        self.spec.server = Some(Box::new(server.into()));
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
        self.spec.caller_errors = Some(Box::new(categories.into_iter().collect()));
        self
    }

    /// Gives each call of the tool a deadline (B13): a call that has not answered `timeout`
    /// after it started is recorded as a failure of category timeout. From
    /// [`MIN_TIMEOUT`] to [`MAX_TIMEOUT`]; validation reports any other.
    ///
    /// [`MIN_TIMEOUT`]: super::MIN_TIMEOUT
    /// [`MAX_TIMEOUT`]: super::MAX_TIMEOUT
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
    ///
    /// [`CapabilityMap::validate`]: super::CapabilityMap::validate
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
