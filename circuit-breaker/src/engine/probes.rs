//! The probe interval in force for a tool: the policy's, or after a systemic event the
//! backed-off one, whose intervals along a chain of routes share the backoff cap (R9.5).

use super::Engine;
use crate::model::breaker::CircuitState;
use crate::model::cascade::backoff_interval;
use crate::model::id::ToolId;
use crate::policy::Policy;

impl Engine {
    /// The probe interval in force for `tool`: the policy's, or after a cascade the
    /// backed-off one (R9.5). Along any chain of routes (a tool and the alternatives it
    /// routes to, each visited once) the intervals of the tools backing off add up to at
    /// most the cap: each such tool gets at most an equal share of the cap for the longest
    /// chain it is part of (never less than its base interval). The shares are computed once
    /// per change of who is backing off, not on every decide.
    pub(super) fn probe_interval(&mut self, tool: ToolId) -> u32 {
        let cap = self.policy.backoff_cap();
        let i = tool.index() as usize;
        let Some(level) = self.records.get(i).map(|r| r.backoff) else {
            return Policy::DEFAULT_PROBE_EVERY;
        };
        let base = self.defs[i].settings.probe_every;
        if level == 0 {
            return base;
        }
        if self.shares.is_none() {
            self.shares = Some(self.chain_shares());
        }
        let share = self
            .shares
            .as_ref()
            .and_then(|s| s.get(i).copied())
            .unwrap_or(cap);
        backoff_interval(base, level, cap).min(share.max(base))
    }

    /// For every tool backing off after a cascade, the cap divided by the size of the longest
    /// chain of backing-off tools it belongs to. One walk per backing-off tool, each visiting
    /// every tool at most once.
    pub(super) fn chain_shares(&self) -> Vec<u32> {
        let cap = self.policy.backoff_cap();
        let n = self.records.len();
        let backing: Vec<bool> = self
            .records
            .iter()
            .map(|r| r.backoff > 0 && r.state != CircuitState::Closed)
            .collect();
        let mut longest = vec![0usize; n];
        let mut seen = vec![usize::MAX; n];
        let mut stack = Vec::new();
        let mut members = Vec::new();
        for head in (0..n).filter(|&h| backing[h]) {
            members.clear();
            stack.push(head);
            seen[head] = head;
            while let Some(x) = stack.pop() {
                if backing[x] {
                    members.push(x);
                }
                for alt in self.defs[x].alternative_ids().map(|a| a.index() as usize) {
                    if alt < n && seen[alt] != head {
                        seen[alt] = head;
                        stack.push(alt);
                    }
                }
            }
            for &m in &members {
                longest[m] = longest[m].max(members.len());
            }
        }
        longest
            .into_iter()
            .map(|len| match u32::try_from(len) {
                Ok(0) => cap,
                Ok(len) => cap / len,
                Err(_) => 1,
            })
            .collect()
    }
}
