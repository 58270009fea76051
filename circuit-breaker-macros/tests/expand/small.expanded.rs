impl Workspace {
    /// Searches file contents.
    fn grep(&self, pattern: &str) -> Result<Vec<String>, std::io::Error> {
        Ok(vec![pattern.to_owned()])
    }
    fn grep_with_rg(&self, pattern: &str) -> Result<Vec<String>, std::io::Error> {
        self.bash(pattern).map(|out| vec![out])
    }
    fn bash(&self, command: &str) -> Result<String, std::io::Error> {
        Ok(command.to_owned())
    }
    async fn web_search(&mut self, query: String) -> std::io::Result<Vec<String>> {
        Ok(vec![query])
    }
}
/// The tools of [`Workspace`]'s `#[toolbox]`, in capability-map order.
#[derive(Clone, Copy)]
pub enum WorkspaceTool {
    /// `grep`: content search across files
    Grep,
    /// `bash`: command execution
    Bash,
    /// `WebSearch`: external information retrieval
    WebSearch,
}
/// [`Workspace`] with a circuit breaker on every tool: each method asks the expeditor first, calls the tool (or an adapter through an alternative) only when allowed, and records the outcome.
#[allow(private_interfaces)]
pub struct GuardedWorkspace {
    toolbox: Workspace,
    expeditor: ::agent_circuit_breaker::__private_v0_1::Expeditor,
}
const _: () = {
    use ::agent_circuit_breaker as _cb;
    #[allow(unused_imports)]
    use _cb::__private_v0_1::{
        NotDated as _, ViaClassify as _, ViaDated as _, ViaDisplay as _, ViaError as _,
    };
    static __CB_MAP: _cb::__private_v0_1::EncodedMap = _cb::__private_v0_1::EncodedMap::new(
        "4:grep27:content search across files35:ask the user which files to examine0:0:0:0:1:14:bash18:rg or grep command1:l39:loses Grep's built-in output formatting4:bash17:command execution44:report commands that need to be run manually0:1:10:0:1:09:WebSearch30:external information retrieval12:ask the user0:0:0:0:1:0",
    );
    static __CB_ALL: [WorkspaceTool; 3usize] = [
        WorkspaceTool::Grep,
        WorkspaceTool::Bash,
        WorkspaceTool::WebSearch,
    ];
    const __CB_NAMES: [&str; 3usize] = ["grep", "bash", "WebSearch"];
    const __CB_VARIANTS: [&str; 3usize] = ["Grep", "Bash", "WebSearch"];
    impl _cb::__private_v0_1::core::cmp::PartialEq for WorkspaceTool {
        fn eq(&self, other: &Self) -> bool {
            (*self as u32) == (*other as u32)
        }
    }
    impl _cb::__private_v0_1::core::cmp::Eq for WorkspaceTool {}
    impl _cb::__private_v0_1::core::cmp::PartialOrd for WorkspaceTool {
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
    impl _cb::__private_v0_1::core::cmp::Ord for WorkspaceTool {
        fn cmp(&self, other: &Self) -> _cb::__private_v0_1::core::cmp::Ordering {
            _cb::__private_v0_1::core::cmp::Ord::cmp(&(*self as u32), &(*other as u32))
        }
    }
    impl _cb::__private_v0_1::core::hash::Hash for WorkspaceTool {
        fn hash<__H: _cb::__private_v0_1::core::hash::Hasher>(&self, state: &mut __H) {
            _cb::__private_v0_1::core::hash::Hash::hash(&(*self as u32), state);
        }
    }
    impl _cb::__private_v0_1::core::fmt::Debug for WorkspaceTool {
        fn fmt(
            &self,
            f: &mut _cb::__private_v0_1::core::fmt::Formatter<'_>,
        ) -> _cb::__private_v0_1::core::fmt::Result {
            f.write_str(__CB_VARIANTS[*self as usize])
        }
    }
    impl WorkspaceTool {
        /// Every tool, in capability-map order.
        pub const ALL: [Self; 3usize] = [Self::Grep, Self::Bash, Self::WebSearch];
        /// The tool's name in the capability map.
        pub const fn name(self) -> &'static str {
            __CB_NAMES[self as usize]
        }
        /// The toolbox's capability map, checked at compile time.
        pub fn capability_map() -> &'static _cb::__private_v0_1::CapabilityMap {
            __CB_MAP.get()
        }
    }
    impl _cb::__private_v0_1::ToolSet for WorkspaceTool {
        const ALL: &'static [Self] = &__CB_ALL;
        fn name(self) -> &'static str {
            WorkspaceTool::name(self)
        }
        fn capability_map() -> &'static _cb::__private_v0_1::CapabilityMap {
            __CB_MAP.get()
        }
        fn policy() -> _cb::__private_v0_1::Policy {
            _cb::__private_v0_1::declared_policy(
                _cb::__private_v0_1::Some(2u32),
                _cb::__private_v0_1::Some(4u32),
                _cb::__private_v0_1::None,
                _cb::__private_v0_1::None,
            )
        }
    }
    impl _cb::__private_v0_1::core::convert::From<WorkspaceTool>
    for _cb::__private_v0_1::ToolId {
        fn from(tool: WorkspaceTool) -> Self {
            _cb::__private_v0_1::ToolId::from_index(tool as u32)
        }
    }
    impl _cb::__private_v0_1::core::convert::From<WorkspaceTool>
    for _cb::__private_v0_1::String {
        fn from(tool: WorkspaceTool) -> Self {
            _cb::__private_v0_1::String::from(WorkspaceTool::name(tool))
        }
    }
    impl _cb::__private_v0_1::core::fmt::Display for WorkspaceTool {
        fn fmt(
            &self,
            f: &mut _cb::__private_v0_1::core::fmt::Formatter<'_>,
        ) -> _cb::__private_v0_1::core::fmt::Result {
            f.pad(WorkspaceTool::name(*self))
        }
    }
    impl _cb::__private_v0_1::core::str::FromStr for WorkspaceTool {
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
    impl _cb::__private_v0_1::serde::Serialize for WorkspaceTool {
        fn serialize<__S: _cb::__private_v0_1::serde::Serializer>(
            &self,
            serializer: __S,
        ) -> _cb::__private_v0_1::core::result::Result<__S::Ok, __S::Error> {
            _cb::__private_v0_1::serialize_tool(WorkspaceTool::name(*self), serializer)
        }
    }
    impl<'de> _cb::__private_v0_1::serde::Deserialize<'de> for WorkspaceTool {
        fn deserialize<__D: _cb::__private_v0_1::serde::Deserializer<'de>>(
            deserializer: __D,
        ) -> _cb::__private_v0_1::core::result::Result<Self, __D::Error> {
            _cb::__private_v0_1::deserialize_tool(deserializer)
        }
    }
    #[allow(private_interfaces)]
    impl GuardedWorkspace {
        /// Wraps the toolbox with a fresh expeditor: the declared policy, every tool
        /// CLOSED, the system clock.
        pub fn new(toolbox: Workspace) -> Self {
            Self::with_expeditor(toolbox, |builder| builder)
        }
        /// Wraps the toolbox with an expeditor configured by `configure`: a clock,
        /// observers, another policy.
        pub fn with_expeditor(
            toolbox: Workspace,
            configure: impl _cb::__private_v0_1::core::ops::FnOnce(
                _cb::__private_v0_1::ExpeditorBuilder,
            ) -> _cb::__private_v0_1::ExpeditorBuilder,
        ) -> Self {
            let builder = <WorkspaceTool as _cb::__private_v0_1::ToolSet>::expeditor_builder();
            let expeditor = _cb::__private_v0_1::expeditor(configure(builder));
            Self { toolbox, expeditor }
        }
        /// The expeditor: breakers, budget, reports.
        pub fn expeditor(&self) -> &_cb::__private_v0_1::Expeditor {
            &self.expeditor
        }
        /// The toolbox itself, unguarded.
        pub fn toolbox(&self) -> &Workspace {
            &self.toolbox
        }
        /// The toolbox itself, unguarded and mutable.
        pub fn toolbox_mut(&mut self) -> &mut Workspace {
            &mut self.toolbox
        }
        /// The toolbox and its expeditor, apart.
        pub fn into_parts(self) -> (Workspace, _cb::__private_v0_1::Expeditor) {
            (self.toolbox, self.expeditor)
        }
        /// Searches file contents.
        ///
        /// Guarded `grep`: asks the expeditor first; see [the handle](Self).
        #[inline(always)]
        #[allow(clippy::inline_always)]
        pub fn grep(
            &self,
            pattern: &str,
        ) -> _cb::outcome::Outcome<Result<Vec<String>, std::io::Error>> {
            _cb::__private_v0_1::call_routed(
                &self.expeditor,
                WorkspaceTool::Grep,
                &[_cb::__private_v0_1::ToolId::from(WorkspaceTool::Bash)],
                ("grep", "execute_tool grep"),
                __cb_failure_0,
                __cb_dated_0,
                |__cb_adapter| match __cb_adapter {
                    _cb::__private_v0_1::None => {
                        <Result<
                            Vec<String>,
                            std::io::Error,
                        > as _cb::__private_v0_1::ToolResult>::into_result(
                            self.toolbox.grep(pattern),
                        )
                    }
                    _ => {
                        <Result<
                            Vec<String>,
                            std::io::Error,
                        > as _cb::__private_v0_1::ToolResult>::into_result(
                            self.toolbox.grep_with_rg(pattern),
                        )
                    }
                },
            )
        }
        ///
        /// Guarded `bash`: asks the expeditor first; see [the handle](Self).
        #[inline(always)]
        #[allow(clippy::inline_always)]
        pub fn bash(
            &self,
            command: &str,
        ) -> _cb::outcome::Outcome<Result<String, std::io::Error>> {
            _cb::__private_v0_1::call_direct(
                &self.expeditor,
                WorkspaceTool::Bash,
                ("bash", "execute_tool bash"),
                __cb_failure_1,
                __cb_dated_1,
                || <Result<
                    String,
                    std::io::Error,
                > as _cb::__private_v0_1::ToolResult>::into_result(
                    self.toolbox.bash(command),
                ),
            )
        }
        ///
        /// Guarded `WebSearch`: asks the expeditor first; see [the handle](Self).
        #[inline(always)]
        #[allow(clippy::inline_always)]
        pub async fn web_search(
            &mut self,
            query: String,
        ) -> _cb::outcome::Outcome<std::io::Result<Vec<String>>> {
            let __cb_span = _cb::__private_v0_1::call_span(
                "WebSearch",
                "execute_tool WebSearch",
            );
            _cb::__private_v0_1::Instrument::instrument(
                    async move {
                        match self.expeditor.decide(WorkspaceTool::WebSearch) {
                            _cb::__private_v0_1::Decision::Call(__cb_ticket)
                            | _cb::__private_v0_1::Decision::Probe(__cb_ticket) => {
                                _cb::__private_v0_1::finish_dated(
                                    &self.expeditor,
                                    __cb_ticket,
                                    _cb::__private_v0_1::None,
                                    <std::io::Result<
                                        Vec<String>,
                                    > as _cb::__private_v0_1::ToolResult>::into_result(
                                        self.toolbox.web_search(query).await,
                                    ),
                                    __cb_failure_2,
                                    __cb_dated_2,
                                )
                            }
                            __cb_decision => {
                                let __cb_refusal = _cb::__private_v0_1::refuse(
                                    &self.expeditor,
                                    _cb::__private_v0_1::ToolId::from(WorkspaceTool::WebSearch),
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
                    },
                    __cb_span,
                )
                .await
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
            String,
            std::io::Error,
        > as _cb::__private_v0_1::ToolResult>::Err,
    ) -> _cb::__private_v0_1::Failure {
        (&&&_cb::__private_v0_1::Wrap(__cb_error)).__cb_failure()
    }
    #[inline]
    fn __cb_dated_1(
        __cb_value: &<Result<
            String,
            std::io::Error,
        > as _cb::__private_v0_1::ToolResult>::Ok,
    ) -> _cb::__private_v0_1::core::option::Option<_cb::__private_v0_1::Timestamp> {
        (&&_cb::__private_v0_1::DateOf(__cb_value)).__cb_data_time()
    }
    #[inline]
    fn __cb_failure_2(
        __cb_error: &<std::io::Result<
            Vec<String>,
        > as _cb::__private_v0_1::ToolResult>::Err,
    ) -> _cb::__private_v0_1::Failure {
        (&&&_cb::__private_v0_1::Wrap(__cb_error)).__cb_failure()
    }
    #[inline]
    fn __cb_dated_2(
        __cb_value: &<std::io::Result<
            Vec<String>,
        > as _cb::__private_v0_1::ToolResult>::Ok,
    ) -> _cb::__private_v0_1::core::option::Option<_cb::__private_v0_1::Timestamp> {
        (&&_cb::__private_v0_1::DateOf(__cb_value)).__cb_data_time()
    }
    #[allow(
        clippy::needless_pass_by_value,
        clippy::unused_self,
        clippy::must_use_candidate
    )]
    impl GuardedWorkspace {
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
