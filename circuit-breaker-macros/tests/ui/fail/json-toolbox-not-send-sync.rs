// `ToolDispatch: Send + Sync`, so a `#[toolbox(json)]` must be shareable between threads: a
// toolbox holding a `Cell` is told so at its type.
use std::cell::Cell;
use std::io;

use agent_circuit_breaker::toolbox;

struct Counter {
    calls: Cell<u32>,
}

#[toolbox(json)]
impl Counter {
    #[tool(provides = "counting", fallback = "count by hand")]
    fn count(&self) -> io::Result<u32> {
        self.calls.set(self.calls.get() + 1);
        Ok(self.calls.get())
    }
}

fn main() {}
