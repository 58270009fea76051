"""B9 (docs/requirements.md) with another SDK's client: the official Python MCP SDK (PyPI
`mcp`) drives the example server (`examples/mcp_server`) over stdio.

    python_client.py PATH/TO/mcp_server

spawns the server with `--break grep --fail-calls 3`, walks the same path as
`tests/mcp/b9_mcp.rs` (initialize, tools/list, a call answered, three failures opening grep's
circuit, `notifications/tools/list_changed`, the shrunk list, grep routed, a model's mistake)
and prints one JSON object per step on stdout. Then two long sessions (B15), on the
server's shortened clocks: three tools each fail twice and mend (the fifth failure spends the
budget; the window frees it again, announced with `list_changed`), and grep opens, mends and
comes back on probation to a client that never calls what it is not offered. Any check that does not hold ends the script
with exit status 1 and the reason on stderr. Run by `tests/mcp/b9_python_client.rs`.

Written against the SDK's public client API only (`ClientSession`, `stdio_client`,
`StdioServerParameters`, `message_handler`), which mcp 1.x and 2.x share.
"""

import json
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

WAIT = 10  # seconds for any one step


class Failed(Exception):
    """A check that does not hold."""


def check(condition, message):
    if not condition:
        raise Failed(message)


def observed(step, **facts):
    print(json.dumps({"step": step, **facts}), flush=True)


def field(model, snake, camel):
    """A field by its 2.x name (snake_case) or its 1.x name (the wire's camelCase)."""
    return getattr(model, snake) if hasattr(model, snake) else getattr(model, camel)


def is_error(result):
    return field(result, "is_error", "isError")


def text_of(result):
    check(len(result.content) == 1, f"one content block: {result!r}")
    block = result.content[0]
    check(block.type == "text", f"text content: {block!r}")
    return block.text


def meta_of(result):
    # The SDK's CallToolResult has `_meta` as the field `meta` (alias `_meta`).
    check(isinstance(result.meta, dict), f"_meta on every result: {result!r}")
    return result.meta


async def call_unknown(session, name, arguments):
    """A call to a tool that does not exist: the SDK raises the server's JSON-RPC error
    (`MCPError` in 2.x, `McpError` in 1.x; both carry `.error`, the ErrorData)."""
    try:
        with anyio.fail_after(WAIT):
            result = await session.call_tool(name, arguments)
    except Exception as error:
        data = getattr(error, "error", None)
        check(data is not None, f"{name}: a JSON-RPC error, not {error!r}")
        return data
    raise Failed(f"{name}: a JSON-RPC error, not a result: {result!r}")


async def call(session, name, arguments):
    # A tool's failure, a refusal or arguments that do not fit are a result, never a JSON-RPC
    # error:
    # the SDK raises on a JSON-RPC error, so an exception here fails the run.
    try:
        with anyio.fail_after(WAIT):
            return await session.call_tool(name, arguments)
    except Exception as error:
        raise Failed(f"tools/call {name} must be a result, not {type(error).__name__}: {error}")


async def names(session):
    with anyio.fail_after(WAIT):
        listed = await session.list_tools()
    return [tool.name for tool in listed.tools], listed.tools


async def run(server):
    list_changed = anyio.Event()
    notifications = []

    async def on_message(message):
        # 2.x hands the notification itself; 1.x a ServerNotification wrapping it in `.root`
        # (and requests from the server as RequestResponder, which have no `method`).
        inner = getattr(message, "root", message)
        method = getattr(inner, "method", None)
        if isinstance(message, Exception):
            notifications.append(f"exception: {message!r}")
        elif method is not None:
            notifications.append(method)
            if method == "notifications/tools/list_changed":
                list_changed.set()

    # A cool-down longer than this session: grep stays off the offer throughout.
    params = StdioServerParameters(
        command=server, args=["--break", "grep", "--fail-calls", "3", "--cool-down", "60s"]
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            with anyio.fail_after(WAIT):
                init = await session.initialize()
            server_info = field(init, "server_info", "serverInfo")
            tools_capability = init.capabilities.tools
            list_changed_capability = tools_capability and field(
                tools_capability, "list_changed", "listChanged"
            )
            observed(
                "initialize",
                protocol_version=field(init, "protocol_version", "protocolVersion"),
                server_name=server_info.name,
                server_version=server_info.version,
                tools_list_changed=list_changed_capability,
            )
            check(server_info.name == "notebook", f"serverInfo: {server_info!r}")
            check(
                list_changed_capability is True,
                f"tools.listChanged: {init.capabilities!r}",
            )

            listed, tools = await names(session)
            observed("tools/list", names=listed)
            check(listed == ["grep", "read", "count_words"], f"the offer: {listed}")
            for tool in tools:
                check(tool.description, f"{tool.name} has a description")
                schema = field(tool, "input_schema", "inputSchema")
                check(schema.get("type") == "object", f"{tool.name}'s schema: {schema}")
                check(schema.get("required"), f"{tool.name}'s schema requires: {schema}")
            grep = tools[0]
            grep_schema = field(grep, "input_schema", "inputSchema")
            check(
                grep.description
                == "content search across notes\n\n"
                "Answers the paths of the notes whose text contains `pattern`.",
                f"grep's description: {grep.description!r}",
            )
            check(
                grep_schema
                == {
                    "type": "object",
                    "properties": {
                        "pattern": {"type": "string", "description": "the text to look for"}
                    },
                    "required": ["pattern"],
                    "additionalProperties": False,
                },
                f"grep's schema: {grep_schema}",
            )

            result = await call(session, "count_words", {"text": "one two"})
            meta = meta_of(result)
            observed("count_words", is_error=is_error(result), text=text_of(result), meta=meta)
            check(is_error(result) is False, f"count_words answered: {result!r}")
            check(text_of(result) == "2", f"count_words text: {text_of(result)!r}")
            check(meta.get("outcome") == "answered", f"count_words _meta: {meta}")
            check(meta.get("circuit_state") == "CLOSED", f"count_words _meta: {meta}")

            # A tool that does not exist is the spec's protocol error (-32602, invalid params),
            # its message the note for the model with a suggestion; data carries the _meta.
            error = await call_unknown(session, "gerp", {"pattern": "staging"})
            observed("unknown tool", tool="gerp", code=error.code, message=error.message)
            check(error.code == -32602, f"gerp error code: {error.code}")
            check('Did you mean "grep"?' in error.message, f"gerp message: {error.message!r}")
            check(
                (error.data or {}).get("outcome") == "model_mistake", f"gerp data: {error.data!r}"
            )

            for attempt in (1, 2, 3):
                check(not list_changed.is_set(), f"no list_changed yet: {notifications}")
                result = await call(session, "grep", {"pattern": "staging"})
                meta = meta_of(result)
                note = text_of(result)
                observed(
                    "grep failed", attempt=attempt, is_error=is_error(result), text=note, meta=meta
                )
                check(is_error(result) is True, f"grep #{attempt} isError: {result!r}")
                check(note.startswith("grep failed: "), f"grep #{attempt} note: {note!r}")
                check(meta.get("outcome") == "failed", f"grep #{attempt} _meta: {meta}")
                state = "OPEN" if attempt == 3 else "CLOSED"
                check(meta.get("circuit_state") == state, f"grep #{attempt} _meta: {meta}")
            check(
                "Its circuit is now OPEN: do not call grep before " in note
                and note.endswith(
                    "when it is offered again on probation. Instead, use read — read every note "
                    "and look for the pattern (degradation: loses the index: every note is read "
                    "in full)."
                ),
                f"the third note says the circuit opened, until when, and what to use: {note!r}",
            )

            try:
                with anyio.fail_after(WAIT):
                    await list_changed.wait()
            except TimeoutError:
                raise Failed(f"no notifications/tools/list_changed in {WAIT} s: {notifications}")
            observed("notification", methods=notifications)

            listed, _ = await names(session)
            observed("tools/list", names=listed)
            check(listed == ["read", "count_words"], f"grep left the offer: {listed}")

            # Called anyway (a client with an old list): answered through read. (The SDK, asked
            # for a tool its last list lacks, lists again and logs "Tool grep not listed by
            # server, cannot validate any structured content" on stderr: harmless.)
            result = await call(session, "grep", {"pattern": "staging"})
            meta = meta_of(result)
            note = text_of(result)
            observed("grep routed", is_error=is_error(result), text=note, meta=meta)
            check(is_error(result) is False, f"grep routed: {result!r}")
            check(meta.get("outcome") == "answered", f"routed _meta: {meta}")
            check(meta.get("route") == "alternative", f"routed _meta: {meta}")
            check(meta.get("routed_to") == "read", f"routed _meta: {meta}")
            check(
                meta.get("degradation") == "loses the index: every note is read in full",
                f"routed _meta: {meta}",
            )
            check("degradation: loses the index" in note, f"routed note: {note!r}")

            # The same slip now: grep is off the offer, so the note suggests only what is on it.
            error = await call_unknown(session, "gerp", {"pattern": "staging"})
            observed("unknown tool", tool="gerp", code=error.code, message=error.message)
            check(error.code == -32602, f"gerp error code: {error.code}")
            check(
                error.message
                == 'There is no tool named "gerp". Tools you may call: read, count_words.',
                f"gerp message with grep OPEN: {error.message!r}",
            )

    await long_session_budget(server)
    await long_session_probation(server)
    observed("done", ok=True)


class Announcements:
    """Counts `notifications/tools/list_changed`, and lets a step wait for the next one."""

    def __init__(self):
        self.count = 0
        self.event = anyio.Event()

    async def on_message(self, message):
        inner = getattr(message, "root", message)
        if getattr(inner, "method", None) == "notifications/tools/list_changed":
            self.count += 1
            self.event.set()

    async def until(self, session, condition, what, seconds=WAIT):
        """Waits for announcements until the listed tools satisfy `condition`."""
        with anyio.move_on_after(seconds):
            while True:
                listed, tools = await names(session)
                if condition(listed, tools):
                    return listed, tools
                self.event = anyio.Event()
                await self.event.wait()
        raise Failed(f"{what}: not within {seconds} s ({self.count} list_changed)")


def session_args(*extra):
    # Short clocks, so that a long session takes seconds.
    return ["--cool-down", "1s", "--cool-down-cap", "2s", "--budget-window", "3s", *extra]


async def long_session_budget(server):
    """Three tools each fail twice and mend: no circuit opens, the fifth failure spends the
    budget and pauses every tool; the window frees it again, and the client is told."""
    arguments = {"grep": {"pattern": "staging"}, "read": {"path": "notes/deploy.md"},
                 "count_words": {"text": "one two"}}
    args = session_args("--break", "grep", "--break", "read", "--break", "count_words",
                        "--fail-calls", "2")
    announcements = Announcements()
    params = StdioServerParameters(command=server, args=args)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, message_handler=announcements.on_message) as session:
            with anyio.fail_after(WAIT):
                await session.initialize()
            outcomes = []
            for tool in ("grep", "read", "count_words"):
                for _ in range(2):
                    result = await call(session, tool, arguments[tool])
                    outcomes.append(meta_of(result).get("outcome"))
            observed("long session: six scattered failures", outcomes=outcomes)
            check(outcomes[:5] == ["failed"] * 5, f"five failures charged: {outcomes}")
            check(outcomes[5] == "refused", f"the sixth call is refused (paused): {outcomes}")
            await announcements.until(session, lambda listed, _: listed == [], "paused")
            listed, _ = await announcements.until(
                session, lambda listed, _: len(listed) == 3, "usable again within the window"
            )
            observed("long session: the window freed the budget", names=listed)
            for tool in ("grep", "read"):
                result = await call(session, tool, arguments[tool])
                check(is_error(result) is False, f"{tool} works again: {result!r}")
            # count_words's sixth call was refused, not made: its fault has one call left.
            result = await call(session, "count_words", arguments["count_words"])
            check(is_error(result) is True, f"count_words fails once more: {result!r}")
            result = await call(session, "count_words", arguments["count_words"])
            check(is_error(result) is False, f"count_words works again: {result!r}")


async def long_session_probation(server):
    """grep fails three times (OPEN, off the offer) and mends; the client calls nothing it is
    not offered, yet grep comes back on probation with list_changed, and its first call is
    the probe that closes the circuit."""
    announcements = Announcements()
    params = StdioServerParameters(
        command=server, args=session_args("--break", "grep", "--fail-calls", "3")
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, message_handler=announcements.on_message) as session:
            with anyio.fail_after(WAIT):
                await session.initialize()
            for _ in range(3):
                await call(session, "grep", {"pattern": "staging"})
            await announcements.until(session, lambda listed, _: "grep" not in listed, "grep left")
            # Only offered tools are called: read, while grep is away.
            await call(session, "read", {"path": "notes/deploy.md"})
            listed, tools = await announcements.until(
                session, lambda listed, _: "grep" in listed, "grep back without a call"
            )
            grep = next(tool for tool in tools if tool.name == "grep")
            observed("probation", names=listed, description=grep.description)
            check(grep.description.startswith("[ON PROBATION"), f"on probation: {grep.description!r}")
            result = await call(session, "grep", {"pattern": "staging"})
            check(is_error(result) is False, f"the probe succeeds: {result!r}")
            check(meta_of(result).get("circuit_state") == "CLOSED", f"closed: {meta_of(result)}")
            await announcements.until(
                session,
                lambda _, tools: any(
                    t.name == "grep" and not t.description.startswith("[ON PROBATION")
                    for t in tools
                ),
                "grep off probation",
            )
            observed("probation over", list_changed=announcements.count)


def main():
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} PATH/TO/mcp_server", file=sys.stderr)
        return 2
    try:
        anyio.run(run, sys.argv[1])
    except BaseException as error:  # the SDK's task groups wrap it in exception groups
        failure = first_failure(error)
        if failure is None:
            raise
        print(f"python_client.py: FAILED: {failure}", file=sys.stderr)
        return 1
    return 0


def first_failure(error):
    if isinstance(error, Failed):
        return error
    for inner in getattr(error, "exceptions", ()):
        found = first_failure(inner)
        if found is not None:
            return found
    return None


if __name__ == "__main__":
    sys.exit(main())
