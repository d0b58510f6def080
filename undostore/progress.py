"""How far a snapshot or a restore is, as one record handed to the caller's `on_progress`.

Steps: a snapshot reports "hash" (files hashed so far of the files found so far); a restore
reports "safety" (its safety snapshot), "plan" (reading trees, checking blobs), "write" (files
and bytes written of the totals) and "sync" (making them durable). The library never prints:
a caller shows the record, or does nothing with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple


class Progress(NamedTuple):
    step: str             # "hash" (a snapshot); "safety", "plan", "write", "sync" (a restore)
    files_done: int = 0
    files_total: int = 0
    bytes_done: int = 0
    bytes_total: int = 0


OnProgress = Callable[[Progress], None]


def no_progress(progress: Progress) -> None:
    """The `on_progress` of a caller that shows nothing."""
