//! B1: every mistake in a `#[toolbox]` / `#[tool(..)]` is a compile error at the offending
//! token, all mistakes of a file in one compile (`tests/ui/fail/<mistake>.rs` with the exact
//! `.stderr`), and the valid shapes of the grammar compile and run (`tests/ui/pass/*.rs`).
//!
//! The cases live in the macro crate so that trybuild's project depends on what they use (the
//! runtime with its default features, rmcp's macros, serde), not on every dependency of the
//! workspace's integration tests.
//!
//! Regenerate the expected output with `TRYBUILD=overwrite cargo test -p
//! agent-circuit-breaker-macros --test ui`, then read every changed `.stderr`: one intended error
//! per mistake, on the offending token.

/// One set of cases, so that trybuild builds the dependencies of its project once for both
/// kinds (they are most of its time), not once per kind.
#[test]
fn b1_valid_toolboxes_compile_and_every_mistake_is_a_spanned_error() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
