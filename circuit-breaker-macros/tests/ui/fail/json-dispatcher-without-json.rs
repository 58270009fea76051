// `call`, `definitions` and `dispatch` are the JSON dispatcher's, generated for
// `#[toolbox(json)]` only: on the handle of a toolbox without `json`, each is an error at the
// call that says to add it. A tool named like one of them keeps its own method.
use std::io;

use agent_circuit_breaker::toolbox;

struct Workspace;

#[toolbox]
impl Workspace {
    #[tool(provides = "content search across files", fallback = "ask the user which files to examine")]
    fn grep(&self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(vec![pattern.to_owned()])
    }
}

struct Phone;

#[toolbox]
impl Phone {
    #[tool(provides = "phone calls", fallback = "ask the user to make the call")]
    fn call(&self, number: &str) -> io::Result<String> {
        Ok(number.to_owned())
    }
}

fn main() {
    let agent = GuardedWorkspace::new(Workspace);
    let reply = agent.call("grep", serde_json::json!({"pattern": "TODO"}));
    println!("{}", reply.text());
    let definitions = agent.definitions();
    println!("{}", definitions.len());
    let _ = agent.dispatch("grep", serde_json::json!({"pattern": "TODO"}));

    let phone = GuardedPhone::new(Phone);
    let _ = phone.call("555-0100");
}
