//! B17: the config checked without serving (`--check`): a summary when it is good, every
//! problem at its line with "did you mean" when it is not; upstreams that speak garbage or
//! never answer `initialize` are clear errors, never a panic.

use std::time::Duration;

use crate::common::{run_config, run_guard, scratch, upstream};

#[test]
fn b17_check_summarises_a_good_config() {
    let dir = scratch("check-good");
    let path = dir.join("guard.yaml");
    std::fs::write(
        &path,
        "upstreams:
  - name: files
    command: npx
    args: [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/tmp\"]
    deadline: 20s
  - name: search
    url: http://127.0.0.1:8080/mcp
    headers: { Authorization: \"Bearer ${GUARD_TEST_TOKEN}\" }
overlay:
  capability_map:
    - tool: read_file
      alternatives:
        - tool: search
          degradation: \"a search hit, not the file\"
policy:
  threshold: 2
  cool_down: 30s
  budget_window: 10m
",
    )
    .unwrap();
    let (code, out, err) = {
        // SAFETY-free: the variable is set for the child only.
        let mut child = std::process::Command::new(crate::common::GUARD);
        child.args(["--config", path.to_str().unwrap(), "--check"]);
        child.env("GUARD_TEST_TOKEN", "t0ken");
        let output = child.output().expect("the guard runs");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.starts_with("ok: "), "{out}");
    assert!(
        out.contains(
            "files: stdio: npx -y @modelcontextprotocol/server-filesystem /tmp, deadline 20s"
        ),
        "{out}"
    );
    assert!(
        out.contains("search: http: http://127.0.0.1:8080/mcp (headers: Authorization)"),
        "{out}"
    );
    assert!(!out.contains("t0ken"), "a secret printed: {out}");
    assert!(out.contains("overlay tools (1): read_file"), "{out}");
    assert!(
        out.contains("policy: threshold 2, budget 5 per 10m, cool-down 30s"),
        "{out}"
    );
    assert!(out.contains("serve: stdio"), "{out}");
    assert!(out.contains("runtime: 1 thread\n"), "{out}");
}

#[test]
fn b17_check_reports_every_problem_at_its_line_with_did_you_mean() {
    let dir = scratch("check-bad");
    let path = dir.join("guard.yaml");
    std::fs::write(
        &path,
        "upstreams:
  - name: files
    comand: npx
    deadlin: 20s
  - name: search
    url: http://127.0.0.1:8080/mcp
    headers: { Authorization: \"Bearer ${GUARD_TEST_UNSET_TOKEN}\" }
  - name: web
    url: http://127.0.0.1:8081/mcp
    deadline: soon
overlay:
  capability_map:
    - tool: read_file
      altrnatives: []
  servers:
    - server: serch
policy:
  treshold: 3
  cool_down: 30
serv:
  http: { bind: 127.0.0.1:8931 }
telemetry:
  log: inf
runtime:
  thread: 2
",
    )
    .unwrap();
    let (code, out, err) = run_guard(
        &["--config", path.to_str().unwrap(), "--check"],
        Duration::from_secs(20),
    );
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert!(out.is_empty(), "{out}");
    for expected in [
        "line 3: upstreams[0] (files).comand: unknown key `comand`; did you mean `command`?",
        "line 4: upstreams[0] (files).deadlin: unknown key `deadlin`; did you mean `deadline`?",
        "line 7: upstreams[1] (search).headers: `${GUARD_TEST_UNSET_TOKEN}` is not set in the guard's environment",
        "line 10: upstreams[2] (web).deadline: `soon` is not a duration",
        "line 14: overlay.capability_map[0] (read_file).altrnatives: unknown key `altrnatives`; did you mean `alternatives`?",
        "line 16: overlay.servers[0].server: server `serch` is no upstream; did you mean `search`?",
        "line 18: policy.treshold: unknown key `treshold`; did you mean `threshold`?",
        "line 19: policy.cool_down: invalid type: integer `30`, expected a string",
        "line 20: serv: unknown key `serv`; did you mean `serve`?",
        "line 23: telemetry.log: unknown log level `inf`; did you mean `info`?",
        "line 25: runtime.thread: unknown key `thread`; did you mean `threads`?",
    ] {
        assert!(
            err.contains(expected),
            "missing: {expected}\n--- stderr\n{err}"
        );
    }
    assert!(err.contains("11 problems"), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    // Not YAML at all, and no file: one clear line each.
    std::fs::write(&path, "upstreams: [\n  - name: x\n").unwrap();
    let (code, _, err) = run_guard(
        &["--config", path.to_str().unwrap(), "--check"],
        Duration::from_secs(20),
    );
    assert_eq!(code, Some(2));
    assert!(err.contains("not valid YAML"), "{err}");
    let (code, _, err) = run_guard(
        &["--config", "/nonexistent/guard.yaml", "--check"],
        Duration::from_secs(20),
    );
    assert_eq!(code, Some(2));
    assert!(err.contains("cannot read /nonexistent/guard.yaml"), "{err}");
    let (code, _, err) = run_guard(&["--confg", "x"], Duration::from_secs(20));
    assert_eq!(code, Some(2));
    assert!(err.contains("did you mean `--config`?"), "{err}");
    let (code, _, err) = run_guard(&["--threads", "0"], Duration::from_secs(20));
    assert_eq!(code, Some(2));
    assert!(err.contains("--threads: 0 threads"), "{err}");
}

#[test]
fn b17_a_required_upstream_that_speaks_garbage_or_never_answers_is_a_clear_error() {
    for (flavor, expected) in [
        (
            "garbage",
            "upstream junk is `required: true` and could not be started",
        ),
        ("silent", "no answer to initialize within 2s"),
    ] {
        let dir = scratch(flavor);
        let path = dir.join("guard.yaml");
        let text = format!(
            "upstreams:\n{}{}    required: true\nhealth:\n  connect_timeout: 2s\n",
            upstream(&dir, "beta", "beta"),
            upstream(&dir, "junk", flavor)
        );
        std::fs::write(&path, text).unwrap();
        let (code, _, err) = run_guard(
            &["--config", path.to_str().unwrap()],
            Duration::from_secs(30),
        );
        assert_eq!(code, Some(1), "{flavor}: {err}");
        assert!(err.contains(expected), "{flavor}: {err}");
        assert!(!err.contains("panicked"), "{flavor}: {err}");
    }
}

#[test]
fn b17_check_names_the_overlays_servers_when_no_upstream_is_named() {
    let path = scratch("unnamed").join("guard.yaml");
    let overlay = "overlay:\n  capability_map: []\n  servers:\n    - server: files\n";
    let text = format!("upstreams:\n  - command: mcp-files\n{overlay}");
    let (code, _, err) = run_config(&path, &text, &["--check"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("missing field `name`"), "{err}");
    assert!(
        err.contains(
            "overlay.servers[0].server: server `files` is no upstream (no upstream has a `name:`)"
        ),
        "{err}"
    );

    // A name written with spaces around it is the name without them, here too.
    let text = format!("upstreams:\n  - name: \" files \"\n    command: mcp-files\n{overlay}");
    let (code, out, err) = run_config(&path, &text, &["--check"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("ok"), "{out}");
}
