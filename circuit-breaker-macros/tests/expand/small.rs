#[toolbox(policy(threshold = 2, budget = 4))]
impl Workspace {
    /// Searches file contents.
    #[tool(
        provides = "content search across files",
        alternatives(bash(
            method = "rg or grep command",
            degradation = "loses Grep's built-in output formatting",
            via = grep_with_rg
        )),
        fallback = "ask the user which files to examine"
    )]
    fn grep(&self, pattern: &str) -> Result<Vec<String>, std::io::Error> {
        Ok(vec![pattern.to_owned()])
    }

    fn grep_with_rg(&self, pattern: &str) -> Result<Vec<String>, std::io::Error> {
        self.bash(pattern).map(|out| vec![out])
    }

    #[tool(
        provides = "command execution",
        fallback = "report commands that need to be run manually",
        threshold = 1
    )]
    fn bash(&self, command: &str) -> Result<String, std::io::Error> {
        Ok(command.to_owned())
    }

    #[tool(name = "WebSearch", provides = "external information retrieval", fallback = "ask the user")]
    async fn web_search(&mut self, query: String) -> std::io::Result<Vec<String>> {
        Ok(vec![query])
    }
}
