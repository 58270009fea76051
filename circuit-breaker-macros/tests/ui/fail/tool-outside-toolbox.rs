use std::io;

use agent_circuit_breaker::tool;

struct Workspace;

// The impl block lacks `#[toolbox]`.
impl Workspace {
    #[tool(provides = "content search across files", fallback = "ask the user which files to examine")]
    fn grep(&self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(vec![pattern.to_owned()])
    }
}

#[tool(provides = "file content inspection", fallback = "ask the user to paste file contents")]
fn read(path: &str) -> io::Result<String> {
    Ok(path.to_owned())
}

fn main() {
    let _ = Workspace.grep("TODO");
    let _ = read("Cargo.toml");
}
