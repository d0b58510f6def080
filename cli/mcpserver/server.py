"""`undostore mcp`: a Model Context Protocol server over stdio (extra `undostore[mcp]`).

Each tool makes the library call its command makes and hands back the JSON object its command
prints with `--json` (results.py makes it once for both; as text, and as structured content),
so a tool and its command cannot drift apart. Its workspace comes through the same door as the
command line's and the hook's (door.py): what the door says (a restore a crash left half-done,
finished first: kind "recovery"; a moved project's store taken along) is kept in the result's
`warnings`, never read back from a stream. The four tools that restore files (undo, redo,
restore, revert) report MCP progress while they run when the client sent a progress token. A
failure becomes a tool error with its message and its command's JSON (plain.failure_of); the
server keeps running. `undo`, `redo`, `restore` and `revert` do not ask: the host asked
(`dry_run` shows the plan). The root is found from the server's working folder on every call,
as the command line finds it.

A result whose JSON would pass `RESULT_LIMIT` bytes is cut to a summary (`"truncated": true`,
the full counts, and how to narrow the call): a client's stdio reader drops a message over
10 MiB (the TypeScript SDK's), and the text and the structured copy are each sent.

A tool call runs in a worker thread, so a long snapshot or undo does not hold up pings, the
tool list or a cancellation; tool calls run one at a time (they share the store and the
process's cancel request). A call the client cancels still runs to its end: a restore is never
cut short from here. Its progress never waits on the client (`ProgressBridge`), so a client that
stops reading holds no store lock; a client that closes stdin still gets every reply it is owed
(mcp_relay.py).

Adding a tool is one function under `@tool(...)` that makes its command's library call and
returns its command's JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.from_thread
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from undostore import Direction
from undostore.settings import named_session

from ..door import ALWAYS, Said, history_session, open_workspace
from ..plain import Options, failure_of, json_text, root_relative
from ..results import (
    compare_json,
    empty_log,
    log_json,
    ops_json,
    sessions_json,
    show_json,
    snapshot_json,
    with_pending,
)
from ..signals import process_cancel
from .relay import Relay

if TYPE_CHECKING:
    from undostore import Workspace

Args = dict[str, Any]


READ_ONLY = "read-only"       # readOnlyHint: looks, changes nothing
RECORDS = "records"           # adds to the store (a snapshot), changes no file
RESTORES = "restores"         # destructiveHint: changes files (a safety snapshot first)


Json = dict[str, Any]


class Call:
    """One tool call: the server's global options, the client's progress listener (None: the
    client sent no progress token), and what the door said along the way (door.py), kept as
    the result's `warnings`: a restore a crash left half-done that the call finished first
    (kind "recovery"), a moved project's store taken along, a store Windows cannot vouch for."""

    def __init__(self, options: Options,
                 on_progress: Callable[[Any], None] | None = None) -> None:
        self.options = options
        self.on_progress = on_progress
        self.warnings: list[Json] = []

    def hear(self, said: Said) -> None:
        if said.kind not in ALWAYS:
            return   # how the root or the session was found: the result names them
        self.warnings.append({"path": None, "message": said.line.removeprefix("undostore: "),
                              "kind": said.kind})

    def workspace(self, create: bool = True) -> Workspace:
        return open_workspace(self.options, self.hear, create=create, chatty=False,
                              may_fork=False)

    def reading(self, read: Callable[[Workspace], Json],
                empty: Callable[[], Json] | None = None) -> Json:
        """`read(workspace)` for a tool that only reads (never makes a store); where no store
        protects the folder, what `empty()` gives (None: the error), as its command does."""
        from undostore import NoStoreError

        try:
            workspace = self.workspace(create=False)
        except NoStoreError:
            if empty is None:
                raise
            return empty()
        with workspace:
            return read(workspace)


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    properties: dict[str, Any]
    required: tuple[str, ...]
    run: Callable[[Call, Args], Json]
    kind: str = READ_ONLY

    def schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": self.properties, "required": list(self.required),
                "additionalProperties": False}

    def annotations(self) -> types.ToolAnnotations:
        return types.ToolAnnotations(
            read_only_hint=self.kind == READ_ONLY,
            destructive_hint=self.kind == RESTORES if self.kind != READ_ONLY else None,
            idempotent_hint=True if self.kind == READ_ONLY else None,
            open_world_hint=False)


TOOLS: dict[str, Tool] = {}


def tool(name: str, description: str, required: tuple[str, ...] = (), kind: str = READ_ONLY,
         **properties: Any) -> Callable[[Callable[[Call, Args], Json]],
                                        Callable[[Call, Args], Json]]:
    """Register a tool: its one-line description for a model, its arguments' JSON schemas, what
    it does to the files (`kind`: the MCP annotations), and the function that makes its
    command's library call and returns its command's JSON (results.py)."""

    def register(run: Callable[[Call, Args], Json]) -> Callable[[Call, Args], Json]:
        TOOLS[name] = Tool(name, description, properties, required, run, kind)
        return run

    return register


def _text(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


SESSION = _text("Undo history to use (default: $UNDOSTORE_SESSION, else the session last acted "
                "on: its newest undo point, undo or redo).")
DRY_RUN = {"type": "boolean",
           "description": "Only say what would change (created, modified, deleted); change "
                          "nothing."}
SNAPSHOT_ID = "a snapshot id (40 hex digits, or a unique prefix of 4 or more)"


def _id(args: Args, key: str) -> str | None:
    """The snapshot id argument `key` (None: not given); one starting with '-' is refused, as
    the command line would read it as an option."""
    value = args.get(key)
    if value is None:
        return None
    if value.startswith("-"):
        raise ToolInputError(f"{key}: not a snapshot id: {value!r}")
    return value


def _session(args: Args) -> str | None:
    return args.get("session") or None


class ToolInputError(Exception):
    """Arguments the schema lets through but the command cannot take."""


@tool("snapshot", "Capture the project's files now and return the snapshot id; with `session`, "
      "also record an undo point the user can go back to.", kind=RECORDS,
      session=_text("Record an undo point in this session (none: only capture)."),
      label=_text("Label of the undo point, e.g. what is about to be done."))
def _snapshot(call: Call, args: Args) -> Json:
    from undostore import SnapshotOptions

    if args.get("label") and not args.get("session"):
        raise ToolInputError("label needs session (a label names an undo point)")
    # $UNDOSTORE_SESSION names the session as `session` does (the contract), as the command's.
    session = named_session(_session(args))
    with call.workspace() as workspace:
        result = workspace.snapshot(session=session, label=args.get("label") or None,
                                    options=SnapshotOptions(force=call.options.force))
    return snapshot_json(result)


def _paths(what: str) -> Json:
    return {"type": "array", "items": {"type": "string"},
            "description": f"Only these files or folders (globs too; relative to the root){what}."}


@tool("diff", "List what changed from one snapshot to another, or to the files now.",
      required=("from",),
      **{"from": _text(f"The older state: {SNAPSHOT_ID}."),
         "to": _text(f"The newer state: {SNAPSHOT_ID} (default: the files now)."),
         "paths": _paths(""),
         "format": {"type": "string", "enum": ["name-status", "numstat", "stat", "patch"],
                    "description": "Also return the changes as git prints them, in `text`."}})
def _diff(call: Call, args: Args) -> Json:
    from_id, to_id = _id(args, "from"), _id(args, "to")

    def read(workspace: Workspace) -> Json:
        result = workspace.compare(from_id, to_id, paths=_given_paths(workspace, args))
        payload = compare_json(workspace.store, result)
        if args.get("format"):
            payload["text"] = _git_text(workspace, args["format"], result.changes)
        return payload

    return call.reading(read)


def _git_text(workspace: Workspace, form: str, changes: list[Any]) -> str:
    """The changes as git prints them to a pipe: no colour, --stat 80 columns wide."""
    from undostore import PLAIN, render

    return b"".join(render(form, workspace.store, changes, PLAIN, 80)).decode("utf-8",
                                                                              "replace")


MERGE = {"type": "boolean",
         "description": "Where a turn overlaps a later change, write git-style conflict markers "
                        "(the result is then an error listing `conflicts` to resolve) instead "
                        "of refusing with nothing changed."}


def _yes(plan: Any) -> bool:
    return True  # the host asked


def _restoring(call: Call, args: Args, act: Callable[..., Any]) -> Json:
    """A tool that restores, as its command does it (no question: the host asked; `dry_run`
    shows the plan); `act(workspace, **run)` makes the library call."""
    dry_run = bool(args.get("dry_run"))
    with call.workspace() as workspace:
        result = act(workspace, dry_run=dry_run, confirm=None if dry_run else _yes,
                     on_progress=call.on_progress)
    return result.to_json()


@tool("undo", "Take back the session's last turn: each file it changed, merged 3-way against the "
      "files now, so the user's and other sessions' later changes stay (`redo` applies it "
      "again). A later change overlapping the turn's is refused with nothing changed, unless "
      "`merge` or `whole`.", kind=RESTORES, session=SESSION, merge=MERGE,
      whole={"type": "boolean",
             "description": "Put the whole folder back to the turn's undo point instead (later "
                            "changes too; a safety snapshot keeps them)."},
      paths=_paths(" of the turn's change: the rest of the turn stays on the undo stack"),
      turn={"type": "integer", "minimum": 1,
            "description": "Take back turn K alone (as `log` numbers them: 1 is the last) and "
                           "keep the later turns."},
      call={"type": "integer", "minimum": 1,
            "description": "Take back tool call N of the turn (the last, or `turn`) alone, as "
                           "`show` numbers its calls."},
      dry_run=DRY_RUN)
def _undo(call: Call, args: Args) -> Json:
    if args.get("merge") and args.get("whole"):
        raise ToolInputError("undo takes `merge` or `whole`, not both")
    return _step(call, args, Direction.UNDO, whole=bool(args.get("whole")),
                 turn=_number(args, "turn"), call=_number(args, "call"))


def _number(args: Args, key: str) -> int | None:
    """A tool's numbering argument (`turn`, `call`): None, or 1 or more."""
    value = args.get(key)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                              or value < 1):
        raise ToolInputError(f"`{key}` is a number, 1 or more")
    return value


@tool("redo", "Apply the session's last undone turn again, 3-way as undo takes it back.",
      kind=RESTORES, session=SESSION, merge=MERGE,
      paths=_paths(" of the undone turn's change: the rest stays undone"), dry_run=DRY_RUN)
def _redo(call: Call, args: Args) -> Json:
    return _step(call, args, Direction.REDO)


def _step(request: Call, args: Args, direction: Direction, **how: Any) -> Json:
    """An undo or redo tool (`how`: the library's options, `call` among them: a tool call's
    number, hence `request` for the MCP call here)."""
    def act(workspace: Workspace, **run: Any) -> Any:
        session = history_session(workspace, _session(args), request.hear,
                                  doing=f"nothing to {direction.value}: ")
        return workspace.step(direction, session, merge=bool(args.get("merge")),
                              paths=_given_paths(workspace, args), **how, **run)

    return _restoring(request, args, act)


def _given_paths(workspace: Workspace, args: Args) -> list[str] | None:
    """A tool's `paths`, relative to the root (None: none given: every path)."""
    given = args.get("paths") or []
    if not isinstance(given, list) or not all(isinstance(p, str) for p in given):
        raise ToolInputError("`paths` is a list of paths")
    return root_relative(workspace.root, given) or None


@tool("restore", "Make the project's files equal to one snapshot (any id from snapshot, log or "
      "ops); a safety snapshot of the files now is taken first and returned.", kind=RESTORES,
      required=("id",), id=_text(f"The snapshot to restore: {SNAPSHOT_ID}."),
      paths=_paths(": every other file stays as it is"), dry_run=DRY_RUN)
def _restore(call: Call, args: Args) -> Json:
    snapshot = _id(args, "id")
    return _restoring(call, args, lambda workspace, **run: workspace.restore(
        snapshot, paths=_given_paths(workspace, args), **run))


@tool("revert", "Take back one change (FROM -> TO) and keep every later change, merging file by "
      "file as `git revert` does; with only `from`, an undo point, take back that one turn. "
      "Overlapping later edits are refused (nothing changed) unless `merge` writes conflict "
      "markers; the result lists `conflicts`.", kind=RESTORES,
      required=("from",),
      **{"from": _text(f"The state before the change: {SNAPSHOT_ID}, usually an undo point."),
         "to": _text(f"The state after the change: {SNAPSHOT_ID} (default: the session's next "
                     "undo point, or the files now)."),
         "merge": {"type": "boolean",
                   "description": "On conflicts, write git-style markers instead of refusing."},
         "paths": _paths(" of the change"),
         "dry_run": DRY_RUN})
def _revert(call: Call, args: Args) -> Json:
    from_id, to_id = _id(args, "from"), _id(args, "to")
    return _restoring(call, args, lambda workspace, **run: workspace.revert(
        from_id, to_id, merge=bool(args.get("merge")), paths=_given_paths(workspace, args),
        **run))


@tool("log", "List the session's undo points, newest first, and its redo stack.",
      session=SESSION)
def _log(call: Call, args: Args) -> Json:
    def read(workspace: Workspace) -> Json:
        log = workspace.log(history_session(workspace, _session(args), call.hear))
        return with_pending(log_json(workspace, log, []), workspace.pending_restore())

    return call.reading(read, lambda: empty_log(_session(args)))


@tool("status", "Count the session's undo points and redo entries, and say whether an "
      "interrupted restore is pending.", session=SESSION)
def _status(call: Call, args: Args) -> Json:
    from undostore import status_at

    options = call.options
    return status_at(options.root, options.named_store, _session(args),
                     force=options.force).to_json()


@tool("ops", "List the operations done on this project's files (snapshots, restores, undos, "
      "redos, ...), newest first, with the ids that lead back.",
      session=_text("Only this session's operations."),
      since=_text("Only operations newer than this, e.g. 30m, 2h, 1d."))
def _ops(call: Call, args: Args) -> Json:
    from undostore import since_cutoff

    since = args.get("since") or None
    since_cutoff(since)  # a bad duration fails before the store is opened
    return call.reading(lambda workspace: ops_json(workspace.ops(session=_session(args),
                                                                 since=since)),
                        lambda: ops_json([]))


@tool("sessions", "List the undo histories (sessions) of this project with their numbers of "
      "undo points and redo entries.")
def _sessions(call: Call, args: Args) -> Json:
    return call.reading(lambda workspace: with_pending(sessions_json(workspace.sessions()),
                                                       workspace.pending_restore()),
                        lambda: sessions_json([]))


@tool("show", "Show one turn of the session: its undo point (label, time) and what the turn "
      "changed (each file with its status and line counts). `n` 1 is the last turn.",
      n={"type": "integer", "minimum": 1,
         "description": "Which turn, counted from the newest (1, the default, is the last)."},
      id=_text(f"The undo point whose turn to show: {SNAPSHOT_ID} (instead of `n`)."),
      session=SESSION)
def _show(call: Call, args: Args) -> Json:
    if args.get("n") is not None and args.get("id"):
        raise ToolInputError("show takes `n` or `id`, not both")
    point_id = _id(args, "id")
    number = None if point_id else (args.get("n") or 1)

    def read(workspace: Workspace) -> Json:
        session = history_session(workspace, _session(args), call.hear)
        return show_json(workspace.store, workspace.show(number, point_id, session=session))

    return call.reading(read)


def call(options: Options, name: str, args: Args,
         on_progress: Callable[[Any], None] | None = None) -> types.CallToolResult:
    """Run tool `name`; every failure is a tool error, never an exception."""
    run = Call(options, on_progress)
    try:
        spec = TOOLS.get(name)
        if spec is None:
            return _error(f"unknown tool {name!r} (tools: {', '.join(sorted(TOOLS))})")
        args = dict(args or {})
        _check(spec, args)
        try:
            code, payload = 0, spec.run(run, args)
        except ToolInputError:
            raise
        except Exception as err:  # noqa: BLE001 (a library failure: its command's JSON)
            failed = failure_of(err)
            if failed is None:
                raise
            code, payload = failed.code, failed.doc
        if (code == 0 and spec.kind == RESTORES and payload.get("conflicts")
                and not payload.get("dry_run")):
            code = 3   # markers remain: not done until they are resolved (as the CLI)
            payload["error"] = {
                "type": "ConflictMarkers", "path": None,
                "message": f"done, with conflict markers left in "
                           f"{len(payload['conflicts'])} file(s) to resolve: "
                           f"{', '.join(payload['conflicts'])}"}
    except ToolInputError as err:
        return _error(str(err))
    except Exception as err:  # noqa: BLE001 (the server must keep running)
        return _error(f"{type(err).__name__}: {err}")
    if run.warnings:
        payload["warnings"] = [*run.warnings, *payload.get("warnings", [])]
    if code != 0:
        error = payload.get("error") if isinstance(payload.get("error"), dict) else {}
        message = error.get("message") or f"exit code {code}"
        where = f"{error['path']}: " if error.get("path") else ""
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"undostore: error: {where}{message}")],
            structured_content=payload, is_error=True)
    payload, text = limited(payload, name)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                structured_content=payload)


# --- results that would be too big for a client ---------------------------------------------------

RESULT_LIMIT = 1_000_000   # bytes of JSON text; the structured copy doubles what is sent
_NARROW = {"diff": "pass `paths` to see some files, a `format` only where needed, or run "
                   "`undostore diff` in a terminal",
           "log": "run `undostore log -n N` in a terminal",
           "ops": "pass `since` (e.g. 1h) or `session`, or run `undostore ops` in a terminal"}


def limited(payload: dict[str, Any], name: str) -> tuple[dict[str, Any], str]:
    """(payload, its JSON text), cut to a summary when the text would pass RESULT_LIMIT: each
    list keeps the items that fit (its full length in `<key>_total`), each long text its start,
    with `"truncated": true` and `narrow` saying how to ask for less."""
    text = json_text(payload)
    size = len(text.encode("utf-8"))
    if size <= RESULT_LIMIT:
        return payload, text
    summary: dict[str, Any] = {"truncated": True, "bytes": size,
                               "narrow": _NARROW.get(name, f"run `undostore {name}` in a "
                                                           "terminal for the whole result")}
    budget = RESULT_LIMIT // 2 // max(1, sum(isinstance(v, (list, str)) for v in
                                            payload.values()))
    for key, value in payload.items():
        if isinstance(value, list):
            summary[key] = _fit_list(value, budget)
            summary[f"{key}_total"] = len(value)
        elif isinstance(value, str) and len(value) > budget:
            summary[key] = value[:budget]
            summary[f"{key}_total_chars"] = len(value)
        else:
            summary[key] = value
    return summary, json_text(summary)


def _fit_list(items: list[Any], budget: int) -> list[Any]:
    kept, used = [], 0
    for item in items:
        used += len(json_text(item).encode("utf-8")) + 2
        if used > budget:
            break
        kept.append(item)
    return kept


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
              (type(value) is int and value >= schema.get("minimum", value))
              if kind == "integer" else
              isinstance(value, list) and all(isinstance(v, str) for v in value))
        if not ok or (kind == "string" and "enum" in schema and value not in schema["enum"]):
            raise ToolInputError(f"{spec.name}: bad value for {key!r}: {value!r}")


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)],
                                is_error=True)


# --- progress: the restore's callback, turned into MCP progress notifications -----------------

PROGRESS_EVERY = 0.5    # seconds between notifications while files are written
HEARTBEAT = 10.0        # seconds: a step that reports nothing (a big safety snapshot) still does
_STEPS = ("safety", "plan", "write", "sync")


class ProgressBridge:
    """MCP progress for one tool call whose client sent a progress token.

    The restore's `on_progress` (called in the worker thread, which may hold the store lock)
    never waits on the client: it only queues the notification (`QUEUED` at most; past that,
    the client is not keeping up and notifications are dropped) and returns. `pump`, a task on
    the server's event loop, sends them in order: `progress` out of `len(_STEPS)` steps, at
    most every PROGRESS_EVERY seconds within a step. A client that stops reading then stalls
    the pump alone, and the call still finishes and lets the store go. When nothing new comes
    for HEARTBEAT seconds, the pump repeats the last state a little further (a client may reset
    its request timeout on each), so a long snapshot or safety snapshot is heard of too. Values
    only ever increase, as MCP requires."""

    QUEUED = 64

    def __init__(self, send: Callable[[float, float | None, str], Any],
                 total: float | None) -> None:
        import threading

        self.send = send
        self.total = total
        self.last = -1.0        # nothing claimed yet
        self.message = "working"
        self.sent_at = 0.0
        self._lock = threading.Lock()
        self._out, self._in = anyio.create_memory_object_stream[tuple[float, str]](self.QUEUED)

    def _claim(self, value: float | None, message: str, force: bool) -> float | None:
        """The value to send now (None: nothing); `value` None: a heartbeat."""
        import time

        with self._lock:
            now = time.monotonic()
            if value is None:  # a heartbeat: a little further within the same step
                base = max(self.last, 0.0)
                value = round(min(base + 0.001, int(base) + 0.999), 4)
                message = self.message
            if value <= self.last or (not force and now - self.sent_at < PROGRESS_EVERY):
                return None
            self.last, self.message, self.sent_at = value, message, now
            return value

    def __call__(self, progress: Any) -> None:
        from ..progress import describe

        step = _STEPS.index(progress.step) if progress.step in _STEPS else 0
        share = (progress.files_done / progress.files_total) if progress.files_total else 0.0
        value = round(step + min(share, 1.0) * 0.99, 4)
        claimed = self._claim(value, describe(progress).removeprefix("undostore: "),
                              force=step > int(self.last))
        if claimed is None:
            return
        try:   # hands it to the event loop, which does not wait on the client either
            anyio.from_thread.run_sync(self._queue, (claimed, self.message))
        except Exception:  # noqa: BLE001 (a client gone away must not stop the restore)
            pass

    def _queue(self, item: tuple[float, str]) -> None:
        try:
            self._out.send_nowait(item)
        except anyio.WouldBlock:
            pass   # the client is not reading: a later notification says more anyway

    async def pump(self, heartbeat: float) -> None:
        """Send what `__call__` queued, in order; a heartbeat when nothing came for a while."""
        while True:
            item = None
            with anyio.move_on_after(heartbeat):
                item = await self._in.receive()
            if item is None:
                claimed = self._claim(None, "", force=True)
                if claimed is None:
                    continue
                item = (claimed, self.message)
            await self.send(item[0], self.total, item[1])


# --- the server -------------------------------------------------------------------------------


def build_server(options: Options, heartbeat: float = HEARTBEAT) -> Server:
    from undostore import __version__

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=t.name, description=t.description, input_schema=t.schema(),
                       annotations=t.annotations())
            for t in TOOLS.values()])

    one_at_a_time = anyio.Lock()

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        bridge = _bridge(ctx, params.name)
        async with one_at_a_time:
            # abandon_on_cancel=False (the default): a cancelled request waits for the thread,
            # so the lock is held until the library call has returned.
            if bridge is None:
                result = await anyio.to_thread.run_sync(call, options, params.name,
                                                        params.arguments or {}, None)
            else:
                async with anyio.create_task_group() as group:
                    group.start_soon(bridge.pump, heartbeat)
                    listener = bridge if TOOLS[params.name].kind == RESTORES else None
                    result = await anyio.to_thread.run_sync(call, options, params.name,
                                                            params.arguments or {}, listener)
                    group.cancel_scope.cancel()
        if process_cancel().is_set():
            # SIGINT or SIGTERM during the call (signals.py): a restore it stopped rolled back
            # first; now the server stops, as it does on a signal between calls.
            raise KeyboardInterrupt
        return result

    return Server("undostore", version=__version__,
                  instructions="Undo and redo for the files of this project: snapshot before "
                               "a change, diff to see it, undo to take it back.",
                  on_list_tools=list_tools, on_call_tool=call_tool)


def _bridge(ctx: Any, name: str) -> ProgressBridge | None:
    """The progress bridge of a call whose client sent a progress token (None: no token)."""
    meta = getattr(ctx, "meta", None) or {}
    token = meta.get("progress_token", meta.get("progressToken")) if isinstance(meta, dict) \
        else None
    if token is None or name not in TOOLS:
        return None

    async def send(value: float, total: float | None, message: str) -> None:
        await ctx.session.send_progress_notification(
            token, value, total=total, message=message,
            related_request_id=getattr(ctx, "request_id", None))

    return ProgressBridge(send, float(len(_STEPS)) if TOOLS[name].kind == RESTORES else None)


def serve(options: Options) -> None:
    """Serve on stdin/stdout until the client closes stdin."""
    server = build_server(options)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            relay = Relay(read_stream, write_stream)   # replies owed outlive stdin's end
            async with anyio.create_task_group() as group:
                group.start_soon(relay.run)
                await server.run(relay.read, relay.write,
                                 server.create_initialization_options())

    anyio.run(run)
