// An adapter or a precheck is called through the guarded handle, which keeps the toolbox and
// lends it: one taking `self` by value or a typed `self: ..` cannot be called, and is an
// error at its `self`, never silently treated as a function without a receiver.
use std::io;

use agent_circuit_breaker::{Availability, toolbox};

struct Workspace;

#[toolbox]
impl Workspace {
    #[tool(
        provides = "content search across files",
        alternatives(bash(method = "rg or grep command", via = grep_with_rg)),
        fallback = "ask the user which files to examine",
        precheck = index_ready
    )]
    fn grep(&self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(vec![pattern.to_owned()])
    }

    fn grep_with_rg(self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(vec![pattern.to_owned()])
    }

    fn index_ready(self: Box<Self>) -> Availability {
        Availability::Available
    }

    #[tool(provides = "command execution", fallback = "report commands that need to be run manually")]
    fn bash(&self, command: &str) -> io::Result<String> {
        Ok(command.to_owned())
    }
}

fn main() {}
