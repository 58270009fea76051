// The example of a missing `fallback` is made from what each tool provides (or its name), not
// the same text for every tool.
use std::io;

use agent_circuit_breaker::toolbox;

struct Workspace;

#[toolbox]
impl Workspace {
    #[tool(provides = "command execution")]
    fn bash(&self, command: &str) -> io::Result<String> {
        Ok(command.to_owned())
    }

    #[tool(provides = "file content inspection")]
    fn read(&self, path: &str) -> io::Result<String> {
        Ok(path.to_owned())
    }

    #[tool(name = "web_search")]
    fn search(&self, query: &str) -> io::Result<String> {
        Ok(query.to_owned())
    }
}

fn main() {
    // The generated names stay resolvable: the mistakes above are the only errors.
    let agent = GuardedWorkspace::new(Workspace);
    println!("{:?} {}", WorkspaceTool::ALL, agent.expeditor().state_table());
}
