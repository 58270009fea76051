//! The bounded fuzz run on stable: feeds `snapshot_decode` and `map_validate` with inputs made
//! by a seeded mutator from real snapshots and maps — byte flips, JSON tokens inserted,
//! ranges deleted or repeated, truncations, splices, and structured edits (a random node of
//! the JSON replaced by an extreme number, a long or odd string, null, an empty container or
//! another node). Every input runs under `catch_unwind`; one that panics is written to
//! `fuzz/artifacts/smoke/` and the run fails at the end.
//!
//! ```text
//! cargo run --release --manifest-path fuzz/Cargo.toml --example fuzz_smoke -- 100000 [seed]
//! cargo run --release --manifest-path fuzz/Cargo.toml --example fuzz_smoke -- --write-corpus
//! ```

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::time::Instant;

use circuit_breaker_fuzz::{Outcome, map_validate, seed_maps, seed_snapshots, snapshot_decode};
use serde_json::{Value, json};

/// A target's name, its function and its seeds.
type Target = (&'static str, fn(&[u8]) -> Outcome, Vec<Vec<u8>>);

/// xorshift64*.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from((self.next() >> 33) % (n.max(1) as u64)).unwrap_or(0)
    }
}

const TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b":",
    b",",
    b"-",
    b"0",
    b"9",
    b"1e999",
    b"-1",
    b"18446744073709551616",
    b"4294967295",
    b"null",
    b"true",
    b"false",
    b"\\u0000",
    b"\\ud800",
    b"\"HALF-OPEN\"",
    b"\"OPEN\"",
    b"\"CLOSED\"",
    b"\"network\"",
    b"1.5",
    b"\"2026-11-30T07:35:03Z\"",
    b"\"tool\"",
    b"\"charged\"",
    b"\"pending\"",
    b"\"systemic\"",
];

fn odd_value(rng: &mut Rng, pool: &[Value]) -> Value {
    match rng.below(16) {
        0 => json!(u64::MAX),
        1 => json!(u32::MAX),
        2 => json!(0),
        3 => json!(-1),
        4 => json!(1.5),
        5 => json!(1),
        6 => Value::Null,
        7 => json!(true),
        8 => json!(""),
        9 => json!(" "),
        10 => json!("x".repeat(rng.below(5000))),
        11 => json!("Grep"),
        12 => json!("é\u{202e}🔧\0"),
        13 => json!([]),
        14 => json!({}),
        _ => pool
            .get(rng.below(pool.len()))
            .cloned()
            .unwrap_or(Value::Null),
    }
}

/// Every node of a JSON value, as paths of keys and indices.
fn paths(value: &Value, at: &mut Vec<PathStep>, out: &mut Vec<Vec<PathStep>>) {
    out.push(at.clone());
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                at.push(PathStep::Key(k.clone()));
                paths(v, at, out);
                at.pop();
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                at.push(PathStep::Index(i));
                paths(v, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

#[derive(Clone)]
enum PathStep {
    Key(String),
    Index(usize),
}

fn node<'v>(value: &'v mut Value, path: &[PathStep]) -> Option<&'v mut Value> {
    let mut at = value;
    for step in path {
        at = match step {
            PathStep::Key(k) => at.get_mut(k.as_str())?,
            PathStep::Index(i) => at.get_mut(*i)?,
        };
    }
    Some(at)
}

const STRINGS: &[&str] = &[
    "",
    " ",
    "Grep",
    "Read",
    "Bash",
    "WebSearch",
    "mcp_fetch",
    "OPEN",
    "HALF-OPEN",
    "CLOSED",
    "network",
    "filesystem",
    "other",
    "high",
    "low",
    "unknown",
    "agent-circuit-breaker/snapshot",
    "1970-01-01T00:00:00Z",
    "9999-12-31T23:59:59.999Z",
    "2026-11-30T07:35:03Z",
    "é\u{202e}🔧\0",
];

/// A value of the same JSON type as `old`, or (1 in 8) anything.
fn like(rng: &mut Rng, old: &Value, pool: &[Value]) -> Value {
    if rng.below(8) == 0 {
        return odd_value(rng, pool);
    }
    match old {
        Value::Number(_) => match rng.below(8) {
            0 => json!(0),
            1 => json!(1),
            2 => json!(2),
            3 => json!(u32::MAX),
            4 => json!(u64::MAX),
            5 => json!(u64::from(u32::MAX) + 1),
            6 => json!(rng.below(20)),
            _ => json!(17),
        },
        Value::String(_) => match rng.below(4) {
            0 => json!("x".repeat(rng.below(3000))),
            _ => json!(STRINGS[rng.below(STRINGS.len())]),
        },
        Value::Bool(b) => json!(!b),
        Value::Null => odd_value(rng, pool),
        Value::Array(items) => {
            let mut items = items.clone();
            match rng.below(4) {
                0 => items.clear(),
                1 if !items.is_empty() => {
                    items.remove(rng.below(items.len()));
                }
                _ if !items.is_empty() => {
                    let item = items[rng.below(items.len())].clone();
                    for _ in 0..=rng.below(20) {
                        items.push(item.clone());
                    }
                }
                _ => {}
            }
            Value::Array(items)
        }
        Value::Object(map) => {
            let mut map = map.clone();
            if !map.is_empty() {
                let key = map
                    .keys()
                    .nth(rng.below(map.len()))
                    .cloned()
                    .unwrap_or_default();
                map.remove(&key);
            }
            Value::Object(map)
        }
    }
}

/// One to four structured edits: a random node replaced by a value of its type (mostly) or
/// by anything, an object's key removed, an array's item removed or repeated.
fn structured(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let Ok(mut value) = serde_json::from_slice::<Value>(seed) else {
        return seed.to_vec();
    };
    for _ in 0..=rng.below(4) {
        let mut all = Vec::new();
        paths(&value, &mut Vec::new(), &mut all);
        let pool: Vec<Value> = all
            .iter()
            .step_by(all.len() / 32 + 1)
            .filter_map(|p| node(&mut value, p).map(|v| v.clone()))
            .collect();
        let path = all[rng.below(all.len())].clone();
        let Some(target) = node(&mut value, &path) else {
            continue;
        };
        *target = like(rng, target, &pool);
    }
    serde_json::to_vec(&value).unwrap_or_default()
}

/// One byte-level edit.
fn bytes(rng: &mut Rng, seed: &[u8], other: &[u8]) -> Vec<u8> {
    let mut data = seed.to_vec();
    for _ in 0..=rng.below(4) {
        let len = data.len();
        let at = rng.below(len + 1);
        match rng.below(7) {
            0 if len > 0 => data[at.min(len - 1)] = (rng.next() & 0xff) as u8,
            1 => {
                let token = TOKENS[rng.below(TOKENS.len())];
                data.splice(at..at, token.iter().copied());
            }
            2 => {
                let end = (at + rng.below(32)).min(len);
                data.drain(at..end);
            }
            3 => {
                let end = (at + rng.below(64)).min(len);
                let piece = data[at..end].to_vec();
                data.splice(at..at, piece);
            }
            4 => data.truncate(at),
            5 if !other.is_empty() => {
                let from = rng.below(other.len());
                let end = (from + rng.below(256)).min(other.len());
                data.splice(at..at, other[from..end].iter().copied());
            }
            _ => {
                if len > 0 {
                    let i = at.min(len - 1);
                    data[i] ^= 1 << rng.below(8);
                }
            }
        }
    }
    data
}

fn write_corpus() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus");
    for (target, seeds) in [
        ("snapshot_decode", seed_snapshots()),
        ("map_validate", seed_maps()),
    ] {
        let dir = root.join(target);
        std::fs::create_dir_all(&dir).expect("corpus directory");
        for (i, seed) in seeds.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{i}.json")), seed).expect("corpus file");
        }
    }
    println!("corpus written to {}", root.display());
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--write-corpus") {
        write_corpus();
        return;
    }
    let iterations: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let seed: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(0x5EED);
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let targets: [Target; 2] = [
        ("snapshot_decode", snapshot_decode, seed_snapshots()),
        ("map_validate", map_validate, seed_maps()),
    ];
    // Quiet panics: they are caught, counted and saved.
    std::panic::set_hook(Box::new(|_| {}));
    let started = Instant::now();
    let mut figures: HashMap<(&str, Outcome), u64> = HashMap::new();
    let mut crashes = Vec::new();
    for i in 0..iterations {
        let (name, run, seeds) = &targets[usize::try_from(i % 2).unwrap_or(0)];
        let seed = &seeds[rng.below(seeds.len())];
        let other = &seeds[rng.below(seeds.len())];
        let input = match rng.below(4) {
            0 => bytes(&mut rng, seed, other),
            1 | 2 => structured(&mut rng, seed),
            _ => {
                let edited = structured(&mut rng, seed);
                bytes(&mut rng, &edited, other)
            }
        };
        match catch_unwind(AssertUnwindSafe(|| run(&input))) {
            Ok(outcome) => *figures.entry((name, outcome)).or_default() += 1,
            Err(payload) => {
                let message = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default();
                let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                    .join("artifacts")
                    .join("smoke");
                let _ = std::fs::create_dir_all(&dir);
                let file = dir.join(format!("{name}-{i}.json"));
                let _ = std::fs::write(&file, &input);
                crashes.push(format!("{name} #{i}: {message} ({})", file.display()));
            }
        }
    }
    println!(
        "fuzz_smoke: {iterations} inputs, seed {seed}, {:?}",
        started.elapsed()
    );
    let mut lines: Vec<String> = figures
        .iter()
        .map(|((name, outcome), n)| format!("  {name:<16} {outcome:?}: {n}"))
        .collect();
    lines.sort();
    for line in lines {
        println!("{line}");
    }
    if crashes.is_empty() {
        println!("no panic");
    } else {
        println!("{} panics:", crashes.len());
        for crash in crashes.iter().take(20) {
            println!("  {crash}");
        }
        std::process::exit(1);
    }
}
