//! The real runs the documentation shows, tied to the golden runs of the same scenarios, so
//! the docs cannot drift from what the examples print.
//!
//! - `docs/transcripts.md` holds the full real output of
//!   `cargo run --example agent -- --break bash` ("The main job") and of
//!   `cargo run --example mcp_agent --features mcp -- --kill files@6` ("The agent on MCP").
//!   Each block is compared with its golden (`tests/golden/agent_break_bash.txt`,
//!   `tests/golden/mcp_agent_kill_files.txt`; `tests/agent_scenarios.rs` and
//!   `tests/mcp/b10_mcp_agent.rs` compare those with live runs): both sides are normalised the same
//!   way (timestamps, the temporary directory, the search server's port), everything else must
//!   match line for line.
//! - Excerpts of real runs — README.md's "What the main job prints", and `docs/transcripts.md`'s
//!   live view and exported telemetry — are pieces of their golden runs, in order.
//! - README.md's example prints the state table the README shows: the same toolbox runs here.
//!
//! (`docs/transcripts.md`'s service transcript is compared by `tests/state_machine/b13_time.rs`.)
//!
//! When the agent's output changes on purpose: rerun `UPDATE_GOLDEN=1 cargo test --test
//! agent_scenarios`, then paste a real run of `cargo run --example agent -- --break bash` into
//! the transcript's block (its timestamps and paths may stay as they came out).
//!
//! Also here: the rules every golden file follows (see `tests/common/mod.rs`).

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/run_output.rs"]
mod run_output;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use run_output::normalise;

/// The page that holds the full transcripts of the examples.
const TRANSCRIPTS: &str = "docs/transcripts.md";

/// The transcripts' full real runs: their section, the command it says it ran, the golden of
/// the same scenario.
const RUNS: [(&str, &str, &str); 2] = [
    (
        "## The main job",
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

/// A documentation file of the workspace, by its path from the root.
fn doc(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// One fenced block of a section: its fence's tag (`text`, `rust`), the prose between the
/// previous block (or the heading) and this one, and its lines.
struct Block {
    tag: String,
    prose: String,
    body: String,
}

/// The fenced blocks of a section, in order, up to the next `## ` heading.
fn blocks(page: &str, file: &str, section: &str) -> Vec<Block> {
    let mut lines = page.lines();
    lines
        .by_ref()
        .find(|l| l.trim_end() == section)
        .unwrap_or_else(|| panic!("{file} has no {section:?} section"));
    let mut found = Vec::new();
    let mut prose = String::new();
    while let Some(line) = lines.next() {
        if line.starts_with("## ") {
            break;
        }
        let Some(tag) = line.trim_end().strip_prefix("```") else {
            prose.push_str(line);
            prose.push('\n');
            continue;
        };
        let mut body = String::new();
        loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("a block under {section:?} of {file} is not closed"));
            if line.trim_end() == "```" {
                break;
            }
            body.push_str(line);
            body.push('\n');
        }
        found.push(Block {
            tag: tag.to_owned(),
            prose: std::mem::take(&mut prose),
            body,
        });
    }
    found
}

/// The section's text before its first `text` block, and that block's lines.
fn text_block(page: &str, file: &str, section: &str) -> (String, String) {
    let mut prose = String::new();
    for block in blocks(page, file, section) {
        prose.push_str(&block.prose);
        if block.tag == "text" {
            return (prose, block.body);
        }
    }
    panic!("the {section:?} section of {file} has no ```text block");
}

#[test]
fn transcripts_real_outputs_match_their_golden_runs() {
    let page = doc(TRANSCRIPTS);
    for (section, command, golden) in RUNS {
        compare(&page, section, command, golden);
    }
}

fn compare(page: &str, section: &str, command: &str, golden_file: &str) {
    let (prose, block) = text_block(page, TRANSCRIPTS, section);
    let prose = prose.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        prose.contains(&format!("`{command}`")),
        "the section no longer says the block is the output of `{command}`; this test compares \
         it with {golden_file}: keep the two in step"
    );
    let golden_path = root().join("tests").join("golden").join(golden_file);
    let golden = std::fs::read_to_string(&golden_path)
        .unwrap_or_else(|e| panic!("{} not readable: {e}", golden_path.display()));
    let (doc_side, golden_side) = (normalise(&block), normalise(&golden));
    assert!(
        doc_side == golden_side,
        "{TRANSCRIPTS}'s real-output block ({section:?}) differs from {} once both are \
         normalised.\nPaste a real run of `{command}` into the block (timestamps and paths may \
         stay as they came out).\n(- golden, + {TRANSCRIPTS})\n{}",
        golden_path.display(),
        changes_only(&common::line_diff(
            &format!("{golden_side}\n"),
            &format!("{doc_side}\n")
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
fn the_transcript_blocks_have_real_values_the_normaliser_replaces() {
    // The page shows a real run: a real path, port and timestamps, not the golden's
    // placeholders (a pasted golden would pass the comparison but show no real output).
    let page = doc(TRANSCRIPTS);
    for (section, ..) in RUNS {
        let (_, block) = text_block(&page, TRANSCRIPTS, section);
        for placeholder in ["$TMPDIR", "<port>", "<pid>", "YYYY-MM-DD"] {
            assert!(
                !block.contains(placeholder),
                "{TRANSCRIPTS}'s real-output block under {section:?} holds the placeholder \
                 {placeholder:?}: paste a real run"
            );
        }
        assert!(
            block.contains("/circuit-breaker-agent-"),
            "a real workspace path under {section:?}"
        );
    }
}

/// Excerpts of real runs: the file and section that show one, the command it says it ran,
/// the golden of that run (compared with live runs by `tests/agent_scenarios.rs`,
/// `tests/telemetry/b12_telemetry_example.rs` and `tests/telemetry/b12_watch.rs`). Each piece of the block
/// between `…` lines is a run of consecutive lines of the golden, the pieces in the golden's
/// order.
const EXCERPTS: [(&str, &str, &str, &str); 3] = [
    (
        "README.md",
        "## What the main job prints",
        "cargo run --example agent -- --break bash",
        "agent_break_bash.txt",
    ),
    (
        TRANSCRIPTS,
        "## Exported spans and metrics",
        "cargo run --example telemetry --features otel",
        "telemetry_example.txt",
    ),
    (
        TRANSCRIPTS,
        "## The live view",
        "cargo run --example agent -- --break bash --watch | cat",
        "agent_break_bash_watch.txt",
    ),
];

#[test]
fn excerpts_are_pieces_of_their_golden_runs() {
    for (file, section, command, golden_file) in EXCERPTS {
        let (prose, block) = text_block(&doc(file), file, section);
        let prose = prose.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            prose.contains(&format!("`{command}`")),
            "the {section:?} section of {file} no longer says its block is from `{command}`"
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
            assert!(
                !piece.is_empty(),
                "an empty piece under {section:?} of {file}"
            );
            let at = (from..=golden.len().saturating_sub(piece.len()))
                .find(|&i| golden[i..i + piece.len()] == piece[..])
                .unwrap_or_else(|| {
                    panic!(
                        "{file}'s excerpt under {section:?} is not in {} (after line {from}): \
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

/// README.md's example, run here: the same toolbox and the same calls. Its state table is
/// compared with the block the README shows after the example, and the README's code is
/// checked to be this code (every line of [`README_EXAMPLE`], in order).
mod readme_example {
    use agent_circuit_breaker::{CircuitState, toolbox};
    use std::io;

    pub struct Workspace;

    #[toolbox]
    impl Workspace {
        #[tool(
            provides = "content search across files",
            alternatives(bash(method = "rg or grep command", via = grep_with_rg)),
            fallback = "ask the user which files to examine",
        )]
        fn grep(&self, _pattern: &str) -> io::Result<Vec<String>> {
            Err(io::ErrorKind::PermissionDenied.into()) // broken
        }

        /// Grep's goal reached through Bash.
        fn grep_with_rg(&self, pattern: &str) -> io::Result<Vec<String>> {
            Ok(self
                .bash(&format!("rg -l {pattern}"))?
                .lines()
                .map(String::from)
                .collect())
        }

        #[tool(
            provides = "command execution",
            fallback = "report commands to run by hand"
        )]
        fn bash(&self, _command: &str) -> io::Result<String> {
            Ok("config.toml".into())
        }
    }

    /// The README's calls; the state table it prints.
    pub fn run() -> String {
        let tools = GuardedWorkspace::new(Workspace);
        for _ in 0..3 {
            assert!(tools.grep("API_KEY").is_err());
        }
        assert_eq!(
            tools.expeditor().state(WorkspaceTool::Grep),
            Some(CircuitState::Open)
        );
        let hits = tools.grep("API_KEY").expect("routed through bash");
        assert_eq!(hits.value, ["config.toml"]);
        tools.expeditor().state_table().to_string()
    }
}

/// The lines of README.md's example that make the toolbox and its calls, as they stand there
/// (rustfmt formats [`readme_example`] differently; the code is the same).
const README_EXAMPLE: &str = r#"
#[toolbox]
impl Workspace {
        provides = "content search across files",
        alternatives(bash(method = "rg or grep command", via = grep_with_rg)),
        fallback = "ask the user which files to examine",
    fn grep(&self, _pattern: &str) -> io::Result<Vec<String>> {
        Err(io::ErrorKind::PermissionDenied.into()) // broken
    fn grep_with_rg(&self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(self.bash(&format!("rg -l {pattern}"))?.lines().map(String::from).collect())
    #[tool(provides = "command execution", fallback = "report commands to run by hand")]
    fn bash(&self, _command: &str) -> io::Result<String> {
        Ok("config.toml".into())
let tools = GuardedWorkspace::new(Workspace);
for _ in 0..3 {
    assert!(tools.grep("API_KEY").is_err()); // the tool's own error, untouched
assert_eq!(tools.expeditor().state(WorkspaceTool::Grep), Some(CircuitState::Open));
let hits = tools.grep("API_KEY")?; // Grep is not called again: Bash stands in
assert_eq!(hits.value, ["config.toml"]);
println!("{}", tools.expeditor().state_table());
"#;

#[test]
fn the_readme_example_prints_the_state_table_the_readme_shows() {
    let readme = doc("README.md");
    let section = blocks(&readme, "README.md", "## An example");
    let at = section
        .iter()
        .position(|b| b.tag == "rust")
        .expect("README.md's example is a ```rust block");
    let (code, shown) = (&section[at].body, section.get(at + 1));
    let mut lines = code.lines();
    for want in README_EXAMPLE.lines().filter(|l| !l.is_empty()) {
        assert!(
            lines.any(|l| l == want),
            "README.md's example no longer has the line {want:?} (or not in this order): \
             change `readme_example` in tests/reports/readme_output.rs with it"
        );
    }
    // The block after the code: what it prints.
    let shown = shown
        .filter(|b| b.tag == "text")
        .expect("a ```text block after README.md's example: what it prints");
    let printed = readme_example::run();
    assert_eq!(
        normalise(&shown.body),
        normalise(&printed),
        "README.md's example prints another state table than the README shows: paste it in"
    );
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
fn update_rewrites_except_the_source_documents_verbatim_files() {
    let dir = scratch("update");
    let path = dir.join("new.txt");
    assert_eq!(common::compare_golden(&path, "fresh", true, false), Ok(()));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "fresh\n");
    assert_eq!(common::compare_golden(&path, "fresh", false, false), Ok(()));
    // A `seed_*` file (copied from the source document) is never written, even when an
    // update is asked for.
    let seed = dir.join("seed_x.txt");
    assert!(common::compare_golden(&seed, "anything", true, true).is_err());
    assert!(!Path::new(&seed).exists());
    let _ = std::fs::remove_dir_all(&dir);
}
