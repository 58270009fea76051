//! The reference model: the requirements (R3, R4, R7, R9) written as plainly as possible,
//! with none of the crate's structure, so that a difference between it and the crate is a
//! question about one of them.

use super::setup::{NAMES, Setup};
use crate::capability::Severity;
use crate::{CircuitState, FailureCategory, PauseReason, SkipReason};

/// How many categories of a run the crate keeps (`recent_failures`).
const RUN_MEMORY: usize = 16;

#[derive(Debug, Clone)]
pub(super) struct MTool {
    pub(super) name: &'static str,
    pub(super) alternatives: Vec<(usize, Severity)>,
    pub(super) threshold: u32,
    pub(super) probe_every: u32,
    pub(super) state: CircuitState,
    pub(super) consecutive: u32,
    pub(super) total: u64,
    /// The categories of the current run of failures (the last 16).
    pub(super) run: Vec<FailureCategory>,
    pub(super) last_category: Option<FailureCategory>,
    /// The step of the last failure.
    pub(super) last_failed: Option<u64>,
    pub(super) opened_at: Option<u64>,
    pub(super) attempts: u32,
    pub(super) probe: bool,
    /// 0: no backoff; after a confirmed recovery 1, + 1 per failed probe (R9.5).
    pub(super) backoff: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct MEntry {
    pub(super) tool: String,
    pub(super) charged: bool,
    pub(super) pending: bool,
    pub(super) systemic: bool,
}

#[derive(Debug, Clone)]
pub(super) struct MEvent {
    pub(super) involved: Vec<usize>,
    pub(super) recovered: bool,
}

#[derive(Debug, Clone)]
pub(super) struct Model {
    pub(super) tools: Vec<MTool>,
    pub(super) limit: u32,
    pub(super) ledger: Vec<MEntry>,
    pub(super) halt: Option<PauseReason>,
    pub(super) event: Option<MEvent>,
    /// Circuits that opened (CLOSED -> OPEN) by infrastructure failures since the last event,
    /// with their step.
    pub(super) openings: Vec<(usize, u64)>,
    pub(super) step: u64,
    pub(super) steps: bool,
    pub(super) window: u64,
    pub(super) cap: u32,
    pub(super) detection: bool,
    /// Per tool, the longest chain of backing-off tools it belongs to, as of the last
    /// confirmed recovery: a tool that recovers afterwards only shortens chains, so the shares
    /// in force are kept until the next confirmation (R9.5).
    pub(super) longest: Option<Vec<usize>>,
}

/// What the model says a decision is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Expect {
    Call,
    Probe,
    Skip(SkipReason, Vec<String>),
    Pause(PauseReason),
}

/// What the model says recording a failure returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct MRecorded {
    pub(super) state: CircuitState,
    pub(super) consecutive: u32,
    pub(super) opened: bool,
    pub(super) consumed: u32,
    pub(super) paused: bool,
}

impl Model {
    pub(super) fn new(setup: &Setup) -> Self {
        let tools = (0..setup.tools)
            .map(|i| MTool {
                name: NAMES[i],
                alternatives: setup.alternatives(i),
                threshold: setup.per_tool[i].threshold.unwrap_or(setup.threshold),
                probe_every: setup.per_tool[i].probe_every.unwrap_or(setup.probe_every),
                state: CircuitState::Closed,
                consecutive: 0,
                total: 0,
                run: Vec::new(),
                last_category: None,
                last_failed: None,
                opened_at: None,
                attempts: 0,
                probe: false,
                backoff: 0,
            })
            .collect();
        Model {
            tools,
            limit: setup.budget,
            ledger: Vec::new(),
            halt: None,
            event: None,
            openings: Vec::new(),
            step: 0,
            steps: setup.steps,
            window: setup.window,
            cap: setup.cap,
            longest: None,
            detection: setup.detection,
        }
    }

    pub(super) fn consumed(&self) -> u32 {
        u32::try_from(self.ledger.iter().filter(|e| e.charged).count()).unwrap()
    }

    pub(super) fn event_active(&self) -> bool {
        self.event.as_ref().is_some_and(|e| !e.recovered)
    }

    /// The category an OPEN circuit shows: the one its whole current run shares (R9.1).
    pub(super) fn category_of(&self, i: usize) -> Option<FailureCategory> {
        let run = &self.tools[i].run;
        let first = *run.first()?;
        run.iter().all(|c| *c == first).then_some(first)
    }

    /// Whether tool `i`'s whole current run is infrastructure failures: only such a circuit
    /// takes part in a systemic event (R9.2, R9.6).
    pub(super) fn infrastructure_run(&self, i: usize) -> bool {
        let run = &self.tools[i].run;
        !run.is_empty() && run.iter().all(|c| c.is_infrastructure())
    }

    /// R9.2, same-category rule: the tools other than `i` not CLOSED whose run shares
    /// `category`, an infrastructure one, and that last failed within the window.
    pub(super) fn partners(&self, i: usize, category: FailureCategory) -> Vec<usize> {
        if !category.is_infrastructure() {
            return Vec::new();
        }
        (0..self.tools.len())
            .filter(|&j| {
                j != i
                    && self.tools[j].state != CircuitState::Closed
                    && self.category_of(j) == Some(category)
                    && self.tools[j]
                        .last_failed
                        .is_some_and(|s| s + self.window >= self.step)
            })
            .collect()
    }

    /// R4.1: low alternatives, then high (unknown counts as high), passing over OPEN ones;
    /// then the fallback; then scope reduction.
    pub(super) fn routes(&self, i: usize) -> Vec<String> {
        let tool = &self.tools[i];
        let mut routes = Vec::new();
        for high in [false, true] {
            for &(to, sev) in &tool.alternatives {
                if sev.is_high() == high && self.tools[to].state != CircuitState::Open {
                    routes.push(format!("alternative:{}", self.tools[to].name));
                }
            }
        }
        routes.push("fallback".to_owned());
        routes.push("scope".to_owned());
        routes
    }

    /// R9.5: after a confirmed recovery the interval doubles with each failed probe, capped;
    /// along a chain of tools that route to each other (each reached once) and are all backing
    /// off, each gets an equal share of the cap; never less than the tool's own interval.
    pub(super) fn interval(&self, i: usize) -> u32 {
        let tool = &self.tools[i];
        let base = tool.probe_every;
        if tool.backoff == 0 {
            return base;
        }
        let own =
            (u64::from(base) << (tool.backoff - 1).min(40)).min(u64::from(self.cap.max(base)));
        let longest = self
            .longest
            .as_ref()
            .and_then(|l| l.get(i).copied())
            .filter(|&l| l > 0)
            .unwrap_or(1);
        let share = self.cap / u32::try_from(longest).unwrap();
        u32::try_from(own).unwrap().min(share.max(base))
    }

    /// For every tool, the size of the longest chain of backing-off tools it is part of.
    pub(super) fn chain_lengths(&self) -> Vec<usize> {
        let backing_off =
            |j: usize| self.tools[j].backoff > 0 && self.tools[j].state != CircuitState::Closed;
        let chain = |head: usize| -> Vec<usize> {
            let mut seen = vec![head];
            let mut next = 0;
            while next < seen.len() {
                let at = seen[next];
                next += 1;
                for &(to, _) in &self.tools[at].alternatives {
                    if !seen.contains(&to) {
                        seen.push(to);
                    }
                }
            }
            seen.retain(|&j| backing_off(j));
            seen
        };
        let mut longest = vec![0; self.tools.len()];
        for c in (0..self.tools.len()).filter(|&h| backing_off(h)).map(chain) {
            for &j in &c {
                longest[j] = longest[j].max(c.len());
            }
        }
        longest
    }

    pub(super) fn decide(&mut self, tool: Option<usize>) -> Expect {
        let Some(i) = tool else {
            return Expect::Skip(SkipReason::UnknownTool, vec!["scope".to_owned()]);
        };
        if let Some(reason) = self.halt {
            return Expect::Pause(reason);
        }
        let interval = self.interval(i);
        let step = self.step;
        let steps = self.steps;
        let t = &mut self.tools[i];
        match t.state {
            CircuitState::Closed => Expect::Call,
            CircuitState::Open => {
                t.attempts = t.attempts.saturating_add(1);
                let due = if steps {
                    step >= t.opened_at.unwrap_or(step) + u64::from(interval)
                } else {
                    t.attempts >= interval
                };
                if due {
                    t.state = CircuitState::HalfOpen;
                    t.probe = true;
                    Expect::Probe
                } else {
                    Expect::Skip(SkipReason::Open, self.routes(i))
                }
            }
            CircuitState::HalfOpen => {
                if t.probe {
                    Expect::Skip(SkipReason::ProbeInFlight, self.routes(i))
                } else {
                    t.probe = true;
                    Expect::Probe
                }
            }
        }
    }

    pub(super) fn open(&mut self, i: usize) {
        let step = self.step;
        let t = &mut self.tools[i];
        t.state = CircuitState::Open;
        t.opened_at = Some(step);
        t.attempts = 0;
    }

    /// R7: the budget is spent: every call pauses (unless a pause is in force already).
    pub(super) fn exhaust(&mut self) {
        let consumed = self.consumed();
        if self.halt.is_none() && consumed >= self.limit {
            self.halt = Some(PauseReason::BudgetExhausted {
                consumed,
                limit: self.limit,
            });
        }
    }

    pub(super) fn fail(&mut self, i: usize, probe: bool, category: FailureCategory) -> MRecorded {
        let during = self.event_active();
        // Only a CLOSED tool's failure can open a circuit that starts an event; a failed probe
        // or a late call on an OPEN tool is charged as usual (R3.2). Held: a failure that may
        // yet correlate by category (R9.2).
        let pending = during
            || (self.detection
                && self.tools[i].state == CircuitState::Closed
                && !self.partners(i, category).is_empty());
        let charged = !pending && self.consumed() < self.limit;
        self.ledger.push(MEntry {
            tool: self.tools[i].name.to_owned(),
            charged,
            pending,
            systemic: false,
        });
        let exhausted_now = charged && self.consumed() == self.limit;
        if during {
            let event = self.event.as_mut().expect("active");
            if !event.involved.contains(&i) {
                event.involved.push(i);
            }
            let last = self.ledger.last_mut().expect("just pushed");
            *last = MEntry {
                systemic: true,
                pending: false,
                charged: false,
                ..last.clone()
            };
        }
        let t = &mut self.tools[i];
        t.consecutive += 1;
        t.total += 1;
        t.run.push(category);
        if t.run.len() > RUN_MEMORY {
            t.run.remove(0);
        }
        t.last_category = Some(category);
        t.last_failed = Some(self.step);
        let mut opened = false;
        if probe && t.state == CircuitState::HalfOpen {
            t.probe = false;
            if t.backoff > 0 {
                t.backoff += 1;
            }
            self.open(i);
            opened = true;
        } else if t.state == CircuitState::Closed && t.consecutive >= t.threshold {
            self.open(i);
            opened = true;
            if !during
                && self.detection
                && let Some(involved) = self.correlated(i)
            {
                self.start_event(involved);
            }
        }
        if exhausted_now {
            self.exhaust();
        }
        MRecorded {
            state: self.tools[i].state,
            consecutive: self.tools[i].consecutive,
            opened,
            consumed: self.consumed(),
            paused: self.halt.is_some(),
        }
    }

    /// R9.2: tool `i` just opened. Only a run of infrastructure failures correlates (R9.6):
    /// then a circuit not CLOSED with its category that last failed within the window, or 3
    /// such circuits opened within the window and still not CLOSED, is a systemic event.
    pub(super) fn correlated(&mut self, i: usize) -> Option<Vec<usize>> {
        let (step, window) = (self.step, self.window);
        self.openings.retain(|&(t, s)| s + window >= step && t != i);
        if !self.infrastructure_run(i) {
            return None;
        }
        self.openings.push((i, step));
        if let Some(c) = self.category_of(i) {
            let mut involved = self.partners(i, c);
            if !involved.is_empty() {
                involved.push(i);
                return Some(involved);
            }
        }
        let recent: Vec<usize> = self
            .openings
            .iter()
            .map(|o| o.0)
            .filter(|&j| self.tools[j].state != CircuitState::Closed)
            .collect();
        (recent.len() >= 3).then_some(recent)
    }

    /// R9.2, R9.4: every call pauses; the involved tools' current runs are folded into one
    /// line, charged once.
    pub(super) fn start_event(&mut self, involved: Vec<usize>) {
        for &j in &involved {
            let name = self.tools[j].name;
            let mut left = self.tools[j].consecutive;
            for entry in self.ledger.iter_mut().rev() {
                if left == 0 {
                    break;
                }
                if entry.tool == name && !entry.systemic {
                    left -= 1;
                    entry.charged = false;
                    entry.pending = false;
                    entry.systemic = true;
                }
            }
        }
        let names: Vec<&str> = involved.iter().map(|&j| self.tools[j].name).collect();
        let charged = self.consumed() < self.limit;
        self.ledger.push(MEntry {
            tool: names.join(", "),
            charged,
            pending: false,
            systemic: false,
        });
        let first = self.tools[involved[0]].last_category;
        let category = first.filter(|c| {
            involved
                .iter()
                .all(|&j| self.tools[j].last_category == Some(*c))
        });
        self.halt = Some(PauseReason::Systemic { category });
        self.openings.clear();
        self.event = Some(MEvent {
            involved,
            recovered: false,
        });
    }

    pub(super) fn succeed(&mut self, i: usize, probe: bool) {
        let t = &mut self.tools[i];
        if probe && t.state == CircuitState::HalfOpen {
            t.probe = false;
            t.state = CircuitState::Closed;
            t.consecutive = 0;
            t.run.clear();
            t.opened_at = None;
            t.attempts = 0;
            t.backoff = 0;
        } else if t.state == CircuitState::Closed {
            t.consecutive = 0;
            t.run.clear();
        }
        let name = t.name;
        if t.state == CircuitState::Closed && t.consecutive == 0 {
            // Its held failures were its own after all: charged now.
            let mut exhausted = false;
            for k in 0..self.ledger.len() {
                if self.ledger[k].pending && self.ledger[k].tool == name {
                    self.ledger[k].pending = false;
                    let charged = self.consumed() < self.limit;
                    self.ledger[k].charged = charged;
                    exhausted |= charged && self.consumed() == self.limit;
                }
            }
            if exhausted {
                self.exhaust();
            }
        }
    }

    pub(super) fn cancel(&mut self, i: usize, probe: bool) {
        if probe {
            self.tools[i].probe = false;
        }
    }

    pub(super) fn new_cycle(&mut self) {
        self.ledger.clear();
        if matches!(self.halt, Some(PauseReason::BudgetExhausted { .. })) {
            self.halt = None;
        }
    }

    pub(super) fn confirm(&mut self) -> bool {
        if !self.event_active() {
            return false;
        }
        let step = self.step;
        let involved = self.event.as_ref().expect("active").involved.clone();
        for j in involved {
            let t = &mut self.tools[j];
            if t.state != CircuitState::Closed {
                t.backoff = 1;
                t.opened_at = Some(step);
                t.attempts = 0;
            }
        }
        self.event.as_mut().expect("active").recovered = true;
        self.longest = Some(self.chain_lengths());
        if matches!(self.halt, Some(PauseReason::Systemic { .. })) {
            self.halt = None;
        }
        self.exhaust();
        true
    }
}
