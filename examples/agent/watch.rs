//! `--watch`: a live panel of the run for a person — every tool's circuit state and
//! consecutive failures, the failure budget, where the run is — that changes as the run goes,
//! without garbling the log.
//!
//! The log (the agent's transcript) and the panel go through one [`Console`]: one lock, so a
//! log line and a frame never interleave, and the log is written a whole line at a time (a
//! frame never lands inside a line).
//!
//! - **On a terminal** ([`Mode::Live`]: the panel's stream — stderr — is a terminal and `TERM`
//!   is not `dumb`): the panel is drawn at the bottom and redrawn in place with ANSI cursor
//!   moves when the state changes (an observed event, e.g. a circuit going HALF-OPEN while its
//!   probe runs, or a call recorded) or the run moves on (a step). When the log goes to the
//!   same terminal, each log line is written *above* the panel: erase the panel (cursor up by
//!   the rows it drew, erase down), write the line, redraw it — as indicatif's
//!   `MultiProgress::println` does — so the scrollback keeps the whole log, unbroken. Rows are
//!   drawn with the terminal's auto-wrap off, so a row wider than the terminal is clipped, not
//!   wrapped, and the erase always removes exactly the rows drawn. Colour unless `NO_COLOR` is
//!   set (to anything but empty). The panel is erased at the end: the final reports show the
//!   same state, in full.
//! - **Elsewhere** ([`Mode::Plain`]: pipes, files, CI, tests): each frame whose state differs
//!   from the last one written is written whole, as a block from `╭─ watch · …` to `╰─`, every
//!   row in between starting with `│`, interleaved in order with the log lines, at a line
//!   boundary. No colour, no cursor moves. A frame captured during a call (a probe's
//!   HALF-OPEN) is written at the next refresh point, after the log lines that tell of that
//!   call, so a frame always follows the lines it illustrates. `grep -v '^[╭│╰]'` gives back
//!   the log exactly as a run without `--watch` prints it.
//!
//! Frames are made on the agent's thread, synchronously: from the expeditor's observer (which
//! runs after the expeditor has released its lock, so reading the state table there is safe)
//! and at the agent's refresh points (after each call, each sub-task, each step). That keeps
//! their place in the log deterministic; a thread waiting on `Expeditor::watch()` would see the
//! same changes but write its frames wherever the log happened to be.

use std::env;
use std::fmt::Write as _;
use std::io::{self, IsTerminal, Write};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agent_circuit_breaker::{CircuitState, Expeditor, PauseReason, report::BudgetStatus};

/// Where and how the panel is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The panel's writer is a terminal: the panel is redrawn in place. `shared`: the log goes
    /// to the same terminal, so each log line is written above the panel.
    Live { shared: bool },
    /// Not a terminal: each frame that changed is written as a plain block at a line boundary;
    /// `into_log`: into the log's stream, in order with its lines (else to the panel's writer,
    /// e.g. stderr when stdout carries `--json`).
    Plain { into_log: bool },
}

/// One tool's row of a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub tool: String,
    pub state: CircuitState,
    /// Consecutive failures.
    pub fails: u32,
    /// The last failure's one-line summary, while the tool is failing (consecutive failures,
    /// or a circuit not CLOSED).
    pub last_failure: Option<String>,
}

/// One picture of the run: where it is, every tool's circuit, the budget, a pause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Where the run is: `step 3 · sub-task 3: Run test suite`.
    pub stage: String,
    pub rows: Vec<Row>,
    pub budget: BudgetStatus,
    /// Why every call is paused, if it is.
    pub paused: Option<String>,
}

const GREEN: &str = "32";
const YELLOW: &str = "33";
const RED: &str = "1;31";
const BOLD: &str = "1";

/// `text` in SGR `code` when `color`.
fn paint(text: &str, code: &str, color: bool) -> String {
    if color {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_owned()
    }
}

/// `text` painted, then padded to `width` columns (the padding outside the colour).
fn cell(text: &str, width: usize, code: Option<&str>, color: bool) -> String {
    let pad = width.saturating_sub(text.chars().count());
    let text = code.map_or_else(|| text.to_owned(), |code| paint(text, code, color));
    format!("{text}{}", " ".repeat(pad))
}

impl Frame {
    /// The expeditor's state now, at `stage`.
    pub fn of(expeditor: &Expeditor, stage: &str) -> Self {
        let table = expeditor.state_table();
        let rows = table
            .rows
            .iter()
            .map(|r| Row {
                tool: r.tool.clone(),
                state: r.state,
                fails: r.consecutive_failures,
                last_failure: r
                    .last_failure
                    .as_ref()
                    .filter(|_| r.consecutive_failures > 0 || r.state != CircuitState::Closed)
                    .map(|m| m.failure.summary().into_owned()),
            })
            .collect();
        let paused = expeditor.paused().map(|reason| {
            match reason {
                PauseReason::BudgetExhausted { .. } => "failure budget exhausted",
                PauseReason::Systemic { .. } => "systemic failure, recovery not confirmed",
                PauseReason::NothingAchievable => "nothing achievable with the tools that work",
                _ => "every call is paused",
            }
            .to_owned()
        });
        Frame {
            stage: stage.to_owned(),
            rows,
            budget: table.budget,
            paused,
        }
    }

    /// Whether `other` shows the same state: the stage aside, what a plain log compares.
    pub fn same_state(&self, other: &Frame) -> bool {
        self.rows == other.rows && self.budget == other.budget && self.paused == other.paused
    }

    /// The frame's rows of text, the first `╭─ watch · …`, the last `╰─`, each other starting
    /// with `│`; SGR colours when `color`.
    pub fn lines(&self, color: bool) -> Vec<String> {
        let tool_width = self
            .rows
            .iter()
            .map(|r| r.tool.chars().count())
            .chain(["Tool".len()])
            .max()
            .unwrap_or(0)
            + 2;
        let state_width = "HALF-OPEN".len() + 2;
        let fails_width = "Fails".len() + 2;
        let mut lines = vec![format!(
            "╭─ {} · {}",
            paint("watch", BOLD, color),
            self.stage
        )];
        lines.push(format!(
            "│ {}{}{}Last failure",
            cell("Tool", tool_width, None, color),
            cell("State", state_width, None, color),
            cell("Fails", fails_width, None, color),
        ));
        for row in &self.rows {
            let code = match row.state {
                CircuitState::Closed => GREEN,
                CircuitState::Open => RED,
                CircuitState::HalfOpen => YELLOW,
            };
            let line = format!(
                "│ {}{}{}{}",
                cell(&row.tool, tool_width, None, color),
                cell(row.state.as_str(), state_width, Some(code), color),
                cell(&row.fails.to_string(), fails_width, None, color),
                row.last_failure.as_deref().unwrap_or(""),
            );
            lines.push(line.trim_end().to_owned());
        }
        let BudgetStatus { consumed, limit } = self.budget;
        let mut budget = format!("│ Failure budget: {consumed} / {limit} consumed");
        if limit <= 20 {
            let spent = consumed.min(limit) as usize;
            let code = if consumed >= limit { RED } else { YELLOW };
            budget.push_str("  ");
            if spent > 0 {
                budget.push_str(&paint(&"■".repeat(spent), code, color));
            }
            budget.push_str(&"□".repeat(limit as usize - spent));
        }
        lines.push(budget);
        if let Some(why) = &self.paused {
            lines.push(format!(
                "│ {}",
                paint(&format!("PAUSED — {why}"), RED, color)
            ));
        }
        lines.push("╰─".to_owned());
        lines
    }
}

/// The panel on a terminal: draws a frame, and erases exactly the rows it drew.
#[derive(Debug, Default)]
pub struct Panel {
    /// Rows of the panel on the terminal now, the cursor at the start of the row below them.
    drawn: usize,
}

/// Auto-wrap off while drawing (a row wider than the terminal is clipped, so it takes one
/// row), then on again.
const WRAP_OFF: &str = "\x1b[?7l";
const WRAP_ON: &str = "\x1b[?7h";

impl Panel {
    /// Rows drawn now.
    pub fn drawn(&self) -> usize {
        self.drawn
    }

    /// Appends to `out` what erases the panel: to the start of its first row, erase down.
    pub fn erase(&mut self, out: &mut String) {
        if self.drawn > 0 {
            let _ = write!(out, "\r\x1b[{}A\x1b[J", self.drawn);
            self.drawn = 0;
        }
    }

    /// Appends to `out` what replaces the panel with `frame`.
    pub fn draw(&mut self, frame: &Frame, color: bool, out: &mut String) {
        self.erase(out);
        let lines = frame.lines(color);
        out.push_str(WRAP_OFF);
        for line in &lines {
            out.push_str(line);
            out.push('\n');
        }
        out.push_str(WRAP_ON);
        self.drawn = lines.len();
    }
}

struct Inner {
    log: Box<dyn Write + Send>,
    panel_out: Box<dyn Write + Send>,
    mode: Mode,
    color: bool,
    panel: Panel,
    /// The frame shown last (live: on the terminal; plain: written).
    shown: Option<Frame>,
    /// Plain: frames captured during a call, written at the next refresh point.
    pending: Vec<Frame>,
    /// Log bytes after the last newline, held until their line is complete.
    partial: Vec<u8>,
    stage: String,
    expeditor: Option<Expeditor>,
}

/// The log and the panel behind one lock. A clone is the same console.
#[derive(Clone)]
pub struct Console(Arc<Mutex<Inner>>);

impl Console {
    /// A console writing the log to `log` and the panel to `panel` (the same stream as `log`
    /// for [`Mode::Plain`]`{ into_log: true }`).
    pub fn new(
        log: Box<dyn Write + Send>,
        panel: Box<dyn Write + Send>,
        mode: Mode,
        color: bool,
    ) -> Self {
        Console(Arc::new(Mutex::new(Inner {
            log,
            panel_out: panel,
            mode,
            color,
            panel: Panel::default(),
            shown: None,
            pending: Vec::new(),
            partial: Vec::new(),
            stage: "before step 1".to_owned(),
            expeditor: None,
        })))
    }

    /// The log on stdout, the panel on stderr: live when stderr is a terminal (and `TERM` is
    /// not `dumb`), sharing it with the log when stdout is one too; plain frames otherwise,
    /// into stdout with the log — or to stderr when `json` (stdout carries only the JSON).
    /// Colour on a terminal unless `NO_COLOR` is set to anything but empty.
    pub fn stdio(json: bool) -> Self {
        let dumb = env::var_os("TERM").is_some_and(|t| t == "dumb");
        let live = io::stderr().is_terminal() && !dumb;
        let no_color = env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let mode = if live {
            Mode::Live {
                shared: io::stdout().is_terminal(),
            }
        } else {
            Mode::Plain { into_log: !json }
        };
        Console::new(
            Box::new(io::stdout()),
            Box::new(io::stderr()),
            mode,
            live && !no_color,
        )
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The log's writer: whole lines through the lock.
    pub fn writer(&self) -> LogWriter {
        LogWriter(self.clone())
    }

    /// The expeditor to show, from now on.
    pub fn attach(&self, expeditor: &Expeditor) {
        self.lock().expeditor = Some(expeditor.clone());
    }

    /// An event, as it happens: on a terminal the panel follows at once; in a plain log the
    /// frame waits for the next refresh point.
    pub fn event(&self) {
        let mut inner = self.lock();
        match inner.mode {
            Mode::Live { .. } => inner.refresh(),
            Mode::Plain { .. } => inner.capture(),
        }
    }

    /// Where the run is now (`step 3 · sub-task 3: Run test suite`); the panel follows.
    pub fn stage(&self, stage: String) {
        let mut inner = self.lock();
        inner.stage = stage;
        inner.refresh();
    }

    /// The log is between calls: show the state if it changed.
    pub fn refresh(&self) {
        self.lock().refresh();
    }

    /// The run is over: what is left of the log is written, the panel erased, the expeditor
    /// let go of (the console is one of its observers).
    pub fn close(&self) {
        let mut inner = self.lock();
        inner.refresh();
        if let Mode::Live { .. } = inner.mode {
            let mut out = String::new();
            inner.panel.erase(&mut out);
            let _ = inner.panel_bytes(out.as_bytes());
        }
        let partial = std::mem::take(&mut inner.partial);
        if !partial.is_empty() {
            let _ = inner.log_bytes(&partial);
        }
        inner.shown = None;
        inner.expeditor = None;
    }
}

impl Inner {
    fn frame(&self) -> Option<Frame> {
        self.expeditor.as_ref().map(|e| Frame::of(e, &self.stage))
    }

    /// Plain: keeps the frame now if its state differs from the last one kept or written.
    fn capture(&mut self) {
        let Some(frame) = self.frame() else { return };
        let last = self.pending.last().or(self.shown.as_ref());
        if !last.is_some_and(|l| l.same_state(&frame)) {
            self.pending.push(frame);
        }
    }

    fn refresh(&mut self) {
        match self.mode {
            Mode::Live { .. } => {
                let Some(frame) = self.frame() else { return };
                if self.shown.as_ref() != Some(&frame) {
                    let mut out = String::new();
                    self.panel.draw(&frame, self.color, &mut out);
                    self.shown = Some(frame);
                    let _ = self.panel_bytes(out.as_bytes());
                }
            }
            Mode::Plain { into_log } => {
                self.capture();
                let frames = std::mem::take(&mut self.pending);
                let Some(last) = frames.last().cloned() else {
                    return;
                };
                let mut text = String::new();
                for frame in &frames {
                    for line in frame.lines(false) {
                        text.push_str(&line);
                        text.push('\n');
                    }
                }
                let _ = if into_log {
                    self.log_bytes(text.as_bytes())
                } else {
                    self.panel_bytes(text.as_bytes())
                };
                self.shown = Some(last);
            }
        }
    }

    fn panel_bytes(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.panel_out.write_all(bytes)?;
        self.panel_out.flush()
    }

    fn log_bytes(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.log.write_all(bytes)?;
        self.log.flush()
    }

    /// Whole log lines: above the panel when they share its terminal.
    fn log_lines(&mut self, lines: &[u8]) -> io::Result<()> {
        let above = matches!(self.mode, Mode::Live { shared: true }) && self.panel.drawn() > 0;
        if !above {
            return self.log_bytes(lines);
        }
        let mut erase = String::new();
        self.panel.erase(&mut erase);
        self.panel_bytes(erase.as_bytes())?;
        self.log_bytes(lines)?;
        if let Some(frame) = self.shown.clone() {
            let mut out = String::new();
            self.panel.draw(&frame, self.color, &mut out);
            self.panel_bytes(out.as_bytes())?;
        }
        Ok(())
    }
}

/// The log's side of a [`Console`]: bytes are held until their line is complete, then written
/// under the console's lock.
pub struct LogWriter(Console);

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut inner = self.0.lock();
        inner.partial.extend_from_slice(buf);
        if let Some(end) = inner.partial.iter().rposition(|&b| b == b'\n') {
            let rest = inner.partial.split_off(end + 1);
            let lines = std::mem::replace(&mut inner.partial, rest);
            inner.log_lines(&lines)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.lock().log.flush()
    }
}
