//! B9: the example MCP servers `mcp_files` and `mcp_web` (`examples/mcp_files`,
//! `examples/mcp_web`), each spawned as a child process and driven over stdio with rmcp's
//! client, as an agent spawns them.
//!
//! Asserted: the server's name, `tools/list` (names, descriptions, schemas), one call of each
//! tool with its exact value, a path leaving the root refused as an `isError` result, and
//! `--break TOOL`: three failures open the tool's circuit (`circuit_state` OPEN in `_meta`),
//! it leaves the list, and a call anyway is answered through its alternative. Bad arguments
//! print the usage and exit with 2.

#![cfg(feature = "mcp")]

#[path = "../common/examples.rs"]
mod examples;
#[path = "../common/mcp_client.rs"]
#[allow(
    dead_code,
    reason = "shared by the MCP tests; not every helper is used in each"
)]
mod mcp_client;

use std::path::PathBuf;

use examples::example_binary;
use mcp_client::{Client, Watcher, call, list_changed, meta, text};
use std::process::{Command, Stdio};

use agent_circuit_breaker::mcp::rmcp;
use rmcp::ServiceExt as _;
use rmcp::model::{CallToolResult, Tool};
use rmcp::transport::TokioChildProcess;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

/// The example `name` spawned with `args`, initialized, with the server name checked.
async fn spawn(name: &str, server: &str, args: &[&str]) -> (Client, UnboundedReceiver<()>) {
    let mut command = tokio::process::Command::new(example_binary(name));
    command.args(args);
    let transport = TokioChildProcess::new(command).expect("spawn the example");
    let (tx, changes) = unbounded_channel();
    let client = Watcher(tx).serve(transport).await.expect("initialize");
    let info = client.peer_info().expect("initialized");
    assert_eq!(
        info.server_info.as_ref().map(|s| s.name.as_str()),
        Some(server)
    );
    assert_eq!(
        info.capabilities
            .tools
            .as_ref()
            .and_then(|tools| tools.list_changed),
        Some(true)
    );
    (client, changes)
}

/// An answer: not an error, answered, CLOSED, no route; its text.
fn answered(result: &CallToolResult) -> &str {
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(meta(result, "outcome"), Some("answered"));
    assert_eq!(meta(result, "circuit_state"), Some("CLOSED"));
    assert_eq!(meta(result, "route"), None);
    text(result)
}

async fn tools(client: &Client) -> Vec<Tool> {
    client.list_all_tools().await.expect("tools/list")
}

async fn listed(client: &Client) -> Vec<String> {
    tools(client)
        .await
        .into_iter()
        .map(|t| t.name.into_owned())
        .collect()
}

/// The tools as `[{ name, description, params: { parameter: its description } }]`.
fn described(tools: &[Tool]) -> Value {
    tools
        .iter()
        .map(|tool| {
            let params: Map<String, Value> = tool.input_schema["properties"]
                .as_object()
                .expect("properties")
                .iter()
                .map(|(name, p)| (name.clone(), p["description"].clone()))
                .collect();
            json!({ "name": tool.name, "description": tool.description, "params": params })
        })
        .collect()
}

/// The note of a failure that opened `tool`'s circuit: the failure, then until when the tool
/// is left alone (a server heals with time, B15: the instant is the run's own) and what to
/// use instead.
fn assert_opened(note: &str, failure: &str, tool: &str) {
    let head = format!("{failure} Its circuit is now OPEN: do not call {tool} before ");
    assert!(note.starts_with(&head), "{note}");
    assert!(
        note.contains(", when it is offered again on probation. Instead, "),
        "{note}"
    );
}

/// `tool` fails three times with `error` (the note's text); the third opens its circuit.
async fn fail_three_times(client: &Client, tool: &'static str, arguments: &Value, error: &str) {
    for attempt in 1..=3 {
        let failed = call(client, tool, arguments.clone()).await;
        assert_eq!(failed.is_error, Some(true), "{failed:?}");
        assert_eq!(meta(&failed, "outcome"), Some("failed"));
        if attempt == 3 {
            assert_opened(text(&failed), &format!("{tool} failed: {error}."), tool);
            assert_eq!(meta(&failed, "circuit_state"), Some("OPEN"));
        } else {
            assert_eq!(
                text(&failed),
                format!(
                    "{tool} failed: {error}. Do not repeat the same call now; the failure is \
                     recorded."
                )
            );
            assert_eq!(meta(&failed, "circuit_state"), Some("CLOSED"));
        }
    }
}

// ---------------------------------------------------------------------------------------
// mcp_files

/// A directory of a few files under the system's temporary directory, removed on drop:
/// `<dir>/root` is the root served, `<dir>/secret.txt` lies outside it.
struct TempRoot(PathBuf);

impl TempRoot {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "circuit-breaker-b9-files-{}-{test}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let root = dir.join("root");
        for sub in ["docs", "src"] {
            std::fs::create_dir_all(root.join(sub)).expect("create the temp dirs");
        }
        let write = |path: &str, text: &str| std::fs::write(dir.join(path), text).expect("write");
        write("secret.txt", "not for the model\n");
        write(
            "root/README.md",
            "# inventory-api\n\nRunbooks are in docs/.\n",
        );
        write(
            "root/docs/deploy.md",
            "Deploy with ./deploy.sh staging.\nRoll back with ./deploy.sh --undo.\n",
        );
        write(
            "root/docs/oncall.md",
            "Page the on-call engineer via #inventory-incidents.\n",
        );
        write("root/src/main.rs", "fn main() {\n    deploy();\n}\n");
        TempRoot(dir)
    }

    fn root(&self) -> String {
        self.0
            .join("root")
            .to_str()
            .expect("a UTF-8 path")
            .to_owned()
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.0.join(relative)
    }
}

impl Drop for TempRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const SEARCH_DEPLOY: &str = r#"["docs/deploy.md:1: Deploy with ./deploy.sh staging.","docs/deploy.md:2: Roll back with ./deploy.sh --undo.","src/main.rs:2:     deploy();"]"#;

#[tokio::test]
async fn files_lists_its_tools_with_descriptions_and_schemas() {
    let dir = TempRoot::new("list");
    let (client, _changes) = spawn("mcp_files", "files", &["--root", &dir.root()]).await;
    let tools = tools(&client).await;
    assert_eq!(
        described(&tools),
        json!([
            {
                "name": "read_file",
                "description": "file content inspection\n\nAnswers the text of the file at \
                                `path`, relative to the root.",
                "params": {
                    "path": "the file's path, relative to the root (for example `docs/deploy.md`)",
                },
            },
            {
                "name": "list_dir",
                "description": "directory listing\n\nAnswers the sorted entry names of the \
                                directory at `path`; directories end with `/`.",
                "params": {
                    "path": "the directory's path, relative to the root (`.` for the root itself)",
                },
            },
            {
                "name": "search_files",
                "description": "content search across files\n\nAnswers the lines containing \
                                `pattern` in the files under the root: `path:line: text`.",
                "params": {
                    "pattern": "the text to look for (case-sensitive, matched anywhere in a line)",
                },
            },
        ])
    );
    assert_eq!(
        Value::Object((*tools[0].input_schema).clone()),
        json!({
            "type": "object",
            "properties": { "path": {
                "type": "string",
                "description": "the file's path, relative to the root (for example `docs/deploy.md`)",
            } },
            "required": ["path"],
            "additionalProperties": false,
        })
    );
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn files_answers_each_tool_with_its_exact_value() {
    let dir = TempRoot::new("calls");
    let (client, _changes) = spawn("mcp_files", "files", &["--root", &dir.root()]).await;

    let read = call(&client, "read_file", json!({ "path": "docs/deploy.md" })).await;
    assert_eq!(
        answered(&read),
        "Deploy with ./deploy.sh staging.\nRoll back with ./deploy.sh --undo.\n"
    );

    let listed = call(&client, "list_dir", json!({ "path": "." })).await;
    assert_eq!(answered(&listed), r#"["README.md","docs/","src/"]"#);
    let listed = call(&client, "list_dir", json!({ "path": "docs" })).await;
    assert_eq!(answered(&listed), r#"["deploy.md","oncall.md"]"#);

    let found = call(&client, "search_files", json!({ "pattern": "deploy" })).await;
    assert_eq!(answered(&found), SEARCH_DEPLOY);
    let none = call(&client, "search_files", json!({ "pattern": "nowhere" })).await;
    assert_eq!(answered(&none), "[]");

    // A path that does not exist: NotFound, the tool's own answer.
    let missing = call(&client, "read_file", json!({ "path": "docs/nope.md" })).await;
    assert_eq!(missing.is_error, Some(true));
    assert_eq!(
        text(&missing),
        "read_file failed: no file or directory docs/nope.md under the root. Do not repeat the \
         same call now; the failure is recorded."
    );
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn files_refuses_a_path_escaping_the_root() {
    let dir = TempRoot::new("escape");
    let (client, _changes) = spawn("mcp_files", "files", &["--root", &dir.root()]).await;
    let secret = dir.path("secret.txt");
    let absolute = secret.to_str().expect("UTF-8").to_owned();
    for (attempt, path) in ["../secret.txt", absolute.as_str(), "docs/../../secret.txt"]
        .into_iter()
        .enumerate()
    {
        let refused = call(&client, "read_file", json!({ "path": path })).await;
        assert_eq!(refused.is_error, Some(true), "{path}: {refused:?}");
        assert_eq!(meta(&refused, "outcome"), Some("failed"));
        let failure = format!(
            "read_file failed: {path} escapes the root: give a path relative to it, without `..`."
        );
        if attempt == 2 {
            assert_opened(text(&refused), &failure, "read_file");
        } else {
            assert_eq!(
                text(&refused),
                format!("{failure} Do not repeat the same call now; the failure is recorded.")
            );
        }
        assert!(!text(&refused).contains("not for the model"));
    }
    let escaped = call(&client, "list_dir", json!({ "path": ".." })).await;
    assert_eq!(escaped.is_error, Some(true));
    assert!(
        text(&escaped).contains(".. escapes the root"),
        "{escaped:?}"
    );
    client.cancel().await.expect("close");
}

/// A symbolic link under the root pointing out of it is refused too.
#[cfg(unix)]
#[tokio::test]
async fn files_refuses_a_symlink_out_of_the_root() {
    let dir = TempRoot::new("symlink");
    std::os::unix::fs::symlink(dir.path("secret.txt"), dir.path("root/docs/secret.txt"))
        .expect("symlink");
    let (client, _changes) = spawn("mcp_files", "files", &["--root", &dir.root()]).await;
    let refused = call(&client, "read_file", json!({ "path": "docs/secret.txt" })).await;
    assert_eq!(refused.is_error, Some(true));
    assert!(
        text(&refused).starts_with("read_file failed: docs/secret.txt escapes the root"),
        "{refused:?}"
    );
    // Not followed by search_files either.
    let found = call(&client, "search_files", json!({ "pattern": "model" })).await;
    assert_eq!(answered(&found), "[]");
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn files_broken_search_opens_and_is_answered_through_read_file() {
    let dir = TempRoot::new("break");
    let (client, mut changes) = spawn(
        "mcp_files",
        "files",
        &["--root", &dir.root(), "--break", "search_files"],
    )
    .await;
    assert_eq!(
        listed(&client).await,
        ["read_file", "list_dir", "search_files"]
    );
    let pattern = json!({ "pattern": "deploy" });
    fail_three_times(
        &client,
        "search_files",
        &pattern,
        "search_files: permission denied by the file server",
    )
    .await;
    list_changed(&mut changes).await;
    assert_eq!(listed(&client).await, ["read_file", "list_dir"]);

    let routed = call(&client, "search_files", pattern).await;
    assert_eq!(routed.is_error, Some(false), "{routed:?}");
    assert_eq!(
        text(&routed),
        format!(
            "{SEARCH_DEPLOY}\n\nsearch_files is unavailable; answered by read_file (read every \
             file under the root and look for the pattern) — degradation: no search service: \
             every file is read in full, one read_file each. Say so where the result is used."
        )
    );
    assert_eq!(meta(&routed, "outcome"), Some("answered"));
    assert_eq!(meta(&routed, "route"), Some("alternative"));
    assert_eq!(meta(&routed, "routed_to"), Some("read_file"));
    assert_eq!(
        meta(&routed, "degradation"),
        Some("no search service: every file is read in full, one read_file each")
    );
    assert_eq!(meta(&routed, "circuit_state"), Some("OPEN"));

    // The other tools are untouched.
    let read = call(&client, "read_file", json!({ "path": "README.md" })).await;
    assert_eq!(
        answered(&read),
        "# inventory-api\n\nRunbooks are in docs/.\n"
    );
    client.cancel().await.expect("close");
}

// ---------------------------------------------------------------------------------------
// mcp_web

const SEARCH_RATE_LIMITS: &str = r#"[{"url":"https://docs.inventory-api.example/rate-limits","title":"Rate limits","snippet":"inventory-api rate limits every API key to 600 requests per minute."},{"url":"https://docs.inventory-api.example/changelog","title":"inventory-api changelog","snippet":"2.4.0: rate limits per API key instead of per client address."}]"#;

#[tokio::test]
async fn web_lists_its_tools_with_descriptions_and_schemas() {
    let (client, _changes) = spawn("mcp_web", "web", &[]).await;
    assert_eq!(
        described(&tools(&client).await),
        json!([
            {
                "name": "web_search",
                "description": "web search\n\nAnswers the pages with the words of `query`, most \
                                matches first: url, title, snippet.",
                "params": { "query": "the words to look for (case-insensitive)" },
            },
            {
                "name": "fetch_page",
                "description": "web page content\n\nAnswers the text of the page at `url`: its \
                                title, a blank line, then its text.",
                "params": { "url": "the page's address, as web_search answers it" },
            },
        ])
    );
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn web_answers_each_tool_with_its_exact_value() {
    let (client, _changes) = spawn("mcp_web", "web", &[]).await;
    let found = call(&client, "web_search", json!({ "query": "Rate LIMITS" })).await;
    assert_eq!(answered(&found), SEARCH_RATE_LIMITS);
    let none = call(&client, "web_search", json!({ "query": "kubernetes" })).await;
    assert_eq!(answered(&none), "[]");

    let page = call(
        &client,
        "fetch_page",
        json!({ "url": "https://docs.inventory-api.example/on-call" }),
    )
    .await;
    assert_eq!(
        answered(&page),
        "On-call for inventory-api\n\nThe on-call engineer for inventory-api is paged through \
         the #inventory-incidents channel. The rota changes every Monday at 10:00 and is kept in \
         the team calendar. During an incident, roll back the last deploy first and investigate \
         afterwards."
    );

    let missing = call(
        &client,
        "fetch_page",
        json!({ "url": "https://docs.inventory-api.example/nope" }),
    )
    .await;
    assert_eq!(missing.is_error, Some(true));
    assert_eq!(
        text(&missing),
        "fetch_page failed: no page at https://docs.inventory-api.example/nope. Do not repeat \
         the same call now; the failure is recorded."
    );
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn web_broken_search_opens_and_is_answered_through_fetch_page() {
    let (client, mut changes) = spawn("mcp_web", "web", &["--break", "web_search"]).await;
    let query = json!({ "query": "rate limits" });
    fail_three_times(
        &client,
        "web_search",
        &query,
        "web_search: upstream refused the connection",
    )
    .await;
    list_changed(&mut changes).await;
    assert_eq!(listed(&client).await, ["fetch_page"]);

    let routed = call(&client, "web_search", query).await;
    assert_eq!(routed.is_error, Some(false), "{routed:?}");
    assert_eq!(
        text(&routed),
        format!(
            "{SEARCH_RATE_LIMITS}\n\nweb_search is unavailable; answered by fetch_page (fetch \
             every page of the site and look for the words) — degradation: no search index: \
             every page of the site is fetched in full. Say so where the result is used."
        )
    );
    assert_eq!(meta(&routed, "route"), Some("alternative"));
    assert_eq!(meta(&routed, "routed_to"), Some("fetch_page"));
    assert_eq!(
        meta(&routed, "degradation"),
        Some("no search index: every page of the site is fetched in full")
    );
    assert_eq!(meta(&routed, "circuit_state"), Some("OPEN"));
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn web_fail_calls_mends_a_broken_tool() {
    let (client, _changes) = spawn(
        "mcp_web",
        "web",
        &["--break", "fetch_page", "--fail-calls", "1"],
    )
    .await;
    let url = json!({ "url": "https://docs.inventory-api.example/api-keys" });
    let failed = call(&client, "fetch_page", url.clone()).await;
    assert_eq!(failed.is_error, Some(true));
    assert_eq!(
        text(&failed),
        "fetch_page failed: fetch_page: upstream refused the connection. Do not repeat the same \
         call now; the failure is recorded."
    );
    let page = call(&client, "fetch_page", url).await;
    assert!(answered(&page).starts_with("API keys\n\n"), "{page:?}");
    client.cancel().await.expect("close");
}

// ---------------------------------------------------------------------------------------
// Bad arguments

/// Runs the example with `args` and no stdin: its exit code and standard error.
fn run(name: &str, args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(example_binary(name))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run the example");
    assert!(
        output.stdout.is_empty(),
        "nothing but the protocol on stdout"
    );
    (
        output.status.code(),
        String::from_utf8(output.stderr).expect("UTF-8"),
    )
}

#[test]
fn bad_arguments_print_the_usage_and_exit_with_2() {
    let dir = TempRoot::new("args");
    let root = dir.root();
    let nowhere = dir.path("nowhere");
    let nowhere = nowhere.to_str().expect("UTF-8");
    let cases: [(&str, &[&str], &str); 8] = [
        ("mcp_files", &[], "mcp_files: --root DIR is required"),
        (
            "mcp_files",
            &["--root"],
            "mcp_files: --root needs a directory",
        ),
        ("mcp_files", &["--root", nowhere], "mcp_files: --root "),
        (
            "mcp_files",
            &["--root", &root, "--break", "grep"],
            "mcp_files: --break grep: no such tool",
        ),
        (
            "mcp_files",
            &["--root", &root, "--fail-calls", "x"],
            "mcp_files: --fail-calls x: ",
        ),
        (
            "mcp_web",
            &["--break"],
            "mcp_web: --break needs a tool name",
        ),
        (
            "mcp_web",
            &["--break", "read_file"],
            "mcp_web: --break read_file: no such tool",
        ),
        (
            "mcp_web",
            &["--root", "."],
            "mcp_web: unknown argument --root",
        ),
    ];
    for (name, args, first) in cases {
        let (code, stderr) = run(name, args);
        assert_eq!(code, Some(2), "{name} {args:?}: {stderr}");
        assert!(stderr.starts_with(first), "{name} {args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("\nusage: {name} ")),
            "{name} {args:?}: {stderr}"
        );
    }
    for name in ["mcp_files", "mcp_web"] {
        let (code, stderr) = run(name, &["--help"]);
        assert_eq!(code, Some(0));
        assert!(stderr.starts_with(&format!("usage: {name} ")), "{stderr}");
    }
}
