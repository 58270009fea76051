//! A call by name, guarded (B10): the model's mistakes caught before any call (an unknown
//! name, arguments that do not fit the schema), then decide, call the tool on its server
//! with its deadline, and record what came back; a probe whose server cannot be reached is
//! not made.

use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use serde_json::{Map, Value};

use super::Inner;
use super::classify::{self, Outcome, classify_result};
use super::connect::Server;
use super::human;
use super::passthrough::Keep;
use super::tools::Entry;
use crate::Availability;
use crate::capability::ToolSpec;
use crate::dispatch::{Reply, ReplyOutcome};
use crate::expeditor::{Decision, Expeditor, SkipReason, Ticket};
use crate::freshness::{Freshness, Observation};
use crate::report::ModelNote;
use crate::{CallError, CircuitState, Failure, FailureCategory, Refusal, Routed};

impl Server {
    /// Calls `tool` (the server's own name for it) with `arguments` (an object) and the
    /// deadline — the tool's own `timeout` when its spec has one (B13), else the server's —
    /// and classifies what comes back; with `keep`, the request carries its `_meta` and the
    /// result is kept as it came, a success read into a value only when `value_wanted`.
    pub(super) async fn call_tool(
        &self,
        tool: &str,
        arguments: Value,
        own_deadline: Option<Duration>,
        keep: Option<&mut Keep>,
        value_wanted: bool,
    ) -> Outcome {
        let Some((peer, generation)) = self.peer() else {
            return Outcome::Failed(self.unreachable("not connected"));
        };
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let mut keep = keep;
        if let Some(keep) = keep.as_deref_mut() {
            params.meta = keep.meta.take();
        }
        // The typed helper: dropping its future (the deadline, or this call dropped) tells
        // the server the request is abandoned.
        let (deadline, whose) = match own_deadline {
            Some(deadline) => (deadline, "the tool's deadline"),
            None => (self.deadline, "the call's deadline"),
        };
        match tokio::time::timeout(deadline, peer.call_tool(params)).await {
            Err(_) => Outcome::Failed(Failure::with_category(
                format!(
                    "{tool} on MCP server {} did not answer within {} ({whose})",
                    self.name,
                    human(deadline)
                ),
                FailureCategory::Timeout,
            )),
            Ok(Ok(result)) => {
                let answered = result.is_error != Some(true);
                let Some(keep) = keep else {
                    return if answered {
                        Outcome::Answered(classify::into_value(result))
                    } else {
                        classify_result(&result)
                    };
                };
                // Kept for the caller as it came, moved rather than copied; a success is not
                // read into a value no one reads (the cache's digest does read it).
                let outcome = if answered && !value_wanted {
                    Outcome::Answered(Value::Null)
                } else {
                    classify_result(&result)
                };
                keep.result = Some(result);
                outcome
            }
            Ok(Err(error)) => self.classify_error(tool, error, generation),
        }
    }
}

impl Inner {
    /// A call in its `execute_tool` span (B12), with the MCP attributes: `gen_ai.tool.type`
    /// `extension`, `mcp.method.name` `tools/call`, the server and its transport.
    pub(super) async fn dispatch(&self, name: &str, arguments: Value) -> Reply {
        self.dispatch_keeping(name, arguments, None).await
    }

    /// [`dispatch`](Self::dispatch), keeping the server's result in `keep`.
    pub(super) async fn dispatch_keeping(
        &self,
        name: &str,
        arguments: Value,
        keep: Option<&mut Keep>,
    ) -> Reply {
        let mut entry = self.entry(name);
        // A list past its `ttlMs` is listed again first (R6): the tool's server's, or for a
        // name no list has, every stale one.
        let server = entry.as_ref().map(|e| e.server);
        let stale = match server {
            Some(i) => self.servers[i].list_stale(),
            None => self.servers.iter().any(|s| s.list_stale()),
        };
        if stale {
            self.refresh_stale(server).await;
            entry = self.entry(name);
        }
        let server = entry.as_ref().map(|entry| &self.servers[entry.server]);
        let span = crate::telemetry::mcp_client_span(
            name,
            server.map_or("", |s| s.name.as_str()),
            server.and_then(|s| s.transport),
        );
        let call = self.dispatch_guarded(entry, name, arguments, keep);
        tracing::Instrument::instrument(call, span).await
    }

    async fn dispatch_guarded(
        &self,
        entry: Option<Arc<Entry>>,
        name: &str,
        arguments: Value,
        keep: Option<&mut Keep>,
    ) -> Reply {
        let expeditor = &self.expeditor;
        let Some(entry) = entry else {
            return Reply::unknown_tool(expeditor, name);
        };
        let arguments = match arguments {
            Value::Null => Value::Object(Map::new()),
            other => other,
        };
        // Checked as the `Value` it came in (the validator reads one), and sent as it is.
        let check = if arguments.is_object() {
            entry.check.check(&arguments)
        } else {
            Err(format!(
                "the arguments must be a JSON object, not {}",
                kind_of(&arguments)
            ))
        };
        if let Err(message) = check {
            return Reply::bad_arguments(expeditor, name, &message);
        }
        let server = &self.servers[entry.server];
        if expeditor.state(entry.id) == Some(CircuitState::Closed)
            && server.health_stale(self.health_ttl)
            && expeditor.paused().is_none()
        {
            self.check_up(server).await;
        }
        match expeditor.decide(entry.id) {
            Decision::Call(ticket) => {
                self.call(ticket, name, &entry, server, arguments, keep)
                    .await
            }
            Decision::Probe(ticket) => match self.ready_for_probe(server).await {
                Ok(()) => {
                    self.call(ticket, name, &entry, server, arguments, keep)
                        .await
                }
                Err(reason) => self.probe_not_made(ticket, name, server, reason),
            },
            Decision::Skip(skip) => {
                let refusal = Refusal::new(
                    name,
                    skip.reason(),
                    Some(skip.route().taken(name)),
                    skip.for_model(),
                );
                refused(expeditor, name, refusal)
            }
            Decision::Pause(pause) => {
                let refusal = Refusal::new(
                    name,
                    SkipReason::Paused {
                        pause: pause.reason(),
                    },
                    None,
                    pause.for_model(),
                );
                refused(expeditor, name, refusal)
            }
        }
    }

    async fn call(
        &self,
        ticket: Ticket<'_>,
        name: &str,
        entry: &Entry,
        server: &Server,
        arguments: Value,
        keep: Option<&mut Keep>,
    ) -> Reply {
        let expeditor = &self.expeditor;
        let caching = expeditor.is_caching(entry.id);
        let args = caching.then(|| digest(&arguments.to_string()));
        // The caller has the server's result itself: the reply carries no copy of it.
        let kept_only = keep.is_some() && !caching;
        let own_deadline = expeditor.spec(entry.id).and_then(ToolSpec::timeout);
        let outcome = server
            .call_tool(&entry.remote, arguments, own_deadline, keep, caching)
            .await;
        match outcome {
            Outcome::Answered(value) => {
                ticket.success();
                let freshness = match args {
                    Some(args) => expeditor.observe(
                        entry.id,
                        Observation {
                            args,
                            output: digest(&value.to_string()),
                            data_time: None,
                            live: true,
                        },
                    ),
                    None => Freshness::Fresh,
                };
                let routed = Routed::new(value, None, freshness);
                let mut reply = Reply::from_call::<Value, String>(expeditor, name, Ok(routed));
                if kept_only {
                    reply.value = None;
                }
                reply
            }
            Outcome::Failed(failure) => self.failed(ticket, name, failure),
            Outcome::Reported(failure) => {
                let failure = if self.blames_caller(entry, server, failure.category()) {
                    failure.blame_caller()
                } else {
                    failure
                };
                self.failed(ticket, name, failure)
            }
            Outcome::Mistake(message) => {
                // The model's mistake: never charged (B8); a probe answered so is a success.
                let _ = ticket.mistake_of(crate::engine::MistakeKind::BadArguments);
                crate::telemetry::mistake(
                    name,
                    crate::telemetry::ErrorType::InvalidArguments,
                    &message,
                );
                let mistake = crate::report::ModelMistake::BadArguments {
                    tool: name.to_owned(),
                    message,
                };
                Reply::mistake_reply(expeditor, name, mistake, expeditor.state(entry.id))
            }
            Outcome::Cancelled(reason) => {
                ticket.cancel();
                Reply {
                    tool: name.to_owned(),
                    outcome: ReplyOutcome::Failed {
                        message: format!("cancelled: {reason}"),
                    },
                    value: None,
                    note: Some(format!(
                        "The call to {name} was cancelled before it answered ({reason}); nothing was \
                         recorded against {name}."
                    )),
                    route: None,
                    freshness: Freshness::Fresh,
                    state: expeditor.state(entry.id),
                    call_id: crate::telemetry::current_call_id_string(),
                }
            }
        }
    }

    /// A failure recorded through the ticket: the tool's, its server's, or — blamed on the
    /// caller — the model's mistake, never charged (B14).
    fn failed(&self, ticket: Ticket<'_>, name: &str, failure: Failure) -> Reply {
        let error = failure.message().to_owned();
        let result = crate::executor::failed(ticket, None, error, move |_| failure);
        Reply::from_call::<Value, String>(&self.expeditor, name, Err(result))
    }

    /// Whether an `isError` result of `category` is the caller's mistake (B14): as the
    /// tool's overlay says, else its server's, else [`DEFAULT_CALLER_ERRORS`](super::DEFAULT_CALLER_ERRORS).
    fn blames_caller(&self, entry: &Entry, server: &Server, category: FailureCategory) -> bool {
        match self
            .expeditor
            .spec(entry.id)
            .and_then(|s| s.caller_errors())
        {
            Some(categories) => categories.contains(&category),
            None => server.caller_errors.contains(&category),
        }
    }

    /// A probe whose server could not be reached by its health check: not made (R10.1). The
    /// ticket is dropped (nothing charged), the check recorded as UNAVAILABLE, and the
    /// server's outage waits another interval; the model is told the route.
    fn probe_not_made(
        &self,
        ticket: Ticket<'_>,
        name: &str,
        server: &Server,
        reason: String,
    ) -> Reply {
        let expeditor = &self.expeditor;
        let why = format!(
            "its MCP server {} cannot be reached ({reason})",
            server.name
        );
        // While this probe is held, deciding again is a SKIP with the tool's routes; it
        // counts nothing.
        let (route, note) = match expeditor.decide(ticket.tool()) {
            Decision::Skip(skip) => {
                let mut note = skip.for_model();
                note.why.clone_from(&why);
                (Some(skip.route().taken(name)), note)
            }
            _ => (
                None,
                ModelNote {
                    tool: Some(name.to_owned()),
                    asked_for: None,
                    why: why.clone(),
                    instead: format!(
                        "tell the user that the MCP server {} is down and what {name} was needed for.",
                        server.name
                    ),
                    call_id: crate::telemetry::current_call_id_string(),
                },
            ),
        };
        ticket.cancel();
        expeditor.record_server_check(&server.name, Availability::Unavailable(reason));
        expeditor.record_server_probe(&server.name, false);
        refused(
            expeditor,
            name,
            Refusal::new(name, SkipReason::Unavailable, route, note),
        )
    }
}

fn refused(expeditor: &Expeditor, name: &str, refusal: Refusal) -> Reply {
    let state = expeditor.tool(name).and_then(|id| expeditor.state(id));
    crate::telemetry::refused(refusal.reason(), state, || refusal.route());
    Reply::from_call::<Value, String>(expeditor, name, Err(CallError::Refused(refusal)))
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn digest(value: &impl Hash) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}
