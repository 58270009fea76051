// A tool whose method is a raw identifier (`r#type`), and tools renamed with `name = ".."`.
use std::io;

use agent_circuit_breaker::toolbox;

struct Terminal;

#[toolbox]
impl Terminal {
    #[tool(
        provides = "typing text into the terminal",
        alternatives(paste(method = "paste the text at once", degradation = "no per-key echo")),
        fallback = "ask the user to type it",
    )]
    fn r#type(&self, text: &str) -> io::Result<usize> {
        Ok(text.len())
    }

    #[tool(name = "Paste", provides = "pasting from the clipboard", fallback = "ask the user to paste it")]
    fn paste(&self, text: &str) -> io::Result<usize> {
        Ok(text.len())
    }

    #[tool(
        name = "mcp__shell__run",
        provides = "command execution through an MCP server",
        alternatives(r#type(method = "type the command")),
        fallback = "report commands that need to be run manually",
    )]
    fn run(&self, command: &str) -> io::Result<String> {
        Ok(command.to_owned())
    }
}

fn main() {
    assert_eq!(TerminalTool::ALL, [TerminalTool::Type, TerminalTool::Paste, TerminalTool::Run]);
    assert_eq!(TerminalTool::Type.to_string(), "type");
    assert_eq!(TerminalTool::Paste.to_string(), "Paste");
    assert_eq!("mcp__shell__run".parse::<TerminalTool>().ok(), Some(TerminalTool::Run));
    let map = TerminalTool::capability_map();
    let _ = map;

    let agent = GuardedTerminal::new(Terminal);
    assert_eq!(agent.r#type("ls").map(|r| r.value).ok(), Some(2));
    assert_eq!(agent.run("ls").map(|r| r.value).ok().as_deref(), Some("ls"));
}
