// An adapter must have the tool's signature, return type included: `grep_with_rg` returns the
// raw output of `bash`, not `grep`'s hits.
use std::io;

use agent_circuit_breaker::toolbox;

struct Workspace;

#[toolbox]
impl Workspace {
    #[tool(
        provides = "content search across files",
        alternatives(bash(method = "rg or grep command", via = grep_with_rg)),
        fallback = "ask the user which files to examine",
    )]
    fn grep(&self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(vec![pattern.to_owned()])
    }

    fn grep_with_rg(&self, pattern: &str) -> io::Result<String> {
        self.bash(&format!("rg {pattern}"))
    }

    #[tool(provides = "command execution", fallback = "report commands that need to be run manually")]
    fn bash(&self, command: &str) -> io::Result<String> {
        Ok(command.to_owned())
    }
}

fn main() {
    let agent = GuardedWorkspace::new(Workspace);
    let _ = agent.grep("TODO");
}
