// `#[agent_circuit_breaker::tool(..)]`, the form for impl blocks that also carry another framework's
// `#[tool]`, mixed with the plain form, and `#[agent_circuit_breaker::toolbox]` itself qualified.
use std::io;

struct Workspace;

#[agent_circuit_breaker::toolbox]
impl Workspace {
    #[agent_circuit_breaker::tool(
        provides = "content search across files",
        alternatives(read(method = "read suspected files directly")),
        fallback = "ask the user which files to examine",
    )]
    fn grep(&self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(vec![pattern.to_owned()])
    }

    /// A documented tool, with other attributes around the qualified one.
    #[inline]
    #[agent_circuit_breaker::tool(provides = "file content inspection", fallback = "ask the user to paste file contents")]
    #[allow(clippy::unnecessary_wraps)]
    fn read(&self, path: &str) -> io::Result<String> {
        Ok(path.to_owned())
    }
}

fn main() {
    assert_eq!(WorkspaceTool::ALL, [WorkspaceTool::Grep, WorkspaceTool::Read]);
    let agent = GuardedWorkspace::new(Workspace);
    assert_eq!(agent.read("Cargo.toml").map(|r| r.value).ok().as_deref(), Some("Cargo.toml"));
    assert_eq!(agent.toolbox().grep("x").ok(), Some(vec!["x".to_owned()]));
}
