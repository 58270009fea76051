//! A fleet of worker processes under faults (B16): a `redis-server` of the test's own, three
//! (or more) processes of `examples/fleet_faults`, their stdout read on threads into one
//! timeline with the faults the test inflicts, and the figures computed from it. Included by
//! path: `#[path = "../common/fleet_faults.rs"] mod fleet_faults;`.
//!
//! Every wait has a deadline; the children (workers and server) are killed when the run is
//! dropped, and a run dropped while panicking (or with `B16_TIMELINE` set) prints its
//! timeline.

#![allow(dead_code)]

#[path = "examples.rs"]
mod examples;
#[path = "redis.rs"]
pub mod redis_server;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

pub use redis_server::RedisServer;

/// Room for a loaded machine on top of the published staleness bound (poll interval + op
/// timeout): one round trip and the scheduling of five processes on two cores.
pub const SLACK: Duration = Duration::from_millis(400);

/// The name of a key of the namespace's current layout: the one place that knows it.
pub fn key(namespace: &str, name: &str) -> String {
    format!(
        "{namespace}:{}:{name}",
        agent_circuit_breaker::redis::LAYOUT
    )
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The workers' settings (all in ms) and the run's.
#[derive(Debug, Clone)]
pub struct Settings {
    pub workers: usize,
    pub poll_ms: u64,
    pub lease_ms: u64,
    pub cooldown_ms: u64,
    pub open_ttl_ms: u64,
    pub op_timeout_ms: u64,
    /// Seeds the workers' jitter and phase (each worker adds its number).
    pub seed: u64,
    /// Whether the server keeps a snapshot (written by [`FleetRun::redis_save`]).
    pub persistent: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            workers: 3,
            poll_ms: 100,
            lease_ms: 2_000,
            cooldown_ms: 500,
            open_ttl_ms: 10_000,
            op_timeout_ms: 150,
            seed: 16,
            persistent: false,
        }
    }
}

impl Settings {
    /// The store's staleness bound (poll interval + op timeout).
    pub fn bound(&self) -> Duration {
        Duration::from_millis(self.poll_ms + self.op_timeout_ms)
    }

    /// The bound with [`SLACK`]: how long a transition may take to reach another worker.
    pub fn allowance(&self) -> Duration {
        self.bound() + SLACK
    }
}

/// One line of the timeline: a worker's (its stdout), or the harness's (`worker` =
/// `harness`: the faults and commands, when they were inflicted).
#[derive(Debug, Clone)]
pub struct Entry {
    pub t: u64,
    pub worker: String,
    pub ev: String,
    pub v: Value,
}

impl Entry {
    pub fn str(&self, field: &str) -> Option<&str> {
        self.v.get(field).and_then(Value::as_str)
    }

    pub fn bool(&self, field: &str) -> bool {
        self.v.get(field).and_then(Value::as_bool).unwrap_or(false)
    }

    pub fn u64(&self, field: &str) -> Option<u64> {
        self.v.get(field).and_then(Value::as_u64)
    }

    fn is_fetch(&self) -> bool {
        self.str("tool") == Some("fetch")
    }
}

pub const HARNESS: &str = "harness";

type Timeline = Arc<Mutex<Vec<Entry>>>;

fn push(timeline: &Timeline, entry: Entry) {
    timeline
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(entry);
}

pub struct Worker {
    pub id: String,
    child: Child,
    stdin: Option<ChildStdin>,
    pub health: PathBuf,
    pub killed: bool,
}

/// A redis-server, the workers on one namespace of it, and what they said.
pub struct FleetRun {
    pub name: String,
    pub settings: Settings,
    pub redis: RedisServer,
    pub namespace: String,
    pub workers: Vec<Worker>,
    timeline: Timeline,
    readers: Vec<JoinHandle<()>>,
    dir: PathBuf,
    pub started: Instant,
    pub t0: u64,
}

impl FleetRun {
    /// Starts the server and the workers (`w1`, `w2`, ...; every `fetch` up), and waits
    /// until every worker has started and polled the store at least once.
    pub fn start(name: &str, settings: Settings) -> Self {
        let binary = examples::example_binary_with("fleet_faults", &[]);
        let dir =
            std::env::temp_dir().join(format!("cb-b16-{name}-{}-{}", std::process::id(), now_ms()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let redis = if settings.persistent {
            RedisServer::persistent(&dir.join("redis"))
        } else {
            RedisServer::start_own()
        };
        let namespace = format!("b16-{name}-{}", std::process::id());
        let timeline: Timeline = Arc::default();
        let mut run = FleetRun {
            name: name.to_owned(),
            settings: settings.clone(),
            redis,
            namespace,
            workers: Vec::new(),
            timeline,
            readers: Vec::new(),
            dir,
            started: Instant::now(),
            t0: now_ms(),
        };
        for n in 1..=settings.workers {
            run.spawn(n, &binary);
        }
        let ids: Vec<String> = run.workers.iter().map(|w| w.id.clone()).collect();
        run.wait_for(Duration::from_secs(20), "every worker started", |tl| {
            ids.iter()
                .all(|id| tl.iter().any(|e| e.worker == *id && e.ev == "started"))
        });
        // Attached and polled at least once: the fleet is joined.
        std::thread::sleep(settings.allowance());
        run.mark("fleet_ready", json!({}));
        run
    }

    fn spawn(&mut self, n: usize, binary: &PathBuf) {
        let id = format!("w{n}");
        let health = self.dir.join(format!("{id}.health"));
        std::fs::write(&health, "up\n").expect("a health file");
        let s = &self.settings;
        let mut child = Command::new(binary)
            .args(["--redis", &self.redis.url, "--namespace", &self.namespace])
            .args(["--worker", &id, "--health"])
            .arg(&health)
            .args(["--poll-ms", &s.poll_ms.to_string()])
            .args(["--lease-ms", &s.lease_ms.to_string()])
            .args(["--cooldown-ms", &s.cooldown_ms.to_string()])
            .args(["--open-ttl-ms", &s.open_ttl_ms.to_string()])
            .args(["--op-timeout-ms", &s.op_timeout_ms.to_string()])
            .args(["--seed", &(s.seed + n as u64).to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start a fleet_faults worker");
        let stdout = child.stdout.take().expect("its stdout");
        let stderr = child.stderr.take().expect("its stderr");
        let timeline = Arc::clone(&self.timeline);
        let who = id.clone();
        self.readers.push(std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let entry = match serde_json::from_str::<Value>(&line) {
                    Ok(v) => Entry {
                        t: v.get("t_ms").and_then(Value::as_u64).unwrap_or_else(now_ms),
                        worker: v
                            .get("worker")
                            .and_then(Value::as_str)
                            .unwrap_or(&who)
                            .to_owned(),
                        ev: v
                            .get("ev")
                            .and_then(Value::as_str)
                            .unwrap_or("?")
                            .to_owned(),
                        v,
                    },
                    Err(_) => Entry {
                        t: now_ms(),
                        worker: who.clone(),
                        ev: "text".into(),
                        v: json!({ "line": line }),
                    },
                };
                push(&timeline, entry);
            }
        }));
        let timeline = Arc::clone(&self.timeline);
        let who = id.clone();
        self.readers.push(std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                push(
                    &timeline,
                    Entry {
                        t: now_ms(),
                        worker: who.clone(),
                        ev: "stderr".into(),
                        v: json!({ "line": line }),
                    },
                );
            }
        }));
        self.workers.push(Worker {
            id,
            stdin: child.stdin.take(),
            child,
            health,
            killed: false,
        });
    }

    /// The timeline so far, in time order.
    pub fn entries(&self) -> Vec<Entry> {
        let mut entries = self
            .timeline
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        entries.sort_by_key(|e| e.t);
        entries
    }

    /// Writes a harness line: a fault or a command, at the instant it is inflicted (just
    /// before: what the workers say about it comes after). Returns that instant.
    pub fn mark(&self, ev: &str, fields: Value) -> u64 {
        let t = now_ms();
        push(
            &self.timeline,
            Entry {
                t,
                worker: HARNESS.into(),
                ev: ev.into(),
                v: fields,
            },
        );
        t
    }

    pub fn id(&self, i: usize) -> &str {
        &self.workers[i].id
    }

    /// Sets `fetch`'s health (`up`, `down`, `slow MS`) for the workers `which` (indices).
    pub fn set_health(&self, which: &[usize], health: &str) -> u64 {
        let ids: Vec<&str> = which.iter().map(|&i| self.id(i)).collect();
        let t = self.mark("health", json!({ "workers": ids, "health": health }));
        for &i in which {
            std::fs::write(&self.workers[i].health, format!("{health}\n")).expect("health");
        }
        t
    }

    /// Every worker's index.
    pub fn all(&self) -> Vec<usize> {
        (0..self.workers.len()).collect()
    }

    /// Sends a command to worker `i` (`confirm`, `systemic`, `status`, `quit`).
    pub fn send(&mut self, i: usize, command: &str) {
        let id = self.workers[i].id.clone();
        self.mark("command", json!({ "to": id, "command": command }));
        if let Some(stdin) = self.workers[i].stdin.as_mut() {
            let _ = writeln!(stdin, "{command}");
            let _ = stdin.flush();
        }
    }

    /// SIGKILLs worker `i`: it ends mid-whatever, holding what it holds.
    pub fn kill_worker(&mut self, i: usize) -> u64 {
        let id = self.workers[i].id.clone();
        let t = self.mark("worker_killed", json!({ "worker": id }));
        let w = &mut self.workers[i];
        let _ = w.child.kill();
        let _ = w.child.wait();
        w.killed = true;
        w.stdin = None;
        t
    }

    // The server's faults return the instant they were marked, taken just before each
    // is inflicted: the workers' lines about it come after.

    /// SIGKILLs the server: whatever was not saved is lost.
    pub fn redis_kill(&mut self) -> u64 {
        let t = self.mark("redis_down", json!({ "how": "SIGKILL" }));
        self.redis.kill();
        t
    }

    /// SIGSTOPs the server: it keeps its connections and answers nothing.
    pub fn redis_pause(&mut self) -> u64 {
        let t = self.mark("redis_down", json!({ "how": "SIGSTOP" }));
        self.redis.pause();
        t
    }

    /// SIGCONTs the server.
    pub fn redis_resume(&mut self) -> u64 {
        let t = self.mark("redis_up", json!({ "how": "SIGCONT" }));
        self.redis.resume();
        t
    }

    /// Starts the server again with what it saved (a persistent one), or empty; returns once
    /// it answers.
    pub fn redis_restart(&mut self) -> u64 {
        let t = self.mark("redis_up", json!({ "how": "restart" }));
        self.redis.restart();
        t
    }

    /// Starts the server again with nothing in it; returns once it answers.
    pub fn redis_restart_empty(&mut self) -> u64 {
        let t = self.mark("redis_up", json!({ "how": "restart empty" }));
        self.redis.restart_empty();
        t
    }

    /// Writes the server's snapshot now.
    pub fn redis_save(&self) {
        self.redis.save();
        self.mark("redis_saved", json!({}));
    }

    /// Polls the timeline every 10 ms until `cond` holds; how long it took. Panics at `limit`.
    pub fn wait_for(
        &self,
        limit: Duration,
        what: &str,
        cond: impl Fn(&[Entry]) -> bool,
    ) -> Duration {
        self.try_wait_for(limit, cond)
            .unwrap_or_else(|| panic!("{}: {what}: not within {limit:?}", self.name))
    }

    /// As [`wait_for`](Self::wait_for), `None` at `limit`.
    pub fn try_wait_for(
        &self,
        limit: Duration,
        cond: impl Fn(&[Entry]) -> bool,
    ) -> Option<Duration> {
        let start = Instant::now();
        loop {
            if cond(&self.entries()) {
                return Some(start.elapsed());
            }
            if start.elapsed() >= limit {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits until worker `i` wrote a line `ev` after `since` (ms) matching `cond`.
    pub fn wait_line(
        &self,
        i: usize,
        ev: &str,
        since: u64,
        limit: Duration,
        cond: impl Fn(&Entry) -> bool,
    ) -> Duration {
        let id = self.id(i).to_owned();
        self.wait_for(limit, &format!("{id} {ev}"), |tl| {
            tl.iter()
                .any(|e| e.worker == id && e.ev == ev && e.t >= since && cond(e))
        })
    }

    /// Waits until every worker of `which` reports the store reachable (`up`) or not.
    pub fn wait_store(&self, which: &[usize], up: bool, since: u64, limit: Duration) {
        let ids: Vec<String> = which.iter().map(|&i| self.id(i).to_owned()).collect();
        self.wait_for(
            limit,
            &format!(
                "{ids:?} report the store {}",
                if up { "up" } else { "down" }
            ),
            |tl| {
                ids.iter().all(|id| {
                    tl.iter().any(|e| {
                        e.worker == *id && e.ev == "store" && e.t >= since && e.bool("up") == up
                    })
                })
            },
        );
    }

    /// Waits until `fetch` is in `state` (`OPEN`, `CLOSED`, `HALF-OPEN`) on every worker of
    /// `which`, as their events say.
    pub fn wait_fetch(&self, which: &[usize], state: State, limit: Duration) -> Duration {
        let ids: Vec<String> = which.iter().map(|&i| self.id(i).to_owned()).collect();
        self.wait_for(limit, &format!("fetch {state:?} on {ids:?}"), |tl| {
            let now = now_ms();
            ids.iter().all(|id| fetch_state_at(tl, id, now) == state)
        })
    }

    /// Waits, without failing, until `fetch` is in `state` on every worker, or `limit` has
    /// passed: the test's own assertions then say what the timeline shows.
    pub fn settle_fetch(&self, state: State, limit: Duration) {
        let ids = self.ids();
        let _ = self.try_wait_for(limit, |tl| {
            let now = now_ms();
            ids.iter().all(|id| fetch_state_at(tl, id, now) == state)
        });
    }

    /// Sends `quit` to every live worker and waits (3 s at most) for their summaries; then
    /// kills what is left and reads the rest of their output.
    pub fn finish(&mut self) -> Vec<Entry> {
        self.mark("quit", json!({}));
        let live: Vec<usize> = (0..self.workers.len())
            .filter(|&i| !self.workers[i].killed)
            .collect();
        for &i in &live {
            if let Some(stdin) = self.workers[i].stdin.as_mut() {
                let _ = writeln!(stdin, "quit");
                let _ = stdin.flush();
            }
        }
        let ids: Vec<String> = live.iter().map(|&i| self.id(i).to_owned()).collect();
        let _ = self.try_wait_for(Duration::from_secs(3), |tl| {
            ids.iter()
                .all(|id| tl.iter().any(|e| e.worker == *id && e.ev == "summary"))
        });
        self.kill_all();
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
        self.entries()
    }

    fn kill_all(&mut self) {
        for w in &mut self.workers {
            w.stdin = None;
            let _ = w.child.kill();
            let _ = w.child.wait();
        }
    }

    /// The figures of the whole run (see [`Figures`]).
    pub fn figures(&self, entries: &[Entry]) -> Figures {
        figures(entries, &self.settings, &self.ids())
    }

    pub fn ids(&self) -> Vec<String> {
        self.workers.iter().map(|w| w.id.clone()).collect()
    }

    /// The timeline as text, times relative to the start, `latency` lines left out.
    pub fn render(&self, entries: &[Entry]) -> String {
        let mut text = String::new();
        for e in entries.iter().filter(|e| e.ev != "latency") {
            let mut fields = e.v.clone();
            if let Value::Object(map) = &mut fields {
                for k in ["t_ms", "worker", "ev"] {
                    map.shift_remove(k);
                }
            }
            text.push_str(&format!(
                "{:>+7}ms {:<8} {:<14} {}\n",
                i128::from(e.t) - i128::from(self.t0),
                e.worker,
                e.ev,
                fields
            ));
        }
        text
    }
}

impl Drop for FleetRun {
    fn drop(&mut self) {
        self.kill_all();
        if std::thread::panicking() || std::env::var_os("B16_TIMELINE").is_some() {
            let entries = self.entries();
            eprintln!(
                "---- {}: the timeline ({} lines) ----\n{}",
                self.name,
                entries.len(),
                self.render(&entries)
            );
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A worker's view of `fetch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Closed,
    Open,
    HalfOpen,
}

/// `fetch`'s state on `worker` at `t`, from its `opened` / `half_opened` / `closed` lines.
pub fn fetch_state_at(entries: &[Entry], worker: &str, t: u64) -> State {
    let mut state = State::Closed;
    for e in entries
        .iter()
        .filter(|e| e.worker == worker && e.t <= t && e.is_fetch())
    {
        match e.ev.as_str() {
            "opened" => state = State::Open,
            "half_opened" => state = State::HalfOpen,
            "closed" => state = State::Closed,
            _ => {}
        }
    }
    state
}

/// Whether `fetch` was anything but CLOSED on `worker` at some instant of `[from, to]`.
fn fetch_not_closed_within(entries: &[Entry], worker: &str, from: u64, to: u64) -> bool {
    fetch_state_at(entries, worker, from) != State::Closed
        || entries.iter().any(|e| {
            e.worker == worker
                && e.is_fetch()
                && e.t > from
                && e.t <= to
                && matches!(e.ev.as_str(), "opened" | "half_opened")
        })
}

/// Whether the server was up at `t`, as the harness's marks say.
pub fn redis_up_at(entries: &[Entry], t: u64) -> bool {
    let mut up = true;
    for e in entries.iter().filter(|e| e.worker == HARNESS && e.t <= t) {
        match e.ev.as_str() {
            "redis_down" => up = false,
            "redis_up" => up = true,
            _ => {}
        }
    }
    up
}

/// Whether the server was up all through `[from, to]`.
pub fn redis_up_throughout(entries: &[Entry], from: u64, to: u64) -> bool {
    redis_up_at(entries, from)
        && !entries
            .iter()
            .any(|e| e.worker == HARNESS && e.ev == "redis_down" && e.t > from && e.t <= to)
}

/// Whether `worker` reached the store at `t`, as its `store` lines say (reachable until it
/// says otherwise).
pub fn store_up_at(entries: &[Entry], worker: &str, t: u64) -> bool {
    entries
        .iter()
        .rfind(|e| e.worker == worker && e.ev == "store" && e.t <= t)
        .is_none_or(|e| e.bool("up"))
}

fn store_up_throughout(entries: &[Entry], worker: &str, from: u64, to: u64) -> bool {
    store_up_at(entries, worker, from)
        && !entries
            .iter()
            .any(|e| e.worker == worker && e.ev == "store" && e.t > from && e.t <= to)
}

/// When `worker` was killed, if it was.
fn killed_at(entries: &[Entry], worker: &str) -> Option<u64> {
    entries
        .iter()
        .find(|e| e.worker == HARNESS && e.ev == "worker_killed" && e.str("worker") == Some(worker))
        .map(|e| e.t)
}

fn alive_at(entries: &[Entry], worker: &str, t: u64) -> bool {
    killed_at(entries, worker).is_none_or(|k| t < k)
}

/// What a run shows, computed from its timeline; every list names what it counts.
#[derive(Debug, Default)]
pub struct Figures {
    /// An `opened` of `fetch` by one worker (its own) that another worker never saw within
    /// the allowance ([`Settings::allowance`]) after it could be published, while the
    /// server answered both, it was not closed meanwhile and both were alive.
    pub lost_transitions: Vec<String>,
    /// The most workers between `probe_start` and `probe_end` of `fetch` at one instant,
    /// counting the probes started while their worker reached the store (while it does
    /// not, every worker probes on its own breaker, by design).
    pub concurrent_probes: usize,
    /// The same, every probe counted.
    pub concurrent_probes_all: usize,
    /// A worker paused for a systemic event after the worker that detected it had
    /// already resumed from it, or paused for it a second time.
    pub replayed_pauses: Vec<String>,
    /// A worker went OPEN on another's opening of `fetch` after a probe (made while the
    /// server answered) had closed it: a transition that was over, applied.
    pub replayed_opens: Vec<String>,
    /// Failures of `fetch` charged (or held for a systemic event) to a worker, not probes,
    /// while another worker's opening of it had been in force for longer than the allowance
    /// (and the server answered both all along).
    pub extra_charged: Vec<String>,
    /// `opened` lines naming a worker that is not one of the fleet.
    pub opened_by_strangers: Vec<String>,
    /// Probes of `fetch` started, fleet-wide.
    pub probes: usize,
    /// Probes started within the shortest cool-down (jitter taken off) after another
    /// worker's failed probe, both reaching the store: with cool-downs shared by the fleet,
    /// a failed probe puts off everyone's next one.
    pub redundant_probes: Vec<String>,
}

/// The figures of a timeline.
pub fn figures(entries: &[Entry], settings: &Settings, ids: &[String]) -> Figures {
    let allowance = ms(settings.allowance());
    let end = entries.last().map_or(0, |e| e.t);
    let mut f = Figures::default();
    let fetch = |ev: &'static str| entries.iter().filter(move |e| e.ev == ev && e.is_fetch());

    // Lost transitions.
    for open in fetch("opened").filter(|e| e.bool("own")) {
        let x = open.worker.as_str();
        // When it could be written: at once, or when its worker reached the store again.
        let published = if redis_up_at(entries, open.t) && store_up_at(entries, x, open.t) {
            Some(open.t)
        } else {
            entries
                .iter()
                .find(|e| e.worker == x && e.ev == "store" && e.t >= open.t && e.bool("up"))
                .map(|e| e.t)
        };
        let Some(p) = published else { continue };
        if !alive_at(entries, x, p) || !redis_up_at(entries, p) {
            continue;
        }
        for y in ids.iter().filter(|y| y.as_str() != x) {
            // Its own view of the store comes back within a poll of the server's return.
            let back = if store_up_at(entries, y, p) {
                p
            } else {
                match entries
                    .iter()
                    .find(|e| e.worker == *y && e.ev == "store" && e.t >= p && e.bool("up"))
                {
                    Some(e) => e.t,
                    None => continue,
                }
            };
            let deadline = back.max(p) + allowance;
            let closed_meanwhile = entries.iter().any(|e| {
                e.ev == "closed" && e.is_fetch() && e.bool("own") && e.t > open.t && e.t <= deadline
            });
            if deadline > end
                || closed_meanwhile
                || !redis_up_throughout(entries, p, deadline)
                || !store_up_throughout(entries, y, back, deadline)
                || !alive_at(entries, y, deadline)
            {
                continue;
            }
            if !fetch_not_closed_within(entries, y, open.t, deadline) {
                f.lost_transitions.push(format!(
                    "{x}'s opening at +{}ms never reached {y} by +{}ms",
                    open.t - entries[0].t,
                    deadline - entries[0].t
                ));
            }
        }
    }

    // Concurrent probes: a sweep over the probes' intervals.
    let mut intervals = Vec::new();
    for start in entries.iter().filter(|e| e.ev == "probe_start") {
        let w = start.worker.as_str();
        let end_of = entries
            .iter()
            .find(|e| e.worker == w && e.ev == "probe_end" && e.t >= start.t)
            .map(|e| e.t)
            .or_else(|| killed_at(entries, w).filter(|&k| k >= start.t))
            .unwrap_or(end);
        let reached = redis_up_at(entries, start.t) && store_up_at(entries, w, start.t);
        intervals.push((start.t, end_of, reached));
    }
    f.probes = intervals.len();
    let overlap = |only_reached: bool| {
        let mut points: Vec<(u64, i32)> = Vec::new();
        for &(s, e, reached) in &intervals {
            if reached || !only_reached {
                points.push((s, 1));
                // An end at the same instant as another's start is no overlap.
                points.push((e, -1));
            }
        }
        points.sort_by_key(|&(t, d)| (t, d));
        let (mut now, mut max) = (0i32, 0i32);
        for (_, d) in points {
            now += d;
            max = max.max(now);
        }
        usize::try_from(max).unwrap_or(0)
    };
    f.concurrent_probes = overlap(true);
    f.concurrent_probes_all = overlap(false);

    // Redundant probes: the policy's jitter takes at most 20 % off a cool-down.
    let shortest = settings.cooldown_ms * 4 / 5;
    let reached = |w: &str, t: u64| redis_up_at(entries, t) && store_up_at(entries, w, t);
    for failed in entries
        .iter()
        .filter(|e| e.ev == "probe_end" && !e.bool("ok") && reached(&e.worker, e.t))
    {
        for next in entries.iter().filter(|e| {
            e.ev == "probe_start"
                && e.worker != failed.worker
                && e.t > failed.t
                && e.t < failed.t + shortest
                && reached(&e.worker, e.t)
        }) {
            let line = format!(
                "{} probed at +{}ms, {}ms after {}'s probe failed",
                next.worker,
                next.t - entries[0].t,
                next.t - failed.t,
                failed.worker
            );
            if !f.redundant_probes.contains(&line) {
                f.redundant_probes.push(line);
            }
        }
    }

    // Replayed pauses.
    let systemic = |e: &&Entry| e.ev == "paused" && e.str("reason") == Some("systemic");
    let origins: Vec<&Entry> = entries
        .iter()
        .filter(systemic)
        .filter(|e| e.bool("local"))
        .collect();
    let mut paused_for: BTreeMap<(String, String), u64> = BTreeMap::new();
    for p in entries.iter().filter(systemic).filter(|e| !e.bool("local")) {
        let tools = p.v.get("tools").cloned().unwrap_or_default();
        let Some(origin) = origins
            .iter()
            .rev()
            .find(|o| o.t <= p.t && o.v.get("tools") == Some(&tools))
        else {
            continue;
        };
        let origin_resumed = entries
            .iter()
            .any(|e| e.worker == origin.worker && e.ev == "resumed" && e.t > origin.t && e.t < p.t);
        let episode = (p.worker.clone(), format!("{}@{}", origin.worker, origin.t));
        let again = paused_for.contains_key(&episode);
        paused_for.insert(episode, p.t);
        if origin_resumed || again {
            f.replayed_pauses.push(format!(
                "{} paused at +{}ms for {}'s event of +{}ms{}",
                p.worker,
                p.t - entries[0].t,
                origin.worker,
                origin.t - entries[0].t,
                if origin_resumed {
                    ", which it had resumed from"
                } else {
                    ", a second time"
                }
            ));
        }
    }

    // Replayed opens. A read sent before the close was written is answered within the op
    // timeout, and the close is written at once: past the bound (and a little), an opening
    // applied is one read after the close.
    let margin = ms(settings.bound()) + 100;
    for seen in fetch("opened").filter(|e| !e.bool("own")) {
        let Some(x) = seen.str("by") else { continue };
        if !ids.iter().any(|id| id == x) {
            f.opened_by_strangers.push(format!(
                "{} went OPEN at +{}ms on an opening by {x}",
                seen.worker,
                seen.t - entries[0].t
            ));
            continue;
        }
        let Some(theirs) =
            fetch("opened").rfind(|e| e.worker == x && e.bool("own") && e.t <= seen.t)
        else {
            continue;
        };
        let superseded = fetch("closed").find(|c| {
            c.bool("own")
                && c.t > theirs.t
                && c.t + margin < seen.t
                && redis_up_at(entries, c.t)
                && store_up_at(entries, &c.worker, c.t)
        });
        if let Some(c) = superseded {
            f.replayed_opens.push(format!(
                "{} went OPEN at +{}ms on {x}'s opening of +{}ms, closed by {}'s probe at +{}ms",
                seen.worker,
                seen.t - entries[0].t,
                theirs.t - entries[0].t,
                c.worker,
                c.t - entries[0].t
            ));
        }
    }

    // Extra failures charged.
    let open_ttl = settings.open_ttl_ms;
    for call in entries.iter().filter(|e| {
        e.ev == "call"
            && e.str("tool") == Some("fetch")
            && !e.bool("probe")
            && (e.bool("charged") || e.bool("pending"))
    }) {
        let y = call.worker.as_str();
        let by = fetch("opened").find(|o| {
            o.worker != y
                && o.bool("own")
                && o.t + allowance < call.t
                && call.t < o.t + open_ttl
                && store_up_at(entries, &o.worker, o.t)
                && redis_up_throughout(entries, o.t, call.t)
                && store_up_throughout(entries, y, o.t, call.t)
                && !entries
                    .iter()
                    .any(|c| c.ev == "closed" && c.is_fetch() && c.t > o.t && c.t < call.t)
        });
        if let Some(o) = by {
            f.extra_charged.push(format!(
                "{y} charged a failure of fetch at +{}ms, {} had opened it at +{}ms",
                call.t - entries[0].t,
                o.worker,
                o.t - entries[0].t
            ));
        }
    }
    f
}

/// How long after `since` (ms) every worker of `ids` (alive at the end) had `fetch` CLOSED
/// for good: `None` if one ends otherwise.
pub fn converged_closed(entries: &[Entry], ids: &[String], since: u64) -> Option<Duration> {
    let end = entries.last().map_or(since, |e| e.t);
    let mut latest = since;
    for id in ids.iter().filter(|id| alive_at(entries, id, end)) {
        if fetch_state_at(entries, id, end) != State::Closed {
            return None;
        }
        if let Some(c) = entries
            .iter()
            .rfind(|e| e.worker == *id && e.is_fetch() && e.ev == "closed" && e.t >= since)
        {
            latest = latest.max(c.t);
        }
    }
    Some(Duration::from_millis(latest - since))
}

/// Whether `worker` is paused at `t`, from its `paused` / `resumed` lines.
pub fn paused_at(entries: &[Entry], worker: &str, t: u64) -> bool {
    entries
        .iter()
        .rfind(|e| e.worker == worker && e.t <= t && (e.ev == "paused" || e.ev == "resumed"))
        .is_some_and(|e| e.ev == "paused")
}

/// How long after `since` every worker of `ids` was running (not paused) for good.
pub fn converged_running(entries: &[Entry], ids: &[String], since: u64) -> Option<Duration> {
    let end = entries.last().map_or(since, |e| e.t);
    let mut latest = since;
    for id in ids {
        if paused_at(entries, id, end) {
            return None;
        }
        if let Some(r) = entries
            .iter()
            .rfind(|e| e.worker == *id && e.ev == "resumed" && e.t >= since)
        {
            latest = latest.max(r.t);
        }
    }
    Some(Duration::from_millis(latest - since))
}

/// The longest single healthy call (`ping`) of any worker in `[from, to]` (ms), in µs: the
/// `latency` lines cover the second before them.
pub fn max_latency_us(entries: &[Entry], from: u64, to: u64) -> Option<u64> {
    entries
        .iter()
        .filter(|e| e.ev == "latency" && e.t >= from && e.t <= to + 1_000)
        .filter_map(|e| e.u64("max_us"))
        .max()
}

/// The first harness mark `ev` at or after `since`.
pub fn mark_at(entries: &[Entry], ev: &str) -> Option<u64> {
    entries
        .iter()
        .find(|e| e.worker == HARNESS && e.ev == ev)
        .map(|e| e.t)
}

/// Prints the figures of a scenario, one line, and the convergence and latency.
pub fn report(
    name: &str,
    f: &Figures,
    convergence: Option<Duration>,
    latency_us: Option<u64>,
    took: Duration,
) {
    eprintln!(
        "{name}: lost transitions {}, concurrent probes {} (all {}; {} probes, {} redundant), \
         replayed pauses {}, replayed opens {}, extra failures charged {}, opened by strangers {}, \
         convergence {}, max healthy-call latency during the fault {}, run {:.1}s",
        f.lost_transitions.len(),
        f.concurrent_probes,
        f.concurrent_probes_all,
        f.probes,
        f.redundant_probes.len(),
        f.replayed_pauses.len(),
        f.replayed_opens.len(),
        f.extra_charged.len(),
        f.opened_by_strangers.len(),
        convergence.map_or("never".to_owned(), |d| format!("{d:?}")),
        latency_us.map_or("-".to_owned(), |us| format!("{us} µs")),
        took.as_secs_f64()
    );
    for line in f
        .lost_transitions
        .iter()
        .chain(&f.replayed_pauses)
        .chain(&f.replayed_opens)
        .chain(&f.extra_charged)
        .chain(&f.opened_by_strangers)
        .chain(&f.redundant_probes)
    {
        eprintln!("{name}:   {line}");
    }
}

/// The four counts B16 holds the fleet to.
pub fn assert_counts(name: &str, f: &Figures) {
    assert!(
        f.lost_transitions.is_empty(),
        "{name}: lost transitions {}: {:?}",
        f.lost_transitions.len(),
        f.lost_transitions
    );
    assert!(
        f.concurrent_probes <= 1,
        "{name}: concurrent probes {} (at most 1 while the store answers)",
        f.concurrent_probes
    );
    assert!(
        f.replayed_pauses.is_empty(),
        "{name}: replayed pauses {}: {:?}",
        f.replayed_pauses.len(),
        f.replayed_pauses
    );
    assert!(
        f.extra_charged.is_empty(),
        "{name}: extra failures charged {}: {:?}",
        f.extra_charged.len(),
        f.extra_charged
    );
}

/// Cool-downs are shared (B16): no worker probes within the cool-down after another's failed
/// probe while both reach the store.
pub fn assert_no_replayed_opens(name: &str, f: &Figures) {
    assert!(
        f.replayed_opens.is_empty(),
        "{name}: replayed opens {}: {:?}",
        f.replayed_opens.len(),
        f.replayed_opens
    );
}

pub fn assert_shared_cool_down(name: &str, f: &Figures) {
    assert!(
        f.redundant_probes.is_empty(),
        "{name}: redundant probes {} (within the cool-down after another worker's failed probe): {:?}",
        f.redundant_probes.len(),
        f.redundant_probes
    );
}
