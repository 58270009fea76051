//! One case: a setup and its operations, run against the expeditor, the engine driven
//! directly and the reference model, everything compared after every operation.

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use super::Coverage;
use super::driver::{EngineDriver, Path};
use super::model::{Expect, MEntry, MRecorded, Model};
use super::setup::{EventLog, OWN_CATEGORY, Op, Outcome, SHARED_CATEGORY, Setup, message};
use crate::engine::Verdict;
use crate::expeditor::{Recorded, Ticket, ToolId};
use crate::model::breaker::BreakerRecord;
use crate::model::budget::Budget;
use crate::model::cascade::SystemicEvent;
use crate::{
    CircuitState, Decision, Expeditor, Failure, FailureCategory, PauseReason, Route, SkipReason,
};

fn describe(route: Route<'_>) -> String {
    match route {
        Route::Alternative(alt) => format!("alternative:{}", alt.name()),
        Route::Fallback(_) => "fallback".to_owned(),
        Route::ScopeReduction => "scope".to_owned(),
    }
}

struct Held<'a> {
    ticket: Ticket<'a>,
    tool: usize,
    /// The epoch of the engine driver's probe, when this is a probe.
    epoch: Option<u64>,
}

impl Held<'_> {
    fn probe(&self) -> bool {
        self.epoch.is_some()
    }
}

/// A party the model is compared with: the expeditor, or the engine driven directly.
trait Party {
    const NAME: &'static str;
    fn breaker(&self, tool: ToolId) -> Option<BreakerRecord>;
    fn budget(&self) -> Budget;
    fn paused(&self) -> Option<PauseReason>;
    fn systemic_event(&self) -> Option<SystemicEvent>;
    /// The attempts `record` (this party's record of `tool`) shows since its circuit opened.
    fn attempts(&self, tool: ToolId, record: &BreakerRecord) -> Option<u64>;
}

impl Party for Expeditor {
    const NAME: &'static str = "expeditor";
    fn breaker(&self, tool: ToolId) -> Option<BreakerRecord> {
        Expeditor::breaker(self, tool)
    }
    fn budget(&self) -> Budget {
        Expeditor::budget(self)
    }
    fn paused(&self) -> Option<PauseReason> {
        Expeditor::paused(self)
    }
    fn systemic_event(&self) -> Option<SystemicEvent> {
        Expeditor::systemic_event(self)
    }
    fn attempts(&self, _: ToolId, record: &BreakerRecord) -> Option<u64> {
        Some(u64::from(record.attempts_since_open))
    }
}

impl Party for EngineDriver {
    const NAME: &'static str = "engine";
    fn breaker(&self, tool: ToolId) -> Option<BreakerRecord> {
        EngineDriver::breaker(self, tool)
    }
    fn budget(&self) -> Budget {
        EngineDriver::budget(self).clone()
    }
    fn paused(&self) -> Option<PauseReason> {
        EngineDriver::paused(self)
    }
    fn systemic_event(&self) -> Option<SystemicEvent> {
        EngineDriver::systemic_event(self).cloned()
    }
    fn attempts(&self, tool: ToolId, _: &BreakerRecord) -> Option<u64> {
        EngineDriver::attempts(self, tool).map(u64::from)
    }
}

struct Case<'a> {
    setup: &'a Setup,
    expeditor: &'a Expeditor,
    /// Every event the expeditor's observer saw since the last check.
    events: &'a EventLog,
    /// The engine, driven directly with the same operations.
    engine: EngineDriver,
    model: Model,
    held: Vec<Held<'a>>,
    correlated: bool,
    coverage: &'a Coverage,
}

/// At most this many tickets held at once; a hold beyond it is a cancellation.
const MAX_HELD: usize = 4;

/// What recording a failure returned, as the model sees it.
fn seen_recorded(got: &Recorded) -> MRecorded {
    MRecorded {
        state: got.state,
        consecutive: got.consecutive_failures,
        opened: got.opened,
        consumed: got.budget.consumed,
        paused: got.paused,
    }
}

impl<'a> Case<'a> {
    fn category(&self, tool: usize, byte: u8) -> FailureCategory {
        if self.correlated {
            SHARED_CATEGORY[usize::from(byte) % SHARED_CATEGORY.len()]
        } else if byte.is_multiple_of(2) {
            FailureCategory::Other
        } else {
            OWN_CATEGORY[tool]
        }
    }

    fn id(tool: usize) -> ToolId {
        ToolId::from_index(u32::try_from(tool).unwrap())
    }

    fn act(&mut self, held: Held<'a>, outcome: Outcome) -> Result<(), TestCaseError> {
        let (tool, probe, epoch) = (held.tool, held.probe(), held.epoch);
        let ticket = held.ticket;
        let id = Self::id(tool);
        let (step, now) = (self.model.step, self.expeditor.now());
        prop_assert_eq!(ticket.is_probe(), probe);
        prop_assert_eq!(ticket.tool(), id);
        match outcome {
            Outcome::Success => {
                if probe && self.model.tools[tool].state == CircuitState::HalfOpen {
                    Coverage::bump(&self.coverage.closed_by_probe);
                }
                self.model.succeed(tool, probe);
                ticket.success();
                self.engine.succeed(id, epoch, step, now);
            }
            Outcome::Failure(byte) => {
                let category = self.category(tool, byte);
                if !probe && self.model.tools[tool].state != CircuitState::Closed {
                    Coverage::bump(&self.coverage.late_failures);
                }
                let expected = self.model.fail(tool, probe, category);
                if probe && expected.opened {
                    Coverage::bump(&self.coverage.reopened);
                }
                if self.model.ledger.last().is_some_and(|e| e.pending) {
                    Coverage::bump(&self.coverage.pending);
                }
                let failure = Failure::with_category(message(category), category);
                let got = ticket.failure(failure.clone());
                let engine = self.engine.fail(id, epoch, failure, step, now);
                prop_assert_eq!(seen_recorded(&got), expected, "recorded failure: expeditor");
                prop_assert_eq!(seen_recorded(&engine), expected, "recorded failure: engine");
                prop_assert_eq!(engine, got, "recorded failure: engine and expeditor");
            }
            Outcome::Cancel => {
                self.model.cancel(tool, probe);
                ticket.cancel();
                self.engine.cancel(id, epoch);
            }
        }
        Ok(())
    }

    fn decide(&mut self, byte: u8, then: Option<Outcome>) -> Result<(), TestCaseError> {
        let n = self.setup.tools;
        let (tool, id) = if byte % 16 == 15 {
            (None, ToolId::from_index(u32::try_from(n).unwrap() + 7))
        } else {
            let i = usize::from(byte) % n;
            (Some(i), Self::id(i))
        };
        let backing_off = tool.is_some_and(|i| {
            self.model.tools[i].state == CircuitState::Open && self.model.tools[i].backoff > 0
        });
        let expected = self.model.decide(tool);
        let decision = self.expeditor.decide(id);
        let verdict = self.engine.decide(id, self.model.step);
        match self.engine.last_path() {
            Path::Rejected => Coverage::bump(&self.coverage.lock_free_rejections),
            Path::Engine if backing_off && self.model.halt.is_none() => {
                Coverage::bump(&self.coverage.backing_off_decides);
            }
            _ => {}
        }
        // Both parties' decisions, in the model's terms.
        let (seen, ticket) = match decision {
            Decision::Call(ticket) => (Expect::Call, Some(ticket)),
            Decision::Probe(ticket) => (Expect::Probe, Some(ticket)),
            Decision::Skip(skip) => {
                prop_assert_eq!(skip.tool(), id);
                // Bounded: the routes must end on their own, each alternative listed once.
                let routes: Vec<String> = skip.routes().take(16).map(describe).collect();
                prop_assert_eq!(Some(&describe(skip.route())), routes.first());
                (Expect::Skip(skip.reason(), routes), None)
            }
            Decision::Pause(pause) => {
                prop_assert_eq!(pause.tool(), id);
                (Expect::Pause(pause.reason()), None)
            }
        };
        let (engine_seen, epoch) = match verdict {
            Verdict::Call => (Expect::Call, None),
            Verdict::Probe(epoch) => (Expect::Probe, Some(epoch)),
            Verdict::Skip(reason) => {
                let routes = self.engine.routes(id).take(16).map(describe).collect();
                (Expect::Skip(reason, routes), None)
            }
            Verdict::Pause(reason) => (Expect::Pause(reason), None),
        };
        prop_assert_eq!(&seen, &expected, "decide({:?}): expeditor", tool);
        prop_assert_eq!(&engine_seen, &expected, "decide({:?}): engine", tool);
        match &expected {
            Expect::Probe => {
                Coverage::bump(&self.coverage.probes);
                if tool.is_some_and(|i| self.model.tools[i].backoff >= 2) {
                    Coverage::bump(&self.coverage.backoff_probes);
                }
            }
            Expect::Skip(SkipReason::ProbeInFlight, _) => {
                Coverage::bump(&self.coverage.probe_in_flight_skips);
            }
            _ => {}
        }
        match ticket {
            Some(ticket) => {
                let tool = tool.expect("only known tools get tickets");
                let held = Held {
                    ticket,
                    tool,
                    epoch,
                };
                match then {
                    Some(outcome) => self.act(held, outcome),
                    None if self.held.len() < MAX_HELD => {
                        self.held.push(held);
                        Ok(())
                    }
                    None => self.act(held, Outcome::Cancel),
                }
            }
            None => Ok(()),
        }
    }

    fn apply(&mut self, op: Op) -> Result<(), TestCaseError> {
        Coverage::bump(&self.coverage.operations);
        match op {
            Op::Decide { tool, then } => self.decide(tool, then)?,
            Op::Resolve { slot, outcome } => {
                if !self.held.is_empty() {
                    let held = self.held.remove(usize::from(slot) % self.held.len());
                    self.act(held, outcome)?;
                }
            }
            Op::Advance => {
                self.model.step += 1;
                prop_assert_eq!(self.expeditor.advance_step(), self.model.step);
            }
            Op::NewCycle => {
                self.model.new_cycle();
                let cycle = self.expeditor.new_cycle();
                prop_assert_eq!(self.engine.new_cycle(self.expeditor.now()), cycle);
            }
            Op::Confirm => {
                let expected = self.model.confirm();
                if expected {
                    Coverage::bump(&self.coverage.recoveries);
                }
                let got = self.expeditor.confirm_recovery();
                prop_assert_eq!(got.is_some(), expected, "confirm_recovery");
                let engine = self.engine.confirm_recovery(self.model.step);
                prop_assert_eq!(engine, got, "confirm_recovery: engine");
            }
        }
        self.check()
    }

    /// Everything the model knows, compared with both parties; the events of both compared
    /// with each other; and the invariants.
    fn check(&mut self) -> Result<(), TestCaseError> {
        let (expeditor, model) = (self.expeditor, &self.model);
        prop_assert_eq!(expeditor.step(), model.step);
        self.check_party(expeditor)?;
        self.check_party(&self.engine)?;
        for (i, t) in model.tools.iter().enumerate() {
            let id = Self::id(i);
            prop_assert_eq!(expeditor.state(id), Some(t.state), "mirror of {}", t.name);
            // The rest of the record too (last failure and success, backoff, attempts).
            prop_assert_eq!(
                self.engine.breaker(id),
                expeditor.breaker(id),
                "engine's record of {}",
                t.name
            );
            // One probe at a time: the live probe tickets of a tool are its probe in flight.
            let live = self
                .held
                .iter()
                .filter(|h| h.tool == i && h.probe())
                .count();
            prop_assert!(live <= 1, "{} live probes of {}", live, t.name);
            prop_assert_eq!(live == 1, t.probe, "live probe ticket of {}", t.name);
            if t.probe {
                prop_assert_eq!(t.state, CircuitState::HalfOpen);
            }
        }
        prop_assert_eq!(self.engine.take_events(), self.events.take(), "events");
        Ok(())
    }

    /// Everything the model knows, compared with one party.
    fn check_party<P: Party>(&self, party: &P) -> Result<(), TestCaseError> {
        let model = &self.model;
        let who = P::NAME;
        for (i, t) in model.tools.iter().enumerate() {
            let id = Self::id(i);
            let record = party.breaker(id).expect("a known tool");
            prop_assert_eq!(record.state(), t.state, "{}: state of {}", who, t.name);
            prop_assert_eq!(
                record.consecutive_failures(),
                t.consecutive,
                "{}: {}",
                who,
                t.name
            );
            prop_assert_eq!(record.total_failures(), t.total, "{}: {}", who, t.name);
            let run: Vec<FailureCategory> = record
                .recent_failures()
                .iter()
                .map(Failure::category)
                .collect();
            prop_assert_eq!(&run, &t.run, "{}: run of {}", who, t.name);
            prop_assert_eq!(record.opened_at_step(), t.opened_at, "{}: {}", who, t.name);
            prop_assert_eq!(
                record.probe_in_flight(),
                t.probe,
                "{}: probe of {}",
                who,
                t.name
            );
            // Attempts are counted in attempts, not in steps (where the count is not kept).
            if !self.setup.steps && t.state == CircuitState::Open {
                prop_assert_eq!(
                    party.attempts(id, &record),
                    Some(u64::from(t.attempts)),
                    "{}: attempts of {}",
                    who,
                    t.name
                );
            }
        }
        let budget = party.budget();
        let charged = budget.ledger().iter().filter(|e| e.charged).count();
        prop_assert!(
            budget.consumed() <= budget.limit(),
            "{who}: budget exceeded"
        );
        prop_assert_eq!(usize::try_from(budget.consumed()).unwrap(), charged);
        prop_assert_eq!(budget.limit(), model.limit);
        prop_assert_eq!(budget.consumed(), model.consumed(), "{}: consumed", who);
        let ledger: Vec<MEntry> = budget
            .ledger()
            .iter()
            .map(|e| MEntry {
                tool: e.tool.to_string(),
                charged: e.charged,
                pending: e.pending,
                systemic: e.systemic,
            })
            .collect();
        prop_assert_eq!(&ledger, &model.ledger, "{}: ledger", who);
        prop_assert_eq!(party.paused(), model.halt, "{}: pause", who);
        let event = party.systemic_event();
        prop_assert_eq!(
            event.is_some(),
            model.event.is_some(),
            "{}: systemic event",
            who
        );
        if let (Some(event), Some(m)) = (event, &model.event) {
            let tools: Vec<&str> = m.involved.iter().map(|&j| model.tools[j].name).collect();
            prop_assert_eq!(&event.tools, &tools, "{}: systemic event", who);
            prop_assert_eq!(event.recovered, m.recovered, "{}: systemic event", who);
        }
        Ok(())
    }

    /// Drops every held ticket, then asks every tool once more: a HALF-OPEN tool is never
    /// left without a probe to give.
    fn finish(&mut self) -> Result<(), TestCaseError> {
        while let Some(held) = self.held.pop() {
            self.act(held, Outcome::Cancel)?;
            self.check()?;
        }
        for i in 0..self.setup.tools {
            let half_open = self.model.tools[i].state == CircuitState::HalfOpen;
            let paused = self.model.halt.is_some();
            if half_open && !paused {
                prop_assert!(!self.model.tools[i].probe);
            }
            let byte = u8::try_from(i).unwrap();
            self.decide(byte, Some(Outcome::Cancel))?;
            self.check()?;
        }
        Ok(())
    }
}

pub(super) fn run_case(
    setup: &Setup,
    ops: &[Op],
    correlated: bool,
    coverage: &Coverage,
) -> Result<(), TestCaseError> {
    let events = EventLog::default();
    let expeditor = setup.expeditor_observed(&events);
    let mut case = Case {
        setup,
        expeditor: &expeditor,
        events: &events,
        engine: setup.engine(),
        model: Model::new(setup),
        held: Vec::new(),
        correlated,
        coverage,
    };
    case.check()?;
    for &op in ops {
        let was_paused = case.model.halt;
        let was_event = case.model.event_active();
        case.apply(op)?;
        if was_paused.is_none()
            && matches!(case.model.halt, Some(PauseReason::BudgetExhausted { .. }))
        {
            Coverage::bump(&coverage.budget_pauses);
        }
        if !was_event && case.model.event_active() {
            Coverage::bump(&coverage.systemic);
        }
    }
    case.finish()?;
    // The engine driven directly ends in the expeditor's state, to the last timestamp.
    let snapshot = expeditor.snapshot();
    prop_assert_eq!(case.engine.snapshot(expeditor.step()), snapshot.clone());
    // The whole state survives a snapshot restored into a fresh expeditor.
    let restored = setup.expeditor();
    restored
        .restore(&snapshot)
        .map_err(|e| TestCaseError::fail(format!("restore: {e}")))?;
    prop_assert_eq!(restored.snapshot(), snapshot);
    Ok(())
}
