//! Support for generated code. Not a public API.

use std::fmt;

pub use crate::capability::{CapabilityMap, ToolSpec};
pub use crate::clock::Timestamp;
pub use crate::executor::outcome::ToolResult;
pub use crate::executor::{
    CallError, Deadline, Freshen, Plan, Routed, finish_dated, finish_fresh, keep_last_good, plan,
    plan_direct, refuse, serve_stale, timed_out, trace_refusal,
};
pub use crate::expeditor::{Decision, Expeditor, ExpeditorBuilder, ToolId};
pub use crate::failure::{Classify, Failure};
pub use crate::freshness::{Dated, FreshnessProfile, StaleCache, digest};
pub use crate::model::capability::encoded::EncodedMap;
pub use crate::model::precheck::Availability;
pub use crate::policy::{Policy, ProbeUnit};
pub use crate::toolbox::{JsonToolbox, ToolSet, UnknownTool};
pub use core;
pub use core::option::Option::{None, Some};
pub use core::result::Result::{Err, Ok};
pub use serde;
pub use std::string::String;
pub use tracing::Instrument;
use tracing::Span;

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

/// [`declared_policy`] with the time keys and the mistake limit of `#[toolbox(policy(..))]`
/// (B13, B14), in milliseconds; `None` keeps the runtime's default.
pub const fn declared_policy_with(
    policy: Policy,
    cool_down_ms: Option<u64>,
    cool_down_cap_ms: Option<u64>,
    budget_window_ms: Option<u64>,
    mistake_limit: Option<u32>,
) -> Policy {
    const fn ms(value: Option<u64>) -> Option<core::time::Duration> {
        match value {
            Some(ms) => Some(core::time::Duration::from_millis(ms)),
            None => None,
        }
    }
    policy.with_declared(
        ms(cool_down_ms),
        ms(cool_down_cap_ms),
        ms(budget_window_ms),
        mistake_limit,
    )
}

/// An expeditor over a map checked at compile time.
pub fn expeditor(builder: ExpeditorBuilder) -> Expeditor {
    builder.build_checked()
}

/// The `execute_tool` span a sync guarded method of a toolbox runs in (B12), entered while
/// the scope lives. One pointer, null when no subscriber wants the span: the method inlines
/// only the level filter's load, a null test, and two out-of-line calls on the branch where
/// a subscriber listens (a `Span` and its guard inline would widen the healthy path's frame
/// and registers, as measured in BENCHMARKS.md).
pub struct CallScope(Option<Box<Span>>);

impl CallScope {
    /// Opens and enters the call's span when a subscriber may want it.
    #[inline]
    pub fn enter(tool: &'static str, name: &'static str) -> Self {
        if tracing::level_enabled!(tracing::Level::INFO) {
            CallScope::enter_span(tool, name)
        } else {
            CallScope(None)
        }
    }

    #[cold]
    #[inline(never)]
    fn enter_span(tool: &'static str, name: &'static str) -> Self {
        let span = crate::telemetry::named_call_span(tool, name, true);
        if span.is_disabled() {
            return CallScope(None);
        }
        span.with_subscriber(|(id, dispatch)| dispatch.enter(id));
        CallScope(Some(Box::new(span)))
    }
}

impl Drop for CallScope {
    #[inline]
    fn drop(&mut self) {
        if let Some(span) = self.0.take() {
            exit_span(&span);
        }
    }
}

impl CallScope {
    /// Leaves the span now. Always inlined: a refusal's branch is cold, and a cold branch
    /// would call the scope's drop out of line for a null test.
    #[inline(always)]
    #[allow(clippy::inline_always)]
    fn leave(self) {
        let mut scope = core::mem::ManuallyDrop::new(self);
        if let Some(span) = scope.0.take() {
            exit_span(&span);
        }
    }
}

#[cold]
#[inline(never)]
fn exit_span(span: &Span) {
    span.with_subscriber(|(id, dispatch)| dispatch.exit(id));
}

/// The whole guarded call of a sync tool with no adapter, deadline, label or precheck, the
/// shape most tools of a `#[toolbox]` have: the call's span entered, the expeditor asked, the
/// tool run through `run` when allowed and its outcome finished as [`finish_dated`] does, or
/// the refusal traced and returned.
///
/// One generic body shared by every such tool, rather than the same match generated into each
/// method: rustc checks that once instead of once per tool (compile time), and inlined whole
/// it is the code the match was.
///
/// # Errors
/// [`CallError::Failed`] (or [`CallError::Rejected`]) when the tool fails,
/// [`CallError::Refused`] when it must not be called.
#[inline(always)]
#[allow(clippy::inline_always)]
pub fn call_direct<T, E>(
    expeditor: &Expeditor,
    tool: impl Into<ToolId>,
    names: (&'static str, &'static str),
    failure: fn(&E) -> Failure,
    dated: fn(&T) -> Option<Timestamp>,
    run: impl FnOnce() -> Result<T, E>,
) -> Result<Routed<T>, CallError<E>> {
    let scope = CallScope::enter(names.0, names.1);
    let tool = tool.into();
    // The healthy path apart from the rest, so its ticket never goes through a `Decision`
    // in memory (see `decide_healthy`).
    if let Some(ticket) = expeditor.decide_healthy(tool) {
        return finish_dated(expeditor, ticket, None, run(), failure, dated);
    }
    match expeditor.decide_rest(tool) {
        Decision::Call(ticket) | Decision::Probe(ticket) => {
            finish_dated(expeditor, ticket, None, run(), failure, dated)
        }
        ref decision => refused(expeditor, tool, decision, scope),
    }
}

/// [`call_direct`]'s refusal, out of line and generic, so it writes the method's answer in
/// place: the refusal is built in the answer and never moved, and a subscriber, when one
/// listens, is told from a refusal of its own. Each move of a refusal just stored in pieces
/// is a copy whose wide loads stall on those stores (perf). The call's span is left here,
/// once it is told and before the answer is built, so the caller neither holds the answer
/// across leaving it (a copy) nor calls the scope's drop out of line on its cold branch.
#[cold]
#[inline(never)]
fn refused<T, E>(
    expeditor: &Expeditor,
    tool: ToolId,
    decision: &Decision<'_>,
    scope: CallScope,
) -> Result<Routed<T>, CallError<E>> {
    if crate::telemetry::wanted() {
        trace_refusal(&refuse(expeditor, tool, decision));
    }
    scope.leave();
    match crate::executor::Refusal::of_decision(expeditor, decision) {
        Some(refusal) => Err(CallError::Refused(refusal)),
        None => Err(CallError::Refused(refuse(expeditor, tool, decision))),
    }
}

/// The whole guarded call of a sync tool with adapters and no deadline, label or precheck:
/// the call's span entered, the call planned (the tool, an adapter through an alternative, or
/// a refusal), `run` called with `None` for the tool or `Some(i)` for adapter `i` (in the
/// order of `adapters`), its outcome finished against the ticket of whichever ran, or the
/// refusal traced and returned.
///
/// One generic body shared by every such tool, as [`call_direct`] is for tools without
/// adapters: rustc checks the plan's match once rather than once per tool (compile time).
///
/// # Errors
/// [`CallError::Failed`] (or [`CallError::Rejected`]) when the tool or adapter fails,
/// [`CallError::Refused`] when nothing may be called.
#[inline(always)]
#[allow(clippy::inline_always)]
pub fn call_routed<T, E>(
    expeditor: &Expeditor,
    tool: impl Into<ToolId>,
    adapters: &[ToolId],
    names: (&'static str, &'static str),
    failure: fn(&E) -> Failure,
    dated: fn(&T) -> Option<Timestamp>,
    run: impl FnOnce(Option<usize>) -> Result<T, E>,
) -> Result<Routed<T>, CallError<E>> {
    let _scope = CallScope::enter(names.0, names.1);
    match plan(expeditor, tool, adapters) {
        Plan::Primary(ticket) => finish_dated(expeditor, ticket, None, run(None), failure, dated),
        Plan::Adapter {
            index,
            ticket,
            route,
        } => finish_dated(
            expeditor,
            ticket,
            Some(route),
            run(Some(index)),
            failure,
            dated,
        ),
        Plan::Refuse(refusal) => {
            trace_refusal(&refusal);
            Err(CallError::Refused(refusal))
        }
    }
}

/// The `execute_tool` span a guarded method of a toolbox runs in (B12): the one an outer
/// layer opened for the call, else a new one; disabled when no subscriber wants it. `name` is
/// the span's name, `execute_tool <tool>`.
#[inline]
pub fn call_span(tool: &'static str, name: &'static str) -> Span {
    crate::telemetry::named_call_span(tool, name, false)
}

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
    message = "a precheck must return `agent_circuit_breaker::Availability`, found `{Self}`",
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

// ----- `#[toolbox(json)]` (B8) ------------------------------------------------------------

/// Wraps what `#[toolbox(json)]` generates: passed through with the `json` feature, one clear
/// error without it (instead of one per missing item).
#[cfg(feature = "json")]
#[doc(hidden)]
#[macro_export]
macro_rules! __cb_json_dispatch {
    ($($generated:tt)*) => { $($generated)* };
}

/// Wraps what `#[toolbox(json)]` generates: passed through with the `json` feature, one clear
/// error without it (instead of one per missing item).
#[cfg(not(feature = "json"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __cb_json_dispatch {
    ($($generated:tt)*) => {
        ::core::compile_error!(
            "#[toolbox(json)] needs the `json` feature of circuit-breaker (on by default): enable it in Cargo.toml, or remove `json` from #[toolbox(..)]"
        );
    };
}

pub use crate::__cb_json_dispatch as json_dispatch;

#[cfg(feature = "json")]
pub use crate::dispatch::{Reply, ReplyFuture, ToolDefinition, ToolDispatch};
#[cfg(feature = "json")]
pub use schemars;
#[cfg(feature = "json")]
pub use serde_json::Value;
pub use std::path::PathBuf;
pub use std::vec::Vec;

/// The arguments of a call by name, decoded: a JSON `null` (or arguments left out) reads as
/// `{}`, so a tool without parameters, or with only optional ones, takes it. Arguments that
/// do not decode are tried once more with every property whose value is `null` left out:
/// OpenAI's strict mode (B18) has a model send `null` for an optional property it means to
/// leave out, which a property with a default (not an `Option`) does not take.
///
/// # Errors
/// What the decoder says of the arguments as sent, for [`Reply::bad_arguments`].
#[cfg(feature = "json")]
pub fn arguments<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, serde_json::Error> {
    let value = match value {
        Value::Null => Value::Object(serde_json::Map::new()),
        value => value,
    };
    if !has_null_property(&value, 0) {
        // Nothing to leave out: decoded as sent, moved rather than copied.
        return serde_json::from_value(value);
    }
    match T::deserialize(&value) {
        Ok(decoded) => Ok(decoded),
        Err(error) => {
            let mut without_nulls = value;
            drop_null_properties(&mut without_nulls, 0);
            T::deserialize(&without_nulls).map_err(|_| error)
        }
    }
}

/// The depth the null checks below go to: as deep as `serde_json` parses.
#[cfg(feature = "json")]
const NULL_DEPTH: usize = 128;

/// Whether some object property in `value` is `null`.
#[cfg(feature = "json")]
fn has_null_property(value: &Value, depth: usize) -> bool {
    if depth > NULL_DEPTH {
        return false;
    }
    match value {
        Value::Object(map) => map
            .values()
            .any(|v| v.is_null() || has_null_property(v, depth + 1)),
        Value::Array(items) => items.iter().any(|v| has_null_property(v, depth + 1)),
        _ => false,
    }
}

/// Leaves out every object property whose value is `null` (never an array's item).
#[cfg(feature = "json")]
fn drop_null_properties(value: &mut Value, depth: usize) {
    if depth > NULL_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            for v in map.values_mut() {
                drop_null_properties(v, depth + 1);
            }
        }
        Value::Array(items) => {
            for v in items {
                drop_null_properties(v, depth + 1);
            }
        }
        _ => {}
    }
}

/// The JSON Schema of a tool's arguments, as an object (no `$schema`, no `title`: the tool's
/// name says what it is).
#[cfg(feature = "json")]
pub fn input_schema<T: schemars::JsonSchema>() -> serde_json::Map<String, Value> {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|settings| settings.meta_schema = None)
        .into_generator();
    let mut schema = match generator.into_root_schema_for::<T>().to_value() {
        Value::Object(schema) => schema,
        _ => serde_json::Map::new(),
    };
    schema.remove("title");
    if !schema.contains_key("type") {
        schema.insert("type".into(), "object".into());
    }
    // Some clients require `properties` on every object schema, even a tool's without any.
    if !schema.contains_key("properties") {
        schema.insert("properties".into(), Value::Object(serde_json::Map::new()));
    }
    schema
}

/// One tool's definition: its name, what it provides then its docs, its arguments' schema.
#[cfg(feature = "json")]
pub fn definition<T: schemars::JsonSchema>(name: &str, description: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema: input_schema::<T>(),
    }
}

/// A toolbox's definitions, computed once.
#[cfg(feature = "json")]
pub struct Definitions(std::sync::OnceLock<Vec<ToolDefinition>>);

#[cfg(feature = "json")]
impl Definitions {
    /// Not computed yet.
    pub const fn new() -> Self {
        Definitions(std::sync::OnceLock::new())
    }

    /// The definitions, built by `build` the first time.
    pub fn get<const N: usize>(&self, build: fn() -> [ToolDefinition; N]) -> Vec<ToolDefinition> {
        self.0.get_or_init(|| Vec::from(build())).clone()
    }
}

#[cfg(feature = "json")]
impl Default for Definitions {
    fn default() -> Self {
        Definitions::new()
    }
}

/// What a `#[toolbox(json)]` tool answers: a value with a JSON form.
#[cfg(feature = "json")]
#[diagnostic::on_unimplemented(
    message = "a tool of a `#[toolbox(json)]` must answer a value that serializes to JSON: `{Self}` does not implement `serde::Serialize`",
    label = "this value cannot be sent to the model as JSON",
    note = "derive or implement `serde::Serialize` for `{Self}`, or return a type that has it (a `String`, a `Vec<..>`, `serde_json::Value`)"
)]
pub trait JsonValue {
    /// The value as JSON.
    fn __cb_serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error>;
}

#[cfg(feature = "json")]
impl<T: serde::Serialize + ?Sized> JsonValue for T {
    fn __cb_serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.serialize(serializer)
    }
}

/// What a `#[toolbox(json)]` tool fails with: an error with a message for the model.
#[cfg(feature = "json")]
#[diagnostic::on_unimplemented(
    message = "a tool of a `#[toolbox(json)]` must fail with an error that has a message: `{Self}` does not implement `std::fmt::Display`",
    label = "the model is told this error's message",
    note = "implement `std::fmt::Display` for `{Self}`, or return an error type that has it (`std::io::Error`, `String`, an error made with `thiserror`)"
)]
pub trait JsonError {
    /// The message.
    fn __cb_message(&self) -> String;
}

#[cfg(feature = "json")]
impl<E: fmt::Display + ?Sized> JsonError for E {
    fn __cb_message(&self) -> String {
        self.to_string()
    }
}

/// Serializes through [`JsonValue`].
#[cfg(feature = "json")]
struct AsJson<T>(T);

#[cfg(feature = "json")]
impl<T: JsonValue> serde::Serialize for AsJson<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.__cb_serialize(serializer)
    }
}

/// Displays through [`JsonError`].
#[cfg(feature = "json")]
struct Message(String);

#[cfg(feature = "json")]
impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The reply to a guarded call made by the dispatcher ([`Reply::from_call`]).
#[cfg(feature = "json")]
pub fn json_reply<T: JsonValue, E: JsonError>(
    expeditor: &Expeditor,
    id: impl Into<ToolId>,
    tool: &str,
    result: Result<Routed<T>, CallError<E>>,
) -> Reply {
    let result = match result {
        Ok(routed) => Ok(routed.map(AsJson)),
        Err(CallError::Failed {
            tool,
            error,
            recorded,
            route,
        }) => Err(CallError::Failed {
            tool,
            error: Message(error.__cb_message()),
            recorded,
            route,
        }),
        Err(CallError::Rejected {
            tool,
            error,
            recorded,
            route,
            category,
        }) => Err(CallError::Rejected {
            tool,
            error: Message(error.__cb_message()),
            recorded,
            route,
            category,
        }),
        Err(CallError::TimedOut {
            tool,
            after,
            recorded,
            route,
        }) => Err(CallError::TimedOut {
            tool,
            after,
            recorded,
            route,
        }),
        Err(CallError::Refused(refusal)) => Err(CallError::Refused(refusal)),
    };
    Reply::from_call_of(expeditor, Some(id.into()), tool, result)
}

/// The reply to an async guarded call made by the dispatcher: [`json_reply`] once `call` has
/// ended. A function of its own, called with `T` and `E` named from the tool's return type,
/// so that what the call answers is checked there rather than at an `.await` of the generated
/// code (one error for a tool that returns no `Result`, not two).
#[cfg(feature = "json")]
pub async fn json_reply_to<T, E, F>(expeditor: &Expeditor, id: ToolId, tool: &str, call: F) -> Reply
where
    T: JsonValue,
    E: JsonError,
    F: std::future::Future<Output = Result<Routed<T>, CallError<E>>>,
{
    json_reply(expeditor, id, tool, call.await)
}

/// A reply already made, as the boxed future `dispatch` returns (a sync tool).
#[cfg(feature = "json")]
pub fn ready<'a>(reply: Reply) -> ReplyFuture<'a> {
    Box::pin(core::future::ready(reply))
}

/// An async tool's call, boxed.
#[cfg(feature = "json")]
pub fn boxed<'a>(future: impl std::future::Future<Output = Reply> + Send + 'a) -> ReplyFuture<'a> {
    Box::pin(future)
}
