//! A guarded toolbox's tools as rig tools (B8; feature `rig`, on `rig-core` 0.44).
//!
//! [`RigTools`] wraps any [`ToolDispatch`] — the guarded handle `#[toolbox(json)]`
//! generates, or your own — and gives rig what it needs, with no per-tool glue: names,
//! descriptions and schemas are declared once, in `#[tool]`.
//!
//! - [`RigTools::tools`]: one [`DynamicTool`] per tool, its [`rig_core::completion::ToolDefinition`]
//!   from [`ToolDispatch::definitions`]; a call runs [`ToolDispatch::dispatch`], the guarded
//!   path: decide, call or route, record.
//! - [`RigTools::index`]: the *offer* as rig's per-request tool list. An agent takes
//!   retrievable tools with an index that picks, for every request, which of them are listed
//!   (`AgentBuilder::retrieved_tools(sample, index, toolset)` in `rig-agent`); the
//!   [`OfferIndex`] picks the tools a model may call now ([`ToolDispatch::offered`]), so an
//!   OPEN or UNAVAILABLE tool is not given to the model, and none is while every tool is
//!   paused. rig asks it before every model call, so the list shrinks the turn after a
//!   circuit opens and grows again when a probe may run. Tools the agent has besides, and
//!   its other indexes, are listed as before.
//!
//! # What the model reads
//!
//! A call's [`Reply`] becomes a [`ToolOutput`] or a [`ToolExecutionError`]
//! ([`to_tool_result`]). rig shows the model `ToolResult::output()` with `is_error` set for
//! anything but a success (`rig_core::transcript::tool_result_output`), and an error's output
//! is its *model output*: for an error built from an arbitrary `std::error::Error`
//! (`ToolExecutionError::from_error`, what a typed tool's `Err` becomes) that is a generic
//! "the tool failed". So the error is built here with the model output set to
//! [`Reply::text`]: on a refusal the note of B7 (why nothing was called, what to use
//! instead), on a failure what failed and that the call must not be repeated now, on a
//! model's own mistake what is wrong and what is offered. A refusal is rig's
//! `ToolExecutionError::refused` (its `denied` disposition); every error says it is not to be
//! retried (`retryable: false`), and its `code` is the refusal's reason or else the outcome,
//! as [`Reply::meta`] names them (`open`, `paused`, …; `failed`, `model_mistake`).
//!
//! ```no_run
//! use agent_circuit_breaker::dispatch::ToolDispatch;
//! use agent_circuit_breaker::rig::RigTools;
//! use rig_agent::{Agent, AgentBuilder, core::{DynModel, operation::Completion}, tool::ToolSet};
//!
//! fn agent(model: DynModel<Completion>, guarded: impl ToolDispatch + 'static) -> Agent {
//!     let tools = RigTools::new(guarded);
//!     AgentBuilder::new(model)
//!         .retrieved_tools(tools.len(), tools.index(), ToolSet::from_dynamic_tools(tools.tools()))
//!         .build()
//! }
//! ```
//!
//! Given to an agent with `AgentBuilder::dynamic_tools(tools.tools())` instead, every tool is
//! listed on every request: still guarded (a call to an OPEN tool is refused with the note),
//! but the model is not told beforehand.
//!
//! The `rig-core` this crate is built against is re-exported as [`rig_core`](mod@rig_core).

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use rig_core::completion::ToolDefinition as RigToolDefinition;
use rig_core::message::ToolName;
use rig_core::tool::{DynamicTool, ToolExecutionError, ToolOutput};
use rig_core::vector_store::request::{Filter, VectorSearchRequest};
use rig_core::vector_store::{
    VectorSearchIdResult, VectorSearchResult, VectorStoreError, VectorStoreIndex,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::dispatch::{Reply, ReplyOutcome, ToolDefinition, ToolDispatch};

/// The `rig-core` this crate is built against, for its tool and agent types.
pub use rig_core;

/// A guarded toolbox as rig tools: [`tools`](Self::tools) to register, [`index`](Self::index)
/// to list only the offered ones (see the [module](self)).
///
/// A clone shares the toolbox.
pub struct RigTools<D> {
    dispatch: Arc<D>,
}

impl<D: ToolDispatch + 'static> RigTools<D> {
    /// Wraps `dispatch`.
    pub fn new(dispatch: D) -> Self {
        Self::shared(Arc::new(dispatch))
    }

    /// Wraps a `dispatch` shared with other adapters (an MCP server, your own loop).
    pub fn shared(dispatch: Arc<D>) -> Self {
        Self { dispatch }
    }

    /// The toolbox behind the tools.
    pub fn dispatch(&self) -> &D {
        &self.dispatch
    }

    /// How many tools the toolbox has: the `sample` to give
    /// `AgentBuilder::retrieved_tools`, so that the whole offer is listed.
    pub fn len(&self) -> usize {
        self.dispatch.definitions().len()
    }

    /// Whether the toolbox has no tool.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every tool as a rig [`DynamicTool`], in capability-map order: its definition from
    /// `#[tool]`, its calls through the guarded path.
    pub fn tools(&self) -> Vec<DynamicTool> {
        self.to_dynamic(&self.dispatch.definitions())
    }

    /// The tools a model may call now, as rig [`DynamicTool`]s: for a request built by hand
    /// (the agent asks the [`index`](Self::index) on every request instead).
    pub fn offered(&self) -> Vec<DynamicTool> {
        self.to_dynamic(&self.dispatch.offered())
    }

    /// The offer as a retrieval index: for every request, the names of the tools a model may
    /// call now (see the [module](self)).
    pub fn index(&self) -> OfferIndex<D> {
        OfferIndex {
            dispatch: Arc::clone(&self.dispatch),
        }
    }

    fn to_dynamic(&self, definitions: &[ToolDefinition]) -> Vec<DynamicTool> {
        definitions
            .iter()
            .filter_map(|definition| self.tool(definition))
            .collect()
    }

    /// One tool as a rig [`DynamicTool`]; `None` for an empty name, which rig refuses.
    fn tool(&self, definition: &ToolDefinition) -> Option<DynamicTool> {
        let rig = to_tool_definition(definition)?;
        let dispatch = Arc::clone(&self.dispatch);
        let name = definition.name.clone();
        Some(DynamicTool::new(
            rig.name,
            rig.description,
            rig.parameters,
            move |arguments| {
                let dispatch = Arc::clone(&dispatch);
                let name = name.clone();
                Box::pin(async move { to_tool_result(&dispatch.dispatch(&name, arguments).await) })
            },
        ))
    }
}

impl<D> Clone for RigTools<D> {
    fn clone(&self) -> Self {
        Self {
            dispatch: Arc::clone(&self.dispatch),
        }
    }
}

impl<D> fmt::Debug for RigTools<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RigTools").finish_non_exhaustive()
    }
}

/// Every tool of `dispatch` as a rig [`DynamicTool`]: `RigTools::new(dispatch).tools()`.
pub fn tools<D: ToolDispatch + 'static>(dispatch: D) -> Vec<DynamicTool> {
    RigTools::new(dispatch).tools()
}

/// The offer as rig's per-request tool list: a [`VectorStoreIndex`] whose answer, whatever
/// the query, is the names of the tools a model may call now, in map order, at most the
/// request's `samples` of them. Made by [`RigTools::index`].
pub struct OfferIndex<D> {
    dispatch: Arc<D>,
}

impl<D: ToolDispatch> OfferIndex<D> {
    /// The definitions offered now, at most `samples` of them.
    fn pick(&self, samples: u64) -> impl Iterator<Item = ToolDefinition> {
        let samples = usize::try_from(samples).unwrap_or(usize::MAX);
        self.dispatch.offered().into_iter().take(samples)
    }
}

impl<D> Clone for OfferIndex<D> {
    fn clone(&self) -> Self {
        Self {
            dispatch: Arc::clone(&self.dispatch),
        }
    }
}

impl<D> fmt::Debug for OfferIndex<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OfferIndex").finish_non_exhaustive()
    }
}

impl<D: ToolDispatch> VectorStoreIndex for OfferIndex<D> {
    type Filter = Filter<Value>;

    /// The offered tools' definitions (name, description, parameters) as the documents.
    fn top_n<T: DeserializeOwned + Send>(
        &self,
        req: VectorSearchRequest<Self::Filter>,
    ) -> impl Future<Output = Result<Vec<VectorSearchResult<T>>, VectorStoreError>> + Send {
        let picked = self
            .pick(req.samples())
            .filter_map(|definition| {
                let rig = to_tool_definition(&definition)?;
                let document = serde_json::to_value(rig).and_then(serde_json::from_value);
                Some(document.map(|document| VectorSearchResult {
                    score: 1.0,
                    id: definition.name,
                    document,
                }))
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(VectorStoreError::from);
        std::future::ready(picked)
    }

    /// The offered tools' names: the ids of the tools rig lists for this request.
    fn top_n_ids(
        &self,
        req: VectorSearchRequest<Self::Filter>,
    ) -> impl Future<Output = Result<Vec<VectorSearchIdResult>, VectorStoreError>> + Send {
        let picked = self
            .pick(req.samples())
            .map(|definition| VectorSearchIdResult {
                score: 1.0,
                id: definition.name,
            })
            .collect();
        std::future::ready(Ok(picked))
    }
}

/// A tool's definition as rig's: name, description, the JSON Schema of its arguments.
/// `None` for an empty name, which rig refuses.
pub fn to_tool_definition(definition: &ToolDefinition) -> Option<RigToolDefinition> {
    Some(RigToolDefinition {
        name: ToolName::new(definition.name.clone()).ok()?,
        description: definition.description.clone(),
        parameters: Value::Object(definition.input_schema.clone()),
    })
}

/// A reply as rig's tool result: an answer is the [`Reply::text`] (the value, then any
/// note); anything else is a [`ToolExecutionError`] whose model output is the
/// [`Reply::text`] — the note the model must read — never rig's generic feedback, marked not
/// to be retried. A refusal is rig's refusal (`ToolExecutionError::refused`).
///
/// # Errors
///
/// Every reply but an answer: a failure, a refusal, a model's own mistake.
pub fn to_tool_result(reply: &Reply) -> Result<ToolOutput, ToolExecutionError> {
    let text = reply.text();
    let meta = reply.meta();
    let code = meta
        .get("refusal")
        .or_else(|| meta.get("outcome"))
        .and_then(Value::as_str)
        .unwrap_or("error")
        .to_owned();
    let error = match &reply.outcome {
        ReplyOutcome::Answered => return Ok(ToolOutput::text(text)),
        ReplyOutcome::Refused { .. } => ToolExecutionError::refused(text),
        ReplyOutcome::Failed { message } => {
            ToolExecutionError::other(message.clone()).with_model_feedback(text)
        }
        ReplyOutcome::Mistake(crate::dispatch::ModelMistake::UnknownTool { .. }) => {
            ToolExecutionError::not_found(text)
        }
        ReplyOutcome::Mistake(_) => ToolExecutionError::invalid_args(text),
    };
    Err(error.with_retryable(false).with_code(code))
}
