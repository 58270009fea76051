//! The command line: which real faults to inject, and how to print the result.
//!
//! ```text
//! --break bash          the shell is broken: scripts lose their exec bits, PATH is an empty
//!                       directory, a crashed run's lock is left behind
//! --outage network      the search server is stopped: connections are refused
//! --read-only           the workspace is made read-only
//! --flaky TOOL=RATE     TOOL fails at RATE (0..1), drawn from a seeded PRNG (--seed N)
//! --seed N              the PRNG's seed (default 1)
//! --json                print the final report as JSON instead of the readable run
//! --watch               a live panel of the circuits and the budget (see `watch.rs`)
//! ```
//!
//! Faults combine.

use std::fmt;

/// What the agent was asked to do.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Options {
    pub faults: Faults,
    pub json: bool,
    /// `--watch`: a live panel of the circuits and the budget as the run goes.
    pub watch: bool,
}

/// The faults injected into the agent's real tools.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Faults {
    pub break_bash: bool,
    pub outage_network: bool,
    pub read_only: bool,
    /// Tools (lower-case names) that fail at a rate, in the order given.
    pub flaky: Vec<(String, f64)>,
    pub seed: u64,
}

/// The tools `--flaky` accepts, by their lower-case names.
pub const TOOLS: [&str; 6] = ["grep", "bash", "read", "write", "edit", "websearch"];

pub const USAGE: &str = "usage: agent [--break bash] [--outage network] [--read-only] \
[--flaky TOOL=RATE]... [--seed N] [--json] [--watch]

  --break bash        break the shell: scripts lose their exec bits (permission denied), PATH
                      is an empty directory (command not found), a crashed run's lock is left
                      behind (a command waiting for it is killed by the 1s timeout)
  --outage network    stop the local search server: connections are refused
  --read-only         make the workspace read-only
  --flaky TOOL=RATE   make TOOL (grep, bash, read, write, edit, websearch) fail at RATE in 0..1
  --seed N            seed of the PRNG behind --flaky (default 1)
  --json              print the final report as JSON instead of the readable run
  --watch             show every tool's circuit state, its consecutive failures and the
                      failure budget as the run goes: on a terminal, a panel on stderr redrawn
                      in place below the log; piped, a frame (╭─ watch … ╰─) in the log each
                      time the state changes (on stderr with --json)";

/// A command line that cannot be understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}\n\n{USAGE}", self.0)
    }
}

impl std::error::Error for UsageError {}

impl Options {
    /// Parses the arguments after the program's name. `--flag value` and `--flag=value` both
    /// work. `Ok(None)` for `--help`.
    pub fn parse<I, S>(args: I) -> Result<Option<Self>, UsageError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut options = Options {
            faults: Faults {
                seed: 1,
                ..Faults::default()
            },
            json: false,
            watch: false,
        };
        let args: Vec<String> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let mut i = 0;
        while i < args.len() {
            let (flag, inline) = match args[i].split_once('=') {
                Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_owned())),
                _ => (args[i].as_str(), None),
            };
            let mut value = |name: &str| -> Result<String, UsageError> {
                if let Some(v) = inline.clone() {
                    return Ok(v);
                }
                i += 1;
                args.get(i)
                    .cloned()
                    .ok_or_else(|| UsageError(format!("{name} needs a value")))
            };
            match flag {
                "--help" | "-h" => return Ok(None),
                "--json" => options.json = true,
                "--watch" => options.watch = true,
                "--read-only" => options.faults.read_only = true,
                "--break" => match value("--break")?.to_lowercase().as_str() {
                    "bash" => options.faults.break_bash = true,
                    other => {
                        return Err(UsageError(format!(
                            "--break {other}: only `bash` can be broken"
                        )));
                    }
                },
                "--outage" => match value("--outage")?.to_lowercase().as_str() {
                    "network" => options.faults.outage_network = true,
                    other => {
                        return Err(UsageError(format!(
                            "--outage {other}: only `network` can go out"
                        )));
                    }
                },
                "--flaky" => {
                    let spec = value("--flaky")?;
                    let (tool, rate) = spec.split_once('=').ok_or_else(|| {
                        UsageError(format!("--flaky {spec}: expected TOOL=RATE, e.g. grep=0.5"))
                    })?;
                    let tool = tool.to_lowercase();
                    if !TOOLS.contains(&tool.as_str()) {
                        return Err(UsageError(format!(
                            "--flaky {spec}: no tool `{tool}` (one of {})",
                            TOOLS.join(", ")
                        )));
                    }
                    let rate: f64 = rate
                        .parse()
                        .ok()
                        .filter(|r: &f64| (0.0..=1.0).contains(r))
                        .ok_or_else(|| {
                            UsageError(format!("--flaky {spec}: RATE must be a number in 0..1"))
                        })?;
                    options.faults.flaky.retain(|(t, _)| *t != tool);
                    options.faults.flaky.push((tool, rate));
                }
                "--seed" => {
                    let seed = value("--seed")?;
                    options.faults.seed = seed.parse().map_err(|_| {
                        UsageError(format!("--seed {seed}: expected a whole number"))
                    })?;
                }
                other => return Err(UsageError(format!("unknown argument `{other}`"))),
            }
            i += 1;
        }
        Ok(Some(options))
    }
}

impl Faults {
    /// The failure rate of `tool` (lower-case name), if it is flaky.
    pub fn flaky_rate(&self, tool: &str) -> Option<f64> {
        self.flaky
            .iter()
            .find(|(t, _)| t == tool)
            .map(|&(_, rate)| rate)
    }
}

/// xorshift64*, seeded through splitmix64: a tiny deterministic PRNG for `--flaky`.
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        XorShift(if z == 0 { 1 } else { z })
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        // 53 random bits, exactly representable.
        #[allow(clippy::cast_precision_loss)]
        let unit = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        unit
    }
}
