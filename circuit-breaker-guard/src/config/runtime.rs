//! The `runtime:` section: the threads the guard runs on.

use serde::Deserialize;
use serde_yaml_ng::Value;

use super::Reader;
use crate::locate::Seg;

/// More worker threads than this is a typo, not a machine.
const MAX_THREADS: usize = 1024;

/// The guard's async runtime.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Runtime {
    /// 1 (the default): everything on one thread (a current-thread runtime). A call crosses
    /// half a dozen of rmcp's tasks on its way through the guard; on one thread none of those
    /// hand-offs wakes another thread, which on a quiet 2-core machine made the hop 20 to 90
    /// µs shorter over stdio and 50 to 90 µs serving HTTP. 2 or more: that many worker threads, for many HTTP clients
    /// calling at once on a machine with cores to spare.
    pub threads: usize,
}

impl Default for Runtime {
    fn default() -> Self {
        Runtime { threads: 1 }
    }
}

/// Whether `threads` is a number of threads the guard can run on, or why not.
pub fn check_threads(threads: usize) -> Result<(), String> {
    if (1..=MAX_THREADS).contains(&threads) {
        Ok(())
    } else {
        Err(format!(
            "{threads} threads: give 1 (one thread for everything) to {MAX_THREADS}"
        ))
    }
}

/// The section `value` (absent: the default), every problem reported to `reader`.
pub(super) fn read(reader: &mut Reader<'_>, value: Option<&Value>) -> Option<Runtime> {
    let Some(value) = value else {
        return Some(Runtime::default());
    };
    let runtime = reader.typed::<Runtime>(value, &[Seg::Key("runtime")], "runtime")?;
    if let Err(message) = check_threads(runtime.threads) {
        let path = [Seg::Key("runtime"), Seg::Key("threads")];
        reader.problem(&path, "runtime.threads", &message);
        return None;
    }
    Some(runtime)
}
