use std::io;

use agent_circuit_breaker::toolbox;

trait Search {
    fn grep(&self, pattern: &str) -> io::Result<Vec<String>>;
}

struct Workspace;

#[toolbox]
impl Search for Workspace {
    #[tool(provides = "content search across files", fallback = "ask the user which files to examine")]
    fn grep(&self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(vec![pattern.to_owned()])
    }
}

fn main() {
    let _ = Workspace.grep("TODO");
}
