// A toolbox over a generic type: the guarded handle carries the same generics.
use std::collections::BTreeMap;
use std::fmt;

use agent_circuit_breaker::toolbox;

#[derive(Debug)]
struct Missing(String);

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no entry for `{}`", self.0)
    }
}

impl std::error::Error for Missing {}

struct Store<T> {
    entries: BTreeMap<String, T>,
}

#[toolbox]
impl<T: Clone> Store<T> {
    #[tool(
        provides = "a value by key",
        alternatives(first(method = "take any value", degradation = high("not the value asked for"))),
        fallback = "ask the user for the value",
    )]
    fn get(&self, key: &str) -> Result<T, Missing> {
        self.entries.get(key).cloned().ok_or_else(|| Missing(key.to_owned()))
    }

    #[tool(provides = "some value", fallback = "ask the user for any value")]
    fn first(&self) -> Result<T, Missing> {
        self.entries.values().next().cloned().ok_or_else(|| Missing("*".to_owned()))
    }

    #[tool(provides = "storing a value", fallback = "tell the user what to keep")]
    fn put(&mut self, key: String, value: T) -> Result<Option<T>, Missing> {
        Ok(self.entries.insert(key, value))
    }
}

fn main() {
    let mut agent = GuardedStore::new(Store { entries: BTreeMap::new() });
    assert!(agent.put("answer".to_owned(), 42_u32).is_ok());
    assert_eq!(agent.get("answer").map(|r| r.value).ok(), Some(42));
    let missing = agent.get("question").unwrap_err();
    assert_eq!(missing.tool_error().map(ToString::to_string).as_deref(), Some("no entry for `question`"));
    assert_eq!(StoreTool::ALL.len(), 3);
    assert_eq!(StoreTool::Put.name(), "put");
}
