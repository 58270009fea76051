//! What the conversions share: the bound on nesting, a bounded copy, and `$ref` resolution
//! within the schema itself.

use serde_json::{Map, Value};

/// The deepest a conversion walks into a schema. `serde_json` parses no deeper than 128 levels,
/// and no tool's arguments come near this; a schema built deeper by hand is cut here rather
/// than overflow the stack.
pub(super) const MAX_DEPTH: usize = 64;

/// The most work a conversion does, counted in schemas made and values copied. Inlining
/// references that fan out (each naming the next twice) makes a number of schemas
/// exponential in their count; no tool's arguments come near this, and a conversion past it
/// stops there.
pub(super) const MAX_NODES: usize = 100_000;

/// How many values `value` holds, counted up to `limit` (and no deeper than [`MAX_DEPTH`]):
/// the cost of copying it, found at no more than that cost.
pub(super) fn size_within(value: &Value, limit: usize) -> usize {
    fn count(value: &Value, depth: usize, limit: usize, n: &mut usize) {
        *n += 1;
        if *n >= limit || depth >= MAX_DEPTH {
            return;
        }
        match value {
            Value::Object(map) => {
                for v in map.values() {
                    count(v, depth + 1, limit, n);
                    if *n >= limit {
                        return;
                    }
                }
            }
            Value::Array(items) => {
                for v in items {
                    count(v, depth + 1, limit, n);
                    if *n >= limit {
                        return;
                    }
                }
            }
            _ => {}
        }
    }
    let mut n = 0;
    count(value, 0, limit.max(1), &mut n);
    n
}

/// `value`, copied down to [`MAX_DEPTH`] levels; anything deeper becomes `{}` (any value).
pub(super) fn bounded_copy(value: &Value) -> Value {
    copy(value, 0)
}

fn copy(value: &Value, depth: usize) -> Value {
    if depth >= MAX_DEPTH && matches!(value, Value::Object(_) | Value::Array(_)) {
        return Value::Object(Map::new());
    }
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), copy(v, depth + 1)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| copy(v, depth + 1)).collect()),
        other => other.clone(),
    }
}

/// The schema `reference` names inside `root`: `#` (the root itself), or a JSON pointer from
/// it (`#/$defs/Name`, `#/definitions/Name`, any other path). `None` for a reference to
/// another document, or one that names nothing.
pub(super) fn resolve<'a>(root: &'a Map<String, Value>, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return None;
    }
    let mut segments = pointer.strip_prefix('/')?.split('/');
    let first = unescape(segments.next()?);
    let mut node = root.get(&first)?;
    for segment in segments {
        let segment = unescape(segment);
        node = match node {
            Value::Object(map) => map.get(&segment)?,
            Value::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(node)
}

/// A JSON pointer's segment as the key it names (RFC 6901, and the percent-encoding a URI
/// fragment may carry).
fn unescape(segment: &str) -> String {
    let decoded = percent_decode(segment);
    decoded.replace("~1", "/").replace("~0", "~")
}

fn percent_decode(segment: &str) -> String {
    if !segment.contains('%') {
        return segment.to_owned();
    }
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes.get(i), bytes.get(i + 1), bytes.get(i + 2)) {
            (Some(b'%'), Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                let value = hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0);
                out.push(u8::try_from(value).unwrap_or(b'?'));
                i += 3;
            }
            (Some(&b), _, _) => {
                out.push(b);
                i += 1;
            }
            (None, _, _) => break,
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `root` is the whole schema: `#` names it.
pub(super) fn is_root(reference: &str) -> bool {
    reference == "#"
}

/// `referent`'s keys under `siblings`' (the keys beside a `$ref` win over the schema it
/// names), without the `$ref`.
pub(super) fn merged(referent: &Value, siblings: &Map<String, Value>) -> Map<String, Value> {
    merged_map(referent.as_object().unwrap_or(&Map::new()), siblings)
}

/// [`merged`] for a referent that is an object.
pub(super) fn merged_map(
    referent: &Map<String, Value>,
    siblings: &Map<String, Value>,
) -> Map<String, Value> {
    let mut out = referent.clone();
    for (key, value) in siblings {
        if key != "$ref" {
            out.insert(key.clone(), value.clone());
        }
    }
    out
}
