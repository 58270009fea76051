//! What the store holds (see the key layout in the module documentation): the keys, their
//! values, never trusted when read, and the Lua scripts that write them atomically.

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use crate::model::failure::FailureCategory;

/// Values longer than this are ignored unread (logged).
const MAX_VALUE: usize = 64 * 1024;

/// The version of every value's format (`"v":2`), the same as the layout's.
pub(super) const FORMAT: u32 = 2;

/// Where a tool stands for the fleet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum ToolState {
    /// Opened by an infrastructure failure (or its probe failed again).
    Open,
    /// A probe closed it.
    Closed,
}

/// A tool key's value: the latest transition the fleet knows of the tool, with its place in
/// the tool's order (`ver`, then `at_ms`, then `worker`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct ToolValue {
    pub(super) v: u32,
    pub(super) state: ToolState,
    /// The tool's transition count as the writer knew it, plus one: a transition made after
    /// seeing another is ordered after it, whatever the workers' clocks say.
    pub(super) ver: u64,
    /// When it happened, on the writer's clock.
    pub(super) at_ms: u64,
    pub(super) worker: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(super) message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) category: Option<FailureCategory>,
    /// When the fleet's probe is due (time-based cool-down).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) due_ms: Option<u64>,
    /// The probes that failed since it opened, fleet-wide.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) probes: u32,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl ToolValue {
    /// The order of two transitions of one tool: the script's, written out in Rust.
    pub(super) fn order(&self, other: &ToolValue) -> Ordering {
        (self.ver, self.at_ms, &self.worker).cmp(&(other.ver, other.at_ms, &other.worker))
    }
}

/// The systemic key's value: one event, and who lifted it, once one worker did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct SystemicValue {
    pub(super) v: u32,
    pub(super) id: String,
    pub(super) worker: String,
    pub(super) pattern: String,
    pub(super) cause: String,
    pub(super) tools: Vec<String>,
    pub(super) category: Option<FailureCategory>,
    /// When it was detected, on the detector's clock.
    pub(super) at_ms: u64,
    /// The worker that confirmed the recovery, once one did: every worker that paused for
    /// this event resumes, and none pauses for it any more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) recovered_by: Option<String>,
}

/// A value read from the store: ours (our format version, our JSON), absent, or why it is
/// not ours.
pub(super) fn parse<T: serde::de::DeserializeOwned>(
    raw: Option<Vec<u8>>,
) -> Result<Option<T>, String> {
    #[derive(Deserialize)]
    struct Version {
        v: Option<u64>,
    }
    let Some(raw) = raw else {
        return Ok(None);
    };
    if raw.len() > MAX_VALUE {
        return Err(format!(
            "{} bytes, over the {MAX_VALUE} a value may have",
            raw.len()
        ));
    }
    match serde_json::from_slice::<Version>(&raw) {
        Ok(Version { v: Some(v) }) if v == u64::from(FORMAT) => serde_json::from_slice::<T>(&raw)
            .map(Some)
            .map_err(|e| e.to_string()),
        Ok(Version { v }) => Err(format!("format version {v:?}, not {FORMAT}")),
        Err(e) => Err(e.to_string()),
    }
}

pub(super) struct Keys {
    pub(super) prefix: String,
}

impl Keys {
    pub(super) fn tool(&self, tool: &str) -> String {
        format!("{}tool:{tool}", self.prefix)
    }
    pub(super) fn probe(&self, tool: &str) -> String {
        format!("{}probe:{tool}", self.prefix)
    }
    pub(super) fn seen(&self, tool: &str) -> String {
        format!("{}seen:{tool}", self.prefix)
    }
    pub(super) fn systemic(&self) -> String {
        format!("{}systemic", self.prefix)
    }
    /// The channel of the fleet's change notices.
    pub(super) fn channel(&self) -> String {
        format!("{}changed", self.prefix)
    }
}

/// Writes a tool's transition if it is newer than the one the key holds (by `ver`, then
/// `at_ms`, then `worker`), on Redis's clock: a transition from further in the future than
/// the skew bound is refused, one older than the TTL is dropped, and the key lives for what
/// is left of the TTL. A value there that is not ours (junk, another format, from the future,
/// past its TTL) is overwritten. An opening waits for a quorum of workers when one is set.
///
/// A value from a worker outside the allowed set (when one is set) is not ours either.
///
/// KEYS: tool, seen. ARGV: value, ver, at ms, worker, ttl ms, skew ms, quorum, '1' for an
/// opening, the allowed workers one per line ('' for any). Returns 1 written, 0 older than the key's, -2 from the future, -3 past its TTL,
/// -4 waiting for the quorum.
pub(super) const APPLY_SCRIPT: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ver, at, ttl, skew = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[5]), tonumber(ARGV[6])
if at > now + skew then return -2 end
local left = ttl - math.max(0, now - at)
if left <= 0 then return -3 end
local cur = redis.pcall('GET', KEYS[1])
if type(cur) == 'string' then
  local ok, old = pcall(cjson.decode, cur)
  if ok and type(old) == 'table' and old.v == 2 and type(old.ver) == 'number'
      and type(old.at_ms) == 'number' and type(old.worker) == 'string'
      and old.at_ms <= now + skew and old.at_ms + ttl > now
      and (ARGV[9] == '' or string.find('\n' .. ARGV[9] .. '\n', '\n' .. old.worker .. '\n', 1, true)) then
    if old.ver > ver or (old.ver == ver and (old.at_ms > at
        or (old.at_ms == at and old.worker >= ARGV[4]))) then
      return 0
    end
  end
end
if ARGV[8] == '1' then
  local quorum = tonumber(ARGV[7])
  if quorum > 1 then
    if redis.call('TYPE', KEYS[2]).ok ~= 'set' then redis.call('DEL', KEYS[2]) end
    redis.call('SADD', KEYS[2], ARGV[4])
    redis.call('PEXPIRE', KEYS[2], ttl)
    if redis.call('SCARD', KEYS[2]) < quorum then return -4 end
  end
else
  redis.call('DEL', KEYS[2])
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', math.floor(left))
return 1
";

/// Takes the probe lease if it is free (`SET NX PX`) and the taker's view of the tool is the
/// store's (the tool key's `ver` is the one it knows): a worker that has not yet read the
/// latest opening, with its new due time, cannot probe on the old one. Whatever holds the
/// lease is bounded by the lease TTL: a value without an expiry is removed, a longer expiry
/// cut down. KEYS: probe, tool. ARGV: token, ttl ms, known ver ('' for none). Returns
/// {won (1, 0, or -1 for a stale view), bounded (0, 1 cut down, 2 removed), holder}.
pub(super) const LEASE_SCRIPT: &str = r"
local bounded = 0
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -1 then
  redis.call('DEL', KEYS[1])
  bounded = 2
elseif ttl > tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  bounded = 1
end
if ARGV[3] ~= '' then
  local cur = redis.pcall('GET', KEYS[2])
  if type(cur) == 'string' then
    local ok, v = pcall(cjson.decode, cur)
    if ok and type(v) == 'table' and type(v.ver) == 'number' and v.ver ~= tonumber(ARGV[3]) then
      return {-1, bounded, ''}
    end
  end
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {1, bounded, ''} end
local holder = redis.pcall('GET', KEYS[1])
if type(holder) ~= 'string' then holder = '(not a string)' end
return {0, bounded, holder}
";

/// Renews the lease while its probe runs, if it still holds our token. KEYS: probe. ARGV:
/// token, ttl ms. Returns 1 renewed, 0 lost.
pub(super) const RENEW_SCRIPT: &str = r"
if redis.pcall('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
";

/// Compare-and-delete: the lease goes only if it still holds our token. KEYS: probe. ARGV: token.
pub(super) const RELEASE_SCRIPT: &str = r"
if redis.pcall('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
";

/// Marks the systemic event recovered, if the key still holds that event and no worker has
/// marked it yet; its expiry is kept. KEYS: systemic. ARGV: id, the recovered value.
pub(super) const RECOVER_SCRIPT: &str = r"
local cur = redis.pcall('GET', KEYS[1])
if type(cur) ~= 'string' then return 0 end
local ok, v = pcall(cjson.decode, cur)
if not ok or type(v) ~= 'table' or v.id ~= ARGV[1] then return 0 end
if type(v.recovered_by) == 'string' then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
return 1
";

pub(super) fn json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// Whether `token` has the shape of a lease token (`{worker}:{16 hex digits}`), and whose.
pub(super) fn token_worker(token: &str) -> Option<&str> {
    let (worker, nonce) = token.rsplit_once(':')?;
    (nonce.len() == 16 && nonce.bytes().all(|b| b.is_ascii_hexdigit()) && !worker.is_empty())
        .then_some(worker)
}
