//! Staleness (step 6 of the source document, R6): a result can carry a freshness label; fresh results carry
//! none (R6.3). Labels are detected, not only declared: output identical to the previous call
//! with the same arguments, data older than the current cycle, tools declared as caching, a
//! contradiction with a later observation, and no baseline at all.
//!
//! The expeditor never sees a result's value: the executor hands it a digest (a hash of the
//! arguments and of the output), so this module, like the rest of the decision layer, knows
//! no tool's types (R8.1).

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use crate::model::clock::Timestamp;

/// How fresh a result is (R6.1). `Fresh` renders as nothing: labels are for uncertainty, not
/// confirmation (R6.3).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "freshness", rename_all = "snake_case")]
pub enum Freshness {
    /// From a live call, with nothing suggesting otherwise: no label.
    Fresh,
    /// `[STALE DATA — retrieved at {ts}, may not reflect current state]`
    Stale {
        /// When the data was retrieved.
        retrieved_at: Timestamp,
    },
    /// `[CACHED RESULT — {tool} returned identical results to previous call; {source} may
    /// have changed since]`
    Cached {
        /// The tool.
        tool: String,
        /// What may have changed (`filesystem`, `the source`).
        source: String,
    },
    /// `[UNVERIFIED — {tool} result from {date}; current status unknown]`
    Unverified {
        /// The tool.
        tool: String,
        /// When the result was produced.
        from: Timestamp,
    },
    /// `[FRESHNESS UNKNOWN — no baseline for comparison]`
    Unknown,
}

impl Freshness {
    /// Whether the result is labelled (anything but [`Freshness::Fresh`]).
    pub fn is_labelled(&self) -> bool {
        !matches!(self, Freshness::Fresh)
    }
}

impl fmt::Display for Freshness {
    /// The source document's label (R6.1); nothing for fresh data.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Freshness::Fresh => Ok(()),
            Freshness::Stale { retrieved_at } => write!(
                f,
                "[STALE DATA — retrieved at {retrieved_at}, may not reflect current state]"
            ),
            Freshness::Cached { tool, source } => write!(
                f,
                "[CACHED RESULT — {tool} returned identical results to previous call; {source} may have changed since]"
            ),
            Freshness::Unverified { tool, from } => write!(
                f,
                "[UNVERIFIED — {tool} result from {}; current status unknown]",
                Date(*from)
            ),
            Freshness::Unknown => f.write_str("[FRESHNESS UNKNOWN — no baseline for comparison]"),
        }
    }
}

/// The date part of a timestamp: `2026-11-30`.
struct Date(Timestamp);

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0.to_string();
        f.write_str(text.get(..10).unwrap_or(&text))
    }
}

/// A value with its freshness label (R6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Labelled<T> {
    /// The value.
    pub value: T,
    /// Its freshness.
    pub freshness: Freshness,
}

impl<T: fmt::Display> fmt::Display for Labelled<T> {
    /// The label on its own line above the value; fresh values print bare.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.freshness.is_labelled() {
            writeln!(f, "{}", self.freshness)?;
        }
        write!(f, "{}", self.value)
    }
}

/// A 64-bit digest of anything hashable: how the executor describes arguments and outputs
/// to the expeditor without handing them over.
pub fn digest<T: Hash + ?Sized>(value: &T) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

/// How a tool behaves with respect to freshness, declared once per tool.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FreshnessProfile {
    /// The tool's documentation says it caches (`#[tool(caches)]`): every result is
    /// UNVERIFIED.
    pub caches: bool,
    /// What may change under the tool, for the CACHED label (default `the source`).
    pub source: Option<String>,
}

/// What the executor knows about one result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observation {
    /// Digest of the call's arguments.
    pub args: u64,
    /// Digest of the output.
    pub output: u64,
    /// The time the data itself says it is from, if it says.
    pub data_time: Option<Timestamp>,
    /// Whether it came from a live call of the tool (as opposed to a copy kept from earlier,
    /// a file, a user).
    pub live: bool,
}

/// The last output seen for one (tool, arguments) pair.
#[derive(Debug, Clone, Copy)]
struct Seen {
    output: u64,
    at: Timestamp,
    contradicted: bool,
}

/// How many (tool, arguments) pairs are remembered per tool; the oldest are forgotten first.
const MEMORY: usize = 1024;

/// Remembers recent outputs per tool and arguments and labels new ones (R6.2).
#[derive(Debug, Default)]
pub(crate) struct FreshnessTracker {
    seen: HashMap<(String, u64), Seen>,
    order: HashMap<String, VecDeque<u64>>,
    profiles: HashMap<String, FreshnessProfile>,
}

impl FreshnessTracker {
    pub(crate) fn set_profile(&mut self, tool: &str, profile: FreshnessProfile) {
        self.profiles.insert(tool.to_owned(), profile);
    }

    /// Labels one result (R6.2), then remembers it as the baseline for the next.
    pub(crate) fn observe(
        &mut self,
        tool: &str,
        observation: Observation,
        now: Timestamp,
        cycle_start: Timestamp,
    ) -> Freshness {
        let key = (tool.to_owned(), observation.args);
        let previous = self.seen.get(&key).copied();
        let profile = self.profiles.get(tool).cloned().unwrap_or_default();
        let label = if let Some(data_time) = observation.data_time.filter(|t| *t < cycle_start) {
            Freshness::Stale {
                retrieved_at: data_time,
            }
        } else if previous.is_some_and(|p| p.contradicted && p.output == observation.output) {
            Freshness::Stale {
                retrieved_at: previous.map_or(now, |p| p.at),
            }
        } else if profile.caches {
            Freshness::Unverified {
                tool: tool.to_owned(),
                from: observation.data_time.unwrap_or(now),
            }
        } else if previous.is_some_and(|p| p.output == observation.output) {
            Freshness::Cached {
                tool: tool.to_owned(),
                source: profile.source.unwrap_or_else(|| "the source".to_owned()),
            }
        } else if !observation.live && previous.is_none() && observation.data_time.is_none() {
            Freshness::Unknown
        } else {
            Freshness::Fresh
        };
        if previous.is_none() {
            let order = self.order.entry(tool.to_owned()).or_default();
            order.push_back(observation.args);
            if order.len() > MEMORY
                && let Some(old) = order.pop_front()
            {
                self.seen.remove(&(tool.to_owned(), old));
            }
        }
        let keep_contradiction =
            previous.is_some_and(|p| p.contradicted && p.output == observation.output);
        self.seen.insert(
            key,
            Seen {
                output: observation.output,
                at: if keep_contradiction {
                    previous.map_or(now, |p| p.at)
                } else {
                    now
                },
                contradicted: keep_contradiction,
            },
        );
        label
    }

    /// The user reports that the last output of `tool` for these arguments contradicts a
    /// newer observation: that output, and the same output seen again, is STALE DATA with the
    /// time it was first retrieved. Returns the label, or `None` when nothing was seen.
    pub(crate) fn contradict(&mut self, tool: &str, args: u64) -> Option<Freshness> {
        let seen = self.seen.get_mut(&(tool.to_owned(), args))?;
        seen.contradicted = true;
        Some(Freshness::Stale {
            retrieved_at: seen.at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(args: u64, output: u64) -> Observation {
        Observation {
            args,
            output,
            data_time: None,
            live: true,
        }
    }

    #[test]
    fn r6_2_labels_follow_the_indicators() {
        let start = Timestamp::from_secs(100);
        let now = Timestamp::from_secs(200);
        let mut t = FreshnessTracker::default();
        assert_eq!(t.observe("Grep", obs(1, 10), now, start), Freshness::Fresh);
        assert_eq!(t.observe("Grep", obs(1, 11), now, start), Freshness::Fresh);
        assert!(matches!(
            t.observe("Grep", obs(1, 11), now, start),
            Freshness::Cached { .. }
        ));
        assert_eq!(t.observe("Grep", obs(2, 11), now, start), Freshness::Fresh);
        let old = Observation {
            data_time: Some(Timestamp::from_secs(50)),
            ..obs(3, 1)
        };
        assert_eq!(
            t.observe("Read", old, now, start),
            Freshness::Stale {
                retrieved_at: Timestamp::from_secs(50)
            }
        );
        let external = Observation {
            live: false,
            ..obs(4, 1)
        };
        assert_eq!(t.observe("Read", external, now, start), Freshness::Unknown);
        t.set_profile(
            "WebSearch",
            FreshnessProfile {
                caches: true,
                source: None,
            },
        );
        assert!(matches!(
            t.observe("WebSearch", obs(1, 1), now, start),
            Freshness::Unverified { .. }
        ));
        assert_eq!(
            t.contradict("Grep", 2),
            Some(Freshness::Stale { retrieved_at: now })
        );
        let later = Timestamp::from_secs(300);
        assert_eq!(
            t.observe("Grep", obs(2, 11), later, start),
            Freshness::Stale { retrieved_at: now }
        );
        assert_eq!(
            t.observe("Grep", obs(2, 12), later, start),
            Freshness::Fresh
        );
    }
}

/// The last good results of a tool, by argument digest, for answering with STALE DATA while
/// its circuit is OPEN (R6). Keeps at most 256 results, forgetting the oldest first.
#[derive(Debug)]
pub struct StaleCache<T> {
    inner: Mutex<Kept<T>>,
}

/// Results by argument digest, and the digests oldest first.
type Kept<T> = (HashMap<u64, (T, Timestamp)>, VecDeque<u64>);

impl<T> Default for StaleCache<T> {
    fn default() -> Self {
        StaleCache {
            inner: Mutex::new((HashMap::new(), VecDeque::new())),
        }
    }
}

/// How many results a [`StaleCache`] keeps.
const STALE_MEMORY: usize = 256;

impl<T: Clone> StaleCache<T> {
    /// Keeps `value` as the last good result for `args`, retrieved `at`.
    pub fn remember(&self, args: u64, value: T, at: Timestamp) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let (map, order) = &mut *inner;
        if map.insert(args, (value, at)).is_none() {
            order.push_back(args);
            if order.len() > STALE_MEMORY
                && let Some(old) = order.pop_front()
            {
                map.remove(&old);
            }
        }
    }

    /// The last good result for `args`, with when it was retrieved.
    pub fn recall(&self, args: u64) -> Option<(T, Timestamp)> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.0.get(&args).cloned()
    }
}

/// A value that says when its data is from (a file's modification time, a page's date):
/// implement it for a tool's output to have data older than the cycle labelled STALE DATA.
pub trait Dated {
    /// When the data is from, if known.
    fn data_time(&self) -> Option<Timestamp>;
}
