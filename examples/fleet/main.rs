//! A fleet of agent workers sharing tool health through Redis (B11 in `docs/requirements.md`).
//!
//! ```sh
//! cargo run --example fleet --features redis                                  # fetch broken
//! cargo run --example fleet --features redis -- --workers 4 --tasks 16 --heal-after 1500
//! cargo run --example fleet --features redis -- --redis redis://127.0.0.1:6379
//! ```
//!
//! The coordinator (this program) starts a `redis-server` on a free port of 127.0.0.1
//! (unless `--redis URL` is given), puts the tasks on one queue (a Redis list) and starts the
//! workers: this same program with `--worker`. Each worker takes tasks off the queue until
//! it is empty, and works each through a guarded toolbox: `search`, then `fetch` (broken: its
//! upstream refuses connections; `--heal-after MS` mends it that long after the start), then
//! `summarize`. Every worker attaches a `RedisFleet` on the same namespace.
//!
//! The first worker starts alone. Its `fetch` fails until the circuit opens; the circuit is
//! shared, and the other workers are started then: they join the fleet, find `fetch` OPEN
//! (opened by the first), and route every task through the cache without one call to
//! `fetch` and without spending their own failures on it. Once `fetch` mends, exactly one
//! worker of the fleet probes it (it holds the probe lease), and its success closes the
//! circuit for every worker.
//!
//! Each worker prints one JSON summary line at the end; the coordinator prints a report.

mod research;

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agent_circuit_breaker::redis::RedisFleet;
use agent_circuit_breaker::redis::redis;
use serde::{Deserialize, Serialize};

use research::{GuardedResearch, Research};

const USAGE: &str = "usage: fleet [--workers N] [--tasks N] [--heal-after MS] [--redis URL]
  --workers N      worker processes (default 3)
  --tasks N        tasks on the queue (default 24)
  --heal-after MS  fetch works again MS after the start (default: never)
  --redis URL      use this Redis instead of starting one";

/// What a worker tells the coordinator at the end.
#[derive(Debug, Serialize, Deserialize)]
pub struct Summary {
    pub worker: String,
    pub tasks: u32,
    /// Calls that reached the broken upstream (the `fetch` tool's body ran).
    pub fetch_calls: u32,
    pub fetch_failures: u32,
    /// Tasks answered through the cache because `fetch` was OPEN.
    pub routed: u32,
    /// Probes of `fetch` this worker made.
    pub probes: u32,
    /// Who opened `fetch` as this worker first saw it OPEN, if another worker did.
    pub opened_by: Option<String>,
    /// The budget this worker spent.
    pub budget_consumed: u32,
    /// The last line of its state table (the fleet's).
    pub fleet_line: String,
    /// `fetch`'s state at the end.
    pub fetch_state: String,
}

struct Options {
    workers: u32,
    tasks: u32,
    heal_after: Option<u64>,
    redis: Option<String>,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        workers: 3,
        tasks: 24,
        heal_after: None,
        redis: None,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value")).cloned();
        match arg.as_str() {
            "--workers" => o.workers = number(&value("--workers")?)?,
            "--tasks" => o.tasks = number(&value("--tasks")?)?,
            "--heal-after" => o.heal_after = Some(number(&value("--heal-after")?)?),
            "--redis" => o.redis = Some(value("--redis")?),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if o.workers == 0 || o.tasks == 0 {
        return Err("--workers and --tasks must be at least 1".into());
    }
    Ok(o)
}

fn number<T: std::str::FromStr>(text: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("{text}: not a number"))
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("fleet: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = if args.first().map(String::as_str) == Some("--worker") {
        runtime.block_on(worker(&args[1..]))
    } else {
        match parse(&args) {
            Ok(options) => runtime.block_on(coordinate(&options)),
            Err(e) => {
                eprintln!("fleet: {e}\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fleet: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A `redis-server` of the run's own, killed when dropped.
struct OwnRedis(Child);

impl Drop for OwnRedis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_redis() -> Result<(OwnRedis, String), String> {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("a free port: {e}"))?
        .port();
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| {
            format!("redis-server: {e} (install Debian's redis-server, or give --redis URL)")
        })?;
    let redis = OwnRedis(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return Err("redis-server did not start within 10 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok((redis, format!("redis://127.0.0.1:{port}")))
}

async fn coordinate(o: &Options) -> Result<(), String> {
    let (_own, url) = match &o.redis {
        Some(url) => (None, url.clone()),
        None => {
            let (own, url) = start_redis()?;
            (Some(own), url)
        }
    };
    let namespace = format!("fleet-example-{}", std::process::id());
    let client = redis::Client::open(url.as_str()).map_err(|e| e.to_string())?;
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    let queue = format!("{namespace}:tasks");
    let tasks: Vec<String> = (1..=o.tasks).map(|n| format!("task-{n}")).collect();
    redis::cmd("RPUSH")
        .arg(&queue)
        .arg(&tasks)
        .query_async::<()>(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    let heal_at = o.heal_after.map(|ms| now_ms() + ms);
    println!(
        "circuit-breaker fleet example: {} workers, one queue of {} tasks, one Redis",
        o.workers, o.tasks
    );
    println!("Redis:  {url} (namespace {namespace})");
    println!(
        "Faults: fetch's upstream refuses connections{}\n",
        heal_at.map_or(String::new(), |_| format!(
            "; mended {} ms after the start",
            o.heal_after.unwrap_or(0)
        ))
    );

    let spawn = |n: u32| -> Result<Child, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut command = Command::new(exe);
        command
            .args(["--worker", &format!("w{n}"), &url, &namespace])
            .arg(heal_at.map_or("never".to_owned(), |t| t.to_string()))
            .stdout(Stdio::piped());
        command.spawn().map_err(|e| format!("worker w{n}: {e}"))
    };
    // The first worker alone, until its fetch circuit opens and is shared.
    let mut first = spawn(1)?;
    let mut first_out = BufReader::new(first.stdout.take().ok_or("no stdout")?);
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        if first_out.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
            break;
        }
        let opened = line.contains("fetch circuit OPEN");
        lines.push(line);
        if opened {
            break;
        }
    }
    let mut others = Vec::new();
    for n in 2..=o.workers {
        others.push(spawn(n)?);
    }
    let mut outputs = vec![{
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut first_out, &mut rest).map_err(|e| e.to_string())?;
        first.wait().map_err(|e| e.to_string())?;
        lines.concat() + &rest
    }];
    for mut child in others {
        let mut out = String::new();
        if let Some(mut stdout) = child.stdout.take() {
            std::io::Read::read_to_string(&mut stdout, &mut out).map_err(|e| e.to_string())?;
        }
        child.wait().map_err(|e| e.to_string())?;
        outputs.push(out);
    }

    let mut summaries = Vec::new();
    for out in &outputs {
        for line in out.lines() {
            match serde_json::from_str::<Summary>(line) {
                Ok(summary) => summaries.push(summary),
                Err(_) => println!("{line}"),
            }
        }
    }
    println!();
    println!(
        "worker  tasks  fetch calls  fetch failures  routed via cache  probes  budget  fetch at the end"
    );
    for s in &summaries {
        println!(
            "{:<6}  {:>5}  {:>11}  {:>14}  {:>16}  {:>6}  {:>6}  {}",
            s.worker,
            s.tasks,
            s.fetch_calls,
            s.fetch_failures,
            s.routed,
            s.probes,
            s.budget_consumed,
            s.fetch_state
        );
    }
    let failures: u32 = summaries.iter().map(|s| s.fetch_failures).sum();
    let probes: u32 = summaries.iter().map(|s| s.probes).sum();
    let spared: Vec<&str> = summaries
        .iter()
        .filter(|s| s.opened_by.is_some() && s.fetch_failures == 0)
        .map(|s| s.worker.as_str())
        .collect();
    println!();
    println!(
        "fetch failed {failures} times across the fleet; {} found it opened by another worker and spent none of their budget on it.",
        if spared.is_empty() {
            "no worker".to_owned()
        } else {
            spared.join(", ")
        }
    );
    if heal_at.is_some() {
        println!(
            "Probes of fetch across the fleet: {probes}, one at a time (one probe lease for the fleet)."
        );
    }
    Ok(())
}

/// `--worker ID URL NAMESPACE HEAL_AT`: take tasks off the queue until it is empty.
async fn worker(args: &[String]) -> Result<(), String> {
    let [id, url, namespace, heal] = args else {
        return Err("--worker ID URL NAMESPACE HEAL_AT".into());
    };
    let heal_at = heal.parse::<u64>().ok();
    let fleet = RedisFleet::connect(url.as_str(), namespace.as_str())
        .worker(id.as_str())
        .poll_interval(Duration::from_millis(100))
        .await
        .map_err(|e| e.to_string())?;
    let bound = fleet.staleness_bound();
    let probes = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counted = std::sync::Arc::clone(&probes);
    let guarded = GuardedResearch::with_expeditor(Research::new(heal_at), |b| {
        b.fleet(fleet).observer(move |event: &agent_circuit_breaker::event::Event| {
            if matches!(event, agent_circuit_breaker::event::Event::HalfOpened { tool } if tool == "fetch") {
                counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        })
    });
    // Join the fleet: one staleness bound, so the first task starts with what it knows.
    tokio::time::sleep(bound).await;

    let client = redis::Client::open(url.as_str()).map_err(|e| e.to_string())?;
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| e.to_string())?;
    let queue = format!("{namespace}:tasks");
    let mut summary = Summary {
        worker: id.clone(),
        tasks: 0,
        fetch_calls: 0,
        fetch_failures: 0,
        routed: 0,
        probes: 0,
        opened_by: None,
        budget_consumed: 0,
        fleet_line: String::new(),
        fetch_state: String::new(),
    };
    loop {
        let task: Option<String> = redis::cmd("LPOP")
            .arg(&queue)
            .query_async(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        let Some(task) = task else { break };
        summary.tasks += 1;
        let line = research::work(&guarded, &task, &mut summary);
        println!("{id} {task}: {line}");
        // Work takes time: the fleet's view moves meanwhile.
        tokio::time::sleep(Duration::from_millis(60)).await;
    }
    let expeditor = guarded.expeditor();
    summary.fetch_calls = guarded.toolbox().fetch_calls();
    summary.probes = probes.load(std::sync::atomic::Ordering::Relaxed);
    summary.budget_consumed = expeditor.budget().status().consumed;
    summary.fleet_line = expeditor
        .state_table()
        .to_string()
        .lines()
        .last()
        .unwrap_or("")
        .to_owned();
    summary.fetch_state = expeditor
        .state(research::ResearchTool::Fetch)
        .map_or("?".to_owned(), |s| s.to_string());
    println!(
        "{}",
        serde_json::to_string(&summary).map_err(|e| e.to_string())?
    );
    Ok(())
}
