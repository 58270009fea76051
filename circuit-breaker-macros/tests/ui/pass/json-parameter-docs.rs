// `#[toolbox(json)]`: `///` on a tool's parameters is read by the macro (as the property's
// description in the tool's input schema) and taken off, so rustc never sees a doc comment on
// a parameter; parameters of every shape the dispatcher owns decode.
use std::io;
use std::path::Path;

use agent_circuit_breaker::dispatch::ToolDispatch;
use agent_circuit_breaker::toolbox;

type Range = (u32, u32);

struct Files;

#[toolbox(json)]
impl Files {
    /// Reads part of a file.
    #[tool(provides = "file content inspection", fallback = "ask the user to paste file contents")]
    fn read(
        &self,
        /// The file to read.
        path: &Path,
        /// Which lines.
        range: &Range,
        /// Only lines that contain one of these.
        only: Option<&[String]>,
        /// In this encoding.
        encoding: Option<&str>,
        /// Under this directory.
        root: Option<&Path>,
        /// Extra options.
        options: Option<&std::collections::BTreeMap<String, u32>>,
        /// How many times.
        times: u8,
    ) -> io::Result<String> {
        Ok(format!(
            "{} {}-{} {only:?} {encoding:?} {:?} {} {times}",
            path.display(),
            range.0,
            range.1,
            root.map(Path::display).map(|d| d.to_string()),
            options.map_or(0, |o| o.len()),
        ))
    }

    /// A tool that mutates a copy of its argument.
    #[tool(provides = "sorting", fallback = "sort by hand")]
    fn sort(&self, /** The items. */ items: &mut Vec<u32>, last: Option<&mut u32>) -> io::Result<Vec<u32>> {
        items.sort_unstable();
        if let Some(last) = last {
            *last = items.last().copied().unwrap_or_default();
        }
        Ok(items.clone())
    }
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
}

fn main() {
    let agent = GuardedFiles::new(Files);
    let definitions = agent.definitions();
    let read = serde_json::Value::Object(definitions[0].input_schema.clone());
    assert_eq!(read["properties"]["path"]["description"], "The file to read.");
    assert_eq!(read["properties"]["times"]["description"], "How many times.");
    let sort = serde_json::Value::Object(definitions[1].input_schema.clone());
    assert_eq!(sort["properties"]["items"]["description"], "The items.");

    let reply = block_on(agent.dispatch(
        "read",
        serde_json::json!({"path": "a.txt", "range": [1, 3], "only": ["x"], "times": 2}),
    ));
    assert_eq!(reply.value, Some(serde_json::json!("a.txt 1-3 Some([\"x\"]) None None 0 2")));
    let reply = block_on(agent.dispatch("sort", serde_json::json!({"items": [3, 1, 2], "last": 0})));
    assert_eq!(reply.value, Some(serde_json::json!([1, 2, 3])));
}
