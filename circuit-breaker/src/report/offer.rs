//! The tools to offer a language model now (R10), and for each one held back the note that
//! says why.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{ModelNote, View};
use crate::engine::SkipReason;
use crate::model::breaker::CircuitState;
use crate::model::route::Route;

/// The tools to offer a language model now (R10): those it may call, and for each one held
/// back (OPEN or UNAVAILABLE) the short text saying why and what to do instead, so the model
/// is not invited to call a broken tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolOffer {
    /// The tools the model may call, in map order.
    pub offered: Vec<String>,
    /// Why the others are held back.
    pub withheld: Vec<ModelNote>,
}

impl fmt::Display for ToolOffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.offered.is_empty() {
            f.write_str("Tools you may call: none")?;
        } else {
            write!(f, "Tools you may call: {}", self.offered.join(", "))?;
        }
        if !self.withheld.is_empty() {
            f.write_str("\nDo not call:")?;
            for note in &self.withheld {
                write!(f, "\n  - {note}")?;
            }
        }
        Ok(())
    }
}

impl ToolOffer {
    /// The tools to offer a language model now (R10): every tool but those OPEN or
    /// UNAVAILABLE, which are listed with the reason; while paused, none. One view: the
    /// answer is consistent.
    pub(crate) fn build(view: View<'_>) -> Self {
        let engine = view.engine;
        if let Some(reason) = engine.halt() {
            return ToolOffer {
                offered: Vec::new(),
                withheld: vec![ModelNote::for_pause(
                    reason,
                    engine.pausing_event(),
                    None,
                    engine.pause_lifts_at(),
                )],
            };
        }
        let mut offer = ToolOffer {
            offered: Vec::new(),
            withheld: Vec::new(),
        };
        for (id, name, record) in view.records() {
            let reason = match record.state() {
                CircuitState::Open => Some(SkipReason::Open),
                CircuitState::Closed if engine.gated(id) => Some(SkipReason::Unavailable),
                _ => None,
            };
            match reason {
                Some(reason) => {
                    let route = engine.routes(id).next().unwrap_or(Route::ScopeReduction);
                    offer
                        .withheld
                        .push(ModelNote::for_route(view, id, reason, &route));
                }
                None => offer.offered.push(name.to_owned()),
            }
        }
        offer
    }
}
