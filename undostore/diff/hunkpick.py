"""The hunks of one file's change that a person picks (`undo -p`, `redo -p`, `restore -p`,
`revert -p`): git's hunks of it (linediff.py: the same edits and grouping as `git diff`), a
hunk split where git's `s` splits it (at the unchanged lines between its changes), a hunk as the
person edited it (`e`), and the file that taking the picked hunks gives.

Taking hunks is always done forward, on the change's old side: `taking(change, picked)` is the
old file with the picked hunks applied. Taking hunks back (an undo) is the same on the change
turned around (`Lines.flipped`, `PickHunk.flipped`): the new file with them reverted. Hunks of
one change never share a changed line, so any set of them can be taken in any order: the file
with all of them is the new file, with none the old one.
"""

from __future__ import annotations

from typing import NamedTuple

from undostore.diff.linediff import Edit, diff_lines, function_line, hunks, split_lines

CONTEXT = 3
_NO_NEWLINE = b"\\ No newline at end of file\n"


class Lines(NamedTuple):
    """A text file's change: its old and new lines (linediff.split_lines) and git's edits."""

    old: tuple[bytes, ...]
    new: tuple[bytes, ...]
    edits: tuple[Edit, ...]

    @classmethod
    def of(cls, old: bytes, new: bytes) -> Lines:
        one, two = split_lines(old), split_lines(new)
        return cls(tuple(one), tuple(two), tuple(diff_lines(one, two)) if old != new else ())

    def flipped(self) -> Lines:
        """The same change turned around (new to old)."""
        return Lines(self.new, self.old, tuple(Edit(e.i2, e.i1, e.n2, e.n1) for e in self.edits))


class PickHunk(NamedTuple):
    """Old lines [s1, e1) and new lines [s2, e2) shown together (context included) and the
    edits inside; `edited`: the hunk as the person edited it (its old side, its new side),
    which then stands for these lines instead of the edits."""

    s1: int
    e1: int
    s2: int
    e2: int
    edits: tuple[Edit, ...]
    edited: tuple[tuple[bytes, ...], tuple[bytes, ...]] | None = None

    def flipped(self) -> PickHunk:
        return PickHunk(self.s2, self.e2, self.s1, self.e1,
                        tuple(Edit(e.i2, e.i1, e.n2, e.n1) for e in self.edits),
                        (self.edited[1], self.edited[0]) if self.edited else None)

    @property
    def splittable(self) -> bool:
        """Whether `s` splits it: it holds changes with unchanged lines between them."""
        return self.edited is None and len(self.edits) > 1


class EditFailed(ValueError):
    """An edited hunk that does not apply to the file (its context or removed lines are not
    the file's there): git asks to edit it again."""


def file_hunks(change: Lines) -> list[PickHunk]:
    """git's hunks of the change (3 lines of context, changes 6 or fewer lines apart together)."""
    return [PickHunk(h.s1, h.e1, h.s2, h.e2, h.edits)
            for h in hunks(list(change.edits), len(change.old), len(change.new), CONTEXT)]


def split(change: Lines, hunk: PickHunk) -> list[PickHunk]:
    """The hunk as git's `s` splits it: one hunk per change, each with the unchanged lines
    around it (up to 3, never beyond the hunk's own)."""
    if not hunk.splittable:
        return [hunk]
    out = []
    for at, edit in enumerate(hunk.edits):
        low = hunk.edits[at - 1] if at else None
        high = hunk.edits[at + 1] if at + 1 < len(hunk.edits) else None
        before = min(CONTEXT, edit.i1 - (low.i1 + low.n1 if low else hunk.s1))
        after = min(CONTEXT, (high.i1 if high else hunk.e1) - (edit.i1 + edit.n1))
        out.append(PickHunk(edit.i1 - before, edit.i1 + edit.n1 + after,
                            edit.i2 - before, edit.i2 + edit.n2 + after, (edit,)))
    return out


def records(change: Lines, hunk: PickHunk) -> list[tuple[bytes, bytes]]:
    """The hunk's lines in the order git prints them: (b" ", line), (b"-", line), (b"+", line)."""
    if hunk.edited is not None:
        return _records_of_sides(*hunk.edited)
    out: list[tuple[bytes, bytes]] = []
    i2 = hunk.s2
    for edit in hunk.edits:
        out += [(b" ", change.new[k]) for k in range(i2, edit.i2)]
        out += [(b"-", change.old[k]) for k in range(edit.i1, edit.i1 + edit.n1)]
        out += [(b"+", change.new[k]) for k in range(edit.i2, edit.i2 + edit.n2)]
        i2 = edit.i2 + edit.n2
    out += [(b" ", change.new[k]) for k in range(i2, hunk.e2)]
    return out


def text(change: Lines, hunk: PickHunk) -> bytes:
    """The hunk as `git diff` prints it: its `@@` header (with git's function context) and
    its lines."""
    old_n, new_n = hunk.e1 - hunk.s1, hunk.e2 - hunk.s2
    if hunk.edited is not None:
        old_n, new_n = len(hunk.edited[0]), len(hunk.edited[1])
    head = b"@@ -" + _range(hunk.s1, old_n) + b" +" + _range(hunk.s2, new_n) + b" @@"
    func = next((found for at in range(hunk.s1 - 1, -1, -1)
                 if (found := function_line(change.old[at])) is not None), None)
    if func:   # git's hunk-header context: the nearest line above that starts a function
        head += b" " + func[:max(128 - len(head) - 2, 0)]
    out = [head + b"\n"]
    for sign, line in records(change, hunk):
        out.append(sign + line if line.endswith(b"\n") else sign + line + b"\n" + _NO_NEWLINE)
    return b"".join(out)


def parse_edited(change: Lines, hunk: PickHunk, edited: bytes, *, reverse: bool = False
                 ) -> PickHunk:
    """The hunk as the person left it in the editor (`e`): lines starting with `#` and the `@@`
    header dropped, ` `
    lines on both sides, `-` on the old, `+` on the new; a `\\ No newline` line ends the line
    before it without its newline. EditFailed when the side it applies to is not the file's
    lines there (the old side; `reverse`, for hunks taken back: the new side), or when it holds
    a line of another kind."""
    old: list[bytes] = []
    new: list[bytes] = []
    last: list[list[bytes]] = []
    for raw in edited.splitlines(keepends=True):
        if raw.startswith(b"#") or raw.startswith(b"@@"):   # a comment; the header, recounted
            continue
        if raw.startswith(b"\\"):
            for side in last:
                if side and side[-1].endswith(b"\n"):
                    side[-1] = side[-1][:-1]
            continue
        sign, line = raw[:1], raw[1:]
        if not raw.strip(b"\r\n") and not sign.strip():
            sign, line = b" ", raw   # an empty line stands for an empty context line
        if not line.endswith(b"\n"):
            line += b"\n"
        if sign == b" ":
            old.append(line)
            new.append(line)
            last = [old, new]
        elif sign == b"-":
            old.append(line)
            last = [old]
        elif sign == b"+":
            new.append(line)
            last = [new]
        else:
            raise EditFailed(f"a line starting with {sign!r}: each line of a hunk starts with "
                             "' ', '-' or '+'")
    kept = b"-" if reverse else b"+"
    shown = [line for sign, line in records(change, hunk) if sign != kept]
    if (new if reverse else old) != shown:
        raise EditFailed("its context and removed lines are not the file's any more")
    return hunk._replace(edited=(tuple(old), tuple(new)))


def taking(change: Lines, picked: list[PickHunk]) -> bytes:
    """The old file with the `picked` hunks of `change` applied (each as edited, where it was).
    EditFailed when two picked hunks change the same line (an edit reached into another)."""
    cuts: list[tuple[int, int, tuple[bytes, ...]]] = []
    for hunk in picked:
        if hunk.edited is None:
            cuts += [(e.i1, e.i1 + e.n1, change.new[e.i2:e.i2 + e.n2]) for e in hunk.edits]
            continue
        old, new = hunk.edited
        head = 0
        while head < min(len(old), len(new)) and old[head] == new[head]:
            head += 1
        tail = 0
        while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
            tail += 1
        if head + tail < len(old) or head + tail < len(new):
            cuts.append((hunk.s1 + head, hunk.s1 + len(old) - tail,
                         new[head:len(new) - tail]))
    cuts.sort(key=lambda cut: (cut[0], cut[1]))
    out: list[bytes] = []
    at = 0
    for start, end, lines in cuts:
        if start < at:
            raise EditFailed("two picked hunks change the same lines")
        out += change.old[at:start]
        out += lines
        at = end
    out += change.old[at:]
    return _joined(out)


def _range(start: int, count: int) -> bytes:
    """A hunk header's side as git writes it: the first line (1-based; the line before, for
    none) and the count, left out when 1."""
    return b"%d" % (start + 1 if count else start) + (b",%d" % count if count != 1 else b"")


def _joined(lines: list[bytes]) -> bytes:
    """The file of `lines`; a line without its newline that is not the last gets one (an edited
    hunk that ended a line early)."""
    fixed = [line if line.endswith(b"\n") or at == len(lines) - 1 else line + b"\n"
             for at, line in enumerate(lines)]
    return b"".join(fixed)


def _records_of_sides(old: tuple[bytes, ...], new: tuple[bytes, ...]
                      ) -> list[tuple[bytes, bytes]]:
    out: list[tuple[bytes, bytes]] = []
    edits = diff_lines(list(old), list(new))
    i1 = 0
    for edit in edits:
        out += [(b" ", line) for line in old[i1:edit.i1]]
        out += [(b"-", line) for line in old[edit.i1:edit.i1 + edit.n1]]
        out += [(b"+", line) for line in new[edit.i2:edit.i2 + edit.n2]]
        i1 = edit.i1 + edit.n1
    out += [(b" ", line) for line in old[i1:]]
    return out
