//! The workspace's example binaries, for the tests that run them as child processes (the
//! MCP servers, the agent on MCP). Included by path: `#[path = "common/examples.rs"] mod
//! examples;`.

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, PoisonError};

/// The example `name`'s binary, built (or found up to date) by cargo once per test process:
/// a test run on its own (`--test mcp`) does not build the examples, and one that does may
/// have left a binary older than its sources. The package features of this build are passed
/// on, so that the examples `cargo test` built are found fresh, not rebuilt.
pub fn example_binary(name: &str) -> PathBuf {
    example_binary_with(name, &["mcp"])
}

/// The example `name`'s binary, built with `minimum` and this build's features only: an
/// example that needs no MCP is not built with it, so a test run without `mcp` does not
/// compile the runtime a second time.
pub fn example_binary_with(name: &str, minimum: &[&str]) -> PathBuf {
    // One build at a time (tests run in parallel), each example once.
    static BUILT: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
    // target/<profile>/deps/<test>-<hash> → target/<profile>/examples/<name>
    let exe = std::env::current_exe().expect("the test's path");
    let profile = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let binary = profile
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if !built.iter().any(|b| b == name) {
        // This build's features of the root package, so the examples `cargo test` built
        // are found fresh, and the example's minimum.
        let mut features = minimum.to_vec();
        for (on, feature) in [
            (cfg!(feature = "rig"), "rig"),
            (cfg!(feature = "redis"), "redis"),
            (cfg!(feature = "redis-tls"), "redis-tls"),
            (cfg!(feature = "otel"), "otel"),
        ] {
            if on && !features.contains(&feature) {
                features.push(feature);
            }
        }
        let mut cargo = Command::new(env!("CARGO"));
        cargo
            .args(["build", "--quiet", "--example", name, "--features"])
            .arg(features.join(","))
            .arg("--manifest-path")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"));
        if let Some(target) = profile.parent() {
            cargo.arg("--target-dir").arg(target);
        }
        if profile.file_name().is_some_and(|p| p == "release") {
            cargo.arg("--release");
        }
        let status = cargo.status().expect("run cargo");
        assert!(status.success(), "cargo build --example {name} failed");
        built.push(name.to_owned());
    }
    assert!(binary.exists(), "no {}", binary.display());
    binary
}
