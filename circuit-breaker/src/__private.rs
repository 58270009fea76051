//! Support for generated code. Not a public API.

use std::fmt;

pub use crate::capability::{AlternativeSpec, CapabilityMap, Degradation, ToolSpec};
pub use crate::executor::{
    CallError, Freshen, Plan, Routed, finish, finish_dated, finish_fresh, keep_last_good, plan,
    plan_direct, serve_stale,
};
pub use crate::expeditor::{Expeditor, ExpeditorBuilder, ToolId};
pub use crate::failure::{Classify, Failure};
pub use crate::freshness::{Dated, FreshnessProfile, StaleCache, digest};
pub use crate::policy::{Policy, ProbeUnit};
pub use crate::precheck::Availability;
pub use crate::toolbox::{ToolSet, UnknownTool};
pub use core;
pub use core::option::Option::{None, Some};
pub use core::result::Result::{Err, Ok};
pub use serde;
pub use std::string::String;

/// A policy from values the macro has already checked (each at least 1). Zero never reaches
/// here; if it did, it would be raised to 1 rather than panic. Kept for expansions of earlier
/// versions; the macro now emits [`declared_policy`], which takes the defaults from [`Policy`].
pub const fn policy(threshold: u32, budget: u32, probe_every: u32, steps: bool) -> Policy {
    Policy::from_checked(
        if threshold == 0 { 1 } else { threshold },
        if budget == 0 { 1 } else { budget },
        if probe_every == 0 { 1 } else { probe_every },
        if steps {
            ProbeUnit::Steps
        } else {
            ProbeUnit::Attempts
        },
    )
}

/// The policy a `#[toolbox(policy(..))]` declares: each key given (checked by the macro to be
/// at least 1), and for each key left out the runtime's default ([`Policy::DEFAULT_THRESHOLD`],
/// [`Policy::DEFAULT_BUDGET`], [`Policy::DEFAULT_PROBE_EVERY`], [`ProbeUnit::Attempts`]): the
/// defaults live here, in the runtime, and nowhere in the macro (R2.2). A zero that reached
/// here anyway would be raised to 1 rather than panic.
pub const fn declared_policy(
    threshold: Option<u32>,
    budget: Option<u32>,
    probe_every: Option<u32>,
    probe_unit: Option<ProbeUnit>,
) -> Policy {
    const fn or(value: Option<u32>, default: u32) -> u32 {
        match value {
            Some(0) => 1,
            Some(v) => v,
            None => default,
        }
    }
    Policy::from_checked(
        or(threshold, Policy::DEFAULT_THRESHOLD),
        or(budget, Policy::DEFAULT_BUDGET),
        or(probe_every, Policy::DEFAULT_PROBE_EVERY),
        match probe_unit {
            Some(unit) => unit,
            None => ProbeUnit::Attempts,
        },
    )
}

/// One tool of a generated `static` map, by named fields: [`spec`](Self::spec) makes the
/// [`ToolSpec`] in a `const` context.
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
    pub const fn spec(self) -> ToolSpec {
        ToolSpec::borrowed(
            self.name,
            self.provides,
            self.alternatives,
            self.fallback,
            self.threshold,
            self.probe_every,
            self.caches,
        )
    }
}

/// One alternative of a generated `static` map, by named fields: [`spec`](Self::spec) makes
/// the [`AlternativeSpec`] in a `const` context.
#[derive(Debug, Clone, Copy)]
pub struct StaticAlternative {
    /// The alternative tool's name.
    pub tool: &'static str,
    /// How it is used.
    pub method: &'static str,
    /// What the route loses.
    pub degradation: StaticDegradation,
}

impl StaticAlternative {
    /// The spec.
    pub const fn spec(self) -> AlternativeSpec {
        AlternativeSpec::borrowed(self.tool, self.method, self.degradation.degradation())
    }
}

/// The degradation of a [`StaticAlternative`] (plain data, so the alternative can be taken
/// apart in a `const fn`).
#[derive(Debug, Clone, Copy)]
pub enum StaticDegradation {
    /// Not declared (R1.2).
    Unknown,
    /// `degradation = ".."`.
    Low(&'static str),
    /// `degradation = high("..")`.
    High(&'static str),
}

impl StaticDegradation {
    /// The degradation.
    pub const fn degradation(self) -> Degradation {
        match self {
            StaticDegradation::Unknown => Degradation::unknown(),
            StaticDegradation::Low(text) => Degradation::low_static(text),
            StaticDegradation::High(text) => Degradation::high_static(text),
        }
    }
}

/// A map over a generated `static` slice of tools.
pub const fn static_map(tools: &'static [ToolSpec]) -> CapabilityMap {
    CapabilityMap::borrowed(tools)
}

/// An expeditor over a map checked at compile time.
pub fn expeditor(builder: ExpeditorBuilder) -> Expeditor {
    builder.build_checked()
}

/// What a `#[tool]` returns: a `Result`, through any alias.
#[diagnostic::on_unimplemented(
    message = "a #[tool] method must return a `Result<T, E>`, found `{Self}`",
    label = "this is not a `Result`",
    note = "the breaker records `Ok` as a success and `Err` as a failure"
)]
pub trait ToolResult {
    /// The success type.
    type Ok;
    /// The error type.
    type Err;
    /// Into a plain `Result`.
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

/// What a guarded method returns for a tool returning `R`: the value with its route, or the
/// tool's error untouched, or a refusal.
pub type Outcome<R> = Result<Routed<<R as ToolResult>::Ok>, CallError<<R as ToolResult>::Err>>;

/// Wraps a tool's error for autoref-specialized classification: an error that implements
/// [`Classify`] says its category; a `std::error::Error` is searched for an `io::Error`; any
/// other `Display` is classified by its message.
pub struct Wrap<'a, E>(pub &'a E);

/// Highest priority: the error classifies itself.
pub trait ViaClassify {
    /// The failure.
    fn __cb_failure(&self) -> Failure;
}
impl<E: Classify + fmt::Display> ViaClassify for &&Wrap<'_, E> {
    fn __cb_failure(&self) -> Failure {
        Failure::classified(self.0)
    }
}

/// Next: a `std::error::Error`, searched for an `io::Error`.
pub trait ViaError {
    /// The failure.
    fn __cb_failure(&self) -> Failure;
}
impl<E: std::error::Error + 'static> ViaError for &Wrap<'_, E> {
    fn __cb_failure(&self) -> Failure {
        Failure::from_error(self.0)
    }
}

/// Last: any `Display`, by message.
pub trait ViaDisplay {
    /// The failure.
    fn __cb_failure(&self) -> Failure;
}
impl<E: fmt::Display> ViaDisplay for Wrap<'_, E> {
    fn __cb_failure(&self) -> Failure {
        Failure::new(self.0.to_string())
    }
}

/// Serializes a tool enum as its name.
///
/// # Errors
/// The serializer's.
pub fn serialize_tool<S: serde::Serializer>(name: &str, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(name)
}

/// Deserializes a tool enum from its name.
///
/// # Errors
/// The deserializer's, or an unknown name.
pub fn deserialize_tool<'de, T: ToolSet, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<T, D::Error> {
    let name = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(deserializer)?;
    T::from_name(&name).map_err(serde::de::Error::custom)
}

/// Wraps a tool's value to read its date when it has one ([`Dated`]).
pub struct DateOf<'a, T>(pub &'a T);

/// The value says when it is from.
pub trait ViaDated {
    /// Its date.
    fn __cb_data_time(&self) -> Option<crate::clock::Timestamp>;
}
impl<T: Dated> ViaDated for &DateOf<'_, T> {
    fn __cb_data_time(&self) -> Option<crate::clock::Timestamp> {
        self.0.data_time()
    }
}

/// The value says nothing about its date.
pub trait NotDated {
    /// No date.
    fn __cb_data_time(&self) -> Option<crate::clock::Timestamp>;
}
impl<T> NotDated for DateOf<'_, T> {
    fn __cb_data_time(&self) -> Option<crate::clock::Timestamp> {
        None
    }
}

/// What a `precheck = f` returns: an [`Availability`], through any alias.
#[diagnostic::on_unimplemented(
    message = "a precheck must return `circuit_breaker::Availability`, found `{Self}`",
    label = "this is not an `Availability`"
)]
pub trait IntoAvailability {
    /// The availability.
    fn into_availability(self) -> Availability;
}

impl IntoAvailability for Availability {
    fn into_availability(self) -> Availability {
        self
    }
}
