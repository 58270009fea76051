//! The rules a map must follow (R1.4): every problem of a tool as a [`MapError`], all of a
//! map's problems at once as [`MapErrors`], and "did you mean" for a name that is close to
//! one the map declares.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::ToolSpec;
use super::timeout::{TimeoutSpec, timeout_problem};

/// Checks one tool against the names of the map it belongs to; pushes every problem.
pub(crate) fn check_tool(
    tool: &ToolSpec,
    index: usize,
    names: &[&str],
    errors: &mut Vec<MapError>,
) {
    let label = || {
        if tool.name().trim().is_empty() {
            format!("#{}", index + 1)
        } else {
            tool.name().to_string()
        }
    };
    if tool.provides().trim().is_empty() {
        errors.push(MapError::MissingProvides { tool: label() });
    }
    if tool.fallback().trim().is_empty() {
        errors.push(MapError::MissingFallback { tool: label() });
    }
    if tool.threshold() == Some(0) {
        errors.push(MapError::ZeroThreshold { tool: label() });
    }
    if tool.probe_every() == Some(0) {
        errors.push(MapError::ZeroProbeInterval { tool: label() });
    }
    match tool.declared_timeout().as_deref() {
        None => {}
        Some(TimeoutSpec::Set(d)) => {
            if let Some(problem) = timeout_problem(*d) {
                errors.push(MapError::InvalidTimeout {
                    tool: label(),
                    timeout: humantime::format_duration(*d).to_string(),
                    why: problem,
                });
            }
        }
        Some(TimeoutSpec::Unreadable(unreadable)) => errors.push(MapError::InvalidTimeout {
            tool: label(),
            timeout: unreadable.text.to_string(),
            why: format!(
                "it is not a duration ({}); write one with its unit, e.g. \"30s\", \"2m\" or \"1m 30s\"",
                unreadable.why
            ),
        }),
    }
    let mut listed: Vec<&str> = Vec::new();
    for alternative in tool.alternatives() {
        let alt = &*alternative.tool;
        if alt == tool.name() {
            errors.push(MapError::SelfAlternative { tool: label() });
        } else if !names.contains(&alt) {
            errors.push(MapError::UnknownAlternative {
                tool: label(),
                alternative: alt.to_string(),
                suggestion: did_you_mean(alt, names.iter().copied()).map(str::to_string),
            });
        } else if listed.contains(&alt) {
            errors.push(MapError::DuplicateAlternative {
                tool: label(),
                alternative: alt.to_string(),
            });
        }
        listed.push(alt);
    }
}

/// One problem in a capability map (R1.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum MapError {
    /// The tool at `index` (0-based) has an empty name.
    EmptyName {
        /// Position in the map, 0-based.
        index: usize,
    },
    /// Two tools share a name.
    DuplicateTool {
        /// The repeated name.
        tool: String,
        /// Position of the first tool with this name, 0-based.
        first: usize,
        /// Position of the repeat, 0-based.
        index: usize,
    },
    /// The tool says nothing about what it provides.
    MissingProvides {
        /// The tool.
        tool: String,
    },
    /// The tool has no manual fallback (R1.2: mandatory).
    MissingFallback {
        /// The tool.
        tool: String,
    },
    /// An alternative names no tool of the map.
    UnknownAlternative {
        /// The tool whose alternative it is.
        tool: String,
        /// The name that matches no tool.
        alternative: String,
        /// A tool of the map with a close name, if any.
        suggestion: Option<String>,
    },
    /// A tool lists itself as its own alternative.
    SelfAlternative {
        /// The tool.
        tool: String,
    },
    /// A tool lists the same alternative twice.
    DuplicateAlternative {
        /// The tool.
        tool: String,
        /// The repeated alternative.
        alternative: String,
    },
    /// A per-tool failure threshold of zero.
    ZeroThreshold {
        /// The tool.
        tool: String,
    },
    /// A per-tool probe interval of zero.
    ZeroProbeInterval {
        /// The tool.
        tool: String,
    },
    /// A per-tool timeout that is not a duration, or out of range ([`MIN_TIMEOUT`] to
    /// [`MAX_TIMEOUT`]).
    ///
    /// [`MIN_TIMEOUT`]: super::MIN_TIMEOUT
    /// [`MAX_TIMEOUT`]: super::MAX_TIMEOUT
    InvalidTimeout {
        /// The tool.
        tool: String,
        /// The timeout as written.
        timeout: String,
        /// What is wrong with it.
        why: String,
    },
    /// More tools than one expeditor can hold.
    TooManyTools {
        /// The most tools an expeditor holds.
        limit: usize,
    },
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MapError::EmptyName { index } => write!(f, "tool #{} has an empty name", index + 1),
            MapError::DuplicateTool { tool, first, index } => write!(
                f,
                "tool `{tool}` is declared twice (#{} and #{})",
                first + 1,
                index + 1
            ),
            MapError::MissingProvides { tool } => {
                write!(f, "tool `{tool}` does not say what it provides")
            }
            MapError::MissingFallback { tool } => write!(
                f,
                "tool `{tool}` has no fallback: every tool needs a manual fallback for when it and its alternatives are unavailable"
            ),
            MapError::UnknownAlternative {
                tool,
                alternative,
                suggestion,
            } => {
                write!(
                    f,
                    "tool `{tool}` names `{alternative}` as an alternative, but the map declares no tool `{alternative}`"
                )?;
                match suggestion {
                    Some(s) => write!(f, "; did you mean `{s}`?"),
                    None => Ok(()),
                }
            }
            MapError::SelfAlternative { tool } => {
                write!(f, "tool `{tool}` lists itself as its own alternative")
            }
            MapError::DuplicateAlternative { tool, alternative } => {
                write!(f, "tool `{tool}` lists alternative `{alternative}` twice")
            }
            MapError::ZeroThreshold { tool } => write!(
                f,
                "tool `{tool}` has a failure threshold of 0; the smallest is 1"
            ),
            MapError::ZeroProbeInterval { tool } => write!(
                f,
                "tool `{tool}` has a probe interval of 0; the smallest is 1"
            ),
            MapError::InvalidTimeout { tool, timeout, why } => {
                write!(f, "tool `{tool}` has timeout `{timeout}`: {why}")
            }
            MapError::TooManyTools { limit } => {
                write!(f, "more than {limit} tools in one expeditor")
            }
        }
    }
}

impl std::error::Error for MapError {}

/// Every problem found in a capability map, in map order (R1.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapErrors(pub Vec<MapError>);

impl MapErrors {
    /// The problems.
    pub fn problems(&self) -> &[MapError] {
        &self.0
    }
}

impl fmt::Display for MapErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.len();
        write!(
            f,
            "invalid capability map: {n} problem{}",
            if n == 1 { "" } else { "s" }
        )?;
        for problem in &self.0 {
            write!(f, "\n  - {problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for MapErrors {}

/// The closest of `candidates` to `name`, if one is close enough to be a likely typo
/// (case-insensitive edit distance at most a third of the longer name, and at most 3).
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    // A typo is a few edits away: names that long, or that far apart in length, are not
    // compared (edit distance is quadratic in the length; maps may come from anywhere).
    const LONGEST: usize = 256;
    let wanted = name.to_lowercase();
    let wanted_len = wanted.chars().count();
    if wanted_len > LONGEST {
        return None;
    }
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        let candidate_len = candidate.chars().count();
        if candidate_len > LONGEST || candidate_len.abs_diff(wanted_len) > 3 {
            continue;
        }
        let distance = edit_distance(&wanted, &candidate.to_lowercase());
        let longest = wanted_len.max(candidate_len);
        let limit = (longest / 3).clamp(1, 3);
        if distance <= limit && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// Edit distance over chars where swapping two neighbours counts as one edit (optimal string
/// alignment), so `Grpe` is one edit from `Grep`.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for (i, cell) in d.iter_mut().step_by(width).enumerate() {
        *cell = i;
    }
    for (j, cell) in d.iter_mut().take(width).enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = best;
        }
    }
    d[a.len() * width + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_find_near_names_only() {
        let names = ["Grep", "Bash", "Read", "Write", "WebSearch"];
        assert_eq!(did_you_mean("Grpe", names), Some("Grep"));
        assert_eq!(did_you_mean("bash", names), Some("Bash"));
        assert_eq!(did_you_mean("WebSerch", names), Some("WebSearch"));
        assert_eq!(did_you_mean("Edit", names), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("grpe", "grep"), 1);
    }
}
