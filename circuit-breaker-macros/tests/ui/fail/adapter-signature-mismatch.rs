use std::io;

use agent_circuit_breaker::toolbox;

struct Workspace;

#[toolbox]
impl Workspace {
    #[tool(
        provides = "content search across files",
        alternatives(
            bash(method = "rg or grep command", via = grep_with_rg),
            read(method = "read suspected files directly", via = grep_by_reading),
        ),
        fallback = "ask the user which files to examine",
    )]
    fn grep(&self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(vec![pattern.to_owned()])
    }

    async fn grep_with_rg(&self, pattern: &str) -> io::Result<Vec<String>> {
        self.bash(&format!("rg {pattern}")).map(|out| vec![out])
    }

    fn grep_by_reading(&self, pattern: &str, path: &str) -> io::Result<Vec<String>> {
        self.read(path).map(|text| vec![format!("{text}:{pattern}")])
    }

    #[tool(provides = "command execution", fallback = "report commands that need to be run manually")]
    fn bash(&self, command: &str) -> io::Result<String> {
        Ok(command.to_owned())
    }

    #[tool(provides = "file content inspection", fallback = "ask the user to paste file contents")]
    fn read(&self, path: &str) -> io::Result<String> {
        Ok(path.to_owned())
    }
}

fn main() {
    // The generated names stay resolvable: the mistakes above are the only errors.
    let agent = GuardedWorkspace::new(Workspace);
    println!("{:?} {}", WorkspaceTool::ALL, agent.expeditor().state_table());
}
