// A tool of a `#[toolbox(json)]` is called through a shared handle, with arguments of one
// concrete type, and must not hide `ToolDispatch`'s own methods on the handle nor clash with
// its `call(name, arguments)`.
use std::io;

use agent_circuit_breaker::toolbox;

struct Counter(u32);

#[toolbox(json)]
impl Counter {
    #[tool(provides = "counting", fallback = "count by hand")]
    fn bump(&mut self, by: u32) -> io::Result<u32> {
        self.0 += by;
        Ok(self.0)
    }

    #[tool(provides = "parsing", fallback = "parse by hand")]
    fn parse<N: std::str::FromStr>(&self, text: &str) -> io::Result<u32> {
        Ok(text.parse::<N>().map(|_| 1).unwrap_or(0))
    }

    #[tool(provides = "dispatching", fallback = "route by hand")]
    fn dispatch(&self) -> io::Result<u32> {
        Ok(0)
    }

    #[tool(name = "Call", provides = "calling", fallback = "call by hand")]
    fn call(&self) -> io::Result<u32> {
        Ok(0)
    }
}

fn main() {}
