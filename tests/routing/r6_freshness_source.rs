//! R6.1, R6.2: `#[tool(freshness(source = ".."))]` names what may change under a tool, so an
//! identical repeated result reads like the source document's label: "filesystem may have changed
//! since".

use std::io;

use agent_circuit_breaker::{freshness::Freshness, toolbox};

struct Files;

#[toolbox]
impl Files {
    #[tool(
        name = "Grep",
        provides = "content search across files",
        fallback = "ask the user which files to examine",
        freshness(source = "filesystem")
    )]
    fn grep(&self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(vec![format!("config.toml: {pattern}")])
    }

    #[tool(
        name = "Read",
        provides = "file content inspection",
        fallback = "ask the user",
        freshness
    )]
    fn read(&self, path: &str) -> io::Result<String> {
        Ok(path.to_owned())
    }
}

#[test]
fn r6_1_the_cached_label_names_the_declared_source() {
    let files = GuardedFiles::new(Files);
    let first = files.grep("API_KEY").unwrap();
    assert_eq!(
        *first.freshness(),
        Freshness::Fresh,
        "R6.3: fresh data carries no label"
    );
    let again = files.grep("API_KEY").unwrap();
    assert_eq!(
        again.freshness().to_string(),
        "[CACHED RESULT — Grep returned identical results to previous call; filesystem may \
         have changed since]"
    );
    // Without a declared source, the label says "the source".
    let _ = files.read("a.txt").unwrap();
    let read = files.read("a.txt").unwrap();
    assert!(
        matches!(read.freshness(), Freshness::Cached { source, .. } if source == "the source"),
        "{:?}",
        read.freshness()
    );
}
