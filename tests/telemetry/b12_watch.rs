//! B12, the live view for a person: the example agent's `--watch` (`examples/agent/watch.rs`).
//!
//! - Piped (not a terminal), the agent binary run with `--break bash --watch` writes a frame
//!   each time the state changes, between two lines of the log: the budget goes up across the
//!   frames and Bash goes CLOSED → OPEN, each frame after the log lines of the call that
//!   changed it; with the frames taken out, the log is the golden run without `--watch`
//!   (`tests/golden/agent_break_bash.txt`), every line whole and in order. With `--json` the
//!   frames go to stderr and stdout stays one JSON document.
//! - On a terminal, the panel is redrawn in place: a fake terminal (a grid, a cursor, auto-wrap,
//!   the few ANSI sequences the panel uses) replays what the console writes and shows that
//!   each erase removes exactly the rows drawn — the log lines above stay, whole, in order,
//!   also when a row is wider than the terminal — and that the panel is gone at the end.

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/examples.rs"]
mod examples;
#[path = "../common/run_output.rs"]
mod run_output;
// The console's code, as the agent uses it; some of it (the stdio detection) only `main.rs`.
#[allow(dead_code)]
#[path = "../../examples/agent/watch.rs"]
mod watch;

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};

use agent_circuit_breaker::{CapabilityMap, Decision, Expeditor, ToolSpec};

use examples::example_binary;
use run_output::normalise;
use watch::{Console, Frame, Mode};

// ----- piped: the agent binary ----------------------------------------------------------------

/// A piece of a `--watch` log: a line of the transcript, or a frame (its rows).
#[derive(Debug)]
enum Piece {
    Line(String),
    Frame(Vec<String>),
}

/// Splits a piped `--watch` output into transcript lines and frames, checking that every frame
/// is whole: `╭─ watch · …`, rows starting with `│`, `╰─`.
fn pieces(output: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut frame: Option<Vec<String>> = None;
    for line in output.lines() {
        if let Some(rows) = frame.as_mut() {
            rows.push(line.to_owned());
            if line == "╰─" {
                pieces.push(Piece::Frame(frame.take().expect("open")));
            } else {
                assert!(line.starts_with("│ "), "a frame's row: {line:?}");
            }
        } else if line.starts_with("╭─ watch · ") {
            frame = Some(vec![line.to_owned()]);
        } else {
            for mark in ['╭', '│', '╰', '\x1b'] {
                assert!(
                    !line.contains(mark),
                    "a frame's mark {mark:?} inside a line of the log: {line:?}"
                );
            }
            pieces.push(Piece::Line(line.to_owned()));
        }
    }
    assert!(frame.is_none(), "the last frame is not closed");
    pieces
}

/// A frame's budget: `(consumed, limit)`.
fn budget(rows: &[String]) -> (u32, u32) {
    let line = rows
        .iter()
        .find_map(|r| r.strip_prefix("│ Failure budget: "))
        .expect("a budget line");
    let (consumed, rest) = line.split_once(" / ").expect("N / M");
    let limit = rest.split(' ').next().expect("M");
    (consumed.parse().expect("N"), limit.parse().expect("M"))
}

/// A frame's state of `tool`.
fn state<'a>(rows: &'a [String], tool: &str) -> &'a str {
    rows.iter()
        .find_map(|r| {
            let mut cells = r.strip_prefix("│ ")?.split_whitespace();
            (cells.next()? == tool).then(|| cells.next()).flatten()
        })
        .unwrap_or_else(|| panic!("no row for {tool} in {rows:#?}"))
}

fn golden(name: &str) -> String {
    let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Runs the agent binary with `args`, stdout and stderr piped (neither is a terminal).
fn agent(args: &[&str]) -> (String, String) {
    let output = Command::new(example_binary("agent"))
        .args(args)
        .env_remove("NO_COLOR")
        .env("TERM", "xterm-256color")
        .output()
        .expect("run the agent");
    assert!(output.status.success(), "{output:?}");
    (
        String::from_utf8(output.stdout).expect("UTF-8 stdout"),
        String::from_utf8(output.stderr).expect("UTF-8 stderr"),
    )
}

#[test]
fn b12_watch_piped_frames_follow_the_run_between_whole_lines() {
    let (stdout, stderr) = agent(&["--break", "bash", "--watch"]);
    assert_eq!(stderr, "", "piped, the frames go with the log on stdout");
    let pieces = pieces(&stdout);
    let frames: Vec<&Vec<String>> = pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Frame(rows) => Some(rows),
            Piece::Line(_) => None,
        })
        .collect();

    // Several frames, each differing from the one before (a frame is written when the state
    // changed), the budget going up across them and Bash going CLOSED -> OPEN.
    assert!(frames.len() >= 4, "{} frames:\n{stdout}", frames.len());
    let states = |f: &Vec<String>| f[1..].to_vec();
    for pair in frames.windows(2) {
        assert_ne!(states(pair[0]), states(pair[1]), "a frame repeats the last");
    }
    let budgets: Vec<(u32, u32)> = frames.iter().map(|f| budget(f)).collect();
    assert!(
        budgets.windows(2).all(|b| b[0].0 <= b[1].0),
        "the budget never goes down: {budgets:?}"
    );
    let consumed: Vec<u32> = budgets.iter().map(|b| b.0).collect();
    for n in 0..=3 {
        assert!(consumed.contains(&n), "a frame at {n} / 5: {budgets:?}");
    }
    assert!(budgets.iter().all(|b| b.1 == 5));
    let bash: Vec<&str> = frames.iter().map(|f| state(f, "Bash")).collect();
    let opened = bash
        .iter()
        .position(|s| *s == "OPEN")
        .expect("Bash goes OPEN");
    assert!(opened > 0 && bash[..opened].iter().all(|s| *s == "CLOSED"));
    assert!(bash[opened..].iter().all(|s| *s == "OPEN"), "{bash:?}");
    assert!(frames[0][0].contains("step 1 · sub-task 1: Read configuration files"));
    assert!(frames[opened][0].contains("step 3 · sub-task 3: Run test suite"));

    // As the run goes: a frame follows the lines of the call that changed the state, and
    // comes before the lines after it.
    let index = |needle: &str| {
        pieces
            .iter()
            .position(|p| matches!(p, Piece::Line(l) if l.contains(needle)))
            .unwrap_or_else(|| panic!("no line {needle:?}"))
    };
    let frame_at: Vec<usize> = pieces
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p, Piece::Frame(_)))
        .map(|(i, _)| i)
        .collect();
    let open_at = frame_at[opened];
    assert!(index("FAILED Bash: timeout after 1s") < open_at);
    assert!(index("EVENT  Circuit OPENED for Bash") < open_at);
    assert!(open_at < index("✗ Sub-task 3 FAILED — Bash circuit OPEN"));
    assert!(frame_at[0] < index("── Step 2 ·"));
    let one = frame_at
        .iter()
        .zip(&budgets)
        .find(|(_, b)| b.0 == 1)
        .map(|(at, _)| *at)
        .expect("a frame at 1 / 5");
    assert!(index("FAILED Bash: permission denied") < one);
    assert!(one < index("FAILED Bash: command not found"));

    // Every line of the run without --watch, whole and in order; nothing else but frames.
    let log: String = pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Line(l) => Some(format!("{l}\n")),
            Piece::Frame(_) => None,
        })
        .collect();
    let log = normalise(&log);
    let expected = golden("agent_break_bash.txt");
    let mut lines = log.lines();
    for want in expected.lines() {
        assert!(
            lines.any(|l| l == want),
            "the golden line {want:?} is missing, or out of order, in the --watch log"
        );
    }
    assert_eq!(
        log,
        expected.trim_end_matches('\n'),
        "the frames aside, --watch prints the run byte for byte"
    );
}

/// The piped `--watch` run, frames and all, as its golden says
/// (`tests/golden/agent_break_bash_watch.txt`, normalised like every agent golden): the
/// excerpt of the live view in `docs/transcripts.md` is tied to it by `tests/reports/readme_output.rs`.
#[test]
fn b12_watch_piped_run_matches_its_golden() {
    let (stdout, _) = agent(&["--break", "bash", "--watch"]);
    common::assert_golden("agent_break_bash_watch.txt", normalise(&stdout).trim_end());
}

#[test]
fn b12_watch_with_json_keeps_stdout_one_json_document() {
    let (stdout, stderr) = agent(&["--break", "bash", "--watch", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("stdout is JSON");
    assert_eq!(report["report"]["budget"]["consumed"], 3);
    let pieces = pieces(&stderr);
    let frames = pieces
        .iter()
        .filter(|p| matches!(p, Piece::Frame(_)))
        .count();
    assert!(frames >= 4, "the frames go to stderr:\n{stderr}");
    assert!(pieces.iter().all(|p| matches!(p, Piece::Frame(_))));
}

// ----- on a terminal: the redraw --------------------------------------------------------------

/// A fake terminal: every byte written, replayed on demand onto a grid `width` columns wide
/// with a cursor, `\n` as CR LF (a tty's `onlcr`), `\r`, auto-wrap (`ESC[?7h` / `ESC[?7l`),
/// cursor up (`ESC[nA`), erase down (`ESC[J`), colours (`ESC[…m`, ignored). Anything else
/// fails the test. Its screen is the scrollback: rows are never lost off the top.
#[derive(Clone)]
struct Terminal {
    bytes: Arc<Mutex<Vec<u8>>>,
    width: usize,
}

impl Write for Terminal {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Terminal {
    fn new(width: usize) -> Self {
        Terminal {
            bytes: Arc::default(),
            width,
        }
    }

    /// The rows on the screen now, trailing blanks trimmed, without the empty rows at the
    /// bottom (the cursor's, after a last newline).
    fn screen(&self) -> Vec<String> {
        let bytes = self
            .bytes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let text = String::from_utf8(bytes).expect("UTF-8");
        let mut rows: Vec<Vec<char>> = vec![Vec::new()];
        let (mut row, mut col, mut wrap) = (0usize, 0usize, true);
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\n' => {
                    row += 1;
                    col = 0;
                }
                '\r' => col = 0,
                '\x1b' => {
                    assert_eq!(chars.next(), Some('['), "a CSI sequence");
                    let mut params = String::new();
                    let command = loop {
                        let c = chars.next().expect("a whole sequence");
                        if c.is_ascii_digit() || c == ';' || c == '?' {
                            params.push(c);
                        } else {
                            break c;
                        }
                    };
                    match (command, params.as_str()) {
                        ('m', _) => {}
                        ('l', "?7") => wrap = false,
                        ('h', "?7") => wrap = true,
                        ('A', n) => {
                            let n: usize = n.parse().expect("ESC[nA");
                            assert!(n <= row, "cursor up {n} from row {row}: off the top");
                            row -= n;
                        }
                        ('J', "") => {
                            rows.truncate(row + 1);
                            rows[row].truncate(col);
                        }
                        other => panic!("unexpected sequence {other:?}"),
                    }
                }
                c => {
                    if col >= self.width {
                        if wrap {
                            row += 1;
                            col = 0;
                        } else {
                            col = self.width - 1;
                        }
                    }
                    while rows.len() <= row {
                        rows.push(Vec::new());
                    }
                    let line = &mut rows[row];
                    while line.len() <= col {
                        line.push(' ');
                    }
                    line[col] = c;
                    col += 1;
                }
            }
            while rows.len() <= row {
                rows.push(Vec::new());
            }
        }
        let mut screen: Vec<String> = rows
            .iter()
            .map(|r| r.iter().collect::<String>().trim_end().to_owned())
            .collect();
        while screen.last().is_some_and(String::is_empty) {
            screen.pop();
        }
        screen
    }
}

/// Rows as a terminal `width` wide shows them: wrapped (the log) or clipped (the panel).
fn wrapped(lines: &[&str], width: usize) -> Vec<String> {
    let mut rows = Vec::new();
    for line in lines {
        let chars: Vec<char> = line.chars().collect();
        if chars.is_empty() {
            rows.push(String::new());
        }
        for chunk in chars.chunks(width) {
            rows.push(chunk.iter().collect::<String>().trim_end().to_owned());
        }
    }
    rows
}

/// A frame's rows as a terminal `width` wide shows them with auto-wrap off: what does not fit
/// overwrites the last column, so it shows the row's first `width - 1` characters and its last.
fn clipped(frame: &Frame, width: usize) -> Vec<String> {
    frame
        .lines(false)
        .iter()
        .map(|l| {
            let chars: Vec<char> = l.chars().collect();
            let row: String = if chars.len() <= width {
                chars.iter().collect()
            } else {
                chars[..width - 1].iter().chain(chars.last()).collect()
            };
            row.trim_end().to_owned()
        })
        .collect()
}

fn expeditor() -> Expeditor {
    let map = CapabilityMap::new()
        .tool(
            ToolSpec::new("Grep")
                .provides("content search across files")
                .fallback("ask the user which files to examine"),
        )
        .tool(
            ToolSpec::new("Bash")
                .provides("command execution")
                .fallback("report commands that need to be run manually"),
        );
    Expeditor::new(map).expect("a valid map")
}

fn fail(expeditor: &Expeditor, tool: &str, message: &'static str) {
    let id = expeditor.tool(tool).expect("declared");
    match expeditor.decide(id) {
        Decision::Call(ticket) | Decision::Probe(ticket) => {
            let _ = ticket.failure(message);
        }
        _ => panic!("{tool} is callable"),
    }
}

/// The terminal's screen after the log `lines` and, below them, the panel showing `frame`.
fn expect(term: &Terminal, lines: &[&str], frame: Option<&Frame>) {
    let mut want = wrapped(lines, term.width);
    if let Some(frame) = frame {
        want.extend(clipped(frame, term.width));
    }
    assert_eq!(term.screen(), want);
}

fn redraw_on(width: usize, color: bool) {
    let term = Terminal::new(width);
    let console = Console::new(
        Box::new(term.clone()),
        Box::new(term.clone()),
        Mode::Live { shared: true },
        color,
    );
    let mut log = console.writer();
    let expeditor = expeditor();
    writeln!(log, "header: before the panel").unwrap();
    console.attach(&expeditor);
    expect(&term, &["header: before the panel"], None);

    console.stage("step 1 · sub-task 1: Search".to_owned());
    let frame = Frame::of(&expeditor, "step 1 · sub-task 1: Search");
    expect(&term, &["header: before the panel"], Some(&frame));
    let drawn = frame.lines(false).len();
    assert_eq!(
        drawn,
        2 + 2 + 1 + 1,
        "title, header, a row per tool, budget, end"
    );

    // A log line in pieces: nothing moves until it is whole, then it is written above the
    // panel, which is drawn again below it.
    log.write_all(b"  Grep /x/ in .  -- a line long enough to wrap on a narrow terminal")
        .unwrap();
    expect(&term, &["header: before the panel"], Some(&frame));
    log.write_all(b" (end)\n  two lines\n  at once\n").unwrap();
    let mut lines = vec![
        "header: before the panel",
        "  Grep /x/ in .  -- a line long enough to wrap on a narrow terminal (end)",
        "  two lines",
        "  at once",
    ];
    expect(&term, &lines, Some(&frame));

    // A failure: the panel follows at once (an event) or at the refresh point.
    fail(&expeditor, "Bash", "permission denied (exit 126)");
    console.refresh();
    let one = Frame::of(&expeditor, "step 1 · sub-task 1: Search");
    assert_ne!(one, frame);
    expect(&term, &lines, Some(&one));
    for message in ["command not found (exit 127)", "timeout after 1s"] {
        fail(&expeditor, "Bash", message);
        console.event();
    }
    let open = Frame::of(&expeditor, "step 1 · sub-task 1: Search");
    assert!(open.lines(false).iter().any(|l| l.contains("OPEN")));
    expect(&term, &lines, Some(&open));
    writeln!(log, "    EVENT  Circuit OPENED for Bash").unwrap();
    lines.push("    EVENT  Circuit OPENED for Bash");
    expect(&term, &lines, Some(&open));
    console.stage("step 2 · sub-task 2: Test".to_owned());
    let step2 = Frame::of(&expeditor, "step 2 · sub-task 2: Test");
    expect(&term, &lines, Some(&step2));

    // The end: the rest of the log (an unfinished line too), and no panel.
    write!(log, "Result: done").unwrap();
    console.close();
    lines.push("Result: done");
    expect(&term, &lines, None);

    // Every erase went up by exactly the rows the draw before it made.
    let bytes = term.bytes.lock().unwrap().clone();
    let text = String::from_utf8(bytes).unwrap();
    for up in text.split("\x1b[").skip(1) {
        if let Some(n) = up
            .split_once('A')
            .and_then(|(n, _)| n.parse::<usize>().ok())
        {
            assert_eq!(n, drawn, "an erase goes up by the rows drawn");
        }
    }
    assert_eq!(text.contains("\x1b[32m"), color, "colour only when asked");
}

#[test]
fn b12_watch_redraw_erases_exactly_the_rows_drawn() {
    redraw_on(200, false);
}

#[test]
fn b12_watch_redraw_on_a_narrow_terminal_clips_the_panel_and_keeps_the_log() {
    // Narrower than the panel's rows and than a log line: the panel is clipped (auto-wrap off
    // while drawing), the log wraps, and each erase still removes exactly the panel.
    redraw_on(24, true);
}

#[test]
fn b12_watch_on_a_real_terminal_the_scrollback_is_the_plain_run() {
    // A pseudo-terminal from util-linux's script(1) (Debian's bsdutils, which `.ci/run`
    // installs if missing): stdout and stderr are both the terminal, so the panel is live and
    // the log is written above it. Without it the test fails; it never skips.
    let util_linux = Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("util-linux"));
    assert!(
        util_linux,
        "this test needs util-linux's script(1) to make a terminal (Debian: apt-get install bsdutils)"
    );
    let binary = example_binary("agent");
    let on_a_terminal = |env: &[(&str, &str)]| {
        let command = format!("'{}' --break bash --watch", binary.display());
        let mut script = Command::new("script");
        script
            .args(["-qfec", &command, "/dev/null"])
            .stdin(Stdio::null())
            .env_remove("NO_COLOR")
            .env("TERM", "xterm-256color");
        for (key, value) in env {
            script.env(key, value);
        }
        let output = script.output().expect("run script(1)");
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).expect("UTF-8")
    };
    let expected = golden("agent_break_bash.txt");
    let expected = expected.trim_end_matches('\n');

    let raw = on_a_terminal(&[]);
    let redraws = raw.matches("\x1b[J").count();
    assert!(
        redraws > 50,
        "the panel is redrawn in place: {redraws} erases"
    );
    assert!(raw.contains("\x1b[1;31mOPEN"), "Bash OPEN, in red");
    let mut term = Terminal::new(usize::MAX);
    term.write_all(raw.as_bytes()).unwrap();
    assert_eq!(
        normalise(&term.screen().join("\n")),
        expected,
        "what stays on the terminal is the run without --watch, line for line"
    );

    // NO_COLOR: the same redraws, no colour.
    let raw = on_a_terminal(&[("NO_COLOR", "1")]);
    assert!(raw.matches("\x1b[J").count() > 50);
    assert!(
        !raw.contains("\x1b[0m") && !raw.contains("\x1b[32m"),
        "no colour with NO_COLOR"
    );
    let mut term = Terminal::new(usize::MAX);
    term.write_all(raw.as_bytes()).unwrap();
    assert_eq!(normalise(&term.screen().join("\n")), expected);

    // TERM=dumb: no cursor moves; plain frames between the lines, as in a pipe.
    let raw = on_a_terminal(&[("TERM", "dumb")]);
    assert!(
        !raw.contains('\x1b'),
        "no escape sequence for a dumb terminal"
    );
    let frames = pieces(&raw.replace("\r\n", "\n"))
        .iter()
        .filter(|p| matches!(p, Piece::Frame(_)))
        .count();
    assert!(frames >= 4, "{frames} plain frames");
}

#[test]
fn b12_watch_plain_frames_wait_for_a_line_boundary_and_a_change() {
    let term = Terminal::new(200);
    let console = Console::new(
        Box::new(term.clone()),
        Box::new(Terminal::new(200)),
        Mode::Plain { into_log: true },
        false,
    );
    let mut log = console.writer();
    let expeditor = expeditor();
    console.attach(&expeditor);
    console.stage("step 1".to_owned());
    let first = Frame::of(&expeditor, "step 1");
    let mut want: Vec<String> = first.lines(false);
    assert_eq!(term.screen(), want);

    // An event inside a call writes nothing yet; the refresh after the call's lines does.
    write!(log, "  Bash $ ./run_tests.sh").unwrap();
    fail(&expeditor, "Bash", "permission denied (exit 126)");
    console.event();
    assert_eq!(term.screen(), want, "nothing inside a line");
    writeln!(log, "   # unit tests").unwrap();
    writeln!(log, "    FAILED Bash: permission denied (exit 126)").unwrap();
    want.push("  Bash $ ./run_tests.sh   # unit tests".to_owned());
    want.push("    FAILED Bash: permission denied (exit 126)".to_owned());
    assert_eq!(term.screen(), want);
    console.refresh();
    want.extend(Frame::of(&expeditor, "step 1").lines(false));
    assert_eq!(term.screen(), want);

    // Nothing changed: no frame, not even for a new step.
    console.refresh();
    console.stage("step 2".to_owned());
    writeln!(log, "── Step 2").unwrap();
    want.push("── Step 2".to_owned());
    console.close();
    assert_eq!(term.screen(), want);
    assert!(!term.bytes.lock().unwrap().contains(&0x1b), "no escape");
}
