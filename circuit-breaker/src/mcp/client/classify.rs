//! What a call came back with, classified (B10, B14): a value, the tool's own failure, the
//! server unreachable, the model's mistake, or a cancellation; and the retry-after hint a
//! failure may carry (B13).

use std::time::Duration;

use rmcp::ServiceError;
use rmcp::model::{CallToolResult, ContentBlock, ErrorCode};
use serde_json::Value;

use super::connect::Server;
use crate::{Failure, FailureCategory};

/// What a call came back with.
pub(super) enum Outcome {
    Answered(Value),
    Failed(Failure),
    /// The tool's own `isError` result: whose it is, the overlay says (B14).
    Reported(Failure),
    /// The server says the arguments (or the name) are the model's mistake: -32602.
    Mistake(String),
    /// The call was cancelled before it answered.
    Cancelled(String),
}

impl Server {
    /// What a call's JSON-RPC error says: the server unreachable (unless the connection was
    /// replaced while the call was in flight), the model's mistake (`-32602`), the tool's
    /// failure, or a cancellation.
    pub(super) fn classify_error(
        &self,
        tool: &str,
        error: ServiceError,
        generation: u64,
    ) -> Outcome {
        match error {
            ServiceError::TransportClosed | ServiceError::TransportSend(_)
                if self.generation() != generation =>
            {
                // Cut by a reconnect made while it was in flight: not this server's
                // outage (the new connection is up), and not the tool's failure.
                Outcome::Cancelled(
                    "the connection was replaced while the call was in flight".to_owned(),
                )
            }
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                self.mark_broken(generation);
                Outcome::Failed(self.unreachable(&error.to_string()))
            }
            ServiceError::Timeout { .. } => Outcome::Failed(Failure::with_category(
                format!("{tool} on MCP server {}: {error}", self.name),
                FailureCategory::Timeout,
            )),
            ServiceError::McpError(data) if data.code == ErrorCode::INVALID_PARAMS => {
                Outcome::Mistake(data.message.into_owned())
            }
            ServiceError::McpError(data) => {
                let failure = Failure::with_category(
                    format!("{} (JSON-RPC error {})", data.message, data.code.0),
                    FailureCategory::Other,
                );
                Outcome::Failed(with_hint(failure, data.data.as_ref()))
            }
            ServiceError::Cancelled { reason } => {
                Outcome::Cancelled(reason.unwrap_or_else(|| "the request was cancelled".to_owned()))
            }
            other => Outcome::Failed(Failure::with_category(
                other.to_string(),
                FailureCategory::Other,
            )),
        }
    }
}

/// The text contents of a result, one per line.
fn texts(content: &[ContentBlock]) -> Option<String> {
    let mut parts = content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()));
    let first = parts.next()?;
    let mut text = first.to_owned();
    for part in parts {
        text.push('\n');
        text.push_str(part);
    }
    Some(text)
}

/// A successful result's value: its structured content, else its text (JSON when it parses,
/// else a string), else (images, resources) its content blocks as JSON.
fn value_of(result: &CallToolResult) -> Value {
    match &result.structured_content {
        Some(value) => value.clone(),
        None => unstructured_value(result),
    }
}

/// [`value_of`], taking the structured content rather than copying it.
pub(super) fn into_value(result: CallToolResult) -> Value {
    match result.structured_content {
        Some(value) => value,
        None => unstructured_value(&result),
    }
}

fn unstructured_value(result: &CallToolResult) -> Value {
    let only_text = result.content.iter().all(|c| c.as_text().is_some());
    match texts(&result.content) {
        Some(text) if only_text => serde_json::from_str(&text).unwrap_or(Value::String(text)),
        _ if result.content.is_empty() => Value::Null,
        _ => serde_json::to_value(&result.content).unwrap_or(Value::Null),
    }
}

pub(super) fn classify_result(result: &CallToolResult) -> Outcome {
    if result.is_error != Some(true) {
        return Outcome::Answered(value_of(result));
    }
    let meta = |key: &str| {
        result
            .meta
            .as_ref()
            .and_then(|m| m.0.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    // A server built with this crate gives the tool's own message apart from its note
    // (`_meta.error`), and says when the arguments were the model's mistake.
    let message = meta("error")
        .filter(|m| !m.trim().is_empty())
        .or_else(|| texts(&result.content).filter(|t| !t.trim().is_empty()))
        .or_else(|| result.structured_content.as_ref().map(Value::to_string))
        .unwrap_or_else(|| "the tool reported an error without a message".to_owned());
    let mistake = meta("outcome").as_deref() == Some("model_mistake");
    if mistake {
        Outcome::Mistake(message)
    } else {
        let hint = result
            .meta
            .as_ref()
            .map(|m| Value::Object(m.0.clone()))
            .or_else(|| result.structured_content.clone());
        Outcome::Reported(with_hint(Failure::new(message), hint.as_ref()))
    }
}

/// `failure` with the retry-after hint an MCP server gave, if it gave one (B13). MCP has no
/// standard field for it; these are read from an error's `data` or a result's `_meta` (or
/// structured content): `retryAfter` / `retry_after` in seconds (a number, or the text of an
/// HTTP `Retry-After`: seconds or an HTTP-date), `retryAfterMs` / `retry_after_ms` in
/// milliseconds. Anything negative, not finite or unreadable is no hint; a huge one is bounded
/// by the policy's cool-down cap where it is used.
fn with_hint(failure: Failure, data: Option<&Value>) -> Failure {
    match data.and_then(retry_hint) {
        Some(hint) => failure.with_retry_after(hint),
        None => failure,
    }
}

fn retry_hint(data: &Value) -> Option<Duration> {
    let object = data.as_object()?;
    let number = |value: &Value, unit: f64| {
        let n = value.as_f64()? * unit;
        // Up to a year: beyond that it is no hint a policy would take anyway.
        (n.is_finite() && n >= 0.0).then(|| Duration::from_secs_f64(n.min(3.2e10)))
    };
    for key in ["retryAfterMs", "retry_after_ms"] {
        if let Some(value) = object.get(key) {
            return number(value, 0.001);
        }
    }
    for key in ["retryAfter", "retry_after"] {
        match object.get(key) {
            Some(Value::String(text)) => {
                let now = crate::clock::Timestamp::from_system_time(std::time::SystemTime::now());
                return crate::failure::parse_retry_after(text, now);
            }
            Some(value) => return number(value, 1.0),
            None => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn retry_hints_are_read_bounded_and_never_trusted_raw() {
        let hint = |data: Value| retry_hint(&data);
        assert_eq!(
            hint(json!({ "retryAfter": 120 })),
            Some(Duration::from_mins(2))
        );
        assert_eq!(
            hint(json!({ "retry_after": "30" })),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            hint(json!({ "retryAfterMs": 1500 })),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            hint(json!({ "retryAfter": 2.5 })),
            Some(Duration::from_millis(2500))
        );
        for junk in [
            json!({ "retryAfter": -5 }),
            json!({ "retryAfter": "soon" }),
            json!({ "retryAfter": "-1" }),
            json!({ "retryAfter": null }),
            json!({ "retryAfter": [1] }),
            json!({ "retry_after_ms": "1e400" }),
            json!("retryAfter"),
            json!(42),
        ] {
            assert_eq!(hint(junk.clone()), None, "{junk}");
        }
        // Absurd but readable: kept as a hint, bounded (here to a year; the policy's cap
        // bounds it far below).
        let huge = hint(json!({ "retryAfter": 1e300 })).unwrap();
        assert!(huge <= Duration::from_secs(32_000_000_000));
        let failure = with_hint(
            Failure::new("rate limited"),
            Some(&json!({ "retryAfter": 1e300 })),
        );
        assert!(failure.retry_after().is_some());
    }
}
