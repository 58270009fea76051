//! The runtime's shape, checked from its sources (issue 10, DESIGN "The layers"):
//!
//! - module dependencies run one way: the graph of `crate::<module>` references between the
//!   files of `src/` has no cycle;
//! - the expeditor's whole public API is in one file: no `impl Expeditor` outside
//!   `expeditor.rs`;
//! - the mirror has one writer: its state word and opening step are stored only in
//!   `mirror.rs`'s `publish`, and the expeditor calls `publish` from one place, its `command`;
//! - the engine holds no lock and no atomic.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn sources() -> BTreeMap<String, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            // A module in a folder reads as one source: its files, in name order.
            let mut parts: Vec<_> = std::fs::read_dir(&path)
                .expect("a readable folder")
                .map(|e| e.expect("a directory entry").path())
                .filter(|p| p.extension().is_some_and(|e| e == "rs"))
                .collect();
            parts.sort();
            let text: String = parts
                .iter()
                .map(|p| std::fs::read_to_string(p).expect("a readable source"))
                .collect::<Vec<_>>()
                .join("\n");
            let name = path
                .file_name()
                .and_then(|s| s.to_str())
                .expect("a UTF-8 folder name")
                .to_owned();
            files.insert(name, without_comments(&text));
        } else if path.extension().is_some_and(|e| e == "rs") {
            let name = path
                .file_stem()
                .and_then(|s| s.to_str())
                .expect("a UTF-8 file name")
                .to_owned();
            let text = std::fs::read_to_string(&path).expect("a readable source");
            files.insert(name, without_comments(&text));
        }
    }
    files
}

/// The source without `//` comments (doc comments name other modules in links), with method
/// chains that rustfmt broke over lines joined again (`x\n    .store(` reads `x.store(`).
fn without_comments(text: &str) -> String {
    let joined = text
        .lines()
        .map(|line| line.find("//").map_or(line, |i| &line[..i]))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = String::with_capacity(joined.len());
    let mut rest = joined.as_str();
    while let Some(i) = rest.find('\n') {
        out.push_str(&rest[..i]);
        let next = rest[i + 1..].trim_start();
        if !next.starts_with('.') {
            out.push('\n');
        }
        rest = next;
    }
    out.push_str(rest);
    out
}

/// The modules each file names through `crate::<module>`.
fn graph(files: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    files
        .iter()
        .filter(|(name, _)| name.as_str() != "lib")
        .map(|(name, text)| {
            let mut deps = BTreeSet::new();
            for (i, _) in text.match_indices("crate::") {
                let rest = &text[i + "crate::".len()..];
                let module: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                if module != *name && files.contains_key(&module) {
                    deps.insert(module);
                }
            }
            (name.clone(), deps)
        })
        .collect()
}

fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_owned(), 1);
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            match state.get(next.as_str()) {
                Some(1) => {
                    let start = path.iter().position(|p| p == next).unwrap_or(0);
                    let mut cycle = path[start..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(cycle) = visit(next, graph, state, path) {
                        return Some(cycle);
                    }
                }
            }
        }
        path.pop();
        state.insert(node.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if !state.contains_key(node.as_str())
            && let Some(cycle) = visit(node, graph, &mut state, &mut Vec::new())
        {
            return Some(cycle);
        }
    }
    None
}

#[test]
fn module_dependencies_run_one_way() {
    let files = sources();
    let graph = graph(&files);
    assert!(graph.len() > 10, "the modules were found: {graph:?}");
    assert_eq!(find_cycle(&graph), None, "a circle in the module graph");
    // The layers of DESIGN.md, in the direction they may be named.
    let below = |module: &str, other: &str| graph[module].contains(other);
    assert!(below("engine", "breaker") && below("expeditor", "engine"));
    assert!(below("mirror", "engine") && below("report", "mirror"));
    for low in [
        "breaker",
        "budget",
        "cascade",
        "freshness",
        "route",
        "scope",
        "snapshot",
    ] {
        for high in ["engine", "mirror", "expeditor", "report", "executor"] {
            assert!(!below(low, high), "{low} names {high}");
        }
    }
    assert!(!below("engine", "mirror") && !below("engine", "expeditor"));
    assert!(!below("report", "expeditor") && !below("route", "expeditor"));
}

/// The checker itself finds a circle.
#[test]
fn a_circle_is_found() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(
        find_cycle(&graph),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}

#[test]
fn the_expeditors_public_api_is_in_one_file() {
    for (name, text) in sources() {
        if name != "expeditor" {
            for needle in [
                "impl Expeditor",
                "impl crate::Expeditor",
                "impl crate::expeditor::Expeditor",
            ] {
                assert!(!text.contains(needle), "{name}.rs has `{needle}`");
            }
        }
    }
}

#[test]
fn the_mirror_has_one_writer() {
    let files = sources();
    for (name, text) in &files {
        for cell in ["word.store", "opened_at.store", "halted.store"] {
            let count = text.matches(cell).count();
            let allowed = usize::from(name == "mirror");
            assert_eq!(count, allowed, "`{cell}` in {name}.rs");
        }
    }
    let mirror = &files["mirror"];
    let publish = mirror
        .find("fn publish(&self, engine")
        .expect("Mirror::publish");
    assert!(
        mirror[publish..].contains("halted") && mirror.find("halted.store").unwrap() > publish,
        "the pause flag is written in Mirror::publish"
    );
    assert_eq!(
        files["expeditor"].matches(".publish(").count(),
        1,
        "the expeditor publishes from its one command path"
    );
}

#[test]
fn the_engine_holds_no_lock_and_no_atomic() {
    let engine = &sources()["engine"];
    for needle in [
        "Mutex",
        "RwLock",
        "Atomic",
        "crate::sync",
        "OnceLock",
        "Cell<",
    ] {
        assert!(!engine.contains(needle), "the engine uses {needle}");
    }
}
