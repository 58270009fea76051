//! The tools the servers list, as the client names and shows them: one entry per tool with
//! its server and the server's own name for it, kept up to date when a server lists its
//! tools again.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, PoisonError};

use rmcp::model::Tool;
use serde_json::{Map, Value};

use super::Inner;
use super::arguments::ArgumentCheck;
use super::connect::Server;
use super::overlay::default_spec;
use crate::dispatch::ToolDefinition;
use crate::expeditor::ToolId;

/// One tool as the client knows it.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) id: ToolId,
    pub(super) server: usize,
    /// The server's own name for it.
    pub(super) remote: String,
    pub(super) definition: ToolDefinition,
    /// Its input schema, compiled when listed.
    pub(super) check: ArgumentCheck,
    /// Listed in the server's last `tools/list`.
    pub(super) listed: bool,
}

impl Entry {
    /// A listed tool, its input schema compiled.
    pub(super) fn new(
        id: ToolId,
        server: &Server,
        remote: String,
        definition: ToolDefinition,
    ) -> Self {
        let check = ArgumentCheck::compile(&server.name, &remote, &definition.input_schema);
        Entry {
            id,
            server: server.index,
            remote,
            definition,
            check,
            listed: true,
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct Tools {
    /// Shared with the calls in flight; changed copy-on-write.
    pub(super) entries: Vec<Arc<Entry>>,
    pub(super) by_name: HashMap<String, usize>,
    /// Moves whenever a listing changed the definitions shown.
    pub(super) version: u64,
}

/// A listed tool before it has an id.
#[derive(Debug, Clone)]
pub(super) struct Listed {
    pub(super) name: String,
    pub(super) remote: String,
    pub(super) definition: ToolDefinition,
}

impl Inner {
    /// A server's tools, listed again (after `list_changed` or a reconnect): new names are
    /// discovered (R2.4) with the default spec; those no longer listed leave the
    /// definitions, but a call to one still reaches the server.
    pub(super) fn adopt(&self, server: &Server, tools: &[Tool]) {
        let listed = listing(self, server, tools);
        let (ids, mut checks) = self.prepare(server, &listed);
        let mut table = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        let was: Vec<(usize, bool)> = table
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.server == server.index)
            .map(|(i, e)| (i, e.listed))
            .collect();
        let mut changed = false;
        for &(i, _) in &was {
            Arc::make_mut(&mut table.entries[i]).listed = false;
        }
        for tool in listed {
            match table.by_name.get(&tool.name).copied() {
                Some(i) if table.entries[i].server == server.index => {
                    let entry = Arc::make_mut(&mut table.entries[i]);
                    if entry.definition != tool.definition {
                        // Compiled again only when the schema may have changed.
                        changed = true;
                        entry.check = checks.remove(&tool.name).unwrap_or_else(|| {
                            ArgumentCheck::compile(
                                &server.name,
                                &tool.remote,
                                &tool.definition.input_schema,
                            )
                        });
                        entry.definition = tool.definition;
                    }
                    entry.remote = tool.remote;
                    entry.listed = true;
                }
                Some(i) => {
                    let other = &self.servers[table.entries[i].server].name;
                    tracing::warn!(server = %server.name, tool = %tool.name, other = %other, "a tool of the same name is another server's: not added");
                }
                None => {
                    if let Some(&id) = ids.get(&tool.name) {
                        changed = true;
                        let i = table.entries.len();
                        table.by_name.insert(tool.name.clone(), i);
                        let check = checks.remove(&tool.name).unwrap_or_else(|| {
                            ArgumentCheck::compile(
                                &server.name,
                                &tool.remote,
                                &tool.definition.input_schema,
                            )
                        });
                        table.entries.push(Arc::new(Entry {
                            id,
                            server: server.index,
                            remote: tool.remote,
                            definition: tool.definition,
                            check,
                            listed: true,
                        }));
                    }
                }
            }
        }
        changed |= was
            .iter()
            .any(|&(i, listed)| table.entries[i].listed != listed);
        if changed {
            table.version += 1;
        }
    }
}

impl Inner {
    /// What adopting a listing needs, made outside the table's lock (calls and observers
    /// read the table meanwhile): the ids of the names no server listed before, discovered
    /// (R2.4) with the default spec, and the compiled schemas of those and of the tools
    /// whose definition changed.
    fn prepare(
        &self,
        server: &Server,
        listed: &[Listed],
    ) -> (HashMap<String, ToolId>, HashMap<String, ArgumentCheck>) {
        let (fresh, changed): (Vec<&Listed>, Vec<&Listed>) = {
            let known = self.tools();
            listed
                .iter()
                .filter(|l| match known.by_name.get(&l.name) {
                    None => true,
                    Some(&i) => {
                        let entry = &known.entries[i];
                        entry.server == server.index && entry.definition != l.definition
                    }
                })
                .partition(|l| !known.by_name.contains_key(&l.name))
        };
        let checks = fresh
            .iter()
            .chain(&changed)
            .map(|l| {
                let check =
                    ArgumentCheck::compile(&server.name, &l.remote, &l.definition.input_schema);
                (l.name.clone(), check)
            })
            .collect();
        let mut ids = HashMap::new();
        for tool in fresh {
            let description = &tool.definition.description;
            let spec = self.late_spec(server, &tool.name, description);
            let found = match self.expeditor.discover(spec) {
                Ok(id) => Ok(id),
                Err(error) => {
                    // The overlay's entry cannot be applied (an alternative naming no tool
                    // yet): the tool is still offered, on its own.
                    let base = default_spec(&tool.name, &server.name, description);
                    let retried = self.expeditor.discover(base);
                    if retried.is_ok() {
                        tracing::warn!(server = %server.name, tool = %tool.name, %error, "the overlay's entry for a tool listed later is not applied");
                    }
                    retried
                }
            };
            match found {
                Ok(id) => {
                    ids.insert(tool.name.clone(), id);
                }
                Err(error) => {
                    tracing::warn!(server = %server.name, tool = %tool.name, %error, "a tool listed later could not be added");
                }
            }
        }
        (ids, checks)
    }
}

/// The tools of one listing as the client names them: empty names and repeats dropped.
fn listing(inner: &Inner, server: &Server, tools: &[Tool]) -> Vec<Listed> {
    listed_tools(inner.qualify.as_deref(), &server.name, tools)
}

pub(super) fn listed_tools(qualify: Option<&str>, server: &str, tools: &[Tool]) -> Vec<Listed> {
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(tools.len());
    for tool in tools {
        let remote = tool.name.as_ref();
        if remote.trim().is_empty() {
            tracing::warn!(server, "a tool with an empty name, left out");
            continue;
        }
        if !seen.insert(remote) {
            tracing::warn!(
                server,
                tool = remote,
                "a tool listed twice, the repeat left out"
            );
            continue;
        }
        let name = match qualify {
            Some(separator) => format!("{server}{separator}{remote}"),
            None => remote.to_owned(),
        };
        let description = tool.description.as_deref().unwrap_or("").to_owned();
        out.push(Listed {
            definition: ToolDefinition {
                name: name.clone(),
                description,
                input_schema: object_schema(server, remote, &tool.input_schema),
            },
            name,
            remote: remote.to_owned(),
        });
    }
    out
}

/// The schema shown to a model: always an object schema (a schema of another type is
/// replaced, one with no type gets `"type": "object"`).
fn object_schema(server: &str, tool: &str, schema: &Map<String, Value>) -> Map<String, Value> {
    let is_object = |t: &Value| match t {
        Value::String(s) => s == "object",
        Value::Array(types) => types.iter().any(|t| t == "object"),
        _ => false,
    };
    match schema.get("type") {
        Some(t) if is_object(t) => schema.clone(),
        None => {
            let mut schema = schema.clone();
            schema.insert("type".into(), "object".into());
            schema
        }
        Some(other) => {
            tracing::warn!(server, tool, schema_type = %other, "an input schema that is no object schema, replaced");
            let mut schema = Map::new();
            schema.insert("type".into(), "object".into());
            schema
        }
    }
}
