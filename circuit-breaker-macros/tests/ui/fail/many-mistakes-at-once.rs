// Unrelated mistakes across a toolbox: every one is reported in the same compile.
use std::io;

use agent_circuit_breaker::toolbox;

struct Workspace;

#[toolbox(policy(budget = 0))]
impl Workspace {
    #[tool(
        provides = "content search across files",
        alternatives(
            bahs(method = "rg or grep command"),
            grep(method = "search again"),
        ),
    )]
    fn grep(&self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(vec![pattern.to_owned()])
    }

    #[tool(provides = "command execution", fallback = "report commands that need to be run manually", treshold = 2)]
    fn bash(&self, command: &str) -> io::Result<String> {
        Ok(command.to_owned())
    }

    #[tool(provides = "file content inspection", fallback = "ask the user to paste file contents")]
    fn read(self, path: &str) -> io::Result<String> {
        Ok(path.to_owned())
    }

    #[tool(name = "read", provides = "file creation", fallback = "output file contents for the user to save manually")]
    fn write(&self, path: &str, contents: &str) -> io::Result<()> {
        let _ = (path, contents);
        Ok(())
    }
}

fn main() {
    // The generated names stay resolvable: the mistakes above are the only errors.
    let agent = GuardedWorkspace::new(Workspace);
    println!("{:?} {}", WorkspaceTool::ALL, agent.expeditor().state_table());
}
