use agent_circuit_breaker::toolbox;

#[toolbox]
#[derive(Default)]
struct Workspace {
    root: std::path::PathBuf,
}

fn main() {
    let _ = Workspace::default().root;
}
