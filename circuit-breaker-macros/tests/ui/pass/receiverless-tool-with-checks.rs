// A tool without a receiver still has a guarded method taking `&self` (the handle keeps the
// toolbox), so its precheck and its adapters may take `&self`.
use std::cell::Cell;
use std::io;

use agent_circuit_breaker::{Availability, toolbox};

#[derive(Default)]
struct Scratch {
    checks: Cell<u32>,
}

#[toolbox]
impl Scratch {
    #[tool(
        provides = "a scratch pad",
        alternatives(notes(method = "write it into the notes", via = scratch_in_notes)),
        fallback = "keep it in mind",
        precheck = pad_ready
    )]
    fn scratch(line: String) -> io::Result<usize> {
        Ok(line.len())
    }

    fn pad_ready(&self) -> Availability {
        self.checks.set(self.checks.get() + 1);
        Availability::Available
    }

    fn scratch_in_notes(&self, line: String) -> io::Result<usize> {
        self.notes(line)
    }

    #[tool(provides = "the notes", fallback = "tell the user what to note")]
    fn notes(&self, line: String) -> io::Result<usize> {
        Ok(line.len() + 1)
    }
}

fn main() {
    let agent = GuardedScratch::new(Scratch::default());
    assert_eq!(agent.scratch("abc".to_owned()).map(|r| r.value).ok(), Some(3));
    assert_eq!(agent.toolbox().checks.get(), 1);
}
