//! The runtime crate is known here only as `cb`: `#[toolbox(crate = ::cb)]` must make every
//! generated path go through it (hygiene, B2).

use std::io;

/// A toolbox whose generated code reaches the runtime as `::cb`.
pub struct Shell;

#[cb::toolbox(crate = ::cb)]
impl Shell {
    /// Runs a command.
    #[cb::tool(
        provides = "command execution",
        alternatives(echo(method = "print the command instead", degradation = high("nothing runs"), via = show)),
        fallback = "report commands that need to be run manually"
    )]
    pub fn run(&self, command: &str) -> io::Result<String> {
        if command.is_empty() {
            Err(io::Error::from(io::ErrorKind::NotFound))
        } else {
            Ok(command.to_owned())
        }
    }

    /// Prints a command.
    #[cb::tool(provides = "printing", fallback = "say it")]
    pub fn echo(&self, text: &str) -> io::Result<String> {
        Ok(format!("echo {text}"))
    }

    fn show(&self, command: &str) -> io::Result<String> {
        self.echo(command)
    }
}

/// A `json` toolbox (B8): its argument types derive serde's `Deserialize` and schemars'
/// `JsonSchema` through `::cb` alone; this crate depends on neither.
pub struct Notes;

#[cb::toolbox(json, crate = ::cb)]
impl Notes {
    /// Lists the notes.
    #[cb::tool(provides = "note listing", fallback = "ask the user for the notes")]
    pub fn notes(
        &self,
        /// Only notes with this tag.
        tag: Option<&str>,
        /// At most this many.
        limit: Option<u32>,
    ) -> io::Result<Vec<String>> {
        let notes = vec![format!("{} {limit:?}", tag.unwrap_or("all"))];
        Ok(notes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b8_json_toolbox_through_the_renamed_crate() {
        use cb::dispatch::ToolDispatch as _;
        let notes = GuardedNotes::new(Notes);
        let definitions = notes.definitions();
        assert_eq!(definitions[0].name, "notes");
        let properties = &definitions[0].input_schema["properties"];
        assert_eq!(
            properties["tag"]["description"].as_str(),
            Some("Only notes with this tag.")
        );
        // `null` arguments: every parameter is optional.
        let mut reply = notes.dispatch("notes", Default::default());
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let std::task::Poll::Ready(reply) = reply.as_mut().poll(&mut cx) else {
            panic!("a sync tool's reply is ready at once");
        };
        assert!(!reply.is_error());
        assert_eq!(reply.text(), r#"["all None"]"#);
    }

    #[test]
    fn b2_renamed_crate_routes_through_the_alias() {
        let shell = GuardedShell::new(Shell);
        assert_eq!(shell.run("ls").map(|r| r.value).ok(), Some("ls".to_owned()));
        for _ in 0..3 {
            assert!(shell.run("").is_err());
        }
        let routed = shell.run("ls").expect("routed through echo");
        assert_eq!(routed.value, "echo ls");
        assert_eq!(
            routed.route().and_then(|r| r.to.clone()).as_deref(),
            Some("echo")
        );
        assert_eq!(ShellTool::ALL, [ShellTool::Run, ShellTool::Echo]);
        assert_eq!(
            shell.expeditor().state(ShellTool::Run),
            Some(cb::CircuitState::Open)
        );
    }
}
