//! Expansion snapshot: every change to the generated code shows up as a diff of
//! `tests/expand/*.expanded.rs`. Set `UPDATE_EXPAND=1` to rewrite the snapshots.

use std::path::Path;

use darling::Error;

/// Runs the three phases on `#[toolbox(args)] impl ..` read from a file.
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
        crate::ast::parse(args, quote::quote!(#item), &mut errors).expect("an impl block");
    let checked = crate::check::check(&toolbox, &mut errors);
    errors.finish().expect("snapshot input has no mistakes");
    let tokens = crate::expand::expand(&toolbox, &checked);
    let file: syn::File = syn::parse2(tokens).expect("expansion parses as a file");
    prettyplease::unparse(&file)
}

/// Compares the expansion of `tests/expand/<name>.rs` with `<name>.expanded.rs`.
fn check_snapshot(name: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/expand");
    let input = dir.join(format!("{name}.rs"));
    let snapshot = dir.join(format!("{name}.expanded.rs"));
    let expanded = expand_file(&input);
    if std::env::var_os("UPDATE_EXPAND").is_some() || !snapshot.exists() {
        std::fs::write(&snapshot, &expanded).expect("snapshot is writable");
    }
    let expected = std::fs::read_to_string(&snapshot).expect("snapshot is readable");
    assert!(
        expected == expanded,
        "expansion of {name} changed; review the diff and rerun with UPDATE_EXPAND=1\n--- expected\n{expected}\n--- actual\n{expanded}"
    );
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
