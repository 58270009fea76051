use std::io;

use agent_circuit_breaker::toolbox;

struct Workspace;

#[toolbox]
impl Workspace {
    #[tool(
        provides = "content search across files",
        alternatives(
            bash(degradation = "loses Grep's built-in output formatting"),
            read(method = "read suspected files directly"),
            read(method = "read the whole tree"),
            "web_search",
            edit,
            Self::bash(method = "rg"),
        ),
        fallback = "ask the user which files to examine",
    )]
    fn grep(&self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(vec![pattern.to_owned()])
    }

    #[tool(
        provides = "file content inspection",
        alternatives(bash(method = "cat or head command", via = Self::read_with_cat)),
        fallback = "ask the user to paste file contents",
    )]
    fn read(&self, path: &str) -> io::Result<String> {
        Ok(path.to_owned())
    }

    fn read_with_cat(&self, path: &str) -> io::Result<String> {
        self.bash(&format!("cat {path}"))
    }

    #[tool(provides = "command execution", fallback = "report commands that need to be run manually")]
    fn bash(&self, command: &str) -> io::Result<String> {
        Ok(command.to_owned())
    }

    #[tool(provides = "external information retrieval", fallback = "ask user to provide it")]
    fn web_search(&self, query: &str) -> io::Result<Vec<String>> {
        Ok(vec![query.to_owned()])
    }
}

fn main() {
    // The generated names stay resolvable: the mistakes above are the only errors.
    let agent = GuardedWorkspace::new(Workspace);
    println!("{:?} {}", WorkspaceTool::ALL, agent.expeditor().state_table());
}
