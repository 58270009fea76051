//! Tools called by name with JSON, as a model calls them (B8).
//!
//! A model sends a tool's name and JSON arguments and must be shown which tools it may call.
//! `#[toolbox(json)]` generates, per tool, an argument type (serde, JSON Schema) and, on the
//! guarded handle, an implementation of [`ToolDispatch`]: [`definitions`](ToolDispatch::definitions)
//! of every tool, the [`offered`](ToolDispatch::offered) ones (only those a model may call now),
//! and [`dispatch`](ToolDispatch::dispatch), which runs the same guarded path as the typed
//! method: decide, call or route, record. The handle also has `call(name, arguments)`, the
//! same path without a boxed future: a plain method returning the [`Reply`] when every tool is
//! sync, an `async fn` when any is async.
//!
//! Every call gives one [`Reply`], which every adapter (MCP, rig, your own loop) maps from: the
//! value (serialised), whether it is an error, and the note for the model — the route taken
//! and its degradation, the freshness label, or the refusal text of B7. The note never
//! invites a retry of a broken tool.
//!
//! The definitions, the calls and the replies in the shapes of OpenAI's, Anthropic's and
//! Gemini's APIs (B18): [`ModelApi`], [`ToolDefinition::to_api`],
//! [`ToolDispatch::offered_for`], [`ToolCall::from_api`], [`ToolDispatch::dispatch_call`] (the
//! call with the model's id) and [`Reply::to_message`].
//!
//! A model's own mistakes — a tool name that is no tool, arguments that do not parse — are
//! answered with what is wrong and what is offered ("did you mean"), are never charged to a
//! tool's breaker or to the failure budget, and are counted on a line of their own in the
//! reports ([`Expeditor::record_mistake`](crate::Expeditor::record_mistake)).

use std::fmt::{self, Write as _};
use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::model::breaker::CircuitState;

/// What a tool back on probation says first in its description (B15).
pub const PROBATION: &str = "[ON PROBATION — this tool failed recently and is being tried again: one call checks it; if it fails, it is withdrawn again.]";
use crate::engine::SkipReason;
use crate::executor::{CallError, Refusal, Routed};
use crate::expeditor::{Expeditor, ToolId};
use crate::model::capability::did_you_mean;
use crate::model::freshness::Freshness;
use crate::model::route::{RouteKind, RouteTaken};
use crate::report::clip;

pub use super::model_api::{ModelApi, ToolCall};
pub use crate::report::ModelMistake;

/// A tool as a model is shown it: its name, what it does, and the JSON Schema of its
/// arguments (an object).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The tool's name, as the model calls it.
    pub name: String,
    /// What it provides (the `provides` line), then the method's doc comment, if any.
    pub description: String,
    /// The JSON Schema of the arguments: always an object schema.
    pub input_schema: Map<String, Value>,
}

/// What happened to one call by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ReplyOutcome {
    /// The tool, or an alternative standing in for it, answered.
    Answered,
    /// The tool (or the alternative) ran and failed; its failure is recorded.
    Failed {
        /// The tool's error message.
        message: String,
    },
    /// Nothing was called.
    Refused {
        /// Why.
        reason: SkipReason,
    },
    /// The model's own mistake: nothing was called or charged.
    Mistake(ModelMistake),
}

/// The one reply to a call by name (B8): what every adapter maps from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// The tool the model asked for, as it spelt it.
    pub tool: String,
    /// What happened.
    pub outcome: ReplyOutcome,
    /// The value, serialised, when the call was answered.
    pub value: Option<Value>,
    /// The note for the model: the route taken and what it lost, the freshness label, or why
    /// nothing was called and what to do instead. Never an invitation to retry a broken tool.
    pub note: Option<String>,
    /// The route taken instead of the tool, if one was.
    pub route: Option<RouteTaken>,
    /// How fresh the value is (R6).
    pub freshness: Freshness,
    /// The asked tool's circuit state after the call (`None` for a name that is no tool).
    pub state: Option<CircuitState>,
    /// The model's id for the call, when its caller gave one (B18: [`ToolDispatch::dispatch_call`],
    /// [`with_call_id`](crate::telemetry::with_call_id)): what
    /// [`to_message`](Self::to_message) answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

impl Reply {
    /// Whether the model should read this as an error (MCP's `isError`): anything but an
    /// answer.
    pub fn is_error(&self) -> bool {
        !matches!(self.outcome, ReplyOutcome::Answered)
    }

    /// The text for the model: the value (a JSON string as its text, anything else as JSON),
    /// then the note on a line of its own.
    pub fn text(&self) -> String {
        let value = match &self.value {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => String::new(),
        };
        match (&self.note, value.is_empty()) {
            (Some(note), true) => note.clone(),
            (Some(note), false) => format!("{value}\n\n{note}"),
            (None, _) => value,
        }
    }

    /// What travels beside the text for a client that reads it (MCP's `_meta`): the outcome,
    /// the tool's own error message for a failure (`error`), the circuit state, the route
    /// and what it lost, the freshness label.
    pub fn meta(&self) -> Map<String, Value> {
        let mut meta = Map::new();
        let outcome = match &self.outcome {
            ReplyOutcome::Answered => "answered",
            ReplyOutcome::Failed { .. } => "failed",
            ReplyOutcome::Refused { .. } => "refused",
            ReplyOutcome::Mistake(_) => "model_mistake",
        };
        meta.insert("outcome".into(), outcome.into());
        // The tool's own message, apart from the note around it: a client that guards this
        // server in turn (our MCP client) records it as the failure, not the whole text.
        if let ReplyOutcome::Failed { message }
        | ReplyOutcome::Mistake(ModelMistake::Rejected { message, .. }) = &self.outcome
        {
            meta.insert("error".into(), message.clone().into());
        }
        if let Some(state) = self.state {
            meta.insert("circuit_state".into(), state.as_str().into());
        }
        if let ReplyOutcome::Refused { reason } = &self.outcome
            && let Ok(Value::Object(reason)) = serde_json::to_value(reason)
            && let Some(r) = reason.get("reason")
        {
            meta.insert("refusal".into(), r.clone());
        }
        if let Some(route) = &self.route {
            let kind = match route.kind {
                RouteKind::Alternative => "alternative",
                RouteKind::Fallback => "fallback",
                RouteKind::ScopeReduction => "scope_reduction",
                RouteKind::Stale => "stale",
            };
            meta.insert("route".into(), kind.into());
            if let Some(to) = &route.to {
                meta.insert("routed_to".into(), to.clone().into());
            }
            if let Some(d) = &route.degradation {
                meta.insert("degradation".into(), d.clone().into());
            }
            meta.insert(
                "severity".into(),
                if route.severity.is_high() {
                    "high"
                } else {
                    "low"
                }
                .into(),
            );
        }
        if self.freshness.is_labelled() {
            meta.insert("freshness".into(), self.freshness.to_string().into());
        }
        meta
    }

    /// The reply to a guarded call's result: `T` serialised; a failure or a refusal as its
    /// note.
    pub fn from_call<T: Serialize, E: fmt::Display>(
        expeditor: &Expeditor,
        tool: &str,
        result: Result<Routed<T>, CallError<E>>,
    ) -> Reply {
        Reply::from_call_of(expeditor, expeditor.tool(tool), tool, result)
    }

    /// [`from_call`](Self::from_call) for the tool with id `id`, when the caller knows it
    /// (the generated dispatcher): the state is read lock-free, without looking the name up.
    pub(crate) fn from_call_of<T: Serialize, E: fmt::Display>(
        expeditor: &Expeditor,
        id: Option<ToolId>,
        tool: &str,
        result: Result<Routed<T>, CallError<E>>,
    ) -> Reply {
        let state = id.and_then(|id| expeditor.state(id));
        match result {
            Ok(routed) => {
                let (value, route, freshness) = routed.into_parts();
                let mut notes = Vec::new();
                if let Some(route) = &route {
                    notes.push(route_note(route));
                }
                if freshness.is_labelled() {
                    notes.push(freshness.to_string());
                }
                match serde_json::to_value(&value) {
                    Ok(value) => Reply {
                        tool: tool.to_owned(),
                        outcome: ReplyOutcome::Answered,
                        value: Some(value),
                        note: (!notes.is_empty()).then(|| notes.join("\n")),
                        route,
                        freshness,
                        state,
                        call_id: crate::telemetry::current_call_id_string(),
                    },
                    // The tool answered but its value has no JSON form: said, not hidden.
                    Err(e) => Reply {
                        tool: tool.to_owned(),
                        outcome: ReplyOutcome::Failed {
                            message: format!("the value could not be serialised: {e}"),
                        },
                        value: None,
                        note: Some(format!(
                            "{tool} answered, but its value could not be turned into JSON ({e}). \
                             Report this to the user; calling {tool} again will not help."
                        )),
                        route,
                        freshness,
                        state,
                        call_id: crate::telemetry::current_call_id_string(),
                    },
                }
            }
            Err(CallError::Failed {
                tool: failed,
                error,
                recorded,
                route,
            }) => Reply::failed(
                expeditor,
                tool,
                &failed,
                error.to_string(),
                recorded,
                route,
                state,
            ),
            Err(CallError::TimedOut {
                tool: failed,
                after,
                recorded,
                route,
            }) => {
                let message = crate::executor::timed_out_message(after);
                Reply::failed(expeditor, tool, &failed, message, recorded, route, state)
            }
            Err(CallError::Rejected {
                tool: rejected_by,
                error,
                route,
                category,
                ..
            }) => {
                // Counted already, by the ticket (B14): only answered here.
                let mistake = ModelMistake::Rejected {
                    tool: rejected_by,
                    message: error.to_string(),
                    category,
                };
                let mut reply = Reply::mistake_reply(expeditor, tool, mistake, state);
                reply.route = route.map(|r| *r);
                reply
            }
            Err(CallError::Refused(refusal)) => Reply::refused(tool, &refusal, state),
        }
    }

    /// The reply to a call that ran and failed (or missed its deadline, B13): the message,
    /// and a note saying what recording it did.
    fn failed(
        expeditor: &Expeditor,
        tool: &str,
        failed: &str,
        message: String,
        recorded: crate::expeditor::Recorded,
        route: Option<Box<RouteTaken>>,
        state: Option<CircuitState>,
    ) -> Reply {
        let mut note = format!("{failed} failed: {}.", clip(&message));
        if recorded.opened {
            // What to use instead, as a refusal would say it (B15): the model is not left to
            // find out by calling a tool it was told to leave alone.
            let opened = expeditor.tool(failed);
            let due = opened
                .and_then(|id| expeditor.breaker(id))
                .and_then(|record| record.probe_due_at());
            match due {
                Some(due) => {
                    let _ = write!(
                        note,
                        " Its circuit is now OPEN: do not call {failed} before {due}, when it is \
                         offered again on probation."
                    );
                }
                None => {
                    let _ = write!(
                        note,
                        " Its circuit is now OPEN: do not call {failed} again in this task."
                    );
                }
            }
            if let Some(instead) = opened.and_then(|id| expeditor.instead_of(id)) {
                let _ = write!(note, " Instead, {instead}");
            }
        } else {
            note.push_str(" Do not repeat the same call now; the failure is recorded.");
        }
        if recorded.paused {
            match expeditor.pause_lifts_at() {
                // A service's pause lifts by itself (B15): say when, promise nothing else.
                Some(at) => {
                    let _ = write!(
                        note,
                        " Every tool is now paused until {at}: report what is done and what is \
                         waiting."
                    );
                }
                None => note.push_str(
                    " Every tool is now paused: stop and report the completed and incomplete \
                     work to the user.",
                ),
            }
        }
        Reply {
            tool: tool.to_owned(),
            outcome: ReplyOutcome::Failed { message },
            value: None,
            note: Some(note),
            route: route.map(|r| *r),
            freshness: Freshness::Fresh,
            state,
            call_id: crate::telemetry::current_call_id_string(),
        }
    }

    fn refused(tool: &str, refusal: &Refusal, state: Option<CircuitState>) -> Reply {
        Reply {
            tool: tool.to_owned(),
            outcome: ReplyOutcome::Refused {
                reason: refusal.reason(),
            },
            value: None,
            note: Some(refusal.to_string()),
            route: refusal.route(),
            freshness: Freshness::Fresh,
            state,
            call_id: crate::telemetry::current_call_id_string(),
        }
    }

    /// The reply to a model's own mistake; the mistake is counted, never charged.
    /// Recorded on the call's `execute_tool` span (B12) as `error.type` `unknown_tool`,
    /// `invalid_arguments` or `rejected`. The mistake that reaches the policy's
    /// [`mistake_limit`](crate::Policy::mistake_limit) says that every tool is now paused.
    pub fn mistake(expeditor: &Expeditor, tool: &str, mistake: ModelMistake) -> Reply {
        expeditor.record_mistake(&mistake);
        let (error, why) = match &mistake {
            ModelMistake::UnknownTool { .. } => {
                (crate::telemetry::ErrorType::UnknownTool, "no such tool")
            }
            ModelMistake::BadArguments { message, .. } => (
                crate::telemetry::ErrorType::InvalidArguments,
                message.as_str(),
            ),
            ModelMistake::Rejected { message, .. } => {
                (crate::telemetry::ErrorType::Rejected, message.as_str())
            }
        };
        crate::telemetry::mistake(tool, error, why);
        let state = expeditor.tool(tool).and_then(|id| expeditor.state(id));
        Reply::mistake_reply(expeditor, tool, mistake, state)
    }

    /// The reply to a mistake already counted: its text, then the pause note when the
    /// model's mistakes have paused every call (B14).
    pub(crate) fn mistake_reply(
        expeditor: &Expeditor,
        tool: &str,
        mistake: ModelMistake,
        state: Option<CircuitState>,
    ) -> Reply {
        let note = match expeditor.paused() {
            // Paused by the model's own mistakes: what was wrong, then the pause, and no
            // advice to call again.
            Some(pause @ crate::engine::PauseReason::MistakeLimit { .. }) => format!(
                "{}\n{}",
                mistake.fact(),
                crate::report::ModelNote::for_pause(pause, None, None, expeditor.pause_lifts_at())
            ),
            _ => mistake.to_string(),
        };
        Reply {
            tool: clip(tool),
            note: Some(note),
            outcome: ReplyOutcome::Mistake(mistake),
            value: None,
            route: None,
            freshness: Freshness::Fresh,
            state,
            call_id: crate::telemetry::current_call_id_string(),
        }
    }

    /// The reply to a name that is no tool: what is offered, and the closest name.
    pub fn unknown_tool(expeditor: &Expeditor, name: &str) -> Reply {
        let offered = expeditor.offer().offered;
        let suggestion = did_you_mean(name, offered.iter().map(String::as_str)).map(str::to_owned);
        let mistake = ModelMistake::UnknownTool {
            name: clip(name),
            suggestion,
            offered,
        };
        Reply::mistake(expeditor, name, mistake)
    }

    /// The reply to arguments that do not parse for `tool`.
    pub fn bad_arguments(expeditor: &Expeditor, tool: &str, error: &dyn fmt::Display) -> Reply {
        let mistake = ModelMistake::BadArguments {
            tool: tool.to_owned(),
            message: error.to_string(),
        };
        Reply::mistake(expeditor, tool, mistake)
    }
}

/// The note for a route taken: which tool stood in, and what was lost.
fn route_note(route: &RouteTaken) -> String {
    match route.kind {
        RouteKind::Alternative => {
            let mut note = format!(
                "{} is unavailable; answered by {} ({})",
                route.from,
                route.to.as_deref().unwrap_or("?"),
                route.method.as_deref().unwrap_or("an alternative")
            );
            if let Some(d) = &route.degradation {
                let _ = write!(note, " — degradation: {d}");
            }
            note.push_str(". Say so where the result is used.");
            note
        }
        RouteKind::Stale => format!(
            "{} is unavailable; this is its last good result for the same arguments.",
            route.from
        ),
        RouteKind::Fallback | RouteKind::ScopeReduction => route.to_string(),
    }
}

/// A boxed future of a [`Reply`], as [`ToolDispatch::dispatch`] returns it.
pub type ReplyFuture<'a> = Pin<Box<dyn Future<Output = Reply> + Send + 'a>>;

/// A toolbox callable by name with JSON arguments (B8). `#[toolbox(json)]` implements it for
/// the guarded handle; adapters (MCP, rig) take any `ToolDispatch`.
pub trait ToolDispatch: Send + Sync {
    /// Every tool's definition, in capability-map order.
    fn definitions(&self) -> Vec<ToolDefinition>;

    /// A number that changes whenever [`definitions`](Self::definitions) may give something
    /// else, so that an adapter watching the offer (the MCP server) need not copy the
    /// definitions to learn that nothing changed. `None` (the default): they may change at
    /// any time. `#[toolbox(json)]`'s definitions never change (`Some(0)`).
    fn definitions_version(&self) -> Option<u64> {
        None
    }

    /// The expeditor behind the tools.
    fn expeditor(&self) -> &Expeditor;

    /// Calls `name` with `arguments` through the guarded path: decide, call or route,
    /// record. A name that is no tool, or arguments that do not parse, are the model's
    /// mistakes: answered, counted, never charged.
    fn dispatch<'a>(&'a self, name: &'a str, arguments: Value) -> ReplyFuture<'a>;

    /// Calls the tool a model asked for, as [`dispatch`](Self::dispatch) does, as the call
    /// with the model's id (B18): the `execute_tool` span records it as
    /// `gen_ai.tool.call.id`, the ledger line of a failure and the reply
    /// ([`Reply::call_id`]) carry it, and [`Reply::to_message`] answers it. The id follows
    /// the future from thread to thread; an empty id is none.
    fn dispatch_call(&self, call: ToolCall) -> ReplyFuture<'_> {
        let ToolCall {
            id,
            name,
            arguments,
        } = call;
        let id = crate::telemetry::call_id(&id);
        Box::pin(async move {
            // A sync toolbox makes the call in `dispatch` itself, an async one when polled:
            // the id is set for both.
            let call = crate::telemetry::in_call(id.clone(), || self.dispatch(&name, arguments));
            crate::telemetry::WithCallId::new(id, call).await
        })
    }

    /// Every tool's definition in `api`'s shape (B18), in capability-map order: see
    /// [`ToolDefinition::to_api`].
    fn definitions_for(&self, api: ModelApi) -> Vec<Value> {
        self.definitions().iter().map(|d| d.to_api(api)).collect()
    }

    /// The tools a model may call now ([`offered`](Self::offered)) in `api`'s shape (B18):
    /// the request's tool list as the API takes it. Empty while paused: send no tools then
    /// (OpenAI rejects an empty list).
    fn offered_for(&self, api: ModelApi) -> Vec<Value> {
        self.offered().iter().map(|d| d.to_api(api)).collect()
    }

    /// The definitions of the tools a model may call now: those of
    /// [`Expeditor::offer`](crate::Expeditor::offer), in map order; none while paused.
    fn offered(&self) -> Vec<ToolDefinition> {
        let expeditor = self.expeditor();
        let offer = expeditor.offer();
        // A set: with hundreds of tools a search of the offer per definition is quadratic.
        let offered: std::collections::HashSet<&str> =
            offer.offered.iter().map(String::as_str).collect();
        self.definitions()
            .into_iter()
            .filter(|d| offered.contains(d.name.as_str()))
            .map(|mut d| {
                // Back on probation (B15): the model is told, so that one failure more is
                // no surprise and its next call is read as the check it is.
                let on_probation = expeditor.tool(&d.name).and_then(|id| expeditor.state(id))
                    == Some(CircuitState::HalfOpen);
                if on_probation {
                    d.description = if d.description.is_empty() {
                        PROBATION.to_owned()
                    } else {
                        format!("{PROBATION} {}", d.description)
                    };
                }
                d
            })
            .collect()
    }
}
