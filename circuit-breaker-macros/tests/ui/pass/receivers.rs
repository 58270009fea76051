// Tools taking `&self`, `&mut self` and no receiver at all.
use std::io;

use agent_circuit_breaker::toolbox;

#[derive(Default)]
struct Notebook {
    lines: Vec<String>,
}

#[toolbox]
impl Notebook {
    #[tool(provides = "reading the notes", fallback = "ask the user to read the notes aloud")]
    fn read(&self) -> io::Result<Vec<String>> {
        Ok(self.lines.clone())
    }

    #[tool(
        provides = "adding a note",
        alternatives(scratch(method = "write to the scratch pad", degradation = "the note is not kept")),
        fallback = "tell the user what to write down",
    )]
    fn append(&mut self, line: String) -> io::Result<usize> {
        self.lines.push(line);
        Ok(self.lines.len())
    }

    #[tool(provides = "a scratch pad", fallback = "keep it in mind")]
    fn scratch(line: String) -> io::Result<usize> {
        Ok(line.len())
    }
}

fn main() {
    let mut agent = GuardedNotebook::new(Notebook::default());
    assert_eq!(agent.append("first".to_owned()).map(|r| r.value).ok(), Some(1));
    assert_eq!(agent.read().map(|r| r.value).ok(), Some(vec!["first".to_owned()]));
    // A tool without a receiver is still guarded through the handle.
    assert_eq!(agent.scratch("abc".to_owned()).map(|r| r.value).ok(), Some(3));
    let (notebook, _expeditor) = agent.into_parts();
    assert_eq!(notebook.lines.len(), 1);
}
