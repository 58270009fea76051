//! B11 across processes: `examples/fleet` runs a coordinator, its own `redis-server` and
//! several worker processes on one task queue. The first worker opens `fetch` (its upstream
//! refuses connections); the others, started after, find it OPEN through Redis and route
//! around it without one plain call and without spending their budget on it; once the
//! upstream mends, a probe closes it for every worker.

#![cfg(feature = "redis")]

#[path = "../common/examples.rs"]
mod examples;

use std::process::Command;

use examples::example_binary;

/// One row of the coordinator's report.
#[derive(Debug)]
struct Row {
    worker: String,
    tasks: u32,
    fetch_calls: u32,
    fetch_failures: u32,
    routed: u32,
    probes: u32,
    budget: u32,
    fetch_state: String,
}

fn rows(out: &str) -> Vec<Row> {
    out.lines()
        .skip_while(|l| !l.starts_with("worker  tasks"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f.len(), 8, "a report row: {l:?}");
            let n = |i: usize| f[i].parse::<u32>().expect("a number");
            Row {
                worker: f[0].to_owned(),
                tasks: n(1),
                fetch_calls: n(2),
                fetch_failures: n(3),
                routed: n(4),
                probes: n(5),
                budget: n(6),
                fetch_state: f[7].to_owned(),
            }
        })
        .collect()
}

fn run(args: &[&str]) -> String {
    let output = Command::new(example_binary("fleet"))
        .args(args)
        .output()
        .expect("run the fleet example");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "fleet {args:?}: {}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn b11_workers_share_an_open_circuit_and_spend_nothing_on_it() {
    let out = run(&["--workers", "3", "--tasks", "24"]);
    let rows = rows(&out);
    assert_eq!(rows.len(), 3, "{out}");
    assert_eq!(
        rows.iter().map(|r| r.tasks).sum::<u32>(),
        24,
        "every task done once: {out}"
    );
    let first = &rows[0];
    assert_eq!(first.worker, "w1");
    // Its threshold (3), then each probe of its (every fourth attempt, one at a time
    // fleet-wide) failed too: the upstream never mends in this run.
    assert_eq!(
        first.fetch_failures,
        3 + first.probes,
        "w1 opened fetch: {out}"
    );
    assert_eq!(first.fetch_calls, first.fetch_failures, "{out}");
    for row in &rows[1..] {
        // Started after the circuit was shared: every fetch of theirs went through the cache;
        // the only calls to the upstream are probes (one at a time, fleet-wide).
        assert_eq!(row.fetch_calls, row.probes, "{row:?}\n{out}");
        assert_eq!(row.fetch_failures, row.probes, "{row:?}");
        assert_eq!(row.routed + row.probes, row.tasks, "{row:?}");
        assert_eq!(
            row.budget, row.probes,
            "only failed probes are charged: {row:?}"
        );
        assert!(
            out.contains(&format!("{} task-", row.worker))
                && out.contains("fetch OPEN, opened by w1 → read through the cache"),
            "{out}"
        );
    }
    assert!(out.contains("found it opened by another worker and spent none of their budget on it"));
}

#[test]
fn b11_a_probe_closes_the_circuit_for_every_worker_once_it_mends() {
    let out = run(&["--workers", "3", "--tasks", "60", "--heal-after", "900"]);
    let rows = rows(&out);
    assert_eq!(rows.iter().map(|r| r.tasks).sum::<u32>(), 60, "{out}");
    let probes: u32 = rows.iter().map(|r| r.probes).sum();
    assert!(probes >= 1, "a probe found it mended: {out}");
    for row in &rows {
        assert_eq!(
            row.fetch_state, "CLOSED",
            "closed for every worker: {row:?}\n{out}"
        );
    }
    // Fetched again after the close, on every worker that still had tasks.
    assert!(out.contains(": fetched; summary"), "{out}");
}
