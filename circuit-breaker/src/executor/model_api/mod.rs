//! Tools in the shapes the model APIs take (B18): a [`ToolDefinition`] as each API's tool,
//! a model's call read from each API's response ([`ToolCall::from_api`]), and a [`Reply`] as
//! the message that answers the call ([`Reply::to_message`]).
//!
//! The definitions `#[toolbox(json)]` makes are schemars' JSON Schemas (draft 2020-12:
//! `$ref` / `$defs`, `additionalProperties: false`, numeric `format`s such as `double` or
//! `uint32`). Anthropic takes them as they are; OpenAI takes them as they are without strict
//! mode, and in strict mode only in a subset ([`openai`]); Gemini's `parameters` are a subset
//! of OpenAPI 3.0 without references ([`gemini`]). Each conversion is a pure function over
//! `serde_json::Value` that never panics: nesting is bounded, cycles of `$ref` are cut.

mod gemini;
mod openai;
mod walk;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::dispatch::{Reply, ToolDefinition};

/// A model API whose tool shapes this crate speaks (B18): pass it to
/// [`ToolDefinition::to_api`], [`ToolDispatch::definitions_for`] /
/// [`ToolDispatch::offered_for`], [`ToolCall::from_api`] and [`Reply::to_message`].
///
/// [`ToolDispatch::definitions_for`]: super::dispatch::ToolDispatch::definitions_for
/// [`ToolDispatch::offered_for`]: super::dispatch::ToolDispatch::offered_for
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ModelApi {
    /// OpenAI's Chat Completions (`POST /v1/chat/completions`), and the APIs compatible with
    /// it: a tool is `{"type": "function", "function": {name, description, parameters,
    /// strict}}`, a result the message `{"role": "tool", tool_call_id, content}`.
    OpenAiChat,
    /// OpenAI's Responses (`POST /v1/responses`): a tool is `{"type": "function", name,
    /// description, parameters, strict}`, a result the input item
    /// `{"type": "function_call_output", call_id, output}`.
    OpenAiResponses,
    /// Anthropic's Messages (`POST /v1/messages`): a tool is `{name, description,
    /// input_schema}`, a result the content block `{"type": "tool_result", tool_use_id,
    /// content, is_error}` of a `user` message.
    Anthropic,
    /// Google's Gemini (`generateContent`): a tool is a function declaration `{name,
    /// description, parameters}` (put the list in `{"functionDeclarations": [..]}`), a result
    /// the part `{"functionResponse": {id, name, response}}` of a `user` content.
    Gemini,
}

impl ModelApi {
    /// Every API, in the order above.
    pub const ALL: [ModelApi; 4] = [
        ModelApi::OpenAiChat,
        ModelApi::OpenAiResponses,
        ModelApi::Anthropic,
        ModelApi::Gemini,
    ];
}

impl ToolDefinition {
    /// This tool as `api` takes it in a request's tool list (B18):
    ///
    /// - OpenAI (chat and Responses): `parameters` in strict mode (`"strict": true`) when the
    ///   schema fits strict mode's subset — every property required, the optional ones made
    ///   nullable (the dispatcher reads a `null` as the property left out), every object
    ///   closed with `additionalProperties: false`, formats strict mode does not know
    ///   dropped — and the schema as it is with `"strict": false` otherwise (a map, a
    ///   free-form value, a keyword strict mode rejects).
    /// - Anthropic: `input_schema` as it is.
    /// - Gemini: `parameters` in Gemini's OpenAPI subset: `$ref`s inlined (a cycle cut),
    ///   no `additionalProperties`, `nullable` for optional types, formats Gemini does not
    ///   take mapped (`uint32` → `int64`) or dropped, values a schema cannot say moved into
    ///   the description; left out for a tool without parameters, as Gemini asks.
    ///
    /// Never panics: a hostile schema (deep, cyclic, malformed) gives a bounded, best-effort
    /// answer that the API may refuse.
    pub fn to_api(&self, api: ModelApi) -> Value {
        let mut tool = Map::new();
        match api {
            ModelApi::OpenAiChat | ModelApi::OpenAiResponses => {
                let (parameters, strict) = openai::parameters(&self.input_schema);
                let mut function = Map::new();
                function.insert("name".into(), self.name.clone().into());
                function.insert("description".into(), self.description.clone().into());
                function.insert("parameters".into(), parameters);
                function.insert("strict".into(), strict.into());
                tool.insert("type".into(), "function".into());
                if api == ModelApi::OpenAiChat {
                    tool.insert("function".into(), Value::Object(function));
                } else {
                    tool.extend(function);
                }
            }
            ModelApi::Anthropic => {
                tool.insert("name".into(), self.name.clone().into());
                tool.insert("description".into(), self.description.clone().into());
                tool.insert(
                    "input_schema".into(),
                    walk::bounded_copy(&Value::Object(self.input_schema.clone())),
                );
            }
            ModelApi::Gemini => {
                tool.insert("name".into(), self.name.clone().into());
                tool.insert("description".into(), self.description.clone().into());
                if let Some(parameters) = gemini::parameters(&self.input_schema) {
                    tool.insert("parameters".into(), parameters);
                }
            }
        }
        Value::Object(tool)
    }
}

/// A tool call a model asked for (B18): the model's id for it, the tool's name, the
/// arguments. Read one from a response with [`from_api`](Self::from_api), make the call with
/// [`ToolDispatch::dispatch_call`](super::dispatch::ToolDispatch::dispatch_call), answer it
/// with [`Reply::to_message`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The model's id for the call (empty when the API gave none: Gemini's may not).
    pub id: String,
    /// The tool's name, as the model spelt it.
    pub name: String,
    /// The arguments, as JSON.
    pub arguments: Value,
}

impl ToolCall {
    /// A call of `name` with `arguments`, given the model's id `id`.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }

    /// The call in `value`, an item of `api`'s response, if it is one:
    ///
    /// - OpenAI chat: an item of `choices[].message.tool_calls` (`{id, "type": "function",
    ///   "function": {name, arguments}}`);
    /// - OpenAI Responses: an `output` item `{"type": "function_call", call_id, name,
    ///   arguments}`;
    /// - Anthropic: a `content` block `{"type": "tool_use", id, name, input}`;
    /// - Gemini: a part `{"functionCall": {id, name, args}}` (or the `functionCall` itself).
    ///
    /// OpenAI sends the arguments as a JSON string: it is parsed, and arguments that are not
    /// JSON are kept as the string, so that the call is answered as the model's mistake
    /// rather than lost. `None` for anything else (a text block, a message).
    pub fn from_api(api: ModelApi, value: &Value) -> Option<ToolCall> {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        let encoded = |v: Option<&Value>| match v {
            Some(Value::String(s)) => serde_json::from_str(s).unwrap_or_else(|_| s.clone().into()),
            Some(other) => other.clone(),
            None => Value::Null,
        };
        match api {
            ModelApi::OpenAiChat => {
                let function = value.get("function")?;
                if value.get("type").is_some_and(|t| t != "function") {
                    return None;
                }
                Some(ToolCall {
                    id: text(value.get("id")).unwrap_or_default(),
                    name: text(function.get("name"))?,
                    arguments: encoded(function.get("arguments")),
                })
            }
            ModelApi::OpenAiResponses => {
                if value.get("type")? != "function_call" {
                    return None;
                }
                Some(ToolCall {
                    id: text(value.get("call_id")).unwrap_or_default(),
                    name: text(value.get("name"))?,
                    arguments: encoded(value.get("arguments")),
                })
            }
            ModelApi::Anthropic => {
                if value.get("type")? != "tool_use" {
                    return None;
                }
                Some(ToolCall {
                    id: text(value.get("id")).unwrap_or_default(),
                    name: text(value.get("name"))?,
                    arguments: value.get("input").cloned().unwrap_or(Value::Null),
                })
            }
            ModelApi::Gemini => {
                let call = value.get("functionCall").unwrap_or(value);
                Some(ToolCall {
                    id: text(call.get("id")).unwrap_or_default(),
                    name: text(call.get("name"))?,
                    arguments: call.get("args").cloned().unwrap_or(Value::Null),
                })
            }
        }
    }
}

impl Reply {
    /// The message that answers the call in `api`'s shape (B18), with [`text`](Self::text)
    /// (the value, then the note) as its content, for the call [`call_id`](Self::call_id):
    ///
    /// - OpenAI chat: `{"role": "tool", "tool_call_id", "content"}`;
    /// - OpenAI Responses: `{"type": "function_call_output", "call_id", "output"}`;
    /// - Anthropic: `{"type": "tool_result", "tool_use_id", "content", "is_error"}`, a block
    ///   of the next `user` message's content;
    /// - Gemini: `{"functionResponse": {"id", "name", "response": {"output"}}}` (`"error"`
    ///   instead of `"output"` when [`is_error`](Self::is_error)), a part of the next `user`
    ///   content; `id` only when the call had one.
    ///
    /// A reply made without the model's id (`call(name, arguments)` outside
    /// [`with_call_id`](crate::telemetry::with_call_id)) answers with an empty id, which
    /// OpenAI and Anthropic refuse: make the call with
    /// [`dispatch_call`](super::dispatch::ToolDispatch::dispatch_call), or set `call_id`.
    pub fn to_message(&self, api: ModelApi) -> Value {
        let id = self.call_id.clone().unwrap_or_default();
        let text = self.text();
        let mut message = Map::new();
        match api {
            ModelApi::OpenAiChat => {
                message.insert("role".into(), "tool".into());
                message.insert("tool_call_id".into(), id.into());
                message.insert("content".into(), text.into());
            }
            ModelApi::OpenAiResponses => {
                message.insert("type".into(), "function_call_output".into());
                message.insert("call_id".into(), id.into());
                message.insert("output".into(), text.into());
            }
            ModelApi::Anthropic => {
                message.insert("type".into(), "tool_result".into());
                message.insert("tool_use_id".into(), id.into());
                message.insert("content".into(), text.into());
                message.insert("is_error".into(), self.is_error().into());
            }
            ModelApi::Gemini => {
                // Gemini reads `output` as the function's answer and `error` as its failure.
                let key = if self.is_error() { "error" } else { "output" };
                let mut response = Map::new();
                response.insert(key.into(), text.into());
                let mut function = Map::new();
                if !id.is_empty() {
                    function.insert("id".into(), id.into());
                }
                function.insert("name".into(), self.tool.clone().into());
                function.insert("response".into(), Value::Object(response));
                message.insert("functionResponse".into(), Value::Object(function));
            }
        }
        Value::Object(message)
    }
}
