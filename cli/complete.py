"""Shell completion (click's): session names and snapshot ids from the store of the root found
from the current folder (or --root/--store on the line). Never creates a store; any failure
completes nothing rather than printing into the user's shell."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

    from undostore.store.store import Store


def _store(ctx: click.Context) -> Store | None:
    from undostore import open_existing

    params = ctx.find_root().params
    return open_existing(params.get("root"), params.get("store"), force=bool(params.get("force")))


def _from_store(ctx: click.Context, items: Callable[[Store], list[CompletionItem]]
                ) -> list[CompletionItem]:
    """`items(store)` for the store of this command line, opened for the call; nothing when
    there is no store or anything fails."""
    try:
        store = _store(ctx)
        if store is None:
            return []
        with store:
            return items(store)
    except Exception:  # noqa: BLE001 (completion must never break the shell)
        return []


def complete_sessions(ctx: click.Context, param: click.Parameter, incomplete: str
                      ) -> list[CompletionItem]:
    def sessions(store: Store) -> list[CompletionItem]:
        from click.shell_completion import CompletionItem  # only when completing

        from undostore import session_names

        return [CompletionItem(n) for n in session_names(store) if n.startswith(incomplete)]

    return _from_store(ctx, sessions)


def complete_ids(ctx: click.Context, param: click.Parameter, incomplete: str
                 ) -> list[CompletionItem]:
    def ids(store: Store) -> list[CompletionItem]:
        from click.shell_completion import CompletionItem

        from undostore import known_points

        seen: set[str] = set()
        items = []
        for session, kind, point in known_points(store):
            if point.id in seen or not point.id.startswith(incomplete.lower()):
                continue
            seen.add(point.id)
            about = f"{session} {kind}" + (f": {point.label}" if point.label else "")
            items.append(CompletionItem(point.id[:max(12, len(incomplete))], help=about))
        return items

    return _from_store(ctx, ids)
