// The seed's capability map with the `Edit` tool that `Write` names declared, synchronous.
use std::io;

use agent_circuit_breaker::{toolbox, toolbox::ToolSet};

#[derive(Default)]
struct Workspace;

#[toolbox]
impl Workspace {
    #[tool(
        name = "Grep",
        provides = "content search across files",
        alternatives(
            bash(method = "rg or grep command", degradation = "loses Grep's built-in output formatting"),
            read(method = "read suspected files directly", degradation = high("requires knowing which files to check; no broad search")),
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
        name = "Edit",
        provides = "in-place file modification",
        fallback = "show the user the change to make by hand",
    )]
    fn edit(&self, path: &str, old: &str, new: &str) -> io::Result<()> {
        let _ = (path, old, new);
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
    let names: Vec<String> = WorkspaceTool::ALL.iter().map(ToString::to_string).collect();
    assert_eq!(names, ["Grep", "Bash", "Read", "Write", "Edit", "WebSearch"]);
    assert_eq!("Edit".parse::<WorkspaceTool>().ok(), Some(WorkspaceTool::Edit));
    assert!("Ed1t".parse::<WorkspaceTool>().is_err());
    assert_eq!(<WorkspaceTool as ToolSet>::ALL.len(), 6);

    let agent = GuardedWorkspace::new(Workspace);
    let written = agent.write("notes.md", "# Notes").map(|r| r.value).ok();
    assert_eq!(written, Some(()));
    let found = agent.grep("TODO").map(|r| r.value).ok();
    assert_eq!(found, Some(vec!["TODO".to_owned()]));
}
