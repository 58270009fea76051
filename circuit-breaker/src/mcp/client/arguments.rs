//! A model's arguments checked against a foreign tool's input schema before any call: JSON
//! Schema 2020-12 (or the draft the schema names in `$schema`), by the `jsonschema` crate,
//! compiled once when the tool is listed. Arguments that do not fit are the model's mistake,
//! answered with the keyword that failed and where, never sent to the server.
//!
//! What a server sends is not trusted to compile: a schema that does not (an invalid
//! `pattern`, a `$ref` to another document, which is never fetched, an invalid schema, one
//! nested too deep to compile safely) leaves the tool offered, its arguments checked only as
//! an object, and the server to judge them; it is logged once, when listed.

use std::fmt::{self, Write as _};
use std::sync::Arc;

use jsonschema::error::ValidationErrorKind;
use serde_json::{Map, Value};

use crate::capability::did_you_mean;

/// How deep a schema may nest and still be compiled: deeper ones are not (compiling recurses,
/// and no tool's arguments need more).
const MAX_DEPTH: usize = 64;

/// How long a note on bad arguments may be, in characters: a model reads it.
const MAX_NOTE: usize = 300;

/// A tool's compiled input schema; `None` where it did not compile.
#[derive(Clone, Default)]
pub(super) struct ArgumentCheck {
    validator: Option<Arc<jsonschema::Validator>>,
    /// The top level's property names, for "did you mean" on an unknown argument.
    properties: Arc<[String]>,
}

impl fmt::Debug for ArgumentCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArgumentCheck")
            .field("compiled", &self.validator.is_some())
            .field("properties", &self.properties)
            .finish()
    }
}

impl ArgumentCheck {
    /// Compiles `schema` (a listed tool's input schema, as shown to the model) offline, with
    /// `format` an annotation only, as 2020-12 has it.
    pub(super) fn compile(server: &str, tool: &str, schema: &Map<String, Value>) -> Self {
        let schema = Value::Object(schema.clone());
        if depth(&schema) > MAX_DEPTH {
            tracing::warn!(
                server,
                tool,
                "an input schema nested deeper than {MAX_DEPTH} levels: its arguments are checked only as an object"
            );
            return Self::default();
        }
        let built = jsonschema::options()
            .offline()
            .should_validate_formats(false)
            .build(&schema);
        match built {
            Ok(validator) => ArgumentCheck {
                validator: Some(Arc::new(validator)),
                properties: schema
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|p| p.keys().cloned().collect())
                    .unwrap_or_default(),
            },
            Err(error) => {
                let error = clip(&error.to_string(), MAX_NOTE);
                tracing::warn!(server, tool, %error, "an input schema that does not compile: its arguments are checked only as an object");
                Self::default()
            }
        }
    }

    /// Whether `arguments` fit the schema; else what the model got wrong: the first keyword
    /// that failed, where, and how many more did.
    pub(super) fn check(&self, instance: &Value) -> Result<(), String> {
        let Some(validator) = &self.validator else {
            return Ok(());
        };
        // Arguments that fit, the common case, are only tested: collecting errors builds
        // each one's path and message.
        if validator.is_valid(instance) {
            return Ok(());
        }
        let mut errors: Vec<_> = validator.iter_errors(instance).collect();
        if errors.is_empty() {
            return Ok(());
        }
        // An unknown argument first: it is often the misspelling of a missing one.
        let unknown = errors.iter().position(|e| {
            matches!(e.kind(), ValidationErrorKind::AdditionalProperties { .. })
                && e.instance_path().to_string().is_empty()
        });
        let first = errors.swap_remove(unknown.unwrap_or(0));
        let more = errors.len();
        let path = first.instance_path().to_string();
        let mut note = String::new();
        if !path.is_empty() {
            let _ = write!(note, "at `{path}`: ");
        }
        let _ = write!(
            note,
            "{} (keyword `{}`)",
            clip(&first.to_string(), MAX_NOTE),
            first.kind().keyword()
        );
        if let ValidationErrorKind::AdditionalProperties { unexpected } = first.kind()
            && path.is_empty()
            && let Some(unknown) = unexpected.first()
            && let Some(known) = did_you_mean(unknown, self.properties.iter().map(String::as_str))
        {
            let _ = write!(note, "; did you mean `{known}`?");
        }
        if more > 0 {
            let _ = write!(
                note,
                "; {more} more problem{}",
                if more == 1 { "" } else { "s" }
            );
        }
        Err(note)
    }
}

/// How deeply `value` nests arrays and objects.
fn depth(value: &Value) -> usize {
    // Iterative: the schema itself may be the deep thing.
    let mut deepest = 0;
    let mut stack = vec![(value, 1_usize)];
    while let Some((value, level)) = stack.pop() {
        deepest = deepest.max(level);
        if level > MAX_DEPTH {
            break;
        }
        match value {
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, level + 1))),
            Value::Object(map) => stack.extend(map.values().map(|v| (v, level + 1))),
            _ => {}
        }
    }
    deepest
}

/// `text` cut to `max` characters, with an ellipsis when cut.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
