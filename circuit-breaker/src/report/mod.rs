//! Reports are data first: each is a plain serde value with a `Display` in the source
//! document's exact layout, built from one view of the state.
//!
//! - [`StateTable`]: the circuit breaker state table with the budget line (R2.3).
//! - [`Budget`]: the budget block with its ledger and status line (R7.1, R7.2).
//! - [`PauseReport`]: `FAILURE BUDGET EXHAUSTED — PAUSING` with completed and incomplete
//!   work, tool health, failures and recommendations (R7.3).
//! - [`ModelNote`]: the short text for a language model (B7).

pub use crate::engine::MistakeCount;
#[doc(no_inline)]
pub use crate::fleet::StoreStatus;
pub use crate::model::breaker::{BreakerRecord, FailureMark, SuccessMark};
pub use crate::model::budget::{
    Budget, BudgetStatus, Dropped, LEDGER_HEAD, LEDGER_LINES, LedgerEntry,
};
pub use crate::model::cascade::SystemicEvent;
pub use crate::model::group::{ServerLine, ServerOutage};

mod mistakes;
mod notes;
mod offer;
mod pause_report;
mod state_table;
mod view;

pub use mistakes::ModelMistake;
#[cfg(feature = "json")]
pub(crate) use mistakes::clip;
pub use notes::ModelNote;
pub(crate) use notes::NoteFacts;
pub use offer::ToolOffer;
pub use pause_report::{PauseReport, ToolHealth, WorkLine};
pub use state_table::{StateRow, StateTable};
pub(crate) use view::{Cells, Mirrored, View};
