//! Servers as groups of tools (B10): the tools of one server (an MCP server, say) go
//! down together when a call finds the server unreachable — one event, charged once — and
//! come back together when one probe reaches it again. Plain data; the engine drives it.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::model::id::ToolId;

/// One server as the reports show it (B10): its tools, and its outage if it is down.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerLine {
    /// The server's name.
    pub server: String,
    /// Its tools, in map order.
    pub tools: Vec<String>,
    /// The outage in force, if the server is down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outage: Option<ServerOutage>,
}

/// A server found unreachable, as the reports show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerOutage {
    /// The step at which a call found it unreachable.
    pub step: u64,
    /// When a call found it unreachable, under a policy that runs on wall time (a
    /// cool-down or a budget window): steps mean little to a service that runs for days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<crate::model::clock::Timestamp>,
    /// What that call said.
    pub message: String,
    /// The tools the outage took down (OPEN until one probe reaches the server).
    pub tools: Vec<String>,
}

impl fmt::Display for ServerLine {
    /// `Server files: DOWN since step 4 — connection closed (read_file, list_dir OPEN)`, or
    /// `Server web: reachable (web_search, fetch_page)`; under a wall-time policy, `DOWN
    /// since 2026-12-05T12:10:09Z`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.outage {
            Some(outage @ ServerOutage { at: Some(at), .. }) => write!(
                f,
                "Server {}: DOWN since {} — {} ({} OPEN)",
                self.server,
                at,
                outage.message,
                outage.tools.join(", ")
            ),
            Some(outage) => write!(
                f,
                "Server {}: DOWN since step {} — {} ({} OPEN)",
                self.server,
                outage.step,
                outage.message,
                outage.tools.join(", ")
            ),
            None => write!(
                f,
                "Server {}: reachable ({})",
                self.server,
                self.tools.join(", ")
            ),
        }
    }
}

/// One server's tools, and its outage if it is down.
#[derive(Debug)]
pub(crate) struct Group {
    pub(crate) name: Box<str>,
    /// Its tools, in registration (map) order.
    pub(crate) members: Vec<ToolId>,
    pub(crate) outage: Option<Outage>,
}

/// A server found unreachable: the tools it took down (those that were working; a tool
/// already OPEN on its own keeps its own breaker), and the one of them probing it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Outage {
    pub(crate) tools: Vec<ToolId>,
    /// The tool whose failing call found the server unreachable: its failure is charged;
    /// the others' are the outage's, charged with it.
    pub(crate) found_by: ToolId,
    pub(crate) step: u64,
    /// When it went down.
    pub(crate) at: crate::model::clock::Timestamp,
    /// When it went down, or its last probe failed: the start of the wait for the next.
    pub(crate) since: crate::model::clock::Timestamp,
    pub(crate) message: String,
    pub(crate) probing: Option<ToolId>,
}

impl Group {
    /// The outage, if `tool` is one of the tools it took down.
    #[inline]
    pub(crate) fn outage_of(&self, tool: ToolId) -> Option<&Outage> {
        self.outage.as_ref().filter(|o| o.tools.contains(&tool))
    }
}

/// The groups of an engine, and each tool's group.
#[derive(Debug, Default)]
pub(crate) struct Groups {
    pub(crate) groups: Vec<Group>,
    /// Per tool (by index): its group's index, if it is on a server.
    pub(crate) of: Vec<Option<u32>>,
}

impl Groups {
    /// Registers the next tool (its index is the number registered so far), on `server`.
    pub(crate) fn register(&mut self, tool: ToolId, server: Option<&str>) {
        let group = server.and_then(|server| {
            let index = if let Some(index) = self.find(server) {
                index
            } else {
                self.groups.push(Group {
                    name: server.into(),
                    members: Vec::new(),
                    outage: None,
                });
                self.groups.len() - 1
            };
            self.groups[index].members.push(tool);
            u32::try_from(index).ok()
        });
        // Only a tool on a server needs a cell: tools on none (most) cost nothing here.
        if let Some(group) = group {
            let i = tool.index() as usize;
            if self.of.len() <= i {
                self.of.resize(i + 1, None);
            }
            self.of[i] = Some(group);
        }
    }

    /// The index of the group of `server`, if a tool is on it.
    pub(crate) fn find(&self, server: &str) -> Option<usize> {
        self.groups.iter().position(|g| &*g.name == server)
    }

    /// The group index of `tool`, if it is on a server.
    #[inline]
    pub(crate) fn of(&self, tool: ToolId) -> Option<usize> {
        self.of
            .get(tool.index() as usize)
            .copied()
            .flatten()
            .map(|g| g as usize)
    }

    /// The outage that took `tool` down, if one is in force.
    #[inline]
    pub(crate) fn outage_of(&self, tool: ToolId) -> Option<&Outage> {
        self.groups.get(self.of(tool)?)?.outage_of(tool)
    }

    /// Whether `tool` was forced down by an outage in force without failing itself.
    pub(crate) fn forced(&self, tool: ToolId) -> bool {
        self.outage_of(tool).is_some_and(|o| o.found_by != tool)
    }

    /// Whether `a` and `b` are one unit for cascade correlation: the same tool, or tools of
    /// the same server (whose failures are one outage, never a cascade of their own).
    pub(crate) fn same_unit(&self, a: ToolId, b: ToolId) -> bool {
        a == b || self.of(a).is_some_and(|g| self.of(b) == Some(g))
    }

    /// The unit of `tool` for counting circuits opened together: its server's, or its own.
    pub(crate) fn unit(&self, tool: ToolId) -> (bool, usize) {
        match self.of(tool) {
            Some(g) => (true, g),
            None => (false, tool.index() as usize),
        }
    }

    /// Forgets every outage (a restore: the records say what is OPEN).
    pub(crate) fn clear_outages(&mut self) {
        for group in &mut self.groups {
            group.outage = None;
        }
    }
}
