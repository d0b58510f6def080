"""Which way a history step goes: undo takes turns back, redo applies them again."""

from __future__ import annotations

from enum import Enum


class Direction(str, Enum):
    """An undo or a redo: the one place the two words are spelled."""

    UNDO = "undo"
    REDO = "redo"

    @property
    def back(self) -> Direction:
        """The step that takes this one back."""
        return Direction.REDO if self is Direction.UNDO else Direction.UNDO
