// A route through an adapter first runs the alternative's precheck (R10). When the tool's
// guarded method cannot run it (an async check from a sync tool, a `&mut self` check from a
// `&self` tool), that is an error at the adapter: the check is never skipped silently.
use std::io;

use agent_circuit_breaker::{Availability, toolbox};

struct Workspace;

#[toolbox]
impl Workspace {
    #[tool(
        provides = "content search across files",
        alternatives(search(method = "ask the search server", via = grep_by_search)),
        fallback = "ask the user which files to examine"
    )]
    fn grep(&self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(vec![pattern.to_owned()])
    }

    fn grep_by_search(&self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(vec![pattern.to_owned()])
    }

    #[tool(provides = "search through an MCP server", fallback = "ask the user", precheck = ping)]
    async fn search(&self, query: &str) -> io::Result<Vec<String>> {
        Ok(vec![query.to_owned()])
    }

    async fn ping(&self) -> Availability {
        Availability::Available
    }

    #[tool(
        provides = "file content inspection",
        alternatives(edit(method = "open the file in the editor", via = read_in_editor)),
        fallback = "ask the user to paste file contents"
    )]
    fn read(&self, path: &str) -> io::Result<String> {
        Ok(path.to_owned())
    }

    fn read_in_editor(&self, path: &str) -> io::Result<String> {
        Ok(path.to_owned())
    }

    #[tool(provides = "file modification", fallback = "describe the edit", precheck = take_lock)]
    fn edit(&mut self, path: &str) -> io::Result<String> {
        Ok(path.to_owned())
    }

    fn take_lock(&mut self) -> Availability {
        Availability::Available
    }
}

fn main() {}
