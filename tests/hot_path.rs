//! B5: the healthy path (decide + success on a CLOSED tool) and the rejection path (decide on
//! an OPEN tool, then its route) allocate nothing. Nor does the healthy path with a step
//! between calls, through the runtime API or a `#[toolbox]` method; a failure on a CLOSED tool
//! allocates at most once (the `b5_a_failure_*` tests; the refusal's are in
//! `tests/b5_refusal_alloc.rs`).
//!
//! A counting global allocator wraps the system allocator in this test binary only. It counts
//! per thread, and only while a thread has switched counting on, so the harness and other
//! tests running in parallel do not disturb the counts.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::hint::black_box;

use agent_circuit_breaker::{Decision, Expeditor, Policy, Route, SkipReason, policy::ProbeUnit};
use common::{clock, expeditor_with, id, open3, seed_map};

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
    static BYTES: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    // `try_with`: the allocator may run while this thread's locals are being torn down.
    if COUNTING.try_with(Cell::get).unwrap_or(false) {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        let _ = BYTES.try_with(|n| n.set(n.get() + size));
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; counting
// only touches const-initialised thread locals, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: forwarded as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: forwarded as is.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
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

/// Runs `f` with counting on for this thread; returns (allocations, bytes).
fn allocations_in(f: impl FnOnce()) -> (usize, usize) {
    ALLOCATIONS.with(|n| n.set(0));
    BYTES.with(|n| n.set(0));
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    (ALLOCATIONS.with(Cell::get), BYTES.with(Cell::get))
}

#[test]
fn b5_the_counter_sees_allocations() {
    let (count, bytes) = allocations_in(|| {
        let v: Vec<u64> = black_box(Vec::with_capacity(16));
        drop(v);
        let s = black_box(String::from("circuit"));
        drop(s);
    });
    assert_eq!(count, 2);
    assert!(bytes >= 16 * 8 + 7, "{bytes}");
}

#[test]
fn b5_the_counter_sees_allocations_made_by_the_expeditor() {
    let clock = clock();
    let expeditor = expeditor_with(seed_map(), Policy::default(), &clock);
    let bash = id(&expeditor, "Bash");
    // Recording a failure writes the ledger; rendering a note builds strings.
    let (count, _) = allocations_in(|| {
        let Decision::Call(ticket) = expeditor.decide(bash) else {
            panic!("Bash is CLOSED")
        };
        black_box(ticket.failure("permission denied"));
    });
    assert!(count > 0, "a failure is written down");
    open3(&expeditor, "Grep");
    let (count, _) = allocations_in(|| {
        let Decision::Skip(skip) = expeditor.decide(id(&expeditor, "Grep")) else {
            panic!("Grep is OPEN")
        };
        black_box(skip.for_model());
    });
    assert!(count > 0, "text for the model is built");
}

/// Decide + success on a CLOSED tool, with no step, and as a real agent takes it:
/// a step before every call, or one every ten calls. The first success of a tool in a step
/// records the step and the time in the mirror; that allocates nothing either.
#[test]
fn b5_decide_and_success_on_a_closed_tool_allocate_nothing_with_or_without_steps() {
    for every in [u64::MAX, 1, 10] {
        let clock = clock();
        let expeditor = expeditor_with(seed_map(), Policy::default(), &clock);
        let grep = id(&expeditor, "Grep");
        let mut calls = 0;
        let (count, bytes) = allocations_in(|| {
            for i in 1..=1_000_u64 {
                if i % every == 0 {
                    expeditor.advance_step();
                }
                match black_box(&expeditor).decide(grep) {
                    Decision::Call(ticket) => {
                        calls += 1;
                        ticket.success();
                    }
                    other => panic!("Grep is CLOSED, got {}", other.kind()),
                }
            }
        });
        assert_eq!(calls, 1_000);
        assert_eq!(
            (count, bytes),
            (0, 0),
            "decide + success with a step every {every} call(s) allocated"
        );
        // And the last success is the last step's, with the clock's time (R2.1).
        let mark = expeditor.breaker(grep).unwrap().last_success().copied();
        assert_eq!(
            mark.map(|m| (m.step, m.at)),
            Some((expeditor.step(), expeditor.now()))
        );
    }
}

#[test]
fn b5_the_rejection_path_allocates_nothing() {
    let clock = clock();
    // Probes counted in steps and no step passes: every ask is a SKIP.
    let policy = Policy::builder()
        .probe_unit(ProbeUnit::Steps)
        .build()
        .unwrap();
    let expeditor: Expeditor = expeditor_with(seed_map(), policy, &clock);
    let bash = id(&expeditor, "Bash");
    let grep = id(&expeditor, "Grep");
    open3(&expeditor, "Bash");
    // Warm-up.
    let _ = expeditor.decide(bash);
    let mut routes = 0;
    let (count, bytes) = allocations_in(|| {
        for _ in 0..1_000 {
            let Decision::Skip(skip) = black_box(&expeditor).decide(bash) else {
                panic!("Bash is OPEN")
            };
            assert_eq!(skip.reason(), SkipReason::Open);
            let Route::Fallback(text) = skip.route() else {
                panic!("Bash has no alternatives")
            };
            black_box(text);
            routes += skip.routes().count();
            // An OPEN alternative is passed over without allocating either.
            let Decision::Call(ticket) = expeditor.decide(grep) else {
                panic!("Grep is CLOSED")
            };
            ticket.cancel();
        }
    });
    assert_eq!(routes, 2_000);
    assert_eq!((count, bytes), (0, 0), "the rejection path allocated");
}

#[test]
fn b5_routing_past_open_alternatives_allocates_nothing() {
    let clock = clock();
    let policy = Policy::builder()
        .budget(20)
        .probe_unit(ProbeUnit::Steps)
        .build()
        .unwrap();
    let expeditor = expeditor_with(seed_map(), policy, &clock);
    let grep = id(&expeditor, "Grep");
    open3(&expeditor, "Bash");
    open3(&expeditor, "Grep");
    let _ = expeditor.decide(grep);
    let (count, bytes) = allocations_in(|| {
        for _ in 0..1_000 {
            let Decision::Skip(skip) = black_box(&expeditor).decide(grep) else {
                panic!("Grep is OPEN")
            };
            let Route::Alternative(route) = skip.route() else {
                panic!("Read is CLOSED")
            };
            black_box(route.name());
        }
    });
    assert_eq!((count, bytes), (0, 0), "routing past Bash allocated");
}

#[test]
fn b5_a_pause_allocates_nothing() {
    let clock = clock();
    let expeditor = expeditor_with(seed_map(), Policy::default(), &clock);
    let grep = id(&expeditor, "Grep");
    open3(&expeditor, "Bash");
    common::fail_all(&expeditor, "Read", &["a", "b"]);
    let (count, bytes) = allocations_in(|| {
        for _ in 0..1_000 {
            let Decision::Pause(pause) = black_box(&expeditor).decide(grep) else {
                panic!("the budget is spent")
            };
            black_box(pause.reason());
        }
    });
    assert_eq!((count, bytes), (0, 0), "a PAUSE allocated");
}

/// A real agent steps before every call; the healthy path through the runtime API
/// with `advance_step()` between every two calls, on several tools, allocates nothing.
#[test]
fn b5_healthy_path_with_a_step_between_calls_allocates_nothing() {
    let clock = clock();
    let expeditor = expeditor_with(seed_map(), Policy::default(), &clock);
    let tools = [id(&expeditor, "Grep"), id(&expeditor, "Bash")];
    // Warm-up: every tool's first success.
    for &tool in &tools {
        let Decision::Call(ticket) = expeditor.decide(tool) else {
            panic!("CLOSED")
        };
        ticket.success();
    }
    let (count, bytes) = allocations_in(|| {
        for i in 0..1_000 {
            black_box(expeditor.advance_step());
            let Decision::Call(ticket) = black_box(&expeditor).decide(tools[i % 2]) else {
                panic!("CLOSED")
            };
            ticket.success();
        }
    });
    assert_eq!(
        (count, bytes),
        (0, 0),
        "healthy path with a step between calls"
    );
}

/// The generated toolbox of the issue-14 test below.
struct Cheap;

#[agent_circuit_breaker::toolbox(policy(threshold = 3, budget = 1_000, probe_every = 10))]
impl Cheap {
    #[tool(provides = "a cheap computation", fallback = "do it by hand")]
    fn work(&self, x: u64) -> Result<u64, std::io::Error> {
        Ok(x.wrapping_mul(3))
    }
}

/// The `#[toolbox]` method's healthy path, with a step before every call, allocates
/// nothing either (the direct route is no boxed route).
#[test]
fn b5_toolbox_method_healthy_with_steps_allocates_nothing() {
    let guarded = GuardedCheap::new(Cheap);
    assert!(guarded.work(0).is_ok());
    let mut sum = 0;
    let (count, bytes) = allocations_in(|| {
        for x in 0..1_000 {
            black_box(guarded.expeditor().advance_step());
            sum += black_box(&guarded).work(x).ok().map_or(0, |r| r.value);
        }
    });
    assert_eq!(sum, (0..1_000u64).map(|x| x * 3).sum::<u64>());
    assert_eq!((count, bytes), (0, 0), "#[toolbox] healthy path with steps");
}

/// Reallocations of doubling tables allowed in 1,000 failures (2^10 > 1,000).
const GROWTH: usize = 10;

/// A policy under which 1,000 failures leave a tool CLOSED and the budget unspent.
fn never_opens() -> Policy {
    Policy::builder()
        .threshold(100_000)
        .budget(100_000)
        .build()
        .unwrap()
}

/// Records `n` failures on CLOSED `Bash` after a warm-up of 10, counting only the `n`; each
/// failure's message is made by `message` inside the count.
fn failures_on_a_closed_tool<M: Into<agent_circuit_breaker::Failure>>(
    n: usize,
    message: impl Fn(usize) -> M,
) -> (usize, usize) {
    let clock = clock();
    let expeditor = expeditor_with(seed_map(), never_opens(), &clock);
    let bash = id(&expeditor, "Bash");
    let fail = |i: usize| {
        let Decision::Call(ticket) = black_box(&expeditor).decide(bash) else {
            panic!("Bash stays CLOSED")
        };
        black_box(ticket.failure(message(i)));
    };
    for i in 0..10 {
        fail(i);
    }
    let counts = allocations_in(|| {
        for i in 0..n {
            fail(i);
        }
    });
    assert_eq!(
        expeditor.state(bash),
        Some(agent_circuit_breaker::CircuitState::Closed)
    );
    counts
}

/// A failure on a CLOSED tool with a `&'static str` message allocates
/// nothing (`From<&'static str>` keeps the literal; recording it copies a pointer). Counted
/// over 1,000 failures, with room for [`GROWTH`] reallocations of tables that grow by doubling
/// (amortised: a handful per thousand, never one per failure).
#[test]
fn b5_a_failure_with_a_static_message_allocates_nothing() {
    let (count, bytes) = failures_on_a_closed_tool(1_000, |_| "connection refused");
    assert!(
        count <= GROWTH,
        "1,000 failures with a static message: {count} allocations, {bytes} bytes"
    );
}

/// A failure with a message the breaker makes: the tool's error (made before the
/// count, as the tool made it) becomes the failure's message in one allocation, its shared
/// copy; recording it in the breaker and the ledger copies a pointer.
#[test]
fn b5_a_failure_from_the_tools_error_allocates_only_the_message() {
    let errors: Vec<std::io::Error> = (0..1_000)
        .map(|i| std::io::Error::other(format!("exit status {i}")))
        .collect();
    let (count, bytes) = failures_on_a_closed_tool(1_000, |i| &errors[i]);
    assert!(
        count <= 1_000 + GROWTH,
        "1,000 failures from the tools' errors: {count} allocations, {bytes} bytes"
    );
}

/// A message the caller formats itself (`format!`, made inside the count): its `String`, and
/// the one shared copy a failure keeps (an `Arc<str>` cannot take over a `String`'s buffer),
/// so two; nothing more however many places record it.
#[test]
fn b5_a_failure_with_an_owned_string_allocates_the_string_and_its_shared_copy() {
    let (count, bytes) = failures_on_a_closed_tool(1_000, |i| format!("exit status {i}"));
    assert!(
        count <= 2_000 + GROWTH,
        "1,000 failures with owned messages: {count} allocations, {bytes} bytes"
    );
}
