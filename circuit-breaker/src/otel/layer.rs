//! The layer that turns the `execute_tool` spans and the breakers' events into the call
//! metrics, behind its own per-layer filter (the crate's target, INFO and above).

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use opentelemetry::{KeyValue, StringValue};
use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Filter, Layer};
use tracing_subscriber::registry::LookupSpan;

use super::open;
use super::{
    CANCELLED, CAUSE, ERROR_TYPE, EVENT, OPERATION_NAME, OTHER, ROUTE, ROUTE_TOOL, STATE, Shared,
    TOOL, TOOL_NAME, TOOLS,
};
// Engine event kinds that change a circuit's state (counted in
// `metric::TRANSITIONS`).
use crate::model::event::TRANSITION_KINDS;
use crate::telemetry::{ErrorType, SPAN_NAME, TARGET};

/// The per-layer filter: the crate's own spans and events, INFO and above.
pub(super) struct OurTarget;

fn is_ours(metadata: &Metadata<'_>) -> bool {
    is_our_target(metadata.target()) && *metadata.level() <= tracing::Level::INFO
}

/// `circuit_breaker` or one of its modules (`agent_circuit_breaker::mcp`), not a crate whose name
/// starts the same.
fn is_our_target(target: &str) -> bool {
    target == TARGET
        || target
            .strip_prefix(TARGET)
            .is_some_and(|rest| rest.starts_with("::"))
}

impl<S> Filter<S> for OurTarget {
    fn enabled(&self, metadata: &Metadata<'_>, _: &Context<'_, S>) -> bool {
        is_ours(metadata)
    }

    fn callsite_enabled(&self, metadata: &'static Metadata<'static>) -> Interest {
        if is_ours(metadata) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::INFO)
    }
}

/// The layer behind [`Telemetry::layer`].
pub(super) struct CallMetrics {
    pub(super) shared: Arc<Shared>,
    /// Tells this layer's open calls from another's on the same thread ([`open`]).
    pub(super) id: u64,
}

impl CallMetrics {
    pub(super) fn new(shared: Arc<Shared>) -> Self {
        static LAYERS: AtomicU64 = AtomicU64::new(0);
        CallMetrics {
            shared,
            id: LAYERS.fetch_add(1, Ordering::Relaxed),
        }
    }
}

/// What the layer keeps of one `execute_tool` span: in this thread's open calls for a sync
/// generated method ([`open`]), else in the span's extensions.
pub(super) struct Call {
    start: Instant,
    tool: Option<Arc<ToolCell>>,
    error_type: Option<&'static str>,
    route: Option<StringValue>,
    route_tool: Option<StringValue>,
    /// The caller dropped the call (B13).
    cancelled: bool,
}

impl Visit for Call {
    fn record_bool(&mut self, field: &Field, value: bool) {
        if field.name() == CANCELLED {
            self.cancelled = value;
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            TOOL_NAME => self.tool = Some(tool_cell(value)),
            ERROR_TYPE => self.error_type = Some(error_type(value)),
            ROUTE => self.route = Some(word(value)),
            ROUTE_TOOL => self.route_tool = Some(shared_name(value)),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if matches!(field.name(), TOOL_NAME | ERROR_TYPE | ROUTE | ROUTE_TOOL) {
            self.record_str(field, &text(value));
        }
    }
}

/// A field's text when it was not recorded as a `&str`: its Debug form, a string's quotes
/// removed.
fn text(value: &dyn fmt::Debug) -> String {
    let text = format!("{value:?}");
    match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(inner) => inner.to_owned(),
        None => text,
    }
}

/// `value` if it is in the `error.type` vocabulary, else `_OTHER`.
fn error_type(value: &str) -> &'static str {
    ErrorType::parse(value).map_or(OTHER, ErrorType::as_str)
}

/// A low-cardinality word of ours (a route, a state): static when known.
fn word(value: &str) -> StringValue {
    const WORDS: [&str; 8] = [
        "alternative",
        "stale",
        "fallback",
        "scope_reduction",
        "closed",
        "open",
        "half_open",
        "labelled",
    ];
    match WORDS.iter().find(|known| **known == value) {
        Some(known) => StringValue::from(*known),
        None => StringValue::from(value.to_owned()),
    }
}

/// What the layer knows of a tool, shared by its calls: its name, and the attributes of a
/// call of it that answered, built once, so that a healthy call hands the SDK a ready slice
/// (no attribute made, cloned or dropped per call).
struct ToolCell {
    name: StringValue,
    /// `gen_ai.operation.name`, `gen_ai.tool.name`.
    answered: [KeyValue; 2],
}

impl ToolCell {
    fn new(name: StringValue) -> Self {
        ToolCell {
            answered: [
                KeyValue::new(OPERATION_NAME, SPAN_NAME),
                KeyValue::new(TOOL_NAME, name.clone()),
            ],
            name,
        }
    }

    /// The `gen_ai.tool.name` attribute.
    fn attribute(&self) -> &KeyValue {
        &self.answered[1]
    }
}

/// Tools seen by this thread, shared: a tool costs its cell once per thread, not per call.
const NAMES_KEPT: usize = 64;

thread_local! {
    static CELLS: RefCell<Vec<Arc<ToolCell>>> = const { RefCell::new(Vec::new()) };
}

fn tool_cell(name: &str) -> Arc<ToolCell> {
    let cached = CELLS.try_with(|tools| {
        let mut tools = tools.try_borrow_mut().ok()?;
        if let Some(known) = tools.iter().find(|known| known.name.as_str() == name) {
            return Some(Arc::clone(known));
        }
        let new = Arc::new(ToolCell::new(StringValue::from(Arc::<str>::from(name))));
        if tools.len() < NAMES_KEPT {
            tools.push(Arc::clone(&new));
        }
        Some(new)
    });
    match cached {
        Ok(Some(cell)) => cell,
        _ => Arc::new(ToolCell::new(StringValue::from(name.to_owned()))),
    }
}

/// A tool's name, shared per thread (see [`tool_cell`]).
fn shared_name(name: &str) -> StringValue {
    tool_cell(name).name.clone()
}

impl<S> Layer<S> for CallMetrics
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().name() != SPAN_NAME {
            return;
        }
        open::forget_left();
        // A generated method's span says its tool where the visit would find it; its other
        // fields are empty when it opens.
        let opening = crate::telemetry::opening();
        let mut call = Call {
            start: Instant::now(),
            tool: opening.map(|opened| tool_cell(opened.tool)),
            error_type: None,
            route: None,
            route_tool: None,
            cancelled: false,
        };
        match opening {
            Some(opened) if opened.sync => match open::keep(self.id, id.into_u64(), call) {
                Ok(()) => return,
                Err(back) => call = back,
            },
            Some(_) => {}
            None => attrs.record(&mut call),
        }
        let Some(span) = ctx.span(id) else { return };
        span.extensions_mut().replace(call);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if open::with(self.id, id.into_u64(), |call| values.record(call)).is_some() {
            return;
        }
        let Some(span) = ctx.span(id) else { return };
        if let Some(call) = span.extensions_mut().get_mut::<Call>() {
            values.record(call);
        }
    }

    fn on_enter(&self, id: &Id, _: Context<'_, S>) {
        open::enter(self.id, id.into_u64());
    }

    fn on_exit(&self, id: &Id, _: Context<'_, S>) {
        if let Some(call) = open::exit(self.id, id.into_u64()) {
            self.finish(call);
        }
    }

    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let mut fields = EngineEvent::default();
        event.record(&mut fields);
        let Some(kind) = fields.kind else { return };
        if kind == "systemic" {
            let cause = fields.cause.unwrap_or_else(|| StringValue::from(OTHER));
            self.shared.systemic.add(1, &[KeyValue::new(CAUSE, cause)]);
            return;
        }
        if !TRANSITION_KINDS.contains(&kind) {
            return;
        }
        // Every transition says the state after it (`Event::state_after`).
        let state = fields.state;
        let count = |tool: StringValue| {
            let tool = KeyValue::new(TOOL_NAME, tool);
            let state = state.map(|state| KeyValue::new(STATE, state));
            with_attributes(
                KeyValue::new(EVENT, kind),
                Some(tool),
                state,
                |attributes| {
                    self.shared.transitions.add(1, attributes);
                },
            );
        };
        match (fields.tool, fields.tools) {
            (Some(tool), _) => count(tool),
            (None, Some(tools)) => tools
                .split(',')
                .map(str::trim)
                .filter(|tool| !tool.is_empty())
                .for_each(|tool| count(shared_name(tool))),
            (None, None) => {}
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        match open::close(self.id, id.into_u64()) {
            open::Closed::Kept(call) => return self.finish(call),
            open::Closed::Measured => return,
            open::Closed::Unknown => {}
        }
        let Some(span) = ctx.span(&id) else { return };
        let Some(call) = span.extensions_mut().remove::<Call>() else {
            return;
        };
        self.finish(call);
    }
}

impl CallMetrics {
    /// The call's measurements, when its span closes (a sync method's: when it is left).
    fn finish(&self, call: Call) {
        let seconds = call.start.elapsed().as_secs_f64();
        // A name the model made up is not a tool: not an attribute (unbounded cardinality).
        let known = call
            .tool
            .filter(|_| call.error_type != Some(ErrorType::UnknownTool.as_str()));
        let tool = known.as_deref().map(ToolCell::attribute);
        let error = call.error_type.map(|e| KeyValue::new(ERROR_TYPE, e));

        if let (Some(known), None) = (&known, &error) {
            self.shared.duration.record(seconds, &known.answered);
        } else {
            let operation = KeyValue::new(OPERATION_NAME, SPAN_NAME);
            with_attributes(operation, tool.cloned(), error.clone(), |attributes| {
                self.shared.duration.record(seconds, attributes);
            });
        }
        if let Some(error) = error.filter(|_| call.error_type.is_some_and(is_refusal)) {
            with_attributes(error, tool.cloned(), None, |attributes| {
                self.shared.rejections.add(1, attributes);
            });
        }
        if call.cancelled {
            match tool {
                Some(tool) => self.shared.cancellations.add(1, std::slice::from_ref(tool)),
                None => self.shared.cancellations.add(1, &[]),
            }
        }
        if let Some(route) = call.route {
            let route_tool = call.route_tool.map(|t| KeyValue::new(ROUTE_TOOL, t));
            with_attributes(
                KeyValue::new(ROUTE, route),
                tool.cloned(),
                route_tool,
                |attributes| {
                    self.shared.routes.add(1, attributes);
                },
            );
        }
    }
}

/// Hands `first` and those of `more` that are there to `measure` as one slice on the stack:
/// the call path allocates no attribute list.
fn with_attributes(
    first: KeyValue,
    second: Option<KeyValue>,
    third: Option<KeyValue>,
    measure: impl FnOnce(&[KeyValue]),
) {
    match (second, third) {
        (Some(second), Some(third)) => measure(&[first, second, third]),
        (Some(one), None) | (None, Some(one)) => measure(&[first, one]),
        (None, None) => measure(&[first]),
    }
}

/// Whether an `error.type` says the call was not made.
fn is_refusal(error_type: &str) -> bool {
    ErrorType::parse(error_type).is_some_and(ErrorType::is_refusal)
}

/// What the layer reads of an event: an engine event's kind, tool(s), state and cause.
#[derive(Default)]
struct EngineEvent {
    kind: Option<&'static str>,
    tool: Option<StringValue>,
    tools: Option<String>,
    state: Option<&'static str>,
    cause: Option<StringValue>,
}

impl Visit for EngineEvent {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            EVENT => {
                self.kind = TRANSITION_KINDS
                    .iter()
                    .chain(["systemic"].iter())
                    .find(|known| **known == value)
                    .copied();
            }
            TOOL => self.tool = Some(shared_name(value)),
            TOOLS => self.tools = Some(value.to_owned()),
            STATE => {
                self.state = ["closed", "open", "half_open"]
                    .into_iter()
                    .find(|known| *known == value);
            }
            CAUSE => self.cause = Some(word(value)),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if matches!(field.name(), EVENT | TOOL | TOOLS | STATE | CAUSE) {
            self.record_str(field, &text(value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_types_outside_the_vocabulary_are_other() {
        assert_eq!(error_type("circuit_open"), "circuit_open");
        assert_eq!(error_type("network"), "network");
        assert_eq!(error_type("a user's own words"), OTHER);
    }

    #[test]
    fn refusals_are_the_error_types_that_say_so() {
        use crate::FailureCategory as F;
        const REFUSALS: [ErrorType; 8] = [
            ErrorType::CircuitOpen,
            ErrorType::ProbeInFlight,
            ErrorType::ToolUnavailable,
            ErrorType::SubtaskDeferred,
            ErrorType::BudgetExhausted,
            ErrorType::SystemicPause,
            ErrorType::NothingAchievable,
            ErrorType::MistakeLimit,
        ];
        let failures = [
            F::Network,
            F::Filesystem,
            F::Permission,
            F::Timeout,
            F::NotFound,
            F::InvalidInput,
            F::Other,
        ]
        .map(ErrorType::Failed);
        let others = [
            ErrorType::UnknownTool,
            ErrorType::InvalidArguments,
            ErrorType::Rejected,
        ];
        let every: Vec<ErrorType> = failures.into_iter().chain(REFUSALS).chain(others).collect();
        let mut spelled: Vec<&str> = every.iter().map(|e| e.as_str()).collect();
        spelled.sort_unstable();
        let mut all = ErrorType::ALL.to_vec();
        all.sort_unstable();
        assert_eq!(spelled, all, "every error type is listed here");
        for error in every {
            assert_eq!(is_refusal(error.as_str()), error.is_refusal(), "{error}");
            assert_eq!(error_type(error.as_str()), error.as_str());
        }
    }

    #[test]
    fn the_target_filter_takes_the_crate_and_its_modules_only() {
        assert!(!is_our_target("circuit_breaker_suite"));
        assert!(is_our_target("circuit_breaker"));
        assert!(is_our_target("circuit_breaker::mcp"));
        assert!(!is_our_target("other"));
    }

    #[test]
    fn names_are_shared_per_thread() {
        let a = shared_name("grep");
        let b = shared_name("grep");
        assert_eq!(a, b);
        assert_eq!(a.as_str(), "grep");
    }
}
