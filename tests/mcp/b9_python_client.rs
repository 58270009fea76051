//! B9: an MCP server of ours must work with any MCP client, not only rmcp's.
//!
//! The official Python MCP SDK (PyPI `mcp`, pinned to [`MCP_VERSION`]) drives the example
//! server (`examples/mcp_server`) over stdio: `tests/mcp_clients/python_client.py` walks
//! initialize, tools/list, answers, failures opening a circuit, the list_changed
//! notification, a routed call and a model's mistake, then two long sessions on shortened
//! clocks (B15: a budget freed by its window, a mended tool back on probation with no call),
//! and exits non-zero on any check that does not hold.
//!
//! The SDK lives in a virtualenv under the cargo target dir ([`VENV`]), made on first use
//! (`python3 -m venv`, `pip install mcp==MCP_VERSION`) under a file lock and reused after.
//! No Python, or an install that fails, fails this test: it never skips.

#![cfg(feature = "mcp")]

#[path = "../common/examples.rs"]
mod examples;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use examples::example_binary;

/// The Python SDK's version, verified against the example (mcp 1.30.0 passes too).
const MCP_VERSION: &str = "2.3.0";
/// The virtualenv, under the target dir.
const VENV: &str = "py-mcp";
const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/mcp_clients/python_client.py"
);
const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);
const CLIENT_TIMEOUT: Duration = Duration::from_secs(60);

/// Makes `argv[1]` a virtualenv with `mcp==argv[2]`, unless it is one already; one process at
/// a time (an OS lock on `argv[1].lock`, released if the holder dies).
const ENSURE_VENV: &str = r#"
import os, shutil, subprocess, sys
venv, version = sys.argv[1], sys.argv[2]
python = os.path.join(venv, "Scripts" if os.name == "nt" else "bin", "python")
probe = [python, "-c", f"import importlib.metadata as m, mcp; assert m.version('mcp') == {version!r}"]
with open(venv + ".lock", "w") as lock:
    try:
        import fcntl
        fcntl.flock(lock, fcntl.LOCK_EX)
    except ImportError:
        import msvcrt
        msvcrt.locking(lock.fileno(), msvcrt.LK_LOCK, 1)
    if os.path.exists(python) and subprocess.run(probe, capture_output=True).returncode == 0:
        sys.exit(0)
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
                    "--quiet", f"mcp=={version}"], check=True)
    subprocess.run(probe, check=True)
"#;

/// Runs `command` to its end, or kills it after `timeout`; its output either way.
pub fn run(command: &mut Command, timeout: Duration) -> (Output, bool) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {command:?}: {e}"));
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped")));
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > timeout {
            timed_out = true;
            let _ = child.kill();
            break child.wait().expect("wait");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = Output {
        status,
        stdout: stdout.join().expect("stdout"),
        stderr: stderr.join().expect("stderr"),
    };
    (output, timed_out)
}

pub fn report(what: &str, (output, timed_out): &(Output, bool)) -> String {
    format!(
        "{what}: {}\n--- stdout\n{}\n--- stderr\n{}",
        if *timed_out {
            "killed after its timeout".to_owned()
        } else {
            output.status.to_string()
        },
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    )
}

/// `target/<profile>`, from this test's path (`target/<profile>/deps/b9_python_client-<hash>`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps")
        .to_owned()
}

/// A Python 3.10 or newer (the SDK's floor): `python3`, else `python`.
fn python() -> &'static str {
    let version = "import sys; assert sys.version_info >= (3, 10), sys.version";
    ["python3", "python"]
        .into_iter()
        .find(|python| {
            Command::new(python)
                .args(["-c", version])
                .output()
                .is_ok_and(|out| out.status.success())
        })
        .expect("B9's Python client needs python3 (3.10 or newer) on PATH")
}

/// The virtualenv's Python, with the pinned SDK (B17's HTTP client runs on it too).
pub fn venv_python() -> PathBuf {
    let target = profile_dir().parent().expect("target").to_owned();
    let venv = target.join(VENV);
    let outcome = run(
        Command::new(python())
            .arg("-c")
            .arg(ENSURE_VENV)
            .arg(&venv)
            .arg(MCP_VERSION),
        INSTALL_TIMEOUT,
    );
    assert!(
        outcome.0.status.success() && !outcome.1,
        "{}",
        report(
            &format!("installing mcp=={MCP_VERSION} into {}", venv.display()),
            &outcome
        )
    );
    let bin = if cfg!(windows) { "Scripts" } else { "bin" };
    venv.join(bin)
        .join(format!("python{}", std::env::consts::EXE_SUFFIX))
}

#[test]
fn b9_the_python_sdks_client_drives_the_example_over_stdio() {
    let python = venv_python();
    let server = example_binary("mcp_server");
    let outcome = run(
        Command::new(&python)
            .arg(SCRIPT)
            .arg(&server)
            .env("PYTHONDONTWRITEBYTECODE", "1"),
        CLIENT_TIMEOUT,
    );
    let what = format!("{} {SCRIPT} {}", python.display(), server.display());
    assert!(
        outcome.0.status.success() && !outcome.1,
        "{}",
        report(&what, &outcome)
    );
    let stdout = String::from_utf8_lossy(&outcome.0.stdout);
    assert_eq!(
        stdout.lines().last(),
        Some(r#"{"step": "done", "ok": true}"#),
        "{}",
        report(&what, &outcome)
    );
}
