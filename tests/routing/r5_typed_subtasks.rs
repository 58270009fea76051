//! R5.1: sub-tasks can name their tools with a toolbox's tool enum, not only by string.

use std::io;

use agent_circuit_breaker::{Task, toolbox};

struct Shell;

#[toolbox]
impl Shell {
    #[tool(
        name = "Bash",
        provides = "command execution",
        fallback = "report commands that need to be run manually"
    )]
    fn bash(&self, command: &str) -> io::Result<String> {
        if command.is_empty() {
            Err(io::Error::from(io::ErrorKind::NotFound))
        } else {
            Ok(command.to_owned())
        }
    }

    #[tool(
        name = "Read",
        provides = "file content inspection",
        fallback = "ask the user to paste file contents"
    )]
    fn read(&self, path: &str) -> io::Result<String> {
        Ok(path.to_owned())
    }
}

#[test]
fn r5_1_subtasks_name_their_tools_with_the_tool_enum() {
    let shell = GuardedShell::new(Shell);
    let task = Task::new()
        .subtask("Read configuration files", [ShellTool::Read])
        .subtask("Run test suite", [ShellTool::Bash])
        .subtask("Deploy to staging", [ShellTool::Bash, ShellTool::Read]);
    assert_eq!(task.subtasks()[2].needs, ["Bash", "Read"]);
    for _ in 0..3 {
        assert!(shell.bash("").is_err());
    }
    let scope = shell.expeditor().scope(&task);
    assert_eq!(scope.achievable().collect::<Vec<_>>(), [1]);
    assert!(scope.is_deferred(2) && scope.is_deferred(3));
    assert_eq!(scope.deferred[0].blocked_by, "Bash");
}
