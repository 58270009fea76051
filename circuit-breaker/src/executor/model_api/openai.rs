//! A tool's arguments schema for OpenAI's function calling: in strict mode where the schema
//! fits strict mode's subset, as it is otherwise.
//!
//! Strict mode (Structured Outputs) takes a subset of JSON Schema, as
//! <https://platform.openai.com/docs/guides/structured-outputs#supported-schemas> lists it: the
//! root an object; every object closed (`additionalProperties: false`) with every property
//! required, an optional one made nullable instead; `anyOf` (not `oneOf`, `allOf`, `not`,
//! `if`); `$ref` to `$defs` (recursion allowed), but not beside other keywords; for strings
//! `pattern` and a few `format`s, for numbers the bounds and `multipleOf`, for arrays
//! `minItems` / `maxItems`; at most 10 levels of nested objects, 5,000 properties, 1,000 enum
//! values and 120,000 characters of names and values. A schema outside it goes as it is, with
//! `"strict": false`.

use serde_json::{Map, Value};

use super::walk::{self, MAX_DEPTH, MAX_NODES};

/// The string formats strict mode takes.
const FORMATS: [&str; 9] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Keywords strict mode takes as they are.
const KEPT: [&str; 9] = [
    "description",
    "pattern",
    "multipleOf",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
];

/// Annotations strict mode does not take and that change nothing a call may send, dropped:
/// `default` (every property is sent in strict mode), titles, examples, comments. And
/// `uniqueItems`: the set types that declare it drop repeated items as they decode.
const DROPPED: [&str; 11] = [
    "title",
    "default",
    "examples",
    "example",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$schema",
    "$id",
    "uniqueItems",
];

/// The limits of strict mode.
const MAX_OBJECT_NESTING: usize = 10;
const MAX_PROPERTIES: usize = 5_000;
const MAX_ENUM_VALUES: usize = 1_000;
const MAX_TEXT: usize = 120_000;

/// The parameters to send, and whether they are strict.
pub(super) fn parameters(schema: &Map<String, Value>) -> (Value, bool) {
    match strict(schema) {
        Some(strict) => (Value::Object(strict), true),
        None => (walk::bounded_copy(&Value::Object(schema.clone())), false),
    }
}

/// `schema` in strict mode's subset, or `None` when it does not fit.
fn strict(schema: &Map<String, Value>) -> Option<Map<String, Value>> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    let mut walker = Strict {
        root: schema,
        inlining: Vec::new(),
        nodes: 0,
        properties: 0,
        enum_values: 0,
        text: 0,
    };
    let mut out = walker.object_node(schema, 0, 0)?;
    for container in ["$defs", "definitions"] {
        if let Some(defs) = schema.get(container) {
            let Value::Object(defs) = defs else {
                return None;
            };
            let mut converted = Map::new();
            for (name, def) in defs {
                walker.text = walker.text.saturating_add(name.len());
                converted.insert(name.clone(), Value::Object(walker.node(def, 1, 0)?));
            }
            out.insert(container.into(), Value::Object(converted));
        }
    }
    let within = walker.properties <= MAX_PROPERTIES
        && walker.enum_values <= MAX_ENUM_VALUES
        && walker.text <= MAX_TEXT;
    within.then_some(out)
}

struct Strict<'a> {
    root: &'a Map<String, Value>,
    /// The references being inlined (a `$ref` with keywords beside it), to cut a cycle.
    inlining: Vec<String>,
    /// The schemas made so far, bounded (see `walk::MAX_NODES`).
    nodes: usize,
    properties: usize,
    enum_values: usize,
    text: usize,
}

impl Strict<'_> {
    /// One schema in strict form. `depth` bounds the walk, `objects` counts the objects
    /// around it.
    fn node(&mut self, value: &Value, depth: usize, objects: usize) -> Option<Map<String, Value>> {
        match value {
            Value::Object(map) => self.object_node(map, depth, objects),
            // `true` (any value) and `false` have no strict form.
            _ => None,
        }
    }

    fn object_node(
        &mut self,
        map: &Map<String, Value>,
        depth: usize,
        objects: usize,
    ) -> Option<Map<String, Value>> {
        self.nodes = self.nodes.saturating_add(1);
        if depth > MAX_DEPTH || self.nodes > MAX_NODES {
            return None;
        }
        if let Some(reference) = map.get("$ref") {
            return self.reference(reference.as_str()?, map, depth, objects);
        }
        if let Some(Value::Array(all)) = map.get("allOf") {
            // One schema in `allOf` is that schema (what some derives make of a doc comment
            // on a reference); more have no strict form.
            let [only] = all.as_slice() else {
                return None;
            };
            let mut merged = walk::merged(only, map);
            merged.remove("allOf");
            return self.object_node(&merged, depth + 1, objects);
        }
        let mut out = Map::new();
        let mut typed = false;
        for (key, value) in map {
            match key.as_str() {
                "type" => {
                    typed = true;
                    out.insert(key.clone(), types(value)?);
                }
                "properties"
                | "required"
                | "additionalProperties"
                | "$defs"
                | "definitions"
                | "items" => {}
                "anyOf" | "oneOf" => {
                    typed = true;
                    let Value::Array(branches) = value else {
                        return None;
                    };
                    let mut converted = Vec::with_capacity(branches.len());
                    for branch in branches {
                        converted.push(Value::Object(self.node(branch, depth + 1, objects)?));
                    }
                    out.insert("anyOf".into(), Value::Array(converted));
                }
                "format" => {
                    // A format strict mode does not know (`double`, `uint32`, ..) only
                    // annotates the type: dropped.
                    if let Some(format) = value.as_str()
                        && FORMATS.contains(&format)
                        && map.get("type").and_then(Value::as_str) == Some("string")
                    {
                        out.insert(key.clone(), value.clone());
                    }
                }
                "enum" => {
                    typed = true;
                    let Value::Array(values) = value else {
                        return None;
                    };
                    self.enum_values = self.enum_values.saturating_add(values.len());
                    self.text = values
                        .iter()
                        .filter_map(Value::as_str)
                        .fold(self.text, |n, s| n.saturating_add(s.len()));
                    out.insert(key.clone(), value.clone());
                }
                "const" => {
                    // Said as the one value of an `enum`, which strict mode lists among the
                    // keywords it takes.
                    typed = true;
                    if let Some(s) = value.as_str() {
                        self.text = self.text.saturating_add(s.len());
                    }
                    self.enum_values = self.enum_values.saturating_add(1);
                    if !map.contains_key("enum") {
                        out.insert("enum".into(), Value::Array(vec![value.clone()]));
                    }
                }
                key if KEPT.contains(&key) => {
                    out.insert(key.to_owned(), value.clone());
                }
                key if DROPPED.contains(&key) => {}
                // Anything else (`patternProperties`, `not`, `if`, `prefixItems`,
                // `minLength`, a vendor's extension, ..) has no strict form.
                _ => return None,
            }
        }
        if !typed {
            // No type, no choice, no values: any value, which strict mode cannot say.
            return None;
        }
        let is = |t: &str| match map.get("type") {
            Some(Value::String(s)) => s == t,
            Some(Value::Array(ts)) => ts.iter().any(|x| x == t),
            _ => false,
        };
        if is("object") || map.contains_key("properties") {
            self.object(map, &mut out, depth, objects + 1)?;
        } else if map.contains_key("additionalProperties") {
            return None;
        }
        if is("array") {
            out.insert(
                "items".into(),
                Value::Object(self.node(map.get("items")?, depth + 1, objects)?),
            );
        } else if map.contains_key("items") {
            return None;
        }
        Some(out)
    }

    /// An object's properties, all required, the optional ones nullable; closed.
    fn object(
        &mut self,
        map: &Map<String, Value>,
        out: &mut Map<String, Value>,
        depth: usize,
        objects: usize,
    ) -> Option<()> {
        if objects > MAX_OBJECT_NESTING {
            return None;
        }
        match map.get("additionalProperties") {
            None | Some(Value::Bool(false)) => {}
            // A map's values, or any key: no strict form.
            Some(_) => return None,
        }
        let empty = Map::new();
        let properties = match map.get("properties") {
            Some(Value::Object(properties)) => properties,
            // An object that lists no properties and does not close itself takes any key.
            None if map.get("additionalProperties") == Some(&Value::Bool(false)) => &empty,
            _ => return None,
        };
        let required: Vec<&str> = match map.get("required") {
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            None => Vec::new(),
            Some(_) => return None,
        };
        let mut converted = Map::new();
        for (name, schema) in properties {
            self.properties = self.properties.saturating_add(1);
            self.text = self.text.saturating_add(name.len());
            let mut schema = self.node(schema, depth + 1, objects)?;
            if !required.contains(&name.as_str()) {
                schema = nullable(schema);
            }
            converted.insert(name.clone(), Value::Object(schema));
        }
        let names = converted.keys().cloned().map(Value::String).collect();
        out.insert("properties".into(), Value::Object(converted));
        out.insert("required".into(), Value::Array(names));
        out.insert("additionalProperties".into(), Value::Bool(false));
        Some(())
    }

    /// A `$ref`: kept alone; inlined when other keywords stand beside it, which strict mode
    /// refuses.
    fn reference(
        &mut self,
        reference: &str,
        map: &Map<String, Value>,
        depth: usize,
        objects: usize,
    ) -> Option<Map<String, Value>> {
        let referent = if walk::is_root(reference) {
            None
        } else {
            Some(walk::resolve(self.root, reference)?)
        };
        let siblings = map
            .keys()
            .any(|k| k != "$ref" && !DROPPED.contains(&k.as_str()));
        if !siblings {
            let mut out = Map::new();
            out.insert("$ref".into(), reference.into());
            return Some(out);
        }
        if self.inlining.iter().any(|r| r == reference) {
            return None;
        }
        let referent = match referent {
            Some(referent) => referent.as_object()?,
            None => self.root,
        };
        // Copying what the reference names is work too: counted against the bound.
        let cost = referent
            .values()
            .map(|v| walk::size_within(v, MAX_NODES))
            .fold(1, usize::saturating_add);
        self.nodes = self.nodes.saturating_add(cost);
        if self.nodes > MAX_NODES {
            return None;
        }
        let merged = walk::merged_map(referent, map);
        self.inlining.push(reference.to_owned());
        let out = self.object_node(&merged, depth + 1, objects);
        self.inlining.pop();
        out
    }
}

/// `type` as strict mode takes it: one of JSON Schema's types, or a list of them.
fn types(value: &Value) -> Option<Value> {
    const TYPES: [&str; 7] = [
        "string", "number", "integer", "boolean", "object", "array", "null",
    ];
    match value {
        Value::String(t) if TYPES.contains(&t.as_str()) => Some(value.clone()),
        Value::Array(ts)
            if !ts.is_empty()
                && ts
                    .iter()
                    .all(|t| t.as_str().is_some_and(|t| TYPES.contains(&t))) =>
        {
            Some(value.clone())
        }
        _ => None,
    }
}

/// Whether `schema` already admits `null`.
fn admits_null(schema: &Map<String, Value>) -> bool {
    let null = Value::String("null".into());
    match schema.get("type") {
        Some(Value::String(t)) if t == "null" => return true,
        Some(Value::Array(ts)) if ts.contains(&null) => return true,
        _ => {}
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        return values.contains(&Value::Null);
    }
    if let Some(value) = schema.get("const") {
        return value.is_null();
    }
    if let Some(Value::Array(branches)) = schema.get("anyOf") {
        return branches
            .iter()
            .any(|b| b.as_object().is_some_and(admits_null));
    }
    false
}

/// `schema`, admitting `null` too: the form strict mode gives a property that may be left
/// out.
fn nullable(mut schema: Map<String, Value>) -> Map<String, Value> {
    if admits_null(&schema) {
        return schema;
    }
    let values = schema.contains_key("enum") || schema.contains_key("const");
    match schema.get_mut("type") {
        Some(Value::String(t)) if !values => {
            let t = std::mem::take(t);
            schema.insert("type".into(), Value::Array(vec![t.into(), "null".into()]));
            schema
        }
        Some(Value::Array(ts)) if !values => {
            ts.push("null".into());
            schema
        }
        _ => {
            let mut null = Map::new();
            null.insert("type".into(), "null".into());
            let mut out = Map::new();
            out.insert(
                "anyOf".into(),
                Value::Array(vec![Value::Object(schema), Value::Object(null)]),
            );
            out
        }
    }
}
