use std::io;

use agent_circuit_breaker::toolbox;

struct Workspace;

#[toolbox]
impl Workspace {
    #[tool(provides = "content search across files", fallback = "ask the user which files to examine")]
    fn grep(&self, pattern: &str) -> String {
        pattern.to_owned()
    }

    #[tool(provides = "file content inspection", fallback = "ask the user to paste file contents")]
    fn read(&self, path: &str) -> io::Result<String> {
        Ok(path.to_owned())
    }
}

fn main() {
    let agent = GuardedWorkspace::new(Workspace);
    let _ = agent.read("Cargo.toml");
}
