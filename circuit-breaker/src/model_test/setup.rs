//! What a case is made of: the setup (tools, their alternatives, the policy) and the
//! operations, their strategies, and the expeditor and engine a setup describes.

use std::sync::{Arc, Mutex, PoisonError};

use proptest::prelude::*;

use super::driver::EngineDriver;
use crate::capability::Severity;
use crate::clock::{ManualClock, Timestamp};
use crate::event::{Event, Observer};
use crate::policy::ProbeUnit;
use crate::{
    AlternativeSpec, CapabilityMap, Degradation, Expeditor, FailureCategory, Policy, ToolSpec,
};

/// When every case's clock starts.
pub(super) const T0: Timestamp = Timestamp::from_secs(1_796_024_103);

/// A clock that moves only when told to, from [`T0`].
pub(super) fn clock() -> ManualClock {
    ManualClock::new(T0)
}

/// Every event an expeditor's observer saw, in order.
#[derive(Debug, Clone, Default)]
pub(super) struct EventLog(Arc<Mutex<Vec<Event>>>);

impl EventLog {
    pub(super) fn observer(&self) -> impl Observer + use<> {
        let log = Arc::clone(&self.0);
        move |event: &Event| {
            log.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(event.clone());
        }
    }

    /// The events seen since the last call.
    pub(super) fn take(&self) -> Vec<Event> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

pub(super) const NAMES: [&str; 5] = ["Grep", "Read", "Bash", "Write", "Edit"];

/// Each tool's own category in `model_uncorrelated`: no two tools share one.
pub(super) const OWN_CATEGORY: [FailureCategory; 5] = [
    FailureCategory::Network,
    FailureCategory::Filesystem,
    FailureCategory::Permission,
    FailureCategory::Timeout,
    FailureCategory::NotFound,
];

/// The categories of `model_cascades`: shared between tools, so circuits correlate (the
/// infrastructure ones) or must not (the tool-local ones).
pub(super) const SHARED_CATEGORY: [FailureCategory; 4] = [
    FailureCategory::Network,
    FailureCategory::Filesystem,
    FailureCategory::NotFound,
    FailureCategory::Other,
];

#[derive(Debug, Clone)]
pub(super) struct ToolSetup {
    /// Alternatives as (tool index, severity 0 low / 1 high / 2 unknown); entries naming the
    /// tool itself, a tool beyond the map or an earlier entry are dropped when the map is built.
    pub(super) alternatives: Vec<(usize, u8)>,
    pub(super) threshold: Option<u32>,
    pub(super) probe_every: Option<u32>,
}

#[derive(Debug, Clone)]
pub(super) struct Setup {
    pub(super) tools: usize,
    pub(super) threshold: u32,
    pub(super) budget: u32,
    pub(super) probe_every: u32,
    pub(super) steps: bool,
    pub(super) window: u64,
    pub(super) cap: u32,
    /// Cascade detection on (R9.2) or off (every breaker independent, R9.6).
    pub(super) detection: bool,
    pub(super) per_tool: Vec<ToolSetup>,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Outcome {
    Success,
    /// A failure; the byte picks its category.
    Failure(u8),
    Cancel,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Op {
    /// Decide for a tool (the byte picks it; 15 mod 16 is an id no tool has), then act on a
    /// CALL or PROBE at once, or hold the ticket.
    Decide {
        tool: u8,
        then: Option<Outcome>,
    },
    /// Act on a held ticket (the byte picks which).
    Resolve {
        slot: u8,
        outcome: Outcome,
    },
    Advance,
    NewCycle,
    Confirm,
}

fn tool_setup() -> impl Strategy<Value = ToolSetup> {
    (
        prop::collection::vec((0..5usize, 0..3u8), 0..=3),
        prop::option::weighted(0.3, 1..=3u32),
        prop::option::weighted(0.3, 1..=4u32),
    )
        .prop_map(|(alternatives, threshold, probe_every)| ToolSetup {
            alternatives,
            threshold,
            probe_every,
        })
}

pub(super) fn setup() -> impl Strategy<Value = Setup> {
    (
        3..=5usize,
        1..=3u32,
        1..=12u32,
        1..=3u32,
        any::<bool>(),
        0..=3u64,
        1..=20u32,
        prop::bool::weighted(0.85),
        prop::collection::vec(tool_setup(), 5),
    )
        .prop_map(
            |(tools, threshold, budget, probe_every, steps, window, cap, detection, per_tool)| {
                Setup {
                    tools,
                    threshold,
                    budget,
                    probe_every,
                    steps,
                    window,
                    cap,
                    detection,
                    per_tool,
                }
            },
        )
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        3 => Just(Outcome::Success),
        5 => any::<u8>().prop_map(Outcome::Failure),
        1 => Just(Outcome::Cancel),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        16 => (any::<u8>(), outcome()).prop_map(|(tool, o)| Op::Decide { tool, then: Some(o) }),
        3 => any::<u8>().prop_map(|tool| Op::Decide { tool, then: None }),
        3 => (any::<u8>(), outcome()).prop_map(|(slot, outcome)| Op::Resolve { slot, outcome }),
        4 => Just(Op::Advance),
        1 => Just(Op::NewCycle),
        1 => Just(Op::Confirm),
    ]
}

pub(super) fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 1..100)
}

fn severity(code: u8) -> Severity {
    match code {
        0 => Severity::Low,
        1 => Severity::High,
        _ => Severity::Unknown,
    }
}

impl Setup {
    /// The resolved alternatives of tool `i`: Grep and Read always name each other first (a
    /// cycle), then the generated ones that are legal.
    pub(super) fn alternatives(&self, i: usize) -> Vec<(usize, Severity)> {
        let mut alts: Vec<(usize, Severity)> = Vec::new();
        let first = self.per_tool[i].alternatives.first().map_or(0, |a| a.1);
        match i {
            0 => alts.push((1, severity(first))),
            1 => alts.push((0, severity(first))),
            _ => {}
        }
        for &(to, sev) in &self.per_tool[i].alternatives {
            if to != i && to < self.tools && !alts.iter().any(|a| a.0 == to) {
                alts.push((to, severity(sev)));
            }
        }
        alts
    }

    pub(super) fn map(&self) -> CapabilityMap {
        (0..self.tools).fold(CapabilityMap::new(), |map, i| {
            let mut spec = ToolSpec::new(NAMES[i])
                .provides(format!("what {} does", NAMES[i]))
                .fallback(format!("ask the user to do what {} does", NAMES[i]));
            for (to, sev) in self.alternatives(i) {
                let degradation = match sev {
                    Severity::Low => Degradation::low("a little"),
                    Severity::High => Degradation::high("a lot"),
                    Severity::Unknown => Degradation::unknown(),
                };
                spec = spec.alternative(
                    AlternativeSpec::new(NAMES[to])
                        .method("instead")
                        .degradation(degradation),
                );
            }
            if let Some(t) = self.per_tool[i].threshold {
                spec = spec.threshold(t);
            }
            if let Some(p) = self.per_tool[i].probe_every {
                spec = spec.probe_every(p);
            }
            map.tool(spec)
        })
    }

    pub(super) fn policy(&self) -> Policy {
        Policy::builder()
            .threshold(self.threshold)
            .budget(self.budget)
            .probe_every(self.probe_every)
            .probe_unit(if self.steps {
                ProbeUnit::Steps
            } else {
                ProbeUnit::Attempts
            })
            .cascade_window(self.window)
            .backoff_cap(self.cap)
            .cascade_detection(self.detection)
            .build()
            .expect("a valid policy")
    }

    pub(super) fn expeditor(&self) -> Expeditor {
        Expeditor::builder(self.map())
            .policy(self.policy())
            .clock(clock())
            .build()
            .expect("a valid map")
    }

    /// The expeditor, every event of it written to `log`.
    pub(super) fn expeditor_observed(&self, log: &EventLog) -> Expeditor {
        Expeditor::builder(self.map())
            .policy(self.policy())
            .clock(clock())
            .observer(log.observer())
            .build()
            .expect("a valid map")
    }

    /// The engine, driven directly, over the same map and policy, its cycle starting when
    /// the expeditor's does.
    pub(super) fn engine(&self) -> EngineDriver {
        EngineDriver::new(&self.map(), self.policy(), T0).expect("a valid map")
    }
}

pub(super) fn message(category: FailureCategory) -> &'static str {
    match category {
        FailureCategory::Network => "connection refused",
        FailureCategory::Filesystem => "read-only file system",
        FailureCategory::Permission => "permission denied",
        FailureCategory::Timeout => "timed out",
        FailureCategory::NotFound => "no such file",
        FailureCategory::Other => "it broke",
        FailureCategory::InvalidInput => "invalid argument",
    }
}
