//! The cost of a circuit breaker on a tool call (issue #6, SPEC B5), measured in one run
//! against a direct call, recloser 1.4 and failsafe 1.3 (consecutive failures, threshold 3):
//!
//! - `healthy/*`: a CLOSED breaker, every call succeeding — the path every tool call takes;
//! - `rejected/*`: an OPEN breaker turning the call away;
//! - `contended/*`: two threads calling one healthy tool at once (time per call per thread);
//! - `step_healthy/<implementation>/<cadence>`: the healthy path as a real agent takes it,
//!   with `advance_step()` before every call (`step every call`), before every tenth call
//!   (`step every 10 calls`) or never (`no step`). recloser and failsafe have no steps: their
//!   loop has the same shape, with an `AtomicU64` step counter advanced the same way as ours,
//!   and `bare call` is that loop around the tool with no breaker at all;
//! - `step_contended/<implementation>/<threads>`: one healthy tool called from `1 thread` or
//!   from `2 threads` at once, each thread stepping before every tenth of its calls (so the
//!   whole run steps once per ten calls either way; time per call per thread).
//!
//! How to read the step cases (issue #14's targets), with `t(impl, cadence)` the median of
//! `step_healthy/<impl>/<cadence>` from one run:
//!
//! - breaker overhead = `t(impl, cadence) - t(bare call, cadence)`: the loop, the tool and
//!   the step counter are the same on both sides, only the breaker differs;
//! - cost of stepping for ours = overhead(`circuit-breaker runtime API`, `step every call`) /
//!   overhead(`circuit-breaker runtime API`, `no step`) (target at most 2x);
//! - against the peers at the same cadence = `t(circuit-breaker runtime API, step every 10
//!   calls) / t(recloser 1.4, step every 10 calls)` (target at most 0.5x; also for failsafe);
//! - generated code = `t(circuit-breaker #[toolbox] method, c) / t(circuit-breaker runtime
//!   API, c)` (target at most 1.3x);
//! - contention = `t(step_contended/<impl>/2 threads) / t(step_contended/<impl>/1 thread)`
//!   per implementation (target at most 1.5x for ours).
//!
//! Run with `cargo bench -p circuit-breaker --bench breakers` (only the step cases:
//! `... -- step_`); `BENCHMARKS.md` has a run.

use std::hint::black_box;
use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use circuit_breaker::{Decision, Expeditor, Policy, expeditor::ToolId, toolbox};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, criterion_group, criterion_main};

/// The tool: as cheap as a function can be, so that only the breaker is measured.
#[inline(never)]
fn work(x: u64) -> Result<u64, std::io::Error> {
    Ok(x.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17))
}

#[inline(never)]
fn broken(_: u64) -> Result<u64, std::io::Error> {
    Err(std::io::Error::from(std::io::ErrorKind::ConnectionRefused))
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
    let map = circuit_breaker::CapabilityMap::new().tool(
        circuit_breaker::ToolSpec::new("work")
            .provides("a cheap computation")
            .fallback("do it by hand"),
    );
    let policy = Policy::builder()
        .threshold(3)
        .budget(1_000_000)
        .probe_every(1_000)
        .probe_unit(circuit_breaker::policy::ProbeUnit::Steps)
        .build()
        .expect("valid policy");
    let expeditor = Expeditor::builder(map)
        .policy(policy)
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
    let guarded = GuardedBench::new(Bench);
    group.bench_function("circuit-breaker #[toolbox] method", |b| {
        let mut x = 0u64;
        b.iter(|| {
            x = x.wrapping_add(1);
            black_box(guarded.work(black_box(x)).ok().map(|r| r.value))
        });
    });
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
    group.finish();
}

/// The bare loop's step counter, advanced exactly as `Expeditor::advance_step` advances its
/// own (a saturating compare-and-swap), so that subtracting the bare loop removes the step.
#[inline]
fn advance(steps: &AtomicU64) -> u64 {
    let previous = steps
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
            Some(s.saturating_add(1))
        })
        .unwrap_or(u64::MAX);
    previous.saturating_add(1)
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
    group.finish();
}

/// What the first success of a tool in a step costs beyond the word it reads: one read of the
/// wall clock (`clock/system clock now`), the state table's "Last Success". The steps cases
/// pay it once per step and tool.
fn clock(c: &mut Criterion) {
    use circuit_breaker::clock::{SystemClock, WallClock};
    let mut group = c.benchmark_group("clock");
    let clock = SystemClock;
    group.bench_function("system clock now", |b| {
        b.iter(|| black_box(black_box(&clock).now()));
    });
    group.finish();
}

/// A store that is attached and does nothing: the expeditor's side of sharing, without I/O.
struct InertStore;

impl circuit_breaker::expeditor::FleetStore for InertStore {
    fn name(&self) -> String {
        "inert".to_owned()
    }
    fn attach(&self, _link: circuit_breaker::expeditor::FleetLink) {}
    fn share(&self, _transitions: &[circuit_breaker::fleet::SharedTransition]) {}
}

/// The `work` expeditor of [`expeditor`] with a fleet store attached.
fn expeditor_with_fleet(store: impl circuit_breaker::expeditor::FleetStore) -> (Expeditor, ToolId) {
    let (plain, _) = expeditor();
    let map = circuit_breaker::CapabilityMap::new().tool(
        circuit_breaker::ToolSpec::new("work")
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
                circuit_breaker::redis::RedisFleet::connect(url.as_str(), "bench")
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

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = healthy, rejected, contended, step_healthy, step_contended, clock, fleet
}
criterion_main!(benches);
