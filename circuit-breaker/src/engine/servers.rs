//! Servers as groups of tools (B10): a server found unreachable takes all its working tools
//! down as one outage, charged once; one of them probes it at a time, or a health check does;
//! reached again, they come back together. Also the servers for the reports.

use super::{Changes, Engine, Recorded};
use crate::clock::Timestamp;
use crate::event::Event;
use crate::failure::Failure;
use crate::model::breaker::{CircuitState, Transition};
use crate::model::group::{Outage, ServerLine, ServerOutage};
use crate::model::id::ToolId;

impl Engine {
    /// Whether `server` is down and due for its probe (B10): no probe of it in flight, no
    /// pause in force (R9.3), and one of the tools its outage took down due by the policy's
    /// interval — steps since it opened, or `attempts` refused since (the mirror counts
    /// those).
    pub(crate) fn server_probe_due(
        &mut self,
        server: &str,
        step: u64,
        attempts: impl Fn(ToolId) -> u32,
        now: Timestamp,
        every: Option<std::time::Duration>,
    ) -> bool {
        if !self.health_checks_wanted() {
            return false;
        }
        let Some(g) = self.groups.find(server) else {
            return false;
        };
        let Some(outage) = self.groups.groups[g].outage.clone() else {
            return false;
        };
        if outage.probing.is_some() {
            return false;
        }
        if let Some(every) = every
            && outage.since.plus(every) <= now
        {
            return true;
        }
        outage.tools.iter().any(|&tool| {
            let interval = self.probe_interval(tool);
            let i = tool.index() as usize;
            let record = &self.records[i];
            record.state == CircuitState::Open
                && (record.probe_due_at().is_some_and(|due| now >= due)
                    || match self.defs[i].settings.probe_unit {
                        crate::policy::ProbeUnit::Attempts => attempts(tool) >= interval,
                        crate::policy::ProbeUnit::Steps => {
                            step >= record
                                .opened_at_step()
                                .unwrap_or(step)
                                .saturating_add(u64::from(interval))
                        }
                    })
        })
    }

    /// The result of probing a down `server` by its health check rather than a tool call
    /// (B10): reached, the tools its outage took down are CLOSED (one `ServerUp`); not
    /// reached, they wait another interval, uncharged — a health check is no tool call
    /// (R10.2). Returns `false` when `server` is not down.
    pub(crate) fn record_server_probe(
        &mut self,
        server: &str,
        reached: bool,
        step: u64,
        now: Timestamp,
        changes: &mut Changes,
    ) -> bool {
        let Some(g) = self.groups.find(server) else {
            return false;
        };
        let Some(first) = self.groups.groups[g]
            .outage
            .as_ref()
            .and_then(|o| o.tools.first().copied())
        else {
            return false;
        };
        if reached {
            let tools = self.groups.groups[g]
                .outage
                .as_ref()
                .map(|o| o.tools.clone())
                .unwrap_or_default();
            self.health_confirmed(&tools, step, changes);
            self.group_up(g, None, changes);
        } else {
            // Every tool of the outage waits again, none excepted (one HALF-OPEN when its
            // probe was just given up).
            self.rearm_outage(first, None, step, now, changes);
        }
        true
    }

    /// Whether `server` is down (B10).
    pub(crate) fn is_server_down(&self, server: &str) -> bool {
        self.groups
            .find(server)
            .is_some_and(|g| self.groups.groups[g].outage.is_some())
    }

    /// The servers, in the order their first tool was registered, for the reports (B10).
    pub(crate) fn servers(&self) -> Vec<ServerLine> {
        let names = |tools: &[ToolId]| -> Vec<String> {
            tools
                .iter()
                .filter_map(|&t| self.name(t).map(str::to_owned))
                .collect()
        };
        self.groups
            .groups
            .iter()
            .map(|g| ServerLine {
                server: g.name.to_string(),
                tools: names(&g.members),
                outage: g.outage.as_ref().map(|o| ServerOutage {
                    step: o.step,
                    at: self.policy.is_timed().then_some(o.at),
                    message: o.message.clone(),
                    tools: names(&o.tools),
                }),
            })
            .collect()
    }

    /// The tools on `server`, in map order (empty when no tool is on it).
    pub(crate) fn server_tools(&self, server: &str) -> Vec<ToolId> {
        self.groups
            .find(server)
            .map(|g| self.groups.groups[g].members.clone())
            .unwrap_or_default()
    }

    /// A failed probe of a server still unreachable (B10): the tools its outage took down
    /// wait another interval with it, and the next probe may be any of them.
    pub(super) fn rearm_outage(
        &mut self,
        tool: ToolId,
        except: Option<ToolId>,
        step: u64,
        now: Timestamp,
        changes: &mut Changes,
    ) {
        let Some(outage) = self.outage_mut(tool) else {
            return;
        };
        outage.probing = None;
        outage.since = now;
        let others: Vec<ToolId> = outage
            .tools
            .iter()
            .copied()
            .filter(|&t| Some(t) != except)
            .collect();
        for other in others {
            if let Some(record) = self.records.get_mut(other.index() as usize)
                && record.state != CircuitState::Closed
            {
                // A HALF-OPEN one (its probe dropped) waits with the rest.
                record.rearm(step);
                changes.rare().attempts.push((other, 0));
                changes.touch(other);
            }
        }
    }

    /// `tool` is CLOSED again by something other than its own probe (its server reached,
    /// another worker's probe): its mirror cells reset, and a tool held back by a check is
    /// checked again (R10.3), as after a probe of its own.
    pub(super) fn bring_back(&mut self, tool: ToolId, changes: &mut Changes) {
        let i = tool.index() as usize;
        if let Some(record) = self.records.get_mut(i) {
            record.come_up();
            changes.rare().attempts.push((tool, 0));
            changes.touch(tool);
        }
        if let Some(precheck) = self.prechecks.get_mut(i)
            && precheck.gated()
        {
            precheck.result = None;
        }
    }

    pub(super) fn outage_mut(&mut self, tool: ToolId) -> Option<&mut Outage> {
        let g = self.groups.of(tool)?;
        self.groups.groups[g]
            .outage
            .as_mut()
            .filter(|o| o.tools.contains(&tool))
    }

    /// A call of `tool` found its server unreachable (B10): every tool of the server that
    /// was working opens at once — one outage, one event naming the server, the failure
    /// charged once. A tool already OPEN on its own keeps its own breaker. Other servers'
    /// tools go on; only when another server (or tool) fails the same way within the cascade
    /// window is it the systemic event of R9, with the server as one unit.
    pub(super) fn server_down(
        &mut self,
        tool: ToolId,
        failure: &Failure,
        call_id: Option<String>,
        step: u64,
        now: Timestamp,
        changes: &mut Changes,
    ) -> Recorded {
        let i = tool.index() as usize;
        let Some(g) = self.groups.of(tool) else {
            return self.recorded(i);
        };
        let name = self.defs[i].name();
        let during_event = self.cascade.active();
        let pending = during_event || self.may_correlate(tool, failure.category(), step);
        let exhausted_now =
            self.budget
                .charge(name.clone(), failure.clone(), step, now, pending, call_id);
        if during_event {
            self.cascade.join(tool, &name);
            self.budget.absorb_last();
        }
        let members = self.groups.groups[g].members.clone();
        let mut down = Vec::with_capacity(members.len());
        for member in members {
            let Some(record) = self.records.get_mut(member.index() as usize) else {
                continue;
            };
            if member == tool || record.state != CircuitState::Open {
                record.go_down(now, step, failure.clone());
                changes.rare().attempts.push((member, 0));
                changes.touch(member);
                down.push(member);
            }
        }
        let tools = down
            .iter()
            .filter_map(|&t| self.name(t).map(str::to_owned))
            .collect();
        self.groups.groups[g].outage = Some(Outage {
            tools: down.clone(),
            found_by: tool,
            step,
            at: now,
            since: now,
            message: failure.summary().into_owned(),
            probing: None,
        });
        self.shares = None;
        for &member in &down {
            self.fleet_opened_here(member.index() as usize, Transition::Opened, changes);
        }
        changes.events.push(Event::ServerDown {
            server: self.groups.groups[g].name.to_string(),
            tools,
            message: failure.summary().into_owned(),
        });
        if !during_event && self.policy.cascade_detection() {
            let window = self.policy.cascade_window();
            if let Some(mut involved) =
                self.cascade
                    .on_open(tool, &self.records, &self.groups, step, window)
            {
                for member in down {
                    if !involved.contains(&member) {
                        involved.push(member);
                    }
                }
                self.start_systemic(involved, step, now, changes);
            }
        }
        if exhausted_now {
            self.exhaust(changes);
        }
        Recorded {
            opened: true,
            ..self.recorded(i)
        }
    }

    /// `tool`'s probe reached its server again (B10): the tools its outage took down are
    /// CLOSED, `tool` by its own transition, the others here; one event names the server.
    pub(super) fn server_up(&mut self, tool: ToolId, changes: &mut Changes) {
        if let Some(g) = self.groups.of(tool) {
            self.group_up(g, Some(tool), changes);
        }
    }

    /// Server `g` was reached again: the tools its outage took down are CLOSED (`except`, the
    /// probe that reached it, by its own transition); one event names the server.
    fn group_up(&mut self, g: usize, except: Option<ToolId>, changes: &mut Changes) {
        let Some(outage) = self.groups.groups[g].outage.take() else {
            return;
        };
        for &member in &outage.tools {
            if Some(member) == except {
                continue;
            }
            self.bring_back(member, changes);
        }
        let tools = outage
            .tools
            .iter()
            .filter_map(|&t| self.name(t).map(str::to_owned))
            .collect();
        changes.events.push(Event::ServerUp {
            server: self.groups.groups[g].name.to_string(),
            tools,
        });
    }
}
