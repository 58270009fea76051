//! B8: tools called by name with JSON arguments, as a model calls them. `#[toolbox(json)]`
//! generates an argument type per tool (serde, JSON Schema, parameter docs as descriptions)
//! and `ToolDispatch` on the guarded handle, which runs the same guarded path as a typed call.

#[path = "../common/mod.rs"]
mod common;

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use agent_circuit_breaker::dispatch::{Reply, ReplyOutcome, ToolDispatch};
use agent_circuit_breaker::report::ModelMistake;
use agent_circuit_breaker::{CircuitState, Policy, SkipReason, toolbox};
use common::{YieldOnce, assert_golden, assert_no_retry_invitation, block_on, clock};
use serde_json::{Value, json};

#[derive(Default)]
pub struct Workspace {
    grep_broken: AtomicBool,
    bash_broken: AtomicBool,
    greps: AtomicU32,
    log: Mutex<Vec<String>>,
}

#[derive(serde::Serialize)]
pub struct Hit {
    path: String,
    line: u32,
}

#[toolbox(json, policy(threshold = 2, budget = 5, probe_every = 2))]
impl Workspace {
    /// Searches file contents with a regular expression.
    #[tool(
        provides = "content search across files",
        alternatives(bash(
            method = "rg or grep command",
            degradation = "loses Grep's built-in output formatting",
            via = grep_with_rg
        )),
        fallback = "ask the user which files to examine"
    )]
    fn grep(
        &self,
        /// The regular expression to look for.
        pattern: &str,
        /// Only files under this directory.
        under: Option<&str>,
        /// At most this many hits.
        limit: Option<u32>,
    ) -> Result<Vec<Hit>, std::io::Error> {
        self.greps.fetch_add(1, Ordering::SeqCst);
        if self.grep_broken.load(Ordering::SeqCst) {
            return Err(std::io::Error::other("index corrupted"));
        }
        let path = format!("{}/main.rs", under.unwrap_or("src"));
        let hits = vec![Hit { path, line: 7 }];
        let _ = pattern;
        Ok(hits
            .into_iter()
            .take(limit.unwrap_or(10) as usize)
            .collect())
    }

    fn grep_with_rg(
        &self,
        pattern: &str,
        under: Option<&str>,
        _limit: Option<u32>,
    ) -> Result<Vec<Hit>, std::io::Error> {
        let out = self
            .bash(&format!("rg {pattern} {}", under.unwrap_or(".")))
            .map_err(std::io::Error::other)?;
        Ok(vec![Hit { path: out, line: 0 }])
    }

    /// Runs a shell command.
    ///
    /// Prefer short commands.
    #[tool(
        provides = "command execution, build tools, git operations",
        fallback = "report commands that need to be run manually"
    )]
    fn bash(
        &self,
        /// The command line.
        command: &str,
    ) -> Result<String, String> {
        self.log.lock().unwrap().push(command.to_owned());
        if self.bash_broken.load(Ordering::SeqCst) {
            return Err("bash: permission denied".to_owned());
        }
        Ok(format!("ran {command}"))
    }

    /// Lists the files given.
    #[tool(provides = "file listing", fallback = "ask the user for the file list")]
    fn list(&self, paths: &[String], ids: Vec<u64>) -> Result<usize, std::io::Error> {
        Ok(paths.len() + ids.len())
    }

    #[tool(provides = "the time", fallback = "ask the user for the time")]
    fn now() -> Result<u64, std::io::Error> {
        Ok(42)
    }
}

fn agent() -> GuardedWorkspace {
    let clock = clock();
    GuardedWorkspace::with_expeditor(Workspace::default(), |b| b.clock(clock))
}

fn call(agent: &impl ToolDispatch, name: &str, arguments: Value) -> Reply {
    block_on(agent.dispatch(name, arguments))
}

fn names(definitions: &[agent_circuit_breaker::dispatch::ToolDefinition]) -> Vec<&str> {
    definitions.iter().map(|d| d.name.as_str()).collect()
}

/// Everything a model's mistake must leave alone: every breaker, the budget, the step.
fn charged(agent: &GuardedWorkspace) -> String {
    let expeditor = agent.expeditor();
    let breakers: Vec<String> = expeditor
        .tools()
        .map(|id| format!("{:?}", expeditor.breaker(id)))
        .collect();
    format!("{breakers:?} {:?} {}", expeditor.budget(), expeditor.step())
}

#[test]
fn b8_definitions_name_describe_and_schema_every_tool() {
    let agent = agent();
    let definitions = agent.definitions();
    assert_eq!(names(&definitions), ["grep", "bash", "list", "now"]);
    // Computed once, the same every time.
    assert_eq!(agent.definitions(), definitions);

    let grep = &definitions[0];
    assert_eq!(
        grep.description,
        "content search across files\n\nSearches file contents with a regular expression."
    );
    let schema = Value::Object(grep.input_schema.clone());
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["pattern"]));
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(
        schema["properties"]["pattern"],
        json!({"type": "string", "description": "The regular expression to look for."})
    );
    assert_eq!(
        schema["properties"]["under"]["description"],
        "Only files under this directory."
    );
    assert_eq!(
        schema["properties"]["under"]["type"],
        json!(["string", "null"])
    );
    assert_eq!(
        schema["properties"]["limit"]["description"],
        "At most this many hits."
    );
    assert!(schema.get("title").is_none() && schema.get("$schema").is_none());

    // Paragraphs of the doc comment are kept.
    assert_eq!(
        definitions[1].description,
        "command execution, build tools, git operations\n\nRuns a shell command.\n\nPrefer short commands."
    );
    // `&[String]` and `Vec<u64>`: arrays.
    let list = Value::Object(definitions[2].input_schema.clone());
    assert_eq!(list["properties"]["paths"]["items"]["type"], "string");
    assert_eq!(list["properties"]["ids"]["type"], "array");
    assert_eq!(list["required"], json!(["paths", "ids"]));
    // No parameters, no docs: an empty object schema, the provides line alone.
    assert_eq!(definitions[3].description, "the time");
    assert_eq!(
        Value::Object(definitions[3].input_schema.clone()),
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    );
    // Healthy: everything is offered.
    assert_eq!(agent.offered(), definitions);
}

#[test]
fn b8_call_by_name_answers_with_the_value() {
    let agent = agent();
    let reply = call(&agent, "grep", json!({"pattern": "TODO", "under": "lib"}));
    assert_eq!(reply.outcome, ReplyOutcome::Answered);
    assert!(!reply.is_error());
    assert_eq!(
        reply.value,
        Some(json!([{"path": "lib/main.rs", "line": 7}]))
    );
    assert_eq!(reply.note, None);
    assert_eq!(reply.route, None);
    assert_eq!(reply.state, Some(CircuitState::Closed));
    // The fields in declaration order: what the model reads does not depend on which crates
    // a build turns serde_json's features on for.
    assert_eq!(reply.text(), r#"[{"path":"lib/main.rs","line":7}]"#);
    assert_eq!(reply.meta()["outcome"], "answered");
    assert_eq!(reply.meta()["circuit_state"], "CLOSED");
    // The same guarded method ran: the tool was called once, its success recorded.
    assert_eq!(agent.toolbox().greps.load(Ordering::SeqCst), 1);

    // Optional arguments may be left out; a string value is its own text.
    let reply = call(&agent, "bash", json!({"command": "ls"}));
    assert_eq!(reply.value, Some(json!("ran ls")));
    assert_eq!(reply.text(), "ran ls");

    // `&[String]` and `Vec<u64>` from arrays; a tool without parameters takes `null` or `{}`.
    let reply = call(&agent, "list", json!({"paths": ["a", "b"], "ids": [1]}));
    assert_eq!(reply.value, Some(json!(3)));
    assert_eq!(call(&agent, "now", Value::Null).value, Some(json!(42)));
    assert_eq!(call(&agent, "now", json!({})).value, Some(json!(42)));
}

#[test]
fn b8_r4_call_through_an_alternative_adapter_names_the_route() {
    let agent = agent();
    agent.toolbox().grep_broken.store(true, Ordering::SeqCst);
    for _ in 0..2 {
        assert!(call(&agent, "grep", json!({"pattern": "x"})).is_error());
    }
    let grep = agent.expeditor().tool("grep").unwrap();
    assert_eq!(agent.expeditor().state(grep), Some(CircuitState::Open));

    let reply = call(&agent, "grep", json!({"pattern": "TODO"}));
    assert_eq!(reply.outcome, ReplyOutcome::Answered);
    assert!(!reply.is_error());
    assert_eq!(
        reply.value,
        Some(json!([{"path": "ran rg TODO .", "line": 0}]))
    );
    assert_eq!(
        reply.note.as_deref(),
        Some(
            "grep is unavailable; answered by bash (rg or grep command) — degradation: loses \
             Grep's built-in output formatting. Say so where the result is used."
        )
    );
    let meta = reply.meta();
    assert_eq!(meta["route"], "alternative");
    assert_eq!(meta["routed_to"], "bash");
    assert_eq!(
        meta["degradation"],
        "loses Grep's built-in output formatting"
    );
    assert_eq!(meta["circuit_state"], "OPEN");
    // The adapter ran bash; grep itself was not called again.
    assert_eq!(agent.toolbox().greps.load(Ordering::SeqCst), 2);
    assert_eq!(
        *agent.toolbox().log.lock().unwrap(),
        ["rg TODO .".to_owned()]
    );
    assert_no_retry_invitation(&reply.text());
}

#[test]
fn b8_r3_failing_tool_is_an_error_with_its_message_and_opens_at_threshold() {
    let agent = agent();
    agent.toolbox().bash_broken.store(true, Ordering::SeqCst);
    let bash = agent.expeditor().tool("bash").unwrap();

    let first = call(&agent, "bash", json!({"command": "make"}));
    assert!(first.is_error());
    assert_eq!(
        first.outcome,
        ReplyOutcome::Failed {
            message: "bash: permission denied".to_owned()
        }
    );
    assert_eq!(first.value, None);
    assert_eq!(
        first.note.as_deref(),
        Some(
            "bash failed: bash: permission denied. Do not repeat the same call now; the failure \
             is recorded."
        )
    );
    assert_eq!(first.state, Some(CircuitState::Closed));
    assert_eq!(agent.expeditor().budget().consumed(), 1);

    // Threshold 2: the second failure opens the circuit, and the note says so and what to
    // use instead (B15).
    let second = call(&agent, "bash", json!({"command": "make"}));
    assert!(second.is_error());
    assert_eq!(
        second.note.as_deref(),
        Some(
            "bash failed: bash: permission denied. Its circuit is now OPEN: do not call bash \
             again in this task. Instead, no other tool can do this — report commands that \
             need to be run manually."
        )
    );
    assert_eq!(second.state, Some(CircuitState::Open));
    assert_eq!(second.meta()["outcome"], "failed");
    assert_eq!(agent.expeditor().state(bash), Some(CircuitState::Open));
    assert_eq!(agent.expeditor().budget().consumed(), 2);
    for reply in [&first, &second] {
        assert_no_retry_invitation(&reply.text());
    }
}

#[test]
fn b8_b7_call_refused_while_open_carries_the_model_note() {
    let agent = agent();
    agent.toolbox().bash_broken.store(true, Ordering::SeqCst);
    for _ in 0..2 {
        call(&agent, "bash", json!({"command": "make"}));
    }
    let calls = agent.toolbox().log.lock().unwrap().len();
    let refused = call(&agent, "bash", json!({"command": "make"}));
    assert!(refused.is_error());
    assert_eq!(
        refused.outcome,
        ReplyOutcome::Refused {
            reason: SkipReason::Open
        }
    );
    assert_eq!(
        refused.note.as_deref(),
        Some(
            "bash is unavailable: circuit OPEN after 2 consecutive failures (last error: \
             \"bash: permission denied\"). Do not call bash. Instead: no other tool can do \
             this — report commands that need to be run manually."
        )
    );
    assert_eq!(refused.meta()["refusal"], "open");
    assert_eq!(refused.meta()["route"], "fallback");
    // Nothing was called, nothing charged.
    assert_eq!(agent.toolbox().log.lock().unwrap().len(), calls);
    assert_eq!(agent.expeditor().budget().consumed(), 2);
    assert_no_retry_invitation(&refused.text());
}

#[test]
fn b8_r7_paused_agent_refuses_every_call() {
    let clock = clock();
    let agent = GuardedWorkspace::with_expeditor(Workspace::default(), |b| {
        b.clock(clock)
            .policy(Policy::builder().threshold(5).budget(2).build().unwrap())
    });
    agent.toolbox().bash_broken.store(true, Ordering::SeqCst);
    agent.toolbox().grep_broken.store(true, Ordering::SeqCst);
    call(&agent, "bash", json!({"command": "make"}));
    let last = call(&agent, "grep", json!({"pattern": "x"}));
    assert!(
        last.note
            .as_deref()
            .unwrap()
            .contains("Every tool is now paused")
    );
    assert!(agent.expeditor().paused().is_some());

    let greps = agent.toolbox().greps.load(Ordering::SeqCst);
    let refused = call(&agent, "now", Value::Null);
    assert!(refused.is_error());
    assert!(
        matches!(
            refused.outcome,
            ReplyOutcome::Refused {
                reason: SkipReason::Paused { .. }
            }
        ),
        "{:?}",
        refused.outcome
    );
    assert_eq!(refused.meta()["refusal"], "paused");
    let note = refused.note.clone().unwrap();
    assert!(note.contains("paused"), "{note}");
    assert_no_retry_invitation(&note);
    assert_eq!(agent.toolbox().greps.load(Ordering::SeqCst), greps);
    // While paused nothing is offered.
    assert!(agent.offered().is_empty());
    assert_eq!(agent.definitions().len(), 4);
}

#[test]
fn b8_r10_offer_shrinks_when_a_circuit_opens_and_grows_back_after_a_probe() {
    let agent = agent();
    assert_eq!(names(&agent.offered()), ["grep", "bash", "list", "now"]);
    agent.toolbox().bash_broken.store(true, Ordering::SeqCst);
    for _ in 0..2 {
        call(&agent, "bash", json!({"command": "make"}));
    }
    assert_eq!(names(&agent.offered()), ["grep", "list", "now"]);

    // Fixed; probe_every = 2 attempts: the next attempt is refused, the one after probes,
    // and the probe's success closes the circuit.
    agent.toolbox().bash_broken.store(false, Ordering::SeqCst);
    let refused = call(&agent, "bash", json!({"command": "make"}));
    assert!(matches!(refused.outcome, ReplyOutcome::Refused { .. }));
    let probe = call(&agent, "bash", json!({"command": "make"}));
    assert_eq!(probe.outcome, ReplyOutcome::Answered, "{:?}", probe.note);
    assert_eq!(probe.state, Some(CircuitState::Closed));
    assert_eq!(names(&agent.offered()), ["grep", "bash", "list", "now"]);
}

#[test]
fn b8_model_mistakes_are_answered_and_never_charged() {
    let agent = agent();
    // A failure first, so the budget is not empty and the breakers not pristine.
    agent.toolbox().bash_broken.store(true, Ordering::SeqCst);
    call(&agent, "bash", json!({"command": "make"}));
    let before = charged(&agent);

    let unknown = call(&agent, "gerp", json!({"pattern": "x"}));
    assert!(unknown.is_error());
    assert_eq!(
        unknown.note.as_deref(),
        Some(
            "There is no tool named \"gerp\". Did you mean \"grep\"? Tools you may call: grep, \
             bash, list, now."
        )
    );
    assert!(matches!(
        &unknown.outcome,
        ReplyOutcome::Mistake(ModelMistake::UnknownTool { suggestion: Some(s), .. }) if s == "grep"
    ));
    assert_eq!(unknown.state, None);
    assert_eq!(unknown.meta()["outcome"], "model_mistake");

    let far = call(&agent, "delete_everything", Value::Null);
    assert_eq!(
        far.note.as_deref(),
        Some(
            "There is no tool named \"delete_everything\". Tools you may call: grep, bash, \
             list, now."
        )
    );

    let greps = agent.toolbox().greps.load(Ordering::SeqCst);
    let missing = call(&agent, "grep", json!({"under": "src"}));
    assert_eq!(
        missing.note.as_deref(),
        Some(
            "The arguments for grep do not fit its schema: missing field `pattern`. Nothing was \
             called; fix the arguments to match the tool's input schema."
        )
    );
    assert_eq!(missing.state, Some(CircuitState::Closed));
    let wrong_type = call(&agent, "grep", json!({"pattern": 3}));
    assert!(
        wrong_type
            .note
            .as_deref()
            .unwrap()
            .contains("invalid type: integer `3`, expected a string"),
        "{:?}",
        wrong_type.note
    );
    let unknown_field = call(&agent, "grep", json!({"pattern": "x", "regex": true}));
    assert!(
        unknown_field
            .note
            .as_deref()
            .unwrap()
            .contains("unknown field `regex`"),
        "{:?}",
        unknown_field.note
    );
    let not_an_object = call(&agent, "bash", json!("ls"));
    assert!(matches!(
        not_an_object.outcome,
        ReplyOutcome::Mistake(ModelMistake::BadArguments { .. })
    ));
    // A tool without parameters still says when it is sent some it does not take.
    assert!(call(&agent, "now", json!({"at": 1})).is_error());

    for reply in [&unknown, &far, &missing, &wrong_type, &unknown_field] {
        assert!(reply.is_error());
        assert_no_retry_invitation(&reply.text());
    }
    // Nothing was called or charged: no tool, no breaker, no budget, no step.
    assert_eq!(agent.toolbox().greps.load(Ordering::SeqCst), greps);
    assert_eq!(agent.toolbox().log.lock().unwrap().len(), 1);
    assert_eq!(charged(&agent), before);
    // Counted on a line of their own.
    assert_golden(
        "b8_state_table_model_mistakes.txt",
        &agent.expeditor().state_table().to_string(),
    );
}

/// An async toolbox: `dispatch` awaits the guarded `async fn` inside the boxed future.
pub struct Web {
    down: AtomicBool,
}

#[toolbox(json, policy(threshold = 1))]
impl Web {
    /// Searches the web.
    #[tool(
        provides = "external information retrieval",
        alternatives(fetch(method = "fetch a known page", degradation = high("only pages we already know"), via = search_by_fetching)),
        fallback = "state what information is needed; ask user to provide it"
    )]
    async fn web_search(
        &self,
        /// What to search for.
        query: String,
    ) -> std::io::Result<Vec<String>> {
        YieldOnce(false).await;
        if self.down.load(Ordering::SeqCst) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionRefused,
                "connection refused",
            ));
        }
        Ok(vec![format!("result for {query}")])
    }

    async fn search_by_fetching(&self, query: String) -> std::io::Result<Vec<String>> {
        self.fetch(&query, None).await.map(|page| vec![page])
    }

    #[tool(
        provides = "page retrieval",
        fallback = "ask the user to paste the page"
    )]
    async fn fetch(&self, url: &str, path: Option<&std::path::Path>) -> std::io::Result<String> {
        YieldOnce(false).await;
        Ok(format!(
            "page {url}{}",
            path.map(|p| p.display().to_string()).unwrap_or_default()
        ))
    }

    #[tool(provides = "the time", fallback = "ask the user for the time")]
    fn now(&self) -> std::io::Result<u64> {
        Ok(7)
    }
}

#[test]
fn b8_async_toolbox_is_dispatched() {
    fn shared(_: &(impl ToolDispatch + 'static)) {}
    let agent = GuardedWeb::new(Web {
        down: AtomicBool::new(false),
    });
    shared(&agent);
    assert_eq!(names(&agent.definitions()), ["web_search", "fetch", "now"]);
    let schema = Value::Object(agent.definitions()[1].input_schema.clone());
    assert_eq!(schema["required"], json!(["url"]));

    let reply = call(&agent, "web_search", json!({"query": "rust"}));
    assert_eq!(reply.value, Some(json!(["result for rust"])));
    let reply = call(&agent, "fetch", json!({"url": "a/", "path": "b.txt"}));
    assert_eq!(reply.value, Some(json!("page a/b.txt")));
    assert_eq!(call(&agent, "now", Value::Null).value, Some(json!(7)));

    // The future is `Send`: it can be spawned on another thread's executor.
    let future = agent.dispatch("fetch", json!({"url": "x"}));
    let reply = std::thread::scope(|s| s.spawn(|| block_on(future)).join().unwrap());
    assert_eq!(reply.value, Some(json!("page x")));

    // Failure opens (threshold 1), and the next call is answered through the adapter.
    agent.toolbox().down.store(true, Ordering::SeqCst);
    let failed = call(&agent, "web_search", json!({"query": "rust"}));
    assert!(
        failed
            .note
            .as_deref()
            .unwrap()
            .contains("connection refused")
    );
    let routed = call(&agent, "web_search", json!({"query": "rust"}));
    assert_eq!(routed.value, Some(json!(["page rust"])));
    assert_eq!(routed.meta()["routed_to"], "fetch");
    assert_eq!(routed.meta()["severity"], "high");
    assert!(call(&agent, "fetch", json!({})).is_error());
}

/// B8: a toolbox whose tools are all sync has a plain `call(name, arguments) -> Reply`
/// on its handle, no future to poll; it is the path `dispatch` takes, and it is guarded the
/// same way (the failure is recorded, the model's mistake counted and not charged).
#[test]
fn b8_sync_toolbox_call_answers_at_once_on_the_guarded_path() {
    let agent = agent();
    let reply: Reply = agent.call("now", Value::Null);
    assert_eq!(reply.value, Some(json!(42)));
    assert_eq!(reply, call(&agent, "now", Value::Null));

    let mistake = agent.call("nwo", Value::Null);
    assert!(mistake.is_error());
    assert!(
        mistake.text().contains("Did you mean \"now\"?"),
        "{}",
        mistake.text()
    );
    assert_eq!(agent.expeditor().budget().status().consumed, 0);
    assert!(
        agent
            .expeditor()
            .state_table()
            .to_string()
            .contains("Model mistakes: 1 (1 unknown tool)")
    );
}

/// B8: a toolbox with an async tool has `async fn call`, the same guarded path.
#[test]
fn b8_async_toolbox_call_awaits_the_guarded_path() {
    let agent = GuardedWeb::new(Web {
        down: AtomicBool::new(false),
    });
    let reply = block_on(agent.call("now", Value::Null));
    assert_eq!(reply.value, Some(json!(7)));
    let reply = block_on(agent.call("fetch", json!({"url": "x"})));
    assert_eq!(reply.value, Some(json!("page x")));
}
