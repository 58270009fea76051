//! The phrases that name a category in a message, and the index that finds them all in one
//! pass over the message's bytes.

use super::FailureCategory;

/// Phrases that name an infrastructure failure unambiguously, matched as whole words.
pub(super) const NETWORK_PHRASES: &[&str] = &[
    "connection refused",
    "connection reset",
    "connection aborted",
    "connection timed out",
    "econnrefused",
    "econnreset",
    "econnaborted",
    "etimedout",
    "network unreachable",
    "network is unreachable",
    "enetunreach",
    "network is down",
    "enetdown",
    "no route to host",
    "host unreachable",
    "host is unreachable",
    "ehostunreach",
    "dns",
    "name resolution",
    "could not resolve host",
    "broken pipe",
    "epipe",
];
pub(super) const FILESYSTEM_PHRASES: &[&str] = &[
    "read-only file system",
    "read-only filesystem",
    "erofs",
    "no space left on device",
    "enospc",
    "disk full",
    "disk quota exceeded",
    "edquot",
    "stale file handle",
    "estale",
];
pub(super) const PERMISSION_PHRASES: &[&str] = &[
    "permission denied",
    "operation not permitted",
    "eacces",
    "eperm",
];
/// Tool-local phrases, matched anywhere (a wrong guess here cannot correlate anything).
pub(super) const NOT_FOUND_PHRASES: &[&str] = &["not found", "no such", "enoent", "does not exist"];
pub(super) const TIMEOUT_PHRASES: &[&str] = &["timeout", "timed out", "deadline exceeded"];
pub(super) const INVALID_INPUT_PHRASES: &[&str] = &[
    "invalid argument",
    "invalid input",
    "invalid param",
    "einval",
];

/// (The tests' oracle.) Whether `needle` occurs in `haystack` with no letter or digit right before or after it.
#[cfg(test)]
pub(super) fn contains_word(haystack: &str, needle: &str) -> bool {
    let bytes = haystack.as_bytes();
    haystack.match_indices(needle).any(|(at, _)| {
        let before = at.checked_sub(1).and_then(|i| bytes.get(i));
        let after = bytes.get(at + needle.len());
        !before.is_some_and(u8::is_ascii_alphanumeric)
            && !after.is_some_and(u8::is_ascii_alphanumeric)
    })
}

/// The phrase lists in order of precedence: the category, whether a phrase must stand as
/// whole words, and the phrases.
pub(super) const CLASSES: [(FailureCategory, bool, &[&str]); 6] = [
    (FailureCategory::NotFound, false, NOT_FOUND_PHRASES),
    (FailureCategory::Network, true, NETWORK_PHRASES),
    (FailureCategory::Filesystem, true, FILESYSTEM_PHRASES),
    (FailureCategory::Permission, true, PERMISSION_PHRASES),
    (FailureCategory::Timeout, false, TIMEOUT_PHRASES),
    (FailureCategory::InvalidInput, false, INVALID_INPUT_PHRASES),
];

/// A phrase's bucket in [`PhraseIndex`]: its first two bytes, six bits each (letters,
/// digits and the space each keep their own; a digit shares with a letter, which the full
/// comparison tells apart).
#[inline]
fn bucket(first: u8, second: u8) -> usize {
    (usize::from(first & 63) << 6) | usize::from(second & 63)
}

/// Every phrase with its class (an index into [`CLASSES`]), ordered by bucket, and where each
/// bucket starts: most positions of a message start no phrase at all and are passed at the
/// cost of two loads.
pub(super) struct PhraseIndex {
    phrases: Vec<(&'static [u8], usize)>,
    starts: Vec<u16>,
}

impl PhraseIndex {
    #[inline]
    pub(super) fn candidates(&self, first: u8, second: u8) -> &[(&'static [u8], usize)] {
        let b = bucket(first, second);
        let (Some(&from), Some(&to)) = (self.starts.get(b), self.starts.get(b + 1)) else {
            return &[];
        };
        self.phrases
            .get(usize::from(from)..usize::from(to))
            .unwrap_or(&[])
    }
}

/// The phrase index, built once.
pub(super) fn phrase_index() -> &'static PhraseIndex {
    static INDEX: std::sync::OnceLock<PhraseIndex> = std::sync::OnceLock::new();
    INDEX.get_or_init(|| {
        let mut phrases: Vec<(&'static [u8], usize)> = Vec::new();
        for (class, &(_, _, list)) in CLASSES.iter().enumerate() {
            for &phrase in list {
                if phrase.len() >= 2 {
                    phrases.push((phrase.as_bytes(), class));
                }
            }
        }
        phrases.sort_by_key(|&(p, _)| bucket(p[0], p[1]));
        let mut starts = vec![0u16; 4097];
        for &(p, _) in &phrases {
            starts[bucket(p[0], p[1]) + 1] += 1;
        }
        for b in 1..starts.len() {
            starts[b] += starts[b - 1];
        }
        PhraseIndex { phrases, starts }
    })
}
