use std::io;

use agent_circuit_breaker::toolbox;

struct Workspace;

#[toolbox]
impl Workspace {
    #[tool(
        provides = "content search across files",
        alternatives(bash(method = "rg or grep command", via = grp_with_rg)),
        fallback = "ask the user which files to examine",
    )]
    fn grep(&self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(vec![pattern.to_owned()])
    }

    fn grep_with_rg(&self, pattern: &str) -> io::Result<Vec<String>> {
        self.bash(&format!("rg {pattern}")).map(|out| vec![out])
    }

    #[tool(provides = "command execution", fallback = "report commands that need to be run manually")]
    fn bash(&self, command: &str) -> io::Result<String> {
        Ok(command.to_owned())
    }
}

fn main() {
    // The generated names stay resolvable: the mistakes above are the only errors.
    let agent = GuardedWorkspace::new(Workspace);
    println!("{:?} {}", WorkspaceTool::ALL, agent.expeditor().state_table());
}
