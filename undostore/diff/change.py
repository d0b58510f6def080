"""One changed path between two snapshots, with its line counts read on first use."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from undostore.diff.content import line_counts

if TYPE_CHECKING:
    from undostore.store.store import Store


@dataclass(eq=False)
class Change:
    """One changed path. `status`: A added, D deleted, M modified (content or mode), T type
    changed (file <-> symlink), R<score> renamed (with `find_renames`; score 0-100)."""

    status: str
    path: str
    old_path: str | None = None
    old_mode: int | None = None
    new_mode: int | None = None
    old_id: str | None = None
    new_id: str | None = None
    source: Store | None = field(default=None, init=False, repr=False)
    counts_cache: tuple[int | None, int | None] | None = field(default=None, init=False, repr=False)

    @property
    def added(self) -> int | None:
        """Lines added; None for a binary file."""
        return self.line_counts()[0]

    @property
    def removed(self) -> int | None:
        """Lines removed; None for a binary file."""
        return self.line_counts()[1]

    @property
    def binary(self) -> bool:
        return self.line_counts()[0] is None

    def line_counts(self) -> tuple[int | None, int | None]:
        if self.counts_cache is None:
            if self.source is None:
                raise ValueError("line counts need the store this change was read from")
            self.counts_cache = line_counts(self.source, self.old_id, self.new_id)
        return self.counts_cache

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (`added`/`removed` null for binary files)."""
        return {"status": self.status, "path": self.path, "old_path": self.old_path,
                "added": self.added, "removed": self.removed,
                "old_mode": _mode_text(self.old_mode), "new_mode": _mode_text(self.new_mode),
                "old_id": self.old_id, "new_id": self.new_id}


def _mode_text(mode: int | None) -> str | None:
    return None if mode is None else f"{mode:06o}"
