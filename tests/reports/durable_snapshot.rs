//! Durable snapshots (R3.7, B3): saving writes a new file and renames it over the
//! old one (synced), so a process killed in the middle of saving leaves the previous snapshot
//! whole. The test runs a child process (this test binary again) that saves snapshots in a
//! loop, kills it at varying points, and restores what is on disk — every time.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use agent_circuit_breaker::{
    CapabilityMap, Decision, Expeditor, ToolSpec,
    snapshot::{Snapshot, SnapshotFileError},
};

const CHILD: &str = "CIRCUIT_BREAKER_SAVE_LOOP";

/// A map of `n` tools, so that snapshots are large enough (hundreds of KB) for a kill to land
/// in the middle of writing one.
fn expeditor(n: usize) -> Expeditor {
    let map = (0..n).fold(CapabilityMap::new(), |map, i| {
        map.tool(
            ToolSpec::new(format!("tool-{i}"))
                .provides(format!(
                    "capability number {i}, described at some length to weigh"
                ))
                .fallback("ask the user"),
        )
    });
    Expeditor::new(map).expect("valid map")
}

/// Records one more failure on tool `i % n`, so each snapshot differs from the last.
fn churn(expeditor: &Expeditor, i: usize, n: usize) {
    let id = expeditor.tool(&format!("tool-{}", i % n)).expect("known");
    if let Decision::Call(ticket) = expeditor.decide(id) {
        if i.is_multiple_of(3) {
            ticket.success();
        } else {
            let _ = ticket.failure(format!("failure number {i}"));
        }
    }
    if i.is_multiple_of(5) {
        expeditor.new_cycle();
    }
    expeditor.advance_step();
}

/// The child: saves forever, printing the number of each completed save.
#[test]
fn child_save_loop() {
    let Some(path) = std::env::var_os(CHILD) else {
        return; // Only runs as the child of `r3_7_a_kill_mid_save_leaves_a_whole_snapshot`.
    };
    let expeditor = expeditor(400);
    for i in 0.. {
        churn(&expeditor, i, 400);
        expeditor.save(&path).expect("save");
        println!("saved {i}");
    }
}

/// The saving child's test name in this binary: the file is a module of an area's binary
/// (`durable_snapshot::child_save_loop`), or a crate of its own.
fn child_test_name() -> String {
    match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::child_save_loop"),
        None => "child_save_loop".to_owned(),
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cb-durable-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn r3_7_a_kill_mid_save_leaves_a_whole_snapshot() {
    let dir = temp_dir("kill");
    let path = dir.join("breakers.json");
    let exe = std::env::current_exe().expect("test binary");
    let mut restored = 0;
    let mut mid_write = 0;
    for round in 0..24 {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                &child_test_name(),
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(CHILD, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the saving child");
        let stdout = child.stdout.take().expect("piped");
        // Kill after a varying number of completed saves: the next one is under way.
        let target = 3 + round * 2;
        for line in BufReader::new(stdout).lines() {
            let line = line.expect("child output");
            if line
                .strip_prefix("saved ")
                .and_then(|n| n.parse::<usize>().ok())
                .is_some_and(|n| n >= target)
            {
                break;
            }
        }
        // Real process timing, not test logic: vary where in the next save the kill lands.
        std::thread::sleep(std::time::Duration::from_micros(100 * (round as u64 % 24)));
        child.kill().expect("kill the child mid-save");
        let _ = child.wait();
        // A temporary file left behind means the kill landed while a new file was written.
        if !no_temp_files_left(&dir) {
            mid_write += 1;
            for entry in std::fs::read_dir(&dir)
                .expect("list")
                .filter_map(Result::ok)
            {
                if entry.file_name().to_string_lossy().contains(".tmp.") {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        // What is on disk is a whole snapshot, and it restores.
        let snapshot = Snapshot::load(&path).expect("the previous snapshot is intact");
        let fresh = expeditor(400);
        fresh.restore(&snapshot).expect("restores");
        assert_eq!(fresh.snapshot(), snapshot);
        restored += 1;
    }
    assert_eq!(restored, 24);
    eprintln!("24 kills, {mid_write} of them while a new snapshot file was being written");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn r3_7_a_truncated_or_foreign_file_is_an_error_and_changes_nothing() {
    let dir = temp_dir("bad");
    let path = dir.join("breakers.json");
    let source = expeditor(3);
    churn(&source, 1, 3);
    source.save(&path).expect("save");
    let bytes = std::fs::read(&path).expect("read back");

    let target = expeditor(3);
    churn(&target, 2, 3);
    let before = target.snapshot();
    for cut in [0, 1, bytes.len() / 2, bytes.len() - 1] {
        std::fs::write(&path, &bytes[..cut]).expect("write");
        let err = target
            .restore_from(&path)
            .expect_err("a cut file is refused");
        assert!(matches!(err, SnapshotFileError::Decode { .. }), "{err}");
        assert_eq!(
            target.snapshot(),
            before,
            "nothing restored from a cut file"
        );
    }
    let missing = dir.join("missing.json");
    assert!(matches!(
        target.restore_from(&missing),
        Err(SnapshotFileError::Io { .. })
    ));
    // A whole file restores.
    std::fs::write(&path, &bytes).expect("write");
    target.restore_from(&path).expect("restores");
    assert_eq!(target.snapshot(), source.snapshot());
    assert!(no_temp_files_left(&dir));
    let _ = std::fs::remove_dir_all(&dir);
}

fn no_temp_files_left(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .expect("list")
        .filter_map(Result::ok)
        .all(|e| !e.file_name().to_string_lossy().contains(".tmp."))
}
