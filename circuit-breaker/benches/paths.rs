//! One path of `breakers.rs`, run `N` times in a plain loop, for instruction counts under
//! callgrind (the timings of a shared machine are too noisy to compare small changes; the
//! instructions are not):
//!
//! ```sh
//! cargo bench -p agent-circuit-breaker --bench paths --no-run
//! for n in 100000 200000; do
//!   valgrind --tool=callgrind --callgrind-out-file=cg.$n target/release/deps/paths-* failure-ours $n
//! done
//! ```
//!
//! The instructions of one call are (total at 200,000 − total at 100,000) / 100,000: the
//! setup, the same in both runs, cancels out. Paths: `healthy-{ours,toolbox,recloser}`,
//! `healthy-service` (a service's time policy; prints the clock reads, which must be none),
//! `refusal-{ours,toolbox,recloser}`, `failure-{ours,toolbox,recloser,failsafe}`, `build-1000`
//! (the memory row's build; run with `--tool=dhat` for where its bytes go), and with
//! `--features otel` `telemetry-{spans,lean,metrics,both}` (`healthy-toolbox` under the
//! `telemetry` group's setups of `breakers.rs`: spans exported, the lean bridge, metrics only,
//! spans + metrics). The tools, the
//! policies and the peers' settings are those of `breakers.rs`. Run by `cargo bench` with no
//! path, it prints this list and does nothing.
//!
//! Every expeditor here reads [`Fixed`], not the system clock: rustix's vDSO lookup faults
//! under valgrind, which maps no vDSO. A real clock read (the coarse clock through the vDSO)
//! is some 20 instructions more, on the paths that read it (a failure).

use std::hint::black_box;
use std::time::Duration;

use agent_circuit_breaker::clock::{Timestamp, WallClock};
use agent_circuit_breaker::{
    CapabilityMap, Decision, Expeditor, Policy, ToolSpec,
    expeditor::{ExpeditorBuilder, ToolId},
    policy::ProbeUnit,
    toolbox,
};

#[cfg(feature = "otel")]
#[path = "common/otel_setup.rs"]
mod otel_setup;

/// A wall clock that always reads the same time (see the module documentation).
#[derive(Debug, Clone, Copy)]
struct Fixed;

impl WallClock for Fixed {
    fn now(&self) -> Timestamp {
        Timestamp::from_millis(black_box(1_700_000_000_000))
    }
}

fn fixed(builder: ExpeditorBuilder) -> ExpeditorBuilder {
    builder.clock(Fixed)
}

#[inline(never)]
fn work(x: u64) -> Result<u64, std::io::Error> {
    Ok(x.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17))
}

#[inline(never)]
fn broken(_: u64) -> Result<u64, std::io::Error> {
    Err(std::io::Error::from(std::io::ErrorKind::ConnectionRefused))
}

struct Bench;

#[toolbox(policy(threshold = 3, budget = 1_000_000, probe_every = 1_000_000))]
impl Bench {
    #[tool(provides = "a cheap computation", fallback = "do it by hand")]
    fn work(&self, x: u64) -> Result<u64, std::io::Error> {
        work(x)
    }
}

struct Broken;

#[toolbox(policy(threshold = 3, budget = 1_000_000, probe_every = 1_000_000))]
impl Broken {
    #[tool(provides = "a cheap computation", fallback = "do it by hand")]
    fn work(&self, x: u64) -> Result<u64, std::io::Error> {
        broken(x)
    }
}

struct Failing;

#[toolbox(policy(
    threshold = 1_000_000,
    budget = 1_000_000,
    probe_every = 1_000,
    probe_unit = "steps"
))]
impl Failing {
    #[tool(provides = "a cheap computation", fallback = "do it by hand")]
    fn work(&self, x: u64) -> Result<u64, std::io::Error> {
        broken(x)
    }
}

/// Clock reads, counted by [`Counted`].
static READS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// [`Fixed`], counting its reads: the time policy's healthy path must read none.
#[derive(Debug, Clone, Copy)]
struct Counted;

impl WallClock for Counted {
    fn now(&self) -> Timestamp {
        READS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Fixed.now()
    }
}

/// The healthy path under a service's time policy (cool-down, budget window): prints the
/// clock reads of the `n` calls (after the first, which stamps the step's first success).
#[inline(never)]
fn healthy_service(n: u64) {
    let map = CapabilityMap::new().tool(
        ToolSpec::new("work")
            .provides("a cheap computation")
            .fallback("do it by hand"),
    );
    let expeditor = Expeditor::builder(map)
        .policy(Policy::for_service(Policy::default()))
        .clock(Counted)
        .build()
        .expect("valid map");
    let id = expeditor.tool("work").expect("declared");
    let call = |x: u64| {
        if let Decision::Call(ticket) = expeditor.decide(black_box(id))
            && work(black_box(x)).is_ok()
        {
            ticket.success();
        }
    };
    call(0);
    let before = READS.load(std::sync::atomic::Ordering::Relaxed);
    for x in 1..=n {
        call(x);
    }
    let reads = READS.load(std::sync::atomic::Ordering::Relaxed) - before;
    println!("healthy-service: {reads} clock reads in {n} healthy calls");
}

fn expeditor(threshold: u32) -> (Expeditor, ToolId) {
    let map = CapabilityMap::new().tool(
        ToolSpec::new("work")
            .provides("a cheap computation")
            .fallback("do it by hand"),
    );
    let policy = Policy::builder()
        .threshold(threshold)
        .budget(1_000_000)
        .probe_every(1_000)
        .probe_unit(ProbeUnit::Steps)
        .build()
        .expect("valid policy");
    let expeditor = Expeditor::builder(map)
        .policy(policy)
        .clock(Fixed)
        .build()
        .expect("valid map");
    let id = expeditor.tool("work").expect("declared");
    (expeditor, id)
}

fn recloser(error_rate: f32) -> recloser::Recloser {
    recloser::Recloser::custom()
        .error_rate(error_rate)
        .closed_len(3)
        .half_open_len(1)
        .open_wait(Duration::from_secs(3600))
        .build()
}

/// Failures per fresh breaker, as in `breakers.rs`.
const CHUNK: u64 = 10_000;

#[inline(never)]
fn healthy_ours(n: u64) {
    let (expeditor, id) = expeditor(3);
    for x in 0..n {
        match expeditor.decide(black_box(id)) {
            Decision::Call(ticket) | Decision::Probe(ticket) => match work(black_box(x)) {
                Ok(v) => {
                    ticket.success();
                    black_box(Some(v));
                }
                Err(e) => {
                    let _ = ticket.failure(&e);
                }
            },
            Decision::Skip(_) | Decision::Pause(_) => {}
        }
    }
}

#[inline(never)]
fn healthy_toolbox(n: u64) {
    let guarded = GuardedBench::with_expeditor(Bench, fixed);
    for x in 0..n {
        black_box(guarded.work(black_box(x)).ok().map(|r| r.value));
    }
}

#[inline(never)]
fn refusal_ours(n: u64) {
    let (expeditor, id) = expeditor(3);
    for _ in 0..3 {
        if let Decision::Call(ticket) = expeditor.decide(id) {
            let _ = ticket.failure("connection refused");
        }
    }
    for _ in 0..n {
        black_box(matches!(expeditor.decide(black_box(id)), Decision::Skip(_)));
    }
}

#[inline(never)]
fn refusal_toolbox(n: u64) {
    let guarded = GuardedBroken::with_expeditor(Broken, fixed);
    for x in 0..3 {
        let _ = guarded.work(x);
    }
    assert!(matches!(
        guarded.work(0),
        Err(agent_circuit_breaker::CallError::Refused(_))
    ));
    for x in 0..n {
        black_box(guarded.work(black_box(x)).is_err());
    }
}

#[inline(never)]
fn failure_ours(n: u64) {
    let mut done = 0;
    while done < n {
        let (expeditor, id) = expeditor(1_000_000);
        for x in done..(done + CHUNK).min(n) {
            if let Decision::Call(ticket) = expeditor.decide(black_box(id))
                && broken(black_box(x)).is_err()
            {
                black_box(ticket.failure("connection refused"));
            }
        }
        done += CHUNK;
    }
}

#[inline(never)]
fn failure_toolbox(n: u64) {
    let mut done = 0;
    while done < n {
        let guarded = GuardedFailing::with_expeditor(Failing, fixed);
        for x in done..(done + CHUNK).min(n) {
            black_box(guarded.work(black_box(x)).is_err());
        }
        done += CHUNK;
    }
}

/// `healthy-toolbox` under one of the `telemetry` group's subscribers (see `breakers.rs`):
/// `spans` (the bridge on an SDK tracer exporting into a sink), `lean` (the bridge without
/// its optional work), `metrics` (`otel::Telemetry`'s layer), `both` (spans + metrics).
#[cfg(feature = "otel")]
#[inline(never)]
fn telemetry(setup: &str, n: u64) {
    use otel_setup::OtelSetup;
    let setup = match setup {
        "spans" => OtelSetup::Spans,
        "lean" => OtelSetup::LeanSpans,
        "metrics" => OtelSetup::Metrics,
        "both" => OtelSetup::SpansMetrics,
        _ => {
            println!("telemetry-{{spans,lean,metrics,both}}");
            return;
        }
    };
    let guarded = GuardedBench::with_expeditor(Bench, fixed);
    let (dispatch, _providers) = otel_setup::otel_dispatch(setup, &[guarded.expeditor()]);
    tracing::dispatcher::with_default(&dispatch, || {
        for x in 0..n {
            black_box(guarded.work(black_box(x)).ok().map(|r| r.value));
        }
    });
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_default();
    let n: u64 = args.next().and_then(|n| n.parse().ok()).unwrap_or(100_000);
    match path.as_str() {
        "healthy-ours" => healthy_ours(n),
        "healthy-service" => healthy_service(n),
        "healthy-toolbox" => healthy_toolbox(n),
        "healthy-recloser" => {
            let r = recloser(0.99);
            for x in 0..n {
                black_box(r.call(|| work(black_box(x))).ok());
            }
        }
        "refusal-ours" => refusal_ours(n),
        "refusal-toolbox" => refusal_toolbox(n),
        "refusal-recloser" => {
            let r = recloser(0.99);
            for _ in 0..4 {
                let _ = r.call(|| broken(0));
            }
            for _ in 0..n {
                black_box(r.call(|| work(black_box(1))).is_err());
            }
        }
        "failure-ours" => failure_ours(n),
        "failure-toolbox" => failure_toolbox(n),
        "failure-recloser" => {
            let r = recloser(2.0);
            for x in 0..n {
                black_box(r.call(|| broken(black_box(x))).is_err());
            }
        }
        "failure-failsafe" => {
            use failsafe::CircuitBreaker as _;
            let f = failsafe::Config::new()
                .failure_policy(failsafe::failure_policy::consecutive_failures(
                    u32::MAX,
                    failsafe::backoff::constant(Duration::from_secs(3600)),
                ))
                .build();
            for x in 0..n {
                black_box(f.call(|| broken(black_box(x))).is_err());
            }
        }
        "build-1000" => {
            let mut map = CapabilityMap::new();
            for i in 0..1_000 {
                map = map.tool(
                    ToolSpec::new(format!("tool_{i}").into_boxed_str().into_string())
                        .provides(format!("capability number {i}"))
                        .fallback(format!("ask the user for result {i}")),
                );
            }
            let expeditor = Expeditor::builder(map)
                .policy(Policy::default())
                .clock(Fixed)
                .build()
                .expect("valid map");
            black_box(&expeditor);
            std::mem::forget(expeditor);
        }
        #[cfg(feature = "otel")]
        telemetry if telemetry.starts_with("telemetry-") => {
            self::telemetry(&telemetry["telemetry-".len()..], n);
        }
        _ => println!(
            "paths: a path and a count, for callgrind: healthy-{{ours,toolbox,recloser,service}}, \
             refusal-{{ours,toolbox,recloser}}, failure-{{ours,toolbox,recloser,failsafe}}, \
             build-1000, telemetry-{{spans,lean,metrics,both}} (feature otel)"
        ),
    }
}
