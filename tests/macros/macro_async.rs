//! The source document's routing through an async `#[toolbox]` (B2): the same chain as the sync
//! one, with no async runtime chosen by the crate (the futures here are driven by a ten-line
//! executor), and a tool future dropped mid-call counted as a cancellation (R3.6).

use std::cell::Cell;
use std::future::Future;
use std::io;
#[path = "../common/mod.rs"]
mod common;

use std::task::{Context, Waker};

use agent_circuit_breaker::{CallError, CircuitState, route::RouteKind, toolbox};
use common::{YieldOnce, block_on};

#[derive(Default)]
struct Remote {
    search_down: Cell<bool>,
    shell_down: Cell<bool>,
    searches: Cell<u32>,
}

#[toolbox(policy(budget = 20, probe_every = 2))]
impl Remote {
    #[tool(
        name = "Grep",
        provides = "content search across files",
        alternatives(
            bash(method = "rg or grep command", degradation = "loses Grep's built-in output formatting", via = grep_with_rg),
            read(method = "read suspected files directly", degradation = high("no broad search"), via = grep_by_reading),
        ),
        fallback = "ask the user which files to examine"
    )]
    async fn grep(&self, pattern: String) -> io::Result<String> {
        self.searches.set(self.searches.get() + 1);
        YieldOnce(false).await;
        if self.search_down.get() {
            Err(io::Error::from(io::ErrorKind::ConnectionRefused))
        } else {
            Ok(format!("grep {pattern}"))
        }
    }

    async fn grep_with_rg(&self, pattern: String) -> io::Result<String> {
        self.bash(format!("rg {pattern}")).await
    }

    async fn grep_by_reading(&self, pattern: String) -> io::Result<String> {
        Ok(format!("read config.toml for {pattern}"))
    }

    #[tool(
        name = "Bash",
        provides = "command execution",
        fallback = "report commands that need to be run manually"
    )]
    async fn bash(&self, command: String) -> io::Result<String> {
        YieldOnce(false).await;
        if self.shell_down.get() {
            Err(io::Error::from(io::ErrorKind::PermissionDenied))
        } else {
            Ok(command)
        }
    }

    #[tool(
        name = "Read",
        provides = "file content inspection",
        fallback = "ask the user to paste file contents"
    )]
    async fn read(&self, path: String) -> io::Result<String> {
        Ok(path)
    }
}

#[test]
fn b2_async_toolbox_routes_like_the_sync_one() {
    let agent = GuardedRemote::new(Remote::default());
    assert_eq!(
        block_on(agent.grep("API_KEY".into())).unwrap().value,
        "grep API_KEY"
    );

    agent.toolbox().search_down.set(true);
    for _ in 0..3 {
        let err = block_on(agent.grep("API_KEY".into())).unwrap_err();
        assert!(matches!(err, CallError::Failed { .. }));
    }
    assert_eq!(
        agent.expeditor().state(RemoteTool::Grep),
        Some(CircuitState::Open)
    );

    let routed = block_on(agent.grep("API_KEY".into())).unwrap();
    assert_eq!(routed.value, "rg API_KEY");
    assert_eq!(routed.route().and_then(|r| r.to.as_deref()), Some("Bash"));

    agent.toolbox().shell_down.set(true);
    for _ in 0..3 {
        let _ = block_on(agent.bash("make".into()));
    }
    assert_eq!(
        agent.expeditor().state(RemoteTool::Bash),
        Some(CircuitState::Open)
    );
    // Grep's 2nd attempt since opening is its probe: it fails (still down) and re-opens.
    let searches = agent.toolbox().searches.get();
    assert!(block_on(agent.grep("API_KEY".into())).is_err());
    assert_eq!(
        agent.toolbox().searches.get(),
        searches + 1,
        "one probe call"
    );
    // Bash is OPEN, so the next route is Read.
    let routed = block_on(agent.grep("API_KEY".into())).unwrap();
    let route = routed.route().unwrap();
    assert_eq!(
        (route.to.as_deref(), route.kind),
        (Some("Read"), RouteKind::Alternative)
    );
    assert_eq!(routed.value, "read config.toml for API_KEY");
}

#[test]
fn r3_6_a_probe_future_dropped_mid_call_frees_the_half_open_slot() {
    let agent = GuardedRemote::new(Remote::default());
    agent.toolbox().shell_down.set(true);
    for _ in 0..3 {
        let _ = block_on(agent.bash("make".into()));
    }
    agent.toolbox().shell_down.set(false);
    // 1st attempt after opening: skipped. 2nd: the probe.
    assert!(
        block_on(agent.bash("ls".into()))
            .unwrap_err()
            .refusal()
            .is_some()
    );
    {
        let mut probe = Box::pin(agent.bash("ls".into()));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(
            probe.as_mut().poll(&mut cx).is_pending(),
            "the tool is mid-call"
        );
        assert_eq!(
            agent.expeditor().state(RemoteTool::Bash),
            Some(CircuitState::HalfOpen)
        );
        // Another caller while the probe is in flight is refused (one probe at a time).
        let other = block_on(agent.bash("pwd".into())).unwrap_err();
        assert!(other.refusal().is_some());
    } // the probe future is dropped here: a cancellation, neither success nor failure.
    let breaker = agent.expeditor().breaker(RemoteTool::Bash).unwrap();
    assert_eq!(breaker.state(), CircuitState::HalfOpen);
    assert!(!breaker.probe_in_flight());
    assert_eq!(breaker.consecutive_failures(), 3);
    assert_eq!(
        agent.expeditor().budget().consumed(),
        3,
        "a cancellation charges nothing"
    );
    // The slot is free: the next caller probes, succeeds, and closes the circuit.
    assert_eq!(block_on(agent.bash("ls".into())).unwrap().value, "ls");
    assert_eq!(
        agent.expeditor().state(RemoteTool::Bash),
        Some(CircuitState::Closed)
    );
}

#[test]
fn b2_async_handle_futures_are_send_when_the_tools_are() {
    struct Net;
    #[toolbox]
    impl Net {
        #[tool(provides = "fetch", fallback = "ask")]
        async fn fetch(&self, url: String) -> Result<usize, io::Error> {
            Ok(url.len())
        }
    }
    fn assert_send<T: Send>(_: &T) {}
    let net = GuardedNet::new(Net);
    let future = net.fetch("x".into());
    assert_send(&future);
    assert_eq!(block_on(future).unwrap().value, 1);
}
