impl Index {
    fn search(&self, query: &str) -> Result<Vec<String>, std::io::Error> {
        Ok(vec![query.to_owned()])
    }
    fn lookup(&self, key: u64) -> Result<u64, std::io::Error> {
        Ok(key)
    }
    fn server_up(&self) -> agent_circuit_breaker::Availability {
        agent_circuit_breaker::Availability::Available
    }
}
/// The tools of [`Index`]'s `#[toolbox]`, in capability-map order.
#[derive(Clone, Copy)]
pub enum IndexTool {
    /// `search`: document search
    Search,
    /// `lookup`: cached lookups
    Lookup,
}
/// [`Index`] with a circuit breaker on every tool: each method asks the expeditor first, calls the tool (or an adapter through an alternative) only when allowed, and records the outcome.
#[allow(private_interfaces)]
pub struct GuardedIndex {
    toolbox: Index,
    expeditor: ::agent_circuit_breaker::__private_v0_1::Expeditor,
    __cb_stale_search: ::agent_circuit_breaker::__private_v0_1::StaleCache<
        <Result<
            Vec<String>,
            std::io::Error,
        > as ::agent_circuit_breaker::__private_v0_1::ToolResult>::Ok,
    >,
}
const _: () = {
    use ::agent_circuit_breaker as _cb;
    #[allow(unused_imports)]
    use _cb::__private_v0_1::{
        NotDated as _, ViaClassify as _, ViaDated as _, ViaDisplay as _, ViaError as _,
    };
    static __CB_MAP: _cb::__private_v0_1::EncodedMap = _cb::__private_v0_1::EncodedMap::new(
        "6:search15:document search30:ask the user for the documents0:0:0:0:1:06:lookup14:cached lookups12:ask the user1:10:0:0:1:0",
    );
    static __CB_ALL: [IndexTool; 2usize] = [IndexTool::Search, IndexTool::Lookup];
    const __CB_NAMES: [&str; 2usize] = ["search", "lookup"];
    const __CB_VARIANTS: [&str; 2usize] = ["Search", "Lookup"];
    impl _cb::__private_v0_1::core::cmp::PartialEq for IndexTool {
        fn eq(&self, other: &Self) -> bool {
            (*self as u32) == (*other as u32)
        }
    }
    impl _cb::__private_v0_1::core::cmp::Eq for IndexTool {}
    impl _cb::__private_v0_1::core::cmp::PartialOrd for IndexTool {
        fn partial_cmp(
            &self,
            other: &Self,
        ) -> _cb::__private_v0_1::core::option::Option<
            _cb::__private_v0_1::core::cmp::Ordering,
        > {
            _cb::__private_v0_1::Some(
                _cb::__private_v0_1::core::cmp::Ord::cmp(self, other),
            )
        }
    }
    impl _cb::__private_v0_1::core::cmp::Ord for IndexTool {
        fn cmp(&self, other: &Self) -> _cb::__private_v0_1::core::cmp::Ordering {
            _cb::__private_v0_1::core::cmp::Ord::cmp(&(*self as u32), &(*other as u32))
        }
    }
    impl _cb::__private_v0_1::core::hash::Hash for IndexTool {
        fn hash<__H: _cb::__private_v0_1::core::hash::Hasher>(&self, state: &mut __H) {
            _cb::__private_v0_1::core::hash::Hash::hash(&(*self as u32), state);
        }
    }
    impl _cb::__private_v0_1::core::fmt::Debug for IndexTool {
        fn fmt(
            &self,
            f: &mut _cb::__private_v0_1::core::fmt::Formatter<'_>,
        ) -> _cb::__private_v0_1::core::fmt::Result {
            f.write_str(__CB_VARIANTS[*self as usize])
        }
    }
    impl IndexTool {
        /// Every tool, in capability-map order.
        pub const ALL: [Self; 2usize] = [Self::Search, Self::Lookup];
        /// The tool's name in the capability map.
        pub const fn name(self) -> &'static str {
            __CB_NAMES[self as usize]
        }
        /// The toolbox's capability map, checked at compile time.
        pub fn capability_map() -> &'static _cb::__private_v0_1::CapabilityMap {
            __CB_MAP.get()
        }
    }
    impl _cb::__private_v0_1::ToolSet for IndexTool {
        const ALL: &'static [Self] = &__CB_ALL;
        fn name(self) -> &'static str {
            IndexTool::name(self)
        }
        fn capability_map() -> &'static _cb::__private_v0_1::CapabilityMap {
            __CB_MAP.get()
        }
        fn policy() -> _cb::__private_v0_1::Policy {
            _cb::__private_v0_1::declared_policy(
                _cb::__private_v0_1::None,
                _cb::__private_v0_1::None,
                _cb::__private_v0_1::None,
                _cb::__private_v0_1::None,
            )
        }
    }
    impl _cb::__private_v0_1::core::convert::From<IndexTool>
    for _cb::__private_v0_1::ToolId {
        fn from(tool: IndexTool) -> Self {
            _cb::__private_v0_1::ToolId::from_index(tool as u32)
        }
    }
    impl _cb::__private_v0_1::core::convert::From<IndexTool>
    for _cb::__private_v0_1::String {
        fn from(tool: IndexTool) -> Self {
            _cb::__private_v0_1::String::from(IndexTool::name(tool))
        }
    }
    impl _cb::__private_v0_1::core::fmt::Display for IndexTool {
        fn fmt(
            &self,
            f: &mut _cb::__private_v0_1::core::fmt::Formatter<'_>,
        ) -> _cb::__private_v0_1::core::fmt::Result {
            f.pad(IndexTool::name(*self))
        }
    }
    impl _cb::__private_v0_1::core::str::FromStr for IndexTool {
        type Err = _cb::__private_v0_1::UnknownTool;
        fn from_str(
            name: &str,
        ) -> _cb::__private_v0_1::core::result::Result<
            Self,
            _cb::__private_v0_1::UnknownTool,
        > {
            <Self as _cb::__private_v0_1::ToolSet>::from_name(name)
        }
    }
    impl _cb::__private_v0_1::serde::Serialize for IndexTool {
        fn serialize<__S: _cb::__private_v0_1::serde::Serializer>(
            &self,
            serializer: __S,
        ) -> _cb::__private_v0_1::core::result::Result<__S::Ok, __S::Error> {
            _cb::__private_v0_1::serialize_tool(IndexTool::name(*self), serializer)
        }
    }
    impl<'de> _cb::__private_v0_1::serde::Deserialize<'de> for IndexTool {
        fn deserialize<__D: _cb::__private_v0_1::serde::Deserializer<'de>>(
            deserializer: __D,
        ) -> _cb::__private_v0_1::core::result::Result<Self, __D::Error> {
            _cb::__private_v0_1::deserialize_tool(deserializer)
        }
    }
    #[allow(private_interfaces)]
    impl GuardedIndex {
        /// Wraps the toolbox with a fresh expeditor: the declared policy, every tool
        /// CLOSED, the system clock.
        pub fn new(toolbox: Index) -> Self {
            Self::with_expeditor(toolbox, |builder| builder)
        }
        /// Wraps the toolbox with an expeditor configured by `configure`: a clock,
        /// observers, another policy.
        pub fn with_expeditor(
            toolbox: Index,
            configure: impl _cb::__private_v0_1::core::ops::FnOnce(
                _cb::__private_v0_1::ExpeditorBuilder,
            ) -> _cb::__private_v0_1::ExpeditorBuilder,
        ) -> Self {
            let builder = <IndexTool as _cb::__private_v0_1::ToolSet>::expeditor_builder();
            let expeditor = _cb::__private_v0_1::expeditor(configure(builder));
            Self {
                toolbox,
                expeditor,
                __cb_stale_search: _cb::__private_v0_1::core::default::Default::default(),
            }
        }
        /// The expeditor: breakers, budget, reports.
        pub fn expeditor(&self) -> &_cb::__private_v0_1::Expeditor {
            &self.expeditor
        }
        /// The toolbox itself, unguarded.
        pub fn toolbox(&self) -> &Index {
            &self.toolbox
        }
        /// The toolbox itself, unguarded and mutable.
        pub fn toolbox_mut(&mut self) -> &mut Index {
            &mut self.toolbox
        }
        /// The toolbox and its expeditor, apart.
        pub fn into_parts(self) -> (Index, _cb::__private_v0_1::Expeditor) {
            (self.toolbox, self.expeditor)
        }
        ///
        /// Guarded `search`: asks the expeditor first; see [the handle](Self).
        #[inline(always)]
        #[allow(clippy::inline_always)]
        pub fn search(
            &self,
            query: &str,
        ) -> _cb::outcome::Outcome<Result<Vec<String>, std::io::Error>> {
            let __cb_scope = _cb::__private_v0_1::CallScope::enter(
                "search",
                "execute_tool search",
            );
            let __cb_args: u64 = _cb::__private_v0_1::digest(&(&query,));
            if self.expeditor.should_precheck(IndexTool::Search) {
                let __cb_availability = _cb::__private_v0_1::IntoAvailability::into_availability(
                    self.toolbox.server_up(),
                );
                self.expeditor.record_precheck(IndexTool::Search, __cb_availability);
            }
            let __cb_freshen: _cb::__private_v0_1::Freshen<
                <Result<
                    Vec<String>,
                    std::io::Error,
                > as _cb::__private_v0_1::ToolResult>::Ok,
            > = _cb::__private_v0_1::Freshen {
                tool: _cb::__private_v0_1::ToolId::from(IndexTool::Search),
                args: _cb::__private_v0_1::Some(__cb_args),
                digest: |__cb_value| _cb::__private_v0_1::Some(
                    _cb::__private_v0_1::digest(__cb_value),
                ),
                dated: __cb_dated_0,
            };
            match self.expeditor.decide(IndexTool::Search) {
                _cb::__private_v0_1::Decision::Call(__cb_ticket)
                | _cb::__private_v0_1::Decision::Probe(__cb_ticket) => {
                    let __cb_outcome = _cb::__private_v0_1::finish_fresh(
                        &self.expeditor,
                        __cb_ticket,
                        _cb::__private_v0_1::None,
                        <Result<
                            Vec<String>,
                            std::io::Error,
                        > as _cb::__private_v0_1::ToolResult>::into_result(
                            self.toolbox.search(query),
                        ),
                        __cb_failure_0,
                        &__cb_freshen,
                    );
                    _cb::__private_v0_1::keep_last_good(
                        &self.__cb_stale_search,
                        __cb_args,
                        &self.expeditor,
                        &__cb_outcome,
                    );
                    __cb_outcome
                }
                __cb_decision => {
                    let __cb_refusal = _cb::__private_v0_1::refuse(
                        &self.expeditor,
                        _cb::__private_v0_1::ToolId::from(IndexTool::Search),
                        &__cb_decision,
                    );
                    _cb::__private_v0_1::serve_stale(
                        __cb_refusal,
                        &self.__cb_stale_search,
                        __cb_args,
                    )
                }
            }
        }
        ///
        /// Guarded `lookup`: asks the expeditor first; see [the handle](Self).
        #[inline(always)]
        #[allow(clippy::inline_always)]
        pub fn lookup(
            &self,
            key: u64,
        ) -> _cb::outcome::Outcome<Result<u64, std::io::Error>> {
            let __cb_scope = _cb::__private_v0_1::CallScope::enter(
                "lookup",
                "execute_tool lookup",
            );
            let __cb_freshen: _cb::__private_v0_1::Freshen<
                <Result<u64, std::io::Error> as _cb::__private_v0_1::ToolResult>::Ok,
            > = _cb::__private_v0_1::Freshen {
                tool: _cb::__private_v0_1::ToolId::from(IndexTool::Lookup),
                args: _cb::__private_v0_1::None,
                digest: |_| _cb::__private_v0_1::None,
                dated: __cb_dated_1,
            };
            match self.expeditor.decide(IndexTool::Lookup) {
                _cb::__private_v0_1::Decision::Call(__cb_ticket)
                | _cb::__private_v0_1::Decision::Probe(__cb_ticket) => {
                    _cb::__private_v0_1::finish_fresh(
                        &self.expeditor,
                        __cb_ticket,
                        _cb::__private_v0_1::None,
                        <Result<
                            u64,
                            std::io::Error,
                        > as _cb::__private_v0_1::ToolResult>::into_result(
                            self.toolbox.lookup(key),
                        ),
                        __cb_failure_1,
                        &__cb_freshen,
                    )
                }
                __cb_decision => {
                    let __cb_refusal = _cb::__private_v0_1::refuse(
                        &self.expeditor,
                        _cb::__private_v0_1::ToolId::from(IndexTool::Lookup),
                        &__cb_decision,
                    );
                    {
                        _cb::__private_v0_1::trace_refusal(&__cb_refusal);
                        _cb::__private_v0_1::Err(
                            _cb::__private_v0_1::CallError::Refused(__cb_refusal),
                        )
                    }
                }
            }
        }
    }
    #[inline]
    fn __cb_failure_0(
        __cb_error: &<Result<
            Vec<String>,
            std::io::Error,
        > as _cb::__private_v0_1::ToolResult>::Err,
    ) -> _cb::__private_v0_1::Failure {
        (&&&_cb::__private_v0_1::Wrap(__cb_error)).__cb_failure()
    }
    #[inline]
    fn __cb_dated_0(
        __cb_value: &<Result<
            Vec<String>,
            std::io::Error,
        > as _cb::__private_v0_1::ToolResult>::Ok,
    ) -> _cb::__private_v0_1::core::option::Option<_cb::__private_v0_1::Timestamp> {
        (&&_cb::__private_v0_1::DateOf(__cb_value)).__cb_data_time()
    }
    #[inline]
    fn __cb_failure_1(
        __cb_error: &<Result<
            u64,
            std::io::Error,
        > as _cb::__private_v0_1::ToolResult>::Err,
    ) -> _cb::__private_v0_1::Failure {
        (&&&_cb::__private_v0_1::Wrap(__cb_error)).__cb_failure()
    }
    #[inline]
    fn __cb_dated_1(
        __cb_value: &<Result<u64, std::io::Error> as _cb::__private_v0_1::ToolResult>::Ok,
    ) -> _cb::__private_v0_1::core::option::Option<_cb::__private_v0_1::Timestamp> {
        (&&_cb::__private_v0_1::DateOf(__cb_value)).__cb_data_time()
    }
    #[allow(
        clippy::needless_pass_by_value,
        clippy::unused_self,
        clippy::must_use_candidate
    )]
    impl GuardedIndex {
        #[doc(hidden)]
        pub fn call<'__cb, __CbName, __CbArguments>(
            &'__cb self,
            _name: __CbName,
            _arguments: __CbArguments,
        ) -> <Self as _cb::__private_v0_1::JsonToolbox<'__cb>>::Missing
        where
            Self: _cb::__private_v0_1::JsonToolbox<'__cb>,
        {
            _cb::__private_v0_1::JsonToolbox::missing(self)
        }
        #[doc(hidden)]
        pub fn definitions<'__cb>(
            &'__cb self,
        ) -> <Self as _cb::__private_v0_1::JsonToolbox<'__cb>>::Missing
        where
            Self: _cb::__private_v0_1::JsonToolbox<'__cb>,
        {
            _cb::__private_v0_1::JsonToolbox::missing(self)
        }
        #[doc(hidden)]
        pub fn dispatch<'__cb, __CbName, __CbArguments>(
            &'__cb self,
            _name: __CbName,
            _arguments: __CbArguments,
        ) -> <Self as _cb::__private_v0_1::JsonToolbox<'__cb>>::Missing
        where
            Self: _cb::__private_v0_1::JsonToolbox<'__cb>,
        {
            _cb::__private_v0_1::JsonToolbox::missing(self)
        }
    }
};
