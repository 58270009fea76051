//! Pre-call checks (R10) and the health of servers (B10): when a check is due, its result,
//! a down server's probe, and the tools allowed at all.

use std::time::Duration;

use super::Expeditor;
use crate::model::group::ServerLine;
use crate::model::id::ToolId;
use crate::model::precheck::Availability;

impl Expeditor {
    /// Whether `tool` should be checked before its next call: never checked yet, or checked
    /// before the last systemic event (R10.3). The executor runs the check and reports it
    /// with [`record_precheck`](Self::record_precheck); the expeditor calls nothing.
    pub fn precheck_due(&self, tool: impl Into<ToolId>) -> bool {
        self.lock().precheck_due(tool.into())
    }

    /// Whether the executor should run `tool`'s check now: it is due and no pause is in
    /// force (a check is an outside call too; while paused, nothing is called).
    pub fn should_precheck(&self, tool: impl Into<ToolId>) -> bool {
        let engine = self.lock();
        engine.halt().is_none() && engine.precheck_due(tool.into())
    }

    /// Records the result of a pre-call check of `tool` (R10.1), cached until the next
    /// systemic event. Returns `false` for an unknown tool.
    pub fn record_precheck(&self, tool: impl Into<ToolId>, availability: Availability) -> bool {
        let tool = tool.into();
        self.command(|engine, changes, step| {
            engine.record_precheck(tool, availability, step, changes)
        })
    }

    /// Records one health check of `server` (its MCP `ping`, say) for every tool on it
    /// (R10.1, B10): one check per server, not per tool. Returns `false` when no tool is on
    /// `server`.
    pub fn record_server_check(&self, server: &str, availability: Availability) -> bool {
        self.command(|engine, changes, step| {
            let tools = engine.server_tools(server);
            let Some((&last, rest)) = tools.split_last() else {
                return false;
            };
            for &tool in rest {
                engine.record_precheck(tool, availability.clone(), step, changes);
            }
            engine.record_precheck(last, availability, step, changes)
        })
    }

    /// Whether `server` is down and due for its probe (B10): the policy's interval has passed
    /// since its outage (in steps, or in attempts refused), no probe of it is in flight and no
    /// pause is in force. A model-driven agent never calls a tool it is not offered, so an
    /// MCP client probes a down server by its health check (reconnect, `ping`) when this
    /// says so, and records the result with [`record_server_probe`](Self::record_server_probe).
    pub fn server_probe_due(&self, server: &str) -> bool {
        self.server_probe_due_within(server, None)
    }

    /// As [`server_probe_due`](Self::server_probe_due), and also due once `every` of wall
    /// time has passed since the server went down or its last probe failed — for a client
    /// whose callers make no attempts and advance no steps (a proxy serving only the tools
    /// it offers): a down server is then looked at again at least that often. Never during
    /// a pause (R9.3).
    pub fn server_probe_due_within(
        &self,
        server: &str,
        every: impl Into<Option<Duration>>,
    ) -> bool {
        let step = self.step();
        let now = self.now();
        let mut engine = self.lock();
        engine.server_probe_due(
            server,
            step,
            |tool| {
                self.inner
                    .mirror
                    .get(tool)
                    .map_or(0, |slot| slot.hot.attempts())
            },
            now,
            every.into(),
        )
    }

    /// Whether `server` is down: a call found it unreachable and no probe has reached it
    /// since (B10).
    pub fn server_down(&self, server: &str) -> bool {
        self.lock().is_server_down(server)
    }

    /// Records a probe of a down `server` by its health check (B10): reached, every tool its
    /// outage took down is CLOSED at once (one `ServerUp` event); not reached, they wait
    /// another interval, and nothing is charged (a health check is no tool call). Returns
    /// `false` when `server` is not down.
    pub fn record_server_probe(&self, server: &str, reached: bool) -> bool {
        let now = self.now();
        self.command(|engine, changes, step| {
            engine.record_server_probe(server, reached, step, now, changes)
        })
    }

    /// The servers the tools live on, with the outage of each one down (B10), in the order
    /// their first tool was registered; empty when no tool is on a server.
    pub fn servers(&self) -> Vec<ServerLine> {
        self.lock().servers()
    }

    /// What `tool` counts as now: its last check, UNAVAILABLE when not allowed, AVAILABLE
    /// when never checked. `None` for an unknown tool.
    pub fn availability(&self, tool: impl Into<ToolId>) -> Option<Availability> {
        self.lock().availability(tool.into())
    }

    /// Only these tools may be called (the source document's `allowed-tools`): every other tool, and any
    /// discovered later, is UNAVAILABLE without being checked or called (R10.1).
    pub fn allow_only<I, S>(&self, tools: I)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let allowed: Vec<String> = tools.into_iter().map(|s| s.as_ref().to_owned()).collect();
        self.command(|engine, changes, _| engine.allow_only(allowed, changes));
    }

    /// Forgets every cached check: each tool is checked again before its next call.
    pub fn invalidate_prechecks(&self) {
        self.command(|engine, changes, _| engine.invalidate_prechecks(changes));
    }
}
