// rmcp's `#[tool_router]` above `#[toolbox]` runs first and takes our `#[tool(..)]` for its own
// (it claims every attribute whose last segment is `tool`): its `tool_router()` would route
// `count_words` to the raw method. One error, at `#[tool_router]`; rmcp's own tool is kept.
use agent_circuit_breaker::toolbox;
use rmcp::tool_router;

struct Notes;

#[tool_router]
#[toolbox]
impl Notes {
    #[tool(provides = "word counting", fallback = "count the words by hand")]
    fn count_words(&self, text: &str) -> Result<String, String> {
        Ok(text.split_whitespace().count().to_string())
    }

    #[rmcp::tool(description = "Says hello.")]
    fn hello(&self) -> String {
        "hello".to_owned()
    }
}

fn main() {
    // The generated names stay resolvable: the mistake above is the only error.
    let notes = GuardedNotes::new(Notes);
    println!("{:?} {}", NotesTool::ALL, notes.expeditor().state_table());
}
