"""Line diff that yields the same edits as git's default algorithm (Myers with git's heuristics).

Rules: lines compare whole, newline included; common prefix and suffix are set aside; lines
unique to one side are changed for sure and very frequent ones are set aside; Myers' search with
git's cost cut-offs; change groups slid and placed by git's indent heuristic. A work budget keeps
huge rewritten files linear (correct, less minimal than git). Steps: docs/design.md "Line diff".
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

SNAKE_CNT = 20          # a diagonal run this long counts as a good snake
HEUR_MIN_COST = 256     # cost after which good snakes end the search
MAX_COST_MIN = 256      # lower bound of the cost at which the search gives up being optimal
K_HEUR = 4
MAX_EQLIMIT = 1024      # cap of the "multimatch" threshold (about sqrt of the line count)
SIMSCAN_WINDOW = 100
KPDIS_RUN = 4
LINE_MAX = 1 << 62
MAX_INDENT = 200
MAX_BLANKS = 20
MAX_SLIDING = 100
WORK_BUDGET_MIN = 4_000_000    # diagonal steps (~1 s of Python) before the search turns cheap
WORK_BUDGET_PER_LINE = 50
CHEAP_COST = 16         # search cost cut-off once the work budget is spent
_SPACE = b" \t\n\r"     # git's isspace(): no \v or \f


class Edit(NamedTuple):
    """Lines `old[i1:i1+n1]` are replaced by `new[i2:i2+n2]` (0-based)."""

    i1: int
    i2: int
    n1: int
    n2: int


def split_lines(data: bytes) -> list[bytes]:
    """Records as git's diff sees them: each line with its newline, the last maybe without."""
    if not data:
        return []
    parts = data.split(b"\n")
    last = parts.pop()
    lines = [part + b"\n" for part in parts]
    if last:
        lines.append(last)
    return lines


def _bogosqrt(n: int) -> int:
    i = 1
    while n > 0:
        n >>= 2
        i <<= 1
    return i


def diff_lines(old: list[bytes], new: list[bytes], *, indent_heuristic: bool = True) -> list[Edit]:
    """The edits turning `old` into `new`, in order, as git's default diff would make them.

    `indent_heuristic=False` leaves each group of changes slid down as far as it goes, as git
    does where the heuristic is off (its 3-way merges: `git merge-file`, `git revert`)."""
    n1, n2 = len(old), len(new)
    # rchg[i + 1] marks line i as changed; index 0 and n + 1 are sentinels.
    rchg1 = bytearray(n1 + 2)
    rchg2 = bytearray(n2 + 2)
    start = 0
    limit = min(n1, n2)
    while start < limit and old[start] == new[start]:
        start += 1
    tail = 0
    while tail < limit - start and old[n1 - 1 - tail] == new[n2 - 1 - tail]:
        tail += 1
    end1, end2 = n1 - tail, n2 - tail
    if start in (end1, end2):
        rchg1[start + 1:end1 + 1] = b"\x01" * (end1 - start)
        rchg2[start + 1:end2 + 1] = b"\x01" * (end2 - start)
    else:
        # Occurrences count over whole files (as git's classifier does), but only the lines
        # between the common prefix and suffix get a class number and enter the search.
        count1, count2 = Counter(old), Counter(new)
        keep1 = _kept_lines(old, start, end1, count2, rchg1)
        keep2 = _kept_lines(new, start, end2, count1, rchg2)
        classes: dict[bytes, int] = {}
        h1 = [classes.setdefault(old[i], len(classes)) for i in keep1]
        h2 = [classes.setdefault(new[i], len(classes)) for i in keep2]
        _Myers(keep1, keep2, h1, h2, rchg1, rchg2, n1 + n2).run()
    _compact(rchg1, old, rchg2, new, indent_heuristic)
    _compact(rchg2, new, rchg1, old, indent_heuristic)
    return _script(rchg1, rchg2, n1, n2)


def _kept_lines(lines: list[bytes], start: int, end: int, other_count: Counter[bytes],
                rchg: bytearray) -> list[int]:
    """Indexes in [start, end) worth searching; the others are marked changed right away."""
    mlim = min(_bogosqrt(len(lines)), MAX_EQLIMIT)
    dis = bytearray(len(lines) + 1)
    for i in range(start, end):
        matches = other_count.get(lines[i], 0)
        dis[i] = 0 if matches == 0 else (2 if matches >= mlim else 1)
    kept = []
    for i in range(start, end):
        if dis[i] == 1 or (dis[i] == 2 and not _multimatch_discardable(dis, i, start, end - 1)):
            kept.append(i)
        else:
            rchg[i + 1] = 1
    return kept


def _multimatch_discardable(dis: bytearray, i: int, s: int, e: int) -> bool:
    """A very common line is dropped from the search when it sits among lines with no match."""
    s = max(s, i - SIMSCAN_WINDOW)
    e = min(e, i + SIMSCAN_WINDOW)
    no_before, multi_before = 0, 1
    r = 1
    while i - r >= s:
        d = dis[i - r]
        if d == 0:
            no_before += 1
        elif d == 2:
            multi_before += 1
        else:
            break
        r += 1
    if no_before == 0:
        return False
    no_after, multi_after = 0, 1
    r = 1
    while i + r <= e:
        d = dis[i + r]
        if d == 0:
            no_after += 1
        elif d == 2:
            multi_after += 1
        else:
            break
        r += 1
    if no_after == 0:
        return False
    nodis = no_before + no_after
    multi = multi_before + multi_after
    return multi * KPDIS_RUN < multi + nodis


class _Myers:
    """Divide-and-conquer Myers over the kept lines; marks changed lines in rchg1/rchg2."""

    def __init__(self, keep1: list[int], keep2: list[int], h1: list[int], h2: list[int],
                 rchg1: bytearray, rchg2: bytearray, total_lines: int) -> None:
        self.rindex1, self.rindex2 = keep1, keep2
        self.h1, self.h2 = h1, h2
        self.rchg1, self.rchg2 = rchg1, rchg2
        ndiags = len(keep1) + len(keep2) + 3
        # Diagonals run from -(len2 + 1) to len1 + 1; negative ones use Python's negative
        # indexes, which cannot collide with the positive ones at this length.
        self.kvdf = [0] * ndiags
        self.kvdb = [0] * ndiags
        self.mxcost = max(_bogosqrt(ndiags), MAX_COST_MIN)
        self.budget = max(WORK_BUDGET_MIN, WORK_BUDGET_PER_LINE * total_lines)

    def run(self) -> None:
        h1, h2 = self.h1, self.h2
        stack = [(0, len(h1), 0, len(h2), False)]
        while stack:
            off1, lim1, off2, lim2, need_min = stack.pop()
            while off1 < lim1 and off2 < lim2 and h1[off1] == h2[off2]:
                off1 += 1
                off2 += 1
            while off1 < lim1 and off2 < lim2 and h1[lim1 - 1] == h2[lim2 - 1]:
                lim1 -= 1
                lim2 -= 1
            if off1 == lim1 or off2 == lim2:
                for k in range(off1, lim1):
                    self.rchg1[self.rindex1[k] + 1] = 1
                for k in range(off2, lim2):
                    self.rchg2[self.rindex2[k] + 1] = 1
                continue
            i1, i2, min_lo, min_hi = self.split(off1, lim1, off2, lim2, need_min)
            stack.append((i1, lim1, i2, lim2, min_hi))
            stack.append((off1, i1, off2, i2, min_lo))

    def split(self, off1: int, lim1: int, off2: int, lim2: int,
              need_min: bool) -> tuple[int, int, bool, bool]:
        """The middle snake (or a heuristic cut) of the box; (i1, i2, min_lo, min_hi)."""
        h1, h2, kvdf, kvdb = self.h1, self.h2, self.kvdf, self.kvdb
        dmin, dmax = off1 - lim2, lim1 - off2
        fmid, bmid = off1 - off2, lim1 - lim2
        odd = (fmid - bmid) & 1
        fmin = fmax = fmid
        bmin = bmax = bmid
        kvdf[fmid] = off1
        kvdb[bmid] = lim1
        ec = 0
        while True:
            ec += 1
            got_snake = False
            if fmin > dmin:
                fmin -= 1
                kvdf[fmin - 1] = -1
            else:
                fmin += 1
            if fmax < dmax:
                fmax += 1
                kvdf[fmax + 1] = -1
            else:
                fmax -= 1
            self.budget -= fmax - fmin + bmax - bmin + 2
            for d in range(fmax, fmin - 1, -2):
                if kvdf[d - 1] >= kvdf[d + 1]:
                    i1 = kvdf[d - 1] + 1
                else:
                    i1 = kvdf[d + 1]
                prev1 = i1
                i2 = i1 - d
                while i1 < lim1 and i2 < lim2 and h1[i1] == h2[i2]:
                    i1 += 1
                    i2 += 1
                if i1 - prev1 > SNAKE_CNT:
                    got_snake = True
                kvdf[d] = i1
                if odd and bmin <= d <= bmax and kvdb[d] <= i1:
                    return i1, i2, True, True

            if bmin > dmin:
                bmin -= 1
                kvdb[bmin - 1] = LINE_MAX
            else:
                bmin += 1
            if bmax < dmax:
                bmax += 1
                kvdb[bmax + 1] = LINE_MAX
            else:
                bmax -= 1
            for d in range(bmax, bmin - 1, -2):
                if kvdb[d - 1] < kvdb[d + 1]:
                    i1 = kvdb[d - 1]
                else:
                    i1 = kvdb[d + 1] - 1
                prev1 = i1
                i2 = i1 - d
                while i1 > off1 and i2 > off2 and h1[i1 - 1] == h2[i2 - 1]:
                    i1 -= 1
                    i2 -= 1
                if prev1 - i1 > SNAKE_CNT:
                    got_snake = True
                kvdb[d] = i1
                if not odd and fmin <= d <= fmax and i1 <= kvdf[d]:
                    return i1, i2, True, True

            if need_min and self.budget > 0:
                continue
            if got_snake and ec > HEUR_MIN_COST:
                cut = self._good_snake(True, off1, lim1, off2, lim2, fmin, fmax, fmid, ec)
                if cut is not None:
                    return cut[0], cut[1], True, False
                cut = self._good_snake(False, off1, lim1, off2, lim2, bmin, bmax, bmid, ec)
                if cut is not None:
                    return cut[0], cut[1], False, True
            if ec >= (self.mxcost if self.budget > 0 else CHEAP_COST):
                return self._furthest(off1, lim1, off2, lim2, fmin, fmax, bmin, bmax)

    def _good_snake(self, forward: bool, off1: int, lim1: int, off2: int, lim2: int,
                    dmin: int, dmax: int, dmid: int, ec: int) -> tuple[int, int] | None:
        """git's "interesting path" heuristic: the diagonal of the forward (or backward) search
        that got furthest past cost `ec` and ends (starts) in a snake of SNAKE_CNT equal lines."""
        h1, h2 = self.h1, self.h2
        kv = self.kvdf if forward else self.kvdb
        best = 0
        cut = None
        for d in range(dmax, dmin - 1, -2):
            dd = d - dmid if d > dmid else dmid - d
            i1 = kv[d]
            i2 = i1 - d
            if forward:
                v = (i1 - off1) + (i2 - off2) - dd
                inside = off1 + SNAKE_CNT <= i1 < lim1 and off2 + SNAKE_CNT <= i2 < lim2
                s1, s2 = i1 - SNAKE_CNT, i2 - SNAKE_CNT
            else:
                v = (lim1 - i1) + (lim2 - i2) - dd
                inside = off1 < i1 <= lim1 - SNAKE_CNT and off2 < i2 <= lim2 - SNAKE_CNT
                s1, s2 = i1, i2
            if (v > K_HEUR * ec and v > best and inside
                    and h1[s1:s1 + SNAKE_CNT] == h2[s2:s2 + SNAKE_CNT]):
                best = v
                cut = (i1, i2)
        return cut

    def _furthest(self, off1: int, lim1: int, off2: int, lim2: int, fmin: int, fmax: int,
                  bmin: int, bmax: int) -> tuple[int, int, bool, bool]:
        """Too expensive: cut at the furthest-reaching forward or backward path."""
        kvdf, kvdb = self.kvdf, self.kvdb
        fbest = fbest1 = -1
        for d in range(fmax, fmin - 1, -2):
            i1 = min(kvdf[d], lim1)
            i2 = i1 - d
            if lim2 < i2:
                i1, i2 = lim2 + d, lim2
            if fbest < i1 + i2:
                fbest, fbest1 = i1 + i2, i1
        bbest = bbest1 = LINE_MAX
        for d in range(bmax, bmin - 1, -2):
            i1 = max(off1, kvdb[d])
            i2 = i1 - d
            if i2 < off2:
                i1, i2 = off2 + d, off2
            if i1 + i2 < bbest:
                bbest, bbest1 = i1 + i2, i1
        if (lim1 + lim2) - bbest < fbest - (off1 + off2):
            return fbest1, fbest - fbest1, True, False
        return bbest1, bbest - bbest1, False, True


# --- sliding groups of changes (git's change compaction and indent heuristic) ------------------


class _Group:
    """Lines [start, end) changed in one file; for an empty group, the line it sits above."""

    __slots__ = ("rchg", "lines", "n", "start", "end")

    def __init__(self, rchg: bytearray, lines: list[bytes]) -> None:
        self.rchg, self.lines, self.n = rchg, lines, len(lines)
        self.start = self.end = 0
        while rchg[self.end + 1]:
            self.end += 1

    def next(self) -> bool:
        if self.end == self.n:
            return False
        self.start = self.end + 1
        self.end = self.start
        while self.rchg[self.end + 1]:
            self.end += 1
        return True

    def previous(self) -> bool:
        if self.start == 0:
            return False
        self.end = self.start - 1
        self.start = self.end
        while self.rchg[self.start]:
            self.start -= 1
        return True

    def slide_down(self) -> bool:
        if self.end < self.n and self.lines[self.start] == self.lines[self.end]:
            self.rchg[self.start + 1] = 0
            self.start += 1
            self.rchg[self.end + 1] = 1
            self.end += 1
            while self.rchg[self.end + 1]:
                self.end += 1
            return True
        return False

    def slide_up(self) -> bool:
        if self.start > 0 and self.lines[self.start - 1] == self.lines[self.end - 1]:
            self.start -= 1
            self.rchg[self.start + 1] = 1
            self.end -= 1
            self.rchg[self.end + 1] = 0
            while self.rchg[self.start]:
                self.start -= 1
            return True
        return False


def _compact(rchg: bytearray, lines: list[bytes], rchg_other: bytearray,
             other_lines: list[bytes], indent_heuristic: bool = True) -> None:
    """Slide each group of changes as git does: merge with neighbours, align with the other
    file's changes if possible, else place it where the indent heuristic scores best."""
    g = _Group(rchg, lines)
    go = _Group(rchg_other, other_lines)
    indents = _Indents(lines)
    while True:
        if g.end != g.start:
            while True:
                groupsize = g.end - g.start
                end_matching_other = -1
                while g.slide_up():
                    go.previous()
                earliest_end = g.end
                if go.end > go.start:
                    end_matching_other = g.end
                while g.slide_down():
                    go.next()
                    if go.end > go.start:
                        end_matching_other = g.end
                if groupsize == g.end - g.start:
                    break
            if g.end == earliest_end:
                pass
            elif end_matching_other != -1:
                while go.end == go.start:
                    g.slide_up()
                    go.previous()
            elif indent_heuristic:
                shift = max(earliest_end, g.end - groupsize - 1, g.end - MAX_SLIDING)
                best_shift = -1
                best = (0, 0)
                while shift <= g.end:
                    score = indents.score(shift, groupsize)
                    if best_shift == -1 or _score_cmp(score, best) <= 0:
                        best = score
                        best_shift = shift
                    shift += 1
                while g.end > best_shift:
                    g.slide_up()
                    go.previous()
        # Lines unchanged in both files form one empty group each: jump over them at once.
        found = rchg.find(1, g.end + 2)
        next_changed = found - 1 if found >= 0 else g.n
        found = rchg_other.find(1, go.end + 2)
        next_changed_other = found - 1 if found >= 0 else go.n
        skip = min(next_changed - g.end, next_changed_other - go.end) - 1
        if skip > 0:
            g.start = g.end = g.end + skip
            go.start = go.end = go.end + skip
        if not g.next():
            break
        go.next()


def _score_cmp(a: tuple[int, int], b: tuple[int, int]) -> int:
    cmp_indents = (a[0] > b[0]) - (a[0] < b[0])
    return 60 * cmp_indents + (a[1] - b[1])


class _Indents:
    """Indent widths of lines (-1 for blank lines), computed on demand, and split scores."""

    def __init__(self, lines: list[bytes]) -> None:
        self.lines = lines
        self.cache: dict[int, int] = {}

    def indent(self, i: int) -> int:
        got = self.cache.get(i)
        if got is None:
            got = self.cache[i] = _indent_of(self.lines[i])
        return got

    def score(self, shift: int, groupsize: int) -> tuple[int, int]:
        effective = penalty = 0
        for split in (shift, shift - groupsize):
            e, p = self._split_score(split)
            effective += e
            penalty += p
        return effective, penalty

    def _split_score(self, split: int) -> tuple[int, int]:
        n = len(self.lines)
        end_of_file = split >= n
        indent = -1 if end_of_file else self.indent(split)
        pre_blank, pre_indent = 0, -1
        i = split - 1
        while i >= 0:
            pre_indent = self.indent(i)
            if pre_indent != -1:
                break
            pre_blank += 1
            if pre_blank == MAX_BLANKS:
                pre_indent = 0
                break
            i -= 1
        post_blank, post_indent = 0, -1
        i = split + 1
        while i < n:
            post_indent = self.indent(i)
            if post_indent != -1:
                break
            post_blank += 1
            if post_blank == MAX_BLANKS:
                post_indent = 0
                break
            i += 1

        penalty = 0
        if pre_indent == -1 and pre_blank == 0:
            penalty += 1                        # start of file
        if end_of_file:
            penalty += 21
        blanks_after = 1 + post_blank if indent == -1 else 0
        total_blank = pre_blank + blanks_after
        penalty += -30 * total_blank + 6 * blanks_after
        effective = indent if indent != -1 else post_indent
        any_blanks = total_blank != 0
        if effective == -1 or pre_indent == -1 or effective == pre_indent:
            pass
        elif effective > pre_indent:
            penalty += 10 if any_blanks else -4
        elif post_indent != -1 and post_indent > effective:
            penalty += 17 if any_blanks else 24
        else:
            penalty += 17 if any_blanks else 23
        return effective, penalty


def _indent_of(line: bytes) -> int:
    width = 0
    for c in line:
        if c == 32:
            width += 1
        elif c == 9:
            width += 8 - width % 8
        elif c not in (10, 13):
            return width
        if width >= MAX_INDENT:
            return MAX_INDENT
    return -1


def _script(rchg1: bytearray, rchg2: bytearray, n1: int, n2: int) -> list[Edit]:
    edits: list[Edit] = []
    i1, i2 = n1, n2
    while i1 >= 0 or i2 >= 0:
        if rchg1[i1] or rchg2[i2]:
            l1, l2 = i1, i2
            while rchg1[i1]:
                i1 -= 1
            while rchg2[i2]:
                i2 -= 1
            edits.append(Edit(i1, i2, l1 - i1, l2 - i2))
        i1 -= 1
        i2 -= 1
    edits.reverse()
    return edits


# --- hunks -------------------------------------------------------------------------------------


class Hunk(NamedTuple):
    """Old lines [s1, e1) and new lines [s2, e2) shown together, and the edits inside."""

    s1: int
    e1: int
    s2: int
    e2: int
    edits: tuple[Edit, ...]


def hunks(edits: list[Edit], n1: int, n2: int, context: int = 3) -> list[Hunk]:
    """Group edits that are at most 2 * context lines apart, with context around each group."""
    out: list[Hunk] = []
    k = 0
    while k < len(edits):
        first = k
        while k + 1 < len(edits):
            prev, nxt = edits[k], edits[k + 1]
            if nxt.i1 - (prev.i1 + prev.n1) > 2 * context:
                break
            k += 1
        head, last = edits[first], edits[k]
        s1 = max(head.i1 - context, 0)
        s2 = max(head.i2 - context, 0)
        after = min(context, n1 - (last.i1 + last.n1), n2 - (last.i2 + last.n2))
        out.append(Hunk(s1, last.i1 + last.n1 + after, s2, last.i2 + last.n2 + after,
                        tuple(edits[first:k + 1])))
        k += 1
    return out


def function_line(line: bytes) -> bytes | None:
    """git's default hunk-header context: a line starting with a letter, `_` or `$`, cut to
    80 bytes, trailing whitespace removed."""
    if not line:
        return None
    c = line[0]
    if not (65 <= c <= 90 or 97 <= c <= 122 or c == 95 or c == 36):
        return None
    return line[:80].rstrip(_SPACE)
