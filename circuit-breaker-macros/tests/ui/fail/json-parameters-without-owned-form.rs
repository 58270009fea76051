// `#[toolbox(json)]` decodes every argument into an owned value: a parameter whose type has
// no owned form the macro can build is an error at that type, each one in the same compile.
use std::borrow::Cow;
use std::fmt::Display;
use std::io;

use agent_circuit_breaker::toolbox;

struct Store<T>(Vec<T>);

#[toolbox(json)]
impl<T: Send + Sync> Store<T> {
    #[tool(provides = "lookups", fallback = "ask the user")]
    fn find(
        &self,
        twice: &&str,
        borrowed: Cow<'static, str>,
        shown: &dyn Display,
        into: impl Into<String>,
        own: Option<Self>,
        item: Option<&T>,
    ) -> io::Result<usize> {
        let _ = (twice, borrowed, shown.to_string(), into.into(), own, item);
        Ok(self.0.len())
    }
}

fn main() {}
