//! The checked model: the toolbox with every name resolved (alternatives to tools, adapters
//! and prechecks to methods with their shapes) and every value checked, so that expansion
//! looks nothing up and has nothing left to reject.

use syn::{Ident, Path, Type, TypePath};

use crate::parse::{Degradation, Receiver, Tool, Toolbox};

/// The toolbox once checked: everything expansion needs, resolved.
pub struct Checked<'a> {
    pub toolbox: &'a Toolbox,
    /// The runtime crate: `crate = path` or `::agent_circuit_breaker`.
    pub krate: Path,
    /// The self type's name, for the enum and the handle.
    pub base: Ident,
    pub policy: Policy,
    /// Per tool, in declaration (capability-map) order.
    pub tools: Vec<CheckedTool<'a>>,
    /// `#[toolbox(json)]`: every tool has its [`CheckedTool::json`].
    pub json: bool,
}

/// The toolbox-level policy as declared: a key not given is `None`, and the runtime's
/// `Policy` supplies its default (R2.2), so the defaults live in one place.
pub struct Policy {
    pub threshold: Option<u32>,
    pub budget: Option<u32>,
    pub probe_every: Option<u32>,
    /// `probe_unit = "steps"` (`Some(true)`) or `"attempts"` (`Some(false)`).
    pub steps: Option<bool>,
    /// `cool_down`, `cool_down_cap`, `budget_window`, in milliseconds (B13).
    pub cool_down: Option<u64>,
    pub cool_down_cap: Option<u64>,
    pub budget_window: Option<u64>,
    /// `mistake_limit` (B14).
    pub mistake_limit: Option<u32>,
}

impl Policy {
    /// Whether a key beyond the source document's four is given.
    pub fn has_more(&self) -> bool {
        self.cool_down.is_some()
            || self.cool_down_cap.is_some()
            || self.budget_window.is_some()
            || self.mistake_limit.is_some()
    }
}

/// One tool, checked.
pub struct CheckedTool<'a> {
    pub tool: &'a Tool,
    /// Its enum variant.
    pub variant: Ident,
    pub provides: String,
    pub fallback: String,
    /// Per-tool overrides of the policy; `None` takes the toolbox's.
    pub threshold: Option<u32>,
    pub probe_every: Option<u32>,
    /// The deadline of one call in milliseconds (B13): the tool's own `timeout`, else the
    /// toolbox's; `None`, the guarded method reads no clock.
    pub timeout: Option<u64>,
    /// `caches`, `freshness` (with its `source`), `serve_stale` (R6).
    pub caches: bool,
    pub freshness: bool,
    pub source: Option<String>,
    pub serve_stale: bool,
    /// Its alternatives, resolved to tools, in the declared order.
    pub alternatives: Vec<Resolved>,
    /// The pre-call checks its handle method runs (R10): its own first, then those of the
    /// alternatives its adapters go through; each one runnable from that method.
    pub prechecks: Vec<Precheck>,
    /// In a `json` toolbox: the owned argument of each parameter (B8).
    pub json: Vec<JsonParam>,
}

/// A parameter of a tool in a `json` toolbox: the owned type its argument is decoded into,
/// and how the guarded method is handed it.
pub struct JsonParam {
    pub owned: Owned,
    pub pass: Pass,
}

/// The owned form of a parameter's type, which its argument is decoded into. The runtime's
/// types are named by kind: expansion says where they come from.
pub enum Owned {
    /// The type as written: it owns what it holds.
    Same(Type),
    /// `String`, for `&str`.
    String,
    /// `PathBuf`, for `&Path`.
    PathBuf,
    /// `Vec<T>`, for `&[T]`.
    Vec(Type),
    /// The `Option<..>` as written (`std::option::Option<..>` too), around the owned form of
    /// what its reference points at.
    Option(TypePath, Box<Owned>),
}

/// How a decoded argument is handed to the guarded method.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Pass {
    /// `T` as it is.
    Value,
    /// `&owned` (`&String` coerces to `&str`, `&Vec<T>` to `&[T]`).
    Ref,
    /// `&mut owned`.
    RefMut,
    /// `owned.as_deref()`: `Option<String>` to `Option<&str>`.
    OptionDeref,
    /// `owned.as_ref()`: `Option<T>` to `Option<&T>`.
    OptionRef,
    /// `owned.as_mut()`.
    OptionMut,
}

/// One alternative, resolved.
pub struct Resolved {
    /// Index of the alternative tool in `Toolbox::tools`.
    pub target: usize,
    pub method: String,
    pub degradation: Option<Degradation>,
    /// The adapter, `via = f`, when the route is taken by the dispatcher.
    pub via: Option<MethodRef>,
}

/// A method of the impl, found and checked: what a call to it needs.
#[derive(Clone)]
pub struct MethodRef {
    /// The name as written at the use (`via = f`, `precheck = f`), spanned there.
    pub ident: Ident,
    pub receiver: Receiver,
    pub is_async: bool,
    /// For an adapter whose types and its tool's can be written in the generated code: the
    /// adapter's, which the generated call compares with the tool's.
    pub types: Option<AdapterTypes>,
}

/// An adapter's declared types, and the signature it should have, for the message when they
/// are not its tool's.
#[derive(Clone)]
pub struct AdapterTypes {
    pub params: Vec<Type>,
    pub output: Type,
    /// `fn grep_with_rg(&self, pattern: &str) -> io::Result<Vec<String>>`.
    pub expected: String,
}

/// A pre-call check to run: the tool whose availability it reports, and the method.
pub struct Precheck {
    pub tool: usize,
    pub method: MethodRef,
}

impl CheckedTool<'_> {
    /// The adapters, with the index of the tool each goes through, in the declared order.
    pub fn adapters(&self) -> impl Iterator<Item = (&MethodRef, usize)> {
        self.alternatives
            .iter()
            .filter_map(|alt| alt.via.as_ref().map(|via| (via, alt.target)))
    }
}
