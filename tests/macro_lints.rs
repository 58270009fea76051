//! Generated code is lint-quiet: a toolbox under `missing_docs`, `unused_qualifications` and
//! clippy's pedantic group, all denied (checked by `cargo clippy --all-targets` in CI).

#![deny(unused_qualifications, missing_docs, clippy::pedantic, clippy::all)]
#![deny(unused, nonstandard_style, rust_2018_idioms, unreachable_pub)]

use std::io;

use circuit_breaker::toolbox;

/// A workspace.
#[derive(Debug, Default)]
pub struct Workspace {
    calls: std::cell::Cell<u32>,
}

#[toolbox(policy(threshold = 2, budget = 10, probe_every = 4))]
impl Workspace {
    /// Searches.
    ///
    /// # Errors
    /// When the search fails.
    #[tool(
        provides = "content search across files",
        alternatives(
            read(method = "read suspected files", degradation = high("no broad search"), via = grep_by_reading),
            fetch(method = "ask the index")
        ),
        fallback = "ask the user which files to examine"
    )]
    pub fn grep(&self, pattern: &str) -> io::Result<Vec<String>> {
        self.calls.set(self.calls.get() + 1);
        Ok(vec![pattern.to_owned()])
    }

    fn grep_by_reading(&self, pattern: &str) -> io::Result<Vec<String>> {
        self.read(pattern).map(|t| vec![t])
    }

    /// Reads.
    ///
    /// # Errors
    /// When the file cannot be read.
    #[tool(
        provides = "file content inspection",
        fallback = "ask the user to paste file contents"
    )]
    pub fn read(&self, path: &str) -> io::Result<String> {
        Ok(path.to_owned())
    }

    /// Fetches, asynchronously.
    ///
    /// # Errors
    /// When the index is down.
    #[tool(provides = "index lookups", fallback = "skip the index", threshold = 1)]
    pub async fn fetch(&mut self, key: String) -> Result<u64, std::fmt::Error> {
        let len = async { key.len() }.await;
        Ok(u64::try_from(len).unwrap_or(u64::MAX))
    }

    /// A tool without a receiver.
    ///
    /// # Errors
    /// Never.
    #[tool(provides = "the time", fallback = "ask the user for the time")]
    pub fn now() -> Result<u64, io::Error> {
        Ok(0)
    }
}

#[test]
fn b2_lint_quiet_toolbox_works() {
    let agent = GuardedWorkspace::new(Workspace::default());
    assert_eq!(
        agent.grep("x").map(|r| r.value).ok(),
        Some(vec!["x".to_owned()])
    );
    assert_eq!(GuardedWorkspace::now(&agent).map(|r| r.value).ok(), Some(0));
}
