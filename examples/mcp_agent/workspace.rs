//! The project the files server serves: a few files of inventory-api in a temporary
//! directory, `<temp>/circuit-breaker-agent-<pid>-<n>`, removed when the run ends.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The files of the project, by path.
const FILES: [(&str, &str); 5] = [
    (
        "docs/deploy.md",
        "# Deploying inventory-api\n\nDeploy to staging first: ./deploy.sh staging, then check /healthz.\nTo roll back, run ./deploy.sh --undo: it restores the previous release.\n",
    ),
    (
        "docs/on-call.md",
        "# On-call\n\nThe on-call engineer is paged through #inventory-incidents; the rota is in the team calendar.\n",
    ),
    (
        "notes/incident.md",
        "# Incident 2026-11-24\n\nA deploy to production skipped staging; /items/bulk failed on empty lists. Rolled back in 6 minutes.\n",
    ),
    (
        "CHANGELOG.md",
        "# Changelog\n\n2.4.0: rate limits per API key.\n2.3.1: fixed /items/bulk on empty lists.\n",
    ),
    (
        "README.md",
        "# inventory-api\n\nThe inventory service. Docs in docs/, incident notes in notes/.\n",
    ),
];

static RUNS: AtomicUsize = AtomicUsize::new(0);

/// The temporary project.
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// Lays the project out in a new temporary directory.
    pub fn create() -> io::Result<Self> {
        let base = std::env::temp_dir();
        let root = loop {
            let n = RUNS.fetch_add(1, Ordering::Relaxed);
            let path = base.join(format!("circuit-breaker-agent-{}-{n}", std::process::id()));
            match fs::create_dir(&path) {
                Ok(()) => break path,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        };
        let workspace = Workspace { root };
        for (path, text) in FILES {
            let path = workspace.root.join(path);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent)?;
            }
            fs::write(path, text)?;
        }
        Ok(workspace)
    }

    /// Its root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}
