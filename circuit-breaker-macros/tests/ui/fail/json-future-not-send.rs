// `ToolDispatch::dispatch` returns a `Send` future: an async tool whose future holds an `Rc`
// across an `.await` is an error at the tool's name.
use std::io;
use std::rc::Rc;

use agent_circuit_breaker::toolbox;

struct Web;

async fn later() {}

#[toolbox(json)]
impl Web {
    #[tool(provides = "external information retrieval", fallback = "ask the user")]
    async fn search(&self, query: String) -> io::Result<String> {
        let shared = Rc::new(query);
        later().await;
        Ok(shared.to_string())
    }
}

fn main() {}
