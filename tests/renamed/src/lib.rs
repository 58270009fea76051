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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b2_renamed_crate_routes_through_the_alias() {
        let shell = GuardedShell::new(Shell);
        assert_eq!(shell.run("ls").map(|r| r.value).ok(), Some("ls".to_owned()));
        for _ in 0..3 {
            assert!(shell.run("").is_err());
        }
        let routed = shell.run("ls").expect("routed through echo");
        assert_eq!(routed.value, "echo ls");
        assert_eq!(routed.route.and_then(|r| r.to).as_deref(), Some("echo"));
        assert_eq!(ShellTool::ALL, [ShellTool::Run, ShellTool::Echo]);
        assert_eq!(
            shell.expeditor().state(ShellTool::Run),
            Some(cb::CircuitState::Open)
        );
    }
}
