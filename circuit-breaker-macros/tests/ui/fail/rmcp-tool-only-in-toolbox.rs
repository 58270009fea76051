// A method with only rmcp's `#[tool]` in a `#[toolbox]` impl. Written plain (rmcp's `tool`
// imported), a plain `#[tool]` there is ours: one error at rmcp's key, saying so (before:
// "Unknown field: `description`"). Written `#[rmcp::tool]`, it is passed through untouched
// and expanded by rmcp (`hello_tool_attr()` exists): `hello` is no tool of the toolbox.
use agent_circuit_breaker::toolbox;
use rmcp::tool;

struct Notes;

#[toolbox]
impl Notes {
    #[agent_circuit_breaker::tool(provides = "word counting", fallback = "count the words by hand")]
    fn count_words(&self) -> Result<String, String> {
        Ok("0".to_owned())
    }

    #[tool(description = "Echoes a text.")]
    fn echo(&self) -> String {
        String::new()
    }

    #[rmcp::tool(description = "Says hello.")]
    fn hello(&self) -> String {
        "hello".to_owned()
    }
}

fn main() {
    let _ = Notes::hello_tool_attr();
    let notes = GuardedNotes::new(Notes);
    println!("{:?} {}", NotesTool::ALL, notes.expeditor().state_table());
}
