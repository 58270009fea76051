// rmcp's `#[tool]` on one of our tools, without a router: it would register the raw method
// (`count_words_tool_attr()`) for any `ToolRouter` built by hand. Both spellings: qualified
// `#[rmcp::tool]` beside our plain `#[tool(..)]`, and rmcp's plain `#[tool]` beside our
// qualified `#[agent_circuit_breaker::tool(..)]`. Both compiled before.
use agent_circuit_breaker::toolbox;
use rmcp::tool;

struct Notes;

#[toolbox]
impl Notes {
    #[rmcp::tool(description = "Counts the words of a text.")]
    #[tool(provides = "word counting", fallback = "count the words by hand")]
    fn count_words(&self) -> Result<String, String> {
        Ok("0".to_owned())
    }

    #[tool]
    #[agent_circuit_breaker::tool(provides = "line counting", fallback = "count the lines by hand")]
    fn count_lines(&self) -> Result<String, String> {
        Ok("0".to_owned())
    }
}

fn main() {
    let notes = GuardedNotes::new(Notes);
    println!("{:?} {}", NotesTool::ALL, notes.expeditor().state_table());
}
