//! Routing when a circuit is OPEN (R4): a low-degradation alternative first, then a
//! high one, then the manual fallback, then scope reduction. Alternatives whose own circuit
//! is OPEN are passed over, so routes chain (Grep -> Bash -> Read -> ask the user -> skip).
//!
//! Routes borrow from the expeditor's map: walking them allocates nothing. Each tool's
//! alternatives are visited once, so routing ends even when tools are each other's
//! alternatives (R1.4). Whether an alternative is usable is read from a `ToolView`: the
//! engine under its lock, or the lock-free mirror on the rejection path — never from the
//! expeditor itself.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::model::capability::{AlternativeSpec, Degradation, Severity};
use crate::model::id::ToolId;
use crate::model::registry::ToolDef;

/// One way to get the work done while a tool's circuit is OPEN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route<'a> {
    /// Use another tool; what is lost travels with the result (R4.2).
    Alternative(AlternativeRoute<'a>),
    /// No tool can do it: tell the user what they must provide or do (the manual fallback).
    Fallback(&'a str),
    /// Nothing can do it: drop the dependent work from the scope and report it (R4.3).
    ScopeReduction,
}

impl Route<'_> {
    /// The degradation this route accepts: the alternative's, or `High` for a fallback and
    /// for scope reduction (the work is not done by a tool at all).
    pub fn severity(&self) -> Severity {
        match self {
            Route::Alternative(alt) => alt.degradation().severity(),
            Route::Fallback(_) | Route::ScopeReduction => Severity::High,
        }
    }

    /// An owned, serializable description of this route, taken instead of `from`.
    pub fn taken(&self, from: &str) -> RouteTaken {
        match self {
            Route::Alternative(alt) => RouteTaken {
                from: from.to_owned(),
                kind: RouteKind::Alternative,
                to: Some(alt.name().to_owned()),
                method: Some(alt.method().to_owned()),
                degradation: Some(alt.degradation().to_string()),
                severity: alt.degradation().severity(),
                fallback: None,
            },
            Route::Fallback(text) => RouteTaken {
                from: from.to_owned(),
                kind: RouteKind::Fallback,
                to: None,
                method: None,
                degradation: None,
                severity: Severity::High,
                fallback: Some((*text).to_owned()),
            },
            Route::ScopeReduction => RouteTaken {
                from: from.to_owned(),
                kind: RouteKind::ScopeReduction,
                to: None,
                method: None,
                degradation: None,
                severity: Severity::High,
                fallback: None,
            },
        }
    }
}

/// An alternative tool to use instead, with how and at what cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlternativeRoute<'a> {
    tool: ToolId,
    spec: &'a AlternativeSpec,
    /// Its place among the skipped tool's alternatives.
    index: u32,
}

impl<'a> AlternativeRoute<'a> {
    /// Alternative `index` of a tool's spec, which names `tool`.
    pub(crate) fn new(tool: ToolId, spec: &'a AlternativeSpec, index: u32) -> Self {
        AlternativeRoute { tool, spec, index }
    }

    /// Its place among the skipped tool's alternatives, in declaration order.
    pub(crate) fn index(&self) -> u32 {
        self.index
    }

    /// The alternative tool, to ask the expeditor about before calling it.
    pub fn tool(&self) -> ToolId {
        self.tool
    }

    /// The alternative tool's name.
    pub fn name(&self) -> &'a str {
        self.spec.tool()
    }

    /// How the alternative tool is used to reach the goal.
    pub fn method(&self) -> &'a str {
        self.spec.method()
    }

    /// What this route loses.
    pub fn degradation(&self) -> &'a Degradation {
        self.spec.degradation()
    }
}

/// The routes for an OPEN tool, best first (R4.1). Yields the usable alternatives, then the
/// fallback, then scope reduction.
#[derive(Clone)]
pub struct Routes<'a> {
    view: &'a dyn ToolView,
    def: Option<&'a ToolDef>,
    pass: Pass,
    index: usize,
}

impl fmt::Debug for Routes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Routes")
            .field("tool", &self.def.map(|d| d.spec.name()))
            .field("pass", &self.pass)
            .field("index", &self.index)
            .finish()
    }
}

/// Where routing reads whether a tool can take work now: not OPEN, not held back by a
/// pre-call check (R4.1, R10.2).
pub(crate) trait ToolView {
    /// Whether `tool` may be routed to.
    fn usable(&self, tool: ToolId) -> bool;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    Low,
    High,
    Fallback,
    Scope,
    Done,
}

impl<'a> Routes<'a> {
    pub(crate) fn new(view: &'a dyn ToolView, def: Option<&'a ToolDef>) -> Self {
        Routes {
            view,
            def,
            // A tool without alternatives starts at its fallback: the two passes over none
            // would only cost the refusal path.
            pass: match def {
                Some(def) if def.has_alternatives() => Pass::Low,
                Some(_) => Pass::Fallback,
                None => Pass::Scope,
            },
            index: 0,
        }
    }
}

impl<'a> Iterator for Routes<'a> {
    type Item = Route<'a>;

    fn next(&mut self) -> Option<Route<'a>> {
        loop {
            match self.pass {
                Pass::Low | Pass::High => {
                    let def = self.def?;
                    let specs = def.spec.alternatives();
                    let Some(spec) = specs.get(self.index) else {
                        self.pass = if self.pass == Pass::Low {
                            Pass::High
                        } else {
                            Pass::Fallback
                        };
                        self.index = 0;
                        continue;
                    };
                    // Aligned with the spec's alternatives: one naming no tool is `None`.
                    let tool = def.alternative(self.index);
                    let index = u32::try_from(self.index).unwrap_or(u32::MAX);
                    self.index += 1;
                    if spec.degradation().severity().is_high() != (self.pass == Pass::High) {
                        continue;
                    }
                    // An alternative whose own circuit is OPEN is passed over (R4.1).
                    // So is one a pre-call check found UNAVAILABLE (R10.2).
                    if let Some(tool) = tool.filter(|&t| self.view.usable(t)) {
                        return Some(Route::Alternative(AlternativeRoute { tool, spec, index }));
                    }
                }
                Pass::Fallback => {
                    self.pass = Pass::Scope;
                    if let Some(def) = self.def.filter(|def| def.fallback_given) {
                        return Some(Route::Fallback(def.spec.fallback()));
                    }
                }
                Pass::Scope => {
                    self.pass = Pass::Done;
                    return Some(Route::ScopeReduction);
                }
                Pass::Done => return None,
            }
        }
    }
}

/// Which kind of route was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteKind {
    /// Another tool did the work.
    Alternative,
    /// The user was asked (manual fallback).
    Fallback,
    /// The work was dropped from the scope.
    ScopeReduction,
    /// The last good result for the same arguments, labelled STALE DATA (R6).
    Stale,
}

/// The route taken instead of a tool, with what it cost (R4.2): travels with the result so
/// the agent's output can say what was affected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteTaken {
    /// The tool whose circuit was OPEN.
    pub from: String,
    /// What kind of route.
    pub kind: RouteKind,
    /// The alternative tool, for an alternative route.
    pub to: Option<String>,
    /// How the alternative was used.
    pub method: Option<String>,
    /// What the alternative loses.
    pub degradation: Option<String>,
    /// The degradation accepted.
    pub severity: Severity,
    /// The manual fallback text, for a fallback route.
    pub fallback: Option<String>,
}

impl fmt::Display for RouteTaken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            RouteKind::Alternative => {
                write!(
                    f,
                    "{} circuit OPEN → {} ({})",
                    self.from,
                    self.to.as_deref().unwrap_or("?"),
                    self.method.as_deref().unwrap_or("")
                )?;
                if let Some(d) = &self.degradation {
                    let label = if self.severity.is_high() {
                        "PARTIAL"
                    } else {
                        "ACCEPTABLE"
                    };
                    write!(f, "\n  → Degradation: {d}\n  → Decision: {label}")?;
                }
                Ok(())
            }
            RouteKind::Fallback => write!(
                f,
                "{} circuit OPEN → manual fallback: {}\n  → Decision: FALLBACK",
                self.from,
                self.fallback.as_deref().unwrap_or("")
            ),
            RouteKind::ScopeReduction => write!(
                f,
                "{} circuit OPEN → scope reduction\n  → SKIPPED: work that needs {} — no tools available",
                self.from, self.from
            ),
            RouteKind::Stale => write!(
                f,
                "{} circuit OPEN → last good result for the same arguments\n  → Decision: STALE DATA — labelled, not fresh",
                self.from
            ),
        }
    }
}
