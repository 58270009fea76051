// A generic toolbox can be `json`: `ToolDispatch` is implemented where the toolbox is
// `Send + Sync`, and parameter docs are taken off as in any toolbox.
use std::io;

use agent_circuit_breaker::dispatch::ToolDispatch;
use agent_circuit_breaker::toolbox;

struct Store<T> {
    items: Vec<T>,
}

#[toolbox(json)]
impl<T: Clone + serde::Serialize> Store<T> {
    #[tool(provides = "item lookup", fallback = "ask the user for the item")]
    fn get(&self, /// Which item.
        index: usize) -> io::Result<Option<T>> {
        Ok(self.items.get(index).cloned())
    }
}

fn dispatcher(_: &impl ToolDispatch) {}

fn main() {
    let agent = GuardedStore::new(Store { items: vec!["a".to_owned()] });
    dispatcher(&agent);
    assert_eq!(agent.definitions()[0].name, "get");
    // Without `json`, no dispatcher: a `Cell` toolbox (not `Sync`) is fine there.
    struct Local(std::cell::Cell<u8>);
    #[toolbox]
    impl Local {
        #[tool(provides = "counting", fallback = "count by hand")]
        fn count(&self, /// Not described anywhere without `json`.
            by: u8) -> io::Result<u8> {
            self.0.set(self.0.get() + by);
            Ok(self.0.get())
        }
    }
    let local = GuardedLocal::new(Local(std::cell::Cell::new(0)));
    assert_eq!(local.count(2).map(|r| r.value).ok(), Some(2));
}
