//! The errors of building an [`McpClient`](super::McpClient) or reconnecting a server, and the
//! problems an overlay can have.

use std::fmt;

use crate::capability::MapErrors;

// ----- errors ------------------------------------------------------------------------------

/// Why an [`McpClient`](super::McpClient) could not be built, or a server reconnected.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpClientError {
    /// The builder was given something that cannot work: no server, a server name empty or
    /// given twice, a deadline for a server not given.
    Config(String),
    /// A server could not be connected: its process did not start, `initialize` failed or
    /// timed out, or `tools/list` failed.
    Connect {
        /// The server.
        server: String,
        /// What went wrong.
        message: String,
    },
    /// Servers list tools of the same name; [`McpClientBuilder::qualify_names`](super::McpClientBuilder::qualify_names) names every
    /// tool `server.tool` instead.
    DuplicateTools(Vec<DuplicateTool>),
    /// The overlay names tools that no server lists, or puts a tool on another server.
    Overlay(Vec<OverlayProblem>),
    /// The run-time map, overlay applied, is not valid (R1.4): an alternative naming no
    /// listed tool, a threshold of zero, ...
    Map(MapErrors),
    /// No server of this name.
    UnknownServer(String),
}

/// A tool name listed by more than one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateTool {
    /// The name.
    pub tool: String,
    /// The servers that list it, in the builder's order.
    pub servers: Vec<String>,
}

/// One problem of an overlay.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OverlayProblem {
    /// The overlay names a tool that no server lists.
    UnknownTool {
        /// The name in the overlay.
        tool: String,
        /// A listed tool with a close name, if any.
        suggestion: Option<String>,
    },
    /// The overlay says something of a server the client was not given (B14).
    UnknownServer {
        /// The name in the overlay.
        server: String,
        /// A given server with a close name, if any.
        suggestion: Option<String>,
    },
    /// The overlay puts a tool on another server than the one listing it.
    WrongServer {
        /// The tool.
        tool: String,
        /// The server that lists it.
        listed_by: String,
        /// The server the overlay names.
        overlay: String,
    },
}

impl fmt::Display for OverlayProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OverlayProblem::UnknownTool { tool, suggestion } => {
                write!(
                    f,
                    "the overlay names `{tool}`, but no server lists a tool `{tool}`"
                )?;
                match suggestion {
                    Some(s) => write!(f, "; did you mean `{s}`?"),
                    None => Ok(()),
                }
            }
            OverlayProblem::UnknownServer { server, suggestion } => {
                write!(f, "the overlay names server `{server}`, which is no server")?;
                match suggestion {
                    Some(s) => write!(f, "; did you mean `{s}`?"),
                    None => Ok(()),
                }
            }
            OverlayProblem::WrongServer {
                tool,
                listed_by,
                overlay,
            } => write!(
                f,
                "the overlay puts `{tool}` on server `{overlay}`, but server `{listed_by}` lists it"
            ),
        }
    }
}

impl fmt::Display for McpClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpClientError::Config(message) => write!(f, "MCP client: {message}"),
            McpClientError::Connect { server, message } => {
                write!(f, "MCP server `{server}` could not be connected: {message}")
            }
            McpClientError::DuplicateTools(duplicates) => {
                f.write_str("MCP servers list tools of the same name")?;
                for d in duplicates {
                    write!(f, "\n  - `{}`: {}", d.tool, d.servers.join(", "))?;
                }
                f.write_str(
                    "\nqualify the names (McpClientBuilder::qualify_names) to call them server.tool",
                )
            }
            McpClientError::Overlay(problems) => {
                let n = problems.len();
                write!(
                    f,
                    "the capability overlay has {n} problem{}",
                    if n == 1 { "" } else { "s" }
                )?;
                for p in problems {
                    write!(f, "\n  - {p}")?;
                }
                Ok(())
            }
            McpClientError::Map(errors) => fmt::Display::fmt(errors, f),
            McpClientError::UnknownServer(server) => write!(f, "no MCP server `{server}`"),
        }
    }
}

impl std::error::Error for McpClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            McpClientError::Map(errors) => Some(errors),
            _ => None,
        }
    }
}
