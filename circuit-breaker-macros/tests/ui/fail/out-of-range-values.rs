use std::io;

use agent_circuit_breaker::toolbox;

struct Workspace;

#[toolbox(policy(threshold = 0, budget = 0, probe_every = 0, probe_unit = "step"))]
impl Workspace {
    #[tool(
        provides = "content search across files",
        fallback = "ask the user which files to examine",
        threshold = 0,
        probe_every = 0,
    )]
    fn grep(&self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(vec![pattern.to_owned()])
    }

    #[tool(provides = "file content inspection", fallback = "ask the user to paste file contents", threshold = -1)]
    fn read(&self, path: &str) -> io::Result<String> {
        Ok(path.to_owned())
    }

    #[tool(provides = "command execution", fallback = "report commands that need to be run manually", probe_every = 2.5)]
    fn bash(&self, command: &str) -> io::Result<String> {
        Ok(command.to_owned())
    }
}

fn main() {
    // The generated names stay resolvable: the mistakes above are the only errors.
    let agent = GuardedWorkspace::new(Workspace);
    println!("{:?} {}", WorkspaceTool::ALL, agent.expeditor().state_table());
}
