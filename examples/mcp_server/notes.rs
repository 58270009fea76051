//! The example's toolbox: a few notes, searched and read, with faults injected on demand.
//! `#[toolbox(json)]` makes its guarded handle a `ToolDispatch`: nothing else is written
//! for MCP.
//!
//! `tests/mcp/b9_mcp.rs` includes this file too, so the in-process tests and the child process
//! serve the same tools.

use std::collections::HashMap;
use std::io;
use std::sync::Mutex;

use agent_circuit_breaker::toolbox;

/// The notes the tools search and read.
pub const NOTES: [(&str, &str); 3] = [
    (
        "notes/deploy.md",
        "Deploy with ./deploy.sh staging; roll back with ./deploy.sh --undo.",
    ),
    (
        "notes/oncall.md",
        "The on-call rota is in the team calendar. Page via the incident channel.",
    ),
    (
        "notes/release.md",
        "Release on Tuesdays. Deploy to staging first, then production.",
    ),
];

/// Tools made to fail: for each, how many more calls fail (`u32::MAX`: every one).
#[derive(Debug, Default)]
pub struct Faults {
    failing: Mutex<HashMap<String, u32>>,
}

impl Faults {
    /// Breaks `tool`: its next `calls` calls fail (`None`: every call, until healed).
    pub fn break_tool(&self, tool: &str, calls: Option<u32>) {
        self.lock()
            .insert(tool.to_owned(), calls.unwrap_or(u32::MAX));
    }

    /// Mends `tool`: its calls succeed again.
    #[allow(
        dead_code,
        reason = "the tests mend a tool; the example mends by --fail-calls"
    )]
    pub fn heal(&self, tool: &str) {
        self.lock().remove(tool);
    }

    /// Whether this call of `tool` fails (counting it).
    fn fails(&self, tool: &str) -> bool {
        let mut failing = self.lock();
        match failing.get_mut(tool) {
            Some(0) | None => false,
            Some(left) => {
                if *left != u32::MAX {
                    *left -= 1;
                }
                true
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, u32>> {
        self.failing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A notebook: the notes, and the faults injected into its tools.
#[derive(Debug, Default)]
pub struct Notebook {
    /// Which tools fail, and for how long.
    pub faults: Faults,
}

impl Notebook {
    fn outage(&self, tool: &str) -> io::Result<()> {
        if self.faults.fails(tool) {
            Err(io::Error::new(
                io::ErrorKind::ConnectionRefused,
                format!("{tool}: the index service refused the connection"),
            ))
        } else {
            Ok(())
        }
    }
}

/// `json`: the guarded handle is also a dispatcher by name and JSON arguments (B8), which
/// `McpServer` serves; every name, description and schema comes from here.
#[toolbox(json)]
impl Notebook {
    /// Answers the paths of the notes whose text contains `pattern`.
    #[tool(
        provides = "content search across notes",
        alternatives(read(
            method = "read every note and look for the pattern",
            degradation = "loses the index: every note is read in full",
            via = grep_by_reading,
        )),
        fallback = "ask the user which note to open",
    )]
    fn grep(
        &self,
        /// the text to look for
        pattern: &str,
    ) -> io::Result<Vec<String>> {
        self.outage("grep")?;
        Ok(NOTES
            .iter()
            .filter(|(_, text)| text.contains(pattern))
            .map(|(path, _)| (*path).to_owned())
            .collect())
    }

    /// Grep's goal reached through Read: every note read and searched here.
    fn grep_by_reading(&self, pattern: &str) -> io::Result<Vec<String>> {
        let mut hits = Vec::new();
        for (path, _) in NOTES {
            if self.read(path)?.contains(pattern) {
                hits.push(path.to_owned());
            }
        }
        Ok(hits)
    }

    /// Answers the text of the note at `path`.
    #[tool(
        provides = "note content inspection",
        fallback = "ask the user to paste the note"
    )]
    fn read(
        &self,
        /// the note's path
        path: &str,
    ) -> io::Result<String> {
        self.outage("read")?;
        NOTES
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, text)| (*text).to_owned())
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no note {path}")))
    }

    /// Answers how many words `text` has.
    #[tool(provides = "word counting", fallback = "count the words by hand")]
    fn count_words(
        &self,
        /// the text whose words to count
        text: &str,
    ) -> io::Result<usize> {
        self.outage("count_words")?;
        Ok(text.split_whitespace().count())
    }
}
