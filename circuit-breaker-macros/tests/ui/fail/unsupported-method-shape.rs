use std::io;

use agent_circuit_breaker::toolbox;

struct Workspace;

#[toolbox]
impl Workspace {
    #[tool(provides = "content search across files", fallback = "ask the user which files to examine")]
    fn grep(self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(vec![pattern.to_owned()])
    }

    #[tool(provides = "file content inspection", fallback = "ask the user to paste file contents")]
    unsafe fn read(&self, path: *const u8) -> io::Result<String> {
        Ok(format!("{path:?}"))
    }

    #[tool(provides = "file creation", fallback = "output file contents for the user to save manually")]
    fn write(&self, path: &str, contents: &str) {
        let _ = (path, contents);
    }

    #[tool(provides = "directory listing", fallback = "ask the user to list the directory")]
    fn list(&self, dir: &str) -> io::Result<impl Iterator<Item = String>> {
        Ok(std::iter::once(dir.to_owned()))
    }
}

fn main() {
    // The generated names stay resolvable: the mistakes above are the only errors.
    let agent = GuardedWorkspace::new(Workspace);
    println!("{:?} {}", WorkspaceTool::ALL, agent.expeditor().state_table());
}
