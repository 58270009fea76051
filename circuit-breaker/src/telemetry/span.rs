//! The `execute_tool` span a guarded call runs in: opened by the call, or by an outer layer
//! that knows more about it and offers its span to the call it makes next.

use std::cell::Cell;

use tracing::Span;

use super::{SPAN_NAME, TARGET};

/// Opens the `execute_tool` span for one call of `tool` (declares every field of the table
/// above; the GenAI ones are set). `tool_type` is `function` or `extension`; `name` is the
/// span's OpenTelemetry name, `execute_tool <tool>`: a `&str` when the caller has it, else a
/// `Display` value formatted by the bridge.
macro_rules! execute_tool_span {
    ($tool:expr, $tool_type:expr) => {
        execute_tool_span!(
            $tool,
            $tool_type,
            tracing::field::display(format_args!("execute_tool {}", $tool))
        )
    };
    ($tool:expr, $tool_type:expr, $name:expr) => {
        tracing::info_span!(
            target: "circuit_breaker",
            "execute_tool",
            otel.name = $name,
            otel.kind = "internal",
            otel.status_code = tracing::field::Empty,
            otel.status_description = tracing::field::Empty,
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = $tool,
            gen_ai.tool.type = $tool_type,
            gen_ai.tool.call.id = tracing::field::Empty,
            error.type = tracing::field::Empty,
            circuit_breaker.state = tracing::field::Empty,
            circuit_breaker.route = tracing::field::Empty,
            circuit_breaker.route.tool = tracing::field::Empty,
            circuit_breaker.degradation = tracing::field::Empty,
            circuit_breaker.freshness = tracing::field::Empty,
            circuit_breaker.budget.remaining = tracing::field::Empty,
            circuit_breaker.server = tracing::field::Empty,
            circuit_breaker.cancelled = tracing::field::Empty,
            mcp.method.name = tracing::field::Empty,
            mcp.session.id = tracing::field::Empty,
            mcp.protocol.version = tracing::field::Empty,
            jsonrpc.request.id = tracing::field::Empty,
            network.transport = tracing::field::Empty,
        )
    };
}

thread_local! {
    /// The id of the span an outer layer opened with [`execute_tool`] for the call about to
    /// be made on this thread, until that call takes it (0: none).
    static OFFERED: Cell<u64> = const { Cell::new(0) };
}

#[cfg(feature = "otel")]
thread_local! {
    /// The tool of the `execute_tool` span a generated method is opening on this thread, while
    /// it opens it, and whether the method is sync: the metrics layer takes the name from here
    /// rather than visiting the span's two dozen fields for it (most of what its `on_new_span`
    /// cost), and keeps a sync call's span on this thread, where it is entered and left.
    static OPENING: Cell<Option<Opened>> = const { Cell::new(None) };
}

/// What a generated method says of the span it is opening (see [`opening`]).
#[cfg(feature = "otel")]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Opened {
    /// The tool called.
    pub(crate) tool: &'static str,
    /// A sync method: the span is entered once, on this thread, and left there when the call
    /// returns (or unwinds).
    pub(crate) sync: bool,
}

/// The span being opened on this thread by a generated method, if one is.
#[cfg(feature = "otel")]
pub(crate) fn opening() -> Option<Opened> {
    OPENING.with(Cell::get)
}

/// Sets [`OPENING`] while it lives (cleared even if a subscriber panics).
#[cfg(feature = "otel")]
struct Opening;

#[cfg(feature = "otel")]
impl Opening {
    fn set(opened: Opened) -> Self {
        OPENING.with(|opening| opening.set(Some(opened)));
        Opening
    }
}

#[cfg(feature = "otel")]
impl Drop for Opening {
    fn drop(&mut self) {
        OPENING.with(|opening| opening.set(None));
    }
}

/// Opens the `execute_tool` span for a call of `tool` that an outer layer makes: run the
/// guarded call inside it (`span.in_scope(..)`, `.instrument(span)`), and the call records
/// into it instead of opening its own. Record what you know on it first:
/// `gen_ai.tool.call.id`, `mcp.*`, `gen_ai.tool.type` is `function` unless you record it.
///
/// A span that is not entered before the next guarded call on this thread is not used by
/// it; nothing breaks, the call opens its own.
pub fn execute_tool(tool: &str) -> Span {
    let span = execute_tool_span!(tool, "function");
    if let Some(id) = super::current_call_id() {
        span.record("gen_ai.tool.call.id", &*id);
    }
    offer(&span);
    span
}

/// Offers `span` to the next guarded call on this thread that runs inside it.
fn offer(span: &Span) {
    if let Some(id) = span.id() {
        OFFERED.with(|offered| offered.set(id.into_u64()));
    }
}

/// The span a guarded call of `tool` runs in: the one an outer layer opened for it and
/// entered ([`execute_tool`]), else a new one. Disabled (and nearly free) when no subscriber
/// wants it.
#[inline]
#[cfg_attr(
    not(feature = "json"),
    expect(
        dead_code,
        reason = "the calls by name of the JSON dispatcher open theirs by it"
    )
)]
pub(crate) fn call_span(tool: &str, tool_type: &'static str) -> Span {
    if !wanted() {
        return Span::none();
    }
    open(tool, tool_type, None).0
}

/// [`call_span`] of a generated method, which knows its span's name, `execute_tool <tool>`,
/// at compile time: the bridge copies it rather than formatting it on every call. `sync`: the
/// method is sync, and enters the span at once and leaves it on this thread.
#[inline]
pub(crate) fn named_call_span(tool: &'static str, name: &'static str, sync: bool) -> Span {
    if !wanted() {
        return Span::none();
    }
    #[cfg(feature = "otel")]
    let _opening = Opening::set(Opened { tool, sync });
    #[cfg(not(feature = "otel"))]
    let _ = sync;
    open(tool, "function", Some(name)).0
}

/// [`call_span`], and whether the span is an outer layer's. `name`: the span's name, when
/// known at compile time.
#[inline(never)]
fn open(tool: &str, tool_type: &'static str, name: Option<&'static str>) -> (Span, bool) {
    let offered = OFFERED.with(|offered| offered.replace(0));
    let mut opened = None;
    if offered != 0 {
        let current = Span::current();
        if current.id().is_some_and(|id| id.into_u64() == offered) {
            opened = Some((current, true));
        }
    }
    let (span, outer) = opened.unwrap_or_else(|| {
        let span = if let Some(name) = name {
            execute_tool_span!(tool, tool_type, name)
        } else {
            execute_tool_span!(tool, tool_type)
        };
        (span, false)
    });
    // The model's id for the call, when its caller gave one (B18); an outer span's own
    // record stands when none was given.
    if let Some(id) = super::current_call_id() {
        span.record("gen_ai.tool.call.id", &*id);
    }
    (span, outer)
}

/// Whether a subscriber may want our spans or events: the level filter, then the cached
/// interest of one call site of our target at INFO. Not the level filter alone: a subscriber
/// that wants INFO of other targets only passes it, and would cost every refusal and failure
/// a current-span lookup.
///
/// Only the level filter's load is inlined: the interest check, with its dispatcher lookup
/// for a subscriber that may want the call, is out of line, so that a guarded method that
/// inlines this stays small (its registers and frame are the healthy path's).
#[inline]
pub(crate) fn wanted() -> bool {
    tracing::level_enabled!(tracing::Level::INFO) && interested()
}

/// The interest of our call site at INFO (see [`wanted`]).
#[inline(never)]
fn interested() -> bool {
    tracing::enabled!(target: "circuit_breaker", tracing::Level::INFO)
}

/// The current span, if it is a call's `execute_tool` span.
pub(super) fn current_call() -> Option<Span> {
    let span = Span::current();
    let ours = span
        .metadata()
        .is_some_and(|m| m.name() == SPAN_NAME && m.target() == TARGET);
    ours.then_some(span)
}

/// Records what an MCP server knows of a `tools/call` on its span.
#[cfg(feature = "mcp")]
pub(crate) fn record_mcp(span: &Span, protocol: Option<&str>, request: &str) {
    span.record("mcp.method.name", "tools/call");
    if let Some(protocol) = protocol {
        span.record("mcp.protocol.version", protocol);
    }
    span.record("jsonrpc.request.id", request);
}

/// The MCP client's span for a call of `tool` on `server` (reached over `transport`, when
/// known): `gen_ai.tool.type = extension`, `mcp.method.name = tools/call`.
#[cfg(feature = "mcp")]
pub(crate) fn mcp_client_span(tool: &str, server: &str, transport: Option<&str>) -> Span {
    if !wanted() {
        return Span::none();
    }
    let (span, outer) = open(tool, "extension", None);
    if outer {
        span.record("gen_ai.tool.type", "extension");
    }
    span.record("circuit_breaker.server", server);
    span.record("mcp.method.name", "tools/call");
    if let Some(transport) = transport {
        span.record("network.transport", transport);
    }
    // What the call itself finds (a model's mistake) records into this span.
    offer(&span);
    span
}
