//! A small agent over real tools in a temporary workspace, driven by the expeditor.
//!
//! `cargo run --example agent -- --break bash` breaks the shell (its PATH is emptied, so every
//! command fails with "command not found"); the agent notices, stops calling Bash, and reports.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::{env, fs, io};

use circuit_breaker::{
    AlternativeSpec, CapabilityMap, Decision, Degradation, Expeditor, Failure, Route, Task, ToolId,
    ToolSpec,
};

/// The seed's capability map, Edit included.
fn capability_map() -> CapabilityMap {
    CapabilityMap::new()
        .tool(
            ToolSpec::new("Grep")
                .provides("content search across files")
                .alternative(
                    AlternativeSpec::new("Bash")
                        .method("rg or grep command")
                        .degradation(Degradation::low("loses Grep's built-in output formatting")),
                )
                .alternative(
                    AlternativeSpec::new("Read")
                        .method("read suspected files directly")
                        .degradation(Degradation::high(
                            "requires knowing which files to check; no broad search",
                        )),
                )
                .fallback("ask the user which files to examine"),
        )
        .tool(
            ToolSpec::new("Bash")
                .provides("command execution, build tools, git operations")
                .fallback("report commands that need to be run manually"),
        )
        .tool(
            ToolSpec::new("Read")
                .provides("file content inspection")
                .alternative(
                    AlternativeSpec::new("Bash")
                        .method("cat or head command")
                        .degradation(Degradation::low(
                            "loses line numbering and truncation safety",
                        )),
                )
                .fallback("ask the user to paste file contents"),
        )
        .tool(
            ToolSpec::new("Edit")
                .provides("in-place file modification")
                .fallback("describe the edit for the user to apply"),
        )
}

struct Workspace {
    root: PathBuf,
    bash_broken: bool,
}

impl Workspace {
    fn read(&self, name: &str) -> io::Result<String> {
        fs::read_to_string(self.root.join(name))
    }

    fn grep(&self, needle: &str) -> io::Result<Vec<String>> {
        let mut hits = Vec::new();
        for entry in fs::read_dir(&self.root)? {
            let path = entry?.path();
            if path.is_file() && fs::read_to_string(&path)?.contains(needle) {
                hits.push(file_name(&path));
            }
        }
        hits.sort();
        Ok(hits)
    }

    fn bash(&self, script: &str) -> Result<String, Failure> {
        let mut command = Command::new("/bin/sh");
        command.arg("-c").arg(script).current_dir(&self.root);
        if self.bash_broken {
            command.env("PATH", "");
        }
        let out = command.output().map_err(Failure::from)?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            let err = String::from_utf8_lossy(&out.stderr);
            let line = err.lines().last().unwrap_or("command failed").to_owned();
            Err(Failure::new(line))
        }
    }

    fn edit(&self, name: &str, from: &str, to: &str) -> io::Result<()> {
        let path = self.root.join(name);
        let text = fs::read_to_string(&path)?;
        fs::write(path, text.replace(from, to))
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Calls one tool through the expeditor; prints every decision that is not a plain CALL.
fn run<T>(
    expeditor: &Expeditor,
    tool: ToolId,
    call: impl FnOnce() -> Result<T, Failure>,
) -> Option<T> {
    let name = expeditor.tool_name(tool).unwrap_or("?").to_owned();
    match expeditor.decide(tool) {
        Decision::Call(ticket) | Decision::Probe(ticket) => {
            if ticket.is_probe() {
                println!("PROBE {name}");
            }
            match call() {
                Ok(value) => {
                    ticket.success();
                    Some(value)
                }
                Err(failure) => {
                    println!("FAILED {name}: {failure}");
                    let recorded = ticket.failure(failure);
                    if recorded.opened {
                        println!(
                            "Circuit OPENED for {name}: {} consecutive failures",
                            recorded.consecutive_failures
                        );
                    }
                    println!("Status: {}", recorded.budget);
                    None
                }
            }
        }
        Decision::Skip(skip) => {
            println!("SKIP {name}\n  {}", skip.for_model());
            if let Route::Alternative(alt) = skip.route() {
                println!("  route: {} ({})", alt.name(), alt.degradation());
            }
            None
        }
        Decision::Pause(pause) => {
            println!("PAUSE\n  {}", pause.for_model());
            None
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bash_broken = env::args()
        .skip(1)
        .collect::<Vec<_>>()
        .windows(2)
        .any(|w| w == ["--break", "bash"]);
    let root = env::temp_dir().join(format!("circuit-breaker-agent-{}", std::process::id()));
    fs::create_dir_all(&root)?;
    fs::write(
        root.join("config.toml"),
        "api = \"v1\"\nlegacy_mode = true\n",
    )?;
    fs::write(root.join("README.md"), "Use the v1 API.\n")?;
    let ws = Workspace {
        root: root.clone(),
        bash_broken,
    };

    let expeditor = Expeditor::new(capability_map())?;
    println!("{}\n", expeditor.capability_map());
    let id = |name: &str| {
        expeditor
            .tool(name)
            .ok_or_else(|| format!("no tool {name}"))
    };
    let (read, grep, bash, edit) = (id("Read")?, id("Grep")?, id("Bash")?, id("Edit")?);

    let mut task = Task::new()
        .subtask("Read configuration files", ["Read"])
        .subtask("Search for deprecated patterns", ["Grep"])
        .subtask("Run test suite", ["Bash"])
        .subtask("Update documentation", ["Edit"])
        .subtask("Deploy to staging", ["Bash"]);

    expeditor.advance_step();
    if run(&expeditor, read, || {
        ws.read("config.toml").map_err(Failure::from)
    })
    .is_some()
    {
        task.done(1)?;
    }
    expeditor.advance_step();
    if let Some(hits) = run(&expeditor, grep, || {
        ws.grep("legacy_mode").map_err(Failure::from)
    }) {
        println!("deprecated pattern in: {hits:?}");
        task.done(2)?;
    }
    expeditor.advance_step();
    let mut tests_ok = true;
    for script in [
        "test -f config.toml",
        "grep -q api config.toml",
        "cat README.md",
    ] {
        tests_ok &= run(&expeditor, bash, || ws.bash(script)).is_some();
    }
    if tests_ok {
        task.done(3)?;
    } else {
        task.failed(3, "Bash circuit OPEN")?;
    }
    expeditor.advance_step();
    if run(&expeditor, edit, || {
        ws.edit("README.md", "v1", "v2").map_err(Failure::from)
    })
    .is_some()
    {
        task.done(4)?;
    }
    expeditor.advance_step();
    if run(&expeditor, bash, || {
        ws.bash("mkdir -p staging && cp config.toml staging/")
    })
    .is_some()
    {
        task.done(5)?;
    } else {
        task.failed(5, "Bash circuit OPEN")?;
    }

    println!("\n{}\n", expeditor.state_table());
    println!("{}", expeditor.pause_report(&task));
    fs::remove_dir_all(root)?;
    Ok(())
}
