//! README.md's "What the main job prints" shows the real output of
//! `cargo run --example agent -- --break bash`, and "The agent on MCP" the real output of
//! `cargo run --example mcp_agent --features mcp -- --kill files@6`. This test ties each
//! block to the golden run of the same scenario (`tests/golden/agent_break_bash.txt`,
//! `tests/golden/mcp_agent_kill_files.txt`; `tests/agent_scenarios.rs` and
//! `tests/b10_mcp_agent.rs` compare them with live runs), so the README cannot drift: both
//! sides are normalised the same way (timestamps, the temporary directory, the search
//! server's port), everything else must match line for line.
//!
//! When the agent's output changes on purpose: rerun `UPDATE_GOLDEN=1 cargo test --test
//! agent_scenarios`, then paste a real run of `cargo run --example agent -- --break bash` into
//! the README block (its timestamps and paths may stay as they came out).
//!
//! Also here: the rules every golden file follows (see `tests/common/mod.rs`).

mod common;
#[path = "common/run_output.rs"]
mod run_output;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use run_output::normalise;

/// The README's real runs: its section, the command it says it ran, the golden of the same
/// scenario.
const RUNS: [(&str, &str, &str); 2] = [
    (
        "## What the main job prints",
        "cargo run --example agent -- --break bash",
        "agent_break_bash.txt",
    ),
    (
        "## The agent on MCP",
        "cargo run --example mcp_agent --features mcp -- --kill files@6",
        "mcp_agent_kill_files.txt",
    ),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The section's text before its first `text` block, and that block's lines.
fn readme_block(readme: &str, section: &str) -> (String, String) {
    let mut lines = readme.lines();
    lines
        .by_ref()
        .find(|l| l.trim_end() == section)
        .unwrap_or_else(|| panic!("README.md has no {section:?} section"));
    let mut prose = String::new();
    for line in lines.by_ref() {
        if line.trim_end() == "```text" {
            break;
        }
        assert!(
            !line.starts_with("## "),
            "the {section:?} section has no ```text block before {line:?}"
        );
        prose.push_str(line);
        prose.push('\n');
    }
    let mut block = String::new();
    for line in lines.by_ref() {
        if line.trim_end() == "```" {
            return (prose, block);
        }
        block.push_str(line);
        block.push('\n');
    }
    panic!("the ```text block under {section:?} is not closed");
}

#[test]
fn readme_real_outputs_match_their_golden_runs() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    for (section, command, golden) in RUNS {
        compare(&readme, section, command, golden);
    }
}

fn compare(readme: &str, section: &str, command: &str, golden_file: &str) {
    let (prose, block) = readme_block(readme, section);
    let prose = prose.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        prose.contains(&format!("`{command}`")),
        "the section no longer says the block is the output of `{command}`; this test compares \
         it with {golden_file}: keep the two in step"
    );
    let golden_path = root().join("tests").join("golden").join(golden_file);
    let golden = std::fs::read_to_string(&golden_path)
        .unwrap_or_else(|e| panic!("{} not readable: {e}", golden_path.display()));
    let (readme_side, golden_side) = (normalise(&block), normalise(&golden));
    assert!(
        readme_side == golden_side,
        "README.md's real-output block ({section:?}) differs from {} once both are normalised.\n\
         Paste a real run of `{command}` into the block (timestamps and paths may stay as they \
         came out).\n(- golden, + README)\n{}",
        golden_path.display(),
        changes_only(&common::line_diff(
            &format!("{golden_side}\n"),
            &format!("{readme_side}\n")
        ))
    );
}

/// The lines of a [`common::line_diff`] that differ, with two lines of context around each.
fn changes_only(diff: &str) -> String {
    let lines: Vec<&str> = diff.lines().collect();
    let changed = |i: usize| lines[i].starts_with(['-', '+']);
    let keep = |i: usize| (i.saturating_sub(2)..(i + 3).min(lines.len())).any(changed);
    let mut out = String::new();
    let mut skipped = false;
    for (i, line) in lines.iter().enumerate() {
        if keep(i) {
            out.push_str(line);
            out.push('\n');
            skipped = false;
        } else if !skipped {
            out.push_str("  ...\n");
            skipped = true;
        }
    }
    out
}

#[test]
fn the_readme_block_has_real_values_the_normaliser_replaces() {
    // The README shows a real run: a real path, port and timestamps, not the golden's
    // placeholders (a pasted golden would pass the comparison but show no real output).
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    for (section, ..) in RUNS {
        let (_, block) = readme_block(&readme, section);
        for placeholder in ["$TMPDIR", "<port>", "<pid>", "YYYY-MM-DD"] {
            assert!(
                !block.contains(placeholder),
                "README.md's real-output block under {section:?} holds the placeholder \
                 {placeholder:?}: paste a real run"
            );
        }
        assert!(
            block.contains("/circuit-breaker-agent-"),
            "a real workspace path under {section:?}"
        );
    }
}

/// README.md's excerpts of real runs: its section, the command it says it ran, the golden of
/// that run (compared with live runs by `tests/b12_telemetry_example.rs` and
/// `tests/b12_watch.rs`). Each piece of the block between `…` lines is a run of consecutive
/// lines of the golden, the pieces in the golden's order.
const EXCERPTS: [(&str, &str, &str); 2] = [
    (
        "### Exported spans and metrics",
        "cargo run --example telemetry --features otel",
        "telemetry_example.txt",
    ),
    (
        "### The live view",
        "cargo run --example agent -- --break bash --watch | cat",
        "agent_break_bash_watch.txt",
    ),
];

#[test]
fn b12_readme_excerpts_are_pieces_of_their_golden_runs() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    for (section, command, golden_file) in EXCERPTS {
        let (prose, block) = readme_block(&readme, section);
        let prose = prose.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            prose.contains(&format!("`{command}`")),
            "the {section:?} section no longer says its block is from `{command}`"
        );
        let golden_path = root().join("tests").join("golden").join(golden_file);
        let golden = std::fs::read_to_string(&golden_path)
            .unwrap_or_else(|e| panic!("{} not readable: {e}", golden_path.display()));
        let golden = normalise(&golden);
        let golden: Vec<&str> = golden.lines().collect();
        let block = normalise(&block);
        let mut from = 0;
        let mut pieces = 0;
        for piece in block.split("\n…\n") {
            let piece: Vec<&str> = piece.lines().collect();
            assert!(!piece.is_empty(), "an empty piece under {section:?}");
            let at = (from..=golden.len().saturating_sub(piece.len()))
                .find(|&i| golden[i..i + piece.len()] == piece[..])
                .unwrap_or_else(|| {
                    panic!(
                        "README.md's excerpt under {section:?} is not in {} (after line {from}): \
                         paste it again from a real run of `{command}`:\n{}",
                        golden_path.display(),
                        piece.join("\n")
                    )
                });
            from = at + piece.len();
            pieces += 1;
        }
        assert!(pieces >= 1);
    }
}

// ---- the rules every golden file follows ----

#[test]
fn only_exactly_1_regenerates() {
    assert!(common::update_requested(Some(OsStr::new("1"))));
    for value in ["", "0", "true", "yes", " 1", "1 ", "01", "2"] {
        assert!(
            !common::update_requested(Some(OsStr::new(value))),
            "UPDATE_GOLDEN={value:?} must compare, not rewrite"
        );
    }
    assert!(!common::update_requested(None));
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "circuit-breaker-golden-rules-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn a_missing_golden_fails_and_is_not_created() {
    let dir = scratch("missing");
    let path = dir.join("absent.txt");
    let err = common::compare_golden(&path, "text", false, false).expect_err("missing fails");
    assert!(err.contains("UPDATE_GOLDEN=1"), "{err}");
    assert!(!path.exists(), "comparing never writes");
    assert!(!dir.exists());
}

#[test]
fn a_different_golden_fails_with_a_diff() {
    let dir = scratch("differs");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join("g.txt");
    std::fs::write(&path, "one\ntwo\n").expect("write");
    let err = common::compare_golden(&path, "one\nthree", false, false).expect_err("differs");
    assert!(
        err.contains("-   2 | two") && err.contains("+   2 | three"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
    assert_eq!(
        common::compare_golden(&path, "one\ntwo", false, false),
        Ok(())
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn update_rewrites_except_the_seed_verbatim_files() {
    let dir = scratch("update");
    let path = dir.join("new.txt");
    assert_eq!(common::compare_golden(&path, "fresh", true, false), Ok(()));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "fresh\n");
    assert_eq!(common::compare_golden(&path, "fresh", false, false), Ok(()));
    // A seed file is never written, even when an update is asked for.
    let seed = dir.join("seed_x.txt");
    assert!(common::compare_golden(&seed, "anything", true, true).is_err());
    assert!(!Path::new(&seed).exists());
    let _ = std::fs::remove_dir_all(&dir);
}
