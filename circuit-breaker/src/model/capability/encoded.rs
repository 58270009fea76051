//! A generated map written as one string and read into the map when first asked for: what
//! `#[toolbox]` writes instead of a `static` of specs.
//!
//! A `static` array of specs costs rustc, per tool, a struct expression, its promotion, and
//! the evaluation, validation and interning of its value (some 1.2 M instructions a tool,
//! BENCHMARKS.md "Compile cost"); one string literal costs it next to nothing. The map read
//! from the string is the one the `static` held: every spec points at a [`StaticTool`] and
//! every text is a slice of the `'static` string, so nothing is copied and the map is
//! borrowed as before.
//!
//! The encoding is a sequence of fields, each its length in bytes in decimal, a `:`, and its
//! text. A tool is `name provides fallback caches threshold probe_every timeout count`, then
//! `count` alternatives, each `tool method kind text`: `caches` is `1` or empty, the three
//! numbers are decimal or empty (not overridden, no deadline), `kind` is `u` (unknown, with
//! an empty text), `l` (low) or `h` (high). The macro is its only writer; text it did not
//! write ends the map where it stops making sense, with no panic.

use std::sync::OnceLock;

use super::static_tool::StaticTool;
use super::{AlternativeSpec, CapabilityMap, Degradation, ToolSpec};

/// A generated capability map, encoded (see the module's doc) and read on first use.
pub struct EncodedMap {
    encoded: &'static str,
    // What the specs point at, filled once before them: each lives as long as the `static`
    // that holds this map, so the specs borrow them as they borrowed the generated statics.
    alternatives: OnceLock<Box<[AlternativeSpec]>>,
    tools: OnceLock<Box<[StaticTool]>>,
    specs: OnceLock<Box<[ToolSpec]>>,
    map: OnceLock<CapabilityMap>,
}

impl EncodedMap {
    /// The map `encoded` says, read when first asked for.
    pub const fn new(encoded: &'static str) -> Self {
        EncodedMap {
            encoded,
            alternatives: OnceLock::new(),
            tools: OnceLock::new(),
            specs: OnceLock::new(),
            map: OnceLock::new(),
        }
    }

    /// The map.
    pub fn get(&'static self) -> &'static CapabilityMap {
        self.map.get_or_init(|| self.read())
    }

    fn read(&'static self) -> CapabilityMap {
        let decoded = decode(self.encoded);
        let alternatives: &'static [AlternativeSpec] = self.alternatives.get_or_init(|| {
            decoded
                .iter()
                .flat_map(|t| t.alternatives.clone())
                .collect()
        });
        let tools: &'static [StaticTool] = self.tools.get_or_init(|| {
            let mut start = 0;
            decoded
                .iter()
                .map(|tool| {
                    let end = start + tool.alternatives.len();
                    let mine = alternatives.get(start..end).unwrap_or_default();
                    start = end;
                    StaticTool {
                        name: tool.name,
                        provides: tool.provides,
                        alternatives: mine,
                        fallback: tool.fallback,
                        threshold: tool.threshold,
                        probe_every: tool.probe_every,
                        caches: tool.caches,
                    }
                })
                .collect()
        });
        let specs: &'static [ToolSpec] = self.specs.get_or_init(|| {
            tools
                .iter()
                .zip(&decoded)
                .map(|(tool, decoded)| match decoded.timeout_ms {
                    Some(millis) => tool.timed(millis),
                    None => tool.spec(),
                })
                .collect()
        });
        CapabilityMap::borrowed(specs)
    }
}

/// One tool as the string says it, before its alternatives have their place.
struct Decoded {
    name: &'static str,
    provides: &'static str,
    fallback: &'static str,
    caches: bool,
    threshold: Option<u32>,
    probe_every: Option<u32>,
    timeout_ms: Option<u64>,
    alternatives: Vec<AlternativeSpec>,
}

/// Every whole tool of `encoded`, in order.
fn decode(encoded: &'static str) -> Vec<Decoded> {
    let mut fields = Fields(encoded);
    let mut tools = Vec::new();
    while !fields.0.is_empty() {
        match fields.tool() {
            Some(tool) => tools.push(tool),
            None => break,
        }
    }
    tools
}

/// The fields not read yet.
struct Fields(&'static str);

/// A field that is not what its place says.
struct Malformed;

impl Fields {
    fn text(&mut self) -> Option<&'static str> {
        let (len, rest) = self.0.split_once(':')?;
        let len: usize = len.parse().ok()?;
        let text = rest.get(..len)?;
        self.0 = rest.get(len..)?;
        Some(text)
    }

    /// A number field: `Ok(None)` when empty, `Err` when neither empty nor a number.
    fn number<N: std::str::FromStr>(&mut self) -> Result<Option<N>, Malformed> {
        match self.text().ok_or(Malformed)? {
            "" => Ok(None),
            text => text.parse().map(Some).map_err(|_| Malformed),
        }
    }

    fn tool(&mut self) -> Option<Decoded> {
        let name = self.text()?;
        let provides = self.text()?;
        let fallback = self.text()?;
        let caches = !self.text()?.is_empty();
        let threshold = self.number().ok()?;
        let probe_every = self.number().ok()?;
        let timeout_ms = self.number().ok()?;
        let count: usize = self.number().ok()?.unwrap_or(0);
        let mut alternatives = Vec::with_capacity(count.min(self.0.len()));
        for _ in 0..count {
            alternatives.push(self.alternative()?);
        }
        Some(Decoded {
            name,
            provides,
            fallback,
            caches,
            threshold,
            probe_every,
            timeout_ms,
            alternatives,
        })
    }

    fn alternative(&mut self) -> Option<AlternativeSpec> {
        let tool = self.text()?;
        let method = self.text()?;
        let kind = self.text()?;
        let text = self.text()?;
        let degradation = match kind {
            "u" => Degradation::unknown(),
            "l" => Degradation::low_static(text),
            "h" => Degradation::high_static(text),
            _ => return None,
        };
        Some(AlternativeSpec::borrowed(tool, method, degradation))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static MAP: EncodedMap = EncodedMap::new(concat!(
        "6:search",
        "15:document search",
        "8:ask user",
        "1:1",
        "1:3",
        "0:",
        "4:2500",
        "1:1",
        "4:grep",
        "7:by hand",
        "1:h",
        "7:slower!",
        "4:grep",
        "7:matches",
        "3:ask",
        "0:",
        "0:",
        "0:",
        "0:",
        "0:",
    ));

    #[test]
    fn the_string_reads_as_the_static_map_it_replaces() {
        static ALTS: [AlternativeSpec; 1] = [AlternativeSpec::borrowed(
            "grep",
            "by hand",
            Degradation::high_static("slower!"),
        )];
        static SEARCH: StaticTool = StaticTool {
            name: "search",
            provides: "document search",
            alternatives: &ALTS,
            fallback: "ask user",
            threshold: Some(3),
            probe_every: None,
            caches: true,
        };
        static GREP: StaticTool = StaticTool {
            name: "grep",
            provides: "matches",
            alternatives: &[],
            fallback: "ask",
            threshold: None,
            probe_every: None,
            caches: false,
        };
        let expected = CapabilityMap::new()
            .tool(SEARCH.timed(2500))
            .tool(GREP.spec());
        assert_eq!(MAP.get(), &expected);
        assert!(std::ptr::eq(MAP.get(), MAP.get()));
        assert_eq!(
            MAP.get().tools()[0].timeout(),
            expected.tools()[0].timeout()
        );
    }

    #[test]
    fn text_it_did_not_write_ends_the_map_without_a_panic() {
        static CUT: EncodedMap = EncodedMap::new("4:grep7:matches3:ask0:0:0:0:0:4:bash99:cut");
        static ODD: EncodedMap = EncodedMap::new("2:é");
        static KIND: EncodedMap = EncodedMap::new("1:a1:b1:c0:0:0:0:1:11:x1:y1:q0:");
        assert_eq!(CUT.get().tools().len(), 1);
        assert!(ODD.get().tools().is_empty());
        assert!(KIND.get().tools().is_empty());
    }
}
