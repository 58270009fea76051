//! Normalising the example agent's output (`examples/agent/`): what differs from run to run
//! — wall-clock timestamps, the temporary directory, the search server's port — is replaced
//! by fixed text, so a run compares with `tests/golden/agent_*.txt` and with the real output
//! pasted into `docs/transcripts.md` and README.md. Included by `tests/agent_scenarios.rs` and
//! `tests/reports/readme_output.rs`.

use regex::Regex;

/// What changes from run to run, replaced by fixed text of the same length where it sits in
/// a table (so columns stay aligned), else by a name in angle brackets. Trailing newlines are
/// dropped. Normalising twice changes nothing.
pub fn normalise(text: &str) -> String {
    // RFC 3339 timestamps: whole seconds in the text, milliseconds in JSON.
    let millis = Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z").unwrap();
    let seconds = Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z").unwrap();
    let text = millis.replace_all(text, "YYYY-MM-DDThh:mm:ss.mmmZ");
    let text = seconds.replace_all(&text, "YYYY-MM-DDThh:mm:ssZ");
    // The run's temporary directory: <temp dir>/circuit-breaker-agent-<pid>-<n>. This
    // machine's temp dir first (it may hold spaces), then any absolute directory, for output
    // printed elsewhere (the documented runs came from a machine whose temp dir was /tmp).
    let temp = std::env::temp_dir();
    let temp = regex::escape(temp.to_string_lossy().trim_end_matches('/'));
    let run_dir = Regex::new(&format!(r"{temp}/circuit-breaker-agent-\d+-\d+")).unwrap();
    let text = run_dir.replace_all(&text, "$$TMPDIR/circuit-breaker-agent-<pid>-<n>");
    let any_dir = Regex::new(r"(?:/[^\s/]+)*/circuit-breaker-agent-\d+-\d+").unwrap();
    let text = any_dir.replace_all(&text, "$$TMPDIR/circuit-breaker-agent-<pid>-<n>");
    // The search server's port, chosen by the OS.
    let port = Regex::new(r"127\.0\.0\.1:\d+").unwrap();
    let text = port.replace_all(&text, "127.0.0.1:<port>");
    text.trim_end_matches('\n').to_owned()
}
