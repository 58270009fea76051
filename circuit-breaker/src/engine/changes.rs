//! What one engine command changed, for the expeditor to act on once the command is done:
//! the events for the hook, the tools whose lock-free mirror must be published again, and
//! the mirror-owned cells to reset.

use std::sync::Arc;

use crate::event::Event;
use crate::fleet::SharedTransition;
use crate::model::breaker::SuccessMark;
use crate::model::id::ToolId;
use crate::model::registry::ToolDef;

/// Which tools' mirror a command changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum Dirty {
    /// None (the pause flag is published anyway).
    #[default]
    None,
    /// One tool.
    One(ToolId),
    /// Every tool.
    All,
}

/// What one engine command changed: the events it gives the hook (after the lock is
/// released), the tools whose mirror is stale, and the rarer parts behind one pointer.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    pub(crate) events: Vec<Event>,
    pub(crate) dirty: Dirty,
    /// Boxed: most commands (a failure, a success) change none of it, and every command
    /// makes and drops a `Changes` — one pointer to test, not six vectors.
    rare: Option<Box<Rare>>,
}

/// The parts of [`Changes`] that registering, restoring, opening a circuit and the fleet
/// fill in.
#[derive(Debug, Default)]
pub(crate) struct Rare {
    /// Tools registered by the command, in id order: the mirror gets a slot for each.
    pub(crate) registered: Vec<(ToolId, Arc<ToolDef>)>,
    /// Attempt counters to set (a circuit just opened, or a record was restored).
    pub(crate) attempts: Vec<(ToolId, u32)>,
    /// Last successes to set (a record was restored).
    pub(crate) successes: Vec<(ToolId, Option<SuccessMark>)>,
    /// Cancellation counts to set (a record was restored).
    pub(crate) cancellations: Vec<(ToolId, u64)>,
    /// The step to set (a snapshot was restored).
    pub(crate) step: Option<u64>,
    /// What to tell the fleet's store (B11).
    pub(crate) shared: Vec<SharedTransition>,
}

impl Changes {
    /// Whether the command changed anything a reader could see.
    pub(crate) fn changed_anything(&self) -> bool {
        !self.events.is_empty()
            || !matches!(self.dirty, Dirty::None)
            || self.rare.as_ref().is_some_and(|r| {
                !r.registered.is_empty()
                    || !r.attempts.is_empty()
                    || !r.successes.is_empty()
                    || !r.cancellations.is_empty()
                    || r.step.is_some()
            })
    }

    /// The rarer parts, made on first use.
    pub(crate) fn rare(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }

    /// The rarer parts, if the command filled in any.
    pub(crate) fn rare_ref(&self) -> Option<&Rare> {
        self.rare.as_deref()
    }

    /// What to tell the fleet's store (B11).
    pub(crate) fn shared(&self) -> &[SharedTransition] {
        self.rare.as_ref().map_or(&[], |r| &r.shared)
    }

    /// What to tell the fleet's store, to amend.
    pub(crate) fn shared_mut(&mut self) -> &mut [SharedTransition] {
        self.rare.as_mut().map_or(&mut [], |r| &mut r.shared)
    }

    pub(crate) fn touch(&mut self, tool: ToolId) {
        self.dirty = match self.dirty {
            Dirty::None => Dirty::One(tool),
            Dirty::One(t) if t == tool => Dirty::One(t),
            _ => Dirty::All,
        };
    }

    pub(crate) fn touch_all(&mut self) {
        self.dirty = Dirty::All;
    }
}
