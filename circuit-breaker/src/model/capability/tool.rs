//! One tool of the map (R1.1, R2.2): its spec and the builder that makes one.

use std::borrow::Cow;
use std::time::Duration;

use super::static_tool::StaticTool;
use super::timeout::TimeoutSpec;
use super::{AlternativeSpec, Text};
use crate::model::failure::FailureCategory;
use crate::model::id::ToolName;

/// One tool of the map (R1.1): name, what it provides, alternatives, fallback, and optional
/// per-tool policy overrides (R2.2).
///
/// Made with [`ToolSpec::new`], which returns a [`ToolSpecBuilder`]; every API that takes a
/// spec ([`CapabilityMap::tool`], [`Expeditor::discover`](crate::Expeditor::discover)) takes
/// `impl Into<ToolSpec>`, so the builder can be passed as it is.
///
/// [`CapabilityMap::tool`]: super::CapabilityMap::tool
// Every registered tool's spec lives as long as its expeditor, so it holds only what every
// tool has (88 bytes): the rest, which most tools leave out, is behind one pointer (`Extra`).
// Its serde form is field by field, as written in a map (`wire.rs`).
#[derive(Clone)]
pub struct ToolSpec {
    pub(super) name: Name,
    pub(super) provides: Text,
    pub(super) fallback: Text,
    pub(super) extra: Extra,
}

// A spec is kept inline in every tool's definition: what it weighs is paid per tool.
const _: () = assert!(std::mem::size_of::<ToolSpec>() <= 88);

/// A spec's name: `'static` in a generated map, else the shared text records keep
/// ([`ToolName`]), so that an expeditor stores each name once.
#[derive(Clone)]
pub(super) enum Name {
    Static(&'static str),
    Shared(ToolName),
}

impl Name {
    pub(super) fn as_str(&self) -> &str {
        match self {
            Name::Static(name) => name,
            Name::Shared(name) => name.as_str(),
        }
    }
}

impl From<Text> for Name {
    fn from(text: Text) -> Self {
        match text {
            Cow::Borrowed(name) => Name::Static(name),
            Cow::Owned(name) => Name::Shared(ToolName::from(name)),
        }
    }
}

/// What a spec says beyond its name and texts, and whether the tool caches.
#[derive(Clone)]
pub(super) enum Extra {
    /// Nothing more: no alternatives (a critical tool), no overrides, no server, no caller's
    /// errors, no timeout.
    Plain { caches: bool },
    /// A spec built or loaded at run time that says more.
    Owned { caches: bool, rare: Box<Rare> },
    /// A generated map's tool: its `static` fields, and its deadline in milliseconds when
    /// `timed` (a day at most, so `u32` holds it).
    Static {
        tool: &'static StaticTool,
        caches: bool,
        timed: bool,
        timeout_ms: u32,
    },
}

/// What most tools leave out of their spec.
#[derive(Clone, Default)]
pub(super) struct Rare {
    pub(super) alternatives: Cow<'static, [AlternativeSpec]>,
    pub(super) threshold: Option<u32>,
    pub(super) probe_every: Option<u32>,
    /// The server the tool lives on (an MCP server, say): its tools are one group, down
    /// together when the server cannot be reached (B10).
    pub(super) server: Option<Text>,
    /// The categories of the tool's reported errors that are the caller's mistake (B14), for
    /// tools whose errors are untyped (a foreign MCP server's); `None` keeps the server's or
    /// the client's default.
    pub(super) caller_errors: Option<Vec<FailureCategory>>,
    /// The deadline of one call (B13), as declared.
    pub(super) timeout: Option<TimeoutSpec>,
}

impl Rare {
    fn is_empty(&self) -> bool {
        self.alternatives.is_empty()
            && self.threshold.is_none()
            && self.probe_every.is_none()
            && self.server.is_none()
            && self.caller_errors.is_none()
            && self.timeout.is_none()
    }
}

impl Extra {
    /// The extra parts of a spec that says `rare` (boxed only when it says something).
    pub(super) fn new(caches: bool, rare: Rare) -> Self {
        if rare.is_empty() {
            Extra::Plain { caches }
        } else {
            Extra::Owned {
                caches,
                rare: Box::new(rare),
            }
        }
    }

    fn caches(&self) -> bool {
        match *self {
            Extra::Plain { caches }
            | Extra::Owned { caches, .. }
            | Extra::Static { caches, .. } => caches,
        }
    }

    fn set_caches(&mut self, value: bool) {
        match self {
            Extra::Plain { caches }
            | Extra::Owned { caches, .. }
            | Extra::Static { caches, .. } => {
                *caches = value;
            }
        }
    }

    /// Changes the rare parts with `change`; boxed only when they say something after it.
    fn change(&mut self, change: impl FnOnce(&mut Rare)) {
        if let Extra::Owned { caches, rare } = self {
            change(rare);
            if rare.is_empty() {
                *self = Extra::Plain { caches: *caches };
            }
            return;
        }
        let (caches, mut rare) = match std::mem::replace(self, Extra::Plain { caches: false }) {
            Extra::Plain { caches } | Extra::Owned { caches, .. } => (caches, Rare::default()),
            Extra::Static {
                tool,
                caches,
                timed,
                timeout_ms,
            } => (
                caches,
                Rare {
                    alternatives: Cow::Borrowed(tool.alternatives),
                    threshold: tool.threshold,
                    probe_every: tool.probe_every,
                    timeout: timed
                        .then(|| TimeoutSpec::Set(Duration::from_millis(u64::from(timeout_ms)))),
                    ..Rare::default()
                },
            ),
        };
        change(&mut rare);
        *self = Extra::new(caches, rare);
    }
}

impl ToolSpec {
    /// A tool named `name`; set the rest with the [`ToolSpecBuilder`] it returns. Until
    /// [`provides`](ToolSpecBuilder::provides) and [`fallback`](ToolSpecBuilder::fallback)
    /// are set, validation reports them missing.
    #[allow(clippy::new_ret_no_self)] // `new` starts the chain users write; the builder ends as `Self`
    pub fn new(name: impl Into<Text>) -> ToolSpecBuilder {
        ToolSpecBuilder {
            spec: ToolSpec {
                name: Name::from(name.into()),
                provides: Cow::Borrowed(""),
                fallback: Cow::Borrowed(""),
                extra: Extra::Plain { caches: false },
            },
        }
    }

    /// A generated map's tool, in a `const` context, with its deadline in milliseconds.
    pub(super) const fn borrowed(tool: &'static StaticTool, timeout_ms: Option<u64>) -> Self {
        let (timed, timeout_ms) = match timeout_ms {
            // The macro allows a day at most; a longer one stays too long for validation.
            Some(ms) if ms > u32::MAX as u64 => (true, u32::MAX),
            #[allow(clippy::cast_possible_truncation)] // checked just above
            Some(ms) => (true, ms as u32),
            None => (false, 0),
        };
        ToolSpec {
            name: Name::Static(tool.name),
            provides: Cow::Borrowed(tool.provides),
            fallback: Cow::Borrowed(tool.fallback),
            extra: Extra::Static {
                tool,
                caches: tool.caches,
                timed,
                timeout_ms,
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

    /// The rare parts of a spec built at run time that says them.
    fn rare(&self) -> Option<&Rare> {
        match &self.extra {
            Extra::Owned { rare, .. } => Some(rare),
            Extra::Plain { .. } | Extra::Static { .. } => None,
        }
    }

    /// The categories of the tool's reported errors that are the caller's mistake, if the
    /// map says ([`ToolSpecBuilder::caller_errors`]).
    pub fn caller_errors(&self) -> Option<&[FailureCategory]> {
        self.rare()?.caller_errors.as_deref()
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        self.name.as_str()
    }

    /// The name as records keep it: a pointer to the spec's own text, `'static` or shared
    /// (never a copy of the text).
    pub(crate) fn shared_name(&self) -> ToolName {
        match &self.name {
            Name::Shared(name) => name.clone(),
            Name::Static(name) => ToolName::from_static(name),
        }
    }

    /// What the tool provides (one line).
    pub fn provides(&self) -> &str {
        &self.provides
    }

    /// The tool's alternatives, in declaration order (the order routing tries them in
    /// within one severity, R1.5).
    pub fn alternatives(&self) -> &[AlternativeSpec] {
        match &self.extra {
            Extra::Plain { .. } => &[],
            Extra::Owned { rare, .. } => &rare.alternatives,
            Extra::Static { tool, .. } => tool.alternatives,
        }
    }

    /// The manual fallback: what to do when the tool and its alternatives are unavailable.
    pub fn fallback(&self) -> &str {
        &self.fallback
    }

    /// The tool's own failure threshold, when it overrides the policy's (R2.2).
    pub fn threshold(&self) -> Option<u32> {
        match &self.extra {
            Extra::Plain { .. } => None,
            Extra::Owned { rare, .. } => rare.threshold,
            Extra::Static { tool, .. } => tool.threshold,
        }
    }

    /// The tool's own probe interval, when it overrides the policy's (R2.2).
    pub fn probe_every(&self) -> Option<u32> {
        match &self.extra {
            Extra::Plain { .. } => None,
            Extra::Owned { rare, .. } => rare.probe_every,
            Extra::Static { tool, .. } => tool.probe_every,
        }
    }

    /// Whether the tool is declared as caching: its results are labelled UNVERIFIED (R6.2).
    pub fn is_caching(&self) -> bool {
        self.extra.caches()
    }

    /// The server the tool lives on, if it is one of a group (B10): when a call finds the
    /// server unreachable, every tool of the same server goes down with it, as one event.
    pub fn server(&self) -> Option<&str> {
        self.rare()?.server.as_deref()
    }

    /// The deadline of one call to the tool (B13), if it has one: a call still running then
    /// is a timeout failure of the tool. `None` also for a timeout that could not be read
    /// (validation reports it).
    pub fn timeout(&self) -> Option<Duration> {
        match self.declared_timeout()?.as_ref() {
            TimeoutSpec::Set(d) => Some(*d),
            TimeoutSpec::Unreadable(_) => None,
        }
    }

    /// The timeout as declared, readable or not.
    pub(super) fn declared_timeout(&self) -> Option<Cow<'_, TimeoutSpec>> {
        match &self.extra {
            Extra::Plain { .. } => None,
            Extra::Owned { rare, .. } => rare.timeout.as_ref().map(Cow::Borrowed),
            Extra::Static {
                timed, timeout_ms, ..
            } => timed.then(|| {
                Cow::Owned(TimeoutSpec::Set(Duration::from_millis(u64::from(
                    *timeout_ms,
                ))))
            }),
        }
    }

    /// Whether a timeout was given, readable or not.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn declares_timeout(&self) -> bool {
        self.declared_timeout().is_some()
    }

    /// Critical: no tool alternative exists (R1.3).
    pub fn is_critical(&self) -> bool {
        self.alternatives().is_empty()
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
        let alternative = alternative.into();
        self.spec
            .extra
            .change(|rare| rare.alternatives.to_mut().push(alternative));
        self
    }

    /// Adds alternatives, in order, after those already added.
    pub fn alternatives<A: Into<AlternativeSpec>>(
        mut self,
        alternatives: impl IntoIterator<Item = A>,
    ) -> Self {
        self.spec.extra.change(|rare| {
            rare.alternatives
                .to_mut()
                .extend(alternatives.into_iter().map(Into::into));
        });
        self
    }

    /// Sets the manual fallback.
    pub fn fallback(mut self, fallback: impl Into<Text>) -> Self {
        self.spec.fallback = fallback.into();
        self
    }

    /// Overrides the policy's failure threshold for this tool.
    pub fn threshold(mut self, threshold: u32) -> Self {
        self.spec
            .extra
            .change(|rare| rare.threshold = Some(threshold));
        self
    }

    /// Overrides the policy's probe interval for this tool.
    pub fn probe_every(mut self, probe_every: u32) -> Self {
        self.spec
            .extra
            .change(|rare| rare.probe_every = Some(probe_every));
        self
    }

    /// Declares that the tool caches (its documentation says so): every result is labelled
    /// UNVERIFIED with its date (R6.2).
    pub fn caches(mut self, caches: bool) -> Self {
        self.spec.extra.set_caches(caches);
        self
    }

    /// Puts the tool on `server` (an MCP server's name, say): the tools of one server are a
    /// group, taken down together, as one event charged once, when a call finds the server
    /// unreachable ([`Failure::server_unreachable`](crate::Failure::server_unreachable)), and
    /// brought back together by one successful probe (B10).
    pub fn server(mut self, server: impl Into<Text>) -> Self {
        self.spec
            .extra
            .change(|rare| rare.server = Some(server.into()));
        self
    }

    /// Says which categories of the tool's reported errors are the caller's mistake (B14):
    /// answered and counted as the model's, never charged to the tool. Read by the MCP
    /// client for a foreign server's `isError` results (an empty list charges every error to
    /// the tool); a typed tool says it through [`Classify::blame`](crate::Classify::blame).
    pub fn caller_errors(mut self, categories: impl IntoIterator<Item = FailureCategory>) -> Self {
        self.spec
            .extra
            .change(|rare| rare.caller_errors = Some(categories.into_iter().collect()));
        self
    }

    /// Gives each call of the tool a deadline (B13): a call that has not answered `timeout`
    /// after it started is recorded as a failure of category timeout. From
    /// [`MIN_TIMEOUT`] to [`MAX_TIMEOUT`]; validation reports any other.
    ///
    /// [`MIN_TIMEOUT`]: super::MIN_TIMEOUT
    /// [`MAX_TIMEOUT`]: super::MAX_TIMEOUT
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.spec
            .extra
            .change(|rare| rare.timeout = Some(TimeoutSpec::Set(timeout)));
        self
    }

    /// The timeout of `other`, as it was given (readable or not).
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) fn timeout_of(mut self, other: &ToolSpec) -> Self {
        let timeout = other.declared_timeout().map(Cow::into_owned);
        if timeout.is_some() || self.spec.declared_timeout().is_some() {
            self.spec.extra.change(|rare| rare.timeout = timeout);
        }
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
        builder.build()
    }
}

impl From<ToolSpec> for ToolSpecBuilder {
    /// A builder starting from an existing spec, to change some of it.
    fn from(spec: ToolSpec) -> Self {
        ToolSpecBuilder { spec }
    }
}
