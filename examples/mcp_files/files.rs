//! The `files` toolbox: read, list and search the files under one root directory, with
//! faults injected on demand. `#[toolbox(json)]` makes its guarded handle a `ToolDispatch`:
//! nothing else is written for MCP.
//!
//! Every path a tool takes is relative to the root; one that leaves it (`..`, an absolute
//! path, a symbolic link pointing out) is refused with `InvalidInput`: the call's own
//! mistake, never an infrastructure failure that could correlate with another tool's.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use agent_circuit_breaker::toolbox;

use crate::faults::Faults;

/// The files under a root directory, and the faults injected into the tools reading them.
#[derive(Debug)]
pub struct Files {
    /// The root, canonical: every path resolved stays under it.
    root: PathBuf,
    /// Which tools fail, and for how long.
    pub faults: Faults,
}

impl Files {
    /// The files under `root` (which must be a directory).
    pub fn new(root: &Path) -> io::Result<Self> {
        let root = root
            .canonicalize()
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", root.display())))?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{} is not a directory", root.display()),
            ));
        }
        Ok(Files {
            root,
            faults: Faults::default(),
        })
    }

    /// The injected fault, if this call of `tool` is one that fails.
    fn outage(&self, tool: &str) -> io::Result<()> {
        if self.faults.fails(tool) {
            Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{tool}: permission denied by the file server"),
            ))
        } else {
            Ok(())
        }
    }

    /// `path` (relative to the root) on disk, checked to stay under the root.
    fn resolve(&self, path: &str) -> io::Result<PathBuf> {
        let escapes = || {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{path} escapes the root: give a path relative to it, without `..`"),
            )
        };
        let relative = Path::new(path);
        if relative
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(escapes());
        }
        let real = self.root.join(relative).canonicalize().map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                io::Error::new(
                    e.kind(),
                    format!("no file or directory {path} under the root"),
                )
            } else {
                io::Error::new(e.kind(), format!("{path}: {e}"))
            }
        })?;
        // A symbolic link under the root may point out of it.
        if !real.starts_with(&self.root) {
            return Err(escapes());
        }
        Ok(real)
    }

    /// The text of the file at `path`, resolved under the root.
    fn read_text(&self, path: &str) -> io::Result<String> {
        let real = self.resolve(path)?;
        if real.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                format!("{path} is a directory: list it with list_dir"),
            ));
        }
        let bytes =
            fs::read(&real).map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))?;
        String::from_utf8(bytes).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{path} is not UTF-8 text"),
            )
        })
    }

    /// Every regular file under the root, as paths relative to it with `/` between
    /// components, sorted. Symbolic links are not followed.
    fn walk(&self) -> io::Result<Vec<String>> {
        fn visit(dir: &Path, prefix: &str, out: &mut Vec<String>) -> io::Result<()> {
            for entry in fs::read_dir(dir)? {
                let entry = entry?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let path = if prefix.is_empty() {
                    name
                } else {
                    format!("{prefix}/{name}")
                };
                let kind = entry.file_type()?;
                if kind.is_dir() {
                    visit(&entry.path(), &path, out)?;
                } else if kind.is_file() {
                    out.push(path);
                }
            }
            Ok(())
        }
        let mut files = Vec::new();
        visit(&self.root, "", &mut files)?;
        files.sort();
        Ok(files)
    }
}

/// The lines of `text` (the file at `path`) that contain `pattern`, as `path:line: text`.
fn matching_lines(path: &str, text: &str, pattern: &str, out: &mut Vec<String>) {
    for (number, line) in text.lines().enumerate() {
        if line.contains(pattern) {
            out.push(format!("{path}:{}: {}", number + 1, line.trim_end()));
        }
    }
}

fn no_empty_pattern(pattern: &str) -> io::Result<()> {
    if pattern.is_empty() {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the pattern is empty: give the text to look for",
        ))
    } else {
        Ok(())
    }
}

/// `json`: the guarded handle is also a dispatcher by name and JSON arguments, which
/// `McpServer` serves; every name, description and schema comes from here.
#[toolbox(json)]
impl Files {
    /// Answers the text of the file at `path`, relative to the root.
    #[tool(
        provides = "file content inspection",
        fallback = "ask the user to paste the file"
    )]
    fn read_file(
        &self,
        /// the file's path, relative to the root (for example `docs/deploy.md`)
        path: &str,
    ) -> io::Result<String> {
        self.outage("read_file")?;
        self.read_text(path)
    }

    /// Answers the sorted entry names of the directory at `path`; directories end with `/`.
    #[tool(
        provides = "directory listing",
        fallback = "ask the user which files there are"
    )]
    fn list_dir(
        &self,
        /// the directory's path, relative to the root (`.` for the root itself)
        path: &str,
    ) -> io::Result<Vec<String>> {
        self.outage("list_dir")?;
        let real = self.resolve(path)?;
        if !real.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{path} is a file: read it with read_file"),
            ));
        }
        let mut names = Vec::new();
        for entry in fs::read_dir(&real)? {
            let entry = entry?;
            let mut name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type()?.is_dir() {
                name.push('/');
            }
            names.push(name);
        }
        names.sort();
        Ok(names)
    }

    /// Answers the lines containing `pattern` in the files under the root: `path:line: text`.
    #[tool(
        provides = "content search across files",
        alternatives(read_file(
            method = "read every file under the root and look for the pattern",
            degradation = "no search service: every file is read in full, one read_file each",
            via = search_by_reading,
        )),
        fallback = "ask the user where the text is"
    )]
    fn search_files(
        &self,
        /// the text to look for (case-sensitive, matched anywhere in a line)
        pattern: &str,
    ) -> io::Result<Vec<String>> {
        self.outage("search_files")?;
        no_empty_pattern(pattern)?;
        let mut hits = Vec::new();
        for path in self.walk()? {
            match self.read_text(&path) {
                Ok(text) => matching_lines(&path, &text, pattern, &mut hits),
                // Binary files are not searched.
                Err(e) if e.kind() == io::ErrorKind::InvalidData => {}
                Err(e) => return Err(e),
            }
        }
        Ok(hits)
    }

    /// search_files's goal reached through read_file: every file read and searched here.
    fn search_by_reading(&self, pattern: &str) -> io::Result<Vec<String>> {
        no_empty_pattern(pattern)?;
        let mut hits = Vec::new();
        for path in self.walk()? {
            match self.read_file(&path) {
                Ok(text) => matching_lines(&path, &text, pattern, &mut hits),
                Err(e) if e.kind() == io::ErrorKind::InvalidData => {}
                Err(e) => return Err(e),
            }
        }
        Ok(hits)
    }
}
