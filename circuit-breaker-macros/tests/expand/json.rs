#[toolbox(json, policy(threshold = 2))]
impl Workspace {
    /// Searches file contents.
    #[tool(
        provides = "content search across files",
        alternatives(bash(method = "rg or grep command", via = grep_with_rg)),
        fallback = "ask the user which files to examine"
    )]
    fn grep(
        &self,
        /// The regular expression.
        pattern: &str,
        /// Only under this directory.
        under: Option<&str>,
    ) -> Result<Vec<String>, std::io::Error> {
        Ok(vec![pattern.to_owned()])
    }

    fn grep_with_rg(&self, pattern: &str, _under: Option<&str>) -> Result<Vec<String>, std::io::Error> {
        self.bash(pattern).map(|out| vec![out])
    }

    #[tool(provides = "command execution", fallback = "report commands that need to be run manually")]
    async fn bash(&self, command: String) -> Result<String, std::io::Error> {
        Ok(command)
    }

    #[tool(provides = "the time", fallback = "ask the user for the time")]
    fn now() -> Result<u64, std::io::Error> {
        Ok(0)
    }
}
