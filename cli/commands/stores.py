"""`undostore stores` (every store under $UNDOSTORE_HOME) and `undostore rebind` (a moved project
takes its store along)."""

from __future__ import annotations

import os
import time

import click

from ..common import Context, emit, json_option, note, pass_context


@click.command("stores")
@json_option
@pass_context
def stores_command(ctx: Context, as_json: bool) -> None:
    """Every store under $UNDOSTORE_HOME: the root it protects (and whether that folder still
    exists), its size, its sessions and when it was last used. A store whose root is gone is
    what a moved project left behind: `undostore rebind`, run in the new place, takes it along.
    """
    from undostore import list_stores

    found = list_stores()

    def line(info) -> str:  # noqa: ANN001 (a StoreInfo)
        when = (time.strftime("%Y-%m-%d %H:%M", time.localtime(info.last_used))
                if info.last_used else "never")
        gone = "" if info.root_exists else "  (root gone: `undostore rebind` in its new place)"
        return (f"{info.path}  {info.root or '?'}  {info.bytes / 1e6:.1f} MB  "
                f"{len(info.sessions)} sessions  last used {when}{gone}")

    emit(as_json, {"stores": [info.to_json() for info in found]},
         lambda: "\n".join(line(info) for info in found) or "no stores")


@click.command("rebind")
@json_option
@pass_context
def rebind_command(ctx: Context, as_json: bool) -> None:
    """Take a moved project's history along: run it in the project's new place.

    Finds the store whose root no longer exists (or the one --store names), moves it to where
    plain commands, hooks and the MCP server look for this folder's store, and re-points it
    here. A store made here after the move is set aside (listed by `stores`), never deleted.
    """
    from undostore import discover, rebind

    root = ctx.root or discover(store=None, force=ctx.force).root
    explicit = ctx.store or os.environ.get("UNDOSTORE_STORE") or None
    done = rebind(root, explicit)
    if done.set_aside and not as_json:
        note(f"undostore: the store made here after the move was set aside: {done.set_aside}")
    moved = f" (moved from {done.moved_from})" if done.moved_from else ""
    emit(as_json, done.to_json(), f"store {done.store} now protects {done.root}{moved}")


COMMANDS = [stores_command, rebind_command]
