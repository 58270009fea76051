//! The fleet's probe lease: one worker probes a shared circuit at a time. The lease is taken
//! only on the store's latest view of the tool, renewed while its probe runs (at a third of
//! its TTL, so one probe however long), and given back when the probe ends; whatever else
//! holds it is bounded by the TTL.

use tokio::time::Instant;

use super::keys::{LEASE_SCRIPT, RELEASE_SCRIPT, RENEW_SCRIPT, ToolState, token_worker};
use super::store::random;
use super::task::{Fault, Lease, Task, millis};

impl Task {
    /// Asks for the lease of every shared circuit whose probe is due here; the worker that
    /// wins it is granted the probe.
    pub(super) async fn lease(&mut self) -> Result<(), String> {
        for tool in self.link.probes_wanted() {
            if self.leases.contains_key(&tool) {
                // Still ours from an earlier grant the engine let go of: grant it again.
                if !self.link.grant_probe(&tool) {
                    self.give_back_lease(&tool).await?;
                }
                continue;
            }
            let token = format!("{}:{:016x}", self.config.worker, random());
            let known = self
                .known
                .get(&tool)
                .filter(|k| k.state == ToolState::Open)
                .map(|k| k.ver.to_string())
                .unwrap_or_default();
            let mut cmd = ::redis::cmd("EVAL");
            cmd.arg(LEASE_SCRIPT)
                .arg(2)
                .arg(self.keys.probe(&tool))
                .arg(self.keys.tool(&tool))
                .arg(&token)
                .arg(millis(self.config.lease_ttl))
                .arg(known);
            let (won, bounded, holder): (i64, i64, String) = match self.query(&cmd).await {
                Ok(v) => v,
                Err(Fault::Unreachable(why)) => return Err(why),
                Err(Fault::Refused(why)) => {
                    tracing::warn!(tool, %why, "redis fleet: the lease was refused");
                    continue;
                }
            };
            self.foreign_holder(&tool, bounded, &holder);
            if won == 1 {
                self.leases.insert(
                    tool.clone(),
                    Lease {
                        token: token.clone(),
                        taken: Instant::now(),
                    },
                );
                self.renew_at = Some(Instant::now() + self.config.lease_ttl / 3);
                if !self.link.grant_probe(&tool) {
                    self.give_back_lease(&tool).await?;
                }
            }
        }
        Ok(())
    }

    /// Logs, once per holder, a lease value that no worker of this fleet wrote (junk, another
    /// program's, a worker not allowed) or that outlived the TTL: the script has bounded it.
    fn foreign_holder(&mut self, tool: &str, bounded: i64, holder: &str) {
        let foreign = !holder.is_empty()
            && token_worker(holder).is_none_or(|w| {
                self.config
                    .allowed
                    .as_ref()
                    .is_some_and(|allowed| !allowed.contains(w))
            });
        if (foreign || bounded != 0) && self.foreign_leases.insert(format!("{tool}\0{holder}")) {
            tracing::warn!(
                key = self.keys.probe(tool),
                holder,
                bounded = match bounded {
                    1 => "its expiry was cut to the lease TTL",
                    2 => "it had no expiry and was removed",
                    _ => "it expires within the lease TTL",
                },
                "redis fleet: the probe lease is held by a value that is no lease of this fleet's"
            );
        }
    }

    /// Renews the leases whose probe still runs here; gives back the others, and those
    /// granted but unused for a whole TTL (no call came to make the probe).
    pub(super) async fn renew(&mut self) -> Result<(), String> {
        if self.leases.is_empty() {
            self.renew_at = None;
            return Ok(());
        }
        let tools: Vec<String> = self.leases.keys().cloned().collect();
        for tool in tools {
            let Some(lease) = self.leases.get(&tool) else {
                continue;
            };
            let (token, since) = (lease.token.clone(), lease.taken);
            let lapsed = since.elapsed() >= self.config.lease_ttl && self.link.revoke_probe(&tool);
            if lapsed || !self.link.holds_probe(&tool) {
                self.give_back_lease(&tool).await?;
                continue;
            }
            let mut cmd = ::redis::cmd("EVAL");
            cmd.arg(RENEW_SCRIPT)
                .arg(1)
                .arg(self.keys.probe(&tool))
                .arg(&token)
                .arg(millis(self.config.lease_ttl));
            match self.query::<i64>(&cmd).await {
                Ok(1) => {}
                Ok(_) => {
                    // It expired (Redis was paused or unreachable past the TTL): another worker
                    // may probe too. Nothing to do but say so: this probe is under way.
                    tracing::warn!(
                        tool,
                        "redis fleet: the probe lease expired while its probe ran"
                    );
                    self.leases.remove(&tool);
                }
                Err(Fault::Unreachable(why)) => return Err(why),
                Err(Fault::Refused(why)) => {
                    tracing::warn!(tool, %why, "redis fleet: the lease renewal was refused");
                }
            }
        }
        self.renew_at =
            (!self.leases.is_empty()).then(|| Instant::now() + self.config.lease_ttl / 3);
        Ok(())
    }

    async fn give_back_lease(&mut self, tool: &str) -> Result<(), String> {
        match self.leases.get(tool).map(|l| l.token.clone()) {
            Some(token) => self.release(tool, &token).await,
            None => Ok(()),
        }
    }

    /// Gives the lease back, if it still holds our token.
    pub(super) async fn release(&mut self, tool: &str, token: &str) -> Result<(), String> {
        let mut cmd = ::redis::cmd("EVAL");
        cmd.arg(RELEASE_SCRIPT)
            .arg(1)
            .arg(self.keys.probe(tool))
            .arg(token);
        match self.query::<i64>(&cmd).await {
            Ok(_) | Err(Fault::Refused(_)) => {
                self.leases.remove(tool);
                Ok(())
            }
            Err(Fault::Unreachable(why)) => Err(why),
        }
    }
}
