#[toolbox]
impl Index {
    #[tool(
        provides = "document search",
        fallback = "ask the user for the documents",
        freshness,
        serve_stale,
        precheck = server_up
    )]
    fn search(&self, query: &str) -> Result<Vec<String>, std::io::Error> {
        Ok(vec![query.to_owned()])
    }

    #[tool(provides = "cached lookups", fallback = "ask the user", caches)]
    fn lookup(&self, key: u64) -> Result<u64, std::io::Error> {
        Ok(key)
    }

    fn server_up(&self) -> agent_circuit_breaker::Availability {
        agent_circuit_breaker::Availability::Available
    }
}
