// A parameter of a `json` tool must decode from JSON and have a schema: a type with neither
// is an error at that type.
use std::io;

use agent_circuit_breaker::toolbox;

struct Query {
    text: String,
}

struct Web;

#[toolbox(json)]
impl Web {
    #[tool(provides = "external information retrieval", fallback = "ask the user")]
    fn search(&self, query: &Query) -> io::Result<String> {
        Ok(query.text.clone())
    }
}

fn main() {}
