// A severity written as the degradation's text (`degradation = "high"`, any case) would compile
// as a low degradation that reads "high": each is an error at its string.
use std::io;

use agent_circuit_breaker::toolbox;

struct Workspace;

#[toolbox]
impl Workspace {
    #[tool(
        provides = "content search across files",
        alternatives(
            bash(method = "rg or grep command", degradation = "high"),
            read(method = "read suspected files directly", degradation = "Low"),
            glob(method = "list files by name", degradation = " UNKNOWN "),
        ),
        fallback = "ask the user which files to examine",
    )]
    fn grep(&self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(vec![pattern.to_owned()])
    }

    #[tool(provides = "command execution", fallback = "report commands that need to be run manually")]
    fn bash(&self, command: &str) -> io::Result<String> {
        Ok(command.to_owned())
    }

    #[tool(provides = "file content inspection", fallback = "ask the user to paste file contents")]
    fn read(&self, path: &str) -> io::Result<String> {
        Ok(path.to_owned())
    }

    #[tool(provides = "file listing", fallback = "ask the user for the file names")]
    fn glob(&self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(vec![pattern.to_owned()])
    }
}

fn main() {
    // The generated names stay resolvable: the mistakes above are the only errors.
    let agent = GuardedWorkspace::new(Workspace);
    println!("{:?} {}", WorkspaceTool::ALL, agent.expeditor().state_table());
}
