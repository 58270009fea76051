//! One worker of a fleet under faults (B16): the process `tests/fleet/b16_faults.rs` starts
//! three of, on one Redis, to kill, pause and corrupt things around them and count what the
//! fleet does.
//!
//! ```sh
//! cargo run --example fleet_faults --features redis -- --redis redis://127.0.0.1:6379 \
//!     --namespace demo --worker w1 --health /tmp/w1.health --cooldown-ms 500
//! echo down > /tmp/w1.health     # fetch's upstream refuses connections
//! echo 'slow 1500' > /tmp/w1.health
//! ```
//!
//! The worker guards a toolbox (`tools.rs`) with a time-based policy (B13: a short
//! cool-down, a budget of 100 in a rolling minute, no probe by count), attaches a
//! `RedisFleet`, and calls `ping` and `fetch` every 20 ms each, on two loops of one
//! single-threaded tokio runtime (a slow `fetch` holds only its own loop) until stdin says
//! `quit` or closes. `fetch`'s health is read from the health file on every call: `up`,
//! `down` (an `io::Error` of kind `ConnectionRefused`: a network failure, which the fleet
//! shares) or `slow MS` (answers after MS). Other commands on stdin: `confirm`
//! (`Expeditor::confirm_recovery`), `systemic` (a pair of infrastructure tools fails with one
//! network error until the second circuit opens: a systemic failure, R9.2; three pairs, so
//! three such events per process), `status`.
//!
//! Stdout: one JSON object per line, each with `t_ms` (wall clock, ms since the epoch),
//! `worker` and `ev`:
//! - `started`: the settings, `bound_ms` (the store's staleness bound);
//! - `probe_start` / `probe_end` (`ok`): a call of `fetch` made as its probe;
//! - `call`: a failed call of `fetch` (`probe`, `charged`, `pending`: held as part of a
//!   possible systemic event, `consumed` / `limit`: the budget after it, `opened`);
//! - `opened` (`tool`, `by`, `own`, `reopen`), `closed` (`tool`, `by`, `own`),
//!   `half_opened`, `probe_released`: state changes as this worker sees them;
//! - `paused` (`reason`: `systemic` with `tools`, `pattern`, `cause` and `local`: whether
//!   this worker detected it; `budget`; `mistakes`) and `resumed` (`reason`: `confirmed`, with `by`
//!   when another worker confirmed it; `on_trial`, `budget_renewed`, `mistakes_forgiven`);
//! - `store` (`up`): the fleet's store became unreachable or answers again;
//! - `latency` every second: `max_us`, the longest single `ping` call of that second;
//! - `systemic_raised`, `confirm`, `status`: answers to the commands;
//! - `summary` at the end.

mod tools;

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agent_circuit_breaker::event::Event;
use agent_circuit_breaker::redis::RedisFleet;
use agent_circuit_breaker::{CallError, Policy};
use serde_json::{Value, json};
use tokio::time::MissedTickBehavior;

use tools::{Faults, FaultsTool, GuardedFaults, Shared};

const USAGE: &str = "usage: fleet_faults --redis URL --namespace NS --worker ID --health FILE
    [--poll-ms N] [--lease-ms N] [--cooldown-ms N] [--open-ttl-ms N] [--op-timeout-ms N] [--seed N]";

/// How often each loop calls its tool.
const EVERY: Duration = Duration::from_millis(20);

struct Options {
    redis: String,
    namespace: String,
    worker: String,
    health: PathBuf,
    poll: Duration,
    lease: Duration,
    cool_down: Duration,
    open_ttl: Duration,
    op_timeout: Duration,
    seed: u64,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let (mut redis, mut namespace, mut worker, mut health) = (None, None, None, None);
    let mut o = Options {
        redis: String::new(),
        namespace: String::new(),
        worker: String::new(),
        health: PathBuf::new(),
        poll: Duration::from_millis(100),
        lease: Duration::from_secs(2),
        cool_down: Duration::from_millis(500),
        open_ttl: Duration::from_secs(10),
        op_timeout: Duration::from_millis(150),
        seed: 0,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{arg} needs a value"))
        };
        let ms = |v: String| -> Result<Duration, String> {
            match v.parse::<u64>() {
                Ok(0) | Err(_) => Err(format!("{arg} {v}: not a positive number of ms")),
                Ok(n) => Ok(Duration::from_millis(n)),
            }
        };
        match arg.as_str() {
            "--redis" => redis = Some(value()?),
            "--namespace" => namespace = Some(value()?),
            "--worker" => worker = Some(value()?),
            "--health" => health = Some(PathBuf::from(value()?)),
            "--poll-ms" => o.poll = ms(value()?)?,
            "--lease-ms" => o.lease = ms(value()?)?,
            "--cooldown-ms" => o.cool_down = ms(value()?)?,
            "--open-ttl-ms" => o.open_ttl = ms(value()?)?,
            "--op-timeout-ms" => o.op_timeout = ms(value()?)?,
            "--seed" => {
                let v = value()?;
                o.seed = v.parse().map_err(|_| format!("--seed {v}: not a number"))?;
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    match (redis, namespace, worker, health) {
        (Some(r), Some(n), Some(w), Some(h)) => {
            (o.redis, o.namespace, o.worker, o.health) = (r, n, w, h);
            Ok(o)
        }
        _ => Err("--redis, --namespace, --worker and --health are required".into()),
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// This worker's stdout: one JSON object per line, written whole.
pub struct Out {
    worker: String,
    stdout: Mutex<std::io::Stdout>,
}

impl Out {
    /// Writes `{"t_ms", "worker", "ev", ...fields}`.
    pub fn emit(&self, ev: &str, fields: Value) {
        let mut line = serde_json::Map::new();
        line.insert("t_ms".into(), now_ms().into());
        line.insert("worker".into(), self.worker.clone().into());
        line.insert("ev".into(), ev.into());
        if let Value::Object(fields) = fields {
            line.extend(fields);
        }
        let mut text = Value::Object(line).to_string();
        text.push('\n');
        if let Ok(mut out) = self.stdout.lock() {
            // A closed stdout (the test is gone) is no reason to stop working.
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match parse(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("fleet_faults: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("fleet_faults: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fleet_faults: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Turns the expeditor's events into lines: the state changes of every tool, pauses and
/// resumptions of the whole worker, the store's reachability.
fn observe(shared: &Shared, me: &str, event: &Event) {
    let out = &shared.out;
    match event {
        Event::Opened {
            tool,
            consecutive_failures,
            message,
        } => out.emit(
            "opened",
            json!({"tool": tool, "by": me, "own": true, "reopen": false,
                   "failures": consecutive_failures, "message": message}),
        ),
        Event::Reopened {
            tool,
            consecutive_failures,
            message,
        } => out.emit(
            "opened",
            json!({"tool": tool, "by": me, "own": true, "reopen": true,
                   "failures": consecutive_failures, "message": message}),
        ),
        Event::SharedOpened {
            tool,
            worker,
            message,
        } => out.emit(
            "opened",
            json!({"tool": tool, "by": worker, "own": false, "reopen": false, "message": message}),
        ),
        Event::Closed { tool } => out.emit("closed", json!({"tool": tool, "by": me, "own": true})),
        Event::SharedClosed { tool } => {
            out.emit("closed", json!({"tool": tool, "by": "fleet", "own": false}));
        }
        Event::HalfOpened { tool } => out.emit("half_opened", json!({"tool": tool})),
        Event::ProbeReleased { tool } => out.emit("probe_released", json!({"tool": tool})),
        Event::Systemic {
            pattern,
            cause,
            tools,
        } => {
            let local = shared.infra_down.load(Ordering::Acquire) != 0;
            out.emit(
                "paused",
                json!({"reason": "systemic", "pattern": pattern, "cause": cause,
                       "tools": tools, "local": local}),
            );
        }
        Event::BudgetExhausted { consumed, limit } => out.emit(
            "paused",
            json!({"reason": "budget", "consumed": consumed, "limit": limit}),
        ),
        Event::MistakeLimit { count, limit } => out.emit(
            "paused",
            json!({"reason": "mistakes", "count": count, "limit": limit}),
        ),
        Event::RecoveryConfirmed => out.emit("resumed", json!({"reason": "confirmed"})),
        Event::SharedRecovery { worker } => {
            out.emit("resumed", json!({"reason": "confirmed", "by": worker}));
        }
        Event::RecoveryOnTrial { cause } => {
            out.emit("resumed", json!({"reason": "on_trial", "cause": cause}));
        }
        Event::BudgetRenewed { consumed, limit } => out.emit(
            "resumed",
            json!({"reason": "budget_renewed", "consumed": consumed, "limit": limit}),
        ),
        Event::MistakesForgiven { limit } => {
            out.emit(
                "resumed",
                json!({"reason": "mistakes_forgiven", "limit": limit}),
            );
        }
        Event::StoreUnavailable { message, .. } => {
            out.emit("store", json!({"up": false, "message": message}));
        }
        Event::StoreRestored { .. } => out.emit("store", json!({"up": true})),
        _ => {}
    }
}

/// What the loops count, for the summary.
#[derive(Default)]
struct Counts {
    fetch_failures: AtomicU64,
    charged: AtomicU64,
    probes: AtomicU64,
    routed: AtomicU64,
    fetched: AtomicU64,
    refused: AtomicU64,
    pings: AtomicU64,
    pings_refused: AtomicU64,
    max_ping_us: AtomicU64,
}

async fn run(o: Options) -> Result<(), String> {
    let fleet = RedisFleet::connect(o.redis.as_str(), o.namespace.as_str())
        .worker(o.worker.as_str())
        .poll_interval(o.poll)
        .probe_lease_ttl(o.lease)
        .open_ttl(o.open_ttl)
        .op_timeout(o.op_timeout)
        .await
        .map_err(|e| e.to_string())?;
    let bound = fleet.staleness_bound();
    // Time-based (B13): due for a probe after the cool-down (doubling after failed probes up
    // to twice it), never by count; the budget renews in a rolling minute.
    let policy = Policy::builder()
        .threshold(3)
        .budget(100)
        .probe_every(100_000)
        .cool_down(o.cool_down)
        .cool_down_cap(o.cool_down * 2)
        .budget_window(Duration::from_secs(60))
        .build()
        .map_err(|e| e.to_string())?;
    let shared = Arc::new(Shared {
        out: Out {
            worker: o.worker.clone(),
            stdout: Mutex::new(std::io::stdout()),
        },
        infra_down: AtomicU8::new(0),
    });
    let toolbox = Faults {
        health: o.health.clone(),
        shared: Arc::clone(&shared),
        expeditor: OnceLock::new(),
        probing: AtomicBool::new(false),
        fetch_calls: AtomicU64::new(0),
    };
    let observed = Arc::clone(&shared);
    let me = o.worker.clone();
    let guarded = GuardedFaults::with_expeditor(toolbox, |b| {
        b.policy(policy)
            .jitter_seed(o.seed)
            .fleet(fleet)
            .observer(move |event: &Event| observe(&observed, &me, event))
    });
    let _ = guarded
        .toolbox()
        .expeditor
        .set(guarded.expeditor().downgrade());
    let out = &shared.out;
    out.emit(
        "started",
        json!({
            "pid": std::process::id(),
            "poll_ms": o.poll.as_millis(),
            "lease_ms": o.lease.as_millis(),
            "cooldown_ms": o.cool_down.as_millis(),
            "open_ttl_ms": o.open_ttl.as_millis(),
            "op_timeout_ms": o.op_timeout.as_millis(),
            "bound_ms": bound.as_millis(),
            "seed": o.seed,
        }),
    );

    let (tx, mut commands) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line.trim().to_owned()).is_err() {
                return;
            }
        }
        let _ = tx.send("quit".into());
    });

    let counts = Counts::default();
    let fetching = fetch_loop(&guarded, &counts, o.seed);
    let pinging = ping_loop(&guarded, &counts);
    let commanding = async {
        let mut pair = 0u8;
        while let Some(command) = commands.recv().await {
            match command.as_str() {
                "quit" => break,
                "confirm" => {
                    let event = guarded.expeditor().confirm_recovery();
                    out.emit("confirm", json!({"lifted": event.is_some()}));
                }
                "systemic" => {
                    pair += 1;
                    if pair > 3 {
                        out.emit(
                            "systemic_raised",
                            json!({"paused": false, "error": "no pair left"}),
                        );
                        continue;
                    }
                    let paused = tools::raise_systemic(&guarded, pair).await;
                    out.emit("systemic_raised", json!({"paused": paused, "pair": pair}));
                }
                "status" => out.emit("status", status(&guarded)),
                "" => {}
                other => out.emit("unknown_command", json!({"command": other})),
            }
        }
    };
    tokio::select! {
        () = fetching => {}
        () = pinging => {}
        () = commanding => {}
    }

    let e = guarded.expeditor();
    let mut summary = status(&guarded);
    if let Value::Object(fields) = &mut summary {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        fields.extend(
            json!({
                "fetch_calls": guarded.toolbox().fetch_calls.load(Ordering::Relaxed),
                "fetch_failures": n(&counts.fetch_failures),
                "charged": n(&counts.charged),
                "probes": n(&counts.probes),
                "routed": n(&counts.routed),
                "fetched": n(&counts.fetched),
                "refused": n(&counts.refused),
                "pings": n(&counts.pings),
                "pings_refused": n(&counts.pings_refused),
                "max_ping_us": n(&counts.max_ping_us),
                "budget_consumed": e.budget().status().consumed,
            })
            .as_object()
            .cloned()
            .unwrap_or_default(),
        );
    }
    out.emit("summary", summary);
    Ok(())
}

/// `fetch`'s state, the pause in force, the fleet's word.
fn status(guarded: &GuardedFaults) -> Value {
    let e = guarded.expeditor();
    let fleet = e.fleet_status();
    json!({
        "fetch_state": e.state(FaultsTool::Fetch).map(|s| s.to_string()),
        "paused": e.paused().map(|p| format!("{p:?}")),
        "store_unreachable": fleet.as_ref().and_then(|f| f.unreachable.as_ref().map(|(_, why)| why.clone())),
        "opened_elsewhere": fleet.map(|f| f.opened_elsewhere).unwrap_or_default(),
    })
}

async fn fetch_loop(guarded: &GuardedFaults, counts: &Counts, seed: u64) {
    let out = &guarded.toolbox().shared.out;
    let mut tick = tokio::time::interval(EVERY);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // Workers started together do not call in step.
    tokio::time::sleep(Duration::from_millis(seed % 20)).await;
    let mut page = 0u64;
    loop {
        tick.tick().await;
        page += 1;
        let result = guarded.fetch(page).await;
        let probe = guarded.toolbox().probing.swap(false, Ordering::AcqRel);
        if probe {
            counts.probes.fetch_add(1, Ordering::Relaxed);
            out.emit("probe_end", json!({"ok": result.is_ok()}));
        }
        match result {
            Ok(routed) if routed.route().is_some() => {
                counts.routed.fetch_add(1, Ordering::Relaxed);
            }
            Ok(_) => {
                counts.fetched.fetch_add(1, Ordering::Relaxed);
            }
            Err(CallError::Failed { recorded, .. }) => {
                counts.fetch_failures.fetch_add(1, Ordering::Relaxed);
                // The ledger's line of this failure: charged now, or held as part of a
                // possible systemic event (charged once for all, R9.4).
                let budget = guarded.expeditor().budget();
                let line = budget.ledger().iter().rev().find(|l| l.tool == "fetch");
                let charged = line.is_some_and(|l| l.charged);
                let pending = line.is_some_and(|l| l.pending);
                if charged {
                    counts.charged.fetch_add(1, Ordering::Relaxed);
                }
                out.emit(
                    "call",
                    json!({
                        "tool": "fetch",
                        "ok": false,
                        "probe": probe,
                        "charged": charged,
                        "pending": pending,
                        "consumed": recorded.budget.consumed,
                        "limit": recorded.budget.limit,
                        "opened": recorded.opened,
                        "state": recorded.state.to_string(),
                    }),
                );
            }
            Err(_) => {
                counts.refused.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

async fn ping_loop(guarded: &GuardedFaults, counts: &Counts) {
    let out = &guarded.toolbox().shared.out;
    let mut tick = tokio::time::interval(EVERY);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut window = Instant::now();
    let (mut max_us, mut calls, mut refused) = (0u64, 0u64, 0u64);
    loop {
        tick.tick().await;
        // One step per tick: the cascade window (R9.2) counts steps, so only failures
        // within a few ticks of each other correlate.
        guarded.expeditor().advance_step();
        let start = Instant::now();
        let result = guarded.ping().await;
        let us = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
        max_us = max_us.max(us);
        calls += 1;
        counts.pings.fetch_add(1, Ordering::Relaxed);
        counts.max_ping_us.fetch_max(us, Ordering::Relaxed);
        if result.is_err() {
            refused += 1;
            counts.pings_refused.fetch_add(1, Ordering::Relaxed);
        }
        if window.elapsed() >= Duration::from_secs(1) {
            out.emit(
                "latency",
                json!({"max_us": max_us, "calls": calls, "refused": refused}),
            );
            window = Instant::now();
            (max_us, calls, refused) = (0, 0, 0);
        }
    }
}
