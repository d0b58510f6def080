"""One file's change as a person picks from it (`undo -p`, `redo -p`, `restore -p`,
`revert -p`): its questions, as `git add -p` asks them, and the file that the answers give.

A text file both sides of which are regular files is asked about hunk by hunk (hunkpick.py),
its mode change (if any) first; any other change (a file added or deleted, a binary, a
symlink, a file that became a symlink) is one question about the whole file, as git asks
"Stage addition", "Stage deletion". `result` gives the file after the picks, taking them
forward (the file's start with the picked hunks applied) or back (its end with them reverted).
"""

from __future__ import annotations

from typing import NamedTuple

from undostore.diff.content import Blobs, is_binary, read_side
from undostore.diff.hunkpick import Lines, PickHunk, file_hunks, taking
from undostore.git.objects import BLOB, MODE_EXEC, MODE_FILE, hash_object

_REGULAR = (MODE_FILE, MODE_EXEC)


class Side(NamedTuple):
    """A file as one side of a change has it: its git mode and blob id (hex)."""

    mode: int
    sha: str

    @classmethod
    def of(cls, entry: tuple[int, bytes] | None) -> Side | None:
        """The side a tree's entry (mode, raw id) is; None for no file."""
        return cls(entry[0], entry[1].hex()) if entry is not None else None


class Picked(NamedTuple):
    """The answers about one file: the hunks picked (each as edited, where it was), whether
    the mode change was picked, or `whole`: the whole change (a file asked about whole)."""

    hunks: tuple[PickHunk, ...] = ()
    mode: bool = False
    whole: bool = False

    @property
    def anything(self) -> bool:
        return bool(self.hunks) or self.mode or self.whole


class FilePick(NamedTuple):
    """What a person picked of a `FileChange`: the file the picks give at `path` (`mode` None:
    no file; else its mode and `data`), and the change's `start` and `end`, by which a step
    makes sure the files are still as the person saw them. `turn`, `pair`: the turn and the
    pair of trees of its change the file's change is of (an undo's or redo's; "" otherwise)."""

    path: str
    start: Side | None
    end: Side | None
    mode: int | None
    data: bytes = b""
    turn: str = ""
    pair: int = 0

    def entry(self, blobs: dict[bytes, bytes]) -> tuple[int, bytes] | None:
        """The tree entry (mode, raw blob id) of the file the picks give (None: no file), its
        content added to `blobs` (id -> content) for the tree's writer."""
        if self.mode is None:
            return None
        sha = hash_object(BLOB, self.data)
        blobs[sha] = self.data
        return self.mode, sha


class FileChange(NamedTuple):
    """A file's change from `start` to `end` (None: no file) as a person is asked about it:
    `lines` and `hunks` for a text file (None, []: asked about whole), `mode_changed`."""

    path: str
    start: Side | None
    end: Side | None
    lines: Lines | None
    hunks: list[PickHunk]

    @classmethod
    def read(cls, blobs: Blobs, path: str, start: Side | None, end: Side | None) -> FileChange:
        if start is None or end is None or start.mode not in _REGULAR or end.mode not in _REGULAR:
            return cls(path, start, end, None, [])
        old, new = read_side(blobs, start.sha), read_side(blobs, end.sha)
        assert old is not None and new is not None
        if is_binary(old) or is_binary(new):
            return cls(path, start, end, None, [])
        assert isinstance(old, bytes) and isinstance(new, bytes)
        lines = Lines.of(old, new)
        return cls(path, start, end, lines, file_hunks(lines))

    @property
    def mode_changed(self) -> bool:
        return (self.lines is not None and self.start is not None and self.end is not None
                and self.start.mode != self.end.mode)

    @property
    def kind(self) -> str:
        """What the whole-file question is about: `addition`, `deletion`, `change`; `hunks`
        for a text file."""
        if self.lines is not None:
            return "hunks"
        return "addition" if self.start is None else "deletion" if self.end is None else "change"

    def pick(self, blobs: Blobs, picked: Picked, *, back: bool, turn: str = "", pair: int = 0
             ) -> FilePick:
        """What the answers `picked` take of this change (`back`: taken back from its end, as
        an undo or a revert does; else applied to its start)."""
        mode, data = self.result(blobs, picked, back=back)
        return FilePick(self.path, self.start, self.end, mode, data, turn, pair)

    def result(self, blobs: Blobs, picked: Picked, *, back: bool) -> tuple[int | None, bytes]:
        """The file once the picks are taken (`back`: taken back from its end, else applied to
        its start): its mode (None: no file) and its content."""
        if self.lines is None or picked.whole:
            chosen = (self.start if back else self.end) if picked.whole else (
                self.end if back else self.start)
            if chosen is None:
                return None, b""
            return chosen.mode, blobs.read_blob(bytes.fromhex(chosen.sha))
        assert self.start is not None and self.end is not None
        if back:
            data = taking(self.lines.flipped(), [h.flipped() for h in picked.hunks])
            mode = self.start.mode if picked.mode else self.end.mode
        else:
            data = taking(self.lines, list(picked.hunks))
            mode = self.end.mode if picked.mode else self.start.mode
        return mode, data
