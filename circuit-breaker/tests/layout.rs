//! The runtime's shape, checked from its sources:
//!
//! - the layers: each top-level file or folder of `src/` is one unit, and a unit names (through
//!   `crate::…`) only the units of the layers below its own, in the order `LAYERS` declares, so
//!   dependencies run one way and a newcomer finds the room from the path;
//! - no source file is longer than `MAX_LINES` lines;
//! - the expeditor's API is its own: `impl Expeditor` blocks are only under `expeditor/`;
//! - the mirror has one writer: its state word, opening step and pause flag are stored only in
//!   `expeditor/mirror.rs`, in `Mirror::publish`, which the expeditor calls from one place, its
//!   command path;
//! - the engine holds no lock and no atomic.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers, from the bottom up. A unit names only units of the layers before its own; the
/// units of one layer are peers and name none of each other. The hidden modules sit above
/// everything: the code `#[toolbox]` generates (`__private`) and the model-based test of the
/// engine (`model_test`, compiled only for the crate's own tests) reach into every layer.
const LAYERS: &[&[&str]] = &[
    &["model"],
    &["engine"],
    &["report", "telemetry"],
    &["expeditor"],
    &["executor"],
    &["mcp", "otel", "redis", "rig"],
    &["__private", "model_test"],
];

/// The longest a source file may be.
const MAX_LINES: usize = 800;

/// Every source file under `src/`, folders inside folders, by its path from `src/`
/// (`expeditor/mirror.rs`), as written.
fn files() -> BTreeMap<String, String> {
    fn walk(dir: &Path, prefix: &str, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).expect("a readable folder") {
            let path = entry.expect("a directory entry").path();
            let name = path
                .file_name()
                .and_then(|s| s.to_str())
                .expect("a UTF-8 file name");
            let relative = format!("{prefix}{name}");
            if path.is_dir() {
                walk(&path, &format!("{relative}/"), out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("a readable source");
                out.insert(relative, text);
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        "",
        &mut files,
    );
    files
}

/// The unit a file belongs to: its top-level file or folder (`expeditor/mirror.rs` is in
/// `expeditor`, `rig.rs` is `rig`).
fn unit_of(path: &str) -> &str {
    let first = path.split('/').next().unwrap_or(path);
    first.strip_suffix(".rs").unwrap_or(first)
}

/// Every unit but the crate root, with its files' sources without comments, joined in path
/// order.
fn units(files: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut units: BTreeMap<String, String> = BTreeMap::new();
    for (path, text) in files {
        if path != "lib.rs" {
            let unit = units.entry(unit_of(path).to_owned()).or_default();
            unit.push_str(&without_comments(text));
            unit.push('\n');
        }
    }
    units
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

/// The names the crate root brings in with `use` (`pub use model::{capability, clock};`,
/// `pub use executor::toolbox;`, `pub use capability::ToolSpec;`), each with the first
/// segment of the path it comes from: files name them as `crate::capability::…`.
fn root_names(lib: &str) -> BTreeMap<String, Vec<String>> {
    let mut names: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let code = without_comments(lib);
    let mut rest = code.as_str();
    while let Some(at) = rest.find("use ") {
        let starts_a_word = at == 0 || !rest[..at].ends_with(|c: char| c.is_alphanumeric());
        rest = &rest[at + "use ".len()..];
        let Some(end) = rest.find(';') else { break };
        if !starts_a_word {
            continue;
        }
        let path = rest[..end].split_whitespace().collect::<Vec<_>>().join(" ");
        rest = &rest[end..];
        let (head, items): (&str, Vec<&str>) = match path.split_once('{') {
            Some((head, items)) => (head, items.trim_end_matches('}').split(',').collect()),
            None => (path.as_str(), vec![path.as_str()]),
        };
        let first = head
            .trim()
            .split("::")
            .next()
            .unwrap_or_default()
            .to_owned();
        for item in items.iter().map(|i| i.trim()).filter(|i| !i.is_empty()) {
            let name = match item.split_once(" as ") {
                Some((_, alias)) => alias.trim(),
                None => item.rsplit("::").next().unwrap_or(item),
            };
            names
                .entry(name.to_owned())
                .or_default()
                .push(first.clone());
        }
    }
    names
}

/// The unit `name` is, or is brought in from (following the root's re-exports).
fn resolve<'a>(
    name: &'a str,
    units: &BTreeSet<&'a str>,
    names: &'a BTreeMap<String, Vec<String>>,
    depth: usize,
) -> Option<&'a str> {
    if units.contains(name) {
        return Some(name);
    }
    if depth > 8 {
        return None;
    }
    names
        .get(name)?
        .iter()
        .find_map(|from| resolve(from, units, names, depth + 1))
}

/// The units each unit names through `crate::<name>` or `crate::{<name>, …}`.
fn graph(files: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let units = units(files);
    let unit_names: BTreeSet<&str> = units.keys().map(String::as_str).collect();
    let names = root_names(&files["lib.rs"]);
    units
        .iter()
        .map(|(unit, text)| {
            let mut deps = BTreeSet::new();
            for (i, _) in text.match_indices("crate::") {
                let rest = &text[i + "crate::".len()..];
                let named: Vec<&str> = match rest.strip_prefix('{') {
                    Some(group) => group[..group.find('}').unwrap_or(group.len())]
                        .split(',')
                        .map(|item| item.trim().split("::").next().unwrap_or_default())
                        .collect(),
                    None => {
                        let end = rest
                            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                            .unwrap_or(rest.len());
                        vec![&rest[..end]]
                    }
                };
                for name in named {
                    if let Some(other) = resolve(name, &unit_names, &names, 0)
                        && other != unit
                    {
                        deps.insert(other.to_owned());
                    }
                }
            }
            (unit.clone(), deps)
        })
        .collect()
}

/// The dependencies that do not run down the layers: `(unit, the unit it names)`.
fn against_the_layers(
    graph: &BTreeMap<String, BTreeSet<String>>,
    layers: &[&[&str]],
) -> Vec<(String, String)> {
    let layer = |unit: &str| layers.iter().position(|l| l.contains(&unit));
    let mut wrong = Vec::new();
    for (unit, deps) in graph {
        for dep in deps {
            match (layer(unit), layer(dep)) {
                (Some(from), Some(to)) if to < from => {}
                _ => wrong.push((unit.clone(), dep.clone())),
            }
        }
    }
    wrong
}

#[test]
fn dependencies_run_down_the_layers() {
    let files = files();
    let graph = graph(&files);
    for unit in graph.keys() {
        assert!(
            LAYERS.iter().any(|layer| layer.contains(&unit.as_str())),
            "`{unit}` is in no layer: add it to LAYERS"
        );
    }
    let named: usize = graph.values().map(BTreeSet::len).sum();
    assert!(named > 20, "the dependencies were found: {graph:?}");
    assert_eq!(
        against_the_layers(&graph, LAYERS),
        [],
        "dependencies against the layers, (unit, unit it names)"
    );
    assert!(graph["engine"].contains("model") && graph["expeditor"].contains("engine"));
    assert!(graph["report"].contains("engine") && graph["expeditor"].contains("report"));
}

/// The checker itself finds a dependency that runs up, one between peers, and a unit in no
/// layer.
#[test]
fn a_dependency_against_the_layers_is_found() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("low", vec![]),
        ("mid", vec!["low"]),
        ("peer", vec!["mid", "low"]),
        ("high", vec!["mid", "peer"]),
        ("stray", vec!["low"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
    .collect();
    let layers: &[&[&str]] = &[&["low"], &["mid", "peer"], &["high"]];
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(
        against_the_layers(&graph, layers),
        [pair("peer", "mid"), pair("stray", "low")]
    );
}

/// The root's re-exports are followed: a file that names `crate::capability` or
/// `crate::Expeditor` names the unit they come from.
#[test]
fn names_the_root_brings_in_are_followed() {
    let names = root_names(
        "pub use model::{\n    capability, clock,\n};\n#[doc(no_inline)]\npub use capability::ToolSpec;\npub use expeditor::{Decision, Expeditor as Shell};\n",
    );
    let units: BTreeSet<&str> = ["model", "expeditor"].into();
    assert_eq!(resolve("clock", &units, &names, 0), Some("model"));
    assert_eq!(resolve("ToolSpec", &units, &names, 0), Some("model"));
    assert_eq!(resolve("Shell", &units, &names, 0), Some("expeditor"));
    assert_eq!(resolve("Decision", &units, &names, 0), Some("expeditor"));
    assert_eq!(resolve("elsewhere", &units, &names, 0), None);
}

#[test]
fn no_source_file_is_longer_than_the_limit() {
    let files = files();
    for (path, text) in &files {
        let lines = text.lines().count();
        assert!(
            lines <= MAX_LINES,
            "{path} has {lines} lines, over {MAX_LINES}: split it by concern"
        );
    }
}

#[test]
fn impl_expeditor_blocks_are_only_under_expeditor() {
    let files = files();
    let mut found = false;
    for (path, text) in &files {
        let text = without_comments(text);
        for needle in [
            "impl Expeditor",
            "impl crate::Expeditor",
            "impl crate::expeditor::Expeditor",
            "impl super::Expeditor",
        ] {
            if text.contains(needle) {
                assert!(path.starts_with("expeditor/"), "{path} has `{needle}`");
                found = true;
            }
        }
    }
    assert!(found, "the expeditor's impl blocks were found");
}

#[test]
fn the_mirror_has_one_writer() {
    const MIRROR: &str = "expeditor/mirror.rs";
    let files: BTreeMap<String, String> = files()
        .into_iter()
        .map(|(path, text)| (path, without_comments(&text)))
        .collect();
    for (path, text) in &files {
        for cell in ["word.store", "opened_at.store", "halted.store"] {
            let count = text.matches(cell).count();
            let allowed = usize::from(path == MIRROR);
            assert_eq!(count, allowed, "`{cell}` in {path}");
        }
    }
    let mirror = &files[MIRROR];
    let publish = mirror
        .find("fn publish(&self, engine")
        .expect("Mirror::publish");
    assert!(
        mirror[publish..].contains("halted") && mirror.find("halted.store").unwrap() > publish,
        "the pause flag is written in Mirror::publish"
    );
    // The model-based test drives the engine and the mirror the way the expeditor does; it is
    // compiled only into the crate's own tests, so it is no second writer in a build.
    let callers: Vec<&String> = files
        .iter()
        .filter(|(path, _)| !path.starts_with("model_test/"))
        .flat_map(|(path, text)| text.matches("mirror.publish(").map(move |_| path))
        .collect();
    assert_eq!(callers.len(), 1, "one call of Mirror::publish: {callers:?}");
    let caller = &files[callers[0]];
    assert!(
        callers[0].starts_with("expeditor/") && caller.contains("fn command<"),
        "the expeditor publishes from its one command path, not {}",
        callers[0]
    );
}

/// No lock and no atomic in the engine. (It cannot name the expeditor's lock and atomic
/// shims either: they are the expeditor's, a layer above.)
#[test]
fn the_engine_holds_no_lock_and_no_atomic() {
    let files = files();
    let engine = &units(&files)["engine"];
    for needle in ["Mutex", "RwLock", "Atomic", "OnceLock", "Cell<"] {
        assert!(!engine.contains(needle), "the engine uses {needle}");
    }
}
