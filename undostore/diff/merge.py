"""Three-way merge of file contents, as git merges them (bytes in, bytes out; no I/O).

`merge_text(base, ours, theirs)` follows git's xdiff merge (`git merge-file`, the content merge
of `git revert`), because git's results are what users compare with:

1. diff base->ours and base->theirs with the project's Myers line diff (no indent heuristic:
   git's merges run without it);
2. walk both edit lists: an edit that ends before the other side's next one starts is taken
   alone; edits that overlap or touch (end == start) become one conflict, and so do two
   different edits at the same place; the same edit on both sides is taken once;
3. refine each conflict by diffing ours against theirs inside it, so lines both sides agree on
   are left out of the markers; then join conflicts at most 3 lines apart (or apart only by
   lines without a letter or digit);
4. write ours with the taken edits, and for each conflict git's markers: `<<<<<<< ours-label`,
   ours' lines, `=======`, theirs' lines, `>>>>>>> theirs-label` (a side's last line without a
   newline gets one; markers end in CRLF where the surrounding lines do).

`merge_value` is the 3-way merge of a whole value (a mode, a symlink target, a binary file).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from undostore.diff.linediff import Edit, diff_lines, split_lines

MARKER_SIZE = 7
_OPENS, _CLOSES = b"<" * MARKER_SIZE + b" ", b">" * MARKER_SIZE + b" "
BINARY_PROBE = 8000    # git's buffer_is_binary: a NUL in the first 8000 bytes
CONFLICT, OURS, THEIRS, SAME = 0, 1, 2, 4
T = TypeVar("T")


@dataclass
class TextMerge:
    """The merged bytes (with markers where `conflicts` > 0) and the number of conflict hunks."""

    data: bytes
    conflicts: int

    @property
    def clean(self) -> bool:
        return self.conflicts == 0


def is_binary(data: bytes) -> bool:
    """True where git would not merge line by line: a NUL byte in the first 8000 bytes."""
    return b"\0" in data[:BINARY_PROBE]


def has_markers(data: bytes) -> bool:
    """Whether `data` holds git-style conflict markers (a `<<<<<<< ` line and a `>>>>>>> `
    line): what an earlier `--merge` left unresolved."""
    return _has_line(data, _OPENS) and _has_line(data, _CLOSES)


def _has_line(data: bytes, start: bytes) -> bool:
    return data.startswith(start) or b"\n" + start in data


def merge_value(base: T | None, ours: T | None, theirs: T | None) -> tuple[T | None, bool]:
    """3-way merge of one whole value (None: absent): (result, conflict). On a conflict the
    result is ours, as git leaves a conflicting binary file or symlink."""
    if ours == theirs or theirs == base:
        return ours, False
    if ours == base:
        return theirs, False
    return ours, True


class _Hunk:
    """A merge region: base [i0, i0+chg0), ours [i1, i1+chg1), theirs [i2, i2+chg2)."""

    __slots__ = ("mode", "i0", "chg0", "i1", "chg1", "i2", "chg2")

    def __init__(self, mode: int, i0: int, chg0: int, i1: int, chg1: int, i2: int,
                 chg2: int) -> None:
        self.mode, self.i0, self.chg0 = mode, i0, chg0
        self.i1, self.chg1, self.i2, self.chg2 = i1, chg1, i2, chg2


def merge_text(base: bytes, ours: bytes, theirs: bytes, ours_label: str | None = "ours",
               theirs_label: str | None = "theirs", *, marker_size: int = MARKER_SIZE,
               alnum: bool = True) -> TextMerge:
    """Merge the change base->theirs into ours, line by line, as `git merge-file -p -L
    ours_label -L base -L theirs_label ours base theirs` does. `alnum=False` joins conflicts
    as `git revert`/`git merge` do (only by distance, not by letter-free lines between)."""
    lines0, lines1, lines2 = split_lines(base), split_lines(ours), split_lines(theirs)
    script1 = diff_lines(lines0, lines1, indent_heuristic=False)
    script2 = diff_lines(lines0, lines2, indent_heuristic=False)
    if not script1:
        return TextMerge(theirs, 0)
    if not script2:
        return TextMerge(ours, 0)
    hunks = _merge_scripts(script1, script2, lines1, lines2, len(lines0))
    _refine_conflicts(hunks, lines1, lines2)
    hunks = _simplify(hunks, lines1, alnum)
    out = _render(hunks, lines0, lines1, lines2, ours_label, theirs_label, marker_size)
    return TextMerge(b"".join(out), sum(1 for h in hunks if h.mode == CONFLICT))


def _append(hunks: list[_Hunk], mode: int, i0: int, chg0: int, i1: int, chg1: int, i2: int,
            chg2: int) -> None:
    """Add a region, joined with the previous one where they overlap or touch."""
    if hunks:
        m = hunks[-1]
        if i1 <= m.i1 + m.chg1 or i2 <= m.i2 + m.chg2:
            if mode != m.mode:
                m.mode = CONFLICT
            m.chg0 = i0 + chg0 - m.i0
            m.chg1 = i1 + chg1 - m.i1
            m.chg2 = i2 + chg2 - m.i2
            return
    hunks.append(_Hunk(mode, i0, chg0, i1, chg1, i2, chg2))


def _merge_scripts(script1: list[Edit], script2: list[Edit], lines1: list[bytes],
                   lines2: list[bytes], n0: int) -> list[_Hunk]:
    """Walk the two edit lists over the base in step (xdl_do_merge)."""
    hunks: list[_Hunk] = []
    k1 = k2 = 0
    while k1 < len(script1) and k2 < len(script2):
        x1, x2 = script1[k1], script2[k2]
        if x1.i1 + x1.n1 < x2.i1:
            _append(hunks, OURS, x1.i1, x1.n1, x1.i2, x1.n2, x2.i2 - x2.i1 + x1.i1, x1.n1)
            k1 += 1
            continue
        if x2.i1 + x2.n1 < x1.i1:
            _append(hunks, THEIRS, x2.i1, x2.n1, x1.i2 - x1.i1 + x2.i1, x2.n1, x2.i2, x2.n2)
            k2 += 1
            continue
        if (x1.i1 != x2.i1 or x1.n1 != x2.n1 or x1.n2 != x2.n2
                or lines1[x1.i2:x1.i2 + x1.n2] != lines2[x2.i2:x2.i2 + x2.n2]):
            off = x1.i1 - x2.i1
            ffo = off + x1.n1 - x2.n1
            i0, i1, i2 = x1.i1, x1.i2, x2.i2
            if off > 0:
                i0 -= off
                i1 -= off
            else:
                i2 += off
            chg0 = x1.i1 + x1.n1 - i0
            chg1 = x1.i2 + x1.n2 - i1
            chg2 = x2.i2 + x2.n2 - i2
            if ffo < 0:
                chg0 -= ffo
                chg1 -= ffo
            else:
                chg2 += ffo
            _append(hunks, CONFLICT, i0, chg0, i1, chg1, i2, chg2)
        end1 = x1.i1 + x1.n1
        end2 = x2.i1 + x2.n1
        if end1 >= end2:
            k2 += 1
        if end2 >= end1:
            k1 += 1
    n1, n2 = len(lines1), len(lines2)
    for x1 in script1[k1:]:
        _append(hunks, OURS, x1.i1, x1.n1, x1.i2, x1.n2, x1.i1 + n2 - n0, x1.n1)
    for x2 in script2[k2:]:
        _append(hunks, THEIRS, x2.i1, x2.n1, x2.i1 + n1 - n0, x2.n1, x2.i2, x2.n2)
    return hunks


def _refine_conflicts(hunks: list[_Hunk], lines1: list[bytes], lines2: list[bytes]) -> None:
    """Narrow each conflict to where ours and theirs really differ (xdl_refine_conflicts)."""
    k = 0
    while k < len(hunks):
        m = hunks[k]
        k += 1
        if m.mode != CONFLICT or m.chg1 == 0 or m.chg2 == 0:
            continue
        i1, i2 = m.i1, m.i2
        edits = diff_lines(lines1[i1:i1 + m.chg1], lines2[i2:i2 + m.chg2],
                           indent_heuristic=False)
        if not edits:
            m.mode = SAME
            continue
        first = edits[0]
        m.i1, m.chg1, m.i2, m.chg2 = first.i1 + i1, first.n1, first.i2 + i2, first.n2
        for offset, e in enumerate(edits[1:]):
            hunks.insert(k + offset, _Hunk(CONFLICT, m.i0, m.chg0, e.i1 + i1, e.n1,
                                           e.i2 + i2, e.n2))
        k += len(edits) - 1


def _has_alnum(lines: list[bytes]) -> bool:
    return any(c < 128 and chr(c).isalnum() for line in lines for c in line)


def _simplify(hunks: list[_Hunk], lines1: list[bytes], alnum: bool) -> list[_Hunk]:
    """Join conflicts with at most 3 lines between them (or, with `alnum`, only lines without
    a letter or digit): one bigger conflict reads easier than two (xdl_simplify_non_conflicts)."""
    out: list[_Hunk] = []
    for h in hunks:
        if out:
            m = out[-1]
            begin, end = m.i1 + m.chg1, h.i1
            if (m.mode == CONFLICT and h.mode == CONFLICT
                    and (end - begin <= 3 or (alnum and not _has_alnum(lines1[begin:end])))):
                m.chg1 = h.i1 + h.chg1 - m.i1
                m.chg2 = h.i2 + h.chg2 - m.i2
                continue
        out.append(h)
    return out


def _is_eol_crlf(lines: list[bytes], i: int) -> int:
    """1 if line i ends in CRLF, 0 if in LF, -1 if it cannot be told (git's is_eol_crlf)."""
    n = len(lines)
    if i < n - 1:
        return int(lines[i].endswith(b"\r\n"))
    if not n:
        return -1
    if lines[i].endswith(b"\n"):
        return int(lines[i].endswith(b"\r\n"))
    if i == 0:
        return -1
    return int(lines[i - 1].endswith(b"\r\n"))


def _needs_cr(m: _Hunk, lines0: list[bytes], lines1: list[bytes], lines2: list[bytes]) -> bool:
    """Markers end in CRLF when the lines before the conflict on both sides and the base's
    first line do (git's is_cr_needed)."""
    needs = _is_eol_crlf(lines1, m.i1 - 1 if m.i1 else 0)
    if needs:
        needs = _is_eol_crlf(lines2, m.i2 - 1 if m.i2 else 0)
    if needs:
        needs = _is_eol_crlf(lines0, 0)
    return needs > 0


def _side(lines: list[bytes], eol: bytes) -> list[bytes]:
    """A side's lines inside a conflict: the last one always ends a line."""
    if lines and not lines[-1].endswith(b"\n"):
        return lines[:-1] + [lines[-1] + eol]
    return lines


def _render(hunks: list[_Hunk], lines0: list[bytes], lines1: list[bytes], lines2: list[bytes],
            ours_label: str | None, theirs_label: str | None, marker_size: int) -> list[bytes]:
    out: list[bytes] = []
    i = 0
    head = b"<" * marker_size + (b" " + ours_label.encode() if ours_label is not None else b"")
    tail = b">" * marker_size + (b" " + theirs_label.encode() if theirs_label is not None
                                 else b"")
    for m in hunks:
        if m.mode == CONFLICT:
            eol = b"\r\n" if _needs_cr(m, lines0, lines1, lines2) else b"\n"
            out.extend(lines1[i:m.i1])
            out.append(head + eol)
            out.extend(_side(lines1[m.i1:m.i1 + m.chg1], eol))
            out.append(b"=" * marker_size + eol)
            out.extend(_side(lines2[m.i2:m.i2 + m.chg2], eol))
            out.append(tail + eol)
        elif m.mode in (OURS, THEIRS):
            out.extend(lines1[i:m.i1])
            if m.mode == OURS:
                out.extend(lines1[m.i1:m.i1 + m.chg1])
            else:
                out.extend(lines2[m.i2:m.i2 + m.chg2])
        else:
            continue
        i = m.i1 + m.chg1
    out.extend(lines1[i:])
    return out
