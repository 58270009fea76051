//! The circuit breaker state table (R2.1, R2.3): one row per tool, then the budget line, and
//! the lines of what else is in force (mistakes, cancellations, servers, the fleet).

use std::fmt::{self, Write as _};

use serde::{Deserialize, Serialize};

use super::View;
use super::{MistakeCount, ServerLine, StoreStatus};
use crate::model::breaker::CircuitState;
use crate::model::breaker::{FailureMark, SuccessMark};
use crate::model::budget::BudgetStatus;

/// One row of the state table (R2.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateRow {
    /// The tool.
    pub tool: String,
    /// Its circuit's state.
    pub state: CircuitState,
    /// Consecutive failures.
    pub consecutive_failures: u32,
    /// The last failure: when and what.
    pub last_failure: Option<FailureMark>,
    /// The last success.
    pub last_success: Option<SuccessMark>,
    /// Calls dropped by their caller before they answered (B13): counted, not charged. Left
    /// out of the serde form while 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cancelled: u64,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The circuit breaker state table followed by `Failure budget: X / Y consumed` (R2.3), and,
/// only when some call was dropped by its caller, `Cancelled by caller (not charged): grep 4,
/// bash 1` (B13).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateTable {
    /// One row per tool, in registration order.
    pub rows: Vec<StateRow>,
    /// The budget of the current cycle.
    pub budget: BudgetStatus,
    /// The model's own mistakes this cycle, on a line of their own when there are any (B8).
    #[serde(default, skip_serializing_if = "MistakeCount::is_none")]
    pub mistakes: MistakeCount,
    /// The servers the tools live on, a line each, when any tool is on one (B10).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<ServerLine>,
    /// The fleet's store, when one is attached (B11): reachable or not, and which circuits
    /// another worker opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<StoreStatus>,
}

const NONE: &str = "—";

impl fmt::Display for StateTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const HEADERS: [&str; 5] = [
            "Tool",
            "State",
            "Consecutive Fails",
            "Last Failure",
            "Last Success",
        ];
        // The source document's column widths; a column grows to fit its longest cell.
        let mut widths = [10, 6, 17, 16, 15];
        let cells: Vec<[String; 5]> = self
            .rows
            .iter()
            .map(|row| {
                [
                    row.tool.clone(),
                    row.state.as_str().to_owned(),
                    row.consecutive_failures.to_string(),
                    row.last_failure.as_ref().map_or_else(
                        || NONE.to_owned(),
                        |m| format!("{} {}", m.at, m.failure.summary()),
                    ),
                    row.last_success
                        .as_ref()
                        .map_or_else(|| NONE.to_owned(), |m| m.at.to_string()),
                ]
            })
            .collect();
        for row in cells
            .iter()
            .map(|r| r.each_ref().map(String::as_str))
            .chain([HEADERS])
        {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let rule = |f: &mut fmt::Formatter<'_>| {
            f.write_char('+')?;
            for width in widths {
                write!(f, "{}+", "-".repeat(width + 2))?;
            }
            f.write_char('\n')
        };
        let line = |f: &mut fmt::Formatter<'_>, row: [&str; 5]| {
            f.write_char('|')?;
            for (width, cell) in widths.iter().zip(row) {
                let pad = width - cell.chars().count();
                write!(f, " {cell}{} |", " ".repeat(pad))?;
            }
            f.write_char('\n')
        };
        writeln!(f, "Circuit Breaker State Table:")?;
        rule(f)?;
        line(f, HEADERS)?;
        rule(f)?;
        for row in &cells {
            line(f, row.each_ref().map(String::as_str))?;
        }
        rule(f)?;
        write!(
            f,
            "\nFailure budget: {} / {} consumed",
            self.budget.consumed, self.budget.limit
        )?;
        if !self.mistakes.is_none() {
            write!(f, "\n{}", self.mistakes)?;
        }
        // B13: only when some call was dropped by its caller, so the source document's layout stays.
        let mut cancelled = self.rows.iter().filter(|row| row.cancelled > 0);
        if let Some(first) = cancelled.next() {
            write!(
                f,
                "\nCancelled by caller (not charged): {} {}",
                first.tool, first.cancelled
            )?;
            for row in cancelled {
                write!(f, ", {} {}", row.tool, row.cancelled)?;
            }
        }
        for server in &self.servers {
            write!(f, "\n{server}")?;
        }
        if let Some(fleet) = &self.fleet {
            write!(f, "\n{fleet}")?;
        }
        Ok(())
    }
}

impl StateTable {
    /// The table of every tool, in registration order.
    pub(crate) fn build(view: View<'_>) -> Self {
        let rows = view
            .records()
            .map(|(_, name, record)| StateRow {
                tool: name.to_owned(),
                state: record.state(),
                consecutive_failures: record.consecutive_failures(),
                last_failure: record.last_failure().cloned(),
                last_success: record.last_success().copied(),
                cancelled: record.cancelled(),
            })
            .collect();
        StateTable {
            rows,
            budget: view.engine.budget().status(),
            mistakes: view.engine.mistakes(),
            servers: view.engine.servers(),
            fleet: view.engine.fleet_status(),
        }
    }
}
