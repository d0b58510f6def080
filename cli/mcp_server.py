"""`undostore mcp`: a Model Context Protocol server over stdio (extra `undostore[mcp]`).

Each tool runs the matching command in this process with `--json` and hands back that exact JSON
object (as text, and as structured content), so a tool and its command cannot drift apart. A
command that fails (any exit code but 0) becomes a tool error with its message; the server keeps
running. `undo`, `redo` and `revert` get `--yes`: the host asked. The root is found from the
server's working folder on every call, as the command line finds it.

A tool call runs in a worker thread, so a long snapshot or undo does not hold up pings, the
tool list or a cancellation; tool calls run one at a time (they share this process's stdout
capture and the store). A call the client cancels still runs to its end: a restore is never
cut short from here.

Adding a tool is one function under `@tool(...)` that turns the arguments into a command line.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from .signals import process_cancel

Args = dict[str, Any]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    properties: dict[str, Any]
    required: tuple[str, ...]
    argv: Callable[[Args], list[str]]

    def schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": self.properties, "required": list(self.required),
                "additionalProperties": False}


TOOLS: dict[str, Tool] = {}


def tool(name: str, description: str, required: tuple[str, ...] = (), **properties: Any
         ) -> Callable[[Callable[[Args], list[str]]], Callable[[Args], list[str]]]:
    """Register a tool: its one-line description for a model, its arguments' JSON schemas, and
    the function that turns the arguments into the command's arguments (after the name)."""

    def register(argv: Callable[[Args], list[str]]) -> Callable[[Args], list[str]]:
        TOOLS[name] = Tool(name, description, properties, required, argv)
        return argv

    return register


def _text(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


SESSION = _text("Undo history to use (default: $UNDOSTORE_SESSION, else the session with the "
                "newest undo point).")
SNAPSHOT_ID = "a snapshot id (40 hex digits, or a unique prefix of 4 or more)"


def _opt(flag: str, value: Any) -> list[str]:
    """`--flag=value` (never split, so a value starting with '-' is never read as an option)."""
    return [] if value is None or value == "" else [f"{flag}={value}"]


def _id(args: Args, key: str) -> list[str]:
    value = args.get(key)
    if value is None:
        return []
    if value.startswith("-"):
        raise ToolInputError(f"{key}: not a snapshot id: {value!r}")
    return [value]


class ToolInputError(Exception):
    """Arguments the schema lets through but the command cannot take."""


@tool("snapshot", "Capture the project's files now and return the snapshot id; with `session`, "
      "also record an undo point the user can go back to.",
      session=_text("Record an undo point in this session (none: only capture)."),
      label=_text("Label of the undo point, e.g. what is about to be done."))
def _snapshot(args: Args) -> list[str]:
    if args.get("label") and not args.get("session"):
        raise ToolInputError("label needs session (a label names an undo point)")
    return ["snapshot", *_opt("--session", args.get("session")),
            *_opt("--label", args.get("label"))]


@tool("diff", "List what changed from one snapshot to another, or to the files now.",
      required=("from",),
      **{"from": _text(f"The older state: {SNAPSHOT_ID}."),
         "to": _text(f"The newer state: {SNAPSHOT_ID} (default: the files now)."),
         "paths": {"type": "array", "items": {"type": "string"},
                   "description": "Only these files or folders (relative to the root)."},
         "format": {"type": "string", "enum": ["name-status", "numstat", "stat", "patch"],
                    "description": "Also return the changes as git prints them, in `text`."}})
def _diff(args: Args) -> list[str]:
    paths = args.get("paths") or []
    return ["diff", *_id(args, "from"), *_id(args, "to"), *(["--", *paths] if paths else [])]


@tool("undo", "Put the files back as they were at the session's newest undo point "
      "(takes back the last turn; `redo` takes the undo back).", session=SESSION)
def _undo(args: Args) -> list[str]:
    return ["undo", "--yes", *_opt("--session", args.get("session"))]


@tool("redo", "Take back the session's last undo.", session=SESSION)
def _redo(args: Args) -> list[str]:
    return ["redo", "--yes", *_opt("--session", args.get("session"))]


@tool("revert", "Take back one change (FROM -> TO) and keep every later change, merging file by "
      "file as `git revert` does; with only `from`, an undo point, take back that one turn. "
      "Overlapping later edits are refused (nothing changed) unless `merge` writes conflict "
      "markers; the result lists `conflicts`.",
      required=("from",),
      **{"from": _text(f"The state before the change: {SNAPSHOT_ID}, usually an undo point."),
         "to": _text(f"The state after the change: {SNAPSHOT_ID} (default: the session's next "
                     "undo point, or the files now)."),
         "merge": {"type": "boolean",
                   "description": "On conflicts, write git-style markers instead of refusing."}})
def _revert(args: Args) -> list[str]:
    return ["revert", "--yes", *_id(args, "from"), *_id(args, "to"),
            *(["--merge"] if args.get("merge") else [])]


@tool("log", "List the session's undo points, newest first, and its redo stack.",
      session=SESSION)
def _log(args: Args) -> list[str]:
    return ["log", *_opt("--session", args.get("session"))]


@tool("status", "Count the session's undo points and redo entries, and say whether an "
      "interrupted restore is pending.", session=SESSION)
def _status(args: Args) -> list[str]:
    return ["status", *_opt("--session", args.get("session"))]


@tool("ops", "List the operations done on this project's files (snapshots, restores, undos, "
      "redos, ...), newest first, with the ids that lead back.",
      session=_text("Only this session's operations."),
      since=_text("Only operations newer than this, e.g. 30m, 2h, 1d."))
def _ops(args: Args) -> list[str]:
    return ["ops", *_opt("--session", args.get("session")), *_opt("--since", args.get("since"))]


# --- running a command in this process ---------------------------------------------------------


def capture(argv: list[str]) -> tuple[int, str]:
    """(exit code, stdout) of `undostore argv`, run in this process."""
    from .main import main

    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    saved = sys.stdout
    sys.stdout = out
    try:
        main(argv)
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    finally:
        sys.stdout = saved
    return code, out.buffer.getvalue().decode("utf-8", "replace")


def run_command(global_args: list[str], argv: list[str]) -> tuple[int, dict[str, Any]]:
    """(exit code, the JSON object the command printed) for `undostore GLOBAL... argv --json`."""
    code, text = capture([*global_args, *_with_json(argv)])
    text = text.strip()
    try:
        payload = json.loads(text.splitlines()[-1]) if text else {}
    except ValueError:
        payload = {"output": text}
    return code, payload if isinstance(payload, dict) else {"result": payload}


def _with_json(argv: list[str]) -> list[str]:
    """`--json` right after the command name, before any `--`."""
    return [argv[0], "--json", *argv[1:]]


def call(global_args: list[str], name: str, args: Args) -> types.CallToolResult:
    """Run tool `name`; every failure is a tool error, never an exception."""
    try:
        spec = TOOLS.get(name)
        if spec is None:
            return _error(f"unknown tool {name!r} (tools: {', '.join(sorted(TOOLS))})")
        args = dict(args or {})
        _check(spec, args)
        code, payload = run_command(global_args, spec.argv(args))
        if code == 0 and name == "diff" and args.get("format"):
            payload["text"] = _diff_text(global_args, payload, args)
    except ToolInputError as err:
        return _error(str(err))
    except Exception as err:  # noqa: BLE001 (the server must keep running)
        return _error(f"{type(err).__name__}: {err}")
    if code != 0:
        error = payload.get("error") if isinstance(payload.get("error"), dict) else {}
        message = error.get("message") or payload.get("output") or f"exit code {code}"
        where = f"{error['path']}: " if error.get("path") else ""
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"undostore: error: {where}{message}")],
            structured_content=payload, is_error=True)
    text = json.dumps(payload, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                structured_content=payload)


def _diff_text(global_args: list[str], payload: dict[str, Any], args: Args) -> str:
    """The same changes as git prints them (against the ids the JSON run resolved, so both
    describe one comparison)."""
    from_id, to_id = payload.get("from"), payload.get("to")
    argv = ["diff", f"--{args['format']}", "--color=never", str(from_id), str(to_id)]
    paths = args.get("paths") or []
    if paths:
        argv += ["--", *paths]
    return capture([*global_args, *argv])[1]


def _check(spec: Tool, args: Args) -> None:
    for key in spec.required:
        if args.get(key) in (None, ""):
            raise ToolInputError(f"{spec.name}: missing argument {key!r}")
    for key, value in args.items():
        schema = spec.properties.get(key)
        if schema is None:
            raise ToolInputError(f"{spec.name}: unknown argument {key!r} "
                                 f"(takes: {', '.join(spec.properties) or 'nothing'})")
        if value is None:
            continue
        kind = schema["type"]
        ok = (isinstance(value, str) if kind == "string" else
              isinstance(value, bool) if kind == "boolean" else
              isinstance(value, list) and all(isinstance(v, str) for v in value))
        if not ok or (kind == "string" and "enum" in schema and value not in schema["enum"]):
            raise ToolInputError(f"{spec.name}: bad value for {key!r}: {value!r}")


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)],
                                is_error=True)


# --- the server -------------------------------------------------------------------------------


def build_server(global_args: list[str]) -> Server:
    from undostore import __version__

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=t.name, description=t.description, input_schema=t.schema())
            for t in TOOLS.values()])

    one_at_a_time = anyio.Lock()

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        async with one_at_a_time:
            # abandon_on_cancel=False (the default): a cancelled request waits for the thread,
            # so the lock is held until the library call has returned.
            result = await anyio.to_thread.run_sync(call, global_args, params.name,
                                                    params.arguments or {})
        if process_cancel().is_set():
            # SIGINT or SIGTERM during the call (signals.py): a restore it stopped rolled back
            # first; now the server stops, as it does on a signal between calls.
            raise KeyboardInterrupt
        return result

    return Server("undostore", version=__version__,
                  instructions="Undo and redo for the files of this project: snapshot before "
                               "a change, diff to see it, undo to take it back.",
                  on_list_tools=list_tools, on_call_tool=call_tool)


def serve(global_args: list[str]) -> None:
    """Serve on stdin/stdout until the client closes stdin."""
    server = build_server(global_args)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)
