//! The state machine: the state table, decide and record, the budget, cascades, pre-call checks,
//! time and blame (R2, R3, R7, R9, R10, B13, B14), checked under stress and with faulty tools.
//! The check against a reference model drives the engine directly, so it is among the runtime's
//! unit tests (`circuit-breaker/src/model_test/`).
//!
//! One test binary for the area; each file is one module (its tests are named after it),
//! public so that what a file declares for its own use counts as used, as at a crate root.

// Each file keeps the shared fixtures (`common/`) it declared as a binary of its own: they are
// compiled once per file here, which costs seconds, not the rewrite of every file.
#![allow(clippy::duplicate_mod)]

#[path = "b13_deadlines.rs"]
pub mod b13_deadlines;
#[path = "b13_time.rs"]
pub mod b13_time;
#[path = "b14_blame.rs"]
pub mod b14_blame;
#[path = "faults.rs"]
pub mod faults;
#[path = "r10_precheck.rs"]
pub mod r10_precheck;
#[path = "r2_state_table.rs"]
pub mod r2_state_table;
#[path = "r3_decide_record.rs"]
pub mod r3_decide_record;
#[path = "r7_budget.rs"]
pub mod r7_budget;
#[path = "r8_separation.rs"]
pub mod r8_separation;
#[path = "r9_cascade.rs"]
pub mod r9_cascade;
#[path = "stress.rs"]
pub mod stress;
