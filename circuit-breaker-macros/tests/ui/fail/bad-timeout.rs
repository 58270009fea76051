use std::io;

use agent_circuit_breaker::toolbox;

struct Workspace;

// B13: a deadline is a humantime duration in a string, from 1ms to a day, in whole ms.
#[toolbox(timeout = "0s")]
impl Workspace {
    #[tool(provides = "content search across files", fallback = "ask the user", timeout = "30 parsecs")]
    async fn grep(&self, pattern: String) -> io::Result<Vec<String>> {
        Ok(vec![pattern])
    }

    #[tool(provides = "file content inspection", fallback = "ask the user", timeout = "900 years")]
    fn read(&self, path: &str) -> io::Result<String> {
        Ok(path.to_owned())
    }

    #[tool(provides = "command execution", fallback = "report the commands", timeout = 30)]
    fn bash(&self, command: &str) -> io::Result<String> {
        Ok(command.to_owned())
    }

    #[tool(provides = "file creation", fallback = "print the file", timeout = "1500us")]
    fn write(&self, path: &str) -> io::Result<String> {
        Ok(path.to_owned())
    }

    #[tool(provides = "external information retrieval", fallback = "ask the user", timout = "30s")]
    async fn web_search(&self, query: String) -> io::Result<Vec<String>> {
        Ok(vec![query])
    }
}

fn main() {
    // The generated names stay resolvable: the mistakes above are the only errors.
    let agent = GuardedWorkspace::new(Workspace);
    println!("{:?} {}", WorkspaceTool::ALL, agent.expeditor().state_table());
}
