// With `json`, what a tool answers must serialize: one error at the tool's return type.
// (That its error displays is asked of every toolbox, `json` or not.)
use agent_circuit_breaker::toolbox;

struct Opaque;

struct Tools;

#[toolbox(json)]
impl Tools {
    #[tool(provides = "opaque values", fallback = "ask the user")]
    fn opaque(&self) -> Result<Opaque, std::io::Error> {
        Ok(Opaque)
    }
}

fn main() {}
