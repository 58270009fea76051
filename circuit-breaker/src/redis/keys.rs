//! What the store holds (see the key layout in the module documentation): the keys, their
//! values, never trusted when read, and the Lua scripts that write them atomically.

use serde::{Deserialize, Serialize};

use crate::model::failure::FailureCategory;

/// Values longer than this are ignored unread (logged).
const MAX_VALUE: usize = 64 * 1024;

/// The open key's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct OpenValue {
    pub(super) v: u32,
    pub(super) worker: String,
    pub(super) message: String,
    pub(super) category: FailureCategory,
    pub(super) at_ms: u64,
}

/// The closed marker's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct ClosedValue {
    pub(super) v: u32,
    pub(super) worker: String,
    pub(super) at_ms: u64,
}

/// The systemic key's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct SystemicValue {
    pub(super) v: u32,
    pub(super) id: String,
    pub(super) worker: String,
    pub(super) pattern: String,
    pub(super) cause: String,
    pub(super) tools: Vec<String>,
    pub(super) category: Option<FailureCategory>,
}

/// A value read from the store: ours (version 1, our JSON), absent, or why it is not ours.
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
        Ok(Version { v: Some(1) }) => serde_json::from_slice::<T>(&raw)
            .map(Some)
            .map_err(|e| e.to_string()),
        Ok(Version { v }) => Err(format!("layout version {v:?}, not 1")),
        Err(e) => Err(e.to_string()),
    }
}

pub(super) struct Keys {
    pub(super) prefix: String,
}

impl Keys {
    pub(super) fn open(&self, tool: &str) -> String {
        format!("{}open:{tool}", self.prefix)
    }
    pub(super) fn closed(&self, tool: &str) -> String {
        format!("{}closed:{tool}", self.prefix)
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
}

/// Publishes an open key (with a quorum, once enough workers saw it); drops the closed marker.
/// KEYS: open, closed, seen. ARGV: value, ttl ms, worker, quorum.
pub(super) const OPEN_SCRIPT: &str = r"
local quorum = tonumber(ARGV[4])
if quorum > 1 then
  if redis.call('TYPE', KEYS[3]).ok ~= 'set' then redis.call('DEL', KEYS[3]) end
  redis.call('SADD', KEYS[3], ARGV[3])
  redis.call('PEXPIRE', KEYS[3], ARGV[2])
  if redis.call('SCARD', KEYS[3]) < quorum then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('DEL', KEYS[2])
return 1
";

/// A probe closed the tool: the open key and the sightings go, the marker is set, our lease
/// (if it is still ours) is released. KEYS: open, closed, seen, probe. ARGV: marker, marker
/// ttl ms, token ('' for none).
pub(super) const CLOSE_SCRIPT: &str = r"
redis.call('DEL', KEYS[1], KEYS[3])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
if ARGV[3] ~= '' and redis.pcall('GET', KEYS[4]) == ARGV[3] then redis.call('DEL', KEYS[4]) end
return 1
";

/// Takes the lease if it is free (`SET NX PX`). A value without an expiry is no lease (every
/// lease has one): garbage, removed, so that it cannot stick the tool. KEYS: probe. ARGV:
/// token, ttl ms.
pub(super) const LEASE_SCRIPT: &str = r"
if redis.call('PTTL', KEYS[1]) == -1 then redis.call('DEL', KEYS[1]) end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
";

/// Compare-and-delete: the lease goes only if it still holds our token. KEYS: probe. ARGV: token.
pub(super) const RELEASE_SCRIPT: &str = r"
if redis.pcall('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
";

pub(super) fn json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}
