//! The cost of a circuit breaker on a tool call (B5), measured in one run against a direct call
//! and three other Rust breakers: recloser 1.4 (error rate 0.99 over 3 calls), failsafe 1.3
//! (`consecutive_failures(3, ..)`) and tower-resilience 0.13 (`consecutive_failures(3)`; 0.13
//! rather than 0.14 because 0.14 is not on the registry this machine reaches, 0.13.0 is the
//! newest there and builds with rustc 1.95). Ours: threshold 3, probes counted in steps, so an
//! OPEN tool stays OPEN under the harness.
//!
//! tower-resilience's breaker is a tower `Service`: each call is `poll_ready`, `call` and one
//! poll of the boxed future it returns, all with a no-op waker on the benchmark's thread
//! ([`tower_call`]); no runtime is involved. Every poll is ready at once when uncontended; in
//! `step_contended` a `Pending` (its tokio mutex held by the other thread) is polled again
//! after `yield_now`. Its cost is its own: a boxed future, two tokio-mutex acquisitions, a few
//! `Instant::now()` and an event (with its name `String` cloned) per call.
//!
//! Groups, with `t(group/name)` the median criterion prints for a row:
//!
//! - `healthy/*`: a CLOSED breaker, every call succeeding (no step). `healthy/circuit-breaker
//!   #[toolbox] method` is the "healthy, `#[toolbox]` method" row of BENCHMARKS.md's summary;
//!   `.. #[toolbox] method, tool that may fail` is the same around `work_may_fail`, a tool the
//!   compiler cannot prove infallible (LLVM may delete the failure arm of the always-`Ok`
//!   `work`).
//! - `rejected/*`: an OPEN breaker turning the call away. `rejected/circuit-breaker #[toolbox]
//!   method` is the generated method on an OPEN tool (the refusal, built and dropped
//!   unrendered); `rejected/circuit-breaker #[toolbox] refusal, render text` is `to_string()`
//!   of one such refusal, apart. Printed before them: `alloc/refusal via #[toolbox]: N
//!   allocations, B bytes per call` (target 0) and the same with the text rendered.
//! - `contended/*`: two threads calling one healthy tool at once, no step (time per call per
//!   thread; tower-resilience: a clone of one breaker per thread, as in `step_contended`).
//! - `step_healthy/<implementation>/<cadence>`: the healthy path as a real agent takes it,
//!   with `advance_step()` before every call (`step every call`), before every tenth call
//!   (`step every 10 calls`) or never (`no step`). The peers have no steps: their loop has the
//!   same shape, with an `AtomicU64` step counter advanced the same way as ours, and `bare
//!   call` is that loop around the tool with no breaker at all.
//! - `step_contended/<implementation>/<threads>`: one healthy tool called from `1 thread` or
//!   from `2 threads` at once, each thread stepping before every tenth of its calls (time per
//!   call per thread). tower-resilience's threads each call a clone of one breaker (clones
//!   share the circuit), since `Service::call` takes `&mut self`.
//! - `failure/*`: a failure on a CLOSED tool. Ours: decide + the tool's error +
//!   `ticket.failure("connection refused")` (`static message`), or with
//!   `String::from("connection refused")` built in the loop (`owned String message`: the
//!   caller's own allocation is in the time and in the count). The breaker stays CLOSED: the
//!   policy's threshold and budget are 1,000,000 and a fresh expeditor (built and dropped
//!   outside the timing) takes every 10,000 failures, so no ledger grows past that (nothing
//!   is subtracted). The peers never open: recloser's error rate is 2.0, failsafe's and
//!   tower-resilience's consecutive-failure thresholds `u32::MAX` / `usize::MAX`. Printed:
//!   `alloc/failure, <impl>: N allocations, B bytes per call` (target for ours: at most 1,
//!   none for the static message). Cross-check of the method: `circuit-breaker runtime API,
//!   threshold 3, failure + success` keeps the usual policy and follows each failure by a
//!   success (the streak resets, the tool stays CLOSED); its failure cost is that row −
//!   `t(healthy/circuit-breaker runtime API)`.
//! - `memory/*`: times the build of 1,000 tools (ours: map + expeditor; the peers: one breaker
//!   per tool in a `Vec`) and 100,000 failures; the figures are the printed lines.
//!   `heap per tool/<impl>: X B per tool` = (bytes live after the build, by the counting
//!   allocator, − the spec text's bytes: names, capabilities and fallbacks, owned, of exact
//!   capacity) / 1,000 (target at most 300 B for ours; the peers keep no text). `ledger/100000
//!   failures, ..: B live` is what 100,000 failures on one CLOSED tool (budget 1,000,000) keep
//!   alive, with one static message and with distinct owned messages (target: bounded, i.e.
//!   not growing with the count).
//! - `decide_scale/<N> tools/tool #<i>`: decide + success on the first and on the last tool of
//!   maps of 10, 1,000 and 10,000 tools (O(1): the six figures the same within noise).
//! - `json/*`: a `#[toolbox(json)]` tool (the last of four arms) called through `call(name,
//!   serde_json::Value)` against `serde_json::from_value` into a hand-written argument struct
//!   and the typed guarded method (`hand: serde_json::from_value + typed method`), and the
//!   same plus `Reply::from_call` (the dispatcher's output: the value serialised). Each side
//!   clones the same `Value` per call.
//! - `clock/system clock now` (one read of the wall clock, which the first success of a tool in
//!   a step pays) and `fleet/*` (B11: the healthy path with a fleet store attached and
//!   without): see BENCHMARKS.md.
//! - `telemetry/<path>/<setup>` (B12): what the `execute_tool` span and the `otel` metrics
//!   cost. Paths: `healthy` (the `#[toolbox]` method of `healthy`, the same toolbox),
//!   `refusal` (that method on an OPEN tool, as in `rejected`), `failure` (a
//!   `#[toolbox]` method whose tool fails, on a CLOSED tool: threshold and budget 1,000,000, a
//!   fresh toolbox built untimed every 10,000 failures), `tool 1 µs` and `tool 100 µs` (a
//!   healthy tool that spins that long on the monotonic clock first). Setups, each installed
//!   as the thread's default around its rows with `tracing::dispatcher::with_default` (never
//!   the global one), dropped after them, the call sites' interest rebuilt: `off` (no
//!   subscriber; run first, before any was ever registered), `subscriber, WARN filter` (a
//!   registry with a fmt layer to `io::sink` under a per-layer WARN filter), `subscriber,
//!   other targets only` (the same layer under a `Targets` filter that wants only target
//!   `agent`); with `--features otel`: `spans exported` (registry +
//!   `tracing_opentelemetry::layer()` on an SDK tracer whose simple processor exports each
//!   span into an exporter that drops it, `Discard`), `spans exported, lean bridge` (the same
//!   without the bridge's code location, thread, busy/idle time and context activation),
//!   `metrics only` (registry + `otel::Telemetry::layer()` on an SDK meter provider whose
//!   periodic reader waits an hour, so nothing is collected while measured) and `spans +
//!   metrics` (both). The 1 µs and 100 µs tools run under `off`, `spans exported` and `spans +
//!   metrics` only. Printed before each setup's rows: `alloc/telemetry, healthy call, <setup>:
//!   N allocations, B bytes per call`.
//!
//! Ratios, each within one run, and the targets they are held to:
//!
//! - breaker overhead at a cadence = `t(step_healthy/<impl>/<cadence>) − t(step_healthy/bare
//!   call/<cadence>)`: the loop, the tool and the step counter are the same on both sides;
//! - cost of stepping = overhead(`circuit-breaker runtime API`, `step every call`) /
//!   overhead(`circuit-breaker runtime API`, `no step`) (target at most 2x);
//! - against the peers = `t(step_healthy/circuit-breaker runtime API/step every 10 calls) /
//!   t(step_healthy/recloser 1.4/step every 10 calls)` (target at most 0.5x; likewise for
//!   failsafe and tower-resilience);
//! - contention = `t(step_contended/<impl>/2 threads) / t(step_contended/<impl>/1 thread)`
//!   per implementation (target at most 1.5x for ours);
//! - generated code = `t(healthy/circuit-breaker #[toolbox] method) / t(healthy/circuit-breaker
//!   runtime API)`, and per cadence in `step_healthy` (target at most 1.3x);
//! - refusal = `t(rejected/circuit-breaker #[toolbox] method) / t(rejected/recloser 1.4)`
//!   (target at most 0.5x, and `alloc/refusal via #[toolbox]` 0 allocations);
//! - failure = `t(failure/circuit-breaker runtime API, static message) / t(failure/recloser
//!   1.4)` (target at most 3x; recloser keeps no message);
//! - decide O(1) = `t(decide_scale/10000 tools/tool #9999) / t(decide_scale/10 tools/tool #0)`
//!   (1 within noise);
//! - JSON dispatcher = `t(json/#[toolbox(json)] call(name, Value)) / t(json/hand:
//!   serde_json::from_value + typed method)` (target at most 1.1x); over `.. + Reply::from_call`
//!   it is the dispatcher's own glue alone.
//! - telemetry = `t(telemetry/<path>/<setup>) / t(telemetry/<path>/off)`; the span check when
//!   nobody listens = `t(healthy/circuit-breaker #[toolbox] method)` of this commit over the
//!   same row of the commit before the spans (e4ea49e), run in one sitting.
//!
//! Run with `cargo bench -p agent-circuit-breaker --bench breakers` (one group: `... -- failure`;
//! quick: `... -- failure --warm-up-time 0.2 --measurement-time 0.5`; the telemetry rows that
//! use OpenTelemetry need `--features otel`: `cargo bench -p agent-circuit-breaker --bench breakers
//! --features otel -- telemetry`); `BENCHMARKS.md` has the runs. The allocation targets that
//! are absolute are also pinned by `tests/hot_path.rs`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Barrier, Once};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use agent_circuit_breaker::{
    CapabilityMap, CircuitState, Decision, Expeditor, Policy, ToolSpec, expeditor::ToolId,
    policy::ProbeUnit, toolbox,
};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, criterion_group, criterion_main};
use tower::Service as _;

#[cfg(feature = "otel")]
#[path = "common/otel_setup.rs"]
mod otel_setup;

/// A counting global allocator for the allocation and memory rows. Counting is off unless
/// [`counted`] switches it on (one relaxed load per allocation otherwise), and only one
/// thread runs while it is on, so the counts are that code's alone.
struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static ALLOCATED: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicI64 = AtomicI64::new(0);

fn on_alloc(size: usize) {
    if COUNTING.load(Ordering::Relaxed) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        ALLOCATED.fetch_add(size as u64, Ordering::Relaxed);
        LIVE.fetch_add(size as i64, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; counting
// touches only atomics, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        on_alloc(layout.size());
        // SAFETY: forwarded as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        on_alloc(layout.size());
        // SAFETY: forwarded as is.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            ALLOCATED.fetch_add(new_size as u64, Ordering::Relaxed);
            LIVE.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        }
        // SAFETY: forwarded as is.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        }
        // SAFETY: forwarded as is.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// What the allocator saw while [`counted`] ran its function.
#[derive(Clone, Copy, Debug)]
struct Counts {
    /// Allocations and reallocations.
    allocations: u64,
    /// Bytes asked for by them.
    bytes: u64,
    /// Bytes allocated and not freed (what the function's result keeps, if it returns it).
    live: i64,
}

/// Runs `f` with the counting allocator on; returns its result (dropped by the caller, after
/// counting stops) and the counts.
fn counted<R>(f: impl FnOnce() -> R) -> (R, Counts) {
    ALLOCATIONS.store(0, Ordering::Relaxed);
    ALLOCATED.store(0, Ordering::Relaxed);
    LIVE.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::SeqCst);
    let result = f();
    COUNTING.store(false, Ordering::SeqCst);
    let counts = Counts {
        allocations: ALLOCATIONS.load(Ordering::Relaxed),
        bytes: ALLOCATED.load(Ordering::Relaxed),
        live: LIVE.load(Ordering::Relaxed),
    };
    (result, counts)
}

/// Counts `calls` runs of `call` and prints the allocations per call, once per run of the
/// binary (the line criterion's filter selects with the benchmark it precedes).
fn print_allocations(label: &str, calls: u64, mut call: impl FnMut(u64)) {
    let ((), counts) = counted(|| {
        for i in 0..calls {
            call(i);
        }
    });
    #[allow(clippy::cast_precision_loss)]
    let (n, b) = (
        counts.allocations as f64 / calls as f64,
        counts.bytes as f64 / calls as f64,
    );
    println!("\nalloc/{label}: {n:.2} allocations, {b:.1} bytes per call (over {calls} calls)");
}

/// The tool: as cheap as a function can be, so that only the breaker is measured.
#[inline(never)]
fn work(x: u64) -> Result<u64, std::io::Error> {
    Ok(x.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17))
}

#[inline(never)]
fn broken(_: u64) -> Result<u64, std::io::Error> {
    Err(std::io::Error::from(std::io::ErrorKind::ConnectionRefused))
}

/// Never set (stored `false` through `black_box` when `healthy` starts): `work_may_fail`
/// fails when it is, so the compiler cannot prove that the tool always succeeds.
static FAIL_NEVER: AtomicBool = AtomicBool::new(false);

/// `work`, for a tool the compiler cannot see always succeeding: a real tool. Against `work`
/// (which LLVM can prove always `Ok`, and whose failure arm it may then delete from the
/// caller), it says what the generated method costs when its failure path is really there.
#[inline(never)]
fn work_may_fail(x: u64) -> Result<u64, std::io::Error> {
    if FAIL_NEVER.load(Ordering::Relaxed) {
        return broken(x);
    }
    work(x)
}

/// A toolbox around `work_may_fail` (the `healthy` row `.. #[toolbox] method, tool that may
/// fail`).
struct MayFail;

#[toolbox(policy(threshold = 3, budget = 1_000_000, probe_every = 1_000_000))]
impl MayFail {
    #[tool(provides = "a cheap computation", fallback = "do it by hand")]
    fn work(&self, x: u64) -> Result<u64, std::io::Error> {
        work_may_fail(x)
    }
}

/// A toolbox around `work`, for the generated path.
struct Bench;

#[toolbox(policy(threshold = 3, budget = 1_000_000, probe_every = 1_000_000))]
impl Bench {
    #[tool(provides = "a cheap computation", fallback = "do it by hand")]
    fn work(&self, x: u64) -> Result<u64, std::io::Error> {
        work(x)
    }
}

/// An expeditor with one tool `work`. Probes are counted in steps and no step passes, so an
/// OPEN tool stays OPEN however many attempts the harness makes.
fn expeditor() -> (Expeditor, ToolId) {
    expeditor_with(|policy| policy)
}

/// The same tool under a service's time policy (cool-down and budget window, B13): the
/// healthy path must not notice.
fn service_expeditor() -> (Expeditor, ToolId) {
    expeditor_with(Policy::for_service)
}

fn expeditor_with(configure: fn(Policy) -> Policy) -> (Expeditor, ToolId) {
    let map = agent_circuit_breaker::CapabilityMap::new().tool(
        agent_circuit_breaker::ToolSpec::new("work")
            .provides("a cheap computation")
            .fallback("do it by hand"),
    );
    let policy = Policy::builder()
        .threshold(3)
        .budget(1_000_000)
        .probe_every(1_000)
        .probe_unit(agent_circuit_breaker::policy::ProbeUnit::Steps)
        .build()
        .expect("valid policy");
    let expeditor = Expeditor::builder(map)
        .policy(configure(policy))
        .build()
        .expect("valid map");
    let id = expeditor.tool("work").expect("declared");
    (expeditor, id)
}

/// decide + record success: the healthy path through the runtime API.
#[inline]
fn guarded_call(expeditor: &Expeditor, id: ToolId, x: u64) -> Option<u64> {
    match expeditor.decide(id) {
        Decision::Call(ticket) | Decision::Probe(ticket) => match work(x) {
            Ok(v) => {
                ticket.success();
                Some(v)
            }
            Err(e) => {
                let _ = ticket.failure(&e);
                None
            }
        },
        Decision::Skip(_) | Decision::Pause(_) => None,
    }
}

fn recloser() -> recloser::Recloser {
    recloser::Recloser::custom()
        .error_rate(0.99)
        .closed_len(3)
        .half_open_len(1)
        .open_wait(Duration::from_secs(3600))
        .build()
}

type Failsafe = failsafe::StateMachine<
    failsafe::failure_policy::ConsecutiveFailures<failsafe::backoff::Constant>,
    (),
>;

fn failsafe() -> Failsafe {
    let backoff = failsafe::backoff::constant(Duration::from_secs(3600));
    let policy = failsafe::failure_policy::consecutive_failures(3, backoff);
    failsafe::Config::new().failure_policy(policy).build()
}

/// The tool as a tower `Service` for tower-resilience: `work` (or `broken`) behind a ready
/// future, so the service itself costs nothing but the call.
#[derive(Clone, Copy)]
struct TowerTool(fn(u64) -> Result<u64, std::io::Error>);

impl tower::Service<u64> for TowerTool {
    type Response = u64;
    type Error = std::io::Error;
    type Future = std::future::Ready<Result<u64, std::io::Error>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, x: u64) -> Self::Future {
        std::future::ready((self.0)(x))
    }
}

type TowerBreaker = tower_resilience::circuitbreaker::CircuitBreaker<
    TowerTool,
    tower_resilience::circuitbreaker::DefaultClassifier,
>;
type TowerError = tower_resilience::circuitbreaker::CircuitBreakerError<std::io::Error>;

/// tower-resilience 0.13, consecutive failures, threshold `k` (3 like the others), one hour
/// open, around `tool`.
fn tower_breaker_with(k: usize, tool: fn(u64) -> Result<u64, std::io::Error>) -> TowerBreaker {
    tower_resilience::circuitbreaker::CircuitBreakerLayer::builder()
        .consecutive_failures(k)
        .wait_duration_in_open(Duration::from_secs(3600))
        .build()
        .expect("valid tower-resilience config")
        .layer_fn(TowerTool(tool))
}

fn tower_breaker() -> TowerBreaker {
    tower_breaker_with(3, work)
}

/// One call through tower-resilience's breaker, driven by hand without a runtime:
/// `poll_ready`, `call`, then the returned (boxed) future polled with a no-op waker. On an
/// uncontended breaker every poll is ready at once; a `Pending` (its tokio mutex held by the
/// other thread in `step_contended`) is polled again after `yield_now`: the minimal executor.
#[inline]
fn tower_call(service: &mut TowerBreaker, x: u64) -> Result<u64, TowerError> {
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        match service.poll_ready(&mut cx) {
            Poll::Ready(Ok(())) => break,
            Poll::Ready(Err(e)) => return Err(e),
            Poll::Pending => thread::yield_now(),
        }
    }
    let mut future = service.call(x);
    loop {
        if let Poll::Ready(result) = future.as_mut().poll(&mut cx) {
            return result;
        }
        thread::yield_now();
    }
}

fn healthy(c: &mut Criterion) {
    let mut group = c.benchmark_group("healthy");
    group.bench_function("direct call", |b| {
        let mut x = 0u64;
        b.iter(|| {
            x = x.wrapping_add(1);
            black_box(work(black_box(x)).ok())
        });
    });
    let (expeditor, id) = expeditor();
    group.bench_function("circuit-breaker runtime API", |b| {
        let mut x = 0u64;
        b.iter(|| {
            x = x.wrapping_add(1);
            black_box(guarded_call(&expeditor, id, black_box(x)))
        });
    });
    let (service, service_id) = service_expeditor();
    group.bench_function("circuit-breaker runtime API, service time policy", |b| {
        let mut x = 0u64;
        b.iter(|| {
            x = x.wrapping_add(1);
            black_box(guarded_call(&service, service_id, black_box(x)))
        });
    });
    let guarded = GuardedBench::new(Bench);
    group.bench_function("circuit-breaker #[toolbox] method", |b| {
        let mut x = 0u64;
        b.iter(|| {
            x = x.wrapping_add(1);
            black_box(guarded.work(black_box(x)).ok().map(|r| r.value))
        });
    });
    FAIL_NEVER.store(black_box(false), Ordering::Relaxed);
    let may_fail = GuardedMayFail::new(MayFail);
    group.bench_function(
        "circuit-breaker #[toolbox] method, tool that may fail",
        |b| {
            let mut x = 0u64;
            b.iter(|| {
                x = x.wrapping_add(1);
                black_box(may_fail.work(black_box(x)).ok().map(|r| r.value))
            });
        },
    );
    let recloser = recloser();
    group.bench_function("recloser 1.4", |b| {
        let mut x = 0u64;
        b.iter(|| {
            x = x.wrapping_add(1);
            black_box(recloser.call(|| work(black_box(x))).ok())
        });
    });
    let failsafe = failsafe();
    group.bench_function("failsafe 1.3", |b| {
        use failsafe::CircuitBreaker as _;
        let mut x = 0u64;
        b.iter(|| {
            x = x.wrapping_add(1);
            black_box(failsafe.call(|| work(black_box(x))).ok())
        });
    });
    let mut tower = tower_breaker();
    group.bench_function("tower-resilience 0.13", |b| {
        let mut x = 0u64;
        b.iter(|| {
            x = x.wrapping_add(1);
            black_box(tower_call(&mut tower, black_box(x)).ok())
        });
    });
    group.finish();
}

fn rejected(c: &mut Criterion) {
    let mut group = c.benchmark_group("rejected");
    let (expeditor, id) = expeditor();
    for _ in 0..3 {
        if let Decision::Call(ticket) = expeditor.decide(id) {
            let _ = ticket.failure("connection refused");
        }
    }
    assert!(matches!(expeditor.decide(id), Decision::Skip(_)));
    group.bench_function("circuit-breaker runtime API", |b| {
        b.iter(|| black_box(matches!(expeditor.decide(black_box(id)), Decision::Skip(_))));
    });
    let recloser = recloser();
    for _ in 0..4 {
        let _ = recloser.call(|| broken(0));
    }
    assert!(matches!(
        recloser.call(|| work(0)),
        Err(recloser::Error::Rejected)
    ));
    group.bench_function("recloser 1.4", |b| {
        b.iter(|| black_box(recloser.call(|| work(black_box(1))).is_err()));
    });
    let failsafe = failsafe();
    {
        use failsafe::CircuitBreaker as _;
        for _ in 0..3 {
            let _ = failsafe.call(|| broken(0));
        }
        assert!(matches!(
            failsafe.call(|| work(0)),
            Err(failsafe::Error::Rejected)
        ));
        group.bench_function("failsafe 1.3", |b| {
            b.iter(|| black_box(failsafe.call(|| work(black_box(1))).is_err()));
        });
    }
    let mut tower = tower_breaker_with(3, broken);
    for _ in 0..3 {
        let _ = tower_call(&mut tower, 0);
    }
    assert!(matches!(
        tower_call(&mut tower, 0),
        Err(TowerError::OpenCircuit)
    ));
    group.bench_function("tower-resilience 0.13", |b| {
        b.iter(|| black_box(tower_call(&mut tower, black_box(1)).is_err()));
    });
    // The generated method on an OPEN tool. The refusal is built and dropped unrendered;
    // rendering its text is the next row, apart.
    let guarded = refusing::open();
    print_allocations("refusal via #[toolbox]", 1_000, |x| {
        black_box(guarded.work(black_box(x)).is_err());
    });
    group.bench_function("circuit-breaker #[toolbox] method", |b| {
        let mut x = 0u64;
        b.iter(|| {
            x = x.wrapping_add(1);
            black_box(guarded.work(black_box(x)).is_err())
        });
    });
    print_allocations("refusal via #[toolbox], rendered (to_string)", 1_000, |x| {
        if let Err(e) = guarded.work(black_box(x)) {
            black_box(e.to_string());
        }
    });
    let Err(refusal) = guarded.work(0) else {
        panic!("the tool is OPEN")
    };
    group.bench_function("circuit-breaker #[toolbox] refusal, render text", |b| {
        b.iter(|| black_box(black_box(&refusal).to_string()));
    });
    group.finish();
}

/// Runs `call` `iters` times on each of `threads` threads at once; returns the mean wall time
/// the threads took (so the figure is time per call per thread).
fn on_threads(threads: usize, iters: u64, call: &(dyn Fn(u64) + Sync)) -> Duration {
    let barrier = Barrier::new(threads);
    let total: Duration = thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    barrier.wait();
                    let start = Instant::now();
                    for i in 0..iters {
                        call(i);
                    }
                    start.elapsed()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .sum()
    });
    total / u32::try_from(threads).unwrap_or(1)
}

/// [`on_threads`] for a call with state of its own per thread: `make` runs on each thread,
/// before the barrier, and gives that thread's call.
fn on_threads_with<'a>(
    threads: usize,
    iters: u64,
    make: &(dyn Fn() -> Box<dyn FnMut(u64) + 'a> + Sync),
) -> Duration {
    let barrier = Barrier::new(threads);
    let total: Duration = thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut call = make();
                    barrier.wait();
                    let start = Instant::now();
                    for i in 0..iters {
                        call(i);
                    }
                    start.elapsed()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .sum()
    });
    total / u32::try_from(threads).unwrap_or(1)
}

fn contended(c: &mut Criterion) {
    let mut group = c.benchmark_group("contended");
    let (expeditor, id) = expeditor();
    let recloser = recloser();
    let failsafe = failsafe();
    let ours = |x: u64| {
        black_box(guarded_call(&expeditor, id, black_box(x)));
    };
    let theirs = |x: u64| {
        black_box(recloser.call(|| work(black_box(x))).ok());
    };
    let safe = |x: u64| {
        use failsafe::CircuitBreaker as _;
        black_box(failsafe.call(|| work(black_box(x))).ok());
    };
    for (name, call) in [
        (
            "circuit-breaker runtime API",
            &ours as &(dyn Fn(u64) + Sync),
        ),
        ("recloser 1.4", &theirs),
        ("failsafe 1.3", &safe),
    ] {
        group.bench_function(format!("{name}, 1 thread"), |b| {
            b.iter_custom(|iters| on_threads(1, iters, call));
        });
        group.bench_function(format!("{name}, 2 threads"), |b| {
            b.iter_custom(|iters| on_threads(2, iters, call));
        });
    }
    // Each thread calls its own clone of one tower-resilience breaker (see `step_contended`).
    let tower = tower_breaker();
    let make = || {
        let mut service = tower.clone();
        Box::new(move |x: u64| {
            black_box(tower_call(&mut service, black_box(x)).ok());
        }) as Box<dyn FnMut(u64) + '_>
    };
    group.bench_function("tower-resilience 0.13, 1 thread", |b| {
        b.iter_custom(|iters| on_threads_with(1, iters, &make));
    });
    group.bench_function("tower-resilience 0.13, 2 threads", |b| {
        b.iter_custom(|iters| on_threads_with(2, iters, &make));
    });
    group.finish();
}

/// The bare loop's step counter, advanced exactly as `Expeditor::advance_step` advances its
/// own (one `fetch_add`), so that subtracting the bare loop removes the step. Runs whose
/// loops stepped otherwise are marked as such in docs/benchmarks-history.md.
#[inline]
fn advance(steps: &AtomicU64) -> u64 {
    steps.fetch_add(1, Ordering::AcqRel).wrapping_add(1)
}

/// Whether call number `x` is preceded by a step: never (`EVERY == 0`), before every call
/// (`1`) or before every `EVERY`th. A constant, so `no step` carries no test at all.
#[inline(always)]
fn due<const EVERY: u64>(x: u64) -> bool {
    match EVERY {
        0 => false,
        1 => true,
        n => x.is_multiple_of(n),
    }
}

const NO_STEP: &str = "no step";
const EVERY_10: &str = "step every 10 calls";
const EVERY_CALL: &str = "step every call";

fn step_healthy(c: &mut Criterion) {
    let mut group = c.benchmark_group("step_healthy");
    step_cadence::<0>(&mut group, NO_STEP);
    step_cadence::<10>(&mut group, EVERY_10);
    step_cadence::<1>(&mut group, EVERY_CALL);
    group.finish();
}

/// Every implementation at one cadence, each on a fresh breaker and step counter.
fn step_cadence<const EVERY: u64>(group: &mut BenchmarkGroup<'_, WallTime>, cadence: &str) {
    let steps = AtomicU64::new(0);
    group.bench_function(BenchmarkId::new("bare call", cadence), |b| {
        let mut x = 0u64;
        b.iter(|| {
            x = x.wrapping_add(1);
            if due::<EVERY>(x) {
                black_box(advance(&steps));
            }
            black_box(work(black_box(x)).ok())
        });
    });
    let (expeditor, id) = expeditor();
    group.bench_function(
        BenchmarkId::new("circuit-breaker runtime API", cadence),
        |b| {
            let mut x = 0u64;
            b.iter(|| {
                x = x.wrapping_add(1);
                if due::<EVERY>(x) {
                    black_box(expeditor.advance_step());
                }
                black_box(guarded_call(&expeditor, id, black_box(x)))
            });
        },
    );
    let guarded = GuardedBench::new(Bench);
    group.bench_function(
        BenchmarkId::new("circuit-breaker #[toolbox] method", cadence),
        |b| {
            let mut x = 0u64;
            b.iter(|| {
                x = x.wrapping_add(1);
                if due::<EVERY>(x) {
                    black_box(guarded.expeditor().advance_step());
                }
                black_box(guarded.work(black_box(x)).ok().map(|r| r.value))
            });
        },
    );
    let recloser = recloser();
    let steps = AtomicU64::new(0);
    group.bench_function(BenchmarkId::new("recloser 1.4", cadence), |b| {
        let mut x = 0u64;
        b.iter(|| {
            x = x.wrapping_add(1);
            if due::<EVERY>(x) {
                black_box(advance(&steps));
            }
            black_box(recloser.call(|| work(black_box(x))).ok())
        });
    });
    let failsafe = failsafe();
    let steps = AtomicU64::new(0);
    group.bench_function(BenchmarkId::new("failsafe 1.3", cadence), |b| {
        use failsafe::CircuitBreaker as _;
        let mut x = 0u64;
        b.iter(|| {
            x = x.wrapping_add(1);
            if due::<EVERY>(x) {
                black_box(advance(&steps));
            }
            black_box(failsafe.call(|| work(black_box(x))).ok())
        });
    });
    let mut tower = tower_breaker();
    let steps = AtomicU64::new(0);
    group.bench_function(BenchmarkId::new("tower-resilience 0.13", cadence), |b| {
        let mut x = 0u64;
        b.iter(|| {
            x = x.wrapping_add(1);
            if due::<EVERY>(x) {
                black_box(advance(&steps));
            }
            black_box(tower_call(&mut tower, black_box(x)).ok())
        });
    });
}

/// Two threads on one tool, each stepping before every tenth of its own calls (one shared
/// step counter, as one agent's expeditor has one step).
fn step_contended(c: &mut Criterion) {
    let mut group = c.benchmark_group("step_contended");
    let bare_steps = AtomicU64::new(0);
    let bare = |x: u64| {
        if due::<10>(x) {
            black_box(advance(&bare_steps));
        }
        black_box(work(black_box(x)).ok());
    };
    let (expeditor, id) = expeditor();
    let ours = |x: u64| {
        if due::<10>(x) {
            black_box(expeditor.advance_step());
        }
        black_box(guarded_call(&expeditor, id, black_box(x)));
    };
    let recloser = recloser();
    let recloser_steps = AtomicU64::new(0);
    let theirs = |x: u64| {
        if due::<10>(x) {
            black_box(advance(&recloser_steps));
        }
        black_box(recloser.call(|| work(black_box(x))).ok());
    };
    let failsafe = failsafe();
    let failsafe_steps = AtomicU64::new(0);
    let safe = |x: u64| {
        use failsafe::CircuitBreaker as _;
        if due::<10>(x) {
            black_box(advance(&failsafe_steps));
        }
        black_box(failsafe.call(|| work(black_box(x))).ok());
    };
    for (name, call) in [
        ("bare call", &bare as &(dyn Fn(u64) + Sync)),
        ("circuit-breaker runtime API", &ours),
        ("recloser 1.4", &theirs),
        ("failsafe 1.3", &safe),
    ] {
        group.bench_function(BenchmarkId::new(name, "1 thread"), |b| {
            b.iter_custom(|iters| on_threads(1, iters, call));
        });
        group.bench_function(BenchmarkId::new(name, "2 threads"), |b| {
            b.iter_custom(|iters| on_threads(2, iters, call));
        });
    }
    // tower's `Service::call` takes `&mut self`: each thread calls its own clone of one
    // breaker (clones share the circuit, as tower's services do).
    let tower = tower_breaker();
    let tower_steps = AtomicU64::new(0);
    let make = || {
        let mut service = tower.clone();
        let steps = &tower_steps;
        Box::new(move |x: u64| {
            if due::<10>(x) {
                black_box(advance(steps));
            }
            black_box(tower_call(&mut service, black_box(x)).ok());
        }) as Box<dyn FnMut(u64) + '_>
    };
    for threads in [1, 2] {
        let label = if threads == 1 {
            "1 thread"
        } else {
            "2 threads"
        };
        group.bench_function(BenchmarkId::new("tower-resilience 0.13", label), |b| {
            b.iter_custom(|iters| on_threads_with(threads, iters, &make));
        });
    }
    group.finish();
}

/// What the first success of a tool in a step costs beyond the word it reads: one read of the
/// wall clock (`clock/system clock now`), the state table's "Last Success". The steps cases
/// pay it once per step and tool.
fn clock(c: &mut Criterion) {
    use agent_circuit_breaker::clock::{SystemClock, WallClock};
    let mut group = c.benchmark_group("clock");
    let clock = SystemClock;
    group.bench_function("system clock now", |b| {
        b.iter(|| black_box(black_box(&clock).now()));
    });
    group.finish();
}

/// A store that is attached and does nothing: the expeditor's side of sharing, without I/O.
struct InertStore;

impl agent_circuit_breaker::expeditor::FleetStore for InertStore {
    fn name(&self) -> String {
        "inert".to_owned()
    }
    fn attach(&self, _link: agent_circuit_breaker::expeditor::FleetLink) {}
    fn share(&self, _transitions: &[agent_circuit_breaker::fleet::SharedTransition]) {}
}

/// The `work` expeditor of [`expeditor`] with a fleet store attached.
fn expeditor_with_fleet(
    store: impl agent_circuit_breaker::expeditor::FleetStore,
) -> (Expeditor, ToolId) {
    let (plain, _) = expeditor();
    let map = agent_circuit_breaker::CapabilityMap::new().tool(
        agent_circuit_breaker::ToolSpec::new("work")
            .provides("a cheap computation")
            .fallback("do it by hand"),
    );
    let expeditor = Expeditor::builder(map)
        .policy(plain.policy())
        .fleet(store)
        .build()
        .expect("valid map");
    let id = expeditor.tool("work").expect("declared");
    (expeditor, id)
}

/// B11: the healthy path with a fleet store attached and without. With `--features redis`
/// and `REDIS_URL` set, a real `RedisFleet` too, its task polling Redis on another thread
/// meanwhile (every 100 ms).
fn fleet(c: &mut Criterion) {
    let mut group = c.benchmark_group("fleet");
    let (expeditor, id) = expeditor();
    group.bench_function("no store", |b| {
        let mut x = 0u64;
        b.iter(|| {
            x = x.wrapping_add(1);
            black_box(guarded_call(&expeditor, id, black_box(x)))
        });
    });
    let (expeditor, id) = expeditor_with_fleet(InertStore);
    group.bench_function("inert store attached", |b| {
        let mut x = 0u64;
        b.iter(|| {
            x = x.wrapping_add(1);
            black_box(guarded_call(&expeditor, id, black_box(x)))
        });
    });
    #[cfg(feature = "redis")]
    if let Ok(url) = std::env::var("REDIS_URL") {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let store = runtime
            .block_on(async {
                agent_circuit_breaker::redis::RedisFleet::connect(url.as_str(), "bench")
                    .worker("bench")
                    .poll_interval(Duration::from_millis(100))
                    .await
            })
            .expect("RedisFleet");
        let (expeditor, id) = expeditor_with_fleet(store);
        // The store's task runs on this thread while the benchmark runs.
        let driver = std::thread::spawn(move || {
            runtime.block_on(async { tokio::time::sleep(Duration::from_secs(30)).await });
        });
        group.bench_function("RedisFleet attached", |b| {
            let mut x = 0u64;
            b.iter(|| {
                x = x.wrapping_add(1);
                black_box(guarded_call(&expeditor, id, black_box(x)))
            });
        });
        drop(expeditor);
        let _ = driver.join();
    }
    group.finish();
}

/// The generated method on an OPEN tool (the `#[toolbox]` refusal row of BENCHMARKS.md's
/// summary): a toolbox whose tool always fails, probes counted in steps and no step taken, so
/// it stays OPEN.
mod refusing {
    use agent_circuit_breaker::toolbox;

    pub struct Broken;

    #[toolbox(policy(
        threshold = 3,
        budget = 1_000_000,
        probe_every = 1_000,
        probe_unit = "steps"
    ))]
    impl Broken {
        #[tool(provides = "a cheap computation", fallback = "do it by hand")]
        fn work(&self, x: u64) -> Result<u64, std::io::Error> {
            super::broken(x)
        }
    }

    /// The guarded toolbox with `work` OPEN.
    pub fn open() -> GuardedBroken {
        let guarded = GuardedBroken::new(Broken);
        for x in 0..3 {
            assert!(guarded.work(x).is_err());
        }
        assert_eq!(
            guarded
                .expeditor()
                .state(guarded.expeditor().tool("work").expect("declared")),
            Some(super::CircuitState::Open)
        );
        guarded
    }
}

/// The JSON dispatcher (target: at most 1.1x decoding by hand): `#[toolbox(json)]` with four
/// tools, `work` the last arm of the generated match on the name.
mod json_tools {
    use agent_circuit_breaker::toolbox;

    pub struct Tools;

    #[toolbox(
        json,
        policy(threshold = 3, budget = 1_000_000, probe_every = 1_000_000)
    )]
    impl Tools {
        /// Reads a file.
        #[tool(provides = "file reading", fallback = "ask the user for the file")]
        fn read(&self, path: &str) -> Result<String, std::io::Error> {
            Ok(path.to_owned())
        }

        /// Searches.
        #[tool(provides = "content search", fallback = "ask the user where to look")]
        fn grep(&self, pattern: &str, limit: Option<u32>) -> Result<u32, std::io::Error> {
            Ok(u32::try_from(pattern.len()).unwrap_or(0) + limit.unwrap_or(0))
        }

        /// Runs a command.
        #[tool(provides = "command execution", fallback = "ask the user to run it")]
        fn bash(&self, command: &str) -> Result<usize, std::io::Error> {
            Ok(command.len())
        }

        /// The cheap computation.
        #[tool(provides = "a cheap computation", fallback = "do it by hand")]
        fn work(
            &self,
            /// The input.
            x: u64,
        ) -> Result<u64, std::io::Error> {
            super::work(x)
        }
    }

    /// What a caller without the dispatcher writes for `work`: its own argument struct.
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct WorkArgs {
        pub x: u64,
    }
}

/// An expeditor whose tools stay CLOSED under any failure count the benchmarks reach:
/// threshold and budget 1,000,000; probes in steps.
fn closed_policy() -> Policy {
    Policy::builder()
        .threshold(1_000_000)
        .budget(1_000_000)
        .probe_every(1_000)
        .probe_unit(ProbeUnit::Steps)
        .build()
        .expect("valid policy")
}

fn failing_expeditor() -> (Expeditor, ToolId) {
    let (plain, _) = expeditor();
    let map = plain.capability_map();
    let expeditor = Expeditor::builder(map)
        .policy(closed_policy())
        .build()
        .expect("valid map");
    let id = expeditor.tool("work").expect("declared");
    (expeditor, id)
}

/// decide + the tool's error + `ticket.failure(message)`: the failure path on a CLOSED tool.
#[inline]
fn guarded_failure<M: Into<agent_circuit_breaker::Failure>>(
    expeditor: &Expeditor,
    id: ToolId,
    x: u64,
    message: impl FnOnce() -> M,
) -> bool {
    match expeditor.decide(id) {
        Decision::Call(ticket) | Decision::Probe(ticket) => match broken(x) {
            Ok(_) => {
                ticket.success();
                false
            }
            Err(_) => {
                black_box(ticket.failure(message()));
                true
            }
        },
        Decision::Skip(_) | Decision::Pause(_) => false,
    }
}

/// Failures per fresh expeditor in the `failure` group: the ledger of one never holds more
/// than this many (at most a few MB however long criterion runs).
const FAILURE_CHUNK: u64 = 10_000;

/// Times `iters` failures on CLOSED tools: a fresh expeditor (built and dropped untimed) for
/// every [`FAILURE_CHUNK`] failures, so the breaker stays CLOSED and memory stays bounded.
fn time_failures<M: Into<agent_circuit_breaker::Failure>>(
    iters: u64,
    message: impl Fn(u64) -> M,
) -> Duration {
    let mut total = Duration::ZERO;
    let mut done = 0;
    while done < iters {
        let n = (iters - done).min(FAILURE_CHUNK);
        let (expeditor, id) = failing_expeditor();
        let start = Instant::now();
        for x in done..done + n {
            black_box(guarded_failure(&expeditor, id, black_box(x), || message(x)));
        }
        total += start.elapsed();
        debug_assert_eq!(expeditor.state(id), Some(CircuitState::Closed));
        drop(expeditor);
        done += n;
    }
    total
}

/// A failure on a CLOSED tool, ours and the peers', each configured never to open (recloser:
/// error rate above 1; failsafe and tower-resilience: `u32::MAX` / `usize::MAX` consecutive
/// failures).
fn failure(c: &mut Criterion) {
    let mut group = c.benchmark_group("failure");
    const STATIC: &str = "connection refused";
    {
        let (expeditor, id) = failing_expeditor();
        print_allocations("failure, static message", 1_000, |x| {
            guarded_failure(&expeditor, id, x, || STATIC);
        });
        print_allocations(
            "failure, owned String message (its String included)",
            1_000,
            |x| {
                guarded_failure(&expeditor, id, x, || String::from(STATIC));
            },
        );
        assert_eq!(expeditor.state(id), Some(CircuitState::Closed));
    }
    group.bench_function("circuit-breaker runtime API, static message", |b| {
        b.iter_custom(|iters| time_failures(iters, |_| STATIC));
    });
    group.bench_function("circuit-breaker runtime API, owned String message", |b| {
        b.iter_custom(|iters| time_failures(iters, |_| String::from(STATIC)));
    });
    // The cross-check: the benchmarks' usual policy (threshold 3), each failure followed by a
    // success that resets the streak, so the tool stays CLOSED; failure cost = this row −
    // `healthy/circuit-breaker runtime API`.
    group.bench_function(
        "circuit-breaker runtime API, threshold 3, failure + success",
        |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut done = 0;
                while done < iters {
                    let n = (iters - done).min(FAILURE_CHUNK);
                    let (plain, _) = expeditor();
                    let policy = Policy::builder()
                        .threshold(3)
                        .budget(1_000_000)
                        .probe_every(1_000)
                        .probe_unit(ProbeUnit::Steps)
                        .build()
                        .expect("valid policy");
                    let expeditor = Expeditor::builder(plain.capability_map())
                        .policy(policy)
                        .build()
                        .expect("valid map");
                    let id = expeditor.tool("work").expect("declared");
                    let start = Instant::now();
                    for x in done..done + n {
                        black_box(guarded_failure(&expeditor, id, black_box(x), || STATIC));
                        black_box(guarded_call(&expeditor, id, black_box(x)));
                    }
                    total += start.elapsed();
                    debug_assert_eq!(expeditor.state(id), Some(CircuitState::Closed));
                    drop(expeditor);
                    done += n;
                }
                total
            });
        },
    );
    let recloser = recloser::Recloser::custom()
        .error_rate(2.0)
        .closed_len(3)
        .half_open_len(1)
        .open_wait(Duration::from_secs(3600))
        .build();
    print_allocations("failure, recloser 1.4", 1_000, |x| {
        black_box(recloser.call(|| broken(x)).is_err());
    });
    group.bench_function("recloser 1.4", |b| {
        let mut x = 0u64;
        b.iter(|| {
            x = x.wrapping_add(1);
            black_box(recloser.call(|| broken(black_box(x))).is_err())
        });
    });
    assert!(recloser.call(|| work(0)).is_ok(), "recloser stayed CLOSED");
    let failsafe: Failsafe = failsafe::Config::new()
        .failure_policy(failsafe::failure_policy::consecutive_failures(
            u32::MAX,
            failsafe::backoff::constant(Duration::from_secs(3600)),
        ))
        .build();
    {
        use failsafe::CircuitBreaker as _;
        print_allocations("failure, failsafe 1.3", 1_000, |x| {
            black_box(failsafe.call(|| broken(x)).is_err());
        });
        group.bench_function("failsafe 1.3", |b| {
            let mut x = 0u64;
            b.iter(|| {
                x = x.wrapping_add(1);
                black_box(failsafe.call(|| broken(black_box(x))).is_err())
            });
        });
        assert!(failsafe.call(|| work(0)).is_ok(), "failsafe stayed CLOSED");
    }
    let mut tower = tower_breaker_with(usize::MAX, broken);
    print_allocations("failure, tower-resilience 0.13", 1_000, |x| {
        black_box(tower_call(&mut tower, x).is_err());
    });
    group.bench_function("tower-resilience 0.13", |b| {
        let mut x = 0u64;
        b.iter(|| {
            x = x.wrapping_add(1);
            black_box(tower_call(&mut tower, black_box(x)).is_err())
        });
    });
    assert!(
        matches!(tower_call(&mut tower, 0), Err(TowerError::Inner(_))),
        "tower-resilience stayed CLOSED"
    );
    group.finish();
}

/// The tools of the memory and scale rows: `tool_<i>`, each with a capability and a
/// fallback, their text owned and of exact capacity. Returns the map and the text's bytes.
fn many_tools(n: usize) -> (CapabilityMap, usize) {
    let mut text = 0;
    let mut map = CapabilityMap::new();
    for i in 0..n {
        let name = format!("tool_{i}").into_boxed_str().into_string();
        let provides = format!("capability number {i}")
            .into_boxed_str()
            .into_string();
        let fallback = format!("ask the user for result {i}")
            .into_boxed_str()
            .into_string();
        text += name.len() + provides.len() + fallback.len();
        map = map.tool(ToolSpec::new(name).provides(provides).fallback(fallback));
    }
    (map, text)
}

/// Tools in the heap-per-tool row.
const MEMORY_TOOLS: usize = 1_000;

/// Prints one heap-per-tool row: the live bytes `counts` saw, less `text`, per tool.
fn print_heap(label: &str, counts: Counts, text: usize) {
    #[allow(clippy::cast_precision_loss)]
    let per_tool = (counts.live as f64 - text as f64) / MEMORY_TOOLS as f64;
    println!(
        "\nheap per tool/{label}: {per_tool:.1} B per tool ({} B live for {MEMORY_TOOLS} tools, \
         {text} B of it spec text, {} allocations)",
        counts.live, counts.allocations
    );
}

/// Heap per tool (live bytes after building 1,000 tools, less their spec text, per tool) and
/// the failure ledger after 100,000 failures. The timed part is the build (and the 100,000
/// failures); the figures held to targets (at most 300 B per tool for ours; a ledger that does
/// not grow with the count) are the printed `heap per tool/..` and `ledger/..` lines, measured
/// by the counting allocator once per run.
fn memory(c: &mut Criterion) {
    static OURS: Once = Once::new();
    static PEERS: Once = Once::new();
    static LEDGER: Once = Once::new();
    let mut group = c.benchmark_group("memory");
    group.sample_size(10);
    let build_ours = || {
        let (map, text) = many_tools(MEMORY_TOOLS);
        let expeditor = Expeditor::builder(map)
            .policy(Policy::default())
            .build()
            .expect("valid map");
        (expeditor, text)
    };
    group.bench_function(
        format!("circuit-breaker, build {MEMORY_TOOLS} tools"),
        |b| {
            OURS.call_once(|| {
                let ((expeditor, text), counts) = counted(build_ours);
                print_heap("circuit-breaker Expeditor", counts, text);
                drop(expeditor);
            });
            b.iter(|| black_box(build_ours()));
        },
    );
    group.bench_function(format!("peers, build {MEMORY_TOOLS} breakers each"), |b| {
        PEERS.call_once(|| {
            // One breaker per tool in a Vec, no names (they keep no spec text).
            let (v, counts) = counted(|| (0..MEMORY_TOOLS).map(|_| recloser()).collect::<Vec<_>>());
            print_heap("recloser 1.4 (one Recloser per tool)", counts, 0);
            drop(v);
            let (v, counts) = counted(|| (0..MEMORY_TOOLS).map(|_| failsafe()).collect::<Vec<_>>());
            print_heap("failsafe 1.3 (one StateMachine per tool)", counts, 0);
            drop(v);
            let (v, counts) = counted(|| {
                (0..MEMORY_TOOLS)
                    .map(|_| tower_breaker())
                    .collect::<Vec<_>>()
            });
            print_heap(
                "tower-resilience 0.13 (one layer + CircuitBreaker per tool)",
                counts,
                0,
            );
            drop(v);
        });
        b.iter(|| {
            black_box((0..MEMORY_TOOLS).map(|_| recloser()).collect::<Vec<_>>());
            black_box((0..MEMORY_TOOLS).map(|_| failsafe()).collect::<Vec<_>>());
            black_box(
                (0..MEMORY_TOOLS)
                    .map(|_| tower_breaker())
                    .collect::<Vec<_>>(),
            );
        });
    });
    const FAILURES: u64 = 100_000;
    let hundred_thousand = |owned: bool| {
        let (expeditor, id) = failing_expeditor();
        for x in 0..FAILURES {
            if owned {
                guarded_failure(&expeditor, id, x, || format!("connection refused #{x}"));
            } else {
                guarded_failure(&expeditor, id, x, || "connection refused");
            }
        }
        assert_eq!(expeditor.state(id), Some(CircuitState::Closed));
        expeditor
    };
    group.bench_function(format!("ledger, {FAILURES} failures"), |b| {
        LEDGER.call_once(|| {
            for owned in [false, true] {
                let (expeditor, id) = failing_expeditor();
                let (_, counts) = counted(|| {
                    for x in 0..FAILURES {
                        if owned {
                            guarded_failure(&expeditor, id, x, || {
                                format!("connection refused #{x}")
                            });
                        } else {
                            guarded_failure(&expeditor, id, x, || "connection refused");
                        }
                    }
                });
                assert_eq!(expeditor.state(id), Some(CircuitState::Closed));
                let kind = if owned {
                    "distinct owned messages"
                } else {
                    "one static message"
                };
                #[allow(clippy::cast_precision_loss)]
                let per = counts.live as f64 / FAILURES as f64;
                println!(
                    "\nledger/{FAILURES} failures, {kind}, budget 1,000,000: {} B live \
                     ({per:.1} B per failure)",
                    counts.live
                );
                drop(expeditor);
            }
        });
        b.iter(|| black_box(hundred_thousand(false)));
    });
    group.finish();
}

/// Whether decide stays O(1) in the number of tools: decide + success on the first and on
/// the last tool of maps of 10, 1,000 and 10,000 tools.
fn decide_scale(c: &mut Criterion) {
    let mut group = c.benchmark_group("decide_scale");
    for n in [10, 1_000, 10_000] {
        let (map, _) = many_tools(n);
        let expeditor = Expeditor::builder(map)
            .policy(Policy::default())
            .build()
            .expect("valid map");
        for (label, i) in [
            ("tool #0".to_owned(), 0),
            (format!("tool #{}", n - 1), n - 1),
        ] {
            let id = expeditor.tool(&format!("tool_{i}")).expect("declared");
            group.bench_function(BenchmarkId::new(format!("{n} tools"), label), |b| {
                b.iter(|| match expeditor.decide(black_box(id)) {
                    Decision::Call(ticket) | Decision::Probe(ticket) => ticket.success(),
                    Decision::Skip(_) | Decision::Pause(_) => unreachable!("CLOSED"),
                });
            });
        }
    }
    group.finish();
}

/// The JSON dispatcher against decoding the arguments by hand. Each side clones the same
/// `serde_json::Value` per call (the dispatcher takes it by value).
fn json(c: &mut Criterion) {
    use json_tools::{GuardedTools, Tools, WorkArgs};
    let mut group = c.benchmark_group("json");
    let guarded = GuardedTools::new(Tools);
    let arguments = serde_json::json!({ "x": 12_345 });
    group.bench_function("#[toolbox(json)] call(name, Value)", |b| {
        b.iter(|| black_box(guarded.call(black_box("work"), black_box(&arguments).clone())));
    });
    group.bench_function("hand: serde_json::from_value + typed method", |b| {
        b.iter(|| {
            let args: WorkArgs =
                serde_json::from_value(black_box(&arguments).clone()).expect("valid arguments");
            black_box(guarded.work(args.x).ok().map(|r| r.value))
        });
    });
    group.bench_function("hand: from_value + typed method + Reply::from_call", |b| {
        b.iter(|| {
            let args: WorkArgs =
                serde_json::from_value(black_box(&arguments).clone()).expect("valid arguments");
            black_box(agent_circuit_breaker::dispatch::Reply::from_call(
                guarded.expeditor(),
                "work",
                guarded.work(args.x),
            ))
        });
    });
    group.finish();
}

/// The `telemetry` group's failing toolbox: `work` always fails and stays CLOSED (threshold and
/// budget 1,000,000; a fresh toolbox per [`FAILURE_CHUNK`] failures, as in `failure`).
mod failing {
    use agent_circuit_breaker::toolbox;

    pub struct Failing;

    #[toolbox(policy(
        threshold = 1_000_000,
        budget = 1_000_000,
        probe_every = 1_000,
        probe_unit = "steps"
    ))]
    impl Failing {
        #[tool(provides = "a cheap computation", fallback = "do it by hand")]
        fn work(&self, x: u64) -> Result<u64, std::io::Error> {
            super::broken(x)
        }
    }
}

/// The `telemetry` group's tools that do some work: `work` after spinning ~1 µs or ~100 µs (on
/// the monotonic clock, so the time is the same whatever the CPU's frequency).
mod spinning {
    use std::time::{Duration, Instant};

    use agent_circuit_breaker::toolbox;

    pub struct Spinning;

    /// Spins for `d`, then does `work`.
    #[inline(never)]
    fn spin(x: u64, d: Duration) -> Result<u64, std::io::Error> {
        let start = Instant::now();
        while start.elapsed() < d {
            std::hint::spin_loop();
        }
        super::work(x)
    }

    #[toolbox(policy(threshold = 3, budget = 1_000_000, probe_every = 1_000_000))]
    impl Spinning {
        #[tool(provides = "a 1 µs computation", fallback = "do it by hand")]
        fn work_1us(&self, x: u64) -> Result<u64, std::io::Error> {
            spin(x, Duration::from_micros(1))
        }

        #[tool(provides = "a 100 µs computation", fallback = "do it by hand")]
        fn work_100us(&self, x: u64) -> Result<u64, std::io::Error> {
            spin(x, Duration::from_micros(100))
        }
    }
}

/// The subscriber a row of the `telemetry` group runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Setup {
    /// No subscriber at all (the default).
    Off,
    /// A registry with a fmt layer (to `io::sink`) filtered to WARN by a per-layer filter:
    /// the global level hint is WARN, so our INFO spans are off by the level check.
    WarnOnly,
    /// A registry with a fmt layer (to `io::sink`) whose `Targets` filter wants every level
    /// of another target (`agent`) and nothing of `circuit_breaker`: the level check passes,
    /// the call site's interest (cached, `never`) turns our span away.
    OtherTargets,
    /// A registry and `tracing_opentelemetry::layer()` with an SDK tracer whose simple
    /// processor exports each span, when it closes, into an exporter that drops it.
    #[cfg(feature = "otel")]
    Spans,
    /// [`Setup::Spans`] with the bridge's optional work off: no code location, thread,
    /// busy/idle time or context activation (`with_location(false)`, `with_threads(false)`,
    /// `with_tracked_inactivity(false)`, `with_context_activation(false)`).
    #[cfg(feature = "otel")]
    LeanSpans,
    /// A registry and `otel::Telemetry::layer()` alone (metrics from our spans), the SDK
    /// meter provider's periodic reader set to an hour (never collected while measured).
    #[cfg(feature = "otel")]
    Metrics,
    /// [`Setup::Spans`] and [`Setup::Metrics`] together: telemetry fully on.
    #[cfg(feature = "otel")]
    SpansMetrics,
}

impl Setup {
    /// Every setup, `Off` first: it runs before any subscriber has been registered.
    const ALL: &[Setup] = &[
        Setup::Off,
        Setup::WarnOnly,
        Setup::OtherTargets,
        #[cfg(feature = "otel")]
        Setup::Spans,
        #[cfg(feature = "otel")]
        Setup::LeanSpans,
        #[cfg(feature = "otel")]
        Setup::Metrics,
        #[cfg(feature = "otel")]
        Setup::SpansMetrics,
    ];

    fn label(self) -> &'static str {
        match self {
            Setup::Off => "off",
            Setup::WarnOnly => "subscriber, WARN filter",
            Setup::OtherTargets => "subscriber, other targets only",
            #[cfg(feature = "otel")]
            Setup::Spans => "spans exported",
            #[cfg(feature = "otel")]
            Setup::LeanSpans => "spans exported, lean bridge",
            #[cfg(feature = "otel")]
            Setup::Metrics => "metrics only",
            #[cfg(feature = "otel")]
            Setup::SpansMetrics => "spans + metrics",
        }
    }

    /// Whether the 1 µs and 100 µs tools run under this setup (off and telemetry on).
    fn scale(self) -> bool {
        match self {
            Setup::Off => true,
            #[cfg(feature = "otel")]
            Setup::Spans | Setup::SpansMetrics => true,
            _ => false,
        }
    }
}

/// A subscriber and the SDK providers behind it, kept alive while it is installed (a meter
/// provider that is dropped shuts its instruments down).
struct Installed {
    dispatch: tracing::Dispatch,
    #[cfg(feature = "otel")]
    _providers: Option<otel_setup::Providers>,
}

impl Installed {
    fn plain(dispatch: tracing::Dispatch) -> Self {
        Installed {
            dispatch,
            #[cfg(feature = "otel")]
            _providers: None,
        }
    }
}

/// The subscriber of `setup` (`None` for [`Setup::Off`]); the metrics observe `expeditors`.
fn install(setup: Setup, expeditors: &[&Expeditor]) -> Option<Installed> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    let sink = || tracing_subscriber::fmt::layer().with_writer(std::io::sink);
    let registry = tracing_subscriber::registry;
    match setup {
        Setup::Off => {
            let _ = expeditors;
            None
        }
        Setup::WarnOnly => Some(Installed::plain(tracing::Dispatch::new(
            registry().with(sink().with_filter(tracing_subscriber::filter::LevelFilter::WARN)),
        ))),
        Setup::OtherTargets => {
            let targets = tracing_subscriber::filter::Targets::new()
                .with_target("agent", tracing::Level::TRACE);
            Some(Installed::plain(tracing::Dispatch::new(
                registry().with(sink().with_filter(targets)),
            )))
        }
        #[cfg(feature = "otel")]
        Setup::Spans | Setup::LeanSpans | Setup::Metrics | Setup::SpansMetrics => {
            use otel_setup::OtelSetup;
            let otel = match setup {
                Setup::Spans => OtelSetup::Spans,
                Setup::LeanSpans => OtelSetup::LeanSpans,
                Setup::Metrics => OtelSetup::Metrics,
                _ => OtelSetup::SpansMetrics,
            };
            let (dispatch, providers) = otel_setup::otel_dispatch(otel, expeditors);
            Some(Installed {
                dispatch,
                _providers: Some(providers),
            })
        }
    }
}

/// Runs `f` under `setup`'s subscriber, as this thread's default (not the global one), then
/// drops it and rebuilds the call sites' cached interest, so that what follows sees no
/// subscriber again (`LevelFilter::current()` back to OFF).
fn with_setup(setup: Setup, expeditors: &[&Expeditor], f: impl FnOnce()) {
    match install(setup, expeditors) {
        None => {
            assert_eq!(
                tracing::level_filters::LevelFilter::current(),
                tracing::level_filters::LevelFilter::OFF,
                "`off` runs with no subscriber"
            );
            f();
        }
        Some(installed) => {
            tracing::dispatcher::with_default(&installed.dispatch, f);
            drop(installed);
        }
    }
    tracing::callsite::rebuild_interest_cache();
}

/// Times `iters` failures of the failing toolbox's `work`: a fresh toolbox (built and
/// dropped untimed) for every [`FAILURE_CHUNK`] failures, so it stays CLOSED with budget left.
fn time_toolbox_failures(iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    let mut done = 0;
    while done < iters {
        let n = (iters - done).min(FAILURE_CHUNK);
        let guarded = failing::GuardedFailing::new(failing::Failing);
        let start = Instant::now();
        for x in done..done + n {
            black_box(guarded.work(black_box(x)).is_err());
        }
        total += start.elapsed();
        drop(guarded);
        done += n;
    }
    total
}

/// B12: what telemetry costs on a guarded call, each path under each [`Setup`], in one
/// run: the `#[toolbox]` method of `healthy` (`healthy/<setup>`), the same method on an OPEN
/// tool (`refusal/<setup>`), a failure on a CLOSED tool (`failure/<setup>`), and tools that
/// work ~1 µs and ~100 µs (`tool 1 µs/<setup>`, `tool 100 µs/<setup>`). Printed before each
/// setup's rows: `alloc/telemetry, healthy call, <setup>: N allocations, B bytes per call`.
fn telemetry(c: &mut Criterion) {
    let mut group = c.benchmark_group("telemetry");
    let healthy = GuardedBench::new(Bench);
    let refusing = refusing::open();
    let spinning = spinning::GuardedSpinning::new(spinning::Spinning);
    for &setup in Setup::ALL {
        let label = setup.label();
        let observed = [
            healthy.expeditor(),
            refusing.expeditor(),
            spinning.expeditor(),
        ];
        with_setup(setup, &observed, || {
            print_allocations(&format!("telemetry, healthy call, {label}"), 1_000, |x| {
                black_box(healthy.work(black_box(x)).ok().map(|r| r.value));
            });
            group.bench_function(BenchmarkId::new("healthy", label), |b| {
                let mut x = 0u64;
                b.iter(|| {
                    x = x.wrapping_add(1);
                    black_box(healthy.work(black_box(x)).ok().map(|r| r.value))
                });
            });
            group.bench_function(BenchmarkId::new("refusal", label), |b| {
                let mut x = 0u64;
                b.iter(|| {
                    x = x.wrapping_add(1);
                    black_box(refusing.work(black_box(x)).is_err())
                });
            });
            group.bench_function(BenchmarkId::new("failure", label), |b| {
                b.iter_custom(time_toolbox_failures);
            });
            if setup.scale() {
                group.bench_function(BenchmarkId::new("tool 1 µs", label), |b| {
                    let mut x = 0u64;
                    b.iter(|| {
                        x = x.wrapping_add(1);
                        black_box(spinning.work_1us(black_box(x)).ok().map(|r| r.value))
                    });
                });
                group.bench_function(BenchmarkId::new("tool 100 µs", label), |b| {
                    let mut x = 0u64;
                    b.iter(|| {
                        x = x.wrapping_add(1);
                        black_box(spinning.work_100us(black_box(x)).ok().map(|r| r.value))
                    });
                });
            }
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = healthy, rejected, contended, step_healthy, step_contended, clock, fleet,
        failure, memory, decide_scale, json, telemetry
}
criterion_main!(benches);
