#[toolbox(timeout = "30s")]
impl Workspace {
    #[tool(
        provides = "content search across files",
        alternatives(bash(method = "rg or grep command", via = grep_with_rg)),
        fallback = "ask the user which files to examine",
        timeout = "2s"
    )]
    async fn grep(&self, pattern: String) -> Result<Vec<String>, std::io::Error> {
        Ok(vec![pattern])
    }

    async fn grep_with_rg(&self, pattern: String) -> Result<Vec<String>, std::io::Error> {
        Ok(vec![pattern])
    }

    #[tool(provides = "command execution", fallback = "report commands that need to be run manually")]
    fn bash(&self, command: &str) -> Result<String, std::io::Error> {
        Ok(command.to_owned())
    }
}
