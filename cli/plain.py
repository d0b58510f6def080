"""What the command line's entry points share without importing click: the global options as
parsed, and the lines every entry says the same way (`hook` runs with none of click)."""

from __future__ import annotations

import sys
from typing import Any, NamedTuple


class Options(NamedTuple):
    """The global options: `--root`, `--store` (None: `UNDOSTORE_STORE`, else the default) and
    `--force`."""

    root: str | None = None
    store: str | None = None
    force: bool = False


def adoption_line(adopted: Any) -> str:
    """The one stderr line for a moved project: the store taken along, or the candidates."""
    rebound = adopted.rebound
    if rebound is not None:
        return (f"undostore: this project moved here: took its store along from "
                f"{rebound.moved_from or rebound.store} (its history keeps every session)")
    listing = "; ".join(adopted.candidates)
    return (f"undostore: several stores of moved projects match the files here ({listing}); "
            "none was taken: `undostore --store PATH rebind` takes one along")


def stdin_is_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False
