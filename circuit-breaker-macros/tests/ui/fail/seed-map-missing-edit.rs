// The seed's capability map, as written: `Write` names `Edit` as an alternative, but the map
// declares no `Edit` tool.
use std::io;

use agent_circuit_breaker::toolbox;

struct Workspace;

#[toolbox]
impl Workspace {
    #[tool(
        name = "Grep",
        provides = "content search across files",
        alternatives(
            bash(method = "rg or grep command", degradation = "loses Grep's built-in output formatting"),
            read(method = "read suspected files directly", degradation = "requires knowing which files to check; no broad search"),
        ),
        fallback = "ask the user which files to examine",
    )]
    fn grep(&self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(vec![pattern.to_owned()])
    }

    #[tool(
        name = "Bash",
        provides = "command execution, build tools, git operations",
        fallback = "report commands that need to be run manually",
    )]
    fn bash(&self, command: &str) -> io::Result<String> {
        Ok(command.to_owned())
    }

    #[tool(
        name = "Read",
        provides = "file content inspection",
        alternatives(bash(method = "cat or head command", degradation = "loses line numbering and truncation safety")),
        fallback = "ask the user to paste file contents",
    )]
    fn read(&self, path: &str) -> io::Result<String> {
        Ok(path.to_owned())
    }

    #[tool(
        name = "Write",
        provides = "file creation",
        alternatives(
            edit(method = "create via full-file edit", degradation = "requires file to already exist for Edit"),
            bash(method = "echo/cat heredoc", degradation = "loses Write's atomic file creation"),
        ),
        fallback = "output file contents for the user to save manually",
    )]
    fn write(&self, path: &str, contents: &str) -> io::Result<()> {
        let _ = (path, contents);
        Ok(())
    }

    #[tool(
        name = "WebSearch",
        provides = "external information retrieval",
        fallback = "state what information is needed; ask user to provide it",
    )]
    fn web_search(&self, query: &str) -> io::Result<Vec<String>> {
        Ok(vec![query.to_owned()])
    }
}

fn main() {
    // The generated names stay resolvable: the mistakes above are the only errors.
    let agent = GuardedWorkspace::new(Workspace);
    println!("{:?} {}", WorkspaceTool::ALL, agent.expeditor().state_table());
}
