//! Expansion snapshot: every change to the generated code shows up as a diff of
//! `tests/expand/*.expanded.rs`. A missing snapshot fails; run with exactly `UPDATE_EXPAND=1`
//! to write the snapshots, then review the diff.

use std::path::Path;

use darling::Error;

/// Runs the phases on `#[toolbox(args)] impl ..` read from a file.
fn expand_file(path: &Path) -> String {
    let source = std::fs::read_to_string(path).expect("snapshot input is readable");
    let mut item: syn::ItemImpl = syn::parse_str(&source).expect("snapshot input is an impl block");
    let attr = item.attrs.remove(0);
    let args = match attr.meta {
        syn::Meta::List(list) => list.tokens,
        _ => proc_macro2::TokenStream::new(),
    };
    let mut errors = Error::accumulator();
    let toolbox =
        crate::parse::parse(args, quote::quote!(#item), &mut errors).expect("an impl block");
    let checked = crate::check::check(&toolbox, &mut errors);
    errors.finish().expect("snapshot input has no mistakes");
    let checked = checked.expect("a checked model when there is no mistake");
    let tokens = crate::expand::expand(&checked);
    let mut file: syn::File = syn::parse2(tokens).expect("expansion parses as a file");
    unwrap_json_dispatch(&mut file);
    prettyplease::unparse(&file)
}

/// A `json` toolbox's items are generated inside the hidden module's `json_dispatch! { .. }`
/// (one clear error when the runtime's `json` feature is off), which prettyplease prints as
/// raw tokens: the snapshot shows them unwrapped, as the feature on expands them.
fn unwrap_json_dispatch(file: &mut syn::File) {
    for item in &mut file.items {
        let syn::Item::Const(item) = item else {
            continue;
        };
        let syn::Expr::Block(block) = &mut *item.expr else {
            continue;
        };
        let stmts = std::mem::take(&mut block.block.stmts);
        for stmt in stmts {
            match stmt {
                syn::Stmt::Macro(m)
                    if m.mac
                        .path
                        .segments
                        .last()
                        .is_some_and(|s| s.ident == "json_dispatch") =>
                {
                    let inner: syn::File =
                        syn::parse2(m.mac.tokens).expect("json_dispatch! holds items");
                    block
                        .block
                        .stmts
                        .extend(inner.items.into_iter().map(syn::Stmt::Item));
                }
                stmt => block.block.stmts.push(stmt),
            }
        }
    }
}

/// Whether the snapshots are to be rewritten: `UPDATE_EXPAND=1`, and nothing else.
fn updating() -> bool {
    is_update(std::env::var_os("UPDATE_EXPAND").as_deref())
}

fn is_update(value: Option<&std::ffi::OsStr>) -> bool {
    value.is_some_and(|v| v == "1")
}

/// Compares the expansion of `tests/expand/<name>.rs` with `<name>.expanded.rs`.
fn check_snapshot(name: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/expand");
    let expanded = expand_file(&dir.join(format!("{name}.rs")));
    let snapshot = dir.join(format!("{name}.expanded.rs"));
    if let Err(problem) = compare(&snapshot, &expanded, updating()) {
        panic!("{problem}");
    }
}

/// `expanded` against the snapshot file: written only when `update`; missing or different is
/// an error otherwise.
fn compare(snapshot: &Path, expanded: &str, update: bool) -> Result<(), String> {
    if update {
        std::fs::write(snapshot, expanded).expect("snapshot is writable");
        return Ok(());
    }
    let Ok(expected) = std::fs::read_to_string(snapshot) else {
        return Err(format!(
            "no expansion snapshot {}: run with UPDATE_EXPAND=1 to write it, then review it",
            snapshot.display()
        ));
    };
    if expected == expanded {
        Ok(())
    } else {
        Err(format!(
            "expansion changed ({}); review the diff and rerun with UPDATE_EXPAND=1\n--- expected\n{expected}\n--- actual\n{expanded}",
            snapshot.display()
        ))
    }
}

#[test]
fn b2_expansion_snapshot_small_toolbox() {
    check_snapshot("small");
}

/// Freshness labels, stale answers and pre-call checks (R6, R10) in generated code.
#[test]
fn r6_r10_expansion_snapshot_freshness_and_prechecks() {
    check_snapshot("fresh");
}

/// `#[toolbox(json)]` (B8): the argument structs and `ToolDispatch`.
#[test]
fn b8_expansion_snapshot_json_dispatcher() {
    check_snapshot("json");
}

/// B13: per-tool deadlines in generated code: a tool's own `timeout`, the toolbox's for the
/// others, an async call raced against the clock, a sync one checked when it returns, an
/// adapter timed by the deadline of the alternative it is recorded against.
#[test]
fn b13_expansion_snapshot_deadlines() {
    check_snapshot("timed");
}

/// A snapshot that does not exist fails (it is never written on the fly), and so does one
/// that differs; only `UPDATE_EXPAND=1` rewrites, not `0` or any other value.
#[test]
fn snapshots_fail_when_missing_and_update_only_on_1() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/expand");
    let missing = dir.join("no-such-input.expanded.rs");
    let problem = compare(&missing, "fn f() {}\n", false).unwrap_err();
    assert!(problem.contains("no expansion snapshot"), "{problem}");
    assert!(!missing.exists(), "a missing snapshot is not written");
    let small = dir.join("small.expanded.rs");
    assert!(compare(&small, "something else", false).is_err());

    // Only the exact value `1` updates.
    for (value, update) in [
        ("1", true),
        ("0", false),
        ("", false),
        ("yes", false),
        ("1 ", false),
    ] {
        assert_eq!(
            is_update(Some(std::ffi::OsStr::new(value))),
            update,
            "{value:?}"
        );
    }
    assert!(!is_update(None));
}
