// The tool enum and the guarded handle are named after the impl's type: a type without a
// name (`dyn Trait`, a reference, a tuple) cannot be a toolbox, and says so rather than
// generating nothing.
use std::io;

use agent_circuit_breaker::toolbox;

trait Search {}

#[toolbox]
impl dyn Search {
    #[tool(provides = "content search across files", fallback = "ask the user which files to examine")]
    fn grep(&self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(vec![pattern.to_owned()])
    }
}

fn main() {}
