//! The agent's tools: a `#[toolbox]` of real implementations over a real temporary workspace.
//!
//! - Read, Write, Edit: files of the workspace (Write is atomic: a temporary file renamed).
//! - Grep: a regex search over the tree, with the `regex` crate.
//! - Bash: `/bin/sh -c` as a child process in the workspace, killed after a 1 s timeout.
//! - WebSearch: HTTP/1.1 to the local search server.
//!
//! The alternatives of the source document's capability map are real adapters: Grep through a `grep`
//! command run by Bash, or by reading the files the README links; Read through `cat`; Write
//! through an Edit of an existing file or a shell heredoc; Edit through a Write of the whole
//! file.

use std::cell::{Cell, RefCell};
use std::fs::{self, File};
use std::io;
use std::net::SocketAddr;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agent_circuit_breaker::toolbox;
use regex::Regex;

use crate::faults::{Faults, XorShift};
use crate::search_server::{self, SearchHit};

/// How long a shell command may run before it is killed.
pub const BASH_TIMEOUT: Duration = Duration::from_secs(1);

/// PATH for a healthy shell.
const HEALTHY_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The project the agent works on: an inventory service whose docs still recommend APIs that
/// its upstream client deprecated. Paths are relative to the workspace.
pub const PROJECT: [(&str, &str); 11] = [
    (
        "README.md",
        "# inventory-api

A small service that lists the items of an inventory.

## Documentation

- [API reference](docs/api.md)
- [Guide](docs/guide.md)
- [FAQ](docs/faq.md)

## Development

    ./run_tests.sh --unit
    ./run_tests.sh --integration
    ./deploy.sh ../staging
",
    ),
    (
        "config/app.toml",
        "# inventory-api configuration
[service]
name = \"inventory-api\"
version = \"2.4.0\"
port = 8080

[upstream]
url = \"https://inventory.internal/api\"
timeout_secs = 30
",
    ),
    (
        "config/deprecations.toml",
        "# APIs of the upstream client deprecated in 2.0 and removed in 3.0.
# The docs must stop recommending them before the upgrade.

[[deprecated]]
old = \"legacy_connect(\"
new = \"connect(\"

[[deprecated]]
old = \"fetch_all_v1(\"
new = \"fetch_all(\"

[[deprecated]]
old = \"X-Old-Auth\"
new = \"Authorization\"
",
    ),
    (
        "src/client.py",
        "\"\"\"Client for the upstream inventory service.\"\"\"

import urllib.request

AUTH_HEADER = \"X-Old-Auth\"


def legacy_connect(url):
    return urllib.request.Request(url, headers={AUTH_HEADER: \"token\"})


def fetch_all_v1(conn, collection):
    with urllib.request.urlopen(conn.full_url + \"/\" + collection) as response:
        return response.read()
",
    ),
    (
        "src/inventory.py",
        "\"\"\"Lists the items of the inventory.\"\"\"

from client import fetch_all_v1, legacy_connect


def list_items(url):
    conn = legacy_connect(url)
    return fetch_all_v1(conn, \"items\")
",
    ),
    (
        "docs/api.md",
        "# API reference

## Connecting

Open a connection with `legacy_connect(url)`; it returns a request object.

## Listing items

`fetch_all_v1(conn, \"items\")` returns every item at once.

## Authentication

Every request carries the `X-Old-Auth` header with your token.
",
    ),
    (
        "docs/guide.md",
        "# Guide

1. Connect: `conn = legacy_connect(\"https://inventory.internal/api\")`
2. List the items: `items = fetch_all_v1(conn, \"items\")`
3. Print them.
",
    ),
    (
        "docs/faq.md",
        "# FAQ

**Why is my request rejected with 401?** The `X-Old-Auth` header is missing or its token
has expired.

**Which Python versions are supported?** 3.9 and later.
",
    ),
    (
        "run_tests.sh",
        "#!/bin/sh
# The project's test suite: ./run_tests.sh --unit | --integration
set -u
passed=0
failed=0
check() {
    if eval \"$2\" >/dev/null 2>&1; then
        passed=$((passed + 1))
        echo \"ok - $1\"
    else
        failed=$((failed + 1))
        echo \"not ok - $1\"
    fi
}
numeric_port() { grep -Eq '^port = [0-9]+$' config/app.toml; }
replacements_named() {
    [ \"$(grep -c '^old = ' config/deprecations.toml)\" -eq \"$(grep -c '^new = ' config/deprecations.toml)\" ]
}
imports_client() { grep -q '^from client import' src/inventory.py; }
links_every_doc() {
    for doc in docs/*.md; do grep -q \"($doc)\" README.md || return 1; done
}
case \"${1:---unit}\" in
--unit)
    check \"config declares a numeric port\" numeric_port
    check \"every deprecated API names its replacement\" replacements_named
    check \"the inventory imports its client\" imports_client
    ;;
--integration)
    check \"the deploy script is present\" \"test -f deploy.sh\"
    check \"the README links every doc\" links_every_doc
    ;;
*)
    echo \"unknown suite: $1\" >&2
    exit 2
    ;;
esac
echo \"$passed passed, $failed failed\"
[ \"$failed\" -eq 0 ]
",
    ),
    (
        "deploy.sh",
        "#!/bin/sh
# Deploys the service to a staging directory: ./deploy.sh STAGING_DIR
set -eu
staging=\"${1:?usage: ./deploy.sh STAGING_DIR}\"
version=$(sed -n 's/^version = \"\\(.*\\)\"$/\\1/p' config/app.toml)
release=\"$staging/inventory-api-$version\"
mkdir -p \"$release\"
cp -R src config docs \"$release\"/
count=$(find \"$release\" -type f | wc -l | tr -d ' ')
echo \"deployed $count files to $release\"
",
    ),
    (
        ".gitignore",
        "__pycache__/
",
    ),
];

/// The lock a crashed test run left behind (`--break bash`).
pub const STALE_LOCK: &str = ".test.lock";

/// Counts runs in this process, so that each gets its own directory.
static RUNS: AtomicUsize = AtomicUsize::new(0);

/// The run's temporary directory: `workspace/` (the project), `staging/` (where deploys go),
/// `scratch/` (the shell's captured output), `empty-path/` (PATH of a broken shell). Removed
/// when dropped, read-only or not.
pub struct RunDir {
    path: PathBuf,
}

impl RunDir {
    fn create() -> io::Result<Self> {
        let base = std::env::temp_dir();
        loop {
            let n = RUNS.fetch_add(1, Ordering::Relaxed);
            let path = base.join(format!("circuit-breaker-agent-{}-{n}", std::process::id()));
            match fs::create_dir(&path) {
                Ok(()) => return Ok(RunDir { path }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the directory now, reporting what went wrong.
    pub fn remove(mut self) -> io::Result<()> {
        let path = std::mem::take(&mut self.path);
        set_writable(&path, true)?;
        fs::remove_dir_all(&path)
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            let _ = set_writable(&self.path, true);
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

/// Adds or removes every write bit under `path` (directories included).
fn set_writable(path: &Path, writable: bool) -> io::Result<()> {
    let meta = fs::symlink_metadata(path)?;
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    let mode = meta.permissions().mode();
    let mode = if writable {
        mode | 0o200
    } else {
        mode & !0o222
    };
    // Going writable, open a directory before its entries; going read-only, after them.
    if writable {
        fs::set_permissions(path, fs::Permissions::from_mode(mode))?;
    }
    if meta.is_dir() {
        for entry in fs::read_dir(path)? {
            set_writable(&entry?.path(), writable)?;
        }
    }
    if !writable {
        fs::set_permissions(path, fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

/// The workspace and what the tools need: its root, the search server, the faults.
pub struct Workspace {
    root: PathBuf,
    scratch: PathBuf,
    empty_path: PathBuf,
    search: SocketAddr,
    faults: Faults,
    rng: RefCell<XorShift>,
    /// Running as root: the kernel ignores permission bits, so the file tools honour them.
    root_user: bool,
    commands: Cell<u32>,
}

impl Workspace {
    /// Lays the project out in a new temporary directory and injects the faults asked for.
    pub fn create(faults: &Faults, search: SocketAddr) -> io::Result<(RunDir, Workspace)> {
        let run = RunDir::create()?;
        let root = run.path().join("workspace");
        for (path, text) in PROJECT {
            let file = root.join(path);
            fs::create_dir_all(file.parent().unwrap_or(&root))?;
            fs::write(&file, text)?;
            if path.ends_with(".sh") {
                fs::set_permissions(&file, fs::Permissions::from_mode(0o755))?;
            }
        }
        for dir in ["staging", "scratch", "empty-path"] {
            fs::create_dir(run.path().join(dir))?;
        }
        if faults.break_bash {
            // Scripts lose their exec bits (as after extracting an archive that dropped them),
            // and a crashed test run's lock is left behind. PATH is emptied when Bash runs.
            for (path, _) in PROJECT.iter().filter(|(p, _)| p.ends_with(".sh")) {
                fs::set_permissions(root.join(path), fs::Permissions::from_mode(0o644))?;
            }
            fs::write(
                root.join(STALE_LOCK),
                "held by pid 4242 (test run crashed)\n",
            )?;
        }
        if faults.read_only {
            set_writable(&root, false)?;
        }
        let root_user = fs::metadata(run.path())?.uid() == 0;
        let workspace = Workspace {
            scratch: run.path().join("scratch"),
            empty_path: run.path().join("empty-path"),
            root,
            search,
            faults: faults.clone(),
            rng: RefCell::new(XorShift::new(faults.seed)),
            root_user,
            commands: Cell::new(0),
        };
        Ok((run, workspace))
    }

    /// The workspace's root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `--flaky`: fails this call of `tool` at its rate, drawn from the seeded PRNG.
    fn flaky(&self, tool: &str) -> io::Result<()> {
        let Some(rate) = self.faults.flaky_rate(tool) else {
            return Ok(());
        };
        if self.rng.borrow_mut().next_f64() < rate {
            return Err(io::Error::new(
                io::ErrorKind::Interrupted,
                format!("{tool} interrupted: injected flaky fault"),
            ));
        }
        Ok(())
    }

    /// A path of the workspace; anything leading out of it is refused.
    fn resolve(&self, path: &str) -> io::Result<PathBuf> {
        let relative = Path::new(path);
        let inside = relative
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        if inside {
            Ok(self.root.join(relative))
        } else {
            Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{path}: outside the workspace"),
            ))
        }
    }

    /// Permission bits as the kernel checks them for a normal user. As root the kernel skips
    /// the check (root may write anywhere), so the file tools make it themselves and fail
    /// with EACCES exactly as the kernel would for the owner of a read-only tree.
    fn check_writable(&self, path: &Path) -> io::Result<()> {
        if self.root_user && fs::metadata(path)?.permissions().mode() & 0o200 == 0 {
            return Err(io::Error::from_raw_os_error(13));
        }
        Ok(())
    }

    /// Runs `/bin/sh -c command` in the workspace: stdout on success; on failure an error that
    /// says how it failed (exit 126: permission denied, 127: command not found, timeout).
    fn run_shell(&self, command: &str) -> io::Result<String> {
        let n = self.commands.get() + 1;
        self.commands.set(n);
        let out_path = self.scratch.join(format!("command-{n}.out"));
        let err_path = self.scratch.join(format!("command-{n}.err"));
        let path = if self.faults.break_bash {
            self.empty_path.as_os_str().to_owned()
        } else {
            HEALTHY_PATH.into()
        };
        // Output goes to files, not pipes: a killed command leaves nothing to drain.
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg(command)
            .current_dir(&self.root)
            .env_clear()
            .env("PATH", path)
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .stdout(File::create(&out_path)?)
            .stderr(File::create(&err_path)?)
            .spawn()?;
        let started = Instant::now();
        let mut poll = Duration::from_millis(1);
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            if started.elapsed() >= BASH_TIMEOUT {
                child.kill()?;
                child.wait()?;
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("timeout after {}s", BASH_TIMEOUT.as_secs()),
                ));
            }
            std::thread::sleep(poll);
            poll = (poll * 2).min(Duration::from_millis(20));
        };
        let stdout = fs::read_to_string(&out_path)?;
        let stderr = fs::read_to_string(&err_path)?;
        match status.code() {
            Some(0) => Ok(stdout),
            Some(126) => Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "permission denied (exit 126)",
            )),
            Some(127) => Err(io::Error::new(
                io::ErrorKind::NotFound,
                "command not found (exit 127)",
            )),
            code => {
                let last = stderr
                    .lines()
                    .chain(stdout.lines())
                    .rfind(|l| !l.trim().is_empty())
                    .unwrap_or("no output");
                let status = code.map_or_else(
                    || "killed by a signal".to_owned(),
                    |c| format!("exit status {c}"),
                );
                Err(io::Error::other(format!("{status}: {last}")))
            }
        }
    }

    /// Every regular, non-hidden file under `dir`, sorted, relative to the workspace.
    fn files_under(&self, dir: &Path, into: &mut Vec<PathBuf>) -> io::Result<()> {
        let mut entries: Vec<_> = fs::read_dir(dir)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(fs::DirEntry::file_name);
        for entry in entries {
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let kind = entry.file_type()?;
            if kind.is_dir() {
                self.files_under(&entry.path(), into)?;
            } else if kind.is_file() {
                into.push(entry.path());
            }
        }
        Ok(())
    }

    fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    }
}

/// Quotes a word for `/bin/sh`.
fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// `path:line: text` lines from numbered `Read` output, for the lines matching `re`.
fn matching_lines(path: &str, numbered: &str, re: &Regex) -> Vec<String> {
    numbered
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .filter(|(_, text)| re.is_match(text))
        .map(|(n, text)| format!("{path}:{}: {text}", n.trim()))
        .collect()
}

#[toolbox]
impl Workspace {
    /// Searches the tree under `path` for lines matching the regex `pattern`:
    /// `path:line: text`, files in order.
    #[tool(
        name = "Grep",
        provides = "content search across files",
        alternatives(
            bash(
                method = "rg or grep command",
                degradation = "loses Grep's built-in output formatting",
                via = grep_with_shell
            ),
            read(
                method = "read suspected files directly",
                degradation = high("requires knowing which files to check; no broad search"),
                via = grep_by_reading
            ),
        ),
        fallback = "ask the user which files to examine",
        freshness(source = "filesystem")
    )]
    fn grep(&self, pattern: &str, path: &str) -> io::Result<Vec<String>> {
        self.flaky("grep")?;
        let re = Regex::new(pattern).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let start = self.resolve(path)?;
        let mut files = Vec::new();
        if fs::metadata(&start)?.is_dir() {
            self.files_under(&start, &mut files)?;
        } else {
            files.push(start);
        }
        let mut hits = Vec::new();
        for file in files {
            let Ok(text) = fs::read_to_string(&file) else {
                continue; // not text
            };
            let name = self.relative(&file);
            for (i, line) in text.lines().enumerate() {
                if re.is_match(line) {
                    hits.push(format!("{name}:{}: {line}", i + 1));
                }
            }
        }
        Ok(hits)
    }

    /// Grep's goal through Bash: a `grep -rnE` command, its raw output lines.
    fn grep_with_shell(&self, pattern: &str, path: &str) -> io::Result<Vec<String>> {
        // grep exits 1 when nothing matches: that is an answer, not a failure.
        let command = format!(
            "grep -rnE --exclude='.*' -e {} -- {}; [ $? -le 1 ]",
            shell_quote(pattern),
            shell_quote(path)
        );
        let mut lines: Vec<String> = self.bash(&command)?.lines().map(str::to_owned).collect();
        lines.sort();
        Ok(lines)
    }

    /// Grep's goal through Read: only the files we know of — the README and the docs it
    /// links.
    fn grep_by_reading(&self, pattern: &str, path: &str) -> io::Result<Vec<String>> {
        let re = Regex::new(pattern).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let links = Regex::new(r"\]\(([^)]+)\)").map_err(io::Error::other)?;
        let readme = self.read("README.md")?;
        let mut suspects = vec!["README.md".to_owned()];
        suspects.extend(links.captures_iter(&readme).map(|c| c[1].to_owned()));
        let prefix = path.trim_start_matches("./").trim_end_matches('/');
        let mut hits = Vec::new();
        for file in suspects {
            if prefix.is_empty() || prefix == "." || file.starts_with(&format!("{prefix}/")) {
                let text = self.read(&file)?;
                hits.extend(matching_lines(&file, &text, &re));
            }
        }
        Ok(hits)
    }

    /// Runs a command with `/bin/sh -c` in the workspace, killed after [`BASH_TIMEOUT`].
    #[tool(
        name = "Bash",
        provides = "command execution, build tools, git operations",
        fallback = "report commands that need to be run manually"
    )]
    fn bash(&self, command: &str) -> io::Result<String> {
        self.flaky("bash")?;
        self.run_shell(command)
    }

    /// A file's contents with line numbers (`     1\ttext`).
    #[tool(
        name = "Read",
        provides = "file content inspection",
        alternatives(bash(
            method = "cat or head command",
            degradation = "loses line numbering and truncation safety",
            via = read_with_cat
        )),
        fallback = "ask the user to paste file contents",
        serve_stale
    )]
    fn read(&self, path: &str) -> io::Result<String> {
        self.flaky("read")?;
        let text = fs::read_to_string(self.resolve(path)?)?;
        Ok(text
            .lines()
            .enumerate()
            .map(|(i, line)| format!("{:>6}\t{line}\n", i + 1))
            .collect())
    }

    /// Read's goal through Bash: `cat`, no line numbers.
    fn read_with_cat(&self, path: &str) -> io::Result<String> {
        self.bash(&format!("cat -- {}", shell_quote(path)))
    }

    /// Creates or replaces a file atomically (a temporary file renamed over it); the bytes
    /// written.
    #[tool(
        name = "Write",
        provides = "file creation",
        alternatives(
            edit(
                method = "create via full-file edit",
                degradation = high("requires file to already exist for Edit"),
                via = write_with_edit
            ),
            bash(
                method = "echo/cat heredoc",
                degradation = "loses Write's atomic file creation",
                via = write_with_heredoc
            ),
        ),
        fallback = "output file contents for the user to save manually"
    )]
    fn write(&self, path: &str, content: &str) -> io::Result<usize> {
        self.flaky("write")?;
        let target = self.resolve(path)?;
        let dir = target.parent().unwrap_or(&self.root).to_path_buf();
        // The temporary file is created in the target's directory: that needs write access
        // to the directory, whether or not the file exists.
        self.check_writable(&dir)?;
        let name = target
            .file_name()
            .map_or_else(|| "file".to_owned(), |n| n.to_string_lossy().into_owned());
        let temporary = dir.join(format!(".{name}.write-tmp"));
        fs::write(&temporary, content)?;
        if let Err(e) = fs::rename(&temporary, &target) {
            let _ = fs::remove_file(&temporary);
            return Err(e);
        }
        Ok(content.len())
    }

    /// Write's goal through Edit: the whole of an existing file replaced.
    fn write_with_edit(&self, path: &str, content: &str) -> io::Result<usize> {
        let target = self.resolve(path)?;
        if !target.exists() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{path} does not exist: Edit cannot create it"),
            ));
        }
        let old = fs::read_to_string(&target)?;
        self.edit(path, &old, content).map(|_| content.len())
    }

    /// Write's goal through Bash: a `cat` heredoc (not atomic).
    fn write_with_heredoc(&self, path: &str, content: &str) -> io::Result<usize> {
        let command = format!(
            "cat > {} <<'CIRCUIT_BREAKER_EOF'\n{content}CIRCUIT_BREAKER_EOF",
            shell_quote(path)
        );
        self.bash(&command).map(|_| content.len())
    }

    /// Replaces every occurrence of `old` with `new` in a file, in place; how many.
    #[tool(
        name = "Edit",
        provides = "in-place file modification",
        alternatives(write(
            method = "rewrite the whole file with the change applied",
            degradation = "loses Edit's in-place change: the whole file is rewritten",
            via = edit_with_write
        )),
        fallback = "describe the edit for the user to apply"
    )]
    fn edit(&self, path: &str, old: &str, new: &str) -> io::Result<usize> {
        self.flaky("edit")?;
        let target = self.resolve(path)?;
        let text = fs::read_to_string(&target)?;
        let count = text.matches(old).count();
        if count == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{path}: the text to replace is not in the file"),
            ));
        }
        // In place: the file is opened for writing, which needs write access to the file.
        self.check_writable(&target)?;
        fs::write(&target, text.replace(old, new))?;
        Ok(count)
    }

    /// Edit's goal through Write: the file read, changed, and written whole.
    fn edit_with_write(&self, path: &str, old: &str, new: &str) -> io::Result<usize> {
        let text = fs::read_to_string(self.resolve(path)?)?;
        let count = text.matches(old).count();
        if count == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{path}: the text to replace is not in the file"),
            ));
        }
        self.write(path, &text.replace(old, new)).map(|_| count)
    }

    /// Searches the documentation server: its best results for `query`.
    #[tool(
        name = "WebSearch",
        provides = "external information retrieval",
        fallback = "state what information is needed; ask user to provide it",
        freshness(source = "search index")
    )]
    fn web_search(&self, query: &str) -> io::Result<Vec<SearchHit>> {
        self.flaky("websearch")?;
        search_server::query(self.search, query)
    }
}
