//! The agent on MCP end to end (B10, R9.4, R10.1): `examples/mcp_agent` run as a child
//! process, with its two MCP servers as its own child processes over stdio, against golden
//! transcripts (`tests/golden/mcp_agent_*.txt`; a missing one fails, `UPDATE_GOLDEN=1`
//! rewrites them). Besides the goldens, each scenario asserts the facts the issue asks for:
//! a server killed mid-run is one event naming it, charged once, the other server's tools
//! are still called, and a probe brings it back.

#![cfg(feature = "mcp")]

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/examples.rs"]
mod examples;
#[path = "../common/run_output.rs"]
mod run_output;

use std::process::Command;
use std::sync::{Mutex, PoisonError};

use common::assert_golden;
use examples::example_binary;
use run_output::normalise;

/// One run at a time: each starts three processes.
static SERIAL: Mutex<()> = Mutex::new(());

/// Runs the agent with `args`: its normalised standard output.
fn run(args: &[&str]) -> String {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let output = Command::new(example_binary("mcp_agent"))
        .args(args)
        .output()
        .expect("run the example");
    let stdout = String::from_utf8(output.stdout).expect("UTF-8");
    assert!(
        output.status.success(),
        "mcp_agent {args:?} failed: {}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    normalise(&stdout)
}

fn count(text: &str, needle: &str) -> usize {
    text.matches(needle).count()
}

#[test]
fn b10_healthy_every_goal_from_its_own_tool() {
    let out = run(&[]);
    assert!(out.contains("Nothing was skipped."), "{out}");
    assert!(out.contains("Failure budget: 0 / 5 consumed"), "{out}");
    assert!(out.contains("Server files: reachable (read_file, list_dir, search_files)"));
    assert!(out.contains("Server web: reachable (web_search, fetch_page)"));
    assert_eq!(count(&out, "  ✗ "), 0, "{out}");
    assert_golden("mcp_agent_healthy.txt", &out);
}

#[test]
fn b10_r4_a_broken_tool_opens_and_the_model_takes_the_other_servers_tool() {
    let out = run(&["--break", "search_files"]);
    // Three failures, each charged to search_files alone; then it leaves the offer.
    assert_eq!(count(&out, "  ✗ search_files failed"), 3, "{out}");
    assert_eq!(
        count(
            &out,
            "event: Circuit OPENED for search_files: 3 consecutive failures"
        ),
        1,
        "{out}"
    );
    assert!(out.contains("offered: read_file, list_dir, web_search, fetch_page"));
    // Each goal search_files failed is answered by web_search instead.
    assert!(
        out.contains("Find where staging is mentioned — from web_search"),
        "{out}"
    );
    assert!(
        out.contains("Find who is on call — from web_search"),
        "{out}"
    );
    assert!(out.contains("Failure budget: 3 / 5 consumed"), "{out}");
    assert!(
        !out.contains("Server files: DOWN"),
        "a broken tool is not a dead server"
    );
    assert_golden("mcp_agent_break_search_files.txt", &out);
}

#[test]
fn b10_r9_4_a_server_killed_mid_run_is_one_event_charged_once_and_a_probe_brings_it_back() {
    let out = run(&["--kill", "files@6"]);
    assert_eq!(count(&out, "the files server's process is killed"), 1);
    // One event naming the server, all its tools at once; the budget charged once.
    assert_eq!(count(&out, "event: Server files unreachable"), 1, "{out}");
    assert!(out.contains(
        "its tools OPEN at once (read_file, list_dir, search_files), one failure charged"
    ));
    assert!(out.contains("Failure budget: 1 / 5 consumed"), "{out}");
    assert_eq!(count(&out, "  Failure 1: "), 1);
    assert!(!out.contains("Failure 2: "), "{out}");
    // The other server's tools go on while files is down.
    assert!(out.contains("offered: web_search, fetch_page"), "{out}");
    assert!(
        out.contains("Find who is on call — from web_search"),
        "{out}"
    );
    // The probe finds it again (the client started it anew), every tool back at once.
    assert_eq!(
        count(
            &out,
            "event: Server files reachable again: probe succeeded, its tools CLOSED (read_file, list_dir, search_files)"
        ),
        1,
        "{out}"
    );
    assert!(out.contains("Server files: reachable (read_file, list_dir, search_files)"));
    // What was put off while it was down is done when it is back.
    assert!(out.contains("model puts off \"Read the last incident's notes\""));
    assert!(
        out.contains("Read the last incident's notes — from read_file"),
        "{out}"
    );
    assert!(out.contains("Nothing was skipped."), "{out}");
    assert_golden("mcp_agent_kill_files.txt", &out);
}

#[test]
fn b10_bad_arguments_exit_2_with_the_usage() {
    let output = Command::new(example_binary("mcp_agent"))
        .args(["--kill", "db@3"])
        .output()
        .expect("run the example");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no server db (files, web)"), "{stderr}");
    assert!(stderr.contains("usage: mcp_agent"), "{stderr}");
}
