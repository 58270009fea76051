//! A tool's arguments schema as Gemini's `parameters`: the subset of OpenAPI 3.0 its
//! `Schema` object is (<https://ai.google.dev/api/caching#Schema>).
//!
//! The fields it has: `type` (one of `STRING`, `NUMBER`, `INTEGER`, `BOOLEAN`, `ARRAY`,
//! `OBJECT`), `format`, `title`, `description`, `nullable`, `enum` (strings), `items`,
//! `minItems`, `maxItems`, `properties`, `required`, `minProperties`, `maxProperties`,
//! `minLength`, `maxLength`, `pattern`, `example`, `anyOf`, `default`, `minimum`, `maximum`.
//! No references, no `additionalProperties`, no `oneOf` / `allOf` / `const`, no list of
//! types; the formats it takes are `float` and `double` for a number, `int32` and `int64` for
//! an integer, `enum` and `date-time` for a string. An object needs properties, and a tool
//! without parameters gives none (Gemini refuses an object with no properties).
//!
//! So: a `$ref` is replaced by what it names (a cycle is cut, the value there taken as JSON
//! text); `oneOf` is `anyOf`, a `null` among the choices or types is `nullable`; a choice of
//! string constants is a string `enum`; `allOf` is merged; an integer format is mapped to the
//! nearest one that holds it (`uint32` → `int64`) or dropped; values a schema here cannot say
//! (an `enum` of numbers, an exclusive bound) are said in the description; a map or a value of
//! any type is taken as JSON text.

use serde_json::{Map, Value};

use super::walk::{self, MAX_DEPTH, MAX_NODES};

/// Gemini's `parameters` for `schema`, or `None` for a tool without parameters.
pub(super) fn parameters(schema: &Map<String, Value>) -> Option<Value> {
    let mut walker = Gemini {
        root: schema,
        stack: Vec::new(),
        nodes: 0,
    };
    let out = walker.object_node(schema, 0);
    let has_properties = out
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    let is_object = out.get("type").and_then(Value::as_str) == Some("OBJECT");
    (is_object && has_properties).then_some(Value::Object(out))
}

struct Gemini<'a> {
    root: &'a Map<String, Value>,
    /// The references being replaced, to cut a cycle.
    stack: Vec<String>,
    /// The schemas made so far, bounded: references that fan out without a cycle could
    /// otherwise make a number of them exponential in their count.
    nodes: usize,
}

impl Gemini<'_> {
    fn node(&mut self, value: &Value, depth: usize) -> Map<String, Value> {
        match value {
            Value::Object(map) => self.object_node(map, depth),
            // `true`: any value; `false`: none, which a call cannot send anyway.
            _ => any(None),
        }
    }

    fn object_node(&mut self, map: &Map<String, Value>, depth: usize) -> Map<String, Value> {
        self.nodes = self.nodes.saturating_add(1);
        if depth > MAX_DEPTH || self.nodes > MAX_NODES {
            return cut(map);
        }
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            return self.reference(reference, map, depth);
        }
        if let Some(Value::Array(all)) = map.get("allOf") {
            let mut merged = map.clone();
            merged.remove("allOf");
            let root = self.root;
            for branch in all {
                let branch = match branch {
                    Value::Object(b) => match b.get("$ref").and_then(Value::as_str) {
                        Some(r) => resolved(root, r),
                        None => Some(b),
                    },
                    _ => None,
                };
                if let Some(branch) = branch {
                    self.nodes = self.nodes.saturating_add(copy_cost(branch));
                    merge_into(&mut merged, branch);
                }
            }
            return self.object_node(&merged, depth + 1);
        }
        if let Some(Value::Array(branches)) = map.get("anyOf").or_else(|| map.get("oneOf")) {
            return self.choice(map, branches, depth);
        }
        let (kind, mut nullable) = match map.get("type") {
            Some(Value::String(t)) => (Some(t.as_str()), false),
            Some(Value::Array(ts)) => {
                let named: Vec<&str> = ts.iter().filter_map(Value::as_str).collect();
                let nullable = named.contains(&"null");
                let rest: Vec<&str> = named.into_iter().filter(|t| *t != "null").collect();
                match rest.as_slice() {
                    [] => (None, nullable),
                    [one] => (Some(*one), nullable),
                    several => return several_types(map, several, nullable),
                }
            }
            _ => (None, false),
        };
        let kind = kind.or_else(|| infer(map));
        let mut out = Map::new();
        let Some(kind) = kind.and_then(gemini_type) else {
            return any(description(map));
        };
        out.insert("type".into(), kind.into());
        let (mut notes, keyword_nullable) = keywords(map, kind, &mut out);
        nullable |= keyword_nullable;
        nullable |= values(map, kind, &mut out, &mut notes);
        match kind {
            "OBJECT" => {
                let properties = self.properties(map, depth);
                if properties.is_empty() {
                    // A map, or an object with any keys: no form here (an OBJECT needs its
                    // properties), so taken as JSON text.
                    return any(description(map));
                }
                let required: Vec<Value> = match map.get("required") {
                    Some(Value::Array(names)) => names
                        .iter()
                        .filter(|n| n.as_str().is_some_and(|n| properties.contains_key(n)))
                        .cloned()
                        .collect(),
                    _ => Vec::new(),
                };
                out.insert("properties".into(), Value::Object(properties));
                if !required.is_empty() {
                    out.insert("required".into(), Value::Array(required));
                }
            }
            "ARRAY" => {
                let items = match (map.get("items"), map.get("prefixItems")) {
                    (Some(items), _) => self.node(items, depth + 1),
                    (None, Some(Value::Array(tuple))) => {
                        let branches: Vec<Value> = tuple
                            .iter()
                            .map(|t| Value::Object(self.node(t, depth + 1)))
                            .collect();
                        one_of_many(branches)
                    }
                    _ => any(None),
                };
                out.insert("items".into(), Value::Object(items));
            }
            _ => {}
        }
        if nullable {
            out.insert("nullable".into(), true.into());
        }
        if !notes.is_empty() {
            let text = notes.join("; ");
            let described = match out.get("description").and_then(Value::as_str) {
                Some(d) if !d.is_empty() => format!("{d} ({text})"),
                _ => format!("{}.", capitalized(&text)),
            };
            out.insert("description".into(), described.into());
        }
        out
    }

    fn properties(&mut self, map: &Map<String, Value>, depth: usize) -> Map<String, Value> {
        let Some(Value::Object(properties)) = map.get("properties") else {
            return Map::new();
        };
        properties
            .iter()
            .map(|(name, schema)| (name.clone(), Value::Object(self.node(schema, depth + 1))))
            .collect()
    }

    /// `anyOf` / `oneOf`: `null` among them is `nullable`, string constants an `enum`, one
    /// choice left that choice, several `anyOf`.
    fn choice(
        &mut self,
        map: &Map<String, Value>,
        branches: &[Value],
        depth: usize,
    ) -> Map<String, Value> {
        let is_null = |b: &Value| {
            b.get("type").and_then(Value::as_str) == Some("null")
                || b.get("const").is_some_and(Value::is_null)
        };
        let nullable = branches.iter().any(is_null);
        let rest: Vec<&Value> = branches.iter().filter(|b| !is_null(b)).collect();
        // Around the choice: its description and the like.
        let mut outer = map.clone();
        outer.remove("anyOf");
        outer.remove("oneOf");
        let constants: Option<Vec<Value>> = rest
            .iter()
            .map(|b| {
                let value = b.get("const").or_else(|| match b.get("enum") {
                    Some(Value::Array(v)) if v.len() == 1 => v.first(),
                    _ => None,
                })?;
                value.is_string().then(|| value.clone())
            })
            .collect();
        let mut out = match (constants, rest.as_slice()) {
            (_, []) => any(None),
            (Some(values), _) => {
                let mut out = Map::new();
                out.insert("type".into(), "STRING".into());
                out.insert("enum".into(), Value::Array(values));
                out
            }
            (None, [one]) => {
                let mut merged = match one {
                    Value::Object(one) => one.clone(),
                    _ => Map::new(),
                };
                for (key, value) in &outer {
                    merged.insert(key.clone(), value.clone());
                }
                outer.clear();
                self.object_node(&merged, depth + 1)
            }
            (None, several) => {
                let branches = several
                    .iter()
                    .map(|b| Value::Object(self.node(b, depth + 1)))
                    .collect();
                one_of_many(branches)
            }
        };
        for key in ["description", "title", "default"] {
            if let Some(value) = outer.get(key) {
                out.insert(key.into(), walk::bounded_copy(value));
            }
        }
        if nullable {
            out.insert("nullable".into(), true.into());
        }
        out
    }

    /// A `$ref`, replaced by what it names under the keywords beside it; cut on a cycle.
    fn reference(
        &mut self,
        reference: &str,
        map: &Map<String, Value>,
        depth: usize,
    ) -> Map<String, Value> {
        let Some(referent) = resolved(self.root, reference) else {
            return any(description(map));
        };
        if self.stack.iter().any(|r| r == reference) {
            return any(description(map).or_else(|| description(referent)));
        }
        // Copying what the reference names is work too: counted, so that a schema that names
        // a large one many times stops at the bound.
        let cost = copy_cost(referent);
        self.nodes = self.nodes.saturating_add(cost);
        if self.nodes > MAX_NODES {
            return any(description(map).or_else(|| description(referent)));
        }
        let merged = walk::merged_map(referent, map);
        self.stack.push(reference.to_owned());
        let out = self.object_node(&merged, depth + 1);
        self.stack.pop();
        out
    }
}

/// The schema `reference` names in `root`.
fn resolved<'a>(root: &'a Map<String, Value>, reference: &str) -> Option<&'a Map<String, Value>> {
    if walk::is_root(reference) {
        return Some(root);
    }
    walk::resolve(root, reference)?.as_object()
}

/// What copying `map` costs, counted up to the bound.
fn copy_cost(map: &Map<String, Value>) -> usize {
    map.values()
        .map(|v| walk::size_within(v, MAX_NODES))
        .fold(1, usize::saturating_add)
}

/// The keywords Gemini takes for a value of `kind`, copied into `out` (formats mapped, an
/// exclusive bound made inclusive); what they say that `out` cannot, and whether they make the
/// value nullable.
fn keywords(
    map: &Map<String, Value>,
    kind: &str,
    out: &mut Map<String, Value>,
) -> (Vec<String>, bool) {
    let mut nullable = false;
    let mut notes = Vec::new();
    for (key, value) in map {
        match key.as_str() {
            "description" | "title" | "pattern" if value.is_string() => {
                out.insert(key.clone(), value.clone());
            }
            "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties"
            | "maxProperties" | "minimum" | "maximum"
                if value.is_number() =>
            {
                out.insert(key.clone(), value.clone());
            }
            "default" | "example" => {
                out.insert(key.clone(), walk::bounded_copy(value));
            }
            "examples" => {
                if let Some(first) = value.as_array().and_then(|v| v.first()) {
                    out.insert("example".into(), walk::bounded_copy(first));
                }
            }
            "nullable" => nullable |= value.as_bool() == Some(true),
            "format" => {
                if let Some(format) = value.as_str().and_then(|f| format_for(kind, f)) {
                    out.insert(key.clone(), format.into());
                }
            }
            "exclusiveMinimum" | "exclusiveMaximum" => {
                if let Some(bound) = value.as_f64() {
                    let (key, op) = if key == "exclusiveMinimum" {
                        ("minimum", "greater than")
                    } else {
                        ("maximum", "less than")
                    };
                    out.entry(key).or_insert_with(|| value.clone());
                    notes.push(format!("{op} {bound}"));
                }
            }
            _ => {}
        }
    }
    (notes, nullable)
}

/// `enum` / `const`: a string's values as Gemini's `enum`, any other's said in `notes`;
/// whether `null` is among them.
fn values(
    map: &Map<String, Value>,
    kind: &str,
    out: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) -> bool {
    let mut nullable = false;
    let values = match (map.get("enum"), map.get("const")) {
        (Some(Value::Array(values)), _) => Some(values.clone()),
        (None, Some(value)) => Some(vec![value.clone()]),
        _ => None,
    };
    if let Some(values) = values {
        nullable |= values.iter().any(Value::is_null);
        let values: Vec<&Value> = values.iter().filter(|v| !v.is_null()).collect();
        if kind == "STRING" && values.iter().all(|v| v.is_string()) {
            out.insert(
                "enum".into(),
                Value::Array(values.into_iter().cloned().collect()),
            );
        } else {
            // Gemini's `enum` holds strings only: other values are said.
            let listed: Vec<String> = values.iter().map(ToString::to_string).collect();
            notes.push(format!("one of {}", listed.join(", ")));
        }
    }
    nullable
}

/// A value of any type, or one this schema cannot describe: taken as JSON text.
fn any(description: Option<String>) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("type".into(), "STRING".into());
    let text = "a JSON value, as JSON text";
    let description = match description {
        Some(d) if !d.is_empty() => format!("{d} ({text})"),
        _ => "A JSON value, as JSON text.".to_owned(),
    };
    out.insert("description".into(), description.into());
    out
}

/// Where a walk stops (a cycle, the depth bound): the value there as JSON text.
fn cut(map: &Map<String, Value>) -> Map<String, Value> {
    any(description(map))
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

fn description(map: &Map<String, Value>) -> Option<String> {
    map.get("description")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Several types (`["string", "integer"]`): one choice per type.
fn several_types(map: &Map<String, Value>, types: &[&str], nullable: bool) -> Map<String, Value> {
    let branches = types
        .iter()
        .filter_map(|t| gemini_type(t))
        .map(|t| {
            let mut branch = Map::new();
            branch.insert("type".into(), t.into());
            Value::Object(branch)
        })
        .collect();
    let mut out = one_of_many(branches);
    if let Some(d) = map.get("description") {
        out.insert("description".into(), walk::bounded_copy(d));
    }
    if nullable {
        out.insert("nullable".into(), true.into());
    }
    out
}

/// `anyOf` of `branches`, or the one branch when there is one.
fn one_of_many(mut branches: Vec<Value>) -> Map<String, Value> {
    if branches.len() == 1
        && let Some(Value::Object(one)) = branches.pop()
    {
        return one;
    }
    if branches.is_empty() {
        return any(None);
    }
    let mut out = Map::new();
    out.insert("anyOf".into(), Value::Array(branches));
    out
}

/// The type a schema without `type` has, by what else it says.
fn infer(map: &Map<String, Value>) -> Option<&'static str> {
    if map.contains_key("properties") {
        return Some("object");
    }
    if map.contains_key("items") || map.contains_key("prefixItems") {
        return Some("array");
    }
    let sample = match (map.get("enum"), map.get("const")) {
        (Some(Value::Array(values)), _) => values.iter().find(|v| !v.is_null()),
        (None, Some(value)) => Some(value),
        _ => None,
    }?;
    Some(match sample {
        Value::String(_) => "string",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => return None,
    })
}

/// A JSON Schema type as Gemini spells it.
fn gemini_type(t: &str) -> Option<&'static str> {
    Some(match t {
        "string" => "STRING",
        "number" => "NUMBER",
        "integer" => "INTEGER",
        "boolean" => "BOOLEAN",
        "array" => "ARRAY",
        "object" => "OBJECT",
        _ => return None,
    })
}

/// The format Gemini takes for `format` on a value of `kind`: the same, the nearest that
/// holds every value (an integer's), or none.
fn format_for(kind: &str, format: &str) -> Option<&'static str> {
    match (kind, format) {
        ("NUMBER", "float") => Some("float"),
        ("NUMBER", "double") => Some("double"),
        ("INTEGER", "int8" | "int16" | "int32" | "uint8" | "uint16") => Some("int32"),
        ("INTEGER", "int64" | "uint32") => Some("int64"),
        ("STRING", "date-time") => Some("date-time"),
        ("STRING", "enum") => Some("enum"),
        // `uint64`, `uint`, `int` (pointer-sized), a string's `uuid` or `email`: no format
        // of Gemini's holds them; the type and bounds stay.
        _ => None,
    }
}

/// `branch`'s keywords into `into`: properties and required names joined, the rest kept
/// where `into` has none.
fn merge_into(into: &mut Map<String, Value>, branch: &Map<String, Value>) {
    for (key, value) in branch {
        match (key.as_str(), into.get_mut(key), value) {
            ("properties", Some(Value::Object(mine)), Value::Object(theirs)) => {
                for (name, schema) in theirs {
                    mine.entry(name.clone()).or_insert_with(|| schema.clone());
                }
            }
            ("required", Some(Value::Array(mine)), Value::Array(theirs)) => {
                for name in theirs {
                    if !mine.contains(name) {
                        mine.push(name.clone());
                    }
                }
            }
            (_, Some(_), _) => {}
            (_, None, _) => {
                into.insert(key.clone(), value.clone());
            }
        }
    }
}
