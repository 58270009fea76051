//! B13, per-tool deadlines: an async call past its deadline is a timeout failure of the tool
//! (charged, its future dropped); a sync call that answers late is one too (it cannot be
//! stopped, its answer is dropped); a call dropped by its caller is a cancellation, never
//! charged but counted and shown. Every deadline waits on the expeditor's clock, so these
//! tests move a `ManualClock` instead of sleeping, and poll the guarded futures by hand or
//! with a `block_on` of a dozen lines: no async runtime is needed (B2).

use std::future::Future;
use std::io;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use agent_circuit_breaker::capability::MapError;
use agent_circuit_breaker::clock::{ManualClock, Sleep, SystemClock, Timestamp, WallClock};
use agent_circuit_breaker::dispatch::ReplyOutcome;
use agent_circuit_breaker::{
    CallError, CapabilityMap, CircuitState, Expeditor, FailureCategory, ToolSpec, toolbox,
};

const START: Timestamp = Timestamp::from_secs(1_796_024_103);

/// A waker that remembers it was woken.
#[derive(Default)]
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }
}

impl Flag {
    fn take(&self) -> bool {
        self.0.swap(false, Ordering::AcqRel)
    }
}

/// Polls `future` once: it must wait. Moves `clock` by `by`: that must wake it (nothing
/// polls, nothing sleeps). Polls again: it must be done.
fn timed_out_by<F: Future>(clock: &ManualClock, by: Duration, future: F) -> F::Output {
    let flag = Arc::new(Flag::default());
    let waker = Waker::from(Arc::clone(&flag));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    assert!(future.as_mut().poll(&mut cx).is_pending(), "the call waits");
    clock.advance(by);
    assert!(
        flag.take(),
        "moving the clock to the deadline wakes the call"
    );
    match future.as_mut().poll(&mut cx) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the call is still waiting after its deadline"),
    }
}

/// A `block_on` with no runtime: polls on this thread, parks between wake-ups.
fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::park();
    }
}

/// A tool that answers `"hang"` by never answering.
async fn answer(text: String) -> io::Result<String> {
    if text == "hang" {
        std::future::pending::<()>().await;
    }
    Ok(text)
}

struct Tools {
    clock: ManualClock,
}

#[toolbox(json, timeout = "10s")]
impl Tools {
    /// Its own deadline, shorter than the toolbox's.
    #[tool(
        provides = "content search across files",
        fallback = "ask the user which files to examine",
        timeout = "2s"
    )]
    async fn grep(&self, pattern: String) -> io::Result<String> {
        answer(pattern).await
    }

    /// The toolbox's deadline.
    #[tool(
        provides = "external information retrieval",
        fallback = "state what information is needed; ask the user to provide it"
    )]
    async fn fetch(&self, url: String) -> io::Result<String> {
        answer(url).await
    }

    /// A sync tool that takes `millis` of the clock's time.
    #[tool(
        provides = "command execution",
        fallback = "report commands that need to be run manually",
        timeout = "1s"
    )]
    fn bash(&self, millis: u64) -> io::Result<String> {
        self.clock.advance(Duration::from_millis(millis));
        Ok(format!("took {millis}ms"))
    }
}

fn tools() -> (GuardedTools, ManualClock) {
    let clock = ManualClock::new(START);
    let guarded = GuardedTools::with_expeditor(
        Tools {
            clock: clock.clone(),
        },
        |builder| builder.clock(clock.clone()),
    );
    (guarded, clock)
}

#[test]
fn b13_a_hung_tool_times_out_at_its_deadline_and_opens_after_threshold_times_deadline() {
    let (guarded, clock) = tools();
    for n in 1..=3u32 {
        let started = clock.now();
        let error =
            timed_out_by(&clock, Duration::from_secs(2), guarded.grep("hang".into())).unwrap_err();
        assert!(
            matches!(&error, CallError::TimedOut { tool, after, .. } if tool == "grep" && *after == Duration::from_secs(2)),
            "{error:?}"
        );
        assert_eq!(error.timed_out(), Some(Duration::from_secs(2)));
        assert_eq!(error.to_string(), "grep failed: timed out after 2s");
        let CallError::TimedOut { recorded, .. } = &error else {
            unreachable!()
        };
        assert_eq!(recorded.opened, n == 3, "call {n}");
        let record = guarded.expeditor().breaker(ToolsTool::Grep).unwrap();
        let failure = &record.last_failure().unwrap().failure;
        assert_eq!(failure.category(), FailureCategory::Timeout);
        assert_eq!(failure.message(), "timed out after 2s");
        assert_eq!(clock.now(), started.plus(Duration::from_secs(2)));
        // Charged: the budget counts every timeout.
        assert_eq!(guarded.expeditor().budget().consumed(), n);
    }
    // Three deadlines of 2s: the circuit is OPEN 6s after the first call, and stays so.
    assert_eq!(clock.now(), START.plus(Duration::from_secs(6)));
    assert_eq!(
        guarded.expeditor().state(ToolsTool::Grep),
        Some(CircuitState::Open)
    );
    let refused = block_on(guarded.grep("hang".into())).unwrap_err();
    assert!(refused.refusal().is_some(), "{refused:?}");
    // A timeout is no cancellation.
    assert_eq!(
        guarded
            .expeditor()
            .breaker(ToolsTool::Grep)
            .unwrap()
            .cancelled(),
        0
    );
}

#[test]
fn b13_not_a_millisecond_before_the_deadline() {
    let (guarded, clock) = tools();
    let flag = Arc::new(Flag::default());
    let waker = Waker::from(Arc::clone(&flag));
    let mut cx = Context::from_waker(&waker);
    let mut call = pin!(guarded.grep("hang".into()));
    assert!(call.as_mut().poll(&mut cx).is_pending());
    clock.advance(Duration::from_millis(1999));
    assert!(!flag.take(), "1999ms: nobody is woken");
    assert!(call.as_mut().poll(&mut cx).is_pending());
    clock.advance(Duration::from_millis(1));
    assert!(flag.take());
    let Poll::Ready(Err(CallError::TimedOut { .. })) = call.as_mut().poll(&mut cx) else {
        panic!("2000ms: timed out")
    };
}

#[test]
fn b13_the_toolbox_deadline_is_the_default_and_a_tool_overrides_it() {
    let (guarded, clock) = tools();
    let map = ToolsTool::capability_map();
    let timeout = |name: &str| {
        map.tools()
            .iter()
            .find(|t| t.name() == name)
            .unwrap()
            .timeout()
    };
    assert_eq!(timeout("grep"), Some(Duration::from_secs(2)));
    assert_eq!(timeout("fetch"), Some(Duration::from_secs(10)));
    assert_eq!(timeout("bash"), Some(Duration::from_secs(1)));

    // `fetch` has the toolbox's 10s: still waiting after the 2s of `grep`.
    let flag = Arc::new(Flag::default());
    let waker = Waker::from(Arc::clone(&flag));
    let mut cx = Context::from_waker(&waker);
    let mut call = pin!(guarded.fetch("hang".into()));
    assert!(call.as_mut().poll(&mut cx).is_pending());
    clock.advance(Duration::from_secs(2));
    assert!(call.as_mut().poll(&mut cx).is_pending());
    let error = timed_out_by(&clock, Duration::from_secs(8), call).unwrap_err();
    assert_eq!(error.timed_out(), Some(Duration::from_secs(10)));

    // A call that answers in time is a plain success.
    let answer = block_on(guarded.fetch("https://example.invalid".into())).unwrap();
    assert_eq!(answer.value, "https://example.invalid");
    let record = guarded.expeditor().breaker(ToolsTool::Fetch).unwrap();
    assert_eq!(record.consecutive_failures(), 0);
}

#[test]
fn b13_a_sync_tool_that_answers_late_is_a_timeout_and_its_answer_is_dropped() {
    let (guarded, clock) = tools();
    // In time: 999ms of its 1s.
    assert_eq!(guarded.bash(999).unwrap().value, "took 999ms");
    // At the deadline or after it: as if no answer had come.
    for late in [1000, 1500] {
        let before = clock.now();
        let error = guarded.bash(late).unwrap_err();
        assert!(
            matches!(&error, CallError::TimedOut { tool, after, .. } if tool == "bash" && *after == Duration::from_secs(1)),
            "{error:?}"
        );
        assert_eq!(clock.now(), before.plus(Duration::from_millis(late)));
    }
    let record = guarded.expeditor().breaker(ToolsTool::Bash).unwrap();
    assert_eq!(record.consecutive_failures(), 2);
    assert_eq!(
        record.last_failure().unwrap().failure.category(),
        FailureCategory::Timeout
    );
    assert_eq!(guarded.expeditor().budget().consumed(), 2);
}

#[test]
fn b13_the_json_dispatcher_times_calls_out_too() {
    let (guarded, clock) = tools();
    let reply = timed_out_by(
        &clock,
        Duration::from_secs(2),
        guarded.call("grep", serde_json::json!({ "pattern": "hang" })),
    );
    assert_eq!(
        reply.outcome,
        ReplyOutcome::Failed {
            message: "timed out after 2s".into()
        }
    );
    assert!(
        reply
            .note
            .as_deref()
            .unwrap()
            .starts_with("grep failed: timed out after 2s."),
        "{reply:?}"
    );
    let reply = block_on(guarded.call("bash", serde_json::json!({ "millis": 3000 })));
    assert_eq!(
        reply.outcome,
        ReplyOutcome::Failed {
            message: "timed out after 1s".into()
        }
    );
}

/// A clock that counts the deadlines set on it.
#[derive(Clone, Default)]
struct CountingClock {
    inner: ManualClock,
    sleeps: Arc<AtomicUsize>,
}

impl WallClock for CountingClock {
    fn now(&self) -> Timestamp {
        self.inner.now()
    }

    fn sleep_until(&self, deadline: Timestamp) -> Sleep {
        self.sleeps.fetch_add(1, Ordering::AcqRel);
        self.inner.sleep_until(deadline)
    }
}

struct Plain;

#[toolbox]
impl Plain {
    #[tool(provides = "waits for the user", fallback = "ask the user directly")]
    async fn wait(&self, text: String) -> io::Result<String> {
        answer(text).await
    }
}

#[test]
fn b13_a_tool_without_a_timeout_is_never_timed() {
    let clock = CountingClock::default();
    let guarded = GuardedPlain::with_expeditor(Plain, |b| b.clock(clock.clone()));
    assert_eq!(PlainTool::capability_map().tools()[0].timeout(), None);
    let flag = Arc::new(Flag::default());
    let waker = Waker::from(Arc::clone(&flag));
    let mut cx = Context::from_waker(&waker);
    {
        let mut call = pin!(guarded.wait("hang".into()));
        assert!(call.as_mut().poll(&mut cx).is_pending());
        clock.inner.advance(Duration::from_secs(365 * 24 * 3600));
        assert!(call.as_mut().poll(&mut cx).is_pending(), "a year later");
    }
    assert_eq!(block_on(guarded.wait("ok".into())).unwrap().value, "ok");
    assert_eq!(clock.sleeps.load(Ordering::Acquire), 0, "no timer was set");
    let record = guarded.expeditor().breaker(PlainTool::Wait).unwrap();
    assert_eq!(record.consecutive_failures(), 0);
}

#[test]
fn b13_a_call_dropped_by_its_caller_is_counted_not_charged_and_shown() {
    let (guarded, clock) = tools();
    let table = guarded.expeditor().state_table().to_string();
    assert!(
        !table.contains("Cancelled"),
        "no line without cancellations:\n{table}"
    );
    let flag = Arc::new(Flag::default());
    let waker = Waker::from(Arc::clone(&flag));
    let mut cx = Context::from_waker(&waker);
    // The caller's own timeout around a hung call: its future polled, then dropped, as
    // `tokio::time::timeout` does when it fires.
    for _ in 0..3 {
        let mut call = Box::pin(guarded.fetch("hang".into()));
        assert!(call.as_mut().poll(&mut cx).is_pending());
        clock.advance(Duration::from_secs(1));
        drop(call);
    }
    let mut call = Box::pin(guarded.grep("hang".into()));
    assert!(call.as_mut().poll(&mut cx).is_pending());
    drop(call);
    // Nothing was charged: CLOSED, no failure, the budget untouched.
    let expeditor = guarded.expeditor();
    assert_eq!(
        expeditor.state(ToolsTool::Fetch),
        Some(CircuitState::Closed)
    );
    let record = expeditor.breaker(ToolsTool::Fetch).unwrap();
    assert_eq!(record.consecutive_failures(), 0);
    assert!(record.last_failure().is_none());
    assert_eq!(record.cancelled(), 3);
    assert_eq!(expeditor.budget().consumed(), 0);
    // Moving the clock past the dropped calls' deadlines changes nothing: their timers went
    // with them.
    clock.advance(Duration::from_secs(60));
    assert_eq!(expeditor.budget().consumed(), 0);

    let table = expeditor.state_table();
    let text = table.to_string();
    assert!(
        text.ends_with(
            "Failure budget: 0 / 5 consumed\nCancelled by caller (not charged): grep 1, fetch 3"
        ),
        "{text}"
    );
    let json = serde_json::to_value(&table).unwrap();
    assert_eq!(json["rows"][0]["cancelled"], 1);
    assert_eq!(json["rows"][1]["cancelled"], 3);
    assert!(
        json["rows"][2].get("cancelled").is_none(),
        "left out while 0"
    );

    // Kept by a snapshot, and restored.
    let snapshot = expeditor.snapshot();
    let saved = serde_json::to_string(&snapshot).unwrap();
    assert!(saved.contains("\"cancelled\":3"), "{saved}");
    let (other, _) = tools();
    other
        .expeditor()
        .restore(&serde_json::from_str(&saved).unwrap())
        .unwrap();
    assert_eq!(
        other
            .expeditor()
            .breaker(ToolsTool::Fetch)
            .unwrap()
            .cancelled(),
        3
    );
    assert_eq!(other.expeditor().state_table().to_string(), text);
}

#[test]
fn b13_a_ticket_given_back_unused_is_no_cancellation() {
    let (guarded, _) = tools();
    let expeditor = guarded.expeditor();
    match expeditor.decide(ToolsTool::Grep) {
        agent_circuit_breaker::Decision::Call(ticket) => ticket.cancel(),
        other => panic!("{}", other.kind()),
    }
    assert_eq!(expeditor.breaker(ToolsTool::Grep).unwrap().cancelled(), 0);
    match expeditor.decide(ToolsTool::Grep) {
        agent_circuit_breaker::Decision::Call(ticket) => drop(ticket),
        other => panic!("{}", other.kind()),
    }
    assert_eq!(expeditor.breaker(ToolsTool::Grep).unwrap().cancelled(), 1);
}

#[test]
fn b13_no_runtime_needed_block_on_with_a_manual_clock_moved_by_another_thread() {
    let (guarded, clock) = tools();
    let done = Arc::new(AtomicBool::new(false));
    let mover = {
        let (clock, done) = (clock.clone(), Arc::clone(&done));
        std::thread::spawn(move || {
            // Moves the clock until the call is over: whenever the deadline was set, the
            // clock reaches it, and the move wakes the parked `block_on`.
            while !done.load(Ordering::Acquire) {
                clock.advance(Duration::from_millis(500));
                std::thread::yield_now();
            }
        })
    };
    let error = block_on(guarded.grep("hang".into())).unwrap_err();
    done.store(true, Ordering::Release);
    mover.join().unwrap();
    assert_eq!(error.timed_out(), Some(Duration::from_secs(2)));
}

struct Quick;

#[toolbox]
impl Quick {
    #[tool(provides = "never answers", fallback = "do without", timeout = "5ms")]
    async fn stuck(&self) -> io::Result<()> {
        std::future::pending().await
    }
}

/// The one test on real time: the system clock's timer (its own thread, no runtime) ends a
/// hung call under a hand-written `block_on`, 5ms after it began.
#[test]
fn b13_no_runtime_needed_the_system_clock_times_out_under_a_plain_block_on() {
    let guarded = GuardedQuick::with_expeditor(Quick, |b| b.clock(SystemClock));
    let started = std::time::Instant::now();
    let error = block_on(guarded.stuck()).unwrap_err();
    assert!(
        started.elapsed() >= Duration::from_millis(4),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(error.to_string(), "stuck failed: timed out after 5ms");
}

// ----- ToolSpec::timeout in maps built and loaded at run time (B6) ---------------------------

const YAML: &str = r#"
capability_map:
  - tool: Grep
    provides: content search across files
    fallback: ask the user which files to examine
    timeout: 30s
  - tool: Bash
    provides: command execution
    fallback: report commands that need to be run manually
    timeout: 1m 30s
  - tool: Read
    provides: file content inspection
    fallback: ask the user to paste file contents
"#;

#[test]
fn b13_tool_timeouts_load_from_yaml_and_json_and_write_back_as_humantime() {
    let map: CapabilityMap = serde_yaml_ng::from_str(YAML).unwrap();
    map.validate().unwrap();
    let timeouts: Vec<Option<Duration>> = map.tools().iter().map(ToolSpec::timeout).collect();
    assert_eq!(
        timeouts,
        [
            Some(Duration::from_secs(30)),
            Some(Duration::from_secs(90)),
            None
        ]
    );
    let json = serde_json::to_value(&map).unwrap();
    assert_eq!(json["capability_map"][0]["timeout"], "30s");
    assert_eq!(json["capability_map"][1]["timeout"], "1m 30s");
    assert!(json["capability_map"][2].get("timeout").is_none());
    let back: CapabilityMap = serde_json::from_value(json).unwrap();
    assert_eq!(back, map);

    let built = ToolSpec::new("Grep")
        .provides("content search across files")
        .fallback("ask the user")
        .timeout(Duration::from_millis(2500))
        .build();
    assert_eq!(built.timeout(), Some(Duration::from_millis(2500)));
    assert_eq!(serde_json::to_value(&built).unwrap()["timeout"], "2s 500ms");
}

#[test]
fn b13_bad_tool_timeouts_are_map_errors_never_panics() {
    let cases = [
        (
            r#""30 parsecs""#,
            "tool `Grep` has timeout `30 parsecs`: it is not a duration (unknown time unit \"parsecs\", supported units: ns, us/µs, ms, sec, min, hours, days, weeks, months, years (and few variations)); write one with its unit, e.g. \"30s\", \"2m\" or \"1m 30s\"",
        ),
        (
            r#""0s""#,
            "tool `Grep` has timeout `0s`: a timeout of 0s is no deadline; the shortest is 1ms",
        ),
        (
            r#""900 years""#,
            "tool `Grep` has timeout `900years`: a timeout of 900years is longer than the longest, 1day",
        ),
        (
            "30",
            "tool `Grep` has timeout `30`: it is not a duration (a number without a unit); write one with its unit, e.g. \"30s\", \"2m\" or \"1m 30s\"",
        ),
        (
            r#""""#,
            "tool `Grep` has timeout ``: it is not a duration (value was empty); write one with its unit, e.g. \"30s\", \"2m\" or \"1m 30s\"",
        ),
    ];
    for (timeout, expected) in cases {
        let json = format!(
            r#"{{"capability_map": [{{"tool": "Grep", "provides": "search", "fallback": "ask", "timeout": {timeout}}}]}}"#
        );
        let map: CapabilityMap = serde_json::from_str(&json).unwrap();
        let errors = Expeditor::new(map.clone()).unwrap_err();
        assert!(
            matches!(errors.problems(), [MapError::InvalidTimeout { .. }]),
            "{errors:?}"
        );
        assert_eq!(errors.problems()[0].to_string(), expected);
        // What could not be read is written back as it was given; a duration, as humantime
        // writes it.
        let written = serde_json::to_value(&map).unwrap();
        let given = serde_json::from_str::<serde_json::Value>(timeout).unwrap();
        let given = given
            .as_str()
            .map_or_else(|| given.to_string(), str::to_owned);
        let readable = given.ends_with('s') && given.starts_with(['0', '9']);
        if !readable {
            assert_eq!(written["capability_map"][0]["timeout"], given.as_str());
        }
    }
    // YAML says it the same way; so does a map built at run time, and `discover`.
    let yaml = "capability_map:\n  - tool: Grep\n    provides: search\n    fallback: ask\n    timeout: soon\n";
    let map: CapabilityMap = serde_yaml_ng::from_str(yaml).unwrap();
    assert!(map.validate().unwrap_err().to_string().contains("`soon`"));
    let zero = ToolSpec::new("Grep")
        .provides("search")
        .fallback("ask")
        .timeout(Duration::ZERO);
    assert!(CapabilityMap::new().tool(zero.clone()).validate().is_err());
    let expeditor = Expeditor::new(CapabilityMap::new()).unwrap();
    assert!(expeditor.discover(zero).is_err());
}

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct Buffer(Arc<std::sync::Mutex<Vec<u8>>>);

impl io::Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn b13_the_execute_tool_span_says_the_caller_dropped_the_call() {
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        let (guarded, _) = tools();
        let waker = Waker::from(Arc::new(Flag::default()));
        let mut cx = Context::from_waker(&waker);
        let mut call = Box::pin(guarded.fetch("hang".into()));
        assert!(call.as_mut().poll(&mut cx).is_pending());
        drop(call);
    });
    let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("cancelled"))
        .unwrap_or_else(|| panic!("no cancelled event:\n{text}"));
    assert!(line.contains("execute_tool{"), "{line}");
    assert!(line.contains("gen_ai.tool.name=\"fetch\""), "{line}");
    assert!(line.contains("circuit_breaker.cancelled=true"), "{line}");
    assert!(!line.contains("error.type"), "no error: {line}");
}
