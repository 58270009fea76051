//! B5: a refusal through a `#[toolbox]` method (the tool's circuit OPEN, its probe
//! not due, no adapter) allocates nothing until its text is rendered, and the rendered text,
//! route and serde form are those the expeditor gives for the same skip.
//!
//! A counting global allocator wraps the system allocator in this test binary only, counting
//! per thread and only while the thread has switched counting on.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::hint::black_box;

use agent_circuit_breaker::route::RouteKind;
use agent_circuit_breaker::{Decision, SkipReason, toolbox};

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn note() {
    // `try_with`: the allocator may run while this thread's locals are being torn down.
    if COUNTING.try_with(Cell::get).unwrap_or(false) {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; counting
// only touches const-initialised thread locals, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: forwarded as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: forwarded as is.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: forwarded as is.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` with counting on for this thread; returns its value and the allocations.
fn allocations_in<R>(f: impl FnOnce() -> R) -> (R, usize) {
    ALLOCATIONS.with(|n| n.set(0));
    COUNTING.with(|c| c.set(true));
    let value = f();
    COUNTING.with(|c| c.set(false));
    (value, ALLOCATIONS.with(Cell::get))
}

struct Workspace;

#[toolbox(policy(threshold = 3, budget = 100, probe_every = 1000, probe_unit = "steps"))]
impl Workspace {
    #[tool(
        provides = "content search across files",
        alternatives(read(method = "read suspected files directly", degradation = high("no broad search"))),
        fallback = "ask the user which files to examine"
    )]
    fn grep(&self, pattern: &str) -> Result<usize, std::io::Error> {
        Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            format!("rg: cannot search for {pattern}"),
        ))
    }

    #[tool(provides = "web pages", fallback = "ask the user for the page")]
    fn fetch(&self, url: &str) -> Result<usize, std::io::Error> {
        Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("timed out{}", &url[..0]),
        ))
    }

    #[tool(
        provides = "reading files",
        fallback = "ask the user to paste the file"
    )]
    fn read(&self, path: &str) -> Result<usize, std::io::Error> {
        Ok(path.len())
    }
}

fn opened() -> GuardedWorkspace {
    let agent = GuardedWorkspace::new(Workspace);
    for _ in 0..3 {
        assert!(agent.grep("TODO").unwrap_err().tool_error().is_some());
    }
    agent
}

#[test]
fn b5_a_refused_toolbox_call_allocates_nothing_until_rendered() {
    let agent = opened();
    // Warm up: the first call may initialise what any call needs once.
    drop(agent.grep("TODO"));
    let (refused, count) = allocations_in(|| {
        let result = black_box(agent.grep(black_box("TODO")));
        let refused = result.as_ref().is_err_and(|e| e.refusal().is_some());
        drop(result);
        refused
    });
    assert!(refused, "the call is refused");
    assert_eq!(count, 0, "a refusal allocates nothing until it is rendered");
}

#[test]
fn b5_a_refusal_renders_what_the_expeditor_says_for_the_same_skip() {
    let agent = opened();
    let (result, count) = allocations_in(|| agent.grep("TODO"));
    assert_eq!(count, 0);
    let err = result.unwrap_err();
    let refusal = err.refusal().expect("refused");
    assert_eq!(refusal.tool(), "Grep".to_lowercase());
    assert_eq!(refusal.reason(), SkipReason::Open);
    let Decision::Skip(skip) = agent.expeditor().decide(WorkspaceTool::Grep) else {
        panic!("still OPEN");
    };
    let route = refusal.route().expect("advice");
    assert_eq!(route, skip.route().taken("grep"));
    assert_eq!(route.kind, RouteKind::Alternative);
    assert_eq!(refusal.note(), skip.for_model());
    assert_eq!(refusal.to_string(), skip.for_model().to_string());
    assert_eq!(err.to_string(), refusal.to_string());
    assert_eq!(
        refusal.to_string(),
        "grep is unavailable: circuit OPEN after 3 consecutive failures (last error: \
         \"rg: cannot search for TODO\"). Do not call grep. Instead: use read — read suspected \
         files directly (degradation: no broad search)."
    );
    // The serde form is the one a refusal given whole has.
    let given = agent_circuit_breaker::Refusal::new(
        "grep",
        SkipReason::Open,
        Some(skip.route().taken("grep")),
        skip.for_model(),
    );
    assert_eq!(
        serde_json::to_value(refusal).unwrap(),
        serde_json::to_value(&given).unwrap()
    );
    assert_eq!(*refusal, given);
    let back: agent_circuit_breaker::Refusal =
        serde_json::from_value(serde_json::to_value(refusal).unwrap()).unwrap();
    assert_eq!(back, given);
}

#[test]
fn b5_a_refusal_with_the_fallback_renders_it() {
    let agent = GuardedWorkspace::new(Workspace);
    for _ in 0..3 {
        assert!(agent.fetch("a").unwrap_err().tool_error().is_some());
    }
    let (result, count) = allocations_in(|| agent.fetch("a"));
    assert_eq!(count, 0);
    let err = result.unwrap_err();
    let refusal = err.refusal().expect("refused");
    let route = refusal.route().expect("advice");
    assert_eq!(route.kind, RouteKind::Fallback);
    assert_eq!(route.fallback.as_deref(), Some("ask the user for the page"));
    assert_eq!(
        refusal.to_string(),
        "fetch is unavailable: circuit OPEN after 3 consecutive failures (last error: \
         \"timed out\"). Do not call fetch. Instead: no other tool can do this — ask the user \
         for the page."
    );
}
