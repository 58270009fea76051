// The guarded handle has methods of its own (`new`, `expeditor`, `toolbox`, ..): a tool
// method of the same name would clash with them, so it is an error at the method's name,
// with the way out (rename the method, keep the tool's name).
use std::io;

use agent_circuit_breaker::toolbox;

struct Workspace;

#[toolbox]
impl Workspace {
    #[tool(provides = "a new scratch file", fallback = "ask the user to create the file")]
    fn new(&self, path: &str) -> io::Result<String> {
        Ok(path.to_owned())
    }

    #[tool(name = "Toolbox", provides = "the list of tools", fallback = "list the tools by hand")]
    fn toolbox(&self) -> io::Result<Vec<String>> {
        Ok(Vec::new())
    }

    #[tool(provides = "content search across files", fallback = "ask the user which files to examine")]
    fn grep(&self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(vec![pattern.to_owned()])
    }
}

fn main() {}
