//! The model: plain data, one concern per file, no locks, no I/O. Tool ids, the two clocks,
//! the policy, failures and their categories, the capability map, events, one tool's breaker,
//! the failure budget and its ledger, cascades, groups of tools on one server, freshness
//! labels, scope, the routing order, snapshots, pre-call checks, the registry of tool
//! definitions, and what a fleet of workers shares.
//!
//! Every layer above reads these types; nothing here names a layer above.

pub(crate) mod breaker;
pub(crate) mod budget;
pub mod capability;
pub(crate) mod cascade;
pub mod clock;
pub mod event;
pub mod failure;
pub mod fleet;
pub mod freshness;
pub(crate) mod group;
pub(crate) mod id;
pub(crate) mod ledger;
pub mod policy;
pub(crate) mod precheck;
pub(crate) mod registry;
pub mod route;
pub mod scope;
pub mod snapshot;
