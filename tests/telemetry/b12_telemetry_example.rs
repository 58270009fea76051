//! B12: `cargo run --example telemetry --features otel` (the spans and metrics the SDK's
//! in-memory exporters received for a short run) against its golden,
//! `tests/golden/telemetry_example.txt`; the excerpt of it in `docs/transcripts.md` is tied to
//! the same golden by `tests/reports/readme_output.rs`. A missing golden fails; `UPDATE_GOLDEN=1` rewrites it.

#![cfg(feature = "otel")]

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/examples.rs"]
mod examples;

use std::process::Command;

#[test]
fn b12_the_telemetry_example_exports_what_its_golden_says() {
    let output = Command::new(examples::example_binary("telemetry"))
        .output()
        .expect("run the telemetry example");
    assert!(
        output.status.success(),
        "the example failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).expect("UTF-8");
    common::assert_golden("telemetry_example.txt", stdout.trim_end());
}
