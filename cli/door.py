"""The one door from a front end to the library: the command line, the hook and the MCP server
open their workspace here, so each gets the same things done the same way (the process's cancel
request, a restore a crash left half-done finished first, a moved project's store taken along,
a store outside the user's profile named), and each says what happened in its own way: `say`
gets one `Said` per event (the CLI and the hook print its line on stderr, the MCP server puts a
recovery in the result's `warnings`; nobody reads a stream back to learn what happened).

Click-free: the hook imports it on every prompt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from .plain import Options, adoption_line
from .signals import fork_alone, process_cancel

if TYPE_CHECKING:
    from undostore import Workspace
    from undostore.history.retention import Eviction


class Said(NamedTuple):
    """One thing a front end is told: its kind and its line for people ("undostore: ...").

    Kinds: `recovery` (a restore a crash left half-done is being finished), `adoption` (a moved
    project's store taken along, or the candidates), `trust` (a store Windows cannot vouch
    for), `eviction` (retention dropped an undo point), `discovery` (how the root was found),
    `orphan` (a store whose root is gone), `session` (the session chosen for a history
    command)."""

    kind: str
    line: str


Say = Callable[[Said], None]

# What a front end that keeps stderr for failures (the hook, the MCP server) is still told.
ALWAYS = ("recovery", "adoption", "trust")


def open_workspace(options: Options, say: Say, *, cwd: str | None = None,
                   create: bool = True, chatty: bool = True, may_fork: bool = True
                   ) -> Workspace:
    """The workspace `options` name (the root: `--root`, else found from `cwd`, else from the
    process's folder), wired for this process. `create` False: a folder no store protects is
    NoStoreError (read-only commands make nothing). Not `chatty` (the hook, the MCP server): only
    the kinds in ALWAYS are said. `may_fork`: a big tree's walk may lstat in a second process
    (a command or a hook call; not the MCP server, whose threads a fork would not copy)."""
    from undostore import Workspace

    workspace = Workspace(root_for(options, cwd), options.store, force=options.force,
                          create=create)
    # SIGINT and SIGTERM (a person's Ctrl-C, a host or client giving up) roll a restore back at
    # its next file operation (signals.py; the entry installs the handlers).
    workspace.cancel = process_cancel()
    if may_fork:
        workspace.fork = fork_alone
    # A restore a crash left half-done is finished by whatever comes next: never silently.
    workspace.on_recovery = lambda pending: say(
        Said("recovery", f"undostore: {pending.finishing_notice()}"))
    if chatty:
        workspace.on_evict = lambda eviction: say(Said("eviction", _eviction_line(eviction)))
    if workspace.store.trust_note:
        say(Said("trust", f"undostore: note: {workspace.store.trust_note}"))
    if workspace.adopted is not None:
        say(Said("adoption", adoption_line(workspace.adopted)))   # once: the store is here now
        return workspace
    if chatty:
        if workspace.discovery.worth_saying:
            say(Said("discovery", workspace.discovery.describe()))
        if not workspace.discovery.existed:
            for line in _orphan_lines(workspace.store.path):
                say(Said("orphan", line))
    return workspace


def root_for(options: Options, cwd: str | None) -> str | None:
    """The root `options` name (`--root`), else the one found from `cwd` (a host's folder),
    else None: the library finds it from the process's folder. The one way every front end
    (the commands, the hook, the footer's status, the MCP server) finds it."""
    if options.root is not None or cwd is None:
        return options.root
    from undostore import discover

    return discover(cwd, options.named_store, force=options.force).root


def history_session(workspace: Workspace, session: str | None, say: Say,
                    doing: str = "") -> str:
    """The session a history command acts on; said when it was chosen as the one with the
    newest undo point (no session named, no $UNDOSTORE_SESSION). A named session that does not
    exist is a usage error listing the sessions (`doing` starts its message)."""
    if session is not None:
        workspace.require_session(session, doing)
    name, chosen = workspace.history_session(session)
    if chosen:
        say(Said("session", f"undostore: session {name!r} (the one last acted on)"))
    return name


def _eviction_line(eviction: Eviction) -> str:
    why = ("older than UNDOSTORE_KEEP_DAYS" if eviction.reason == "keep_days"
           else "to keep the store under UNDOSTORE_MAX_STORE_MB")
    return (f"undostore: dropped undo point {eviction.id[:12]} of session {eviction.session!r} "
            f"({why})")


def _orphan_lines(new_store: str) -> list[str]:
    """A new store was just made: the stores whose root is gone (a moved project's)."""
    from undostore import orphans, recorded_root

    return [f"undostore: note: store {path} protects {recorded_root(path)}, which no longer "
            "exists; if this project moved from there, `undostore rebind` here takes its "
            "history along"
            for path in orphans() if path != new_store]
